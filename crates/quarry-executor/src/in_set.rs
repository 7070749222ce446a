//! `x IN (SELECT …)` of an uncorrelated subquery that still runs as one (grouped, in a
//! select list or HAVING): its values are hashed once per statement, so each outer
//! row is one lookup instead of a pass over them. A value hashes as it compares only
//! against values of its own class (numbers with numbers, strings with strings under the
//! comparison's collation, times with times); any other mix, and a subquery of more than
//! one column (an error the row-by-row path raises), are left to the row-by-row path.
//!
//! A scan whose condition holds `int_col IN (SELECT …)` as a conjunct also offers its
//! engine the set as a runtime filter ([`scan_filters`]) when every value is an integer:
//! a row passes that conjunct only when its column equals one of them, so the engine may
//! leave the others out before it makes their rows (TPC-H Q18 reads the 57 orders of its
//! subquery's keys, not 1.5 M orders to check each).
//!
//! Owns: the set and the IN answer from it. Must not touch: how the subquery runs.

use std::rc::Rc;
use std::sync::Arc;

use quarry_catalog::ColumnDef;
use quarry_common::hash::WordSet;
use quarry_common::{Collation, Result, Value};
use quarry_storage_api::{HandlerCounters, KeySet, Pred};

use crate::exec::{run_subquery, ExecCtx};
use crate::expr::{Expr, SubQuery};

/// Values past which a set is not offered to scans (as a join's build keys).
const MAX_SCAN_KEYS: usize = 1 << 23;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Exact,
    Double,
    Text,
    Binary,
    Temporal,
    Time,
}

fn class(v: &Value) -> Option<Class> {
    Some(match v {
        Value::Null => return None,
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) => Class::Exact,
        Value::Double(_) => Class::Double,
        Value::Str(_) => Class::Text,
        Value::Bytes(_) => Class::Binary,
        Value::Date(_) | Value::DateTime(_) => Class::Temporal,
        Value::Time(_) => Class::Time,
    })
}

pub struct InSet {
    keys: WordSet<Vec<u8>>,
    empty: bool,
    has_null: bool,
    /// The one class of its non-NULL values; None when there are several (or none).
    class: Option<Class>,
    /// Usable: one column, one class.
    usable: bool,
    /// The values as a filter for scans: every non-NULL value an integer (`Value::Int`,
    /// or `Value::UInt` up to `i64::MAX`); None when some value is not.
    ints: Option<Arc<KeySet>>,
}

fn build(sub: &SubQuery, coll: Collation, ctx: &ExecCtx) -> Result<InSet> {
    let rows = run_subquery(sub, &[], ctx)?;
    let mut set = InSet {
        keys: WordSet::with_capacity_and_hasher(rows.len(), Default::default()),
        empty: rows.is_empty(),
        has_null: false,
        class: None,
        usable: true,
        ints: None,
    };
    let mut ints = Some(Vec::new());
    let mut k = Vec::new();
    for r in rows.iter() {
        let [v] = r.as_slice() else {
            set.usable = false;
            break;
        };
        let Some(c) = class(v) else {
            set.has_null = true;
            continue;
        };
        match set.class {
            None => set.class = Some(c),
            Some(have) if have != c => {
                set.usable = false;
                break;
            }
            _ => {}
        }
        if let Some(list) = &mut ints {
            match v {
                Value::Int(i) if list.len() < MAX_SCAN_KEYS => list.push(*i),
                Value::UInt(u) if *u <= i64::MAX as u64 && list.len() < MAX_SCAN_KEYS => {
                    list.push(*u as i64)
                }
                // 5.0, '5' or 5e0 equal the integer 5 in ways a set of integers misses.
                _ => ints = None,
            }
        }
        k.clear();
        v.hash_key_in(coll, &mut k);
        set.keys.insert(k.clone());
    }
    if set.usable {
        set.ints = ints.map(|list| Arc::new(KeySet::new(list)));
    }
    Ok(set)
}

/// The hashed values of `sub` under `coll`, built once per statement.
fn set_of(sub: &SubQuery, coll: Collation, ctx: &ExecCtx) -> Result<Rc<InSet>> {
    let cached = ctx.in_sets.borrow().get(&(sub.id, coll)).cloned();
    Ok(match cached {
        Some(s) => s,
        None => {
            let s = Rc::new(build(sub, coll, ctx)?);
            ctx.in_sets.borrow_mut().insert((sub.id, coll), s.clone());
            s
        }
    })
}

/// Runtime filters for a scan of a table with `columns` from its condition `filter`:
/// one per conjunct `col IN (uncorrelated subquery)` over an integer column whose
/// subquery gives integers only (running it, once per statement, as the condition would).
/// The conjunct is still checked on the rows that pass.
pub(crate) fn scan_filters(filter: &Expr, columns: &[ColumnDef], ctx: &ExecCtx) -> ScanFilters {
    let mut found = Vec::new();
    let mut stack = vec![filter];
    while let Some(e) = stack.pop() {
        match e {
            Expr::Bin(crate::expr::BinOp::And, a, b) => {
                stack.push(a);
                stack.push(b);
            }
            Expr::InSub {
                expr,
                sub,
                negated: false,
            } if !sub.correlated => {
                let Expr::Col(c) = **expr else { continue };
                if !columns
                    .get(c)
                    .is_some_and(|col| crate::join::integer_keyed(&col.ty))
                {
                    continue;
                }
                // Run early, the subquery may fail where no row would have reached the
                // conjunct (an empty table answers nothing, as in MariaDB): then no
                // filter, and what it warned of is taken back; the condition raises the
                // error if a row reaches it.
                let warned = ctx.warnings.borrow().len();
                let Ok(set) = set_of(sub, Collation::default(), ctx) else {
                    ctx.warnings.borrow_mut().truncate(warned);
                    continue;
                };
                if let Some(keys) = &set.ints {
                    let (asked, passed) = keys.counts();
                    found.push((c, keys.clone(), asked - passed));
                }
            }
            _ => {}
        }
    }
    ScanFilters { found }
}

/// A scan's filters from its IN conjuncts; dropped when the scan ends, counting the rows
/// they left out (as a join's runtime filters count theirs).
pub(crate) struct ScanFilters {
    /// Column, keys, and the rows they had left out before this scan (the set is the
    /// statement's: a subquery's scan may run once per outer row).
    found: Vec<(usize, Arc<KeySet>, u64)>,
}

impl ScanFilters {
    pub fn preds(&self) -> impl Iterator<Item = Pred> + '_ {
        self.found.iter().map(|(col, keys, _)| Pred::InKeys {
            col: *col,
            keys: keys.clone(),
        })
    }

    /// Count what the filters left out into `ctx`'s counters, and forget them.
    pub fn finish(self, ctx: &ExecCtx) {
        for (_, keys, before) in self.found {
            let (asked, passed) = keys.counts();
            HandlerCounters::add(
                &ctx.catalog.counters.runtime_filtered_rows,
                (asked - passed).saturating_sub(before),
            );
        }
    }
}

/// `v [NOT] IN (sub)` from the subquery's hashed values, or None when the row-by-row
/// comparison must answer.
pub(crate) fn probe(
    sub: &SubQuery,
    v: &Value,
    coll: Collation,
    negated: bool,
    ctx: &ExecCtx,
) -> Result<Option<Value>> {
    let set = set_of(sub, coll, ctx)?;
    if !set.usable {
        return Ok(None);
    }
    if set.empty {
        return Ok(Some(Value::from_bool(negated)));
    }
    let Some(c) = class(v) else {
        return Ok(Some(Value::Null));
    };
    if set.class.is_some_and(|have| have != c) {
        return Ok(None);
    }
    let mut k = Vec::new();
    v.hash_key_in(coll, &mut k);
    Ok(Some(if set.keys.contains(&k) {
        Value::from_bool(!negated)
    } else if set.has_null {
        Value::Null
    } else {
        Value::from_bool(negated)
    }))
}
