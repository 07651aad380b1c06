//! Finding recording files: a file named is taken as it is (if it is a regular file), directories are
//! searched recursively for `*.parquet` files (any case), skipping what is not a regular file.

use crate::error::DatasetError;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The recording files named by `paths`: a regular file is taken as given (whatever its extension); a
/// directory contributes every `*.parquet` file below it (the extension in any case; recursively, hidden
/// files and directories skipped, symbolic links followed once, FIFOs, sockets and devices skipped),
/// sorted. The result keeps the order of `paths`, each directory's files sorted, without duplicates.
/// A path that does not exist, a named path that is not a regular file or a directory, and a set of paths
/// without any recording file are errors.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>, DatasetError> {
    let mut out: Vec<PathBuf> = Vec::new();
    for p in paths {
        let meta = match std::fs::metadata(p) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(DatasetError::NotFound { path: p.clone() })
            }
            Err(e) => return Err(DatasetError::io(p, e)),
        };
        if meta.is_dir() {
            let mut found = Vec::new();
            let mut visited = HashSet::new();
            walk(p, &mut found, &mut visited)?;
            found.sort();
            out.extend(found);
        } else if meta.is_file() {
            out.push(p.clone());
        } else {
            return Err(DatasetError::NotRegular { path: p.clone() });
        }
    }
    let mut seen = HashSet::new();
    out.retain(|p| seen.insert(p.clone()));
    if out.is_empty() {
        return Err(DatasetError::NoRecordings { paths: paths.to_vec() });
    }
    Ok(out)
}

/// Is `path` named like a recording (`.parquet` in any case)?
pub fn is_recording_name(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("parquet"))
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>, visited: &mut HashSet<PathBuf>) -> Result<(), DatasetError> {
    // A directory reached twice (through a symbolic link back up the tree) is searched once.
    let real = std::fs::canonicalize(dir).map_err(|e| DatasetError::io(dir, e))?;
    if !visited.insert(real) {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|e| DatasetError::io(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| DatasetError::io(dir, e))?;
        let path = entry.path();
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue; // hidden, including the writer's temporary files
        }
        // Follows symbolic links (metadata, not symlink_metadata).
        let meta = std::fs::metadata(&path).map_err(|e| DatasetError::io(&path, e))?;
        if meta.is_dir() {
            walk(&path, found, visited)?;
        } else if meta.is_file() && is_recording_name(&path) {
            found.push(path);
        }
    }
    Ok(())
}
