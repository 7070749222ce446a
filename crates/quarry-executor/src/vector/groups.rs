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
    /// Keys of the open groups.
    index: WordMap<Vec<u8>, u32>,
    /// Each group's key and values, in the order groups were met.
    keys: Vec<Vec<u8>>,
    pub values: Vec<Row>,
    /// Bytes the open groups take, as the row path counts them.
    pub used: usize,
    /// Groups have come in increasing order of their one numeric column so far.
    ordered: bool,
    /// Some group was closed.
    closed: bool,
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
    pub fn new(by: Vec<(usize, Option<Collation>)>) -> Groups {
        let ordered = by.len() == 1;
        Groups {
            by,
            index: WordMap::default(),
            keys: Vec::new(),
            values: Vec::new(),
            used: 0,
            ordered,
            closed: false,
        }
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Groups still open (in the hash table).
    pub fn open(&self) -> usize {
        self.index.len()
    }

    fn last_ordinal(&self) -> Option<i128> {
        self.values.last().and_then(|v| ordinal(&v[0]))
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
                self.find_or_add(&[], vec![]);
            }
            gid.resize(rows, 0);
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

    /// Row `i`'s group, made when it is new.
    fn group_of(&mut self, cols: &[ArrayRef], i: usize, key: &mut Vec<u8>) -> Result<u32, GaveUp> {
        key.clear();
        let vals: Row = self
            .by
            .iter()
            .map(|(s, coll)| {
                let v = value_at(&*cols[*s], i);
                match coll {
                    Some(c) => v.hash_key_in(*c, key),
                    None => v.hash_key(key),
                }
                v
            })
            .collect();
        if let Some(&g) = self.index.get(key.as_slice()) {
            return Ok(g);
        }
        if self.ordered {
            let (last, new) = (self.last_ordinal(), ordinal(&vals[0]));
            match (last, new) {
                (Some(l), Some(x)) if x > l => {}
                (None, Some(_)) if self.values.is_empty() => {}
                _ if self.closed => return Err(GaveUp),
                _ => self.ordered = false,
            }
        }
        Ok(self.add(key, vals))
    }

    /// Close every group but the last when all have come in increasing order (none can
    /// be met again while the order holds): false when they have not.
    pub fn close_passed(&mut self) -> bool {
        if !self.ordered || self.values.len() < 2 {
            return false;
        }
        let last = self.keys.len() - 1;
        self.index.clear();
        self.index.insert(self.keys[last].clone(), last as u32);
        self.used = self.keys[last].len() + 64;
        self.closed = true;
        true
    }

    /// Close the last group: no row of it can come after a greater group's.
    fn close_last(&mut self) {
        if let Some(k) = self.keys.last() {
            if self.index.remove(k).is_some() {
                self.used -= k.len() + 64;
                self.closed = true;
            }
        }
    }

    fn add(&mut self, key: &[u8], vals: Row) -> u32 {
        let g = self.values.len() as u32;
        self.used += key.len() + 64;
        self.index.insert(key.to_vec(), g);
        self.keys.push(key.to_vec());
        self.values.push(vals);
        g
    }

    fn find_or_add(&mut self, key: &[u8], vals: Row) -> u32 {
        match self.index.get(key) {
            Some(&g) => g,
            None => self.add(key, vals),
        }
    }

    /// Take in the groups of a later run of rows: for each of its groups, the number it
    /// has here. Runs whose groups were closed join only when the later one's start at or
    /// after the earlier one's last group (the only one that can continue).
    pub fn absorb(&mut self, other: Groups) -> Result<Vec<u32>, GaveUp> {
        if !(self.closed || other.closed) {
            self.ordered &= other.ordered
                && match (
                    self.last_ordinal(),
                    other.values.first().map(|v| ordinal(&v[0])),
                ) {
                    (_, None) => true,
                    (Some(l), Some(Some(f))) => f >= l,
                    (None, _) => self.values.is_empty(),
                    _ => false,
                };
            return Ok(other
                .keys
                .into_iter()
                .zip(other.values)
                .map(|(k, v)| self.find_or_add(&k, v))
                .collect());
        }
        let follows = match (self.last_ordinal(), other.values.first()) {
            (_, None) => true,
            (Some(l), Some(v)) => ordinal(&v[0]).is_some_and(|f| f >= l),
            (None, Some(_)) => self.values.is_empty(),
        };
        if !(self.ordered && other.ordered && follows) {
            return Err(GaveUp);
        }
        let n = other.values.len();
        let mut map = Vec::with_capacity(n);
        for (j, (k, v)) in other.keys.into_iter().zip(other.values).enumerate() {
            if j == 0 {
                if let Some(&g) = self.index.get(&k) {
                    map.push(g);
                    continue;
                }
            }
            self.close_last();
            map.push(self.add(&k, v));
        }
        self.closed = true;
        Ok(map)
    }
}
