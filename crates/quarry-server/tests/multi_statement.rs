//! Several statements in one COM_QUERY, answered as MariaDB 10.11 answers them.

mod common;

use common::{Raw, Running};

/// Each statement's reply goes out in turn, flagged "more results" until the last, with
/// sequence ids running on across them; an error ends the text there. The replies before
/// the error used to be dropped (the client saw only the error, though the statements
/// before it had run and committed), and nothing was sent until the whole text had run.
#[test]
fn a_multi_statement_text_replies_statement_by_statement() {
    let running = Running::start("multi-stmt", &[]);
    let mut c = Raw::login(running.port);
    assert_eq!(c.query_rows(b"CREATE DATABASE m"), Ok(vec![]));
    assert_eq!(c.query_rows(b"CREATE TABLE m.t (a INT)"), Ok(vec![]));

    let mut p = vec![3];
    p.extend_from_slice(
        b"INSERT INTO m.t VALUES (1), (2); SELECT a FROM m.t ORDER BY a; \
          SELECT nosuch FROM m.t; INSERT INTO m.t VALUES (3)",
    );
    c.send(0, &p);
    let mut seqs = vec![];
    let mut next = |c: &mut Raw| {
        let (s, p) = c.read().expect("packet");
        seqs.push(s);
        p
    };
    let more = |status: &[u8]| u16::from_le_bytes([status[0], status[1]]) & 8 != 0;
    // INSERT: OK, 2 rows, more results follow.
    let ok = next(&mut c);
    assert_eq!(&ok[..3], &[0, 2, 0]);
    assert!(more(&ok[3..5]));
    // SELECT: one column, its definition, EOF, rows 1 and 2, EOF with more results.
    assert_eq!(next(&mut c), [1]);
    next(&mut c);
    assert_eq!(next(&mut c)[0], 0xfe);
    assert_eq!(next(&mut c), b"\x011");
    assert_eq!(next(&mut c), b"\x012");
    let eof = next(&mut c);
    assert_eq!(eof[0], 0xfe);
    assert!(more(&eof[3..5]));
    // The third fails: its error ends the reply.
    let err = next(&mut c);
    assert_eq!(err[0], 0xff);
    assert_eq!(u16::from_le_bytes([err[1], err[2]]), 1054);
    assert_eq!(seqs, (1..=seqs.len() as u8).collect::<Vec<_>>());

    // The fourth never ran; the first did.
    let rows = c.query_rows(b"SELECT count(*) FROM m.t").unwrap();
    assert_eq!(rows, [b"\x012".to_vec()]);
}

/// A statement of nothing but a comment after the first is an empty OK, as in MariaDB
/// (`SELECT 1; -- done` is a result set and an OK); a text of only a comment is 1065.
#[test]
fn a_trailing_comment_is_an_empty_result() {
    let running = Running::start("multi-comment", &[]);
    let mut c = Raw::login(running.port);
    let mut p = vec![3];
    p.extend_from_slice(b"SELECT 1; -- done");
    c.send(0, &p);
    let mut kinds = vec![];
    loop {
        let (_, p) = c.read().expect("packet");
        kinds.push(p[0]);
        // The OK ending the text: an OK packet whose status has no "more results".
        if p[0] == 0 && p.len() >= 5 && u16::from_le_bytes([p[3], p[4]]) & 8 == 0 {
            break;
        }
        assert_ne!(p[0], 0xff, "{:?}", String::from_utf8_lossy(&p));
    }
    // Column count, definition, EOF, the row, EOF, then the OK.
    assert_eq!(kinds, [1, 3, 0xfe, 1, 0xfe, 0]);
    assert_eq!(c.query_rows(b"-- only a comment"), Err(1065));
}

/// A client that did not set CLIENT_MULTI_STATEMENTS (PyMySQL's and DBD::MariaDB's
/// default) gets 1064 at the second statement and nothing of the text runs, as from
/// MariaDB 10.11 (its messages here); Quarry ran every statement. Trailing `;`s and
/// comments are one statement still, and COM_SET_OPTION turns the flag on.
#[test]
fn several_statements_need_the_client_flag() {
    let running = Running::start("multi-refused", &[]);
    let mut c = Raw::login_with(running.port, 0);
    assert_eq!(c.query_rows(b"CREATE DATABASE m"), Ok(vec![]));
    assert_eq!(c.query_rows(b"CREATE TABLE m.t (a INT)"), Ok(vec![]));
    let message = |c: &mut Raw, sql: &[u8]| {
        let p = c.query(sql);
        assert_eq!(p[0], 0xff, "{:?}", String::from_utf8_lossy(&p));
        assert_eq!(u16::from_le_bytes([p[1], p[2]]), 1064);
        String::from_utf8_lossy(&p[9..]).into_owned()
    };
    let syntax = "You have an error in your SQL syntax; check the manual that corresponds to \
                  your MariaDB server version for the right syntax to use near";
    assert_eq!(
        message(&mut c, b"INSERT INTO m.t VALUES (1); SELECT 2"),
        format!("{syntax} 'SELECT 2' at line 1")
    );
    assert_eq!(
        message(
            &mut c,
            b"INSERT INTO m.t VALUES (2);\n\n  INSERT INTO m.t VALUES (3)"
        ),
        format!("{syntax} 'INSERT INTO m.t VALUES (3)' at line 3")
    );
    assert_eq!(
        message(&mut c, b"/* x */ ; SELECT 1"),
        format!("{syntax} '; SELECT 1' at line 1")
    );
    assert_eq!(
        c.query_rows(b"SELECT count(*) FROM m.t"),
        Ok(vec![b"\x010".to_vec()])
    );
    for one in [
        &b"SELECT 1;"[..],
        b"SELECT 1;;",
        b"SELECT 1; -- x",
        b"SELECT 'a;b'",
    ] {
        assert!(
            c.query_rows(one).is_ok(),
            "{}",
            String::from_utf8_lossy(one)
        );
    }
    // COM_SET_OPTION 0: multi statements on.
    c.send(0, &[0x1b, 0, 0]);
    assert_eq!(c.read().expect("eof").1[0], 0xfe);
    assert_eq!(
        c.query_rows(b"INSERT INTO m.t VALUES (4); SELECT count(*) FROM m.t"),
        Ok(vec![])
    );
}

/// A COM_QUERY ending in a NUL byte (mariadb-slap sends one) runs the statement before
/// it, as MariaDB does; it was 1064 near '\x00'. FOUND_ROWS() after SELECT
/// SQL_CALC_FOUND_ROWS … LIMIT over the wire counts without the LIMIT.
#[test]
fn a_trailing_nul_ends_the_statement() {
    let running = Running::start("trailing-nul", &[]);
    let mut c = Raw::login(running.port);
    assert_eq!(c.query_rows(b"SELECT 41 + 1\0").map(|r| r.len()), Ok(1));
    assert_eq!(c.query_rows(b"CREATE DATABASE n\0"), Ok(vec![]));
    assert_eq!(c.query_rows(b"CREATE TABLE n.t (a INT)"), Ok(vec![]));
    assert_eq!(
        c.query_rows(b"INSERT INTO n.t VALUES (1), (2), (3)"),
        Ok(vec![])
    );
    assert_eq!(
        c.query_rows(b"SELECT SQL_CALC_FOUND_ROWS a FROM n.t LIMIT 1")
            .map(|r| r.len()),
        Ok(1)
    );
    let rows = c.query_rows(b"SELECT FOUND_ROWS()").unwrap();
    assert_eq!(rows, [b"\x013".to_vec()]);
    running.stop();
}
