//! `Database` and `Session`: the embedded API and the statement lifecycle.
//!
//! `Database::open(datadir)` locks the datadir, registers the engines and loads the
//! catalog. A `Session` runs statements: it parses, routes DDL/SHOW/SET/transaction
//! control itself, hands queries and DML to the executor, and keeps the undo records that
//! make statements and transactions atomic.
//!
//! Isolation is InnoDB's (crate `quarry-txn`): each statement runs with a snapshot and
//! its transaction set for its thread, tables read through the snapshot and write under
//! row locks. A database-wide reader/writer lock is the metadata lock: statements and
//! open transactions share it, DDL takes it alone.
//! Must not touch: sockets and packets (the server crate), file formats (engines).

pub mod accounts;
pub mod digest;
pub mod ed25519;
pub mod files;
pub mod hosts;
mod lock;
pub mod metrics;
pub mod oplog;
pub mod privileges;
mod session;
mod table_locks;
pub mod throttle;
pub mod vars;

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use quarry_catalog::Catalog;
use quarry_common::{Error, Result, Value};
use quarry_storage_api::EngineRegistry;

pub use quarry_common;
pub use quarry_executor::OutColumn;
pub use quarry_sql;
pub use session::{Output, Prepared, RowSink, Session, STATEMENT_STACK};

/// Where LOAD DATA LOCAL gets the client's file: a reader over it, consumed as the rows
/// are parsed (the server reads the client's packets as they come). A closure returning
/// the whole file works too (the embedded shell, tests).
pub trait LocalInfile {
    fn open(&mut self, name: &str) -> Result<Box<dyn std::io::Read + '_>>;
}

impl<F: FnMut(&str) -> Result<Vec<u8>>> LocalInfile for F {
    fn open(&mut self, name: &str) -> Result<Box<dyn std::io::Read + '_>> {
        Ok(Box::new(std::io::Cursor::new(self(name)?)))
    }
}

/// Per-connection facts visible to SHOW PROCESSLIST and KILL.
pub struct ProcessInfo {
    pub id: u64,
    pub user: String,
    pub host: String,
    /// Host part of the account the session logged in with (for SET PASSWORD).
    pub account_host: String,
    pub db: Mutex<Option<String>>,
    pub command: Mutex<String>,
    pub info: Mutex<Option<String>>,
    pub started: Mutex<std::time::Instant>,
    pub killed: AtomicBool,
    pub kill_connection: AtomicBool,
    /// Tells whether the client closed its connection (set by the server).
    pub client_gone: std::sync::OnceLock<Box<dyn Fn() -> bool + Send + Sync>>,
    /// A long statement's stage and rows done of total (SHOW PROCESSLIST's State and
    /// Progress, the shell's progress line).
    pub progress: Mutex<Option<Progress>>,
    /// The connection's TLS protocol and cipher (`Ssl_version`, `Ssl_cipher`), set by the
    /// server when the client asked for TLS.
    pub tls: std::sync::OnceLock<(String, String)>,
    /// The connection attributes the client sent at login
    /// (`performance_schema.session_connect_attrs`).
    pub connect_attrs: std::sync::OnceLock<Vec<(String, String)>>,
    /// The open transaction's number and start (`information_schema.INNODB_TRX`), while
    /// BEGIN (or autocommit off) holds one open.
    pub trx: Mutex<Option<(u64, quarry_common::value::DateTime)>>,
}

#[derive(Debug, Clone)]
pub struct Progress {
    pub stage: &'static str,
    pub done: u64,
    pub total: u64,
    /// What `done` and `total` count ("rows", or "bytes" of a LOAD DATA file).
    pub unit: &'static str,
}

impl Progress {
    /// Percent done (0 when the total is unknown).
    pub fn percent(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            (self.done as f64 * 100.0 / self.total as f64).min(100.0)
        }
    }
}

pub struct Database {
    pub catalog: Catalog,
    pub accounts: accounts::Accounts,
    pub(crate) lock: lock::TxnLock,
    /// LOCK TABLES and FLUSH TABLES WITH READ LOCK, across sessions.
    pub(crate) table_locks: table_locks::TableLocks,
    /// Transactions, snapshots and row locks.
    pub(crate) txns: Arc<quarry_txn::TxnManager>,
    pub(crate) globals: RwLock<HashMap<String, Value>>,
    next_conn: AtomicU64,
    pub(crate) processes: Mutex<HashMap<u64, Arc<ProcessInfo>>>,
    /// Statements run (`Questions`): an atomic, as every statement of every session
    /// bumps it.
    pub(crate) questions: AtomicU64,
    /// Statements that took `long_query_time` or longer (`Slow_queries`).
    pub(crate) slow_queries: AtomicU64,
    /// SHUTDOWN (or COM_SHUTDOWN) was run: the server stops accepting and shuts down.
    shutdown_requested: AtomicBool,
    vars_generation: AtomicU64,
    pub(crate) wal: Arc<quarry_storage::Wal>,
    pool: Arc<quarry_storage::BufferPool>,
    log_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// What recovery did when this datadir was opened.
    pub recovery: quarry_storage::wal::Recovery,
    datadir: PathBuf,
    /// Where LOAD DATA INFILE and LOAD_FILE() may read (`secure_file_priv`).
    pub files: files::FilePolicy,
    /// Failed logins by account name and host, and the delays they earn.
    pub logins: throttle::LoginThrottle,
    /// Failed handshakes by host (`max_connect_errors`).
    pub hosts: hosts::HostErrors,
    _lockfile: File,
    started: std::time::Instant,
    /// The error, general and slow query logs.
    pub logs: oplog::Logs,
    /// Statement latency by type (the metrics endpoint's histograms).
    pub latency: metrics::Latency,
    /// Statements summarised by digest (`performance_schema`, when it is ON).
    pub digests: digest::Digests,
}

fn lock_datadir(dir: &Path) -> Result<File> {
    use std::os::unix::io::AsRawFd;
    let path = dir.join("quarry.lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(path.display(), e))?;
    // flock: released by the kernel when the process dies, so a crash never leaves it stale.
    let rc = unsafe_flock(f.as_raw_fd());
    if rc != 0 {
        return Err(Error::new(
            1105,
            format!(
                "datadir {} is in use by another Quarry process (lock file {} is held)",
                dir.display(),
                path.display()
            ),
        ));
    }
    let _ = std::fs::write(&path, format!("{}\n", std::process::id()));
    Ok(f)
}

#[allow(unsafe_code)]
fn unsafe_flock(fd: i32) -> i32 {
    extern "C" {
        fn flock(fd: i32, op: i32) -> i32;
    }
    const LOCK_EX: i32 = 2;
    const LOCK_NB: i32 = 4;
    // SAFETY: flock on a file descriptor we own; no memory is shared with the kernel.
    unsafe { flock(fd, LOCK_EX | LOCK_NB) }
}

/// Startup settings (command line or config file); unset ones come from the environment
/// or defaults.
#[derive(Debug, Default, Clone)]
pub struct Options {
    pub buffer_pool_size: Option<usize>,
    pub buffer_pool_partitions: Option<usize>,
    /// `innodb_flush_log_at_trx_commit` (0, 1 or 2; default 1).
    pub flush_log_at_trx_commit: Option<i64>,
    /// `innodb_log_file_size`: the log grows by about this much between checkpoints.
    pub log_file_size: Option<usize>,
    /// `quarry_disk_keep_free`: bytes of the datadir's disk changes leave free.
    pub disk_keep_free: Option<u64>,
    /// `secure_file_priv` as given (None: the default directory; see [`files`]).
    pub secure_file_priv: Option<String>,
    /// TLS settings, kept as the globals of their names for the server to read:
    /// `ssl_cert`, `ssl_key`, `ssl_ca`, `tls_version`, `require_secure_transport`.
    pub tls: Vec<(String, Value)>,
    /// The logs' settings (`general_log`, `slow_query_log_file`, `log_error`, …), as
    /// given; see [`Database::apply_log_settings`].
    pub log_settings: Vec<(String, String)>,
    /// `performance_schema` ON: statements are summarised by digest (off by default, as
    /// MariaDB's; a startup option only).
    pub performance_schema: bool,
}

/// MariaDB 10.11's default `innodb_log_file_size`.
const DEFAULT_LOG_FILE_SIZE: usize = 96 << 20;

/// A byte size with an optional K/M/G suffix (`128M`).
pub fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (num, mult) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1 << 10),
        'm' | 'M' => (&s[..s.len() - 1], 1 << 20),
        'g' | 'G' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>().ok()?.checked_mul(mult)
}

/// Buffer pool size and page-table partitions: from `opts`, else `QUARRY_BUFFER_POOL_SIZE`
/// (bytes, with an optional K/M/G suffix) and `QUARRY_BUFFER_POOL_PARTITIONS` from the
/// environment, else a quarter of physical memory (64 MiB to 16 GiB) in 8 partitions.
/// Frames take memory only once used.
fn pool_settings(opts: &Options) -> (usize, usize) {
    let parse = parse_size;
    let mem = quarry_common::physical_memory().unwrap_or(1 << 30);
    let bytes = opts
        .buffer_pool_size
        .or_else(|| {
            std::env::var("QUARRY_BUFFER_POOL_SIZE")
                .ok()
                .and_then(|v| parse(&v))
        })
        .unwrap_or((mem / 4).clamp(64 << 20, 16 << 30))
        .max(1 << 20);
    let parts = opts
        .buffer_pool_partitions
        .or_else(|| {
            std::env::var("QUARRY_BUFFER_POOL_PARTITIONS")
                .ok()
                .and_then(|v| v.trim().parse().ok())
        })
        .unwrap_or(8usize)
        .clamp(1, 1024);
    (bytes, parts)
}

impl Database {
    pub fn open(datadir: &Path) -> Result<Arc<Database>> {
        Database::open_with(datadir, &Options::default())
    }

    pub fn open_with(datadir: &Path, opts: &Options) -> Result<Arc<Database>> {
        std::fs::create_dir_all(datadir).map_err(|e| Error::io(datadir.display(), e))?;
        let lockfile = lock_datadir(datadir)?;
        let mut engines = EngineRegistry::default();
        let (pool_bytes, partitions) = pool_settings(opts);
        let pool = Arc::new(quarry_storage::BufferPool::new(pool_bytes, partitions));
        // Recovery runs before any table is opened: it brings every logged file to its
        // last committed state.
        let (wal, recovery) =
            quarry_storage::Wal::open(datadir, Arc::new(quarry_storage::vfs::RealFs))?;
        let flush_policy = opts.flush_log_at_trx_commit.unwrap_or(1).clamp(0, 2);
        let log_file_size = opts
            .log_file_size
            .unwrap_or(DEFAULT_LOG_FILE_SIZE)
            .max(1 << 20);
        wal.set_policy(quarry_storage::FlushPolicy::from_i64(flush_policy));
        wal.set_checkpoint_bytes(log_file_size as u64);
        wal.set_keep_free(opts.disk_keep_free);
        let keep_free = opts
            .disk_keep_free
            .unwrap_or(quarry_storage::DEFAULT_KEEP_FREE);
        pool.attach_wal(wal.clone());
        let row: Arc<dyn quarry_storage_api::Engine> =
            Arc::new(quarry_engine_row::RowEngine::new(pool.clone()));
        engines.register(row, &["InnoDB", "MyISAM", "Aria", "Memory", "ROW"]);
        engines.register(
            Arc::new(quarry_engine_column::ColumnEngine::default().with_wal(wal.clone())),
            &["COLUMN", "COLUMNSTORE"],
        );
        let catalog = Catalog::open(datadir, engines, quarry_engine_row::effective_row_format)?;
        let mut globals: HashMap<String, Value> = vars::defaults()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        globals.insert("datadir".into(), Value::Str(datadir.display().to_string()));
        // The installation: the directory above the binary's (`/usr` for /usr/bin).
        let basedir = std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().and_then(|d| d.parent()).map(|d| d.to_path_buf()))
            .map_or(String::new(), |d| d.display().to_string());
        globals.insert("basedir".into(), Value::Str(basedir));
        globals.insert(
            "tmpdir".into(),
            Value::Str(std::env::temp_dir().display().to_string()),
        );
        globals.insert(
            "quarry_buffer_pool_size".into(),
            Value::Int(pool_bytes as i64),
        );
        globals.insert(
            "quarry_buffer_pool_partitions".into(),
            Value::Int(partitions as i64),
        );
        globals.insert(
            "innodb_flush_log_at_trx_commit".into(),
            Value::Int(flush_policy),
        );
        globals.insert(
            "innodb_log_file_size".into(),
            Value::Int(log_file_size as i64),
        );
        globals.insert("quarry_disk_keep_free".into(), Value::Int(keep_free as i64));
        for (k, v) in &opts.tls {
            globals.insert(k.clone(), v.clone());
        }
        globals.insert(
            "performance_schema".into(),
            Value::Int(opts.performance_schema as i64),
        );
        let files = files::FilePolicy::from_setting(opts.secure_file_priv.as_deref(), datadir)?;
        globals.insert("secure_file_priv".into(), files.shown());
        let accounts = accounts::Accounts::open(datadir)?;
        let db = Arc::new(Database {
            catalog,
            accounts,
            lock: lock::TxnLock::default(),
            table_locks: table_locks::TableLocks::default(),
            txns: quarry_txn::TxnManager::new(partitions),
            globals: RwLock::new(globals),
            next_conn: AtomicU64::new(1),
            processes: Mutex::new(HashMap::new()),
            questions: AtomicU64::new(0),
            slow_queries: AtomicU64::new(0),
            shutdown_requested: AtomicBool::new(false),
            vars_generation: AtomicU64::new(0),
            log_thread: Mutex::new(Some(wal.start_background(Some(pool.clone())))),
            wal,
            pool,
            recovery,
            datadir: datadir.to_path_buf(),
            files,
            logins: throttle::LoginThrottle::default(),
            hosts: hosts::HostErrors::default(),
            _lockfile: lockfile,
            started: std::time::Instant::now(),
            logs: oplog::Logs::default(),
            latency: metrics::Latency::default(),
            digests: digest::Digests::default(),
        });
        Ok(db)
    }

    pub fn datadir(&self) -> &Path {
        &self.datadir
    }

    /// Sessions logged in now with the account `user`@`account_host`.
    pub fn sessions_of(&self, user: &str, account_host: &str) -> usize {
        self.processes
            .lock()
            .values()
            .filter(|p| p.user == user && p.account_host == account_host)
            .count()
    }

    pub fn global(&self, name: &str) -> Option<Value> {
        self.globals.read().get(name).cloned()
    }

    pub fn set_global(&self, name: &str, v: Value) {
        match name {
            "innodb_flush_log_at_trx_commit" => self
                .wal
                .set_policy(quarry_storage::FlushPolicy::from_i64(v.to_i64())),
            "innodb_log_file_size" => self
                .wal
                .set_checkpoint_bytes(v.to_i64().max(1 << 20) as u64),
            "table_open_cache" => self.catalog.set_open_limit(v.to_i64().max(1) as usize),
            "quarry_disk_keep_free" => self.wal.set_keep_free(Some(v.to_i64().max(0) as u64)),
            _ => {}
        }
        self.globals.write().insert(name.to_string(), v);
        if matches!(
            name,
            "general_log"
                | "general_log_file"
                | "slow_query_log"
                | "slow_query_log_file"
                | "log_output"
        ) {
            self.apply_log_files();
        }
        self.vars_generation.fetch_add(1, Ordering::Release);
    }

    /// Open or close the general and slow logs as their variables now say.
    fn apply_log_files(&self) {
        let on = |n: &str| self.global(n).is_some_and(|v| v.to_i64() != 0);
        let to_file = self
            .global("log_output")
            .is_some_and(|v| v.as_str_lossy().contains("FILE"));
        let file = |n: &str| {
            oplog::resolve(
                &self.datadir,
                &self
                    .global(n)
                    .map(|v| v.as_str_lossy().to_string())
                    .unwrap_or_default(),
            )
        };
        for (var, file_var, general) in [
            ("general_log", "general_log_file", true),
            ("slow_query_log", "slow_query_log_file", false),
        ] {
            if on(var) && to_file {
                let path = file(file_var);
                let opened = if general {
                    self.logs.open_general(&path)
                } else {
                    self.logs.open_slow(&path)
                };
                if let Err(e) = opened {
                    self.logs.error(
                        oplog::Level::Error,
                        0,
                        &format!("Could not use {} for logging: {e}", path.display()),
                    );
                }
            } else if general {
                self.logs.close_general();
            } else {
                self.logs.close_slow();
            }
        }
    }

    /// Startup settings of the logs (`--general-log`, `--slow-query-log-file=…`,
    /// `--log-error=…`), checked as SET GLOBAL checks them.
    pub fn apply_log_settings(&self, settings: &[(String, String)]) -> Result<()> {
        for (name, value) in settings {
            let name = oplog::canonical(name);
            if name == "log_error" {
                let path = oplog::resolve(&self.datadir, value);
                self.logs
                    .set_error_file(&path)
                    .map_err(|e| Error::io(path.display(), e))?;
                self.globals
                    .write()
                    .insert(name.into(), Value::Str(path.display().to_string()));
                continue;
            }
            let v = oplog::check_setting(name, &Value::Str(value.clone()), true, &self.datadir)?;
            self.set_global(name, v);
        }
        Ok(())
    }

    /// Statements that took `long_query_time` or longer (`Slow_queries`).
    pub fn slow_queries(&self) -> u64 {
        self.slow_queries.load(Ordering::Relaxed)
    }

    /// Bumped by every SET GLOBAL: sessions re-read what they cache of the variables.
    pub(crate) fn vars_generation(&self) -> u64 {
        self.vars_generation.load(Ordering::Acquire)
    }

    /// Write every change the log holds to its file and record a checkpoint.
    pub fn checkpoint(&self) -> Result<()> {
        self.wal.checkpoint(Some(&self.pool))
    }

    /// The row engine's page cache (SHOW STATUS, INNODB_BUFFER_POOL_STATS).
    pub(crate) fn pool(&self) -> &quarry_storage::BufferPool {
        &self.pool
    }

    /// Log statistics for SHOW STATUS.
    pub fn log_stats(&self) -> &quarry_storage::wal::WalStats {
        &self.wal.stats
    }

    pub fn uptime_secs(&self) -> u64 {
        self.started.elapsed().as_secs()
    }

    /// Statements run since the start (`Questions`).
    pub fn questions(&self) -> u64 {
        self.questions.load(Ordering::Relaxed)
    }

    /// Ask the server to stop (SHUTDOWN; the privilege was checked).
    pub fn request_shutdown(&self) {
        self.shutdown_requested.store(true, Ordering::SeqCst);
    }

    pub fn shutdown_requested(&self) -> bool {
        self.shutdown_requested.load(Ordering::SeqCst)
    }

    /// A connection id for a client that has not logged in yet (sent in the greeting).
    pub fn reserve_connection_id(&self) -> u64 {
        self.next_conn.fetch_add(1, Ordering::Relaxed)
    }

    /// The embedded shell's session (`quarry sql`): `root`@`localhost` with every
    /// privilege even when the account file has no such account — opening the datadir
    /// is already the power to change it.
    pub fn local_session(self: &Arc<Self>) -> Session {
        let mut s = self.session("root", "localhost");
        s.local_admin = true;
        s
    }

    pub fn session(self: &Arc<Self>, user: &str, host: &str) -> Session {
        let id = self.reserve_connection_id();
        self.session_with_id(id, user, host)
    }

    pub fn session_with_id(self: &Arc<Self>, id: u64, user: &str, host: &str) -> Session {
        let account = self.accounts.find(user, host);
        let info = Arc::new(ProcessInfo {
            id,
            user: user.to_string(),
            host: host.to_string(),
            account_host: account
                .as_ref()
                .map_or_else(|| "localhost".into(), |a| a.host.clone()),
            db: Mutex::new(None),
            command: Mutex::new("Sleep".into()),
            info: Mutex::new(None),
            started: Mutex::new(std::time::Instant::now()),
            killed: AtomicBool::new(false),
            kill_connection: AtomicBool::new(false),
            client_gone: std::sync::OnceLock::new(),
            progress: Mutex::new(None),
            tls: std::sync::OnceLock::new(),
            connect_attrs: std::sync::OnceLock::new(),
            trx: Mutex::new(None),
        });
        self.processes.lock().insert(id, info.clone());
        let lifetime = self
            .global("default_password_lifetime")
            .map_or(0, |v| v.to_i64().max(0) as u64);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let expired = account
            .as_ref()
            .is_some_and(|a| a.expired || a.password_too_old(lifetime, now));
        let mut s = Session::new(self.clone(), info, expired);
        s.role = account.and_then(|a| a.default_role);
        s
    }

    pub fn processes(&self) -> Vec<Arc<ProcessInfo>> {
        let mut v: Vec<_> = self.processes.lock().values().cloned().collect();
        v.sort_by_key(|p| p.id);
        v
    }

    /// Flush and fsync everything and checkpoint, so the next start has nothing to redo.
    pub fn shutdown(&self) -> Result<()> {
        self.catalog.sync_all()?;
        self.checkpoint()
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        let _ = self.shutdown();
        self.wal.stop_background();
        if let Some(t) = self.log_thread.lock().take() {
            let _ = t.join();
        }
    }
}
