//! The TPC-H phase (issue 20, item 6): `tpchgen-cli` data loaded into every server system
//! and into DuckDB, the 22 queries of `bench/tpch/` timed (median of three, through the
//! protocol for servers, in-process for DuckDB), and every server's answer compared with
//! MariaDB-InnoDB's row by row as text, so decimal scale counts. Owns the phase's flow
//! and the comparison; servers come from quarry-testkit, tables and JSON from report.rs.

use crate::args::Options;
use crate::report::SecondsTable;
use crate::seed::{median, timed_conn};
use quarry_testkit::client::Conn;
use quarry_testkit::servers::{abs, Server};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Load order: a table before the ones that refer to it.
pub const TABLES: [&str; 8] = [
    "region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem",
];

const SCHEMA: &str = include_str!("../../../bench/tpch/schema.sql");
const DUCKDB_SCRIPT: &str = include_str!("../duckdb_tpch.py");

macro_rules! queries {
    ($($n:literal),*) => {
        [$((concat!("Q", $n), include_str!(concat!("../../../bench/tpch/queries/q", $n, ".sql")))),*]
    };
}

pub const QUERIES: [(&str, &str); 22] = queries!(
    "01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12", "13", "14", "15", "16",
    "17", "18", "19", "20", "21", "22"
);

/// The system every answer is checked against and every time is relative to.
pub const BASELINE: &str = "MariaDB-InnoDB";

pub struct TpchSystem<'a> {
    pub label: String,
    pub server: &'a Server,
    pub engine: String,
}

type Rows = Vec<Vec<Option<String>>>;

/// Each system's answer to each query (or why it has none).
#[derive(Debug, Default)]
pub struct Answers {
    by_system: BTreeMap<String, BTreeMap<String, Result<Rows, String>>>,
    /// DuckDB's answers are not comparable as text (its decimal scales differ); their
    /// row counts are.
    duckdb_rows: BTreeMap<String, usize>,
}

impl Answers {
    fn add(&mut self, system: &str, query: &str, answer: Result<Rows, String>) {
        self.by_system
            .entry(system.to_string())
            .or_default()
            .insert(query.to_string(), answer);
    }

    /// One line per system: how many answers equal the baseline's, then each difference
    /// with its first differing row.
    pub fn compare(&self) -> Vec<String> {
        let mut out = Vec::new();
        let Some(base) = self.by_system.get(BASELINE) else {
            out.push(format!("no {BASELINE} answers to compare with"));
            return out;
        };
        let others = self
            .by_system
            .iter()
            .filter(|(s, _)| s.as_str() != BASELINE);
        for (system, answers) in others {
            let mut equal = 0;
            let mut diffs = Vec::new();
            for (q, _) in QUERIES {
                match (base.get(q), answers.get(q)) {
                    (Some(Ok(b)), Some(Ok(a))) if a == b => equal += 1,
                    (Some(Ok(b)), Some(Ok(a))) => diffs.push(format!("{q}: {}", first_diff(b, a))),
                    (_, Some(Err(e))) => diffs.push(format!("{q}: failed: {e}")),
                    (Some(Err(_)), _) => diffs.push(format!("{q}: no {BASELINE} answer")),
                    _ => diffs.push(format!("{q}: not run")),
                }
            }
            out.push(format!(
                "{system}: {equal}/{} answers equal to {BASELINE}'s",
                QUERIES.len()
            ));
            out.extend(diffs.into_iter().map(|d| format!("  {system} {d}")));
        }
        if !self.duckdb_rows.is_empty() {
            let differing: Vec<String> = QUERIES
                .iter()
                .filter_map(|(q, _)| {
                    let expected = base.get(*q)?.as_ref().ok()?.len();
                    let got = *self.duckdb_rows.get(*q)?;
                    (got != expected).then(|| format!("{q} ({got} rows, {expected} expected)"))
                })
                .collect();
            out.push(if differing.is_empty() {
                format!(
                    "DuckDB: {} row counts equal to {BASELINE}'s (values not compared)",
                    self.duckdb_rows.len()
                )
            } else {
                format!("DuckDB: row counts differ: {}", differing.join(", "))
            });
        }
        out
    }
}

fn first_diff(expected: &Rows, got: &Rows) -> String {
    let show = |r: Option<&Vec<Option<String>>>| match r {
        None => "no row".to_string(),
        Some(r) => r
            .iter()
            .map(|v| v.as_deref().unwrap_or("NULL"))
            .collect::<Vec<_>>()
            .join("|"),
    };
    let i = (0..expected.len().max(got.len()))
        .find(|&i| expected.get(i) != got.get(i))
        .unwrap_or(0);
    format!(
        "{} rows, {} expected; row {}: got {}, expected {}",
        got.len(),
        expected.len(),
        i + 1,
        show(got.get(i)),
        show(expected.get(i))
    )
}

/// `tpchgen-cli` beside the venv's Python (scripts/bench.sh installs it there), else PATH.
fn tpchgen(o: &Options) -> PathBuf {
    let venv = abs(&o.python).with_file_name("tpchgen-cli");
    if venv.exists() {
        venv
    } else {
        PathBuf::from("tpchgen-cli")
    }
}

/// The .tbl files for `o.sf`, generated once per work directory and scale factor.
pub fn generate(o: &Options) -> Result<PathBuf, String> {
    let dir = abs(&o.work).join(format!("tpch-sf{}", o.sf));
    let done = dir.join(".complete");
    if done.exists() {
        return Ok(dir);
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let bin = tpchgen(o);
    let out = std::process::Command::new(&bin)
        .arg("-s")
        .arg(o.sf.to_string())
        .arg(format!("--output-dir={}", dir.display()))
        .output()
        .map_err(|e| format!("{}: {e} (scripts/bench.sh installs it)", bin.display()))?;
    if !out.status.success() {
        return Err(format!(
            "tpchgen-cli failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    for t in TABLES {
        if !dir.join(format!("{t}.tbl")).exists() {
            return Err(format!("tpchgen-cli wrote no {t}.tbl in {}", dir.display()));
        }
    }
    std::fs::write(&done, "").map_err(|e| e.to_string())?;
    Ok(dir)
}

fn schema_statements() -> Vec<String> {
    let text: String = SCHEMA
        .lines()
        .filter(|l| !l.starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    text.split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Create `db` in `sys`'s engine and load every table; seconds for the loads.
fn load(o: &Options, sys: &TpchSystem, db: &str, data: &Path) -> Result<(f64, u64), String> {
    let mut c = sys.server.connect(None)?;
    c.exec(&format!("DROP DATABASE IF EXISTS {db}"))
        .and_then(|_| c.exec(&format!("CREATE DATABASE {db}")))
        .map_err(|e| e.to_string())?;
    c.quit();
    let mut c = timed_conn(o, sys.server, db)?;
    c.exec(&format!("SET default_storage_engine = {}", sys.engine))
        .map_err(|e| e.to_string())?;
    for stmt in schema_statements() {
        c.exec(&stmt).map_err(|e| format!("schema: {e}"))?;
    }
    let start = Instant::now();
    let mut rows = 0;
    for t in TABLES {
        let path = data.join(format!("{t}.tbl"));
        rows += c
            .exec(&format!(
                "LOAD DATA LOCAL INFILE '{}' INTO TABLE {t} FIELDS TERMINATED BY '|' LINES TERMINATED BY '\\n'",
                path.display()
            ))
            .map_err(|e| format!("load {t}: {e}"))?;
    }
    let secs = start.elapsed().as_secs_f64();
    // Statistics as a DBA would leave them after a bulk load, outside the timed part.
    for t in TABLES {
        c.query(&format!("ANALYZE TABLE {t}"))
            .map_err(|e| format!("analyze {t}: {e}"))?;
    }
    c.quit();
    Ok((secs, rows))
}

/// Load the data into `sys` and run the 22 queries (median of three; one run when the
/// first takes over a minute), recording times in `table` and answers in `answers`.
pub fn run_system(
    o: &Options,
    sys: &TpchSystem,
    data: &Path,
    table: &mut SecondsTable,
    answers: &mut Answers,
    progress: &dyn Fn(&str),
) -> Result<(), String> {
    let label = sys.label.as_str();
    let db = format!("tpch_{}", sys.engine.to_lowercase());
    progress(&format!("{label}: TPC-H load"));
    match load(o, sys, &db, data) {
        Ok((secs, rows)) => table.set("load", Some(rows), label, Some(secs)),
        Err(e) => {
            table.set("load", None, label, None);
            table.note("load", label, &e);
            return Err(e);
        }
    }
    let mut conn: Option<Conn> = None;
    for (q, sql) in QUERIES {
        progress(&format!("{label}: TPC-H {q}"));
        let sql = sql.trim().trim_end_matches(';');
        let mut runs = Vec::new();
        let mut answer = None;
        while runs.len() < 3 && runs.first().is_none_or(|&first| first <= 60.0) {
            if conn.is_none() {
                conn = Some(timed_conn(o, sys.server, &db)?);
            }
            let start = Instant::now();
            let r = conn.as_mut().unwrap().query(sql);
            let secs = start.elapsed().as_secs_f64();
            match r {
                Ok(res) => {
                    runs.push(secs);
                    answer.get_or_insert(Ok(res.rows));
                }
                Err(e) => {
                    // A failed statement may leave the connection unusable: start afresh.
                    conn = None;
                    let e = if e.code == 0 && secs >= o.query_timeout as f64 * 0.99 {
                        "timeout".to_string()
                    } else {
                        e.to_string()
                    };
                    answer = Some(Err(e));
                    break;
                }
            }
        }
        match answer {
            Some(Ok(rows)) => {
                table.set(q, None, label, Some(median(runs)));
                answers.add(label, q, Ok(rows));
            }
            Some(Err(e)) => {
                table.set(q, None, label, None);
                table.note(q, label, &e);
                answers.add(label, q, Err(e));
            }
            None => {}
        }
    }
    Ok(())
}

/// The same load and queries in DuckDB (in-process, Python); returns its version.
pub fn run_duckdb(
    o: &Options,
    data: &Path,
    table: &mut SecondsTable,
    answers: &mut Answers,
) -> Result<String, String> {
    let work = abs(&o.work).join("duckdb-tpch");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).map_err(|e| e.to_string())?;
    let write = |name: &str, text: &str| -> Result<PathBuf, String> {
        let p = work.join(name);
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
        Ok(p)
    };
    let script = write("duckdb_tpch.py", DUCKDB_SCRIPT)?;
    let schema = write("schema.sql", SCHEMA)?;
    let mut args = vec![
        script.into_os_string(),
        work.join("tpch.duckdb").into_os_string(),
        data.as_os_str().to_owned(),
        schema.into_os_string(),
    ];
    for (q, sql) in QUERIES {
        args.push(write(&format!("{}.sql", q.to_lowercase()), sql)?.into_os_string());
    }
    let out = crate::seed::run_python(o, args)?;
    let mut version = String::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<&str> = line.split('\t').collect();
        match f.as_slice() {
            ["version", v] => version = v.to_string(),
            ["time", name, count, secs, rows] => {
                match secs.parse::<f64>() {
                    Ok(s) => table.set(name, count.parse().ok(), "DuckDB", Some(s)),
                    Err(_) => {
                        table.set(name, None, "DuckDB", None);
                        table.note(name, "DuckDB", secs);
                    }
                }
                if let Ok(n) = rows.parse() {
                    answers.duckdb_rows.insert(name.to_string(), n);
                }
            }
            _ => {}
        }
    }
    if !out.status.success() {
        return Err(format!("duckdb script failed ({})", out.status));
    }
    Ok(version)
}

/// The targets, checked on the table: totals over the 22 queries against
/// DuckDB's, and the queries slower than the baseline's time.
pub fn targets(table: &SecondsTable) -> Vec<String> {
    let col = |name: &str| table.systems.iter().position(|s| s == name);
    let total = |c: usize| -> Option<f64> {
        QUERIES
            .iter()
            .map(|(q, _)| table.rows.iter().find(|r| r.name == *q)?.secs[c])
            .sum()
    };
    let mut out = Vec::new();
    let duck = col("DuckDB").and_then(total);
    let base = col(BASELINE);
    for (i, sys) in table.systems.iter().enumerate() {
        if !sys.starts_with("Quarry") {
            continue;
        }
        let limit = if sys.ends_with("COLUMN") { 2.0 } else { 5.0 };
        match (total(i), duck) {
            (Some(t), Some(d)) if d > 0.0 => out.push(format!(
                "{sys}: 22-query total {t:.3} s = {:.1}x DuckDB's {d:.3} s (target <= {limit}x)",
                t / d
            )),
            (Some(t), _) => out.push(format!("{sys}: 22-query total {t:.3} s")),
            _ => out.push(format!("{sys}: not every query answered")),
        }
        if let Some(b) = base {
            let slower: Vec<String> = table
                .rows
                .iter()
                .filter(|r| r.name.starts_with('Q'))
                .filter_map(|r| match (r.secs[i], r.secs[b]) {
                    (Some(x), Some(y)) if x > y => Some(format!("{} ({x:.3} > {y:.3})", r.name)),
                    _ => None,
                })
                .collect();
            out.push(format!(
                "{sys}: {} queries slower than {BASELINE}{}{}",
                slower.len(),
                if slower.is_empty() { "" } else { ": " },
                slower.join(", ")
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(v: &[&[&str]]) -> Rows {
        v.iter()
            .map(|r| r.iter().map(|c| Some(c.to_string())).collect())
            .collect()
    }

    #[test]
    fn every_query_and_the_schema_are_embedded() {
        assert_eq!(QUERIES.len(), 22);
        assert!(QUERIES.iter().all(|(_, sql)| sql.contains("select")));
        assert_eq!(schema_statements().len(), TABLES.len());
    }

    #[test]
    fn answers_differing_in_scale_or_rows_are_reported() {
        let mut a = Answers::default();
        for (q, _) in QUERIES {
            a.add(BASELINE, q, Ok(rows(&[&["1", "2.50"]])));
            let mine = match q {
                "Q03" => rows(&[&["1", "2.5"]]),
                "Q04" => rows(&[&["1", "2.50"], &["2", "0.00"]]),
                _ => rows(&[&["1", "2.50"]]),
            };
            a.add(
                "Quarry-ROW",
                q,
                if q == "Q05" {
                    Err("1064".into())
                } else {
                    Ok(mine)
                },
            );
        }
        a.duckdb_rows.insert("Q01".into(), 1);
        let lines = a.compare();
        assert_eq!(
            lines[0],
            "Quarry-ROW: 19/22 answers equal to MariaDB-InnoDB's"
        );
        assert!(lines[1].contains("Q03: 1 rows, 1 expected; row 1: got 1|2.5, expected 1|2.50"));
        assert!(lines[2].contains("Q04: 2 rows, 1 expected; row 2: got 2|0.00, expected no row"));
        assert!(lines[3].contains("Q05: failed: 1064"));
        assert_eq!(
            lines[4],
            "DuckDB: 1 row counts equal to MariaDB-InnoDB's (values not compared)"
        );
    }

    #[test]
    fn targets_name_slower_queries_and_ratios() {
        let mut t = SecondsTable::new("tpch", vec![BASELINE.into()]);
        for (q, _) in QUERIES {
            t.set(q, None, BASELINE, Some(1.0));
            t.set(q, None, "DuckDB", Some(0.1));
            t.set(
                q,
                None,
                "Quarry-COLUMN",
                Some(if q == "Q07" { 1.5 } else { 0.2 }),
            );
        }
        let lines = targets(&t);
        assert!(
            lines[0].starts_with("Quarry-COLUMN: 22-query total 5.700 s = 2.6x DuckDB's 2.200 s")
        );
        assert_eq!(
            lines[1],
            "Quarry-COLUMN: 1 queries slower than MariaDB-InnoDB: Q07 (1.500 > 1.000)"
        );
    }
}
