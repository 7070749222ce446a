//! Where Quarry's limits differ from MariaDB's (each listed in COMPAT.md): past them a
//! statement gets a clear error and changes nothing; it never stores a different value.

mod common;

use common::{fresh_db, rows, texts};

/// DECIMAL holds MariaDB's 65 digits (it held 38, and before that a 50-digit value was
/// stored as 170141183460469231731687303715884105727 without an error). Past 65 digits a
/// value is 1264 and nothing is stored; arithmetic holds 76 digits (MariaDB: 81), and a
/// result past them is 1690, never a changed number. Values are MariaDB 10.11's.
#[test]
fn decimals_hold_65_digits_and_past_that_are_refused_not_corrupted() {
    let (dir, db) = fresh_db("limits-decimal");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE d; USE d; CREATE TABLE t (a DECIMAL(65,0), b DECIMAL(65,30))")
        .unwrap();
    let fifty = "12345678901234567890123456789012345678901234567890";
    for v in [
        fifty.to_string(),
        format!("'{fifty}'"),
        format!("{fifty}e0"),
    ] {
        s.query(&format!("INSERT INTO t VALUES ({v}, 1)")).unwrap();
    }
    let a: Vec<String> = rows(&mut s, "SELECT a FROM t ORDER BY a")
        .iter()
        .map(|r| r[0].to_string())
        .collect();
    assert_eq!(
        a,
        [
            "12345678901234567000000000000000000000000000000000",
            fifty,
            fifty
        ]
    );
    let sixty_six = format!("{fifty}1234567890123456");
    for v in [
        format!("{sixty_six}, 1"),
        format!("'{sixty_six}', 1"),
        "1, 123456789012345678901234567890123456.5".to_string(),
    ] {
        let e = s.query(&format!("INSERT INTO t VALUES ({v})")).unwrap_err();
        assert_eq!(e.code, 1264, "{v}: {}", e.message);
    }
    assert_eq!(
        rows(&mut s, "SELECT count(*) FROM t")[0][0].to_string(),
        "3"
    );
    // Outside strict mode a negative value past the range, whether a decimal holds it
    // (70 digits) or not (a double of 81), is the range's negative end (MariaDB's).
    let seventy = format!("-{}", "9".repeat(70));
    s.query(&format!(
        "SET sql_mode = ''; CREATE TABLE l (b DECIMAL(65,30)); \
         INSERT INTO l VALUES ({seventy}), (CAST('-1e80' AS DOUBLE)); SET sql_mode = DEFAULT"
    ))
    .unwrap();
    let end = format!("-{}.{}", "9".repeat(35), "9".repeat(30));
    assert_eq!(
        texts(&mut s, "SELECT b FROM l"),
        [[end.clone()], [end.clone()]]
    );
    assert_eq!(
        texts(
            &mut s,
            &format!("SELECT CAST({seventy} AS DECIMAL(65,30)), CAST(-1e80 AS DECIMAL(10,2))")
        ),
        [[end, "-99999999.99".to_string()]]
    );
    // 50 digits squared need 99: past the 76 a result holds (MariaDB: 81, also 1690).
    assert_eq!(s.query("SELECT a * a FROM t").unwrap_err().code, 1690);
    // 39 digits squared need 78: a number in MariaDB, 1690 in Quarry (COMPAT.md).
    let nines = "9".repeat(39);
    assert_eq!(
        s.query(&format!("SELECT {nines} * {nines}"))
            .unwrap_err()
            .code,
        1690
    );
    drop(s);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

/// Changes stop while the datadir's disk has less free than `quarry_disk_keep_free`
/// (room for rollbacks, checkpoints and DROP TABLE), with 1021 as a full disk gives, and
/// the refused statement changes nothing; reads go on, and writes resume once the
/// watermark is met. A petabyte is more than this disk has free.
#[test]
fn changes_stop_below_the_disk_watermark_and_resume_above_it() {
    let (dir, db) = fresh_db("limits-keep-free");
    let mut s = db.session("root", "localhost");
    let mut other = db.session("root", "localhost");
    assert_eq!(
        texts(&mut s, "SELECT @@global.quarry_disk_keep_free"),
        [["1073741824"]]
    );
    let e = s
        .query("SET SESSION quarry_disk_keep_free = 0")
        .unwrap_err();
    assert_eq!(e.code, 1229, "{}", e.message);
    for engine in ["InnoDB", "COLUMN"] {
        s.query(&format!(
            "DROP DATABASE IF EXISTS d; CREATE DATABASE d; USE d; \
             CREATE TABLE t (a INT PRIMARY KEY, b VARCHAR(20)) ENGINE={engine}; \
             INSERT INTO t VALUES (1, 'one'), (2, 'two')"
        ))
        .unwrap();
        s.query("BEGIN; INSERT INTO t VALUES (3, 'three')").unwrap();
        other
            .query("SET GLOBAL quarry_disk_keep_free = 1024 * 1024 * 1024 * 1024 * 1024")
            .unwrap();
        for sql in [
            "INSERT INTO t VALUES (4, 'four'), (5, 'five')",
            "UPDATE t SET b = 'changed'",
            "DELETE FROM t WHERE a = 1",
        ] {
            let e = s.query(sql).unwrap_err();
            assert_eq!(e.code, 1021, "{engine}: {sql}: {}", e.message);
            assert!(
                e.message
                    .starts_with("Disk full (1073741824 MiB kept free for rollbacks)"),
                "{}",
                e.message
            );
        }
        // The transaction goes on: its first row stands, the refused statements left
        // nothing, and a ROLLBACK is never refused.
        assert_eq!(
            texts(&mut s, "SELECT a, b FROM t ORDER BY a"),
            [["1", "one"], ["2", "two"], ["3", "three"]],
            "{engine}"
        );
        s.query("ROLLBACK").unwrap();
        assert_eq!(texts(&mut s, "SELECT count(*) FROM t"), [["2"]], "{engine}");
        other.query("SET GLOBAL quarry_disk_keep_free = 0").unwrap();
        s.query("INSERT INTO t VALUES (4, 'four')").unwrap();
        assert_eq!(texts(&mut s, "SELECT count(*) FROM t"), [["3"]], "{engine}");
    }
    drop((s, other, db));
    let _ = std::fs::remove_dir_all(dir);
}
