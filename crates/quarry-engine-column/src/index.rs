//! The ordered key index of a column table: one entry per live row, the row's key as
//! [`quarry_engine_row::keycode`] encodes it followed by the row id (8 bytes, big
//! endian), so entries sort as the row engine's do and a transaction layer can place an
//! earlier version's entry among them.
//!
//! Held in memory: a sorted, packed base and the entries added and removed since it was
//! built, folded into a new base once they outgrow an eighth of it. The table builds it
//! from its key columns when it opens and keeps it in step with every change; this
//! module owns the entry set only, not which rows are live.

use std::collections::BTreeSet;
use std::ops::Bound;

use quarry_engine_row::keycode::{self, KeyCol};

/// Changes kept beside the base before it is rebuilt, at least.
const MIN_FOLD: usize = 1 << 14;

pub(crate) struct KeyIndex {
    pub cols: Vec<KeyCol>,
    /// Sorted entries, packed: entry `i` is `bytes[offs[i]..offs[i + 1]]`.
    bytes: Vec<u8>,
    offs: Vec<usize>,
    /// Base entries removed since the base was built.
    removed: BTreeSet<Vec<u8>>,
    /// Entries added since the base was built.
    added: BTreeSet<Vec<u8>>,
    /// Entries inserted and not yet placed (new rows: never among the others), put in
    /// order before anything reads or removes — a bulk load's millions are sorted once
    /// instead of each finding its place.
    pending: Builder,
}

impl KeyIndex {
    pub fn new(cols: Vec<KeyCol>) -> KeyIndex {
        KeyIndex {
            cols,
            bytes: vec![],
            offs: vec![0],
            removed: BTreeSet::new(),
            added: BTreeSet::new(),
            pending: Builder::new(),
        }
    }

    /// An index of the entries `b` collected (in any order, each distinct).
    pub fn build(cols: Vec<KeyCol>, b: Builder) -> KeyIndex {
        let n = b.offs.len() - 1;
        let at = |i: usize| &b.bytes[b.offs[i]..b.offs[i + 1]];
        let mut ix = KeyIndex::new(cols);
        // Rows met in id order often come in key order too (an AUTO_INCREMENT key).
        if (1..n).all(|i| at(i - 1) < at(i)) {
            ix.bytes = b.bytes;
            ix.offs = b.offs;
            return ix;
        }
        // Sorted by 16 bytes of each entry held beside its number, the whole entry
        // compared only where those tie: comparisons stay in one array instead of
        // chasing every entry through memory. The 16 bytes start past the bytes every
        // entry shares: an integer is 17 bytes (a flag and an i128), of which a table's
        // values differ in the last few, so from the start all would tie.
        let first = at(0);
        let mut shared = first.len();
        for i in 1..n {
            let e = at(i);
            shared = first[..shared]
                .iter()
                .zip(e)
                .take_while(|(a, b)| a == b)
                .count();
            if shared == 0 {
                break;
            }
        }
        // Two words, not a u128: 24 bytes an entry instead of 32 (a u128 is 16-aligned).
        let mut order: Vec<(u64, u64, u32)> = (0..n)
            .map(|i| {
                let p = prefix(&at(i)[shared..]);
                ((p >> 64) as u64, p as u64, i as u32)
            })
            .collect();
        order.sort_unstable_by(|x, y| {
            (x.0, x.1)
                .cmp(&(y.0, y.1))
                .then_with(|| at(x.2 as usize).cmp(at(y.2 as usize)))
        });
        ix.bytes.reserve(b.bytes.len());
        ix.offs.reserve(n);
        for (_, _, i) in order {
            ix.push_base(at(i as usize));
        }
        ix
    }

    fn push_base(&mut self, e: &[u8]) {
        self.bytes.extend_from_slice(e);
        self.offs.push(self.bytes.len());
    }

    fn base_len(&self) -> usize {
        self.offs.len() - 1
    }

    fn base(&self, i: usize) -> &[u8] {
        &self.bytes[self.offs[i]..self.offs[i + 1]]
    }

    pub fn len(&self) -> usize {
        self.base_len() - self.removed.len() + self.added.len() + self.pending.len()
    }

    pub fn clear(&mut self) {
        *self = KeyIndex::new(std::mem::take(&mut self.cols));
    }

    /// Add the entry of a new row.
    pub fn insert(&mut self, e: &[u8]) {
        self.pending.bytes.extend_from_slice(e);
        self.pending.end_entry();
    }

    /// Place the pending entries: a few among the added ones, many by a new base.
    pub fn settle(&mut self) {
        let n = self.pending.len();
        if n == 0 {
            return;
        }
        if n < MIN_FOLD / 4 {
            let p = std::mem::replace(&mut self.pending, Builder::new());
            for i in 0..n {
                self.added.insert(p.entry(i).to_vec());
            }
            self.fold_if_due();
        } else {
            self.fold();
        }
    }

    pub fn remove(&mut self, e: &[u8]) {
        self.settle();
        if !self.added.remove(e) && self.base_has(e) {
            self.removed.insert(e.to_vec());
        }
        self.fold_if_due();
    }

    fn base_has(&self, e: &[u8]) -> bool {
        let i = self.lower(Bound::Included(e));
        i < self.base_len() && self.base(i) == e
    }

    fn fold_if_due(&mut self) {
        if self.added.len() + self.removed.len() > MIN_FOLD.max(self.base_len() / 8) {
            self.fold();
        }
    }

    /// A new base holding every entry.
    fn fold(&mut self) {
        let pending = KeyIndex::build(vec![], std::mem::replace(&mut self.pending, Builder::new()));
        let mut next = KeyIndex::new(std::mem::take(&mut self.cols));
        next.bytes
            .reserve(self.bytes.len() + pending.bytes.len() + self.added.len() * 16);
        next.offs.reserve(self.len() + 1);
        let mut added = std::mem::take(&mut self.added).into_iter().peekable();
        let (mut i, mut j) = (0, 0);
        loop {
            let b = (i < self.base_len()).then(|| self.base(i));
            let p = (j < pending.base_len()).then(|| pending.base(j));
            let a = added.peek().map(Vec::as_slice);
            match smallest([b, p, a]) {
                None => break,
                Some(0) => {
                    i += 1;
                    let e = b.unwrap();
                    if !self.removed.contains(e) {
                        next.push_base(e);
                    }
                }
                Some(1) => {
                    j += 1;
                    next.push_base(p.unwrap());
                }
                Some(_) => {
                    let e = added.next().unwrap();
                    next.push_base(&e);
                }
            }
        }
        *self = next;
    }

    /// First base position at or after a lower bound.
    fn lower(&self, b: Bound<&[u8]>) -> usize {
        self.lower_from(0, b)
    }

    /// [`KeyIndex::lower`], known to be `from` or past it: found by galloping from there
    /// (a batch of lookups in key order finds each key a few entries on).
    fn lower_from(&self, from: usize, b: Bound<&[u8]>) -> usize {
        let n = self.base_len();
        match b {
            Bound::Unbounded => 0,
            Bound::Included(k) => gallop(n, from, |i| self.base(i) < k),
            Bound::Excluded(k) => gallop(n, from, |i| self.base(i) <= k),
        }
    }

    /// First base position past an upper bound.
    fn upper(&self, b: Bound<&[u8]>) -> usize {
        self.upper_from(0, b)
    }

    /// [`KeyIndex::upper`] when that is `from` or past it (the lower bound's position: a
    /// key matches few entries, so this takes a comparison or two, not a binary search).
    fn upper_from(&self, from: usize, b: Bound<&[u8]>) -> usize {
        let n = self.base_len();
        match b {
            Bound::Unbounded => n,
            Bound::Included(k) => gallop(n, from, |i| self.base(i) <= k),
            Bound::Excluded(k) => gallop(n, from, |i| self.base(i) < k),
        }
    }

    /// Up to `max` entries between `lo` and `hi`, in order (last first when `reverse`),
    /// appended to `out`.
    pub fn range(
        &mut self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        reverse: bool,
        max: usize,
        out: &mut Vec<Vec<u8>>,
    ) {
        self.settle();
        if max == 0 {
            return;
        }
        self.walk(lo, hi, reverse, &mut |e| {
            out.push(e.to_vec());
            out.len() < max
        });
    }

    /// Hand the entries between `lo` and `hi` to `f` in order until it returns false,
    /// as one of a batch of lookups: `hint` is where the last one's entries started,
    /// and `lo` is at or past that lookup's lower bound (keys in order), or `hint` is 0.
    /// Leaves in `hint` where this one's entries start.
    pub fn each_after(
        &mut self,
        hint: &mut usize,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        f: &mut dyn FnMut(&[u8]) -> bool,
    ) {
        self.settle();
        if inverted(lo, hi) {
            return;
        }
        *hint = self.lower_from(*hint, lo);
        self.walk_base(*hint, lo, hi, false, f);
    }

    /// Hand the entries between `lo` and `hi` to `f` in order (last first when
    /// `reverse`) until it returns false.
    fn walk(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        reverse: bool,
        f: &mut dyn FnMut(&[u8]) -> bool,
    ) {
        if inverted(lo, hi) {
            return;
        }
        self.walk_base(self.lower(lo), lo, hi, reverse, f);
    }

    /// [`KeyIndex::walk`] whose lower bound is at base position `start`.
    fn walk_base(
        &self,
        start: usize,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        reverse: bool,
        f: &mut dyn FnMut(&[u8]) -> bool,
    ) {
        let end = self.upper_from(start, hi);
        let live = |e: &[u8]| self.removed.is_empty() || !self.removed.contains(e);
        let mut added = self.added.range::<[u8], _>((lo, hi));
        let (mut next_added, mut i, mut j) = if reverse {
            (added.next_back(), start, end)
        } else {
            (added.next(), start, end)
        };
        loop {
            let b = match (reverse, i < j) {
                (_, false) => None,
                (false, true) => Some(self.base(i)),
                (true, true) => Some(self.base(j - 1)),
            };
            let take_added = match (&next_added, b) {
                (Some(a), Some(b)) => (a.as_slice() < b) != reverse,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => return,
            };
            let go = if take_added {
                let go = f(next_added.unwrap());
                next_added = if reverse {
                    added.next_back()
                } else {
                    added.next()
                };
                go
            } else {
                if reverse {
                    j -= 1;
                } else {
                    i += 1;
                }
                let b = b.unwrap();
                !live(b) || f(b)
            };
            if !go {
                return;
            }
        }
    }

    /// The number of entries between `lo` and `hi`.
    pub fn count(&mut self, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> u64 {
        self.settle();
        if inverted(lo, hi) {
            return 0;
        }
        let (start, end) = (self.lower(lo), self.upper(hi));
        let base = end.saturating_sub(start);
        if base == 0 && self.added.is_empty() {
            return 0;
        }
        let removed = if self.removed.is_empty() {
            0
        } else {
            self.removed.range::<[u8], _>((lo, hi)).count()
        };
        let added = if self.added.is_empty() {
            0
        } else {
            self.added.range::<[u8], _>((lo, hi)).count()
        };
        (base - removed + added) as u64
    }

    /// Distinct values of each key prefix (first column, first two, …).
    pub fn distinct(&mut self) -> Vec<u64> {
        self.settle();
        let n = self.cols.len();
        let mut counts = vec![0u64; n];
        // The previous entry's key columns, kept in one buffer (None before the first).
        let mut prev: Vec<u8> = Vec::new();
        let mut prev_ends: Option<Vec<usize>> = None;
        self.walk(Bound::Unbounded, Bound::Unbounded, false, &mut |e| {
            let Some(ends) = keycode::column_ends(e, &self.cols) else {
                return true;
            };
            // The first key column where this entry differs from the previous one: every
            // prefix from there on is new.
            let from = match &prev_ends {
                None => 0,
                Some(pends) => (0..n)
                    .find(|&c| prev[..pends[c]] != e[..ends[c]])
                    .unwrap_or(n),
            };
            for c in counts.iter_mut().skip(from) {
                *c += 1;
            }
            prev.clear();
            prev.extend_from_slice(&e[..ends.last().copied().unwrap_or(0)]);
            prev_ends = Some(ends);
            true
        });
        counts
    }
}

/// Entries collected for [`KeyIndex::build`], packed as they come.
pub(crate) struct Builder {
    pub bytes: Vec<u8>,
    offs: Vec<usize>,
}

impl Builder {
    pub fn new() -> Builder {
        Builder {
            bytes: vec![],
            offs: vec![0],
        }
    }

    /// A builder for about `rows` entries.
    pub fn with_rows(rows: usize) -> Builder {
        let mut offs = Vec::with_capacity(rows + 1);
        offs.push(0);
        Builder {
            bytes: vec![],
            offs,
        }
    }

    /// Ends the entry written to `bytes` since the last one.
    pub fn end_entry(&mut self) {
        self.offs.push(self.bytes.len());
    }

    /// After the first entry: room for `rows` entries of its size (and some more) —
    /// of a short one only: one long string must not reserve its length for every row.
    pub fn reserve_like_first(&mut self, rows: usize) {
        if self.offs.len() == 2 && self.bytes.len() <= 62 {
            self.bytes
                .reserve(rows.saturating_mul(self.bytes.len() + 2));
        }
    }

    fn len(&self) -> usize {
        self.offs.len() - 1
    }

    fn entry(&self, i: usize) -> &[u8] {
        &self.bytes[self.offs[i]..self.offs[i + 1]]
    }
}

/// The first 16 bytes of `e` as a number that orders as the bytes do (zeros past a
/// shorter entry's end: a tie, never a wrong order, since a prefix sorts first anyway).
fn prefix(e: &[u8]) -> u128 {
    let mut w = [0u8; 16];
    let n = e.len().min(16);
    w[..n].copy_from_slice(&e[..n]);
    u128::from_be_bytes(w)
}

/// Which of the entries is first in order (None when there are none).
fn smallest(heads: [Option<&[u8]>; 3]) -> Option<usize> {
    let mut best: Option<(usize, &[u8])> = None;
    for (k, h) in heads.into_iter().enumerate() {
        if let Some(h) = h {
            if best.is_none_or(|(_, b)| h < b) {
                best = Some((k, h));
            }
        }
    }
    best.map(|(k, _)| k)
}

/// Whether no entry can lie between the bounds (a range `BTreeSet::range` refuses).
fn inverted(lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a > b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
            a >= b
        }
        _ => false,
    }
}

/// [`partition`] when the answer is `from` or past it: steps of 1, 2, 4, … from there,
/// then a binary search in the last step.
fn gallop(n: usize, from: usize, before: impl Fn(usize) -> bool) -> usize {
    if from >= n || !before(from) {
        return from.min(n);
    }
    // `before` holds at `lo`; the answer is in `lo + 1..=hi`.
    let (mut lo, mut step) = (from, 1);
    let hi = loop {
        let p = lo + step;
        if p >= n {
            break n;
        }
        if !before(p) {
            break p;
        }
        lo = p;
        step *= 2;
    };
    lo + 1 + partition(hi - lo - 1, |i| before(lo + 1 + i))
}

/// The first `i` in `0..n` for which `before(i)` is false (`before` holds for a prefix).
fn partition(n: usize, before: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;
    use quarry_common::{SqlType, TypeKind, Value};

    fn cols() -> Vec<KeyCol> {
        vec![KeyCol {
            ty: SqlType::new(TypeKind::Int),
            prefix: 0,
            desc: false,
        }]
    }

    /// Pseudo-random numbers below the bound asked (xorshift from `seed`).
    fn below(mut state: u64) -> impl FnMut(u64) -> u64 {
        move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        }
    }

    fn entry(k: i64, id: u64) -> Vec<u8> {
        let mut e = vec![];
        keycode::encode_column(&Value::Int(k), &cols()[0], &mut e);
        e.extend_from_slice(&id.to_be_bytes());
        e
    }

    /// Entries of every length, many sharing their first 16 bytes or being prefixes of
    /// others (the sort compares 16-byte prefixes first), come out in byte order.
    #[test]
    fn build_sorts_entries_of_any_length_in_byte_order() {
        let mut rnd = below(0x9E37_79B9_7F4A_7C15);
        let mut model = BTreeSet::new();
        while model.len() < 5_000 {
            let len = rnd(24) as usize;
            // Few byte values: long shared prefixes and zero bytes (the padding's value).
            model.insert(
                (0..len)
                    .map(|_| [0, 1, 255][rnd(3) as usize])
                    .collect::<Vec<u8>>(),
            );
        }
        let mut shuffled: Vec<Vec<u8>> = model.iter().cloned().collect();
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, rnd(i as u64 + 1) as usize);
        }
        let mut b = Builder::with_rows(shuffled.len());
        for e in &shuffled {
            b.bytes.extend_from_slice(e);
            b.end_entry();
            b.reserve_like_first(shuffled.len());
        }
        let ix = KeyIndex::build(vec![], b);
        let got: Vec<Vec<u8>> = (0..ix.base_len()).map(|i| ix.base(i).to_vec()).collect();
        let want: Vec<Vec<u8>> = model.into_iter().collect();
        assert_eq!(got, want);
    }

    /// Galloping from any point at or before the answer finds what a binary search does.
    #[test]
    fn galloping_finds_the_partition_point() {
        let mut rnd = below(77);
        for _ in 0..5_000 {
            let n = rnd(300) as usize;
            let answer = rnd(n as u64 + 1) as usize;
            let from = rnd(answer as u64 + 1) as usize;
            assert_eq!(gallop(n, from, |i| i < answer), answer);
            assert_eq!(partition(n, |i| i < answer), answer);
        }
    }

    /// A batch of key lookups, each started where the last one's entries were (keys in
    /// order), or from the start (a key below the last), finds each key's entries.
    #[test]
    fn lookups_after_one_another_find_each_keys_entries() {
        let mut rnd = below(0x51_7CC1_B727_220A);
        let mut b = Builder::new();
        let mut model = BTreeSet::new();
        for i in 0..3_000u64 {
            // Keys 0..400 with gaps and repeats.
            let e = entry((rnd(400) * 3) as i64, i);
            b.bytes.extend(&e);
            b.end_entry();
            model.insert(e);
        }
        let mut ix = KeyIndex::build(cols(), b);
        // Some added and removed since the base was built.
        for i in 0..30u64 {
            let e = entry(rnd(1200) as i64, 10_000 + i);
            ix.insert(&e);
            model.insert(e);
            let old = model
                .iter()
                .nth(rnd(model.len() as u64) as usize)
                .unwrap()
                .clone();
            ix.remove(&old);
            model.remove(&old);
        }
        for sorted in [true, false] {
            let mut keys: Vec<i64> = (0..500).map(|_| rnd(1250) as i64 - 10).collect();
            if sorted {
                keys.sort_unstable();
            }
            let mut hint = 0;
            let mut last = i64::MIN;
            for k in keys {
                if k < last {
                    hint = 0;
                }
                last = k;
                let (lo, hi) = (entry(k, 0), entry(k, u64::MAX));
                let mut got = vec![];
                ix.each_after(
                    &mut hint,
                    Bound::Included(&lo[..]),
                    Bound::Included(&hi[..]),
                    &mut |e| {
                        got.push(e.to_vec());
                        true
                    },
                );
                let want: Vec<Vec<u8>> = model.range(lo..=hi).cloned().collect();
                assert_eq!(got, want, "key {k}");
            }
        }
    }

    /// Inserts, removes and folds against a sorted set of the same entries: every range
    /// in both directions, and every count, agree.
    #[test]
    fn ranges_and_counts_match_a_sorted_set() {
        let mut rnd = below(0x2545_F491_4F6C_DD1D);
        let mut b = Builder::new();
        for i in (0..500).rev() {
            b.bytes.extend(entry(i % 50, i as u64));
            b.end_entry();
        }
        let mut ix = KeyIndex::build(cols(), b);
        let mut model: BTreeSet<Vec<u8>> = (0..500).map(|i| entry(i % 50, i as u64)).collect();
        let mut next_id = 500u64;
        for step in 0..40_000 {
            if step % 9_000 == 4_500 {
                // A bulk load's worth: placed by a new base at the next read.
                for _ in 0..20_000 {
                    let e = entry(rnd(60) as i64 - 5, next_id);
                    next_id += 1;
                    model.insert(e.clone());
                    ix.insert(&e);
                }
            }
            if rnd(3) == 0 && !model.is_empty() {
                let k = model
                    .iter()
                    .nth(rnd(model.len() as u64) as usize)
                    .unwrap()
                    .clone();
                model.remove(&k);
                ix.remove(&k);
            } else {
                let e = entry(rnd(60) as i64 - 5, next_id);
                next_id += 1;
                model.insert(e.clone());
                ix.insert(&e);
            }
            assert_eq!(ix.len(), model.len());
            if step % 997 == 0 {
                for (a, b) in [(0, 10), (-5, -5), (20, 70), (3, 2)] {
                    let lo = entry(a, 0);
                    let hi = entry(b, u64::MAX);
                    let want: Vec<Vec<u8>> = model
                        .iter()
                        .filter(|e| **e >= lo && **e <= hi)
                        .cloned()
                        .collect();
                    let mut got = vec![];
                    let (l, h) = (Bound::Included(&lo[..]), Bound::Included(&hi[..]));
                    ix.range(l, h, false, usize::MAX, &mut got);
                    assert_eq!(got, want);
                    let mut back = vec![];
                    ix.range(l, h, true, usize::MAX, &mut back);
                    back.reverse();
                    assert_eq!(back, want);
                    assert_eq!(ix.count(l, h), want.len() as u64);
                    let mut first = vec![];
                    ix.range(Bound::Excluded(&lo[..]), h, false, 3, &mut first);
                    let after: Vec<Vec<u8>> =
                        want.iter().filter(|e| **e > lo).take(3).cloned().collect();
                    assert_eq!(first, after);
                }
                let keys: BTreeSet<Vec<u8>> =
                    model.iter().map(|e| e[..e.len() - 8].to_vec()).collect();
                assert_eq!(ix.distinct(), vec![keys.len() as u64]);
            }
        }
    }
}
