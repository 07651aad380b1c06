//! `RecordError`: every way a recorder command can fail, and the process exit code of each.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | I/O, Parquet or data error (a file could not be read or written) |
//! | 2 | usage error: bad arguments, a bad spec, a resume that does not match the interrupted run, an output that exists (without `--force`) or that another process is recording |
//! | 3 | no GPU: the CUDA driver or cuBLASLt cannot be loaded, or no device is present |
//! | 4 | a CUDA or cuBLASLt failure while recording (not a rejection of a call: those are recorded) |
//! | 5 | stopped on request after some chunks (`--stop-after-chunks`, used to test resuming) |

use mmaemu_datasets::DatasetError;
use std::fmt;
use std::path::{Path, PathBuf};

/// An error of the recorder. Never a panic: bad input of every kind ends up here.
#[derive(Debug)]
pub enum RecordError {
    /// Bad command-line arguments.
    Usage(String),
    /// A sweep or grid spec that cannot be parsed or makes no sense.
    Spec { path: PathBuf, what: String },
    /// The CUDA driver, cuBLASLt or a device is missing.
    NoGpu(String),
    /// A CUDA or cuBLASLt call failed (other than a rejected GEMM).
    Cuda(String),
    /// Reading or writing a recording or table failed.
    Data(DatasetError),
    /// An I/O error on `path`.
    Io { path: PathBuf, source: std::io::Error },
    /// The parts of an interrupted run do not belong to this run (other spec, other GPU).
    ResumeMismatch(String),
    /// Another process holds the output's lock.
    Locked(String),
    /// The run stopped after the requested number of chunks.
    Stopped { chunks: usize },
    /// The model (simulated device) failed unexpectedly.
    Model(String),
}

impl RecordError {
    /// The process exit code (see the module documentation).
    pub fn exit_code(&self) -> i32 {
        match self {
            RecordError::Data(_) | RecordError::Io { .. } | RecordError::Model(_) => 1,
            RecordError::Usage(_)
            | RecordError::Spec { .. }
            | RecordError::ResumeMismatch(_)
            | RecordError::Locked(_) => 2,
            RecordError::NoGpu(_) => 3,
            RecordError::Cuda(_) => 4,
            RecordError::Stopped { .. } => 5,
        }
    }

    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        RecordError::Io { path: path.to_path_buf(), source }
    }

    pub(crate) fn spec(path: &Path, what: impl Into<String>) -> Self {
        RecordError::Spec { path: path.to_path_buf(), what: what.into() }
    }
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::Usage(m) => write!(f, "usage: {m}"),
            RecordError::Spec { path, what } => write!(f, "{}: bad spec: {what}", path.display()),
            RecordError::NoGpu(m) => write!(
                f,
                "no GPU available: {m}. The GPU commands need an NVIDIA driver (libcuda.so.1) and cuBLASLt \
                 (libcublasLt.so.*) on the library path; `--simulate` runs the same pipeline against the mmaemu model"
            ),
            RecordError::Cuda(m) => write!(f, "CUDA error: {m}"),
            RecordError::Data(e) => write!(f, "{e}"),
            RecordError::Io { path, source } => write!(f, "{}: I/O error: {source}", path.display()),
            RecordError::ResumeMismatch(m) => write!(f, "cannot resume: {m} (pass --restart to start over)"),
            RecordError::Locked(m) => write!(f, "{m}"),
            RecordError::Stopped { chunks } => {
                write!(f, "stopped after {chunks} chunk(s) as requested; run the same command again to resume")
            }
            RecordError::Model(m) => write!(f, "model error: {m}"),
        }
    }
}

impl std::error::Error for RecordError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RecordError::Data(e) => Some(e),
            RecordError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<DatasetError> for RecordError {
    fn from(e: DatasetError) -> Self {
        RecordError::Data(e)
    }
}
