//! What every lane of one load shares (its targets, template, schedule's
//! shape, counters), and what a lane reports when its share is done.

use crate::events::Batch;
use crate::load::connection::Dedicated;
use crate::load::pick::{Fanout, KeyDistribution};
use crate::load::plan::{Counters, Segment};
use crate::load::request::Template;
use crate::load::retry::Retry;
use crate::load::schedule::Shape;
use hyper::Uri;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// What every lane of one load shares (read-only but for the counters).
pub(crate) struct Shared {
    pub targets: Vec<Uri>,
    pub template: Template,
    pub shape: Shape,
    pub duration: Duration,
    pub seed: u64,
    pub epoch_offset_us: i64,
    pub keys: u32,
    /// Forged keys per principal (`[load] spoof`; 0 or 1: none).
    pub forged: u32,
    pub key_distribution: KeyDistribution,
    pub fanout: Fanout,
    pub timeout: Duration,
    /// Trace time 0.
    pub start: Instant,
    /// The run ends on time: a request still waiting for a free connection
    /// then is not sent, and a retry due after it is given up.
    pub deadline: Instant,
    pub stop: Arc<AtomicBool>,
    pub events: mpsc::Sender<Batch>,
    pub counters: Arc<Counters>,
    pub retry: Option<Retry>,
    pub lanes: usize,
    /// This machine's share of the schedule, which its lanes split.
    pub segment: Segment,
    /// For `https://` targets.
    pub tls: Option<crate::load::tls::Client>,
    /// Per key index, the address its connections come from
    /// (`[load] key = { source_ip }`); empty: the system picks. Each
    /// (target, key) is then a route with connections of its own.
    pub binds: Vec<std::net::IpAddr>,
    /// Requests pending (queued or in flight) per lane, and connections
    /// per lane, at most.
    pub connections: usize,
}

impl Shared {
    /// Connections are kept apart per route: per target, or per (target,
    /// key) when keys have addresses of their own.
    pub(crate) fn routes(&self) -> usize {
        self.targets.len() * self.binds.len().max(1)
    }

    pub(crate) fn route(&self, target: usize, key: usize) -> usize {
        match self.binds.len() {
            0 => target,
            per => target * per + key,
        }
    }

    /// A connection for `route`, from its key's address when it has one.
    pub(crate) fn connection(&self, route: usize) -> Dedicated {
        let per = self.binds.len().max(1);
        Dedicated::new(self.targets[route / per].clone(), self.tls.as_ref())
            .from(self.binds.get(route % per).copied())
    }

    /// `route`'s HTTP/2 connection, for a lane's tasks to share.
    pub(crate) fn link(&self, route: usize) -> crate::load::h2::Link {
        let per = self.binds.len().max(1);
        crate::load::h2::Link::new(
            self.targets[route / per].clone(),
            self.tls.as_ref(),
            self.binds.get(route % per).copied(),
        )
    }
}

pub(crate) struct Outcome {
    /// The lane's share of the schedule, sent or not.
    pub scheduled: u64,
    /// Of that share, what was never handed out, by why.
    pub not_sent: crate::store::records::NotSent,
    pub interrupted: bool,
    /// When the lane's pacer finished, from trace time 0.
    pub paced: Duration,
}
