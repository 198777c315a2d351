//! A Fenwick (binary indexed) tree of counts over positions: point add,
//! suffix sum, both O(log n).

pub(crate) struct Fenwick {
    tree: Vec<i64>,
    /// The sum over every position.
    total: i64,
}

impl Fenwick {
    pub(crate) fn new(n: usize) -> Self {
        Fenwick {
            tree: vec![0; n + 1],
            total: 0,
        }
    }

    pub(crate) fn add(&mut self, pos: usize, delta: i64) {
        self.total += delta;
        let mut i = pos + 1;
        while i < self.tree.len() {
            self.tree[i] += delta;
            i += i & i.wrapping_neg();
        }
    }

    /// Sum over positions `0..end`.
    pub(crate) fn prefix(&self, end: usize) -> i64 {
        let mut i = end.min(self.tree.len() - 1);
        let mut sum = 0;
        while i > 0 {
            sum += self.tree[i];
            i -= i & i.wrapping_neg();
        }
        sum
    }

    /// Sum over positions `start..`.
    pub(crate) fn suffix(&self, start: usize) -> i64 {
        self.total - self.prefix(start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_match_a_plain_array() {
        let mut f = Fenwick::new(10);
        let mut plain = [0i64; 10];
        for (i, d) in [(3, 2), (0, 1), (9, 5), (3, -1), (7, 4)] {
            f.add(i, d);
            plain[i] += d;
        }
        for k in 0..=10 {
            assert_eq!(f.prefix(k), plain[..k].iter().sum::<i64>(), "prefix {k}");
            assert_eq!(f.suffix(k), plain[k..].iter().sum::<i64>(), "suffix {k}");
        }
        assert_eq!(f.suffix(0), plain.iter().sum::<i64>());
    }
}
