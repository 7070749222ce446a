//! The logs operators read, in MariaDB 10.11's formats so its tools read them
//! (`mariadb-dumpslow`, `pt-query-digest`): the error log (`log_error`, standard error
//! when unset), the general query log (`general_log`, `general_log_file`) and the slow
//! query log (`slow_query_log`, `slow_query_log_file`, `long_query_time`,
//! `log_queries_not_using_indexes`, `log_slow_verbosity`), written to files
//! (`log_output` FILE, or NONE).
//!
//! Owns: the files, their formats and the checks of the variables that name them. Must
//! not touch: what a statement did (the session reports it) or where the variables are
//! kept (the database's globals). Entries are written whole with one `write` each, not
//! synced (as MariaDB's): a crash may lose the last ones, never a committed row.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use quarry_common::value::DateTime;
use quarry_common::{Error, Result, Value};

/// An error log line's level.
#[derive(Clone, Copy, Debug)]
pub enum Level {
    Note,
    Warning,
    Error,
}

/// One statement, as the slow log tells of it.
pub struct SlowEntry<'a> {
    pub user: &'a str,
    /// The client's address.
    pub host: &'a str,
    pub thread: u64,
    pub db: Option<&'a str>,
    /// Seconds since 1970 when it started.
    pub started: i64,
    pub query_secs: f64,
    pub lock_secs: f64,
    pub rows_sent: u64,
    pub rows_examined: u64,
    pub rows_affected: u64,
    /// It read a table whole (`log_slow_verbosity=query_plan` says so).
    pub full_scan: bool,
    pub verbose: bool,
    pub sql: &'a str,
}

#[derive(Default)]
struct QueryLog {
    path: Option<PathBuf>,
    file: Option<File>,
    /// The time (to the second) of the last entry: a new second starts with the time,
    /// as MariaDB's.
    last_time: Option<String>,
    /// The database the slow log last said `use` of.
    last_db: Option<String>,
}

#[derive(Default)]
pub struct Logs {
    error: Mutex<Option<File>>,
    general: Mutex<QueryLog>,
    slow: Mutex<QueryLog>,
    /// The header's second line (`Tcp port: 3306  Unix socket: `).
    listening: Mutex<String>,
}

/// `YYMMDD HH:MM:SS`, the query logs' time.
fn short_time(t: &DateTime) -> String {
    let d = t.date;
    format!(
        "{:02}{:02}{:02} {:2}:{:02}:{:02}",
        d.year % 100,
        d.month,
        d.day,
        t.hour,
        t.minute,
        t.second
    )
}

fn open_append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

fn cannot_set(name: &str, v: &str) -> Error {
    Error::wrong_value_for_variable(name, v)
}

/// The variables of this module, as MariaDB names them (and its aliases).
pub fn is_log_variable(name: &str) -> bool {
    matches!(
        name,
        "general_log"
            | "general_log_file"
            | "slow_query_log"
            | "log_slow_query"
            | "slow_query_log_file"
            | "log_slow_query_file"
            | "long_query_time"
            | "log_slow_query_time"
            | "log_queries_not_using_indexes"
            | "log_slow_verbosity"
            | "log_output"
            | "log_warnings"
            | "log_error"
    )
}

/// The name a variable is kept under (MariaDB 10.11's aliases point at one value).
pub fn canonical(name: &str) -> &str {
    match name {
        "log_slow_query" => "slow_query_log",
        "log_slow_query_file" => "slow_query_log_file",
        "log_slow_query_time" => "long_query_time",
        other => other,
    }
}

/// The value `SET [GLOBAL] name = v` keeps, as MariaDB takes it (1229 for a global-only
/// one set for the session, 1231 for a value it refuses, 1238 for a read-only one).
/// A log file named must be writable (created when missing), relative names in `datadir`.
pub fn check_setting(name: &str, v: &Value, global: bool, datadir: &Path) -> Result<Value> {
    let text = v.as_str_lossy().to_string();
    let global_only = || Error::global_only_variable(name);
    match name {
        "log_error" => Err(Error::read_only_variable(name)),
        "general_log" | "slow_query_log" | "log_queries_not_using_indexes" => {
            if name == "general_log" && !global {
                return Err(global_only());
            }
            let on = match v {
                Value::Str(s) => match s.to_ascii_uppercase().as_str() {
                    "ON" | "TRUE" | "1" => true,
                    "OFF" | "FALSE" | "0" => false,
                    _ => return Err(cannot_set(name, s)),
                },
                other => other.to_i64() != 0,
            };
            Ok(Value::Int(on as i64))
        }
        "general_log_file" | "slow_query_log_file" => {
            if !global {
                return Err(global_only());
            }
            let path = resolve(datadir, &text);
            if text.is_empty() || path.is_dir() || open_append(&path).is_err() {
                return Err(cannot_set(name, &text));
            }
            Ok(Value::Str(text))
        }
        "long_query_time" => {
            let secs = v.to_f64();
            if secs.is_nan() || matches!(v, Value::Str(s) if s.trim().parse::<f64>().is_err()) {
                return Err(Error::wrong_type_for_variable(name));
            }
            let micros = (secs.clamp(0.0, 31_536_000.0) * 1e6).round() as i128;
            Ok(Value::Decimal(quarry_common::Decimal::new(micros, 6)))
        }
        "log_output" => {
            if !global {
                return Err(global_only());
            }
            let up = text.to_ascii_uppercase();
            let parts: Vec<&str> = up.split(',').map(str::trim).collect();
            // TABLE (mysql.general_log / slow_log) is not kept yet: refused rather than
            // accepted and ignored.
            if parts.iter().any(|p| !matches!(*p, "FILE" | "NONE")) {
                return Err(cannot_set(name, &text));
            }
            let shown = if parts.contains(&"FILE") {
                "FILE"
            } else {
                "NONE"
            };
            Ok(Value::Str(shown.into()))
        }
        "log_slow_verbosity" => {
            let known = [
                "",
                "innodb",
                "query_plan",
                "explain",
                "engine",
                "warnings",
                "full",
            ];
            let low = text.to_ascii_lowercase();
            if low.split(',').any(|p| !known.contains(&p.trim())) {
                return Err(cannot_set(name, &text));
            }
            Ok(Value::Str(low))
        }
        "log_warnings" => Ok(Value::Int(v.to_i64().clamp(0, 4_294_967_295))),
        _ => Ok(v.clone()),
    }
}

/// A log file's name: relative names are in the datadir, as MariaDB's.
pub fn resolve(datadir: &Path, name: &str) -> PathBuf {
    let p = Path::new(name);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        datadir.join(p)
    }
}

impl Logs {
    /// Error log lines go to `path` from now on (`--log-error`).
    pub fn set_error_file(&self, path: &Path) -> std::io::Result<()> {
        *self.error.lock() = Some(open_append(path)?);
        Ok(())
    }

    /// A line of the error log: `2026-11-26 19:42:22 0 [Note] text`, as MariaDB's
    /// (`thread` 0 for the server's own).
    pub fn error(&self, level: Level, thread: u64, text: &str) {
        let now = DateTime::now();
        let line = format!("{} {thread} [{level:?}] {text}\n", now.fmt_with_scale(0));
        let mut f = self.error.lock();
        match f.as_mut() {
            Some(f) => {
                let _ = f.write_all(line.as_bytes());
            }
            None => {
                let _ = std::io::stderr().write_all(line.as_bytes());
            }
        }
    }

    /// What the query logs' header says the server listens on.
    pub fn set_listening(&self, port: u16) {
        *self.listening.lock() = format!("Tcp port: {port}  Unix socket: ");
    }

    fn header(&self) -> String {
        format!(
            "quarry, Version: {} (Quarry). started with:\n{}\nTime\t\t    Id Command\tArgument\n",
            crate::vars::VERSION,
            self.listening.lock()
        )
    }

    fn open(&self, log: &Mutex<QueryLog>, path: &Path) -> std::io::Result<()> {
        let mut l = log.lock();
        if l.path.as_deref() == Some(path) && l.file.is_some() {
            return Ok(());
        }
        let mut f = open_append(path)?;
        f.write_all(self.header().as_bytes())?;
        *l = QueryLog {
            path: Some(path.to_path_buf()),
            file: Some(f),
            last_time: None,
            last_db: None,
        };
        Ok(())
    }

    /// The general log is on, in `path` (opened, with its header, when it was not).
    pub(crate) fn open_general(&self, path: &Path) -> std::io::Result<()> {
        self.open(&self.general, path)
    }

    pub(crate) fn open_slow(&self, path: &Path) -> std::io::Result<()> {
        self.open(&self.slow, path)
    }

    pub(crate) fn close_general(&self) {
        *self.general.lock() = QueryLog::default();
    }

    pub(crate) fn close_slow(&self) {
        *self.slow.lock() = QueryLog::default();
    }

    /// A general log entry: `Connect`, `Query`, `Init DB`, `Prepare`, `Execute`,
    /// `Quit` and its argument.
    pub(crate) fn general(&self, thread: u64, command: &str, argument: &str) {
        let mut l = self.general.lock();
        let now = short_time(&DateTime::now());
        let time = if l.last_time.as_deref() == Some(now.as_str()) {
            "\t".to_string()
        } else {
            now.clone()
        };
        l.last_time = Some(now);
        if let Some(f) = l.file.as_mut() {
            let line = format!("{time}\t{thread:>6} {command}\t{argument}\n");
            let _ = f.write_all(line.as_bytes());
        }
    }

    /// A slow log entry, as MariaDB writes one.
    pub(crate) fn slow(&self, e: &SlowEntry) {
        let mut l = self.slow.lock();
        let mut out = String::new();
        let now = short_time(&DateTime::now());
        if l.last_time.as_deref() != Some(now.as_str()) {
            out.push_str(&format!("# Time: {now}\n"));
        }
        l.last_time = Some(now);
        let loopback = e.host == "localhost" || crate::accounts::is_loopback(e.host);
        out.push_str(&format!(
            "# User@Host: {}[{}] @ {} [{}]\n",
            e.user,
            e.user,
            if loopback { "localhost" } else { "" },
            e.host
        ));
        out.push_str(&format!(
            "# Thread_id: {}  Schema: {}  QC_hit: No\n",
            e.thread,
            e.db.unwrap_or("")
        ));
        out.push_str(&format!(
            "# Query_time: {:.6}  Lock_time: {:.6}  Rows_sent: {}  Rows_examined: {}\n",
            e.query_secs, e.lock_secs, e.rows_sent, e.rows_examined
        ));
        out.push_str(&format!("# Rows_affected: {}\n", e.rows_affected));
        if e.verbose {
            out.push_str(&format!(
                "# Full_scan: {}\n",
                if e.full_scan { "Yes" } else { "No" }
            ));
        }
        if let Some(db) = e.db {
            if l.last_db.as_deref() != Some(db) {
                out.push_str(&format!("use `{}`;\n", db.replace('`', "``")));
                l.last_db = Some(db.to_string());
            }
        }
        out.push_str(&format!("SET timestamp={};\n", e.started));
        let sql = e.sql.trim_end();
        out.push_str(sql);
        if !sql.ends_with(';') {
            out.push(';');
        }
        out.push('\n');
        if let Some(f) = l.file.as_mut() {
            let _ = f.write_all(out.as_bytes());
        }
    }
}
