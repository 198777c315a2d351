//! A segment tree with lazy range add and range max, over i128 values.

pub(crate) struct MaxTree {
    n: usize,
    max: Vec<i128>,
    lazy: Vec<i128>,
}

/// A search for the first value above `v` in `[s, e)`.
struct Above {
    s: usize,
    e: usize,
    v: i128,
}

impl MaxTree {
    /// `n` leaves, all starting at `init`.
    pub(crate) fn new(n: usize, init: i128) -> Self {
        let size = 4 * n.max(1);
        MaxTree {
            n: n.max(1),
            max: vec![init; size],
            lazy: vec![0; size],
        }
    }

    /// Adds `delta` to every leaf in `start..end`.
    pub(crate) fn add(&mut self, start: usize, end: usize, delta: i128) {
        if start < end {
            self.add_rec(1, 0, self.n, start, end.min(self.n), delta);
        }
    }

    /// The largest leaf in `start..end`, or `None` for an empty range.
    #[cfg(test)]
    pub(crate) fn max(&self, start: usize, end: usize) -> Option<i128> {
        let end = end.min(self.n);
        (start < end).then(|| self.max_rec(1, 0, self.n, start, end))
    }

    /// The first leaf in `start..end` whose value exceeds `v`.
    pub(crate) fn first_above(&self, start: usize, end: usize, v: i128) -> Option<usize> {
        let end = end.min(self.n);
        (start < end)
            .then(|| {
                self.first_rec(
                    1,
                    (0, self.n),
                    &Above {
                        s: start,
                        e: end,
                        v,
                    },
                    0,
                )
            })
            .flatten()
    }

    /// The first index of `[q.s, q.e)` within node `node` (covering
    /// `[lo, hi)`) whose value, with `above` added from its ancestors,
    /// exceeds `q.v`.
    fn first_rec(
        &self,
        node: usize,
        (lo, hi): (usize, usize),
        q: &Above,
        above: i128,
    ) -> Option<usize> {
        if q.e <= lo || hi <= q.s || self.max[node] + above <= q.v {
            return None;
        }
        if hi - lo == 1 {
            return Some(lo);
        }
        let mid = (lo + hi) / 2;
        let above = above + self.lazy[node];
        self.first_rec(2 * node, (lo, mid), q, above)
            .or_else(|| self.first_rec(2 * node + 1, (mid, hi), q, above))
    }

    fn add_rec(&mut self, node: usize, lo: usize, hi: usize, s: usize, e: usize, d: i128) {
        if e <= lo || hi <= s {
            return;
        }
        if s <= lo && hi <= e {
            self.max[node] += d;
            self.lazy[node] += d;
            return;
        }
        let mid = (lo + hi) / 2;
        self.add_rec(2 * node, lo, mid, s, e, d);
        self.add_rec(2 * node + 1, mid, hi, s, e, d);
        self.max[node] = self.max[2 * node].max(self.max[2 * node + 1]) + self.lazy[node];
    }

    #[cfg(test)]
    fn max_rec(&self, node: usize, lo: usize, hi: usize, s: usize, e: usize) -> i128 {
        if s <= lo && hi <= e {
            return self.max[node];
        }
        let mid = (lo + hi) / 2;
        let mut best = i128::MIN;
        if s < mid {
            best = best.max(self.max_rec(2 * node, lo, mid, s, e));
        }
        if e > mid {
            best = best.max(self.max_rec(2 * node + 1, mid, hi, s, e));
        }
        best + self.lazy[node]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_adds_and_maxima_match_a_plain_array() {
        let n = 13;
        let mut t = MaxTree::new(n, 0);
        let mut plain = vec![0i128; n];
        let ops = [
            (0, 5, 3),
            (2, 13, -1),
            (7, 8, 10),
            (4, 9, 2),
            (12, 13, 20),
            (0, 13, -5),
        ];
        for (s, e, d) in ops {
            t.add(s, e, d);
            for v in &mut plain[s..e] {
                *v += d;
            }
            for a in 0..n {
                for b in a + 1..=n {
                    assert_eq!(t.max(a, b), plain[a..b].iter().copied().max(), "{a}..{b}");
                }
            }
        }
        assert_eq!(t.max(3, 3), None);
        for a in 0..n {
            for b in a + 1..=n {
                for v in [-10, 0, 2, 9, 30] {
                    let want = (a..b).find(|&i| plain[i] > v);
                    assert_eq!(t.first_above(a, b, v), want, "{a}..{b} > {v}");
                }
            }
        }
    }
}
