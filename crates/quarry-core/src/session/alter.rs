//! ALTER TABLE: the new definition an ALTER's operations make (columns, indexes, CHECK
//! constraints, renames), and the rebuild or rename that applies it. The rebuild itself
//! (copy, switch, journal) is `Session::change_table`'s; the definitions are the catalog's.

use quarry_catalog::{table_def_from_ast, TableDef};
use quarry_common::{Error, Result, Row, Value};
use quarry_sql::ast;

use super::{synth_constraint, Output, Session, StmtSink};

impl Session {
    /// ALTER TABLE t DISABLE KEYS / ENABLE KEYS. The row engine defers the non-unique
    /// indexes' entries until ENABLE KEYS, as MyISAM (a dump's rows then go into the
    /// indexes sorted, at once) under whatever engine name the table has; the note that
    /// the engine has no such option comes where MariaDB's engine of that name gives it
    /// (InnoDB, MEMORY) and from an engine that cannot defer.
    pub(super) fn alter_keys(
        &mut self,
        db: Option<&str>,
        table: &str,
        enable: bool,
    ) -> Result<Output> {
        let db = self.require_db(db)?;
        let entry = self.db.catalog.table(&db, table)?;
        let deferred = entry.handle.set_keys_disabled(!enable)?;
        let named_without = ["InnoDB", "Memory"]
            .iter()
            .any(|e| entry.def.engine.eq_ignore_ascii_case(e));
        if !deferred || named_without {
            let e = Error::engine_lacks_option(&entry.def.engine, &db, table);
            self.warnings.push(("Note".into(), e.code, e.message));
        }
        Ok(Output::ok(0))
    }

    pub(super) fn alter_table(&mut self, at: &ast::AlterTable, sink: &StmtSink) -> Result<Output> {
        let (db, t) = self.split_name(&at.name)?;
        let entry = self.db.catalog.table(&db, &t)?;
        let mut def = entry.def.clone();
        // For each resulting column: where its value comes from in the old row (None = default).
        let mut source: Vec<Option<usize>> = (0..def.columns.len()).map(Some).collect();
        let mut rename_to: Option<(String, String)> = None;
        for op in &at.operations {
            use ast::AlterTableOperation as O;
            match op {
                O::AddColumn {
                    column_def,
                    column_position,
                    if_not_exists,
                    ..
                } => {
                    let (col, keys) = quarry_catalog::ddl_column(column_def, def.collation)?;
                    if def.column_index(&col.name).is_some() {
                        if *if_not_exists {
                            continue;
                        }
                        return Err(Error::duplicate_column(&col.name));
                    }
                    let pos = match column_position {
                        Some(ast::MySQLColumnPosition::First) => 0,
                        Some(ast::MySQLColumnPosition::After(a)) => {
                            def.column_index(&a.value)
                                .ok_or_else(|| Error::unknown_column(&a.value, &t))?
                                + 1
                        }
                        None => def.columns.len(),
                    };
                    for ix in def.indexes.iter_mut() {
                        for c in ix.columns.iter_mut() {
                            if *c >= pos {
                                *c += 1;
                            }
                        }
                    }
                    for fk in def.foreign_keys.iter_mut() {
                        for c in fk.columns.iter_mut() {
                            if *c >= pos {
                                *c += 1;
                            }
                        }
                    }
                    def.columns.insert(pos, col);
                    def.checks.extend(quarry_catalog::column_checks(column_def));
                    source.insert(pos, None);
                    if !keys.is_empty() {
                        return Err(Error::unsupported("ADD COLUMN with an inline key"));
                    }
                }
                O::DropColumn {
                    column_names,
                    if_exists,
                    ..
                } => {
                    for cn in column_names {
                        let Some(i) = def.column_index(&cn.value) else {
                            if *if_exists {
                                continue;
                            }
                            return Err(Error::new(
                                1091,
                                format!("Can't DROP COLUMN `{}`; check that it exists", cn.value),
                            ));
                        };
                        if def.columns.len() == 1 {
                            return Err(Error::new(1090, "You can't delete all columns with ALTER TABLE; use DROP TABLE instead"));
                        }
                        // A key's column goes only with the key (MariaDB names its index).
                        if let Some(fk) = def.foreign_keys.iter().find(|f| f.columns.contains(&i)) {
                            let ix = quarry_catalog::foreign_key_index(&def, &fk.columns)
                                .map(|x| def.indexes[x].name.clone())
                                .unwrap_or_default();
                            return Err(Error::fk_index_needed(&ix));
                        }
                        for fk in def.foreign_keys.iter_mut() {
                            for c in fk.columns.iter_mut() {
                                if *c > i {
                                    *c -= 1;
                                }
                            }
                        }
                        let gone = def.columns.remove(i).name;
                        source.remove(i);
                        // Its CHECKs go with it (MariaDB drops those naming it).
                        let quoted = format!("`{gone}`");
                        def.checks.retain(|c| {
                            !c.column
                                .as_deref()
                                .is_some_and(|n| n.eq_ignore_ascii_case(&gone))
                                && !c
                                    .expr
                                    .to_ascii_lowercase()
                                    .contains(&quoted.to_ascii_lowercase())
                        });
                        def.indexes.retain_mut(|ix| {
                            if let Some(p) = ix.columns.iter().position(|c| *c == i) {
                                ix.columns.remove(p);
                                ix.prefix.remove(p);
                                ix.desc.remove(p);
                            }
                            for c in ix.columns.iter_mut() {
                                if *c > i {
                                    *c -= 1;
                                }
                            }
                            !ix.columns.is_empty()
                        });
                    }
                }
                O::ModifyColumn {
                    col_name,
                    data_type,
                    options,
                    ..
                } => redefine_column(&mut def, &t, col_name, col_name, data_type, options)?,
                O::ChangeColumn {
                    old_name,
                    new_name,
                    data_type,
                    options,
                    ..
                } => redefine_column(&mut def, &t, old_name, new_name, data_type, options)?,
                O::RenameColumn {
                    old_column_name,
                    new_column_name,
                } => {
                    let i = def
                        .column_index(&old_column_name.value)
                        .ok_or_else(|| Error::unknown_column(&old_column_name.value, &t))?;
                    def.columns[i].name = new_column_name.value.clone();
                }
                O::RenameTable { table_name } => {
                    let n = match table_name {
                        ast::RenameTableNameKind::As(n) | ast::RenameTableNameKind::To(n) => n,
                    };
                    let (d2, t2) = self.split_name(n)?;
                    rename_to = Some((d2, t2));
                }
                O::AddConstraint { constraint, .. } => {
                    let ct = synth_constraint(&def, constraint.clone());
                    let new = table_def_from_ast(&ct)?;
                    def.indexes = new.indexes;
                    def.checks = new.checks;
                    def.foreign_keys = new.foreign_keys;
                }
                O::DropForeignKey { name, .. } => {
                    let before = def.foreign_keys.len();
                    def.foreign_keys
                        .retain(|f| !f.name.eq_ignore_ascii_case(&name.value));
                    if def.foreign_keys.len() == before {
                        return Err(Error::new(
                            1091,
                            format!(
                                "Can't DROP FOREIGN KEY `{}`; check that it exists",
                                name.value
                            ),
                        ));
                    }
                }
                O::DropIndex { name } => {
                    let before = def.indexes.len();
                    def.indexes
                        .retain(|ix| !ix.name.eq_ignore_ascii_case(&name.value));
                    if def.indexes.len() == before {
                        return Err(Error::new(
                            1091,
                            format!("Can't DROP INDEX `{}`; check that it exists", name.value),
                        ));
                    }
                }
                O::DropPrimaryKey { .. } => def.indexes.retain(|ix| !ix.primary),
                // A CHECK by its name, else a UNIQUE key (MariaDB's DROP CONSTRAINT).
                O::DropConstraint {
                    name, if_exists, ..
                } => {
                    let before = def.checks.len() + def.indexes.len();
                    def.checks.retain(|c| {
                        c.column.is_some() || !c.name.eq_ignore_ascii_case(&name.value)
                    });
                    if def.checks.len() + def.indexes.len() == before {
                        def.indexes.retain(|ix| {
                            ix.primary || !ix.unique || !ix.name.eq_ignore_ascii_case(&name.value)
                        });
                    }
                    if def.checks.len() + def.indexes.len() == before && !*if_exists {
                        return Err(Error::new(
                            1091,
                            format!(
                                "Can't DROP CONSTRAINT `{}`; check that it exists",
                                name.value
                            ),
                        ));
                    }
                }
                O::Algorithm { .. } | O::Lock { .. } => {}
                other => return Err(Error::unsupported(format!("ALTER TABLE {other}"))),
            }
        }
        self.validate_checks(&db, &def)?;
        self.check_altered_foreign_keys(&db, &entry.def, &def)?;
        self.validate_foreign_keys(&db, &t, &def)?;
        self.check_added_foreign_keys(&db, &entry.def, &def, &source, sink)?;
        if def != entry.def {
            // Existing rows take each added column's default (MariaDB's rule).
            let added: Vec<Value> = self.with_ctx(|ctx| {
                def.columns
                    .iter()
                    .zip(&source)
                    .map(|(c, s)| match s {
                        Some(_) => Ok(Value::Null),
                        None => quarry_executor::dml::added_column_value(c, ctx),
                    })
                    .collect()
            })?;
            let ctx_map = move |old: Row| -> Row {
                source
                    .iter()
                    .zip(&added)
                    .map(|(s, v)| s.map(|i| old[i].clone()).unwrap_or_else(|| v.clone()))
                    .collect()
            };
            self.change_table(&db, &entry, def.clone(), Some(&ctx_map), sink)?;
        }
        if let Some((to_db, to)) = rename_to {
            self.db
                .catalog
                .apply_ddl(&[quarry_catalog::DdlStep::Rename {
                    db: db.clone(),
                    from: def.name.clone(),
                    to_db: to_db.clone(),
                    to: to.clone(),
                }])?;
            self.retarget_foreign_keys(&db, &def.name, &to_db, &to)?;
        }
        Ok(Output::Ok {
            affected: 0,
            last_insert_id: 0,
            info: Some("Records: 0  Duplicates: 0  Warnings: 0".into()),
        })
    }
}

/// MODIFY / CHANGE COLUMN: replace a column's definition (values are converted on copy).
fn redefine_column(
    def: &mut TableDef,
    table: &str,
    old: &ast::Ident,
    new: &ast::Ident,
    data_type: &ast::DataType,
    options: &[ast::ColumnOption],
) -> Result<()> {
    let i = def
        .column_index(&old.value)
        .ok_or_else(|| Error::unknown_column(&old.value, table))?;
    let cd = ast::ColumnDef {
        name: new.clone(),
        data_type: data_type.clone(),
        options: options
            .iter()
            .map(|o| ast::ColumnOptionDef {
                name: None,
                option: o.clone(),
            })
            .collect(),
    };
    def.columns[i] = quarry_catalog::ddl_column(&cd, def.collation)?.0;
    // The column's CHECKs are those of its new definition (as MariaDB).
    def.checks.retain(|c| {
        !c.column
            .as_deref()
            .is_some_and(|n| n.eq_ignore_ascii_case(&old.value))
    });
    def.checks.extend(quarry_catalog::column_checks(&cd));
    Ok(())
}
