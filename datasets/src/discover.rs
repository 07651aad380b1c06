//! Finding recording files: paths given explicitly are taken as they are, directories are searched
//! recursively for `*.parquet` files.

use crate::error::DatasetError;
use std::path::{Path, PathBuf};

/// The recording files named by `paths`: a file is taken as given (whatever its extension); a directory
/// contributes every `*.parquet` file below it (recursively, hidden files and directories skipped),
/// sorted. The result keeps the order of `paths`, each directory's files sorted, without duplicates.
/// A path that does not exist is an error.
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
            walk(p, &mut found)?;
            found.sort();
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|p| seen.insert(p.clone()));
    Ok(out)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), DatasetError> {
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
            walk(&path, found)?;
        } else if path.extension().is_some_and(|e| e == "parquet") {
            found.push(path);
        }
    }
    Ok(())
}
