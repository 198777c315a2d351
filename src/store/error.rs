//! What can go wrong reading or writing a run folder, each naming its
//! path, and the exit each means: the machine refusing a read or a write
//! (permissions, a full disk) is exit 3; a folder that is not a run's, a
//! record that does not parse or names another arm, a path not there, an
//! `--out` folder that is not rlbench's, is bad input (exit 2).

use crate::error::{io_exit, Exit, Kind};
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot create the run folder {}: {source}", path.display())]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A record that is not the JSON rlbench writes (or could not be encoded).
    #[error("{}: {source}", path.display())]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(
        "{}: not a run folder (no run.json); expected a folder like reports/<scenario>/<time>",
        .0.display()
    )]
    NotRunFolder(PathBuf),
    #[error(
        "{}: the arm name {name:?} is not one rlbench writes ({}): refused",
        path.display(),
        super::names::NAME_RULE
    )]
    ArmName { path: PathBuf, name: String },
    #[error("{}: it names the arm {found:?}, but run.json lists it as {listed:?}", path.display())]
    OtherArm {
        path: PathBuf,
        found: String,
        listed: String,
    },
    /// A record whose figures no run of rlbench writes (hand-edited, or
    /// damaged): refused before they size anything.
    #[error("{}: {why}: not a record rlbench wrote", path.display())]
    Implausible { path: PathBuf, why: Implausible },
    #[error("{}: it lists the arm {name:?} twice", path.display())]
    ArmTwice { path: PathBuf, name: String },
    #[error(
        "--out {}: the folder holds other files and no run.json; give a new or \
         empty folder (rlbench clears only a folder of its own runs)",
        .0.display()
    )]
    NotOurs(PathBuf),
    #[error("--out {}: a run is still being written there (rlbench, process {pid})", dir.display())]
    StillWritten { dir: PathBuf, pid: u32 },
    #[error("the run is still going (rlbench, process {0}): rebuild its report once it ends")]
    StillRunning(u32),
    #[error("--out {}: cannot clear {}: {source}", dir.display(), path.display())]
    Clear {
        dir: PathBuf,
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Which figure of an arm record read back no run of rlbench writes, and
/// the bounds it is outside (`store/records/plausible.rs` checks them).
#[derive(Debug, PartialEq, thiserror::Error)]
pub(crate) enum Implausible {
    #[error("replicas {replicas} is more than a trace can tell apart ({most})")]
    Replicas { replicas: usize, most: usize },
    #[error("witnesses {0} is more than 100000")]
    Witnesses(usize),
    /// A figure (named as the record names it) outside `lo..=hi`.
    #[error("{what} {value} is outside {lo}..={hi}")]
    Outside {
        what: &'static str,
        value: i64,
        lo: i64,
        hi: i64,
    },
    #[error("{0} agents is more than 256")]
    Agents(usize),
    #[error("an agent's segment {segment} of {of}")]
    Segment { segment: usize, of: usize },
    #[error("send_window_s {0} is no run's")]
    SendWindow(f64),
    #[error("target_rps {0} is no run's")]
    TargetRps(f64),
    /// A count of the record's policy outside `lo..=hi`.
    #[error("the policy's {what} {value} is outside {lo}..={hi}")]
    PolicyCount {
        what: &'static str,
        value: u64,
        lo: u64,
        hi: u64,
    },
    /// A window or period of the record's policy outside `1..=hi` µs.
    #[error("the policy's {what} {value} µs is outside 1..={hi}")]
    PolicySpan {
        what: &'static str,
        value: u64,
        hi: u64,
    },
}

impl Kind for StoreError {
    fn exit(&self) -> Exit {
        match self {
            StoreError::Write { source, .. } | StoreError::Create { source, .. } => {
                // Writing is never the user's mistake, a missing folder included.
                match io_exit(source) {
                    Exit::BadInput => Exit::Environment,
                    other => other,
                }
            }
            StoreError::Read { source, .. } | StoreError::Clear { source, .. } => io_exit(source),
            StoreError::Json { .. }
            | StoreError::NotRunFolder(_)
            | StoreError::ArmName { .. }
            | StoreError::OtherArm { .. }
            | StoreError::Implausible { .. }
            | StoreError::ArmTwice { .. }
            | StoreError::NotOurs(_)
            | StoreError::StillWritten { .. }
            | StoreError::StillRunning(_) => Exit::BadInput,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Error as Io, ErrorKind};

    fn read(kind: ErrorKind) -> StoreError {
        StoreError::Read {
            path: "reports/x/run.json".into(),
            source: Io::from(kind),
        }
    }

    #[test]
    fn the_machine_refusing_is_exit_3_and_a_wrong_path_exit_2() {
        assert_eq!(read(ErrorKind::PermissionDenied).exit(), Exit::Environment);
        assert_eq!(read(ErrorKind::NotFound).exit(), Exit::BadInput);
        let write = |kind| StoreError::Write {
            path: "reports/x/summary.json".into(),
            source: Io::from(kind),
        };
        assert_eq!(write(ErrorKind::PermissionDenied).exit(), Exit::Environment);
        // A folder gone while writing is still the machine's doing.
        assert_eq!(write(ErrorKind::NotFound).exit(), Exit::Environment);
        assert_eq!(StoreError::StillRunning(7).exit(), Exit::BadInput);
        assert_eq!(StoreError::NotRunFolder("x".into()).exit(), Exit::BadInput);
    }

    #[test]
    fn each_says_its_path_and_why() {
        let e = read(ErrorKind::PermissionDenied).to_string();
        assert!(e.starts_with("cannot read reports/x/run.json: "), "{e}");
        let e: crate::error::Error = read(ErrorKind::PermissionDenied).into();
        assert_eq!(e.exit, Exit::Environment);
        assert!(e.message.contains("permission denied"), "{}", e.message);
    }
}
