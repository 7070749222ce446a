//! Joins of two inputs by hash (Grace-style partitioning past `quarry_join_buffer_size`),
//! and, without equality keys, as a nested loop over blocks of the left input.
//!
//! Owns the join of rows the executor's plan hands it; index joins (rows fetched by key
//! from the right table) are the executor's.

mod key_table;
mod runtime_filter;

pub use runtime_filter::targets as filter_targets;
pub(crate) use runtime_filter::{
    for_scan as runtime_filters_for, integer_keyed, retain as retain_runtime_filtered,
};
pub use runtime_filter::{RuntimeFilters, Target};

use quarry_common::{Result, Row, Value};
use quarry_storage_api::HandlerCounters;

use crate::exec::{key_of, partition_of, ExecCtx, Feed, Sink, BATCH_ROWS};
use crate::expr::Expr;
use crate::plan::JoinKind;
use crate::sort::{approx_size, RowSpill, SpillReader};
use key_table::KeyTable;

/// The right side of a joined row: a row, or a build-side row kept compact.
pub(crate) trait RightRow {
    fn width(&self) -> usize;
    fn append_to(&self, out: &mut Row);
    /// Its `i`-th cell.
    fn cell(&self, i: usize) -> Value;
}

impl RightRow for [Value] {
    fn width(&self) -> usize {
        self.len()
    }
    fn append_to(&self, out: &mut Row) {
        out.extend_from_slice(self)
    }
    fn cell(&self, i: usize) -> Value {
        self[i].clone()
    }
}

/// Push `l` joined with `r` to `out` if it passes `on`; returns whether it did.
/// With `keep`, the pushed row is only those columns of the joined row, in that order
/// (distinct positions: the columns the plan reads above the join).
pub(crate) fn join_pair<R: RightRow + ?Sized>(
    l: &[Value],
    r: &R,
    on: Option<&Expr>,
    keep: Option<&[usize]>,
    ctx: &ExecCtx,
    out: &mut Vec<Row>,
) -> Result<bool> {
    ctx.tick()?;
    if let (Some(keep), None) = (keep, on) {
        let mut row = Vec::with_capacity(keep.len());
        for &c in keep {
            row.push(match l.get(c) {
                Some(v) => v.clone(),
                None => r.cell(c - l.len()),
            });
        }
        out.push(row);
        return Ok(true);
    }
    let mut row = Vec::with_capacity(l.len() + r.width());
    row.extend_from_slice(l);
    r.append_to(&mut row);
    if on
        .map(|e| e.eval_truth(&row, ctx))
        .transpose()?
        .unwrap_or(true)
    {
        out.push(match keep {
            Some(keep) => narrow(row, keep),
            None => row,
        });
        return Ok(true);
    }
    Ok(false)
}

/// The columns `keep` (distinct positions) of `row`, in that order.
fn narrow(mut row: Row, keep: &[usize]) -> Row {
    keep.iter()
        .map(|&c| std::mem::replace(&mut row[c], Value::Null))
        .collect()
}

/// Whether `l` and `r` joined pass `on` (a semi or anti join keeps no joined row).
pub(crate) fn pair_passes<R: RightRow + ?Sized>(
    l: &[Value],
    r: &R,
    on: Option<&Expr>,
    ctx: &ExecCtx,
) -> Result<bool> {
    ctx.tick()?;
    let Some(on) = on else { return Ok(true) };
    let mut row = Vec::with_capacity(l.len() + r.width());
    row.extend_from_slice(l);
    r.append_to(&mut row);
    on.eval_truth(&row, ctx)
}

/// A build-side row kept by its non-NULL cells. A scan leaves NULL the columns nobody
/// reads, so a wide table's build side (all of lineitem's sixteen columns for a join on
/// two) holds only what the join needs, and fits its buffer instead of spilling.
struct Compact {
    /// Bit i set: cell i is the next of `cells`. A row of more than 64 columns keeps
    /// every cell (`cells` as long as the row).
    present: u64,
    cells: Box<[Value]>,
    width: u32,
}

impl Compact {
    fn new(r: Row) -> Compact {
        let width = r.len() as u32;
        if r.len() > 64 {
            return Compact {
                present: u64::MAX,
                cells: r.into_boxed_slice(),
                width,
            };
        }
        let mut present = 0u64;
        let mut cells = Vec::with_capacity(r.iter().filter(|v| !v.is_null()).count());
        for (i, v) in r.into_iter().enumerate() {
            if !v.is_null() {
                present |= 1 << i;
                cells.push(v);
            }
        }
        Compact {
            present,
            cells: cells.into_boxed_slice(),
            width,
        }
    }

    /// Bytes it holds, as `approx_size` counts a row's.
    fn bytes(&self) -> usize {
        approx_size(&self.cells) + 16
    }

    fn to_row(&self) -> Row {
        let mut r = Vec::with_capacity(self.width as usize);
        self.append_to(&mut r);
        r
    }
}

impl RightRow for Compact {
    fn width(&self) -> usize {
        self.width as usize
    }
    fn cell(&self, i: usize) -> Value {
        if self.cells.len() == self.width as usize {
            return self.cells[i].clone();
        }
        if self.present >> i & 1 == 0 {
            return Value::Null;
        }
        let before = self.present & ((1u64 << i) - 1);
        self.cells[before.count_ones() as usize].clone()
    }
    fn append_to(&self, out: &mut Row) {
        if self.cells.len() == self.width as usize {
            return out.extend_from_slice(&self.cells);
        }
        // NULLs first, then the present cells over theirs (a join reads a few columns of
        // a wide table: two cells of orders' nine, say).
        let start = out.len();
        out.resize(start + self.width as usize, Value::Null);
        let mut bits = self.present;
        for cell in self.cells.iter() {
            out[start + bits.trailing_zeros() as usize] = cell.clone();
            bits &= bits - 1;
        }
    }
}

/// A LEFT JOIN row that matched nothing: the left row and NULLs for the right side
/// (only the columns `keep`, with it).
pub(crate) fn padded(mut l: Row, nulls: &[Value], keep: Option<&[usize]>) -> Row {
    let Some(keep) = keep else {
        l.extend_from_slice(nulls);
        return l;
    };
    keep.iter()
        .map(|&c| match l.get_mut(c) {
            Some(v) => std::mem::replace(v, Value::Null),
            None => Value::Null,
        })
        .collect()
}

pub struct JoinSpec<'p> {
    pub kind: JoinKind,
    pub left_keys: &'p [Expr],
    pub right_keys: &'p [Expr],
    pub on: Option<&'p Expr>,
    /// The right side of a LEFT JOIN row that matched nothing.
    pub nulls: Row,
    /// The columns of the joined rows to make (distinct positions, an inner or LEFT join
    /// only): those read above (None: all).
    pub keep: Option<&'p [usize]>,
    /// Scans below the left input that the build keys of a join built on the right may
    /// filter (runtime filters), and those below the right input for one built on the left.
    pub left_filters: Vec<Target>,
    pub right_filters: Vec<Target>,
}

/// Partitions a spilling hash join splits both inputs into.
const JOIN_PARTITIONS: u64 = 16;
/// Partition depth at which a join keeps its build side in memory whatever its size (all
/// rows share one key, so splitting further cannot help).
const JOIN_MAX_DEPTH: u32 = 4;

/// Hash join (Grace-style when the build side is large): the right input is built into a
/// hash table on its keys until it holds `join_buffer` bytes; past that, build rows go to
/// [`JOIN_PARTITIONS`] temporary files by key hash, the left input is split the same way,
/// and each pair of files is joined on its own, so memory stays bounded. Rows with a NULL
/// key never match: right ones are dropped, left ones of a LEFT JOIN come out padded with
/// NULLs. Without keys (a cross product filtered by `on`) the right input goes to one
/// file once it passes `join_buffer`, read again for each block of left rows that fits
/// it ([`block_nested_loop`]).
/// Returns false when the sink asked to stop.
pub fn hash_join(
    left: &mut Feed,
    right: &mut Feed,
    j: &JoinSpec,
    ctx: &ExecCtx,
    depth: u32,
    sink: &mut Sink,
) -> Result<bool> {
    let keyed = !j.left_keys.is_empty();
    let mut rows: Vec<Compact> = Vec::new();
    let mut table = KeyTable::default();
    let mut spill: Option<Vec<RowSpill>> = None;
    let mut used = 0usize;
    let mut k = Vec::new();
    let mut spilled = 0u64;
    // Without keys: the right rows, once they passed the buffer.
    let mut cross: Option<RowSpill> = None;
    let mut filters = (depth == 0)
        .then(|| runtime_filter::Collector::new(&j.left_filters, ctx))
        .flatten();
    right(&mut |b| {
        for r in b {
            ctx.tick()?;
            if keyed && !key_of(j.right_keys, &r, ctx, &mut k)? {
                continue;
            }
            if let Some(f) = filters.as_mut() {
                f.add(&r, j.right_keys);
            }
            if let Some(files) = spill.as_mut() {
                files[partition_of(&k, depth, JOIN_PARTITIONS)].write(&r)?;
                spilled += 1;
                continue;
            }
            if let Some(f) = cross.as_mut() {
                f.write(&r)?;
                spilled += 1;
                continue;
            }
            let r = Compact::new(r);
            used += r.bytes() + k.len() + KeyTable::ENTRY_BYTES;
            if keyed {
                table.insert(&k, rows.len());
            }
            rows.push(r);
            if keyed && used > ctx.join_buffer && depth < JOIN_MAX_DEPTH {
                let mut files = RowSpill::partitions(JOIN_PARTITIONS)?;
                for (key, i) in table.entries() {
                    files[partition_of(key, depth, JOIN_PARTITIONS)].write(&rows[i].to_row())?;
                    spilled += 1;
                }
                table = KeyTable::default();
                rows = Vec::new();
                spill = Some(files);
            } else if !keyed && used > ctx.join_buffer {
                let mut f = RowSpill::new()?;
                for r in rows.drain(..) {
                    f.write(&r.to_row())?;
                    spilled += 1;
                }
                cross = Some(f);
            }
        }
        Ok(true)
    })?;
    HandlerCounters::add(&ctx.catalog.counters.join_spilled_rows, spilled);
    if let Some(f) = cross {
        return block_nested_loop(left, f.into_reader()?, j, ctx, sink);
    }
    // Held until the left input has been read.
    let _filters = filters.map(|f| f.register(ctx));
    let mut go = true;
    if let Some(right_files) = spill {
        let mut left_files = RowSpill::partitions(JOIN_PARTITIONS)?;
        let mut spilled = 0u64;
        left(&mut |b| {
            let mut out = Vec::new();
            for l in b {
                if key_of(j.left_keys, &l, ctx, &mut k)? {
                    left_files[partition_of(&k, depth, JOIN_PARTITIONS)].write(&l)?;
                    spilled += 1;
                } else if j.kind == JoinKind::Left {
                    out.push(padded(l, &j.nulls, j.keep));
                } else if j.kind == JoinKind::Anti {
                    out.push(l);
                }
            }
            go = flush_rest(out, sink)?;
            Ok(go)
        })?;
        HandlerCounters::add(&ctx.catalog.counters.join_spilled_rows, spilled);
        for (l, r) in left_files.into_iter().zip(right_files) {
            if !go {
                break;
            }
            let (mut l, mut r) = (l.into_reader()?, r.into_reader()?);
            go = hash_join(
                &mut |f| l.feed(BATCH_ROWS, f),
                &mut |f| r.feed(BATCH_ROWS, f),
                j,
                ctx,
                depth + 1,
                sink,
            )?;
        }
        return Ok(go);
    }
    let mut cands: Vec<usize> = Vec::new();
    left(&mut |b| {
        go = join_batch(b, sink, &mut |l, out| {
            cands.clear();
            if !keyed {
                cands.extend(0..rows.len());
            } else if key_of(j.left_keys, &l, ctx, &mut k)? {
                cands.extend(table.matches(&k));
            }
            let mut matched = false;
            if j.kind.left_only() {
                for &i in &cands {
                    if pair_passes(&l, &rows[i], j.on, ctx)? {
                        matched = true;
                        break;
                    }
                }
                if matched == (j.kind == JoinKind::Semi) {
                    out.push(l);
                }
            } else {
                for &i in &cands {
                    matched |= join_pair(&l, &rows[i], j.on, j.keep, ctx, out)?;
                }
                if !matched && j.kind == JoinKind::Left {
                    out.push(padded(l, &j.nulls, j.keep));
                }
            }
            Ok(())
        })?;
        Ok(go)
    })?;
    Ok(go)
}

/// Whether a hash join of `kind` builds its table on its left input: a semi or anti join
/// when its left rows are expected to be fewer than the right's, an inner join when they
/// are expected to take less room (the left rows are those of every table joined so far:
/// wider); past the buffer either falls back to building on the right. The optimizer
/// asks too, to cost the runtime filter such a join hands its right side.
pub fn builds_left(
    kind: JoinKind,
    left: &crate::plan::Plan,
    right: &crate::plan::Plan,
    left_keys: &[Expr],
    right_width: usize,
) -> bool {
    let estimate = crate::cardinality::estimate_rows;
    let (lw, rw) = match kind {
        JoinKind::Inner => (
            crate::plan::width(left).unwrap_or(1) as f64,
            right_width.max(1) as f64,
        ),
        _ => (1.0, 1.0),
    };
    (kind.left_only() || kind == JoinKind::Inner)
        && !left_keys.is_empty()
        && matches!((estimate(left), estimate(right)), (Some(l), Some(r)) if l * lw < r * rw)
}

/// A semi or anti join whose left input is expected to be much smaller than its right
/// (TPC-H Q4: orders of one quarter against all of lineitem): the hash table is built on
/// the left rows, the right input streams through it once marking the rows it matches,
/// and the left rows come out afterwards in their own order — so a large right input is
/// neither held nor spilled, and reading it stops once every left row has matched. Left
/// rows past `join_buffer` go on into a file, and the join is then done as
/// [`hash_join`] does it (building on the right). Returns false when the sink asked to
/// stop.
pub fn semi_join_on_left(
    left: &mut Feed,
    right: &mut Feed,
    j: &JoinSpec,
    ctx: &ExecCtx,
    sink: &mut Sink,
) -> Result<bool> {
    debug_assert!(j.kind.left_only() && !j.left_keys.is_empty());
    // A NULL key matches nothing: the row stays (an anti join keeps it).
    let mut filters = runtime_filter::Collector::new(&j.right_filters, ctx);
    let (rows, table) = match build_left(left, j, ctx, true, &mut filters)? {
        Built::Table(rows, table) => (rows, table),
        Built::Over(rows, rest) => return finish_on_right(rows, rest, right, j, ctx, sink),
    };
    let _filters = filters.map(|f| f.register(ctx));
    let mut k = Vec::new();
    let mut matched = vec![false; rows.len()];
    let mut unmatched = table.len();
    if unmatched > 0 {
        right(&mut |b| {
            for r in b {
                ctx.tick()?;
                if !key_of(j.right_keys, &r, ctx, &mut k)? {
                    continue;
                }
                for i in table.matches(&k) {
                    if !matched[i] && pair_passes(&rows[i], r.as_slice(), j.on, ctx)? {
                        matched[i] = true;
                        unmatched -= 1;
                    }
                }
                if unmatched == 0 {
                    return Ok(false);
                }
            }
            Ok(true)
        })?;
    }
    let keep = j.kind == JoinKind::Semi;
    let mut out = Vec::new();
    for (l, m) in rows.into_iter().zip(matched) {
        if m == keep {
            out.push(l);
            if !flush_full(&mut out, sink)? {
                return Ok(false);
            }
        }
    }
    flush_rest(out, sink)
}

/// An inner join whose left input is expected to be smaller than its right (TPC-H Q7:
/// the customers of two nations against all orders): the hash table is built on the left
/// rows and the right input streams through it, so the larger input is neither held nor
/// spilled; joined rows come out in the right input's order. Left rows past
/// `join_buffer` go on into a file, and the join is then done as [`hash_join`] does it
/// (building on the right). Returns false when the sink asked to stop.
pub fn inner_join_on_left(
    left: &mut Feed,
    right: &mut Feed,
    j: &JoinSpec,
    ctx: &ExecCtx,
    sink: &mut Sink,
) -> Result<bool> {
    debug_assert!(j.kind == JoinKind::Inner && !j.left_keys.is_empty());
    // A NULL key matches nothing: the row goes.
    let mut filters = runtime_filter::Collector::new(&j.right_filters, ctx);
    let (rows, table) = match build_left(left, j, ctx, false, &mut filters)? {
        Built::Table(rows, table) => (rows, table),
        Built::Over(rows, rest) => return finish_on_right(rows, rest, right, j, ctx, sink),
    };
    let _filters = filters.map(|f| f.register(ctx));
    if rows.is_empty() {
        return Ok(true);
    }
    let mut k = Vec::new();
    let mut go = true;
    right(&mut |b| {
        go = join_batch(b, sink, &mut |r, out| {
            ctx.tick()?;
            if key_of(j.right_keys, &r, ctx, &mut k)? {
                for i in table.matches(&k) {
                    join_pair(&rows[i], r.as_slice(), j.on, j.keep, ctx, out)?;
                }
            }
            Ok(())
        })?;
        Ok(go)
    })?;
    Ok(go)
}

/// The left rows of a join that builds on them: in a table by key, or, past
/// `join_buffer`, those read so far and a file with the rest.
enum Built {
    Table(Vec<Row>, KeyTable),
    Over(Vec<Row>, RowSpill),
}

/// Read the left input into a hash table on its keys; rows whose key is NULL are kept
/// (unindexed) when `keep_unkeyed`, dropped otherwise.
/// The keys of the right input's runtime filters are gathered into `filters`.
fn build_left(
    left: &mut Feed,
    j: &JoinSpec,
    ctx: &ExecCtx,
    keep_unkeyed: bool,
    filters: &mut Option<runtime_filter::Collector>,
) -> Result<Built> {
    let mut rows: Vec<Row> = Vec::new();
    let mut table = KeyTable::default();
    let mut rest: Option<RowSpill> = None;
    let mut used = 0usize;
    let mut spilled = 0u64;
    let mut k = Vec::new();
    left(&mut |b| {
        for l in b {
            ctx.tick()?;
            if let Some(f) = rest.as_mut() {
                f.write(&l)?;
                spilled += 1;
                continue;
            }
            if key_of(j.left_keys, &l, ctx, &mut k)? {
                used += k.len() + KeyTable::ENTRY_BYTES;
                table.insert(&k, rows.len());
                if let Some(f) = filters.as_mut() {
                    f.add(&l, j.left_keys);
                }
            } else if !keep_unkeyed {
                continue;
            }
            used += approx_size(&l);
            rows.push(l);
            if used > ctx.join_buffer {
                rest = Some(RowSpill::new()?);
            }
        }
        Ok(true)
    })?;
    HandlerCounters::add(&ctx.catalog.counters.join_spilled_rows, spilled);
    Ok(match rest {
        Some(f) => Built::Over(rows, f),
        None => Built::Table(rows, table),
    })
}

/// A join whose left rows outgrew the buffer while being built on: done as
/// [`hash_join`] does it, the rows read so far fed first, then the file's.
fn finish_on_right(
    rows: Vec<Row>,
    rest: RowSpill,
    right: &mut Feed,
    j: &JoinSpec,
    ctx: &ExecCtx,
    sink: &mut Sink,
) -> Result<bool> {
    let mut reader = rest.into_reader()?;
    let mut first = Some(rows);
    hash_join(
        &mut |f| {
            if let Some(rows) = first.take() {
                if !rows.is_empty() && !f(rows)? {
                    return Ok(());
                }
            }
            reader.feed(BATCH_ROWS, f)
        },
        right,
        j,
        ctx,
        0,
        sink,
    )
}

/// Each row of `batch` through `each` (which pushes the rows it joins to `out`), the sink
/// handed a batch whenever one is full and the rest at the end; whether it wants more.
fn join_batch(
    batch: Vec<Row>,
    sink: &mut Sink,
    each: &mut dyn FnMut(Row, &mut Vec<Row>) -> Result<()>,
) -> Result<bool> {
    let mut out = Vec::new();
    for r in batch {
        each(r, &mut out)?;
        if !flush_full(&mut out, sink)? {
            return Ok(false);
        }
    }
    flush_rest(out, sink)
}

/// Hand the last rows to the sink, if any; whether the sink wants more.
fn flush_rest(out: Vec<Row>, sink: &mut Sink) -> Result<bool> {
    if out.is_empty() {
        return Ok(true);
    }
    sink(out)
}

/// Hand `out` to the sink once it holds a batch; whether the sink wants more.
fn flush_full(out: &mut Vec<Row>, sink: &mut Sink) -> Result<bool> {
    if out.len() < BATCH_ROWS {
        return Ok(true);
    }
    sink(std::mem::take(out))
}

/// A cross product filtered by `on` whose right rows passed `join_buffer` and are in
/// `right`: the left input is taken in blocks that fit the buffer, and the file is read
/// once per block. Returns false when the sink asked to stop.
fn block_nested_loop(
    left: &mut Feed,
    mut right: SpillReader,
    j: &JoinSpec,
    ctx: &ExecCtx,
    sink: &mut Sink,
) -> Result<bool> {
    let mut go = true;
    let mut block: Vec<Row> = Vec::new();
    let mut used = 0usize;
    left(&mut |b| {
        for l in b {
            used += approx_size(&l);
            block.push(l);
            if used > ctx.join_buffer {
                used = 0;
                go = join_block(&mut right, std::mem::take(&mut block), j, ctx, sink)?;
                if !go {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    })?;
    if go && !block.is_empty() {
        go = join_block(&mut right, block, j, ctx, sink)?;
    }
    Ok(go)
}

/// One pass over the spilled right rows for a block of left rows; unmatched rows of a
/// LEFT JOIN come out padded after it (a semi or anti join's rows come out after it).
fn join_block(
    right: &mut SpillReader,
    block: Vec<Row>,
    j: &JoinSpec,
    ctx: &ExecCtx,
    sink: &mut Sink,
) -> Result<bool> {
    right.rewind()?;
    let mut matched = vec![false; block.len()];
    let mut go = true;
    right.feed(BATCH_ROWS, &mut |rb| {
        go = join_batch(rb, sink, &mut |r, out| {
            for (l, m) in block.iter().zip(matched.iter_mut()) {
                if j.kind.left_only() {
                    *m = *m || pair_passes(l, r.as_slice(), j.on, ctx)?;
                } else {
                    *m |= join_pair(l, r.as_slice(), j.on, j.keep, ctx, out)?;
                }
            }
            Ok(())
        })?;
        Ok(go)
    })?;
    if go && j.kind != JoinKind::Inner {
        // LEFT: the unmatched rows padded; SEMI: the matched rows; ANTI: the unmatched.
        let keep = j.kind == JoinKind::Semi;
        let out: Vec<Row> = block
            .into_iter()
            .zip(matched)
            .filter(|(_, m)| *m == keep)
            .map(|(l, _)| match j.kind {
                JoinKind::Left => padded(l, &j.nulls, j.keep),
                _ => l,
            })
            .collect();
        if !out.is_empty() {
            go = sink(out)?;
        }
    }
    Ok(go)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quarry_common::fuzz::Rng;

    #[test]
    fn a_compact_row_gives_back_the_row_it_keeps() {
        let mut rng = Rng::new(3);
        for _ in 0..2_000 {
            let width = rng.below(70);
            let row: Row = (0..width)
                .map(|i| match rng.below(3) {
                    0 => Value::Null,
                    1 => Value::Int(i as i64),
                    _ => Value::Str(format!("s{i}")),
                })
                .collect();
            let c = Compact::new(row.clone());
            assert_eq!(c.width(), width);
            assert_eq!(c.to_row(), row);
            let mut out = vec![Value::Int(-1)];
            c.append_to(&mut out);
            assert_eq!(out[1..], row[..]);
            for (i, v) in row.iter().enumerate() {
                assert_eq!(&c.cell(i), v);
            }
        }
    }
}
