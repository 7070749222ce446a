//! RETURNING of INSERT / REPLACE / DELETE (MariaDB 10.5+): the list (bound by the planner
//! over the target table's row) evaluated for each row the statement writes (inserted,
//! replaced in, or updated by ON DUPLICATE KEY UPDATE) or removes. The statement's changes
//! and undo are the callers'; this only turns rows into the result set.

use std::cell::RefCell;

use quarry_common::{Result, Row, Value};

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
    /// A list bound over the target table's row, and the result set's columns.
    pub fn new(exprs: Vec<Expr>, columns: Vec<OutColumn>) -> Returning {
        Returning {
            exprs,
            columns,
            rows: RefCell::new(vec![]),
        }
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
