//! Where a starter scenario goes (`init NAME`, `probe --write NAME`): a
//! name or a path, checked before anything is sent.

use crate::error::Error;
use std::path::{Path, PathBuf};

/// Where a starter scenario goes, as `init NAME` and `probe --write NAME`
/// take it: `name`, `dir/name` or `dir/name.toml` — the file
/// `dir/name.toml`, the scenario named by its stem (which names the
/// report folder). Checked before anything is sent: the folder exists,
/// and the file does not unless `--force`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Destination {
    pub dir: PathBuf,
    pub name: String,
}

impl Destination {
    pub(crate) fn parse(arg: &str, force: bool) -> Result<Destination, Error> {
        let path = Path::new(arg);
        if arg.ends_with('/') || path.is_dir() {
            return Err(Error::input(format!(
                "{arg:?} is a folder: give the file's name in it ({}/NAME)",
                arg.trim_end_matches('/')
            )));
        }
        let stem = path
            .file_name()
            .and_then(|f| f.to_str())
            .map(|f| f.strip_suffix(".toml").unwrap_or(f))
            .unwrap_or_default();
        check_name(stem).map_err(|e| Error::input(format!("{arg:?}: {}", e.message)))?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(Error::input(format!(
                "{arg:?}: no folder {} to write it in",
                dir.display()
            )));
        }
        let to = Destination {
            dir,
            name: stem.to_string(),
        };
        if to.path().exists() && !force {
            return Err(exists(&to.path()));
        }
        Ok(to)
    }

    /// The file: `dir/name.toml`.
    pub(crate) fn path(&self) -> PathBuf {
        self.dir.join(format!("{}.toml", self.name))
    }
}

pub(super) fn exists(path: &Path) -> Error {
    Error::input(format!(
        "{} exists: pick another name, or --force to overwrite it",
        path.display()
    ))
}

/// A scenario's name: letters, digits, - _ . (it names the report folder).
pub(super) fn check_name(name: &str) -> Result<(), Error> {
    if name.is_empty()
        || name == "."
        || name == ".."
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(Error::input(format!(
            "{name:?}: a scenario name takes letters, digits, - _ . (it names the report folder)"
        )));
    }
    Ok(())
}
