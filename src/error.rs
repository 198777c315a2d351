//! Errors and exit codes. Every failure is one line naming what failed;
//! its kind decides the exit code (ARCHITECTURE.md: 0 met, 1 gate, 2 bad input,
//! 3 environment, 130 interrupted).

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exit {
    Passed,
    GateFailed,
    BadInput,
    Environment,
    Interrupted,
}

impl Exit {
    pub(crate) fn code(self) -> u8 {
        match self {
            Exit::Passed => 0,
            Exit::GateFailed => 1,
            Exit::BadInput => 2,
            Exit::Environment => 3,
            Exit::Interrupted => 130,
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Error {
    pub exit: Exit,
    pub message: String,
}

impl Error {
    /// The user asked for something impossible: exit 2.
    pub(crate) fn input(message: impl Into<String>) -> Self {
        Error {
            exit: Exit::BadInput,
            message: message.into(),
        }
    }

    /// The machine could not do what was asked: exit 3.
    pub(crate) fn environment(message: impl Into<String>) -> Self {
        Error {
            exit: Exit::Environment,
            message: message.into(),
        }
    }

    pub(crate) fn interrupted() -> Self {
        Error {
            exit: Exit::Interrupted,
            message: "interrupted".to_string(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// A typed error at a boundary (`stack`, `store`, `events`, `report`,
/// scenario reading) says which exit it means; `?` then turns it into an
/// [`Error`] whose message is its `Display`, so callers never pick an exit
/// kind for somebody else's failure.
pub(crate) trait Kind: std::error::Error {
    fn exit(&self) -> Exit;
}

impl<E: Kind> From<E> for Error {
    fn from(e: E) -> Self {
        Error {
            exit: e.exit(),
            message: e.to_string(),
        }
    }
}

/// The exit an I/O failure on a path the user named means: a path that is
/// not there is bad input (exit 2); anything else — permissions, a full
/// disk, a read-only file system — is the machine refusing (exit 3).
pub(crate) fn io_exit(e: &std::io::Error) -> Exit {
    match e.kind() {
        std::io::ErrorKind::NotFound => Exit::BadInput,
        _ => Exit::Environment,
    }
}
