//! What the server is doing and how it is set: the threads (SHOW PROCESSLIST), the
//! variables (SHOW VARIABLES) and the status counters (SHOW STATUS), as rows the SHOW
//! statements and `information_schema` both give.
//!
//! Owns: reading them. Must not touch: setting them (`set_stmt`) or counting (the
//! database's and engines' counters).

use quarry_common::{Decimal, Error, Result, Row, Value};

use super::{get_delays, like_filter, num, text, Output, Session};

impl Session {
    /// SHOW PROCESSLIST's rows: Id, User, Host, db, Command, Time, State, Info, Progress.
    /// Without PROCESS an account sees its own threads only.
    pub(super) fn process_rows(&self) -> Vec<Row> {
        self.visible_processes()
            .into_iter()
            .map(|p| {
                let progress = p.progress.lock().clone();
                vec![
                    Value::Int(p.id as i64),
                    Value::Str(p.user.clone()),
                    Value::Str(p.host.clone()),
                    p.db.lock().clone().map(Value::Str).unwrap_or(Value::Null),
                    Value::Str(p.command.lock().clone()),
                    Value::Int(p.started.lock().elapsed().as_secs() as i64),
                    Value::Str(
                        progress
                            .as_ref()
                            .map_or(String::new(), |g| g.stage.to_string()),
                    ),
                    p.info.lock().clone().map(Value::Str).unwrap_or(Value::Null),
                    Value::Decimal(Decimal::new(
                        progress
                            .as_ref()
                            .map_or(0, |g| (g.percent() * 1000.0) as i128),
                        3,
                    )),
                ]
            })
            .collect()
    }

    /// A connection of this session's account.
    pub(super) fn is_own(&self, p: &crate::ProcessInfo) -> bool {
        p.user == self.info.user && p.account_host == self.info.account_host
    }

    /// The connections the account may see: all of them with PROCESS, else its own.
    pub(super) fn visible_processes(&self) -> Vec<std::sync::Arc<crate::ProcessInfo>> {
        let all = self.privileges().global & crate::privileges::PROCESS != 0;
        self.db
            .processes()
            .into_iter()
            .filter(|p| all || self.is_own(p))
            .collect()
    }

    /// Every system variable and its value (this session's where it set one, unless
    /// `global`), sorted by name.
    pub(super) fn variable_values(&self, global: bool) -> Vec<(String, Value)> {
        let mut all: Vec<(String, Value)> = self
            .db
            .globals
            .read()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !global {
            for (k, v) in &self.vars {
                if let Some(x) = all.iter_mut().find(|(n, _)| n == k) {
                    x.1 = v.clone();
                }
            }
            if let Some(x) = all.iter_mut().find(|(n, _)| n == "autocommit") {
                x.1 = Value::Str(if self.autocommit() { "ON" } else { "OFF" }.into());
            }
        }
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// The status counters and their values, sorted by name.
    pub(super) fn status_values(&self) -> Vec<(String, String)> {
        let mut all: Vec<(String, u64)> = self
            .db
            .catalog
            .counters
            .snapshot()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        all.push((
            "Threads_connected".into(),
            self.db.processes.lock().len() as u64,
        ));
        all.push(("Uptime".into(), self.db.uptime_secs()));
        all.push((
            "Connection_control_delay_generated".into(),
            get_delays(&self.db.logins),
        ));
        all.push(("Open_tables".into(), self.db.catalog.open_tables() as u64));
        // The write-ahead log, under InnoDB's names where it has them.
        let log = self.db.log_stats();
        let get = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
        for (k, v) in [
            ("Innodb_os_log_fsyncs", get(&log.fsyncs)),
            ("Innodb_os_log_written", get(&log.bytes)),
            ("Innodb_log_writes", get(&log.writes)),
            ("Quarry_log_records", get(&log.records)),
            ("Quarry_log_commits", get(&log.commits)),
            ("Quarry_log_checkpoints", get(&log.checkpoints)),
        ] {
            all.push((k.into(), v));
        }
        // The row engine's page cache, under InnoDB's buffer pool names.
        let pool = self.db.pool();
        let (free, dirty) = pool.free_and_dirty();
        let (hits, misses) = (get(&pool.stats.hits), get(&pool.stats.misses));
        let size = pool.frame_count() as u64;
        for (k, v) in [
            ("Innodb_buffer_pool_pages_total", size),
            ("Innodb_buffer_pool_pages_free", free as u64),
            ("Innodb_buffer_pool_pages_data", size - free as u64),
            ("Innodb_buffer_pool_pages_dirty", dirty as u64),
            ("Innodb_buffer_pool_read_requests", hits + misses),
            ("Innodb_buffer_pool_reads", misses),
            ("Innodb_pages_read", get(&pool.stats.reads)),
            ("Innodb_pages_written", get(&pool.stats.writes)),
        ] {
            all.push((k.into(), v));
        }
        // The blocks of row tables' record files the pool keeps beside its pages.
        let blocks = pool.data_cache();
        for (k, v) in [
            ("Quarry_row_cache_blocks", blocks.blocks() as u64),
            ("Quarry_row_cache_hits", get(&blocks.hits)),
            ("Quarry_row_cache_misses", get(&blocks.misses)),
        ] {
            all.push((k.into(), v));
        }
        let locks = &self.db.txns.locks.stats;
        for (k, v) in [
            ("Questions", get(&self.db.questions)),
            ("Slow_queries", get(&self.db.slow_queries)),
            ("Innodb_row_lock_waits", get(&locks.waits)),
            ("Innodb_deadlocks", get(&locks.deadlocks)),
            ("Quarry_lock_wait_timeouts", get(&locks.timeouts)),
        ] {
            all.push((k.into(), v));
        }
        let mut all: Vec<(String, String)> =
            all.into_iter().map(|(k, v)| (k, v.to_string())).collect();
        // This connection's TLS (empty without), as MariaDB reports it.
        let (version, cipher) = self.info.tls.get().cloned().unwrap_or_default();
        all.push(("Ssl_version".into(), version));
        all.push(("Ssl_cipher".into(), cipher));
        all.sort();
        all
    }

    /// COM_DEBUG (`mariadb-admin debug`): the server's state into the error log, as
    /// MariaDB writes its debug information there; SUPER only.
    pub fn debug_dump(&self) -> Result<()> {
        self.require_global(crate::privileges::SUPER)?;
        let mut text = String::from("quarry: status information (COM_DEBUG):");
        for r in self.process_rows() {
            text.push_str(&format!(
                "\n  thread {} user {} host {} db {} command {} time {} s",
                r[0], r[1], r[2], r[3], r[4], r[5]
            ));
        }
        for (k, v) in self.status_values() {
            if k.starts_with("Threads_")
                || k.starts_with("Innodb_")
                || k == "Questions"
                || k == "Uptime"
            {
                text.push_str(&format!("\n  {k}: {v}"));
            }
        }
        self.db
            .logs
            .error(crate::oplog::Level::Note, self.info.id, &text);
        Ok(())
    }

    /// What a Prometheus scrape reads (`crate::metrics`): the status counters, the
    /// global variables and the latency histograms.
    pub fn metrics_text(&self) -> String {
        crate::metrics::exposition(
            &self.status_values(),
            &self.variable_values(true),
            &self.db.latency,
        )
    }

    /// The SHOW forms of what Quarry has not got yet (profiling, the binary log,
    /// replication: empty, under MariaDB's columns) or keeps in its own form (plugins,
    /// open tables, the engine's status).
    pub(super) fn show_server(
        &self,
        what: &str,
        db: Option<&str>,
        like: Option<&str>,
    ) -> Result<Output> {
        let texts = |names: &[&str]| names.iter().map(|n| text(n, 64)).collect::<Vec<_>>();
        let (columns, rows) = match what {
            "PROFILES" => (
                vec![num("Query_ID"), num("Duration"), text("Query", 64)],
                vec![],
            ),
            "MASTER STATUS" => (
                vec![
                    text("File", 64),
                    num("Position"),
                    text("Binlog_Do_DB", 64),
                    text("Binlog_Ignore_DB", 64),
                ],
                vec![],
            ),
            "BINARY LOGS" => {
                return Err(Error::new(1381, "You are not using binary logging"));
            }
            "SLAVE HOSTS" => (texts(&["Server_id", "Host", "Port", "Master_id"]), vec![]),
            "SLAVE STATUS" | "ALL SLAVES STATUS" => {
                let mut names = vec![];
                if what == "ALL SLAVES STATUS" {
                    names.extend(["Connection_name", "Slave_SQL_State"]);
                }
                names.extend(SLAVE_STATUS);
                (texts(&names), vec![])
            }
            "PLUGINS" => {
                // information_schema.PLUGINS' rows, SHOW's columns of them.
                let rows = self
                    .plugin_rows()
                    .into_iter()
                    .map(|r| [0, 2, 3, 5, 9].map(|i| r[i].clone()).to_vec())
                    .collect();
                (
                    texts(&["Name", "Status", "Type", "Library", "License"]),
                    rows,
                )
            }
            "OPEN TABLES" => {
                let dbs = match db {
                    Some(d) => vec![d.to_string()],
                    None => self.db.catalog.databases(),
                };
                let mut rows = vec![];
                for d in dbs {
                    for t in self.db.catalog.open_table_names(&d) {
                        if like_filter(like, &t) {
                            rows.push(vec![
                                Value::Str(d.clone()),
                                Value::Str(t),
                                Value::Int(0),
                                Value::Int(0),
                            ]);
                        }
                    }
                }
                (
                    vec![
                        text("Database", 64),
                        text("Table", 64),
                        num("In_use"),
                        num("Name_locked"),
                    ],
                    rows,
                )
            }
            _ => {
                let status = self
                    .status_values()
                    .into_iter()
                    .filter(|(k, _)| k.starts_with("Innodb_") || k.starts_with("Quarry_"))
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join("\n");
                let body = format!(
                    "\n=====================================\nQUARRY ENGINE STATUS (the row \
                     engine answers as InnoDB)\n=====================================\n{status}\n"
                );
                (
                    texts(&["Type", "Name", "Status"]),
                    vec![vec![
                        Value::Str("InnoDB".into()),
                        Value::Str(String::new()),
                        Value::Str(body),
                    ]],
                )
            }
        };
        Ok(Output::Rows { columns, rows })
    }
}

/// SHOW SLAVE STATUS's columns, as MariaDB 10.11 lists them.
const SLAVE_STATUS: [&str; 54] = [
    "Slave_IO_State",
    "Master_Host",
    "Master_User",
    "Master_Port",
    "Connect_Retry",
    "Master_Log_File",
    "Read_Master_Log_Pos",
    "Relay_Log_File",
    "Relay_Log_Pos",
    "Relay_Master_Log_File",
    "Slave_IO_Running",
    "Slave_SQL_Running",
    "Replicate_Do_DB",
    "Replicate_Ignore_DB",
    "Replicate_Do_Table",
    "Replicate_Ignore_Table",
    "Replicate_Wild_Do_Table",
    "Replicate_Wild_Ignore_Table",
    "Last_Errno",
    "Last_Error",
    "Skip_Counter",
    "Exec_Master_Log_Pos",
    "Relay_Log_Space",
    "Until_Condition",
    "Until_Log_File",
    "Until_Log_Pos",
    "Master_SSL_Allowed",
    "Master_SSL_CA_File",
    "Master_SSL_CA_Path",
    "Master_SSL_Cert",
    "Master_SSL_Cipher",
    "Master_SSL_Key",
    "Seconds_Behind_Master",
    "Master_SSL_Verify_Server_Cert",
    "Last_IO_Errno",
    "Last_IO_Error",
    "Last_SQL_Errno",
    "Last_SQL_Error",
    "Replicate_Ignore_Server_Ids",
    "Master_Server_Id",
    "Master_SSL_Crl",
    "Master_SSL_Crlpath",
    "Using_Gtid",
    "Gtid_IO_Pos",
    "Replicate_Do_Domain_Ids",
    "Replicate_Ignore_Domain_Ids",
    "Parallel_Mode",
    "SQL_Delay",
    "SQL_Remaining_Delay",
    "Slave_SQL_Running_State",
    "Slave_DDL_Groups",
    "Slave_Non_Transactional_Groups",
    "Slave_Transactional_Groups",
    "Replicate_Rewrite_DB",
];
