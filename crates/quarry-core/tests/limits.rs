//! Where Quarry's limits differ from MariaDB's (each listed in COMPAT.md): past them a
//! statement gets a clear error and changes nothing; it never stores a different value.

mod common;

use common::{fresh_db, rows};

/// DECIMAL holds 38 digits (MariaDB: 65). A 50-digit value used to be stored as
/// 170141183460469231731687303715884105727 (the mantissa saturated) without an error.
#[test]
fn decimals_past_38_digits_are_refused_not_corrupted() {
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
        let e = s
            .query(&format!("INSERT INTO t VALUES ({v}, 1)"))
            .unwrap_err();
        assert_eq!(e.code, 1264, "{v}: {}", e.message);
    }
    assert_eq!(
        rows(&mut s, "SELECT count(*) FROM t")[0][0].to_string(),
        "0"
    );
    s.query("INSERT INTO t VALUES (99999999999999999999999999999999999999, 0)")
        .unwrap();
    assert_eq!(s.query("SELECT a * 10 FROM t").unwrap_err().code, 1690);
    assert_eq!(s.query("SELECT a + 0.5 FROM t").unwrap_err().code, 1690);
    drop(s);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}
