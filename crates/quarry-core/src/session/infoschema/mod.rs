//! `information_schema`: read-only tables about the databases, tables, columns, keys,
//! constraints, views, engines and collations, with MariaDB 10.11's columns (`defs`).
//! A statement that names the schema gets the tables it names filled for it, from the
//! catalog, as the session's account may see them (MariaDB's rule: a table shows when
//! the account holds some privilege on it), and reads them like any table: filters,
//! joins, ORDER BY. Each statement sees them as they are when it starts.
//!
//! Owns: the rows. Must not touch: the tables' own definitions (the catalog's).
//! The tables of `performance_schema` and `mysql` that tools read are filled the same way
//! (`performance`, `grants`), unless a database of that name was made by a user.
//! Not yet: TRIGGERS, ROUTINES, EVENTS, PARAMETERS and FILES are empty (Quarry has none
//! of those objects; FILES lists no tablespaces), INNODB_LOCKS and INNODB_LOCK_WAITS are
//! empty (lock waits are not listed yet).

mod defs;
mod grants;
mod performance;

use std::sync::{Arc, OnceLock};

use quarry_catalog::{
    table_def_from_ast, FkAction, TableDef, TableEntry, INFORMATION_SCHEMA, MYSQL_SCHEMA,
    PERFORMANCE_SCHEMA,
};
use quarry_common::value::DateTime;
use quarry_common::{Result, Row, SqlType, TypeKind, Value};
use quarry_storage_api::Stat;

use super::Session;

/// What a statement asks of the schema when it is one `SELECT … FROM
/// information_schema.X WHERE …` whose top-level AND holds `TABLE_SCHEMA = 'db'` (or `=
/// DATABASE()`) or `TABLE_NAME = 't'` (and their names in other tables: CONSTRAINT_SCHEMA,
/// EVENT_OBJECT_TABLE, …): only those rows are built (mariadb-dump asks per table), and
/// the statement's WHERE still decides among them. The names are looked up as they are
/// written, as MariaDB looks them up: `TABLE_SCHEMA = 'SLT'` finds no `slt` there, though
/// the column compares case-insensitively elsewhere. Anything else builds every row.
#[derive(Default)]
pub(super) struct Scope {
    schema: Option<String>,
    table: Option<String>,
}

impl Scope {
    fn of(stmt: &quarry_sql::Stmt, current_db: Option<&str>) -> Scope {
        use quarry_sql::ast::{self, Expr, SetExpr, TableFactor};
        let mut scope = Scope::default();
        let quarry_sql::Stmt::Ast(s) = stmt else {
            return scope;
        };
        let ast::Statement::Query(q) = &**s else {
            return scope;
        };
        let SetExpr::Select(sel) = &*q.body else {
            return scope;
        };
        let [from] = sel.from.as_slice() else {
            return scope;
        };
        if !from.joins.is_empty() {
            return scope;
        }
        let TableFactor::Table { name, .. } = &from.relation else {
            return scope;
        };
        let parts: Vec<String> = name
            .0
            .iter()
            .map(|p| p.to_string().trim_matches('`').to_string())
            .collect();
        let in_schema = match parts.as_slice() {
            [db, _] => db.eq_ignore_ascii_case(INFORMATION_SCHEMA),
            [_] => current_db.is_some_and(|d| d.eq_ignore_ascii_case(INFORMATION_SCHEMA)),
            _ => false,
        };
        if !in_schema {
            return scope;
        }
        let mut conjuncts = vec![];
        let mut stack: Vec<&Expr> = sel.selection.iter().collect();
        while let Some(e) = stack.pop() {
            match e {
                Expr::BinaryOp {
                    left,
                    op: ast::BinaryOperator::And,
                    right,
                } => {
                    stack.push(left);
                    stack.push(right);
                }
                Expr::Nested(inner) => stack.push(inner),
                other => conjuncts.push(other),
            }
        }
        let column = |e: &Expr| -> Option<String> {
            match e {
                Expr::Identifier(i) => Some(i.value.to_ascii_uppercase()),
                Expr::CompoundIdentifier(p) => p.last().map(|i| i.value.to_ascii_uppercase()),
                _ => None,
            }
        };
        let value = |e: &Expr| -> Option<String> {
            match e {
                Expr::Value(v) => match &v.value {
                    ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => {
                        Some(s.clone())
                    }
                    _ => None,
                },
                Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("DATABASE") => {
                    current_db.map(str::to_string)
                }
                _ => None,
            }
        };
        for c in conjuncts {
            let Expr::BinaryOp {
                left,
                op: ast::BinaryOperator::Eq,
                right,
            } = c
            else {
                continue;
            };
            let (col, val) = match (column(left), value(right), column(right), value(left)) {
                (Some(c), Some(v), ..) | (.., Some(c), Some(v)) => (c, v),
                _ => continue,
            };
            match col.as_str() {
                "TABLE_SCHEMA"
                | "CONSTRAINT_SCHEMA"
                | "EVENT_OBJECT_SCHEMA"
                | "SCHEMA_NAME"
                | "INDEX_SCHEMA" => scope.schema = Some(val),
                "TABLE_NAME" | "EVENT_OBJECT_TABLE" => scope.table = Some(val),
                _ => {}
            }
        }
        scope
    }
}

/// The system databases, with their tables' definitions.
const SCHEMAS: [(&str, &[(&str, &str)]); 3] = [
    (INFORMATION_SCHEMA, defs::DEFS),
    (PERFORMANCE_SCHEMA, defs::PERFORMANCE),
    (MYSQL_SCHEMA, defs::MYSQL),
];

/// The system tables' definitions of `SCHEMAS[i]`, parsed once.
fn definitions_of(i: usize) -> &'static [TableDef] {
    static DEFS: [OnceLock<Vec<TableDef>>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    DEFS[i].get_or_init(|| {
        SCHEMAS[i]
            .1
            .iter()
            .map(|(name, sql)| {
                let stmt = quarry_sql::parse_one(sql)
                    .unwrap_or_else(|e| panic!("information_schema.{name}: {}", e.message));
                let quarry_sql::Stmt::Ast(s) = stmt else {
                    panic!("information_schema.{name}")
                };
                let quarry_sql::ast::Statement::CreateTable(ct) = *s else {
                    panic!("information_schema.{name}")
                };
                table_def_from_ast(&ct)
                    .unwrap_or_else(|e| panic!("information_schema.{name}: {}", e.message))
            })
            .collect()
    })
}

/// `information_schema`'s tables.
fn definitions() -> &'static [TableDef] {
    definitions_of(0)
}

/// The names of `information_schema`'s tables, as SHOW TABLES lists them.
pub(crate) fn table_names() -> Vec<String> {
    let mut names: Vec<String> = definitions().iter().map(|d| d.name.clone()).collect();
    names.sort();
    names
}

fn s(v: impl Into<String>) -> Value {
    Value::Str(v.into())
}

fn int(v: impl TryInto<i64>) -> Value {
    v.try_into().map_or(Value::Null, Value::Int)
}

fn stat(st: Stat) -> Value {
    match st {
        Stat::Exact(n) | Stat::Estimated(n) => int(n),
        Stat::Unknown => Value::Null,
    }
}

fn fk_rule(a: FkAction) -> &'static str {
    match a {
        FkAction::Restrict => "RESTRICT",
        FkAction::NoAction => "NO ACTION",
        FkAction::Cascade => "CASCADE",
        FkAction::SetNull => "SET NULL",
    }
}

/// The type's name alone, as DATA_TYPE gives it (`int` of `int(11) unsigned`).
fn data_type(ty: &SqlType) -> String {
    let full = ty.to_string();
    full.split(['(', ' ']).next().unwrap_or("").to_string()
}

/// A COLUMNS row of column `i` (`name`, of type `ty`) of `db`.`table`: no default, key,
/// extra or comment (the caller fills a table column's).
fn column_row(db: &str, table: &str, i: usize, name: &str, ty: &SqlType, nullable: bool) -> Row {
    let text = ty.is_string() && !ty.is_binary();
    let (chars, octets) = match ty.kind {
        TypeKind::Char | TypeKind::VarChar => (
            int(ty.len as i64),
            int(ty.len as u64 * ty.coll.max_bytes_per_char() as u64),
        ),
        TypeKind::Binary | TypeKind::VarBinary => (int(ty.len as i64), int(ty.len as i64)),
        TypeKind::Text | TypeKind::Blob => (int(ty.lob_bytes() as i64), int(ty.lob_bytes() as i64)),
        _ => (Value::Null, Value::Null),
    };
    let (precision, scale) = match ty.kind {
        TypeKind::TinyInt => (int(3), int(0)),
        TypeKind::SmallInt => (int(5), int(0)),
        TypeKind::MediumInt => (int(7), int(0)),
        TypeKind::Int => (int(10), int(0)),
        TypeKind::BigInt => (int(if ty.unsigned { 20 } else { 19 }), int(0)),
        TypeKind::Decimal => (int(ty.len as i64), int(ty.scale as i64)),
        TypeKind::Float => (int(12), Value::Null),
        TypeKind::Double => (int(22), Value::Null),
        _ => (Value::Null, Value::Null),
    };
    let datetime_precision = match ty.kind {
        TypeKind::DateTime | TypeKind::Timestamp | TypeKind::Time => int(ty.scale as i64),
        _ => Value::Null,
    };
    vec![
        s("def"),
        s(db),
        s(table),
        s(name),
        int(i as i64 + 1),
        Value::Null,
        s(if nullable { "YES" } else { "NO" }),
        s(data_type(ty)),
        chars,
        octets,
        precision,
        scale,
        datetime_precision,
        if text {
            s(ty.coll.charset())
        } else {
            Value::Null
        },
        if text { s(ty.coll.name()) } else { Value::Null },
        s(ty.to_string()),
        s(""),
        s(""),
        s("select,insert,update,references"),
        s(""),
        s("NEVER"),
        Value::Null,
    ]
}

impl Session {
    /// The `information_schema` tables `sql` may read, filled: those whose names it
    /// holds.
    /// `stmt`, when given, may narrow what is built (see [`Scope`]). The caller asked
    /// [`Session::may_name_information_schema`] first.
    pub(super) fn information_schema_for(
        &self,
        sql: &str,
        stmt: Option<&quarry_sql::Stmt>,
    ) -> Result<Vec<Arc<TableEntry>>> {
        let scope = stmt.map_or_else(Scope::default, |s| Scope::of(s, self.current_db.as_deref()));
        let upper = String::from_utf8_lossy(&sql.as_bytes()[..sql.len().min(64 << 10)])
            .to_ascii_uppercase();
        let words: std::collections::HashSet<&str> = upper
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .collect();
        let in_db = |db: &str| {
            self.current_db
                .as_deref()
                .is_some_and(|d| d.eq_ignore_ascii_case(db))
        };
        let mut out = vec![];
        for (i, (schema, _)) in SCHEMAS.iter().enumerate() {
            // performance_schema and mysql: only where the statement names the database
            // (their table names are common words), and a user's own database of that
            // name keeps its tables.
            if i > 0
                && (!(words.contains(schema.to_ascii_uppercase().as_str()) || in_db(schema))
                    || self.db.catalog.database_exists(schema))
            {
                continue;
            }
            for def in definitions_of(i) {
                if words.contains(def.name.to_ascii_uppercase().as_str()) {
                    let rows = self.system_rows(schema, &def.name, &scope)?;
                    out.push(self.db.catalog.system_table(schema, def.clone(), rows));
                }
            }
        }
        Ok(out)
    }

    /// Whether `sql` names a system database (in its first 64 KiB: a longer statement is
    /// a data load, and a write to their tables still fails in them) or runs in one.
    pub(super) fn may_name_information_schema(&self, sql: &str) -> bool {
        let head = &sql.as_bytes()[..sql.len().min(64 << 10)];
        let names = [INFORMATION_SCHEMA, PERFORMANCE_SCHEMA, MYSQL_SCHEMA];
        self.current_db
            .as_deref()
            .is_some_and(|d| names.iter().any(|n| d.eq_ignore_ascii_case(n)))
            || (0..head.len()).any(|i| {
                matches!(head[i] | 0x20, b'i' | b'p' | b'm')
                    && names.iter().any(|n| {
                        head[i..]
                            .get(..n.len())
                            .is_some_and(|w| w.eq_ignore_ascii_case(n.as_bytes()))
                    })
            })
    }

    /// Whether the account may see `db`.`table` (some privilege on it or its database).
    fn sees(&self, db: &str, table: &str) -> bool {
        let e = self.privileges();
        e.db(db) & crate::privileges::DB_ALL != 0 || e.any_on_table(db, table)
    }

    /// The databases `scope` leaves (all, or the one a statement asks for).
    fn databases_in(&self, scope: &Scope) -> Vec<String> {
        let mut dbs = self.db.catalog.databases();
        if let Some(want) = &scope.schema {
            dbs.retain(|d| d == want);
        }
        dbs
    }

    /// The tables the account may see in the databases `scope` leaves (only the one
    /// table it names, when it names one).
    fn visible_tables(&self, scope: &Scope) -> Vec<Arc<TableEntry>> {
        let mut out = vec![];
        for db in self.databases_in(scope) {
            let tables = match &scope.table {
                Some(name) => self
                    .db
                    .catalog
                    .tables(&db)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|t| &t.def.name == name)
                    .collect(),
                None => self.db.catalog.tables(&db).unwrap_or_default(),
            };
            for t in tables {
                if self.sees(&db, &t.def.name) {
                    out.push(t);
                }
            }
        }
        out
    }

    fn system_rows(&self, schema: &str, name: &str, scope: &Scope) -> Result<Vec<Row>> {
        match schema {
            PERFORMANCE_SCHEMA => return Ok(self.performance_rows(name)),
            MYSQL_SCHEMA => return Ok(self.mysql_rows(name)),
            _ => {}
        }
        Ok(match name {
            "SCHEMATA" => self.schemata(scope),
            "TABLES" => self.tables_rows(scope)?,
            "COLUMNS" => self.columns_rows(scope),
            "STATISTICS" => self.statistics_rows(scope)?,
            "KEY_COLUMN_USAGE" => self.key_column_usage_rows(scope),
            "TABLE_CONSTRAINTS" => self.table_constraints_rows(scope),
            "REFERENTIAL_CONSTRAINTS" => self.referential_rows(scope),
            "CHECK_CONSTRAINTS" => self.check_rows(scope),
            "VIEWS" => self.views_rows(scope),
            "PARTITIONS" => self.partitions_rows(scope),
            "ENGINES" => self.engines_rows(),
            // SHOW CHARACTER SET's rows, DESCRIPTION after the default collation.
            "CHARACTER_SETS" => quarry_common::collation::CHARSETS
                .iter()
                .map(super::charsets::charset_row)
                .map(|r| vec![r[0].clone(), r[2].clone(), r[1].clone(), r[3].clone()])
                .collect(),
            "COLLATIONS" => quarry_common::collation::ALL
                .iter()
                .map(super::charsets::collation_row)
                .collect(),
            "COLLATION_CHARACTER_SET_APPLICABILITY" => quarry_common::collation::ALL
                .iter()
                .map(|c| {
                    vec![
                        s(c.name()),
                        s(c.charset()),
                        s(c.name()),
                        int(c.id() as i64),
                        s(if c.is_default() { "Yes" } else { "" }),
                    ]
                })
                .collect(),
            "TRIGGERS" | "ROUTINES" | "EVENTS" | "PARAMETERS" | "FILES" => vec![],
            "PROCESSLIST" => self.processlist_rows(),
            "GLOBAL_VARIABLES" | "SESSION_VARIABLES" => self
                .variable_values(name == "GLOBAL_VARIABLES")
                .into_iter()
                .map(|(k, v)| vec![s(k.to_ascii_uppercase()), s(v.to_string())])
                .collect(),
            "GLOBAL_STATUS" | "SESSION_STATUS" => self
                .status_values()
                .into_iter()
                .map(|(k, v)| vec![s(k.to_ascii_uppercase()), s(v)])
                .collect(),
            "USER_PRIVILEGES" | "SCHEMA_PRIVILEGES" | "TABLE_PRIVILEGES" | "COLUMN_PRIVILEGES" => {
                self.privilege_rows(name)
            }
            "KEYWORDS" => defs::KEYWORDS.iter().map(|w| vec![s(*w)]).collect(),
            "PLUGINS" => self.plugin_rows(),
            "INNODB_TRX" => self.innodb_trx_rows()?,
            "INNODB_BUFFER_POOL_STATS" => vec![self.buffer_pool_row()?],
            "INNODB_LOCKS" | "INNODB_LOCK_WAITS" => {
                self.require_process()?;
                vec![]
            }
            other => {
                return Err(quarry_common::Error::new(
                    1109,
                    format!("Unknown table '{other}' in {INFORMATION_SCHEMA}"),
                ))
            }
        })
    }

    /// SHOW ENGINES' rows, which ENGINES has too: each engine name Quarry takes.
    pub(super) fn engines_rows(&self) -> Vec<Row> {
        self.db
            .catalog
            .engines
            .names()
            .into_iter()
            .map(|(n, e)| {
                let support = if n == "InnoDB" { "DEFAULT" } else { "YES" };
                let comment = format!("{} (maps to the Quarry '{}' engine)", e.comment(), e.name());
                vec![s(n), s(support), s(comment), s("YES"), s("NO"), s("YES")]
            })
            .collect()
    }

    /// A view's columns as its SELECT gives them.
    pub(super) fn view_columns(
        &self,
        db: &str,
        view: &str,
    ) -> Result<Vec<quarry_executor::OutColumn>> {
        let sql = format!(
            "SELECT * FROM `{}`.`{}`",
            db.replace('`', "``"),
            view.replace('`', "``")
        );
        let quarry_sql::Stmt::Ast(stmt) = quarry_sql::parse_one(&sql)? else {
            return Ok(vec![]);
        };
        let quarry_sql::ast::Statement::Query(q) = *stmt else {
            return Ok(vec![]);
        };
        let mut b = quarry_planner::Binder::new(&self.db.catalog, Some(db.to_string()));
        Ok(b.bind_query(&q)?.columns)
    }

    /// SHOW COLUMNS of a view: its columns' names, types and nullability.
    pub(super) fn describe_view(
        &self,
        db: &str,
        view: &str,
        full: bool,
        like: Option<&str>,
    ) -> Result<super::Output> {
        let mut rows = vec![];
        for c in self.view_columns(db, view)? {
            if !super::like_filter(like, &c.name) {
                continue;
            }
            let text = c.ty.is_string() && !c.ty.is_binary();
            let mut r = vec![s(&c.name), s(c.ty.to_string())];
            if full {
                r.push(if text {
                    s(c.ty.coll.name())
                } else {
                    Value::Null
                });
            }
            r.extend([
                s(if c.nullable { "YES" } else { "NO" }),
                s(""),
                Value::Null,
                s(""),
            ]);
            if full {
                r.extend([s("select,insert,update,references"), s("")]);
            }
            rows.push(r);
        }
        let mut cols = vec![super::text("Field", 64), super::text("Type", 64)];
        if full {
            cols.push(super::text("Collation", 64));
        }
        cols.extend([
            super::text("Null", 3),
            super::text("Key", 3),
            quarry_executor::OutColumn::expr("Default", SqlType::varchar(64), true),
            super::text("Extra", 64),
        ]);
        if full {
            cols.push(super::text("Privileges", 80));
            cols.push(super::text("Comment", 1024));
        }
        Ok(super::Output::Rows {
            columns: cols,
            rows,
        })
    }

    /// What SHOW TABLE STATUS says of a table after its name, which TABLES says after
    /// TABLE_TYPE: Engine, Version, Row_format, Rows, Avg_row_length, Data_length,
    /// Max_data_length, Index_length, Data_free, Auto_increment, Create_time,
    /// Update_time, Check_time, Collation, Checksum, Create_options, Comment.
    pub(super) fn table_status(&self, t: &Arc<TableEntry>) -> Result<Row> {
        let st = t.handle.stats();
        let auto_inc = match t.def.auto_increment_column() {
            Some(_) => {
                self.with_ctx(|ctx| quarry_executor::dml::ensure_auto_inc(t, ctx))?;
                int(*t.auto_inc.lock() as i64)
            }
            None => Value::Null,
        };
        let secs = t
            .create_time
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        let epoch = quarry_common::Date {
            year: 1970,
            month: 1,
            day: 1,
        }
        .to_days();
        let created = DateTime::from_micros((epoch * 86_400 + secs) * 1_000_000);
        Ok(vec![
            s(&t.def.engine),
            int(10),
            s(match t.row_format {
                quarry_storage_api::RowFormat::Fixed => "Fixed",
                quarry_storage_api::RowFormat::Dynamic => "Dynamic",
            }),
            stat(st.rows),
            int(st.avg_row_bytes as i64),
            int(st.data_bytes as i64),
            int(0),
            int(0),
            int(st.free_bytes as i64),
            auto_inc,
            Value::DateTime(created),
            Value::Null,
            Value::Null,
            s(t.def.collation.name()),
            Value::Null,
            s(""),
            s(&t.def.comment),
        ])
    }

    /// PROCESSLIST: SHOW PROCESSLIST's threads with MariaDB's further columns (times in
    /// milliseconds, the progress as stages; memory, rows examined and query ids are not
    /// counted: 0).
    fn processlist_rows(&self) -> Vec<Row> {
        self.process_rows()
            .into_iter()
            .map(|r| {
                let secs = r[5].to_i64();
                let info = r[7].clone();
                let info_binary = match &info {
                    Value::Str(t) => Value::Bytes(t.clone().into_bytes()),
                    _ => Value::Null,
                };
                let mut out: Row = r[..8].to_vec();
                out.extend([
                    Value::Decimal(quarry_common::Decimal::new(secs as i128 * 1000, 3)),
                    int(0),
                    int(0),
                    r[8].clone(),
                    int(0),
                    int(0),
                    int(0),
                    int(0),
                    info_binary,
                    int(0),
                ]);
                out
            })
            .collect()
    }

    fn schemata(&self, scope: &Scope) -> Vec<Row> {
        let mut rows = vec![vec![
            s("def"),
            s(INFORMATION_SCHEMA),
            s("utf8mb3"),
            s("utf8mb3_general_ci"),
            Value::Null,
            s(""),
        ]];
        let e = self.privileges();
        for db in self.databases_in(scope) {
            if !(e.any_in_db(&db)) {
                continue;
            }
            let c = self.db.catalog.database_collation(&db);
            rows.push(vec![
                s("def"),
                s(&db),
                s(c.charset()),
                s(c.name()),
                Value::Null,
                s(""),
            ]);
        }
        rows
    }

    fn tables_rows(&self, scope: &Scope) -> Result<Vec<Row>> {
        let mut rows = vec![];
        for t in self.visible_tables(scope) {
            let mut r = vec![s("def"), s(&t.db), s(&t.def.name), s("BASE TABLE")];
            r.extend(self.table_status(&t)?);
            r.extend([int(0), s("N")]);
            rows.push(r);
        }
        for db in self.databases_in(scope) {
            for (name, _) in self.db.catalog.views(&db) {
                if !self.sees(&db, &name) {
                    continue;
                }
                let mut r = vec![s("def"), s(&db), s(&name), s("VIEW")];
                r.extend(std::iter::repeat_n(Value::Null, 16));
                r.extend([s("VIEW"), Value::Null, Value::Null]);
                rows.push(r);
            }
        }
        for def in definitions() {
            let mut r = vec![
                s("def"),
                s(INFORMATION_SCHEMA),
                s(&def.name),
                s("SYSTEM VIEW"),
                s("MEMORY"),
                int(11),
                s("Fixed"),
            ];
            r.extend(std::iter::repeat_n(Value::Null, 10));
            r.extend([
                s("utf8mb3_general_ci"),
                Value::Null,
                s(""),
                s(""),
                Value::Null,
                s("Y"),
            ]);
            rows.push(r);
        }
        Ok(rows)
    }

    fn columns_rows(&self, scope: &Scope) -> Vec<Row> {
        let mut rows = vec![];
        for t in self.visible_tables(scope) {
            for (i, c) in t.def.columns.iter().enumerate() {
                let key = t
                    .def
                    .indexes
                    .iter()
                    .find(|ix| ix.columns.first() == Some(&i))
                    .map_or("", |ix| {
                        if ix.primary {
                            "PRI"
                        } else if ix.unique && ix.columns.len() == 1 {
                            "UNI"
                        } else {
                            "MUL"
                        }
                    });
                let default = match &c.default {
                    quarry_catalog::DefaultValue::None if c.nullable => s("NULL"),
                    quarry_catalog::DefaultValue::None => Value::Null,
                    quarry_catalog::DefaultValue::Value(Value::Null) => s("NULL"),
                    quarry_catalog::DefaultValue::Value(v) if v.is_numeric() => s(v.to_string()),
                    quarry_catalog::DefaultValue::Value(v) => {
                        s(format!("'{}'", v.to_string().replace('\'', "''")))
                    }
                    quarry_catalog::DefaultValue::CurrentTimestamp => s("current_timestamp()"),
                };
                let mut extra = String::new();
                if c.auto_increment {
                    extra.push_str("auto_increment");
                }
                if c.on_update_now {
                    extra.push_str("on update current_timestamp()");
                }
                let mut r = column_row(&t.db, &t.def.name, i, &c.name, &c.ty, c.nullable);
                r[5] = default;
                r[16] = s(key);
                r[17] = s(extra);
                r[19] = s(&c.comment);
                rows.push(r);
            }
        }
        for db in self.databases_in(scope) {
            for (name, _) in self.db.catalog.views(&db) {
                if !self.sees(&db, &name) {
                    continue;
                }
                // A view whose SELECT no longer binds has no columns to show.
                for (i, c) in self
                    .view_columns(&db, &name)
                    .unwrap_or_default()
                    .iter()
                    .enumerate()
                {
                    rows.push(column_row(&db, &name, i, &c.name, &c.ty, c.nullable));
                }
            }
        }
        rows
    }

    fn statistics_rows(&self, scope: &Scope) -> Result<Vec<Row>> {
        let mut rows = vec![];
        for t in self.visible_tables(scope) {
            for (ii, ix) in t.def.indexes.iter().enumerate() {
                let distinct = t.handle.index_distinct(ii).unwrap_or_default();
                for (seq, (&c, &p)) in ix.columns.iter().zip(&ix.prefix).enumerate() {
                    let col = &t.def.columns[c];
                    rows.push(vec![
                        s("def"),
                        s(&t.db),
                        s(&t.def.name),
                        int(!ix.unique as i64),
                        s(&t.db),
                        s(&ix.name),
                        int(seq as i64 + 1),
                        s(&col.name),
                        s(if ix.desc[seq] { "D" } else { "A" }),
                        distinct.get(seq).copied().map_or(Value::Null, stat),
                        if p > 0 { int(p as i64) } else { Value::Null },
                        Value::Null,
                        s(if col.nullable { "YES" } else { "" }),
                        s("BTREE"),
                        s(""),
                        s(""),
                        s("NO"),
                    ]);
                }
            }
        }
        Ok(rows)
    }

    fn key_column_usage_rows(&self, scope: &Scope) -> Vec<Row> {
        let mut rows = vec![];
        for t in self.visible_tables(scope) {
            for ix in t.def.indexes.iter().filter(|ix| ix.unique) {
                for (seq, &c) in ix.columns.iter().enumerate() {
                    rows.push(vec![
                        s("def"),
                        s(&t.db),
                        s(&ix.name),
                        s("def"),
                        s(&t.db),
                        s(&t.def.name),
                        s(&t.def.columns[c].name),
                        int(seq as i64 + 1),
                        Value::Null,
                        Value::Null,
                        Value::Null,
                        Value::Null,
                    ]);
                }
            }
            for fk in &t.def.foreign_keys {
                let parent_db = fk.parent_db(&t.db);
                for (seq, (&c, rc)) in fk.columns.iter().zip(&fk.ref_columns).enumerate() {
                    rows.push(vec![
                        s("def"),
                        s(&t.db),
                        s(&fk.name),
                        s("def"),
                        s(&t.db),
                        s(&t.def.name),
                        s(&t.def.columns[c].name),
                        int(seq as i64 + 1),
                        int(seq as i64 + 1),
                        s(parent_db),
                        s(&fk.ref_table),
                        s(rc),
                    ]);
                }
            }
        }
        rows
    }

    fn table_constraints_rows(&self, scope: &Scope) -> Vec<Row> {
        let mut rows = vec![];
        for t in self.visible_tables(scope) {
            let row = |name: &str, kind: &str| {
                vec![
                    s("def"),
                    s(&t.db),
                    s(name),
                    s(&t.db),
                    s(&t.def.name),
                    s(kind),
                ]
            };
            for ix in t.def.indexes.iter().filter(|ix| ix.unique) {
                rows.push(row(
                    &ix.name,
                    if ix.primary { "PRIMARY KEY" } else { "UNIQUE" },
                ));
            }
            for ck in &t.def.checks {
                rows.push(row(ck.column.as_deref().unwrap_or(&ck.name), "CHECK"));
            }
            for fk in &t.def.foreign_keys {
                rows.push(row(&fk.name, "FOREIGN KEY"));
            }
        }
        rows
    }

    fn referential_rows(&self, scope: &Scope) -> Vec<Row> {
        let mut rows = vec![];
        for t in self.visible_tables(scope) {
            for fk in &t.def.foreign_keys {
                let parent_db = fk.parent_db(&t.db);
                // The parent's unique key over the referenced columns, as InnoDB names it.
                let unique = self
                    .db
                    .catalog
                    .table(parent_db, &fk.ref_table)
                    .ok()
                    .and_then(|p| {
                        p.def
                            .indexes
                            .iter()
                            .find(|ix| {
                                ix.unique
                                    && ix.columns.len() == fk.ref_columns.len()
                                    && ix.columns.iter().zip(&fk.ref_columns).all(|(&c, n)| {
                                        p.def.columns[c].name.eq_ignore_ascii_case(n)
                                    })
                            })
                            .map(|ix| ix.name.clone())
                    });
                rows.push(vec![
                    s("def"),
                    s(&t.db),
                    s(&fk.name),
                    s("def"),
                    s(parent_db),
                    unique.map_or(Value::Null, s),
                    s("NONE"),
                    s(fk_rule(fk.on_update)),
                    s(fk_rule(fk.on_delete)),
                    s(&t.def.name),
                    s(&fk.ref_table),
                ]);
            }
        }
        rows
    }

    fn check_rows(&self, scope: &Scope) -> Vec<Row> {
        let mut rows = vec![];
        for t in self.visible_tables(scope) {
            for ck in &t.def.checks {
                rows.push(vec![
                    s("def"),
                    s(&t.db),
                    s(&t.def.name),
                    s(ck.column.as_deref().unwrap_or(&ck.name)),
                    s(if ck.column.is_some() {
                        "Column"
                    } else {
                        "Table"
                    }),
                    s(&ck.expr),
                ]);
            }
        }
        rows
    }

    fn views_rows(&self, scope: &Scope) -> Vec<Row> {
        let mut rows = vec![];
        for db in self.databases_in(scope) {
            for (name, v) in self.db.catalog.views(&db) {
                if !self.sees(&db, &name) {
                    continue;
                }
                rows.push(vec![
                    s("def"),
                    s(&db),
                    s(&name),
                    s(&v.sql),
                    s("NONE"),
                    s("YES"),
                    s(format!("{}@{}", v.definer.0, v.definer.1)),
                    s(if v.invoker { "INVOKER" } else { "DEFINER" }),
                    s("utf8mb4"),
                    s("utf8mb4_general_ci"),
                    s("UNDEFINED"),
                ]);
            }
        }
        rows
    }

    /// One row per table, as MariaDB lists a table without partitions.
    fn partitions_rows(&self, scope: &Scope) -> Vec<Row> {
        let mut rows = vec![];
        for t in self.visible_tables(scope) {
            let st = t.handle.stats();
            let mut r = vec![s("def"), s(&t.db), s(&t.def.name)];
            r.extend(std::iter::repeat_n(Value::Null, 9));
            r.extend([
                stat(st.rows),
                int(st.avg_row_bytes as i64),
                int(st.data_bytes as i64),
                Value::Null,
                int(0),
                int(st.free_bytes as i64),
            ]);
            r.extend(std::iter::repeat_n(Value::Null, 4));
            r.extend([s(""), Value::Null, Value::Null]);
            rows.push(r);
        }
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::Scope;

    fn scope(sql: &str, db: Option<&str>) -> (Option<String>, Option<String>) {
        let s = Scope::of(&quarry_sql::parse_one(sql).unwrap(), db);
        (s.schema, s.table)
    }

    #[test]
    fn only_top_level_equalities_of_one_system_table_narrow_what_is_built() {
        let both = (Some("d".to_string()), Some("t".to_string()));
        assert_eq!(
            scope(
                "SELECT engine FROM INFORMATION_SCHEMA.TABLES WHERE table_schema = DATABASE() AND table_name = 't'",
                Some("d")
            ),
            both
        );
        assert_eq!(
            scope(
                "SELECT 1 FROM information_schema.views v WHERE 't' = v.TABLE_NAME AND (v.table_schema = 'd')",
                None
            ),
            both
        );
        // In the schema itself, unqualified.
        assert_eq!(
            scope(
                "SELECT 1 FROM columns WHERE table_schema = 'd' AND table_name = 't'",
                Some("information_schema")
            ),
            both
        );
        for sql in [
            "SELECT 1 FROM information_schema.TABLES WHERE table_name = 't' OR table_schema = 'd'",
            "SELECT 1 FROM information_schema.TABLES a JOIN information_schema.COLUMNS c ON c.table_name = a.table_name WHERE a.table_name = 't'",
            "SELECT 1 FROM information_schema.TABLES WHERE NOT (table_name = 't')",
            "SELECT 1 FROM d.t WHERE table_name = 't'",
            "SELECT 1 FROM information_schema.TABLES WHERE table_name LIKE 't'",
        ] {
            assert_eq!(scope(sql, Some("d")), (None, None), "{sql}");
        }
    }
}
