//! A growing list that never moves what it holds: blocks, each half as
//! large as everything before it (at least [`FIRST`]), so growing frees
//! nothing. A vector grown in place copies itself and frees the old copy
//! each time — about twice its final size freed over its growth — and
//! the allocator hands freed pages back to the system only a while later:
//! while a long run's trace is read, a thousand keys' old copies held
//! tens of megabytes above the traces themselves (BENCHMARKS.md, "Peak
//! RSS of the 5-minute run"). The block being filled is kept apart from
//! the full ones, so a push touches no more memory than a vector's.

/// The first block's length.
const FIRST: usize = 16;

pub(crate) struct Blocks<T> {
    full: Vec<Vec<T>>,
    /// The block being filled (its capacity is its length when full).
    last: Vec<T>,
    /// Items in `full`.
    before: usize,
}

impl<T> Default for Blocks<T> {
    fn default() -> Self {
        Blocks {
            full: Vec::new(),
            last: Vec::new(),
            before: 0,
        }
    }
}

impl<T> Blocks<T> {
    pub(crate) fn push(&mut self, value: T) {
        if self.last.len() == self.last.capacity() {
            let size = (self.len() / 2).max(FIRST);
            let full = std::mem::replace(&mut self.last, Vec::with_capacity(size));
            if !full.is_empty() {
                self.before += full.len();
                self.full.push(full);
            }
        }
        self.last.push(value);
    }

    pub(crate) fn len(&self) -> usize {
        self.before + self.last.len()
    }

    /// Room taken, in items: what is held and the rest of the last block.
    #[cfg(test)]
    fn capacity(&self) -> usize {
        self.before + self.last.capacity()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.full.iter().flatten().chain(&self.last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_what_was_pushed_in_order() {
        for n in [0, 1, FIRST - 1, FIRST, FIRST + 1, 100, 10_007] {
            let mut b = Blocks::default();
            for i in 0..n {
                b.push(i);
            }
            assert_eq!(b.len(), n);
            assert!(b.iter().copied().eq(0..n), "{n}");
        }
    }

    #[test]
    fn grows_by_half_without_moving_anything() {
        let mut b = Blocks::default();
        b.push(0u32);
        let first = b.iter().next().unwrap() as *const u32;
        for i in 1..100_000u32 {
            b.push(i);
            // Room for at most half as many more, and the first block's
            // item still where it was put.
            assert!(b.capacity() <= b.len() * 3 / 2 + FIRST, "{}", b.len());
        }
        assert_eq!(b.iter().next().unwrap() as *const u32, first);
        // Blocks grow geometrically: few of them.
        assert!(b.full.len() < 30, "{}", b.full.len());
    }
}
