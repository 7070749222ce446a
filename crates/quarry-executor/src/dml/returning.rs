//! RETURNING of INSERT / REPLACE / DELETE (MariaDB 10.5+): the list bound over the target
//! table's row and evaluated for each row the statement writes (inserted, replaced in, or
//! updated by ON DUPLICATE KEY UPDATE) or removes. The statement's changes and undo are
//! the callers'; this only turns rows into the result set.

use std::cell::RefCell;

use quarry_catalog::TableEntry;
use quarry_common::{Error, Result, Row, Value};
use quarry_sql::ast::SelectItem;

use crate::bind::Binder;
use crate::exec::ExecCtx;
use crate::expr::Expr;
use crate::plan::OutColumn;

pub struct Returning {
    exprs: Vec<Expr>,
    columns: Vec<OutColumn>,
    rows: RefCell<Vec<Row>>,
}

/// What a statement with RETURNING sends instead of its OK packet.
#[derive(Debug, Clone)]
pub struct Returned {
    pub columns: Vec<OutColumn>,
    pub rows: Vec<Row>,
}

impl Returning {
    /// `target`: the table's name as the statement wrote it (its alias for DELETE); an
    /// INSERT whose list reads its own target is 1093, as in MariaDB.
    pub fn bind(
        items: Option<&[SelectItem]>,
        entry: &TableEntry,
        alias: &str,
        verb: &str,
        b: &mut Binder,
    ) -> Result<Option<Returning>> {
        let Some(items) = items else {
            return Ok(None);
        };
        let read_before = b.tables_read.len();
        let (exprs, columns) = b.bind_returning(items, entry, alias)?;
        let reads_target = b.tables_read[read_before..].iter().any(|t| {
            t.db.eq_ignore_ascii_case(&entry.db) && t.def.name.eq_ignore_ascii_case(&entry.def.name)
        });
        if reads_target && verb == "INSERT" {
            return Err(Error::new(
                1093,
                format!(
                    "Table '{}' is specified twice, both as a target for '{verb}' and as a separate source for data",
                    entry.def.name
                ),
            ));
        }
        Ok(Some(Returning {
            exprs,
            columns,
            rows: RefCell::new(vec![]),
        }))
    }

    pub fn columns(&self) -> &[OutColumn] {
        &self.columns
    }

    pub fn add(&self, row: &[Value], ctx: &ExecCtx) -> Result<()> {
        let out = self
            .exprs
            .iter()
            .map(|e| e.eval(row, ctx))
            .collect::<Result<Row>>()?;
        self.rows.borrow_mut().push(out);
        Ok(())
    }

    pub fn finish(self) -> Returned {
        Returned {
            columns: self.columns,
            rows: self.rows.into_inner(),
        }
    }
}
