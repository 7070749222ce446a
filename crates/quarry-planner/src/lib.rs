//! The planner: SQL statements bound into plans, rewritten, costed and ordered; EXPLAIN.
//!
//! Owns: the binder ([`bind`]: names → positions, types, access paths; CTEs, windows,
//! decorrelation of subqueries into joins, OR factoring), the optimizer ([`optimize`]:
//! join order, eager aggregation, pruning of unread columns, fusing of operators), the
//! EXPLAIN formats, and the binding of INSERT / UPDATE / DELETE ([`dml`]), which the
//! executor's row-change primitives carry out.
//! Must not touch: execution — plans are the executor's types (`quarry_executor::plan`)
//! and run there; this crate evaluates only what planning needs (constants, a LIMIT).
//! The executor asks for the plans a write needs while it runs through
//! [`quarry_executor::planning::Planner`], implemented here by [`Planning`].
//!
//! Life of a SELECT: `quarry_core::Session::query` parses with `quarry_sql::parse`, then
//! [`Binder::bind_query`] builds a [`quarry_executor::SelectPlan`] (bound, then optimized),
//! and `quarry_executor::exec::run` runs it.

pub mod bind;
pub mod dml;
mod eager_agg;
pub mod explain;
mod fuse;
pub mod joinorder;
pub mod optimize;
mod prune;

use std::sync::Arc;

use quarry_catalog::TableEntry;
use quarry_common::Result;
use quarry_executor::exec::ExecCtx;
use quarry_executor::expr::Expr;
use quarry_executor::plan::Plan;

pub use bind::Binder;

/// The planner as the executor sees it while a statement runs.
pub struct Planning;

impl quarry_executor::planning::Planner for Planning {
    fn scan(&self, entry: &Arc<TableEntry>, filter: Expr) -> Plan {
        bind::push_filter(Plan::scan(entry.clone()), filter)
    }

    fn checks(&self, entry: &TableEntry, ctx: &ExecCtx) -> Result<Vec<(String, Expr)>> {
        let mut b = Binder::new(ctx.catalog, Some(entry.db.clone()));
        dml::bind_checks(&entry.def, &entry.db, &mut b)
    }
}
