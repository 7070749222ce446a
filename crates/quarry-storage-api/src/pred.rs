//! Conditions the planner offers an engine (filter pushdown), and what they mean.
//!
//! A [`Pred`] is a `WHERE` conjunct over one table's columns with its constants already
//! evaluated. Its meaning is SQL's three-valued one, exactly as the executor evaluates the
//! expression it came from (`Value::sql_cmp` for comparisons, the collation's LIKE), so an
//! engine that answers [`Support::Exact`] returns the same rows the executor would keep.
//! [`Pred::eval_value`] is that meaning for one column value: engines working on encoded
//! data (dictionary codes, zone maps) use it to decide per distinct value.

use std::cmp::Ordering;
use std::sync::Arc;

use quarry_common::compiled_like::like_plain;
use quarry_common::value::collate_cmp;
use quarry_common::Value;

use crate::KeySet;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// `<=>`: NULL-safe equality, never unknown.
    NullSafeEq,
}

impl CmpOp {
    /// Every operator, `<=>` last.
    pub const ALL: [CmpOp; 7] = [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
        CmpOp::NullSafeEq,
    ];

    /// The operator with its operands swapped (`5 < c` is `c > 5`).
    pub fn flipped(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::Le => CmpOp::Ge,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::Ge => CmpOp::Le,
            other => other,
        }
    }
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "<>",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::NullSafeEq => "<=>",
        }
    }
}

/// A pushed condition. `None` from an evaluation is SQL's unknown (NULL).
#[derive(Debug, Clone, PartialEq)]
pub enum Pred {
    And(Vec<Pred>),
    Or(Vec<Pred>),
    Not(Box<Pred>),
    /// `column op value`.
    Cmp {
        col: usize,
        op: CmpOp,
        value: Value,
    },
    /// `column IN (values)`.
    In {
        col: usize,
        values: Vec<Value>,
    },
    /// `column BETWEEN lo AND hi`.
    Between {
        col: usize,
        lo: Value,
        hi: Value,
    },
    /// `column LIKE pattern ESCAPE escape`.
    Like {
        col: usize,
        pattern: String,
        escape: char,
    },
    /// `column IS NULL`.
    IsNull {
        col: usize,
    },
    /// An integer column's value is one of a hash join's build keys (a runtime filter).
    /// True for values that are no integer (the join decides those), never for NULL;
    /// an engine may ignore it, or stop checking once the set is not worth it.
    InKeys {
        col: usize,
        keys: Arc<KeySet>,
    },
}

/// An engine's answer to an offered condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// The engine returns exactly the rows for which the condition is true.
    Exact,
    /// The engine may return extra rows; the caller checks again.
    Inexact,
    /// The engine ignores it.
    Unsupported,
}

/// A column's cell as a leaf sees it: a value, or a string not made into one.
#[derive(Clone, Copy)]
enum Cell<'a> {
    Value(&'a Value),
    Str(&'a str),
}

impl Cell<'_> {
    fn is_null(self) -> bool {
        matches!(self, Cell::Value(Value::Null))
    }

    /// `Value::sql_cmp` of the cell with `x`.
    fn cmp(self, x: &Value) -> Option<Ordering> {
        match (self, x) {
            (Cell::Value(v), x) => v.sql_cmp(x),
            (Cell::Str(s), Value::Str(k)) => Some(collate_cmp(s, k)),
            (Cell::Str(_), Value::Null) => None,
            (Cell::Str(s), x) => Value::Str(s.to_owned()).sql_cmp(x),
        }
    }

    /// The text LIKE matches.
    fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Cell::Value(v) => v.as_str_lossy(),
            Cell::Str(s) => std::borrow::Cow::Borrowed(s),
        }
    }
}

fn and3(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

fn or3(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (Some(false), Some(false)) => Some(false),
        _ => None,
    }
}

impl Pred {
    /// The conjunction of `parts`: None when there are none, the one when it is alone.
    pub fn all(mut parts: Vec<Pred>) -> Option<Pred> {
        match parts.len() {
            0 => None,
            1 => parts.pop(),
            _ => Some(Pred::And(parts)),
        }
    }

    /// The column a leaf tests (None for AND/OR/NOT).
    pub fn column(&self) -> Option<usize> {
        match self {
            Pred::Cmp { col, .. }
            | Pred::In { col, .. }
            | Pred::Between { col, .. }
            | Pred::Like { col, .. }
            | Pred::IsNull { col }
            | Pred::InKeys { col, .. } => Some(*col),
            _ => None,
        }
    }

    /// Every column the condition reads, in ascending order without repeats.
    pub fn columns(&self) -> Vec<usize> {
        let mut out = vec![];
        self.visit_leaves(&mut |p| out.extend(p.column()));
        out.sort_unstable();
        out.dedup();
        out
    }

    pub fn visit_leaves(&self, f: &mut dyn FnMut(&Pred)) {
        match self {
            Pred::And(v) | Pred::Or(v) => v.iter().for_each(|p| p.visit_leaves(f)),
            Pred::Not(p) => p.visit_leaves(f),
            leaf => f(leaf),
        }
    }

    /// A leaf's truth for its column holding `v` (AND/OR/NOT: unknown; use `eval`).
    pub fn eval_value(&self, v: &Value) -> Option<bool> {
        self.decide(Cell::Value(v))
    }

    /// [`Pred::eval`] of a condition that reads one column only, on a row where that
    /// column holds the string `s`, without making the value: a string beside a string
    /// constant is compared in place.
    pub fn eval_str(&self, s: &str) -> Option<bool> {
        self.combine(&|leaf| leaf.decide(Cell::Str(s)))
    }

    /// AND, OR and NOT over the truths `leaf` gives the leaves, in SQL's three values,
    /// stopping at the first leaf that decides an AND or an OR.
    fn combine(&self, leaf: &impl Fn(&Pred) -> Option<bool>) -> Option<bool> {
        match self {
            Pred::And(v) => v
                .iter()
                .try_fold(Some(true), |acc, p| match and3(acc, p.combine(leaf)) {
                    Some(false) => Err(()),
                    r => Ok(r),
                })
                .unwrap_or(Some(false)),
            Pred::Or(v) => v
                .iter()
                .try_fold(Some(false), |acc, p| match or3(acc, p.combine(leaf)) {
                    Some(true) => Err(()),
                    r => Ok(r),
                })
                .unwrap_or(Some(true)),
            Pred::Not(p) => p.combine(leaf).map(|b| !b),
            l => leaf(l),
        }
    }

    fn decide(&self, v: Cell<'_>) -> Option<bool> {
        let cmp = |x: &Value| v.cmp(x);
        match self {
            Pred::Cmp { op, value, .. } => {
                if *op == CmpOp::NullSafeEq {
                    return Some(match (v.is_null(), value.is_null()) {
                        (true, true) => true,
                        (false, false) => cmp(value) == Some(Ordering::Equal),
                        _ => false,
                    });
                }
                if v.is_null() || value.is_null() {
                    return None;
                }
                let o = cmp(value).unwrap_or(Ordering::Equal);
                Some(match op {
                    CmpOp::Eq => o == Ordering::Equal,
                    CmpOp::Ne => o != Ordering::Equal,
                    CmpOp::Lt => o == Ordering::Less,
                    CmpOp::Le => o != Ordering::Greater,
                    CmpOp::Gt => o == Ordering::Greater,
                    CmpOp::Ge => o != Ordering::Less,
                    CmpOp::NullSafeEq => unreachable!(),
                })
            }
            Pred::In { values, .. } => {
                if v.is_null() {
                    return None;
                }
                let mut saw_null = false;
                for x in values {
                    match cmp(x) {
                        Some(Ordering::Equal) => return Some(true),
                        None => saw_null = true,
                        _ => {}
                    }
                }
                if saw_null {
                    None
                } else {
                    Some(false)
                }
            }
            Pred::Between { lo, hi, .. } => and3(
                cmp(lo).map(|o| o != Ordering::Less),
                cmp(hi).map(|o| o != Ordering::Greater),
            ),
            Pred::Like {
                pattern, escape, ..
            } => {
                if v.is_null() {
                    return None;
                }
                Some(like_plain(&v.text(), pattern, *escape))
            }
            Pred::IsNull { .. } => Some(v.is_null()),
            Pred::InKeys { keys, .. } => match v {
                Cell::Value(Value::Null) => None,
                Cell::Value(Value::Int(k)) => Some(keys.contains(*k)),
                _ => Some(true),
            },
            Pred::And(_) | Pred::Or(_) | Pred::Not(_) => None,
        }
    }

    /// The condition's truth for a whole row.
    pub fn eval(&self, row: &[Value]) -> Option<bool> {
        self.combine(&|leaf| leaf.eval_value(leaf.column().and_then(|c| row.get(c))?))
    }

    /// SQL-like text for EXPLAIN, naming columns through `name`.
    pub fn display(&self, name: &dyn Fn(usize) -> String) -> String {
        let lit = |v: &Value| match v {
            Value::Null => "NULL".to_string(),
            Value::Str(s) => format!("'{}'", s.replace('\'', "''")),
            other => other.as_str_lossy().into_owned(),
        };
        let join = |v: &[Pred], sep: &str| {
            v.iter()
                .map(|p| format!("({})", p.display(name)))
                .collect::<Vec<_>>()
                .join(sep)
        };
        match self {
            Pred::And(v) => join(v, " and "),
            Pred::Or(v) => join(v, " or "),
            Pred::Not(p) => format!("not({})", p.display(name)),
            Pred::Cmp { col, op, value } => {
                format!("{} {} {}", name(*col), op.symbol(), lit(value))
            }
            Pred::In { col, values } => format!(
                "{} in ({})",
                name(*col),
                values.iter().map(lit).collect::<Vec<_>>().join(",")
            ),
            Pred::Between { col, lo, hi } => {
                format!("{} between {} and {}", name(*col), lit(lo), lit(hi))
            }
            Pred::Like { col, pattern, .. } => {
                format!("{} like {}", name(*col), lit(&Value::Str(pattern.clone())))
            }
            Pred::IsNull { col } => format!("{} is null", name(*col)),
            Pred::InKeys { col, keys } => format!("{} in <{} join keys>", name(*col), keys.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_in_place_is_decided_as_its_value() {
        let consts = [
            Value::Str("abc".into()),
            Value::Str("ABC ".into()),
            Value::Str("Äb".into()),
            Value::Str("10".into()),
            Value::Int(10),
            Value::Decimal(quarry_common::Decimal::new(95, 1)),
            Value::Null,
        ];
        let mut preds = vec![];
        for (i, a) in consts.iter().enumerate() {
            for op in CmpOp::ALL {
                preds.push(Pred::Cmp {
                    col: 0,
                    op,
                    value: a.clone(),
                });
            }
            let b = consts[(i + 2) % consts.len()].clone();
            preds.push(Pred::In {
                col: 0,
                values: vec![a.clone(), b.clone()],
            });
            preds.push(Pred::Between {
                col: 0,
                lo: a.clone(),
                hi: b,
            });
        }
        for pattern in ["a%", "%C", "_b", "äB"] {
            preds.push(Pred::Like {
                col: 0,
                pattern: pattern.into(),
                escape: '\\',
            });
        }
        let whole: Vec<Pred> = preds
            .iter()
            .flat_map(|p| {
                [
                    Pred::Not(Box::new(p.clone())),
                    Pred::Or(vec![p.clone(), preds[3].clone()]),
                    Pred::And(vec![p.clone(), preds[9].clone()]),
                ]
            })
            .collect();
        for s in ["abc", "abc  ", "ÄB", "äb", "10", "9.5", "", "b"] {
            for p in preds.iter().chain(&whole) {
                let row = [Value::Str(s.into())];
                assert_eq!(p.eval_str(s), p.eval(&row), "{p:?} on {s:?}");
            }
        }
    }

    fn cmp(op: CmpOp, v: Value) -> Pred {
        Pred::Cmp {
            col: 0,
            op,
            value: v,
        }
    }

    #[test]
    fn three_valued_logic_matches_sql() {
        let row = [Value::Null, Value::Int(5)];
        let is5 = Pred::Cmp {
            col: 1,
            op: CmpOp::Eq,
            value: Value::Int(5),
        };
        let null_eq = cmp(CmpOp::Eq, Value::Int(1));
        assert_eq!(null_eq.eval(&row), None);
        assert_eq!(Pred::Not(Box::new(null_eq.clone())).eval(&row), None);
        assert_eq!(
            Pred::And(vec![null_eq.clone(), is5.clone()]).eval(&row),
            None
        );
        assert_eq!(
            Pred::Or(vec![null_eq.clone(), is5.clone()]).eval(&row),
            Some(true)
        );
        assert_eq!(
            Pred::And(vec![null_eq, Pred::Not(Box::new(is5))]).eval(&row),
            Some(false)
        );
        assert_eq!(
            cmp(CmpOp::NullSafeEq, Value::Null).eval(&row),
            Some(true),
            "NULL <=> NULL"
        );
        assert_eq!(Pred::IsNull { col: 0 }.eval(&row), Some(true));
    }

    #[test]
    fn leaves_use_sql_comparison_and_collation() {
        let s = |x: &str| Value::Str(x.into());
        assert_eq!(cmp(CmpOp::Eq, s("abc")).eval_value(&s("ABC")), Some(true));
        assert_eq!(
            cmp(CmpOp::Lt, Value::Int(10)).eval_value(&s("9")),
            Some(true)
        );
        let inl = Pred::In {
            col: 0,
            values: vec![Value::Int(1), Value::Null],
        };
        assert_eq!(inl.eval_value(&Value::Int(1)), Some(true));
        assert_eq!(inl.eval_value(&Value::Int(2)), None);
        let b = Pred::Between {
            col: 0,
            lo: Value::Int(1),
            hi: Value::Null,
        };
        assert_eq!(b.eval_value(&Value::Int(0)), Some(false));
        assert_eq!(b.eval_value(&Value::Int(2)), None);
        let l = Pred::Like {
            col: 0,
            pattern: "ab%".into(),
            escape: '\\',
        };
        assert_eq!(l.eval_value(&s("ABx")), Some(true));
        assert_eq!(l.eval_value(&Value::Null), None);
    }
}
