//! The names the tables of one FROM clause go by must differ (1066, as MariaDB): a table
//! by its alias, else its name, within its database; a derived table or a CTE by its
//! alias or name, in no database (so `t1 x, (SELECT 1) x` is allowed, as in MariaDB).
//! Names compare as written (`t1 a, t2 A` is two names). Owns: that check. Must not
//! touch: binding the tables.

use quarry_common::{Error, Result};
use quarry_sql::ast::{self, TableFactor};

use super::{object_name, Binder};

impl Binder<'_> {
    pub(super) fn check_unique_names(&self, from: &[ast::TableWithJoins]) -> Result<()> {
        let mut seen = vec![];
        for twj in from {
            self.names_of(twj, &mut seen)?;
        }
        Ok(())
    }

    fn names_of(&self, twj: &ast::TableWithJoins, seen: &mut Vec<(String, String)>) -> Result<()> {
        self.name_of(&twj.relation, seen)?;
        for j in &twj.joins {
            self.name_of(&j.relation, seen)?;
        }
        Ok(())
    }

    fn name_of(&self, f: &TableFactor, seen: &mut Vec<(String, String)>) -> Result<()> {
        let alias = |a: &Option<ast::TableAlias>| a.as_ref().map(|a| a.name.value.clone());
        let key = match f {
            TableFactor::Table { name, alias: a, .. } => {
                let parts = object_name(name);
                let derived = self.cte(name).is_some() || self.is_work_table(name);
                let db = match parts.as_slice() {
                    _ if derived => String::new(),
                    [d, _] => d.clone(),
                    _ => self.db.clone().unwrap_or_default(),
                };
                let Some(n) = alias(a).or_else(|| parts.last().cloned()) else {
                    return Ok(());
                };
                (db, n)
            }
            TableFactor::Derived { alias: a, .. } => match alias(a) {
                Some(n) => (String::new(), n),
                None => return Ok(()),
            },
            TableFactor::NestedJoin {
                table_with_joins, ..
            } => return self.names_of(table_with_joins, seen),
            _ => return Ok(()),
        };
        if seen.contains(&key) {
            return Err(Error::not_unique_table(&key.1));
        }
        seen.push(key);
        Ok(())
    }
}
