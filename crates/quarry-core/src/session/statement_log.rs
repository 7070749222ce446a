//! What a session tells about its statements: the general and slow query logs
//! (`crate::oplog`) each command as it arrives (Connect, Query, Prepare, Execute, Init
//! DB, Quit) and each statement that ran longer than `long_query_time` (or read a table
//! whole, with `log_queries_not_using_indexes`) with its times and row counts; the
//! latency histograms (`crate::metrics`) and the digest summary (`crate::digest`) every
//! statement.
//!
//! Owns: deciding what is logged and gathering the figures. Must not touch: the files and
//! their formats (`oplog`).

use std::time::{Duration, Instant};

use quarry_common::{Result, Value};

use super::{Output, Session};

/// A statement's figures gathered while it runs (the executor's counts are added as
/// each of its contexts ends).
#[derive(Clone, Copy, Default)]
pub(super) struct StatementStats {
    /// The thread's count of rows engines read when the statement started.
    pub rows_read_before: u64,
    pub full_scan: bool,
    pub lock_wait: Duration,
}

impl Session {
    /// A general log entry for this connection, when the log is on.
    pub fn log_general(&self, command: &str, argument: &str) {
        if self.settings().general_log {
            self.db.logs.general(self.info.id, command, argument);
        }
    }

    /// The connection's first general log entry (`jt@localhost on db using TCP/IP`).
    pub fn log_connect(&self) {
        let host = if crate::accounts::is_loopback(&self.info.host) {
            "localhost"
        } else {
            self.info.host.as_str()
        };
        self.log_general(
            "Connect",
            &format!(
                "{}@{host} on {} using TCP/IP",
                self.info.user,
                self.current_db.as_deref().unwrap_or("")
            ),
        );
    }

    /// A prepared statement's text as the general log shows an Execute: each `?` (outside
    /// quotes and comments) as the literal of its value.
    pub(super) fn log_execute(&self, sql: &str, params: &[Value]) {
        if !self.settings().general_log {
            return;
        }
        let mut out = String::with_capacity(sql.len());
        let mut next = params.iter();
        let mut quote: Option<char> = None;
        for c in sql.chars() {
            match (quote, c) {
                (None, '\'' | '"' | '`') => quote = Some(c),
                (Some(q), _) if c == q => quote = None,
                (None, '?') => {
                    if let Some(v) = next.next() {
                        out.push_str(&literal(v));
                        continue;
                    }
                }
                _ => {}
            }
            out.push(c);
        }
        self.db.logs.general(self.info.id, "Execute", &out);
    }

    /// After a statement: the latency histograms count it, `Slow_queries` too when it
    /// took `long_query_time`, and the slow log holds it when it is on.
    pub(super) fn note_statement(&self, sql: &str, started: Instant, out: &Result<Output>) {
        let st = self.settings();
        let took = started.elapsed();
        self.db.latency.record(sql, took);
        let slow = took.as_micros() as u64 >= st.long_query_us;
        if slow {
            self.db
                .slow_queries
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        let stats = self.stmt_stats.get();
        let examined = quarry_storage_api::HandlerCounters::rows_read_by_this_thread()
            .saturating_sub(stats.rows_read_before);
        let (sent, affected) = match out {
            Ok(Output::Rows { rows, .. }) => (rows.len() as u64, 0),
            Ok(Output::Streamed { rows }) => (*rows, 0),
            Ok(Output::Ok { affected, .. }) => (0, *affected),
            Err(_) => (0, 0),
        };
        if st.digests {
            self.db.digests.record(&crate::digest::Run {
                schema: self.current_db.as_deref(),
                sql,
                picos: took.as_nanos().min(u64::MAX as u128 / 1000) as u64 * 1000,
                lock_picos: stats.lock_wait.as_nanos().min(u64::MAX as u128 / 1000) as u64 * 1000,
                error: out.is_err(),
                warnings: self.warnings.len() as u64,
                rows_affected: affected,
                rows_sent: sent,
                rows_examined: examined,
                full_scan: stats.full_scan,
            });
        }
        if !st.slow_log {
            return;
        }
        if !(slow || (st.log_not_using_indexes && stats.full_scan)) {
            return;
        }
        let now_secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        self.db.logs.slow(&crate::oplog::SlowEntry {
            user: &self.info.user,
            host: &self.info.host,
            thread: self.info.id,
            db: self.current_db.as_deref(),
            started: now_secs - took.as_secs() as i64,
            query_secs: took.as_secs_f64(),
            lock_secs: stats.lock_wait.as_secs_f64(),
            rows_sent: sent,
            rows_examined: examined,
            rows_affected: affected,
            full_scan: stats.full_scan,
            verbose: st.slow_verbose,
            sql,
        });
    }
}

/// A value as an SQL literal, as MariaDB's general log writes an Execute's parameters
/// (`'it\'s'`: backslash escapes, not doubled quotes).
fn literal(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Int(_) | Value::UInt(_) | Value::Double(_) | Value::Decimal(_) => v.to_string(),
        Value::Bytes(b) if std::str::from_utf8(b).is_err() => {
            let hex: String = b.iter().map(|x| format!("{x:02X}")).collect();
            format!("X'{hex}'")
        }
        other => format!(
            "'{}'",
            other
                .as_str_lossy()
                .replace('\\', "\\\\")
                .replace('\'', "\\'")
        ),
    }
}
