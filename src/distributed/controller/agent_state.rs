//! What the controller holds of each agent during one arm: its stream's
//! place in the arm's reads, what it said that outlives a read (anchors,
//! whether its refused entries were said), and while the load runs its
//! spool and how it is doing (started, ended, lost, failed, its segment
//! handed over).

use crate::distributed::chain::Reader;
use crate::distributed::link;
use crate::distributed::protocol;
use crate::distributed::streams::{read, Entry};
use crate::distributed::time_line::Anchor;
use crate::error::Error;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use tokio::time::Instant;

/// The arm's streams, one per agent in the agents' order, as read so far.
pub(super) struct Streams {
    pub(super) names: Vec<String>,
    /// The last entry read of each stream.
    pub(super) ids: Vec<String>,
    /// Each stream's agent's chain, as read so far.
    pub(super) readers: Vec<Reader>,
}

/// How long a read that found nothing new waits before the next.
const IDLE_READ: std::time::Duration = std::time::Duration::from_millis(50);

impl Streams {
    pub(super) fn new(names: Vec<String>, readers: Vec<Reader>) -> Streams {
        Streams {
            ids: vec!["0-0".to_string(); names.len()],
            names,
            readers,
        }
    }

    /// New entries of the streams (after a short wait when there are
    /// none): the stream's index, the entry's id, and what it holds.
    pub(super) async fn read(
        &mut self,
        conn: &mut link::Conn,
    ) -> redis::RedisResult<Vec<(usize, String, Entry)>> {
        let got = read(conn, &self.names, &self.ids, &mut self.readers).await?;
        if got.is_empty() {
            tokio::time::sleep(IDLE_READ).await;
        }
        Ok(got)
    }

    /// Says, one line per agent, what was skipped in its stream and why:
    /// however much an attacker wrote, a few lines.
    pub(super) fn say_skipped(&self, agents: &[String]) {
        for (reader, agent) in self.readers.iter().zip(agents) {
            let skipped = reader.skipped();
            if skipped.is_empty() {
                continue;
            }
            let whys: Vec<String> = skipped
                .iter()
                .map(|(why, n)| format!("{n} {why}"))
                .collect();
            tracing::warn!(
                "ignored entries in agent {agent}'s stream (skipped, and removed): {}",
                whys.join("; ")
            );
        }
    }
}

/// What one agent said in its stream that outlives the read.
#[derive(Default)]
pub(super) struct Heard {
    /// Its readings of the coordinator's clock, on its own.
    pub(super) anchors: Vec<Anchor>,
}

/// One agent while the controller collects an arm's load.
pub(super) struct AgentState {
    pub(super) heard: Heard,
    /// Where its event chunks are spooled.
    pub(super) spool: PathBuf,
    file: BufWriter<File>,
    /// Where its schedule's 0 was on its own clock, once it said it started.
    pub(super) started: Option<i64>,
    /// Where its origin was on the host's monotonic clock (for the tests'
    /// check of the placements).
    pub(super) mono: i64,
    pub(super) ended: Option<protocol::Ended>,
    /// Lost, this far into the arm (s).
    pub(super) lost: Option<f64>,
    /// Its segment handed to another when it was lost: (that agent, from
    /// µs).
    pub(super) handed: Option<(usize, u64)>,
    /// Whether the agent it was handed to said it took it.
    pub(super) took: bool,
    pub(super) failure: Option<String>,
    /// Its chain broke: why (nothing after the break can be trusted).
    pub(super) broken: Option<String>,
    /// When its end was read (from the arm's start).
    pub(super) ended_at: Option<std::time::Duration>,
    /// Since when the coordinator holds no heartbeat of it at all.
    pub(super) absent: Option<Instant>,
}

impl AgentState {
    /// An agent whose chunks go to a new file at `spool`.
    pub(super) fn spooled_to(spool: PathBuf, heard: Heard) -> Result<AgentState, Error> {
        let file =
            BufWriter::new(File::create(&spool).map_err(|e| {
                Error::environment(format!("cannot create {}: {e}", spool.display()))
            })?);
        Ok(AgentState {
            heard,
            spool,
            file,
            started: None,
            mono: 0,
            ended: None,
            lost: None,
            handed: None,
            took: false,
            failure: None,
            broken: None,
            ended_at: None,
            absent: None,
        })
    }

    /// Neither ended, nor lost, nor failed, nor its chain broken.
    pub(super) fn is_open(&self) -> bool {
        self.ended.is_none()
            && self.lost.is_none()
            && self.failure.is_none()
            && self.broken.is_none()
    }

    /// Adds a chunk of its events to its spool.
    pub(super) fn spool_chunk(&mut self, bytes: &[u8]) -> Result<(), Error> {
        self.file
            .write_all(bytes)
            .map_err(|e| self.cannot_write(&e))
    }

    /// Writes out what its spool still holds.
    pub(super) fn flush(&mut self) -> Result<(), Error> {
        self.file.flush().map_err(|e| self.cannot_write(&e))
    }

    fn cannot_write(&self, e: &std::io::Error) -> Error {
        Error::environment(format!("cannot write {}: {e}", self.spool.display()))
    }

    /// Its segment as another agent took it over: (that agent, from µs).
    pub(super) fn taken(&self) -> Option<(usize, u64)> {
        self.handed.filter(|_| self.took)
    }
}
