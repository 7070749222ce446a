//! Many connections at once: 1 000 idle ones do not stop 64 busy ones, every idle one
//! still answers afterwards, and a connection past `max_connections` gets 1040.

mod common;

use common::Raw;
use quarry_core::quarry_common::Value;
use quarry_core::Database;
use quarry_server::Server;

#[test]
fn a_thousand_idle_connections_beside_sixty_four_busy_ones() {
    let dir = std::env::temp_dir().join(format!("quarry-conns-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let db = Database::open(&dir).unwrap();
    db.set_global("max_connections", Value::Int(1080));
    let server = Server::bind(db.clone(), "127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    let stop = server.stop_handle();
    let th = std::thread::spawn(move || server.run());

    let mut admin = Raw::login(port);
    assert_eq!(admin.query_rows(b"CREATE DATABASE d"), Ok(vec![]));
    assert_eq!(
        admin.query_rows(b"CREATE TABLE d.t (id INT PRIMARY KEY, v INT NOT NULL)"),
        Ok(vec![])
    );
    let values: Vec<String> = (0..64).map(|i| format!("({i}, 0)")).collect();
    let insert = format!("INSERT INTO d.t VALUES {}", values.join(","));
    assert_eq!(admin.query_rows(insert.as_bytes()), Ok(vec![]));

    let mut idle: Vec<Raw> = (0..1000).map(|_| Raw::login(port)).collect();

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
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    th.join().unwrap().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
