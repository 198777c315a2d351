//! False rejects: limited answers that a correct limiter would certainly not
//! have given, whatever the timing. Every admit and every request with an
//! unknown result (error, timeout) counts as an admit that may have been
//! decided anywhere inside its interval — an unknown one anywhere from its
//! send on, since a server may still decide after the client gave up — and
//! at the place least favourable to the verdict.

use super::gallop::partition_point_near;
use super::removal::Item;
use super::trace::Options;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RejectCheck {
    /// The limiter only counts admits decided within `span` before the
    /// decision; fewer than `limit` of them means it must admit.
    Lookback { limit: u64, span: i64 },
    /// A bucket of `burst` tokens that regains at least `count` per `per` µs
    /// of any stretch, less `loss` tokens (a chunked refill that may come
    /// late counts whole periods only); it admits while it holds a token.
    Bucket {
        burst: u64,
        count: u64,
        per: i64,
        loss: u64,
    },
}

/// How far back a window limiter remembers an admit (µs).
pub(crate) fn memory(check: RejectCheck) -> Option<i64> {
    match check {
        RejectCheck::Lookback { span, .. } => Some(span),
        RejectCheck::Bucket { .. } => None,
    }
}

/// What is known about the limiter's state when the trace starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// Nothing seen yet: windows empty, buckets full.
    Fresh,
    /// Anything, until `settled` (µs after the start: by then every
    /// request from before the trace was decided): a bucket may be empty
    /// then (never below), a window full.
    Unknown { settled: i64 },
}

impl Start {
    /// From when the bucket's state is counted: the start, or when the
    /// requests from before the trace had all been decided.
    fn from(self) -> i64 {
        match self {
            Start::Fresh => 0,
            Start::Unknown { settled } => settled.max(0),
        }
    }
}

/// Why a reject is false, as the witness sentence shows it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Proof {
    /// Possible admits that may have counted against it (indices into the
    /// admits given), the earliest sent first.
    pub counted: Vec<usize>,
    /// From where the bound counts (µs): the window's start, or the moment
    /// from which the bucket's refill is counted.
    pub from: i64,
    /// Capacity the limiter surely had left: requests under a window's
    /// limit, or whole tokens in a bucket (at least 1).
    pub spare: u64,
}

/// `admits`: possible admits as `x = sent`, `y` = the latest their decision
/// may have come (`i64::MAX`: any time); `rejects`: `x = sent`, `y = done`.
/// `slack`: how far the limiter's clock may distort the distance between
/// two decisions, in its favour.
pub(crate) fn count(
    check: RejectCheck,
    admits: &[Item],
    rejects: &[Item],
    slack: i64,
    start: Start,
) -> u64 {
    flags(check, admits, rejects, slack, start)
        .iter()
        .filter(|f| f.is_some())
        .count() as u64
}

/// For each of `rejects`, in order: the spare capacity that makes it a
/// false reject, or `None` when a correct limiter may have given it.
pub(crate) fn flags(
    check: RejectCheck,
    admits: &[Item],
    rejects: &[Item],
    slack: i64,
    start: Start,
) -> Vec<Option<u64>> {
    match check {
        RejectCheck::Lookback { limit, span } => {
            let (sents, lasts) = sorted_ends(admits);
            // Rejects come nearly in order: each search starts where the
            // one before ended.
            let mut near = (0, 0);
            rejects
                .iter()
                .map(|r| {
                    let counted = window_count(span, &sents, &lasts, r, slack, &mut near);
                    (counted < limit).then(|| limit - counted)
                })
                .collect()
        }
        RejectCheck::Bucket {
            burst,
            count,
            per,
            loss,
        } => Bucket::new(burst, count, per, loss, slack, start).flags(admits, rejects),
    }
}

/// The proof behind one false reject (`reject` as given to [`flags`]).
pub(crate) fn proof(
    check: RejectCheck,
    admits: &[Item],
    reject: &Item,
    slack: i64,
    start: Start,
) -> Proof {
    let until = reject.y.saturating_add(slack);
    // (from, spare, how much later than its `y` an admit may still count)
    let (from, spare, late) = match check {
        RejectCheck::Lookback { limit, span } => {
            let (sents, lasts) = sorted_ends(admits);
            let counted = window_count(span, &sents, &lasts, reject, slack, &mut (0, 0));
            let from = window_start(span, reject, slack);
            (from, limit.saturating_sub(counted), 0)
        }
        RejectCheck::Bucket {
            burst,
            count,
            per,
            loss,
        } => {
            let (from, spare) =
                Bucket::new(burst, count, per, loss, slack, start).least(admits, reject);
            (from, spare, slack)
        }
    };
    let mut counted: Vec<usize> = (0..admits.len())
        .filter(|&a| admits[a].x <= until && admits[a].y.saturating_add(late) >= from)
        .collect();
    counted.sort_by_key(|&a| (admits[a].x, a));
    Proof {
        counted,
        from,
        spare,
    }
}

fn sorted_ends(admits: &[Item]) -> (Vec<i64>, Vec<i64>) {
    let mut sents: Vec<i64> = admits.iter().map(|a| a.x).collect();
    sents.sort();
    let mut lasts: Vec<i64> = admits.iter().map(|a| a.y).collect();
    lasts.sort();
    (sents, lasts)
}

/// Admits decided before this cannot be in the window of any placement of
/// the reject's decision (the limiter's clock may lag by the slack).
fn window_start(span: i64, r: &Item, slack: i64) -> i64 {
    r.x.saturating_sub(span).saturating_sub(slack)
}

/// The most possible admits the reject's window may hold: any sent before
/// the reject was done and not surely decided before the window. `near`:
/// where the searches for the reject before ended (each starts there).
fn window_count(
    span: i64,
    sents: &[i64],
    lasts: &[i64],
    r: &Item,
    slack: i64,
    near: &mut (usize, usize),
) -> u64 {
    let (gone, upto) = near;
    *gone = partition_point_near(lasts, *gone, |&d| d < window_start(span, r, slack));
    let until = r.y.saturating_add(slack);
    *upto = partition_point_near(sents, *upto, |&s| s <= until);
    upto.saturating_sub(*gone) as u64
}

/// A correct bucket's tokens at a decision at `τ` are, with `s` the last
/// moment it was full (or the trace start, holding `t₀`):
/// `full + refill(s, τ) − admits decided in (s, τ]`. So they are at least
/// `min over s of [burst + rate·(τ − s) − M(s)]`, and `t₀ + rate·τ − M(start)`,
/// where `M(s)` counts every possible admit that may have been decided at or
/// after `s` and sent by the time the reject was done. `τ` is taken at its
/// earliest (the reject's send, less the slack). The bound rests on each
/// admit's own interval only: no other request's timeout can blind it.
///
/// `max over s of [rate·s + M(s)]` per reject comes from a segment tree
/// over the candidate `s` (each admit's latest decision, each reject's `τ`,
/// the start), swept in order of `τ`. Tokens are scaled by `per`.
struct Bucket {
    full: i128,
    count: i128,
    per: i128,
    loss: i128,
    slack: i64,
    start: Start,
}

impl Bucket {
    fn new(burst: u64, count: u64, per: i64, loss: u64, slack: i64, start: Start) -> Self {
        let per = per.max(1) as i128;
        Bucket {
            full: burst as i128 * per,
            count: count as i128,
            per,
            loss: loss as i128 * per,
            slack,
            start,
        }
    }

    fn origin(&self, admits: &[Item], rejects: &[Item]) -> i64 {
        let from = self.start.from();
        admits
            .iter()
            .chain(rejects)
            .map(|i| if from > 0 { i.x.max(from) } else { i.x })
            .min()
            .unwrap_or(from)
            .min(from)
    }

    /// With the state unknown until `from` (an earlier run's requests
    /// still being decided), the bucket is taken as empty then: admits
    /// surely decided before it no longer matter, and the others count
    /// from it on.
    fn after_start(&self, admits: &[Item]) -> Vec<Item> {
        let from = self.start.from();
        admits
            .iter()
            .filter(|a| from == 0 || a.y.saturating_add(self.slack) > from)
            .map(|a| Item {
                x: if from > 0 { a.x.max(from) } else { a.x },
                y: a.y,
            })
            .collect()
    }

    fn tau(&self, r: &Item, origin: i64) -> i64 {
        r.x.saturating_sub(self.slack).max(origin)
    }

    /// The start's own term: `full` when fresh, 0 when it may have been empty.
    fn at_start(&self) -> i128 {
        match self.start {
            Start::Fresh => 0,
            Start::Unknown { .. } => self.full,
        }
    }

    /// Scaled tokens left for `best = max over s of [rate·(s − origin) + per·M(s)]`,
    /// less what a clock read out of order may cost: a decision that read
    /// its clock before another one but took the state after it sees that
    /// one's admit as if from the future (a GCRA's TAT, a bucket's `last`
    /// ahead of `now`) — at most the reject's own interval plus the slack
    /// on both sides of refill, since the other admit came after the
    /// reject's clock read and before its answer.
    fn tokens(&self, r: &Item, t: i64, origin: i64, best: i128, later: i128) -> i128 {
        self.left(
            r,
            self.full + self.count * (t - origin) as i128 - best,
            later,
        )
    }

    /// `bucket` tokens at `τ`, less `open` admits that may still come before
    /// the reject, the chunk lost to lateness and the out-of-order clock read.
    fn left(&self, r: &Item, bucket: i128, open: i128) -> i128 {
        let ahead = (r.y - r.x).max(0).saturating_add(2 * self.slack) as i128;
        bucket - open * self.per - self.loss - self.count * ahead
    }

    /// For a given `τ` the minimum over `s` is what a capped bucket that
    /// never refuses holds at `τ` when each admit takes its token as late as
    /// it may have been decided (never later than `τ`: those still open at
    /// `τ` are taken at `τ`). One such simulation, swept over the rejects in
    /// order of `τ`, gives every reject's bound.
    fn flags(&self, admits: &[Item], rejects: &[Item]) -> Vec<Option<u64>> {
        let mut flags = vec![None; rejects.len()];
        if rejects.is_empty() {
            return flags;
        }
        let admits = &self.after_start(admits);
        let origin = self.origin(admits, rejects);
        let mut sents: Vec<i64> = admits.iter().map(|a| a.x).collect();
        sents.sort();
        let mut settles: Vec<i64> = admits
            .iter()
            .map(|a| a.y.saturating_add(self.slack))
            .filter(|&y| y != i64::MAX)
            .collect();
        settles.sort();
        let mut order: Vec<usize> = (0..rejects.len()).collect();
        order.sort_by_key(|&i| self.tau(&rejects[i], origin));
        let mut tokens = self.full - self.at_start();
        let (mut last, mut settled, mut upto) = (origin, 0usize, 0usize);
        for i in order {
            let r = &rejects[i];
            let t = self.tau(r, origin);
            // Admits surely decided by τ take their token at their latest.
            while settled < settles.len() && settles[settled] <= t {
                let at = settles[settled];
                tokens = (tokens + self.count * (at - last) as i128).min(self.full) - self.per;
                last = at;
                settled += 1;
            }
            let refilled = (tokens + self.count * (t - last) as i128).min(self.full);
            (tokens, last) = (refilled, t);
            // Sent by τ and still open, or sent before the reject was done.
            let until = r.y.saturating_add(self.slack);
            // (Rejects in order of τ: `until` nearly in order too.)
            upto = partition_point_near(&sents, upto, |&x| x <= until);
            let open = upto as i128 - settled as i128;
            let left = self.left(r, tokens, open);
            if left >= self.per {
                flags[i] = Some((left / self.per) as u64);
            }
        }
        flags
    }

    /// The same bound for one reject, directly: (the `s` that gives it, tokens).
    fn least(&self, admits: &[Item], r: &Item) -> (i64, u64) {
        let admits = &self.after_start(admits);
        let origin = self.origin(admits, std::slice::from_ref(r));
        let t = self.tau(r, origin);
        let until = r.y.saturating_add(self.slack);
        let sent: Vec<&Item> = admits.iter().filter(|a| a.x <= until).collect();
        let later = sent.iter().filter(|a| a.x > t).count() as i128;
        let mut lasts: Vec<i64> = sent
            .iter()
            .filter(|a| a.x <= t)
            .map(|a| a.y.saturating_add(self.slack))
            .collect();
        lasts.sort();
        let mut cands: Vec<i64> = std::iter::once(origin)
            .chain(lasts.iter().copied().filter(|&y| y <= t))
            .chain(std::iter::once(t))
            .collect();
        cands.sort();
        cands.dedup();
        let (mut from, mut best) = (origin, i128::MIN);
        for s in cands {
            let m = (lasts.len() - lasts.partition_point(|&y| y < s)) as i128;
            let start = if s == origin { self.at_start() } else { 0 };
            let v = self.count * (s - origin) as i128 + m * self.per + start;
            if v > best {
                (from, best) = (s, v);
            }
        }
        let tokens = self.tokens(r, t, origin, best, later);
        (from, (tokens.max(0) / self.per) as u64)
    }
}

/// Where a key's history starts: empty, or unknown (the target may
/// remember requests from before the trace).
pub(super) fn start(opts: &Options) -> Start {
    if opts.unknown_history {
        Start::Unknown {
            settled: opts.history_settles_us,
        }
    } else {
        Start::Fresh
    }
}

#[cfg(test)]
mod tests;
