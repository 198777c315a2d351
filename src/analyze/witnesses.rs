//! An arm's witnesses: the verifier's proofs, key by key, turned into the
//! bounded list summary.json carries (the earliest and the largest of each
//! kind, requests referenced by `seq`) and `rlbench explain` prints.

use crate::store::summary::{ArmWitness, WitnessKind, WitnessRequest};
use crate::verify::{Decided, Obs, Witness};
use serde::{Deserialize, Serialize};

/// Requests listed per witness at most (the sentence gives the full count).
const MAX_REQUESTS: usize = 64;

/// One request of a key as the verifier saw it, with what names it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Named {
    pub obs: Obs,
    pub seq: u64,
    pub replica: u32,
}

fn request(n: &Named) -> WitnessRequest {
    WitnessRequest {
        seq: n.seq,
        replica: n.replica,
        sent_s: n.obs.sent as f64 / 1e6,
        done_s: n.obs.done as f64 / 1e6,
        outcome: match n.obs.decided {
            Decided::Admitted => "admitted",
            Decided::Rejected => "rejected",
            Decided::Unknown => "unknown",
        }
        .to_string(),
    }
}

/// A witness kept, with where it came in: its key and its place among
/// that key's (keys come in name order), which breaks ties between equal
/// witnesses the same way whether keys were judged together or in shards.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Kept {
    pub key: String,
    pub index: u32,
    pub witness: ArmWitness,
}

/// Keeps, per kind, the `limit` earliest and the `limit` largest seen.
#[derive(Debug)]
pub(crate) struct Picker {
    limit: usize,
    /// Only this key's witnesses (`rlbench explain --key`).
    key: Option<String>,
    earliest: Vec<Kept>,
    largest: Vec<Kept>,
}

impl Picker {
    pub(crate) fn new(limit: usize) -> Self {
        Picker {
            limit,
            key: None,
            earliest: Vec::new(),
            largest: Vec::new(),
        }
    }

    /// An empty picker that keeps what this one does (for keys judged
    /// elsewhere, whose witnesses it will absorb).
    pub(crate) fn like(&self) -> Self {
        Picker {
            limit: self.limit,
            key: self.key.clone(),
            earliest: Vec::new(),
            largest: Vec::new(),
        }
    }

    /// Keeps only `key`'s witnesses.
    pub(crate) fn for_key(mut self, key: Option<String>) -> Self {
        self.key = key;
        self
    }

    /// Whether the verifier should prove `key`'s verdicts.
    pub(crate) fn wanted(&self, key: &str) -> bool {
        self.limit > 0 && self.key.as_deref().map_or(true, |k| k == key)
    }

    /// Adds a key's witnesses; `requests` are the key's, as judged.
    pub(crate) fn add(&mut self, key: &str, requests: &[Named], found: Vec<Witness>) {
        if !self.wanted(key) {
            return;
        }
        for (index, w) in found.into_iter().enumerate() {
            let mut listed: Vec<&Named> = w.requests.iter().map(|&i| &requests[i]).collect();
            listed.sort_by_key(|n| (n.obs.sent, n.seq));
            let more = listed.len().saturating_sub(MAX_REQUESTS) as u64;
            listed.truncate(MAX_REQUESTS);
            let aw = ArmWitness {
                kind: w.kind.into(),
                key: key.to_string(),
                rule: format!("{key}: {}", w.rule),
                from_s: w.from_us as f64 / 1e6,
                to_s: w.to_us as f64 / 1e6,
                excess: w.excess,
                reject: w.reject.map(|i| request(&requests[i])),
                requests: listed.into_iter().map(request).collect(),
                more_requests: more,
            };
            let kept = Kept {
                key: key.to_string(),
                index: index as u32,
                witness: aw,
            };
            self.earliest.push(kept.clone());
            self.largest.push(kept);
        }
        self.trim();
    }

    /// What it keeps, earliest and largest: for a shard's judgments.
    pub(crate) fn kept(&self) -> (Vec<Kept>, Vec<Kept>) {
        (self.earliest.clone(), self.largest.clone())
    }

    /// Takes in the witnesses other pickers kept (of other keys, with
    /// the same limit), as if it had seen their keys itself: they are put
    /// in key order before the best are kept.
    pub(crate) fn absorb(&mut self, earliest: Vec<Kept>, largest: Vec<Kept>) {
        self.earliest.extend(earliest);
        self.largest.extend(largest);
        for list in [&mut self.earliest, &mut self.largest] {
            list.sort_by(|a, b| (&a.key, a.index).cmp(&(&b.key, b.index)));
        }
        self.trim();
    }

    fn trim(&mut self) {
        let limit = self.limit;
        for kind in [WitnessKind::Violation, WitnessKind::FalseReject] {
            keep_best(&mut self.earliest, kind, limit, |a, b| {
                (a.to_s, a.from_s)
                    .partial_cmp(&(b.to_s, b.from_s))
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            keep_best(&mut self.largest, kind, limit, |a, b| {
                b.excess.cmp(&a.excess)
            });
        }
    }

    /// Per kind: the earliest half, then the largest, up to the limit;
    /// violations first, each kind in time order.
    pub(crate) fn finish(mut self) -> Vec<ArmWitness> {
        self.trim();
        let mut out = Vec::new();
        for kind in [WitnessKind::Violation, WitnessKind::FalseReject] {
            let early: Vec<&ArmWitness> = self
                .earliest
                .iter()
                .map(|k| &k.witness)
                .filter(|w| w.kind == kind)
                .collect();
            let large: Vec<&ArmWitness> = self
                .largest
                .iter()
                .map(|k| &k.witness)
                .filter(|w| w.kind == kind)
                .collect();
            let mut picked: Vec<ArmWitness> = Vec::new();
            let half = self.limit.div_ceil(2);
            for w in early.iter().take(half).chain(&large).chain(&early) {
                if picked.len() == self.limit {
                    break;
                }
                if !picked.contains(w) {
                    picked.push((*w).clone());
                }
            }
            picked.sort_by(|a, b| {
                (a.from_s, a.to_s)
                    .partial_cmp(&(b.from_s, b.to_s))
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            out.extend(picked);
        }
        out
    }
}

/// Keeps the `limit` best of `kind` in `list` by `order` (best first), and
/// every witness of the other kind.
fn keep_best(
    list: &mut Vec<Kept>,
    kind: WitnessKind,
    limit: usize,
    order: impl Fn(&ArmWitness, &ArmWitness) -> std::cmp::Ordering,
) {
    let (mut of, rest): (Vec<Kept>, Vec<Kept>) =
        list.drain(..).partition(|k| k.witness.kind == kind);
    of.sort_by(|a, b| order(&a.witness, &b.witness));
    of.truncate(limit);
    list.extend(rest);
    list.extend(of);
}
