//! The data dictionary: databases, table definitions, and their files in the datadir.
//!
//! ```text
//! <datadir>/<db>/             one folder per database
//! <datadir>/<db>/<t>.qdef     table definition: a version line, the engine, then the
//!                             canonical CREATE TABLE text (what SHOW CREATE TABLE prints)
//! <datadir>/<db>/<t>.*        the engine's own files
//! ```
//!
//! Definitions are written to a temporary file and renamed into place, so a crash leaves
//! the old or the new definition. A DDL statement that switches tables (a rebuild's old
//! and new table, RENAME TABLE) journals its steps in `<datadir>/ddl.log` first; the next
//! open finishes them and drops temporary `#sql-` tables a crash left behind. Table names are case-sensitive (as MySQL on Linux with
//! `lower_case_table_names=0`); column names are not.
//! Must not touch: row data (engines own it), sessions, execution.

mod dbopt;
mod ddl;
mod deffile;
mod lazy;
mod system;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use quarry_common::{Collation, Error, Result, SqlType, Value};
use quarry_storage_api::{
    ColumnSchema, Engine, EngineRegistry, HandlerCounters, IndexSchema, RowFormat, Table,
    TablePath, TableSchema,
};

pub use ddl::{
    check_text, column_checks, column_def as ddl_column, foreign_key_index, quote_ident,
    resolve_collation, sql_type, table_def_from_ast, table_def_in,
};
use deffile::{def_text, read_def, read_view, view_text};
use lazy::{LazyTable, OpenCount};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
pub use system::{with_system_tables, INFORMATION_SCHEMA, MYSQL_SCHEMA, PERFORMANCE_SCHEMA};

#[derive(Debug, Clone, PartialEq)]
pub enum DefaultValue {
    None,
    Value(Value),
    CurrentTimestamp,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDef {
    pub name: String,
    pub ty: SqlType,
    pub nullable: bool,
    pub default: DefaultValue,
    pub auto_increment: bool,
    pub on_update_now: bool,
    pub comment: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct IndexDef {
    pub name: String,
    pub columns: Vec<usize>,
    pub prefix: Vec<u32>,
    pub desc: Vec<bool>,
    pub unique: bool,
    pub primary: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TableDef {
    pub name: String,
    pub columns: Vec<ColumnDef>,
    pub indexes: Vec<IndexDef>,
    /// SQL engine name as given (canonical spelling), e.g. `InnoDB`.
    pub engine: String,
    pub row_format: Option<RowFormat>,
    pub comment: String,
    /// AUTO_INCREMENT= table option (first value to hand out).
    pub auto_increment_start: u64,
    /// CHECK constraints, column-level ones first in column order.
    pub checks: Vec<CheckDef>,
    /// FOREIGN KEY constraints this table (the child) declares, in name order (as
    /// InnoDB lists them).
    pub foreign_keys: Vec<ForeignKeyDef>,
    /// The table's default collation (DEFAULT CHARSET / COLLATE): its string columns'
    /// unless they name their own.
    pub collation: Collation,
}

/// What a FOREIGN KEY does to the child rows of a parent row deleted or updated.
/// RESTRICT and NO ACTION both refuse at once (InnoDB checks no action later); SET
/// DEFAULT is accepted and dropped, as InnoDB does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FkAction {
    Restrict,
    NoAction,
    Cascade,
    SetNull,
}

/// A FOREIGN KEY: the child's columns, the parent table and its columns (by name: the
/// parent may not exist while `foreign_key_checks` is off, as in a dump's restore).
#[derive(Debug, Clone, PartialEq)]
pub struct ForeignKeyDef {
    pub name: String,
    pub columns: Vec<usize>,
    /// The parent's database when it is not the child's.
    pub ref_db: Option<String>,
    pub ref_table: String,
    pub ref_columns: Vec<String>,
    pub on_delete: FkAction,
    pub on_update: FkAction,
}

impl ForeignKeyDef {
    /// `FOREIGN KEY (…) REFERENCES … (…)`, the actions after it when `actions` (as
    /// SHOW CREATE TABLE and errors 1451/1452 print it; RESTRICT is not printed).
    pub fn clause(&self, child: &TableDef, ref_db: Option<&str>, actions: bool) -> String {
        let q = ddl::quote_ident;
        let cols: Vec<String> = self
            .columns
            .iter()
            .map(|&c| q(&child.columns[c].name))
            .collect();
        let refs: Vec<String> = self.ref_columns.iter().map(|c| q(c)).collect();
        let table = match ref_db.or(self.ref_db.as_deref()) {
            Some(db) => format!("{}.{}", q(db), q(&self.ref_table)),
            None => q(&self.ref_table),
        };
        let mut s = format!(
            "FOREIGN KEY ({}) REFERENCES {table} ({})",
            cols.join(", "),
            refs.join(", ")
        );
        if actions {
            for (on, a) in [("DELETE", self.on_delete), ("UPDATE", self.on_update)] {
                let a = match a {
                    FkAction::Restrict => continue,
                    FkAction::NoAction => "NO ACTION",
                    FkAction::Cascade => "CASCADE",
                    FkAction::SetNull => "SET NULL",
                };
                s.push_str(&format!(" ON {on} {a}"));
            }
        }
        s
    }

    /// The parent's database, given the child's.
    pub fn parent_db<'a>(&'a self, child_db: &'a str) -> &'a str {
        self.ref_db.as_deref().unwrap_or(child_db)
    }
}

/// A CHECK constraint: its condition as SHOW CREATE TABLE prints it (names in
/// backticks) and, written on a column, that column (MariaDB names it `table.column`).
#[derive(Debug, Clone, PartialEq)]
pub struct CheckDef {
    pub name: String,
    pub expr: String,
    pub column: Option<String>,
}

impl CheckDef {
    /// The name error 4025 gives it.
    pub fn shown_name(&self, table: &str) -> String {
        match &self.column {
            Some(c) => format!("{table}.{c}"),
            None => self.name.clone(),
        }
    }
}

impl TableDef {
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns
            .iter()
            .position(|c| c.name.eq_ignore_ascii_case(name))
    }
    pub fn auto_increment_column(&self) -> Option<usize> {
        self.columns.iter().position(|c| c.auto_increment)
    }
    pub fn schema(&self, row_format: RowFormat) -> TableSchema {
        TableSchema {
            columns: self
                .columns
                .iter()
                .map(|c| ColumnSchema {
                    name: c.name.clone(),
                    ty: c.ty,
                    nullable: c.nullable,
                    columnar: c.comment.to_ascii_lowercase().contains("columnar_storage"),
                })
                .collect(),
            indexes: self
                .indexes
                .iter()
                .map(|i| IndexSchema {
                    name: i.name.clone(),
                    columns: i.columns.clone(),
                    prefix: i.prefix.clone(),
                    desc: i.desc.clone(),
                    unique: i.unique,
                    primary: i.primary,
                })
                .collect(),
            row_format,
        }
    }
    /// The text of SHOW CREATE TABLE (also what the .qdef file stores).
    pub fn create_sql(&self, auto_inc_next: Option<u64>) -> String {
        ddl::show_create(self, auto_inc_next)
    }
}

/// An engine's table as transactions use it: read through snapshots, written under
/// locks ([`quarry_txn::MvccTable`]). A handle gets fresh versions and its own lock
/// names: handles are replaced only by DDL, which runs when no transaction is open.
/// A table the catalog knows: its definition, engine handle (opened at first use,
/// `lazy`) and auto-increment counter.
pub struct TableEntry {
    pub db: String,
    pub def: TableDef,
    pub handle: Arc<dyn Table>,
    pub engine: Arc<dyn Engine>,
    pub row_format: RowFormat,
    /// The next auto-increment value, once `auto_inc_known` (found from the rows at the
    /// first use that needs it, not when the datadir opens).
    pub auto_inc: Mutex<u64>,
    pub auto_inc_known: AtomicBool,
    pub create_time: std::time::SystemTime,
    /// The catalog's use clock at this table's last lookup (which open table to close).
    last_used: AtomicU64,
    lazy: Arc<LazyTable>,
}

impl std::fmt::Debug for TableEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.db, self.def.name)
    }
}

impl TableEntry {
    /// Whether the planner may read this table through its indexes (the engine's
    /// capability; otherwise they only enforce uniqueness).
    pub fn index_access(&self) -> bool {
        self.handle.capabilities().index_access
    }

    /// Whether the engine stores the table column-wise (cheap scans, dear fetches).
    pub fn columnar(&self) -> bool {
        self.handle.capabilities().columnar
    }

    pub fn path(&self, datadir: &Path) -> TablePath {
        TablePath::new(&datadir.join(&self.db), &self.def.name)
    }

    fn new(
        db: &str,
        def: TableDef,
        lazy: LazyTable,
        engine: Arc<dyn Engine>,
        row_format: RowFormat,
        create_time: std::time::SystemTime,
        auto_inc_known: bool,
    ) -> TableEntry {
        let lazy = Arc::new(lazy);
        TableEntry {
            db: db.to_string(),
            auto_inc: Mutex::new(def.auto_increment_start.max(1)),
            auto_inc_known: AtomicBool::new(auto_inc_known),
            handle: lazy.clone(),
            lazy,
            engine,
            row_format,
            create_time,
            last_used: AtomicU64::new(0),
            def,
        }
    }

    /// The same table under a new handle and definition (after a rename or index change).
    fn reopened(&self, db: &str, lazy: LazyTable, def: TableDef) -> TableEntry {
        let e = TableEntry::new(
            db,
            def,
            lazy,
            self.engine.clone(),
            self.row_format,
            self.create_time,
            self.auto_inc_known.load(Ordering::Acquire),
        );
        *e.auto_inc.lock() = *self.auto_inc.lock();
        e
    }

    /// This table closed: an entry whose handle opens the files again at its next use.
    fn closed(&self) -> TableEntry {
        let e = self.reopened(&self.db, self.lazy.closed_copy(), self.def.clone());
        e.last_used
            .store(self.last_used.load(Ordering::Relaxed), Ordering::Relaxed);
        e
    }
}

#[derive(Default)]
struct Databases {
    dbs: BTreeMap<String, BTreeMap<String, Arc<TableEntry>>>,
    /// View name → (column names, SELECT text), per database.
    views: BTreeMap<String, BTreeMap<String, ViewDef>>,
    /// Tables and views whose definition file could not be read, per database, with the
    /// error every use of the name gets; DROP removes their files.
    offline: BTreeMap<String, BTreeMap<String, Error>>,
}

/// A stored view: optional column names and the defining SELECT.
#[derive(Debug, Clone)]
pub struct ViewDef {
    pub columns: Vec<String>,
    pub sql: String,
    /// DEFINER= (user, host): whose privileges a DEFINER view reads its tables with.
    pub definer: (String, String),
    /// SQL SECURITY INVOKER: the reader's own privileges are checked on its tables.
    pub invoker: bool,
}

pub struct Catalog {
    datadir: PathBuf,
    pub engines: EngineRegistry,
    pub counters: Arc<HandlerCounters>,
    state: RwLock<Databases>,
    /// Bumped by every change to databases, tables or views: plans bound earlier are stale.
    generation: std::sync::atomic::AtomicU64,
    /// Decides the physical row format from the requested one (engine policy).
    row_format_policy: fn(Option<RowFormat>, &TableSchema) -> RowFormat,
    /// Definitions that could not be read, with why (reported at startup).
    open_problems: Mutex<Vec<String>>,
    /// Tables open now, and how many may stay open while idle (`table_open_cache`).
    open_tables: OpenCount,
    open_limit: AtomicUsize,
    /// Ticks once per table lookup: a table's last lookup orders which to close first.
    use_clock: AtomicU64,
    /// The foreign keys by parent, as of a generation (rebuilt after DDL).
    fk_parents: Mutex<Option<(u64, Arc<FkParents>)>>,
}

/// Parent database → parent table → the (child database, child table, foreign key
/// index) of each FOREIGN KEY naming it (looked up by `&str`, without allocating: every
/// writing statement asks).
type FkParents = std::collections::HashMap<
    String,
    std::collections::HashMap<String, Vec<(String, String, usize)>>,
>;

/// MariaDB's default `table_open_cache`.
pub const TABLE_OPEN_CACHE: usize = 2000;

fn valid_name(name: &str) -> Result<()> {
    if name.is_empty()
        || name.len() > 64
        || name.contains(['/', '\\', '\0'])
        || name == "."
        || name == ".."
        || name.ends_with(' ')
    {
        return Err(Error::new(1103, format!("Incorrect table name '{name}'")));
    }
    Ok(())
}

/// One step of a DDL statement's switch (see [`Catalog::apply_ddl`]).
#[derive(Debug, Clone, PartialEq)]
pub enum DdlStep {
    Rename {
        db: String,
        from: String,
        to_db: String,
        to: String,
    },
    Drop {
        db: String,
        name: String,
    },
}

/// `<datadir>/ddl.log`: the DDL switch in progress — how many steps are done, the steps
/// (names hex-encoded, one a line), a CRC32C line — present only while one runs. It is
/// rewritten after each step: a finished step is never redone (a later step may have
/// reused its names), the one in progress is redone only as far as it had not got.
const DDL_JOURNAL: &str = "ddl.log";
const DDL_HEADER: &str = "QUARRY-DDL 1";

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<String> {
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

fn journal_text(steps: &[DdlStep], done: usize) -> String {
    let mut body = format!("done {done}\n");
    for st in steps {
        match st {
            DdlStep::Rename {
                db,
                from,
                to_db,
                to,
            } => {
                body += &format!(
                    "rename {} {} {} {}\n",
                    hex(db),
                    hex(from),
                    hex(to_db),
                    hex(to)
                )
            }
            DdlStep::Drop { db, name } => body += &format!("drop {} {}\n", hex(db), hex(name)),
        }
    }
    format!(
        "{DDL_HEADER}\n{body}{:08x}\n",
        crc32c::crc32c(body.as_bytes())
    )
}

/// The steps of a journal and how many are done, or None when it is damaged (a crash
/// while writing the first version: the switch had not started; later versions replace
/// the file whole).
fn parse_journal(text: &str) -> Option<(Vec<DdlStep>, usize)> {
    let rest = text.strip_prefix(DDL_HEADER)?.strip_prefix('\n')?;
    let (body, crc) = rest
        .trim_end_matches('\n')
        .rsplit_once('\n')
        .unwrap_or(("", rest.trim()));
    let body = if body.is_empty() {
        String::new()
    } else {
        format!("{body}\n")
    };
    if u32::from_str_radix(crc.trim(), 16).ok()? != crc32c::crc32c(body.as_bytes()) {
        return None;
    }
    let mut lines = body.lines();
    let done = lines.next()?.strip_prefix("done ")?.parse().ok()?;
    let steps = lines
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            match f.as_slice() {
                ["rename", a, b, c, d] => Some(DdlStep::Rename {
                    db: unhex(a)?,
                    from: unhex(b)?,
                    to_db: unhex(c)?,
                    to: unhex(d)?,
                }),
                ["drop", a, b] => Some(DdlStep::Drop {
                    db: unhex(a)?,
                    name: unhex(b)?,
                }),
                _ => None,
            }
        })
        .collect::<Option<Vec<_>>>()?;
    Some((steps, done))
}

fn sync_dir(dir: &Path) -> Result<()> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir.display(), e))
}

impl Catalog {
    /// Open the datadir, loading every database and table definition found there.
    pub fn open(
        datadir: &Path,
        engines: EngineRegistry,
        row_format_policy: fn(Option<RowFormat>, &TableSchema) -> RowFormat,
    ) -> Result<Catalog> {
        let cat = Catalog {
            datadir: datadir.to_path_buf(),
            engines,
            counters: Arc::new(HandlerCounters::default()),
            state: RwLock::new(Databases::default()),
            generation: std::sync::atomic::AtomicU64::new(0),
            row_format_policy,
            open_problems: Mutex::new(Vec::new()),
            open_tables: OpenCount::default(),
            open_limit: AtomicUsize::new(TABLE_OPEN_CACHE),
            use_clock: AtomicU64::new(0),
            fk_parents: Mutex::new(None),
        };
        cat.finish_interrupted_ddl()?;
        let rd = std::fs::read_dir(datadir).map_err(|e| Error::io(datadir.display(), e))?;
        let mut dbs = BTreeMap::new();
        let mut views = BTreeMap::new();
        let mut offline = BTreeMap::new();
        for ent in rd.flatten() {
            let p = ent.path();
            let Some(name) = p.file_name().and_then(|n| n.to_str()).map(str::to_string) else {
                continue;
            };
            if !p.is_dir() || name.starts_with('.') || name.starts_with('#') {
                continue;
            }
            let mut tables = BTreeMap::new();
            let mut dviews = BTreeMap::new();
            let mut doffline = BTreeMap::new();
            for tf in std::fs::read_dir(&p)
                .map_err(|e| Error::io(p.display(), e))?
                .flatten()
            {
                let tp = tf.path();
                let stem = tp
                    .file_stem()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default()
                    .to_string();
                // One bad definition must not keep the others (or the server) from
                // opening: it is reported, and the name answers with the error until the
                // table or view is dropped.
                let bad = |e: Error, dbs_offline: &mut BTreeMap<String, Error>| {
                    cat.open_problems
                        .lock()
                        .push(format!("{name}.{stem}: {}", e.message));
                    dbs_offline.insert(stem.clone(), e);
                };
                match tp.extension().and_then(|e| e.to_str()) {
                    Some("qview") => match read_view(&tp, datadir) {
                        Ok(v) => {
                            dviews.insert(stem.clone(), v);
                        }
                        Err(e) => bad(e, &mut doffline),
                    },
                    Some("qdef") => match cat.load_table(&name, &tp) {
                        Ok(entry) => {
                            tables.insert(entry.def.name.clone(), Arc::new(entry));
                        }
                        Err(e) => bad(e, &mut doffline),
                    },
                    _ => {}
                }
            }
            views.insert(name.clone(), dviews);
            offline.insert(name.clone(), doffline);
            dbs.insert(name, tables);
        }
        let mut st = cat.state.write();
        st.dbs = dbs;
        st.views = views;
        st.offline = offline;
        drop(st);
        Ok(cat)
    }

    /// Tables that could not be opened when the datadir was (they answer with the error).
    pub fn open_problems(&self) -> Vec<String> {
        self.open_problems.lock().clone()
    }

    /// The state for a change, which makes every plan bound before it stale.
    fn state_mut(&self) -> parking_lot::RwLockWriteGuard<'_, Databases> {
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.state.write()
    }

    /// Changes so far to databases, tables and views (for plan caches).
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub fn datadir(&self) -> &Path {
        &self.datadir
    }

    /// A table by its definition file; its own files are opened at its first use.
    fn load_table(&self, db: &str, file: &Path) -> Result<TableEntry> {
        let (def, row_format) = read_def(file, &self.datadir)?;
        let (engine, _) = self
            .engines
            .resolve(&def.engine)
            .ok_or_else(|| Error::unknown_engine(&def.engine))?;
        let path = TablePath::new(&self.datadir.join(db), &def.name);
        let lazy = LazyTable::closed(
            engine.clone(),
            path,
            def.schema(row_format),
            self.counters.clone(),
            self.open_tables.clone(),
        );
        let create_time = std::fs::metadata(file)
            .and_then(|m| m.modified())
            .unwrap_or(std::time::SystemTime::now());
        Ok(TableEntry::new(
            db,
            def,
            lazy,
            engine,
            row_format,
            create_time,
            false,
        ))
    }

    /// A handle over a table just opened by DDL.
    fn opened(
        &self,
        handle: Arc<dyn Table>,
        engine: &Arc<dyn Engine>,
        path: TablePath,
    ) -> LazyTable {
        LazyTable::opened(
            handle,
            engine.clone(),
            path,
            self.counters.clone(),
            self.open_tables.clone(),
        )
    }

    /// How many tables may stay open while idle (`table_open_cache`).
    pub fn set_open_limit(&self, n: usize) {
        self.open_limit.store(n.max(1), Ordering::Relaxed);
    }

    /// Tables whose files are open now.
    pub fn open_tables(&self) -> usize {
        self.open_tables.load(Ordering::Relaxed)
    }

    /// The tables of `db` whose files are open now (SHOW OPEN TABLES), by name.
    pub fn open_table_names(&self, db: &str) -> Vec<String> {
        let st = self.state.read();
        let mut names: Vec<String> = st
            .dbs
            .get(db)
            .map(|ts| {
                ts.values()
                    .filter(|t| t.lazy.is_open())
                    .map(|t| t.def.name.clone())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// Close idle tables, least recently used first, until a tenth fewer than the limit
    /// are open. Idle: neither the entry nor its handle is held outside the catalog (no
    /// statement, plan, transaction or cursor uses it). The closed entries are dropped
    /// under the lock, so their files are closed before anyone can open them again.
    fn close_idle(&self) {
        let limit = self.open_limit.load(Ordering::Relaxed);
        let target = limit - limit / 10;
        let mut st = self.state.write();
        let mut idle: Vec<(u64, String, String)> = vec![];
        for (db, tables) in &st.dbs {
            for (name, e) in tables {
                if e.lazy.is_open() && Arc::strong_count(e) == 1 && Arc::strong_count(&e.lazy) == 2
                {
                    idle.push((
                        e.last_used.load(Ordering::Relaxed),
                        db.clone(),
                        name.clone(),
                    ));
                }
            }
        }
        idle.sort_unstable();
        let mut closed = vec![];
        for (_, db, name) in idle {
            if self.open_tables.load(Ordering::SeqCst) - closed.len() <= target {
                break;
            }
            let tables = st.dbs.get_mut(&db).expect("listed above");
            let old = tables.get(&name).expect("listed above").clone();
            tables.insert(name, Arc::new(old.closed()));
            closed.push(old);
        }
        drop(closed);
        drop(st);
    }

    fn write_def(&self, db: &str, def: &TableDef, row_format: RowFormat) -> Result<()> {
        let dir = self.datadir.join(db);
        let tmp = dir.join(format!("{}.qdef.tmp", def.name));
        let fin = dir.join(format!("{}.qdef", def.name));
        std::fs::write(&tmp, def_text(def, row_format)).map_err(|e| Error::io(tmp.display(), e))?;
        std::fs::File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(|e| Error::io(tmp.display(), e))?;
        std::fs::rename(&tmp, &fin).map_err(|e| Error::io(fin.display(), e))?;
        Ok(())
    }

    pub fn databases(&self) -> Vec<String> {
        self.state.read().dbs.keys().cloned().collect()
    }

    pub fn database_exists(&self, db: &str) -> bool {
        self.state.read().dbs.contains_key(db)
    }

    /// The collation tables created in `db` take when they name none (`db.opt`).
    pub fn database_collation(&self, db: &str) -> Collation {
        dbopt::read(&self.datadir.join(db))
    }

    /// Set `db`'s default collation (CREATE / ALTER DATABASE … CHARACTER SET … COLLATE
    /// …); its tables keep theirs.
    pub fn set_database_collation(&self, db: &str, coll: Collation) -> Result<()> {
        // Under the state lock: a DROP DATABASE cannot remove the folder meanwhile.
        let st = self.state_mut();
        if !st.dbs.contains_key(db) {
            // MariaDB's answer: it writes `./db/db.opt` and finds no folder.
            return Err(Error::new(
                1,
                format!(
                    "Can't create/write to file './{db}/db.opt' (Errcode: 2 \"No such file or directory\")"
                ),
            ));
        }
        dbopt::write(&self.datadir.join(db), coll)
    }

    /// Create database `db` with default collation `coll` (None: utf8mb4_general_ci);
    /// false when it exists and `if_not_exists`.
    pub fn create_database(
        &self,
        db: &str,
        if_not_exists: bool,
        coll: Option<Collation>,
    ) -> Result<bool> {
        // `#…` and `.…` folders are the server's own (the log, temporary tables) and are
        // not read as databases at open.
        if db.starts_with(['#', '.']) || valid_name(db).is_err() {
            return Err(Error::incorrect_db_name(db));
        }
        let mut st = self.state_mut();
        if st.dbs.contains_key(db) {
            return if if_not_exists {
                Ok(false)
            } else {
                Err(Error::database_exists(db))
            };
        }
        let dir = self.datadir.join(db);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(dir.display(), e))?;
        // Its options before it exists: a CREATE DATABASE that fails leaves no database.
        if let Some(c) = coll.filter(|c| *c != Collation::Utf8mb4GeneralCi) {
            if let Err(e) = dbopt::write(&dir, c) {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        }
        st.dbs.insert(db.to_string(), BTreeMap::new());
        st.views.insert(db.to_string(), BTreeMap::new());
        Ok(true)
    }

    /// Drop a database and its tables; returns the number of tables dropped.
    pub fn drop_database(&self, db: &str, if_exists: bool) -> Result<Option<usize>> {
        let mut st = self.state_mut();
        let Some(tables) = st.dbs.remove(db) else {
            return if if_exists {
                Ok(None)
            } else {
                Err(Error::drop_missing_database(db))
            };
        };
        let n = tables.len() + st.offline.remove(db).map_or(0, |o| o.len());
        st.views.remove(db);
        for t in tables.values() {
            t.engine.drop_table(&t.path(&self.datadir))?;
        }
        let dir = self.datadir.join(db);
        std::fs::remove_dir_all(&dir).map_err(|e| Error::io(dir.display(), e))?;
        Ok(Some(n))
    }

    pub fn view(&self, db: &str, name: &str) -> Option<ViewDef> {
        self.state
            .read()
            .views
            .get(db)
            .and_then(|v| v.get(name))
            .cloned()
    }

    pub fn views(&self, db: &str) -> Vec<(String, ViewDef)> {
        self.state
            .read()
            .views
            .get(db)
            .map(|v| v.iter().map(|(k, d)| (k.clone(), d.clone())).collect())
            .unwrap_or_default()
    }

    pub fn create_view(&self, db: &str, name: &str, view: ViewDef, or_replace: bool) -> Result<()> {
        valid_name(name)?;
        let mut st = self.state_mut();
        if !st.dbs.contains_key(db) {
            return Err(Error::unknown_database(db));
        }
        if st.dbs[db].contains_key(name)
            || st.offline.get(db).is_some_and(|o| o.contains_key(name))
            || (!or_replace && st.views.get(db).is_some_and(|v| v.contains_key(name)))
        {
            return Err(Error::table_exists(name));
        }
        let dir = self.datadir.join(db);
        let tmp = dir.join(format!("{name}.qview.tmp"));
        let fin = dir.join(format!("{name}.qview"));
        std::fs::write(&tmp, view_text(&view)).map_err(|e| Error::io(tmp.display(), e))?;
        std::fs::rename(&tmp, &fin).map_err(|e| Error::io(fin.display(), e))?;
        st.views
            .entry(db.to_string())
            .or_default()
            .insert(name.to_string(), view);
        Ok(())
    }

    /// Drop a view; false if there was none.
    pub fn drop_view(&self, db: &str, name: &str) -> Result<bool> {
        let mut st = self.state_mut();
        let Some(v) = st.views.get_mut(db) else {
            return Ok(false);
        };
        if v.remove(name).is_none() {
            return Ok(false);
        }
        let f = self.datadir.join(db).join(format!("{name}.qview"));
        std::fs::remove_file(&f).map_err(|e| Error::io(f.display(), e))?;
        Ok(true)
    }

    pub fn tables(&self, db: &str) -> Result<Vec<Arc<TableEntry>>> {
        let st = self.state.read();
        let t = st.dbs.get(db).ok_or_else(|| Error::unknown_database(db))?;
        Ok(t.values().cloned().collect())
    }

    pub fn table(&self, db: &str, name: &str) -> Result<Arc<TableEntry>> {
        if db.eq_ignore_ascii_case(INFORMATION_SCHEMA) {
            return system::filled(INFORMATION_SCHEMA, name).ok_or_else(|| system::unknown(name));
        }
        if db.eq_ignore_ascii_case(PERFORMANCE_SCHEMA) || db.eq_ignore_ascii_case(MYSQL_SCHEMA) {
            if let Some(t) = system::filled(db, name) {
                return Ok(t);
            }
        }
        if self.open_tables.load(Ordering::Relaxed) > self.open_limit.load(Ordering::Relaxed) {
            self.close_idle();
        }
        let st = self.state.read();
        let tables = st
            .dbs
            .get(db)
            .ok_or_else(|| Error::no_such_table(db, name))?;
        if let Some(t) = tables.get(name) {
            let tick = self.use_clock.fetch_add(1, Ordering::Relaxed);
            t.last_used.store(tick, Ordering::Relaxed);
            return Ok(t.clone());
        }
        Err(st
            .offline
            .get(db)
            .and_then(|o| o.get(name))
            .cloned()
            .unwrap_or_else(|| Error::no_such_table(db, name)))
    }

    /// The FOREIGN KEYs that name `db`.`table` as their parent: each child table and
    /// the index of the key in its definition (a self-reference included).
    pub fn referencing(&self, db: &str, table: &str) -> Vec<(Arc<TableEntry>, usize)> {
        let map = {
            let mut cache = self.fk_parents.lock();
            let generation = self.generation();
            match &*cache {
                Some((g, m)) if *g == generation => m.clone(),
                _ => {
                    let st = self.state.read();
                    let mut m = FkParents::new();
                    for (cdb, tables) in &st.dbs {
                        for (name, e) in tables {
                            for (i, fk) in e.def.foreign_keys.iter().enumerate() {
                                m.entry(fk.parent_db(cdb).to_string())
                                    .or_default()
                                    .entry(fk.ref_table.clone())
                                    .or_default()
                                    .push((cdb.clone(), name.clone(), i));
                            }
                        }
                    }
                    let m = Arc::new(m);
                    *cache = Some((generation, m.clone()));
                    m
                }
            }
        };
        let Some(list) = map.get(db).and_then(|t| t.get(table)) else {
            return vec![];
        };
        list.iter()
            .filter_map(|(cdb, ct, i)| Some((self.table(cdb, ct).ok()?, *i)))
            .collect()
    }

    /// Replace a table's definition by one that differs only in what its rows and files
    /// do not depend on (its FOREIGN KEYs): the definition file is rewritten, the
    /// engine's table stays open as it is.
    pub fn replace_def(&self, db: &str, def: TableDef) -> Result<()> {
        let entry = self.table(db, &def.name)?;
        let (mut a, mut b) = (entry.def.clone(), def.clone());
        a.foreign_keys.clear();
        b.foreign_keys.clear();
        if a != b {
            return Err(Error::internal(
                "replace_def of a definition that changes the table",
            ));
        }
        let mut st = self.state_mut();
        self.write_def(db, &def, entry.row_format)?;
        let new_entry = TableEntry {
            db: entry.db.clone(),
            def,
            handle: entry.handle.clone(),
            engine: entry.engine.clone(),
            row_format: entry.row_format,
            auto_inc: Mutex::new(*entry.auto_inc.lock()),
            auto_inc_known: AtomicBool::new(entry.auto_inc_known.load(Ordering::Acquire)),
            create_time: entry.create_time,
            last_used: AtomicU64::new(entry.last_used.load(Ordering::Relaxed)),
            lazy: entry.lazy.clone(),
        };
        if let Some(tables) = st.dbs.get_mut(db) {
            tables.insert(new_entry.def.name.clone(), Arc::new(new_entry));
        }
        Ok(())
    }

    /// A table, view or unreadable definition of that name exists.
    pub fn table_exists(&self, db: &str, name: &str) -> bool {
        let st = self.state.read();
        st.dbs.get(db).is_some_and(|t| t.contains_key(name))
            || st.offline.get(db).is_some_and(|t| t.contains_key(name))
    }

    /// Names in `db` whose definition file could not be read (listed, unusable).
    pub fn offline(&self, db: &str) -> Vec<String> {
        self.state
            .read()
            .offline
            .get(db)
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Drop a name whose definition could not be read: its definition file and every
    /// file the engines keep under that name. False if there is no such name with a
    /// definition file of that kind (`view`: `.qview`, else `.qdef`).
    pub fn drop_offline(&self, db: &str, name: &str, view: bool) -> Result<bool> {
        let mut st = self.state_mut();
        let dir = self.datadir.join(db);
        let file = dir.join(format!("{name}.{}", if view { "qview" } else { "qdef" }));
        if !file.exists()
            || st
                .offline
                .get_mut(db)
                .and_then(|o| o.remove(name))
                .is_none()
        {
            return Ok(false);
        }
        let ours = |f: &std::ffi::OsStr| {
            f.to_str()
                .and_then(|f| f.strip_prefix(name))
                .is_some_and(|rest| rest.starts_with('.'))
        };
        for ent in std::fs::read_dir(&dir)
            .map_err(|e| Error::io(dir.display(), e))?
            .flatten()
        {
            if ours(&ent.file_name()) {
                let p = ent.path();
                let r = if p.is_dir() {
                    std::fs::remove_dir_all(&p)
                } else {
                    std::fs::remove_file(&p)
                };
                r.map_err(|e| Error::io(p.display(), e))?;
            }
        }
        Ok(true)
    }

    /// Resolve `ENGINE=` (None = default InnoDB).
    pub fn engine(&self, name: Option<&str>) -> Result<(Arc<dyn Engine>, &'static str)> {
        let n = name.unwrap_or("InnoDB");
        self.engines
            .resolve(n)
            .ok_or_else(|| Error::unknown_engine(n))
    }

    pub fn create_table(&self, db: &str, mut def: TableDef) -> Result<Arc<TableEntry>> {
        valid_name(&def.name)?;
        let mut st = self.state_mut();
        if st
            .offline
            .get(db)
            .is_some_and(|o| o.contains_key(&def.name))
        {
            return Err(Error::table_exists(&def.name));
        }
        let tables = st
            .dbs
            .get_mut(db)
            .ok_or_else(|| Error::unknown_database(db))?;
        if tables.contains_key(&def.name) {
            return Err(Error::table_exists(&def.name));
        }
        let (engine, canonical) = self.engine(
            Some(&def.engine)
                .filter(|e| !e.is_empty())
                .map(|e| e.as_str()),
        )?;
        def.engine = canonical.to_string();
        let row_format = (self.row_format_policy)(def.row_format, &def.schema(RowFormat::Dynamic));
        let path = TablePath::new(&self.datadir.join(db), &def.name);
        // Stale files from an interrupted DDL must not block a new table of the same name.
        let _ = engine.drop_table(&path);
        engine.create(&path, &def.schema(row_format))?;
        let handle = match engine.open(&path, &def.schema(row_format), self.counters.clone()) {
            Ok(h) => self.opened(h, &engine, path),
            Err(e) => {
                let _ = engine.drop_table(&path);
                return Err(e);
            }
        };
        self.write_def(db, &def, row_format)?;
        let entry = Arc::new(TableEntry::new(
            db,
            def,
            handle,
            engine,
            row_format,
            std::time::SystemTime::now(),
            true,
        ));
        tables.insert(entry.def.name.clone(), entry.clone());
        drop(st);
        if self.open_tables.load(Ordering::Relaxed) > self.open_limit.load(Ordering::Relaxed) {
            self.close_idle();
        }
        Ok(entry)
    }

    pub fn drop_table(&self, db: &str, name: &str) -> Result<()> {
        let mut st = self.state_mut();
        let tables = st
            .dbs
            .get_mut(db)
            .ok_or_else(|| Error::unknown_table(name))?;
        let entry = tables
            .remove(name)
            .ok_or_else(|| Error::unknown_table(&format!("{db}.{name}")))?;
        let def_file = self.datadir.join(db).join(format!("{name}.qdef"));
        std::fs::remove_file(&def_file).map_err(|e| Error::io(def_file.display(), e))?;
        entry.engine.drop_table(&entry.path(&self.datadir))?;
        Ok(())
    }

    pub fn rename_table(&self, db: &str, from: &str, to_db: &str, to: &str) -> Result<()> {
        valid_name(to)?;
        let mut st = self.state_mut();
        if !st.dbs.contains_key(to_db) {
            return Err(Error::unknown_database(to_db));
        }
        if st.dbs[to_db].contains_key(to) {
            return Err(Error::table_exists(to));
        }
        let tables = st
            .dbs
            .get_mut(db)
            .ok_or_else(|| Error::no_such_table(db, from))?;
        let entry = tables
            .remove(from)
            .ok_or_else(|| Error::no_such_table(db, from))?;
        entry.handle.sync()?;
        let old_path = entry.path(&self.datadir);
        let new_path = TablePath::new(&self.datadir.join(to_db), to);
        entry.engine.rename(&old_path, &new_path)?;
        let mut def = entry.def.clone();
        def.name = to.to_string();
        self.write_def(to_db, &def, entry.row_format)?;
        let old_def = self.datadir.join(db).join(format!("{from}.qdef"));
        std::fs::remove_file(&old_def).map_err(|e| Error::io(old_def.display(), e))?;
        let handle = entry.engine.open(
            &new_path,
            &def.schema(entry.row_format),
            self.counters.clone(),
        )?;
        let handle = self.opened(handle, &entry.engine, new_path);
        let new_entry = Arc::new(entry.reopened(to_db, handle, def));
        st.dbs
            .get_mut(to_db)
            .unwrap()
            .insert(to.to_string(), new_entry);
        Ok(())
    }

    /// Give a table the indexes of `new_def` (which differs from its definition in its
    /// indexes only) without copying its rows: kept indexes keep their files, new ones are
    /// built from the rows. Returns false, changing nothing, when the engine cannot.
    pub fn alter_indexes(
        &self,
        db: &str,
        name: &str,
        new_def: TableDef,
        progress: &dyn Fn(u64),
    ) -> Result<bool> {
        let entry = self.table(db, name)?;
        let kept: Vec<Option<usize>> = new_def
            .indexes
            .iter()
            .map(|ix| entry.def.indexes.iter().position(|o| o == ix))
            .collect();
        let schema = new_def.schema(entry.row_format);
        if !entry
            .handle
            .build_indexes(&schema.indexes, &kept, progress)?
        {
            return Ok(false);
        }
        let mut st = self.state_mut();
        let tables = st
            .dbs
            .get_mut(db)
            .ok_or_else(|| Error::no_such_table(db, name))?;
        tables.remove(name);
        let path = entry.path(&self.datadir);
        let installed = entry.engine.install_indexes(&path, &kept, &mut || {
            self.write_def(db, &new_def, entry.row_format)
        });
        // On failure the old definition is still the durable one: reopen by it (the
        // dirty marker left behind rebuilds its indexes from the rows).
        let (def, result) = match installed {
            Ok(()) => (new_def, Ok(true)),
            Err(e) => (entry.def.clone(), Err(e)),
        };
        let handle =
            entry
                .engine
                .open(&path, &def.schema(entry.row_format), self.counters.clone())?;
        let handle = self.opened(handle, &entry.engine, path);
        let new_entry = Arc::new(entry.reopened(db, handle, def));
        tables.insert(name.to_string(), new_entry);
        result
    }

    /// Run a DDL statement's switch as one step: the steps are written to the journal
    /// (durably) first, so a crash in the middle is finished at the next start, and the
    /// database shows the old tables or the new ones, never a mix. Every step is
    /// checked before the journal is written.
    pub fn apply_ddl(&self, steps: &[DdlStep]) -> Result<()> {
        self.apply_ddl_until(steps, steps.len())
    }

    /// [`Catalog::apply_ddl`] that stops after `done` steps, journal left behind, as a
    /// crash would (crash tests; the catalog must then be reopened).
    pub fn apply_ddl_until(&self, steps: &[DdlStep], done: usize) -> Result<()> {
        {
            let st = self.state.read();
            let mut gone: Vec<(&str, &str)> = vec![];
            let mut made: Vec<(&str, &str)> = vec![];
            for step in steps {
                let (db, name, new) = match step {
                    DdlStep::Rename {
                        db,
                        from,
                        to_db,
                        to,
                    } => (db, from, Some((to_db, to))),
                    DdlStep::Drop { db, name } => (db, name, None),
                };
                let exists = (st
                    .dbs
                    .get(db.as_str())
                    .is_some_and(|t| t.contains_key(name.as_str()))
                    && !gone.contains(&(db, name)))
                    || made.contains(&(db, name));
                if !exists {
                    return Err(Error::no_such_table(db, name));
                }
                gone.push((db, name));
                made.retain(|m| m != &(db.as_str(), name.as_str()));
                if let Some((to_db, to)) = new {
                    valid_name(to)?;
                    let taken = (st
                        .dbs
                        .get(to_db.as_str())
                        .is_some_and(|t| t.contains_key(to.as_str()))
                        && !gone.contains(&(to_db, to)))
                        || made.contains(&(to_db, to));
                    if !st.dbs.contains_key(to_db.as_str()) {
                        return Err(Error::unknown_database(to_db));
                    }
                    if taken {
                        return Err(Error::table_exists(to));
                    }
                    made.push((to_db, to));
                }
            }
        }
        let journal = self.datadir.join(DDL_JOURNAL);
        self.write_journal(steps, 0)?;
        for (i, step) in steps[..done.min(steps.len())].iter().enumerate() {
            match step {
                DdlStep::Rename {
                    db,
                    from,
                    to_db,
                    to,
                } => self.rename_table(db, from, to_db, to)?,
                DdlStep::Drop { db, name } => self.drop_table(db, name)?,
            }
            if i + 1 < steps.len() {
                self.write_journal(steps, i + 1)?;
            }
        }
        if done < steps.len() {
            return Ok(());
        }
        std::fs::remove_file(&journal).map_err(|e| Error::io(journal.display(), e))?;
        sync_dir(&self.datadir)
    }

    /// Replace the journal whole (temporary file, fsync, rename, fsync of the folder).
    fn write_journal(&self, steps: &[DdlStep], done: usize) -> Result<()> {
        let journal = self.datadir.join(DDL_JOURNAL);
        let tmp = self.datadir.join(format!("{DDL_JOURNAL}.tmp"));
        std::fs::write(&tmp, journal_text(steps, done)).map_err(|e| Error::io(tmp.display(), e))?;
        std::fs::File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(|e| Error::io(tmp.display(), e))?;
        std::fs::rename(&tmp, &journal).map_err(|e| Error::io(journal.display(), e))?;
        sync_dir(&self.datadir)
    }

    /// At open: finish the steps of a DDL switch a crash interrupted (each step is
    /// redone only as far as it had not got), then drop the temporary tables of
    /// rebuilds that never reached their switch.
    fn finish_interrupted_ddl(&self) -> Result<()> {
        let journal = self.datadir.join(DDL_JOURNAL);
        let _ = std::fs::remove_file(self.datadir.join(format!("{DDL_JOURNAL}.tmp")));
        if let Ok(text) = std::fs::read_to_string(&journal) {
            let (steps, done) = parse_journal(&text).unwrap_or_default();
            for step in steps.into_iter().skip(done) {
                match step {
                    DdlStep::Rename {
                        db,
                        from,
                        to_db,
                        to,
                    } => {
                        let from_def = self.datadir.join(&db).join(format!("{from}.qdef"));
                        if !from_def.exists() {
                            continue;
                        }
                        let (mut def, row_format) = read_def(&from_def, &self.datadir)?;
                        let (engine, _) = self
                            .engines
                            .resolve(&def.engine)
                            .ok_or_else(|| Error::unknown_engine(&def.engine))?;
                        engine.rename(
                            &TablePath::new(&self.datadir.join(&db), &from),
                            &TablePath::new(&self.datadir.join(&to_db), &to),
                        )?;
                        def.name = to.clone();
                        self.write_def(&to_db, &def, row_format)?;
                        std::fs::remove_file(&from_def)
                            .map_err(|e| Error::io(from_def.display(), e))?;
                    }
                    DdlStep::Drop { db, name } => self.drop_files(&db, &name)?,
                }
            }
            std::fs::remove_file(&journal).map_err(|e| Error::io(journal.display(), e))?;
        }
        let rd =
            std::fs::read_dir(&self.datadir).map_err(|e| Error::io(self.datadir.display(), e))?;
        for db in rd.flatten().filter(|e| e.path().is_dir()) {
            let dbname = db.file_name().to_string_lossy().into_owned();
            for f in std::fs::read_dir(db.path()).into_iter().flatten().flatten() {
                let name = f.file_name().to_string_lossy().into_owned();
                if let Some(t) = name
                    .strip_suffix(".qdef")
                    .filter(|t| t.starts_with("#sql-"))
                {
                    self.drop_files(&dbname, t)?;
                }
            }
        }
        Ok(())
    }

    /// Remove a table's definition and files (startup work, before tables are open).
    fn drop_files(&self, db: &str, name: &str) -> Result<()> {
        let def_file = self.datadir.join(db).join(format!("{name}.qdef"));
        let Ok((def, _)) = read_def(&def_file, &self.datadir) else {
            return Ok(());
        };
        std::fs::remove_file(&def_file).map_err(|e| Error::io(def_file.display(), e))?;
        if let Some((engine, _)) = self.engines.resolve(&def.engine) {
            engine.drop_table(&TablePath::new(&self.datadir.join(db), name))?;
        }
        Ok(())
    }

    /// Flush and fsync every table (clean shutdown).
    pub fn sync_all(&self) -> Result<()> {
        let st = self.state.read();
        for tables in st.dbs.values() {
            for t in tables.values() {
                t.handle.sync()?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod journal_tests {
    use super::*;

    #[test]
    fn the_ddl_journal_round_trips_and_a_damaged_one_is_ignored() {
        let steps = vec![
            DdlStep::Rename {
                db: "d b".into(),
                from: "t\u{e4}".into(),
                to_db: "d".into(),
                to: "#sql-old-1".into(),
            },
            DdlStep::Drop {
                db: "d".into(),
                name: "x y".into(),
            },
        ];
        let text = journal_text(&steps, 1);
        assert_eq!(parse_journal(&text), Some((steps.clone(), 1)));
        assert_eq!(parse_journal(&journal_text(&[], 0)), Some((vec![], 0)));
        // A torn first version (the switch never started) is not a journal.
        assert_eq!(parse_journal(&text[..text.len() - 5]), None);
        let flipped = text.replacen("done 1", "done 0", 1);
        assert_eq!(parse_journal(&flipped), None);
    }
}
