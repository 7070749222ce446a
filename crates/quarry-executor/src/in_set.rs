//! `x IN (SELECT …)` of an uncorrelated subquery that still runs as one (grouped, in a
//! select list or HAVING): its values are hashed once per statement, so each outer
//! row is one lookup instead of a pass over them. A value hashes as it compares only
//! against values of its own class (numbers with numbers, strings with strings under the
//! comparison's collation, times with times); any other mix, and a subquery of more than
//! one column (an error the row-by-row path raises), are left to the row-by-row path.
//! Owns: the set and the IN answer from it. Must not touch: how the subquery runs.

use std::rc::Rc;

use quarry_common::hash::WordSet;
use quarry_common::{Collation, Result, Value};

use crate::exec::{run_subquery, ExecCtx};
use crate::expr::SubQuery;

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
}

fn build(sub: &SubQuery, coll: Collation, ctx: &ExecCtx) -> Result<InSet> {
    let rows = run_subquery(sub, &[], ctx)?;
    let mut set = InSet {
        keys: WordSet::with_capacity_and_hasher(rows.len(), Default::default()),
        empty: rows.is_empty(),
        has_null: false,
        class: None,
        usable: true,
    };
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
        k.clear();
        v.hash_key_in(coll, &mut k);
        set.keys.insert(k.clone());
    }
    Ok(set)
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
    let cached = ctx.in_sets.borrow().get(&(sub.id, coll)).cloned();
    let set = match cached {
        Some(s) => s,
        None => {
            let s = Rc::new(build(sub, coll, ctx)?);
            ctx.in_sets.borrow_mut().insert((sub.id, coll), s.clone());
            s
        }
    };
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
