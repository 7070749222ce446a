//! Malformed and hostile input over a real socket: the offending connection gets an error
//! or is closed, and the server keeps serving everyone else with no data lost.

use std::io::Write;
use std::sync::atomic::Ordering;

mod common;

use common::Raw;
use quarry_core::Database;
use quarry_server::Server;

fn err_code(p: &[u8]) -> Option<u16> {
    (p.first() == Some(&0xff)).then(|| u16::from_le_bytes([p[1], p[2]]))
}

#[test]
fn hostile_clients_do_not_hurt_others() {
    let dir = std::env::temp_dir().join(format!("quarry-bad-input-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let db = Database::open(&dir).unwrap();
    db.set_global(
        "max_allowed_packet",
        quarry_core::quarry_common::Value::Int(1 << 20),
    );
    let server = Server::bind(db.clone(), "127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    let stop = server.stop_handle();
    let th = std::thread::spawn(move || server.run());

    let mut good = Raw::login(port);
    assert_eq!(good.query(b"CREATE DATABASE d")[0], 0);
    assert_eq!(
        good.query(b"CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(10))")[0],
        0
    );
    assert_eq!(good.query(b"INSERT INTO d.t VALUES (1, 'kept')")[0], 0);

    // 1. Garbage instead of a handshake response.
    let mut c = Raw::connect(port);
    c.read().unwrap();
    c.send(1, &[0xff; 3]);
    let r = c.read();
    assert!(r.is_none() || err_code(&r.unwrap().1).is_some());

    // 2. A handshake whose auth length points past the packet.
    let mut c = Raw::connect(port);
    c.read().unwrap();
    let mut p = (0x0000_0200u32 | 0x0000_8000).to_le_bytes().to_vec();
    p.extend_from_slice(&[0; 28]);
    p.extend_from_slice(b"root\0");
    p.push(250);
    c.send(1, &p);
    let r = c.read();
    assert!(r.is_none() || err_code(&r.unwrap().1) == Some(1043));

    // 3. Invalid UTF-8 in a query: outside a string literal an error, and the connection
    // stays usable (inside one the bytes are a binary string, as MariaDB takes them).
    let mut bad = Raw::login(port);
    assert_eq!(err_code(&bad.query(b"SELECT \xff\xfe")), Some(1366));
    assert_eq!(
        bad.query_rows(b"SELECT HEX('\xff\xfe')"),
        Ok(vec![b"\x04FFFE".to_vec()])
    );
    assert_eq!(
        bad.query(b"SELECT 1")[0],
        1,
        "a result set follows on the same connection"
    );
    while bad.read().is_some_and(|(_, p)| p[0] != 0xfe) {}

    // 4. A packet larger than max_allowed_packet: error 1153 and the connection is closed.
    let mut big = Raw::login(port);
    let mut p = vec![3];
    p.extend_from_slice(b"SELECT '");
    p.resize((1 << 20) + 100, b'a');
    big.send(0, &p);
    let r = big.read();
    assert_eq!(r.map(|(_, p)| err_code(&p)), Some(Some(1153)));
    assert!(
        big.read().is_none(),
        "connection closed after an oversized packet"
    );

    // 5. Absurd lengths in COM_STMT_EXECUTE and unknown statement ids.
    let mut ps = Raw::login(port);
    ps.send(0, b"\x16SELECT v FROM d.t WHERE id = ?");
    let (_, prep) = ps.read().unwrap();
    assert_eq!(prep[0], 0);
    let id = u32::from_le_bytes(prep[1..5].try_into().unwrap());
    // one parameter definition + EOF, one column definition + EOF
    for _ in 0..4 {
        ps.read().unwrap();
    }
    let mut exec = vec![0x17];
    exec.extend_from_slice(&id.to_le_bytes());
    exec.extend_from_slice(&[0, 1, 0, 0, 0, 0, 1, 253, 0]);
    exec.extend_from_slice(&[0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]); // lenenc of 2^63
    ps.send(0, &exec);
    assert_eq!(ps.read().map(|(_, p)| err_code(&p)), Some(Some(1835)));
    ps.send(0, &[0x17, 9, 9, 9, 9, 0, 1, 0, 0, 0]);
    assert_eq!(ps.read().map(|(_, p)| err_code(&p)), Some(Some(1243)));
    ps.send(0, &[0xee]);
    assert_eq!(ps.read().map(|(_, p)| err_code(&p)), Some(Some(1047)));

    // 6. A truncated packet header, then disconnect mid-packet.
    let mut t = Raw::login(port);
    let _ = t.s.write_all(&[100, 0, 0, 0, 3, b'S']);
    drop(t);

    // The well-behaved client is still served and nothing committed was lost.
    let r = good.query(b"SELECT v FROM d.t WHERE id = 1");
    assert_eq!(r[0], 1);
    // column definition, EOF, rows…, EOF
    let mut rows = vec![];
    let mut eofs = 0;
    while eofs < 2 {
        let (_, p) = good.read().expect("result set");
        if p[0] == 0xfe && p.len() < 9 {
            eofs += 1;
        }
        rows.push(p);
    }
    assert!(rows.iter().any(|p| p.windows(4).any(|w| w == b"kept")));

    stop.store(true, Ordering::SeqCst);
    th.join().unwrap().unwrap();
    drop(db);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A DATE sent as a binary-protocol parameter is judged as the same date in text would
/// be: an impossible one is 1292 in strict mode (it used to be stored as 2024-13-40).
#[test]
fn binary_protocol_dates_are_validated_like_text() {
    let dir = std::env::temp_dir().join(format!("quarry-bin-dates-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let db = Database::open(&dir).unwrap();
    let server = Server::bind(db.clone(), "127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    let stop = server.stop_handle();
    let th = std::thread::spawn(move || server.run());

    let mut c = Raw::login(port);
    assert_eq!(c.query_rows(b"CREATE DATABASE d"), Ok(vec![]));
    assert_eq!(
        c.query_rows(b"CREATE TABLE d.t (d DATE, dt DATETIME)"),
        Ok(vec![])
    );
    c.send(0, b"\x16INSERT INTO d.t VALUES (?, ?)");
    let (_, prep) = c.read().unwrap();
    assert_eq!(prep[0], 0);
    let id = u32::from_le_bytes(prep[1..5].try_into().unwrap());
    // two parameter definitions + EOF
    for _ in 0..3 {
        c.read().unwrap();
    }
    let exec = |c: &mut Raw, date: [u8; 4], time: [u8; 3]| {
        let mut p = vec![0x17];
        p.extend_from_slice(&id.to_le_bytes());
        p.extend_from_slice(&[0, 1, 0, 0, 0]); // flags, iteration count
        p.extend_from_slice(&[0, 1, 10, 0, 12, 0]); // NULL bitmap, types bound: DATE, DATETIME
        p.push(4);
        p.extend_from_slice(&date);
        p.push(7);
        p.extend_from_slice(&date);
        p.extend_from_slice(&time);
        c.send(0, &p);
        c.read().map(|(_, p)| err_code(&p))
    };
    let y = 2024u16.to_le_bytes();
    assert_eq!(exec(&mut c, [y[0], y[1], 2, 29], [23, 59, 59]), Some(None));
    assert_eq!(
        exec(&mut c, [y[0], y[1], 13, 40], [1, 2, 3]),
        Some(Some(1292))
    );
    assert_eq!(
        exec(&mut c, [y[0], y[1], 2, 30], [1, 2, 3]),
        Some(Some(1292))
    );
    assert_eq!(
        exec(&mut c, [y[0], y[1], 1, 1], [24, 0, 0]),
        Some(Some(1292))
    );
    let rows = c.query_rows(b"SELECT d, dt FROM d.t").unwrap();
    assert_eq!(rows.len(), 1);
    assert!(rows[0].windows(10).any(|w| w == b"2024-02-29"));

    stop.store(true, Ordering::SeqCst);
    th.join().unwrap().unwrap();
    drop(db);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// SET NAMES latin1 used to be accepted and ignored, then latin1 bytes were refused as
/// invalid utf8mb4 (1366). Now the server decodes them after SET NAMES latin1 and
/// answers in latin1; an unknown character set is 1115.
#[test]
fn latin1_clients_are_understood() {
    let running = common::Running::start("latin1", &[]);
    let mut c = Raw::login(running.port);
    // As utf8mb4, a lone 0xE4 is no character: a byte of a binary string in a literal
    // (MariaDB's answer), an error outside one.
    assert_eq!(
        c.query_rows(b"SELECT HEX('\xe4')"),
        Ok(vec![b"\x02E4".to_vec()])
    );
    assert_eq!(err_code(&c.query(b"SELECT 1 \xe4")), Some(1366));
    assert_eq!(c.query_rows(b"SET NAMES latin1"), Ok(vec![]));
    assert_eq!(
        c.query_rows(b"SELECT '\xe4\x80', CHAR_LENGTH('\xe4\x80'), HEX('\xe4\x80')"),
        Ok(vec![b"\x02\xe4\x80\x012\x0aC3A4E282AC".to_vec()])
    );
    assert_eq!(c.query_rows(b"SET NAMES koi8q"), Err(1115));
    assert_eq!(c.query_rows(b"SET NAMES utf8mb4"), Ok(vec![]));
    assert_eq!(
        c.query_rows("SELECT 'ä'".as_bytes()),
        Ok(vec!["\x02ä".as_bytes().to_vec()])
    );
    running.stop();
}

/// A query longer than one 16 MiB frame arrives in several; the reply's sequence ids
/// follow the last frame's (they restarted at 1, and clients dropped the connection).
#[test]
fn a_query_over_16_mib_is_answered_in_sequence() {
    let running = common::Running::start("big-query", &[("max_allowed_packet", 64 << 20)]);
    let mut c = Raw::login(running.port);
    let mut q = b"\x03SELECT LENGTH('".to_vec();
    q.resize(17 << 20, b'x');
    q.extend_from_slice(b"')");
    let first = 0xFF_FFFF;
    c.send(0, &q[..first]);
    c.send(1, &q[first..]);
    let (seq, p) = c.read().unwrap();
    assert_eq!((seq, p[0]), (2, 1), "column count packet");
    let mut rows = vec![];
    loop {
        let (_, p) = c.read().unwrap();
        if p[0] == 0xfe && p.len() < 9 {
            if !rows.is_empty() {
                break;
            }
            continue;
        }
        if p[0] != 3 {
            rows.push(p);
        }
    }
    let want = ((17 << 20) - 16).to_string();
    assert!(rows.iter().any(|r| r.ends_with(want.as_bytes())), "{want}");
    running.stop();
}
