//! Binding and execution of queries and data-changing statements.
//!
//! Owns: the binder (names → positions, types, access paths), plan nodes, expression
//! evaluation, scalar functions, the push-based operators, and DML.
//! Must not touch: sessions and transactions (the core passes an [`ExecCtx`] and keeps the
//! undo records it fills), the wire protocol, files.
//!
//! Life of a SELECT: `quarry_core::Session::query` parses with `quarry_sql::parse`, then
//! [`Binder::bind_query`] builds a [`plan::SelectPlan`]; [`exec::run`] pushes batches from
//! the engine's scan through filters, joins and aggregates into the session's sink, which
//! hands rows to the protocol (server) or the table printer (shell).

mod aggregate;
pub mod bind;
pub mod cardinality;
mod distinct;
pub mod dml;
mod eager_agg;
pub mod exec;
pub mod explain;
pub mod expr;
mod fold;
pub mod func;
mod fuse;
pub mod in_set;
mod join;
pub mod joinorder;
pub mod json;
pub mod optimize;
pub mod plan;
pub mod profile;
mod prune;
pub mod pushdown;
mod recursive;
mod setop;
pub mod sort;
pub mod strtodate;
pub mod subcache;
pub mod timefn;
mod vector;
pub mod week;
mod window;

pub use bind::Binder;
pub use exec::{ExecCtx, SessionInfo, Undo};
pub use plan::{OutColumn, SelectPlan};

impl Binder<'_> {
    /// Bind an expression against a given row layout (UPDATE/DELETE/ON DUPLICATE KEY).
    pub fn bind_in_scope(
        &mut self,
        cols: Vec<bind::ScopeCol>,
        e: &quarry_sql::ast::Expr,
    ) -> quarry_common::Result<expr::Expr> {
        self.push_scope(cols);
        let r = self.bind_expr(e);
        self.pop_scope();
        r
    }
}
