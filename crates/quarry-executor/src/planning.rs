//! What the executor asks of the planner while a statement runs. A write meets work its
//! statement did not name: a foreign key's action finds the child rows of each parent it
//! changes, and a table's CHECK constraints are tested on each row written. Those are
//! planned when they are met, through [`Planner`], which the planner crate implements and
//! the session hands over in [`ExecCtx::planner`]: the executor runs plans and does not
//! depend on the planner.

use std::sync::Arc;

use quarry_catalog::TableEntry;
use quarry_common::Result;

use crate::exec::ExecCtx;
use crate::expr::Expr;
use crate::plan::Plan;

pub trait Planner {
    /// The scan of `entry` for the rows `filter` (over its row) selects: its access path
    /// chosen, the conjuncts the scan checks in it, any others in a `Plan::Filter` above.
    fn scan(&self, entry: &Arc<TableEntry>, filter: Expr) -> Plan;

    /// The table's CHECK conditions bound over its row, with the names error 4025 gives.
    fn checks(&self, entry: &TableEntry, ctx: &ExecCtx) -> Result<Vec<(String, Expr)>>;
}
