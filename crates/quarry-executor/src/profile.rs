//! EXPLAIN ANALYZE's measurements: rows, loops and time per plan node, collected by
//! `exec::run` into `ExecCtx::profile` while a statement runs. Printing them is the
//! planner's EXPLAIN.

use std::collections::HashMap;

use crate::plan::Plan;

/// What EXPLAIN ANALYZE measured for one plan node.
#[derive(Debug, Default, Clone, Copy)]
pub struct NodeStat {
    pub rows: u64,
    pub loops: u64,
    /// Time in the node and below it, not in the nodes it feeds.
    pub nanos: u64,
}

/// Profiles are keyed by node address: plans do not move while they run.
pub type Profile = HashMap<usize, NodeStat>;

pub fn node_key(p: &Plan) -> usize {
    p as *const Plan as usize
}
