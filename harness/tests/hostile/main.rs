//! Hostile input through the harness: files crafted from the shipped recordings (absurd sizes, mislabelled rows,
//! wrong samples, all-skipped files, empty directories, FIFOs), and a seeded mutation fuzzer over the small shipped
//! recordings; every outcome is a typed error or a verdict, never a panic, within bounded time and memory.

// The process runs under a 64 MiB ceiling (`limits::set_ceiling`, in `main` before any trial starts).
// `MMAEMU_HOSTILE_CASES` sets the fuzzer's total case budget (default 2000), `MMAEMU_HOSTILE_SEED` its base seed
// (decimal or 0x hex), `MMAEMU_HOSTILE_CASE` runs one case number alone. A failing case prints the seed, the case
// number, the mutation and where a copy of the file is kept.

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, UInt32Type};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Int32Array, Int64Array, RecordBatch, StringArray, UInt32Array,
};
use libtest_mimic::{Arguments, Failed, Trial};
use mmaemu_datasets::digest::sha256_hex;
use mmaemu_datasets::inputs::{DataClass, InputSpec, RowInputs, Samples, GENERATOR_V1};
use mmaemu_datasets::limits::MAX_BYTES_ENV;
use mmaemu_datasets::{read_recording, write_recording, Call, DatasetError, Expectation, Recording, Row};
use mmaemu_harness::files::{files, json_report, replay_file, replay_file_with};
use mmaemu_harness::{inspect, status, Failure, Verdict};
use mmaemu_testkit::seed::{parse_u64, trial_seed};
use parquet::file::metadata::KeyValue;
use rand::{RngExt, SeedableRng};
use serde_json::{json, Value};
use std::cell::Cell as StdCell;
use std::collections::{BTreeMap, HashMap};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crafted::*;
use fuzz::*;
use raw::*;
use values::*;

/// The memory ceiling of this process (`mmaemu_datasets::limits::ceiling`).
pub(crate) const CEILING: u64 = 64 << 20;
/// How long a crafted call may take (a FIFO or an absurd size must not block or grind).
pub(crate) const CRAFTED_LIMIT: Duration = Duration::from_secs(10);
/// How long one fuzz case may take (reading, replaying, verifying one mutated file).
pub(crate) const CASE_LIMIT: Duration = Duration::from_secs(30);
/// The most the process's resident set may reach (VmHWM), in KiB.
pub(crate) const PEAK_LIMIT_KIB: u64 = 2 << 20;
/// The fuzzer's total case budget when `MMAEMU_HOSTILE_CASES` is not set.
pub(crate) const DEFAULT_CASES: u64 = 2000;
/// The fuzzer's base seed when `MMAEMU_HOSTILE_SEED` is not set.
pub(crate) const DEFAULT_SEED: u64 = 0x686F_7374_696C_6531;

fn main() -> ExitCode {
    mmaemu_datasets::limits::set_ceiling(CEILING);
    install_panic_counter();
    let args = Arguments::from_args();
    let mut trials = vec![
        crafted("crafted/by_reference_operands_over_the_ceiling", by_reference_operands_over_the_ceiling),
        crafted("crafted/call_tensors_over_the_ceiling", call_tensors_over_the_ceiling),
        crafted("crafted/zero_size_rows_with_a_huge_dimension", zero_size_rows_with_a_huge_dimension),
        crafted("crafted/labels_must_name_what_is_replayed", labels_must_name_what_is_replayed),
        crafted("crafted/expected_samples_are_checked", expected_samples_are_checked),
        crafted("crafted/all_rows_skipped", all_rows_skipped),
        crafted("crafted/discovery_finds_recordings_or_says_none", discovery_finds_recordings_or_says_none),
        crafted("crafted/fifos_are_never_read", fifos_are_never_read),
        crafted("crafted/non_utf8_metadata_is_named", non_utf8_metadata_is_named),
        crafted("crafted/small_shipped_recordings_pass_under_the_ceiling", small_shipped_recordings_pass),
    ];
    trials.extend(fuzz_trials());
    libtest_mimic::run(&args, trials).exit_code()
}

pub(crate) fn crafted(name: &str, f: fn() -> Result<(), String>) -> Trial {
    Trial::test(name, move || f().map_err(Failed::from))
}

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

// After the macro: the modules use `ensure!`.
mod crafted;
mod fuzz;
mod raw;
mod values;

// ---------------------------------------------------------------------------------------------------------------
// Helpers

pub(crate) fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/recordings").join(name)
}

pub(crate) fn read_shipped(name: &str) -> Result<Recording, String> {
    read_recording(&shipped(name)).map_err(|e| format!("shipped {name}: {e}"))
}

pub(crate) fn tempdir() -> Result<tempfile::TempDir, String> {
    tempfile::tempdir().map_err(|e| e.to_string())
}

pub(crate) fn write(path: &Path, meta_from: &Recording, rows: Vec<Row>) -> Result<PathBuf, String> {
    let rec = Recording { path: path.to_path_buf(), meta: meta_from.meta.clone(), rows };
    write_recording(path, &rec).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(path.to_path_buf())
}

pub(crate) fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

thread_local! {
    /// Set while a fuzz case runs on this thread: its panics are counted, not printed.
    static QUIET: StdCell<bool> = const { StdCell::new(false) };
}

/// Panics seen in fuzz case threads (contained inside the reader or escaped: the latter fail the case).
pub(crate) static CASE_PANICS: AtomicUsize = AtomicUsize::new(0);

pub(crate) fn install_panic_counter() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if QUIET.with(|q| q.get()) {
            CASE_PANICS.fetch_add(1, Ordering::Relaxed);
        } else {
            default(info);
        }
    }));
}

/// Run `f` on its own thread; Err if it panics or does not return within `limit`.
pub(crate) fn within<T: Send + 'static>(
    what: &str,
    limit: Duration,
    quiet: bool,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name(what.chars().take(60).collect())
        .spawn(move || {
            QUIET.with(|q| q.set(quiet));
            let r = catch_unwind(AssertUnwindSafe(f));
            let _ = tx.send(r);
        })
        .map_err(|e| format!("{what}: cannot start a thread: {e}"))?;
    match rx.recv_timeout(limit) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(p)) => Err(format!("{what}: panicked: {}", panic_text(p.as_ref()))),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(format!("{what}: did not return within {limit:?}")),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(format!("{what}: the thread ended without a result")),
    }
}

pub(crate) fn variant(e: &DatasetError) -> &'static str {
    match e {
        DatasetError::Io { .. } => "Io",
        DatasetError::NotFound { .. } => "NotFound",
        DatasetError::NotRegular { .. } => "NotRegular",
        DatasetError::NoRecordings { .. } => "NoRecordings",
        DatasetError::NotParquet { .. } => "NotParquet",
        DatasetError::Corrupt { .. } => "Corrupt",
        DatasetError::MissingMetadata { .. } => "MissingMetadata",
        DatasetError::WrongFormat { .. } => "WrongFormat",
        DatasetError::MissingColumn { .. } => "MissingColumn",
        DatasetError::WrongType { .. } => "WrongType",
        DatasetError::Invalid { .. } => "Invalid",
        DatasetError::Write { .. } => "Write",
    }
}

/// Every row's verdict of a file, in file order.
pub(crate) fn verdicts(path: &Path) -> Result<Vec<(String, Verdict)>, String> {
    replay_file_with(path, &|| {}, |row, v| (row.id.clone(), v.clone()))
        .map(|(_, v)| v)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Peak resident set of this process in KiB (VmHWM), where the system reports it.
pub(crate) fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

pub(crate) fn mkfifo(path: &Path) -> Result<(), String> {
    let st = std::process::Command::new("mkfifo").arg(path).status().map_err(|e| format!("mkfifo: {e}"))?;
    ensure!(st.success(), "mkfifo {} failed: {st}", path.display());
    Ok(())
}

/// A row of the shipped `model-gate-ada.parquet` (op accumulator, operands and bits inline) of the given shape.
pub(crate) fn gate_row(rec: &Recording, m: i64) -> Result<Row, String> {
    rec.rows.iter().find(|r| r.m == m).cloned().ok_or_else(|| format!("model-gate-ada has no row with m = {m}"))
}

pub(crate) fn inputs_json(a_sha: &str, b_sha: &str) -> String {
    RowInputs {
        spec: InputSpec {
            generator: GENERATOR_V1.into(),
            seed: 1,
            stream: 0,
            data: DataClass::Gaussian { scale: 1.0 },
        },
        a_sha256: a_sha.into(),
        b_sha256: b_sha.into(),
    }
    .to_json()
}
