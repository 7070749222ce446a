//! GROUP BY on vectors: each row of a batch gets its group's number. A group is known by
//! the key the row path gives it (`exec::group_key`: collation-aware, 1.50 = 1.5), and
//! keeps the first row's values, so groups and their order (first met first) are the row
//! path's; the groups of a later run of rows are absorbed after those of an earlier one,
//! which keeps that order. A key is built once per combination of dictionary entries met
//! when every grouping column of a batch is a dictionary vector, else once per distinct
//! combination of a batch's raw values (a string's bytes, a number's bits), not per row.
//!
//! Rows clustered by their one numeric grouping column (a table loaded in the order of its
//! key: lineitem by l_orderkey) come group after group in increasing order. While they do,
//! every group but the last can never be met again: when the groups outgrow the buffer
//! they are closed and leave the hash table ([`Groups::close_passed`]), so the table holds
//! what one buffer holds however many groups there are (the closed ones are the result,
//! which the row path holds whole as well). Should a smaller key turn up after groups
//! were closed, it might be one of theirs: the statement then goes back to the row path
//! ([`GaveUp`]).
//!
//! One integer grouping column (no collation) is keyed by the integer itself: its key
//! bytes are a function of the integer, so the groups are the same, and a new group costs
//! no allocation (TPC-H Q18's 1.5 M groups of l_orderkey spent a third of the query
//! making each one's key bytes, twice, and a row of its value). While such groups come in
//! increasing order, their keys are a sorted list that finds them: they go into the hash
//! table only when the order breaks, and a later run that follows an earlier one is
//! appended to it (Q18 spent a fifth of its time putting groups no row looked up again
//! into hash tables).
//!
//! Must not touch: aggregate states (states.rs).

use quarry_common::hash::WordMap;
use quarry_common::{Collation, Row, Value};
use quarry_storage_api::vector::arrow_array::types::UInt16Type;
use quarry_storage_api::vector::arrow_array::{
    Array, ArrayRef, Decimal128Array, DictionaryArray, Float64Array, Int64Array, StringArray,
};
use quarry_storage_api::vector::value_at;

/// Combinations of dictionary entries above this are keyed row by row.
const MAX_COMBINATIONS: usize = 1 << 16;

/// Row `i`'s value as bytes that are equal only for the same value of the same vector
/// type (NULL apart): no key, no copy of a string.
fn raw_bytes(a: &dyn Array, i: usize, out: &mut Vec<u8>) {
    if a.is_null(i) {
        out.push(0);
        return;
    }
    let any = a.as_any();
    if let Some(a) = any.downcast_ref::<StringArray>() {
        let v = a.value(i).as_bytes();
        out.push(1);
        out.extend_from_slice(&(v.len() as u64).to_le_bytes());
        out.extend_from_slice(v);
    } else if let Some(a) = any.downcast_ref::<Int64Array>() {
        out.push(2);
        out.extend_from_slice(&a.value(i).to_le_bytes());
    } else if let Some(a) = any.downcast_ref::<Decimal128Array>() {
        out.push(3);
        out.extend_from_slice(&a.value(i).to_le_bytes());
    } else if let Some(a) = any.downcast_ref::<Float64Array>() {
        out.push(4);
        out.extend_from_slice(&a.value(i).to_bits().to_le_bytes());
    } else if let Some(a) = any.downcast_ref::<DictionaryArray<UInt16Type>>() {
        out.push(5);
        out.extend_from_slice(&a.keys().value(i).to_le_bytes());
    } else {
        // No such vectors are made; each row its own bytes keeps it correct.
        out.push(6);
        out.extend_from_slice(&(i as u64).to_le_bytes());
    }
}

/// A group may have been closed that a row now belongs to: only the row path can tell.
#[derive(Debug)]
pub(crate) struct GaveUp;

pub(crate) struct Groups {
    /// Per grouping column: its batch slot, and the collation its key is under (None: as
    /// plain values group).
    by: Vec<(usize, Option<Collation>)>,
    known: Known,
    /// Bytes the open groups take, as the row path counts them.
    pub used: usize,
    /// Values a group's row holds in the end (the grouping columns', then the
    /// aggregates'): its values are made with room for them all.
    width: usize,
    /// Groups have come in increasing order of their one numeric column so far.
    ordered: bool,
    /// Some group was closed.
    closed: bool,
}

/// The groups, in the order they were met, and the open ones' numbers by key.
enum Known {
    /// By the row path's key bytes, with each group's values.
    Bytes {
        open: WordMap<Vec<u8>, u32>,
        keys: Vec<Vec<u8>>,
        values: Vec<Row>,
    },
    /// One integer column (an `Int64Array` in every batch): by its value, None for NULL.
    /// The groups from `indexed` on are open and not in `open`; there are such only while
    /// the groups are ordered (their keys increase, none is NULL), and they are found by
    /// their place in `keys`.
    Ints {
        open: WordMap<Option<i64>, u32>,
        keys: Vec<Option<i64>>,
        indexed: usize,
    },
}

/// Bytes the row path counts for a group of one integer (its key: a tag, 16 bytes and a
/// scale) or of NULL (a tag).
fn int_group_bytes(k: Option<i64>) -> usize {
    64 + if k.is_some() { 18 } else { 1 }
}

/// A numeric group value as an integer that orders as the values do (a column's decimals
/// share one scale); None for NULL and other values.
fn ordinal(v: &Value) -> Option<i128> {
    match v {
        Value::Int(i) => Some(*i as i128),
        Value::Decimal(d) => d.mantissa.to_i128(),
        _ => None,
    }
}

impl Groups {
    /// Groups by `by`, whose rows end up `width` values wide; `int_column`: its one
    /// column's vectors are `Int64Array`s.
    pub fn new(by: Vec<(usize, Option<Collation>)>, width: usize, int_column: bool) -> Groups {
        let ordered = by.len() == 1;
        let known = if int_column && matches!(by.as_slice(), [(_, None)]) {
            Known::Ints {
                open: WordMap::default(),
                keys: Vec::new(),
                indexed: 0,
            }
        } else {
            Known::Bytes {
                open: WordMap::default(),
                keys: Vec::new(),
                values: Vec::new(),
            }
        };
        Groups {
            by,
            known,
            used: 0,
            width,
            ordered,
            closed: false,
        }
    }

    pub fn len(&self) -> usize {
        match &self.known {
            Known::Bytes { keys, .. } => keys.len(),
            Known::Ints { keys, .. } => keys.len(),
        }
    }

    /// Groups still open (in the hash table).
    pub fn open(&self) -> usize {
        match &self.known {
            Known::Bytes { open, .. } => open.len(),
            Known::Ints {
                open,
                keys,
                indexed,
            } => open.len() + keys.len() - *indexed,
        }
    }

    /// Each group's values (with room for the row's width), in the order the groups were
    /// met.
    pub fn take_values(&mut self) -> Vec<Row> {
        match &mut self.known {
            Known::Bytes { values, .. } => std::mem::take(values),
            Known::Ints { keys, .. } => keys
                .iter()
                .map(|k| {
                    let mut row = Vec::with_capacity(self.width);
                    row.push(k.map_or(Value::Null, Value::Int));
                    row
                })
                .collect(),
        }
    }

    /// Put the open groups that are not in the hash table into it: the order that let
    /// their place find them no longer holds.
    fn index_all(&mut self) {
        if let Known::Ints {
            open,
            keys,
            indexed,
        } = &mut self.known
        {
            for (g, k) in keys.iter().enumerate().skip(*indexed) {
                open.insert(*k, g as u32);
            }
            *indexed = keys.len();
        }
    }

    /// The ordinal of the first (`first`) or last group.
    fn end_ordinal(&self, first: bool) -> Option<Option<i128>> {
        match &self.known {
            Known::Bytes { values, .. } => {
                let v = if first { values.first() } else { values.last() };
                v.map(|v| v.first().and_then(ordinal))
            }
            Known::Ints { keys, .. } => {
                let k = if first { keys.first() } else { keys.last() };
                k.map(|k| k.map(i128::from))
            }
        }
    }

    fn last_ordinal(&self) -> Option<i128> {
        self.end_ordinal(false).flatten()
    }

    /// The group of every row of a batch, into `gid`.
    pub fn assign(
        &mut self,
        cols: &[ArrayRef],
        rows: usize,
        gid: &mut Vec<u32>,
    ) -> Result<(), GaveUp> {
        gid.clear();
        if self.by.is_empty() {
            if rows > 0 {
                self.find_or_add(Key::Bytes(vec![], vec![]));
            }
            gid.resize(rows, 0);
            return Ok(());
        }
        if let Known::Ints { .. } = self.known {
            let Some(a) = cols[self.by[0].0].as_any().downcast_ref::<Int64Array>() else {
                return Err(GaveUp);
            };
            // A row of the group before it needs no lookup.
            let mut prev: Option<(Option<i64>, u32)> = None;
            for i in 0..rows {
                let k = a.is_valid(i).then(|| a.value(i));
                let g = match prev {
                    Some((p, g)) if p == k => g,
                    _ => self.int_group(k)?,
                };
                prev = Some((k, g));
                gid.push(g);
            }
            return Ok(());
        }
        let dicts: Option<Vec<&DictionaryArray<UInt16Type>>> = self
            .by
            .iter()
            .map(|(s, _)| {
                cols[*s]
                    .as_any()
                    .downcast_ref::<DictionaryArray<UInt16Type>>()
            })
            .collect();
        let mut key = Vec::new();
        if let Some(dicts) = dicts {
            // Entry j of a dictionary is code j + 1; NULL is 0.
            let sizes: Vec<usize> = dicts.iter().map(|d| d.values().len() + 1).collect();
            let combos = sizes
                .iter()
                .try_fold(1usize, |acc, &n| acc.checked_mul(n))
                .filter(|&n| n <= MAX_COMBINATIONS);
            if let Some(combos) = combos {
                let mut seen = vec![u32::MAX; combos];
                for i in 0..rows {
                    let mut at = 0;
                    for (d, &n) in dicts.iter().zip(&sizes) {
                        let code = if d.is_null(i) {
                            0
                        } else {
                            d.keys().value(i) as usize + 1
                        };
                        at = at * n + code;
                    }
                    if seen[at] == u32::MAX {
                        seen[at] = self.group_of(cols, i, &mut key)?;
                    }
                    gid.push(seen[at]);
                }
                return Ok(());
            }
        }
        // One numeric column: a row of the group before it needs no key.
        let numeric = match self.by.as_slice() {
            [(s, None)] => {
                let a = cols[*s].as_any();
                if let Some(a) = a.downcast_ref::<Int64Array>() {
                    Some((
                        a.values().iter().map(|&x| x as i128).collect::<Vec<_>>(),
                        a.nulls(),
                    ))
                } else {
                    a.downcast_ref::<Decimal128Array>()
                        .map(|a| (a.values().to_vec(), a.nulls()))
                }
            }
            _ => None,
        };
        let mut prev: Option<(i128, u32)> = None;
        let mut seen: WordMap<Vec<u8>, u32> = WordMap::default();
        let mut raw = Vec::new();
        for i in 0..rows {
            if let Some((xs, nulls)) = &numeric {
                let x = xs[i];
                if nulls.is_none_or(|n| n.is_valid(i)) {
                    if let Some((_, g)) = prev.filter(|&(p, _)| p == x) {
                        gid.push(g);
                        continue;
                    }
                    let g = self.group_of(cols, i, &mut key)?;
                    prev = Some((x, g));
                    gid.push(g);
                    continue;
                }
            }
            // Other rows: a row whose columns hold the very bytes of an earlier row's in
            // this batch is in its group, found without a key.
            raw.clear();
            for (s, _) in &self.by {
                raw_bytes(&*cols[*s], i, &mut raw);
            }
            if let Some(&g) = seen.get(raw.as_slice()) {
                gid.push(g);
                continue;
            }
            let g = self.group_of(cols, i, &mut key)?;
            seen.insert(raw.clone(), g);
            gid.push(g);
        }
        Ok(())
    }

    /// Row `i`'s group, made when it is new (groups known by key bytes).
    fn group_of(&mut self, cols: &[ArrayRef], i: usize, key: &mut Vec<u8>) -> Result<u32, GaveUp> {
        key.clear();
        let mut vals: Row = Vec::with_capacity(self.width);
        for (s, coll) in &self.by {
            let v = value_at(&*cols[*s], i);
            match coll {
                Some(c) => v.hash_key_in(*c, key),
                None => v.hash_key(key),
            }
            vals.push(v);
        }
        if let Known::Bytes { open, .. } = &self.known {
            if let Some(&g) = open.get(key.as_slice()) {
                return Ok(g);
            }
        }
        self.admit(ordinal(&vals[0]))?;
        Ok(self.add(Key::Bytes(key.clone(), vals)))
    }

    /// The group of integer `k` (None: NULL), made when it is new.
    fn int_group(&mut self, k: Option<i64>) -> Result<u32, GaveUp> {
        if let Some(g) = self.lookup(&Key::Int(k)) {
            return Ok(g);
        }
        self.admit(k.map(i128::from))?;
        Ok(self.add(Key::Int(k)))
    }

    /// Before a new group of ordinal `new`: whether the groups still come in increasing
    /// order, or (some were closed, and the new one might be one of them) give up.
    fn admit(&mut self, new: Option<i128>) -> Result<(), GaveUp> {
        if self.ordered {
            let empty = self.len() == 0;
            match (self.last_ordinal(), new) {
                (Some(l), Some(x)) if x > l => {}
                (None, Some(_)) if empty => {}
                _ if self.closed => return Err(GaveUp),
                _ => self.unorder(),
            }
        }
        Ok(())
    }

    /// The groups no longer come in increasing order.
    fn unorder(&mut self) {
        self.ordered = false;
        self.index_all();
    }

    /// Close every group but the last when all have come in increasing order (none can
    /// be met again while the order holds): false when they have not.
    pub fn close_passed(&mut self) -> bool {
        if !self.ordered || self.len() < 2 {
            return false;
        }
        match &mut self.known {
            Known::Bytes { open, keys, .. } => {
                let last = keys.len() - 1;
                open.clear();
                open.insert(keys[last].clone(), last as u32);
                self.used = keys[last].len() + 64;
            }
            Known::Ints {
                open,
                keys,
                indexed,
            } => {
                let last = keys.len() - 1;
                open.clear();
                *indexed = last;
                self.used = int_group_bytes(keys[last]);
            }
        }
        self.closed = true;
        true
    }

    /// Close the last group: no row of it can come after a greater group's.
    fn close_last(&mut self) {
        // Out of the table means closed: the open groups found by place go into it.
        self.index_all();
        let freed = match &mut self.known {
            Known::Bytes { open, keys, .. } => keys
                .last()
                .filter(|k| open.remove(*k).is_some())
                .map(|k| k.len() + 64),
            Known::Ints { open, keys, .. } => keys
                .last()
                .filter(|k| open.remove(*k).is_some())
                .map(|k| int_group_bytes(*k)),
        };
        if let Some(b) = freed {
            self.used -= b;
            self.closed = true;
        }
    }

    /// The open group of `k`.
    fn lookup(&self, k: &Key) -> Option<u32> {
        match (&self.known, k) {
            (Known::Bytes { open, .. }, Key::Bytes(k, _)) => open.get(k).copied(),
            (
                Known::Ints {
                    open,
                    keys,
                    indexed,
                },
                Key::Int(k),
            ) => open.get(k).copied().or_else(|| {
                let tail = &keys[*indexed..];
                // Mostly a new group, past the last.
                if tail.last().is_none_or(|l| k > l) {
                    return None;
                }
                let at = tail.binary_search(k).ok()?;
                Some((*indexed + at) as u32)
            }),
            _ => None,
        }
    }

    /// A new group (of the kind of key this one's groups have).
    fn add(&mut self, k: Key) -> u32 {
        let g = self.len() as u32;
        match (&mut self.known, k) {
            (Known::Bytes { open, keys, values }, Key::Bytes(k, v)) => {
                self.used += k.len() + 64;
                open.insert(k.clone(), g);
                keys.push(k);
                values.push(v);
            }
            (
                Known::Ints {
                    open,
                    keys,
                    indexed,
                },
                Key::Int(k),
            ) => {
                self.used += int_group_bytes(k);
                keys.push(k);
                if !self.ordered {
                    open.insert(k, g);
                    *indexed = keys.len();
                }
            }
            _ => unreachable!("groups of one statement are known one way"),
        }
        g
    }

    fn find_or_add(&mut self, k: Key) -> u32 {
        match self.lookup(&k) {
            Some(g) => g,
            None => self.add(k),
        }
    }

    /// Take in the groups of a later run of rows: for each of its groups, the number it
    /// has here. Runs whose groups were closed join only when the later one's start at or
    /// after the earlier one's last group (the only one that can continue).
    pub fn absorb(&mut self, other: Groups) -> Result<Vec<u32>, GaveUp> {
        let other_first = other.end_ordinal(true);
        let (other_ordered, other_closed) = (other.ordered, other.closed);
        let follows = match (self.last_ordinal(), other_first) {
            (_, None) => true,
            (Some(l), Some(f)) => f.is_some_and(|f| f >= l),
            (None, Some(_)) => self.len() == 0,
        };
        if self.ordered && other_ordered && follows {
            if let Known::Ints { keys, .. } = other.known {
                return self.append_ints(keys, other_closed);
            }
        }
        let keys = match other.known {
            Known::Bytes { keys, values, .. } => match self.known {
                Known::Bytes { .. } => keys
                    .into_iter()
                    .zip(values)
                    .map(|(k, v)| Key::Bytes(k, v))
                    .collect::<Vec<_>>(),
                Known::Ints { .. } => return Err(GaveUp),
            },
            Known::Ints { keys, .. } => match self.known {
                Known::Ints { .. } => keys.into_iter().map(Key::Int).collect(),
                Known::Bytes { .. } => return Err(GaveUp),
            },
        };
        if !(self.closed || other_closed) {
            if !(other_ordered && follows) {
                self.unorder();
            }
            return Ok(keys.into_iter().map(|k| self.find_or_add(k)).collect());
        }
        if !(self.ordered && other_ordered && follows) {
            return Err(GaveUp);
        }
        let mut map = Vec::with_capacity(keys.len());
        for (j, k) in keys.into_iter().enumerate() {
            if j == 0 {
                if let Some(g) = self.lookup(&k) {
                    map.push(g);
                    continue;
                }
            }
            self.close_last();
            map.push(self.add(k));
        }
        self.closed = true;
        Ok(map)
    }

    /// Absorb the integer groups `more` of a later run, ordered like these and starting
    /// at or after the last of these (which alone the first of them can be): they follow
    /// in order, found by their place, and when either run closed groups, all of them
    /// but the last are closed.
    fn append_ints(
        &mut self,
        more: Vec<Option<i64>>,
        more_closed: bool,
    ) -> Result<Vec<u32>, GaveUp> {
        let mut map = Vec::with_capacity(more.len());
        let mut more = more.into_iter().peekable();
        if let Some(g) = more.peek().and_then(|&k| self.lookup(&Key::Int(k))) {
            map.push(g);
            more.next();
        }
        let Known::Ints {
            open,
            keys,
            indexed,
        } = &mut self.known
        else {
            return Err(GaveUp);
        };
        keys.reserve(more.len());
        for k in more {
            map.push(keys.len() as u32);
            self.used += int_group_bytes(k);
            keys.push(k);
        }
        if self.closed || more_closed {
            if let Some(&last) = keys.last() {
                open.clear();
                *indexed = keys.len() - 1;
                self.used = int_group_bytes(last);
            }
            self.closed = true;
        }
        Ok(map)
    }
}

/// A group's key: the row path's key bytes and the group's values, or one integer.
enum Key {
    Bytes(Vec<u8>, Row),
    Int(Option<i64>),
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use quarry_common::fuzz::Rng;

    use super::*;

    /// Keys mostly in increasing runs with repeats (a clustered column), now and then one
    /// out of order or NULL.
    fn keys(rng: &mut Rng, start: i64, n: usize, disorder: usize) -> Vec<Option<i64>> {
        let mut k = start;
        (0..n)
            .map(|_| {
                if rng.chance(disorder) {
                    return if rng.chance(3) {
                        None
                    } else {
                        Some(rng.below(200) as i64)
                    };
                }
                if rng.chance(3) {
                    k += 1 + rng.below(3) as i64;
                }
                Some(k)
            })
            .collect()
    }

    /// Runs of integer keys grouped batch by batch (closing passed groups now and then,
    /// as a full buffer does) and absorbed in run order give each row the group of its
    /// key's first row over all runs, and the groups' values in that order, unless the
    /// groups gave up, which only closed groups may.
    #[test]
    fn integer_groups_are_the_first_met_keys_in_run_order() {
        let mut rng = Rng::new(20);
        let mut checked = 0;
        for round in 0..400 {
            let disorder = [5, 40, 1000, usize::MAX][round % 4];
            let runs: Vec<Vec<Vec<Option<i64>>>> = (0..1 + rng.below(3))
                .map(|r| {
                    let start = r as i64 * 60 - rng.below(3) as i64;
                    let n = rng.below(150);
                    let rows = keys(&mut rng, start, n, disorder);
                    let per = 1 + rng.below(40);
                    rows.chunks(per).map(<[_]>::to_vec).collect()
                })
                .collect();
            let mut total: Option<(Groups, Vec<u32>)> = None;
            let mut closed = false;
            let mut gave_up = false;
            'runs: for run in &runs {
                let mut groups = Groups::new(vec![(0, None)], 2, true);
                let mut gids = Vec::new();
                for batch in run {
                    let col: ArrayRef = Arc::new(Int64Array::from(batch.clone()));
                    let mut gid = Vec::new();
                    if groups.assign(&[col], batch.len(), &mut gid).is_err() {
                        gave_up = true;
                        break 'runs;
                    }
                    gids.extend(gid);
                    if rng.chance(4) {
                        closed |= groups.close_passed();
                    }
                }
                closed |= groups.closed;
                total = Some(match total.take() {
                    None => (groups, gids),
                    Some((mut t, mut all)) => match t.absorb(groups) {
                        Ok(map) => {
                            all.extend(gids.iter().map(|&g| map[g as usize]));
                            (t, all)
                        }
                        Err(GaveUp) => {
                            gave_up = true;
                            break 'runs;
                        }
                    },
                });
            }
            if gave_up {
                assert!(closed, "round {round}: gave up with no group closed");
                continue;
            }
            let rows: Vec<Option<i64>> = runs.iter().flatten().flatten().copied().collect();
            let mut first: HashMap<Option<i64>, u32> = HashMap::new();
            let mut order = Vec::new();
            let want: Vec<u32> = rows
                .iter()
                .map(|k| {
                    *first.entry(*k).or_insert_with(|| {
                        order.push(*k);
                        order.len() as u32 - 1
                    })
                })
                .collect();
            let Some((mut t, got)) = total else { continue };
            assert_eq!(got, want, "round {round}: rows' groups");
            let values: Vec<Option<i64>> = t
                .take_values()
                .iter()
                .map(|r| match r[0] {
                    Value::Int(i) => Some(i),
                    _ => None,
                })
                .collect();
            assert_eq!(values, order, "round {round}: groups' values");
            checked += 1;
        }
        assert!(checked > 200, "only {checked} rounds answered");
    }
}
