//! INTERSECT and EXCEPT, with or without ALL, in bounded memory.
//!
//! The right input's rows are counted by key in memory until they take `tmp_table_size`;
//! past that, both inputs go to partition files by key hash (a key's rows share a file)
//! and each pair of files is done the same way. The left input then streams through the
//! counts; without ALL, what passes is made distinct by [`crate::distinct`], which spills
//! in its turn.
//!
//! Owns only these two operators; the inputs are the executor's plans.

use quarry_common::hash::WordMap;
use quarry_common::{Result, Row};
use quarry_storage_api::HandlerCounters;

use crate::distinct::distinct;
use crate::exec::{partition_of, ExecCtx, Feed, Sink, BATCH_ROWS, SPILL_MAX_DEPTH};
use crate::sort::{approx_size, RowSpill};

/// Partitions a spilling INTERSECT or EXCEPT splits both inputs into.
const PARTITIONS: u64 = 16;

fn key(r: &Row, k: &mut Vec<u8>) {
    k.clear();
    r.iter().for_each(|v| v.hash_key(k));
}

/// Left rows that are (INTERSECT) or are not (EXCEPT) among the right rows; with `all`,
/// each right row cancels one left row. Returns whether the sink wants more.
pub fn set_op(
    left: &mut Feed,
    right: &mut Feed,
    except: bool,
    all: bool,
    ctx: &ExecCtx,
    depth: u32,
    sink: &mut Sink,
) -> Result<bool> {
    let mut counts: WordMap<Vec<u8>, (Row, usize)> = WordMap::default();
    let mut used = 0usize;
    let mut spill: Option<Vec<RowSpill>> = None;
    let mut k = Vec::new();
    right(&mut |b| {
        for r in b {
            ctx.tick()?;
            key(&r, &mut k);
            if let Some(files) = spill.as_mut() {
                files[partition_of(&k, depth, PARTITIONS)].write(&r)?;
                HandlerCounters::add(&ctx.catalog.counters.agg_spilled_rows, 1);
                continue;
            }
            match counts.get_mut(&k) {
                Some(e) => e.1 += 1,
                None => {
                    used += approx_size(&r) + k.len() + 48;
                    counts.insert(k.clone(), (r, 1));
                }
            }
            if used > ctx.agg_buffer && depth < SPILL_MAX_DEPTH {
                let mut files = RowSpill::partitions(PARTITIONS)?;
                for (key, (row, n)) in counts.drain() {
                    let f = &mut files[partition_of(&key, depth, PARTITIONS)];
                    for _ in 0..n {
                        f.write(&row)?;
                    }
                    HandlerCounters::add(&ctx.catalog.counters.agg_spilled_rows, n as u64);
                }
                spill = Some(files);
            }
        }
        Ok(true)
    })?;
    if let Some(right_files) = spill {
        let mut left_files = RowSpill::partitions(PARTITIONS)?;
        left(&mut |b| {
            for l in b {
                key(&l, &mut k);
                left_files[partition_of(&k, depth, PARTITIONS)].write(&l)?;
                HandlerCounters::add(&ctx.catalog.counters.agg_spilled_rows, 1);
            }
            Ok(true)
        })?;
        let mut go = true;
        for (l, r) in left_files.into_iter().zip(right_files) {
            if !go {
                break;
            }
            let (mut l, mut r) = (l.into_reader()?, r.into_reader()?);
            go = set_op(
                &mut |f| l.feed(BATCH_ROWS, f),
                &mut |f| r.feed(BATCH_ROWS, f),
                except,
                all,
                ctx,
                depth + 1,
                sink,
            )?;
        }
        return Ok(go);
    }
    let mut passed = |f: &mut Sink| -> Result<()> {
        left(&mut |mut b| {
            b.retain(|r| {
                key(r, &mut k);
                let in_right = counts.get_mut(&k).map(|e| &mut e.1);
                match (except, all) {
                    (false, false) => in_right.is_some(),
                    (true, false) => in_right.is_none(),
                    (false, true) => match in_right {
                        Some(n) if *n > 0 => {
                            *n -= 1;
                            true
                        }
                        _ => false,
                    },
                    (true, true) => match in_right {
                        Some(n) if *n > 0 => {
                            *n -= 1;
                            false
                        }
                        _ => true,
                    },
                }
            });
            if b.is_empty() {
                return Ok(true);
            }
            f(b)
        })
    };
    if all {
        let mut go = true;
        passed(&mut |b| {
            go = sink(b)?;
            Ok(go)
        })?;
        return Ok(go);
    }
    let whole = |r: &Row, k: &mut Vec<u8>| r.iter().for_each(|v| v.hash_key(k));
    distinct(&mut passed, &whole, ctx, 0, sink)
}
