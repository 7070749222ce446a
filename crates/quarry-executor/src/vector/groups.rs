//! GROUP BY on vectors: each row of a batch gets its group's number. A group is known by
//! the key the row path gives it (`exec::group_key`: collation-aware, 1.50 = 1.5), and
//! keeps the first row's values, so groups and their order (first met first) are the row
//! path's. When every grouping column of a batch is a dictionary vector, a key is built
//! once per combination of dictionary entries met, not once per row.
//!
//! Must not touch: aggregate states (states.rs).

use std::collections::HashMap;

use quarry_common::Row;
use quarry_storage_api::vector::arrow_array::types::UInt16Type;
use quarry_storage_api::vector::arrow_array::{Array, ArrayRef, DictionaryArray};
use quarry_storage_api::vector::value_at;

use crate::exec::group_key;
use crate::expr::Expr;

/// Combinations of dictionary entries above this are keyed row by row.
const MAX_COMBINATIONS: usize = 1 << 16;

pub(crate) struct Groups<'p> {
    /// Per grouping expression: its batch slot and the expression (for its key).
    by: Vec<(usize, &'p Expr)>,
    index: HashMap<Vec<u8>, u32>,
    /// Each group's values, in the order groups were met.
    pub values: Vec<Row>,
    /// Bytes the groups take, as the row path counts them.
    pub used: usize,
}

impl<'p> Groups<'p> {
    pub fn new(by: Vec<(usize, &'p Expr)>) -> Groups<'p> {
        Groups {
            by,
            index: HashMap::new(),
            values: Vec::new(),
            used: 0,
        }
    }

    /// The group of every row of a batch, into `gid`.
    pub fn assign(&mut self, cols: &[ArrayRef], rows: usize, gid: &mut Vec<u32>) {
        gid.clear();
        if self.by.is_empty() {
            if rows > 0 && self.values.is_empty() {
                self.values.push(vec![]);
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
            .map(|(s, e)| {
                let v = value_at(&*cols[*s], i);
                group_key(e, &v, key);
                v
            })
            .collect();
        if let Some(&g) = self.index.get(key.as_slice()) {
            return g;
        }
        let g = self.values.len() as u32;
        self.used += key.len() + 64;
        self.index.insert(key.clone(), g);
        self.values.push(vals);
        g
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }
}
