//! Results of subqueries kept for the statement: an uncorrelated one runs once; a
//! correlated one runs once per distinct value of the enclosing columns it reads (as
//! MariaDB's subquery cache), so `l_quantity < (SELECT avg(…) FROM lineitem WHERE
//! l_partkey = p_partkey)` runs per part, not per line item joined to it. Owns the cache
//! and its bound; running a subquery is exec.rs's.
//!
//! Keys are the values' exact stored form (`'a'` and `'A'`, `1.0` and `1.00` differ), so
//! a cached result is the one the subquery gives for exactly those values. A subquery that
//! calls something volatile has no `outer_refs` and is never cached.

use std::collections::HashMap;
use std::rc::Rc;

use quarry_common::{packed, Row, Value};

use crate::expr::SubQuery;

/// Rows the cache holds at most, over all its results; past that, new results are not
/// kept (those already kept still answer).
const MAX_ROWS: usize = 1 << 20;

#[derive(Default)]
pub struct SubCache {
    results: HashMap<(usize, Vec<u8>), Rc<Vec<Row>>>,
    rows: usize,
}

/// The cache key of `sub` run for `row` under the enclosing rows `outer` (innermost
/// last), or None when it is not cached.
pub fn key(sub: &SubQuery, row: &[Value], outer: &[Row]) -> Option<(usize, Vec<u8>)> {
    let refs = sub.outer_refs.as_ref()?;
    let mut k = Vec::new();
    for &(up, col) in refs {
        let v = if up == 1 {
            row.get(col)?
        } else {
            outer.get(outer.len().checked_sub(up - 1)?)?.get(col)?
        };
        packed::put_value(v, &mut k);
    }
    Some((sub.id, k))
}

impl SubCache {
    pub fn get(&self, key: &(usize, Vec<u8>)) -> Option<Rc<Vec<Row>>> {
        self.results.get(key).cloned()
    }

    pub fn insert(&mut self, key: (usize, Vec<u8>), rows: &Rc<Vec<Row>>) {
        if self.rows + rows.len() > MAX_ROWS {
            return;
        }
        self.rows += rows.len();
        self.results.insert(key, rows.clone());
    }
}
