//! A bundle is untrusted input: every path it names stays inside it, every file it uses is regular, listed, hashed
//! and read once, it cannot declare its own verification, and its names are plain — each attack ends in a data
//! error naming the file, at once.

use mmaemu_datasets::digest::sha256_hex;
use mmaemu_datasets::platform::{load_platform, read_preset_document};
use mmaemu_datasets::DatasetError;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const RTX: &str = "rtx4060-cublaslt-12.8.3.14";

fn shipped(ext: &str) -> Vec<u8> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("platforms").join(RTX);
    std::fs::read(dir.join(format!("{RTX}.{ext}"))).unwrap()
}

/// The manifest of a bundle of the RTX 4060's table, `table` as `[splitk] table`, `profile` its profile's name.
fn manifest(table: &str, profile: &str, files: &[(&str, &[u8])]) -> String {
    let mut m = format!(
        "format = \"mmaemu-platform/1\"\nname = \"lab\"\ndescription = \"a lab's bundle\"\n\n[gpu]\n\
         name = \"NVIDIA GeForce RTX 4060\"\ncapability = [8, 9]\n\n[library]\ncublaslt = \"12.8.3.14\"\n\n\
         [preset]\nbuiltin = \"ada\"\n\n[splitk]\ntable = {table:?}\n\n[[profile]]\nname = \"{profile}\"\n\
         caller = \"torch._scaled_mm\"\nworkspace = 1048576\ndescription = \"lab\"\n\n[files]\n"
    );
    for (name, bytes) in files {
        m += &format!("{name:?} = \"{}\"\n", sha256_hex(bytes));
    }
    m
}

/// A bundle directory `name` under `root` holding `files` and the manifest.
fn bundle(root: &Path, name: &str, table: &str, profile: &str, files: &[(&str, &[u8])]) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for (n, bytes) in files {
        std::fs::write(dir.join(n), bytes).unwrap();
    }
    std::fs::write(dir.join("platform.toml"), manifest(table, profile, files)).unwrap();
    dir
}

fn refused(dir: &Path) -> String {
    load_platform(dir).map(|p| p.name).expect_err("a hostile bundle loaded").to_string()
}

/// `f` answers within `limit` (a hang is a failure, not a stuck test run).
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(f()));
    rx.recv_timeout(limit).expect("no answer in time")
}

#[test]
fn a_table_outside_the_bundle_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (pq, js) = (shipped("parquet"), shipped("json"));
    let files: [(&str, &[u8]); 2] = [(&format!("{RTX}.parquet"), &pq), (&format!("{RTX}.json"), &js)];
    // A copy outside the bundle, named through `..` or an absolute path; the bundle lists same-named files.
    let outside = bundle(tmp.path(), "outside", &format!("{RTX}.parquet"), "outside", &files);
    for table in [format!("../outside/{RTX}.parquet"), outside.join(format!("{RTX}.parquet")).display().to_string()] {
        let dir = bundle(tmp.path(), "lab", &table, "lab", &files);
        let e = refused(&dir);
        assert!(e.contains("not a plain file name") && e.contains("platform.toml"), "{table}: {e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
    // The same bundle naming its own copy loads.
    let ok = bundle(tmp.path(), "lab", &format!("{RTX}.parquet"), "lab", &files);
    assert_eq!(load_platform(&ok).unwrap().profiles[0].name, "lab");
}

#[cfg(unix)]
#[test]
fn links_fifos_and_devices_are_refused_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let (pq, js) = (shipped("parquet"), shipped("json"));
    let files: [(&str, &[u8]); 2] = [(&format!("{RTX}.parquet"), &pq), (&format!("{RTX}.json"), &js)];
    // A listed file that is a link to a file with the listed bytes.
    let dir = bundle(tmp.path(), "linked", &format!("{RTX}.parquet"), "lab", &files);
    let side = tmp.path().join("side.json");
    std::fs::write(&side, &js).unwrap();
    std::fs::remove_file(dir.join(format!("{RTX}.json"))).unwrap();
    std::os::unix::fs::symlink(&side, dir.join(format!("{RTX}.json"))).unwrap();
    assert!(matches!(load_platform(&dir), Err(DatasetError::NotRegular { .. })));
    // A manifest that is a FIFO, or a link to /dev/zero: refused within a second, nothing read.
    let fifo_dir = tmp.path().join("fifo");
    std::fs::create_dir(&fifo_dir).unwrap();
    let c = std::ffi::CString::new(fifo_dir.join("platform.toml").to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let zero_dir = tmp.path().join("zero");
    std::fs::create_dir(&zero_dir).unwrap();
    std::os::unix::fs::symlink("/dev/zero", zero_dir.join("platform.toml")).unwrap();
    for d in [fifo_dir.clone(), zero_dir] {
        let t = Instant::now();
        let r =
            within(Duration::from_secs(10), move || matches!(load_platform(&d), Err(DatasetError::NotRegular { .. })));
        assert!(r && t.elapsed() < Duration::from_secs(2));
    }
    // A preset document that is a FIFO is refused the same way.
    let p = fifo_dir.join("platform.toml").display().to_string();
    let e = within(Duration::from_secs(10), move || read_preset_document(&p).unwrap_err().to_string());
    assert!(e.contains("not a regular file"), "{e}");
}

#[test]
fn a_bundle_cannot_declare_its_own_verification() {
    let tmp = tempfile::tempdir().unwrap();
    let pq = shipped("parquet");
    // The shipped sidecar declares the verified combinations of the reference recordings: a byte-for-byte copy keeps
    // them (they are the built-in table's), one altered by a single byte does not.
    let mut js = shipped("json");
    let text = String::from_utf8(js.clone()).unwrap();
    assert!(text.contains("verified_combos"));
    js.push(b'\n');
    let files: [(&str, &[u8]); 2] = [(&format!("{RTX}.parquet"), &pq), (&format!("{RTX}.json"), &js)];
    let e = refused(&bundle(tmp.path(), "declared", &format!("{RTX}.parquet"), "lab", &files));
    assert!(e.contains("never declared") && e.contains(&format!("{RTX}.json")), "{e}");
}

#[test]
fn names_are_plain_ascii() {
    let tmp = tempfile::tempdir().unwrap();
    let (pq, js) = (shipped("parquet"), shipped("json"));
    let files: [(&str, &[u8]); 2] = [(&format!("{RTX}.parquet"), &pq), (&format!("{RTX}.json"), &js)];
    for (i, name) in ["hopper\u{200b}", " lab", "Lab", "h\u{043e}pper", ""].iter().enumerate() {
        let e = refused(&bundle(tmp.path(), &format!("b{i}"), &format!("{RTX}.parquet"), name, &files));
        assert!(e.contains("is not plain"), "{name:?}: {e}");
    }
}

/// The fitted envelope (`platform build --envelope FILE`) and the fitted rules (`--rules FILE`) are read as bounded
/// regular files: a FIFO or a link to /dev/zero is a typed error within seconds, nothing read.
#[cfg(unix)]
#[test]
fn fitted_documents_that_are_not_regular_files_are_refused_at_once() {
    use mmaemu_datasets::platform::{FittedEnvelope, FittedSchemes};
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("fifo.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let zero = tmp.path().join("zero.json");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    for p in [fifo, zero] {
        let t = Instant::now();
        let (q, r) = (p.clone(), p.clone());
        let envelope = within(Duration::from_secs(10), move || {
            matches!(FittedEnvelope::read(&q), Err(DatasetError::NotRegular { .. }))
        });
        let rules = within(Duration::from_secs(10), move || {
            matches!(FittedSchemes::read(&r), Err(DatasetError::NotRegular { .. }))
        });
        assert!(envelope && rules && t.elapsed() < Duration::from_secs(4), "{}", p.display());
    }
}
