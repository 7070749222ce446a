//! The seed workload (seeds 002 and 004): load TestBig/TestSmall, the count and join
//! queries without and with indexes, index builds, and the VARCHAR GROUP BY temp-table
//! test, run the same way on every server system and on DuckDB (through Python).

use crate::args::Options;
use crate::report::{Json, SecondsTable};
use crate::seedgen::SeedFiles;
use quarry_testkit::client::Conn;
use quarry_testkit::servers::{free_bytes, Server};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const QUERIES: [(&str, &str); 4] = [
    (
        "a) count Hersteller='36440'",
        "SELECT count(*) FROM TestBig WHERE Hersteller = '36440'",
    ),
    (
        "b) count Hersteller='ABCDE'",
        "SELECT count(*) FROM TestBig WHERE Hersteller = 'ABCDE'",
    ),
    (
        "c) count Hersteller<>'ABCDE'",
        "SELECT count(*) FROM TestBig WHERE Hersteller <> 'ABCDE'",
    ),
    (
        "d) join TestSmall x TestBig",
        "SELECT count(*) FROM TestSmall A JOIN TestBig B ON (A.PZN = B.PZN) \
         WHERE A.Hersteller = '08650' AND B.Hersteller = '36440'",
    ),
];

pub const INDEXES: [(&str, &str); 4] = [
    (
        "e) CREATE INDEX TestBig(PZN)",
        "CREATE INDEX idx_pzn ON TestBig (PZN)",
    ),
    (
        "e) CREATE INDEX TestBig(Hersteller)",
        "CREATE INDEX idx_hersteller ON TestBig (Hersteller)",
    ),
    (
        "e) CREATE INDEX TestSmall(PZN)",
        "CREATE INDEX idx_pzn ON TestSmall (PZN)",
    ),
    (
        "e) CREATE INDEX TestSmall(Hersteller)",
        "CREATE INDEX idx_hersteller ON TestSmall (Hersteller)",
    ),
];

pub const GROUP_BY: &str = "SELECT col1 FROM t1 GROUP BY col2, uniqe LIMIT 1";

const PRODUCT_COLUMNS: &str = "(Id char(8), PZN char(7), EVP char(8), HAP char(8), \
     ArtikelBez varchar(40), ArtikelText varchar(26), Hersteller char(5))";

/// What the seed phase learned besides times: query answers, temp space, table sizes.
#[derive(Default)]
pub struct SeedFacts {
    pub lines: Vec<(String, String, String)>,
}

impl SeedFacts {
    pub fn add(&mut self, system: &str, item: &str, value: impl Into<String>) {
        self.lines.push((system.into(), item.into(), value.into()));
    }

    pub fn to_json(&self) -> Json {
        Json::Arr(
            self.lines
                .iter()
                .map(|(s, i, v)| {
                    Json::obj(vec![
                        ("system", Json::str(s)),
                        ("item", Json::str(i)),
                        ("value", Json::str(v)),
                    ])
                })
                .collect(),
        )
    }
}

pub struct SeedSystem<'a> {
    pub label: String,
    pub server: &'a Server,
    pub engine: String,
    /// Hersteller declared `COMMENT 'columnar_storage'` (seed 002's column side file).
    pub side_file: bool,
}

pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// A connection to `db` whose statements stop at `--query-timeout` (the client's read
/// timeout, and MariaDB's own `max_statement_time`).
pub(crate) fn timed_conn(o: &Options, server: &Server, db: &str) -> Result<Conn, String> {
    let mut opts = quarry_testkit::client::ConnectOptions::new(server.port).db(db);
    opts.read_timeout = Some(Duration::from_secs(o.query_timeout));
    let mut c = Conn::connect(&opts).map_err(|e| e.to_string())?;
    if server.name == "MariaDB" {
        let _ = c.exec(&format!(
            "SET SESSION max_statement_time={}",
            o.query_timeout
        ));
    }
    Ok(c)
}

struct Runner<'a> {
    o: &'a Options,
    sys: &'a SeedSystem<'a>,
    db: String,
    conn: Option<Conn>,
}

impl Runner<'_> {
    fn conn(&mut self) -> Result<&mut Conn, String> {
        if self.conn.is_none() {
            self.conn = Some(timed_conn(self.o, self.sys.server, &self.db)?);
        }
        Ok(self.conn.as_mut().unwrap())
    }

    /// Time one statement; a failed or timed-out statement drops the connection.
    fn timed(&mut self, sql: &str) -> Result<(f64, Option<String>), String> {
        let start = Instant::now();
        let r = self.conn()?.query(sql);
        let secs = start.elapsed().as_secs_f64();
        match r {
            Ok(res) => Ok((secs, res.scalar().map(str::to_string))),
            Err(e) => {
                self.conn = None;
                if e.code == 0 && secs >= self.o.query_timeout as f64 * 0.99 {
                    Err("timeout".into())
                } else {
                    Err(e.to_string())
                }
            }
        }
    }

    /// Median of three runs, or one run when the first took over 60 s.
    fn query(&mut self, sql: &str) -> Result<(f64, Option<String>), String> {
        let (first, answer) = self.timed(sql)?;
        if first > 60.0 {
            return Ok((first, answer));
        }
        let mut runs = vec![first];
        for _ in 0..2 {
            runs.push(self.timed(sql)?.0);
        }
        Ok((median(runs), answer))
    }
}

/// Sample the free space of `dir`'s file system while `f` runs: peak bytes used.
fn peak_temp<T>(dir: &Path, f: impl FnOnce() -> T) -> (T, u64) {
    let before = free_bytes(dir).unwrap_or(0);
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let stop = stop.clone();
        let dir = dir.to_path_buf();
        std::thread::spawn(move || {
            let mut min = before;
            while !stop.load(Ordering::Relaxed) {
                if let Some(f) = free_bytes(&dir) {
                    min = min.min(f);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            min
        })
    };
    let out = f();
    stop.store(true, Ordering::Relaxed);
    let min = sampler.join().unwrap_or(before);
    (out, before.saturating_sub(min))
}

pub fn run_system(
    o: &Options,
    sys: &SeedSystem,
    files: &SeedFiles,
    table: &mut SecondsTable,
    facts: &mut SeedFacts,
    progress: &dyn Fn(&str),
) -> Result<(), String> {
    let db = format!(
        "seed_{}{}",
        sys.engine.to_lowercase(),
        if sys.side_file { "_cols" } else { "" }
    );
    let columns = if sys.side_file {
        PRODUCT_COLUMNS.replace(
            "Hersteller char(5)",
            "Hersteller char(5) COMMENT 'columnar_storage'",
        )
    } else {
        PRODUCT_COLUMNS.to_string()
    };
    let label = sys.label.as_str();
    {
        let mut c = sys.server.connect(None)?;
        c.exec(&format!("DROP DATABASE IF EXISTS {db}"))
            .and_then(|_| c.exec(&format!("CREATE DATABASE {db}")))
            .map_err(|e| format!("{label}: {e}"))?;
        c.quit();
    }
    let mut r = Runner {
        o,
        sys,
        db,
        conn: None,
    };
    let record =
        |table: &mut SecondsTable, name: &str, count: Option<u64>, res: Result<f64, String>| {
            match res {
                Ok(s) => table.set(name, count, label, Some(s)),
                Err(e) => {
                    table.set(name, count, label, None);
                    table.note(name, label, &e);
                    facts_err(label, name, &e);
                }
            }
        };
    for (name, tbl, path, rows) in [
        ("load TestBig", "TestBig", &files.big, o.seed_rows),
        (
            "load TestSmall",
            "TestSmall",
            &files.small,
            crate::seedgen::SMALL_ROWS,
        ),
    ] {
        progress(&format!("{label}: {name}"));
        r.timed(&format!(
            "CREATE TABLE {tbl} {columns} ENGINE={}",
            sys.engine
        ))?;
        let res = r.timed(&load_sql(path, tbl)).map(|(s, _)| s);
        if let Ok(s) = &res {
            facts.add(label, name, format!("{:.0} rows/s", rows as f64 / s));
        }
        record(table, name, Some(rows), res);
    }
    for phase in ["", " (indexed)"] {
        if !phase.is_empty() {
            for (name, sql) in INDEXES {
                progress(&format!("{label}: {name}"));
                let res = r.timed(sql).map(|(s, _)| s);
                record(table, name, None, res);
            }
        }
        for (name, sql) in QUERIES {
            let name = format!("{name}{phase}");
            progress(&format!("{label}: {name}"));
            let res = r.query(sql).map(|(s, answer)| {
                facts.add(label, &name, answer.unwrap_or_else(|| "NULL".into()));
                s
            });
            record(table, &name, None, res);
        }
    }
    // Issue 19's target: a backup and a restore of TestBig with the tools users run,
    // mariadb-dump to a file and the mariadb client reading it back into a new database.
    for (name, res) in dump_and_restore(o, sys, &r.db, progress) {
        if let Ok(s) = &res {
            facts.add(label, name, format!("{:.0} rows/s", o.seed_rows as f64 / s));
        }
        record(table, name, Some(o.seed_rows), res);
    }
    for (what, path) in [
        ("col2 1 char", &files.t1_empty),
        ("col2 1024 chars", &files.t1_half),
    ] {
        let load = format!("load t1 ({what})");
        progress(&format!("{label}: {load}"));
        r.timed("DROP TABLE IF EXISTS t1")?;
        r.timed(&format!(
            "CREATE TABLE t1 (uniqe int, col1 varchar(10), col2 varchar(2048)) ENGINE={}",
            sys.engine
        ))?;
        let res = r.timed(&load_sql(path, "t1")).map(|(s, _)| s);
        record(table, &load, Some(o.t1_rows), res);
        let name = format!("f) GROUP BY col2, uniqe ({what})");
        progress(&format!("{label}: {name}"));
        let tmpdir = sys.server.tmpdir.clone();
        let (res, peak) = peak_temp(&tmpdir, || r.query(GROUP_BY));
        let res = res.map(|(s, answer)| {
            facts.add(label, &name, answer.unwrap_or_else(|| "NULL".into()));
            s
        });
        facts.add(label, &format!("{name}: peak temp bytes"), peak.to_string());
        record(table, &name, None, res);
    }
    if let Ok(c) = r.conn() {
        // SHOW TABLE STATUS: Name, …, Data_length (6), …, Index_length (8).
        if let Ok(res) = c.query("SHOW TABLE STATUS") {
            for row in res.rows {
                let cell = |i: usize| row.get(i).cloned().flatten().unwrap_or_default();
                facts.add(
                    label,
                    &format!("size {}", cell(0)),
                    format!("data {} index {}", cell(6), cell(8)),
                );
            }
        }
        let _ = c.exec("DROP TABLE IF EXISTS t1");
    }
    Ok(())
}

/// `mariadb-dump --single-transaction DB TestBig > file` and `mariadb DB_restore < file`,
/// timed (seconds each); the restored table must hold every row.
fn dump_and_restore(
    o: &Options,
    sys: &SeedSystem,
    db: &str,
    progress: &dyn Fn(&str),
) -> Vec<(&'static str, Result<f64, String>)> {
    use std::process::{Command, Stdio};
    let label = &sys.label;
    let port = sys.server.port.to_string();
    let file = crate::servers::abs(&o.work).join(format!("dump-{db}.sql"));
    let restore_db = format!("{db}_restore");
    let client = |prog: &str| {
        let mut c = Command::new(prog);
        c.args(["-h127.0.0.1", "-P", &port, "-uroot"]);
        c
    };
    progress(&format!("{label}: mariadb-dump TestBig"));
    let dumped = (|| {
        let out = std::fs::File::create(&file).map_err(|e| e.to_string())?;
        let t = Instant::now();
        let st = client("mariadb-dump")
            .args(["--single-transaction", db, "TestBig"])
            .stdout(out)
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| format!("mariadb-dump: {e}"))?;
        if !st.status.success() {
            return Err(format!(
                "mariadb-dump: {}",
                String::from_utf8_lossy(&st.stderr)
            ));
        }
        Ok(t.elapsed().as_secs_f64())
    })();
    let restored = dumped.as_ref().map_err(|e| e.clone()).and_then(|_| {
        progress(&format!("{label}: restore TestBig (mariadb < dump)"));
        let mut c = sys.server.connect(None)?;
        c.exec(&format!("DROP DATABASE IF EXISTS {restore_db}"))
            .map_err(|e| e.to_string())?;
        c.exec(&format!("CREATE DATABASE {restore_db}"))
            .map_err(|e| e.to_string())?;
        let input = std::fs::File::open(&file).map_err(|e| e.to_string())?;
        let t = Instant::now();
        let st = client("mariadb")
            .arg(&restore_db)
            .stdin(input)
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| format!("mariadb: {e}"))?;
        let secs = t.elapsed().as_secs_f64();
        if !st.status.success() {
            return Err(format!("restore: {}", String::from_utf8_lossy(&st.stderr)));
        }
        let rows = c
            .query(&format!("SELECT COUNT(*) FROM {restore_db}.TestBig"))
            .map_err(|e| e.to_string())?;
        let n = rows
            .rows
            .first()
            .and_then(|r| r[0].clone())
            .unwrap_or_default();
        c.exec(&format!("DROP DATABASE {restore_db}"))
            .map_err(|e| e.to_string())?;
        if n != o.seed_rows.to_string() {
            return Err(format!("restored {n} rows of {}", o.seed_rows));
        }
        Ok(secs)
    });
    let _ = std::fs::remove_file(&file);
    vec![
        ("dump TestBig (mariadb-dump)", dumped),
        ("restore TestBig (mariadb < dump)", restored),
    ]
}

fn facts_err(system: &str, item: &str, e: &str) {
    eprintln!("  {system}: {item}: {e}");
}

fn load_sql(path: &Path, table: &str) -> String {
    format!(
        "LOAD DATA LOCAL INFILE '{}' INTO TABLE {table} FIELDS TERMINATED BY '\\t' LINES TERMINATED BY '\\n'",
        quarry_testkit::servers::abs(path).display()
    )
}

/// Run a script with the bench venv's Python (`--python`), its stderr passed through.
pub fn run_python(
    o: &Options,
    args: Vec<std::ffi::OsString>,
) -> Result<std::process::Output, String> {
    std::process::Command::new(quarry_testkit::servers::abs(&o.python))
        .args(args)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| {
            format!(
                "{}: {e} (scripts/bench.sh makes the venv)",
                o.python.display()
            )
        })
}

pub const DUCKDB_SCRIPT: &str = include_str!("../duckdb_seed.py");

/// Run the same workload in DuckDB (in-process, Python) and merge its times.
pub fn run_duckdb(
    o: &Options,
    files: &SeedFiles,
    table: &mut SecondsTable,
    facts: &mut SeedFacts,
) -> Result<String, String> {
    let work = quarry_testkit::servers::abs(&o.work).join("duckdb");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let script = work.join("duckdb_seed.py");
    std::fs::write(&script, DUCKDB_SCRIPT).map_err(|e| e.to_string())?;
    let abs = |p: &Path| quarry_testkit::servers::abs(p).into_os_string();
    let out = run_python(
        o,
        vec![
            script.into_os_string(),
            work.join("seed.duckdb").into_os_string(),
            abs(&files.big),
            abs(&files.small),
            abs(&files.t1_empty),
            abs(&files.t1_half),
            o.seed_rows.to_string().into(),
            o.t1_rows.to_string().into(),
            o.query_timeout.to_string().into(),
        ],
    )?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut version = String::new();
    // One tab-separated line per item: kind, name, count, seconds-or-error, answer.
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        match f.as_slice() {
            ["version", v] => version = v.to_string(),
            ["time", name, count, secs, answer] => {
                let count = count.parse().ok();
                match secs.parse::<f64>() {
                    Ok(s) => table.set(name, count, "DuckDB", Some(s)),
                    Err(_) => {
                        table.set(name, count, "DuckDB", None);
                        table.note(name, "DuckDB", secs);
                    }
                }
                if !answer.is_empty() {
                    facts.add("DuckDB", name, *answer);
                }
            }
            ["fact", name, value] => facts.add("DuckDB", name, *value),
            _ => {}
        }
    }
    if !out.status.success() {
        return Err(format!("duckdb script failed ({})", out.status));
    }
    Ok(version)
}
