//! Many connections at once: 1 000 idle ones do not stop 64 busy ones and hold no thread
//! each, every idle one still answers afterwards, and a connection past
//! `max_connections` gets 1040. An idle (parked) connection keeps its transaction, can
//! be killed, and is closed after `wait_timeout`.

mod common;

use common::{wait_until, Raw, Running};
use std::time::{Duration, Instant};

#[test]
fn a_thousand_idle_connections_beside_sixty_four_busy_ones() {
    let running = Running::start("conns", &[("max_connections", 1080), (IDLE_MS, 200)]);
    let (server, port) = (&running.server, running.port);

    let mut admin = Raw::login(port);
    assert_eq!(admin.query_rows(b"CREATE DATABASE d"), Ok(vec![]));
    assert_eq!(
        admin.query_rows(b"CREATE TABLE d.t (id INT PRIMARY KEY, v INT NOT NULL)"),
        Ok(vec![])
    );
    let values: Vec<String> = (0..64).map(|i| format!("({i}, 0)")).collect();
    let insert = format!("INSERT INTO d.t VALUES {}", values.join(","));
    assert_eq!(admin.query_rows(insert.as_bytes()), Ok(vec![]));

    let (threads0, rss0) = (threads(), rss_kib());
    let mut idle: Vec<Raw> = (0..1000).map(|_| Raw::login(port)).collect();
    // Idle past quarry_idle_thread_timeout_ms, they wait without threads.
    wait_until(|| server.parked() >= 1000);
    let (threads1, rss1) = (threads(), rss_kib());
    assert!(
        threads1 < threads0 + 20,
        "{threads0} threads before the idle connections, {threads1} after"
    );
    // Memory is measured on the release server by the client suite (this process's
    // allocator keeps what the exited threads' arenas held).
    eprintln!(
        "1 000 idle connections: {threads0} -> {threads1} threads, RSS +{} KiB",
        rss1.saturating_sub(rss0)
    );

    // 64 busy sessions, each updating its own row and reading it back.
    let busy: Vec<_> = (0..64)
        .map(|i| {
            std::thread::spawn(move || {
                let mut c = Raw::login(port);
                for _ in 0..50 {
                    let upd = format!("UPDATE d.t SET v = v + 1 WHERE id = {i}");
                    assert_eq!(c.query_rows(upd.as_bytes()), Ok(vec![]), "session {i}");
                    let sel = format!("SELECT v FROM d.t WHERE id = {i}");
                    let rows = c.query_rows(sel.as_bytes()).expect("select");
                    assert_eq!(rows.len(), 1, "session {i}");
                }
            })
        })
        .collect();
    for b in busy {
        b.join().unwrap();
    }
    // Every update of every session counted: 64 × 50 (the row packet is "3200" as text).
    let sum = admin.query_rows(b"SELECT sum(v) FROM d.t").unwrap();
    assert_eq!(&sum[0][1..], b"3200");

    // Every idle connection still answers.
    for (n, c) in idle.iter_mut().enumerate() {
        assert_eq!(
            c.query_rows(b"SELECT 1").map(|r| r.len()),
            Ok(1),
            "idle {n}"
        );
    }

    // The busy sessions have gone once the server counts admin plus the idle ones.
    for _ in 0..100 {
        let r = admin
            .query_rows(b"SHOW STATUS LIKE 'Threads_connected'")
            .unwrap();
        if r[0].ends_with(b"1001") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    // Fill up to max_connections (1 001 open now): the next one is refused with 1040.
    let mut extra: Vec<Raw> = (0..79).map(|_| Raw::login(port)).collect();
    let mut over = Raw::connect(port);
    let (_, greeting) = over.read().expect("a packet instead of the greeting");
    assert_eq!(greeting[0], 0xff, "expected an error packet");
    assert_eq!(u16::from_le_bytes([greeting[1], greeting[2]]), 1040);
    // Closing one makes room again.
    extra.pop();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let mut again = Raw::login(port);
    assert_eq!(again.query_rows(b"SELECT 1").map(|r| r.len()), Ok(1));

    drop(idle);
    drop(extra);
    running.stop();
}

#[test]
fn a_parked_connection_keeps_its_transaction_and_can_be_killed_or_time_out() {
    let running = Running::start("park", &[(IDLE_MS, 100)]);
    let (server, port) = (&running.server, running.port);
    let mut other = Raw::login(port);
    other.query_rows(b"CREATE DATABASE test").unwrap();
    other
        .query_rows(b"CREATE TABLE test.t (id INT PRIMARY KEY, v INT)")
        .unwrap();
    other
        .query_rows(b"INSERT INTO test.t VALUES (1, 0)")
        .unwrap();

    // A transaction open across the wait: its change stays invisible to others, its row
    // lock held, and it commits when the client comes back on a new thread.
    let mut a = Raw::login(port);
    a.query_rows(b"BEGIN").unwrap();
    a.query_rows(b"UPDATE test.t SET v = 1 WHERE id = 1")
        .unwrap();
    wait_until(|| server.parked() >= 2);
    let v = |c: &mut Raw, sql: &[u8]| c.query_rows(sql).map(|r| r[0][1..].to_vec());
    assert_eq!(v(&mut other, b"SELECT v FROM test.t"), Ok(b"0".to_vec()));
    other
        .query_rows(b"SET SESSION innodb_lock_wait_timeout = 1")
        .unwrap();
    assert_eq!(
        other.query_rows(b"SELECT v FROM test.t WHERE id = 1 FOR UPDATE"),
        Err(1205)
    );
    a.query_rows(b"COMMIT").unwrap();
    assert_eq!(v(&mut other, b"SELECT v FROM test.t"), Ok(b"1".to_vec()));

    // KILL closes a parked connection at once.
    let id = a.query_rows(b"SELECT CONNECTION_ID()").unwrap();
    let id = String::from_utf8_lossy(&id[0][1..]).to_string();
    wait_until(|| server.parked() >= 1);
    other.query_rows(format!("KILL {id}").as_bytes()).unwrap();
    assert_eq!(a.read(), None, "the killed connection is closed");

    // wait_timeout closes one idle that long.
    other.query_rows(b"SET GLOBAL wait_timeout = 1").unwrap();
    let mut b = Raw::login(port);
    let t0 = Instant::now();
    assert_eq!(b.read(), None, "closed after wait_timeout");
    assert!(
        t0.elapsed() >= Duration::from_millis(900),
        "{:?}",
        t0.elapsed()
    );
    // The others go on.
    assert_eq!(other.query_rows(b"SELECT 1").map(|r| r.len()), Ok(1));

    running.stop();
}

#[test]
fn without_parking_wait_timeout_still_closes_an_idle_connection() {
    let running = Running::start("noparks", &[(IDLE_MS, 0), ("wait_timeout", 1)]);
    let mut c = Raw::login(running.port);
    let t0 = Instant::now();
    assert_eq!(c.read(), None, "closed after wait_timeout");
    let waited = t0.elapsed();
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_millis(1600),
        "{waited:?}"
    );
    assert_eq!(running.server.parked(), 0);
    running.stop();
}

const IDLE_MS: &str = "quarry_idle_thread_timeout_ms";

/// A server on an ephemeral port in a fresh datadir, with some globals set.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

fn rss_kib() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Clients that open a handshake and trickle a byte now and then (slowloris) used to hold
/// every slot: 1040 for everyone for as long as they kept going. connect_timeout now
/// bounds the whole handshake, handshakes do not take logged-in sessions' slots, and a
/// ready client takes the place of the oldest unfinished handshake.
#[test]
fn slow_handshakes_do_not_lock_anyone_out() {
    use std::io::{Read, Write};
    let running = Running::start(
        "slow-handshakes",
        &[("max_connections", 10), ("connect_timeout", 2)],
    );
    let port = running.port;
    let mut slow: Vec<std::net::TcpStream> = (0..12)
        .map(|_| {
            let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
            let mut greeting = [0u8; 512];
            let _ = s.read(&mut greeting).unwrap();
            s
        })
        .collect();
    let t0 = Instant::now();
    let mut good = Raw::login(port);
    assert_eq!(good.query_rows(b"SELECT 1"), Ok(vec![b"\x011".to_vec()]));
    // Trickling keeps no handshake alive past connect_timeout.
    let closed = |s: &mut std::net::TcpStream| {
        s.set_nonblocking(true).unwrap();
        let mut b = [0u8; 64];
        let r = s.read(&mut b);
        s.set_nonblocking(false).unwrap();
        match r {
            Ok(n) => n == 0,
            Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
        }
    };
    let mut open = slow.len();
    while open > 0 && t0.elapsed() < Duration::from_secs(8) {
        std::thread::sleep(Duration::from_millis(300));
        open = 0;
        for s in &mut slow {
            let _ = s.write_all(&[1]);
            if !closed(s) {
                open += 1;
            }
        }
    }
    assert_eq!(open, 0, "handshakes outlived connect_timeout");
    assert_eq!(good.query_rows(b"SELECT 1"), Ok(vec![b"\x011".to_vec()]));
    running.stop();
}
