//! A session's transaction: the database-wide metadata lock it holds, the log and
//! snapshot transactions it begins, statement and transaction rollback by compensation,
//! and the commit (the COMMIT record, then locks released, then the wait for the log).
//! Statement dispatch and everything a statement does stay in `mod.rs`.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use quarry_common::Result;
use quarry_executor::Undo;

use super::{Held, Isolation, Session};

impl Session {
    // ---------------------------------------------------------------- locking

    /// The database-wide lock works as a metadata lock: statements share it (a
    /// transaction keeps it to its end), DDL takes it alone.
    pub(super) fn acquire(&mut self, exclusive: bool) -> Result<()> {
        match (self.held, exclusive) {
            (Held::Exclusive, _) | (Held::Shared, false) => Ok(()),
            (Held::Shared, true) => {
                self.db.lock.unlock_shared();
                self.held = Held::None;
                self.acquire(true)
            }
            (Held::None, true) => {
                self.db
                    .lock
                    .lock_exclusive(self.info.id, self.lock_timeout())?;
                self.held = Held::Exclusive;
                Ok(())
            }
            (Held::None, false) => {
                self.db.lock.lock_shared(self.lock_timeout())?;
                self.held = Held::Shared;
                Ok(())
            }
        }
    }

    pub(super) fn release(&mut self) {
        match self.held {
            Held::Shared => self.db.lock.unlock_shared(),
            Held::Exclusive => self.db.lock.unlock_exclusive(self.info.id),
            Held::None => {}
        }
        self.held = Held::None;
    }

    // ---------------------------------------------------------------- transactions

    /// The open transaction, begun now if there is none (and its log id set for this
    /// thread's writes).
    pub(super) fn begin_txn(&mut self) -> Arc<quarry_txn::Txn> {
        if self.wal_txn == 0 {
            self.wal_txn = self.db.wal.begin_txn();
            // Slots it frees stay parked until readers see it ended too.
            self.db.wal.hold(self.wal_txn);
        }
        quarry_storage::Wal::set_thread_txn(self.wal_txn);
        self.txn.get_or_insert_with(|| self.db.txns.begin()).clone()
    }

    /// What the statement's table calls work under: its transaction, the snapshot it
    /// reads (`write`: the newest committed rows, as InnoDB's current read) and how its
    /// lock waits end.
    pub(super) fn txn_context(
        &mut self,
        write: bool,
        read_lock: Option<quarry_txn::LockMode>,
    ) -> quarry_txn::Context {
        let txn = (self.in_txn || write || read_lock.is_some()).then(|| self.begin_txn());
        let own = txn.as_ref().map_or(0, |t| t.id);
        let iso = self.settings().isolation;
        let snap = if write || read_lock.is_some() || iso == Isolation::ReadCommitted {
            Some(self.db.txns.snapshot(own))
        } else if iso == Isolation::ReadUncommitted {
            None
        } else if self.in_txn {
            let db = &self.db;
            Some(
                self.txn_snap
                    .get_or_insert_with(|| db.txns.snapshot(own))
                    .clone(),
            )
        } else {
            Some(self.db.txns.snapshot(own))
        };
        let info = self.info.clone();
        quarry_txn::Context {
            mgr: self.db.txns.clone(),
            txn,
            snap,
            read_lock,
            current_read: write,
            lock_timeout: self.lock_timeout(),
            killed: Some(std::rc::Rc::new(move || {
                info.killed.load(Ordering::Relaxed)
            })),
        }
    }

    /// Undo the changes after `mark`, as the transaction (its locks cover them).
    pub(super) fn rollback_to(&mut self, mark: usize) -> Result<()> {
        let ops: Vec<Undo> = self.undo.drain(mark..).collect();
        if ops.is_empty() {
            return Ok(());
        }
        let ctx = quarry_txn::Context {
            mgr: self.db.txns.clone(),
            txn: self.txn.clone(),
            snap: None,
            read_lock: None,
            current_read: true,
            lock_timeout: self.lock_timeout(),
            killed: None,
        };
        let _g = quarry_txn::enter(ctx);
        quarry_storage::Wal::set_thread_txn(self.wal_txn);
        let _undoing = quarry_storage::Wal::rolling_back();
        undo_ops(ops)
    }

    /// The COMMIT record goes into the log, the transaction's changes become visible
    /// and its locks are released; then the fsync is waited for, so the next writers'
    /// work overlaps it and one fsync serves several commits (their records queue
    /// behind ours, so they are never durable first).
    /// A COMMIT the log has no disk space for is not written: the whole transaction is
    /// rolled back and the error returned (it changed nothing).
    pub fn commit(&mut self) -> Result<()> {
        let lsn = match self.end_txn(true) {
            Ok(lsn) => lsn,
            Err(e) => {
                let _ = self.rollback();
                return Err(e);
            }
        };
        self.undo.clear();
        self.savepoints.clear();
        self.in_txn = false;
        *self.info.trx.lock() = None;
        self.txn_read_only = false;
        self.release();
        self.db.wal.wait_commit(lsn)
    }

    /// BEGIN, or the first statement with autocommit off: a transaction is open, and
    /// INNODB_TRX lists it.
    pub(super) fn open_txn(&mut self) {
        static NUMBERS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        self.in_txn = true;
        let n = NUMBERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        *self.info.trx.lock() = Some((n, quarry_common::value::DateTime::now()));
    }

    pub fn rollback(&mut self) -> Result<()> {
        let r = self.rollback_to(0);
        self.savepoints.clear();
        self.in_txn = false;
        *self.info.trx.lock() = None;
        self.txn_read_only = false;
        let _ = self.end_txn(false);
        self.release();
        r
    }

    /// Close the transaction in the log and in the transaction table; returns the LSN
    /// a commit must wait for. An error (no log space for the COMMIT) leaves the
    /// transaction open for a rollback.
    pub(super) fn end_txn(&mut self, commit: bool) -> Result<Option<u64>> {
        let wal_txn = self.wal_txn;
        let lsn = if self.wal_txn != 0 {
            quarry_storage::Wal::set_thread_txn(self.wal_txn);
            if commit {
                let r = self.db.wal.commit_no_wait();
                if r.is_err() {
                    quarry_storage::Wal::set_thread_txn(0);
                }
                r?
            } else {
                // Compensations already restored the data; ABORT tells recovery so.
                self.db.wal.abort();
                None
            }
        } else {
            None
        };
        self.wal_txn = 0;
        quarry_storage::Wal::set_thread_txn(0);
        // Its own snapshot goes first: purge may then forget it at once.
        self.txn_snap = None;
        // Slots it freed stay parked until no snapshot can still read the rows that
        // were there (the next transaction to fill one may be such a reader itself).
        match self.txn.take() {
            Some(t) => {
                let wal = self.db.wal.clone();
                t.on_purged(move || wal.release(wal_txn));
                self.db.txns.end(&t);
            }
            None => self.db.wal.release(wal_txn),
        }
        Ok(lsn)
    }
}

/// Undo operations newest-first, following rows that moved when re-inserted. An
/// operation that fails does not stop the others (a compensation whose write-out failed
/// on a full disk is logged and applied all the same); the first error is returned.
fn undo_ops(ops: Vec<Undo>) -> Result<()> {
    let mut moved: HashMap<(usize, u64), u64> = HashMap::new();
    let key =
        |e: &Arc<quarry_catalog::TableEntry>, id: u64| (Arc::as_ptr(e) as *const () as usize, id);
    let mut first = Ok(());
    let mut keep = |r: Result<()>| {
        if first.is_ok() {
            first = r;
        }
    };
    for op in ops.into_iter().rev() {
        match op {
            Undo::Inserted(e, ids) => {
                for id in ids.rev() {
                    let id = *moved.get(&key(&e, id)).unwrap_or(&id);
                    keep(e.handle.delete(id));
                }
            }
            Undo::InsertedAt(e, ids) => {
                for id in ids.into_iter().rev() {
                    let id = *moved.get(&key(&e, id)).unwrap_or(&id);
                    keep(e.handle.delete(id));
                }
            }
            Undo::Deleted(e, rows) => {
                for (id, row) in rows.into_iter().rev() {
                    match e.handle.restore(id, row.unpack()) {
                        Ok(true) => {}
                        Ok(false) => keep(e.handle.insert(row.unpack()).map(|_| ())),
                        Err(err) => keep(Err(err)),
                    }
                }
            }
            Undo::Updated(e, rows) => {
                for (id, old) in rows.into_iter().rev() {
                    let cur = *moved.get(&key(&e, id)).unwrap_or(&id);
                    match e.handle.update(cur, old.unpack()) {
                        Ok(nid) if nid != id => {
                            moved.insert(key(&e, id), nid);
                        }
                        Ok(_) => {}
                        Err(err) => keep(Err(err)),
                    }
                }
            }
        }
    }
    first
}
