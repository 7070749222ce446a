//! Statements that would run for minutes stop when they must: KILL QUERY and KILL from
//! another connection, the client going away, `max_statement_time`, a
//! `MAX_EXECUTION_TIME` hint, and a LOAD DATA of input without line terminators. A
//! 3-way cross join of 3 000 rows with an impossible condition (27 billion pairs) used to
//! run on through all of them.

mod common;

use common::{Raw, Running};
use std::time::{Duration, Instant};

const ENDLESS: &[u8] = b"SELECT count(*) FROM d.t a, d.t b, d.t c WHERE a.a + b.a + c.a < 0";

fn setup(port: u16) {
    let mut c = Raw::login(port);
    assert_eq!(c.query_rows(b"CREATE DATABASE d"), Ok(vec![]));
    assert_eq!(c.query_rows(b"CREATE TABLE d.t (a INT)"), Ok(vec![]));
    let values: Vec<String> = (0..3000).map(|i| format!("({i})")).collect();
    let insert = format!("INSERT INTO d.t VALUES {}", values.join(","));
    assert_eq!(c.query_rows(insert.as_bytes()), Ok(vec![]));
}

fn connection_id(c: &mut Raw) -> u64 {
    let rows = c.query_rows(b"SELECT CONNECTION_ID()").unwrap();
    String::from_utf8_lossy(&rows[0][1..]).parse().unwrap()
}

/// Run `sql` on a new connection in a thread; after `wait`, `then` runs; returns the
/// error code the statement ended with and how long it ran.
fn interrupted(port: u16, sql: &'static [u8], then: impl FnOnce(u64)) -> (u16, Duration) {
    let mut victim = Raw::login(port);
    let id = connection_id(&mut victim);
    let t0 = Instant::now();
    let run = std::thread::spawn(move || victim.query_rows(sql).unwrap_err());
    std::thread::sleep(Duration::from_millis(300));
    then(id);
    let code = run.join().unwrap();
    (code, t0.elapsed())
}

#[test]
fn long_statements_stop_when_killed_timed_out_or_abandoned() {
    // Files anywhere: the endless input is /dev/zero.
    let opts = quarry_core::Options {
        secure_file_priv: Some(String::new()),
        ..Default::default()
    };
    let running = Running::start_with("interrupt", &[], &opts);
    let port = running.port;
    setup(port);
    let mut admin = Raw::login(port);

    let (code, took) = interrupted(port, ENDLESS, |id| {
        assert_eq!(
            admin.query_rows(format!("KILL QUERY {id}").as_bytes()),
            Ok(vec![])
        );
    });
    assert_eq!(code, 1317);
    assert!(took < Duration::from_secs(10), "{took:?}");

    let (code, _) = interrupted(port, ENDLESS, |id| {
        assert_eq!(
            admin.query_rows(format!("KILL {id}").as_bytes()),
            Ok(vec![])
        );
    });
    assert!(code == 1317 || code == 0, "{code}");

    // The client leaves mid-statement: the statement stops (it is gone from the list).
    let mut leaver = Raw::login(port);
    let id = connection_id(&mut leaver);
    let mut p = vec![3];
    p.extend_from_slice(ENDLESS);
    leaver.send(0, &p);
    std::thread::sleep(Duration::from_millis(300));
    drop(leaver);
    let t0 = Instant::now();
    loop {
        let list = admin.query_rows(b"SHOW PROCESSLIST").unwrap();
        let needle = id.to_string();
        if !list
            .iter()
            .any(|r| r.get(1..1 + needle.len()) == Some(needle.as_bytes()))
        {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "abandoned statement runs on"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let mut c = Raw::login(port);
    assert_eq!(c.query_rows(b"SET max_statement_time = 0.3"), Ok(vec![]));
    assert_eq!(c.query_rows(ENDLESS), Err(1969));
    assert_eq!(c.query_rows(b"SET max_statement_time = 0"), Ok(vec![]));
    let hinted = b"SELECT /*+ MAX_EXECUTION_TIME(300) */ count(*) FROM d.t a, d.t b, d.t c WHERE a.a + b.a + c.a < 0";
    assert_eq!(c.query_rows(hinted), Err(3024));
    // No line terminator ever: an error once a record passes max_allowed_packet.
    assert_eq!(
        c.query_rows(b"LOAD DATA INFILE '/dev/zero' INTO TABLE d.t"),
        Err(1153)
    );
    assert_eq!(c.query_rows(b"SELECT count(*) FROM d.t").unwrap().len(), 1);
    running.stop();
}
