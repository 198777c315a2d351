//! `[target]` outside rlbench: someone else's limiter, where requests go
//! and what they look like.

/// Someone else's limiter: where requests go and what they look like.
#[derive(Clone, Debug)]
pub(crate) struct ExternalTarget {
    /// The scenario's URLs (arms may name their own).
    pub urls: Vec<hyper::Uri>,
    /// `[target] path`, put on every URL (an arm's too).
    pub path: Option<String>,
    pub template: crate::load::request::Template,
    /// `[target] one_clock`: the limiter reads one clock inside each
    /// decision's atomic step (one process, or its store's own clock).
    pub one_clock: bool,
    /// `[target] wall_clock = "this_machine"`: the limiter keeps time by
    /// this machine's wall clock (it runs here, or its store does), so
    /// epoch-aligned windows and chunks are known in trace time.
    pub wall_clock_here: bool,
    /// `[target] allow_remote`: URLs off this machine are accepted (the
    /// report names them); without it, loopback only.
    pub allow_remote: bool,
    /// `[target] ca`, `cert`, `key`, `insecure`: how `https://` URLs are
    /// reached (paths relative to the scenario file's folder).
    pub tls: crate::load::tls::TlsSpec,
    /// `[target] fresh_keys` (default true): each run and arm tags its
    /// keys on the wire ([`crate::load::request::Template::key_tag`]);
    /// false sends the same names every run, to see what the limiter
    /// remembers.
    pub fresh_keys: bool,
}

impl ExternalTarget {
    /// A target of no URL with this request template: where `[load] key`
    /// is put when no `[target]` holds it (`--key-in`, the reference API).
    pub(crate) fn around(template: crate::load::request::Template) -> Self {
        ExternalTarget {
            urls: Vec::new(),
            path: None,
            template,
            one_clock: false,
            wall_clock_here: false,
            allow_remote: false,
            tls: Default::default(),
            fresh_keys: true,
        }
    }
}
