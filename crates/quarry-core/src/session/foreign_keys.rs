//! FOREIGN KEYs in DDL: what CREATE TABLE and ALTER TABLE must find true of a table's
//! keys (InnoDB's errno 150 and 121, 1553, 1832/1833), what keeps a parent table from
//! DROP TABLE (1451) and TRUNCATE (1701), and parents renamed under their children.
//! Enforcement on rows is the executor's (`quarry_executor::dml::ForeignKeys`); the
//! definitions are the catalog's.

use quarry_catalog::{foreign_key_index, FkAction, TableDef};
use quarry_common::{Error, Result, SqlType, TypeKind};

use quarry_executor::exec::collect;
use quarry_planner::Binder;
use quarry_sql::{ast, Stmt};

use super::{Session, StmtSink};

/// Whether a child column of type `a` may reference a parent column of type `b`, as
/// InnoDB allows: integers of one size and sign, decimals of one precision and scale,
/// character strings (of any length) with character strings, binary with binary, and
/// otherwise the same type.
fn compatible(a: SqlType, b: SqlType) -> bool {
    use TypeKind as K;
    let chars = |k| matches!(k, K::Char | K::VarChar);
    let bins = |k| matches!(k, K::Binary | K::VarBinary);
    if chars(a.kind) || bins(a.kind) {
        return chars(a.kind) && chars(b.kind) || bins(a.kind) && bins(b.kind);
    }
    if matches!(a.kind, K::Text | K::Blob) {
        return false;
    }
    a.kind == b.kind
        && a.unsigned == b.unsigned
        && (a.kind != K::Decimal || (a.len, a.scale) == (b.len, b.scale))
}

impl Session {
    fn fk_checks(&self) -> bool {
        self.settings().foreign_key_checks
    }

    /// CREATE TABLE / ALTER TABLE: each FOREIGN KEY of `def` (to be table `name` of
    /// `db`) names a parent with those columns, of compatible types, that an index
    /// starts with; SET NULL only on nullable columns; no other table of the database
    /// has a key of its name. A missing parent passes while `foreign_key_checks` is off.
    pub(super) fn validate_foreign_keys(&self, db: &str, name: &str, def: &TableDef) -> Result<()> {
        let malformed = || Error::fk_malformed(db, name);
        for (i, fk) in def.foreign_keys.iter().enumerate() {
            if def.foreign_keys[..i]
                .iter()
                .any(|f| f.name.eq_ignore_ascii_case(&fk.name))
            {
                return Err(malformed());
            }
            for t in self.db.catalog.tables(db)? {
                if t.def.name != def.name
                    && t.def.name != name
                    && t.def
                        .foreign_keys
                        .iter()
                        .any(|f| f.name.eq_ignore_ascii_case(&fk.name))
                {
                    return Err(Error::fk_duplicate_name(db, name));
                }
            }
            if [fk.on_delete, fk.on_update].contains(&FkAction::SetNull)
                && fk.columns.iter().any(|&c| !def.columns[c].nullable)
            {
                return Err(malformed());
            }
            let pdb = fk.parent_db(db);
            let own = pdb == db && fk.ref_table == name;
            let parent = if own {
                def.clone()
            } else {
                match self.db.catalog.table(pdb, &fk.ref_table) {
                    Ok(p) => p.def.clone(),
                    Err(_) if !self.fk_checks() => continue,
                    Err(_) => return Err(malformed()),
                }
            };
            let Some(ref_cols) = fk
                .ref_columns
                .iter()
                .map(|c| parent.column_index(c))
                .collect::<Option<Vec<usize>>>()
            else {
                return Err(malformed());
            };
            let types_fit = fk
                .columns
                .iter()
                .zip(&ref_cols)
                .all(|(&c, &r)| compatible(def.columns[c].ty, parent.columns[r].ty));
            if !types_fit || foreign_key_index(&parent, &ref_cols).is_none() {
                return Err(malformed());
            }
        }
        Ok(())
    }

    /// ALTER TABLE from `old` to `new` (the table `db`.`old.name`): the indexes its keys
    /// and the keys naming it as parent use are kept (1553), and their columns keep
    /// their types (1832 / 1833). Parent columns are matched by name.
    pub(super) fn check_altered_foreign_keys(
        &self,
        db: &str,
        old: &TableDef,
        new: &TableDef,
    ) -> Result<()> {
        let gone_index = |cols: &[usize]| -> Error {
            let name = foreign_key_index(old, cols)
                .map(|i| old.indexes[i].name.clone())
                .unwrap_or_default();
            Error::fk_index_needed(&name)
        };
        for fk in &new.foreign_keys {
            if foreign_key_index(new, &fk.columns).is_none() {
                let before = old.foreign_keys.iter().find(|f| f.name == fk.name);
                return Err(gone_index(before.map_or(&fk.columns[..], |f| &f.columns)));
            }
            if let Some(before) = old.foreign_keys.iter().find(|f| f.name == fk.name) {
                for (&c, &b) in fk.columns.iter().zip(&before.columns) {
                    if !compatible(new.columns[c].ty, old.columns[b].ty) {
                        return Err(Error::fk_column_in_use(
                            &new.columns[c].name,
                            &fk.name,
                            None,
                        ));
                    }
                }
            }
        }
        for (child, i) in self.db.catalog.referencing(db, &old.name) {
            let Some(fk) = child.def.foreign_keys.get(i) else {
                continue;
            };
            let old_cols: Option<Vec<usize>> =
                fk.ref_columns.iter().map(|c| old.column_index(c)).collect();
            let new_cols: Option<Vec<usize>> =
                fk.ref_columns.iter().map(|c| new.column_index(c)).collect();
            let Some(old_cols) = old_cols else {
                continue;
            };
            let Some(new_cols) = new_cols.filter(|c| foreign_key_index(new, c).is_some()) else {
                return Err(gone_index(&old_cols));
            };
            for (&n, &o) in new_cols.iter().zip(&old_cols) {
                if !compatible(new.columns[n].ty, old.columns[o].ty) {
                    return Err(Error::fk_column_in_use(
                        &new.columns[n].name,
                        &fk.name,
                        Some(&format!("{}.{}", child.db, child.def.name)),
                    ));
                }
            }
        }
        Ok(())
    }

    /// ALTER TABLE adding FOREIGN KEYs to a table with rows: 1452 when a row's key has
    /// no parent (`source`: each new column's column in `old`; while
    /// `foreign_key_checks` is on).
    pub(super) fn check_added_foreign_keys(
        &self,
        db: &str,
        old: &TableDef,
        new: &TableDef,
        source: &[Option<usize>],
        sink: &StmtSink,
    ) -> Result<()> {
        if !self.fk_checks() {
            return Ok(());
        }
        let q = quarry_catalog::quote_ident;
        for fk in &new.foreign_keys {
            if old.foreign_keys.iter().any(|f| f.name == fk.name) {
                continue;
            }
            // Keys on columns the ALTER adds hold their defaults: nothing to check.
            let Some(cols) = fk
                .columns
                .iter()
                .map(|&c| source.get(c).copied().flatten())
                .collect::<Option<Vec<usize>>>()
            else {
                continue;
            };
            let mut not_null = vec![];
            let mut joins = vec![];
            for (&c, r) in cols.iter().zip(&fk.ref_columns) {
                let name = q(&old.columns[c].name);
                not_null.push(format!("c.{name} IS NOT NULL"));
                joins.push(format!("p.{} = c.{name}", q(r)));
            }
            let sql = format!(
                "SELECT 1 FROM {}.{} AS c WHERE {} AND NOT EXISTS (SELECT 1 FROM {}.{} AS p WHERE {}) LIMIT 1",
                q(db),
                q(&old.name),
                not_null.join(" AND "),
                q(fk.parent_db(db)),
                q(&fk.ref_table),
                joins.join(" AND ")
            );
            let Stmt::Ast(stmt) = quarry_sql::parse_one(&sql)? else {
                return Err(Error::internal("a foreign key's check query"));
            };
            let ast::Statement::Query(query) = *stmt else {
                return Err(Error::internal("a foreign key's check query"));
            };
            let plan = Binder::new(&self.db.catalog, Some(db.to_string())).bind_query(&query)?;
            let orphans = self.exec_ctx(vec![], sink, |ctx| collect(&plan.plan, ctx))?;
            if !orphans.is_empty() {
                return Err(Error::fk_no_parent(&format!(
                    "`{db}`.`{}`, CONSTRAINT `{}` {}",
                    new.name,
                    fk.name,
                    fk.clause(new, None, true)
                )));
            }
        }
        Ok(())
    }

    /// DROP TABLE of `tables` (database, name): 1451 when another table, not dropped
    /// with them, has a key naming one as its parent (unless `foreign_key_checks` is off).
    pub(super) fn check_drop_parents(&self, tables: &[(String, String)]) -> Result<()> {
        if !self.fk_checks() {
            return Ok(());
        }
        for (db, t) in tables {
            for (child, _) in self.db.catalog.referencing(db, t) {
                if !tables.contains(&(child.db.clone(), child.def.name.clone())) {
                    return Err(Error::fk_has_children(None));
                }
            }
        }
        Ok(())
    }

    /// TRUNCATE of a table another table's key names as parent: 1701.
    pub(super) fn check_truncate_parent(&self, db: &str, t: &str) -> Result<()> {
        if !self.fk_checks() {
            return Ok(());
        }
        for (child, i) in self.db.catalog.referencing(db, t) {
            if child.db == db && child.def.name == t {
                continue;
            }
            let fk = &child.def.foreign_keys[i];
            return Err(Error::fk_truncate_parent(&format!(
                "`{}`.`{}`, CONSTRAINT `{}` {}",
                child.db,
                child.def.name,
                fk.name,
                fk.clause(&child.def, Some(db), false)
            )));
        }
        Ok(())
    }

    /// After RENAME TABLE `db`.`from` TO `to_db`.`to`: the keys that named it as parent
    /// name it by its new name (InnoDB's rule).
    pub(super) fn retarget_foreign_keys(
        &self,
        db: &str,
        from: &str,
        to_db: &str,
        to: &str,
    ) -> Result<()> {
        for (child, _) in self.db.catalog.referencing(db, from) {
            let mut def = child.def.clone();
            for fk in def.foreign_keys.iter_mut() {
                if fk.parent_db(&child.db) == db && fk.ref_table == from {
                    fk.ref_table = to.to_string();
                    fk.ref_db = (to_db != child.db).then(|| to_db.to_string());
                }
            }
            self.db.catalog.replace_def(&child.db, def)?;
        }
        Ok(())
    }
}
