//! A bundle is untrusted input and a closed set: every name it uses is a plain name inside it, every file is regular
//! (no link, FIFO or device), read once with its size capped on the opened file, and parsed from the bytes hashed.

use crate::DatasetError;
use std::io::Read;
use std::path::Path;

/// The largest document read (a manifest or a preset document is a page of TOML; a probe or a fit's output a page of
/// JSON).
pub const MAX_DOCUMENT_BYTES: u64 = 1 << 20;

fn invalid(path: &Path, what: impl Into<String>) -> DatasetError {
    DatasetError::invalid(path, None, what)
}

/// Whether `name` names a file inside the bundle's directory: not empty, no separator, not `.` or `..`, ASCII
/// without control characters.
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name.chars().all(|c| c.is_ascii_graphic() && c != '/' && c != '\\' && c != ':')
}

pub use mmaemu_model::catalogue::is_plain_label;

/// Open `path` for reading only if it is a regular file, without following a link and without blocking on a FIFO;
/// the type is checked on the opened file (no race between a check and the open).
fn open(path: &Path) -> Result<std::fs::File, DatasetError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    #[cfg(not(unix))]
    if std::fs::symlink_metadata(path).map_err(|e| DatasetError::io(path, e))?.file_type().is_symlink() {
        return Err(DatasetError::NotRegular { path: path.to_path_buf() });
    }
    let file = options.open(path).map_err(|e| {
        // O_NOFOLLOW on a link: ELOOP.
        #[cfg(unix)]
        if e.raw_os_error() == Some(libc::ELOOP) {
            return DatasetError::NotRegular { path: path.to_path_buf() };
        }
        DatasetError::io(path, e)
    })?;
    let meta = file.metadata().map_err(|e| DatasetError::io(path, e))?;
    if !meta.is_file() {
        return Err(DatasetError::NotRegular { path: path.to_path_buf() });
    }
    Ok(file)
}

/// The bytes of the regular file `path`, at most `cap` of them: a longer file (however its metadata reads) is an
/// invalid value naming `what` and the cap, found after reading cap + 1 bytes, never more.
pub fn read_regular(path: &Path, cap: u64, what: &str) -> Result<Vec<u8>, DatasetError> {
    let file = open(path)?;
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1)).read_to_end(&mut bytes).map_err(|e| DatasetError::io(path, e))?;
    if bytes.len() as u64 > cap {
        return Err(invalid(path, format!("{what} is larger than the {cap} bytes it may have")));
    }
    Ok(bytes)
}

/// The text of the regular file `path` ([`read_regular`] with `cap`), UTF-8.
fn read_text(path: &Path, cap: u64, what: &str) -> Result<String, DatasetError> {
    String::from_utf8(read_regular(path, cap, what)?).map_err(|_| invalid(path, format!("{what} is not UTF-8 text")))
}

/// A document's text, at most [`MAX_DOCUMENT_BYTES`]: a manifest, a preset document.
pub fn read_document(path: &Path, what: &str) -> Result<String, DatasetError> {
    read_text(path, MAX_DOCUMENT_BYTES, what)
}

/// A data file's text, under the memory ceiling in force: a fit's output, a probe.
pub fn read_data(path: &Path, what: &str) -> Result<String, DatasetError> {
    read_text(path, crate::limits::ceiling(), what)
}

/// A preset document named by a path ([`read_document`]), as the model's `Catalogue::preset_or_path` reads it.
pub fn read_preset_document(path: &str) -> std::io::Result<String> {
    read_document(Path::new(path), "the preset document").map_err(|e| std::io::Error::other(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_labels() {
        for ok in ["t.parquet", "a-b_c.json", "x"] {
            assert!(is_plain_name(ok), "{ok}");
        }
        for bad in ["", ".", "..", "../t.parquet", "/etc/passwd", "a/b", "a\\b", "c:x", "a b", "é.json", "a\u{200b}"] {
            assert!(!is_plain_name(bad), "{bad:?}");
        }
        for ok in ["hopper", "b200_mma_sync", "rtx4060-cublaslt-12.8.3.14", "0lab"] {
            assert!(is_plain_label(ok), "{ok}");
        }
        for bad in ["", " hopper", "hopper ", "Hopper", "hopper\u{200b}", "h\u{043e}pper", "-x", ".x", "a/b"] {
            assert!(!is_plain_label(bad), "{bad:?}");
        }
    }

    #[test]
    fn only_regular_files_are_read_and_never_past_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, b"0123456789").unwrap();
        assert_eq!(read_regular(&f, 10, "f").unwrap(), b"0123456789");
        let e = read_regular(&f, 9, "the file").unwrap_err().to_string();
        assert!(e.contains("larger than the 9 bytes"), "{e}");
        assert!(matches!(read_regular(dir.path(), 10, "d"), Err(DatasetError::NotRegular { .. })));
        #[cfg(unix)]
        {
            let link = dir.path().join("link");
            std::os::unix::fs::symlink(&f, &link).unwrap();
            assert!(matches!(read_regular(&link, 10, "l"), Err(DatasetError::NotRegular { .. })));
            // A FIFO is refused at once, not waited on.
            let fifo = dir.path().join("fifo");
            let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            assert!(matches!(read_regular(&fifo, 10, "p"), Err(DatasetError::NotRegular { .. })));
            // A device reads no further than the cap.
            let e = read_regular(Path::new("/dev/zero"), 1 << 10, "zero");
            assert!(matches!(e, Err(DatasetError::NotRegular { .. })), "{e:?}");
        }
    }
}
