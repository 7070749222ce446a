//! Table locks sessions take explicitly: LOCK TABLES (READ: others may read, not write;
//! WRITE: others may do neither) and the global read lock of FLUSH TABLES WITH READ LOCK
//! (no session but its holder writes). Other sessions' statements wait for them (1205
//! after `lock_wait_timeout`); while no session holds any, a statement looks at one
//! counter and goes on.
//!
//! Owns who holds what and the waiting. What a statement uses, and the errors a holder's
//! own statements get (1099, 1100, 1223), are the session's (`session/table_locks.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use quarry_common::{Error, Result};

/// (database, table)
pub type TableName = (String, String);

#[derive(Default)]
struct Held {
    /// Sessions holding READ (a session may lock a table under several aliases).
    readers: Vec<u64>,
    writers: Vec<u64>,
}

#[derive(Default)]
struct State {
    tables: HashMap<TableName, Held>,
    /// Sessions holding the global read lock.
    global: Vec<u64>,
}

#[derive(Default)]
pub struct TableLocks {
    /// Sessions holding any table lock or the global read lock.
    holders: AtomicUsize,
    /// Writing statements running now (the global read lock waits for them).
    writing: AtomicUsize,
    state: Mutex<State>,
    cv: Condvar,
}

/// A statement's admission: its use of tables ends when this is dropped.
pub struct Admission<'a> {
    locks: &'a TableLocks,
    write: bool,
}

impl Drop for Admission<'_> {
    fn drop(&mut self) {
        if self.write {
            self.locks.writing.fetch_sub(1, Ordering::SeqCst);
            if self.locks.holders.load(Ordering::SeqCst) > 0 {
                let _g = self.locks.state.lock();
                self.locks.cv.notify_all();
            }
        }
    }
}

/// How long one wait sleeps before looking again (a wake-up missed between a
/// statement's end and a waiter's check costs no more than this).
const RECHECK: Duration = Duration::from_millis(50);

impl TableLocks {
    /// Let session `me` run a statement that writes something (`writes_any`, DDL
    /// included) or not, reading and writing the tables `tables` gives (asked only while
    /// some session holds a lock): it waits while another session holds a conflicting one.
    pub fn admit(
        &self,
        me: u64,
        writes_any: bool,
        timeout: Duration,
        tables: impl FnOnce() -> Result<(Vec<TableName>, Vec<TableName>)>,
    ) -> Result<Admission<'_>> {
        if writes_any {
            self.writing.fetch_add(1, Ordering::SeqCst);
        }
        let admission = Admission {
            locks: self,
            write: writes_any,
        };
        if self.holders.load(Ordering::SeqCst) == 0 {
            return Ok(admission);
        }
        let (reads, writes) = tables()?;
        let deadline = Instant::now() + timeout;
        let mut st = self.state.lock();
        loop {
            let others = |ids: &[u64]| ids.iter().any(|&s| s != me);
            let blocked = (writes_any && others(&st.global))
                || reads
                    .iter()
                    .any(|t| st.tables.get(t).is_some_and(|h| others(&h.writers)))
                || writes.iter().any(|t| {
                    st.tables
                        .get(t)
                        .is_some_and(|h| others(&h.writers) || others(&h.readers))
                });
            if !blocked {
                return Ok(admission);
            }
            // Not counted as writing while it waits: a global read lock may be taken.
            if writes_any {
                self.writing.fetch_sub(1, Ordering::SeqCst);
                self.cv.notify_all();
            }
            let now = Instant::now();
            if now >= deadline {
                std::mem::forget(admission);
                return Err(Error::lock_wait_timeout());
            }
            self.cv.wait_for(&mut st, RECHECK.min(deadline - now));
            if writes_any {
                self.writing.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    /// LOCK TABLES: session `me` (holding nothing now) takes `tables` (table, write),
    /// waiting for other holders; all or none.
    pub fn lock(&self, me: u64, tables: &[(TableName, bool)], timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        self.holders.fetch_add(1, Ordering::SeqCst);
        let mut st = self.state.lock();
        loop {
            let others = |ids: &[u64]| ids.iter().any(|&s| s != me);
            let blocked = tables.iter().any(|(t, write)| {
                (*write && others(&st.global))
                    || st
                        .tables
                        .get(t)
                        .is_some_and(|h| others(&h.writers) || (*write && others(&h.readers)))
            });
            if !blocked {
                break;
            }
            let now = Instant::now();
            if now >= deadline {
                self.holders.fetch_sub(1, Ordering::SeqCst);
                return Err(Error::lock_wait_timeout());
            }
            self.cv.wait_for(&mut st, RECHECK.min(deadline - now));
        }
        for (t, write) in tables {
            let h = st.tables.entry(t.clone()).or_default();
            if *write {
                h.writers.push(me);
            } else {
                h.readers.push(me);
            }
        }
        Ok(())
    }

    /// FLUSH TABLES WITH READ LOCK: no other session writes until `me` unlocks; waits for
    /// the writing statements running now and for other sessions' WRITE locks.
    pub fn lock_global(&self, me: u64, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        self.holders.fetch_add(1, Ordering::SeqCst);
        let mut st = self.state.lock();
        st.global.push(me);
        loop {
            let writers = st
                .tables
                .values()
                .any(|h| h.writers.iter().any(|&s| s != me));
            if self.writing.load(Ordering::SeqCst) == 0 && !writers {
                return Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                st.global.retain(|&s| s != me);
                self.holders.fetch_sub(1, Ordering::SeqCst);
                self.cv.notify_all();
                return Err(Error::lock_wait_timeout());
            }
            self.cv.wait_for(&mut st, RECHECK.min(deadline - now));
        }
    }

    /// UNLOCK TABLES (or the session's end): everything `me` holds.
    pub fn unlock(&self, me: u64) {
        let mut st = self.state.lock();
        let mut held = 0;
        for h in st.tables.values_mut() {
            let before = h.readers.len() + h.writers.len();
            h.readers.retain(|&s| s != me);
            h.writers.retain(|&s| s != me);
            held += before - h.readers.len() - h.writers.len();
        }
        st.tables
            .retain(|_, h| !h.readers.is_empty() || !h.writers.is_empty());
        let before = st.global.len();
        st.global.retain(|&s| s != me);
        // One count per LOCK TABLES or global read lock taken.
        let took_tables = held > 0;
        let took_global = st.global.len() < before;
        for took in [took_tables, took_global] {
            if took {
                self.holders.fetch_sub(1, Ordering::SeqCst);
            }
        }
        self.cv.notify_all();
    }
}
