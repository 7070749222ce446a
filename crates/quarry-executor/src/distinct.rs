//! DISTINCT and UNION (without ALL) with bounded memory.
//!
//! Rows pass on as they come, each the first with its key. The keys met are kept until
//! they take `tmp_table_size` bytes; after that, a row whose key is not among them goes to
//! one of [`PARTITIONS`] temporary files by key hash (rows with one key share a file), and
//! each file is made distinct the same way at the end. Those rows then come after the
//! others, out of first-met order, which SQL does not promise.
//!
//! Owns only this filter; the rows' sources and consumers are the executor's.

use quarry_common::hash::WordSet;
use quarry_common::{Collation, Result, Row, Value};
use quarry_storage_api::HandlerCounters;

use crate::exec::{partition_of, ExecCtx, Feed, Sink, BATCH_ROWS, SPILL_MAX_DEPTH};
use crate::sort::RowSpill;

/// Partitions a spilling DISTINCT splits its overflow into.
const PARTITIONS: u64 = 16;

/// The key DISTINCT and UNION compare `values` by: each one's hash key under its column's
/// collation (`colls`, the plain one past their end).
pub(crate) fn row_key(values: &[Value], colls: &[Collation], out: &mut Vec<u8>) {
    for (i, v) in values.iter().enumerate() {
        v.hash_key_in(colls.get(i).copied().unwrap_or_default(), out);
    }
}

/// Pass on the rows of `feed` whose key (written by `key`) was not met before. Returns
/// whether the sink wants more.
pub fn distinct(
    feed: &mut Feed,
    key: &dyn Fn(&Row, &mut Vec<u8>),
    ctx: &ExecCtx,
    depth: u32,
    sink: &mut Sink,
) -> Result<bool> {
    let mut seen: WordSet<Vec<u8>> = WordSet::default();
    let mut used = 0usize;
    let mut spill: Option<Vec<RowSpill>> = None;
    let mut go = true;
    let mut k = Vec::new();
    feed(&mut |b| {
        let mut keep = Vec::with_capacity(b.len());
        for r in b {
            ctx.tick()?;
            k.clear();
            key(&r, &mut k);
            if seen.contains(&k) {
                continue;
            }
            if let Some(files) = spill.as_mut() {
                files[partition_of(&k, depth, PARTITIONS)].write(&r)?;
                HandlerCounters::add(&ctx.catalog.counters.agg_spilled_rows, 1);
                continue;
            }
            // The key's bytes and the set's own room for it.
            used += k.len() + 48;
            if used > ctx.agg_buffer && depth < SPILL_MAX_DEPTH {
                spill = Some(RowSpill::partitions(PARTITIONS)?);
            }
            seen.insert(k.clone());
            keep.push(r);
        }
        if !keep.is_empty() {
            go = sink(keep)?;
        }
        Ok(go)
    })?;
    drop(seen);
    for part in spill.unwrap_or_default() {
        if !go {
            break;
        }
        let mut reader = part.into_reader()?;
        go = distinct(
            &mut |f| reader.feed(BATCH_ROWS, f),
            key,
            ctx,
            depth + 1,
            sink,
        )?;
    }
    Ok(go)
}
