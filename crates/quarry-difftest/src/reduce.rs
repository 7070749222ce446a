//! Shrinking a mismatching query and its data while it still mismatches (dropping clauses,
//! select items, conjuncts, tables it does not name and rows), and writing the result as a
//! sqllogictest record with MariaDB's answer, ready for `tests/slt/`.

use crate::query::{has_aggregate, Select};
use crate::runner::Outcome;
use crate::schema::{Table, Variant};

/// Whether the mismatch is still there for this query over these tables.
pub type Still<'a> = dyn FnMut(&Select, &[Table]) -> Result<bool, String> + 'a;

/// `still(query, tables)`: whether the mismatch is still there. Gives up on a step after
/// `budget` trials in all.
pub fn reduce(
    mut sel: Select,
    mut tables: Vec<Table>,
    budget: usize,
    still: &mut Still,
) -> Result<(Select, Vec<Table>), String> {
    let mut trials = 0usize;
    // Tables the query does not name.
    let text = sel.to_string();
    tables.retain(|t| named(&text, &t.name));
    loop {
        let mut changed = false;
        for cand in clause_candidates(&sel) {
            if trials >= budget {
                break;
            }
            trials += 1;
            if still(&cand, &tables)? {
                sel = cand;
                changed = true;
                break;
            }
        }
        if !changed {
            break;
        }
    }
    // Rows: halves first, then one at a time.
    for ti in 0..tables.len() {
        let mut chunk = tables[ti].rows.len().div_ceil(2).max(1);
        while chunk >= 1 && trials < budget {
            let mut start = 0;
            let mut any = false;
            while start < tables[ti].rows.len() && trials < budget {
                let mut cand = tables.clone();
                let end = (start + chunk).min(cand[ti].rows.len());
                cand[ti].rows.drain(start..end);
                trials += 1;
                if still(&sel, &cand)? {
                    tables = cand;
                    any = true;
                } else {
                    start += chunk;
                }
            }
            if !any {
                if chunk == 1 {
                    break;
                }
                chunk /= 2;
            }
        }
    }
    Ok((sel, tables))
}

fn named(sql: &str, table: &str) -> bool {
    sql.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .any(|w| w == table)
}

fn clause_candidates(s: &Select) -> Vec<Select> {
    let mut out = vec![];
    let mut push = |f: &dyn Fn(&mut Select)| {
        let mut c = s.clone();
        f(&mut c);
        out.push(c);
    };
    if s.union.is_some() {
        push(&|c| c.union = None);
    }
    if s.limit.is_some() {
        push(&|c| c.limit = None);
    }
    if s.ordered && s.limit.is_none() {
        push(&|c| c.ordered = false);
    }
    if s.distinct {
        push(&|c| c.distinct = false);
    }
    if s.having.is_some() {
        push(&|c| c.having = None);
    }
    if s.rollup {
        push(&|c| c.rollup = false);
    }
    for i in 0..s.filter.len() {
        push(&|c| {
            c.filter.remove(i);
        });
    }
    if s.items.len() > 1 && s.union.is_none() {
        for i in 0..s.items.len() {
            // A grouping query keeps an aggregate or a grouped column in every item.
            push(&|c| {
                c.items.remove(i);
            });
        }
    }
    if !s.group_by.is_empty() && !s.rollup {
        for i in 0..s.group_by.len() {
            let g = s.group_by[i].clone();
            if !s.items.contains(&g) {
                push(&|c| {
                    c.group_by.remove(i);
                });
            }
        }
        if s.items.iter().all(|i| has_aggregate(i)) {
            push(&|c| c.group_by.clear());
        }
    }
    out
}

/// A sqllogictest file reproducing the mismatch: the tables (in `variant`'s form), the
/// query and `expected`, the answer it must give.
pub fn slt(
    header: &str,
    sel: &Select,
    tables: &[Table],
    variant: Variant,
    expected: &Outcome,
) -> String {
    let mut out = String::new();
    for line in header.lines() {
        out.push_str(&format!("# {line}\n"));
    }
    out.push('\n');
    for t in tables {
        for stmt in t.load(variant) {
            out.push_str(&format!("statement ok\n{stmt}\n\n"));
        }
    }
    let sql = sel.to_string();
    match expected {
        Outcome::Rows(rows) => {
            let width = rows.first().map(|r| r.len()).unwrap_or(sel.items.len());
            let sort = if sel.fully_ordered() { "" } else { " rowsort" };
            out.push_str(&format!("query {}{sort}\n{sql}\n----\n", "T".repeat(width)));
            for r in rows {
                for v in r {
                    let v = match v {
                        None => "NULL".to_string(),
                        Some(s) if s.is_empty() => "(empty)".to_string(),
                        Some(s) => s
                            .chars()
                            .map(|c| if (' '..='~').contains(&c) { c } else { '@' })
                            .collect(),
                    };
                    out.push_str(&v);
                    out.push('\n');
                }
            }
        }
        Outcome::Error(code, _) => out.push_str(&format!("statement error {code}\n{sql}\n")),
        Outcome::Done(_) => out.push_str(&format!("statement ok\n{sql}\n")),
    }
    out
}
