//! What the server is doing and how it is set: the threads (SHOW PROCESSLIST), the
//! variables (SHOW VARIABLES) and the status counters (SHOW STATUS), as rows the SHOW
//! statements and `information_schema` both give.
//!
//! Owns: reading them. Must not touch: setting them (`set_stmt`) or counting (the
//! database's and engines' counters).

use quarry_common::{Decimal, Row, Value};

use super::{get_delays, Session};

impl Session {
    /// SHOW PROCESSLIST's rows: Id, User, Host, db, Command, Time, State, Info, Progress.
    /// Without PROCESS an account sees its own threads only.
    pub(super) fn process_rows(&self) -> Vec<Row> {
        let all = self.privileges().global & crate::privileges::PROCESS != 0;
        self.db
            .processes()
            .into_iter()
            .filter(|p| {
                all || (p.user == self.info.user && p.account_host == self.info.account_host)
            })
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
        let locks = &self.db.txns.locks.stats;
        for (k, v) in [
            ("Questions", get(&self.db.questions)),
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
}
