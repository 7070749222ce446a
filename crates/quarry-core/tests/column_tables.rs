//! ENGINE=COLUMN through the embedded API: segments written by bulk loads, what a pushed
//! count reads, prepared statements pushing new constants, and restarts.

mod common;

use common::{fill_segments, fresh_db, rows, status};
use quarry_core::quarry_common::Value;
use quarry_core::{Database, Output, Session};

fn count(s: &mut Session, sql: &str) -> i64 {
    rows(s, sql)[0][0].to_i64()
}

/// 200 000 rows in INSERTs of 10 000: the first a short segment (a first load past an
/// eighth of a segment), two full ones and a remainder; maker '36440' on every 33rd row.
fn load(s: &mut Session) {
    s.query(
        "CREATE TABLE big (Id INT, PZN CHAR(7), Hersteller CHAR(5), Note VARCHAR(40)) ENGINE=COLUMN",
    )
    .unwrap();
    let mut values = Vec::new();
    for chunk in 0..20 {
        values.clear();
        for i in chunk * 10_000..(chunk + 1) * 10_000 {
            let maker = if i % 33 == 0 {
                "36440".to_string()
            } else {
                format!("{:05}", i % 3000)
            };
            values.push(format!(
                "({i}, '{:07}', '{maker}', 'note {i}')",
                i % 300_000
            ));
        }
        s.query(&format!("INSERT INTO big VALUES {}", values.join(",")))
            .unwrap();
    }
}

#[test]
fn bulk_loads_write_segments_and_counts_read_one_column() {
    let (dir, db) = fresh_db("column-segments");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE c; USE c").unwrap();
    load(&mut s);
    let cols = dir.join("c").join("big.cols");
    for f in [
        "Id.column",
        "PZN.column",
        "Hersteller.column",
        "Note.column",
    ] {
        assert!(cols.join(f).exists(), "{f}");
    }
    let maker_bytes = std::fs::metadata(cols.join("Hersteller.column"))
        .unwrap()
        .len();
    let note_bytes = std::fs::metadata(cols.join("Note.column")).unwrap().len();
    assert!(maker_bytes > 0, "multi-row inserts reached segments");
    // Dictionary codes (two bytes per row for 3 000 makers) and a dictionary per segment:
    // well under the nine bytes per row of plain strings with offsets.
    assert!(maker_bytes < 3 * 200_000, "{maker_bytes}");
    let want = (0..200_000).filter(|i| i % 33 == 0).count() as i64;
    let before = status(&mut s, "Quarry_data_read_bytes");
    assert_eq!(
        count(
            &mut s,
            "SELECT count(*) FROM big WHERE Hersteller = '36440'"
        ),
        want
    );
    let read = (status(&mut s, "Quarry_data_read_bytes") - before) as u64;
    assert!(
        read <= maker_bytes && read < note_bytes,
        "a pushed count reads only its column: {read} bytes"
    );
    assert_eq!(
        count(
            &mut s,
            "SELECT count(*) FROM big WHERE Hersteller <> 'ABCDE'"
        ),
        200_000
    );
    // Zone maps: no segment can hold 'ABCDE' (it sorts after every digit string).
    let before = status(&mut s, "Quarry_data_read_calls");
    assert_eq!(
        count(
            &mut s,
            "SELECT count(*) FROM big WHERE Hersteller = 'ABCDE'"
        ),
        0
    );
    assert_eq!(status(&mut s, "Quarry_data_read_calls"), before);
    // Switched off, the executor filters: same answer.
    s.query("SET optimizer_switch = 'engine_condition_pushdown=off'")
        .unwrap();
    assert_eq!(
        count(
            &mut s,
            "SELECT count(*) FROM big WHERE Hersteller = '36440'"
        ),
        want
    );
    s.query("SET optimizer_switch = DEFAULT").unwrap();
    // Late materialisation: the matching rows come back whole.
    let r = rows(
        &mut s,
        "SELECT Id, Note FROM big WHERE Hersteller = '36440' AND Id BETWEEN 60000 AND 60100 ORDER BY Id",
    );
    let ids: Vec<i64> = r.iter().map(|r| r[0].to_i64()).collect();
    assert_eq!(ids, vec![60027, 60060, 60093]);
    assert_eq!(r[0][1], Value::Str("note 60027".into()));
    drop(s);
    drop(db);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn prepared_statements_push_each_executions_constants() {
    let (dir, db) = fresh_db("column-prepared");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE c; USE c").unwrap();
    s.query("CREATE TABLE t (a INT, h CHAR(5)) ENGINE=COLUMN")
        .unwrap();
    s.query("INSERT INTO t VALUES (1, 'x'), (2, 'y'), (3, 'x'), (4, NULL)")
        .unwrap();
    let p = s
        .prepare("SELECT count(*) FROM t WHERE h = ? OR a > ?")
        .unwrap();
    for (h, a, want) in [("x", 10, 2), ("y", 3, 2), ("z", 0, 4), ("z", 4, 0)] {
        let out = s
            .execute(&p, vec![Value::Str(h.into()), Value::Int(a)])
            .unwrap();
        let Output::Rows { rows, .. } = out else {
            panic!("rows expected")
        };
        assert_eq!(rows[0][0].to_i64(), want, "h = {h}, a > {a}");
    }
    drop(s);
    drop(db);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn rows_survive_restarts_after_small_writes_and_merges() {
    let (dir, db) = fresh_db("column-restart");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE c; USE c").unwrap();
    load(&mut s);
    s.query("DELETE FROM big WHERE Id % 1000 = 7").unwrap();
    s.query("UPDATE big SET Note = 'changed' WHERE Id % 50000 = 1")
        .unwrap();
    for i in 0..10 {
        s.query(&format!(
            "INSERT INTO big VALUES ({}, 'x', '36440', 'single')",
            1_000_000 + i
        ))
        .unwrap();
    }
    let total = count(&mut s, "SELECT count(*) FROM big");
    let makers = count(
        &mut s,
        "SELECT count(*) FROM big WHERE Hersteller = '36440'",
    );
    let changed = count(&mut s, "SELECT count(*) FROM big WHERE Note = 'changed'");
    assert_eq!(total, 200_000 - 200 + 10);
    assert_eq!(changed, 4);
    drop(s);
    drop(db);
    let db = Database::open(&dir).unwrap();
    let mut s = db.session("root", "localhost");
    s.query("USE c").unwrap();
    assert_eq!(count(&mut s, "SELECT count(*) FROM big"), total);
    assert_eq!(
        count(
            &mut s,
            "SELECT count(*) FROM big WHERE Hersteller = '36440'"
        ),
        makers
    );
    assert_eq!(
        count(&mut s, "SELECT count(*) FROM big WHERE Note = 'changed'"),
        changed
    );
    // OPTIMIZE merges the delta; the answers stay.
    s.query("OPTIMIZE TABLE big").unwrap();
    assert_eq!(count(&mut s, "SELECT count(*) FROM big"), total);
    let check = rows(&mut s, "CHECK TABLE big");
    assert_eq!(check.last().unwrap()[3], Value::Str("OK".into()));
    drop(s);
    drop(db);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Seed 002's example as written there: a `columnar_storage` comment gives the row table
/// `<table>.cols/Hersteller.column`, and conditions on that column are answered from it.
#[test]
fn columnar_storage_comment_keeps_a_side_file_in_step() {
    let (dir, db) = fresh_db("column-side");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE TestCol; USE TestCol").unwrap();
    s.query(
        "create table TestMyCols1Big (Id char(8), PZN char(7), EVP char(8), HAP char(8), \
         ArtikelBez char(40), ArtikelText varchar(200), Hersteller char(5) comment 'columnar_storage') \
         engine=MYISAM",
    )
    .unwrap();
    let side = dir.join("TestCol/TestMyCols1Big.cols/Hersteller.column");
    assert!(side.exists());
    let mut values = vec![];
    for i in 0..30_000 {
        let maker = if i % 37 == 0 {
            "36440".to_string()
        } else {
            format!("{:05}", i % 1000)
        };
        values.push(format!(
            "('{:08}', '{:06}', '1.00', '2.00', 'ARTIKEL {i}', 'text', '{maker}')",
            1_000_000 + i,
            i % 5000
        ));
    }
    s.query(&format!(
        "INSERT INTO TestMyCols1Big VALUES {}",
        values.join(",")
    ))
    .unwrap();
    // Updates that move records (a longer text), deletes, NULLs.
    s.query("UPDATE TestMyCols1Big SET ArtikelText = REPEAT('y', 150), Hersteller = '36440' WHERE Id LIKE '%5'")
        .unwrap();
    s.query("DELETE FROM TestMyCols1Big WHERE Id LIKE '%7'")
        .unwrap();
    s.query("UPDATE TestMyCols1Big SET Hersteller = NULL WHERE Id LIKE '%1'")
        .unwrap();
    let queries = [
        "select count(*) from TestMyCols1Big where hersteller = '36440'",
        "select count(*) from TestMyCols1Big where hersteller = 'ABCDE'",
        "select count(*) from TestMyCols1Big where hersteller <> 'ABCDE'",
        "select count(*) from TestMyCols1Big where hersteller is null",
        "select count(*), min(Id), max(PZN) from TestMyCols1Big where hersteller = '36440' and PZN < '000500'",
    ];
    let answer = |s: &mut Session, q: &str| rows(s, q);
    let with: Vec<_> = queries.iter().map(|q| answer(&mut s, q)).collect();
    s.query("SET optimizer_switch = 'engine_condition_pushdown=off'")
        .unwrap();
    let without: Vec<_> = queries.iter().map(|q| answer(&mut s, q)).collect();
    s.query("SET optimizer_switch = DEFAULT").unwrap();
    assert_eq!(with, without);
    assert_eq!(with[1][0][0].to_i64(), 0);
    assert!(with[0][0][0].to_i64() > 3000);
    // The selective count reads the side file, not the data file.
    let data_bytes = std::fs::metadata(dir.join("TestCol/TestMyCols1Big.qrd"))
        .unwrap()
        .len() as i64;
    let before = status(&mut s, "Quarry_data_read_bytes");
    answer(&mut s, queries[0]);
    let read = status(&mut s, "Quarry_data_read_bytes") - before;
    assert!(read < data_bytes / 4, "read {read} of {data_bytes}");
    let plan = rows(&mut s, &format!("EXPLAIN {}", queries[0]));
    assert_eq!(
        plan[0][10],
        Value::Str("Using where with pushed condition".into())
    );
    // Rename carries the folder; a restart keeps the answers; CHECK agrees.
    s.query("RENAME TABLE TestMyCols1Big TO T2").unwrap();
    assert!(dir.join("TestCol/T2.cols/Hersteller.column").exists());
    assert!(!side.exists());
    drop(s);
    drop(db);
    let db = Database::open(&dir).unwrap();
    let mut s = db.session("root", "localhost");
    s.query("USE TestCol").unwrap();
    let again: Vec<_> = queries
        .iter()
        .map(|q| answer(&mut s, &q.replace("TestMyCols1Big", "T2")))
        .collect();
    assert_eq!(again, with);
    assert_eq!(
        rows(&mut s, "CHECK TABLE T2").last().unwrap()[3],
        Value::Str("OK".into())
    );
    // ALTER … MODIFY adds the comment to another column: it gets its file.
    s.query("ALTER TABLE T2 MODIFY PZN char(7) COMMENT 'columnar_storage'")
        .unwrap();
    assert!(dir.join("TestCol/T2.cols/PZN.column").exists());
    let pzn = |s: &mut Session| rows(s, "select count(*) from T2 where PZN = '000123'");
    let n = pzn(&mut s);
    s.query("SET optimizer_switch = 'engine_condition_pushdown=off'")
        .unwrap();
    assert_eq!(pzn(&mut s), n);
    s.query("TRUNCATE TABLE T2").unwrap();
    assert_eq!(
        answer(&mut s, "select count(*) from T2 where hersteller <> 'x'")[0][0].to_i64(),
        0
    );
    s.query("DROP TABLE T2").unwrap();
    assert!(!dir.join("TestCol/T2.cols").exists());
    drop(s);
    drop(db);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// UPDATE and DELETE read each row once, in the scan that finds it, not again by id: a
/// column table decoded a chunk of every column for each row read by id, so a DELETE of
/// 200 000 rows with a key took minutes. The unique keys stay right without the rows
/// being read again, and ROLLBACK puts everything back.
#[test]
fn updates_and_deletes_read_rows_once_and_keep_unique_keys() {
    let (dir, db) = fresh_db("column-dml-reads");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE c; USE c").unwrap();
    load(&mut s);
    s.query("CREATE TABLE u (id INT PRIMARY KEY, note VARCHAR(40)) ENGINE=COLUMN")
        .unwrap();
    s.query("INSERT INTO u SELECT Id, Note FROM big").unwrap();
    let by_id = status(&mut s, "Handler_read_rnd");
    let reads = status(&mut s, "Quarry_data_read_calls");
    let affected = |s: &mut Session, sql: &str| match s.query(sql).unwrap().pop() {
        Some(Output::Ok { affected, .. }) => affected,
        _ => panic!("{sql}: no count"),
    };
    assert_eq!(affected(&mut s, "DELETE FROM u WHERE id % 100 = 0"), 2000);
    assert_eq!(
        affected(&mut s, "UPDATE u SET id = id + 1000000 WHERE id % 100 = 1"),
        2000
    );
    assert_eq!(
        status(&mut s, "Handler_read_rnd"),
        by_id,
        "rows read again by id"
    );
    // Each statement scans the table's 4 segments once (2 chunks each).
    let chunk_reads = status(&mut s, "Quarry_data_read_calls") - reads;
    assert!(chunk_reads <= 40, "{chunk_reads} chunk reads");
    let dup = s
        .query("INSERT INTO u VALUES (1000001, 'again')")
        .unwrap_err();
    assert_eq!(dup.code, 1062);
    s.query("INSERT INTO u VALUES (1, 'moved away'), (100, 'deleted')")
        .unwrap();
    s.query("DELETE FROM u WHERE id IN (1, 100)").unwrap();
    let before = rows(&mut s, "SELECT count(*), sum(id), max(note) FROM u");
    s.query("BEGIN").unwrap();
    s.query("DELETE FROM u WHERE id % 3 = 0").unwrap();
    s.query("UPDATE u SET id = -id, note = 'x' WHERE id % 3 = 1")
        .unwrap();
    s.query("ROLLBACK").unwrap();
    assert_eq!(
        rows(&mut s, "SELECT count(*), sum(id), max(note) FROM u"),
        before
    );
    let dup = s.query("INSERT INTO u VALUES (3, 'dup')").unwrap_err();
    assert_eq!(dup.code, 1062, "the key of a row put back is kept");
    s.query("INSERT INTO u VALUES (-4, 'new')").unwrap();
    let check = rows(&mut s, "CHECK TABLE u");
    assert_eq!(check.last().unwrap()[3], Value::Str("OK".into()));
    drop(s);
    drop(db);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `SUBSTRING(c, 1, n) IN (…)` over a general_ci column is read by the column engine as
/// `c LIKE '…%' OR …` (TPC-H Q22's country codes): pushed, with the answers the executor
/// gives itself (`engine_condition_pushdown=off`); a binary collation, or an item that
/// ends in a space or is not `n` characters long, stays with the executor.
#[test]
fn leading_characters_in_a_list_are_pushed_as_like() {
    let (_dir, db) = fresh_db("col-leading");
    let mut s = db.session("root", "localhost");
    s.query(
        "CREATE DATABASE d; USE d; CREATE TABLE p (id INT, s VARCHAR(20), \
         b VARCHAR(20) COLLATE utf8mb4_bin) ENGINE=COLUMN",
    )
    .unwrap();
    let values: Vec<String> = (0..3000)
        .map(|i| {
            let v = ["13-x", "ab", "AB-1", "a", "a ", "%x", "éa", "ea", "1"][i % 9];
            format!("({i}, '{v}', '{v}')")
        })
        .collect();
    s.query(&format!("INSERT INTO p VALUES {}", values.join(",")))
        .unwrap();
    let extra = |s: &mut Session, q: &str| rows(s, &format!("EXPLAIN {q}"))[0][10].to_string();
    for (q, pushed) in [
        (
            "SELECT count(*) FROM p WHERE SUBSTRING(s, 1, 2) IN ('13', 'ab', 'EA')",
            true,
        ),
        (
            "SELECT count(*) FROM p WHERE LEFT(s, 2) NOT IN ('%x', 'ab')",
            true,
        ),
        (
            "SELECT count(*) FROM p WHERE SUBSTRING(b, 1, 2) IN ('13', 'ab')",
            false,
        ),
        (
            "SELECT count(*) FROM p WHERE SUBSTRING(s, 1, 2) IN ('a ', 'ab')",
            false,
        ),
        (
            "SELECT count(*) FROM p WHERE SUBSTRING(s, 1, 2) IN ('a', 'ab')",
            false,
        ),
    ] {
        let with = rows(&mut s, q);
        let how = extra(&mut s, q);
        assert_eq!(how.contains("pushed condition"), pushed, "{q}: {how}");
        s.query("SET optimizer_switch = 'engine_condition_pushdown=off'")
            .unwrap();
        assert_eq!(with, rows(&mut s, q), "{q}");
        s.query("SET optimizer_switch = DEFAULT").unwrap();
    }
    assert_eq!(
        rows(
            &mut s,
            "SELECT count(*) FROM p WHERE SUBSTRING(s, 1, 2) IN ('13', 'ab', 'EA')"
        )[0][0]
            .to_i64(),
        // '13-x', 'ab', 'AB-1', 'éa', 'ea' (accents and case folded).
        (0..3000)
            .filter(|i| [0, 1, 2, 6, 7].contains(&(i % 9)))
            .count() as i64
    );
}

/// GROUP BY one integer column inside the engine (keyed by the stored integer in each
/// segment, merged across segments by value): signed and unsigned columns, NULL keys,
/// rows in two segments and the delta, deleted rows; the groups and counts are those of
/// the executor's grouping of the same values (`k + 0` is not grouped in the engine).
#[test]
fn integer_groups_in_the_engine_are_the_executors() {
    let (_dir, db) = fresh_db("column-int-groups");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE t; USE t").unwrap();
    s.query("CREATE TABLE g (id INT, k BIGINT, u INT UNSIGNED, v INT) ENGINE=COLUMN")
        .unwrap();
    // Every n-th row NULL in a column.
    let value = |i: i64, n: i64, v: i64| {
        if i % n == 0 {
            "NULL".to_string()
        } else {
            v.to_string()
        }
    };
    let row = |i: i64| {
        format!(
            "({i}, {}, {}, {})",
            value(i, 17, (i * 31) % 700 - 200),
            value(i, 19, (i * 7) % 90),
            value(i, 5, i % 11)
        )
    };
    fill_segments(&mut s, "g", &[(1, 3000), (3001, 6000)], 6001..=6040, row);
    s.query("DELETE FROM g WHERE id % 97 = 0").unwrap();
    for col in ["k", "u"] {
        let q = |key: &str| {
            format!(
                "SELECT {key}, COUNT(*), COUNT(v), MIN(v), MAX(id) FROM g WHERE id BETWEEN 2 AND 6030 \
                 GROUP BY {key} ORDER BY 1"
            )
        };
        let engine = rows(&mut s, &q(col));
        let executor = rows(&mut s, &q(&format!("{col} + 0")));
        assert!(engine.len() > 80, "{col}: {} groups", engine.len());
        assert_eq!(engine, executor, "{col}");
    }
}
