//! Views in a query: a view is bound as a derived table from its stored SELECT, in the
//! database it was defined in. A view met again inside its own expansion is a cycle
//! (1462, as MariaDB answers); the view a CREATE VIEW defines does not exist for its own
//! SELECT (1146), so no cycle can be stored through SQL.

use quarry_common::{Error, Result};
use quarry_sql::ast;

use super::{object_name, Binder, ScopeCol};
use quarry_executor::plan::Plan;

impl Binder<'_> {
    /// A view is bound as a derived table from its stored SELECT.
    pub(super) fn bind_view(
        &mut self,
        name: &ast::ObjectName,
        alias: Option<String>,
        not_found: Error,
    ) -> Result<(Plan, Vec<ScopeCol>)> {
        let parts = object_name(name);
        let (db, v) = match parts.as_slice() {
            [v] => (self.db.clone().ok_or_else(Error::no_database)?, v.clone()),
            [d, v] => (d.clone(), v.clone()),
            _ => return Err(not_found),
        };
        if self.defining_view.as_ref() == Some(&(db.clone(), v.clone())) {
            return Err(not_found);
        }
        let Some(view) = self.catalog.view(&db, &v) else {
            return Err(not_found);
        };
        let key = (db.clone(), v.clone());
        if self.views.contains(&key) {
            return Err(Error::view_recursion(&db, &v));
        }
        let stmt = quarry_sql::parse_one(&view.sql)?;
        let quarry_sql::Stmt::Ast(ast) = stmt else {
            return Err(Error::corrupt(&v));
        };
        let ast::Statement::Query(q) = *ast else {
            return Err(Error::corrupt(&v));
        };
        let saved = std::mem::take(&mut self.levels);
        // The query's CTEs are not the view's.
        let saved_ctes = std::mem::take(&mut self.ctes);
        let saved_work = std::mem::take(&mut self.work_tables);
        let saved_db = self.db.replace(db);
        self.views.push(key);
        let r = self.bind_query(&q);
        self.views.pop();
        self.levels = saved;
        self.ctes = saved_ctes;
        self.work_tables = saved_work;
        self.db = saved_db;
        let sp = r?;
        let alias = alias.unwrap_or(v);
        let cols = sp
            .columns
            .into_iter()
            .enumerate()
            .map(|(i, mut c)| {
                if let Some(n) = view.columns.get(i) {
                    c.name = n.clone();
                }
                c.table = alias.clone();
                ScopeCol::new(alias.clone(), c)
            })
            .collect();
        Ok((sp.plan, cols))
    }
}
