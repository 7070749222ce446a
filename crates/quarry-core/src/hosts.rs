//! `max_connect_errors`: a host whose connections keep failing in the handshake (bad
//! packets, a client that stops answering) is refused with 1129 until `FLUSH HOSTS`, as
//! MariaDB's host cache does. Wrong passwords do not count (the login throttle answers
//! those); a successful login clears the host's count; loopback clients are never
//! blocked (MariaDB keeps no host cache entry for them).
//!
//! Owns the counts. Must not touch: sockets (the server decides what failed).

use crate::throttle::Failures;

#[derive(Default)]
pub struct HostErrors {
    counts: Failures<String>,
}

impl HostErrors {
    /// Has `host` failed `max` handshakes in a row (0: never blocked)?
    pub fn blocked(&self, host: &str, max: u64) -> bool {
        max > 0 && !crate::accounts::is_loopback(host) && self.counts.get(&host.to_string()) >= max
    }

    pub fn failed(&self, host: &str) {
        if !crate::accounts::is_loopback(host) {
            self.counts.failed(host.to_string());
        }
    }

    pub fn succeeded(&self, host: &str) {
        self.counts.succeeded(&host.to_string());
    }

    /// FLUSH HOSTS.
    pub fn flush(&self) {
        self.counts.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_is_blocked_after_max_errors_until_flushed_or_it_logs_in() {
        let h = HostErrors::default();
        for _ in 0..3 {
            assert!(!h.blocked("10.0.0.9", 3));
            h.failed("10.0.0.9");
        }
        assert!(h.blocked("10.0.0.9", 3));
        assert!(!h.blocked("10.0.0.8", 3), "other hosts are not");
        assert!(!h.blocked("10.0.0.9", 0), "0 blocks nobody");
        h.flush();
        assert!(!h.blocked("10.0.0.9", 3));
        h.failed("10.0.0.9");
        h.failed("10.0.0.9");
        h.succeeded("10.0.0.9");
        h.failed("10.0.0.9");
        assert!(!h.blocked("10.0.0.9", 2), "a login starts the count again");
        for _ in 0..10 {
            h.failed("127.0.0.1");
        }
        assert!(!h.blocked("127.0.0.1", 3), "loopback is never blocked");
    }
}
