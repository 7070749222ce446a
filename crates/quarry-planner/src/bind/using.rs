//! USING and NATURAL joins: the columns they join on, and what the joined scope shows of
//! them. As in MariaDB, each pair of joined columns is one (coalesced) column: the left
//! side's (the written right one's for a RIGHT JOIN, which the binder turns into a LEFT
//! join of swapped sides), found by its bare name and listed first by `*`; the other
//! side's is found by its qualified name only and left out of `*`. `t.*` lists a table's
//! columns in its own order, both kinds.
//!
//! Owns the pairing, the join condition it makes and the order `*` lists a join's
//! columns in. Must not touch: the join's plan (`make_join` builds it).

use quarry_common::{Error, Result};
use sqlparser::ast;

use super::{object_name, ScopeCol};
use quarry_executor::expr::{BinOp, Expr};

/// The columns `constraint` joins on, as (left position, right position) pairs; None for
/// an ON or no condition.
pub(super) fn pairs(
    lc: &[ScopeCol],
    rc: &[ScopeCol],
    constraint: Option<&ast::JoinConstraint>,
) -> Result<Option<Vec<(usize, usize)>>> {
    let visible = |cols: &[ScopeCol], name: &str| {
        cols.iter()
            .rposition(|c| c.star.is_some() && c.col.name.eq_ignore_ascii_case(name))
    };
    let mut pairs: Vec<(usize, usize)> = vec![];
    match constraint {
        Some(ast::JoinConstraint::Using(names)) => {
            for n in names {
                let n = object_name(n).pop().unwrap_or_default();
                let unknown = || Error::unknown_column(&n, "FROM");
                let pair = (
                    visible(lc, &n).ok_or_else(unknown)?,
                    visible(rc, &n).ok_or_else(unknown)?,
                );
                if !pairs.contains(&pair) {
                    pairs.push(pair);
                }
            }
        }
        Some(ast::JoinConstraint::Natural) => {
            for (ri, c) in rc.iter().enumerate() {
                if c.star.is_none() {
                    continue;
                }
                if let Some(li) = visible(lc, &c.col.name) {
                    pairs.push((li, ri));
                }
            }
        }
        _ => return Ok(None),
    }
    Ok(Some(pairs))
}

/// `left = right` for each pair, over the joined row (`lw` left columns).
pub(super) fn condition(pairs: &[(usize, usize)], lw: usize) -> Option<Expr> {
    super::and_all(
        pairs
            .iter()
            .map(|&(l, r)| {
                Expr::Bin(
                    BinOp::Eq,
                    Box::new(Expr::Col(l)),
                    Box::new(Expr::Col(lw + r)),
                )
            })
            .collect(),
    )
}

/// Number where `*` lists each column of a join of `lw` left columns (all of `cols`):
/// the joined columns first, in the left side's order, then the left side's others, then
/// the right side's, each side in its own `*` order; the right side's joined columns not
/// at all.
pub(super) fn star_order(cols: &mut [ScopeCol], lw: usize, pairs: &[(usize, usize)]) {
    for &(_, r) in pairs {
        cols[lw + r].star = None;
    }
    let joined = |i: usize| pairs.iter().any(|&(l, _)| l == i);
    let by_star = |range: std::ops::Range<usize>, cols: &[ScopeCol]| {
        let mut v: Vec<usize> = range.filter(|&i| cols[i].star.is_some()).collect();
        v.sort_by_key(|&i| cols[i].star);
        v
    };
    let left = by_star(0..lw, cols);
    let order: Vec<usize> = left
        .iter()
        .copied()
        .filter(|&i| joined(i))
        .chain(left.iter().copied().filter(|&i| !joined(i)))
        .chain(by_star(lw..cols.len(), cols))
        .collect();
    for (rank, i) in order.into_iter().enumerate() {
        cols[i].star = Some(rank as u32);
    }
}
