//! What judging an arm's keys gives, added key by key in name order: the
//! verdict, the `remaining` check, the witnesses kept, the false rejects'
//! times (for the phases), each phase's verdict and the busiest key's
//! timeline. Keys are judged apart, so the keys of a run can be judged in
//! shards — by key hash, on as many machines (`rlbench report --shard
//! i/n`) — and the shards' judgments added here give exactly what judging
//! every key at once gives: sums, maxima, and ties broken by key name.

use crate::analyze::witnesses::Kept;
use crate::verify::{PhaseVerdict, Verdict};
use serde::{Deserialize, Serialize};

/// Which keys a judge takes: those whose name hashes (CRC-32, the same on
/// every machine and version) to `index` modulo `of`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Shard {
    pub index: u32,
    pub of: u32,
}

/// The most shards a run's keys are split into.
pub(crate) const MAX_SHARDS: u32 = 4096;

/// Why `--shard` is refused: the text given, which is not `I/N` within
/// bounds.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ShardError {
    #[error("--shard {text:?}: expected I/N with 0 <= I < N <= {MAX_SHARDS}, e.g. 0/4")]
    NotAShard { text: String },
}

impl crate::error::Kind for ShardError {
    fn exit(&self) -> crate::error::Exit {
        crate::error::Exit::BadInput
    }
}

impl Shard {
    /// `"i/n"`, 0 ≤ i < n ≤ [`MAX_SHARDS`].
    pub(crate) fn parse(text: &str) -> Result<Shard, ShardError> {
        let bad = || ShardError::NotAShard {
            text: text.to_string(),
        };
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, of): (u32, u32) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if of == 0 || of > MAX_SHARDS || index >= of {
            return Err(bad());
        }
        Ok(Shard { index, of })
    }

    /// Whether `key` is this shard's.
    pub(crate) fn holds(&self, key: &str) -> bool {
        // A principal's forged keys fall together, to be judged as one.
        let key = crate::load::pick::principal_of(key);
        crc32fast::hash(key.as_bytes()) % self.of == self.index
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.of)
    }
}

/// The key with the most admits (ties: the later in the trace), and its
/// admits over the limit through the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Busiest {
    pub admitted: u64,
    /// Its number in the trace (order of first appearance).
    pub number: u32,
    /// Its admits in a trailing span against the band.
    #[serde(default)]
    pub window: Option<crate::store::page_json::WindowSeries>,
}

/// An arm's keys' judgments, added up.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Judgments {
    /// Keys judged.
    pub keys: u64,
    /// `None` when there was no policy to judge against.
    pub verdict: Option<Verdict>,
    pub remaining_checked: u64,
    pub remaining_contradicted: u64,
    /// The first contradiction in key order: its key and the sentence.
    pub remaining_example: Option<(String, String)>,
    /// The witnesses kept, earliest and largest.
    pub earliest: Vec<Kept>,
    pub largest: Vec<Kept>,
    /// Each false reject's (sent, done), when the arm has phases.
    pub wrong: Vec<(i64, i64)>,
    /// Per phase: definite violations and false rejects.
    pub phases: Vec<(u64, u64)>,
    pub busiest: Option<Busiest>,
}

impl Judgments {
    /// Adds another set of keys' judgments (keys of its own): the same
    /// as judging those keys here.
    pub(crate) fn add(&mut self, other: &Judgments) {
        self.keys += other.keys;
        self.verdict = match (self.verdict, other.verdict) {
            (Some(a), Some(b)) => {
                let mut v = a;
                v.merge(&b);
                Some(v)
            }
            (a, b) => a.or(b),
        };
        self.remaining_checked += other.remaining_checked;
        self.remaining_contradicted += other.remaining_contradicted;
        self.remaining_example = match (self.remaining_example.take(), &other.remaining_example) {
            (Some(a), Some(b)) if b.0 < a.0 => Some(b.clone()),
            (Some(a), _) => Some(a),
            (None, b) => b.clone(),
        };
        self.earliest.extend(other.earliest.iter().cloned());
        self.largest.extend(other.largest.iter().cloned());
        self.wrong.extend(&other.wrong);
        if self.phases.len() < other.phases.len() {
            self.phases.resize(other.phases.len(), (0, 0));
        }
        for (sum, p) in self.phases.iter_mut().zip(&other.phases) {
            sum.0 += p.0;
            sum.1 += p.1;
        }
        self.busiest = match (self.busiest.take(), &other.busiest) {
            (Some(a), Some(b)) if (b.admitted, b.number) > (a.admitted, a.number) => {
                Some(b.clone())
            }
            (Some(a), _) => Some(a),
            (None, b) => b.clone(),
        };
    }

    /// Each phase's verdict.
    pub(crate) fn phase_verdicts(&self) -> Vec<PhaseVerdict> {
        self.phases
            .iter()
            .map(|&(definite_violations, false_rejects)| PhaseVerdict {
                definite_violations,
                false_rejects,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_is_read_and_keys_fall_in_exactly_one() {
        assert_eq!(Shard::parse("1/4"), Ok(Shard { index: 1, of: 4 }));
        assert_eq!(Shard::parse("0/1").unwrap().to_string(), "0/1");
        for bad in ["4/4", "1", "a/2", "0/0", "-1/3", "0/5000", ""] {
            let e = Shard::parse(bad).unwrap_err().to_string();
            assert!(e.contains("expected I/N"), "{bad}: {e}");
        }
        for key in ["customer-0000", "customer-0001", "", "ü"] {
            let of = 7;
            let holding: Vec<u32> = (0..of)
                .filter(|&index| Shard { index, of }.holds(key))
                .collect();
            assert_eq!(holding.len(), 1, "{key}");
        }
        // The hash is CRC-32 of the name, fixed across machines: Python's
        // zlib.crc32(b"customer-0000") is 3675837354, 2 modulo 4.
        assert_eq!(crc32fast::hash(b"customer-0000"), 3_675_837_354);
        assert!(Shard { index: 2, of: 4 }.holds("customer-0000"));
        // A principal's forged keys fall in its shard.
        assert!((0..50).all(|n| Shard { index: 2, of: 4 }.holds(&format!("customer-0000~{n:04}"))));
    }

    fn verdict(definite: u64, peak: f64) -> Verdict {
        Verdict {
            admitted: 10,
            definite_violations: definite,
            peak_window_ratio: peak,
            ..Verdict::default()
        }
    }

    #[test]
    fn judgments_add_up_as_one_judge_would_have() {
        let a = Judgments {
            keys: 2,
            verdict: Some(verdict(1, 1.5)),
            remaining_checked: 3,
            remaining_contradicted: 1,
            remaining_example: Some(("k2".into(), "k2: late".into())),
            wrong: vec![(1, 2)],
            phases: vec![(1, 0), (0, 2)],
            busiest: Some(Busiest {
                admitted: 5,
                number: 3,
                window: None,
            }),
            ..Judgments::default()
        };
        let b = Judgments {
            keys: 1,
            verdict: Some(verdict(2, 1.2)),
            remaining_checked: 1,
            remaining_contradicted: 1,
            remaining_example: Some(("k1".into(), "k1: early".into())),
            wrong: vec![(3, 4)],
            phases: vec![(0, 1), (1, 1)],
            // As busy, later in the trace: one judge picks it too.
            busiest: Some(Busiest {
                admitted: 5,
                number: 7,
                window: None,
            }),
            ..Judgments::default()
        };
        let mut sum = Judgments::default();
        sum.add(&a);
        sum.add(&b);
        let v = sum.verdict.unwrap();
        assert_eq!((v.admitted, v.definite_violations), (20, 3));
        assert_eq!(v.peak_window_ratio, 1.5);
        assert_eq!(sum.keys, 3);
        assert_eq!((sum.remaining_checked, sum.remaining_contradicted), (4, 2));
        // The first in key order, whichever shard came first.
        assert_eq!(sum.remaining_example.as_ref().unwrap().0, "k1");
        assert_eq!(sum.wrong, vec![(1, 2), (3, 4)]);
        assert_eq!(sum.phases, vec![(1, 1), (1, 3)]);
        assert_eq!(sum.busiest.as_ref().unwrap().number, 7);
        // The other order gives the same.
        let mut other = Judgments::default();
        other.add(&b);
        other.add(&a);
        assert_eq!(other.verdict, sum.verdict);
        assert_eq!(other.remaining_example, sum.remaining_example);
        assert_eq!(other.busiest, sum.busiest);
        assert_eq!(other.phases, sum.phases);
        // Nothing judged adds nothing.
        let mut none = Judgments::default();
        none.add(&Judgments::default());
        assert_eq!(none, Judgments::default());
    }
}
