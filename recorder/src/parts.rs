//! The parts directory of a run in progress (`<out>.parts/`): one file per completed chunk, each written
//! atomically, and `manifest.json`, rewritten atomically after every chunk with each chunk's sha256.
//!
//! A chunk counts as done only when the manifest lists it and the file on disk still has the listed
//! sha256; anything else (a chunk file written just before an interruption, a damaged one) is recomputed.
//! Chunks cover fixed ranges of case indices, so a resumed run produces exactly the rows of an
//! uninterrupted one, never a duplicate. A manifest of another run (another spec, another GPU, another
//! cuBLASLt, another limit, another shard) is refused unless `--restart` clears the directory. A shard
//! computes only its chunks ([`mmaemu_datasets::shard`]). While a run is open, `<out>.lock` next to the
//! output is locked: a second process on the same output is refused instead of racing the first.

use crate::error::RecordError;
use crate::progress::Progress;
use crate::util::sha256_file;
use mmaemu_datasets::shard::Shard;
use mmaemu_datasets::write_file_atomic;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// What one chunk of work produced (its file is already written): rows, counters, flagged ids.
#[derive(Debug, Clone, Default)]
pub struct ChunkDone {
    /// Rows in the chunk file.
    pub rows: u64,
    /// Named counters (skipped, rejected, ...), summed over the chunks when the run is merged.
    pub stats: BTreeMap<String, u64>,
    /// Ids to report (nondeterministic calls).
    pub flagged: Vec<String>,
}

/// The manifest's format tag.
pub const PARTS_FORMAT: &str = "mmaemu-record-parts/1";

/// What identifies a run: a resume must match it exactly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunKey {
    /// `sweep` or `heuristics`.
    pub kind: String,
    /// The spec's name.
    pub spec_name: String,
    /// sha256 of the spec file.
    pub spec_sha256: String,
    /// Units (cases or grid keys) in the run.
    pub units: u64,
    /// Units per chunk.
    pub chunk_units: u64,
    /// The device (`gpu` of the platform, `simulated: ...`).
    pub device: String,
    /// cuBLASLt version, if known.
    pub cublaslt: Option<String>,
    /// Extra settings that change the rows (caller, profile).
    pub settings: String,
    /// The shard (`I/N`) the run records, if it is one.
    #[serde(default)]
    pub shard: Option<String>,
}

/// One completed chunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkEntry {
    /// File name inside the parts directory.
    pub file: String,
    /// sha256 of the file.
    pub sha256: String,
    /// Rows (or table rows) it holds.
    pub rows: u64,
    /// Per-chunk counters (skipped, rejected, ...).
    pub stats: BTreeMap<String, u64>,
    /// Row ids worth reporting (nondeterministic calls).
    #[serde(default)]
    pub flagged: Vec<String>,
}

/// The manifest of a parts directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartsManifest {
    /// [`PARTS_FORMAT`].
    pub format: String,
    /// The run.
    pub run: RunKey,
    /// Completed chunks by index.
    pub chunks: BTreeMap<u64, ChunkEntry>,
}

/// An open parts directory, and the lock that keeps other processes out of it.
pub struct Parts {
    dir: PathBuf,
    manifest: PartsManifest,
    lock: Lock,
}

/// The lock file of an output (`<out>.lock`), held (an OS file lock, released when the process ends,
/// however it ends) while a run is open; removed when the run finishes.
struct Lock {
    path: PathBuf,
    _file: std::fs::File,
}

impl Lock {
    fn take(out: &Path) -> Result<Lock, RecordError> {
        let mut name = out.file_name().map(|n| n.to_os_string()).unwrap_or_default();
        name.push(".lock");
        let path = out.with_file_name(name);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| RecordError::io(&path, e))?;
        match file.try_lock() {
            Ok(()) => Ok(Lock { path, _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(RecordError::Locked(format!(
                "{} is locked: another mmaemu-record process is recording {} (wait for it, or give this run \
                 another --out)",
                path.display(),
                out.display()
            ))),
            Err(std::fs::TryLockError::Error(e)) => Err(RecordError::io(&path, e)),
        }
    }
}

/// The parts directory of output `out`.
pub fn parts_dir(out: &Path) -> PathBuf {
    let mut name = out.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".parts");
    out.with_file_name(name)
}

impl Parts {
    /// Opens (or creates) the parts directory of `out` for `run`. With `restart`, an existing one is cleared.
    pub fn open(out: &Path, run: RunKey, restart: bool) -> Result<Parts, RecordError> {
        let lock = Lock::take(out)?;
        let dir = parts_dir(out);
        if restart && dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| RecordError::io(&dir, e))?;
        }
        std::fs::create_dir_all(&dir).map_err(|e| RecordError::io(&dir, e))?;
        let mpath = dir.join("manifest.json");
        let manifest = if mpath.exists() {
            let text = std::fs::read(&mpath).map_err(|e| RecordError::io(&mpath, e))?;
            let m: PartsManifest = serde_json::from_slice(&text).map_err(|e| {
                RecordError::ResumeMismatch(format!("{}: unreadable parts manifest: {e}", mpath.display()))
            })?;
            if m.format != PARTS_FORMAT {
                return Err(RecordError::ResumeMismatch(format!("{}: format {:?}", mpath.display(), m.format)));
            }
            if m.run != run {
                return Err(RecordError::ResumeMismatch(format!(
                    "{} belongs to another run ({}); this run is ({})",
                    dir.display(),
                    describe(&m.run),
                    describe(&run)
                )));
            }
            m
        } else {
            let m = PartsManifest { format: PARTS_FORMAT.into(), run, chunks: BTreeMap::new() };
            write_json(&mpath, &m)?;
            m
        };
        Ok(Parts { dir, manifest, lock })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of chunk `index` with extension `ext`.
    pub fn chunk_path(&self, index: u64, ext: &str) -> PathBuf {
        self.dir.join(format!("chunk-{index:06}.{ext}"))
    }

    /// The entry of chunk `index` if it is complete and intact on disk.
    pub fn done(&self, index: u64) -> Result<Option<&ChunkEntry>, RecordError> {
        let Some(e) = self.manifest.chunks.get(&index) else { return Ok(None) };
        let p = self.dir.join(&e.file);
        if !p.exists() {
            return Ok(None);
        }
        let (sha, _) = sha256_file(&p)?;
        Ok((sha == e.sha256).then_some(e))
    }

    /// Records a completed chunk (its file already written atomically) and rewrites the manifest.
    pub fn complete(
        &mut self,
        index: u64,
        path: &Path,
        rows: u64,
        stats: BTreeMap<String, u64>,
        flagged: Vec<String>,
    ) -> Result<(), RecordError> {
        let (sha256, _) = sha256_file(path)?;
        let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        self.manifest.chunks.insert(index, ChunkEntry { file, sha256, rows, stats, flagged });
        write_json(&self.dir.join("manifest.json"), &self.manifest)
    }

    /// Every completed chunk, by index.
    pub fn chunks(&self) -> &BTreeMap<u64, ChunkEntry> {
        &self.manifest.chunks
    }

    /// Runs every chunk of a run of `units` units in chunks of `chunk` that `shard` owns (all of them
    /// without a shard), in order, skipping the chunks an interrupted run completed: `work(range, path,
    /// progress)` computes the units of `range` and writes the chunk file at `path` (extension `ext`)
    /// atomically; the chunk is then recorded. Returns how many chunks were taken from the interrupted
    /// run. With `stop_after`, stops with [`RecordError::Stopped`] once that many chunks were written in
    /// this process and more remain.
    #[allow(clippy::too_many_arguments)]
    pub fn run_chunks(
        &mut self,
        units: u64,
        chunk: u64,
        ext: &str,
        shard: Option<Shard>,
        progress: &mut Progress,
        stop_after: Option<u64>,
        mut work: impl FnMut(Range<u64>, &Path, &mut Progress) -> Result<ChunkDone, RecordError>,
    ) -> Result<u64, RecordError> {
        let chunks = units.div_ceil(chunk);
        let mine: Vec<u64> = (0..chunks).filter(|&c| shard.is_none_or(|s| s.owns(c))).collect();
        let (mut resumed, mut written) = (0u64, 0u64);
        for c in 0..chunks {
            let range = c * chunk..((c + 1) * chunk).min(units);
            if !mine.contains(&c) || self.done(c)?.is_some() {
                progress.skip(c, range.end - range.start);
                resumed += u64::from(mine.contains(&c));
                continue;
            }
            let path = self.chunk_path(c, ext);
            progress.chunk_start();
            let done = work(range, &path, progress)?;
            self.complete(c, &path, done.rows, done.stats, done.flagged)?;
            progress.chunk_done(c, chunks);
            written += 1;
            if stop_after.is_some_and(|s| written >= s) && mine.last().is_some_and(|&l| l > c) {
                progress.finish();
                return Err(RecordError::Stopped { chunks: written as usize });
            }
        }
        progress.finish();
        Ok(resumed)
    }

    /// Removes the directory and the lock file (the run is finished).
    pub fn remove(self) -> Result<(), RecordError> {
        std::fs::remove_dir_all(&self.dir).map_err(|e| RecordError::io(&self.dir, e))?;
        self.release()
    }

    /// Keeps the directory (`--keep-parts`) and removes the lock file.
    pub fn release(self) -> Result<(), RecordError> {
        let path = self.lock.path.clone();
        drop(self);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(RecordError::io(&path, e)),
            _ => Ok(()),
        }
    }
}

fn describe(r: &RunKey) -> String {
    format!(
        "{} of spec {} sha256 {}, {} units by {}, device {}, cuBLASLt {}, {}, shard {}",
        r.kind,
        r.spec_name,
        &r.spec_sha256.get(..12).unwrap_or(&r.spec_sha256),
        r.units,
        r.chunk_units,
        r.device,
        r.cublaslt.as_deref().unwrap_or("unknown"),
        r.settings,
        r.shard.as_deref().unwrap_or("none")
    )
}

/// Writes a JSON value atomically, pretty-printed.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), RecordError> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| RecordError::Model(e.to_string()))?;
    bytes.push(b'\n');
    Ok(write_file_atomic(path, &bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(units: u64) -> RunKey {
        RunKey {
            kind: "sweep".into(),
            spec_name: "t".into(),
            spec_sha256: "ab".repeat(32),
            units,
            chunk_units: 4,
            device: "simulated".into(),
            cublaslt: None,
            settings: String::new(),
            shard: None,
        }
    }

    #[test]
    fn resume_checks_run_and_chunk_hashes() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("o.parquet");
        assert_eq!(parts_dir(&out), dir.path().join("o.parquet.parts"));
        let mut p = Parts::open(&out, key(10), false).unwrap();
        let c0 = p.chunk_path(0, "bin");
        write_file_atomic(&c0, b"zero").unwrap();
        p.complete(0, &c0, 4, BTreeMap::new(), vec![]).unwrap();
        let c1 = p.chunk_path(1, "bin");
        write_file_atomic(&c1, b"one").unwrap(); // written, but not recorded: an interruption
        drop(p);

        let p = Parts::open(&out, key(10), false).unwrap();
        assert!(p.done(0).unwrap().is_some());
        assert!(p.done(1).unwrap().is_none());
        std::fs::write(&c0, b"damaged").unwrap();
        assert!(p.done(0).unwrap().is_none());
        drop(p);

        let e = Parts::open(&out, key(11), false).err().unwrap();
        assert_eq!(e.exit_code(), 2);
        let p = Parts::open(&out, key(11), true).unwrap();
        assert!(p.chunks().is_empty());
        p.remove().unwrap();
        assert!(!parts_dir(&out).exists());
    }
}
