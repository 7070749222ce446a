//! Failed-login throttling, as MySQL's connection_control: once an account name has failed
//! to log in from one host `connection_control_failed_connections_threshold` times in a
//! row, every further attempt from there — right password or not — is answered only after
//! a delay that grows by `connection_control_min_connection_delay` per failure, up to
//! `connection_control_max_connection_delay`. A successful login clears the count.
//!
//! Owns the counts; the server does the waiting. Must not hold its lock while anyone waits.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

/// Keys remembered at most; past that the one with the fewest failures goes (names made
/// up by the thousand cannot grow this without bound).
const REMEMBERED: usize = 65_536;

/// Failures in a row by key (an account name and host, or a host), bounded.
pub(crate) struct Failures<K>(Mutex<HashMap<K, u64>>);

impl<K> Default for Failures<K> {
    fn default() -> Self {
        Failures(Mutex::new(HashMap::new()))
    }
}

impl<K: std::hash::Hash + Eq + Clone> Failures<K> {
    pub(crate) fn get(&self, k: &K) -> u64 {
        self.0.lock().get(k).copied().unwrap_or(0)
    }

    pub(crate) fn failed(&self, k: K) {
        let mut f = self.0.lock();
        if f.len() >= REMEMBERED && !f.contains_key(&k) {
            if let Some(old) = f.iter().min_by_key(|e| *e.1).map(|e| e.0.clone()) {
                f.remove(&old);
            }
        }
        *f.entry(k).or_default() += 1;
    }

    pub(crate) fn succeeded(&self, k: &K) {
        self.0.lock().remove(k);
    }

    pub(crate) fn clear(&self) {
        self.0.lock().clear();
    }
}

#[derive(Default)]
pub struct LoginThrottle {
    failures: Failures<(String, String)>,
    /// Attempts delayed since start (`Connection_control_delay_generated`).
    pub delays: AtomicU64,
}

/// The delay settings, read from the globals at each attempt.
#[derive(Clone, Copy)]
pub struct Policy {
    pub threshold: u32,
    pub step: Duration,
    pub max: Duration,
}

impl LoginThrottle {
    /// How long an attempt by `user` from `host` waits before it is answered.
    pub fn delay(&self, user: &str, host: &str, p: Policy) -> Option<Duration> {
        if p.threshold == 0 {
            return None;
        }
        let n = self.failures.get(&(user.to_string(), host.to_string()));
        if n < p.threshold as u64 {
            return None;
        }
        self.delays.fetch_add(1, Ordering::Relaxed);
        let over = (n - p.threshold as u64 + 1).min(u32::MAX as u64) as u32;
        Some(p.step.saturating_mul(over).min(p.max))
    }

    pub fn failed(&self, user: &str, host: &str) {
        self.failures.failed((user.to_string(), host.to_string()));
    }

    pub fn succeeded(&self, user: &str, host: &str) {
        self.failures
            .succeeded(&(user.to_string(), host.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Delays start at the threshold, grow a step per failure up to the cap, apply to
    /// a right password too, and end with a successful login; others are not slowed.
    #[test]
    fn delays_grow_past_the_threshold_and_end_at_a_login() {
        let t = LoginThrottle::default();
        let p = Policy {
            threshold: 3,
            step: Duration::from_secs(1),
            max: Duration::from_secs(2),
        };
        let mut seen = vec![];
        for _ in 0..5 {
            seen.push(t.delay("app", "10.0.0.9", p).map(|d| d.as_secs()));
            t.failed("app", "10.0.0.9");
        }
        assert_eq!(seen, [None, None, None, Some(1), Some(2)]);
        assert_eq!(t.delay("app", "10.0.0.9", p), Some(Duration::from_secs(2)));
        assert_eq!(t.delay("app", "10.0.0.8", p), None);
        assert_eq!(t.delay("other", "10.0.0.9", p), None);
        t.succeeded("app", "10.0.0.9");
        assert_eq!(t.delay("app", "10.0.0.9", p), None);
        assert_eq!(t.delays.load(Ordering::Relaxed), 3);
        let off = Policy { threshold: 0, ..p };
        for _ in 0..5 {
            t.failed("x", "h");
        }
        assert_eq!(t.delay("x", "h", off), None);
    }
}
