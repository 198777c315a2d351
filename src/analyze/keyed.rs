//! One key's requests as kept from the trace's read until the verifier
//! reads them: 20 bytes a request (`Compact`) with its `seq` in 4 when it
//! fits (every first attempt of a schedule under 4 G requests) and the
//! spare capacity its answer advertised, in one list: the read appends
//! to a thousand keys' lists at random, and each more list a key kept
//! (seqs, witnesses apart) was one more cache miss a request — at 100 M
//! requests the appends were the read's largest cost. Lists grow by half,
//! not double, so a long run's traces take little more than their
//! contents (at 6 M requests, doubling left ~70% of the space unused), and
//! in blocks that never move (`blocks`), so growing frees nothing.

mod blocks;

use crate::events::read::Record;
use crate::events::{Event, Flaw, Outcome};
use crate::verify::{Decided, Obs};
use blocks::Blocks;

/// Every key's name and trace, numbered as the trace numbers them, and
/// whether each is judged here. Filled from the trace's batches on a
/// thread of its own while the analysis counts the same batches.
#[derive(Default)]
pub(super) struct Keyed {
    pub(super) names: Vec<String>,
    pub(super) traces: Vec<KeyTrace>,
    pub(super) taken: Vec<bool>,
    /// Each key of the trace's trace here, by the trace's key number:
    /// its own, or its principal's when keys are judged per principal.
    alias: Vec<u32>,
    /// Per principal: its trace's number (only when judged so).
    principals: Option<std::collections::HashMap<String, u32>>,
}

impl Keyed {
    /// Keys judged per principal (`[load] spoof`): the forged keys of a
    /// principal (`<principal>~<n>`) are one trace, named for it.
    pub(super) fn per_principal() -> Self {
        Keyed {
            principals: Some(Default::default()),
            ..Default::default()
        }
    }

    /// Takes a batch of records: names keys (judged here when `judged`
    /// says so) and keeps the judged keys' requests, each widened by its
    /// agent's clock uncertainty (`agents`, µs; none on one machine).
    pub(super) fn add(
        &mut self,
        batch: &[Record],
        judged: impl Fn(&str) -> bool,
        agents: &[i64],
    ) -> Result<(), Flaw> {
        for record in batch {
            match record {
                Record::Key(name) => {
                    let name = match &self.principals {
                        Some(_) => crate::load::pick::principal_of(name),
                        None => name.as_str(),
                    };
                    let number = self.traces.len() as u32;
                    if let Some(principals) = &mut self.principals {
                        if let Some(&known) = principals.get(name) {
                            self.alias.push(known);
                            continue;
                        }
                        principals.insert(name.to_string(), number);
                    }
                    self.alias.push(number);
                    self.taken.push(judged(name));
                    self.names.push(name.to_string());
                    self.traces.push(KeyTrace::default());
                }
                Record::Event(key, e) => {
                    let key = *self.alias.get(*key as usize).ok_or(Flaw::UndefinedKey)? as usize;
                    let trace = &mut self.traces[key];
                    if self.taken[key] {
                        let decided = match e.outcome {
                            Outcome::Admitted => Decided::Admitted,
                            Outcome::Rejected => Decided::Rejected,
                            Outcome::Error | Outcome::Timeout => Decided::Unknown,
                        };
                        let widen = agents.get(e.agent as usize).copied().unwrap_or(0);
                        trace.add(e, decided, widen);
                    }
                }
            }
        }
        Ok(())
    }
}

/// One request of a key as kept until the verifier reads it: 20 bytes, so
/// the per-key traces of a long run stay small (6 M requests ≈ 120 MB).
#[derive(Clone, Copy)]
#[repr(C, packed(4))]
pub(super) struct Compact {
    /// Send time in µs plus [`BIAS`] (low 44 bits: 203 days; a send
    /// widened to before the trace's 0 still fits), the replica (16 bits)
    /// and the decision (top 2 bits).
    sent_decided: u64,
    /// done − sent: µs below 2³¹, else whole milliseconds rounded up with
    /// the top bit set. Rounding up only widens `[sent, done]`, which only
    /// ever makes a verdict milder.
    took: u32,
    /// Its `seq`, or [`WIDE`] when that does not fit (then it is in
    /// `KeyTrace::wide`, by index).
    seq: u32,
    /// The spare capacity its answer advertised (`remaining`, at most
    /// `u32::MAX`), 0 when none.
    remaining: u32,
}

const SENT_MASK: u64 = (1 << 44) - 1;
/// Added to a send time as kept: a load agent's request widened by its
/// clock's uncertainty may start up to this long (18 minutes) before 0.
const BIAS: i64 = 1 << 30;
const REPLICA_SHIFT: u32 = 44;
const REPLICA_MASK: u64 = (1 << 16) - 1;
const IN_MS: u32 = 1 << 31;

impl Compact {
    fn new(
        sent_us: i64,
        took_us: u64,
        decided: Decided,
        replica: u32,
        seq: u32,
        remaining: u32,
    ) -> Self {
        let d: u64 = match decided {
            Decided::Admitted => 0,
            Decided::Rejected => 1,
            Decided::Unknown => 2,
        };
        let took = if took_us < u64::from(IN_MS) {
            took_us as u32
        } else {
            IN_MS | took_us.div_ceil(1_000).min(u64::from(IN_MS - 1)) as u32
        };
        let replica = u64::from(replica).min(REPLICA_MASK);
        let kept = sent_us.saturating_add(BIAS).clamp(0, SENT_MASK as i64) as u64;
        Compact {
            sent_decided: kept | (replica << REPLICA_SHIFT) | (d << 62),
            took,
            seq,
            remaining,
        }
    }

    fn decided(self) -> Decided {
        match self.sent_decided >> 62 {
            0 => Decided::Admitted,
            1 => Decided::Rejected,
            _ => Decided::Unknown,
        }
    }

    fn replica(self) -> u32 {
        ((self.sent_decided >> REPLICA_SHIFT) & REPLICA_MASK) as u32
    }

    fn obs(self) -> Obs {
        let sent = (self.sent_decided & SENT_MASK) as i64 - BIAS;
        let took = self.took;
        let took = if took & IN_MS == 0 {
            i64::from(took)
        } else {
            i64::from(took & !IN_MS) * 1_000
        };
        Obs {
            sent,
            done: sent + took,
            decided: self.decided(),
        }
    }
}

/// One key's requests.
#[derive(Default)]
pub(super) struct KeyTrace {
    requests: Blocks<Compact>,
    /// The seqs too wide for a `Compact`: (index, seq).
    wide: Vec<(u32, u64)>,
}

/// A seq kept in `wide`.
const WIDE: u32 = u32::MAX;

impl KeyTrace {
    /// Keeps `e`, its `[sent, done]` widened by `widen_us` each way (the
    /// clock uncertainty of the agent that sent it; 0 on one machine).
    pub(super) fn add(&mut self, e: &Event, decided: Decided, widen_us: i64) {
        let index = self.requests.len() as u32;
        let remaining = e
            .advertised
            .and_then(|a| a.remaining)
            .map_or(0, |r| u32::try_from(r).unwrap_or(u32::MAX));
        let seq = match u32::try_from(e.seq).ok().filter(|&s| s != WIDE) {
            Some(seq) => seq,
            None => {
                self.wide.push((index, e.seq));
                WIDE
            }
        };
        self.requests.push(Compact::new(
            e.sent_us as i64 - widen_us,
            e.done_us.saturating_sub(e.sent_us) + 2 * widen_us.max(0) as u64,
            decided,
            e.replica,
            seq,
            remaining,
        ));
    }

    /// The answers that advertised spare capacity: (index, remaining > 0),
    /// for the header checks.
    pub(super) fn witnesses(&self) -> Vec<(u32, u32)> {
        self.requests
            .iter()
            .enumerate()
            .filter(|(_, c)| c.remaining > 0)
            .map(|(i, c)| (i as u32, c.remaining))
            .collect()
    }

    pub(super) fn admitted(&self) -> usize {
        self.requests
            .iter()
            .filter(|c| c.decided() == Decided::Admitted)
            .count()
    }

    /// The requests as the verifier reads them.
    pub(super) fn obs(&self) -> Vec<Obs> {
        self.requests.iter().map(|c| c.obs()).collect()
    }

    fn seq(&self, index: usize, c: Compact) -> u64 {
        match c.seq {
            WIDE => self
                .wide
                .binary_search_by_key(&(index as u32), |&(i, _)| i)
                .map_or(u64::from(WIDE), |at| self.wide[at].1),
            seq => u64::from(seq),
        }
    }

    /// The requests with their seq and replica, for the witnesses.
    pub(super) fn named(&self, obs: &[Obs]) -> Vec<crate::analyze::witnesses::Named> {
        obs.iter()
            .zip(self.requests.iter())
            .enumerate()
            .map(|(i, (&obs, &c))| crate::analyze::witnesses::Named {
                obs,
                seq: self.seq(i, c),
                replica: c.replica(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seqs_too_wide_for_four_bytes_are_kept_whole() {
        let mut t = KeyTrace::default();
        let seqs = [
            0,
            7,
            u64::from(u32::MAX) - 1,
            u64::from(u32::MAX),
            1 << 56,
            3,
        ];
        for &seq in &seqs {
            let e = Event {
                seq,
                key: "k".into(),
                replica: 2,
                intended_us: 1,
                sent_us: 1,
                done_us: 4,
                status: 200,
                outcome: Outcome::Admitted,
                error: None,
                advertised: None,
                retry_of: None,
                agent: 0,
            };
            t.add(&e, Decided::Admitted, 0);
        }
        let named = t.named(&t.obs());
        let back: Vec<u64> = named.iter().map(|n| n.seq).collect();
        assert_eq!(back, seqs);
        assert!(named.iter().all(|n| n.replica == 2));
        assert_eq!((t.requests.len(), t.admitted()), (6, 6));
    }

    #[test]
    fn compact_requests_keep_times_and_decisions() {
        assert_eq!(std::mem::size_of::<Compact>(), 20);
        for (sent, took, decided) in [
            (0, 0, Decided::Admitted),
            (SENT_MASK as i64 - BIAS, 1_500, Decided::Rejected),
            (7, u64::from(IN_MS) - 1, Decided::Unknown),
            (-BIAS, 3, Decided::Admitted),
        ] {
            let c = Compact::new(sent, took, decided, 7, 3, 9);
            assert_eq!(c.replica(), 7);
            assert_eq!(({ c.seq }, { c.remaining }), (3, 9));
            let o = c.obs();
            let back = (o.sent, (o.done - o.sent) as u64, o.decided);
            assert_eq!(back, (sent, took, decided));
        }
        // Past ~35 minutes in milliseconds, rounded up: never narrower.
        for took in [u64::from(IN_MS), 3_600_000_001, 86_400_000_000] {
            let o = Compact::new(5, took, Decided::Admitted, 0, 0, 0).obs();
            let kept = (o.done - o.sent) as u64;
            assert!(kept >= took && kept < took + 1_000, "{took} -> {kept}");
            assert_eq!(o.decided, Decided::Admitted);
        }
    }

    /// An admitted request of replica 0, sent and answered then (µs).
    fn admitted(seq: u64, sent_us: u64, done_us: u64) -> Event {
        Event {
            seq,
            key: String::new(),
            replica: 0,
            intended_us: sent_us,
            sent_us,
            done_us,
            status: 200,
            outcome: Outcome::Admitted,
            error: None,
            advertised: None,
            retry_of: None,
            agent: 0,
        }
    }

    /// `admits` admits of a principal spread over its forged keys, 10 ms
    /// apart, within one second: judged per key sent and per principal.
    fn judged(admits: usize, forged: usize) -> (Vec<u64>, Vec<u64>) {
        let policy = reference_api::Policy::SlidingLog {
            limit: 10,
            window_us: 1_000_000,
        };
        let mut batch: Vec<Record> = (0..forged)
            .map(|n| Record::Key(format!("customer-0001~{n:04}")))
            .collect();
        batch.push(Record::Key("customer-0002".into()));
        for i in 0..admits {
            let sent = 1_000 + 10_000 * i as u64;
            let e = admitted(i as u64, sent, sent + 1_000);
            batch.push(Record::Event((i % forged) as u32, e));
        }
        let opts = crate::verify::Options::default();
        let definite = |keyed: Keyed| -> Vec<u64> {
            keyed
                .traces
                .iter()
                .map(|t| {
                    crate::verify::judge_key(&policy, &t.obs(), &opts, false)
                        .0
                        .definite_violations
                })
                .collect()
        };
        let mut per_key = Keyed::default();
        per_key.add(&batch, |_| true, &[]).unwrap();
        assert_eq!(per_key.names.len(), forged + 1);
        let mut per_principal = Keyed::per_principal();
        per_principal.add(&batch, |_| true, &[]).unwrap();
        assert_eq!(per_principal.names, ["customer-0001", "customer-0002"]);
        (definite(per_key), definite(per_principal))
    }

    #[test]
    fn forged_keys_are_one_trace_per_principal() {
        // 15 admits in 150 ms over 3 forged keys: 5 each, none past the
        // limit as sent; the principal is 5 past it.
        let (per_key, per_principal) = judged(15, 3);
        assert_eq!(per_key, [0, 0, 0, 0]);
        assert_eq!(per_principal, [5, 0]);
        // The boundary: exactly the limit, over 4 keys, holds.
        let (_, per_principal) = judged(10, 4);
        assert_eq!(per_principal, [0, 0]);
        // One past it does not.
        let (_, per_principal) = judged(11, 4);
        assert_eq!(per_principal, [1, 0]);
        // An event of a key never named is damage, not a new key.
        let mut k = Keyed::per_principal();
        let e = admitted(0, 0, 1);
        assert!(k.add(&[Record::Event(0, e)], |_| true, &[]).is_err());
    }

    #[test]
    fn an_agents_uncertainty_widens_both_ends() {
        let mut t = KeyTrace::default();
        let e = Event {
            seq: 1,
            key: "k".into(),
            replica: 0,
            intended_us: 100,
            sent_us: 100,
            done_us: 400,
            status: 200,
            outcome: Outcome::Admitted,
            error: None,
            advertised: None,
            retry_of: None,
            agent: 1,
        };
        t.add(&e, Decided::Admitted, 250);
        t.add(&e, Decided::Admitted, 0);
        let o = t.obs();
        // Before the trace's 0 on the one side, 250 µs later on the other.
        assert_eq!((o[0].sent, o[0].done), (-150, 650));
        assert_eq!((o[1].sent, o[1].done), (100, 400));
    }
}
