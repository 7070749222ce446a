//! Results and how they are printed: the seed's sql-bench table (first column seconds,
//! the others relative to it), sysbench tps tables, and the JSON written beside them.

use std::fmt::Write as _;

/// One timed line of a seconds table; `secs[i]` belongs to `systems[i]`, `None` = not
/// run or failed (the reason is in `notes`).
#[derive(Debug, Clone)]
pub struct TimedRow {
    pub name: String,
    pub count: Option<u64>,
    pub secs: Vec<Option<f64>>,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct SecondsTable {
    pub title: String,
    pub systems: Vec<String>,
    pub rows: Vec<TimedRow>,
}

impl SecondsTable {
    pub fn new(title: &str, systems: Vec<String>) -> SecondsTable {
        SecondsTable {
            title: title.into(),
            systems,
            rows: Vec::new(),
        }
    }

    /// Record `secs` for `system` on the line `name`, creating the line when new.
    pub fn set(&mut self, name: &str, count: Option<u64>, system: &str, secs: Option<f64>) {
        let col = match self.systems.iter().position(|s| s == system) {
            Some(c) => c,
            None => {
                self.systems.push(system.to_string());
                for r in &mut self.rows {
                    r.secs.push(None);
                    r.notes.push(String::new());
                }
                self.systems.len() - 1
            }
        };
        let width = self.systems.len();
        let row = match self.rows.iter().position(|r| r.name == name) {
            Some(i) => &mut self.rows[i],
            None => {
                self.rows.push(TimedRow {
                    name: name.to_string(),
                    count,
                    secs: vec![None; width],
                    notes: vec![String::new(); width],
                });
                self.rows.last_mut().unwrap()
            }
        };
        if count.is_some() {
            row.count = count;
        }
        row.secs[col] = secs;
    }

    pub fn note(&mut self, name: &str, system: &str, note: &str) {
        let Some(col) = self.systems.iter().position(|s| s == system) else {
            return;
        };
        if let Some(r) = self.rows.iter_mut().find(|r| r.name == name) {
            r.notes[col] = note.to_string();
        }
    }

    /// The seed's layout: the first system in seconds, the others relative to it
    /// (1.00 same, bigger is slower); TOTALS over the lines every system finished.
    pub fn render(&self) -> String {
        const NAME: usize = 40;
        const CELL: usize = 16;
        let mut s = String::new();
        let width = NAME + (CELL + 1) * self.systems.len() + 1;
        let _ = writeln!(s, "{}", "=".repeat(width));
        let _ = writeln!(s, "{}", self.title);
        let _ = write!(s, "{:<NAME$}|", "Operation");
        for sys in &self.systems {
            let _ = write!(s, "{:>CELL$}|", clip(sys, CELL));
        }
        let _ = writeln!(s);
        let _ = writeln!(s, "{}", "-".repeat(width));
        let _ = writeln!(
            s,
            "Relative results per test (first column is in seconds; bigger is slower):"
        );
        let _ = writeln!(s, "{}", "-".repeat(width));
        for r in &self.rows {
            let label = match r.count {
                Some(c) => format!("{} ({})", r.name, c),
                None => r.name.clone(),
            };
            let _ = write!(s, "{:<NAME$}|", clip(&label, NAME));
            for (i, v) in r.secs.iter().enumerate() {
                let _ = write!(s, "{:>CELL$}|", cell(i, *v, r.secs[0], &r.notes[i]));
            }
            let _ = writeln!(s);
        }
        let _ = writeln!(s, "{}", "-".repeat(width));
        let totals = self.totals();
        let _ = write!(s, "{:<NAME$}|", format!("TOTALS ({} tests)", totals.1));
        for (i, v) in totals.0.iter().enumerate() {
            let _ = write!(s, "{:>CELL$}|", cell(i, *v, totals.0[0], ""));
        }
        let _ = writeln!(s);
        let _ = writeln!(s, "{}", "=".repeat(width));
        s
    }

    /// Per-system sums over the lines where every system has a time, and how many lines.
    pub fn totals(&self) -> (Vec<Option<f64>>, usize) {
        let complete: Vec<&TimedRow> = self
            .rows
            .iter()
            .filter(|r| r.secs.iter().all(|v| v.is_some()))
            .collect();
        let sums = (0..self.systems.len())
            .map(|i| {
                if complete.is_empty() {
                    None
                } else {
                    Some(complete.iter().map(|r| r.secs[i].unwrap()).sum())
                }
            })
            .collect();
        (sums, complete.len())
    }
}

fn clip(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

fn cell(col: usize, v: Option<f64>, base: Option<f64>, note: &str) -> String {
    match (col, v, base) {
        (_, None, _) if !note.is_empty() => clip(note, 16),
        (_, None, _) => "n/a".into(),
        (0, Some(x), _) => format!("{x:.3}"),
        (_, Some(x), Some(b)) if b > 0.0 => format!("{:.3}", x / b),
        (_, Some(x), _) => format!("{x:.3}s"),
    }
}

/// One sysbench cell as parsed from its output.
#[derive(Debug, Clone, PartialEq)]
pub struct SysbenchResult {
    pub system: String,
    pub workload: String,
    pub threads: u32,
    pub tps: f64,
    pub qps: f64,
    pub p95_ms: f64,
    pub errors: u64,
    /// Non-empty when the run aborted: what sysbench printed as the cause.
    pub failure: String,
}

/// Parse sysbench 1.0's run report.
pub fn parse_sysbench(out: &str) -> Option<(f64, f64, f64, u64)> {
    let per_sec = |line: &str| -> Option<f64> {
        let inner = line.split('(').nth(1)?;
        inner.split_whitespace().next()?.parse().ok()
    };
    let mut tps = None;
    let mut qps = None;
    let mut p95 = None;
    let mut errors = None;
    for line in out.lines() {
        let t = line.trim();
        if t.starts_with("transactions:") {
            tps = per_sec(t);
        } else if t.starts_with("queries:") {
            qps = per_sec(t);
        } else if t.starts_with("ignored errors:") {
            errors = t.split_whitespace().nth(2).and_then(|v| v.parse().ok());
        } else if t.starts_with("95th percentile:") {
            p95 = t.split_whitespace().nth(2).and_then(|v| v.parse().ok());
        }
    }
    Some((tps?, qps?, p95?, errors?))
}

/// The tps table: one line per workload and thread count, one column group per system,
/// and each system's tps relative to the first (bigger is faster here).
pub fn render_sysbench(results: &[SysbenchResult]) -> String {
    let mut systems: Vec<&str> = Vec::new();
    let mut cells: Vec<(&str, u32)> = Vec::new();
    for r in results {
        if !systems.contains(&r.system.as_str()) {
            systems.push(&r.system);
        }
        if !cells.contains(&(r.workload.as_str(), r.threads)) {
            cells.push((&r.workload, r.threads));
        }
    }
    let mut s = String::new();
    let _ = write!(s, "{:<22}{:>4} |", "sysbench workload", "thr");
    for sys in &systems {
        let _ = write!(s, " {:>28} |", clip(sys, 28));
    }
    let _ = writeln!(s);
    let _ = write!(s, "{:<26} |", "");
    for (i, _) in systems.iter().enumerate() {
        let rel = if i == 0 { "" } else { "x1st" };
        let _ = write!(s, " {:>9} {:>7} {:>4} {:>5} |", "tps", "p95 ms", "err", rel);
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "{}", "-".repeat(27 + 31 * systems.len()));
    for (w, t) in cells {
        let _ = write!(s, "{w:<22}{t:>4} |");
        let base = results
            .iter()
            .find(|r| r.system == systems[0] && r.workload == w && r.threads == t);
        for (i, sys) in systems.iter().enumerate() {
            match results
                .iter()
                .find(|r| r.system == *sys && r.workload == w && r.threads == t)
            {
                Some(r) if r.failure.is_empty() => {
                    let rel = match base {
                        Some(b) if i > 0 && b.failure.is_empty() && b.tps > 0.0 => {
                            format!("{:.2}", r.tps / b.tps)
                        }
                        _ => String::new(),
                    };
                    let _ = write!(
                        s,
                        " {:>9.0} {:>7.2} {:>4} {:>5} |",
                        r.tps, r.p95_ms, r.errors, rel
                    );
                }
                Some(r) => {
                    let _ = write!(s, " {:>28} |", clip(&format!("failed: {}", r.failure), 28));
                }
                None => {
                    let _ = write!(s, " {:>28} |", "n/a");
                }
            }
        }
        let _ = writeln!(s);
    }
    s
}

/// A JSON value, written by hand to keep serde out of the build.
#[derive(Debug, Clone)]
pub enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    pub fn obj(pairs: Vec<(&str, Json)>) -> Json {
        Json::Obj(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }

    pub fn str(s: impl Into<String>) -> Json {
        Json::Str(s.into())
    }

    pub fn opt(v: Option<f64>) -> Json {
        v.map_or(Json::Null, Json::Num)
    }

    pub fn write(&self, out: &mut String, indent: usize) {
        let pad = |n: usize| "  ".repeat(n);
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Num(n) if n.is_finite() => {
                if n.fract() == 0.0 && n.abs() < 1e15 {
                    let _ = write!(out, "{}", *n as i64);
                } else {
                    let _ = write!(out, "{n}");
                }
            }
            Json::Num(_) => out.push_str("null"),
            Json::Str(s) => {
                out.push('"');
                for c in s.chars() {
                    match c {
                        '"' => out.push_str("\\\""),
                        '\\' => out.push_str("\\\\"),
                        '\n' => out.push_str("\\n"),
                        c if (c as u32) < 0x20 => {
                            let _ = write!(out, "\\u{:04x}", c as u32);
                        }
                        c => out.push(c),
                    }
                }
                out.push('"');
            }
            Json::Arr(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    out.push_str(if i == 0 { "\n" } else { ",\n" });
                    out.push_str(&pad(indent + 1));
                    v.write(out, indent + 1);
                }
                if !items.is_empty() {
                    out.push('\n');
                    out.push_str(&pad(indent));
                }
                out.push(']');
            }
            Json::Obj(pairs) => {
                out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    out.push_str(if i == 0 { "\n" } else { ",\n" });
                    out.push_str(&pad(indent + 1));
                    Json::Str(k.clone()).write(out, indent + 1);
                    out.push_str(": ");
                    v.write(out, indent + 1);
                }
                if !pairs.is_empty() {
                    out.push('\n');
                    out.push_str(&pad(indent));
                }
                out.push('}');
            }
        }
    }

    pub fn to_pretty(&self) -> String {
        let mut s = String::new();
        self.write(&mut s, 0);
        s.push('\n');
        s
    }
}

impl SecondsTable {
    pub fn to_json(&self) -> Json {
        Json::obj(vec![
            ("title", Json::str(&self.title)),
            (
                "systems",
                Json::Arr(self.systems.iter().map(Json::str).collect()),
            ),
            (
                "rows",
                Json::Arr(
                    self.rows
                        .iter()
                        .map(|r| {
                            Json::obj(vec![
                                ("name", Json::str(&r.name)),
                                ("count", r.count.map_or(Json::Null, |c| Json::Num(c as f64))),
                                (
                                    "seconds",
                                    Json::Arr(r.secs.iter().map(|v| Json::opt(*v)).collect()),
                                ),
                                ("notes", Json::Arr(r.notes.iter().map(Json::str).collect())),
                            ])
                        })
                        .collect(),
                ),
            ),
        ])
    }
}

pub fn sysbench_json(results: &[SysbenchResult]) -> Json {
    Json::Arr(
        results
            .iter()
            .map(|r| {
                Json::obj(vec![
                    ("system", Json::str(&r.system)),
                    ("workload", Json::str(&r.workload)),
                    ("threads", Json::Num(r.threads as f64)),
                    ("tps", Json::Num(r.tps)),
                    ("qps", Json::Num(r.qps)),
                    ("p95_ms", Json::Num(r.p95_ms)),
                    ("errors", Json::Num(r.errors as f64)),
                    ("failure", Json::str(&r.failure)),
                ])
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    pub const SYSBENCH_OUT: &str = "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)

Running the test with following options:
Number of threads: 4

SQL statistics:
    queries performed:
        read:                            453964
        write:                           0
        other:                           64852
        total:                           518816
    transactions:                        32426  (1620.93 per sec.)
    queries:                             518816 (25934.85 per sec.)
    ignored errors:                      3      (0.15 per sec.)
    reconnects:                          0      (0.00 per sec.)

General statistics:
    total time:                          20.0031s
    total number of events:              32426

Latency (ms):
         min:                                    1.12
         avg:                                    2.47
         max:                                   29.87
         95th percentile:                        3.68
         sum:                                79976.12
";

    #[test]
    fn sysbench_report_is_parsed() {
        let (tps, qps, p95, err) = parse_sysbench(SYSBENCH_OUT).unwrap();
        assert_eq!((tps, qps, p95, err), (1620.93, 25934.85, 3.68, 3));
        assert!(parse_sysbench("FATAL: error 1062").is_none());
    }

    #[test]
    fn seconds_table_is_relative_to_the_first_system() {
        let mut t = SecondsTable::new("seed", vec!["MariaDB-MyISAM".into()]);
        t.set("select_key", Some(1000), "MariaDB-MyISAM", Some(2.0));
        t.set("select_key", None, "Quarry-row", Some(3.0));
        t.set("insert", Some(10), "MariaDB-MyISAM", Some(4.0));
        t.set("insert", None, "Quarry-row", None);
        t.note("insert", "Quarry-row", "timeout");
        let out = t.render();
        assert!(out.contains("select_key (1000)"), "{out}");
        let line = out.lines().find(|l| l.starts_with("select_key")).unwrap();
        assert!(line.contains("2.000|") && line.contains("1.500|"), "{line}");
        let line = out.lines().find(|l| l.starts_with("insert")).unwrap();
        assert!(line.contains("timeout|"), "{line}");
        // TOTALS only over complete lines: 2.0 and 3.0.
        let line = out.lines().find(|l| l.starts_with("TOTALS")).unwrap();
        assert!(
            line.contains("(1 tests)") && line.contains("1.500|"),
            "{line}"
        );
        assert_eq!(t.totals().0, vec![Some(2.0), Some(3.0)]);
    }

    #[test]
    fn sysbench_table_shows_ratio_to_the_first_system() {
        let r = |system: &str, tps: f64, failure: &str| SysbenchResult {
            system: system.into(),
            workload: "oltp_point_select".into(),
            threads: 4,
            tps,
            qps: tps,
            p95_ms: 0.2,
            errors: 0,
            failure: failure.into(),
        };
        let out = render_sysbench(&[
            r("InnoDB", 1000.0, ""),
            r("Quarry", 1500.0, ""),
            r("MyISAM", 0.0, "1062"),
        ]);
        let line = out
            .lines()
            .find(|l| l.starts_with("oltp_point_select"))
            .unwrap();
        assert!(line.contains("1500") && line.contains("1.50"), "{line}");
        assert!(line.contains("failed: 1062"), "{line}");
    }

    #[test]
    fn json_escapes_and_nests() {
        let j = Json::obj(vec![
            ("a", Json::str("q\"\n")),
            (
                "b",
                Json::Arr(vec![Json::Num(1.0), Json::Num(0.25), Json::Null]),
            ),
            ("c", Json::Bool(true)),
        ]);
        let s = j.to_pretty();
        assert!(s.contains(r#""a": "q\"\n""#), "{s}");
        assert!(
            s.contains("1,\n") && s.contains("0.25,\n") && s.contains("null"),
            "{s}"
        );
    }
}
