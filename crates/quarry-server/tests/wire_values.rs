//! Values on the wire as MariaDB 10.11 sends them (each expected byte string is what it
//! sent for the same statement): TIME in the text protocol at its column's fractional
//! digits (DATETIME(n) too) and in the binary protocol's TIME layout, a binary TIME
//! parameter with its fraction, and parameters numbered in the order of the text (the
//! binder met WHERE's before the select list's, so `SELECT ?, id … WHERE id = ?` swapped
//! them), binary DATE/DATETIME/TIMESTAMP values sent with only their non-zero parts (a
//! fraction of 0 was always sent, and Node's mysql2 printed `10:00:00.0`), and `LIMIT ?`
//! in a server-side prepared statement (1064 at prepare) with the counts MariaDB makes of
//! each parameter type (strings, as mysql2 sends them, doubles, decimals, negatives).

mod common;

use common::{Raw, Running};

fn lenenc_text(row: &[u8]) -> Vec<Option<String>> {
    let mut out = vec![];
    let mut i = 0;
    while i < row.len() {
        if row[i] == 0xfb {
            out.push(None);
            i += 1;
            continue;
        }
        let n = row[i] as usize;
        out.push(Some(
            String::from_utf8_lossy(&row[i + 1..i + 1 + n]).into_owned(),
        ));
        i += 1 + n;
    }
    out
}

fn lenenc(s: &str) -> Vec<u8> {
    let mut v = vec![s.len() as u8];
    v.extend_from_slice(s.as_bytes());
    v
}

#[test]
fn time_values_and_parameters_on_the_wire() {
    let running = Running::start("wire-values", &[]);
    let mut c = Raw::login(running.port);
    for sql in [
        "CREATE DATABASE w",
        "CREATE TABLE w.t (id INT PRIMARY KEY, a TIME(3), t2 TIME(2), d3 DATETIME(3))",
        "INSERT INTO w.t VALUES (1, '-26:03:04.125', '00:00:01.5', '2024-01-01 10:00:00.5'), \
         (2, '12:00:00', '-838:59:59', NULL)",
    ] {
        assert_eq!(c.query_rows(sql.as_bytes()), Ok(vec![]), "{sql}");
    }

    let (rows, err) = c.result_set(b"SELECT a, t2, d3 FROM w.t ORDER BY id");
    assert_eq!(err, None);
    let s = |x: &str| Some(x.to_string());
    assert_eq!(
        rows.iter().map(|r| lenenc_text(r)).collect::<Vec<_>>(),
        [
            vec![
                s("-26:03:04.125"),
                s("00:00:01.50"),
                s("2024-01-01 10:00:00.500")
            ],
            vec![s("12:00:00.000"), s("-838:59:59.00"), None],
        ]
    );

    let (rows, err) = c.execute(b"SELECT a, t2 FROM w.t ORDER BY id", &[]);
    assert_eq!(err, None);
    assert_eq!(
        rows,
        [
            b"\x00\x00\x0c\x01\x01\x00\x00\x00\x02\x03\x04H\xe8\x01\x00\x0c\x00\x00\x00\x00\x00\x00\x00\x01 \xa1\x07\x00".to_vec(),
            b"\x00\x00\x08\x00\x00\x00\x00\x00\x0c\x00\x00\x08\x01\"\x00\x00\x00\x16;;".to_vec(),
        ]
    );

    let (rows, err) = c.execute(
        b"SELECT ?, id FROM w.t WHERE id = ?",
        &[(253, lenenc("x")), (253, lenenc("2"))],
    );
    assert_eq!(err, None);
    assert_eq!(rows, [b"\x00\x00\x01x\x02\x00\x00\x00".to_vec()]);

    let mut time = vec![12, 1, 1, 0, 0, 0, 2, 3, 4];
    time.extend_from_slice(&125_000u32.to_le_bytes());
    let (_, err) = c.execute(
        b"INSERT INTO w.t (id, a) VALUES (?, ?)",
        &[(253, lenenc("3")), (11, time)],
    );
    assert_eq!(err, None);
    let (rows, _) = c.result_set(b"SELECT a FROM w.t WHERE id = 3");
    assert_eq!(
        rows.iter().map(|r| lenenc_text(r)).collect::<Vec<_>>(),
        [vec![s("-26:03:04.125")]]
    );
    drop(c);
    running.stop();
}

#[test]
fn binary_dates_and_limit_parameters() {
    let running = Running::start("wire-dates", &[]);
    let mut c = Raw::login(running.port);
    for sql in [
        "CREATE DATABASE wb",
        "CREATE TABLE wb.d (id INT PRIMARY KEY, a DATETIME, b DATE, c DATETIME(3), e TIMESTAMP NULL)",
        "INSERT INTO wb.d VALUES \
         (1, '2024-01-05 10:00:00', '2024-01-05', '2024-01-05 00:00:00', '2024-01-05 00:00:00'), \
         (2, '2024-01-05 00:00:00', '0000-00-00', '2024-01-05 10:00:00.5', NULL), \
         (3, '0000-00-00 00:00:00', NULL, '2024-01-05 00:00:00.001', '2024-01-05 10:00:01')",
    ] {
        assert_eq!(c.query_rows(sql.as_bytes()), Ok(vec![]), "{sql}");
    }
    let (rows, err) = c.execute(b"SELECT a, b, c, e FROM wb.d ORDER BY id", &[]);
    assert_eq!(err, None);
    assert_eq!(
        rows,
        [
            b"\x00\x00\x07\xe8\x07\x01\x05\n\x00\x00\x04\xe8\x07\x01\x05\x04\xe8\x07\x01\x05\x04\xe8\x07\x01\x05".to_vec(),
            b"\x00 \x04\xe8\x07\x01\x05\x00\x0b\xe8\x07\x01\x05\n\x00\x00 \xa1\x07\x00".to_vec(),
            b"\x00\x08\x00\x0b\xe8\x07\x01\x05\x00\x00\x00\xe8\x03\x00\x00\x07\xe8\x07\x01\x05\n\x00\x01".to_vec(),
        ]
    );

    // LIMIT ? OFFSET ?: (limit, offset) as strings, and the ids MariaDB answered.
    let ids = |rows: Vec<Vec<u8>>| -> Vec<u8> { rows.iter().map(|r| r[2]).collect() };
    for (limit, offset, want) in [
        ("2", "0", vec![1, 2]),
        ("2", "1", vec![2, 3]),
        ("2.6", "0", vec![1, 2]),
        ("1x", "0", vec![1]),
        ("abc", "0", vec![]),
        ("", "0", vec![]),
        (" 2", "2", vec![3]),
    ] {
        let (rows, err) = c.execute(
            b"SELECT id FROM wb.d ORDER BY id LIMIT ? OFFSET ?",
            &[(253, lenenc(limit)), (253, lenenc(offset))],
        );
        assert_eq!(err, None, "LIMIT '{limit}' OFFSET '{offset}'");
        assert_eq!(ids(rows), want, "LIMIT '{limit}' OFFSET '{offset}'");
    }
    // Integer parameters.
    for (n, want) in [(1i64, vec![1]), (3, vec![1, 2, 3])] {
        let (rows, err) = c.execute(
            b"SELECT id FROM wb.d ORDER BY id LIMIT ?",
            &[(8, n.to_le_bytes().to_vec())],
        );
        assert_eq!(err, None);
        assert_eq!(ids(rows), want);
    }
    // MariaDB reads other types as it does in COM_STMT_EXECUTE: a DOUBLE rounds half to
    // even, a DECIMAL half away from zero, a negative count or one past BIGINT UNSIGNED is
    // no limit (Quarry refused them with 1210; a text PREPARE … EXECUTE USING does so in
    // MariaDB, not the binary protocol).
    for (param, want) in [
        ((5u8, 2.5f64.to_le_bytes().to_vec()), vec![1, 2]),
        ((246, lenenc("2.5")), vec![1, 2, 3]),
        ((8, (-1i64).to_le_bytes().to_vec()), vec![1, 2, 3]),
        ((253, lenenc("-1")), vec![1, 2, 3]),
        ((253, lenenc("99999999999999999999999")), vec![1, 2, 3]),
    ] {
        let (rows, err) = c.execute(
            b"SELECT id FROM wb.d ORDER BY id LIMIT ?",
            std::slice::from_ref(&param),
        );
        assert_eq!(err, None, "{param:?}");
        assert_eq!(ids(rows), want, "{param:?}");
    }
    drop(c);
    running.stop();
}

/// TINY/MEDIUM/LONG TEXT and BLOB columns are described with their own lengths (all
/// were 64 KiB ones), as MariaDB 10.11 describes them to a utf8mb4 client, and keep
/// their sizes across a restart.
#[test]
fn text_and_blob_sizes_on_the_wire() {
    let running = Running::start("wire-lobs", &[]);
    let mut c = Raw::login(running.port);
    for sql in [
        "CREATE DATABASE w",
        "CREATE TABLE w.t (a TINYTEXT, b TEXT, c MEDIUMTEXT, d LONGTEXT, \
         e TINYBLOB, f BLOB, g MEDIUMBLOB, h LONGBLOB)",
        "INSERT INTO w.t (d, h) VALUES (REPEAT('d', 100000), REPEAT('h', 70000))",
    ] {
        assert_eq!(c.query_rows(sql.as_bytes()), Ok(vec![]), "{sql}");
    }
    let want: Vec<(String, u16, u32, u8, u16)> = [
        ("a", 45, 1020, 16),
        ("b", 45, 262140, 16),
        ("c", 45, 67108860, 16),
        ("d", 45, 4294967295, 16),
        ("e", 63, 255, 144),
        ("f", 63, 65535, 144),
        ("g", 63, 16777215, 144),
        ("h", 63, 4294967295, 144),
    ]
    .into_iter()
    .map(|(n, cs, len, flags)| (n.to_string(), cs, len, 252, flags))
    .collect();
    assert_eq!(c.columns(b"SELECT * FROM w.t"), want);
    let (rows, err) = c.result_set(b"SELECT LENGTH(d), LENGTH(h) FROM w.t");
    assert_eq!(err, None);
    assert_eq!(
        lenenc_text(&rows[0]),
        [Some("100000".to_string()), Some("70000".to_string())]
    );
}
