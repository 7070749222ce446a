//! Conditions on one table that an OR over several tables implies, added next to it:
//! `(n1.name = 'FRANCE' AND n2.name = 'GERMANY') OR (n1.name = 'GERMANY' AND n2.name =
//! 'FRANCE')` holds only where `n1.name = 'FRANCE' OR n1.name = 'GERMANY'` holds, so that
//! condition filters n1's scan (and may choose its index) before the join, while the OR
//! itself is still checked on the joined rows. This is what MariaDB does when it attaches
//! to each table the part of the condition it can check (TPC-H Q7 and Q19).
//!
//! Only conjuncts that give the same value however often they run are copied (no RAND(),
//! SLEEP(), subqueries …). Owns: the derivation over bound conditions. Must not touch: the
//! syntax rewrite that takes common conjuncts out of ORs first (or_factor.rs).

use super::{columns_used, disjuncts};
use quarry_executor::expr::{and_all, conjuncts};
use quarry_executor::expr::{BinOp, Expr};

/// `pred` with, for each of its top-level ORs reading several tables, the single-table
/// conditions it implies appended. `table_of` names the table (FROM item) of a column.
pub(super) fn derive(pred: Expr, table_of: &dyn Fn(usize) -> Option<usize>) -> Expr {
    let mut parts = vec![];
    conjuncts(pred, &mut parts);
    let mut extra = vec![];
    for p in &parts {
        if matches!(p, Expr::Bin(BinOp::Or, ..)) {
            extra.extend(implied(p, table_of));
        }
    }
    parts.extend(extra);
    and_all(parts).expect("at least the condition itself")
}

/// The tables `e` reads (None: something other than columns and constants, or a
/// volatile function).
fn tables(e: &Expr, table_of: &dyn Fn(usize) -> Option<usize>) -> Option<Vec<usize>> {
    let mut volatile = false;
    e.walk(&mut |x| {
        if let Expr::Func(n, _) = x {
            volatile |= quarry_executor::func::VOLATILE_FUNCTIONS.contains(&n.as_str());
        }
    });
    if volatile {
        return None;
    }
    let mut ts = columns_used(e)?
        .into_iter()
        .map(table_of)
        .collect::<Option<Vec<_>>>()?;
    ts.sort_unstable();
    ts.dedup();
    Some(ts)
}

fn implied(or: &Expr, table_of: &dyn Fn(usize) -> Option<usize>) -> Vec<Expr> {
    let mut branches = vec![];
    disjuncts(or, &mut branches);
    // Each branch's conjuncts that read exactly one table, with that table.
    let per_branch: Vec<Vec<(usize, Expr)>> = branches
        .iter()
        .map(|b| {
            let mut cs = vec![];
            conjuncts((*b).clone(), &mut cs);
            cs.into_iter()
                .filter_map(|c| match tables(&c, table_of).as_deref() {
                    Some([t]) => Some((*t, c)),
                    _ => None,
                })
                .collect()
        })
        .collect();
    let Some(first) = per_branch.first() else {
        return vec![];
    };
    let mut candidates: Vec<usize> = first.iter().map(|(t, _)| *t).collect();
    candidates.sort_unstable();
    candidates.dedup();
    let whole = tables(or, table_of);
    let mut out = vec![];
    for t in candidates {
        // The OR already reads only t: it is that table's condition as it is.
        if whole.as_deref() == Some(&[t]) {
            continue;
        }
        let alts: Option<Vec<Expr>> = per_branch
            .iter()
            .map(|b| {
                and_all(
                    b.iter()
                        .filter(|(bt, _)| *bt == t)
                        .map(|(_, c)| c.clone())
                        .collect(),
                )
            })
            .collect();
        if let Some(alts) = alts {
            let derived = alts
                .into_iter()
                .reduce(|a, b| Expr::Bin(BinOp::Or, Box::new(a), Box::new(b)));
            out.extend(derived);
        }
    }
    out
}
