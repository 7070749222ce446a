//! Filter pushdown: which `WHERE` conjuncts a table evaluates itself, and their engine form.
//!
//! At plan time each conjunct of a full scan's filter whose shape an engine can take (a
//! column compared with constants, IN, BETWEEN, LIKE, IS NULL, under AND/OR/NOT) is
//! offered to the table; those it answers `Exact` for move from the scan's `filter` to
//! its `pushed` condition. Constants (literals, parameters, constant expressions) are
//! evaluated when the scan starts, so a prepared plan pushes new values each execution.
//! `SET optimizer_switch='engine_condition_pushdown=off'` makes the executor evaluate
//! the pushed conjuncts itself instead.

use quarry_catalog::TableEntry;
use quarry_common::Result;
use quarry_storage_api::{CmpOp, Pred, Support};

use crate::exec::ExecCtx;
use crate::expr::{BinOp, Expr, UnOp};

/// An expression whose value is fixed for one execution (an enclosing query's column too).
fn fixed(e: &Expr) -> bool {
    crate::bind::known_before_scan(e)
}

fn cmp_op(op: BinOp) -> Option<CmpOp> {
    Some(match op {
        BinOp::Eq => CmpOp::Eq,
        BinOp::Ne => CmpOp::Ne,
        BinOp::Lt => CmpOp::Lt,
        BinOp::Le => CmpOp::Le,
        BinOp::Gt => CmpOp::Gt,
        BinOp::Ge => CmpOp::Ge,
        BinOp::NullSafeEq => CmpOp::NullSafeEq,
        _ => return None,
    })
}

/// The engine form of `e` with its constants evaluated by `value` (None: not pushable).
fn convert(
    e: &Expr,
    value: &mut dyn FnMut(&Expr) -> Result<quarry_common::Value>,
) -> Result<Option<Pred>> {
    let col = |e: &Expr| match e {
        Expr::Col(c) => Some(*c),
        _ => None,
    };
    let not = |p: Pred, negated: bool| if negated { Pred::Not(Box::new(p)) } else { p };
    Ok(Some(match e {
        Expr::Bin(BinOp::And | BinOp::Or, a, b) => {
            let (Some(a), Some(b)) = (convert(a, value)?, convert(b, value)?) else {
                return Ok(None);
            };
            let and = matches!(e, Expr::Bin(BinOp::And, ..));
            let mut parts = vec![];
            for p in [a, b] {
                match p {
                    Pred::And(v) if and => parts.extend(v),
                    Pred::Or(v) if !and => parts.extend(v),
                    p => parts.push(p),
                }
            }
            if and {
                Pred::And(parts)
            } else {
                Pred::Or(parts)
            }
        }
        Expr::Unary(UnOp::Not, a) => match convert(a, value)? {
            Some(p) => Pred::Not(Box::new(p)),
            None => return Ok(None),
        },
        Expr::Bin(op, a, b) => {
            let Some(op) = cmp_op(*op) else {
                return Ok(None);
            };
            match (col(a), col(b)) {
                (Some(c), None) if fixed(b) => Pred::Cmp {
                    col: c,
                    op,
                    value: value(b)?,
                },
                (None, Some(c)) if fixed(a) => Pred::Cmp {
                    col: c,
                    op: op.flipped(),
                    value: value(a)?,
                },
                _ => return Ok(None),
            }
        }
        Expr::InList {
            expr,
            list,
            negated,
        } => match col(expr) {
            Some(c) if list.iter().all(fixed) => not(
                Pred::In {
                    col: c,
                    values: list.iter().map(&mut *value).collect::<Result<_>>()?,
                },
                *negated,
            ),
            _ => return Ok(None),
        },
        Expr::Between {
            expr,
            lo,
            hi,
            negated,
        } => match col(expr) {
            Some(c) if fixed(lo) && fixed(hi) => not(
                Pred::Between {
                    col: c,
                    lo: value(lo)?,
                    hi: value(hi)?,
                },
                *negated,
            ),
            _ => return Ok(None),
        },
        Expr::Like {
            expr,
            pattern,
            escape,
            negated,
        } => match col(expr) {
            Some(c) if fixed(pattern) => {
                let p = value(pattern)?;
                if p.is_null() {
                    // LIKE NULL is unknown for every row: IN () with a NULL says so.
                    not(
                        Pred::In {
                            col: c,
                            values: vec![quarry_common::Value::Null],
                        },
                        *negated,
                    )
                } else {
                    not(
                        Pred::Like {
                            col: c,
                            pattern: p.as_str_lossy().into_owned(),
                            escape: *escape,
                        },
                        *negated,
                    )
                }
            }
            _ => return Ok(None),
        },
        Expr::IsNull(a, negated) => match col(a) {
            Some(c) => not(Pred::IsNull { col: c }, *negated),
            None => return Ok(None),
        },
        _ => return Ok(None),
    }))
}

/// Split a full scan's filter into what `table` takes (Exact) and what stays.
pub(crate) fn split(table: &TableEntry, filter: Option<Expr>) -> (Option<Expr>, Option<Expr>) {
    let Some(f) = filter else {
        return (None, None);
    };
    let mut parts = vec![];
    crate::bind::conjuncts(f, &mut parts);
    let (mut pushed, mut kept) = (vec![], vec![]);
    for p in parts {
        // The shape is what is offered; placeholders stand in for the constants.
        let shape = convert(&p, &mut |_| Ok(quarry_common::Value::Null));
        match shape {
            Ok(Some(pred)) if table.handle.pushdown(&pred) == Support::Exact => pushed.push(p),
            _ => kept.push(p),
        }
    }
    (crate::bind::and_all(pushed), crate::bind::and_all(kept))
}

/// The rows of `table` its engine expects to pass the conjuncts of `filter` it takes
/// whose constants are literals, and whether other conjuncts remain; None when there are
/// no such conjuncts or the engine cannot tell (the planner then guesses).
pub(crate) fn engine_estimate(table: &TableEntry, filter: &Expr) -> Option<(f64, bool)> {
    let mut parts = vec![];
    crate::bind::conjuncts(filter.clone(), &mut parts);
    let (mut preds, mut rest) = (vec![], false);
    for p in &parts {
        let literal = &mut |k: &Expr| match k {
            Expr::Lit(v) => Ok(v.clone()),
            _ => Err(quarry_common::Error::internal("not a literal")),
        };
        match convert(p, literal) {
            Ok(Some(pred)) if table.handle.pushdown(&pred) == Support::Exact => preds.push(pred),
            _ => rest = true,
        }
    }
    let pred = match preds.len() {
        0 => return None,
        1 => preds.pop()?,
        _ => Pred::And(preds),
    };
    let n = table.handle.estimate(&quarry_storage_api::ScanRequest {
        filter: Some(pred),
        ..Default::default()
    })?;
    Some((n as f64, rest))
}

/// Where a scan's pushed conjuncts are evaluated this execution: the engine's condition,
/// or — pushdown switched off — the expression the executor checks itself.
pub(crate) fn route<'e>(
    pushed: Option<&'e Expr>,
    ctx: &ExecCtx,
) -> Result<(Option<Pred>, Option<&'e Expr>)> {
    match pushed {
        Some(p) if ctx.pushdown => match convert(p, &mut |k| k.eval(&[], ctx))? {
            Some(pred) => Ok((Some(pred), None)),
            None => Ok((None, Some(p))),
        },
        other => Ok((None, other)),
    }
}

/// Whether `optimizer_switch` lets conditions go to the engine.
pub fn enabled(switch: &str) -> bool {
    !switch.split(',').any(|kv| {
        kv.trim()
            .eq_ignore_ascii_case("engine_condition_pushdown=off")
    })
}
