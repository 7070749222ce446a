//! Who gets a connection slot. Logged-in sessions hold one of `max_connections` slots
//! (1040 past them). A connection still in its handshake holds a slot of its own kind,
//! so clients that never finish one cannot take logged-in users' slots; when those are
//! all taken, the oldest handshake is cut off for the newcomer (a slow or hostile client
//! loses its place to one that is ready), and `connect_timeout` ends each handshake
//! anyway. Owns the counting only; the protocol is `lib.rs`'s.

use std::collections::VecDeque;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use quarry_core::Database;

pub(crate) fn max_connections(db: &Database) -> usize {
    db.global("max_connections")
        .map(|v| v.to_i64().max(1) as usize)
        .unwrap_or(151)
}

/// A slot counted in `count` while this lives.
pub(crate) struct ConnSlot(Arc<AtomicUsize>);

impl ConnSlot {
    /// One of `max` slots counted by `count`, if one is free.
    pub(crate) fn take(count: &Arc<AtomicUsize>, max: usize) -> Option<ConnSlot> {
        if count.fetch_add(1, Ordering::SeqCst) >= max {
            count.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(ConnSlot(count.clone()))
    }
}

impl Drop for ConnSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Handshakes in progress, oldest first, each with a handle to cut its socket.
#[derive(Default)]
pub(crate) struct Handshakes {
    open: Mutex<VecDeque<(u64, TcpStream)>>,
    next: AtomicU64,
}

/// A handshake's place; it leaves the list when dropped (the handshake ended).
pub(crate) struct Handshake {
    list: Arc<Handshakes>,
    id: u64,
}

impl Handshakes {
    /// Register `stream`'s handshake; when `max` are already open, the oldest is cut off
    /// (its reads fail and it gives its place up).
    pub(crate) fn begin(self: &Arc<Self>, stream: &TcpStream, max: usize) -> Option<Handshake> {
        let handle = stream.try_clone().ok()?;
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut open = self.open.lock().unwrap();
        while open.len() >= max {
            if let Some((_, oldest)) = open.pop_front() {
                let _ = oldest.shutdown(Shutdown::Both);
            }
        }
        open.push_back((id, handle));
        Some(Handshake {
            list: self.clone(),
            id,
        })
    }
}

impl Drop for Handshake {
    fn drop(&mut self) {
        let mut open = self.list.open.lock().unwrap();
        if let Some(i) = open.iter().position(|(id, _)| *id == self.id) {
            open.remove(i);
        }
    }
}
