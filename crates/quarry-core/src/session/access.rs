//! What a statement needs the session's privileges to allow, and the check run before it
//! (MariaDB's rules and error codes: 1142 for a table, 1143 for a column, 1044 for a
//! database, 1227 for a global privilege).
//!
//! Owns: the session's effective privileges (cached until the grants change or SET ROLE),
//! the walk over a statement's tables and columns. Must not touch: the grants themselves
//! (`privileges.rs`, `accounts.rs`), execution.

use std::cell::RefCell;
use std::ops::ControlFlow;
use std::sync::Arc;

use quarry_common::{Error, Result};
use quarry_sql::ast::{
    self, Expr, SelectItem, SetExpr, Statement as S, TableFactor, Visit, Visitor,
};
use quarry_sql::Stmt;

use super::Session;
use crate::privileges::{self as p, Effective, Privs};

/// A table a statement uses, and the names it goes by in it.
#[derive(Clone)]
pub(super) struct TableRef {
    pub(super) db: String,
    pub(super) table: String,
    pub(super) alias: Option<String>,
}

/// The tables a statement reads (FROM clauses, subqueries included), the column names it
/// mentions (with their qualifier), and its `*`s.
#[derive(Default)]
pub(super) struct Refs {
    pub(super) tables: Vec<TableRef>,
    idents: Vec<(Option<String>, String)>,
    /// `*` alone, or `t.*` (the qualifier).
    wildcards: Vec<Option<String>>,
}

struct Collect<'a> {
    refs: Refs,
    current_db: Option<&'a str>,
    /// The WITH clauses being walked, innermost last: a table name one of them makes
    /// visible at the point reached names a CTE, not a table.
    withs: Vec<WithScope>,
}

/// One WITH clause: the query that has it, its CTEs' queries and names, and how many of
/// them are visible yet (a CTE sees the ones before it; all once the body is reached).
struct WithScope {
    owner: *const ast::Query,
    ctes: Vec<(*const ast::Query, String)>,
    visible: usize,
}

impl Collect<'_> {
    fn is_cte(&self, name: &str) -> bool {
        self.withs.iter().any(|w| {
            w.ctes[..w.visible]
                .iter()
                .any(|(_, n)| n.eq_ignore_ascii_case(name))
        })
    }
}

fn wildcards_of(body: &SetExpr, out: &mut Vec<Option<String>>) {
    match body {
        SetExpr::Select(s) => {
            for item in &s.projection {
                match item {
                    SelectItem::Wildcard(_) => out.push(None),
                    SelectItem::QualifiedWildcard(k, _) => {
                        let name = k.to_string();
                        let last = name.rsplit('.').next().unwrap_or(&name);
                        out.push(Some(last.trim_matches('`').to_string()));
                    }
                    _ => {}
                }
            }
        }
        SetExpr::SetOperation { left, right, .. } => {
            wildcards_of(left, out);
            wildcards_of(right, out);
        }
        _ => {}
    }
}

impl Visitor for Collect<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, q: &ast::Query) -> ControlFlow<()> {
        wildcards_of(&q.body, &mut self.refs.wildcards);
        if let Some(w) = &q.with {
            let ctes: Vec<_> = w
                .cte_tables
                .iter()
                .map(|c| (&*c.query as *const ast::Query, c.alias.name.value.clone()))
                .collect();
            self.withs.push(WithScope {
                owner: q,
                visible: if w.recursive { ctes.len() } else { 0 },
                ctes,
            });
        }
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, q: &ast::Query) -> ControlFlow<()> {
        if self.withs.last().is_some_and(|w| std::ptr::eq(w.owner, q)) {
            self.withs.pop();
        }
        // The end of a CTE's query: the CTEs after it see it.
        if let Some(w) = self.withs.last_mut() {
            if w.ctes
                .get(w.visible)
                .is_some_and(|(c, _)| std::ptr::eq(*c, q))
            {
                w.visible += 1;
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, t: &TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, alias, .. } = t {
            let parts = quarry_planner::bind::object_name(name);
            let (db, table) = match parts.as_slice() {
                [t] if self.is_cte(t) => return ControlFlow::Continue(()),
                [t] => match self.current_db {
                    Some(d) => (d.to_string(), t.clone()),
                    // No database: the statement fails with 1046 when it runs.
                    None => return ControlFlow::Continue(()),
                },
                [d, t] => (d.clone(), t.clone()),
                _ => return ControlFlow::Continue(()),
            };
            self.refs.tables.push(TableRef {
                db,
                table,
                alias: alias.as_ref().map(|a| a.name.value.clone()),
            });
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        match e {
            Expr::Identifier(i) => self.refs.idents.push((None, i.value.clone())),
            Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                let n = parts.len();
                self.refs
                    .idents
                    .push((Some(parts[n - 2].value.clone()), parts[n - 1].value.clone()));
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

pub(super) fn collect<V: Visit>(node: &V, current_db: Option<&str>) -> Refs {
    let mut c = Collect {
        refs: Refs::default(),
        current_db,
        withs: vec![],
    };
    let _ = node.visit(&mut c);
    c.refs
}

/// The privileges a prepared statement was allowed under, and the default database then.
/// Holding the `Arc` keeps its address from being reused, so pointer equality means the
/// same privileges.
pub(crate) type Checked = RefCell<Option<(Arc<Effective>, Option<String>)>>;

/// How a table is used, for the check's errors.
#[derive(Clone, Copy, PartialEq)]
enum Use {
    /// SELECT: no SELECT on the table and none on any of its columns is 1142.
    Select,
    /// Columns an UPDATE or DELETE reads from its own table: each is checked (1143).
    Reads,
}

impl Session {
    /// The session's privileges: its account's and its active role's, merged again only
    /// after a change of the grants.
    pub(crate) fn privileges(&self) -> Arc<Effective> {
        let generation = self.db.accounts.generation();
        if let Some((g, e)) = &*self.access.borrow() {
            if *g == generation {
                return e.clone();
            }
        }
        let e = Arc::new(if self.local_admin {
            Effective {
                global: p::GLOBAL_ALL | p::GRANT,
                ..Effective::default()
            }
        } else {
            self.db.accounts.read(|st| {
                st.effective(
                    &self.info.user,
                    &self.info.account_host,
                    self.role.as_deref(),
                )
            })
        });
        *self.access.borrow_mut() = Some((generation, e.clone()));
        e
    }

    pub(crate) fn forget_privileges(&self) {
        *self.access.borrow_mut() = None;
    }

    fn who(&self) -> (&str, &str) {
        (&self.info.user, &self.info.account_host)
    }

    /// 1227 unless the session has one of `any`.
    pub(crate) fn require_global(&self, any: Privs) -> Result<()> {
        if self.privileges().global & any != 0 {
            return Ok(());
        }
        Err(Error::need_privilege(&p::names(any).join(", ")))
    }

    /// 1044 unless the session has all of `need` on database `db`.
    pub(crate) fn require_db_privs(&self, db: &str, need: Privs) -> Result<()> {
        if self.privileges().db(db) & need == need {
            return Ok(());
        }
        let (u, h) = self.who();
        Err(Error::db_access_denied(u, h, db))
    }

    /// 1044 unless the session has some privilege in `db` (USE, SHOW TABLES).
    pub(crate) fn require_any_in_db(&self, db: &str) -> Result<()> {
        if self.privileges().any_in_db(db) {
            return Ok(());
        }
        let (u, h) = self.who();
        Err(Error::db_access_denied(u, h, db))
    }

    /// 1142 unless the session has all of `need` on the table (or, with `columns`, each
    /// of them has what the table lacks).
    fn require_table(
        &self,
        db: &str,
        table: &str,
        need: Privs,
        columns: Option<&[String]>,
    ) -> Result<()> {
        let (u, h) = self.who();
        // The server's own tables: everyone reads them (their rows are what the account
        // may see), nobody writes them (root neither, as MariaDB refuses).
        if db.eq_ignore_ascii_case(quarry_catalog::INFORMATION_SCHEMA) {
            if need & !p::SELECT != 0 {
                return Err(Error::db_access_denied(
                    u,
                    h,
                    quarry_catalog::INFORMATION_SCHEMA,
                ));
            }
            return Ok(());
        }
        // performance_schema's tables about the session itself: anyone reads them, as
        // in MariaDB (the others need a grant).
        if db.eq_ignore_ascii_case(quarry_catalog::PERFORMANCE_SCHEMA)
            && need == p::SELECT
            && [
                "global_status",
                "session_status",
                "session_account_connect_attrs",
            ]
            .iter()
            .any(|t| t.eq_ignore_ascii_case(table))
        {
            return Ok(());
        }
        let e = self.privileges();
        let (have, grant) = e.table(db, table);
        let missing = need & !have;
        if missing == 0 {
            return Ok(());
        }
        let denied = || Error::table_access_denied(&p::names(missing).join(", "), u, h, db, table);
        let (Some(cols), Some(g)) = (columns, grant) else {
            return Err(denied());
        };
        if g.any_column() & missing != missing {
            return Err(denied());
        }
        for c in cols {
            let lacks = missing & !g.column(c);
            if lacks != 0 {
                return Err(Error::column_access_denied(
                    &p::names(lacks).join(", "),
                    u,
                    h,
                    c,
                    table,
                ));
            }
        }
        Ok(())
    }

    /// Is there any privilege on the table (SHOW CREATE TABLE, DESCRIBE)? 1142 naming `what`.
    fn require_any_on_table(&self, db: &str, table: &str, what: &str) -> Result<()> {
        if db.eq_ignore_ascii_case(quarry_catalog::INFORMATION_SCHEMA)
            || self.privileges().any_on_table(db, table)
        {
            return Ok(());
        }
        let (u, h) = self.who();
        Err(Error::table_access_denied(what, u, h, db, table))
    }

    /// The columns of `t` that `refs` mentions under its name or alias (or unqualified).
    fn columns_used(&self, t: &TableRef, refs: &Refs) -> Option<Vec<String>> {
        let names: Vec<String> = match self.db.catalog.table(&t.db, &t.table) {
            Ok(e) => e.def.columns.iter().map(|c| c.name.clone()).collect(),
            Err(_) => return None,
        };
        let mut out: Vec<String> = vec![];
        for (q, c) in &refs.idents {
            let mine = match q {
                None => true,
                Some(q) => *q == t.table || t.alias.as_deref() == Some(q.as_str()),
            };
            if !mine {
                continue;
            }
            if let Some(n) = names.iter().find(|n| n.eq_ignore_ascii_case(c)) {
                if !out.contains(n) {
                    out.push(n.clone());
                }
            }
        }
        Some(out)
    }

    /// What [`Session::require_reads`] asks of the one table `t`, with the columns `refs`
    /// mentions.
    fn require_reads_of(&self, t: &TableRef, refs: &Refs, how: Use) -> Result<()> {
        let one = Refs {
            tables: vec![t.clone()],
            idents: refs.idents.clone(),
            wildcards: refs.wildcards.clone(),
        };
        self.require_reads(&one, 0, how)
    }

    /// SELECT on the tables `refs` reads from the `from`th on (those before are the
    /// caller's), column by column where only columns are granted; through views, what
    /// their SQL SECURITY asks.
    fn require_reads(&self, refs: &Refs, from: usize, how: Use) -> Result<()> {
        for t in &refs.tables[from..] {
            self.require_read(t, refs, how)?;
            self.require_view_reads(t, 0)?;
        }
        Ok(())
    }

    /// SELECT on `t` itself, for the columns `refs` uses of it.
    fn require_read(&self, t: &TableRef, refs: &Refs, how: Use) -> Result<()> {
        let e = self.privileges();
        if e.table(&t.db, &t.table).0 & p::SELECT != 0 {
            return Ok(());
        }
        let star = refs.wildcards.iter().any(|w| match w {
            None => true,
            Some(q) => *q == t.table || t.alias.as_deref() == Some(q.as_str()),
        });
        let cols = if star {
            None
        } else {
            self.columns_used(t, refs)
        };
        match (how, cols) {
            (Use::Reads, Some(cols)) => {
                let (u, h) = self.who();
                let g = e.table(&t.db, &t.table).1;
                for c in &cols {
                    if g.is_none_or(|g| g.column(c) & p::SELECT == 0) {
                        return Err(Error::column_access_denied("SELECT", u, h, c, &t.table));
                    }
                }
                Ok(())
            }
            (_, cols) => self.require_table(&t.db, &t.table, p::SELECT, cols.as_deref()),
        }
    }

    /// CREATE VIEW's DEFINER= (the creating account when not given; another account
    /// needs SUPER or SET USER, 1227) and whether it is SQL SECURITY INVOKER.
    pub(crate) fn view_definer(
        &self,
        params: Option<&ast::CreateViewParams>,
    ) -> Result<((String, String), bool)> {
        let me = (self.info.user.clone(), self.info.account_host.clone());
        let invoker = params
            .and_then(|p| p.security.as_ref())
            .is_some_and(|s| matches!(s, ast::CreateViewSecurity::Invoker));
        let definer = match params.and_then(|p| p.definer.as_ref()) {
            Some(ast::GranteeName::UserHost { user, host }) => {
                (user.value.clone(), host.value.clone())
            }
            Some(ast::GranteeName::ObjectName(n))
                if !n.to_string().eq_ignore_ascii_case("CURRENT_USER") =>
            {
                (quarry_planner::bind::object_name(n).join("."), "%".into())
            }
            _ => me.clone(),
        };
        if definer != me {
            self.require_global(p::SUPER | p::SET_USER)?;
        }
        Ok((definer, invoker))
    }

    /// Reading view `t`: an INVOKER view's tables need the reader's own SELECT, a
    /// DEFINER view's its definer's (else 1356 either way, as MariaDB; 1449 when the
    /// definer is gone). Views it reads are checked the same way. `depth` stops a chain
    /// of views that somehow loops.
    fn require_view_reads(&self, t: &TableRef, depth: usize) -> Result<()> {
        let Some(view) = self.db.catalog.view(&t.db, &t.table) else {
            return Ok(());
        };
        if depth > 32 {
            return Err(Error::view_recursion(&t.db, &t.table));
        }
        let Ok(Stmt::Ast(q)) = quarry_sql::parse_one(&view.sql) else {
            return Ok(());
        };
        let refs = collect(&*q, Some(&t.db));
        let e = if view.invoker {
            self.privileges()
        } else {
            let (du, dh) = &view.definer;
            let e = self.db.accounts.read(|st| {
                st.account(du, dh)
                    .is_some()
                    .then(|| st.effective(du, dh, None))
            });
            Arc::new(e.ok_or_else(|| Error::no_such_definer(du, dh))?)
        };
        for r in &refs.tables {
            self.require_view_reads(r, depth + 1)?;
        }
        let allowed = e.is_all()
            || refs.tables.iter().all(|r| {
                let (have, g) = e.table(&r.db, &r.table);
                have & p::SELECT != 0 || g.is_some_and(|g| g.any_column() & p::SELECT != 0)
            });
        if !allowed {
            return Err(Error::view_lacks_rights(&t.db, &t.table));
        }
        Ok(())
    }

    /// [`Session::check_access`], skipped for a prepared statement already allowed under
    /// the same privileges and default database (`checked` remembers them): its tables
    /// and columns do not change between executions.
    pub(crate) fn check_access_cached(&self, stmt: &Stmt, checked: Option<&Checked>) -> Result<()> {
        let e = self.privileges();
        if e.is_all() {
            return Ok(());
        }
        let Some(checked) = checked else {
            return self.check_access(stmt);
        };
        let fresh = checked
            .borrow()
            .as_ref()
            .is_some_and(|(was, db)| Arc::ptr_eq(was, &e) && *db == self.current_db);
        if !fresh {
            self.check_access(stmt)?;
            *checked.borrow_mut() = Some((e, self.current_db.clone()));
        }
        Ok(())
    }

    /// Refuse `stmt` unless the session's privileges allow it. Statements whose needs
    /// depend on what they meet (KILL, SET GLOBAL, SHOW PROCESSLIST, SHOW DATABASES) are
    /// checked where they run.
    pub(crate) fn check_access(&self, stmt: &Stmt) -> Result<()> {
        if self.privileges().is_all() {
            return Ok(());
        }
        let cur = self.current_db.as_deref();
        match stmt {
            Stmt::Ast(s) => self.check_ast(s, cur),
            Stmt::SelectInto(q, _) => {
                self.require_global(p::FILE)?;
                self.check_ast(q, cur)
            }
            Stmt::LoadData(ld) => {
                if !ld.local && self.privileges().global & p::FILE == 0 {
                    let (u, h) = self.who();
                    return Err(Error::access_denied(u, h));
                }
                let db = self.require_db(ld.db.as_deref())?;
                let need = if ld.replace {
                    p::INSERT | p::DELETE
                } else {
                    p::INSERT
                };
                let cols = (!ld.columns.is_empty()).then_some(ld.columns.as_slice());
                self.require_table(&db, &ld.table, need, cols)
            }
            Stmt::ShowTableStatus { db, .. } => {
                let db = self.require_db(db.as_deref())?;
                self.require_any_in_db(&db)
            }
            Stmt::ShowIndex { table, db, .. } => {
                let db = self.require_db(db.as_deref())?;
                self.require_any_on_table(&db, table, "SELECT")
            }
            Stmt::ShowCreateDatabase { name } => self.require_any_in_db(name),
            Stmt::AlterDatabase { name, .. } => {
                let db = self.require_db(name.as_deref())?;
                self.require_db_privs(&db, p::ALTER)
            }
            Stmt::TableMaintenance { tables, .. } => {
                for (db, t) in tables {
                    let db = self.require_db(db.as_deref())?;
                    self.require_table(&db, t, p::SELECT | p::INSERT, None)?;
                }
                Ok(())
            }
            Stmt::AlterEngine { db, table, .. } | Stmt::AlterKeys { db, table, .. } => {
                let db = self.require_db(db.as_deref())?;
                self.require_table(&db, table, p::ALTER, None)
            }
            Stmt::ChecksumTable { tables, .. } => {
                for (db, t) in tables {
                    let db = self.require_db(db.as_deref())?;
                    self.require_table(&db, t, p::SELECT, None)?;
                }
                Ok(())
            }
            Stmt::Flush { .. } => self.require_global(p::RELOAD),
            Stmt::Shutdown => self.require_global(p::SHUTDOWN),
            // LOCK TABLES in the database (1044), and SELECT on each table (1142).
            Stmt::LockTables(items) => {
                for it in items {
                    let db = self.require_db(it.db.as_deref())?;
                    self.require_db_privs(&db, p::LOCK_TABLES)?;
                    self.require_table(&db, &it.table, p::SELECT, None)?;
                }
                Ok(())
            }
            Stmt::CreateUser { .. }
            | Stmt::AlterUser { .. }
            | Stmt::DropUser { .. }
            | Stmt::CreateRole { .. }
            | Stmt::DropRole { .. } => self.require_global(p::CREATE_USER),
            // The statements on accounts and grants check their own (they depend on
            // whose account it is and what the grantor holds).
            _ => Ok(()),
        }
    }

    fn check_ast(&self, s: &S, cur: Option<&str>) -> Result<()> {
        match s {
            S::Query(q) => {
                let refs = collect(&**q, cur);
                self.require_reads(&refs, 0, Use::Select)
            }
            S::Explain { statement, .. } => self.check_ast(statement, cur),
            S::Insert(ins) => {
                let ast::TableObject::TableName(name) = &ins.table else {
                    return Ok(());
                };
                let (db, t) = self.split_name(name)?;
                let need = if ins.replace_into {
                    p::INSERT | p::DELETE
                } else {
                    p::INSERT
                };
                let cols: Vec<String> = ins
                    .columns
                    .iter()
                    .map(|c| {
                        quarry_planner::bind::object_name(c)
                            .pop()
                            .unwrap_or_default()
                    })
                    .collect();
                self.require_table(&db, &t, need, (!cols.is_empty()).then_some(&cols[..]))?;
                if let Some(src) = &ins.source {
                    let refs = collect(&**src, cur);
                    self.require_reads(&refs, 0, Use::Select)?;
                }
                if let Some(ast::OnInsert::DuplicateKeyUpdate(assign)) = &ins.on {
                    let targets = assignment_columns(assign);
                    self.require_table(&db, &t, p::UPDATE, Some(&targets))?;
                    let mut refs = Refs::default();
                    for a in assign {
                        refs.idents.extend(collect(&a.value, cur).idents);
                    }
                    refs.idents
                        .extend(targets.iter().map(|c| (None, c.clone())));
                    refs.tables.push(TableRef {
                        db,
                        table: t,
                        alias: None,
                    });
                    self.require_reads(&refs, 0, Use::Reads)?;
                }
                Ok(())
            }
            S::Update(u) => {
                let refs = collect(s, cur);
                let targets = assignment_columns(&u.assignments);
                // The first table is the one updated; with a join, a table is updated
                // when an assignment names it.
                let n_target = 1 + u.table.joins.len();
                for (i, t) in refs.tables.iter().take(n_target).enumerate() {
                    let qualified: Vec<String> = u
                        .assignments
                        .iter()
                        .filter_map(|a| match &a.target {
                            ast::AssignmentTarget::ColumnName(n) => {
                                let parts = quarry_planner::bind::object_name(n);
                                (parts.len() >= 2).then(|| parts[parts.len() - 2].clone())
                            }
                            _ => None,
                        })
                        .collect();
                    let updated = i == 0 && qualified.is_empty()
                        || qualified
                            .iter()
                            .any(|q| *q == t.table || t.alias.as_deref() == Some(q.as_str()));
                    if updated {
                        self.require_table(&t.db, &t.table, p::UPDATE, Some(&targets))?;
                        self.require_reads_of(t, &refs, Use::Reads)?;
                    } else {
                        self.require_reads_of(t, &refs, Use::Select)?;
                    }
                }
                self.require_reads(&refs, n_target.min(refs.tables.len()), Use::Select)
            }
            S::Delete(_) => {
                let refs = collect(s, cur);
                let Some(t) = refs.tables.first() else {
                    return Ok(());
                };
                self.require_table(&t.db, &t.table, p::DELETE, None)?;
                self.require_reads_of(t, &refs, Use::Reads)?;
                self.require_reads(&refs, 1, Use::Select)
            }
            S::CreateTable(ct) => {
                let (db, t) = self.split_name(&ct.name)?;
                if ct.temporary {
                    self.require_db_privs(&db, p::CREATE_TMP)?;
                } else {
                    self.require_table(&db, &t, p::CREATE, None)?;
                }
                if let Some(q) = &ct.query {
                    self.require_reads(&collect(&**q, cur), 0, Use::Select)?;
                }
                if let Some(like) = &ct.like {
                    let name = match like {
                        ast::CreateTableLikeKind::Parenthesized(l)
                        | ast::CreateTableLikeKind::Plain(l) => &l.name,
                    };
                    let (ldb, lt) = self.split_name(name)?;
                    self.require_any_on_table(&ldb, &lt, "SELECT")?;
                }
                Ok(())
            }
            S::CreateView(cv) => {
                let (db, v) = self.split_name(&cv.name)?;
                let need = if cv.or_replace {
                    p::CREATE_VIEW | p::DROP
                } else {
                    p::CREATE_VIEW
                };
                self.require_table(&db, &v, need, None)?;
                self.require_reads(&collect(&*cv.query, cur), 0, Use::Select)
            }
            S::Drop {
                object_type,
                names,
                table,
                ..
            } => match object_type {
                ast::ObjectType::Database | ast::ObjectType::Schema => {
                    for n in names {
                        self.require_db_privs(
                            &quarry_planner::bind::object_name(n).join("."),
                            p::DROP,
                        )?;
                    }
                    Ok(())
                }
                ast::ObjectType::Index => {
                    if let Some(t) = table {
                        let (db, t) = self.split_name(t)?;
                        self.require_table(&db, &t, p::INDEX, None)?;
                    }
                    Ok(())
                }
                _ => {
                    for n in names {
                        let (db, t) = self.split_name(n)?;
                        self.require_table(&db, &t, p::DROP, None)?;
                    }
                    Ok(())
                }
            },
            S::CreateDatabase { db_name, .. }
            | S::CreateSchema {
                schema_name: ast::SchemaName::Simple(db_name),
                ..
            } => {
                let db = quarry_planner::bind::object_name(db_name).join(".");
                self.require_db_privs(&db, p::CREATE)
            }
            S::AlterTable(at) => {
                let (db, t) = self.split_name(&at.name)?;
                self.require_table(&db, &t, p::ALTER, None)?;
                for op in &at.operations {
                    if let ast::AlterTableOperation::RenameTable { table_name } = op {
                        let new = match table_name {
                            ast::RenameTableNameKind::As(n) | ast::RenameTableNameKind::To(n) => n,
                        };
                        self.require_table(&db, &t, p::DROP, None)?;
                        let (ndb, nt) = self.split_name(new)?;
                        self.require_table(&ndb, &nt, p::CREATE | p::INSERT, None)?;
                    }
                }
                Ok(())
            }
            S::CreateIndex(ci) => {
                let (db, t) = self.split_name(&ci.table_name)?;
                self.require_table(&db, &t, p::INDEX, None)
            }
            S::Truncate(t) => {
                for tn in &t.table_names {
                    let (db, name) = self.split_name(&tn.name)?;
                    self.require_table(&db, &name, p::DROP, None)?;
                }
                Ok(())
            }
            S::RenameTable(renames) => {
                for r in renames {
                    let (db, from) = self.split_name(&r.old_name)?;
                    self.require_table(&db, &from, p::DROP | p::ALTER, None)?;
                    let (ndb, to) = self.split_name(&r.new_name)?;
                    self.require_table(&ndb, &to, p::CREATE | p::INSERT, None)?;
                }
                Ok(())
            }
            S::ShowTables { show_options, .. } => {
                self.require_any_in_db(&self.shown_db(show_options)?)
            }
            S::ShowColumns { show_options, .. } => {
                if let Some(tn) = show_options
                    .show_in
                    .as_ref()
                    .and_then(|i| i.parent_name.as_ref())
                {
                    let (db, t) = self.split_name(tn)?;
                    self.require_any_on_table(&db, &t, "SELECT")?;
                }
                Ok(())
            }
            S::ExplainTable { table_name, .. } => {
                let (db, t) = self.split_name(table_name)?;
                self.require_any_on_table(&db, &t, "SELECT")
            }
            S::ShowCreate { obj_type, obj_name } => {
                let (db, t) = self.split_name(obj_name)?;
                match obj_type {
                    ast::ShowCreateObject::View => self.require_table(&db, &t, p::SHOW_VIEW, None),
                    _ => self.require_any_on_table(&db, &t, "SHOW"),
                }
            }
            _ => Ok(()),
        }
    }

    /// May this session read files on the server (LOAD_FILE(): NULL without FILE)?
    pub(crate) fn may_read_files(&self) -> bool {
        let e = self.privileges();
        e.is_all() || e.global & p::FILE != 0
    }
}

/// The column names an UPDATE's or ON DUPLICATE KEY UPDATE's assignments set.
fn assignment_columns(assign: &[ast::Assignment]) -> Vec<String> {
    let mut out = vec![];
    for a in assign {
        let names: Vec<&ast::ObjectName> = match &a.target {
            ast::AssignmentTarget::ColumnName(n) => vec![n],
            ast::AssignmentTarget::Tuple(ns) => ns.iter().collect(),
        };
        for n in names {
            if let Some(c) = quarry_planner::bind::object_name(n).pop() {
                out.push(c);
            }
        }
    }
    out
}
