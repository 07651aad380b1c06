//! `DatasetError`: every way reading, writing or discovering recordings can fail. Each variant carries the path of the
//! file concerned, and its `Display` names that file (and the row id where the problem is in one row), so a message
//! alone says where to look.

use std::fmt;
use std::path::{Path, PathBuf};

/// An error of the datasets crate. Never a panic: every problem with a file's contents ends up here.
#[derive(Debug)]
pub enum DatasetError {
    /// An I/O error on `path` (open, read, create, write, sync, rename).
    Io { path: PathBuf, source: std::io::Error },
    /// A path given to [`crate::discover`] does not exist.
    NotFound { path: PathBuf },
    /// The path is not a regular file (a FIFO, a socket, a device): reading it could block or never end.
    NotRegular { path: PathBuf },
    /// Nothing to read: the paths named hold no recording file.
    NoRecordings { paths: Vec<PathBuf> },
    /// The file is not a Parquet file, or its footer is truncated or corrupt.
    NotParquet { path: PathBuf, detail: String },
    /// The file is Parquet, but its data could not be decoded (corrupt pages, unreadable columns).
    Corrupt { path: PathBuf, detail: String },
    /// A required key-value metadata key is missing (`mmaemu:format`).
    MissingMetadata { path: PathBuf, key: String },
    /// `mmaemu:format` holds something other than `mmaemu-recording/1`.
    WrongFormat { path: PathBuf, found: String },
    /// A required column is absent.
    MissingColumn { path: PathBuf, column: String },
    /// A column has another Arrow type than the format requires.
    WrongType { path: PathBuf, column: String, expected: String, found: String },
    /// The contents break the format: a bad value, a length that does not match the shapes, bad JSON, ...
    /// `row_id` names the row where the problem is in one row (None for file-level problems or a row whose
    /// id itself is unusable; `what` then says which row).
    Invalid { path: PathBuf, row_id: Option<String>, what: String },
    /// Encoding the Parquet file failed while writing.
    Write { path: PathBuf, detail: String },
}

impl DatasetError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            DatasetError::Io { path, .. }
            | DatasetError::NotFound { path }
            | DatasetError::NotRegular { path }
            | DatasetError::NotParquet { path, .. }
            | DatasetError::Corrupt { path, .. }
            | DatasetError::MissingMetadata { path, .. }
            | DatasetError::WrongFormat { path, .. }
            | DatasetError::MissingColumn { path, .. }
            | DatasetError::WrongType { path, .. }
            | DatasetError::Invalid { path, .. }
            | DatasetError::Write { path, .. } => path,
            DatasetError::NoRecordings { paths } => paths.first().map_or(Path::new("."), |p| p.as_path()),
        }
    }

    /// The row the error is about, where there is one.
    pub fn row_id(&self) -> Option<&str> {
        match self {
            DatasetError::Invalid { row_id, .. } => row_id.as_deref(),
            _ => None,
        }
    }

    /// Is this about reading the file at all (it is missing, unreadable or not Parquet) rather than about
    /// its contents?
    pub fn is_unreadable(&self) -> bool {
        matches!(
            self,
            DatasetError::Io { .. }
                | DatasetError::NotFound { .. }
                | DatasetError::NotRegular { .. }
                | DatasetError::NoRecordings { .. }
                | DatasetError::NotParquet { .. }
                | DatasetError::Corrupt { .. }
        )
    }

    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        DatasetError::Io { path: path.to_path_buf(), source }
    }

    pub(crate) fn invalid(path: &Path, row_id: Option<&str>, what: impl Into<String>) -> Self {
        DatasetError::Invalid { path: path.to_path_buf(), row_id: row_id.map(str::to_string), what: what.into() }
    }
}

impl fmt::Display for DatasetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DatasetError::Io { path, source } => write!(f, "{}: I/O error: {source}", path.display()),
            DatasetError::NotFound { path } => write!(f, "{}: no such file or directory", path.display()),
            DatasetError::NotRegular { path } => {
                write!(f, "{}: not a regular file (a FIFO, socket or device is never read)", path.display())
            }
            DatasetError::NoRecordings { paths } => {
                let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                write!(f, "no recordings found under {} (no *.parquet file)", names.join(", "))
            }
            DatasetError::NotParquet { path, detail } => write!(
                f,
                "{}: not a readable Parquet file (not Parquet, truncated or corrupt footer): {detail}",
                path.display()
            ),
            DatasetError::Corrupt { path, detail } => {
                write!(f, "{}: corrupt Parquet data: {detail}", path.display())
            }
            DatasetError::MissingMetadata { path, key } => {
                write!(f, "{}: key-value metadata `{key}` is missing (not an mmaemu recording?)", path.display())
            }
            DatasetError::WrongFormat { path, found } => write!(
                f,
                "{}: metadata `mmaemu:format` is {found:?}, expected \"{}\"",
                path.display(),
                crate::FORMAT_V1
            ),
            DatasetError::MissingColumn { path, column } => {
                write!(f, "{}: required column `{column}` is missing", path.display())
            }
            DatasetError::WrongType { path, column, expected, found } => {
                write!(f, "{}: column `{column}` has type {found}, expected {expected}", path.display())
            }
            DatasetError::Invalid { path, row_id, what } => match row_id {
                Some(id) => write!(f, "{}: row {id:?}: {what}", path.display()),
                None => write!(f, "{}: {what}", path.display()),
            },
            DatasetError::Write { path, detail } => {
                write!(f, "{}: writing Parquet failed: {detail}", path.display())
            }
        }
    }
}

impl std::error::Error for DatasetError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DatasetError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
