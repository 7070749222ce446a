//! A scan's condition split for the record walk: each conjunct is decided as soon as the
//! walk has read the cells it needs, so a record that fails on an early column is not
//! walked further; a comparison of an integer, narrow DECIMAL or DATE column with a
//! constant becomes a range of the cell's raw number, checked without building a value;
//! and a conjunct on one text column alone is marked to be decided on the cell's text.
//!
//! Owns that split and those ranges only. The meaning of a condition is [`Pred::eval`]'s
//! (`Value::sql_cmp` for comparisons): a range is made only where it says exactly what
//! `sql_cmp` would, and everything else stays a `Pred` checked on decoded values.
//! Cell framing and reading are `codec`'s; the walk is `walk`'s.

use quarry_common::{SqlType, TypeKind, Value};
use quarry_storage_api::{CmpOp, ColumnSchema, Pred};

/// How a range test reads its column's cell as a number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Number {
    /// An integer column's value (not BIGINT UNSIGNED).
    Int,
    /// A DECIMAL(p ≤ 38) column's mantissa at the column's scale.
    Decimal,
    /// A DATE as year << 16 | month << 8 | day (ordered as dates are).
    Date,
}

/// The cell of `col`, read as `number`, lies in `lo..=hi` (never true for NULL; an
/// empty range when `lo > hi`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CellRange {
    pub(crate) col: usize,
    pub(crate) number: Number,
    pub(crate) lo: i128,
    pub(crate) hi: i128,
}

/// One conjunct of a scan's condition, and the range that says exactly what it does
/// where there is one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Conjunct {
    pub(crate) pred: Pred,
    pub(crate) range: Option<CellRange>,
    /// It reads one text column only: it can be decided on the cell's text in place
    /// (`Pred::eval_str`).
    pub(crate) text: Option<usize>,
}

/// The conjuncts of `pred` (a top-level AND is split, nested ones too).
pub(crate) fn split(pred: &Pred, cols: &[ColumnSchema]) -> Vec<Conjunct> {
    let mut parts = Vec::new();
    flatten(pred, &mut parts);
    parts
        .into_iter()
        .map(|p| Conjunct {
            pred: p.clone(),
            range: range_of(p, cols),
            text: match p.columns()[..] {
                [c] if cols.get(c).is_some_and(is_text) => Some(c),
                _ => None,
            },
        })
        .collect()
}

/// Whether the cells of `c` decode to `Value::Str` (`codec::cell_value`).
fn is_text(c: &ColumnSchema) -> bool {
    matches!(
        c.ty.kind,
        TypeKind::Char | TypeKind::VarChar | TypeKind::Text
    )
}

fn flatten<'p>(pred: &'p Pred, out: &mut Vec<&'p Pred>) {
    match pred {
        Pred::And(v) => v.iter().for_each(|p| flatten(p, out)),
        p => out.push(p),
    }
}

/// How the cells of `c` read as a number, if they do.
fn number_of(c: &ColumnSchema) -> Option<(Number, u8)> {
    let ty = &c.ty;
    match ty.kind {
        TypeKind::BigInt if ty.unsigned => None,
        k if SqlType::new(k).is_integer() => Some((Number::Int, 0)),
        TypeKind::Decimal if !ty.wide_decimal() => Some((Number::Decimal, ty.scale)),
        TypeKind::Date => Some((Number::Date, 0)),
        _ => None,
    }
}

/// The packed number of a date, as [`Number::Date`] reads cells.
pub(crate) fn packed_date(year: u16, month: u8, day: u8) -> i128 {
    (year as i128) << 16 | (month as i128) << 8 | day as i128
}

/// A constant compared with a column read as `number` at `scale`: the floor of its value
/// in the column's units, and whether it is exactly that (None when `sql_cmp` would not
/// compare the two as numbers of that kind, or the units overflow).
fn in_units(v: &Value, number: Number, scale: u8) -> Option<(i128, bool)> {
    let (m, s) = match (number, v) {
        (Number::Date, Value::Date(d)) => return Some((packed_date(d.year, d.month, d.day), true)),
        (Number::Date, _) => return None,
        (_, Value::Int(i)) => (*i as i128, 0u8),
        (_, Value::UInt(u)) => (*u as i128, 0),
        (_, Value::Decimal(d)) => (d.mantissa.to_i128()?, d.scale),
        _ => return None,
    };
    if s <= scale {
        let f = 10i128.checked_pow((scale - s) as u32)?;
        Some((m.checked_mul(f)?, true))
    } else {
        let d = 10i128.checked_pow((s - scale) as u32)?;
        Some((m.div_euclid(d), m.rem_euclid(d) == 0))
    }
}

/// `x op c` over whole units `x`, for `c` given as (floor, exact): the range of `x` it
/// holds for.
fn bounds(op: CmpOp, (floor, exact): (i128, bool)) -> Option<(i128, i128)> {
    let up = |f: i128| f.checked_add(1);
    Some(match op {
        CmpOp::Eq if exact => (floor, floor),
        CmpOp::Eq => (1, 0),
        CmpOp::Lt if exact => (i128::MIN, floor.checked_sub(1)?),
        CmpOp::Lt | CmpOp::Le => (i128::MIN, floor),
        CmpOp::Gt => (up(floor)?, i128::MAX),
        CmpOp::Ge if exact => (floor, i128::MAX),
        CmpOp::Ge => (up(floor)?, i128::MAX),
        CmpOp::Ne | CmpOp::NullSafeEq => return None,
    })
}

fn range_of(p: &Pred, cols: &[ColumnSchema]) -> Option<CellRange> {
    let col = p.column()?;
    let (number, scale) = number_of(cols.get(col)?)?;
    let units = |v: &Value| in_units(v, number, scale);
    let (lo, hi) = match p {
        Pred::Cmp { op, value, .. } => bounds(*op, units(value)?)?,
        Pred::Between { lo, hi, .. } => (
            bounds(CmpOp::Ge, units(lo)?)?.0,
            bounds(CmpOp::Le, units(hi)?)?.1,
        ),
        _ => return None,
    };
    Some(CellRange {
        col,
        number,
        lo,
        hi,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use quarry_common::fuzz::Rng;
    use quarry_common::{Date, Decimal};

    fn col(ty: SqlType) -> ColumnSchema {
        ColumnSchema {
            name: "c".into(),
            ty,
            nullable: true,
            columnar: false,
        }
    }

    /// The cell value of a column read as `number` at `scale` whose raw number is `x`.
    fn value_of(number: Number, scale: u8, x: i128) -> Value {
        match number {
            Number::Int => Value::Int(x as i64),
            Number::Decimal => Value::Decimal(Decimal::new(x, scale)),
            Number::Date => Value::Date(Date {
                year: (x >> 16) as u16,
                month: (x >> 8) as u8,
                day: x as u8,
            }),
        }
    }

    fn constant(rng: &mut Rng, number: Number) -> Value {
        match (number, rng.below(4)) {
            (Number::Date, _) => Value::Date(Date {
                year: 1990 + rng.below(4) as u16,
                month: rng.below(13) as u8,
                day: rng.below(32) as u8,
            }),
            (_, 0) => Value::Int(rng.below(41) as i64 - 20),
            (_, 1) => Value::UInt(rng.below(20) as u64),
            (_, 2) => Value::Decimal(Decimal::new(
                rng.below(4001) as i128 - 2000,
                rng.below(5) as u8,
            )),
            _ => Value::Str("3".into()),
        }
    }

    /// Every range made decides each value as `Pred::eval_value` does.
    #[test]
    fn ranges_agree_with_the_value_comparison() {
        let mut rng = Rng::new(11);
        let types = [
            (SqlType::INT, Number::Int, 0u8),
            (SqlType::decimal(10, 2), Number::Decimal, 2),
            (SqlType::decimal(6, 0), Number::Decimal, 0),
            (SqlType::new(TypeKind::Date), Number::Date, 0),
        ];
        let ops = &CmpOp::ALL[..6];
        let mut made = 0;
        for _ in 0..4_000 {
            let (ty, number, scale) = types[rng.below(types.len())];
            let cols = [col(ty)];
            let pred = if rng.below(3) == 0 {
                Pred::Between {
                    col: 0,
                    lo: constant(&mut rng, number),
                    hi: constant(&mut rng, number),
                }
            } else {
                Pred::Cmp {
                    col: 0,
                    op: ops[rng.below(ops.len())],
                    value: constant(&mut rng, number),
                }
            };
            let [conj] = &split(&pred, &cols)[..] else {
                panic!("one conjunct")
            };
            assert_eq!(conj.pred, pred);
            let Some(CellRange {
                lo, hi, number: n, ..
            }) = &conj.range
            else {
                continue;
            };
            assert_eq!(*n, number);
            made += 1;
            for _ in 0..60 {
                let x = match number {
                    Number::Date => packed_date(
                        1989 + rng.below(6) as u16,
                        rng.below(13) as u8,
                        rng.below(32) as u8,
                    ),
                    _ => rng.below(6001) as i128 - 3000,
                };
                let want = pred.eval_value(&value_of(number, scale, x)) == Some(true);
                assert_eq!(*lo <= x && x <= *hi, want, "{pred:?} at {x}");
            }
            assert_eq!(pred.eval_value(&Value::Null), None);
        }
        assert!(made > 1_000, "ranges made: {made}");
    }

    #[test]
    fn conjuncts_are_split_and_the_rest_kept_as_conditions() {
        let cols = [col(SqlType::INT), col(SqlType::varchar(4))];
        let lt = Pred::Cmp {
            col: 0,
            op: CmpOp::Lt,
            value: Value::Int(5),
        };
        let like = Pred::Like {
            col: 1,
            pattern: "a%".into(),
            escape: '\\',
        };
        let ne = Pred::Cmp {
            col: 0,
            op: CmpOp::Ne,
            value: Value::Int(2),
        };
        let pred = Pred::And(vec![lt.clone(), Pred::And(vec![like.clone(), ne.clone()])]);
        let plain = |pred: &Pred| Conjunct {
            pred: pred.clone(),
            range: None,
            text: None,
        };
        assert_eq!(
            split(&pred, &cols),
            vec![
                Conjunct {
                    pred: lt,
                    range: Some(CellRange {
                        col: 0,
                        number: Number::Int,
                        lo: i128::MIN,
                        hi: 4
                    }),
                    text: None,
                },
                Conjunct {
                    text: Some(1),
                    ..plain(&like)
                },
                plain(&ne),
            ]
        );
        // BIGINT UNSIGNED and a string constant beside a number stay conditions.
        let mut unsigned = SqlType::BIGINT;
        unsigned.unsigned = true;
        let p = Pred::Cmp {
            col: 0,
            op: CmpOp::Eq,
            value: Value::Int(1),
        };
        assert_eq!(split(&p, &[col(unsigned)]), vec![plain(&p)]);
        let s = Pred::Cmp {
            col: 0,
            op: CmpOp::Eq,
            value: Value::Str("1".into()),
        };
        assert_eq!(
            split(&s, &cols),
            vec![plain(&s)],
            "an integer column is not text"
        );
    }
}
