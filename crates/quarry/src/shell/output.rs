//! What the shell prints, and where: result sets as tables, tab-separated (`--batch`,
//! escaped unless `--raw`) or one field per line (`--vertical`, `\G`), and the lines
//! around them; to standard output, through a pager (`pager` / `\P`, on a terminal: a
//! statement's output is collected, then handed to the pager), and copied to a tee file
//! (`tee` / `\T`), as the mariadb client does.
//!
//! Owns: formatting and the output's destinations. Must not touch: reading input or
//! running statements (`shell`'s).

use std::cell::RefCell;
use std::io::Write;

use quarry_core::quarry_common::Value;
use quarry_core::Output;

/// How result sets print.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Format {
    Table,
    /// Tab-separated; `raw`: values as they are, else with `\t`, `\n`, `\\` and NUL
    /// escaped as the mariadb client escapes them.
    Batch {
        raw: bool,
    },
    Vertical,
}

#[derive(Default)]
struct Sink {
    tee: Option<std::fs::File>,
    /// The pager's command, when one is set (terminal only).
    pager: Option<String>,
    /// A statement's output waiting for the pager.
    held: Option<String>,
}

thread_local! {
    static SINK: RefCell<Sink> = RefCell::new(Sink::default());
}

/// Write `s` where the shell's output goes.
pub fn emit(s: &str) {
    SINK.with(|k| {
        let mut k = k.borrow_mut();
        if let Some(t) = k.tee.as_mut() {
            let _ = t.write_all(s.as_bytes());
        }
        match k.held.as_mut() {
            Some(h) => h.push_str(s),
            None => {
                let mut o = std::io::stdout().lock();
                let _ = o.write_all(s.as_bytes());
            }
        }
    })
}

/// `println!` to the shell's output.
macro_rules! outln {
    () => { $crate::shell::output::emit("\n") };
    ($($t:tt)*) => { $crate::shell::output::emit(&format!("{}\n", format_args!($($t)*))) };
}
/// `print!` to the shell's output.
macro_rules! out {
    ($($t:tt)*) => { $crate::shell::output::emit(&format!($($t)*)) };
}
pub(crate) use {out, outln};

/// `tee FILE`: output is copied to the file (appended) from now on.
pub fn tee(path: &str) -> std::io::Result<()> {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    SINK.with(|k| k.borrow_mut().tee = Some(f));
    Ok(())
}

/// `notee`.
pub fn notee() {
    SINK.with(|k| k.borrow_mut().tee = None);
}

/// `pager CMD` / `nopager` (None).
pub fn set_pager(cmd: Option<String>) {
    SINK.with(|k| k.borrow_mut().pager = cmd);
}

/// Before a statement on a terminal: its output is held for the pager, if one is set.
pub fn hold_for_pager() {
    SINK.with(|k| {
        let mut k = k.borrow_mut();
        if k.pager.is_some() {
            k.held = Some(String::new());
        }
    })
}

/// After it: the held output goes through the pager (`sh -c CMD`), or to standard output
/// when the pager cannot be started.
pub fn release_to_pager() {
    let (held, pager) = SINK.with(|k| {
        let mut k = k.borrow_mut();
        (k.held.take(), k.pager.clone())
    });
    let (Some(text), Some(cmd)) = (held, pager) else {
        return;
    };
    if text.is_empty() {
        return;
    }
    let child = std::process::Command::new("sh")
        .arg("-c")
        .arg(&cmd)
        .stdin(std::process::Stdio::piped())
        .spawn();
    match child {
        Ok(mut c) => {
            if let Some(mut stdin) = c.stdin.take() {
                let _ = stdin.write_all(text.as_bytes());
            }
            let _ = c.wait();
        }
        Err(_) => {
            let _ = std::io::stdout().write_all(text.as_bytes());
        }
    }
}

/// A value as the wire shows it (quarry_common's column_text); NULL as `NULL`.
fn cell(v: &Value, col: &quarry_core::OutColumn) -> String {
    match v {
        Value::Null => "NULL".to_string(),
        _ => String::from_utf8_lossy(&quarry_core::quarry_common::value::column_text(v, &col.ty))
            .into_owned(),
    }
}

/// A value as `--batch` prints it: tab, newline, backslash and NUL escaped.
fn batch_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            c => out.push(c),
        }
    }
    out
}

pub fn print_output(out: &Output, secs: f64, warnings: usize, format: Format, names: bool) {
    let batch = matches!(format, Format::Batch { .. });
    let w = if warnings > 0 {
        format!(
            ", {warnings} warning{}",
            if warnings == 1 { "" } else { "s" }
        )
    } else {
        String::new()
    };
    match out {
        // The shell collects results (`Session::query`); streamed ones are printed as
        // they came by whoever streamed them.
        Output::Streamed { rows } => outln!("{rows} rows{w} ({secs:.2} sec)"),
        Output::Ok { affected, info, .. } => {
            if batch {
                return;
            }
            outln!(
                "Query OK, {affected} row{} affected{w} ({secs:.2} sec)",
                if *affected == 1 { "" } else { "s" }
            );
            if let Some(i) = info {
                outln!("{i}");
            }
        }
        Output::Rows { columns, rows } => {
            let cells: Vec<Vec<String>> = rows
                .iter()
                .map(|r| r.iter().zip(columns).map(|(v, c)| cell(v, c)).collect())
                .collect();
            match format {
                Format::Batch { raw } => {
                    let show = |s: &str| if raw { s.to_string() } else { batch_escape(s) };
                    if names && !rows.is_empty() {
                        let head: Vec<String> = columns.iter().map(|c| show(&c.name)).collect();
                        outln!("{}", head.join("\t"));
                    }
                    for r in &cells {
                        let line: Vec<String> = r.iter().map(|c| show(c)).collect();
                        outln!("{}", line.join("\t"));
                    }
                    return;
                }
                Format::Vertical => {
                    let width = columns
                        .iter()
                        .map(|c| c.name.chars().count())
                        .max()
                        .unwrap_or(0);
                    for (n, r) in cells.iter().enumerate() {
                        outln!(
                            "*************************** {}. row ***************************",
                            n + 1
                        );
                        for (c, v) in columns.iter().zip(r) {
                            outln!("{:>width$}: {v}", c.name);
                        }
                    }
                }
                Format::Table if !rows.is_empty() => print_table(columns, &cells, names),
                Format::Table => {}
            }
            if rows.is_empty() {
                outln!("Empty set{w} ({secs:.2} sec)");
            } else {
                outln!(
                    "{} row{} in set{w} ({secs:.2} sec)",
                    rows.len(),
                    if rows.len() == 1 { "" } else { "s" }
                );
            }
        }
    }
}

fn print_table(columns: &[quarry_core::OutColumn], cells: &[Vec<String>], names: bool) {
    let mut width: Vec<usize> = columns.iter().map(|c| c.name.chars().count()).collect();
    for r in cells {
        for (i, c) in r.iter().enumerate() {
            width[i] = width[i].max(c.chars().count());
        }
    }
    let sep: String = width
        .iter()
        .map(|w| format!("+{}", "-".repeat(w + 2)))
        .collect::<String>()
        + "+";
    outln!("{sep}");
    if names {
        let head: String = columns
            .iter()
            .zip(&width)
            .map(|(c, w)| format!("| {:<w$} ", c.name, w = w))
            .collect::<String>()
            + "|";
        outln!("{head}");
        outln!("{sep}");
    }
    for r in cells {
        let line: String = r
            .iter()
            .zip(columns.iter().zip(&width))
            .map(|(c, (col, w))| {
                if col.ty.is_numeric() {
                    format!("| {:>w$} ", c, w = w)
                } else {
                    format!("| {:<w$} ", c, w = w)
                }
            })
            .collect::<String>()
            + "|";
        outln!("{line}");
    }
    outln!("{sep}");
}
