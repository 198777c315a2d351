//! What can go wrong reading a series selector, a scraped answer or the
//! limiter's counters, each carrying what it names (the selector's text,
//! the answer's line, the URL asked, the status answered, the underlying
//! error) so a caller can tell them apart.
//! None has an exit of its own: a selector's error is the scenario's
//! (said at its place in the file), and a reading's goes into the arm's
//! record as its words.

/// Why a text is not a selector: each names the text, as `[target]
/// metrics` wrote it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SelectorError {
    #[error(
        "{text:?} is not a series selector: expected a metric name like rlbench_requests_total{{decision=\"admitted\"}}"
    )]
    NoName { text: String },
    #[error("{text:?}: after the metric name only {{label=\"value\", ...}} may follow")]
    AfterName { text: String },
    #[error("{text:?}: {source}")]
    Matchers {
        text: String,
        #[source]
        source: MatcherError,
    },
    #[error("{text:?}: nothing may follow the closing }}")]
    AfterBrace { text: String },
}

/// Why the matchers between the braces cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum MatcherError {
    #[error("more than {max} label matchers")]
    TooMany { max: usize },
    #[error("expected a label name or }}")]
    NoLabel,
    #[error("label {label}: regular-expression matchers (=~, !~) are not taken, only = and !=")]
    Regex { label: String },
    #[error("label {label}: expected = or != after it")]
    NoOperator { label: String },
    #[error("label {label}: {source}")]
    Value {
        label: String,
        #[source]
        source: QuotedError,
    },
    #[error("expected , or }} after a matcher")]
    NoSeparator,
}

/// Why a quoted label value cannot be read (here and in a scraped answer).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum QuotedError {
    #[error("expected a value in double quotes")]
    NoQuote,
    #[error("unknown escape \\{0}")]
    UnknownEscape(char),
    #[error("a quoted value is not closed")]
    NotClosed,
}

/// Why an answer is not an exposition: too long, or the first line that
/// is not a sample, by its number.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ExpositionError {
    #[error("more than {max} samples")]
    TooMany { max: usize },
    #[error("line {line}: {source}")]
    Line {
        line: usize,
        #[source]
        source: SampleError,
    },
}

/// Why one line is not a sample.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SampleError {
    #[error("expected a metric name")]
    NoName,
    #[error("a sample without a value")]
    NoValue,
    #[error("{0:?} is not a number")]
    NotNumber(String),
    #[error("{0:?} is not a timestamp")]
    NotTimestamp(String),
    #[error("more than a value and a timestamp after the series")]
    Trailing,
    #[error("more than {max} labels")]
    TooManyLabels { max: usize },
    #[error("expected a label name or }}")]
    NoLabel,
    #[error("label {label}: expected = after it")]
    NoEquals { label: String },
    #[error("label {label}: {source}")]
    Value {
        label: String,
        #[source]
        source: QuotedError,
    },
    #[error("expected , or }} after a label")]
    NoSeparator,
}

/// A reading that cannot be a counter's: the series and what it read.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("series {series} read {value}, not a counter's value")]
pub(crate) struct TallyError {
    pub series: String,
    pub value: f64,
}

/// Why the counters could not be read: each names where it asked.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReadError {
    #[error("a replica's metrics address: {0}")]
    ReplicaAddress(#[source] hyper::http::uri::InvalidUri),
    #[error("Prometheus at {base} had not scraped the series again within {within_s}s")]
    NotScraped { base: String, within_s: u64 },
    #[error("{url}: {source}")]
    Exposition {
        url: String,
        #[source]
        source: ExpositionError,
    },
    #[error("{url}: the series {id} twice in one answer")]
    TwiceScraped { url: String, id: String },
    #[error("Prometheus at {base}: {source}")]
    PrometheusUrl {
        base: String,
        #[source]
        source: url::ParseError,
    },
    #[error("Prometheus at {base}: {source}")]
    PrometheusUri {
        base: String,
        #[source]
        source: hyper::http::uri::InvalidUri,
    },
    #[error("Prometheus at {base}, {promql}: {source}")]
    Answer {
        base: String,
        promql: String,
        #[source]
        source: AnswerError,
    },
    #[error("{url}: {source}")]
    Request {
        url: String,
        #[source]
        source: hyper::http::Error,
    },
    /// The request got no answer: the error and its causes, on one line.
    #[error("{url}: {}", causes(source))]
    Unanswered {
        url: String,
        #[source]
        source: hyper_util::client::legacy::Error,
    },
    #[error("{url}: the answer could not be read whole ({source})")]
    Body {
        url: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("{url}: the answer is not UTF-8 text")]
    NotUtf8 {
        url: String,
        #[source]
        source: std::str::Utf8Error,
    },
    /// `said`: the answer's first 200 characters, trimmed.
    #[error("{url}: answered {status}: {said}")]
    Status {
        url: String,
        status: hyper::StatusCode,
        said: String,
    },
    #[error("{url}: no answer within {within_s}s")]
    Timeout { url: String, within_s: u64 },
}

/// Why a Prometheus query answer cannot be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AnswerError {
    #[error("not a query answer ({0})")]
    NotAnswer(#[source] serde_json::Error),
    /// `why`: the first 200 characters of its error.
    #[error("status {status:?}: {why}")]
    Status { status: String, why: String },
    #[error("a success without data")]
    NoData,
    #[error("{0:?} is not a number")]
    NotNumber(String),
    #[error("a bad scalar ({0})")]
    BadScalar(#[source] serde_json::Error),
    #[error("a bad vector ({0})")]
    BadVector(#[source] serde_json::Error),
    #[error("more than {max} series")]
    TooMany { max: usize },
    #[error("the series {0} twice")]
    Twice(String),
    #[error("a {0} where a vector or scalar was asked")]
    ResultType(String),
}

/// An error and its sources, on one line.
fn causes(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}
