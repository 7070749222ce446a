//! Runtime filters: a hash join hands its build side's integer keys to the scan feeding
//! its probe side, and a scan its condition's `int_col IN (SELECT …)` subquery's integers.
//! Which joins and conditions filter (`Quarry_runtime_filtered_rows` counts the rows
//! left out), that a column table leaves them out before reading them
//! (`Handler_read_rnd_next`), and that every answer is the one without filters
//! (`quarry_runtime_filters = OFF`) — on column and row tables, through the join below,
//! and under a snapshot that must not see another session's newer keys.

mod common;

use common::{access_of, fill_segments, fresh_db, rows, status};
use quarry_core::Session;

/// A fact table of 3 000 rows in three segments (column tables), the delta and deleted
/// rows, and a dimension of 60 keys in four groups.
fn load(s: &mut Session, engine: &str) {
    s.query(&format!(
        "CREATE TABLE f (id INT, dk INT, v INT) ENGINE={engine}; \
         CREATE TABLE d (dk INT, grp INT) ENGINE={engine}; \
         CREATE TABLE g (fid INT, flag INT) ENGINE={engine}"
    ))
    .unwrap();
    let row = |i: i64| {
        let dk = if i % 13 == 0 {
            "NULL".to_string()
        } else {
            ((i * 7) % 80 - 10).to_string()
        };
        format!("({i}, {dk}, {})", i % 23)
    };
    let segments = [(1, 1000), (1001, 2000), (2001, 3000)];
    fill_segments(s, "f", &segments, 3001..=3020, row);
    s.query("DELETE FROM f WHERE id % 97 = 0").unwrap();
    let dims: Vec<String> = (-5..55)
        .map(|k: i64| format!("({k}, {})", k.rem_euclid(4)))
        .collect();
    s.query(&format!("INSERT INTO d VALUES {}", dims.join(",")))
        .unwrap();
    let gs: Vec<String> = (1..=3020)
        .step_by(7)
        .map(|i| format!("({i}, {})", i % 3))
        .collect();
    s.query(&format!("INSERT INTO g VALUES {}", gs.join(",")))
        .unwrap();
}

/// What one statement did: its rows, the rows filters left out, the rows scans read.
fn run(s: &mut Session, sql: &str, filters: bool) -> (String, i64, i64) {
    s.query(&format!("SET quarry_runtime_filters = {}", filters as u8))
        .unwrap();
    let (dropped, read) = (
        status(s, "Quarry_runtime_filtered_rows"),
        status(s, "Handler_read_rnd_next"),
    );
    let out = format!("{:?}", rows(s, sql));
    (
        out,
        status(s, "Quarry_runtime_filtered_rows") - dropped,
        status(s, "Handler_read_rnd_next") - read,
    )
}

const FILTERED: &[&str] = &[
    // Inner join: the dimension (60 rows, 15 of group 1) is built on.
    "SELECT count(*), sum(f.v) FROM f JOIN d ON f.dk = d.dk WHERE d.grp = 1",
    // Semi joins.
    "SELECT count(*), sum(f.id) FROM f WHERE f.dk IN (SELECT dk FROM d WHERE grp = 2)",
    "SELECT count(*) FROM f WHERE EXISTS (SELECT 1 FROM d WHERE d.dk = f.dk AND d.grp = 3)",
    // Two filters on the fact table: the one of the join above reaches it through the
    // join below.
    "SELECT d.grp, count(*), sum(f.v) FROM f JOIN g ON f.id = g.fid JOIN d ON f.dk = d.dk \
     WHERE d.grp IN (0, 1) AND g.flag = 1 GROUP BY d.grp ORDER BY d.grp",
    // IN subqueries that stay subqueries (they group): the scan's own condition.
    "SELECT count(*), sum(f.v) FROM f WHERE f.dk IN (SELECT dk FROM d GROUP BY dk HAVING min(grp) = 1)",
    "SELECT count(*) FROM f WHERE f.v > 3 AND f.dk IN (SELECT max(dk) FROM d GROUP BY grp)",
];

const UNFILTERED: &[&str] = &[
    // Every fact row comes out whether it matches or not (and a LEFT join is built on its
    // right side, whose rows the left ones probe).
    "SELECT count(*), count(d.dk) FROM f LEFT JOIN d ON f.dk = d.dk AND d.grp = 1",
    "SELECT d.grp, count(*), count(f.id) FROM d LEFT JOIN f ON f.dk = d.dk AND f.v < 5 \
     GROUP BY d.grp ORDER BY d.grp",
    "SELECT count(*) FROM f WHERE NOT EXISTS (SELECT 1 FROM d WHERE d.dk = f.dk AND d.grp = 1)",
    // The probe key is an expression, not a column.
    "SELECT count(*) FROM f JOIN d ON f.dk + 0 = d.dk WHERE d.grp = 1",
    // A row may pass without its key among the subquery's: NOT IN, IN under OR, and
    // values that equal integers without being integers (dk / 1 is a decimal).
    "SELECT count(*) FROM f WHERE f.dk NOT IN (SELECT dk FROM d GROUP BY dk HAVING min(grp) = 1)",
    "SELECT count(*) FROM f WHERE f.v = 3 OR f.dk IN (SELECT dk FROM d GROUP BY dk HAVING min(grp) = 1)",
    "SELECT count(*) FROM f WHERE f.dk IN (SELECT dk / 1 FROM d GROUP BY dk HAVING min(grp) = 1)",
];

#[test]
fn hash_joins_filter_their_probe_scans_and_answer_as_without() {
    let (_dir, db) = fresh_db("runtime-filters");
    let mut s = db.session("root", "localhost");
    for engine in ["COLUMN", "ROW"] {
        s.query(&format!("CREATE DATABASE {engine}_db; USE {engine}_db"))
            .unwrap();
        load(&mut s, engine);
        for sql in FILTERED {
            // Planned first: estimating a pushed condition's rows reads some.
            run(&mut s, sql, true);
            let (on, dropped, read_on) = run(&mut s, sql, true);
            let (off, none, read_off) = run(&mut s, sql, false);
            assert_eq!(on, off, "{engine}: {sql}");
            assert!(dropped > 0, "{engine}: {sql}: nothing filtered");
            assert_eq!(none, 0, "{engine}: {sql}: filtered while OFF");
            if engine == "COLUMN" {
                // Left out on the chunks: never read as rows.
                assert!(
                    read_on < read_off,
                    "{engine}: {sql}: read {read_on} against {read_off}"
                );
            }
        }
        for sql in UNFILTERED {
            let (on, dropped, _) = run(&mut s, sql, true);
            let (off, ..) = run(&mut s, sql, false);
            assert_eq!(on, off, "{engine}: {sql}");
            assert_eq!(dropped, 0, "{engine}: {sql}: filtered");
        }
    }
}

#[test]
fn a_snapshot_keeps_its_keys_under_a_runtime_filter() {
    let (_dir, db) = fresh_db("runtime-filters-snapshot");
    let mut a = db.session("root", "localhost");
    let mut b = db.session("root", "localhost");
    a.query("CREATE DATABASE c; USE c").unwrap();
    b.query("USE c").unwrap();
    load(&mut a, "COLUMN");
    let sql = FILTERED[0];
    let (before, ..) = run(&mut a, sql, true);
    a.query("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        .unwrap();
    a.query("SELECT count(*) FROM f").unwrap();
    // Another session moves fact rows onto and off group 1's keys and adds some.
    b.query("UPDATE f SET dk = 1 WHERE id % 5 = 0").unwrap();
    b.query("UPDATE f SET dk = 2 WHERE id % 7 = 1").unwrap();
    b.query("INSERT INTO f VALUES (5000, 1, 3), (5001, 5, 4)")
        .unwrap();
    let (inside, dropped, _) = run(&mut a, sql, true);
    assert_eq!(inside, before, "the snapshot's answer");
    assert!(dropped > 0);
    a.query("COMMIT").unwrap();
    let (after, ..) = run(&mut a, sql, true);
    let (off, ..) = run(&mut a, sql, false);
    assert_eq!(after, off);
    assert_ne!(after, before, "the newer rows seen after the snapshot");
}

/// An inner join of many outer rows with a column table keyed by the join column is a
/// hash join built on the outer rows, whose keys filter the table's scan, rather than a
/// probe of its key per outer row (TPC-H Q3, Q5, Q9, Q10: the lineitem rows of 150 000
/// orders); a few outer rows still probe the key. Either way the answer is the one the
/// join gives without index or filter.
#[test]
fn many_outer_rows_join_a_column_table_by_a_filtered_scan_few_by_its_key() {
    let (_dir, db) = fresh_db("runtime-filters-plans");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE c; USE c").unwrap();
    s.query("CREATE TABLE o (ok INT PRIMARY KEY, d INT) ENGINE=COLUMN")
        .unwrap();
    s.query("CREATE TABLE l (ok INT, ln INT, q INT, PRIMARY KEY (ok, ln)) ENGINE=COLUMN")
        .unwrap();
    fill_segments(
        &mut s,
        "o",
        &[(1, 10000), (10001, 20000)],
        20001..=20010,
        |i| format!("({i}, {})", (i * 37) % 1000),
    );
    fill_segments(
        &mut s,
        "l",
        &[(0, 39999), (40000, 79999)],
        80000..=80040,
        |i| format!("({}, {}, {})", i / 4 + 1, i % 4, i % 11),
    );
    s.query("DELETE FROM l WHERE ok % 97 = 0").unwrap();
    s.query("ANALYZE TABLE o, l").unwrap();
    let join = |cond: &str, probe: &str| {
        format!("SELECT count(*), sum(l.q), sum(o.ok) FROM o JOIN l ON {probe} = o.ok WHERE {cond}")
    };
    for (cond, access) in [("o.d < 300", "ALL"), ("o.ok < 30", "ref")] {
        let sql = join(cond, "l.ok");
        assert_eq!(access_of(&mut s, &sql, "l").0, access, "{sql}");
        let (got, dropped, _) = run(&mut s, &sql, true);
        // l.ok + 0 neither probes the key nor filters the scan.
        let (want, ..) = run(&mut s, &join(cond, "l.ok + 0"), true);
        assert_eq!(got, want, "{sql}");
        if access == "ALL" {
            assert!(dropped > 0, "{sql}: nothing filtered");
        }
    }
}
