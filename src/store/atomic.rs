//! Writing a run folder's files so that a reader never sees half of one:
//! each is written to a temporary name beside it and renamed into place.
//! A write that fails (a full disk) removes its temporary file, and, when
//! asked, the file it was to replace, so that no stale copy outlives it.
//! This guards against rlbench dying mid-write (kill -9, a panic), not
//! against the machine losing power (nothing is fsynced).

use super::StoreError;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The temporary name `path` is written under first: hidden, and marked
/// with this process's id so that two writers never share one.
fn temporary(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

/// Writes `bytes` to `path` whole or not at all: "cannot write PATH: why".
pub(crate) fn write(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let tmp = temporary(path);
    let written = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.flush()))
        .and_then(|()| std::fs::rename(&tmp, path));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        StoreError::Write {
            path: path.to_path_buf(),
            source: e,
        }
    })
}

/// As [`write`]; when it fails, the file at `path` (an earlier render's)
/// is removed too, so that what is left never contradicts the run.
pub(crate) fn replace(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    write(path, bytes).inspect_err(|_| {
        let _ = std::fs::remove_file(path);
    })
}

/// Whether `name` is one of this module's temporary files.
pub(crate) fn is_temporary(name: &str) -> bool {
    name.starts_with('.') && name.ends_with(".tmp")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_lands_whole_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.json");
        write(&path, b"{\"a\": 1}\n").unwrap();
        write(&path, b"{}\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{}\n");
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["summary.json"]);
        assert!(is_temporary(
            temporary(&path).file_name().unwrap().to_str().unwrap()
        ));
    }

    #[test]
    fn a_failed_write_names_its_path_and_replace_removes_the_stale_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("junit.xml");
        std::fs::write(&path, "old").unwrap();
        // A folder in the temporary file's place: its create fails.
        std::fs::create_dir(temporary(&path)).unwrap();
        let e = write(&path, b"new").unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("cannot write {}: ", path.display())),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        replace(&path, b"new").unwrap_err();
        assert!(!path.exists(), "the stale file is gone");
    }
}
