//! Hash aggregation (GROUP BY and plain aggregates) and the per-group states of the
//! aggregate functions, which window frames reuse. Owns the group table, its spilling to
//! partition files and each function's arithmetic; evaluating expressions is expr.rs's,
//! scans and the operators around it are exec.rs's.

use std::borrow::Cow;

use quarry_common::hash::{WordMap, WordSet};
use quarry_common::{Decimal, Result, Row, TypeKind, Value};
use quarry_storage_api::HandlerCounters;

use crate::exec::{group_key, partition_of, ExecCtx, Sink, BATCH_ROWS};
use crate::expr::Expr;
use crate::plan::{Agg, AggFunc};

/// Partitions a spilling aggregate splits its overflow into.
const AGG_PARTITIONS: u64 = 16;
/// Below this depth overflowing groups (and DISTINCT keys) are partitioned again; at it
/// they stay in memory (all share one key, so splitting further cannot help).
pub(crate) const SPILL_MAX_DEPTH: u32 = 4;

pub(crate) type Feed<'f> = dyn FnMut(&mut Sink) -> Result<()> + 'f;

/// Hash aggregation with bounded memory. Groups are kept in memory until their size passes
/// `agg_buffer`; after that, rows of groups already in memory are still aggregated there,
/// while rows of new groups go to one of [`AGG_PARTITIONS`] temporary files by key hash.
/// Each file is then aggregated the same way, so every group is finished in exactly one
/// place and no partial states need merging.
pub(crate) fn aggregate(
    feed: &mut Feed,
    group: &[Expr],
    aggs: &[Agg],
    ctx: &ExecCtx,
    depth: u32,
    out: &mut Vec<Row>,
) -> Result<()> {
    let mut index: WordMap<Vec<u8>, usize> = WordMap::default();
    let mut groups: Vec<(Row, Vec<AggState>)> = Vec::new();
    let mut used = 0usize;
    let mut spill: Option<Vec<crate::sort::RowSpill>> = None;
    let mut k = Vec::new();
    feed(&mut |b| {
        for r in b {
            ctx.tick()?;
            k.clear();
            // Lent values: a group already met copies none of its key's strings.
            let mut gv = Vec::with_capacity(group.len());
            for g in group {
                let v = g.eval_ref(&r, ctx)?;
                group_key(g, &v, &mut k);
                gv.push(v);
            }
            let gi = match index.get(&k) {
                Some(i) => *i,
                None => {
                    if let Some(files) = spill.as_mut() {
                        files[partition_of(&k, depth, AGG_PARTITIONS)].write(&r)?;
                        HandlerCounters::add(&ctx.catalog.counters.agg_spilled_rows, 1);
                        continue;
                    }
                    used += k.len() + 64 + 48 * aggs.len();
                    if used > ctx.agg_buffer && depth < SPILL_MAX_DEPTH {
                        spill = Some(crate::sort::RowSpill::partitions(AGG_PARTITIONS)?);
                    }
                    index.insert(k.clone(), groups.len());
                    let gv = gv.into_iter().map(std::borrow::Cow::into_owned).collect();
                    groups.push((gv, aggs.iter().map(AggState::new).collect()));
                    groups.len() - 1
                }
            };
            for (a, st) in aggs.iter().zip(groups[gi].1.iter_mut()) {
                st.update(a, &r, ctx)?;
            }
        }
        Ok(true)
    })?;
    drop(index);
    for (mut gv, states) in groups {
        for (a, st) in aggs.iter().zip(states) {
            gv.push(st.finish(a, ctx));
        }
        out.push(gv);
    }
    for part in spill.unwrap_or_default() {
        let mut reader = part.into_reader()?;
        aggregate(
            &mut |f| reader.feed(BATCH_ROWS, f),
            group,
            aggs,
            ctx,
            depth + 1,
            out,
        )?;
    }
    Ok(())
}

#[derive(Clone)]
pub enum AggState {
    Count(i64),
    Sum {
        sum: Option<Value>,
        n: i64,
    },
    MinMax(Option<Value>),
    First(Option<Value>, bool),
    /// GROUP_CONCAT's text so far, the values in it, and whether it was cut at
    /// `group_concat_max_len` (values after that are not kept).
    Concat {
        text: String,
        n: u64,
        cut: bool,
    },
    /// GROUP_CONCAT(… ORDER BY …): each value with its sort keys, joined (and cut at
    /// `group_concat_max_len`) once sorted at the end.
    SortedConcat(Vec<(Vec<Value>, String)>),
    Bits(u64),
    Moments {
        n: f64,
        mean: f64,
        m2: f64,
    },
    Distinct(WordSet<Vec<u8>>, Box<AggState>),
}

impl AggState {
    pub(crate) fn new(a: &Agg) -> AggState {
        let base = match a.func {
            AggFunc::CountStar | AggFunc::Count => AggState::Count(0),
            AggFunc::Sum | AggFunc::Avg => AggState::Sum { sum: None, n: 0 },
            AggFunc::Min | AggFunc::Max => AggState::MinMax(None),
            AggFunc::First => AggState::First(None, false),
            AggFunc::GroupConcat if !a.order.is_empty() => AggState::SortedConcat(vec![]),
            AggFunc::GroupConcat => AggState::Concat {
                text: String::new(),
                n: 0,
                cut: false,
            },
            AggFunc::BitAnd => AggState::Bits(u64::MAX),
            AggFunc::BitOr | AggFunc::BitXor => AggState::Bits(0),
            AggFunc::Std | AggFunc::Variance | AggFunc::StdSamp | AggFunc::VarSamp => {
                AggState::Moments {
                    n: 0.0,
                    mean: 0.0,
                    m2: 0.0,
                }
            }
        };
        if a.distinct {
            AggState::Distinct(WordSet::default(), Box::new(base))
        } else {
            base
        }
    }

    pub(crate) fn update(&mut self, a: &Agg, row: &[Value], ctx: &ExecCtx) -> Result<()> {
        if let AggState::Distinct(seen, inner) = self {
            let vals = a
                .args
                .iter()
                .map(|e| e.eval(row, ctx))
                .collect::<Result<Vec<_>>>()?;
            if vals.iter().any(Value::is_null) {
                return Ok(());
            }
            let mut k = Vec::new();
            for (v, e) in vals.iter().zip(&a.args) {
                group_key(e, v, &mut k);
            }
            if seen.insert(k) {
                inner.apply(a, vals, ctx)?;
            }
            return Ok(());
        }
        if a.func == AggFunc::CountStar {
            if let AggState::Count(n) = self {
                *n += 1;
            }
            return Ok(());
        }
        // A group's first value is taken once: the rows after it are not evaluated.
        if let AggState::First(_, true) = self {
            return Ok(());
        }
        if let [arg] = a.args.as_slice() {
            if matches!(
                self,
                AggState::Count(_) | AggState::Sum { .. } | AggState::MinMax(_)
            ) {
                let v = arg.eval_ref(row, ctx)?;
                return self.apply_one(a, v);
            }
        }
        let vals = a
            .args
            .iter()
            .map(|e| e.eval(row, ctx))
            .collect::<Result<Vec<_>>>()?;
        self.apply(a, vals, ctx)
    }

    /// COUNT, SUM, AVG, MIN and MAX of one argument's value, lent: nothing is copied
    /// unless it becomes the state, and sums of like numbers add in place.
    fn apply_one(&mut self, a: &Agg, v: Cow<Value>) -> Result<()> {
        if v.is_null() {
            return Ok(());
        }
        match self {
            AggState::Count(n) => *n += 1,
            AggState::Sum { sum, n } => {
                let in_place = match (sum.as_mut(), &*v) {
                    (Some(Value::Decimal(s)), Value::Decimal(d)) => s.checked_add(*d),
                    (Some(Value::Decimal(s)), Value::Int(i)) => {
                        s.checked_add(Decimal::from_i64(*i))
                    }
                    _ => None,
                };
                match (in_place, sum) {
                    (Some(t), Some(Value::Decimal(s))) => {
                        *s = t;
                        *n += 1;
                    }
                    // The first value, and every other mix, as `+` adds (its errors included).
                    _ => return self.apply_sum(v.into_owned()),
                }
            }
            AggState::MinMax(cur) => {
                let replace = match cur {
                    None => true,
                    Some(c) => {
                        let o = match a.args.first() {
                            Some(Expr::Collate(_, k)) => v.total_cmp_in(c, *k),
                            _ => v.total_cmp(c),
                        };
                        (a.func == AggFunc::Min && o == std::cmp::Ordering::Less)
                            || (a.func == AggFunc::Max && o == std::cmp::Ordering::Greater)
                    }
                };
                if replace {
                    *cur = Some(v.into_owned());
                }
            }
            _ => unreachable!("apply_one takes COUNT, SUM, AVG, MIN and MAX"),
        }
        Ok(())
    }

    fn apply_sum(&mut self, v: Value) -> Result<()> {
        let AggState::Sum { sum, n } = self else {
            unreachable!("a sum's state")
        };
        *n += 1;
        let v = match v {
            Value::Int(_) | Value::UInt(_) => Value::Decimal(v.to_decimal()),
            Value::Decimal(_) | Value::Double(_) => v,
            other => Value::Double(other.to_f64()),
        };
        *sum = Some(match sum.take() {
            None => v,
            Some(s) => crate::expr::binary(crate::expr::BinOp::Add, &s, &v)?,
        });
        Ok(())
    }

    fn apply(&mut self, a: &Agg, vals: Vec<Value>, ctx: &ExecCtx) -> Result<()> {
        if a.func == AggFunc::First {
            if let AggState::First(v, set) = self {
                if !*set {
                    *v = vals.into_iter().next();
                    *set = true;
                }
            }
            return Ok(());
        }
        // GROUP_CONCAT's sort keys may be NULL; its values may not.
        let keys = vals.len().saturating_sub(a.order.len()).max(1);
        if vals[..keys.min(vals.len())].iter().any(Value::is_null) {
            return Ok(());
        }
        if let AggState::SortedConcat(items) = self {
            let mut it = vals.into_iter();
            let v = it.next().unwrap_or(Value::Null);
            items.push((it.collect(), v.as_str_lossy().into_owned()));
            return Ok(());
        }
        let v = vals.into_iter().next().unwrap_or(Value::Null);
        match self {
            AggState::Count(n) => *n += 1,
            AggState::Sum { .. } => self.apply_sum(v)?,
            AggState::MinMax(_) => self.apply_one(a, Cow::Owned(v))?,
            AggState::Concat { text, n, cut } => {
                if *cut {
                    return Ok(());
                }
                if *n > 0 {
                    text.push_str(&a.separator);
                }
                text.push_str(&v.as_str_lossy());
                *n += 1;
                if text.len() > ctx.group_concat_max {
                    let mut at = ctx.group_concat_max;
                    while !text.is_char_boundary(at) {
                        at -= 1;
                    }
                    text.truncate(at);
                    text.shrink_to_fit();
                    *cut = true;
                }
            }
            // Taken above, before the value was split from its keys.
            AggState::SortedConcat(_) => {}
            AggState::Bits(b) => {
                let x = v.to_i64() as u64;
                *b = match a.func {
                    AggFunc::BitAnd => *b & x,
                    AggFunc::BitOr => *b | x,
                    _ => *b ^ x,
                }
            }
            AggState::Moments { n, mean, m2 } => {
                let x = v.to_f64();
                *n += 1.0;
                let d = x - *mean;
                *mean += d / *n;
                *m2 += d * (x - *mean);
            }
            AggState::First(..) | AggState::Distinct(..) => {}
        }
        Ok(())
    }

    pub(crate) fn finish(self, a: &Agg, ctx: &ExecCtx) -> Value {
        match self {
            AggState::Distinct(_, inner) => inner.finish(a, ctx),
            AggState::Count(n) => Value::Int(n),
            AggState::Sum { sum, n } => match (a.func, sum) {
                (_, None) => Value::Null,
                (AggFunc::Sum, Some(s)) => s,
                // The sum divided as `/` divides (MariaDB: AVG of a DECIMAL(10,5) is cut at
                // its 9th fractional digit, not rounded).
                (_, Some(Value::Decimal(d))) => {
                    let scale = a.ty.scale;
                    let extra = scale.saturating_sub(d.scale);
                    match d.div(Decimal::new(n, 0), extra) {
                        Some(q) => Value::Decimal(q.rescale(scale)),
                        None => Value::Null,
                    }
                }
                (_, Some(s)) => Value::Double(s.to_f64() / n as f64),
            },
            AggState::MinMax(v) => v.unwrap_or(Value::Null),
            AggState::First(v, _) => v.unwrap_or(Value::Null),
            AggState::SortedConcat(mut items) => {
                if items.is_empty() {
                    return Value::Null;
                }
                items.sort_by(|x, y| crate::sort::cmp_keys(&x.0, &y.0, &a.order));
                let mut state = AggState::Concat {
                    text: String::new(),
                    n: 0,
                    cut: false,
                };
                for (_, v) in items {
                    // Appending text (and the cut) cannot fail.
                    let _ = state.apply(a, vec![Value::Str(v)], ctx);
                }
                state.finish(a, ctx)
            }
            AggState::Concat { text, n, cut } => {
                if cut {
                    ctx.warn(1260, format!("Row {n} was cut by GROUP_CONCAT()"));
                }
                if n == 0 {
                    Value::Null
                } else {
                    Value::Str(text)
                }
            }
            AggState::Bits(b) => Value::UInt(b),
            AggState::Moments { n, m2, .. } => {
                let samp = matches!(a.func, AggFunc::StdSamp | AggFunc::VarSamp);
                let d = if samp { n - 1.0 } else { n };
                if d <= 0.0 {
                    Value::Null
                } else if matches!(a.func, AggFunc::Std | AggFunc::StdSamp) {
                    Value::Double((m2 / d).sqrt())
                } else {
                    Value::Double(m2 / d)
                }
            }
        }
    }
}

/// Result type helper for AVG: DECIMAL with 4 more digits, DOUBLE for approximate input.
pub fn avg_scale(input_kind: TypeKind, input_scale: u8) -> u8 {
    match input_kind {
        TypeKind::Decimal => (input_scale + 4).min(38),
        _ => 4,
    }
}
