//! sqllogictest runner through the embedded API.
//!
//! `tests/slt/*.slt` must pass completely. The SQLite corpus selection in
//! `../shared/slt/` (CI has it; a plain clone does not, and then it is skipped) is run for
//! its pass rate, printed per file; it must not fall below the recorded floor.

use std::path::{Path, PathBuf};

use quarry_core::quarry_common::time::shown_in_column;
use quarry_core::quarry_common::Value;
use quarry_core::{Database, OutColumn, Output};

#[derive(Default, Debug)]
struct Tally {
    passed: usize,
    failed: usize,
    skipped: usize,
    failures: Vec<String>,
}

/// A value as the sqllogictest type letter `ty` shows it; a TIME or DATETIME(n) with its
/// column's n fractional digits, as the wire shows it (`col`).
fn format_value(v: &Value, ty: char, col: Option<&OutColumn>) -> String {
    if let Some(text) = col
        .filter(|_| ty == 'T')
        .and_then(|c| shown_in_column(v, &c.ty))
    {
        return text;
    }
    // A double with fixed decimals shows them, as on the wire.
    if let (Some(c), 'T', Value::Double(_)) = (col, ty, v) {
        return String::from_utf8_lossy(&quarry_core::quarry_common::value::column_text(v, &c.ty))
            .into_owned();
    }
    match v {
        Value::Null => "NULL".into(),
        _ => match ty {
            'I' => match v {
                Value::Int(_) | Value::UInt(_) => v.to_string(),
                Value::Str(s) if s.is_empty() => "0".into(),
                other => format!("{}", other.to_f64().trunc() as i64),
            },
            'R' => format!("{:.3}", v.to_f64()),
            _ => {
                let s = v.as_str_lossy().into_owned();
                if s.is_empty() {
                    "(empty)".into()
                } else {
                    s.chars()
                        // A multi-line value (EXPLAIN FORMAT=TREE) compares by its words.
                        .map(|c| match c {
                            '\n' => ' ',
                            c if (' '..='~').contains(&c) => c,
                            _ => '@',
                        })
                        .collect()
                }
            }
        },
    }
}

/// Run one file with tables created in `engine` unless they name theirs.
fn run_file(path: &Path, engine: &str, tally: &mut Tally) {
    let text = std::fs::read_to_string(path).unwrap();
    let dir = std::env::temp_dir().join(format!(
        "quarry-slt-{}-{engine}-{}",
        std::process::id(),
        path.file_name().unwrap().to_string_lossy()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let db = Database::open(&dir).unwrap();
    let mut s = db.session("root", "localhost");
    s.query(&format!(
        "CREATE DATABASE slt; USE slt; SET default_storage_engine = {engine}"
    ))
    .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    let name = path.display().to_string();
    while i < lines.len() {
        let line = lines[i].trim_end();
        if line.is_empty() || line.starts_with('#') {
            i += 1;
            continue;
        }
        // conditions
        let mut skip = false;
        let mut cur = line;
        while cur.starts_with("skipif") || cur.starts_with("onlyif") {
            let engine = cur.split_whitespace().nth(1).unwrap_or("");
            if (cur.starts_with("skipif") && engine == "mysql")
                || (cur.starts_with("onlyif") && engine != "mysql")
            {
                skip = true;
            }
            i += 1;
            cur = lines.get(i).map(|l| l.trim_end()).unwrap_or("");
        }
        if cur == "halt" {
            if skip {
                i += 1;
                continue;
            }
            break;
        }
        if cur.starts_with("hash-threshold") {
            i += 1;
            continue;
        }
        let header: Vec<&str> = cur.split_whitespace().collect();
        let start_line = i + 1;
        i += 1;
        let mut sql = vec![];
        while i < lines.len() && !lines[i].trim().is_empty() && lines[i].trim() != "----" {
            sql.push(lines[i]);
            i += 1;
        }
        let mut expected = vec![];
        if i < lines.len() && lines[i].trim() == "----" {
            i += 1;
            while i < lines.len() && !lines[i].trim().is_empty() {
                expected.push(lines[i].trim_end().to_string());
                i += 1;
            }
        }
        let sql = sql.join("\n");
        if skip {
            tally.skipped += 1;
            continue;
        }
        match header.first().copied() {
            Some("statement") => {
                let want_ok = header.get(1) == Some(&"ok");
                // `statement error 1792`: the error must carry that MySQL code.
                let want_code: Option<u16> = header.get(2).and_then(|c| c.parse().ok());
                let r = s.query(&sql);
                let code_ok = match (&r, want_code) {
                    (Err(e), Some(c)) => e.code == c,
                    _ => true,
                };
                if r.is_ok() == want_ok && code_ok {
                    tally.passed += 1;
                } else {
                    tally.failed += 1;
                    tally.failures.push(format!(
                        "{name}:{start_line}: statement {}: {sql}: {:?}",
                        header[1],
                        r.err()
                    ));
                }
            }
            Some("query") => {
                let types: Vec<char> = header
                    .get(1)
                    .map(|t| t.chars().collect())
                    .unwrap_or_default();
                let sort = header.get(2).copied().unwrap_or("nosort");
                let hashed = (expected.len() == 1 && expected[0].contains("values hashing to"))
                    .then(|| expected[0].clone());
                match s.query(&sql) {
                    Ok(mut outs) => {
                        let Some(Output::Rows { rows, columns }) = outs.pop() else {
                            tally.failed += 1;
                            tally
                                .failures
                                .push(format!("{name}:{start_line}: no result set: {sql}"));
                            continue;
                        };
                        let mut rows: Vec<Vec<String>> = rows
                            .iter()
                            .map(|r| {
                                r.iter()
                                    .enumerate()
                                    .map(|(c, v)| {
                                        format_value(
                                            v,
                                            *types.get(c).unwrap_or(&'T'),
                                            columns.get(c),
                                        )
                                    })
                                    .collect()
                            })
                            .collect();
                        let mut got: Vec<String> = match sort {
                            "rowsort" => {
                                rows.sort();
                                rows.into_iter().flatten().collect()
                            }
                            "valuesort" => {
                                let mut v: Vec<String> = rows.into_iter().flatten().collect();
                                v.sort();
                                v
                            }
                            _ => rows.into_iter().flatten().collect(),
                        };
                        if let Some(h) = &hashed {
                            // "N values hashing to MD5": MD5 over each value followed by a newline.
                            use md5::Digest;
                            let mut m = md5::Md5::new();
                            for v in &got {
                                m.update(v.as_bytes());
                                m.update(b"\n");
                            }
                            let digest: String =
                                m.finalize().iter().map(|b| format!("{b:02x}")).collect();
                            let mine = format!("{} values hashing to {digest}", got.len());
                            if &mine == h {
                                tally.passed += 1;
                            } else {
                                tally.failed += 1;
                                tally.failures.push(format!(
                                    "{name}:{start_line}: {sql}\n  expected {h}\n  got      {mine}"
                                ));
                            }
                            continue;
                        }
                        // Expected output may list one row per line, values separated by spaces.
                        let mut exp: Vec<String> = expected
                            .iter()
                            .flat_map(|l| {
                                l.split_whitespace().map(str::to_string).collect::<Vec<_>>()
                            })
                            .collect();
                        if sort == "valuesort" {
                            exp.sort();
                        }
                        got = got
                            .into_iter()
                            .flat_map(|v| {
                                if v.contains(' ') {
                                    v.split_whitespace().map(str::to_string).collect()
                                } else {
                                    vec![v]
                                }
                            })
                            .collect();
                        if sort == "valuesort" {
                            // values may contain spaces: compare the sorted token lists
                            exp.sort();
                            got.sort();
                        }
                        if got == exp {
                            tally.passed += 1;
                        } else {
                            tally.failed += 1;
                            tally.failures.push(format!("{name}:{start_line}: {sql}\n  expected {exp:?}\n  got      {got:?}"));
                        }
                    }
                    Err(e) => {
                        tally.failed += 1;
                        tally
                            .failures
                            .push(format!("{name}:{start_line}: {sql}: {e}"));
                    }
                }
            }
            _ => {
                tally.failed += 1;
                tally
                    .failures
                    .push(format!("{name}:{start_line}: unknown record {cur}"));
            }
        }
    }
    drop(s);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Run `f` on a thread with a server connection's stack, so statements need not grow
/// one of their own (as they do on a test thread's small stack).
fn statement_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(quarry_core::STATEMENT_STACK + (4 << 20))
            .spawn_scoped(s, f)
            .unwrap()
            .join()
            .unwrap()
    })
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files(&p));
            } else if matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("slt") | Some("test")
            ) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Files of tests/slt not run with tables of an engine, and why.
const ENGINE_SKIPS: &[(&str, &str, &str)] = &[];

fn project_files_pass(engine: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/slt");
    let mut t = Tally::default();
    let fs = files(&dir);
    assert!(!fs.is_empty(), "no .slt files in {}", dir.display());
    for f in fs {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if let Some((_, _, why)) = ENGINE_SKIPS
            .iter()
            .find(|(e, n, _)| *e == engine && *n == name)
        {
            eprintln!("{name} with {engine} tables: skipped ({why})");
            continue;
        }
        statement_stack(|| run_file(&f, engine, &mut t));
    }
    for f in &t.failures {
        eprintln!("{f}");
    }
    eprintln!(
        "tests/slt with {engine} tables: {} passed, {} failed, {} skipped",
        t.passed, t.failed, t.skipped
    );
    assert_eq!(t.failed, 0);
    assert!(t.passed > 50);
}

#[test]
fn project_slt_files_pass() {
    project_files_pass("InnoDB");
}

#[test]
fn project_slt_files_pass_with_column_tables() {
    project_files_pass("COLUMN");
}

#[test]
fn shared_corpus_pass_rate() {
    shared_corpus("InnoDB");
}

#[test]
fn shared_corpus_pass_rate_with_column_tables() {
    shared_corpus("COLUMN");
}

/// Pass rate on the shared SQLite corpus; skipped (and says so) where ../shared is absent.
fn shared_corpus(engine: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/slt");
    if !dir.exists() {
        eprintln!("shared corpus not found at {}: skipped", dir.display());
        return;
    }
    let quick = std::env::var("QUARRY_SLT_FULL").is_err();
    let mut total = Tally::default();
    let only = std::env::var("QUARRY_SLT_ONLY").ok();
    for f in files(&dir) {
        if only
            .as_ref()
            .is_some_and(|o| !f.to_string_lossy().contains(o.as_str()))
        {
            continue;
        }
        // The large index/ files take minutes in debug builds; QUARRY_SLT_FULL=1 runs them.
        if quick
            && std::fs::metadata(&f)
                .map(|m| m.len() > 1_500_000)
                .unwrap_or(false)
        {
            eprintln!("{}: skipped (large; set QUARRY_SLT_FULL=1)", f.display());
            continue;
        }
        let mut t = Tally::default();
        statement_stack(|| run_file(&f, engine, &mut t));
        eprintln!(
            "{}: {} passed, {} failed, {} skipped",
            f.display(),
            t.passed,
            t.failed,
            t.skipped
        );
        let show = if std::env::var("QUARRY_SLT_VERBOSE").is_ok() {
            usize::MAX
        } else {
            3
        };
        for x in t.failures.iter().take(show) {
            eprintln!("    {x}");
        }
        total.passed += t.passed;
        total.failed += t.failed;
        total.skipped += t.skipped;
    }
    let rate = total.passed as f64 / (total.passed + total.failed).max(1) as f64;
    eprintln!(
        "shared corpus with {engine} tables: {} passed, {} failed, {} skipped: pass rate {:.1}%",
        total.passed,
        total.failed,
        total.skipped,
        rate * 100.0
    );
    assert!(rate > 0.99, "pass rate fell to {:.1}%", rate * 100.0);
}
