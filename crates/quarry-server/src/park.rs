//! Idle connections without threads.
//!
//! A connection that has sent nothing for `quarry_idle_thread_timeout_ms` gives its thread back:
//! its session, prepared statements and socket wait here, in one epoll set that the
//! server's parking thread watches, until the client speaks again (a new thread takes the
//! connection up where it was, transaction and all), the connection is killed, or
//! `wait_timeout` passes (it is closed, as MySQL closes a connection idle that long). So
//! a thousand idle clients cost their sessions' memory, not a thousand thread stacks.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::Client;

struct Parked {
    client: Client,
    until: Instant,
}

pub(crate) struct Parking {
    epoll: OwnedFd,
    parked: Mutex<HashMap<u64, Parked>>,
    next_token: AtomicU64,
}

impl Parking {
    pub(crate) fn new() -> io::Result<Parking> {
        // SAFETY: epoll_create1 takes no pointers; a non-negative result is a new
        // descriptor that nothing else owns.
        #[allow(unsafe_code)]
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Parking {
            // SAFETY: `fd` was just created and is owned here alone.
            #[allow(unsafe_code)]
            epoll: unsafe { OwnedFd::from_raw_fd(fd) },
            parked: Mutex::new(HashMap::new()),
            next_token: AtomicU64::new(1),
        })
    }

    /// Keep `client` until its socket has something to read (or it hangs up), for at
    /// most `wait_timeout`. Its buffers are given back meanwhile.
    pub(crate) fn park(&self, mut client: Client, wait_timeout: Duration) {
        client.conn.shrink();
        let fd = client.conn.stream.as_raw_fd();
        let token = self.next_token.fetch_add(1, Ordering::Relaxed);
        let until = Instant::now() + wait_timeout;
        // In the map before the socket is watched, so its first event finds it.
        self.parked.lock().insert(token, Parked { client, until });
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLONESHOT) as u32,
            u64: token,
        };
        // SAFETY: both descriptors are open (the client is in the map, which keeps its
        // socket) and `ev` outlives the call.
        #[allow(unsafe_code)]
        let r =
            unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) };
        if r != 0 {
            // Cannot watch it: close it rather than keep it unanswered.
            self.parked.lock().remove(&token);
        }
    }

    /// Wait up to `timeout` for parked connections to speak; returns them, no longer
    /// watched. Connections killed or idle past their `wait_timeout` are closed here.
    pub(crate) fn wake(&self, timeout: Duration) -> Vec<Client> {
        let mut events = [libc::epoll_event { events: 0, u64: 0 }; 64];
        // SAFETY: `events` is writable for its full length, which is what is passed.
        #[allow(unsafe_code)]
        let n = unsafe {
            libc::epoll_wait(
                self.epoll.as_raw_fd(),
                events.as_mut_ptr(),
                events.len() as i32,
                timeout.as_millis().min(i32::MAX as u128) as i32,
            )
        };
        let mut woken = Vec::new();
        let mut parked = self.parked.lock();
        for ev in events.iter().take(n.max(0) as usize) {
            let token = ev.u64;
            if let Some(p) = parked.remove(&token) {
                self.unwatch(&p.client);
                woken.push(p.client);
            }
        }
        let now = Instant::now();
        let closed: Vec<Parked> = parked
            .extract_if(|_, p| {
                p.until <= now
                    || p.client
                        .session
                        .info
                        .kill_connection
                        .load(Ordering::Relaxed)
            })
            .map(|(_, p)| p)
            .collect();
        drop(parked);
        // Closed outside the lock: ending a session may roll its transaction back.
        for p in closed {
            self.unwatch(&p.client);
        }
        woken
    }

    fn unwatch(&self, client: &Client) {
        // SAFETY: the client's socket is open; EPOLL_CTL_DEL ignores the event pointer.
        #[allow(unsafe_code)]
        unsafe {
            libc::epoll_ctl(
                self.epoll.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                client.conn.stream.as_raw_fd(),
                std::ptr::null_mut(),
            );
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.parked.lock().len()
    }

    /// Close every parked connection (the server is stopping).
    pub(crate) fn close_all(&self) {
        let all: Vec<Parked> = self.parked.lock().drain().map(|(_, p)| p).collect();
        for p in &all {
            self.unwatch(&p.client);
        }
    }
}
