//! `quarry sql`: the embedded shell, with the mariadb client's commands and output forms.
//!
//! Input (a terminal, a pipe, `-e`, or `source FILE`) is split into statements at the
//! delimiter (`;` unless `delimiter` changed it), `\g` or `\G`, outside quotes and
//! comments. At the start of a statement the client's commands are taken: `help` (`\h`,
//! `?`), `quit` / `exit` (`\q`), `use db` (`\u`), `source file` (`\.`), `delimiter x`
//! (`\d`), `warnings` / `nowarning` (`\W` / `\w`), `status` (`\s`); `\c` clears the
//! statement being typed. Results print as tables, or tab-separated (`--batch`, escaped
//! unless `--raw`), or one field per line (`--vertical`, or a statement ended with `\G`).
//!
//! Owns: reading, splitting and printing. Must not touch: what statements do (the
//! session's).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use quarry_core::quarry_common::Value;
use quarry_core::{Database, Output, Session};

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

#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub format: Format,
    /// Print the column names (`-N` / `--skip-column-names` turns them off).
    pub names: bool,
}

/// What a line of input asks next.
enum Flow {
    Go,
    Quit,
}

/// Sources nested deeper are refused (a file that sources itself).
const MAX_SOURCE_DEPTH: usize = 16;

pub struct Shell<'a> {
    session: &'a mut Session,
    settings: Settings,
    delimiter: String,
    show_warnings: bool,
    /// The statement being read, as bytes: a dump's BLOB literals need not be UTF-8.
    buf: Vec<u8>,
    /// Inside a quoted string or name (its quote byte), across lines.
    quote: Option<u8>,
    /// Inside a `/* … */` comment, across lines.
    comment: bool,
    depth: usize,
    /// A statement failed (the exit status of `-e` and piped input).
    pub failed: bool,
}

impl<'a> Shell<'a> {
    pub fn new(session: &'a mut Session, settings: Settings) -> Shell<'a> {
        Shell {
            session,
            settings,
            delimiter: ";".into(),
            show_warnings: false,
            buf: Vec::new(),
            quote: None,
            comment: false,
            depth: 0,
            failed: false,
        }
    }

    pub fn session(&self) -> &Session {
        self.session
    }

    /// Whether a statement is being typed (the prompt shows `->`).
    pub fn continuing(&self) -> bool {
        self.buf.iter().any(|b| !b.is_ascii_whitespace())
    }

    /// Feed `input` (`-e`, a piped input, a sourced file) line by line, then run what is
    /// left unterminated. False: a `quit` was met, or (`stop_on_error`) a statement
    /// failed. Lines are read as bytes, one at a time (a dump need not fit in memory).
    pub fn feed_all(&mut self, mut input: impl std::io::BufRead, stop_on_error: bool) -> bool {
        let mut line = Vec::new();
        loop {
            line.clear();
            match input.read_until(b'\n', &mut line) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    println!("ERROR: cannot read the input: {e}");
                    self.failed = true;
                    return false;
                }
            }
            while line.last().is_some_and(|&b| b == b'\n' || b == b'\r') {
                line.pop();
            }
            if matches!(self.feed(&line), Flow::Quit) {
                return false;
            }
            if stop_on_error && self.failed {
                return false;
            }
        }
        self.finish()
    }

    /// Run a statement left without its delimiter at the end of the input.
    pub fn finish(&mut self) -> bool {
        if self.continuing() {
            let sql = std::mem::take(&mut self.buf);
            self.run(&sql, false);
        }
        self.buf.clear();
        self.quote = None;
        self.comment = false;
        !self.failed
    }

    /// One line of input. Returns false for `quit` / `exit` / `\q`.
    pub fn feed_line(&mut self, line: &str) -> bool {
        matches!(self.feed(line.as_bytes()), Flow::Go)
    }

    /// Split on bytes: quotes, comments, the delimiter and `\g` are ASCII, and no byte of
    /// a multi-byte UTF-8 character is, so a line of any bytes splits right.
    fn feed(&mut self, line: &[u8]) -> Flow {
        if !self.continuing() && self.quote.is_none() && !self.comment {
            if let Some(flow) = self.command(String::from_utf8_lossy(line).trim()) {
                return flow;
            }
        }
        let delim = self.delimiter.clone().into_bytes();
        let mut i = 0;
        while i < line.len() {
            let c = line[i];
            let next = line.get(i + 1).copied();
            if let Some(q) = self.quote {
                self.buf.push(c);
                if c == b'\\' && q != b'`' {
                    if let Some(n) = next {
                        self.buf.push(n);
                        i += 2;
                        continue;
                    }
                } else if c == q {
                    self.quote = None;
                }
                i += 1;
                continue;
            }
            if self.comment {
                self.buf.push(c);
                if c == b'*' && next == Some(b'/') {
                    self.buf.push(b'/');
                    self.comment = false;
                    i += 2;
                    continue;
                }
                i += 1;
                continue;
            }
            match c {
                b'\'' | b'"' | b'`' => {
                    self.quote = Some(c);
                    self.buf.push(c);
                    i += 1;
                    continue;
                }
                b'/' if next == Some(b'*') => {
                    // A versioned comment (`/*!40101 … */`) is code; it is kept either way.
                    self.comment = true;
                    self.buf.extend_from_slice(b"/*");
                    i += 2;
                    continue;
                }
                b'#' => break,
                b'-' if next == Some(b'-')
                    && line.get(i + 2).is_none_or(|c| c.is_ascii_whitespace()) =>
                {
                    break
                }
                b'\\' => match next {
                    Some(b'G') | Some(b'g') => {
                        let sql = std::mem::take(&mut self.buf);
                        self.run(&sql, next == Some(b'G'));
                        i += 2;
                        continue;
                    }
                    Some(b'c') => {
                        self.buf.clear();
                        i += 2;
                        continue;
                    }
                    _ => {}
                },
                _ => {}
            }
            if line[i..].starts_with(&delim) {
                let sql = std::mem::take(&mut self.buf);
                self.run(&sql, false);
                i += delim.len();
                continue;
            }
            self.buf.push(c);
            i += 1;
        }
        if self.continuing() || self.quote.is_some() || self.comment {
            self.buf.push(b'\n');
        }
        Flow::Go
    }

    /// A client command at the start of a statement (None: the line is SQL).
    fn command(&mut self, line: &str) -> Option<Flow> {
        let (word, arg) = match line.split_once(char::is_whitespace) {
            Some((w, a)) => (w, a.trim()),
            None => (line, ""),
        };
        let arg = arg.trim_end_matches(self.delimiter.as_str()).trim();
        let lower = word.to_ascii_lowercase();
        let lower = lower.trim_end_matches(';');
        // Backslash commands are case-sensitive (\W and \w differ); words are not.
        let word = word.trim_end_matches(';');
        match (word, lower) {
            (_, "quit" | "exit") | ("\\q", _) => Some(Flow::Quit),
            (_, "help" | "?") | ("\\h" | "\\?", _) if arg.is_empty() => {
                print!("{HELP}");
                Some(Flow::Go)
            }
            (_, "use") | ("\\u", _) if !arg.is_empty() => {
                let db = arg.trim_matches('`');
                match self.session.use_db(db) {
                    Ok(()) => println!("Database changed"),
                    Err(e) => self.error(&e),
                }
                Some(Flow::Go)
            }
            (_, "source") | ("\\.", _) if !arg.is_empty() => {
                self.source(Path::new(arg));
                Some(Flow::Go)
            }
            (_, "delimiter") | ("\\d", _) => {
                if arg.is_empty() {
                    println!("DELIMITER must be followed by a 'delimiter' character or string");
                } else {
                    self.delimiter = arg.split_whitespace().next().unwrap_or(";").to_string();
                }
                Some(Flow::Go)
            }
            (_, "warnings") | ("\\W", _) => {
                self.show_warnings = true;
                println!("Show warnings enabled.");
                Some(Flow::Go)
            }
            (_, "nowarning") | ("\\w", _) => {
                self.show_warnings = false;
                println!("Show warnings disabled.");
                Some(Flow::Go)
            }
            (_, "status") | ("\\s", _) if arg.is_empty() => {
                self.status();
                Some(Flow::Go)
            }
            _ => None,
        }
    }

    fn source(&mut self, path: &Path) {
        if self.depth >= MAX_SOURCE_DEPTH {
            println!("ERROR: source files nest deeper than {MAX_SOURCE_DEPTH}");
            self.failed = true;
            return;
        }
        let file = match std::fs::File::open(path) {
            Ok(f) => std::io::BufReader::new(f),
            Err(e) => {
                println!(
                    "ERROR: Failed to open file '{}', error: {e}",
                    path.display()
                );
                self.failed = true;
                return;
            }
        };
        let saved = (
            std::mem::take(&mut self.buf),
            self.quote.take(),
            std::mem::replace(&mut self.comment, false),
        );
        self.depth += 1;
        self.feed_all(file, false);
        self.depth -= 1;
        (self.buf, self.quote, self.comment) = saved;
    }

    fn status(&mut self) {
        let s = &self.session;
        println!("--------------");
        println!("quarry sql, embedded in the shell's own process");
        println!();
        println!("Connection id:\t\t{}", s.info.id);
        println!(
            "Current database:\t{}",
            s.current_db.clone().unwrap_or_default()
        );
        println!("Current user:\t\t{}@localhost", s.info.user);
        println!("Server version:\t\t{}", quarry_core::vars::VERSION);
        println!("Using delimiter:\t{}", self.delimiter);
        println!("--------------");
    }

    fn error(&mut self, e: &quarry_core::quarry_common::Error) {
        println!("ERROR {} ({}): {}", e.code, e.sqlstate(), e.message);
        self.failed = true;
    }

    /// Run one statement (its bytes without the delimiter), printing its result. Bytes
    /// that are not UTF-8 are taken as the server takes them: inside a string literal,
    /// as a binary string of those bytes.
    fn run(&mut self, sql: &[u8], vertical: bool) {
        let text = match std::str::from_utf8(sql) {
            Ok(t) => std::borrow::Cow::Borrowed(t),
            Err(_) => match quarry_core::quarry_sql::hex_binary_literals(sql) {
                Some(t) => std::borrow::Cow::Owned(t),
                None => {
                    println!("ERROR 1366 (22007): Invalid utf8mb4 character string in query");
                    self.failed = true;
                    return;
                }
            },
        };
        let sql = text.trim();
        if sql.is_empty() {
            if vertical {
                println!("ERROR: No query specified");
            }
            return;
        }
        let t = Instant::now();
        let done = Arc::new(AtomicBool::new(false));
        let watcher = progress_watcher(self.session.info.clone(), done.clone());
        let r = self.session.query(sql);
        let secs = t.elapsed().as_secs_f64();
        done.store(true, Ordering::Relaxed);
        if let Some(w) = watcher {
            w.thread().unpark();
            let _ = w.join();
        }
        match r {
            Ok(outs) => {
                let format = if vertical {
                    Format::Vertical
                } else {
                    self.settings.format
                };
                let warnings = self.session.warnings.len();
                for o in &outs {
                    print_output(o, secs, warnings, format, self.settings.names);
                }
                if self.show_warnings && warnings > 0 {
                    for (level, code, msg) in self.session.warnings.clone() {
                        println!("{level} ({code}): {msg}");
                    }
                }
            }
            Err(e) => self.error(&e),
        }
        if self.session.info.killed.load(Ordering::Relaxed) {
            self.session.info.killed.store(false, Ordering::Relaxed);
        }
    }
}

const HELP: &str = "
General information about Quarry can be found at its README.

List of all client commands:
Note that all text commands must be first on line and end with ';'
?         (\\?) Synonym for `help'.
delimiter (\\d) Set statement delimiter.
exit      (\\q) Exit the shell. Same as quit.
go        (\\g) Send command to the server.
ego       (\\G) Send command to the server, display result vertically.
help      (\\h) Display this help.
nowarning (\\w) Don't show warnings after every statement.
quit      (\\q) Quit the shell.
source    (\\.) Execute an SQL script file. Takes a file name as an argument.
status    (\\s) Get status information from the server.
use       (\\u) Use another database. Takes database name as argument.
warnings  (\\W) Show warnings after every statement.
clear     (\\c) Clear the current input statement.

";

/// While a statement runs long on a terminal, a line on stderr shows its stage and how far
/// it is (index builds and table rebuilds report rows copied).
fn progress_watcher(
    info: Arc<quarry_core::ProcessInfo>,
    done: Arc<AtomicBool>,
) -> Option<std::thread::JoinHandle<()>> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    Some(std::thread::spawn(move || {
        let t = Instant::now();
        let mut shown = false;
        while !done.load(Ordering::Relaxed) {
            // Woken at once when the statement ends (its end never waits on the display).
            std::thread::park_timeout(std::time::Duration::from_millis(200));
            if done.load(Ordering::Relaxed) {
                break;
            }
            if t.elapsed().as_secs() < 1 {
                continue;
            }
            if let Some(p) = info.progress.lock().clone() {
                eprint!(
                    "\r{}: {:.1}% ({} of {} {}, {:.0} s)\x1b[K",
                    p.stage,
                    p.percent(),
                    p.done,
                    p.total,
                    p.unit,
                    t.elapsed().as_secs_f64()
                );
                shown = true;
            }
        }
        if shown {
            eprint!("\r\x1b[K");
        }
    }))
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
        Output::Streamed { rows } => println!("{rows} rows{w} ({secs:.2} sec)"),
        Output::Ok { affected, info, .. } => {
            if batch {
                return;
            }
            println!(
                "Query OK, {affected} row{} affected{w} ({secs:.2} sec)",
                if *affected == 1 { "" } else { "s" }
            );
            if let Some(i) = info {
                println!("{i}");
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
                        println!("{}", head.join("\t"));
                    }
                    for r in &cells {
                        let line: Vec<String> = r.iter().map(|c| show(c)).collect();
                        println!("{}", line.join("\t"));
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
                        println!(
                            "*************************** {}. row ***************************",
                            n + 1
                        );
                        for (c, v) in columns.iter().zip(r) {
                            println!("{:>width$}: {v}", c.name);
                        }
                    }
                }
                Format::Table if !rows.is_empty() => print_table(columns, &cells, names),
                Format::Table => {}
            }
            if rows.is_empty() {
                println!("Empty set{w} ({secs:.2} sec)");
            } else {
                println!(
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
    println!("{sep}");
    if names {
        let head: String = columns
            .iter()
            .zip(&width)
            .map(|(c, w)| format!("| {:<w$} ", c.name, w = w))
            .collect::<String>()
            + "|";
        println!("{head}");
        println!("{sep}");
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
        println!("{line}");
    }
    println!("{sep}");
}

/// The shell: `-e` text, piped input, or an interactive terminal with line editing.
pub fn run_shell(db: &Arc<Database>, exec: Option<String>, settings: Settings) -> i32 {
    use std::io::IsTerminal;
    let mut session = db.local_session();
    if let Some(sql) = exec {
        let mut sh = Shell::new(&mut session, settings);
        sh.feed_all(sql.as_bytes(), true);
        return if sh.failed { 1 } else { 0 };
    }
    if !std::io::stdin().is_terminal() {
        let mut sh = Shell::new(&mut session, settings);
        sh.feed_all(std::io::stdin().lock(), true);
        return if sh.failed { 1 } else { 0 };
    }
    interactive(&mut session, settings)
}

fn interactive(session: &mut Session, settings: Settings) -> i32 {
    let mut rl = match rustyline::DefaultEditor::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("quarry: cannot start line editor: {e}");
            return 1;
        }
    };
    let history = std::env::var("HOME")
        .map(|h| std::path::PathBuf::from(h).join(".quarry_history"))
        .unwrap_or_else(|_| std::path::PathBuf::from(".quarry_history"));
    let _ = rl.load_history(&history);
    let mut sh = Shell::new(session, settings);
    let mut entry = String::new();
    loop {
        let prompt = if sh.continuing() {
            "     -> ".to_string()
        } else {
            format!(
                "quarry [{}]> ",
                sh.session()
                    .current_db
                    .clone()
                    .unwrap_or_else(|| "(none)".into())
            )
        };
        match rl.readline(&prompt) {
            Ok(line) => {
                if !entry.is_empty() {
                    entry.push('\n');
                }
                entry.push_str(&line);
                let go = sh.feed_line(&line);
                if !sh.continuing() {
                    let _ = rl.add_history_entry(entry.as_str());
                    entry.clear();
                }
                if !go {
                    break;
                }
            }
            Err(rustyline::error::ReadlineError::Interrupted) => {
                sh.finish_discarding();
                entry.clear();
            }
            Err(_) => break,
        }
    }
    let _ = rl.save_history(&history);
    println!("Bye");
    0
}

impl Shell<'_> {
    /// Ctrl-C at the prompt: the statement being typed is dropped.
    fn finish_discarding(&mut self) {
        self.buf.clear();
        self.quote = None;
        self.comment = false;
    }
}
