//! Common table expressions (`WITH name [(columns)] AS (query), …`): the names a WITH
//! defines, where each one is visible, and a reference to one bound as the derived table
//! its query makes (bound again at each reference). A CTE the statement names more than
//! once runs once: each reference is a `Plan::Shared` of one id, and the first to run
//! keeps the rows for the others (`quarry_executor`'s cte module), unless its query calls
//! a volatile function. A recursive one (`WITH RECURSIVE`, its query naming itself) is a
//! union of anchors, which do not name it, and steps, which read the rows the last round
//! made through it (`Plan::Recursive`, `Plan::WorkTable`).
//!
//! Visibility is MariaDB's: a CTE sees the ones defined before it in its WITH and those of
//! the enclosing queries' WITHs, shadows a table of the same name, and is not seen inside
//! a view's body. Owns: the binder's CTE scope. Must not touch: how the derived table's
//! query is bound (`bind_query`).

use std::rc::Rc;

use quarry_common::{Error, Result};
use quarry_sql::ast;

use super::{collation, widen_union_input, Binder, ScopeCol};
use quarry_executor::plan::{OutColumn, Plan, SelectPlan};

/// One CTE of a WITH clause.
pub(super) struct Cte {
    name: String,
    query: ast::Query,
    /// The column list after the name (empty: the query's own names).
    columns: Vec<String>,
    /// What its query sees: the enclosing WITHs' CTEs and its own WITH's earlier ones.
    visible: Vec<Rc<Cte>>,
    /// Under WITH RECURSIVE, its query names it.
    recursive: bool,
    /// Read more than once in the statement (and not recursive): the id its reads share
    /// their rows by (`Plan::Shared`).
    shared: Option<usize>,
    /// MariaDB's `CYCLE column, … RESTRICT` (names as written; matched case-sensitively,
    /// as MariaDB does): a recursive CTE drops rows whose values in these columns it made
    /// before. Checked on any CTE; no other has rows dropped.
    cycle: Vec<String>,
}

/// A recursive CTE whose steps are being bound: a reference to `name` in them reads
/// work table `id`.
pub(super) struct WorkTable {
    name: String,
    id: usize,
    columns: Vec<OutColumn>,
}

impl Binder<'_> {
    /// Make `with`'s CTEs visible (until the returned scope is put back with
    /// [`Binder::leave_with`]).
    pub(super) fn enter_with(&mut self, q: &ast::Query) -> Result<Vec<Rc<Cte>>> {
        let saved = self.ctes.clone();
        if let Some(with) = &q.with {
            if let Err(e) = self.define_ctes(q, with) {
                self.ctes = saved;
                return Err(e);
            }
        }
        Ok(saved)
    }

    /// Add `with`'s CTEs (of query `q`) to those visible, in order.
    fn define_ctes(&mut self, q: &ast::Query, with: &ast::With) -> Result<()> {
        for (i, c) in with.cte_tables.iter().enumerate() {
            let name = c.alias.name.value.clone();
            if with.cte_tables[..i]
                .iter()
                .any(|o| same_name(&o.alias.name.value, &name))
            {
                return Err(Error::duplicate_query_name(&name));
            }
            let recursive = with.recursive && names_table(&c.query, &name);
            // Every mention of the name in the query, less those in its own and the earlier
            // CTEs' queries (a name shadowed inside counts too: a CTE read once may then
            // be shared, which changes no answer).
            let before: usize = with.cte_tables[..=i]
                .iter()
                .map(|o| mentions(&o.query, &name))
                .sum();
            let reads = mentions(q, &name).saturating_sub(before);
            let shared = (!recursive && reads > 1).then(|| {
                self.next_sub += 1;
                self.next_sub - 1
            });
            let cycle: Vec<String> = quarry_sql::cycle_columns(&c.query)
                .unwrap_or_default()
                .into_iter()
                .map(|i| i.value.clone())
                .collect();
            if !cycle.is_empty() && !with.recursive {
                return Err(Error::syntax_near(&format!(
                    "CYCLE {} RESTRICT",
                    cycle.join(", ")
                )));
            }
            let columns: Vec<String> = c
                .alias
                .columns
                .iter()
                .map(|d| d.name.value.clone())
                .collect();
            // Against its column list here, read or not (else when it is bound).
            if !columns.is_empty() {
                cycle_positions(&cycle, &columns)?;
            }
            let cte = Rc::new(Cte {
                recursive,
                shared,
                cycle,
                name,
                query: (*c.query).clone(),
                columns,
                visible: self.ctes.clone(),
            });
            self.ctes.push(cte);
        }
        Ok(())
    }

    pub(super) fn leave_with(&mut self, saved: Vec<Rc<Cte>>) {
        self.ctes = saved;
    }

    /// The CTE an unqualified table name refers to here, innermost first.
    pub(super) fn cte(&self, name: &ast::ObjectName) -> Option<Rc<Cte>> {
        let n = unqualified(name)?;
        self.ctes
            .iter()
            .rev()
            .find(|c| same_name(&c.name, n))
            .cloned()
    }

    /// A reference to `cte` (as `alias`, else its name): its query bound where it was
    /// defined, its columns renamed by its column list.
    pub(super) fn bind_cte(
        &mut self,
        cte: &Cte,
        alias: Option<&ast::TableAlias>,
    ) -> Result<(Plan, Vec<ScopeCol>)> {
        let saved_levels = std::mem::take(&mut self.levels);
        let saved_ctes = std::mem::replace(&mut self.ctes, cte.visible.clone());
        // A recursive CTE being defined is seen in its own steps only.
        let saved_work = std::mem::take(&mut self.work_tables);
        let volatile_before = self.volatile_calls;
        let r = if cte.recursive {
            self.bind_recursive(cte)
        } else {
            self.bind_query(&cte.query).and_then(|sp| {
                if !cte.columns.is_empty() && cte.columns.len() != sp.columns.len() {
                    return Err(Error::with_column_count());
                }
                let names: Vec<&str> = sp
                    .columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| cte.columns.get(i).unwrap_or(&c.name).as_str())
                    .collect();
                cycle_positions(&cte.cycle, &names)?;
                Ok(sp)
            })
        };
        // Its reads share one run unless two runs could differ (RAND(), …); with the
        // enclosing scopes set aside above, its query reads no enclosing query's column.
        let stable = self.volatile_calls == volatile_before;
        let r = r.map(|sp| match cte.shared {
            Some(id) if stable => SelectPlan {
                plan: Plan::Shared {
                    id,
                    name: cte.name.clone(),
                    input: Box::new(sp.plan),
                },
                columns: sp.columns,
            },
            _ => sp,
        });
        self.levels = saved_levels;
        self.ctes = saved_ctes;
        self.work_tables = saved_work;
        let sp = r?;
        let table = alias.map_or_else(|| cte.name.clone(), |a| a.name.value.clone());
        Ok((sp.plan, self.cte_scope(sp.columns, &cte.columns, &table)))
    }

    /// A CTE's columns as table `table`'s, renamed by its column list.
    fn cte_scope(&self, columns: Vec<OutColumn>, names: &[String], table: &str) -> Vec<ScopeCol> {
        columns
            .into_iter()
            .enumerate()
            .map(|(i, mut c)| {
                if let Some(n) = names.get(i) {
                    c.name = n.clone();
                }
                c.table = table.to_string();
                c.org_table = String::new();
                ScopeCol::new(table.to_string(), c)
            })
            .collect()
    }

    /// A recursive CTE's query: the UNION parts that do not name it are the anchors,
    /// bound first (their columns are the CTE's); the others are the steps, in which its
    /// name reads the rows of the round before. UNION DISTINCT anywhere in the chain
    /// drops rows seen before, as MariaDB does for the whole result.
    fn bind_recursive(&mut self, cte: &Cte) -> Result<SelectPlan> {
        let q = &cte.query;
        if q.order_by.is_some() || q.limit_clause.is_some() {
            return Err(Error::unsupported(
                "global ORDER_BY/LIMIT in recursive CTE spec",
            ));
        }
        let mut parts = vec![];
        let mut distinct = false;
        union_parts(&q.body, &mut parts, &mut distinct);
        let (steps, anchors): (Vec<&ast::SetExpr>, Vec<&ast::SetExpr>) =
            parts.into_iter().partition(|p| names_table(*p, &cte.name));
        if anchors.is_empty() {
            return Err(Error::no_recursive_anchors(&cte.name));
        }
        let anchors = anchors
            .into_iter()
            .map(|a| self.bind_set_expr(a))
            .collect::<Result<Vec<_>>>()?;
        let mut columns = anchors[0].columns.clone();
        if !cte.columns.is_empty() && cte.columns.len() != columns.len() {
            return Err(Error::with_column_count());
        }
        for (c, n) in columns.iter_mut().zip(&cte.columns) {
            c.name = n.clone();
        }
        let id = self.next_sub;
        self.next_sub += 1;
        self.work_tables.push(WorkTable {
            name: cte.name.clone(),
            id,
            columns: columns.clone(),
        });
        let steps = steps
            .into_iter()
            .map(|s| self.bind_set_expr(s))
            .collect::<Result<Vec<_>>>();
        self.work_tables.pop();
        let steps = steps?;
        // Every part's rows take the anchor's column types (as MariaDB types the CTE).
        let mut shape = |sp: SelectPlan| -> Result<Plan> {
            if sp.columns.len() != columns.len() {
                return Err(Error::union_column_count());
            }
            Ok(widen_union_input(sp.plan, &sp.columns, &columns))
        };
        let anchors = anchors.into_iter().map(&mut shape).collect::<Result<_>>()?;
        let steps = steps.into_iter().map(&mut shape).collect::<Result<_>>()?;
        let colls = columns
            .iter()
            .map(|c| collation::of_type(c.ty).unwrap_or_default())
            .collect();
        let names: Vec<&str> = columns.iter().map(|c| c.name.as_str()).collect();
        let cycle = cycle_positions(&cte.cycle, &names)?;
        Ok(SelectPlan {
            plan: Plan::Recursive {
                anchors,
                steps,
                distinct,
                colls,
                cycle,
                id,
            },
            columns,
        })
    }

    pub(super) fn is_work_table(&self, name: &ast::ObjectName) -> bool {
        self.work_table(name).is_some()
    }

    fn work_table(&self, name: &ast::ObjectName) -> Option<&WorkTable> {
        let n = unqualified(name)?;
        self.work_tables
            .iter()
            .rev()
            .find(|w| same_name(&w.name, n))
    }

    /// A reference, in a recursive CTE's steps, to the CTE: the round before's rows.
    pub(super) fn bind_work_table(
        &self,
        name: &ast::ObjectName,
        alias: Option<&ast::TableAlias>,
    ) -> Option<(Plan, Vec<ScopeCol>)> {
        let w = self.work_table(name)?;
        let table = alias.map_or_else(|| w.name.clone(), |a| a.name.value.clone());
        let plan = Plan::WorkTable {
            id: w.id,
            width: w.columns.len(),
        };
        Some((plan, self.cte_scope(w.columns.clone(), &[], &table)))
    }
}

/// The parts of a chain of UNIONs (anything else is one part); `distinct` when one of
/// its UNIONs is not ALL.
fn union_parts<'q>(s: &'q ast::SetExpr, out: &mut Vec<&'q ast::SetExpr>, distinct: &mut bool) {
    match s {
        ast::SetExpr::SetOperation {
            op: ast::SetOperator::Union,
            set_quantifier,
            left,
            right,
        } => {
            *distinct |= !matches!(set_quantifier, ast::SetQuantifier::All);
            union_parts(left, out, distinct);
            union_parts(right, out, distinct);
        }
        other => out.push(other),
    }
}

/// The name when it has no database part (only such a name can be a CTE's).
fn unqualified(name: &ast::ObjectName) -> Option<&str> {
    match name.0.as_slice() {
        [ast::ObjectNamePart::Identifier(i)] => Some(&i.value),
        _ => None,
    }
}

/// CTE names compare in any case (MariaDB's `WITH C AS (…) SELECT * FROM c` reads the
/// CTE), unlike table names.
fn same_name(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// The positions among a CTE's columns (`names`) of its CYCLE clause's: 1054 for a name
/// it has not (compared case-sensitively, as MariaDB does), 1060 for one named twice.
fn cycle_positions(cycle: &[String], names: &[impl AsRef<str>]) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(cycle.len());
    for c in cycle {
        let at = names
            .iter()
            .position(|n| n.as_ref() == c)
            .ok_or_else(|| Error::unknown_column(c, "CYCLE clause"))?;
        if out.contains(&at) {
            return Err(Error::duplicate_column(c));
        }
        out.push(at);
    }
    Ok(out)
}

/// How many times `v` names `name` as an unqualified table.
fn mentions<V: ast::Visit>(v: &V, name: &str) -> usize {
    let mut n = 0;
    let _ = ast::visit_relations(v, |r| {
        if matches!(r.0.as_slice(), [ast::ObjectNamePart::Identifier(i)] if same_name(&i.value, name))
        {
            n += 1;
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    n
}

/// Whether `v` names `name` as an unqualified table anywhere.
fn names_table<V: ast::Visit>(v: &V, name: &str) -> bool {
    mentions(v, name) > 0
}
