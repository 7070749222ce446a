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
//! the old or the new definition. Table names are case-sensitive (as MySQL on Linux with
//! `lower_case_table_names=0`); column names are not.
//! Must not touch: row data (engines own it), sessions, execution.

mod ddl;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use quarry_common::{Error, Result, SqlType, Value};
use quarry_storage_api::{
    ColumnSchema, Engine, EngineRegistry, HandlerCounters, IndexSchema, RowFormat, Table,
    TablePath, TableSchema,
};

pub use ddl::{column_def as ddl_column, sql_type, table_def_from_ast};

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

/// One open table: its definition, engine handle and auto-increment counter.
pub struct TableEntry {
    pub db: String,
    pub def: TableDef,
    pub handle: Arc<dyn Table>,
    pub engine: Arc<dyn Engine>,
    pub row_format: RowFormat,
    pub auto_inc: Mutex<u64>,
    pub create_time: std::time::SystemTime,
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

    pub fn path(&self, datadir: &Path) -> TablePath {
        TablePath::new(&datadir.join(&self.db), &self.def.name)
    }

    /// The same table under a new handle and definition (after a rename or index change).
    fn reopened(&self, db: &str, handle: Arc<dyn Table>, def: TableDef) -> TableEntry {
        TableEntry {
            db: db.to_string(),
            auto_inc: Mutex::new(*self.auto_inc.lock()),
            handle,
            engine: self.engine.clone(),
            row_format: self.row_format,
            create_time: self.create_time,
            def,
        }
    }
}

#[derive(Default)]
struct Databases {
    dbs: BTreeMap<String, BTreeMap<String, Arc<TableEntry>>>,
    /// View name → (column names, SELECT text), per database.
    views: BTreeMap<String, BTreeMap<String, ViewDef>>,
}

/// A stored view: optional column names and the defining SELECT.
#[derive(Debug, Clone)]
pub struct ViewDef {
    pub columns: Vec<String>,
    pub sql: String,
}

const VIEW_HEADER: &str = "QUARRY-VIEW-DEF 1";

pub struct Catalog {
    datadir: PathBuf,
    pub engines: EngineRegistry,
    pub counters: Arc<HandlerCounters>,
    state: RwLock<Databases>,
    /// Bumped by every change to databases, tables or views: plans bound earlier are stale.
    generation: std::sync::atomic::AtomicU64,
    /// Decides the physical row format from the requested one (engine policy).
    row_format_policy: fn(Option<RowFormat>, &TableSchema) -> RowFormat,
}

const DEF_HEADER: &str = "QUARRY-TABLE-DEF 1";

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
        };
        let rd = std::fs::read_dir(datadir).map_err(|e| Error::io(datadir.display(), e))?;
        let mut dbs = BTreeMap::new();
        let mut views = BTreeMap::new();
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
            for tf in std::fs::read_dir(&p)
                .map_err(|e| Error::io(p.display(), e))?
                .flatten()
            {
                let tp = tf.path();
                if tp.extension().and_then(|e| e.to_str()) == Some("qview") {
                    let text =
                        std::fs::read_to_string(&tp).map_err(|e| Error::io(tp.display(), e))?;
                    let mut lines = text.splitn(3, '\n');
                    if lines.next() != Some(VIEW_HEADER) {
                        return Err(Error::new(
                            1033,
                            format!("Incorrect information in file: '{}'", tp.display()),
                        ));
                    }
                    let cols = lines.next().unwrap_or("");
                    let columns = if cols.is_empty() {
                        vec![]
                    } else {
                        cols.split('\t').map(str::to_string).collect()
                    };
                    let name = tp
                        .file_stem()
                        .and_then(|n| n.to_str())
                        .unwrap_or_default()
                        .to_string();
                    dviews.insert(
                        name,
                        ViewDef {
                            columns,
                            sql: lines.next().unwrap_or("").trim_end().to_string(),
                        },
                    );
                    continue;
                }
                if tp.extension().and_then(|e| e.to_str()) != Some("qdef") {
                    continue;
                }
                let entry = cat.load_table(&name, &tp)?;
                tables.insert(entry.def.name.clone(), Arc::new(entry));
            }
            views.insert(name.clone(), dviews);
            dbs.insert(name, tables);
        }
        let mut st = cat.state.write();
        st.dbs = dbs;
        st.views = views;
        drop(st);
        Ok(cat)
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

    fn load_table(&self, db: &str, file: &Path) -> Result<TableEntry> {
        let text = std::fs::read_to_string(file).map_err(|e| Error::io(file.display(), e))?;
        let mut lines = text.splitn(3, '\n');
        if lines.next() != Some(DEF_HEADER) {
            return Err(Error::new(
                1033,
                format!("Incorrect information in file: '{}'", file.display()),
            ));
        }
        let fmt_line = lines.next().unwrap_or("");
        let row_format = match fmt_line.strip_prefix("row_format=") {
            Some("FIXED") => RowFormat::Fixed,
            _ => RowFormat::Dynamic,
        };
        let sql = lines.next().unwrap_or("");
        let stmt = quarry_sql::parse_one(sql)?;
        let quarry_sql::Stmt::Ast(ast) = stmt else {
            return Err(Error::corrupt(file.display()));
        };
        let quarry_sql::ast::Statement::CreateTable(ct) = *ast else {
            return Err(Error::corrupt(file.display()));
        };
        let def = table_def_from_ast(&ct)?;
        let (engine, _) = self
            .engines
            .resolve(&def.engine)
            .ok_or_else(|| Error::unknown_engine(&def.engine))?;
        let path = TablePath::new(&self.datadir.join(db), &def.name);
        let handle = engine.open(&path, &def.schema(row_format), self.counters.clone())?;
        let entry = TableEntry {
            db: db.to_string(),
            auto_inc: Mutex::new(def.auto_increment_start.max(1)),
            handle,
            engine,
            row_format,
            create_time: std::fs::metadata(file)
                .and_then(|m| m.modified())
                .unwrap_or(std::time::SystemTime::now()),
            def,
        };
        Ok(entry)
    }

    fn write_def(&self, db: &str, def: &TableDef, row_format: RowFormat) -> Result<()> {
        let dir = self.datadir.join(db);
        let tmp = dir.join(format!("{}.qdef.tmp", def.name));
        let fin = dir.join(format!("{}.qdef", def.name));
        let fmt = match row_format {
            RowFormat::Fixed => "FIXED",
            RowFormat::Dynamic => "DYNAMIC",
        };
        let text = format!("{DEF_HEADER}\nrow_format={fmt}\n{}\n", def.create_sql(None));
        std::fs::write(&tmp, text).map_err(|e| Error::io(tmp.display(), e))?;
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

    pub fn create_database(&self, db: &str, if_not_exists: bool) -> Result<bool> {
        valid_name(db)?;
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
        let n = tables.len();
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
            || (!or_replace && st.views.get(db).is_some_and(|v| v.contains_key(name)))
        {
            return Err(Error::table_exists(name));
        }
        let dir = self.datadir.join(db);
        let tmp = dir.join(format!("{name}.qview.tmp"));
        let fin = dir.join(format!("{name}.qview"));
        std::fs::write(
            &tmp,
            format!("{VIEW_HEADER}\n{}\n{}\n", view.columns.join("\t"), view.sql),
        )
        .map_err(|e| Error::io(tmp.display(), e))?;
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
        let st = self.state.read();
        let tables = st
            .dbs
            .get(db)
            .ok_or_else(|| Error::no_such_table(db, name))?;
        tables
            .get(name)
            .cloned()
            .ok_or_else(|| Error::no_such_table(db, name))
    }

    pub fn table_exists(&self, db: &str, name: &str) -> bool {
        self.state
            .read()
            .dbs
            .get(db)
            .is_some_and(|t| t.contains_key(name))
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
            Ok(h) => h,
            Err(e) => {
                let _ = engine.drop_table(&path);
                return Err(e);
            }
        };
        self.write_def(db, &def, row_format)?;
        let entry = Arc::new(TableEntry {
            db: db.to_string(),
            auto_inc: Mutex::new(def.auto_increment_start.max(1)),
            handle,
            engine,
            row_format,
            create_time: std::time::SystemTime::now(),
            def,
        });
        tables.insert(entry.def.name.clone(), entry.clone());
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
        let new_entry = Arc::new(entry.reopened(db, handle, def));
        tables.insert(name.to_string(), new_entry);
        result
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
