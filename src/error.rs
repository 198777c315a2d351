//! Errors and exit codes. Every failure is one line naming what failed;
//! its kind decides the exit code (DESIGN.md: 0 met, 1 gate, 2 bad input,
//! 3 environment, 130 interrupted).

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Passed,
    GateFailed,
    BadInput,
    Environment,
    Interrupted,
}

impl Exit {
    pub fn code(self) -> u8 {
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
pub struct Error {
    pub exit: Exit,
    pub message: String,
}

impl Error {
    /// The user asked for something impossible: exit 2.
    pub fn input(message: impl Into<String>) -> Self {
        Error {
            exit: Exit::BadInput,
            message: message.into(),
        }
    }

    /// The machine could not do what was asked: exit 3.
    pub fn environment(message: impl Into<String>) -> Self {
        Error {
            exit: Exit::Environment,
            message: message.into(),
        }
    }

    pub fn interrupted() -> Self {
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
