//! The integer join keys a hash join's build side holds, offered to the scan on the other
//! side as a condition ([`crate::Pred::InKeys`]): a runtime filter. A row whose key is not
//! in the set can match no build row, so the scan may leave it out before it is ever made
//! into a row, joined below, or probed.
//!
//! The filter is never exact (the join still compares its keys) and may stop filtering at
//! any time: once it has been asked about enough values and kept most of them, it says so
//! ([`KeySet::worth_it`]) and engines stop consulting it.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Values a filter is asked about before its pass rate decides whether it goes on.
const TRIAL: u64 = 1 << 16;

enum Repr {
    /// Bit `k - min` set: `k` is a key (keys spread over at most 64 values per key).
    Bits(Vec<u64>),
    /// Open addressing by multiplicative hash; `EMPTY` marks a free slot (`EMPTY` itself,
    /// when it is a key, is `has_empty`).
    Hash {
        slots: Vec<i64>,
        shift: u32,
        has_empty: bool,
    },
}

const EMPTY: i64 = i64::MIN;

pub struct KeySet {
    min: i64,
    max: i64,
    len: usize,
    repr: Repr,
    asked: AtomicU64,
    passed: AtomicU64,
}

impl KeySet {
    /// The set of `keys` (repeats allowed; empty: no value is in it).
    pub fn new(keys: Vec<i64>) -> KeySet {
        let (min, max) = match (keys.iter().min(), keys.iter().max()) {
            (Some(&a), Some(&b)) => (a, b),
            _ => (0, -1),
        };
        let span = (max as i128 - min as i128 + 1).max(0) as u128;
        let mut len = 0;
        let repr = if span <= (64 * keys.len() as u128).max(4096) {
            let mut bits = vec![0u64; (span as usize).div_ceil(64)];
            for &k in &keys {
                let i = (k as i128 - min as i128) as usize;
                bits[i / 64] |= 1 << (i % 64);
            }
            len = bits.iter().map(|w| w.count_ones() as usize).sum();
            Repr::Bits(bits)
        } else {
            let cap = (keys.len() * 2).next_power_of_two().max(16);
            let shift = 64 - cap.trailing_zeros();
            let mut slots = vec![EMPTY; cap];
            let mut has_empty = false;
            for &k in &keys {
                if k == EMPTY {
                    len += !has_empty as usize;
                    has_empty = true;
                    continue;
                }
                let mut i = slot(k, shift);
                while slots[i] != EMPTY && slots[i] != k {
                    i = (i + 1) & (cap - 1);
                }
                len += (slots[i] == EMPTY) as usize;
                slots[i] = k;
            }
            Repr::Hash {
                slots,
                shift,
                has_empty,
            }
        };
        KeySet {
            min,
            max,
            len,
            repr,
            asked: AtomicU64::new(0),
            passed: AtomicU64::new(0),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The smallest and largest key (None when empty): a chunk whose values all lie
    /// outside them has no row to keep.
    pub fn bounds(&self) -> Option<(i64, i64)> {
        (self.len > 0).then_some((self.min, self.max))
    }

    #[inline]
    pub fn contains(&self, k: i64) -> bool {
        if k < self.min || k > self.max {
            return false;
        }
        match &self.repr {
            Repr::Bits(bits) => {
                let i = (k as i128 - self.min as i128) as usize;
                bits[i / 64] & (1 << (i % 64)) != 0
            }
            Repr::Hash {
                slots,
                shift,
                has_empty,
            } => {
                if k == EMPTY {
                    return *has_empty;
                }
                let mask = slots.len() - 1;
                let mut i = slot(k, *shift);
                loop {
                    match slots[i] {
                        s if s == k => return true,
                        EMPTY => return false,
                        _ => i = (i + 1) & mask,
                    }
                }
            }
        }
    }

    /// Counts `asked` values checked by an engine, `passed` of which were keys.
    pub fn record(&self, asked: u64, passed: u64) {
        self.asked.fetch_add(asked, Relaxed);
        self.passed.fetch_add(passed, Relaxed);
    }

    /// Whether checking values still pays: false once, after a trial, more than nine in
    /// ten of the values asked about were keys (the filter then leaves out too little
    /// to pay for its lookups).
    pub fn worth_it(&self) -> bool {
        let asked = self.asked.load(Relaxed);
        asked < TRIAL || self.passed.load(Relaxed) * 10 < asked * 9
    }

    /// Values checked and kept so far.
    pub fn counts(&self) -> (u64, u64) {
        (self.asked.load(Relaxed), self.passed.load(Relaxed))
    }
}

#[inline]
fn slot(k: i64, shift: u32) -> usize {
    ((k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize
}

impl fmt::Debug for KeySet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "KeySet({} keys in {}..={})",
            self.len, self.min, self.max
        )
    }
}

/// Two sets are the same condition only when they are the same set.
impl PartialEq for KeySet {
    fn eq(&self, other: &KeySet) -> bool {
        std::ptr::eq(self, other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quarry_common::fuzz::Rng;

    #[test]
    fn contains_exactly_its_keys_dense_or_sparse() {
        let mut rng = Rng::new(7);
        for round in 0..200 {
            let n = rng.below(300);
            // Dense spans become bitmaps, wide ones hash tables; the extremes included.
            let spread: i64 = match round % 4 {
                0 => 50,
                1 => 100_000,
                2 => i64::MAX,
                _ => 3,
            };
            let pick = |rng: &mut Rng| match rng.below(20) {
                0 => i64::MIN,
                1 => i64::MAX,
                _ => (rng.next_u64() as i64) % spread,
            };
            let keys: Vec<i64> = (0..n).map(|_| pick(&mut rng)).collect();
            let set = KeySet::new(keys.clone());
            let mut sorted = keys.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(set.len(), sorted.len());
            for k in &keys {
                assert!(set.contains(*k), "{k} in {set:?}");
            }
            for _ in 0..500 {
                let k = pick(&mut rng);
                assert_eq!(set.contains(k), sorted.binary_search(&k).is_ok(), "{k}");
            }
        }
        assert!(KeySet::new(vec![]).bounds().is_none());
        assert!(!KeySet::new(vec![]).contains(0));
        assert!(!KeySet::new(vec![]).contains(-1));
    }

    #[test]
    fn stops_paying_when_it_keeps_nine_in_ten() {
        let set = KeySet::new((0..10).collect());
        set.record(TRIAL - 1, TRIAL - 1);
        assert!(set.worth_it(), "still on trial");
        set.record(1, 1);
        assert!(!set.worth_it(), "kept everything");
        let few = KeySet::new((0..10).collect());
        few.record(10 * TRIAL, 9 * TRIAL - 1);
        assert!(few.worth_it(), "just under nine in ten kept");
        few.record(0, 1);
        assert!(!few.worth_it(), "nine in ten kept");
    }
}
