//! The sysbench suite: the same scripts, sizes, threads and time against every system.

use crate::args::Options;
use crate::report::{parse_sysbench, SysbenchResult};
use quarry_testkit::servers::Server;
use std::process::Command;

/// Run order: `oltp_insert` last because it grows the table.
pub const WORKLOADS: [&str; 6] = [
    "oltp_point_select",
    "oltp_read_only",
    "select_random_ranges",
    "oltp_read_write",
    "oltp_write_only",
    "oltp_insert",
];

/// A system under test: the server and the `--mysql-storage-engine` it is asked for.
pub struct Target<'a> {
    pub label: String,
    pub server: &'a Server,
    pub engine: String,
    /// Non-transactional engines race on sysbench's DELETE+INSERT of one id (1062).
    pub ignore_duplicates: bool,
    /// Run as [`APP_USER`], which holds sbtest's table privileges only, not as root.
    pub app_account: bool,
}

/// The account of `--app-account` runs, made and granted by root before prepare.
pub const APP_USER: &str = "sbapp";
const APP_PASSWORD: &str = "sbapp-pw";

fn common_args(o: &Options, t: &Target) -> Vec<String> {
    vec![
        "--db-driver=mysql".into(),
        "--mysql-host=127.0.0.1".into(),
        format!("--mysql-port={}", t.server.port),
        format!(
            "--mysql-user={}",
            if t.app_account { APP_USER } else { "root" }
        ),
        format!(
            "--mysql-password={}",
            if t.app_account { APP_PASSWORD } else { "" }
        ),
        "--mysql-db=sbtest".into(),
        format!("--tables={}", o.tables),
        format!("--table-size={}", o.table_size),
        format!("--mysql-storage-engine={}", t.engine),
    ]
}

fn sysbench(args: &[String]) -> Result<String, String> {
    let out = Command::new("sysbench")
        .args(args)
        .output()
        .map_err(|e| format!("sysbench: {e} (scripts/bench.sh installs it)"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(text)
    }
}

/// The FATAL line of a failed run, or its last line.
pub fn failure_reason(out: &str) -> String {
    out.lines()
        .find(|l| l.contains("FATAL") && l.contains("error"))
        .or_else(|| out.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("failed")
        .trim()
        .to_string()
}

pub fn run_target(
    o: &Options,
    t: &Target,
    mut on_result: impl FnMut(SysbenchResult),
    progress: &dyn Fn(&str),
) -> Result<(), String> {
    let mut conn = t.server.connect(None)?;
    conn.exec("DROP DATABASE IF EXISTS sbtest")
        .and_then(|_| conn.exec("CREATE DATABASE sbtest"))
        .map_err(|e| format!("{}: {e}", t.label))?;
    if t.app_account {
        // What an application account is given: sbtest's tables, nothing global.
        conn.exec(&format!(
            "CREATE USER IF NOT EXISTS '{APP_USER}'@'%' IDENTIFIED BY '{APP_PASSWORD}'"
        ))
        .and_then(|_| {
            conn.exec(&format!(
                "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER ON sbtest.* TO '{APP_USER}'@'%'"
            ))
        })
        .map_err(|e| format!("{}: {e}", t.label))?;
    }
    conn.quit();
    let common = common_args(o, t);
    progress(&format!("{}: prepare {} rows", t.label, o.table_size));
    let mut prepare = vec!["oltp_common".to_string()];
    prepare.extend(common.iter().cloned());
    prepare.push("prepare".into());
    sysbench(&prepare).map_err(|e| format!("{} prepare: {}", t.label, failure_reason(&e)))?;
    // In WORKLOADS order whatever order they were asked in (oltp_insert grows the table).
    for w in WORKLOADS
        .iter()
        .filter(|w| o.workloads.iter().any(|x| x == *w))
    {
        for &threads in &o.threads {
            progress(&format!("{}: {w} threads={threads} {}s", t.label, o.time));
            let mut args = vec![w.to_string()];
            args.extend(common.iter().cloned());
            args.push(format!("--threads={threads}"));
            args.push(format!("--time={}", o.time));
            args.push("--report-interval=0".into());
            if t.ignore_duplicates {
                args.push("--mysql-ignore-errors=1062".into());
            }
            args.push("run".into());
            let mut r = SysbenchResult {
                system: t.label.clone(),
                workload: (*w).into(),
                threads,
                tps: 0.0,
                qps: 0.0,
                p95_ms: 0.0,
                errors: 0,
                failure: String::new(),
            };
            match sysbench(&args) {
                Ok(out) => match parse_sysbench(&out) {
                    Some((tps, qps, p95, errors)) => {
                        r.tps = tps;
                        r.qps = qps;
                        r.p95_ms = p95;
                        r.errors = errors;
                    }
                    None => r.failure = failure_reason(&out),
                },
                Err(out) => r.failure = failure_reason(&out),
            }
            on_result(r);
        }
    }
    let mut cleanup = vec!["oltp_common".to_string()];
    cleanup.extend(common);
    cleanup.push("cleanup".into());
    let _ = sysbench(&cleanup);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_reason_prefers_the_fatal_line() {
        let out = "sysbench 1.0.20\nFATAL: mysql_drv_query() returned error 1062 (Duplicate entry '5' for key 'PRIMARY')\nFATAL: `thread_run' function failed\n";
        assert!(failure_reason(out).contains("error 1062"));
        assert_eq!(failure_reason("a\nlast words\n\n"), "last words");
    }
}
