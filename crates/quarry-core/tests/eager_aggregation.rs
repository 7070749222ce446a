//! Eager aggregation: a GROUP BY over a join, grouped by a unique key of one table, with
//! aggregates of the other table's columns only, aggregates that table by its join key
//! before the join (TPC-H Q13). That the plan takes that shape where it should and not
//! where it must not, and that its answers are those of the same query kept from it
//! (a join key that is no plain column: `o.cid + 0`) — on row and column tables, with
//! customers without orders, orders of no customer, NULL keys and NULL values.

mod common;

use common::{fill_segments, fresh_db, rows};
use quarry_core::Session;

fn explain(s: &mut Session, sql: &str) -> String {
    rows(s, &format!("EXPLAIN FORMAT=TREE {sql}"))[0][0].to_string()
}

/// 500 customers (every seventh has no orders) and 4 010 orders, some of no customer or
/// of none that exists, some without an amount; column tables get two segments and a
/// delta.
fn load(s: &mut Session, engine: &str) {
    s.query(&format!(
        "CREATE TABLE c (id INT NOT NULL PRIMARY KEY, name VARCHAR(10), grp INT) ENGINE={engine}; \
         CREATE TABLE o (oid INT NOT NULL PRIMARY KEY, cid BIGINT, amt DECIMAL(8,2), \
         note VARCHAR(10), KEY (cid)) ENGINE={engine}"
    ))
    .unwrap();
    let cs: Vec<String> = (1..=500)
        .map(|i| format!("({i}, 'n{}', {})", i % 37, i % 5))
        .collect();
    s.query(&format!("INSERT INTO c VALUES {}", cs.join(",")))
        .unwrap();
    let order = |i: i64| {
        let cid = match i % 11 {
            0 => "NULL".to_string(),
            1 => (600 + i).to_string(),
            _ => {
                let c = (i * 13) % 500 + 1;
                if c % 7 == 0 { c + 1 } else { c }.to_string()
            }
        };
        let amt = if i % 9 == 0 {
            "NULL".to_string()
        } else {
            format!("{}.{:02}", i % 50 - 10, i % 100)
        };
        format!(
            "({i}, {cid}, {amt}, '{}')",
            ["a", "xb", "c", "dx"][(i % 4) as usize]
        )
    };
    fill_segments(s, "o", &[(1, 2000), (2001, 4000)], 4001..=4010, order);
}

/// (query, whether the plan aggregates orders before the join)
const QUERIES: &[(&str, bool)] = &[
    (
        "SELECT c_count, COUNT(*) AS custdist FROM (SELECT c.id, COUNT(o.oid) AS c_count \
         FROM c LEFT JOIN o ON c.id = o.cid AND o.note NOT LIKE '%x%' GROUP BY c.id) t \
         GROUP BY c_count ORDER BY custdist DESC, c_count DESC",
        true,
    ),
    (
        "SELECT c.id, COUNT(o.amt), COUNT(*), SUM(o.amt), MIN(o.amt), MAX(o.note) \
         FROM c LEFT JOIN o ON c.id = o.cid GROUP BY c.id",
        true,
    ),
    (
        "SELECT c.id, c.name, COUNT(*), SUM(o.amt), MAX(o.amt) FROM c JOIN o ON c.id = o.cid \
         WHERE c.grp = 2 GROUP BY c.id, c.name ORDER BY SUM(o.amt) DESC, c.id LIMIT 20",
        true,
    ),
    // Not a key of the customers: groups hold several of them.
    (
        "SELECT c.name, COUNT(o.oid), SUM(o.amt) FROM c LEFT JOIN o ON c.id = o.cid \
         GROUP BY c.name",
        false,
    ),
    // DISTINCT, AVG and a customer's column inside an aggregate are not rewritten.
    (
        "SELECT c.id, COUNT(DISTINCT o.amt) FROM c LEFT JOIN o ON c.id = o.cid GROUP BY c.id",
        false,
    ),
    (
        "SELECT c.id, AVG(o.amt) FROM c LEFT JOIN o ON c.id = o.cid GROUP BY c.id",
        false,
    ),
    (
        "SELECT c.id, SUM(o.amt + c.grp) FROM c JOIN o ON c.id = o.cid GROUP BY c.id",
        false,
    ),
    // A LEFT join's unmatched customer is a row of NULLs to the aggregates: what is not
    // NULL for it counts it, so only plain columns are aggregated early there.
    (
        "SELECT c.id, COUNT(1), SUM(1), COUNT(COALESCE(o.amt, 0)), MAX(5) \
         FROM c LEFT JOIN o ON c.id = o.cid GROUP BY c.id",
        false,
    ),
    (
        "SELECT c.id, COUNT(1), SUM(2), COUNT(COALESCE(o.amt, 0)) FROM c JOIN o ON c.id = o.cid \
         GROUP BY c.id",
        true,
    ),
];

#[test]
fn aggregates_of_one_side_grouped_by_the_others_key_are_taken_before_the_join() {
    let (_dir, db) = fresh_db("eager-aggregation");
    for engine in ["InnoDB", "COLUMN"] {
        let mut s = db.session("root", "localhost");
        let schema = format!("ea_{}", engine.to_lowercase());
        s.query(&format!("CREATE DATABASE {schema}; USE {schema}"))
            .unwrap();
        load(&mut s, engine);
        for (q, eager) in QUERIES {
            let plan = explain(&mut s, q);
            let early = plan.contains("Group aggregate (hash): o.cid");
            assert_eq!(early, *eager, "{engine}: {q}\n{plan}");
            let kept = q.replace("= o.cid", "= o.cid + 0");
            assert!(
                !explain(&mut s, &kept).contains("Group aggregate (hash): o.cid"),
                "{kept}"
            );
            let (got, want) = (rows(&mut s, q), rows(&mut s, &kept));
            assert!(got.len() > 3, "{engine}: {q}: {got:?}");
            assert_eq!(got, want, "{engine}: {q}");
        }
    }
}
