//! INSERT … SELECT: rows go in as the source produces them, or, when the source reads the
//! target table, after it has been read whole (so it never sees its own rows) — held in
//! memory up to `tmp_table_size`, past that in a temporary file.
//!
//! Owns the flow of source rows into an [`Inserter`]; coercion, keys and undo are the
//! inserter's.

use std::sync::Arc;

use quarry_catalog::TableEntry;
use quarry_common::{Result, Row, Value};
use quarry_storage_api::HandlerCounters;

use super::{in_bulk, InsertOptions, Inserter};
use crate::exec::{run, ExecCtx, BATCH_ROWS};
use crate::plan::SelectPlan;
use crate::sort::{approx_size, RowSpill};

/// A source row laid out by table column (`None`: the column's default).
pub type Expand<'e> = dyn Fn(Vec<Value>) -> Result<Vec<Option<Value>>> + 'e;

pub fn insert_select(
    entry: &Arc<TableEntry>,
    source: &SelectPlan,
    reads_target: bool,
    expand: &Expand,
    opts: &InsertOptions,
    ctx: &ExecCtx,
) -> Result<super::DmlResult> {
    if !reads_target {
        // The statement holds one batch, however large the source.
        return in_bulk(entry, ctx, || {
            let mut ins = Inserter::new(entry, opts);
            let mut done = 0u64;
            run(&source.plan, ctx, &mut |batch| {
                for r in batch {
                    progress(done, 0, ctx);
                    done += 1;
                    ins.push(expand(r)?, ctx)?;
                }
                Ok(true)
            })?;
            Ok(ins.finish(ctx))
        });
    }
    let mut spool = Spool::default();
    run(&source.plan, ctx, &mut |batch| {
        for r in batch {
            spool.push(r, ctx)?;
        }
        Ok(true)
    })?;
    let total = spool.rows.len() as u64 + spool.in_file;
    in_bulk(entry, ctx, || {
        let mut ins = Inserter::new(entry, opts);
        let mut done = 0u64;
        let mut push = |r: Row, ins: &mut Inserter| -> Result<()> {
            progress(done, total, ctx);
            done += 1;
            ins.push(expand(r)?, ctx)
        };
        if let Some(file) = spool.file {
            let mut reader = file.into_reader()?;
            reader.feed(BATCH_ROWS, &mut |b| {
                for r in b {
                    push(r, &mut ins)?;
                }
                Ok(true)
            })?;
        }
        for r in spool.rows {
            push(r, &mut ins)?;
        }
        Ok(ins.finish(ctx))
    })
}

fn progress(done: u64, total: u64, ctx: &ExecCtx) {
    if done.is_multiple_of(65536) {
        ctx.session.progress("inserting rows", done, total);
    }
}

/// Source rows read ahead: the first ones in a file once they passed `tmp_table_size`,
/// the rest in memory (never more than that size).
#[derive(Default)]
struct Spool {
    rows: Vec<Row>,
    used: usize,
    file: Option<RowSpill>,
    in_file: u64,
}

impl Spool {
    fn push(&mut self, r: Row, ctx: &ExecCtx) -> Result<()> {
        self.used += approx_size(&r);
        self.rows.push(r);
        if self.used > ctx.agg_buffer {
            let file = match &mut self.file {
                Some(f) => f,
                None => self.file.insert(RowSpill::new()?),
            };
            self.in_file += self.rows.len() as u64;
            HandlerCounters::add(
                &ctx.catalog.counters.insert_spilled_rows,
                self.rows.len() as u64,
            );
            for r in self.rows.drain(..) {
                file.write(&r)?;
            }
            self.used = 0;
        }
        Ok(())
    }
}
