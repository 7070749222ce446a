//! Conjuncts every branch of an OR repeats, taken out of it before binding:
//! `(A AND B) OR (A AND C)` is `A AND (B OR C)` (distributivity holds in SQL's three-valued
//! logic too), so a join condition written into each branch (TPC-H Q19's
//! `p_partkey = l_partkey`) is a join condition again instead of a filter over the cross
//! product. A branch left with nothing makes the OR true: `A OR (A AND C)` is `A`.
//!
//! Only conjuncts that give the same value however often they run are taken out (no
//! RAND(), UUID(), SLEEP(), variable assignments …). Owns: the rewrite of WHERE and ON
//! conditions' syntax. Must not touch: binding.

use std::ops::ControlFlow;

use quarry_sql::ast::{self, BinaryOperator as B, Expr as A};

/// `e` with the conjuncts common to the branches of each of its top-level ORs taken out;
/// None when there are none.
pub(super) fn factor_ors(e: &A) -> Option<A> {
    let mut parts = vec![];
    conjuncts(e, &mut parts);
    let mut changed = false;
    let mut out: Vec<A> = vec![];
    for p in parts {
        match factor_or(p) {
            Some(f) => {
                changed = true;
                let mut v = vec![];
                conjuncts(&f, &mut v);
                out.extend(v.into_iter().cloned());
            }
            None => out.push(p.clone()),
        }
    }
    changed.then(|| and_all(out))
}

/// One OR's branches with their common conjuncts taken out, or None.
fn factor_or(e: &A) -> Option<A> {
    let mut branches = vec![];
    disjuncts(e, &mut branches);
    if branches.len() < 2 {
        return None;
    }
    let lists: Vec<Vec<&A>> = branches
        .iter()
        .map(|b| {
            let mut v = vec![];
            conjuncts(b, &mut v);
            v
        })
        .collect();
    let common: Vec<&A> = lists[0]
        .iter()
        .copied()
        .filter(|c| stable(c) && lists[1..].iter().all(|l| l.contains(c)))
        .fold(vec![], |mut acc, c| {
            if !acc.contains(&c) {
                acc.push(c);
            }
            acc
        });
    if common.is_empty() {
        return None;
    }
    let mut rest = vec![];
    for l in &lists {
        let left: Vec<A> = l
            .iter()
            .filter(|c| !common.contains(c))
            .map(|c| (*c).clone())
            .collect();
        if left.is_empty() {
            // This branch is just the common part: the OR adds nothing to it.
            return Some(and_all(common.into_iter().cloned().collect()));
        }
        rest.push(and_all(left));
    }
    let or = rest
        .into_iter()
        .reduce(|l, r| binary(l, B::Or, r))
        .expect("two branches or more");
    let mut all: Vec<A> = common.into_iter().cloned().collect();
    all.push(A::Nested(Box::new(or)));
    Some(and_all(all))
}

pub(super) fn conjuncts<'e>(e: &'e A, out: &mut Vec<&'e A>) {
    match e {
        A::BinaryOp {
            left,
            op: B::And,
            right,
        } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        A::Nested(inner) if is_and(inner) => conjuncts(inner, out),
        other => out.push(other),
    }
}

fn disjuncts<'e>(e: &'e A, out: &mut Vec<&'e A>) {
    match e {
        A::BinaryOp {
            left,
            op: B::Or,
            right,
        } => {
            disjuncts(left, out);
            disjuncts(right, out);
        }
        A::Nested(inner) if matches!(**inner, A::BinaryOp { op: B::Or, .. }) => {
            disjuncts(inner, out)
        }
        other => out.push(other),
    }
}

fn is_and(e: &A) -> bool {
    matches!(e, A::BinaryOp { op: B::And, .. })
}

fn binary(left: A, op: B, right: A) -> A {
    A::BinaryOp {
        left: Box::new(left),
        op,
        right: Box::new(right),
    }
}

fn and_all(v: Vec<A>) -> A {
    v.into_iter()
        .map(|e| match e {
            A::BinaryOp { op: B::Or, .. } => A::Nested(Box::new(e)),
            other => other,
        })
        .reduce(|l, r| binary(l, B::And, r))
        .expect("a conjunct or more")
}

/// Whether `e` gives the same value each time it runs on the same row.
fn stable(e: &A) -> bool {
    let r = ast::visit_expressions(e, |x| match x {
        A::Function(f) if super::is_volatile_call(f) => ControlFlow::Break(()),
        A::BinaryOp {
            op: B::Assignment, ..
        } => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    });
    r.is_continue()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn where_of(sql: &str) -> A {
        let quarry_sql::Stmt::Ast(s) = quarry_sql::parse_one(sql).unwrap() else {
            panic!("{sql}")
        };
        let ast::Statement::Query(q) = *s else {
            panic!("{sql}")
        };
        let ast::SetExpr::Select(sel) = *q.body else {
            panic!("{sql}")
        };
        sel.selection.unwrap()
    }

    #[test]
    fn common_conjuncts_come_out() {
        for (sql, want) in [
            (
                "SELECT 1 WHERE (a = b AND c = 1) OR (a = b AND c = 2)",
                Some("a = b AND (c = 1 OR c = 2)"),
            ),
            (
                "SELECT 1 WHERE x > 0 AND ((a = b AND c = 1) OR (c = 2 AND a = b) OR (a = b AND d))",
                Some("x > 0 AND a = b AND (c = 1 OR c = 2 OR d)"),
            ),
            ("SELECT 1 WHERE a = b OR (a = b AND c = 1)", Some("a = b")),
            ("SELECT 1 WHERE (a = 1 AND b = 2) OR (a = 2 AND b = 2)", Some("b = 2 AND (a = 1 OR a = 2)")),
            ("SELECT 1 WHERE (a = 1 AND b = 2) OR (a = 2 AND b = 3)", None),
            ("SELECT 1 WHERE (RAND() < 0.5 AND c = 1) OR (RAND() < 0.5 AND c = 2)", None),
            ("SELECT 1 WHERE a = 1", None),
        ] {
            let got = factor_ors(&where_of(sql)).map(|e| e.to_string());
            assert_eq!(got.as_deref(), want, "{sql}");
        }
    }
}
