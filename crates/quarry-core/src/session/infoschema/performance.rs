//! What monitoring tools read about the running server: `performance_schema`'s threads,
//! status and connection attributes, and `information_schema`'s PLUGINS, INNODB_TRX and
//! INNODB_BUFFER_POOL_STATS, filled from Quarry's own structures (the connections, the
//! status counters, the row engine's page cache).
//!
//! `events_statements_summary_by_digest` holds the digests `crate::digest` keeps while
//! `performance_schema` is ON (empty while it is OFF, the default, as MariaDB's).
//!
//! Owns: the rows. Must not touch: the counters (the database's and engines').
//! `table_io_waits_summary_by_table` is empty: Quarry does not time table I/O yet.

use quarry_common::{Error, Result, Row, Value};

use super::{definitions_of, int, s};
use crate::privileges::PROCESS;
use crate::session::Session;

impl Session {
    pub(super) fn performance_rows(&self, name: &str) -> Vec<Row> {
        match name {
            "threads" => self
                .visible_processes()
                .into_iter()
                .map(|p| {
                    let connection = if p.tls.get().is_some() {
                        "SSL/TLS"
                    } else {
                        "TCP/IP"
                    };
                    vec![
                        int(p.id),
                        s("thread/sql/one_connection"),
                        s("FOREGROUND"),
                        int(p.id),
                        s(&p.user),
                        s(&p.host),
                        p.db.lock().clone().map(Value::Str).unwrap_or(Value::Null),
                        s(p.command.lock().clone()),
                        int(p.started.lock().elapsed().as_secs()),
                        p.progress
                            .lock()
                            .as_ref()
                            .map_or(Value::Null, |g| s(g.stage)),
                        p.info.lock().clone().map(Value::Str).unwrap_or(Value::Null),
                        Value::Null,
                        Value::Null,
                        s("YES"),
                        s("YES"),
                        s(connection),
                        Value::Null,
                    ]
                })
                .collect(),
            "global_status" | "session_status" => self
                .status_values()
                .into_iter()
                .map(|(k, v)| vec![s(k), s(v)])
                .collect(),
            // Every connection's attributes; the `account_` table only the account's own.
            "session_connect_attrs" | "session_account_connect_attrs" => {
                let own = name == "session_account_connect_attrs";
                let mut rows = vec![];
                for p in self.db.processes() {
                    if own && !self.is_own(&p) {
                        continue;
                    }
                    for (i, (k, v)) in p.connect_attrs.get().into_iter().flatten().enumerate() {
                        rows.push(vec![int(p.id), s(k), s(v), int(i as i64)]);
                    }
                }
                rows
            }
            "events_statements_summary_by_digest" => self
                .db
                .digests
                .rows()
                .into_iter()
                .map(|d| {
                    let opt = |v: Option<String>| v.map_or(Value::Null, Value::Str);
                    let mut r = vec![
                        opt(d.schema),
                        opt(d.digest),
                        opt(d.text),
                        int(d.count),
                        int(d.sum_picos),
                        int(d.min_picos),
                        int(d.sum_picos / d.count.max(1)),
                        int(d.max_picos),
                        int(d.lock_picos),
                        int(d.errors),
                        int(d.warnings),
                        int(d.rows_affected),
                        int(d.rows_sent),
                        int(d.rows_examined),
                    ];
                    // Temporary tables, joins, ranges, sorts: not counted (0); SELECT_SCAN
                    // and NO_INDEX_USED are the statements that read a table whole.
                    r.extend(std::iter::repeat_n(int(0), 6));
                    r.push(int(d.full_scans));
                    r.extend(std::iter::repeat_n(int(0), 4));
                    r.push(int(d.full_scans));
                    r.push(int(0));
                    r.push(Value::DateTime(d.first_seen));
                    r.push(Value::DateTime(d.last_seen));
                    r
                })
                .collect(),
            _ => vec![],
        }
    }

    /// PLUGINS: the storage engines and authentication plugins (SHOW PLUGINS shows them).
    pub(in crate::session) fn plugin_rows(&self) -> Vec<Row> {
        let mut rows: Vec<Row> = self
            .db
            .catalog
            .engines
            .names()
            .into_iter()
            .map(|(n, e)| {
                let comment = format!("{} (maps to the Quarry '{}' engine)", e.comment(), e.name());
                (n.to_string(), "STORAGE ENGINE", "101119.0", comment)
            })
            .chain(
                [
                    ("mysql_native_password", "Native MySQL authentication"),
                    ("caching_sha2_password", "MySQL 8's SHA-256 authentication"),
                    ("ed25519", "Elliptic curve ED25519 based authentication"),
                ]
                .map(|(n, d)| (n.to_string(), "AUTHENTICATION", "2.2", d.to_string())),
            )
            .map(|(n, kind, type_version, description)| {
                vec![
                    s(n),
                    s("1.0"),
                    s("ACTIVE"),
                    s(kind),
                    s(type_version),
                    Value::Null,
                    Value::Null,
                    s("Quarry"),
                    s(description),
                    s("Apache-2.0"),
                    s("FORCE"),
                    s("Stable"),
                    s("1.0"),
                ]
            })
            .collect();
        rows.sort_by(|a, b| a[3].to_string().cmp(&b[3].to_string()));
        rows
    }

    /// MariaDB asks for PROCESS before it shows the InnoDB tables.
    pub(super) fn require_process(&self) -> Result<()> {
        if self.privileges().global & PROCESS == 0 {
            return Err(Error::need_privilege("PROCESS"));
        }
        Ok(())
    }

    /// INNODB_TRX: each open transaction (BEGIN, or autocommit off), running.
    pub(super) fn innodb_trx_rows(&self) -> Result<Vec<Row>> {
        self.require_process()?;
        let isolation = self
            .db
            .global("tx_isolation")
            .map_or_else(|| "REPEATABLE-READ".to_string(), |v| v.to_string())
            .replace('-', " ");
        let mut rows = vec![];
        for p in self.db.processes() {
            let Some((id, started)) = *p.trx.lock() else {
                continue;
            };
            let mut r = vec![
                s(id.to_string()),
                s("RUNNING"),
                Value::DateTime(started),
                Value::Null,
                Value::Null,
                int(0),
                int(p.id),
                p.info.lock().clone().map(Value::Str).unwrap_or(Value::Null),
                Value::Null,
            ];
            r.extend(std::iter::repeat_n(int(0), 7));
            r.extend([s(&isolation), int(1), int(1), Value::Null, int(0), int(0)]);
            rows.push(r);
        }
        Ok(rows)
    }

    /// INNODB_BUFFER_POOL_STATS: one pool, the row engine's page cache, with the figures
    /// it keeps (pages, free, modified, reads, writes, gets, hit rate); the others 0.
    pub(super) fn buffer_pool_row(&self) -> Result<Row> {
        self.require_process()?;
        let pool = self.db.pool();
        let get = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        let (hits, misses) = (get(&pool.stats.hits), get(&pool.stats.misses));
        let (free, dirty) = pool.free_and_dirty();
        let size = pool.frame_count();
        let gets = hits + misses;
        let def = definitions_of(0)
            .iter()
            .find(|d| d.name == "INNODB_BUFFER_POOL_STATS")
            .expect("defined");
        Ok(def
            .columns
            .iter()
            .map(|c| match c.name.as_str() {
                "POOL_SIZE" => int(size as i64),
                "FREE_BUFFERS" => int(free as i64),
                "DATABASE_PAGES" => int((size - free) as i64),
                "MODIFIED_DATABASE_PAGES" => int(dirty as i64),
                "NUMBER_PAGES_READ" => int(get(&pool.stats.reads)),
                "NUMBER_PAGES_WRITTEN" => int(get(&pool.stats.writes)),
                "NUMBER_PAGES_GET" => int(gets),
                // Hits per thousand gets, as InnoDB gives it.
                "HIT_RATE" => int((hits * 1000).checked_div(gets).unwrap_or(0)),
                _ if c.ty.kind == quarry_common::TypeKind::Double => Value::Double(0.0),
                _ => int(0),
            })
            .collect())
    }
}
