//! A CTE the statement reads more than once runs once: EXPLAIN ANALYZE shows one run of
//! its scan and the other read handed its rows (loops=0 under it), and a subquery reading
//! it beside the main read adds no second aggregation. One whose rows could differ
//! between runs (RAND()), and one past `tmp_table_size`, run at each read. The answers
//! are checked against MariaDB's in tests/slt/cte_shared.slt; this checks the runs.

mod common;

use common::{fresh_db, lines, rows, status};
use quarry_core::Session;

/// The `loops=` of each line of EXPLAIN ANALYZE `sql` that contains `node`.
fn loops(s: &mut Session, sql: &str, node: &str) -> Vec<u64> {
    let out = rows(s, &format!("EXPLAIN ANALYZE {sql}"))[0][0].to_string();
    out.lines()
        .filter(|l| l.contains(node))
        .map(|l| {
            let at = l.rfind("loops=").unwrap_or_else(|| panic!("{out}"));
            l[at + 6..].trim_end_matches(')').parse().unwrap()
        })
        .collect()
}

#[test]
fn a_cte_read_twice_runs_once() {
    let (_dir, db) = fresh_db("shared-ctes");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE d; USE d; CREATE TABLE t1 (a INT, b INT)")
        .unwrap();
    s.query("INSERT INTO t1 VALUES (1, 10), (2, 20), (3, 30), (4, NULL)")
        .unwrap();
    let join = "WITH c AS (SELECT a, b FROM t1) \
                SELECT x.a, y.b FROM c x JOIN c y ON x.a = y.a WHERE x.b > 10";
    let mut runs = loops(&mut s, join, "Table scan on t1");
    runs.sort();
    assert_eq!(
        runs,
        [0, 1],
        "one read runs the query, the other is handed its rows"
    );
    // Q15's shape: the maximum over it, in a subquery, and its rows.
    let q15 = "WITH r AS (SELECT a, SUM(b) AS total FROM t1 GROUP BY a) \
               SELECT a, total FROM r WHERE total = (SELECT MAX(total) FROM r)";
    // The subquery's plan is not printed: its aggregate is counted instead (t1's four
    // rows once, not twice).
    let before = status(&mut s, "Quarry_vector_rows");
    assert_eq!(lines(&mut s, q15), ["3 30"]);
    assert_eq!(status(&mut s, "Quarry_vector_rows") - before, 4);
    // RAND() in it: each read runs it.
    let rand = "WITH c AS (SELECT a, b + RAND() AS b FROM t1) \
                SELECT x.a FROM c x JOIN c y ON x.a = y.a";
    assert_eq!(loops(&mut s, rand, "Table scan on t1"), [1, 1]);
    // Read once: not materialised.
    assert!(loops(
        &mut s,
        "WITH c AS (SELECT a FROM t1) SELECT * FROM c",
        "Materialize"
    )
    .is_empty());
    // Past tmp_table_size: each read runs it.
    s.query("CREATE TABLE big (id INT, s VARCHAR(100))")
        .unwrap();
    s.query(
        "INSERT INTO big WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n \
         WHERE i < 500) SELECT i, REPEAT('x', 100) FROM n",
    )
    .unwrap();
    s.query("SET SESSION tmp_table_size = 1024").unwrap();
    let big = "WITH c AS (SELECT id, s FROM big) \
               SELECT COUNT(*) FROM c x JOIN c y ON x.id = y.id";
    assert_eq!(loops(&mut s, big, "Table scan on big"), [1, 1]);
    s.query("SET SESSION tmp_table_size = DEFAULT").unwrap();
    let mut runs = loops(&mut s, big, "Table scan on big");
    runs.sort();
    assert_eq!(runs, [0, 1]);
}
