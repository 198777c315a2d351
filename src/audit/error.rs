//! What can go wrong reading an audit's lines and the flags that say how
//! to read them, each variant carrying what it names (the field, the
//! text, the value) so a caller can tell them apart. A line's error is
//! said at its place (`file:line: why`) as bad input (exit 2) by
//! `app::commands::audit`; a flag's names the flag.

use crate::error::{Exit, Kind};

/// Why one line (or row) is not a request: every reader's failures.
/// Foreign errors that cannot be compared (JSON's, CSV's) are kept as
/// their words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LineError {
    // A line as a whole.
    #[error("a line of {bytes} bytes")]
    TooLong { bytes: usize },
    #[error("not UTF-8 text")]
    NotUtf8,
    /// `why`: serde_json's words.
    #[error("not a JSON object ({why})")]
    NotJson { why: String },
    #[error("not a JSON object")]
    NotObject,
    /// `why`: the csv crate's words.
    #[error("not a CSV row ({why})")]
    NotCsv { why: String },

    // Values every reader shares (`audit::key_of`, `status_of`, `span`,
    // `seconds_us`).
    #[error("a key of {bytes} bytes (at most {max})")]
    KeyTooLong { bytes: usize, max: usize },
    #[error("status {value:?} is not an HTTP status")]
    NotStatus { value: String },
    #[error("a time outside 1970-2200")]
    OutsideYears,
    #[error("a request that ended before it began")]
    EndedBeforeBegan,
    #[error("{value:?} is not a number of seconds")]
    NotSeconds { value: String },
    #[error("{value:?} is not a duration from 0 to a day")]
    NotDuration { value: String },

    // Times (`audit::time`).
    #[error("{text:?} is not an RFC 3339 time ({source})")]
    NotRfc3339 {
        text: String,
        #[source]
        source: chrono::format::ParseError,
    },
    #[error("{text:?} is not Unix seconds")]
    NotUnixSeconds { text: String },
    #[error("{text:?} is not Unix seconds from 1970 to 2200")]
    UnixSecondsOutOfRange { text: String },
    #[error("{text:?} is not HAProxy's date ({source})")]
    NotHaproxyDate {
        text: String,
        #[source]
        source: chrono::format::ParseError,
    },

    // JSON lines' named fields (`audit::jsonl`).
    #[error("no field {name:?}")]
    NoField { name: String },
    /// The time in `field` cannot be read.
    #[error("{field}: {source}")]
    Time {
        field: String,
        #[source]
        source: Box<LineError>,
    },
    #[error("not a time")]
    NotTime,
    #[error("{field}: not a number")]
    FieldNotNumber { field: String },
    #[error("{field}: not a duration from 0 to a day")]
    FieldNotDuration { field: String },
    #[error("a span without two of start, end and duration")]
    NoSpan,
    #[error("{field}: not a status")]
    FieldNotStatus { field: String },
    #[error("{field}: not a key (a string or a number)")]
    FieldNotKey { field: String },

    // k6's points (`audit::k6`).
    #[error("a point without data")]
    PointWithoutData,
    #[error("a point without a time")]
    PointWithoutTime,
    #[error("a duration that is not from 0 to a day")]
    PointDuration,
    #[error("a point without tags")]
    PointWithoutTags,
    #[error("a point without a status tag")]
    PointWithoutStatus,
    #[error("tag {tag:?} is not a string")]
    TagNotString { tag: String },

    // HAProxy's lines (`audit::haproxy`).
    #[error("no [date] in HAProxy's form (dd/Mon/yyyy:HH:MM:SS.mmm)")]
    NoDate,
    #[error("no frontend after the date")]
    NoFrontend,
    #[error("no backend/server")]
    NoBackend,
    #[error("no timers")]
    NoTimers,
    #[error("timers {timers:?}: expected TR/Tw/Tc/Tr/Ta")]
    NotTimers { timers: String },
    #[error("timers {timers:?}: expected TR/Tw/Tc/Tr/Ta with Ta from 0 to a day")]
    TaOutOfRange { timers: String },
    #[error("no status")]
    NoStatus,
    /// `what`: the field the line stops short of.
    #[error("the line ends before its {what}")]
    EndsBefore { what: &'static str },
    #[error(
        "no captured request headers: capture the key with `capture request header NAME len N`"
    )]
    NoCaptures,
    #[error("a capture not closed")]
    CaptureNotClosed,
    #[error("captured request header {asked} asked, the line has {has}")]
    NoSuchCapture { asked: usize, has: usize },

    // nginx's lines (`audit::nginx`); `at`: the rest's first 40 characters.
    #[error("expected {text:?} at {at:?}")]
    Expected { text: String, at: String },
    #[error("expected {text:?} after ${var}")]
    ExpectedAfter { text: String, var: String },
    #[error("more after the format's end: {rest:?}")]
    MoreAfterEnd { rest: String },
    #[error("a line without a variable the format logs")]
    MissingVariable,

    // vegeta's rows (`audit::vegeta`).
    #[error(
        "{columns} columns where vegeta writes 12 (timestamp, code, latency, …, url, headers)"
    )]
    TooFewColumns { columns: usize },
    /// `what`: the column (timestamp or latency).
    #[error("{what} {value:?} is not a count of nanoseconds")]
    NotNanoseconds { what: &'static str, value: String },
    #[error("a latency longer than a day")]
    LatencyTooLong,
    #[error("code {value:?} is not an HTTP status (or 0)")]
    NotCode { value: String },
    #[error("url {url:?}: {source}")]
    NotUrl {
        url: String,
        #[source]
        source: url::ParseError,
    },
}

/// Why `--log-format` is not an nginx `log_format` rlbench can read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LogFormatError {
    #[error("log_format: ${{{name} is not closed")]
    NotClosed { name: String },
    #[error("log_format: a $ without a variable name")]
    NoName,
    #[error("log_format: ${a} and ${b} have no text between them: a line could not be split")]
    NoTextBetween { a: String, b: String },
    /// `need`: the variable not logged; `key`: the key's.
    #[error(
        "log_format does not log ${need}: rlbench needs $msec, $request_time, $status and the key (${key})"
    )]
    NotLogged { need: String, key: String },
}

/// Why `--key` does not say where in vegeta's URL the key is: the user's
/// flag (exit 2).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "--key {text:?}: vegeta's key is in the URL: url, query:NAME, path:N (from 1) or path:last"
)]
pub(crate) struct UrlKeyError {
    pub text: String,
}

impl Kind for UrlKeyError {
    fn exit(&self) -> Exit {
        Exit::BadInput
    }
}
