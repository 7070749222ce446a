//! Runtime filters: a hash join that has built its table hands the integer keys in it to
//! the scan that feeds its probe side, as a condition ([`Pred::InKeys`]) the scan offers
//! its engine (a column table checks it on its chunks, before rows are made) or checks
//! itself. A probe row whose key is not among them would find no partner, so leaving it
//! out changes no answer — for inner and semi joins, and for the right side of a join
//! built on its left (whose right rows only ever find left ones). The filter reaches
//! through the joins below the probe side (a left-deep plan's first table gets every
//! filter of the joins above it), which is where it saves most: TPC-H Q16 makes rows of
//! the partsupp entries of its 30 000 chosen parts only, of 800 000.
//!
//! Owns which scans get which filters, and for how long; the join keeps comparing keys.

use std::sync::Arc;

use quarry_common::{Row, SqlType, TypeKind, Value};
use quarry_storage_api::{HandlerCounters, KeySet, Pred, RowId};

use crate::exec::ExecCtx;
use crate::expr::Expr;
use crate::plan::{JoinKind, Plan};

/// Keys a build side may hand on: past this many the set costs more memory than a
/// filter is worth (and a build this large rarely leaves much out).
const MAX_KEYS: usize = 1 << 23;

/// The filters registered now: (scan node, condition).
pub type RuntimeFilters = Vec<(usize, Pred)>;

/// Where a probe key's values come from: a column of a scan below the probe side.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// The key's position among the join's keys.
    key: usize,
    /// The scan node (its address: the plan outlives the statement's run).
    node: usize,
    col: usize,
}

impl Target {
    /// The scan node's address (`profile::node_key`).
    pub fn node(&self) -> usize {
        self.node
    }

    /// The scan table's column the filter is on.
    pub fn col(&self) -> usize {
        self.col
    }
}

/// The targets of the probe side `probe` for a join of `kind` on `probe_keys` =
/// `build_keys`: each key pair of plain columns whose probe column is an integer column
/// of a scan that `probe`'s rows are made of (through inner joins, either side; through
/// the left side of other joins, index joins and filters). `probe_is_left`: the probe
/// side is the join's left input.
pub fn targets(
    probe: &Plan,
    probe_keys: &[Expr],
    build_keys: &[Expr],
    kind: JoinKind,
    probe_is_left: bool,
) -> Vec<Target> {
    // Probe rows a build key cannot match may go: they never come out of an inner or
    // semi join, and a join built on its left only reads its right rows to mark left ones.
    let may_filter = match kind {
        JoinKind::Inner | JoinKind::Semi => true,
        JoinKind::Anti => !probe_is_left,
        JoinKind::Left => false,
    };
    if !may_filter {
        return vec![];
    }
    probe_keys
        .iter()
        .zip(build_keys)
        .enumerate()
        .filter_map(|(key, pair)| match pair {
            (Expr::Col(p), Expr::Col(_)) => {
                let (node, col) = source_scan(probe, *p)?;
                let Plan::Scan { table, .. } = node else {
                    return None;
                };
                integer_keyed(&table.def.columns[col].ty).then_some(Target {
                    key,
                    node: node as *const Plan as usize,
                    col,
                })
            }
            _ => None,
        })
        .take(2)
        .collect()
}

/// Integers whose stored values are `Value::Int` (BIGINT UNSIGNED's are not).
pub(crate) fn integer_keyed(ty: &SqlType) -> bool {
    ty.is_integer() && !(ty.unsigned && ty.kind == TypeKind::BigInt)
}

/// The scan and its column that column `col` of `plan`'s rows is, where it passes
/// through unchanged.
fn source_scan(plan: &Plan, col: usize) -> Option<(&Plan, usize)> {
    match plan {
        Plan::Scan { table, .. } => (col < table.def.columns.len()).then_some((plan, col)),
        Plan::Filter { input, .. } => source_scan(input, col),
        Plan::Project { input, exprs } => match exprs.get(col)? {
            Expr::Col(c) => source_scan(input, *c),
            _ => None,
        },
        Plan::Join {
            left, right, kind, ..
        } => {
            let w = crate::plan::width(left)?;
            if col < w {
                source_scan(left, col)
            } else if *kind == JoinKind::Inner {
                source_scan(right, col - w)
            } else {
                None
            }
        }
        Plan::IndexJoin { left, .. } => {
            let w = crate::plan::width(left)?;
            (col < w).then(|| source_scan(left, col)).flatten()
        }
        _ => None,
    }
}

/// The build keys of each target, gathered while the build side is read.
pub struct Collector {
    sets: Vec<(Target, Option<Vec<i64>>)>,
}

impl Collector {
    /// Nothing to gather when runtime filters are off or no key has a target.
    pub fn new(targets: &[Target], ctx: &ExecCtx) -> Option<Collector> {
        (ctx.runtime_filters.is_some() && !targets.is_empty()).then(|| Collector {
            sets: targets.iter().map(|t| (*t, Some(Vec::new()))).collect(),
        })
    }

    /// A build row, with the join's build-side `keys` (plain columns).
    pub fn add(&mut self, row: &[Value], keys: &[Expr]) {
        for (t, set) in &mut self.sets {
            let Some(keys_so_far) = set else { continue };
            let Some(Expr::Col(c)) = keys.get(t.key) else {
                *set = None;
                continue;
            };
            match row.get(*c) {
                Some(Value::Null) => {}
                Some(Value::Int(k)) if keys_so_far.len() < MAX_KEYS => keys_so_far.push(*k),
                Some(Value::UInt(k)) if *k <= i64::MAX as u64 && keys_so_far.len() < MAX_KEYS => {
                    keys_so_far.push(*k as i64)
                }
                // A key that is no integer may equal a probe integer in ways a set of
                // integers does not capture ('5' = 5, 5.0 = 5): no filter; nor past
                // MAX_KEYS keys.
                _ => *set = None,
            }
        }
    }

    /// The filters, registered for their scans until the guard is dropped.
    pub fn register<'c, 'a>(self, ctx: &'c ExecCtx<'a>) -> Registered<'c, 'a> {
        let Some(filters) = &ctx.runtime_filters else {
            return Registered { ctx, sets: vec![] };
        };
        let mut sets = Vec::new();
        for (t, keys) in self.sets {
            let Some(keys) = keys else { continue };
            let keys = Arc::new(KeySet::new(keys));
            filters.borrow_mut().push((
                t.node,
                Pred::InKeys {
                    col: t.col,
                    keys: keys.clone(),
                },
            ));
            sets.push((t.node, keys));
        }
        Registered { ctx, sets }
    }
}

/// Filters registered for the probe side's run; dropping it takes them back and counts
/// the rows they left out.
pub struct Registered<'c, 'a> {
    ctx: &'c ExecCtx<'a>,
    sets: Vec<(usize, Arc<KeySet>)>,
}

impl Drop for Registered<'_, '_> {
    fn drop(&mut self) {
        let Some(filters) = &self.ctx.runtime_filters else {
            return;
        };
        let mut filters = filters.borrow_mut();
        for (node, keys) in &self.sets {
            filters.retain(|(n, p)| {
                !(n == node && matches!(p, Pred::InKeys { keys: k, .. } if Arc::ptr_eq(k, keys)))
            });
            let (asked, passed) = keys.counts();
            HandlerCounters::add(
                &self.ctx.catalog.counters.runtime_filtered_rows,
                asked - passed,
            );
        }
    }
}

/// The filters registered for the scan node `node`.
pub fn for_scan(node: usize, ctx: &ExecCtx) -> Vec<Pred> {
    ctx.runtime_filters.as_ref().map_or(vec![], |f| {
        f.borrow()
            .iter()
            .filter(|(n, _)| *n == node)
            .map(|(_, p)| p.clone())
            .collect()
    })
}

/// Keep the rows of a scan's batch (and their ids) that pass the filters it checks
/// itself, counting per filter what it was asked and kept.
pub fn retain(filters: &[Pred], ids: &mut Vec<RowId>, rows: &mut Vec<Row>) {
    for p in filters {
        let Pred::InKeys { keys, .. } = p else {
            continue;
        };
        if rows.is_empty() || !keys.worth_it() {
            continue;
        }
        let pass: Vec<bool> = rows.iter().map(|r| p.eval(r) == Some(true)).collect();
        let kept = pass.iter().filter(|&&t| t).count();
        keys.record(rows.len() as u64, kept as u64);
        let (mut i, mut j) = (pass.iter(), pass.iter());
        ids.retain(|_| *i.next().unwrap());
        rows.retain(|_| *j.next().unwrap());
    }
}
