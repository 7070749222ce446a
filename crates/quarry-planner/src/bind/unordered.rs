//! The sorts a subquery's rows need not go through when only their set is read: `x IN
//! (SELECT …)` and `EXISTS (SELECT …)` ask whether a row is there, not where. A GROUP BY's
//! implicit sort (MariaDB returns groups in order when there is no ORDER BY) and an ORDER
//! BY without LIMIT are dropped there, as MariaDB drops them; a sort under a LIMIT stays,
//! since it decides which rows are kept. (TPC-H Q18's `IN (SELECT l_orderkey … GROUP BY
//! l_orderkey HAVING …)` sorted 1.5 M groups to keep 57.)
//!
//! Owns the rewrite of a bound subquery plan's top; what the subquery is bound from is
//! the binder's.

use quarry_executor::plan::Plan;

/// `plan` without the sorts above its first node that is not a projection, a filter, a
/// DISTINCT or a sort (those keep the same set of rows whatever order they see).
pub(super) fn unordered(plan: Plan) -> Plan {
    match plan {
        Plan::Sort { input, .. } => unordered(*input),
        Plan::Project { input, exprs } => Plan::Project {
            input: Box::new(unordered(*input)),
            exprs,
        },
        Plan::Filter { input, pred } => Plan::Filter {
            input: Box::new(unordered(*input)),
            pred,
        },
        Plan::Distinct { input, keys, colls } => Plan::Distinct {
            input: Box::new(unordered(*input)),
            keys,
            colls,
        },
        other => other,
    }
}
