//! Files read back from a run folder, or given as one (a trace, a record,
//! a summary, a chart), are hostile until read: each is opened only when it is a regular file (a FIFO in place of
//! a trace would hang the reader, a device like `/dev/zero` never end) and
//! read only up to a bound on its size.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// The most a record (`run.json`, `events/<arm>.json`) may hold.
pub(crate) const RECORD_BYTES: u64 = 64 * 1024 * 1024;
/// The most a summary.json may hold.
pub(crate) const SUMMARY_BYTES: u64 = 512 * 1024 * 1024;

/// Opens `path` for reading when it is a regular file (symbolic links
/// followed), never blocking on it.
pub(crate) fn open_regular(path: &Path) -> io::Result<File> {
    let meta = std::fs::metadata(path)?;
    if !meta.file_type().is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    File::open(path)
}

/// The most a chart (a PNG in a run folder) may hold.
pub(crate) const CHART_BYTES: u64 = 64 * 1024 * 1024;

/// The bytes of the regular file `path`, at most `limit` of them.
pub(crate) fn read(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open_regular(path)?
        .take(limit + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {} MiB", limit / (1024 * 1024)),
        ));
    }
    Ok(bytes)
}

/// The text of the regular file `path`, at most `limit` bytes.
pub(crate) fn read_to_string(path: &Path, limit: u64) -> io::Result<String> {
    String::from_utf8(read(path, limit)?).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_bound_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "12345").unwrap();
        assert_eq!(read_to_string(&file, 5).unwrap(), "12345");
        assert!(read_to_string(&file, 4).is_err());
        assert!(read_to_string(dir.path(), 100).is_err(), "a folder");
        assert!(read_to_string(Path::new("/dev/zero"), 100).is_err());
        let fifo = dir.path().join("fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        // Refused at once, never opened (opening a FIFO blocks).
        assert!(open_regular(&fifo).is_err());
    }
}
