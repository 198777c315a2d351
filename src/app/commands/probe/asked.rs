//! What `rlbench probe` is asked for, checked, and what it ends with.

use crate::error::Exit;
use crate::load::request::Template;
use crate::scenario::PolicyTiming;
use hyper::header::HeaderName;
use hyper::Uri;
use reference_api::Policy;
use std::time::Duration;

/// What `rlbench probe` was asked for, checked.
#[derive(Debug)]
pub(crate) struct Probe {
    pub targets: Vec<Uri>,
    /// Method, the user's headers, the statuses that mean "limited".
    pub template: Template,
    /// Headers to try as the key before the common ones (`--key-header`).
    pub key_headers: Vec<HeaderName>,
    /// The policy the user believes in (`--policy`), judged beside the fit.
    pub declared: Option<(Policy, PolicyTiming)>,
    /// The same as given: the starter declares it (the intent), not the fit.
    pub declared_text: Option<String>,
    pub max_requests: u64,
    pub max_time: Duration,
    pub timeout: Duration,
    /// `--write NAME`: a starter scenario with what was found, checked
    /// before any load.
    pub write: Option<crate::app::commands::init::Destination>,
    pub force: bool,
    /// Where its lines fold ([`crate::report::fold::width`]).
    pub columns: Option<usize>,
    /// How `https://` targets are spoken to, as given (the starter keeps
    /// it), and the client built from it (none for cleartext targets).
    pub tls_spec: crate::load::tls::TlsSpec,
    pub tls: Option<crate::load::tls::Client>,
}

/// What the probe ends with.
pub(crate) struct Outcome {
    pub exit: Exit,
    /// One line for standard error when it did not find a policy.
    pub error: Option<String>,
}

/// What an interrupted probe ends with.
pub(super) fn interrupted() -> Outcome {
    Outcome {
        exit: Exit::Interrupted,
        error: Some("interrupted; nothing was concluded".into()),
    }
}
