//! Aggregates over COLUMN tables on column vectors (the vectorised executor): which
//! statements take that path (`Quarry_vector_rows` counts their rows), that their answers
//! are those of the row-at-a-time path (`quarry_vector_execution = OFF`), and that what the
//! vectors cannot answer exactly — a sum past 128 bits, an error, a snapshot that must not
//! see the newest rows — is answered by rows.

mod common;

use common::{fill_segments, fresh_db, rows, status};
use quarry_core::Session;

fn load(s: &mut Session) {
    load_in(s, "COLUMN")
}

fn load_in(s: &mut Session, engine: &str) {
    s.query(&format!(
        "CREATE TABLE v (id INT, g VARCHAR(8), u VARCHAR(12), k INT, d DECIMAL(10,2), \
         f DOUBLE, w DECIMAL(38,0), dt DATE) ENGINE={engine}"
    ))
    .unwrap();
    let row = |i: i64| {
        let g = ["'a'", "'A'", "'b'", "NULL", "'c'"][i as usize % 5];
        let k = if i % 7 == 0 {
            "NULL".to_string()
        } else {
            ((i * 37) % 23 - 11).to_string()
        };
        let d = if i % 11 == 0 {
            "NULL".to_string()
        } else {
            format!("{}.{:02}", (i * 13) % 50 - 25, (i * 7) % 100)
        };
        format!(
            "({i}, {g}, 'u{:03}', {k}, {d}, {}, {}, '1994-{:02}-{:02}')",
            i % 17,
            (i % 9) as f64 * 0.1 - 0.35,
            if i % 4 == 0 {
                format!("9{:037}", i)
            } else {
                (-i).to_string()
            },
            1 + i % 12,
            1 + i % 28
        )
    };
    // Segments from bulk inserts (read by one thread each on more than one core, so the
    // runs' groups and states are merged), the delta from single rows, deleted rows.
    // The group 'c' first turns up in the second segment.
    let first_segment_skips = |i: i64| {
        if i < 1001 && i % 5 == 4 {
            row(i + 1)
        } else {
            row(i)
        }
    };
    let segments = [(1, 1000), (1001, 2000), (2001, 3000)];
    fill_segments(s, "v", &segments, 3001..=3020, first_segment_skips);
    s.query("DELETE FROM v WHERE id % 97 = 0 OR id = 3005")
        .unwrap();
}

/// The rows of `sql` with vectors (which must read rows as vectors exactly when
/// `vectors`) and without (which must not), checked equal.
fn both_ways(s: &mut Session, sql: &str, vectors: bool) -> String {
    s.query("SET quarry_vector_execution = ON").unwrap();
    let before = status(s, "Quarry_vector_rows");
    let on = format!("{:?}", rows(s, sql));
    let after = status(s, "Quarry_vector_rows");
    assert_eq!(after > before, vectors, "{sql}: vectors used");
    s.query("SET quarry_vector_execution = OFF").unwrap();
    let off = format!("{:?}", rows(s, sql));
    assert_eq!(
        status(s, "Quarry_vector_rows"),
        after,
        "{sql}: OFF used vectors"
    );
    assert_eq!(on, off, "{sql}");
    on
}

#[test]
fn aggregates_over_column_tables_run_on_vectors_and_answer_as_rows_do() {
    let (_dir, db) = fresh_db("vector-aggregates");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE c; USE c").unwrap();
    load(&mut s);
    let aggs = "COUNT(*), COUNT(k), COUNT(d), SUM(k), AVG(k), SUM(d), AVG(d), MIN(d), MAX(d), \
                SUM(k * (1 - d)), AVG(d - 0.005), MIN(-k), MAX(k + 1), SUM(f), MIN(f), \
                MAX(f), SUM(f * d), MAX(w)";
    for (sql, vectors) in [
        (format!("SELECT g, {aggs} FROM v GROUP BY g"), true),
        (format!("SELECT {aggs} FROM v"), true),
        (
            format!("SELECT g, {aggs} FROM v WHERE d > 0 GROUP BY g"),
            true,
        ),
        (
            format!("SELECT {aggs} FROM v WHERE dt BETWEEN '1994-03-01' AND '1994-06-30'"),
            true,
        ),
        (
            "SELECT u, g, COUNT(*), SUM(d) FROM v GROUP BY u, g".into(),
            true,
        ),
        ("SELECT k, COUNT(*), SUM(d) FROM v GROUP BY k".into(), true),
        (
            "SELECT g, id, u, COUNT(*) FROM v WHERE id > 100 GROUP BY g".into(),
            true,
        ),
        (
            "SELECT g, SUM(d) FROM v WHERE k > 10 GROUP BY g".into(),
            true,
        ),
        ("SELECT SUM(d), MAX(f) FROM v WHERE k > 10".into(), true),
        // No rows pass: nothing counted, but the answers (no group; one row of NULLs and
        // a zero count) must still agree.
        (
            "SELECT g, SUM(d) FROM v WHERE k > 100 GROUP BY g".into(),
            false,
        ),
        (
            "SELECT SUM(d), MAX(f), COUNT(k) FROM v WHERE k > 100".into(),
            false,
        ),
        // A condition the executor checks: the scan's rows turned into vectors.
        (
            "SELECT g, SUM(d) FROM v WHERE k + 1 > 3 GROUP BY g".into(),
            true,
        ),
        // Not vectors: a date's MIN (no date vectors yet), DISTINCT, an expression the
        // kernels do not compile, a group under a collation of its own (its key is
        // computed per row).
        (
            "SELECT g COLLATE utf8mb4_bin, COUNT(*) FROM v GROUP BY g COLLATE utf8mb4_bin".into(),
            false,
        ),
        ("SELECT g, MIN(dt) FROM v GROUP BY g".into(), false),
        (
            "SELECT g, COUNT(DISTINCT k) FROM v GROUP BY g".into(),
            false,
        ),
        ("SELECT g, SUM(d / 3) FROM v GROUP BY g".into(), false),
    ] {
        both_ways(&mut s, &sql, vectors);
    }
    // Groups as the row path makes them: 'a' and 'A' one group under the default
    // collation.
    assert_eq!(
        rows(
            &mut s,
            "SELECT COUNT(*) FROM (SELECT g FROM v GROUP BY g) x"
        )[0][0]
            .to_i64(),
        4
    );
}

#[test]
fn what_vectors_cannot_answer_exactly_is_answered_by_rows() {
    let (_dir, db) = fresh_db("vector-fallbacks");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE c; USE c").unwrap();
    load(&mut s);
    // SUM(w) of a group passes 128 bits when five of 9e37 meet: every group here.
    let sums = both_ways(
        &mut s,
        "SELECT g, SUM(w) FROM v WHERE id <= 100 GROUP BY g",
        false,
    );
    assert!(
        sums.contains("449999999999999999999999999999999999"),
        "{sums}"
    );
    // A product past BIGINT is the row path's error 1690, with either setting.
    s.query("CREATE TABLE big (b BIGINT) ENGINE=COLUMN")
        .unwrap();
    s.query("INSERT INTO big VALUES (1), (9223372036854775000), (2)")
        .unwrap();
    for on in ["ON", "OFF"] {
        s.query(&format!("SET quarry_vector_execution = {on}"))
            .unwrap();
        let e = s.query("SELECT SUM(b * 10) FROM big").unwrap_err();
        assert_eq!(e.code, 1690, "{on}: {e}");
        assert!(
            e.to_string().contains("BIGINT value is out of range"),
            "{e}"
        );
    }
}

#[test]
fn a_snapshot_that_must_not_see_the_newest_rows_reads_rows() {
    for engine in ["COLUMN", "ROW"] {
        snapshot_reads_rows(engine);
    }
}

fn snapshot_reads_rows(engine: &str) {
    let (_dir, db) = fresh_db(&format!("vector-snapshots-{engine}"));
    let mut a = db.session("root", "localhost");
    let mut b = db.session("root", "localhost");
    a.query("CREATE DATABASE c; USE c").unwrap();
    b.query("USE c").unwrap();
    load_in(&mut a, engine);
    // A condition the row engine checks while it makes vectors, too.
    let sum = "SELECT SUM(k), COUNT(*), SUM(d) FROM v WHERE id < 2500";
    a.query("BEGIN").unwrap();
    let first = format!("{:?}", rows(&mut a, sum));
    b.query("UPDATE v SET k = k + 1, d = d * 2 WHERE id < 500")
        .unwrap();
    b.query("INSERT INTO v (id, k, d) VALUES (9999, 1000, 1.00)")
        .unwrap();
    // The engine's newest rows are not this snapshot's: the scan's rows, as the row path
    // reads them, are what is aggregated.
    assert_eq!(format!("{:?}", rows(&mut a, sum)), first, "repeatable read");
    a.query("COMMIT").unwrap();
    let now = format!("{:?}", rows(&mut a, sum));
    assert_ne!(now, first);
    a.query("SET quarry_vector_execution = OFF").unwrap();
    assert_eq!(format!("{:?}", rows(&mut a, sum)), now);
}

#[test]
fn groups_of_a_clustered_key_close_as_the_scan_passes_them() {
    let (_dir, db) = fresh_db("vector-clustered");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE c; USE c").unwrap();
    s.query("CREATE TABLE o (k INT, q DECIMAL(6,2), n INT) ENGINE=COLUMN")
        .unwrap();
    // Three segments of keys in increasing order, three rows a key; each segment after
    // the first starts with the one before's last key (the last two are read by different
    // threads on two cores).
    let mut k = 0;
    for seg in 0..3 {
        if seg > 0 {
            k -= 1;
        }
        let rows: Vec<String> = (0..1500)
            .map(|i| {
                if i % 3 == 0 {
                    k += 1;
                }
                format!("({k}, {}.{:02}, {})", i % 50, i % 100, i % 7)
            })
            .collect();
        s.query(&format!("INSERT INTO o VALUES {}", rows.join(",")))
            .unwrap();
        s.query("OPTIMIZE TABLE o").unwrap();
    }
    // A buffer of a few groups: only closing them keeps the aggregation on vectors.
    s.query("SET tmp_table_size = 1024").unwrap();
    let q = "SELECT k, SUM(q), COUNT(*), MAX(n) FROM o GROUP BY k";
    both_ways(&mut s, q, true);
    let groups = rows(&mut s, q);
    assert_eq!(groups.len(), 1498);
    for key in [500, 999] {
        let spanning = groups.iter().find(|r| r[0].to_i64() == key).unwrap();
        assert_eq!(
            spanning[2].to_i64(),
            6,
            "{key} spans two segments: one group"
        );
    }
    both_ways(
        &mut s,
        "SELECT k FROM o GROUP BY k HAVING SUM(q) > 60",
        true,
    );
    // A smaller key after groups were closed may be one of them: rows answer.
    s.query("INSERT INTO o VALUES (7, 1.00, 1)").unwrap();
    both_ways(&mut s, q, false);
    s.query("DELETE FROM o WHERE k = 7 AND n = 1 AND q = 1.00")
        .unwrap();
    // Keys out of order from the start never close (and here pass the buffer).
    s.query("CREATE TABLE d (k INT, q DECIMAL(6,2)) ENGINE=COLUMN")
        .unwrap();
    let rows: Vec<String> = (0..500).map(|i| format!("({}, 1.50)", 1000 - i)).collect();
    s.query(&format!("INSERT INTO d VALUES {}", rows.join(",")))
        .unwrap();
    both_ways(&mut s, "SELECT k, SUM(q) FROM d GROUP BY k", false);
    s.query("SET tmp_table_size = DEFAULT").unwrap();
    both_ways(&mut s, "SELECT k, SUM(q) FROM d GROUP BY k", true);
}

/// Runs read on several cores may each hold the whole buffer: scattered keys whose groups
/// fit it, but not a share of it per run, stay on vectors.
#[test]
fn parallel_runs_each_may_hold_the_whole_buffer() {
    let (_dir, db) = fresh_db("vector-runs");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE c; USE c").unwrap();
    s.query("CREATE TABLE o (k INT, q DECIMAL(6,2)) ENGINE=COLUMN")
        .unwrap();
    // Two segments (a run each on two cores), every key in both, out of order.
    for seg in 0..2 {
        let rows: Vec<String> = (0..1000)
            .map(|i| format!("({}, {}.{:02})", (i * 37 + seg) % 200, i % 50, i % 100))
            .collect();
        s.query(&format!("INSERT INTO o VALUES {}", rows.join(",")))
            .unwrap();
        s.query("OPTIMIZE TABLE o").unwrap();
    }
    // 200 groups of one SUM count as 200 × (82 + 32) = 22 800 bytes.
    let q = "SELECT k, SUM(q) FROM o GROUP BY k";
    s.query("SET tmp_table_size = 30000").unwrap();
    both_ways(&mut s, q, true);
    assert_eq!(rows(&mut s, q).len(), 200);
    s.query("SET tmp_table_size = 20000").unwrap();
    both_ways(&mut s, q, false);
    // Keys in increasing order, each run under the buffer and the two together over it:
    // once every row is in, the groups are final and only the last counts.
    s.query("CREATE TABLE p (k INT, q DECIMAL(6,2)) ENGINE=COLUMN")
        .unwrap();
    for seg in 0..2 {
        let rows: Vec<String> = (0..1000)
            .map(|i| format!("({}, {}.{:02})", seg * 200 + i / 5, i % 50, i % 100))
            .collect();
        s.query(&format!("INSERT INTO p VALUES {}", rows.join(",")))
            .unwrap();
        s.query("OPTIMIZE TABLE p").unwrap();
    }
    s.query("SET tmp_table_size = 30000").unwrap();
    let q = "SELECT k, SUM(q) FROM p GROUP BY k";
    both_ways(&mut s, q, true);
    assert_eq!(rows(&mut s, q).len(), 400);
    s.query("SET tmp_table_size = DEFAULT").unwrap();
}

#[test]
fn row_tables_aggregate_their_rows_on_vectors() {
    let (_dir, db) = fresh_db("vector-row-tables");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE c; USE c").unwrap();
    load_in(&mut s, "ROW");
    for (sql, vectors) in [
        (
            "SELECT g, COUNT(*), SUM(k), AVG(d), MIN(f), MAX(d * (1 - d)) FROM v GROUP BY g",
            true,
        ),
        (
            "SELECT SUM(d), COUNT(k) FROM v WHERE dt < '1994-06-01' AND d > 1.5",
            true,
        ),
        (
            "SELECT k, SUM(d) FROM v WHERE id BETWEEN 10 AND 900 GROUP BY k",
            true,
        ),
        ("SELECT g, SUM(f) FROM v GROUP BY g", true),
        (
            "SELECT g, COUNT(*), SUM(d) FROM v WHERE u NOT LIKE '%1%' AND g LIKE 'a%' GROUP BY g",
            true,
        ),
        ("SELECT g, SUM(w) FROM v WHERE id <= 100 GROUP BY g", false),
    ] {
        both_ways(&mut s, sql, vectors);
    }
    // LIKE goes to the engine, checked before rows are decoded, and answers as the
    // executor's LIKE.
    let like =
        "SELECT g, COUNT(*), SUM(d) FROM v WHERE u NOT LIKE '%1%' AND g LIKE 'a%' GROUP BY g";
    let pushed = both_ways(&mut s, like, true);
    s.query("SET optimizer_switch = 'engine_condition_pushdown=off'")
        .unwrap();
    assert_eq!(format!("{:?}", rows(&mut s, like)), pushed);
    s.query("SET optimizer_switch = 'engine_condition_pushdown=on'")
        .unwrap();
    // A scan hands over a batch every 65 536 records however few rows passed: an empty
    // one first, then the rows at the end.
    s.query("CREATE TABLE n (id INT, d DECIMAL(6,2)) ENGINE=ROW")
        .unwrap();
    s.query("INSERT INTO n VALUES (1, 0.50), (2, 1.25)")
        .unwrap();
    for _ in 0..16 {
        s.query("INSERT INTO n SELECT id + (SELECT MAX(id) FROM n), d FROM n")
            .unwrap();
    }
    let tail = both_ways(
        &mut s,
        "SELECT COUNT(d), SUM(d) FROM n WHERE id > 131000",
        true,
    );
    assert_eq!(
        tail,
        "[[Int(72), Decimal(Decimal { mantissa: 6300, scale: 2 })]]"
    );
    both_ways(&mut s, "SELECT SUM(d) FROM n WHERE id < 0", false);
    // A condition that warns, then more groups than the buffer holds: the row path starts
    // over, and the warnings are its own, not twice.
    s.query("SET tmp_table_size = 1024").unwrap();
    let w = both_ways(
        &mut s,
        "SELECT id, u, SUM(d) FROM v WHERE id > 30 OR k / 0 IS NULL GROUP BY id, u",
        false,
    );
    assert!(!w.is_empty());
    s.query("SET quarry_vector_execution = ON").unwrap();
    rows(
        &mut s,
        "SELECT id, u, SUM(d) FROM v WHERE id > 30 OR k / 0 IS NULL GROUP BY id, u",
    );
    let warnings = rows(&mut s, "SHOW WARNINGS");
    // One per row of id 30 or less with a k (NULL / 0 warns of nothing), once.
    assert_eq!(warnings.len(), 27, "{warnings:?}");
}
