//! Execution of physical plans and of row changes.
//!
//! Owns: plan nodes ([`plan`]: what the planner hands over), expression evaluation and
//! scalar functions, the push-based operators (scans, joins, aggregation, sorts, windows,
//! set operations, vector aggregation), cardinality estimates of plan nodes (the planner
//! costs with them, hash joins pick their build side with them), condition pushdown into
//! engines, EXPLAIN ANALYZE's measurements, and the row-change primitives DML statements
//! are carried out with (coercion, auto-increment, keys, CHECK, FOREIGN KEY, undo).
//! Must not touch: SQL text and names (the planner, `quarry-planner`, binds statements and
//! chooses the plan; what a write must plan while it runs it asks through
//! [`planning::Planner`]), sessions and transactions (the core passes an [`ExecCtx`] and
//! keeps the undo records it fills), the wire protocol, files.
//!
//! Life of a SELECT: `quarry_core::Session::query` parses with `quarry_sql::parse`, then
//! `quarry_planner::Binder::bind_query` builds a [`plan::SelectPlan`]; [`exec::run`] pushes
//! batches from the engine's scan through filters, joins and aggregates into the
//! session's sink, which hands rows to the protocol (server) or the table printer
//! (shell).

mod aggregate;
pub mod cardinality;
mod cte;
mod distinct;
pub mod dml;
pub mod exec;
pub mod expr;
mod fold;
pub mod func;
pub mod in_set;
pub mod join;
pub mod json;
pub mod plan;
pub mod planning;
pub mod profile;
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

pub use exec::{ExecCtx, SessionInfo, Undo};
pub use plan::{OutColumn, SelectPlan};
