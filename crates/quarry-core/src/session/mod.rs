//! One client's session: variables, current database, transaction state, statements.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use quarry_catalog::{table_def_from_ast, TableDef};
use quarry_common::types::flags;
use quarry_common::value::DateTime;
use quarry_common::{Error, Result, Row, SqlType, TypeKind, Value};
use quarry_executor::exec::collect;
use quarry_executor::{ExecCtx, OutColumn, SessionInfo, Undo};
use quarry_planner::Binder;
use quarry_sql::ast::{self, Statement as S};
use quarry_sql::Stmt;

mod access;
mod account_stmts;
mod alter;
mod charsets;
mod checksum;
mod explain;
mod foreign_keys;
mod infoschema;
mod outfile;
mod rebuild;
mod server_state;
mod set_stmt;
mod statement_log;
mod table_locks;
mod txn;

use crate::vars::normalise;
use crate::{Database, ProcessInfo};

/// Undo records and warnings a statement's executor context leaves behind.
type StmtSink = RefCell<Option<(Vec<Undo>, Vec<quarry_executor::exec::Warning>)>>;

#[derive(Debug)]
pub enum Output {
    Rows {
        columns: Vec<OutColumn>,
        rows: Vec<Row>,
    },
    /// A result set already handed to the caller's [`RowSink`] batch by batch.
    Streamed { rows: u64 },
    Ok {
        affected: u64,
        last_insert_id: u64,
        info: Option<String>,
    },
}

impl Output {
    fn ok(affected: u64) -> Output {
        Output::Ok {
            affected,
            last_insert_id: 0,
            info: None,
        }
    }
}

/// A prepared statement: parsed once; a SELECT also keeps its plan until a schema change
/// or another default database makes it stale (the fast path for point queries).
pub struct Prepared {
    pub sql: String,
    stmt: Stmt,
    pub params: usize,
    pub columns: Vec<OutColumn>,
    plan: PlanCache,
    /// The privileges it was last allowed under (see `Session::check_access_cached`).
    access: access::Checked,
}

impl Drop for Prepared {
    /// Its syntax tree and plan may be as deep as statements go.
    fn drop(&mut self) {
        let stmt = std::mem::replace(&mut self.stmt, Stmt::ShowEngines);
        let plan = self.plan.take();
        on_statement_stack(move || drop((stmt, plan)));
    }
}

/// The stack a statement needs at the most: every pass over a statement (binding,
/// optimizing, running, dropping its syntax tree) recurses once per level of nesting,
/// and the binder refuses more than `MAX_NESTING` levels. Measured: a 4 000-level
/// chain needs under 16 MiB in release and dev builds; this leaves room for the
/// passes' own calls. Server threads are created with it; other callers' statements
/// run on a stack segment of this size when theirs has less left.
pub const STATEMENT_STACK: usize = 64 << 20;

/// Run `f` with at least `STATEMENT_STACK` (less a margin) of stack left.
pub(crate) fn on_statement_stack<T>(f: impl FnOnce() -> T) -> T {
    stacker::maybe_grow(STATEMENT_STACK - (8 << 20), STATEMENT_STACK, f)
}

/// Where a streamed result set goes as it is produced (the server: to the socket), so a
/// statement holds one batch of rows, not its whole result.
pub trait RowSink {
    /// The result set's columns, before any row.
    fn columns(&mut self, cols: &[OutColumn]) -> Result<()>;
    /// The next rows. An error (the client went away) stops the statement.
    fn rows(&mut self, rows: Vec<Row>) -> Result<()>;
}

/// A bound SELECT and what it was bound against.
struct CachedPlan {
    generation: u64,
    db: Option<String>,
    plan: quarry_executor::SelectPlan,
    /// The plan has a `LIMIT ?`'s count in it: it holds for these parameters only.
    for_params: Option<Vec<Value>>,
}

type PlanCache = RefCell<Option<CachedPlan>>;

#[derive(PartialEq, Eq, Clone, Copy)]
enum Held {
    None,
    Shared,
    Exclusive,
}

pub struct Session {
    pub db: Arc<Database>,
    pub current_db: Option<String>,
    vars: HashMap<String, Value>,
    user_vars: HashMap<String, Value>,
    in_txn: bool,
    /// The open transaction was started READ ONLY: writes fail with 1792.
    txn_read_only: bool,
    held: Held,
    /// LOCK TABLES / FLUSH TABLES WITH READ LOCK held by this session.
    locked: table_locks::Locked,
    /// The open transaction, as snapshots and locks know it (None between them).
    txn: Option<Arc<quarry_txn::Txn>>,
    /// Its id in the write-ahead log (0: none yet).
    wal_txn: u64,
    /// REPEATABLE READ's snapshot, taken by the transaction's first statement.
    txn_snap: Option<quarry_txn::Snapshot>,
    undo: Vec<Undo>,
    last_insert_id: Cell<u64>,
    row_count: i64,
    found_rows: u64,
    /// What the running SELECT SQL_CALC_FOUND_ROWS … LIMIT found without its LIMIT.
    calc_found: Cell<Option<u64>>,
    pub warnings: Vec<(String, u16, String)>,
    pub info: Arc<ProcessInfo>,
    /// Logged in with an expired password (PASSWORD EXPIRE): only SET PASSWORD runs
    /// until it is set, as MariaDB's sandbox mode.
    must_set_password: bool,
    /// The active role (SET ROLE, or the account's default role from login).
    pub(crate) role: Option<String>,
    /// The embedded shell's session: whoever opened the datadir's files holds every
    /// privilege, whatever the account file says (a dropped root must not lock it out).
    pub(crate) local_admin: bool,
    /// The privileges in force and the grants' generation they were merged at.
    access: RefCell<Option<(u64, Arc<crate::privileges::Effective>)>>,
    savepoints: Vec<(String, usize)>,
    rand: Cell<u64>,
    /// When the running statement's time is up, and its error.
    deadline: Cell<quarry_executor::exec::Deadline>,
    /// Variables every statement consults, read once per change of them: with the
    /// `Database::vars_generation` they were read at (a session SET clears it).
    settings: Cell<Option<(u64, Settings)>>,
    /// The running statement's figures for the slow log.
    stmt_stats: Cell<statement_log::StatementStats>,
}

fn text(name: &str, width: u32) -> OutColumn {
    OutColumn::expr(name, SqlType::varchar(width), false)
}
fn num(name: &str) -> OutColumn {
    OutColumn::expr(name, SqlType::BIGINT, true)
}

fn get_delays(t: &crate::throttle::LoginThrottle) -> u64 {
    t.delays.load(std::sync::atomic::Ordering::Relaxed)
}

fn like_filter(pattern: Option<&str>, s: &str) -> bool {
    pattern.is_none_or(|p| quarry_executor::expr::like(s, p, '\\'))
}

impl SessionInfo for Session {
    fn progress(&self, stage: &'static str, done: u64, total: u64) {
        *self.info.progress.lock() = Some(crate::Progress {
            stage,
            done,
            total,
            unit: "rows",
        });
    }
    fn client_gone(&self) -> bool {
        self.info.client_gone.get().is_some_and(|gone| gone())
    }
    fn read_file(&self, name: &str, limit: usize) -> Option<Vec<u8>> {
        use std::io::Read;
        // Without FILE, NULL (as MariaDB answers).
        if !self.may_read_files() {
            return None;
        }
        let path = self.db.files.allowed(name, self.db.datadir()).ok()?;
        let f = std::fs::File::open(path).ok()?;
        if !f.metadata().ok()?.is_file() {
            return None;
        }
        let mut bytes = Vec::new();
        f.take(limit as u64 + 1).read_to_end(&mut bytes).ok()?;
        (bytes.len() <= limit).then_some(bytes)
    }
    fn sys_var(&self, name: &str) -> Result<Value> {
        let (n, global) = normalise(name);
        match n.as_str() {
            "autocommit" if global != Some(true) => {
                return Ok(Value::Int(self.autocommit() as i64))
            }
            "in_transaction" => return Ok(Value::Int(self.in_txn as i64)),
            "warning_count" => return Ok(Value::Int(self.warnings.len() as i64)),
            "error_count" => return Ok(Value::Int(0)),
            "last_insert_id" | "identity" => return Ok(Value::UInt(self.last_insert_id.get())),
            // The current database's default (db.opt); the server's without one.
            "character_set_database" | "collation_database" if global != Some(true) => {
                if let Some(db) = &self.current_db {
                    let c = self.db.catalog.database_collation(db);
                    let v = if n == "collation_database" {
                        c.name()
                    } else {
                        c.charset()
                    };
                    return Ok(Value::Str(v.into()));
                }
            }
            _ => {}
        }
        if global != Some(true) {
            if let Some(v) = self.vars.get(&n) {
                return Ok(v.clone());
            }
        }
        self.db
            .global(&n)
            .ok_or_else(|| Error::unknown_system_variable(&n))
    }
    fn user_var(&self, name: &str) -> Value {
        self.user_vars
            .get(&name.to_ascii_lowercase())
            .cloned()
            .unwrap_or(Value::Null)
    }
    fn user(&self) -> String {
        format!("{}@{}", self.info.user, self.info.host)
    }
    fn current_user(&self) -> String {
        format!("{}@{}", self.info.user, self.info.account_host)
    }
    fn connection_id(&self) -> u64 {
        self.info.id
    }
    fn last_insert_id(&self) -> u64 {
        self.last_insert_id.get()
    }
    fn set_last_insert_id(&self, id: u64) {
        self.last_insert_id.set(id)
    }
    fn row_count(&self) -> i64 {
        self.row_count
    }
    fn found_rows(&self) -> u64 {
        self.found_rows
    }
}

fn is_read_only(stmt: &Stmt) -> bool {
    match stmt {
        Stmt::Ast(s) => matches!(
            **s,
            S::Query(_)
                | S::ShowVariables { .. }
                | S::ShowCollation { .. }
                | S::ShowCharset(_)
                | S::ShowStatus { .. }
                | S::ShowDatabases { .. }
                | S::ShowTables { .. }
                | S::ShowColumns { .. }
                | S::ShowCreate { .. }
                | S::ExplainTable { .. }
                | S::Explain { .. }
                | S::Set(_)
                | S::Use(_)
        ),
        Stmt::LoadData(_)
        | Stmt::TableMaintenance { .. }
        | Stmt::AlterEngine { .. }
        | Stmt::AlterKeys { .. } => false,
        _ => true,
    }
}

fn is_txn_control(stmt: &Stmt) -> bool {
    matches!(stmt, Stmt::Ast(s) if matches!(**s, S::StartTransaction { .. } | S::Commit { .. } | S::Rollback { .. } | S::Savepoint { .. } | S::ReleaseSavepoint { .. } | S::Set(_) | S::Use(_)))
        || matches!(
            stmt,
            Stmt::ShowWarnings { .. }
                | Stmt::ShowProcessList
                | Stmt::SetRole(_)
                | Stmt::LockTables(_)
                | Stmt::UnlockTables
        )
}

/// Statements that change the catalog or whole tables run alone.
fn needs_exclusive(stmt: &Stmt) -> bool {
    is_ddl(stmt) || matches!(stmt, Stmt::TableMaintenance { .. })
}

/// FOR UPDATE / LOCK IN SHARE MODE (FOR SHARE): the rows read are locked.
fn read_lock(stmt: &Stmt) -> Option<quarry_txn::LockMode> {
    let Stmt::Ast(s) = stmt else { return None };
    let S::Query(q) = &**s else { return None };
    q.locks
        .iter()
        .map(|l| match l.lock_type {
            ast::LockType::Update => quarry_txn::LockMode::Exclusive,
            ast::LockType::Share => quarry_txn::LockMode::Shared,
        })
        .max()
}

fn is_ddl(stmt: &Stmt) -> bool {
    matches!(
        stmt,
        Stmt::AlterEngine { .. } | Stmt::AlterKeys { .. } | Stmt::AlterDatabase { .. }
    ) || matches!(stmt, Stmt::Ast(s) if matches!(**s, S::CreateTable(_) | S::CreateView(_) | S::Drop { .. } | S::AlterTable(_) | S::CreateDatabase { .. } | S::CreateSchema { .. } | S::Truncate(_) | S::RenameTable(_) | S::CreateIndex(_)))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Isolation {
    RepeatableRead,
    ReadCommitted,
    ReadUncommitted,
}

/// What every statement reads from the variables (see `Session::settings`).
#[derive(Clone, Copy)]
struct Settings {
    strict: bool,
    check_constraints: bool,
    foreign_key_checks: bool,
    /// `sql_safe_updates`: UPDATE / DELETE must use a key (1175).
    safe_updates: bool,
    /// The general log is on (and `log_output` holds FILE).
    general_log: bool,
    /// The slow log is on: statements of `long_query_us` or more are written to it (and
    /// those that read a table whole, with `log_not_using_indexes`).
    slow_log: bool,
    long_query_us: u64,
    log_not_using_indexes: bool,
    /// `log_slow_verbosity` asks for the plan's figures (query_plan or full).
    slow_verbose: bool,
    /// `performance_schema` is ON: statements are summarised by digest.
    digests: bool,
    /// `sql_notes`: notes (level Note) are kept as warnings (0: dropped, as dumps set it).
    notes: bool,
    /// `read_only`: writes need READ ONLY ADMIN.
    read_only: bool,
    div_zero_is_error: bool,
    /// `max_statement_time` (0: none).
    statement_time: Option<Duration>,
    max_packet: usize,
    lock_timeout: Duration,
    /// `lock_wait_timeout`: how long a statement waits for another session's LOCK TABLES.
    lock_wait: Duration,
    isolation: Isolation,
    read_buffer: usize,
    agg_buffer: usize,
    join_buffer: usize,
    group_concat_max: usize,
    sort_buffer: usize,
    pushdown: bool,
    vectors: bool,
    runtime_filters: bool,
}

impl Session {
    /// A variable this session set for itself (`SET SESSION`), if it did.
    pub fn session_value(&self, name: &str) -> Option<&Value> {
        self.vars.get(name)
    }

    /// `must_set_password`: the account's password has expired (PASSWORD EXPIRE).
    pub(crate) fn new(
        db: Arc<Database>,
        info: Arc<ProcessInfo>,
        must_set_password: bool,
    ) -> Session {
        let seed = info.id.wrapping_mul(0x9E3779B97F4A7C15) ^ DateTime::now().to_micros() as u64;
        Session {
            db,
            current_db: None,
            vars: HashMap::new(),
            user_vars: HashMap::new(),
            in_txn: false,
            txn_read_only: false,
            held: Held::None,
            locked: table_locks::Locked::default(),
            txn: None,
            wal_txn: 0,
            txn_snap: None,
            undo: vec![],
            last_insert_id: Cell::new(0),
            row_count: -1,
            found_rows: 0,
            calc_found: Cell::new(None),
            warnings: vec![],
            info,
            must_set_password,
            role: None,
            local_admin: false,
            access: RefCell::new(None),
            savepoints: vec![],
            rand: Cell::new(seed | 1),
            deadline: Cell::new(None),
            settings: Cell::new(None),
            stmt_stats: Cell::new(Default::default()),
        }
    }

    pub fn autocommit(&self) -> bool {
        self.vars
            .get("autocommit")
            .map(|v| v.to_i64() != 0)
            .unwrap_or(true)
    }

    pub fn in_transaction(&self) -> bool {
        self.in_txn
    }

    pub fn id(&self) -> u64 {
        self.info.id
    }

    /// The statement-wide settings, re-read only after a SET.
    fn settings(&self) -> Settings {
        let generation = self.db.vars_generation();
        if let Some((g, st)) = self.settings.get() {
            if g == generation {
                return st;
            }
        }
        let st = self.read_settings();
        self.settings.set(Some((generation, st)));
        st
    }

    fn read_settings(&self) -> Settings {
        let size = |name: &str, min: i64, max: i64, default: usize| {
            self.sys_var(name)
                .map(|v| v.to_i64().clamp(min, max) as usize)
                .unwrap_or(default)
        };
        let text = |name: &str| {
            self.sys_var(name)
                .map(|v| v.as_str_lossy().to_ascii_uppercase())
                .ok()
        };
        let secs = self
            .sys_var("max_statement_time")
            .map(|v| v.to_f64())
            .unwrap_or(0.0);
        let flag = |name: &str| self.sys_var(name).is_ok_and(|v| v.to_i64() != 0);
        let to_file = text("log_output").is_some_and(|v| v.contains("FILE"));
        Settings {
            strict: text("sql_mode").is_none_or(|m| m.contains("STRICT")),
            div_zero_is_error: text("sql_mode")
                .is_none_or(|m| m.contains("ERROR_FOR_DIVISION_BY_ZERO")),
            check_constraints: self
                .sys_var("check_constraint_checks")
                .map(|v| v.to_i64() != 0)
                .unwrap_or(true),
            foreign_key_checks: self
                .sys_var("foreign_key_checks")
                .map(|v| v.to_i64() != 0)
                .unwrap_or(true),
            safe_updates: self
                .sys_var("sql_safe_updates")
                .is_ok_and(|v| v.to_i64() != 0),
            general_log: flag("general_log") && to_file,
            slow_log: flag("slow_query_log") && to_file,
            long_query_us: self
                .sys_var("long_query_time")
                .map_or(10_000_000, |v| (v.to_f64() * 1e6) as u64),
            log_not_using_indexes: flag("log_queries_not_using_indexes"),
            digests: flag("performance_schema"),
            slow_verbose: text("log_slow_verbosity")
                .is_some_and(|v| v.contains("QUERY_PLAN") || v.contains("FULL")),
            notes: self
                .sys_var("sql_notes")
                .map(|v| v.to_i64() != 0)
                .unwrap_or(true),
            read_only: self.sys_var("read_only").is_ok_and(|v| v.to_i64() != 0),
            statement_time: (secs > 0.0 && secs.is_finite())
                .then(|| Duration::from_secs_f64(secs.min(31_536_000.0))),
            max_packet: size("max_allowed_packet", 1024, 1 << 30, 16 << 20),
            lock_timeout: Duration::from_secs(size("innodb_lock_wait_timeout", 1, 86400, 50) as u64),
            lock_wait: Duration::from_secs(size("lock_wait_timeout", 1, 31_536_000, 86400) as u64),
            isolation: match text("transaction_isolation").as_deref() {
                Some("READ-COMMITTED") => Isolation::ReadCommitted,
                Some("READ-UNCOMMITTED") => Isolation::ReadUncommitted,
                _ => Isolation::RepeatableRead,
            },
            read_buffer: size("read_buffer_size", 256, 1 << 30, 128 << 10),
            agg_buffer: size("tmp_table_size", 1024, 1 << 40, 16 << 20),
            join_buffer: size("quarry_join_buffer_size", 1024, 1 << 40, 128 << 20),
            group_concat_max: size("group_concat_max_len", 4, 1 << 32, 1 << 20),
            sort_buffer: size("quarry_sort_buffer_size", 1024, 1 << 40, 64 << 20),
            pushdown: self
                .sys_var("optimizer_switch")
                .map(|v| quarry_executor::pushdown::enabled(&v.as_str_lossy()))
                .unwrap_or(true),
            vectors: self
                .sys_var("quarry_vector_execution")
                .map(|v| v.to_i64() != 0)
                .unwrap_or(true),
            runtime_filters: self
                .sys_var("quarry_runtime_filters")
                .map(|v| v.to_i64() != 0)
                .unwrap_or(true),
        }
    }

    /// When this statement's time is up: a SELECT's `MAX_EXECUTION_TIME(ms)` hint (as
    /// MySQL), else `max_statement_time` (as MariaDB).
    fn statement_deadline(&self, stmt: &Stmt, sql: &str) -> quarry_executor::exec::Deadline {
        let now = std::time::Instant::now();
        let select = matches!(stmt, Stmt::Ast(s) if matches!(**s, S::Query(_)));
        if let Some(ms) = select
            .then(|| quarry_sql::max_execution_time_hint(sql))
            .flatten()
        {
            if ms > 0 {
                let e: fn() -> Error = Error::execution_time_exceeded;
                return Some((now + Duration::from_millis(ms), e));
            }
        }
        let e: fn() -> Error = Error::statement_timeout;
        self.settings().statement_time.map(|d| (now + d, e))
    }

    fn lock_timeout(&self) -> Duration {
        self.settings().lock_timeout
    }

    /// Set (`Some`) or drop a session variable; statement settings are read again.
    fn set_session_var(&mut self, name: String, v: Option<Value>) {
        match v {
            Some(v) => self.vars.insert(name, v),
            None => self.vars.remove(&name),
        };
        self.settings.set(None);
    }

    /// Run `f` with an executor context outside any statement (start-up work).
    /// The rows of a result with `columns` for which `cond` holds (SHOW … WHERE).
    fn rows_where(
        &self,
        cond: &ast::Expr,
        columns: &[OutColumn],
        rows: Vec<Row>,
    ) -> Result<Vec<Row>> {
        let e =
            Binder::new(&self.db.catalog, self.current_db.clone()).bind_expr_over(cond, columns)?;
        self.with_ctx(|ctx| {
            let mut out = Vec::with_capacity(rows.len());
            for r in rows {
                if e.eval_truth(&r, ctx)? {
                    out.push(r);
                }
            }
            Ok(out)
        })
    }

    pub(crate) fn with_ctx<T>(&self, f: impl FnOnce(&ExecCtx) -> Result<T>) -> Result<T> {
        self.exec_ctx(vec![], &RefCell::new(None), f)
    }

    /// COM_RESET_CONNECTION / COM_CHANGE_USER: roll back and forget session state.
    pub fn reset(&mut self) {
        let _ = self.rollback();
        self.unlock_tables();
        self.vars.clear();
        self.settings.set(None);
        self.user_vars.clear();
        self.warnings.clear();
        self.last_insert_id.set(0);
    }

    // ---------------------------------------------------------------- entry points

    /// Run one or more statements; LOAD DATA LOCAL reads the client's file from `load_local`.
    pub fn query_with(
        &mut self,
        sql: &str,
        load_local: &mut dyn crate::LocalInfile,
    ) -> Result<Vec<Output>> {
        self.log_general("Query", sql);
        // The syntax trees are dropped inside too: dropping one is as deep as it is.
        on_statement_stack(|| {
            let stmts = quarry_sql::parse(sql)?;
            let mut outs = Vec::with_capacity(stmts.len());
            for s in stmts {
                outs.push(self.run(&s, vec![], sql, load_local)?);
            }
            Ok(outs)
        })
    }

    /// The statements of a text, each as its own text (cut at `;` outside quotes and
    /// comments; empty pieces dropped).
    pub fn statements(sql: &str) -> Vec<&str> {
        quarry_sql::split_statements(sql)
    }

    /// The error for a text of several statements from a client that did not ask for
    /// them (CLIENT_MULTI_STATEMENTS): MariaDB's parser stops at the second one, and
    /// nothing of the text runs.
    pub fn refuse_second_statement(sql: &str) -> Option<Error> {
        let at = quarry_sql::second_statement(sql)?;
        let line = 1 + sql[..at].matches('\n').count();
        Some(Error::syntax_near_line(&sql[at..], line))
    }

    /// Whether `sql` goes through `query_streamed`: one statement that starts as a query
    /// (`SELECT`, `WITH`, `(`). Anything else — LOAD DATA, which reads from the client
    /// while it runs, and a text starting with a comment included — is collected.
    pub fn streams(sql: &str) -> bool {
        let query = |t: &str| {
            let word = |w: &str| {
                t.get(..w.len()).is_some_and(|p| p.eq_ignore_ascii_case(w))
                    && t[w.len()..].starts_with(|c: char| c.is_whitespace() || c == '(')
            };
            t.starts_with('(') || word("SELECT") || word("WITH")
        };
        // The first word before the split: a dump's INSERT is megabytes to cut.
        if !query(sql.trim_start_matches(|c: char| c.is_whitespace() || c == ';')) {
            return false;
        }
        let parts = quarry_sql::split_statements(sql);
        parts.len() == 1 && query(parts[0].trim_start())
    }

    /// Run one statement whose result rows go to `out` as they are produced (a SELECT;
    /// other statements return their output as `query_with` does). A text of several
    /// statements, and LOAD DATA, go through `query_with`.
    pub fn query_streamed(&mut self, sql: &str, out: &mut dyn RowSink) -> Result<Output> {
        self.log_general("Query", sql);
        let mut no_local = refuse_local_infile;
        on_statement_stack(|| {
            let mut stmts = quarry_sql::parse(sql)?;
            if stmts.len() != 1 {
                return Err(Error::internal("query_streamed takes one statement"));
            }
            let s = stmts.pop().expect("one");
            self.run_cached(&s, vec![], sql, &mut no_local, None, Some(out))
        })
    }

    pub fn query(&mut self, sql: &str) -> Result<Vec<Output>> {
        /// LOAD DATA LOCAL in the embedded API: the "client" is this process.
        struct Files;
        impl crate::LocalInfile for Files {
            fn open(&mut self, f: &str) -> Result<Box<dyn std::io::Read + '_>> {
                let file = std::fs::File::open(f)
                    .map_err(|e| Error::new(2, format!("File '{f}' not found (Errcode: {e})")))?;
                Ok(Box::new(file))
            }
        }
        self.query_with(sql, &mut Files)
    }

    pub fn prepare(&mut self, sql: &str) -> Result<Prepared> {
        self.log_general("Prepare", sql);
        let system = if self.may_name_information_schema(sql) {
            self.information_schema_for(sql, None)?
        } else {
            vec![]
        };
        on_statement_stack(|| quarry_catalog::with_system_tables(system, || self.prepare_here(sql)))
    }

    fn prepare_here(&mut self, sql: &str) -> Result<Prepared> {
        let stmt = quarry_sql::parse_one(sql)?;
        let mut params = 0;
        let mut columns = vec![];
        if let Stmt::Ast(s) = &stmt {
            let mut b = Binder::new(&self.db.catalog, self.current_db.clone());
            match &**s {
                S::Query(q) => {
                    let sp = b.bind_query(q)?;
                    columns = sp.columns;
                    params = b.param_count;
                }
                S::Insert(_) | S::Delete(_) => {
                    columns = quarry_planner::dml::returning_columns(s, &mut b)?;
                    params = count_placeholders(sql);
                }
                _ => params = count_placeholders(sql),
            }
        }
        Ok(Prepared {
            sql: sql.to_string(),
            stmt,
            params,
            columns,
            plan: RefCell::new(None),
            access: Default::default(),
        })
    }

    pub fn execute(&mut self, p: &Prepared, params: Vec<Value>) -> Result<Output> {
        self.execute_into(p, params, None)
    }

    /// `execute` with the result rows going to `out` as they are produced.
    pub fn execute_streamed(
        &mut self,
        p: &Prepared,
        params: Vec<Value>,
        out: &mut dyn RowSink,
    ) -> Result<Output> {
        self.execute_into(p, params, Some(out))
    }

    fn execute_into(
        &mut self,
        p: &Prepared,
        params: Vec<Value>,
        out: Option<&mut dyn RowSink>,
    ) -> Result<Output> {
        if params.len() != p.params {
            return Err(Error::wrong_execute_arguments());
        }
        self.log_execute(&p.sql, &params);
        let mut no_local = refuse_local_infile;
        on_statement_stack(|| self.run_cached(&p.stmt, params, &p.sql, &mut no_local, Some(p), out))
    }

    fn run(
        &mut self,
        stmt: &Stmt,
        params: Vec<Value>,
        sql: &str,
        load_local: &mut dyn crate::LocalInfile,
    ) -> Result<Output> {
        self.run_cached(stmt, params, sql, load_local, None, None)
    }

    /// A statement's failure, as SHOW WARNINGS then lists it (alone).
    fn note_failure(&mut self, e: &Error) {
        self.warnings.clear();
        self.warnings
            .push(("Error".into(), e.code, e.message.clone()));
    }

    /// Run a statement, and tell the slow log of it.
    fn run_cached(
        &mut self,
        stmt: &Stmt,
        params: Vec<Value>,
        sql: &str,
        load_local: &mut dyn crate::LocalInfile,
        cache: Option<&Prepared>,
        out: Option<&mut dyn RowSink>,
    ) -> Result<Output> {
        let started = std::time::Instant::now();
        self.stmt_stats.set(statement_log::StatementStats {
            rows_read_before: quarry_storage_api::HandlerCounters::rows_read_by_this_thread(),
            ..Default::default()
        });
        let r = self.run_with_system_tables(stmt, params, sql, load_local, cache, out);
        self.note_statement(sql, started, &r);
        r
    }

    /// Run a statement with the `information_schema` tables it names filled for it.
    fn run_with_system_tables(
        &mut self,
        stmt: &Stmt,
        params: Vec<Value>,
        sql: &str,
        load_local: &mut dyn crate::LocalInfile,
        cache: Option<&Prepared>,
        out: Option<&mut dyn RowSink>,
    ) -> Result<Output> {
        *self.info.command.lock() = "Query".into();
        *self.info.info.lock() = Some(sql.chars().take(100).collect());
        *self.info.started.lock() = std::time::Instant::now();
        let system = if self.may_name_information_schema(sql) {
            let filled = self
                .refuse_system_writes(stmt)
                .and_then(|()| self.information_schema_for(sql, Some(stmt)));
            match filled {
                Ok(s) => s,
                Err(e) => {
                    self.note_failure(&e);
                    return Err(e);
                }
            }
        } else {
            vec![]
        };
        if system.is_empty() {
            return self.run_statement(stmt, params, sql, load_local, cache, out);
        }
        quarry_catalog::with_system_tables(system, || {
            self.run_statement(stmt, params, sql, load_local, cache, out)
        })
    }

    fn run_statement(
        &mut self,
        stmt: &Stmt,
        params: Vec<Value>,
        sql: &str,
        load_local: &mut dyn crate::LocalInfile,
        cache: Option<&Prepared>,
        mut out: Option<&mut dyn RowSink>,
    ) -> Result<Output> {
        self.info.killed.store(false, Ordering::Relaxed);
        self.deadline.set(self.statement_deadline(stmt, sql));
        let keep_warnings = matches!(stmt, Stmt::ShowWarnings { .. });
        if !keep_warnings {
            self.warnings.clear();
        }
        // DDL commits an open transaction (as MySQL does).
        if is_ddl(stmt) && self.in_txn {
            self.commit()?;
        }
        let txn_control = is_txn_control(stmt);
        if !txn_control
            && !is_read_only(stmt)
            && self.settings().read_only
            && self.privileges().global & crate::privileges::READ_ONLY_ADMIN == 0
        {
            let e = Error::read_only_server();
            self.note_failure(&e);
            return Err(e);
        }
        let refused = self.txn_read_only && !txn_control && !is_read_only(stmt);
        let exclusive = needs_exclusive(stmt);
        // Other sessions' LOCK TABLES and read locks are waited for before the statement
        // takes any lock of its own.
        let db = Arc::clone(&self.db);
        let waiting = std::time::Instant::now();
        let _admission = if txn_control {
            None
        } else {
            Some(self.admit(&db, stmt, !is_read_only(stmt))?)
        };
        if !txn_control && !refused {
            if !self.autocommit() && !self.in_txn {
                self.open_txn();
            }
            self.acquire(exclusive)?;
        }
        let mut stats = self.stmt_stats.get();
        stats.lock_wait = waiting.elapsed();
        self.stmt_stats.set(stats);
        let mark = self.undo.len();
        let r = if refused {
            let e = Error::new(1792, "Cannot execute statement in a READ ONLY transaction.");
            Err((e, vec![]))
        } else if txn_control {
            self.dispatch(stmt, params, load_local, cache, out.take())
        } else if exclusive {
            // DDL runs alone, on the engines' tables directly, in its own log transaction.
            self.begin_txn();
            let r = self.dispatch(stmt, params, load_local, cache, out.take());
            self.wal_txn = quarry_storage::Wal::thread_txn();
            r
        } else {
            let write = !is_read_only(stmt);
            let ctx = self.txn_context(write, read_lock(stmt));
            let _g = quarry_txn::enter(ctx);
            let r = self.dispatch(stmt, params, load_local, cache, out.take());
            // TRUNCATE commits and goes on in a new log transaction.
            self.wal_txn = quarry_storage::Wal::thread_txn();
            quarry_storage::Wal::set_thread_txn(0);
            r
        };
        let mut r = match r {
            Ok((out, ctx_undo, warns)) => {
                self.undo.extend(ctx_undo);
                for (level, code, msg) in warns {
                    self.warnings.push((level.into(), code, msg));
                }
                Ok(out)
            }
            Err((e, ctx_undo)) => {
                self.undo.extend(ctx_undo);
                // Statement-level rollback: only this statement's changes are undone;
                // a deadlock's victim loses its whole transaction (as in InnoDB).
                let _ = self.rollback_to(mark);
                if e.code == 1213 && self.in_txn {
                    let _ = self.rollback();
                }
                self.note_failure(&e);
                Err(e)
            }
        };
        if !self.settings().notes {
            self.warnings.retain(|(level, ..)| level != "Note");
        }
        if !self.in_txn {
            // An autocommit statement's failure was undone above (from `mark`, 0 here).
            if !txn_control {
                let lsn = match self.end_txn(r.is_ok()) {
                    Ok(lsn) => lsn,
                    Err(e) => {
                        // No log space for the COMMIT: the statement changes nothing.
                        let _ = self.rollback_to(0);
                        let _ = self.end_txn(false);
                        self.note_failure(&e);
                        r = Err(e);
                        None
                    }
                };
                self.release();
                if let Err(e) = self.db.wal.wait_commit(lsn) {
                    if r.is_ok() {
                        r = Err(e);
                    }
                }
            }
            self.undo.clear();
        }
        match &r {
            Ok(Output::Ok { affected, .. }) => self.row_count = *affected as i64,
            Ok(Output::Rows { rows, .. }) => {
                self.row_count = -1;
                self.found_rows = self.calc_found.take().unwrap_or(rows.len() as u64);
            }
            Ok(Output::Streamed { rows }) => {
                self.row_count = -1;
                self.found_rows = self.calc_found.take().unwrap_or(*rows);
            }
            Err(_) => {
                self.row_count = -1;
                self.calc_found.set(None);
            }
        }
        *self.info.command.lock() = "Sleep".into();
        *self.info.info.lock() = None;
        self.db
            .questions
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        r
    }

    #[allow(clippy::type_complexity)]
    fn dispatch(
        &mut self,
        stmt: &Stmt,
        params: Vec<Value>,
        load_local: &mut dyn crate::LocalInfile,
        cache: Option<&Prepared>,
        out: Option<&mut dyn RowSink>,
    ) -> std::result::Result<
        (Output, Vec<Undo>, Vec<quarry_executor::exec::Warning>),
        (Error, Vec<Undo>),
    > {
        // SET statements run too (a connector sets its variables at connect), as MariaDB.
        let allowed = match stmt {
            Stmt::SetPassword { .. } => true,
            Stmt::Ast(s) => matches!(**s, S::Set(_)),
            _ => false,
        };
        if self.must_set_password && !allowed {
            return Err((Error::must_set_password(), vec![]));
        }
        if let Err(e) = self.check_access_cached(stmt, cache.map(|p| &p.access)) {
            return Err((e, vec![]));
        }
        // Statements that use the executor context collect undo and warnings there.
        let cell: StmtSink = RefCell::new(None);
        let res = match (cache, stmt) {
            (Some(p), Stmt::Ast(s)) if matches!(&**s, S::Query(_)) => {
                let S::Query(q) = &**s else { unreachable!() };
                self.run_prepared_query(q, params, &p.plan, &cell, out)
            }
            _ => self.dispatch_inner(stmt, params, load_local, &cell, out),
        };
        // SHOW … WHERE: the rows the condition holds for, over the output's columns.
        let res = match (res, show_where(stmt)) {
            (Ok(Output::Rows { columns, rows }), Some(cond)) => self
                .rows_where(cond, &columns, rows)
                .map(|rows| Output::Rows { columns, rows }),
            (r, _) => r,
        };
        let (undo, warns) = cell.into_inner().unwrap_or_default();
        match res {
            Ok(o) => Ok((o, undo, warns)),
            Err(e) => Err((e, undo)),
        }
    }

    /// A prepared SELECT: bind once, then run the kept plan while it is current.
    fn run_prepared_query(
        &self,
        q: &ast::Query,
        params: Vec<Value>,
        cache: &PlanCache,
        sink: &StmtSink,
        out: Option<&mut dyn RowSink>,
    ) -> Result<Output> {
        let generation = self.db.catalog.generation();
        let stale = cache.borrow().as_ref().is_none_or(|c| {
            c.generation != generation
                || c.db != self.current_db
                || c.for_params.as_ref().is_some_and(|p| *p != params)
        });
        if stale {
            let mut b = Binder::new(&self.db.catalog, self.current_db.clone());
            b.param_values = Some(params.clone());
            let plan = b.bind_query(q)?;
            *cache.borrow_mut() = Some(CachedPlan {
                generation,
                db: self.current_db.clone(),
                plan,
                for_params: b.limit_has_params.then(|| params.clone()),
            });
        }
        let cached = cache.borrow();
        let sp = &cached.as_ref().expect("bound above").plan;
        self.exec_ctx(params, sink, |ctx| {
            let r = result_set(sp, ctx, out)?;
            self.calc_found.set(rows_without_limit(
                q,
                &self.db.catalog,
                self.current_db.clone(),
                ctx,
            )?);
            Ok(r)
        })
    }

    fn exec_ctx<T>(
        &self,
        params: Vec<Value>,
        sink: &StmtSink,
        f: impl FnOnce(&ExecCtx) -> Result<T>,
    ) -> Result<T> {
        let st = self.settings();
        let ctx = ExecCtx {
            catalog: &self.db.catalog,
            db: self.current_db.clone(),
            params,
            session: self,
            planner: &quarry_planner::Planning,
            outer: RefCell::new(vec![]),
            sub_cache: RefCell::default(),
            in_sets: RefCell::new(HashMap::new()),
            work_tables: RefCell::new(HashMap::new()),
            ctes: RefCell::new(HashMap::new()),
            insert_row: RefCell::new(None),
            now: DateTime::now(),
            rand_state: Cell::new(self.rand.get()),
            warnings: RefCell::new(vec![]),
            undo: RefCell::new(vec![]),
            strict: st.strict,
            check_constraints: st.check_constraints,
            foreign_key_checks: st.foreign_key_checks,
            safe_updates: st.safe_updates,
            full_scan: Cell::new(false),
            div_zero_is_error: st.div_zero_is_error,
            writing: Cell::new(false),
            ignoring: Cell::new(false),
            target: RefCell::new(None),
            read_buffer: st.read_buffer,
            interrupt: quarry_executor::exec::Interrupt::new(
                &self.info.killed,
                self.deadline.get(),
            ),
            max_packet: st.max_packet,
            agg_buffer: st.agg_buffer,
            join_buffer: st.join_buffer,
            group_concat_max: st.group_concat_max,
            pushdown: st.pushdown,
            vectors: st.vectors,
            runtime_filters: st.runtime_filters.then(RefCell::default),
            sort_buffer: st.sort_buffer,
            profile: RefCell::new(None),
        };
        let r = f(&ctx);
        let mut stats = self.stmt_stats.get();
        stats.full_scan |= ctx.full_scan.get();
        self.stmt_stats.set(stats);
        *self.info.progress.lock() = None;
        self.rand.set(ctx.rand_state.get());
        *sink.borrow_mut() = Some((ctx.undo.into_inner(), ctx.warnings.into_inner()));
        r
    }

    /// A definition's CHECK conditions name its columns only and read no other table.
    fn validate_checks(&self, db: &str, def: &TableDef) -> Result<()> {
        if def.checks.is_empty() {
            return Ok(());
        }
        let mut b = Binder::new(&self.db.catalog, Some(db.to_string()));
        quarry_planner::dml::validate_checks(def, db, &mut b)
    }

    fn require_db(&self, db: Option<&str>) -> Result<String> {
        match db {
            Some(d) => Ok(d.to_string()),
            None => self.current_db.clone().ok_or_else(Error::no_database),
        }
    }

    /// SHOW TABLES [FROM db]'s database.
    fn shown_db(&self, o: &ast::ShowStatementOptions) -> Result<String> {
        match o.show_in.as_ref().and_then(|i| i.parent_name.as_ref()) {
            Some(n) => Ok(quarry_planner::bind::object_name(n).join(".")),
            None => self.require_db(None),
        }
    }

    fn split_name(&self, n: &ast::ObjectName) -> Result<(String, String)> {
        let parts = quarry_planner::bind::object_name(n);
        match parts.as_slice() {
            [t] => Ok((self.require_db(None)?, t.clone())),
            [d, t] => Ok((d.clone(), t.clone())),
            _ => Err(Error::syntax_near(&n.to_string())),
        }
    }

    fn dispatch_inner(
        &mut self,
        stmt: &Stmt,
        params: Vec<Value>,
        load_local: &mut dyn crate::LocalInfile,
        sink: &StmtSink,
        out: Option<&mut dyn RowSink>,
    ) -> Result<Output> {
        if let Some(out) = self.account_statement(stmt)? {
            return Ok(out);
        }
        let s = match stmt {
            Stmt::Ast(s) => s,
            Stmt::Flush { hosts, read_lock } => {
                if *hosts {
                    self.db.hosts.flush();
                }
                if let Some(tables) = read_lock {
                    self.flush_read_lock(tables)?;
                }
                return Ok(Output::ok(0));
            }
            Stmt::LockTables(items) => {
                self.lock_tables(items)?;
                return Ok(Output::ok(0));
            }
            Stmt::UnlockTables => {
                // Tables locked in a transaction: UNLOCK TABLES commits it (MariaDB).
                if self.in_txn && self.locked.any() {
                    self.commit()?;
                }
                self.unlock_tables();
                return Ok(Output::ok(0));
            }
            Stmt::SelectInto(q, into) => {
                let S::Query(q) = &**q else {
                    return Err(Error::syntax_near("INTO"));
                };
                let base = match &self.current_db {
                    Some(db) => self.db.datadir().join(db),
                    None => self.db.datadir().to_path_buf(),
                };
                let path = self.db.files.allowed(&into.file, &base)?;
                let cur = self.current_db.clone();
                let rows = self.exec_ctx(params, sink, |ctx| {
                    let mut b = Binder::new(&self.db.catalog, cur);
                    let sp = b.bind_query(q)?;
                    outfile::write(&path, &into.file, into, &sp, ctx)
                })?;
                return Ok(Output::ok(rows));
            }
            Stmt::LoadData(ld) => {
                let db = self.require_db(ld.db.as_deref())?;
                let entry = self.db.catalog.table(&db, &ld.table)?;
                // Read as it is parsed, a window at a time: the file never sits in memory.
                let (mut input, total): (Box<dyn std::io::Read + '_>, u64) = if ld.local {
                    (load_local.open(&ld.file)?, 0)
                } else {
                    let path = self
                        .db
                        .files
                        .allowed(&ld.file, &self.db.datadir().join(&db))?;
                    let f = std::fs::File::open(&path).map_err(|e| {
                        Error::new(29, format!("File '{}' not found (Errcode: {e})", ld.file))
                    })?;
                    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
                    (Box::new(f), len)
                };
                *self.info.progress.lock() = Some(crate::Progress {
                    stage: "loading data",
                    done: 0,
                    total,
                    unit: "bytes",
                });
                let progress = self.info.clone();
                let r = self.exec_ctx(params, sink, |ctx| {
                    quarry_executor::dml::load_data_from(&entry, ld, &mut input, ctx, &|read| {
                        if let Some(g) = progress.progress.lock().as_mut() {
                            g.done = read;
                        }
                    })
                });
                drop(input);
                let r = r?;
                return Ok(Output::Ok {
                    affected: r.affected,
                    last_insert_id: 0,
                    info: r.info,
                });
            }
            Stmt::ShowEngines => {
                let cols = vec![
                    text("Engine", 64),
                    text("Support", 8),
                    text("Comment", 160),
                    text("Transactions", 3),
                    text("XA", 3),
                    text("Savepoints", 3),
                ];
                let rows = self.engines_rows();
                return Ok(Output::Rows {
                    columns: cols,
                    rows,
                });
            }
            Stmt::ShowWarnings {
                errors,
                count,
                limit,
            } => {
                let list: Vec<_> = self
                    .warnings
                    .iter()
                    .filter(|w| !errors || w.0 == "Error")
                    .cloned()
                    .collect();
                if *count {
                    let name = if *errors {
                        "@@session.error_count"
                    } else {
                        "@@session.warning_count"
                    };
                    return Ok(Output::Rows {
                        columns: vec![num(name)],
                        rows: vec![vec![Value::Int(list.len() as i64)]],
                    });
                }
                let (skip, take) = limit.unwrap_or((0, u64::MAX));
                let rows = list
                    .into_iter()
                    .skip(skip as usize)
                    .take(take.min(usize::MAX as u64) as usize)
                    .map(|(l, c, m)| vec![Value::Str(l), Value::Int(c as i64), Value::Str(m)])
                    .collect();
                return Ok(Output::Rows {
                    columns: vec![text("Level", 7), num("Code"), text("Message", 512)],
                    rows,
                });
            }
            Stmt::ShowServer { what, db, like } => {
                return self.show_server(what, db.as_deref(), like.as_deref());
            }
            Stmt::ShowCreateProgram { kind, name } => {
                return Err(match *kind {
                    "TRIGGER" => Error::new(1360, "Trigger does not exist"),
                    "EVENT" => Error::new(1539, format!("Unknown event '{name}'")),
                    k => Error::new(1305, format!("{k} {name} does not exist")),
                });
            }
            Stmt::Shutdown => {
                self.db.request_shutdown();
                return Ok(Output::ok(0));
            }
            // Stored programs, events and triggers do not exist yet: none to list, under
            // MariaDB's columns.
            Stmt::ShowProgramObjects { what, db } => {
                let names: &[&str] = match *what {
                    "EVENTS" => {
                        self.require_db(db.as_deref())?;
                        &[
                            "Db",
                            "Name",
                            "Definer",
                            "Time zone",
                            "Type",
                            "Execute at",
                            "Interval value",
                            "Interval field",
                            "Starts",
                            "Ends",
                            "Status",
                            "Originator",
                            "character_set_client",
                            "collation_connection",
                            "Database Collation",
                        ]
                    }
                    "TRIGGERS" => {
                        self.require_db(db.as_deref())?;
                        &[
                            "Trigger",
                            "Event",
                            "Table",
                            "Statement",
                            "Timing",
                            "Created",
                            "sql_mode",
                            "Definer",
                            "character_set_client",
                            "collation_connection",
                            "Database Collation",
                        ]
                    }
                    _ => &[
                        "Db",
                        "Name",
                        "Type",
                        "Definer",
                        "Modified",
                        "Created",
                        "Security_type",
                        "Comment",
                        "character_set_client",
                        "collation_connection",
                        "Database Collation",
                    ],
                };
                return Ok(Output::Rows {
                    columns: names.iter().map(|n| text(n, 64)).collect(),
                    rows: vec![],
                });
            }
            Stmt::AlterKeys { db, table, enable } => {
                return self.alter_keys(db.as_deref(), table, *enable);
            }
            Stmt::AlterEngine { db, table, engine } => {
                let db = self.require_db(db.as_deref())?;
                let entry = self.db.catalog.table(&db, table)?;
                let (_, canonical) = self.db.catalog.engine(Some(engine))?;
                let mut def = entry.def.clone();
                def.engine = canonical.to_string();
                // Always a rebuild, as in MySQL (`ENGINE=` naming the same engine too).
                self.rebuild_table(&db, &entry, def, None, sink)?;
                return Ok(Output::Ok {
                    affected: 0,
                    last_insert_id: 0,
                    info: Some("Records: 0  Duplicates: 0  Warnings: 0".into()),
                });
            }
            Stmt::ShowProcessList => {
                let rows = self.process_rows();
                let cols = vec![
                    num("Id"),
                    text("User", 32),
                    text("Host", 64),
                    text("db", 64),
                    text("Command", 16),
                    num("Time"),
                    text("State", 64),
                    text("Info", 100),
                    OutColumn::expr("Progress", SqlType::decimal(7, 3), false),
                ];
                return Ok(Output::Rows {
                    columns: cols,
                    rows,
                });
            }
            Stmt::ShowTableStatus { db, like, .. } => {
                return self.show_table_status(db.as_deref(), like.as_deref())
            }
            Stmt::ShowIndex { table, db, .. } => return self.show_index(db.as_deref(), table),
            Stmt::AlterDatabase {
                name,
                charset,
                collate,
            } => {
                let db = self.require_db(name.as_deref())?;
                let coll =
                    quarry_catalog::resolve_collation(charset.as_deref(), collate.as_deref())?
                        .unwrap_or_default();
                self.db.catalog.set_database_collation(&db, coll)?;
                return Ok(Output::ok(1));
            }
            Stmt::ShowCreateDatabase { name } => {
                if !self.db.catalog.database_exists(name) {
                    return Err(Error::unknown_database(name));
                }
                let c = self.db.catalog.database_collation(name);
                let sql = format!(
                    "CREATE DATABASE `{name}` /*!40100 DEFAULT CHARACTER SET {} COLLATE {} */",
                    c.charset(),
                    c.name()
                );
                return Ok(Output::Rows {
                    columns: vec![text("Database", 64), text("Create Database", 1024)],
                    rows: vec![vec![Value::Str(name.clone()), Value::Str(sql)]],
                });
            }
            Stmt::ChecksumTable { tables, quick } => {
                return self.checksum_tables(tables, *quick, sink);
            }
            Stmt::TableMaintenance { op, tables } => {
                let mut rows = vec![];
                for (d, t) in tables {
                    let db = self.require_db(d.as_deref())?;
                    let name = format!("{db}.{t}");
                    let op_l = op.to_ascii_lowercase();
                    match self.db.catalog.table(&db, t) {
                        Err(e) => {
                            rows.push(vec![
                                Value::Str(name.clone()),
                                Value::Str(op_l.clone()),
                                Value::Str("Error".into()),
                                Value::Str(e.message),
                            ]);
                            rows.push(vec![
                                Value::Str(name),
                                Value::Str(op_l),
                                Value::Str("status".into()),
                                Value::Str("Operation failed".into()),
                            ]);
                        }
                        Ok(entry) if op == "REPAIR" => {
                            for (kind, msg) in self.repair(&db, &entry, sink) {
                                rows.push(vec![
                                    Value::Str(name.clone()),
                                    Value::Str(op_l.clone()),
                                    Value::Str(kind.into()),
                                    Value::Str(msg),
                                ]);
                            }
                        }
                        Ok(entry) => {
                            let problems = if op == "CHECK" {
                                // A read the damage stops is itself what CHECK found.
                                entry.handle.check().unwrap_or_else(|e| vec![e.message])
                            } else if op == "ANALYZE" {
                                entry.handle.analyze().map(|_| vec![])?
                            } else if op == "OPTIMIZE" {
                                entry.handle.optimize().map(|_| vec![])?
                            } else {
                                entry.handle.sync().map(|_| vec![])?
                            };
                            for p in &problems {
                                rows.push(vec![
                                    Value::Str(name.clone()),
                                    Value::Str(op_l.clone()),
                                    Value::Str("error".into()),
                                    Value::Str(p.clone()),
                                ]);
                            }
                            let msg = if problems.is_empty() { "OK" } else { "Corrupt" };
                            rows.push(vec![
                                Value::Str(name),
                                Value::Str(op_l),
                                Value::Str("status".into()),
                                Value::Str(msg.into()),
                            ]);
                        }
                    }
                }
                let cols = vec![
                    text("Table", 128),
                    text("Op", 10),
                    text("Msg_type", 10),
                    text("Msg_text", 256),
                ];
                return Ok(Output::Rows {
                    columns: cols,
                    rows,
                });
            }
            // Run by `account_statement` above.
            _ => {
                return Err(Error::internal(
                    "an account statement went past its handler",
                ))
            }
        };
        match &**s {
            S::Query(q) => {
                let cur = self.current_db.clone();
                self.exec_ctx(params, sink, |ctx| {
                    let mut b = Binder::new(&self.db.catalog, cur.clone());
                    let sp = b.bind_query(q)?;
                    let r = result_set(&sp, ctx, out)?;
                    self.calc_found
                        .set(rows_without_limit(q, &self.db.catalog, cur, ctx)?);
                    Ok(r)
                })
            }
            S::Insert(ins) => {
                let cur = self.current_db.clone();
                let r = self.exec_ctx(params, sink, |ctx| {
                    let mut b = Binder::new(&self.db.catalog, cur);
                    quarry_planner::dml::insert(ins, ctx, &mut b)
                })?;
                if let Some(id) = r.last_insert_id {
                    self.last_insert_id.set(id);
                }
                if let Some(ret) = r.returned {
                    return Ok(Output::Rows {
                        columns: ret.columns,
                        rows: ret.rows,
                    });
                }
                Ok(Output::Ok {
                    affected: r.affected,
                    last_insert_id: r.last_insert_id.unwrap_or(0),
                    info: r.info,
                })
            }
            S::Update(u) => {
                let cur = self.current_db.clone();
                let r = self.exec_ctx(params, sink, |ctx| {
                    let mut b = Binder::new(&self.db.catalog, cur);
                    quarry_planner::dml::update(u, ctx, &mut b)
                })?;
                Ok(Output::Ok {
                    affected: r.affected,
                    last_insert_id: 0,
                    info: r.info,
                })
            }
            S::Delete(d) => {
                let cur = self.current_db.clone();
                let r = self.exec_ctx(params, sink, |ctx| {
                    let mut b = Binder::new(&self.db.catalog, cur);
                    quarry_planner::dml::delete(d, ctx, &mut b)
                })?;
                if let Some(ret) = r.returned {
                    return Ok(Output::Rows {
                        columns: ret.columns,
                        rows: ret.rows,
                    });
                }
                Ok(Output::ok(r.affected))
            }
            S::StartTransaction { modes, .. } => {
                if self.in_txn {
                    self.commit()?;
                }
                self.unlock_tables_for_transaction();
                let session_ro = self
                    .sys_var("transaction_read_only")
                    .map(|v| v.to_i64() != 0)
                    .unwrap_or(false);
                self.txn_read_only = modes.iter().fold(session_ro, |ro, m| match m {
                    ast::TransactionMode::AccessMode(ast::TransactionAccessMode::ReadOnly) => true,
                    ast::TransactionMode::AccessMode(ast::TransactionAccessMode::ReadWrite) => {
                        false
                    }
                    _ => ro,
                });
                self.open_txn();
                self.acquire(false)?;
                Ok(Output::ok(0))
            }
            S::Commit { .. } => {
                self.commit()?;
                Ok(Output::ok(0))
            }
            S::Rollback {
                savepoint: None, ..
            } => {
                self.rollback()?;
                Ok(Output::ok(0))
            }
            S::Rollback {
                savepoint: Some(sp),
                ..
            } => {
                let pos = self
                    .savepoints
                    .iter()
                    .rposition(|(n, _)| n.eq_ignore_ascii_case(&sp.value));
                let Some(pos) = pos else {
                    return Err(Error::new(
                        1305,
                        format!("SAVEPOINT {} does not exist", sp.value),
                    ));
                };
                let mark = self.savepoints[pos].1;
                self.savepoints.truncate(pos + 1);
                self.rollback_to(mark)?;
                Ok(Output::ok(0))
            }
            S::Savepoint { name } => {
                if !self.in_txn {
                    return Ok(Output::ok(0));
                }
                self.savepoints
                    .retain(|(n, _)| !n.eq_ignore_ascii_case(&name.value));
                self.savepoints.push((name.value.clone(), self.undo.len()));
                Ok(Output::ok(0))
            }
            S::ReleaseSavepoint { name } => {
                self.savepoints
                    .retain(|(n, _)| !n.eq_ignore_ascii_case(&name.value));
                Ok(Output::ok(0))
            }
            S::Set(set) => self.set(set, params, sink),
            S::Use(u) => {
                let name = match u {
                    ast::Use::Object(n) | ast::Use::Database(n) | ast::Use::Schema(n) => {
                        quarry_planner::bind::object_name(n).join(".")
                    }
                    _ => return Err(Error::syntax_near(&u.to_string())),
                };
                self.use_db(&name)?;
                Ok(Output::ok(0))
            }
            S::CreateDatabase {
                db_name,
                if_not_exists,
                default_charset,
                default_collation,
                ..
            } => {
                let coll = quarry_catalog::resolve_collation(
                    default_charset.as_deref(),
                    default_collation.as_deref(),
                )?;
                self.create_database(db_name, *if_not_exists, coll)
            }
            S::CreateSchema {
                schema_name: ast::SchemaName::Simple(db_name),
                if_not_exists,
                ..
            } => self.create_database(db_name, *if_not_exists, None),
            // MySQL's `DROP INDEX i ON t` is `ALTER TABLE t DROP INDEX i`.
            S::Drop {
                object_type: ast::ObjectType::Index,
                names,
                table: Some(t),
                ..
            } if names.len() == 1 => {
                let sql = format!("ALTER TABLE {t} DROP INDEX {}", names[0]);
                match quarry_sql::parse_one(&sql)? {
                    Stmt::Ast(a) => match &*a {
                        S::AlterTable(at) => self.alter_table(at, sink),
                        _ => Err(Error::syntax_near(&sql)),
                    },
                    _ => Err(Error::syntax_near(&sql)),
                }
            }
            S::Drop {
                object_type,
                if_exists,
                names,
                ..
            } => self.drop(object_type, *if_exists, names),
            S::CreateTable(ct) => self.create_table(ct, params, sink),
            S::CreateView(cv) => {
                let (db, name) = self.split_name(&cv.name)?;
                // Bind once now so a broken view is rejected at CREATE time, as MySQL does;
                // the view's own name is not a view meanwhile (no cycle can be stored).
                let mut b = Binder::new(&self.db.catalog, Some(db.clone()));
                b.defining_view = Some((db.clone(), name.clone()));
                let sp = b.bind_query(&cv.query)?;
                let columns: Vec<String> =
                    cv.columns.iter().map(|c| c.name.value.clone()).collect();
                if !columns.is_empty() && columns.len() != sp.columns.len() {
                    return Err(Error::new(
                        1353,
                        "View's SELECT and view's field list have different column counts",
                    ));
                }
                let (definer, invoker) = self.view_definer(cv.params.as_ref())?;
                let view = quarry_catalog::ViewDef {
                    columns,
                    sql: quarry_sql::query_text(&cv.query),
                    definer,
                    invoker,
                };
                self.db
                    .catalog
                    .create_view(&db, &name, view, cv.or_replace)?;
                Ok(Output::ok(0))
            }
            S::CreateIndex(ci) => {
                let (db, t) = self.split_name(&ci.table_name)?;
                let entry = self.db.catalog.table(&db, &t)?;
                let mut def = entry.def.clone();
                let name = ci.name.as_ref().map(|n| {
                    quarry_planner::bind::object_name(n)
                        .pop()
                        .unwrap_or_default()
                });
                let ct = synth_index(&def, name, &ci.columns, ci.unique)?;
                def.indexes = table_def_from_ast(&ct)?.indexes;
                self.change_table(&db, &entry, def, None, sink)?;
                Ok(Output::Ok {
                    affected: 0,
                    last_insert_id: 0,
                    info: Some("Records: 0  Duplicates: 0  Warnings: 0".into()),
                })
            }
            S::AlterTable(at) => self.alter_table(at, sink),
            S::Truncate(t) => {
                for tn in &t.table_names {
                    let (db, name) = self.split_name(&tn.name)?;
                    // A summary table of performance_schema: TRUNCATE starts it again, as
                    // monitoring tools do between samples.
                    if db.eq_ignore_ascii_case(quarry_catalog::PERFORMANCE_SCHEMA)
                        && name.eq_ignore_ascii_case("events_statements_summary_by_digest")
                        && !self.db.catalog.database_exists(&db)
                    {
                        self.db.digests.clear();
                        continue;
                    }
                    let entry = self.db.catalog.table(&db, &name)?;
                    self.check_truncate_parent(&db, &name)?;
                    entry.handle.truncate()?;
                    *entry.auto_inc.lock() = entry.def.auto_increment_start.max(1);
                    entry
                        .auto_inc_known
                        .store(true, std::sync::atomic::Ordering::Release);
                }
                Ok(Output::ok(0))
            }
            S::RenameTable(renames) => {
                // All renames of the statement happen, or (after a crash) are finished.
                let mut steps = vec![];
                for r in renames {
                    let (db, from) = self.split_name(&r.old_name)?;
                    let (to_db, to) = self.split_name(&r.new_name)?;
                    steps.push(quarry_catalog::DdlStep::Rename {
                        db,
                        from,
                        to_db,
                        to,
                    });
                }
                self.db.catalog.apply_ddl(&steps)?;
                for st in &steps {
                    if let quarry_catalog::DdlStep::Rename {
                        db,
                        from,
                        to_db,
                        to,
                    } = st
                    {
                        self.retarget_foreign_keys(db, from, to_db, to)?;
                    }
                }
                Ok(Output::ok(0))
            }
            S::ShowDatabases { show_options, .. } => {
                let like = show_like(show_options);
                let mut names = self.db.catalog.databases();
                // Without SHOW DATABASES, only those the account has a privilege in.
                let e = self.privileges();
                if e.global & crate::privileges::SHOW_DB == 0 {
                    names.retain(|d| e.any_in_db(d));
                }
                names.push("information_schema".into());
                names.sort();
                let rows = names
                    .into_iter()
                    .filter(|n| like_filter(like.as_deref(), n))
                    .map(|n| vec![Value::Str(n)])
                    .collect();
                Ok(Output::Rows {
                    columns: vec![text("Database", 64)],
                    rows,
                })
            }
            S::ShowTables {
                show_options, full, ..
            } => {
                let db = self.shown_db(show_options)?;
                let system = db.eq_ignore_ascii_case(quarry_catalog::INFORMATION_SCHEMA);
                if !system && !self.db.catalog.database_exists(&db) {
                    return Err(Error::unknown_database(&db));
                }
                let like = show_like(show_options);
                // MariaDB names the pattern in the column: `Tables_in_db (pat%)`.
                let heading = match &like {
                    Some(pat) => format!("Tables_in_{db} ({pat})"),
                    None => format!("Tables_in_{db}"),
                };
                let mut columns = vec![text(&heading, 64)];
                if *full {
                    columns.push(text("Table_type", 64));
                }
                if system {
                    let rows = infoschema::table_names()
                        .into_iter()
                        .filter(|n| like_filter(like.as_deref(), n))
                        .map(|n| {
                            let mut r = vec![Value::Str(n)];
                            if *full {
                                r.push(Value::Str("SYSTEM VIEW".into()));
                            }
                            r
                        })
                        .collect();
                    return Ok(Output::Rows { columns, rows });
                }
                let mut names: Vec<(String, &str)> = self
                    .db
                    .catalog
                    .tables(&db)?
                    .into_iter()
                    .map(|t| (t.def.name.clone(), "BASE TABLE"))
                    .collect();
                names.extend(
                    self.db
                        .catalog
                        .views(&db)
                        .into_iter()
                        .map(|(n, _)| (n, "VIEW")),
                );
                // Unreadable definitions are listed (using them gives their error).
                names.extend(
                    self.db
                        .catalog
                        .offline(&db)
                        .into_iter()
                        .map(|n| (n, "BASE TABLE")),
                );
                names.sort();
                // Without a privilege on the database, only the tables with one of their own.
                let e = self.privileges();
                let all = e.db(&db) & (crate::privileges::DB_ALL) != 0;
                let rows = names
                    .into_iter()
                    .filter(|(n, _)| all || e.any_on_table(&db, n))
                    .filter(|(n, _)| like_filter(like.as_deref(), n))
                    .map(|(n, kind)| {
                        let mut r = vec![Value::Str(n)];
                        if *full {
                            r.push(Value::Str(kind.into()));
                        }
                        r
                    })
                    .collect();
                Ok(Output::Rows { columns, rows })
            }
            S::ShowColumns {
                show_options, full, ..
            } => {
                let Some(tn) = show_options
                    .show_in
                    .as_ref()
                    .and_then(|i| i.parent_name.as_ref())
                else {
                    return Err(Error::syntax_near(""));
                };
                let (db, t) = self.split_name(tn)?;
                self.describe(&db, &t, *full, show_like(show_options).as_deref())
            }
            S::ExplainTable { table_name, .. } => {
                let (db, t) = self.split_name(table_name)?;
                self.describe(&db, &t, false, None)
            }
            S::ShowCreate {
                obj_type: ast::ShowCreateObject::Table,
                obj_name,
            } => {
                let (db, t) = self.split_name(obj_name)?;
                let e = match self.db.catalog.table(&db, &t) {
                    Err(e) if e.code == 1146 && self.db.catalog.view(&db, &t).is_some() => {
                        return self.show_create_view(db, t);
                    }
                    r => r?,
                };
                self.with_ctx(|ctx| quarry_executor::dml::ensure_auto_inc(&e, ctx))?;
                let next = *e.auto_inc.lock();
                let sql = e
                    .def
                    .create_sql(e.def.auto_increment_column().map(|_| next));
                Ok(Output::Rows {
                    columns: vec![text("Table", 64), text("Create Table", 1024)],
                    rows: vec![vec![Value::Str(t), Value::Str(sql)]],
                })
            }
            S::ShowCreate {
                obj_type: ast::ShowCreateObject::View,
                obj_name,
            } => {
                let (db, v) = self.split_name(obj_name)?;
                self.show_create_view(db, v)
            }
            S::ShowCollation { filter } => self.show_collation(filter.as_ref()),
            S::ShowCharset(sc) => self.show_charset(sc.filter.as_ref()),
            S::ShowVariables { filter, global, .. } => {
                let all = self.variable_values(*global);
                let like = match filter {
                    Some(ast::ShowStatementFilter::Like(p))
                    | Some(ast::ShowStatementFilter::ILike(p)) => Some(p.clone()),
                    _ => None,
                };
                let rows = all
                    .into_iter()
                    .filter(|(k, _)| like_filter(like.as_deref(), k))
                    .map(|(k, v)| vec![Value::Str(k), Value::Str(v.to_string())])
                    .collect();
                Ok(Output::Rows {
                    columns: vec![text("Variable_name", 64), text("Value", 2048)],
                    rows,
                })
            }
            S::ShowStatus { filter, .. } => {
                let like = match filter {
                    Some(ast::ShowStatementFilter::Like(p))
                    | Some(ast::ShowStatementFilter::ILike(p)) => Some(p.clone()),
                    _ => None,
                };
                let all = self.status_values();
                let rows = all
                    .into_iter()
                    .filter(|(k, _)| like_filter(like.as_deref(), k))
                    .map(|(k, v)| vec![Value::Str(k), Value::Str(v)])
                    .collect();
                Ok(Output::Rows {
                    columns: vec![text("Variable_name", 64), text("Value", 64)],
                    rows,
                })
            }
            S::Explain {
                statement,
                analyze,
                format,
                ..
            } => self.explain(statement, *analyze, format.as_ref(), params, sink),
            S::Kill { id, modifier, .. } => {
                let procs = self.db.processes.lock();
                let p = procs
                    .get(id)
                    .ok_or_else(|| Error::new(1094, format!("Unknown thread id: {id}")))?;
                // Another account's thread: CONNECTION ADMIN (or SUPER), else 1095.
                let own = self.is_own(p);
                if !own
                    && self.privileges().global
                        & (crate::privileges::SUPER | crate::privileges::CONNECTION_ADMIN)
                        == 0
                {
                    return Err(Error::not_thread_owner(*id));
                }
                p.killed.store(true, Ordering::Relaxed);
                if !matches!(modifier, Some(ast::KillType::Query)) {
                    p.kill_connection.store(true, Ordering::Relaxed);
                }
                Ok(Output::ok(0))
            }
            S::Flush { .. } => Ok(Output::ok(0)),
            other => Err(Error::unsupported(
                other.to_string().chars().take(60).collect::<String>(),
            )),
        }
    }

    pub fn use_db(&mut self, name: &str) -> Result<()> {
        if !self.db.catalog.database_exists(name)
            && !name.eq_ignore_ascii_case("information_schema")
        {
            return Err(Error::unknown_database(name));
        }
        if !name.eq_ignore_ascii_case("information_schema") {
            self.require_any_in_db(name)?;
        }
        self.current_db = Some(name.to_string());
        *self.info.db.lock() = Some(name.to_string());
        Ok(())
    }

    fn drop(
        &mut self,
        object_type: &ast::ObjectType,
        if_exists: bool,
        names: &[ast::ObjectName],
    ) -> Result<Output> {
        match object_type {
            ast::ObjectType::Table => {
                let mut missing = vec![];
                let listed = names
                    .iter()
                    .map(|n| self.split_name(n))
                    .collect::<Result<Vec<_>>>()?;
                self.check_drop_parents(&listed)?;
                for n in names {
                    let (db, t) = self.split_name(n)?;
                    if self.db.catalog.drop_offline(&db, &t, false)? {
                        continue;
                    }
                    if !self.db.catalog.table_exists(&db, &t) {
                        missing.push(format!("{db}.{t}"));
                        continue;
                    }
                    self.db.catalog.drop_table(&db, &t)?;
                }
                if !missing.is_empty() {
                    if if_exists {
                        for m in missing {
                            self.warnings.push((
                                "Note".into(),
                                1051,
                                format!("Unknown table '{m}'"),
                            ));
                        }
                    } else {
                        return Err(Error::unknown_table(&missing.join(",")));
                    }
                }
                Ok(Output::ok(0))
            }
            ast::ObjectType::Schema | ast::ObjectType::Database => {
                let name = quarry_planner::bind::object_name(&names[0]).join(".");
                self.refuse_system_schema(&name)?;
                let n = self.db.catalog.drop_database(&name, if_exists)?;
                if n.is_none() {
                    self.warnings.push((
                        "Note".into(),
                        1008,
                        format!("Can't drop database '{name}'; database doesn't exist"),
                    ));
                }
                if self.current_db.as_deref() == Some(name.as_str()) {
                    self.current_db = None;
                }
                Ok(Output::ok(n.unwrap_or(0) as u64))
            }
            ast::ObjectType::View => {
                let mut missing = vec![];
                for n in names {
                    let (db, v) = self.split_name(n)?;
                    if !self.db.catalog.drop_view(&db, &v)?
                        && !self.db.catalog.drop_offline(&db, &v, true)?
                    {
                        missing.push(format!("{db}.{v}"));
                    }
                }
                if !missing.is_empty() {
                    if !if_exists {
                        return Err(Error::unknown_view(&missing.join(",")));
                    }
                    for m in missing {
                        let e = Error::unknown_view(&m);
                        self.warnings.push(("Note".into(), e.code, e.message));
                    }
                }
                Ok(Output::ok(0))
            }
            ast::ObjectType::Index => Err(Error::unsupported(
                "DROP INDEX without ON (use ALTER TABLE … DROP INDEX)",
            )),
            other => Err(Error::unsupported(format!("DROP {other}"))),
        }
    }

    /// `information_schema` is the server's: nobody creates or drops it (1044, as MariaDB).
    /// CREATE DATABASE, with its default collation when it names one (`db.opt`).
    fn create_database(
        &mut self,
        db_name: &ast::ObjectName,
        if_not_exists: bool,
        coll: Option<quarry_common::Collation>,
    ) -> Result<Output> {
        let name = quarry_planner::bind::object_name(db_name).join(".");
        self.refuse_system_schema(&name)?;
        let created = self
            .db
            .catalog
            .create_database(&name, if_not_exists, coll)?;
        if !created {
            self.warnings.push((
                "Note".into(),
                1007,
                format!("Can't create database '{name}'; database exists"),
            ));
        }
        Ok(Output::ok(created as u64))
    }

    fn refuse_system_schema(&self, db: &str) -> Result<()> {
        if db.eq_ignore_ascii_case("information_schema") {
            return Err(Error::db_access_denied(
                &self.info.user,
                &self.info.host,
                "information_schema",
            ));
        }
        Ok(())
    }

    fn create_table(
        &mut self,
        ct: &ast::CreateTable,
        params: Vec<Value>,
        sink: &StmtSink,
    ) -> Result<Output> {
        let (db, name) = self.split_name(&ct.name)?;
        if !self.db.catalog.database_exists(&db) {
            return Err(Error::unknown_database(&db));
        }
        if self.db.catalog.table_exists(&db, &name) {
            if ct.if_not_exists {
                self.warnings.push((
                    "Note".into(),
                    1050,
                    format!("Table '{name}' already exists"),
                ));
                return Ok(Output::ok(0));
            }
            return Err(Error::table_exists(&name));
        }
        if let Some(like) = &ct.like {
            let src = match like {
                ast::CreateTableLikeKind::Parenthesized(l) | ast::CreateTableLikeKind::Plain(l) => {
                    &l.name
                }
            };
            let (sdb, st) = self.split_name(src)?;
            let mut def = self.db.catalog.table(&sdb, &st)?.def.clone();
            def.name = name;
            // LIKE copies the indexes, not the FOREIGN KEYs (as MariaDB).
            def.foreign_keys.clear();
            self.db.catalog.create_table(&db, def)?;
            return Ok(Output::ok(0));
        }
        // A table that names no collation takes its database's.
        let mut def = quarry_catalog::table_def_in(ct, self.db.catalog.database_collation(&db))?;
        def.name = name.clone();
        if def.engine.is_empty() {
            def.engine = self
                .sys_var("default_storage_engine")?
                .as_str_lossy()
                .into_owned();
        }
        let Some(q) = &ct.query else {
            self.validate_checks(&db, &def)?;
            self.validate_foreign_keys(&db, &name, &def)?;
            self.db.catalog.create_table(&db, def)?;
            return Ok(Output::ok(0));
        };
        // CREATE TABLE … SELECT: declared columns first, then the query's new columns.
        let cur = self.current_db.clone();
        let mut b = Binder::new(&self.db.catalog, cur);
        let sp = b.bind_query(q)?;
        for c in &sp.columns {
            if def.column_index(&c.name).is_none() {
                def.columns.push(quarry_catalog::ColumnDef {
                    name: c.name.clone(),
                    ty: storable(c.ty),
                    nullable: c.nullable || c.flags & flags::NOT_NULL == 0,
                    default: quarry_catalog::DefaultValue::None,
                    auto_increment: false,
                    on_update_now: false,
                    comment: String::new(),
                });
            }
        }
        self.validate_checks(&db, &def)?;
        self.validate_foreign_keys(&db, &name, &def)?;
        let entry = self.db.catalog.create_table(&db, def)?;
        let positions: Vec<usize> = sp
            .columns
            .iter()
            .map(|c| entry.def.column_index(&c.name).unwrap())
            .collect();
        let r = self.exec_ctx(params, sink, |ctx| {
            let rows = collect(&sp.plan, ctx)?;
            quarry_executor::dml::insert_positioned(
                &entry,
                rows.into_iter().map(Ok),
                &positions,
                ctx,
            )
        });
        match r {
            Ok(r) => Ok(Output::Ok {
                affected: r.affected,
                last_insert_id: 0,
                info: r.info,
            }),
            Err(e) => {
                // The table is created only if the whole statement succeeds.
                *sink.borrow_mut() = None;
                let _ = self.db.catalog.drop_table(&db, &name);
                Err(e)
            }
        }
    }

    /// SHOW CREATE VIEW (and SHOW CREATE TABLE of a view, as MariaDB answers it).
    fn show_create_view(&self, db: String, v: String) -> Result<Output> {
        let view = self
            .db
            .catalog
            .view(&db, &v)
            .ok_or_else(|| Error::no_such_table(&db, &v))?;
        let cols = if view.columns.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                view.columns
                    .iter()
                    .map(|c| format!("`{c}`"))
                    .collect::<Vec<_>>()
                    .join(",")
            )
        };
        let sql = format!(
            "CREATE ALGORITHM=UNDEFINED DEFINER={}@{} SQL SECURITY {} VIEW `{v}`{cols} AS {}",
            crate::privileges::quote(&view.definer.0),
            crate::privileges::quote(&view.definer.1),
            if view.invoker { "INVOKER" } else { "DEFINER" },
            view.sql
        );
        let columns = vec![
            text("View", 64),
            text("Create View", 1024),
            text("character_set_client", 32),
            text("collation_connection", 32),
        ];
        Ok(Output::Rows {
            columns,
            rows: vec![vec![
                Value::Str(v),
                Value::Str(sql),
                Value::Str("utf8mb4".into()),
                Value::Str("utf8mb4_general_ci".into()),
            ]],
        })
    }

    fn describe(&self, db: &str, t: &str, full: bool, like: Option<&str>) -> Result<Output> {
        let e = match self.db.catalog.table(db, t) {
            Err(e) if e.code == 1146 && self.db.catalog.view(db, t).is_some() => {
                return self.describe_view(db, t, full, like);
            }
            r => r?,
        };
        let mut rows = vec![];
        for (i, c) in e.def.columns.iter().enumerate() {
            if !like_filter(like, &c.name) {
                continue;
            }
            let key = e
                .def
                .indexes
                .iter()
                .find(|ix| ix.columns.first() == Some(&i))
                .map(|ix| {
                    if ix.primary {
                        "PRI"
                    } else if ix.unique {
                        "UNI"
                    } else {
                        "MUL"
                    }
                })
                .unwrap_or("");
            let default = match &c.default {
                quarry_catalog::DefaultValue::None
                | quarry_catalog::DefaultValue::Value(Value::Null) => Value::Null,
                quarry_catalog::DefaultValue::Value(v) => Value::Str(v.to_string()),
                quarry_catalog::DefaultValue::CurrentTimestamp => {
                    Value::Str("current_timestamp()".into())
                }
            };
            let mut extra = String::new();
            if c.auto_increment {
                extra.push_str("auto_increment");
            }
            if c.on_update_now {
                extra.push_str("on update current_timestamp()");
            }
            let mut r = vec![Value::Str(c.name.clone()), Value::Str(c.ty.to_string())];
            if full {
                r.push(if c.ty.is_string() && !c.ty.is_binary() {
                    Value::Str(c.ty.coll.name().into())
                } else {
                    Value::Null
                });
            }
            r.extend([
                Value::Str(if c.nullable { "YES" } else { "NO" }.into()),
                Value::Str(key.into()),
                default,
                Value::Str(extra),
            ]);
            if full {
                r.push(Value::Str("select,insert,update,references".into()));
                r.push(Value::Str(c.comment.clone()));
            }
            rows.push(r);
        }
        let mut cols = vec![text("Field", 64), text("Type", 64)];
        if full {
            cols.push(text("Collation", 64));
        }
        cols.extend([
            text("Null", 3),
            text("Key", 3),
            OutColumn::expr("Default", SqlType::varchar(64), true),
            text("Extra", 64),
        ]);
        if full {
            cols.push(text("Privileges", 80));
            cols.push(text("Comment", 1024));
        }
        Ok(Output::Rows {
            columns: cols,
            rows,
        })
    }

    fn show_table_status(&self, db: Option<&str>, like: Option<&str>) -> Result<Output> {
        let db = self.require_db(db)?;
        let cols = vec![
            text("Name", 64),
            text("Engine", 64),
            num("Version"),
            text("Row_format", 10),
            num("Rows"),
            num("Avg_row_length"),
            num("Data_length"),
            num("Max_data_length"),
            num("Index_length"),
            num("Data_free"),
            num("Auto_increment"),
            OutColumn::expr("Create_time", SqlType::DATETIME, true),
            OutColumn::expr("Update_time", SqlType::DATETIME, true),
            OutColumn::expr("Check_time", SqlType::DATETIME, true),
            text("Collation", 32),
            num("Checksum"),
            text("Create_options", 255),
            text("Comment", 2048),
            num("Max_index_length"),
            text("Temporary", 1),
        ];
        let mut rows = vec![];
        for t in self.db.catalog.tables(&db)? {
            if like_filter(like, &t.def.name) {
                let mut r = vec![Value::Str(t.def.name.clone())];
                r.extend(self.table_status(&t)?);
                r.extend([Value::Int(0), Value::Str("N".into())]);
                rows.push(r);
            }
        }
        // Views too, as MariaDB lists them (mydumper finds them here): every field NULL
        // but the name and the comment.
        for (name, _) in self.db.catalog.views(&db) {
            if like_filter(like, &name) {
                let mut r = vec![Value::Str(name)];
                r.extend(std::iter::repeat_n(Value::Null, 16));
                r.extend([Value::Str("VIEW".into()), Value::Null, Value::Null]);
                rows.push(r);
            }
        }
        rows.sort_by(|a, b| a[0].to_string().cmp(&b[0].to_string()));
        Ok(Output::Rows {
            columns: cols,
            rows,
        })
    }

    fn show_index(&self, db: Option<&str>, table: &str) -> Result<Output> {
        let db = self.require_db(db)?;
        let e = self.db.catalog.table(&db, table)?;
        let cols = vec![
            text("Table", 64),
            num("Non_unique"),
            text("Key_name", 64),
            num("Seq_in_index"),
            text("Column_name", 64),
            text("Collation", 1),
            num("Cardinality"),
            num("Sub_part"),
            text("Packed", 10),
            text("Null", 3),
            text("Index_type", 16),
            text("Comment", 16),
            text("Index_comment", 1024),
            text("Ignored", 3),
        ];
        let mut rows = vec![];
        for (ii, ix) in e.def.indexes.iter().enumerate() {
            let distinct = e.handle.index_distinct(ii)?;
            for (seq, (&c, &p)) in ix.columns.iter().zip(&ix.prefix).enumerate() {
                let col = &e.def.columns[c];
                let cardinality = match distinct.get(seq) {
                    Some(
                        quarry_storage_api::Stat::Exact(n) | quarry_storage_api::Stat::Estimated(n),
                    ) => Value::Int(*n as i64),
                    _ => Value::Null,
                };
                rows.push(vec![
                    Value::Str(table.to_string()),
                    Value::Int(!ix.unique as i64),
                    Value::Str(ix.name.clone()),
                    Value::Int(seq as i64 + 1),
                    Value::Str(col.name.clone()),
                    Value::Str(if ix.desc[seq] { "D" } else { "A" }.into()),
                    cardinality,
                    if p > 0 {
                        Value::Int(p as i64)
                    } else {
                        Value::Null
                    },
                    Value::Null,
                    Value::Str(if col.nullable { "YES" } else { "" }.into()),
                    Value::Str("BTREE".into()),
                    Value::Str(String::new()),
                    Value::Str(String::new()),
                    Value::Str("NO".into()),
                ]);
            }
        }
        Ok(Output::Rows {
            columns: cols,
            rows,
        })
    }

    /// Replace a table by a new definition, copying rows through `map` (ALTER, CREATE INDEX).
    /// Show `stage` in SHOW PROCESSLIST, with the table's rows as the total.
    fn start_progress(&self, stage: &'static str, entry: &quarry_catalog::TableEntry) {
        let total = match entry.handle.stats().rows {
            quarry_storage_api::Stat::Exact(n) | quarry_storage_api::Stat::Estimated(n) => n,
            quarry_storage_api::Stat::Unknown => 0,
        };
        *self.info.progress.lock() = Some(crate::Progress {
            stage,
            done: 0,
            total,
            unit: "rows",
        });
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.log_general("Quit", "");
        let _ = self.rollback();
        self.unlock_tables();
        self.db.processes.lock().remove(&self.info.id);
    }
}

/// LOAD DATA LOCAL where the caller has no client files to give.
fn refuse_local_infile(_: &str) -> Result<Vec<u8>> {
    Err(Error::local_infile_refused())
}

/// A SELECT's result: collected, or passed to `out` batch by batch as it is produced.
/// SHOW … WHERE's condition, for the SHOWs that take one.
fn show_where(stmt: &Stmt) -> Option<&ast::Expr> {
    use ast::ShowStatementFilter::Where;
    use ast::ShowStatementFilterPosition::{Infix, Suffix};
    match stmt {
        Stmt::ShowTableStatus { filter, .. } | Stmt::ShowIndex { filter, .. } => filter.as_deref(),
        Stmt::Ast(s) => match &**s {
            S::ShowVariables {
                filter: Some(Where(e)),
                ..
            }
            | S::ShowStatus {
                filter: Some(Where(e)),
                ..
            }
            | S::ShowCollation {
                filter: Some(Where(e)),
            } => Some(e),
            S::ShowCharset(sc) => match &sc.filter {
                Some(Where(e)) => Some(e),
                _ => None,
            },
            S::ShowTables { show_options, .. }
            | S::ShowColumns { show_options, .. }
            | S::ShowDatabases { show_options, .. } => match &show_options.filter_position {
                Some(Infix(Where(e)) | Suffix(Where(e))) => Some(e),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

/// `SELECT SQL_CALC_FOUND_ROWS … LIMIT …`: the rows the query has without its LIMIT
/// (FOUND_ROWS() after it), counted as they are produced; None for other queries.
fn rows_without_limit(
    q: &ast::Query,
    catalog: &quarry_catalog::Catalog,
    db: Option<String>,
    ctx: &ExecCtx,
) -> Result<Option<u64>> {
    let calc = matches!(&*q.body, ast::SetExpr::Select(s)
        if s.select_modifiers.as_ref().is_some_and(|m| m.sql_calc_found_rows));
    if !calc || q.limit_clause.is_none() {
        return Ok(None);
    }
    let mut whole = q.clone();
    whole.limit_clause = None;
    let sp = Binder::new(catalog, db).bind_query(&whole)?;
    let mut n = 0u64;
    quarry_executor::exec::run(&sp.plan, ctx, &mut |batch| {
        n += batch.len() as u64;
        Ok(true)
    })?;
    Ok(Some(n))
}

fn result_set(
    sp: &quarry_executor::SelectPlan,
    ctx: &ExecCtx,
    out: Option<&mut dyn RowSink>,
) -> Result<Output> {
    let Some(out) = out else {
        return Ok(Output::Rows {
            columns: sp.columns.clone(),
            rows: collect(&sp.plan, ctx)?,
        });
    };
    out.columns(&sp.columns)?;
    let mut n = 0u64;
    quarry_executor::exec::run(&sp.plan, ctx, &mut |batch| {
        n += batch.len() as u64;
        out.rows(batch)?;
        Ok(true)
    })?;
    Ok(Output::Streamed { rows: n })
}

fn show_like(o: &ast::ShowStatementOptions) -> Option<String> {
    match &o.filter_position {
        Some(ast::ShowStatementFilterPosition::Infix(ast::ShowStatementFilter::Like(p)))
        | Some(ast::ShowStatementFilterPosition::Suffix(ast::ShowStatementFilter::Like(p))) => {
            Some(p.clone())
        }
        _ => None,
    }
}

fn count_placeholders(sql: &str) -> usize {
    let mut n = 0;
    let mut quote = None;
    let mut prev = ' ';
    for c in sql.chars() {
        match quote {
            Some(q) if c == q && prev != '\\' => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' || c == '`' => quote = Some(c),
            None if c == '?' => n += 1,
            None => {}
        }
        prev = c;
    }
    n
}

/// Types an expression column can be stored as (CREATE TABLE … SELECT).
fn storable(t: SqlType) -> SqlType {
    match t.kind {
        TypeKind::Null => SqlType::varchar(1),
        TypeKind::VarChar if t.len == 0 => SqlType::varchar(1),
        TypeKind::VarChar if t.len > 16383 => SqlType::new(TypeKind::Text),
        TypeKind::Decimal => SqlType::decimal(t.len.clamp(1, 65), t.scale),
        // A column's DOUBLE keeps no fixed decimals (DOUBLE(M,D) is not kept): the same
        // after a restart as before it.
        TypeKind::Float | TypeKind::Double => SqlType { scale: 0, ..t },
        _ => t,
    }
}

fn synth_index(
    def: &TableDef,
    name: Option<String>,
    cols: &[ast::IndexColumn],
    unique: bool,
) -> Result<ast::CreateTable> {
    let c = if unique {
        ast::TableConstraint::Unique(ast::UniqueConstraint {
            name: None,
            index_name: name.map(ast::Ident::new),
            index_type_display: ast::KeyOrIndexDisplay::Key,
            index_type: None,
            columns: cols.to_vec(),
            include: vec![],
            index_options: vec![],
            characteristics: None,
            nulls_distinct: ast::NullsDistinctOption::None,
        })
    } else {
        ast::TableConstraint::Index(ast::IndexConstraint {
            display_as_key: true,
            name: name.map(ast::Ident::new),
            index_type: None,
            columns: cols.to_vec(),
            index_options: vec![],
        })
    };
    Ok(synth_constraint(def, c))
}

/// A CREATE TABLE AST equal to `def` plus one more constraint (reuses the DDL path for keys).
fn synth_constraint(def: &TableDef, c: ast::TableConstraint) -> ast::CreateTable {
    let sql = def.create_sql(None);
    let Ok(Stmt::Ast(s)) = quarry_sql::parse_one(&sql) else {
        unreachable!("canonical CREATE TABLE parses")
    };
    let S::CreateTable(mut ct) = *s else {
        unreachable!()
    };
    ct.constraints.push(c);
    ct
}

#[cfg(test)]
mod tests {
    use super::Session;

    #[test]
    fn only_lone_queries_stream() {
        for sql in [
            "SELECT 1",
            "  select\n* FROM t",
            "(SELECT 1) UNION (SELECT 2)",
            "WITH x AS (SELECT 1) SELECT * FROM x",
            "SELECT(1)",
            "SELECT 1;",
        ] {
            assert!(Session::streams(sql), "{sql}");
        }
        for sql in [
            "SELECT 1; SELECT 2",
            "LOAD DATA LOCAL INFILE 'f' INTO TABLE t",
            "/* dump */ LOAD DATA LOCAL INFILE 'f' INTO TABLE t",
            "INSERT INTO t SELECT 1",
            "SELECTED",
            "SHOW TABLES",
            "",
        ] {
            assert!(!Session::streams(sql), "{sql}");
        }
    }
}
