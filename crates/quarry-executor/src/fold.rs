//! Constant subexpressions of a condition evaluated once per run of the operator that
//! checks it, instead of once per row: `l_shipdate < date '1994-01-01' + interval 1 year`
//! compares with a literal DATE. Owns only the choice of what folds; values come from
//! `Expr::eval` with the statement's own context, so a fold gives exactly what each row
//! would have computed.
//!
//! A subexpression folds only when it is constant (no column, parameter, variable or
//! subquery), calls nothing volatile, and evaluates without an error or a warning: those
//! stay per row, where they arise as before (a warning per row, an error only if a row is
//! reached). A `COLLATE` node never becomes a literal, since LIKE and the string functions
//! read their collation from it.

use crate::exec::ExecCtx;
use crate::expr::Expr;
use std::borrow::Cow;

/// `e` with its constant subexpressions evaluated; borrowed when nothing folds.
pub fn fold<'e>(e: &'e Expr, ctx: &ExecCtx) -> Cow<'e, Expr> {
    if !has_foldable(e) {
        return Cow::Borrowed(e);
    }
    Cow::Owned(e.clone().rewrite(&mut |node| {
        if !is_root(node) || !constant(node) {
            return None;
        }
        // Whole or not at all: an operand folded under a node that then fails could
        // change how that node fails (the negation of a literal BIGINT minimum is a
        // DECIMAL, of a computed one error 1690).
        Some(match value_of(node, ctx) {
            Some(v) => Expr::Lit(v),
            None => node.clone(),
        })
    }))
}

/// The node's value when it has one without an error or a warning.
fn value_of(node: &Expr, ctx: &ExecCtx) -> Option<quarry_common::Value> {
    let before = ctx.warnings.borrow().len();
    let r = node.eval(&[], ctx);
    let warned = ctx.warnings.borrow().len() != before;
    if warned {
        ctx.warnings.borrow_mut().truncate(before);
    }
    r.ok().filter(|_| !warned)
}

/// Constant, and calling nothing that must run per row (RAND, SLEEP, …).
fn constant(node: &Expr) -> bool {
    if !node.is_const() {
        return false;
    }
    let mut volatile = false;
    node.walk(&mut |n| {
        if let Expr::Func(name, _) = n {
            volatile |= crate::func::VOLATILE_FUNCTIONS.contains(&name.as_str());
        }
    });
    !volatile
}

/// A node that may become a literal, if constant.
fn is_root(node: &Expr) -> bool {
    !matches!(node, Expr::Lit(_) | Expr::Collate(..))
}

/// Whether some node of `e` is an operation on literals only (every constant
/// subexpression holds one): a cheap test that spares the copy when nothing folds.
fn has_foldable(e: &Expr) -> bool {
    let mut found = false;
    e.walk(&mut |node| {
        if found || !is_root(node) {
            return;
        }
        let mut all_lit = true;
        node.for_each_child(&mut |c| all_lit &= matches!(c, Expr::Lit(_)));
        // Leaves other than literals (columns, parameters, subqueries) are not constant.
        let leaf_constant = matches!(
            node,
            Expr::Func(..)
                | Expr::Unary(..)
                | Expr::Bin(..)
                | Expr::Cast(..)
                | Expr::IsNull(..)
                | Expr::IsBool(..)
                | Expr::Like { .. }
                | Expr::InList { .. }
                | Expr::Between { .. }
                | Expr::Case { .. }
                | Expr::SortKey(..)
        );
        found = all_lit && leaf_constant && constant(node);
    });
    found
}
