//! Small helpers of the recorder: file hashes as recorder errors and durations for humans (digests,
//! timestamps and atomic writes are `mmaemu_datasets`').

use crate::error::RecordError;
use std::path::Path;

pub use mmaemu_datasets::digest::{now_rfc3339, sha256_hex};

/// Lower-case hex sha256 and size of a file, as a recorder error.
pub fn sha256_file(path: &Path) -> Result<(String, u64), RecordError> {
    mmaemu_datasets::digest::sha256_file(path).map_err(|e| RecordError::io(path, e))
}

/// `h:mm:ss` for a duration in seconds.
pub fn hms(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    format!("{}:{:02}:{:02}", s / 3600, (s % 3600) / 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mmaemu_datasets::write_file_atomic;

    #[test]
    fn timestamps() {
        assert_eq!(hms(3725.4), "1:02:05");
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.json");
        write_file_atomic(&p, b"one").unwrap();
        write_file_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let (h, n) = sha256_file(&p).unwrap();
        assert_eq!((h, n), (sha256_hex(b"two"), 3));
        assert!(write_file_atomic(&dir.path().join("missing/x"), b"").is_err());
    }
}
