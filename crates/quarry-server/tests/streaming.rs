//! Result sets go to the client as they are produced (a lone SELECT of a COM_QUERY and a
//! prepared statement's execution): large ones arrive whole and in sequence in both
//! protocols, an error part-way ends them with an ERR packet on a connection that goes on
//! serving, and a client that stops reading loses its connection after
//! `net_write_timeout`, its statement stopped.

mod common;

use common::{Raw, Running};

fn text_query(c: &mut Raw, sql: &[u8]) -> (Vec<Vec<u8>>, Option<u16>) {
    c.result_set(sql)
}

fn prepared_query(c: &mut Raw, sql: &[u8], param: i64) -> (Vec<Vec<u8>>, Option<u16>) {
    c.execute(sql, &[(8, param.to_le_bytes().to_vec())])
}

use std::time::{Duration, Instant};

fn setup(c: &mut Raw) {
    assert_eq!(c.query_rows(b"CREATE DATABASE s"), Ok(vec![]));
    assert_eq!(
        c.query_rows(b"CREATE TABLE s.t (a INT PRIMARY KEY, pad VARCHAR(200))"),
        Ok(vec![])
    );
    for chunk in 0..20 {
        let values: Vec<String> = (0..1000)
            .map(|i| format!("({}, REPEAT('p', 150))", chunk * 1000 + i + 1))
            .collect();
        let insert = format!("INSERT INTO s.t VALUES {}", values.join(","));
        assert_eq!(c.query_rows(insert.as_bytes()), Ok(vec![]));
    }
}

fn still_serves(c: &mut Raw) {
    let rows = c.query_rows(b"SELECT 42").unwrap();
    assert_eq!(rows, vec![b"\x0242".to_vec()]);
}

#[test]
fn results_stream_whole_in_sequence_and_end_cleanly() {
    let running = Running::start("streaming", &[]);
    let mut c = Raw::login(running.port);
    setup(&mut c);

    // About 3.2 MB of rows: several writes of the streamed result.
    let (rows, err) = text_query(&mut c, b"SELECT a, pad FROM s.t");
    assert_eq!(err, None);
    assert_eq!(rows.len(), 20_000);
    assert_eq!(rows[0][..2], [1, b'1']);
    assert!(rows.iter().all(|r| r.len() == 1 + r[0] as usize + 1 + 150));
    still_serves(&mut c);

    let (rows, err) = prepared_query(&mut c, b"SELECT a, pad FROM s.t WHERE a > ?", 5_000);
    assert_eq!(err, None);
    assert_eq!(rows.len(), 15_000);
    // Binary rows: header 0x00, the null bitmap, then a's four bytes.
    assert_eq!(rows[0][2..6], 5_001i32.to_le_bytes());
    still_serves(&mut c);

    // An error part-way (a later row's subquery finds two rows; MariaDB sent 4 989 rows
    // before its ERR): rows of the batches before it, then the error.
    assert_eq!(c.query_rows(b"CREATE TABLE s.u (a INT)"), Ok(vec![]));
    assert_eq!(
        c.query_rows(b"INSERT INTO s.u VALUES (4990), (4990)"),
        Ok(vec![])
    );
    let (rows, err) = text_query(
        &mut c,
        b"SELECT a, (SELECT a FROM s.u WHERE u.a = t.a) FROM s.t",
    );
    assert_eq!(err, Some(1242));
    assert!(rows.len() < 4990, "{}", rows.len());
    still_serves(&mut c);
    let (rows, err) = prepared_query(
        &mut c,
        b"SELECT a, (SELECT a FROM s.u WHERE u.a = t.a) FROM s.t WHERE a > ?",
        0,
    );
    assert_eq!(err, Some(1242));
    assert!(rows.len() < 4990, "{}", rows.len());
    still_serves(&mut c);
    drop(c);
    running.stop();
}

#[test]
fn a_client_that_stops_reading_loses_its_connection_after_net_write_timeout() {
    let running = Running::start("streaming-stall", &[]);
    let port = running.port;
    let mut admin = Raw::login(port);
    setup(&mut admin);

    let mut stalled = Raw::login(port);
    assert_eq!(
        stalled.query_rows(b"SET SESSION net_write_timeout = 1"),
        Ok(vec![])
    );
    let id = {
        let rows = stalled.query_rows(b"SELECT CONNECTION_ID()").unwrap();
        String::from_utf8_lossy(&rows[0][1..]).to_string()
    };
    // 400 million rows of 150 bytes: far past any socket buffer, and never read.
    let mut p = vec![3];
    p.extend_from_slice(b"SELECT x.pad, y.a FROM s.t x, s.t y");
    stalled.send(0, &p);
    let t0 = Instant::now();
    loop {
        let list = admin.query_rows(b"SHOW PROCESSLIST").unwrap();
        if !list
            .iter()
            .any(|r| r.get(1..1 + id.len()) == Some(id.as_bytes()))
        {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the stalled connection is still there"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Its buffered rows are still readable, then the stream ends without the result's end.
    let mut rest = 0usize;
    let mut last = vec![];
    while let Some((_, p)) = stalled.read() {
        rest += 1;
        last = p;
    }
    let ended = last.first() == Some(&0xfe) && last.len() < 9;
    assert!(rest > 0 && !ended, "{rest} {ended}");
    still_serves(&mut admin);
    drop(admin);
    running.stop();
}
