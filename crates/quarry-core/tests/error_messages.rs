//! Errors 1054 and 1052 name the clause the column was not found (or was ambiguous) in,
//! as MariaDB 10.11 does ('WHERE', 'ON', 'ORDER BY', …; Quarry said 'field list' for all).
//! Every expected text is MariaDB 10.11.19's.

mod common;

use common::fresh_db;

#[test]
fn unknown_and_ambiguous_columns_name_their_clause() {
    let (dir, db) = fresh_db("clause-errors");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE d; USE d; CREATE TABLE dm1 (pk INT PRIMARY KEY, i INT, b BIGINT)")
        .unwrap();
    for (sql, want) in [
        (
            "select pk from dm1 order by 5",
            "Unknown column '5' in 'ORDER BY'",
        ),
        (
            "insert into dm1 (pk) values (1) on duplicate key update nope = 1",
            "Unknown column 'nope' in 'UPDATE'",
        ),
        (
            "insert into dm1 (pk) values (1) on duplicate key update i = nope",
            "Unknown column 'nope' in 'SELECT'",
        ),
        (
            "delete from dm1 where nope = 1",
            "Unknown column 'nope' in 'WHERE'",
        ),
        (
            "delete from dm1 order by nope",
            "Unknown column 'nope' in 'ORDER BY'",
        ),
        (
            "update dm1 set i = 1 where nope = 1",
            "Unknown column 'nope' in 'WHERE'",
        ),
        ("update dm1 set nope = 1", "Unknown column 'nope' in 'SET'"),
        ("update dm1 set i = nope", "Unknown column 'nope' in 'SET'"),
        (
            "select (select nope) from dm1",
            "Unknown column 'nope' in 'SELECT'",
        ),
        (
            "select 1 from dm1 where exists (select 1 from dm1 x where x.nope = 1)",
            "Unknown column 'x.nope' in 'WHERE'",
        ),
        (
            "select pk from dm1 where pk in (select nope from dm1)",
            "Unknown column 'nope' in 'SELECT'",
        ),
        (
            "select pk from dm1 x, dm1 y",
            "Column 'pk' in SELECT is ambiguous",
        ),
        (
            "select 1 from dm1 x, dm1 y where pk = 1",
            "Column 'pk' in WHERE is ambiguous",
        ),
        (
            "select 1 from dm1 x, dm1 y order by pk",
            "Column 'pk' in ORDER BY is ambiguous",
        ),
        (
            "select 1 from dm1 x join dm1 y on pk = 1",
            "Column 'pk' in ON is ambiguous",
        ),
        (
            "select sum(nope) from dm1",
            "Unknown column 'nope' in 'SELECT'",
        ),
        (
            "select 1 from dm1 group by pk having nope > 1",
            "Unknown column 'nope' in 'HAVING'",
        ),
        (
            "insert into dm1 (pk, i) select nope, 1 from dm1",
            "Unknown column 'nope' in 'SELECT'",
        ),
        (
            "insert into dm1 set nope = 1",
            "Unknown column 'nope' in 'INSERT INTO'",
        ),
        (
            "insert into dm1 set pk = nope",
            "Unknown column 'nope' in 'VALUES'",
        ),
        (
            "insert into dm1 (nope) values (1)",
            "Unknown column 'nope' in 'INSERT INTO'",
        ),
        (
            "insert into dm1 values (nope, 1, 1)",
            "Unknown column 'nope' in 'VALUES'",
        ),
        (
            "insert into dm1 (pk) values (1) returning nope",
            "Unknown column 'nope' in 'RETURNING'",
        ),
        (
            "create table c2 (a int, check (nope > 1))",
            "Unknown column 'nope' in 'CHECK'",
        ),
    ] {
        let e = s.query(sql).unwrap_err();
        assert_eq!(e.message, want, "{sql}");
    }
    drop(dir);
}

/// SHOW COUNT(*) ERRORS names its column @@session.error_count (it said warning_count),
/// SHOW COUNT(*) WARNINGS @@session.warning_count: MariaDB 10.11.19's headings.
#[test]
fn show_count_names_its_column() {
    let (_dir, db) = fresh_db("show-count");
    let mut s = db.session("root", "localhost");
    assert!(s.query("SELECT nosuch").is_err());
    for (sql, want) in [
        ("SHOW COUNT(*) ERRORS", "@@session.error_count"),
        ("SHOW COUNT(*) WARNINGS", "@@session.warning_count"),
    ] {
        match s.query(sql).unwrap().pop().unwrap() {
            quarry_core::Output::Rows { columns, rows } => {
                assert_eq!(columns[0].name, want, "{sql}");
                assert_eq!(rows[0][0].to_string(), "1", "{sql}");
            }
            other => panic!("{sql}: {other:?}"),
        }
    }
}
