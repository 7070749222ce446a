//! [`MvccTable`]: an engine's table seen through a snapshot, and written under row locks.
//!
//! Reads. An engine's scan hands out batches in increasing row-id order, so a batch
//! covers a window of ids. After each batch (and once the writers inside engine calls are
//! out) the rows of that window that changed under writers the snapshot does not see are
//! put right: a returned row is replaced by its earlier version or dropped, and a row
//! the engine no longer has there (deleted, moved) but the snapshot still sees is added.
//! Index scans work the same way over windows of entries, read from the engine in
//! chunks so that no engine latch is held while the caller's visitor runs; an earlier
//! version's entry is merged in at its place in key order. COUNT(*), MIN/MAX and
//! aggregates answered inside the engine are declined while the table has changes the
//! snapshot does not see, and the executor computes them from rows.
//!
//! Writes. An insert locks the new row's unique keys, a change or delete the old row's
//! (and the new one's); a table without unique keys locks row ids. Locks are X, held to
//! the end of the transaction; a row writer holds IX on the table. Then the row's
//! version is recorded and the engine changes it.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use quarry_common::packed::PackedRow;
use quarry_common::{Error, Result, Row, Value};
use quarry_storage_api::{
    Batch, Capabilities, Cursor, IndexEntry, IndexScan, IndexSchema, Pred, RowId, ScanAgg,
    ScanRequest, Stat, Support, Table, TableSchema, TableStats,
};

use crate::lock::{Interrupt, LockKey, LockMode};
use crate::txn::{Snapshot, Txn, TxnManager};
use crate::version::{Seen, Versions};

/// What table calls on this thread work under (set by the session per statement).
pub struct Context {
    pub mgr: Arc<TxnManager>,
    /// Writes take locks and leave versions under it.
    pub txn: Option<Arc<Txn>>,
    /// Reads see this view; None: the newest rows.
    pub snap: Option<Snapshot>,
    /// Rows read are locked (FOR UPDATE: X, LOCK IN SHARE MODE: S) and read anew.
    pub read_lock: Option<LockMode>,
    /// A writing statement: a row fetched by id that the snapshot does not see (one a
    /// unique-key conflict named) is read in its newest version instead.
    pub current_read: bool,
    pub lock_timeout: Duration,
    /// KILL ends a lock wait.
    pub killed: Option<Rc<dyn Fn() -> bool>>,
}

thread_local! {
    static CONTEXT: RefCell<Option<Rc<Context>>> = const { RefCell::new(None) };
}

/// The context of this thread's table calls until the guard is dropped.
pub fn enter(ctx: Context) -> ContextGuard {
    let prev = CONTEXT.with(|c| c.borrow_mut().replace(Rc::new(ctx)));
    ContextGuard { prev }
}

pub fn current() -> Option<Rc<Context>> {
    CONTEXT.with(|c| c.borrow().clone())
}

/// Run `f` reading the newest rows, committed or not, instead of the statement's
/// snapshot, in the same transaction: a foreign key's check must meet a row another
/// transaction has just written (and then wait for its lock), as InnoDB's does.
pub fn newest_reads<T>(f: impl FnOnce() -> T) -> T {
    let Some(cur) = current() else {
        return f();
    };
    let _g = enter(Context {
        mgr: cur.mgr.clone(),
        txn: cur.txn.clone(),
        snap: None,
        read_lock: None,
        current_read: true,
        lock_timeout: cur.lock_timeout,
        killed: cur.killed.clone(),
    });
    f()
}

pub struct ContextGuard {
    prev: Option<Rc<Context>>,
}

impl Drop for ContextGuard {
    fn drop(&mut self) {
        let prev = self.prev.take();
        CONTEXT.with(|c| *c.borrow_mut() = prev);
    }
}

impl Context {
    fn lock(&self, txn: &Txn, key: LockKey, mode: LockMode) -> Result<()> {
        let interrupt = self.killed.as_deref().map(Interrupt);
        self.mgr.lock(txn, key, mode, self.lock_timeout, interrupt)
    }
}

pub struct MvccTable {
    inner: Arc<dyn Table>,
    versions: Arc<Versions>,
    /// Lock namespace of this table (the same for every handle on it).
    lock_id: u64,
    /// Indexes whose keys name a row (unique), PRIMARY first.
    identities: Vec<usize>,
    /// The engine lets transactions change different rows at once; else a writer
    /// locks the table.
    row_locks: bool,
}

/// Rows per chunk of an index read.
const INDEX_CHUNK: usize = 256;

impl MvccTable {
    /// `versions` and `lock_id` belong to the table, not the handle: a table reopened
    /// under a new handle keeps them.
    pub fn new(inner: Arc<dyn Table>, versions: Arc<Versions>, lock_id: u64) -> MvccTable {
        let mut identities: Vec<usize> = (0..inner.schema().indexes.len())
            .filter(|&i| inner.schema().indexes[i].unique)
            .collect();
        identities.sort_by_key(|&i| !inner.schema().indexes[i].primary);
        let row_locks = inner.capabilities().row_locks;
        MvccTable {
            inner,
            versions,
            lock_id,
            identities,
            row_locks,
        }
    }

    pub fn inner(&self) -> &Arc<dyn Table> {
        &self.inner
    }

    /// The lock keys naming `row` (at `id`): one per unique key without NULLs, else
    /// its id.
    fn row_keys(&self, row: &Row, id: Option<RowId>) -> Vec<LockKey> {
        let mut keys = Vec::with_capacity(self.identities.len());
        for &i in &self.identities {
            let ix = &self.inner.schema().indexes[i];
            if ix.columns.iter().any(|&c| row[c].is_null()) {
                continue;
            }
            keys.push(LockKey::row(self.lock_id, key_hash(i, ix, row)));
        }
        if keys.is_empty() {
            if let Some(id) = id {
                // Row ids hash apart from key hashes.
                keys.push(LockKey::row(self.lock_id, id.rotate_left(1) | 1 << 63));
            }
        }
        keys
    }

    /// Under a transaction: IX on the table, X on each key (X on the table where the
    /// engine cannot have rows changed by several transactions at once).
    fn lock_keys(&self, ctx: &Context, txn: &Txn, keys: &[LockKey]) -> Result<()> {
        if !self.row_locks {
            return ctx.lock(txn, LockKey::table(self.lock_id), LockMode::Exclusive);
        }
        ctx.lock(
            txn,
            LockKey::table(self.lock_id),
            LockMode::IntentionExclusive,
        )?;
        for k in keys {
            ctx.lock(txn, *k, LockMode::Exclusive)?;
        }
        Ok(())
    }

    /// The newest row at `id` (own changes included), None when there is none.
    fn newest(&self, ctx: &Context, id: RowId) -> Result<Option<Row>> {
        let snap = ctx.mgr.snapshot(ctx.txn.as_ref().map_or(0, |t| t.id));
        let seen = self.versions.settled(&snap).seen(&snap, id);
        match seen {
            Seen::Earlier(r) => Ok(r),
            Seen::Current => Ok(self.inner.fetch(&[id]).ok().and_then(|mut v| v.pop())),
        }
    }

    /// Rows by id as `snap` sees them; None where it sees none.
    fn fetch_seen(&self, snap: &Snapshot, ids: &[RowId]) -> Result<Vec<Option<Row>>> {
        self.fetch_seen_columns(snap, ids, None)
    }

    /// `fetch_seen` reading only `columns` of the rows the engine has (versions are
    /// whole rows).
    fn fetch_seen_columns(
        &self,
        snap: &Snapshot,
        ids: &[RowId],
        columns: Option<&[usize]>,
    ) -> Result<Vec<Option<Row>>> {
        // Nothing versioned before and after the engine read: the rows stand as read.
        if self.versions.quiet() {
            if let Ok(rows) = self.inner.fetch_columns(ids, columns) {
                if self.versions.quiet() {
                    return Ok(rows.into_iter().map(Some).collect());
                }
            }
        }
        // The engine is asked for the rows the snapshot reads from it; a row deleted
        // meanwhile fails that read, and is then looked up again among the versions.
        for _attempt in 0..8 {
            let earlier: Vec<Option<Seen>> = {
                let st = self.versions.settled(snap);
                if !st.hides_any(snap) {
                    ids.iter().map(|_| None).collect()
                } else {
                    ids.iter()
                        .map(|&id| match st.seen(snap, id) {
                            Seen::Current => None,
                            s => Some(s),
                        })
                        .collect()
                }
            };
            let from_engine: Vec<RowId> = ids
                .iter()
                .zip(&earlier)
                .filter(|(_, e)| e.is_none())
                .map(|(&id, _)| id)
                .collect();
            let rows = match self.inner.fetch_columns(&from_engine, columns) {
                Ok(r) => r,
                Err(_) if _attempt < 7 => continue,
                Err(e) => return Err(e),
            };
            let st = self.versions.settled(snap);
            let hides = st.hides_any(snap);
            let mut rows = rows.into_iter();
            return Ok(ids
                .iter()
                .zip(earlier)
                .map(|(&id, e)| match e {
                    Some(Seen::Earlier(r)) => r,
                    _ => {
                        let row = rows.next();
                        match hides.then(|| st.seen(snap, id)) {
                            Some(Seen::Earlier(r)) => r,
                            _ => row,
                        }
                    }
                })
                .collect());
        }
        Err(Error::internal("rows kept changing under a read"))
    }

    /// A locking read's rows: each locked, then read anew (the newest version).
    fn lock_rows(
        &self,
        ctx: &Context,
        mode: LockMode,
        ids: Vec<RowId>,
        rows: Vec<Row>,
    ) -> Result<(Vec<RowId>, Vec<Row>)> {
        let mut out = (
            Vec::with_capacity(ids.len()),
            Vec::with_capacity(rows.len()),
        );
        for (id, row) in ids.into_iter().zip(rows) {
            if let Some((id, row)) = self.lock_row_as(ctx, id, row, mode)? {
                out.0.push(id);
                out.1.push(row);
            }
        }
        Ok(out)
    }

    fn lock_row_as(
        &self,
        ctx: &Context,
        id: RowId,
        row: Row,
        mode: LockMode,
    ) -> Result<Option<(RowId, Row)>> {
        let Some(txn) = &ctx.txn else {
            return Ok(Some((id, row)));
        };
        let keys = self.row_keys(&row, Some(id));
        if self.row_locks {
            let table_mode = if mode == LockMode::Exclusive {
                LockMode::IntentionExclusive
            } else {
                LockMode::IntentionShared
            };
            ctx.lock(txn, LockKey::table(self.lock_id), table_mode)?;
            for k in &keys {
                ctx.lock(txn, *k, mode)?;
            }
        } else {
            // The table is the unit: locking its rows one by one and then the table
            // would deadlock two readers-then-writers.
            ctx.lock(txn, LockKey::table(self.lock_id), mode)?;
        }
        // A row read under the statement's snapshot is still the newest unless a writer
        // that snapshot does not see has a version of it: writers record one before they
        // change a row, and purge keeps it while the snapshot lives. Reading the row
        // again would cost an engine read a row (a chunk decode in a column table).
        if let Some(snap) = &ctx.snap {
            if self.versions.quiet() || self.versions.settled(snap).seen(snap, id) == Seen::Current
            {
                return Ok(Some((id, row)));
            }
        }
        // Whoever changed the row before we got the lock has ended: read it anew.
        if let Some(now) = self.newest(ctx, id)? {
            if self.row_keys(&now, Some(id)) == keys {
                return Ok(Some((id, now)));
            }
        }
        // Gone from `id` (deleted, or moved by an update): find it by its first unique
        // key, which the lock holds still.
        let Some(&pk) = self.identities.first() else {
            return Ok(None);
        };
        let ix = &self.inner.schema().indexes[pk];
        if ix.columns.iter().any(|&c| row[c].is_null()) || ix.prefix.iter().any(|&p| p != 0) {
            return Ok(None);
        }
        let key: Vec<Value> = ix.columns.iter().map(|&c| row[c].clone()).collect();
        let snap = ctx.mgr.snapshot(txn.id);
        for cand in self
            .inner
            .index_range(pk, Bound::Included(&key), Bound::Included(&key))?
        {
            if let Some(Some(now)) = self.fetch_seen(&snap, &[cand])?.pop() {
                return Ok(Some((cand, now)));
            }
        }
        // Or it sits among the versions only (deleted and not yet purged).
        Ok(None)
    }
}

/// A unique key's lock name: its index and values, hashed as GROUP BY compares them.
fn key_hash(index: usize, ix: &IndexSchema, row: &Row) -> u64 {
    let mut bytes = Vec::with_capacity(32);
    bytes.extend_from_slice(&(index as u32).to_le_bytes());
    for &c in &ix.columns {
        row[c].hash_key(&mut bytes);
    }
    // FNV-1a, 64 bits.
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    for b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

impl Table for MvccTable {
    fn schema(&self) -> &TableSchema {
        self.inner.schema()
    }
    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }
    fn pushdown(&self, filter: &Pred) -> Support {
        self.inner.pushdown(filter)
    }

    fn count(&self, req: &ScanRequest) -> Result<Option<u64>> {
        self.unless_hidden(|| self.inner.count(req))
    }
    fn estimate(&self, req: &ScanRequest) -> Option<u64> {
        self.inner.estimate(req)
    }
    fn min_max(&self, col: usize, req: &ScanRequest) -> Result<Option<(Value, Value)>> {
        self.unless_hidden(|| self.inner.min_max(col, req))
    }
    fn aggregate(
        &self,
        req: &ScanRequest,
        group: &[usize],
        aggs: &[ScanAgg],
        max_groups: usize,
    ) -> Result<Option<Vec<Row>>> {
        self.unless_hidden(|| self.inner.aggregate(req, group, aggs, max_groups))
    }
    fn index_count(
        &self,
        index: usize,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
    ) -> Result<Option<u64>> {
        self.unless_hidden(|| self.inner.index_count(index, lo, hi))
    }

    fn build_indexes(
        &self,
        new: &[IndexSchema],
        kept: &[Option<usize>],
        progress: &dyn Fn(u64),
    ) -> Result<bool> {
        self.inner.build_indexes(new, kept, progress)
    }

    /// Only while no row version is hidden from this statement's snapshot (the engine's
    /// rows are then what it sees), and never for a locking read. The cursors take the
    /// engine's state when they are made, so the check after making them covers their
    /// batches.
    fn scan_columns(
        &self,
        req: &ScanRequest,
        parts: usize,
    ) -> Result<Option<quarry_storage_api::ColumnCursors<'_>>> {
        if current().is_some_and(|c| c.read_lock.is_some()) {
            return Ok(None);
        }
        self.unless_hidden(|| self.inner.scan_columns(req, parts))
    }

    fn scan(&self, req: &ScanRequest) -> Result<Box<dyn Cursor + '_>> {
        let ctx = current();
        let snap = ctx.as_ref().and_then(|c| c.snap.clone());
        let lock = ctx.as_ref().and_then(|c| c.read_lock);
        let inner = match &req.columns {
            // A locked row is named by its unique keys (`row_keys`), and found again by
            // them: a locking read reads their columns whatever the statement reads.
            Some(cols) if lock.is_some() => {
                let mut cols = cols.clone();
                for &i in &self.identities {
                    cols.extend(&self.inner.schema().indexes[i].columns);
                }
                cols.sort_unstable();
                cols.dedup();
                self.inner.scan(&ScanRequest {
                    columns: Some(cols),
                    ..req.clone()
                })?
            }
            _ => self.inner.scan(req)?,
        };
        if snap.is_none() && lock.is_none() {
            return Ok(inner);
        }
        Ok(Box::new(MvccCursor {
            table: self,
            inner,
            snap,
            lock: lock.zip(ctx),
            filter: req.filter.clone(),
            next_id: 0,
            done: false,
        }))
    }

    fn fetch_columns(&self, ids: &[RowId], columns: Option<&[usize]>) -> Result<Vec<Row>> {
        let Some(ctx) = current() else {
            return self.inner.fetch_columns(ids, columns);
        };
        // Locking and current reads lock rows by their keys and may read them anew.
        let Some(snap) = ctx
            .snap
            .as_ref()
            .filter(|_| ctx.read_lock.is_none() && !ctx.current_read)
        else {
            return self.fetch(ids);
        };
        self.fetch_seen_columns(snap, ids, columns)?
            .into_iter()
            .zip(ids)
            .map(|(r, &id)| {
                r.ok_or_else(|| Error::internal(format!("row {id} is not in the snapshot")))
            })
            .collect()
    }

    fn fetch(&self, ids: &[RowId]) -> Result<Vec<Row>> {
        let Some(ctx) = current() else {
            return self.inner.fetch(ids);
        };
        let Some(snap) = &ctx.snap else {
            return self.inner.fetch(ids);
        };
        let rows = self
            .fetch_seen(snap, ids)?
            .into_iter()
            .zip(ids)
            .map(|(r, &id)| match r {
                Some(r) => Ok(r),
                None if ctx.current_read => self
                    .newest(&ctx, id)?
                    .ok_or_else(|| Error::internal(format!("row {id} is gone"))),
                None => Err(Error::internal(format!("row {id} is not in the snapshot"))),
            })
            .collect::<Result<Vec<Row>>>()?;
        match ctx.read_lock {
            // A locked row that is gone keeps its place with the version read: fetch
            // answers every id asked for.
            Some(mode) => ids
                .iter()
                .zip(rows)
                .map(|(&id, row)| {
                    Ok(match self.lock_row_as(&ctx, id, row.clone(), mode)? {
                        Some((_, now)) => now,
                        None => row,
                    })
                })
                .collect(),
            None => Ok(rows),
        }
    }

    fn index_scan(
        &self,
        scan: &IndexScan,
        visit: &mut dyn FnMut(&IndexEntry) -> Result<bool>,
    ) -> Result<()> {
        let Some(snap) = current().and_then(|c| c.snap.clone()) else {
            return self.inner.index_scan(scan, visit);
        };
        let covers = if scan.keys {
            self.inner.index_covers(scan.index)
        } else {
            vec![]
        };
        // Entries of the window already visited end at `last` (exclusive when None).
        let mut last: Option<Vec<u8>> = scan.after.map(<[u8]>::to_vec);
        loop {
            let mut chunk: Vec<(RowId, Vec<Option<Value>>, Vec<u8>)> = Vec::new();
            self.inner.index_scan(
                &IndexScan {
                    after: last.as_deref(),
                    ..scan.clone()
                },
                &mut |e| {
                    chunk.push((e.id, e.keys.to_vec(), e.pos.to_vec()));
                    Ok(chunk.len() < INDEX_CHUNK)
                },
            )?;
            let at_end = chunk.len() < INDEX_CHUNK;
            // This window ends at the chunk's last entry (or the range's end).
            let upto = if at_end {
                None
            } else {
                chunk.last().map(|e| e.2.clone())
            };
            let merged = if self.versions.quiet() {
                chunk
            } else {
                let st = self.versions.settled(&snap);
                if !st.hides_any(&snap) {
                    chunk
                } else {
                    let mut keep: Vec<(RowId, Vec<Option<Value>>, Vec<u8>)> = chunk
                        .into_iter()
                        .filter(|(id, _, _)| st.seen(&snap, *id) == Seen::Current)
                        .collect();
                    for (id, row) in st.hidden_in(&snap, 0..=RowId::MAX) {
                        let Some(row) = row else { continue };
                        let Some(pos) = self.inner.index_key(scan.index, &row, id) else {
                            return Err(Error::unsupported(
                                "reading this index while other transactions change its table",
                            ));
                        };
                        let after_last = last.as_ref().is_none_or(|l| {
                            if scan.reverse {
                                pos < *l
                            } else {
                                pos > *l
                            }
                        });
                        let before_upto = upto.as_ref().is_none_or(|u| {
                            if scan.reverse {
                                pos >= *u
                            } else {
                                pos <= *u
                            }
                        });
                        if !(after_last && before_upto) {
                            continue;
                        }
                        if self.inner.index_key_in(scan.index, &pos, scan.lo, scan.hi) != Some(true)
                        {
                            continue;
                        }
                        let keys = if scan.keys {
                            self.inner.schema().indexes[scan.index]
                                .columns
                                .iter()
                                .zip(&covers)
                                .map(|(&c, &exact)| exact.then(|| row[c].clone()))
                                .collect()
                        } else {
                            vec![]
                        };
                        keep.push((id, keys, pos));
                    }
                    if scan.reverse {
                        keep.sort_by(|a, b| b.2.cmp(&a.2));
                    } else {
                        keep.sort_by(|a, b| a.2.cmp(&b.2));
                    }
                    keep
                }
            };
            for (id, keys, pos) in &merged {
                let go = visit(&IndexEntry { id: *id, keys, pos })?;
                if !go {
                    return Ok(());
                }
            }
            if at_end {
                return Ok(());
            }
            last = upto;
        }
    }

    fn index_lookups(&self, index: usize, keys: &[Vec<Value>]) -> Result<Vec<Vec<RowId>>> {
        if current().is_none_or(|c| c.snap.is_none()) {
            return self.inner.index_lookups(index, keys);
        }
        // As index_scan: entries read while no change is under way are the snapshot's.
        let found = self.inner.index_lookups(index, keys)?;
        if self.versions.quiet() {
            return Ok(found);
        }
        quarry_storage_api::lookups_by_range(self, index, keys)
    }

    fn index_key(&self, index: usize, row: &Row, id: RowId) -> Option<Vec<u8>> {
        self.inner.index_key(index, row, id)
    }
    fn index_key_in(
        &self,
        index: usize,
        entry: &[u8],
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
    ) -> Option<bool> {
        self.inner.index_key_in(index, entry, lo, hi)
    }
    fn index_covers(&self, index: usize) -> Vec<bool> {
        self.inner.index_covers(index)
    }
    fn records_in_range(
        &self,
        index: usize,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
    ) -> Result<Stat> {
        self.inner.records_in_range(index, lo, hi)
    }
    fn index_distinct(&self, index: usize) -> Result<Vec<Stat>> {
        self.inner.index_distinct(index)
    }
    fn optimize(&self) -> Result<()> {
        self.inner.optimize()
    }
    fn analyze(&self) -> Result<()> {
        self.inner.analyze()
    }

    fn insert(&self, row: Row) -> Result<RowId> {
        let Some((ctx, txn)) = writer() else {
            return self.inner.insert(row);
        };
        self.lock_keys(&ctx, &txn, &self.row_keys(&row, None))?;
        self.bracket(&txn, || {
            self.inner
                .insert_noted(row, &mut |id| self.versions.record(&txn, id, None))
        })
    }

    fn restore(&self, id: RowId, row: Row) -> Result<bool> {
        let Some((_, txn)) = writer() else {
            return self.inner.restore(id, row);
        };
        self.bracket(&txn, || self.inner.restore(id, row))
    }

    fn lock_row(&self, id: RowId, row: Row, exclusive: bool) -> Result<Option<(RowId, Row)>> {
        let Some(ctx) = current() else {
            return Ok(Some((id, row)));
        };
        let mode = if exclusive {
            LockMode::Exclusive
        } else {
            LockMode::Shared
        };
        self.lock_row_as(&ctx, id, row, mode)
    }

    fn lock_table(&self, exclusive: bool) -> Result<()> {
        let Some((ctx, txn)) = writer() else {
            return Ok(());
        };
        let mode = if exclusive {
            LockMode::Exclusive
        } else {
            LockMode::Shared
        };
        ctx.lock(&txn, LockKey::table(self.lock_id), mode)
    }

    fn update(&self, id: RowId, row: Row) -> Result<RowId> {
        if writer().is_none() {
            return self.inner.update(id, row);
        }
        let old = self.current(id, "update")?;
        self.update_from(id, &old, PackedRow::pack(&old), row, &mut |_| {})
    }

    fn update_known(
        &self,
        id: RowId,
        old: &PackedRow,
        row: Row,
        note: &mut dyn FnMut(RowId),
    ) -> Result<RowId> {
        if writer().is_none() {
            return self.inner.update_known(id, old, row, note);
        }
        self.update_from(id, &old.unpack(), old.clone(), row, note)
    }

    fn delete(&self, id: RowId) -> Result<()> {
        if writer().is_none() {
            return self.inner.delete(id);
        }
        let old = self.current(id, "delete")?;
        self.delete_from(id, &old, PackedRow::pack(&old))
    }

    fn delete_known(&self, id: RowId, old: &PackedRow) -> Result<()> {
        if writer().is_none() {
            return self.inner.delete_known(id, old);
        }
        self.delete_from(id, &old.unpack(), old.clone())
    }

    fn truncate(&self) -> Result<()> {
        self.inner.truncate()
    }
    fn begin_bulk(&self, write_buffer: usize) {
        self.inner.begin_bulk(write_buffer)
    }
    fn end_bulk(&self) -> Result<()> {
        self.inner.end_bulk()
    }
    fn set_keys_disabled(&self, disabled: bool) -> Result<bool> {
        self.inner.set_keys_disabled(disabled)
    }
    fn flush(&self) -> Result<()> {
        self.inner.flush()
    }
    fn sync(&self) -> Result<()> {
        self.inner.sync()
    }
    fn stats(&self) -> TableStats {
        self.inner.stats()
    }
    fn check(&self) -> Result<Vec<String>> {
        self.inner.check()
    }
}

impl MvccTable {
    /// The engine's row at `id`, which a writer is about to `change`.
    fn current(&self, id: RowId, change: &str) -> Result<Row> {
        self.inner
            .fetch(&[id])?
            .pop()
            .ok_or_else(|| Error::internal(format!("row to {change} is missing")))
    }

    /// A writer's update of `old` (the row at `id` now, also packed); `note` hears a new
    /// id after the version store has.
    fn update_from(
        &self,
        id: RowId,
        old: &Row,
        packed: PackedRow,
        row: Row,
        note: &mut dyn FnMut(RowId),
    ) -> Result<RowId> {
        let (ctx, txn) = writer().expect("called under a writer");
        let mut keys = self.row_keys(old, Some(id));
        for k in self.row_keys(&row, Some(id)) {
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        self.lock_keys(&ctx, &txn, &keys)?;
        // The earlier version is recorded before the engine changes the row.
        self.versions.record(&txn, id, Some(packed.clone()));
        self.bracket(&txn, || {
            self.inner.update_known(id, &packed, row, &mut |nid| {
                self.versions.record(&txn, nid, None);
                note(nid);
            })
        })
    }

    fn delete_from(&self, id: RowId, old: &Row, packed: PackedRow) -> Result<()> {
        let (ctx, txn) = writer().expect("called under a writer");
        self.lock_keys(&ctx, &txn, &self.row_keys(old, Some(id)))?;
        self.versions.record(&txn, id, Some(packed.clone()));
        self.bracket(&txn, || self.inner.delete_known(id, &packed))
    }

    /// An engine write. A row-locking engine tells new ids before readers can find
    /// them and earlier versions are recorded before it writes, so readers need not
    /// wait for it; for other engines readers wait until the write is over.
    fn bracket<T>(&self, txn: &Txn, f: impl FnOnce() -> Result<T>) -> Result<T> {
        if self.row_locks {
            return f();
        }
        self.versions.begin_op(txn.id);
        let r = f();
        self.versions.end_op(txn.id);
        r
    }

    /// An answer the engine computes from its newest rows, when the snapshot sees
    /// exactly those; None otherwise (the caller then reads the rows).
    fn unless_hidden<T>(&self, f: impl FnOnce() -> Result<Option<T>>) -> Result<Option<T>> {
        let Some(snap) = current().and_then(|c| c.snap.clone()) else {
            return f();
        };
        if self.versions.quiet() {
            let r = f()?;
            if self.versions.quiet() {
                return Ok(r);
            }
            return Ok(None);
        }
        if self.versions.settled(&snap).hides_any(&snap) {
            return Ok(None);
        }
        let r = f()?;
        if self.versions.settled(&snap).hides_any(&snap) {
            return Ok(None);
        }
        Ok(r)
    }
}

fn writer() -> Option<(Rc<Context>, Arc<Txn>)> {
    let ctx = current()?;
    let txn = ctx.txn.clone()?;
    Some((ctx, txn))
}

struct MvccCursor<'a> {
    table: &'a MvccTable,
    inner: Box<dyn Cursor + 'a>,
    snap: Option<Snapshot>,
    lock: Option<(LockMode, Rc<Context>)>,
    filter: Option<Pred>,
    /// Ids below this are covered by batches already returned.
    next_id: RowId,
    done: bool,
}

impl MvccCursor<'_> {
    /// Put a batch (covering ids `next_id..=upto`) right for the snapshot.
    fn correct(&mut self, batch: Batch, upto: RowId) -> Batch {
        let Some(snap) = &self.snap else {
            return batch;
        };
        if self.table.versions.quiet() {
            return batch;
        }
        let st = self.table.versions.settled(snap);
        if !st.hides_any(snap) {
            return batch;
        }
        let mut hidden: BTreeMap<RowId, Option<Row>> = st
            .hidden_in(snap, self.next_id..=upto)
            .into_iter()
            .collect();
        drop(st);
        let mut out = Batch::default();
        let passes = |r: &Row, f: &Option<Pred>| f.as_ref().is_none_or(|f| f.eval(r) == Some(true));
        for (id, row) in batch.ids.into_iter().zip(batch.rows) {
            // Rows the engine no longer has, in id order before this one.
            while let Some((&h, _)) = hidden.range(..id).next() {
                if let Some(Some(r)) = hidden.remove(&h) {
                    if passes(&r, &self.filter) {
                        out.ids.push(h);
                        out.rows.push(r);
                    }
                }
            }
            match hidden.remove(&id) {
                None => {
                    out.ids.push(id);
                    out.rows.push(row);
                }
                Some(Some(r)) if passes(&r, &self.filter) => {
                    out.ids.push(id);
                    out.rows.push(r);
                }
                Some(_) => {}
            }
        }
        for (h, r) in hidden {
            if let Some(r) = r.filter(|r| passes(r, &self.filter)) {
                out.ids.push(h);
                out.rows.push(r);
            }
        }
        out
    }
}

impl Cursor for MvccCursor<'_> {
    fn next_batch(&mut self) -> Result<Option<Batch>> {
        loop {
            if self.done {
                return Ok(None);
            }
            let batch = match self.inner.next_batch()? {
                Some(b) => {
                    let upto = b.ids.iter().copied().max().unwrap_or(self.next_id);
                    let b = self.correct(b, upto);
                    self.next_id = upto.saturating_add(1);
                    b
                }
                None => {
                    self.done = true;
                    self.correct(Batch::default(), RowId::MAX)
                }
            };
            let batch = match &self.lock {
                Some((mode, ctx)) => {
                    let (ids, rows) = self.table.lock_rows(ctx, *mode, batch.ids, batch.rows)?;
                    Batch { ids, rows }
                }
                None => batch,
            };
            if !batch.rows.is_empty() {
                return Ok(Some(batch));
            }
        }
    }
}
