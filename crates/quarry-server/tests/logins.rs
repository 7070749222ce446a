//! Failed logins are throttled (MySQL's connection_control): 300 wrong passwords in 0.4 s
//! met no resistance.

mod common;

use common::{Raw, Running};

fn delays(root: &mut Raw) -> i64 {
    let rows = root
        .query_rows(b"SHOW STATUS LIKE 'Connection_control_delay_generated'")
        .unwrap();
    let row = String::from_utf8_lossy(&rows[0]).into_owned();
    row.rsplit(|c: char| !c.is_ascii_digit())
        .find(|p| !p.is_empty())
        .unwrap()
        .parse()
        .unwrap()
}

/// Past the threshold every attempt of that account from that host waits before it is
/// judged — the right password too, which then clears the count; other accounts are not
/// slowed. Counted, not timed: `Connection_control_delay_generated`.
#[test]
fn failed_logins_earn_growing_delays_until_one_succeeds() {
    let running = Running::start(
        "logins",
        &[
            ("connection_control_failed_connections_threshold", 2),
            ("connection_control_min_connection_delay", 20),
        ],
    );
    let port = running.port;
    let mut root = Raw::login(port);
    assert_eq!(
        root.query_rows(b"CREATE USER 'app'@'%' IDENTIFIED BY 'secret'"),
        Ok(vec![])
    );
    let before = delays(&mut root);
    for _ in 0..4 {
        assert_eq!(Raw::login_as(port, "app", "wrong").err(), Some(1045));
    }
    assert_eq!(delays(&mut root), before + 2, "the third and fourth waited");
    assert!(Raw::login_as(port, "other", "x").is_err());
    assert_eq!(delays(&mut root), before + 2, "another name is not slowed");
    assert!(Raw::login_as(port, "app", "secret").is_ok());
    assert_eq!(
        delays(&mut root),
        before + 3,
        "the right password waited too"
    );
    assert_eq!(Raw::login_as(port, "app", "wrong").err(), Some(1045));
    assert_eq!(delays(&mut root), before + 3, "a login clears the count");
    running.stop();
}
