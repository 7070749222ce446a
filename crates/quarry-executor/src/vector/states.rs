//! Aggregate states on vectors: COUNT(*), COUNT, SUM, AVG, MIN, MAX and a group's first
//! value, one array per aggregate indexed by group, updated a batch at a time from a
//! kernel's values and each row's group. At the end each group's state becomes the row
//! path's [`AggState`], whose `finish` gives the value (AVG's division and rounding
//! included), so results are the row path's.
//!
//! Sums keep what the row path's running sum keeps: integers and decimals as a mantissa
//! of the argument's scale (integers: scale 0, as `apply_sum` turns them into decimals),
//! doubles added in scan order. A sum past i128 or a double sum past its range gives up
//! (the row path then computes it, or raises its error).
//!
//! Must not touch: group keys (groups.rs), expression evaluation (kernel.rs).

use quarry_common::{Decimal, Value};
use quarry_storage_api::vector::arrow_array::ArrayRef;

use super::kernel::{Kernel, Num, Side, Ty, Vals};
use crate::aggregate::AggState;
use crate::plan::{Agg, AggFunc};

pub(crate) enum State {
    CountStar(Vec<i64>),
    Count(Vec<i64>),
    /// SUM or AVG of integers (scale 0) or decimals: the mantissa and the values summed.
    SumDec(Vec<i128>, Vec<i64>, u8),
    SumF64(Vec<f64>, Vec<i64>),
    MinInt(Vec<Option<i64>>, bool),
    MinDec(Vec<Option<i128>>, u8, bool),
    MinF64(Vec<Option<f64>>, bool),
    /// The first row's value (NULL included) of a column: the row path's `First`.
    First(Vec<Option<Value>>),
}

/// What an aggregate reads and how it keeps its state.
pub(crate) struct VecAgg {
    pub arg: Option<Kernel>,
    pub state: State,
}

impl VecAgg {
    /// `a` for vectors, its argument compiled by `compile`; None for what only the row
    /// path does (DISTINCT, strings' MIN/MAX and sums, the other functions).
    pub fn new(a: &Agg, compile: &dyn Fn(&crate::expr::Expr) -> Option<Kernel>) -> Option<VecAgg> {
        if a.distinct {
            return None;
        }
        if a.func == AggFunc::CountStar {
            return Some(VecAgg {
                arg: None,
                state: State::CountStar(vec![]),
            });
        }
        let [e] = a.args.as_slice() else {
            return None;
        };
        let k = compile(e)?;
        let ty = k.ty();
        let max = a.func == AggFunc::Max;
        let state = match (a.func, ty) {
            (AggFunc::Count, _) => State::Count(vec![]),
            (AggFunc::First, _) if matches!(k, Kernel::Col(..)) => State::First(vec![]),
            (AggFunc::Sum | AggFunc::Avg, Ty::Int) => State::SumDec(vec![], vec![], 0),
            (AggFunc::Sum | AggFunc::Avg, Ty::Dec(s)) => State::SumDec(vec![], vec![], s),
            (AggFunc::Sum | AggFunc::Avg, Ty::F64) => State::SumF64(vec![], vec![]),
            (AggFunc::Min | AggFunc::Max, Ty::Int) => State::MinInt(vec![], max),
            (AggFunc::Min | AggFunc::Max, Ty::Dec(s)) => State::MinDec(vec![], s, max),
            (AggFunc::Min | AggFunc::Max, Ty::F64) => State::MinF64(vec![], max),
            _ => return None,
        };
        Some(VecAgg {
            arg: Some(k),
            state,
        })
    }

    /// Room for `groups` groups.
    pub fn grow(&mut self, groups: usize) {
        match &mut self.state {
            State::CountStar(v) | State::Count(v) => v.resize(groups, 0),
            State::SumDec(s, n, _) => {
                s.resize(groups, 0);
                n.resize(groups, 0);
            }
            State::SumF64(s, n) => {
                s.resize(groups, 0.0);
                n.resize(groups, 0);
            }
            State::MinInt(v, _) => v.resize(groups, None),
            State::MinDec(v, ..) => v.resize(groups, None),
            State::MinF64(v, _) => v.resize(groups, None),
            State::First(v) => v.resize(groups, None),
        }
    }

    /// Add a batch: `gid[i]` is row i's group. False when a value must come from the row
    /// path.
    pub fn update(&mut self, cols: &[ArrayRef], gid: &[u32], rows: usize) -> bool {
        let vals = match &self.arg {
            None => None,
            Some(k) => match k.eval(cols, rows) {
                super::kernel::Eval::Vals(v) => Some(v),
                super::kernel::Eval::GiveUp => return false,
            },
        };
        let live = |v: &Vals, i: usize| !v.is_null(i);
        match (&mut self.state, vals) {
            (State::CountStar(c), _) => {
                for &g in gid {
                    c[g as usize] += 1;
                }
            }
            (State::Count(c), Some(v)) => {
                for (i, &g) in gid.iter().enumerate() {
                    if live(&v, i) {
                        c[g as usize] += 1;
                    }
                }
            }
            (State::SumDec(sum, n, s), Some(v)) => {
                let x = match &v.num {
                    Num::Int(x) => Side::Many(
                        (0..rows)
                            .map(|i| x.at(i) as i128)
                            .collect::<Vec<_>>()
                            .into(),
                    ),
                    Num::Dec(x, vs) if vs == s => match x {
                        Side::Many(m) => Side::Many(std::borrow::Cow::Borrowed(&m[..])),
                        Side::Scalar(c) => Side::Scalar(*c),
                    },
                    _ => return false,
                };
                let mut add = |g: u32, x: i128| {
                    let g = g as usize;
                    n[g] += 1;
                    sum[g].checked_add(x).map(|t| sum[g] = t).is_some()
                };
                let ok = match (&x, &v.nulls) {
                    // The common case, a column without NULLs: no checks in the loop.
                    (Side::Many(m), None) => gid.iter().zip(m.iter()).all(|(&g, &x)| add(g, x)),
                    _ => gid
                        .iter()
                        .enumerate()
                        .all(|(i, &g)| !live(&v, i) || add(g, x.at(i))),
                };
                if !ok {
                    return false;
                }
            }
            (State::SumF64(sum, n), Some(v)) => {
                let Num::F64(x) = &v.num else { return false };
                for (i, &g) in gid.iter().enumerate() {
                    if live(&v, i) {
                        let g = g as usize;
                        // The first value is the sum as it is; then each is added.
                        let t = if n[g] == 0 { x.at(i) } else { sum[g] + x.at(i) };
                        if !t.is_finite() {
                            return false;
                        }
                        sum[g] = t;
                        n[g] += 1;
                    }
                }
            }
            (State::MinInt(m, max), Some(v)) => {
                let Num::Int(x) = &v.num else { return false };
                min_max(m, *max, &v, gid, |i| x.at(i), |a, b| a < b);
            }
            (State::MinDec(m, s, max), Some(v)) => {
                let Num::Dec(x, vs) = &v.num else {
                    return false;
                };
                if vs != s {
                    return false;
                }
                min_max(m, *max, &v, gid, |i| x.at(i), |a, b| a < b);
            }
            (State::MinF64(m, max), Some(v)) => {
                let Num::F64(x) = &v.num else { return false };
                min_max(m, *max, &v, gid, |i| x.at(i), |a, b| a < b);
            }
            (State::First(f), _) => {
                let Some(Kernel::Col(slot, _)) = &self.arg else {
                    return false;
                };
                for (i, &g) in gid.iter().enumerate() {
                    let g = g as usize;
                    if f[g].is_none() {
                        f[g] = Some(quarry_storage_api::vector::value_at(&*cols[*slot], i));
                    }
                }
            }
            (_, None) => return false,
        }
        true
    }

    /// Whether the state depends on the order values come in beyond first-met (a
    /// double's sum rounds at each addition): such an aggregate reads one run of rows.
    pub fn needs_one_run(&self) -> bool {
        matches!(self.state, State::SumF64(..))
    }

    /// Take in the states of the same aggregate over a later run of rows, whose group `g`
    /// is group `map[g]` here (already grown to hold it). False when a sum passes i128.
    pub fn absorb(&mut self, other: VecAgg, map: &[u32]) -> bool {
        fn keep_first<T: Copy>(
            m: &mut [Option<T>],
            o: Vec<Option<T>>,
            map: &[u32],
            better: impl Fn(T, T) -> bool,
        ) {
            for (g, x) in o.into_iter().enumerate() {
                let cur = &mut m[map[g] as usize];
                if let Some(x) = x {
                    if cur.is_none_or(|c| better(x, c)) {
                        *cur = Some(x);
                    }
                }
            }
        }
        match (&mut self.state, other.state) {
            (State::CountStar(c), State::CountStar(o)) | (State::Count(c), State::Count(o)) => {
                for (g, n) in o.into_iter().enumerate() {
                    c[map[g] as usize] += n;
                }
            }
            (State::SumDec(s, n, _), State::SumDec(os, on, _)) => {
                for (g, (x, k)) in os.into_iter().zip(on).enumerate() {
                    let t = map[g] as usize;
                    match s[t].checked_add(x) {
                        Some(v) => s[t] = v,
                        None => return false,
                    }
                    n[t] += k;
                }
            }
            (State::MinInt(m, max), State::MinInt(o, _)) => {
                let max = *max;
                keep_first(m, o, map, |x, c| if max { x > c } else { x < c });
            }
            (State::MinDec(m, _, max), State::MinDec(o, ..)) => {
                let max = *max;
                keep_first(m, o, map, |x, c| if max { x > c } else { x < c });
            }
            (State::MinF64(m, max), State::MinF64(o, _)) => {
                let max = *max;
                keep_first(m, o, map, |x, c| if max { x > c } else { x < c });
            }
            (State::First(f), State::First(o)) => {
                for (g, x) in o.into_iter().enumerate() {
                    let cur = &mut f[map[g] as usize];
                    if cur.is_none() {
                        *cur = x;
                    }
                }
            }
            // A double's sum is never split (`needs_one_run`), and the states of one
            // aggregate are of one kind.
            _ => return false,
        }
        true
    }

    /// Group `g`'s state as the row path keeps it.
    pub fn state_of(&mut self, g: usize) -> AggState {
        match &mut self.state {
            State::CountStar(c) | State::Count(c) => AggState::Count(c[g]),
            State::SumDec(s, n, scale) => AggState::Sum {
                sum: (n[g] > 0).then(|| Value::Decimal(Decimal::new(s[g], *scale))),
                n: n[g],
            },
            State::SumF64(s, n) => AggState::Sum {
                sum: (n[g] > 0).then(|| Value::Double(s[g])),
                n: n[g],
            },
            State::MinInt(m, _) => AggState::MinMax(m[g].map(Value::Int)),
            State::MinDec(m, s, _) => {
                AggState::MinMax(m[g].map(|x| Value::Decimal(Decimal::new(x, *s))))
            }
            State::MinF64(m, _) => AggState::MinMax(m[g].map(Value::Double)),
            State::First(f) => AggState::First(f[g].take(), true),
        }
    }
}

/// MIN (or MAX) per group: a value replaces the kept one only when strictly smaller (or
/// larger), so the first of equal values stays, as in the row path.
fn min_max<T: Copy>(
    m: &mut [Option<T>],
    max: bool,
    v: &Vals,
    gid: &[u32],
    at: impl Fn(usize) -> T,
    less: impl Fn(T, T) -> bool,
) {
    for (i, &g) in gid.iter().enumerate() {
        if v.is_null(i) {
            continue;
        }
        let x = at(i);
        let cur = &mut m[g as usize];
        let replace = match *cur {
            None => true,
            Some(c) if max => less(c, x),
            Some(c) => less(x, c),
        };
        if replace {
            *cur = Some(x);
        }
    }
}
