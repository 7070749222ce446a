//! Which collation a comparison of strings uses, as MariaDB decides it: every string
//! expression has a collation and a coercibility (`COLLATE` is EXPLICIT, a column
//! IMPLICIT, a literal COERCIBLE, …), and a comparison takes its operands' collation by
//! the aggregation rules — the lower coercibility wins; of two at the same level a binary
//! or `_bin` collation of the same character set, or the Unicode set over another — or
//! fails with 1267.
//!
//! Plain string values compare as utf8mb4_general_ci ([`Collation::is_plain`]); a
//! comparison under that collation is left as it is, so the optimizer and the engines see
//! columns and constants. Under another collation each operand becomes its sort key
//! (`Expr::SortKey`) and a LIKE's subject carries the collation (`Expr::Collate`), which
//! also keeps columns of other collations away from index ranges and engine pushdown
//! built for plain comparisons ([`index_view`] lets an index see through keys of its own
//! collation). Sorts, groupings and DISTINCT get their collations here too.
//!
//! Owns the derivation and these rewrites; not the weights (`quarry_common::collation`)
//! nor the evaluation (`expr.rs`).

use quarry_common::{Collation, Error, Result, SqlType, TypeKind, Value};

use super::{Binder, ScopeCol};
use quarry_executor::expr::{BinOp, Expr};

/// How readily an expression's collation gives way to another's (lower wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Coercibility {
    Explicit,
    Implicit,
    SysConst,
    Coercible,
}

impl Coercibility {
    fn name(self) -> &'static str {
        match self {
            Coercibility::Explicit => "EXPLICIT",
            Coercibility::Implicit => "IMPLICIT",
            Coercibility::SysConst => "SYSCONST",
            Coercibility::Coercible => "COERCIBLE",
        }
    }
}

/// A string expression's collation and coercibility.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Derivation {
    pub coll: Collation,
    pub how: Coercibility,
}

/// The collation a string of type `t` has (None: not a string).
pub(crate) fn of_type(t: SqlType) -> Option<Collation> {
    if t.is_binary() {
        Some(Collation::Binary)
    } else if t.is_string() {
        Some(t.coll)
    } else {
        None
    }
}

/// The collation two operands of `op` are compared under, or 1267.
pub fn aggregate(a: Derivation, b: Derivation, op: &str) -> Result<Derivation> {
    if a.coll == b.coll {
        return Ok(Derivation {
            coll: a.coll,
            how: a.how.min(b.how),
        });
    }
    if a.how != b.how {
        return Ok(if a.how < b.how { a } else { b });
    }
    if a.how != Coercibility::Explicit {
        let wins = |x: Derivation, y: Derivation| {
            x.coll == Collation::Binary
                || (x.coll.charset() == y.coll.charset() && x.coll.compares_bytes())
                || (x.coll.is_unicode() && !y.coll.is_unicode())
                || (x.coll.charset() == "utf8mb4" && y.coll.charset() == "utf8mb3")
        };
        if wins(a, b) {
            return Ok(a);
        }
        if wins(b, a) {
            return Ok(b);
        }
    }
    Err(Error::new(
        1267,
        format!(
            "Illegal mix of collations ({},{}) and ({},{}) for operation '{op}'",
            a.coll.name(),
            a.how.name(),
            b.coll.name(),
            b.how.name()
        ),
    ))
}

/// The collation of a result that is one of two strings typed `a` and `b` (a UNION's
/// column, a CASE): as two columns aggregate, the first's where they would not mix
/// (comparing them is 1267 where it matters).
pub(crate) fn unify(a: SqlType, b: SqlType) -> Collation {
    let implicit = |t: SqlType| {
        of_type(t)
            .filter(|c| *c != Collation::Binary)
            .map(|coll| Derivation {
                coll,
                how: Coercibility::Implicit,
            })
    };
    match (implicit(a), implicit(b)) {
        (Some(x), Some(y)) => aggregate(x, y, "").map_or(x.coll, |d| d.coll),
        (Some(x), None) => x.coll,
        (None, Some(y)) => y.coll,
        (None, None) => a.coll,
    }
}

/// `e` without `COLLATE` markers on top.
fn peel(e: Expr) -> Expr {
    match e {
        Expr::Collate(inner, _) => peel(*inner),
        other => other,
    }
}

impl Binder<'_> {
    /// `e` compared under `coll`: its sort key; under the plain collation itself, marked
    /// when it is a string of another collation (a column's, which the comparison
    /// overrides: an index keyed by the column's collation must not serve it).
    fn under(&self, e: Expr, coll: Collation) -> Result<Expr> {
        let e = peel(e);
        if !coll.is_plain() {
            return Ok(Expr::SortKey(Box::new(e), coll));
        }
        Ok(match self.derivation(&e, self.scope())? {
            Some(d) if !d.coll.is_plain() => Expr::Collate(Box::new(e), coll),
            _ => e,
        })
    }

    fn scope(&self) -> &[ScopeCol] {
        self.levels.last().map(|l| l.cols.as_slice()).unwrap_or(&[])
    }

    /// The collation and coercibility of `e` over `cols` when it is a string; None for
    /// other values and for what takes the other side's collation (NULL, placeholders,
    /// variables).
    pub(crate) fn derivation(&self, e: &Expr, cols: &[ScopeCol]) -> Result<Option<Derivation>> {
        let implicit = |t: SqlType| {
            of_type(t).map(|coll| Derivation {
                coll,
                how: Coercibility::Implicit,
            })
        };
        Ok(match e {
            Expr::Collate(_, c) => Some(Derivation {
                coll: *c,
                how: Coercibility::Explicit,
            }),
            Expr::Col(_)
            | Expr::AggRef(_)
            | Expr::WinRef(_)
            | Expr::ScalarSub(_)
            | Expr::Cast(..) => implicit(self.infer(e, cols).0),
            Expr::Outer(up, i) => self
                .levels
                .len()
                .checked_sub(1 + up)
                .and_then(|l| self.levels[l].cols.get(*i))
                .and_then(|c| implicit(c.col.ty)),
            Expr::Lit(Value::Str(_)) => Some(Derivation {
                coll: Collation::Utf8mb4GeneralCi,
                how: Coercibility::Coercible,
            }),
            Expr::Lit(Value::Bytes(_)) => Some(Derivation {
                coll: Collation::Binary,
                how: Coercibility::Coercible,
            }),
            Expr::SysVar(_) => Some(Derivation {
                coll: Collation::Utf8mb4GeneralCi,
                how: Coercibility::SysConst,
            }),
            Expr::Func(..) | Expr::Case { .. } => {
                let t = self.infer(e, cols).0;
                if !t.is_string() {
                    return Ok(None);
                }
                if t.is_binary() {
                    return Ok(implicit(t));
                }
                // Arguments that carry the collation they are compared under (above)
                // count as what they were; NULLIF gives its first one's.
                if let Expr::Func(name, args) = e {
                    let compared = self.compared_arguments(args, cols)?;
                    if name == "NULLIF" {
                        return match (args.first(), compared) {
                            (Some(Expr::Collate(first, _)), Some(_)) => {
                                self.derivation(first, cols)
                            }
                            (Some(first), _) => self.derivation(first, cols),
                            (None, _) => Ok(None),
                        };
                    }
                    if compared.is_some() {
                        return Ok(compared);
                    }
                }
                // A string function's result has its string arguments' collation.
                let (name, parts): (&str, Vec<&Expr>) = match e {
                    Expr::Func(n, args) if n == "IF" => ("if", args.iter().skip(1).collect()),
                    Expr::Func(n, args) => (n.as_str(), args.iter().collect()),
                    Expr::Case { whens, else_, .. } => (
                        "case",
                        whens
                            .iter()
                            .map(|(_, r)| r)
                            .chain(else_.as_deref())
                            .collect(),
                    ),
                    _ => unreachable!("a function or a CASE"),
                };
                let mut acc: Option<Derivation> = None;
                for p in parts {
                    if let Some(d) = self.derivation(p, cols)? {
                        acc = Some(match acc {
                            None => d,
                            Some(x) => aggregate(x, d, &name.to_ascii_lowercase())?,
                        });
                    }
                }
                acc.or(Some(Derivation {
                    coll: Collation::Utf8mb4GeneralCi,
                    how: Coercibility::Coercible,
                }))
            }
            _ => None,
        })
    }

    /// When every one of `args` carries the same collation and it is the one their own
    /// derivations aggregate to (the binder put it there), that derivation.
    fn compared_arguments(&self, args: &[Expr], cols: &[ScopeCol]) -> Result<Option<Derivation>> {
        let mut marked = None;
        for a in args {
            match a {
                Expr::Collate(_, c) if marked.is_none() || marked == Some(*c) => marked = Some(*c),
                _ => return Ok(None),
            }
        }
        let mut acc: Option<Derivation> = None;
        for a in args {
            let Expr::Collate(inner, _) = a else {
                return Ok(None);
            };
            if let Some(d) = self.derivation(inner, cols)? {
                acc = match acc {
                    None => Some(d),
                    Some(x) => match aggregate(x, d, "") {
                        Ok(y) => Some(y),
                        Err(_) => return Ok(None),
                    },
                };
            }
        }
        Ok(acc.filter(|d| Some(d.coll) == marked))
    }

    /// The collation `operands` of the comparison `op` compare under and each one's own
    /// derivation: None when they are not all strings (a number or a date among them
    /// makes it no string comparison) or none has a collation.
    #[allow(clippy::type_complexity)]
    fn comparison(
        &self,
        operands: &[&Expr],
        op: &str,
    ) -> Result<Option<(Collation, Vec<Option<Derivation>>)>> {
        let cols = self.scope();
        let mut ds = Vec::with_capacity(operands.len());
        for e in operands {
            let neutral = matches!(
                e,
                Expr::Param(_) | Expr::UserVar(_) | Expr::InsertValue(_) | Expr::Lit(Value::Null)
            );
            let d = self.derivation(e, cols)?;
            if d.is_none() && !neutral && self.infer(e, cols).0.kind != TypeKind::Null {
                return Ok(None);
            }
            ds.push(d);
        }
        let mut acc: Option<Derivation> = None;
        for d in ds.iter().flatten() {
            acc = Some(match acc {
                None => *d,
                Some(x) => aggregate(x, *d, op)?,
            });
        }
        Ok(acc.map(|a| (a.coll, ds)))
    }

    /// Each operand of a comparison as it compares under their collation (see the
    /// module's note); the operands as they are when it is no string comparison.
    fn operands_under(&self, operands: Vec<Expr>, op: &str) -> Result<Vec<Expr>> {
        let refs: Vec<&Expr> = operands.iter().collect();
        let Some((coll, _)) = self.comparison(&refs, op)? else {
            return Ok(operands);
        };
        operands.into_iter().map(|e| self.under(e, coll)).collect()
    }

    /// A bound comparison made to compare under its operands' collation (1267 when they
    /// have none in common); other expressions as they are.
    pub(crate) fn collate_comparison(&self, e: Expr) -> Result<Expr> {
        Ok(match e {
            Expr::Bin(
                op @ (BinOp::Eq
                | BinOp::NullSafeEq
                | BinOp::Ne
                | BinOp::Lt
                | BinOp::Le
                | BinOp::Gt
                | BinOp::Ge),
                a,
                b,
            ) => {
                let mut v = self.operands_under(vec![*a, *b], op.symbol())?;
                let b = v.pop().expect("two operands");
                Expr::Bin(op, Box::new(v.pop().expect("two")), Box::new(b))
            }
            Expr::InList {
                expr,
                list,
                negated,
            } => {
                let all = std::iter::once(*expr).chain(list).collect();
                let mut v = self.operands_under(all, "in")?;
                let list = v.split_off(1);
                Expr::InList {
                    expr: Box::new(v.pop().expect("the subject")),
                    list,
                    negated,
                }
            }
            Expr::Between {
                expr,
                lo,
                hi,
                negated,
            } => {
                let mut v = self.operands_under(vec![*expr, *lo, *hi], "between")?;
                let hi = v.pop().expect("three operands");
                let lo = v.pop().expect("three");
                Expr::Between {
                    expr: Box::new(v.pop().expect("three")),
                    lo: Box::new(lo),
                    hi: Box::new(hi),
                    negated,
                }
            }
            Expr::Like {
                expr,
                pattern,
                escape,
                negated,
            } => {
                let found = self.comparison(&[&*expr, &*pattern], "like")?;
                let (expr, pattern) = match found {
                    // The plain LIKE, unless the subject is a string of another collation.
                    Some((c, _)) if c.is_plain() => (self.under(*expr, c)?, peel(*pattern)),
                    Some((c, _)) => (Expr::Collate(Box::new(peel(*expr)), c), peel(*pattern)),
                    None => (*expr, *pattern),
                };
                Expr::Like {
                    expr: Box::new(expr),
                    pattern: Box::new(pattern),
                    escape,
                    negated,
                }
            }
            Expr::Case {
                operand: Some(o),
                whens,
                else_,
            } => {
                let (conds, results): (Vec<Expr>, Vec<Expr>) = whens.into_iter().unzip();
                let all = std::iter::once(*o).chain(conds).collect();
                let mut v = self.operands_under(all, "case")?.into_iter();
                let o = v.next().expect("the operand");
                Expr::Case {
                    operand: Some(Box::new(o)),
                    whens: v.zip(results).collect(),
                    else_,
                }
            }
            // Functions that compare their arguments carry the collation on each.
            Expr::Func(name, args)
                if matches!(
                    name.as_str(),
                    "NULLIF" | "GREATEST" | "LEAST" | "STRCMP" | "FIELD"
                ) =>
            {
                let refs: Vec<&Expr> = args.iter().collect();
                match self.comparison(&refs, &name.to_ascii_lowercase())? {
                    Some((c, _)) if !c.is_plain() => Expr::Func(
                        name,
                        args.into_iter()
                            .map(|a| Expr::Collate(Box::new(peel(a)), c))
                            .collect(),
                    ),
                    _ => Expr::Func(name, args),
                }
            }
            // `x IN (SELECT y …)`: the subject carries the collation x and y compare under.
            Expr::InSub { expr, sub, negated } => {
                let col = of_type(sub.ty).map(|coll| Derivation {
                    coll,
                    how: Coercibility::Implicit,
                });
                let expr = match (self.derivation(&expr, self.scope())?, col) {
                    (Some(a), Some(b)) => match aggregate(a, b, "in")?.coll {
                        c if c.is_plain() => expr,
                        c => Box::new(Expr::Collate(Box::new(peel(*expr)), c)),
                    },
                    _ => expr,
                };
                Expr::InSub { expr, sub, negated }
            }
            other => other,
        })
    }

    /// The collation a sort or a grouping by `e` (over the current scope) must use when
    /// it is not the plain one.
    pub(crate) fn ordering_collation(&self, e: &Expr) -> Result<Option<Collation>> {
        Ok(self
            .derivation(e, self.scope())?
            .map(|d| d.coll)
            .filter(|c| !c.is_plain()))
    }
}

/// `p` as an index on columns of the collations `coll_of` gives sees it: the sort keys of
/// such a column and of the values it is compared with under that same collation become
/// the column and the values (the index keys them so), other keys stay opaque.
pub(crate) fn index_view(p: &Expr, coll_of: &dyn Fn(usize) -> Option<Collation>) -> Expr {
    let keyed_col = |e: &Expr| match e {
        Expr::SortKey(inner, k) => match **inner {
            Expr::Col(c) if coll_of(c) == Some(*k) => Some((c, *k)),
            _ => None,
        },
        _ => None,
    };
    let value = |e: &Expr, k: Collation| match e {
        Expr::SortKey(inner, k2) if *k2 == k && !matches!(**inner, Expr::Col(_)) => {
            Some((**inner).clone())
        }
        _ => None,
    };
    match p {
        Expr::Bin(op, a, b) => match (keyed_col(a), keyed_col(b)) {
            (Some((c, k)), None) => match value(b, k) {
                Some(v) => Expr::Bin(*op, Box::new(Expr::Col(c)), Box::new(v)),
                None => p.clone(),
            },
            (None, Some((c, k))) => match value(a, k) {
                Some(v) => Expr::Bin(*op, Box::new(v), Box::new(Expr::Col(c))),
                None => p.clone(),
            },
            _ if *op == BinOp::Or || *op == BinOp::And => Expr::Bin(
                *op,
                Box::new(index_view(a, coll_of)),
                Box::new(index_view(b, coll_of)),
            ),
            _ => p.clone(),
        },
        Expr::InList {
            expr,
            list,
            negated,
        } => match keyed_col(expr) {
            Some((c, k)) => {
                let vs: Option<Vec<Expr>> = list.iter().map(|e| value(e, k)).collect();
                match vs {
                    Some(list) => Expr::InList {
                        expr: Box::new(Expr::Col(c)),
                        list,
                        negated: *negated,
                    },
                    None => p.clone(),
                }
            }
            None => p.clone(),
        },
        Expr::Between {
            expr,
            lo,
            hi,
            negated,
        } => match keyed_col(expr) {
            Some((c, k)) => match (value(lo, k), value(hi, k)) {
                (Some(lo), Some(hi)) => Expr::Between {
                    expr: Box::new(Expr::Col(c)),
                    lo: Box::new(lo),
                    hi: Box::new(hi),
                    negated: *negated,
                },
                _ => p.clone(),
            },
            None => p.clone(),
        },
        _ => p.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Coercibility::*;

    fn d(coll: Collation, how: Coercibility) -> Derivation {
        Derivation { coll, how }
    }

    /// MariaDB 10.11's answers (`SELECT … WHERE a = b` over such columns and literals).
    #[test]
    fn aggregation_follows_mariadb() {
        use Collation::*;
        let pick = |a, b| aggregate(a, b, "=").map(|x| x.coll).map_err(|e| e.code);
        // Columns of one set: the _bin one wins; two _ci ones do not mix.
        assert_eq!(
            pick(d(Utf8mb4Bin, Implicit), d(Utf8mb4GeneralCi, Implicit)),
            Ok(Utf8mb4Bin)
        );
        assert_eq!(
            pick(d(Utf8mb4UnicodeCi, Implicit), d(Utf8mb4Bin, Implicit)),
            Ok(Utf8mb4Bin)
        );
        assert_eq!(
            pick(d(Utf8mb4GeneralCi, Implicit), d(Utf8mb4UnicodeCi, Implicit)),
            Err(1267)
        );
        // The Unicode set over latin1; a column over a literal; COLLATE over a column.
        assert_eq!(
            pick(d(Latin1SwedishCi, Implicit), d(Utf8mb4UnicodeCi, Implicit)),
            Ok(Utf8mb4UnicodeCi)
        );
        assert_eq!(
            pick(d(Utf8mb4GeneralCi, Coercible), d(Utf8mb4Bin, Implicit)),
            Ok(Utf8mb4Bin)
        );
        assert_eq!(
            pick(d(Utf8mb4Bin, Implicit), d(Utf8mb4GeneralCi, Explicit)),
            Ok(Utf8mb4GeneralCi)
        );
        // Two explicit ones that differ never mix, a _bin one neither.
        assert_eq!(
            pick(d(Utf8mb4GeneralCi, Explicit), d(Utf8mb4Bin, Explicit)),
            Err(1267)
        );
        let e = aggregate(
            d(Utf8mb4GeneralCi, Implicit),
            d(Utf8mb4UnicodeCi, Implicit),
            "=",
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "Illegal mix of collations (utf8mb4_general_ci,IMPLICIT) and (utf8mb4_unicode_ci,IMPLICIT) for operation '='"
        );
    }
}
