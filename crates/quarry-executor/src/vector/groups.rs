//! GROUP BY on vectors: each row of a batch gets its group's number. A group is known by
//! the key the row path gives it (`exec::group_key`: collation-aware, 1.50 = 1.5), and
//! keeps the first row's values, so groups and their order (first met first) are the row
//! path's; the groups of a later run of rows are absorbed after those of an earlier one,
//! which keeps that order. When every grouping column of a batch is a dictionary vector,
//! a key is built once per combination of dictionary entries met, not once per row.
//!
//! Must not touch: aggregate states (states.rs).

use std::collections::HashMap;

use quarry_common::{Collation, Row};
use quarry_storage_api::vector::arrow_array::types::UInt16Type;
use quarry_storage_api::vector::arrow_array::{Array, ArrayRef, DictionaryArray};
use quarry_storage_api::vector::value_at;

/// Combinations of dictionary entries above this are keyed row by row.
const MAX_COMBINATIONS: usize = 1 << 16;

pub(crate) struct Groups {
    /// Per grouping column: its batch slot, and the collation its key is under (None: as
    /// plain values group).
    by: Vec<(usize, Option<Collation>)>,
    index: HashMap<Vec<u8>, u32>,
    /// Each group's key and values, in the order groups were met.
    keys: Vec<Vec<u8>>,
    pub values: Vec<Row>,
    /// Bytes the groups take, as the row path counts them.
    pub used: usize,
}

impl Groups {
    pub fn new(by: Vec<(usize, Option<Collation>)>) -> Groups {
        Groups {
            by,
            index: HashMap::new(),
            keys: Vec::new(),
            values: Vec::new(),
            used: 0,
        }
    }

    /// The group of every row of a batch, into `gid`.
    pub fn assign(&mut self, cols: &[ArrayRef], rows: usize, gid: &mut Vec<u32>) {
        gid.clear();
        if self.by.is_empty() {
            if rows > 0 {
                self.find_or_add(&[], vec![]);
            }
            gid.resize(rows, 0);
            return;
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
                        seen[at] = self.group_of(cols, i, &mut key);
                    }
                    gid.push(seen[at]);
                }
                return;
            }
        }
        for i in 0..rows {
            let g = self.group_of(cols, i, &mut key);
            gid.push(g);
        }
    }

    /// Row `i`'s group, made when it is new.
    fn group_of(&mut self, cols: &[ArrayRef], i: usize, key: &mut Vec<u8>) -> u32 {
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
        self.find_or_add(key, vals)
    }

    fn find_or_add(&mut self, key: &[u8], vals: Row) -> u32 {
        if let Some(&g) = self.index.get(key) {
            return g;
        }
        let g = self.values.len() as u32;
        self.used += key.len() + 64;
        self.index.insert(key.to_vec(), g);
        self.keys.push(key.to_vec());
        self.values.push(vals);
        g
    }

    /// Take in the groups of a later run of rows: for each of its groups, the number it
    /// has here.
    pub fn absorb(&mut self, other: Groups) -> Vec<u32> {
        other
            .keys
            .into_iter()
            .zip(other.values)
            .map(|(k, v)| self.find_or_add(&k, v))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }
}
