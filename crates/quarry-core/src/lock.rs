//! The database-wide metadata lock: shared by statements (and by an open transaction to
//! its end), exclusive for DDL, which so waits for open transactions and runs alone.

use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use quarry_common::{Error, Result};

#[derive(Default)]
struct State {
    readers: usize,
    writer: Option<u64>,
    waiting_writers: usize,
}

#[derive(Default)]
pub struct TxnLock {
    state: Mutex<State>,
    cv: Condvar,
}

impl TxnLock {
    pub fn lock_shared(&self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut st = self.state.lock();
        // Writers waiting get priority so a stream of readers cannot starve them.
        while st.writer.is_some() || st.waiting_writers > 0 {
            if self.cv.wait_until(&mut st, deadline).timed_out() {
                return Err(Error::lock_wait_timeout());
            }
        }
        st.readers += 1;
        Ok(())
    }

    pub fn unlock_shared(&self) {
        let mut st = self.state.lock();
        st.readers -= 1;
        if st.readers == 0 {
            self.cv.notify_all();
        }
    }

    pub fn lock_exclusive(&self, owner: u64, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut st = self.state.lock();
        st.waiting_writers += 1;
        while st.writer.is_some() || st.readers > 0 {
            if self.cv.wait_until(&mut st, deadline).timed_out() {
                st.waiting_writers -= 1;
                self.cv.notify_all();
                return Err(Error::lock_wait_timeout());
            }
        }
        st.waiting_writers -= 1;
        st.writer = Some(owner);
        Ok(())
    }

    pub fn unlock_exclusive(&self, owner: u64) {
        let mut st = self.state.lock();
        if st.writer == Some(owner) {
            st.writer = None;
            self.cv.notify_all();
        }
    }
}
