//! What a Prometheus scrape of the server reads (`quarry serve --metrics-port N`, served
//! by `quarry_server::metrics`): the status counters and numeric variables under
//! mysqld_exporter's names (`mysql_global_status_questions`,
//! `mysql_global_variables_max_connections`, …) so its dashboards and alerts work
//! unchanged, and statement latency histograms by statement type, which it has not.
//!
//! Owns: the histograms and the exposition text. Must not touch: the counters
//! themselves (the database's, engines' and log's).

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use quarry_common::Value;

/// The buckets' upper bounds, in seconds.
const BOUNDS: [f64; 11] = [
    0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0,
];

/// Statement types the histograms are kept by.
const TYPES: [&str; 6] = ["select", "insert", "update", "delete", "ddl", "other"];

#[derive(Default)]
struct Histogram {
    /// Statements at or under each bound (cumulated when written out).
    buckets: [AtomicU64; BOUNDS.len()],
    count: AtomicU64,
    micros: AtomicU64,
}

/// Statement latency by type.
#[derive(Default)]
pub struct Latency {
    by_type: [Histogram; TYPES.len()],
}

/// The type of a statement by its first word (every statement pays this: no allocation).
fn kind(sql: &str) -> usize {
    let t = sql.trim_start_matches(|c: char| c.is_whitespace() || c == '(');
    let end = t
        .bytes()
        .position(|b| !b.is_ascii_alphabetic())
        .unwrap_or(t.len());
    let word = &t[..end];
    let is = |w: &str| word.eq_ignore_ascii_case(w);
    if is("SELECT") || is("WITH") || is("SHOW") {
        0
    } else if is("INSERT") || is("REPLACE") || is("LOAD") {
        1
    } else if is("UPDATE") {
        2
    } else if is("DELETE") || is("TRUNCATE") {
        3
    } else if is("CREATE") || is("ALTER") || is("DROP") || is("RENAME") {
        4
    } else {
        5
    }
}

impl Latency {
    /// A statement of text `sql` took `took`.
    pub fn record(&self, sql: &str, took: Duration) {
        let h = &self.by_type[kind(sql)];
        let secs = took.as_secs_f64();
        if let Some(i) = BOUNDS.iter().position(|b| secs <= *b) {
            h.buckets[i].fetch_add(1, Relaxed);
        }
        h.count.fetch_add(1, Relaxed);
        h.micros.fetch_add(took.as_micros() as u64, Relaxed);
    }

    fn write(&self, out: &mut String) {
        let name = "quarry_statement_duration_seconds";
        let _ = writeln!(out, "# HELP {name} Statement latency by statement type.");
        let _ = writeln!(out, "# TYPE {name} histogram");
        for (t, h) in TYPES.iter().zip(&self.by_type) {
            let mut cumulated = 0;
            for (b, n) in BOUNDS.iter().zip(&h.buckets) {
                cumulated += n.load(Relaxed);
                let _ = writeln!(out, "{name}_bucket{{type=\"{t}\",le=\"{b}\"}} {cumulated}");
            }
            let count = h.count.load(Relaxed);
            let _ = writeln!(out, "{name}_bucket{{type=\"{t}\",le=\"+Inf\"}} {count}");
            let sum = h.micros.load(Relaxed) as f64 / 1e6;
            let _ = writeln!(out, "{name}_sum{{type=\"{t}\"}} {sum}");
            let _ = writeln!(out, "{name}_count{{type=\"{t}\"}} {count}");
        }
    }
}

/// A name as a Prometheus metric name part: lower case, `_` for anything else.
fn metric_part(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// The exposition text: `mysql_up`, the numeric status counters and variables, and the
/// latency histograms.
pub fn exposition(
    status: &[(String, String)],
    variables: &[(String, Value)],
    latency: &Latency,
) -> String {
    let mut out = String::with_capacity(64 << 10);
    out.push_str(
        "# HELP mysql_up Whether the server answers.\n# TYPE mysql_up gauge\nmysql_up 1\n",
    );
    for (k, v) in status {
        if let Ok(n) = v.trim().parse::<f64>() {
            let _ = writeln!(out, "mysql_global_status_{} {n}", metric_part(k));
        }
    }
    for (k, v) in variables {
        let n = match v {
            Value::Int(i) => *i as f64,
            Value::UInt(u) => *u as f64,
            Value::Double(d) => *d,
            Value::Decimal(d) => d.to_f64(),
            _ => continue,
        };
        let _ = writeln!(out, "mysql_global_variables_{} {n}", metric_part(k));
    }
    latency.write(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_cumulate_by_type() {
        let l = Latency::default();
        l.record("SELECT 1", Duration::from_micros(50));
        l.record(" select 2", Duration::from_millis(3));
        l.record("INSERT INTO t VALUES (1)", Duration::from_secs(20));
        let text = exposition(&[("Questions".into(), "3".into())], &[], &l);
        let line = |prefix: &str| {
            text.lines()
                .find(|x| x.starts_with(prefix))
                .unwrap_or_else(|| panic!("{prefix}: {text}"))
                .to_string()
        };
        assert_eq!(
            line("mysql_global_status_questions "),
            "mysql_global_status_questions 3"
        );
        let b = "quarry_statement_duration_seconds_bucket";
        assert_eq!(
            line(&format!("{b}{{type=\"select\",le=\"0.0001\"}}"))
                .rsplit(' ')
                .next(),
            Some("1")
        );
        assert_eq!(
            line(&format!("{b}{{type=\"select\",le=\"0.005\"}}"))
                .rsplit(' ')
                .next(),
            Some("2")
        );
        assert_eq!(
            line(&format!("{b}{{type=\"insert\",le=\"10\"}}"))
                .rsplit(' ')
                .next(),
            Some("0")
        );
        assert_eq!(
            line(&format!("{b}{{type=\"insert\",le=\"+Inf\"}}"))
                .rsplit(' ')
                .next(),
            Some("1")
        );
        assert_eq!(
            line("quarry_statement_duration_seconds_count{type=\"select\"}")
                .rsplit(' ')
                .next(),
            Some("2")
        );
    }
}
