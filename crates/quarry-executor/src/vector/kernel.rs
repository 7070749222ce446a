//! Expressions compiled for vectors: a bound [`Expr`] over a scan's columns becomes a tree
//! of typed kernels, each evaluated a batch at a time. Only the shapes whose answers are
//! the row evaluator's by construction compile — columns, numeric literals, `+ - *` and
//! unary minus on integers, decimals and doubles — with the result types `expr::arith`
//! gives (an integer stays BIGINT, a decimal's scale is the larger operand's for `+ -`
//! and their sum for `*`, anything with a double is a double).
//!
//! A value the row evaluator would raise an error or a warning for (BIGINT or DECIMAL
//! overflow, a double past its range) is not computed here: the kernel gives up
//! ([`Eval::GiveUp`]) and the caller answers the whole statement through the row path,
//! which raises it exactly.
//!
//! Must not touch: aggregation (states.rs), scans and their types (quarry-storage-api's
//! `vector`).

use std::borrow::Cow;

use quarry_common::{Decimal, Value};
use quarry_storage_api::vector::arrow_array::{
    Array, ArrayRef, Decimal128Array, Float64Array, Int64Array,
};
use quarry_storage_api::vector::arrow_buffer::NullBuffer;
use quarry_storage_api::VectorType;

use crate::expr::{BinOp, Expr, UnOp};

/// The largest scale a decimal product keeps without rounding (`Decimal::checked_mul`).
const ARITH_SCALE: u8 = 38;

/// A kernel's result type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    Int,
    Dec(u8),
    F64,
    Str,
}

impl Ty {
    pub fn of(v: VectorType) -> Ty {
        match v {
            VectorType::Int => Ty::Int,
            VectorType::Decimal(s) => Ty::Dec(s),
            VectorType::Double => Ty::F64,
            VectorType::Str => Ty::Str,
        }
    }
    pub fn numeric(self) -> bool {
        self != Ty::Str
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Op {
    Add,
    Sub,
    Mul,
}

#[derive(Debug)]
pub(crate) enum Kernel {
    /// The batch's vector at this slot.
    Col(usize, Ty),
    Int(i64),
    Dec(i128, u8),
    F64(f64),
    Neg(Box<Kernel>, Ty),
    Arith(Op, Box<Kernel>, Box<Kernel>, Ty),
}

impl Kernel {
    /// `e` compiled, its columns found by `slot` (a table column → its batch slot and
    /// type); None for any shape this module does not evaluate.
    pub fn compile(e: &Expr, slot: &dyn Fn(usize) -> Option<(usize, Ty)>) -> Option<Kernel> {
        Some(match e {
            Expr::Col(c) => {
                let (s, ty) = slot(*c)?;
                Kernel::Col(s, ty)
            }
            Expr::Lit(Value::Int(i)) => Kernel::Int(*i),
            Expr::Lit(Value::Decimal(d)) => Kernel::Dec(d.mantissa.to_i128()?, d.scale),
            Expr::Lit(Value::Double(f)) => Kernel::F64(*f),
            Expr::Unary(UnOp::Neg, a) => {
                let a = Kernel::compile(a, slot)?;
                let ty = a.ty();
                if !ty.numeric() {
                    return None;
                }
                Kernel::Neg(Box::new(a), ty)
            }
            Expr::Bin(op @ (BinOp::Add | BinOp::Sub | BinOp::Mul), a, b) => {
                let op = match op {
                    BinOp::Add => Op::Add,
                    BinOp::Sub => Op::Sub,
                    _ => Op::Mul,
                };
                let (a, b) = (Kernel::compile(a, slot)?, Kernel::compile(b, slot)?);
                let ty = match (a.ty(), b.ty()) {
                    (Ty::Str, _) | (_, Ty::Str) => return None,
                    (Ty::F64, _) | (_, Ty::F64) => Ty::F64,
                    (Ty::Int, Ty::Int) => Ty::Int,
                    (x, y) => {
                        let (sa, sb) = (x.scale(), y.scale());
                        match op {
                            Op::Mul if sa + sb > ARITH_SCALE => return None,
                            Op::Mul => Ty::Dec(sa + sb),
                            _ => Ty::Dec(sa.max(sb)),
                        }
                    }
                };
                Kernel::Arith(op, Box::new(a), Box::new(b), ty)
            }
            _ => return None,
        })
    }

    pub fn ty(&self) -> Ty {
        match self {
            Kernel::Col(_, t) | Kernel::Neg(_, t) | Kernel::Arith(.., t) => *t,
            Kernel::Int(_) => Ty::Int,
            Kernel::Dec(_, s) => Ty::Dec(*s),
            Kernel::F64(_) => Ty::F64,
        }
    }

    /// The kernel's values over a batch of `rows` rows whose vectors are `cols`.
    pub fn eval<'b>(&self, cols: &'b [ArrayRef], rows: usize) -> Eval<'b> {
        match self {
            Kernel::Col(s, _) => Eval::Vals(Vals::of(&cols[*s])),
            Kernel::Int(i) => Eval::Vals(Vals::scalar(Num::Int(Side::Scalar(*i)))),
            Kernel::Dec(m, s) => Eval::Vals(Vals::scalar(Num::Dec(Side::Scalar(*m), *s))),
            Kernel::F64(f) => Eval::Vals(Vals::scalar(Num::F64(Side::Scalar(*f)))),
            Kernel::Neg(a, _) => {
                let Eval::Vals(a) = a.eval(cols, rows) else {
                    return Eval::GiveUp;
                };
                neg(a, rows)
            }
            Kernel::Arith(op, a, b, ty) => {
                let (Eval::Vals(a), Eval::Vals(b)) = (a.eval(cols, rows), b.eval(cols, rows))
                else {
                    return Eval::GiveUp;
                };
                arith(*op, a, b, *ty, rows)
            }
        }
    }
}

impl Ty {
    fn scale(self) -> u8 {
        match self {
            Ty::Dec(s) => s,
            _ => 0,
        }
    }
}

/// Values of one type: a batch's worth, or one for every row.
#[derive(Debug)]
pub(crate) enum Side<'b, T: Clone> {
    Many(Cow<'b, [T]>),
    Scalar(T),
}

impl<T: Copy> Side<'_, T> {
    #[inline]
    pub fn at(&self, i: usize) -> T {
        match self {
            Side::Many(v) => v[i],
            Side::Scalar(x) => *x,
        }
    }
}

#[derive(Debug)]
pub(crate) enum Num<'b> {
    Int(Side<'b, i64>),
    Dec(Side<'b, i128>, u8),
    F64(Side<'b, f64>),
    /// Strings (or anything else): only their NULLs are read.
    Other,
}

/// A kernel's result: values and the rows that are NULL.
#[derive(Debug)]
pub(crate) struct Vals<'b> {
    pub num: Num<'b>,
    pub nulls: Option<Cow<'b, NullBuffer>>,
}

pub(crate) enum Eval<'b> {
    Vals(Vals<'b>),
    /// A value the row path must compute (it errs or warns).
    GiveUp,
}

impl<'b> Vals<'b> {
    fn scalar(num: Num<'b>) -> Vals<'b> {
        Vals { num, nulls: None }
    }

    fn of(a: &'b ArrayRef) -> Vals<'b> {
        let any = a.as_any();
        let num = if let Some(a) = any.downcast_ref::<Int64Array>() {
            Num::Int(Side::Many(Cow::Borrowed(a.values())))
        } else if let Some(a) = any.downcast_ref::<Decimal128Array>() {
            Num::Dec(Side::Many(Cow::Borrowed(a.values())), a.scale() as u8)
        } else if let Some(a) = any.downcast_ref::<Float64Array>() {
            Num::F64(Side::Many(Cow::Borrowed(a.values())))
        } else {
            Num::Other
        };
        Vals {
            num,
            nulls: a.logical_nulls().map(Cow::Owned),
        }
    }

    #[inline]
    pub fn is_null(&self, i: usize) -> bool {
        self.nulls.as_ref().is_some_and(|n| n.is_null(i))
    }
}

fn both_nulls<'b>(a: &Vals<'b>, b: &Vals<'b>) -> Option<Cow<'b, NullBuffer>> {
    match (&a.nulls, &b.nulls) {
        (None, None) => None,
        (Some(n), None) | (None, Some(n)) => Some(n.clone()),
        (Some(x), Some(y)) => NullBuffer::union(Some(x), Some(y)).map(Cow::Owned),
    }
}

/// `f` over every row; a row where it fails gives up unless that row is NULL (its value
/// is never read).
fn map2<A: Copy, B: Copy, R: Copy + Default>(
    a: &Side<A>,
    b: &Side<B>,
    rows: usize,
    nulls: Option<&NullBuffer>,
    f: impl Fn(A, B) -> Option<R>,
) -> Option<Vec<R>> {
    let mut failed = false;
    let mut one = |r: Option<R>| match r {
        Some(r) => r,
        None => {
            failed = true;
            R::default()
        }
    };
    // One loop per shape, so the loop body is the operation alone.
    let out: Vec<R> = match (a, b) {
        (Side::Many(x), Side::Many(y)) => x[..rows]
            .iter()
            .zip(&y[..rows])
            .map(|(&p, &q)| one(f(p, q)))
            .collect(),
        (Side::Many(x), Side::Scalar(q)) => x[..rows].iter().map(|&p| one(f(p, *q))).collect(),
        (Side::Scalar(p), Side::Many(y)) => y[..rows].iter().map(|&q| one(f(*p, q))).collect(),
        (Side::Scalar(p), Side::Scalar(q)) => {
            let r = one(f(*p, *q));
            vec![r; rows]
        }
    };
    if failed
        && (0..rows).any(|i| f(a.at(i), b.at(i)).is_none() && !nulls.is_some_and(|n| n.is_null(i)))
    {
        return None;
    }
    Some(out)
}

/// A numeric side as decimal mantissas of `scale` (None: one of a row not NULL in
/// `nulls` passes i128).
fn as_dec<'b>(
    n: Num<'b>,
    scale: u8,
    rows: usize,
    nulls: Option<&NullBuffer>,
) -> Option<Side<'b, i128>> {
    let (side, from): (Side<i128>, u8) = match n {
        Num::Int(Side::Scalar(x)) => (Side::Scalar(x as i128), 0),
        Num::Int(Side::Many(v)) => (
            Side::Many(Cow::Owned(v.iter().map(|&x| x as i128).collect())),
            0,
        ),
        Num::Dec(s, from) => (s, from),
        Num::F64(_) | Num::Other => return None,
    };
    if from == scale {
        return Some(side);
    }
    let f = 10i128.checked_pow((scale - from) as u32)?;
    Some(match side {
        Side::Scalar(x) => Side::Scalar(x.checked_mul(f)?),
        Side::Many(v) => {
            let mut out = Vec::with_capacity(rows);
            for (i, &x) in v.iter().enumerate() {
                // A NULL row's value is never read: whatever it holds may not scale.
                match x.checked_mul(f) {
                    Some(y) => out.push(y),
                    None if nulls.is_some_and(|n| n.is_null(i)) => out.push(0),
                    None => return None,
                }
            }
            Side::Many(Cow::Owned(out))
        }
    })
}

/// A numeric side as doubles, each converted as `Value::to_f64` converts it.
fn as_f64<'b>(n: Num<'b>) -> Option<Side<'b, f64>> {
    let conv = |x: i128, s: u8| Decimal::new(x, s).to_f64();
    Some(match n {
        Num::F64(s) => s,
        Num::Int(Side::Scalar(x)) => Side::Scalar(x as f64),
        Num::Int(Side::Many(v)) => Side::Many(Cow::Owned(v.iter().map(|&x| x as f64).collect())),
        Num::Dec(Side::Scalar(x), s) => Side::Scalar(conv(x, s)),
        Num::Dec(Side::Many(v), s) => {
            Side::Many(Cow::Owned(v.iter().map(|&x| conv(x, s)).collect()))
        }
        Num::Other => return None,
    })
}

fn many<T: Clone>(v: Option<Vec<T>>) -> Option<Side<'static, T>> {
    v.map(|v| Side::Many(Cow::Owned(v)))
}

fn arith<'b>(op: Op, a: Vals<'b>, b: Vals<'b>, ty: Ty, rows: usize) -> Eval<'b> {
    let nulls = both_nulls(&a, &b);
    let n = nulls.as_deref();
    let num = match ty {
        Ty::Int => {
            let (Num::Int(x), Num::Int(y)) = (a.num, b.num) else {
                return Eval::GiveUp;
            };
            many(match op {
                Op::Add => map2(&x, &y, rows, n, i64::checked_add),
                Op::Sub => map2(&x, &y, rows, n, i64::checked_sub),
                Op::Mul => map2(&x, &y, rows, n, i64::checked_mul),
            })
            .map(Num::Int)
        }
        Ty::Dec(s) => {
            let (sa, sb) = match op {
                Op::Mul => (num_scale(&a.num), num_scale(&b.num)),
                _ => (s, s),
            };
            let (Some(x), Some(y)) = (as_dec(a.num, sa, rows, n), as_dec(b.num, sb, rows, n))
            else {
                return Eval::GiveUp;
            };
            many(match op {
                Op::Add => map2(&x, &y, rows, n, i128::checked_add),
                Op::Sub => map2(&x, &y, rows, n, i128::checked_sub),
                Op::Mul => map2(&x, &y, rows, n, i128::checked_mul),
            })
            .map(|v| Num::Dec(v, s))
        }
        Ty::F64 => {
            let (Some(x), Some(y)) = (as_f64(a.num), as_f64(b.num)) else {
                return Eval::GiveUp;
            };
            // A double past its range is an error of the row path's.
            let fin = |v: f64| v.is_finite().then_some(v);
            many(match op {
                Op::Add => map2(&x, &y, rows, n, |p, q| fin(p + q)),
                Op::Sub => map2(&x, &y, rows, n, |p, q| fin(p - q)),
                Op::Mul => map2(&x, &y, rows, n, |p, q| fin(p * q)),
            })
            .map(Num::F64)
        }
        Ty::Str => None,
    };
    match num {
        Some(num) => Eval::Vals(Vals { num, nulls }),
        None => Eval::GiveUp,
    }
}

fn num_scale(n: &Num) -> u8 {
    match n {
        Num::Dec(_, s) => *s,
        _ => 0,
    }
}

fn neg(a: Vals, rows: usize) -> Eval {
    let nulls = a.nulls;
    let n = nulls.as_deref();
    let zero = Side::Scalar(());
    let num = match a.num {
        Num::Int(x) => many(map2(&x, &zero, rows, n, |v, ()| v.checked_neg())).map(Num::Int),
        Num::Dec(x, s) => {
            many(map2(&x, &zero, rows, n, |v, ()| v.checked_neg())).map(|v| Num::Dec(v, s))
        }
        Num::F64(x) => many(map2(&x, &zero, rows, n, |v, ()| Some(-v))).map(Num::F64),
        Num::Other => None,
    };
    match num {
        Some(num) => Eval::Vals(Vals { num, nulls }),
        None => Eval::GiveUp,
    }
}

#[cfg(test)]
mod tests {
    use quarry_common::{Error, Result};
    use quarry_storage_api::vector::arrow_array::ArrayRef;
    use quarry_storage_api::VectorType;

    use quarry_common::fuzz::Rng;

    use super::*;
    use crate::expr::binary;

    /// The row evaluator's answer for the shapes kernels compile (`Expr::eval`'s rules:
    /// `binary` for `+ - *`, negation as it negates).
    fn reference(e: &Expr, row: &[Value]) -> Result<Value> {
        Ok(match e {
            Expr::Col(c) => row[*c].clone(),
            Expr::Lit(v) => v.clone(),
            Expr::Unary(UnOp::Neg, a) => match reference(a, row)? {
                Value::Null => Value::Null,
                Value::Int(i) => Value::Int(i.checked_neg().ok_or_else(|| Error::internal("neg"))?),
                Value::Decimal(d) => Value::Decimal(-d),
                other => Value::Double(-other.to_f64()),
            },
            Expr::Bin(op, a, b) => binary(*op, &reference(a, row)?, &reference(b, row)?)?,
            _ => unreachable!("only compiled shapes"),
        })
    }

    /// Whether the row evaluator errs on `e` or one of its parts for `row`, or a part is
    /// a decimal past 128 bits (which kernels do not hold).
    fn past_kernels(e: &Expr, row: &[Value]) -> bool {
        let parts = match e {
            Expr::Unary(_, a) => vec![&**a],
            Expr::Bin(_, a, b) => vec![&**a, &**b],
            _ => vec![],
        };
        parts.into_iter().any(|p| past_kernels(p, row))
            || match reference(e, row) {
                Err(_) => true,
                Ok(Value::Decimal(d)) => d.mantissa.to_i128().is_none(),
                Ok(_) => false,
            }
    }

    /// A value of a column of type `ty`: small mostly, now and then near the type's edge,
    /// and NULL one time in eight.
    fn value(r: &mut Rng, ty: VectorType) -> Value {
        if r.below(8) == 0 {
            return Value::Null;
        }
        let big = r.below(10) == 0;
        let n = if big {
            r.next_u64() as i64
        } else {
            r.below(20_001) as i64 - 10_000
        };
        match ty {
            VectorType::Int => Value::Int(n),
            VectorType::Decimal(s) => Value::Decimal(Decimal::new(n, s)),
            VectorType::Double => Value::Double(n as f64 / 8.0),
            VectorType::Str => unreachable!(),
        }
    }

    fn tree(r: &mut Rng, depth: u32) -> Expr {
        match r.below(if depth == 0 { 2 } else { 6 }) {
            0 => Expr::Col(r.below(4)),
            1 => Expr::Lit(match r.below(4) {
                0 => Value::Int(r.below(7) as i64 - 3),
                1 => Value::Decimal(Decimal::new(r.below(300) as i64 - 100, 2)),
                2 => Value::Decimal(Decimal::new(r.below(30) as i64, 5)),
                _ => Value::Double(0.25),
            }),
            2 => Expr::Unary(UnOp::Neg, Box::new(tree(r, depth - 1))),
            k => Expr::Bin(
                [BinOp::Add, BinOp::Sub, BinOp::Mul][k - 3],
                Box::new(tree(r, depth - 1)),
                Box::new(tree(r, depth - 1)),
            ),
        }
    }

    /// Every compiled kernel gives, row by row, the row evaluator's value — same type,
    /// same scale — or gives up, and gives up only where the row evaluator errs or has a
    /// decimal past 128 bits.
    #[test]
    fn kernels_answer_as_the_row_evaluator() {
        let types = [
            VectorType::Int,
            VectorType::Decimal(2),
            VectorType::Decimal(4),
            VectorType::Double,
        ];
        let mut r = Rng::new(20);
        let (mut compiled, mut gave_up) = (0, 0);
        for _ in 0..3000 {
            let rows = 1 + r.below(40);
            let table: Vec<Vec<Value>> = (0..rows)
                .map(|_| types.iter().map(|&t| value(&mut r, t)).collect())
                .collect();
            let cols: Vec<ArrayRef> = (0..types.len())
                .map(|c| types[c].array_of(table.iter().map(|row| &row[c])).unwrap())
                .collect();
            let e = tree(&mut r, 3);
            let slot = |c: usize| Some((c, Ty::of(types[c])));
            let Some(k) = Kernel::compile(&e, &slot) else {
                continue;
            };
            compiled += 1;
            let want: Vec<Result<Value>> = table.iter().map(|row| reference(&e, row)).collect();
            match k.eval(&cols, rows) {
                Eval::GiveUp => {
                    gave_up += 1;
                    let excused = table.iter().any(|row| past_kernels(&e, row));
                    assert!(excused, "{e:?} gave up on {table:?}");
                }
                Eval::Vals(v) => {
                    for (i, w) in want.iter().enumerate() {
                        let w = w.as_ref().unwrap_or_else(|err| {
                            panic!("{e:?}: row {i} errs ({err}) but the kernel gave a value")
                        });
                        let got = if v.is_null(i) {
                            Value::Null
                        } else {
                            match &v.num {
                                Num::Int(x) => Value::Int(x.at(i)),
                                Num::Dec(x, s) => Value::Decimal(Decimal::new(x.at(i), *s)),
                                Num::F64(x) => Value::Double(x.at(i)),
                                Num::Other => panic!("{e:?}: not a number"),
                            }
                        };
                        assert_eq!(
                            format!("{got:?}"),
                            format!("{w:?}"),
                            "{e:?} row {i}: {:?}",
                            table[i]
                        );
                    }
                }
            }
        }
        assert!(
            compiled > 1000 && gave_up > 10,
            "{compiled} compiled, {gave_up} gave up"
        );
    }
}
