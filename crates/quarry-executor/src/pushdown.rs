//! Filter pushdown: which `WHERE` conjuncts a table evaluates itself, and their engine form.
//!
//! At plan time each conjunct of a full scan's filter whose shape an engine can take (a
//! column compared with constants, IN, BETWEEN, LIKE, IS NULL, under AND/OR/NOT; a
//! column's leading characters IN a list of literals, as LIKE prefixes) is
//! offered to the table; those it answers `Exact` for move from the scan's `filter` to
//! its `pushed` condition. Constants (literals, parameters, constant expressions) are
//! evaluated when the scan starts, so a prepared plan pushes new values each execution.
//! `SET optimizer_switch='engine_condition_pushdown=off'` makes the executor evaluate
//! the pushed conjuncts itself instead.

use quarry_catalog::TableEntry;
use quarry_common::{Result, Value};
use quarry_storage_api::{CmpOp, Pred, Support};

use crate::exec::ExecCtx;
use crate::expr::{BinOp, Expr, UnOp};

/// An expression whose value is fixed for one execution (an enclosing query's column too).
fn fixed(e: &Expr) -> bool {
    crate::expr::known_before_scan(e)
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

/// `SUBSTRING(col, 1, n)` (or `SUBSTR`, `MID`, `LEFT(col, n)`): the column and `n`.
fn leading_chars(e: &Expr) -> Option<(usize, usize)> {
    let Expr::Func(name, args) = e else {
        return None;
    };
    let n = match (name.as_str(), args.as_slice()) {
        ("SUBSTRING" | "SUBSTR" | "MID", [Expr::Col(_), Expr::Lit(Value::Int(1)), n]) => n,
        ("LEFT", [Expr::Col(_), n]) => n,
        _ => return None,
    };
    match (&args[0], n) {
        (Expr::Col(c), Expr::Lit(Value::Int(n))) if *n > 0 => Some((*c, *n as usize)),
        _ => None,
    }
}

/// `SUBSTRING(col, 1, n) IN ('ab', 'cd')` as `col LIKE 'ab%' OR col LIKE 'cd%'` where
/// the two mean the same: each item a string literal of `n` characters whose last does
/// not weigh as a space, compared under utf8mb4_general_ci, which weighs each character
/// once — two strings of `n` characters are then equal exactly where LIKE matches them
/// character by character, and a value shorter than `n` equals no such item (padding
/// it with spaces cannot give the last character). TPC-H Q22's country codes.
fn leading_chars_in(c: usize, n: usize, list: &[Expr]) -> Option<Pred> {
    let general = quarry_common::collation::Collation::Utf8mb4GeneralCi;
    let mut likes = Vec::with_capacity(list.len());
    for item in list {
        let Expr::Lit(Value::Str(s)) = item else {
            return None;
        };
        let last = s.chars().last()?;
        if s.chars().count() != n
            || general.cmp(last.encode_utf8(&mut [0; 4]), " ") == std::cmp::Ordering::Equal
        {
            return None;
        }
        let mut pattern = String::with_capacity(s.len() + 2);
        for ch in s.chars() {
            if matches!(ch, '%' | '_' | '\\') {
                pattern.push('\\');
            }
            pattern.push(ch);
        }
        pattern.push('%');
        likes.push(Pred::Like {
            col: c,
            pattern,
            escape: '\\',
        });
    }
    Some(if likes.len() == 1 {
        likes.pop()?
    } else {
        Pred::Or(likes)
    })
}

/// The engine form of `e` with its constants evaluated by `value` (None: not pushable).
/// `plain(c)`: column `c` is text under utf8mb4_general_ci (the comparisons of values
/// taken out of it, as in `SUBSTRING(c, 1, 2) = 'ab'`, are that collation's).
fn convert(
    e: &Expr,
    value: &mut dyn FnMut(&Expr) -> Result<quarry_common::Value>,
    plain: &dyn Fn(usize) -> bool,
) -> Result<Option<Pred>> {
    let col = |e: &Expr| match e {
        Expr::Col(c) => Some(*c),
        _ => None,
    };
    let not = |p: Pred, negated: bool| if negated { Pred::Not(Box::new(p)) } else { p };
    Ok(Some(match e {
        Expr::Bin(BinOp::And | BinOp::Or, a, b) => {
            let (Some(a), Some(b)) = (convert(a, value, plain)?, convert(b, value, plain)?) else {
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
        Expr::Unary(UnOp::Not, a) => match convert(a, value, plain)? {
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
            Some(_) => return Ok(None),
            None => match leading_chars(expr) {
                Some((c, n)) if plain(c) => match leading_chars_in(c, n, list) {
                    Some(p) => not(p, *negated),
                    None => return Ok(None),
                },
                _ => return Ok(None),
            },
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

/// Which of `table`'s columns are text under utf8mb4_general_ci (see `convert`).
fn plain_text(table: &TableEntry) -> impl Fn(usize) -> bool + '_ {
    |c| {
        table
            .def
            .columns
            .get(c)
            .is_some_and(|col| col.ty.is_string() && !col.ty.is_binary() && col.ty.coll.is_plain())
    }
}

/// Split a full scan's filter into what `table` takes (Exact) and what stays.
pub fn split(table: &TableEntry, filter: Option<Expr>) -> (Option<Expr>, Option<Expr>) {
    let Some(f) = filter else {
        return (None, None);
    };
    let mut parts = vec![];
    crate::expr::conjuncts(f, &mut parts);
    let (mut pushed, mut kept) = (vec![], vec![]);
    for p in parts {
        // The shape is what is offered; placeholders stand in for the constants.
        let shape = convert(
            &p,
            &mut |_| Ok(quarry_common::Value::Null),
            &plain_text(table),
        );
        match shape {
            Ok(Some(pred)) if table.handle.pushdown(&pred) == Support::Exact => pushed.push(p),
            _ => kept.push(p),
        }
    }
    (crate::expr::and_all(pushed), crate::expr::and_all(kept))
}

/// The rows of `table` its engine expects to pass the conjuncts of `filter` whose
/// constants are literals — a column table's only those it takes (it counts them on its
/// encoded chunks), a row table's any (it checks them on a sample of its rows) — and
/// whether other conjuncts remain; None when there are no such conjuncts or the engine
/// cannot tell (the planner then guesses).
pub(crate) fn engine_estimate(table: &TableEntry, filter: &Expr) -> Option<(f64, bool)> {
    let mut parts = vec![];
    crate::expr::conjuncts(filter.clone(), &mut parts);
    let (mut preds, mut rest) = (vec![], false);
    for p in &parts {
        let literal = &mut |k: &Expr| match k {
            Expr::Lit(v) => Ok(v.clone()),
            _ => Err(quarry_common::Error::internal("not a literal")),
        };
        match convert(p, literal, &plain_text(table)) {
            Ok(Some(pred))
                if !table.columnar() || table.handle.pushdown(&pred) == Support::Exact =>
            {
                preds.push(pred)
            }
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

/// All of `filter` in the engine's form, its constants evaluated, for an engine that
/// checks whatever condition a scan hands it while it makes vectors
/// (`Table::scan_columns`); None when a conjunct has no such form, or conditions may not
/// go to engines, or a subquery is among the constants (were the engine to give up, the
/// executor would run it a second time).
pub(crate) fn whole(table: &TableEntry, filter: &Expr, ctx: &ExecCtx) -> Result<Option<Pred>> {
    let mut subquery = false;
    filter.walk(&mut |e| subquery |= matches!(e, Expr::ScalarSub(_)));
    if !ctx.pushdown || subquery {
        return Ok(None);
    }
    convert(filter, &mut |k| k.eval(&[], ctx), &plain_text(table))
}

/// The conjuncts of `filter` in the engine's form (constants evaluated; none with a
/// subquery), for an engine that checks whatever condition a scan hands it, and the
/// conjuncts left for the executor to check.
pub(crate) fn engine_part(
    table: &TableEntry,
    filter: &Expr,
    ctx: &ExecCtx,
) -> Result<(Option<Pred>, Option<Expr>)> {
    let mut parts = vec![];
    crate::expr::conjuncts(filter.clone(), &mut parts);
    let (mut preds, mut kept) = (vec![], vec![]);
    for p in parts {
        match whole(table, &p, ctx)? {
            Some(pred) => preds.push(pred),
            None => kept.push(p),
        }
    }
    Ok((Pred::all(preds), crate::expr::and_all(kept)))
}

/// Where a scan's pushed conjuncts are evaluated this execution: the engine's condition,
/// or — pushdown switched off — the expression the executor checks itself.
pub(crate) fn route<'e>(
    pushed: Option<&'e Expr>,
    ctx: &ExecCtx,
) -> Result<(Option<Pred>, Option<&'e Expr>)> {
    match pushed {
        // `split` pushed only what `plain_text` allowed.
        Some(p) if ctx.pushdown => match convert(p, &mut |k| k.eval(&[], ctx), &|_| true)? {
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
