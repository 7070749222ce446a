//! `quarry sql`: the embedded shell, with the mariadb client's commands and output forms.
//!
//! Input (a terminal, a pipe, `-e`, or `source FILE`) is split into statements at the
//! delimiter (`;` unless `delimiter` changed it), `\g` or `\G`, outside quotes and
//! comments. At the start of a statement the client's commands are taken: `help` (`\h`,
//! `?`), `quit` / `exit` (`\q`), `use db` (`\u`), `source file` (`\.`), `delimiter x`
//! (`\d`), `warnings` / `nowarning` (`\W` / `\w`), `status` (`\s`), `tee` / `notee`
//! (`\T` / `\t`), `pager` / `nopager` (`\P` / `\n`); `\c` clears the statement being
//! typed. Piped input stops at the first failed statement unless `--force`. Printing is
//! `output`'s.
//!
//! Owns: reading and splitting. Must not touch: what statements do (the session's).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use quarry_core::{Database, Session};

pub mod output;

pub use output::Format;
use output::{out, outln, print_output};

#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub format: Format,
    /// Print the column names (`-N` / `--skip-column-names` turns them off).
    pub names: bool,
    /// `--force` (`-f`): piped input goes on past a failed statement (and the shell
    /// exits 0, as the mariadb client does).
    pub force: bool,
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
    /// Reading a terminal: a pager may take each statement's output.
    interactive: bool,
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
            interactive: false,
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
                    outln!("ERROR: cannot read the input: {e}");
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
                out!("{HELP}");
                Some(Flow::Go)
            }
            (_, "use") | ("\\u", _) if !arg.is_empty() => {
                let db = arg.trim_matches('`');
                match self.session.use_db(db) {
                    Ok(()) => outln!("Database changed"),
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
                    outln!("DELIMITER must be followed by a 'delimiter' character or string");
                } else {
                    self.delimiter = arg.split_whitespace().next().unwrap_or(";").to_string();
                }
                Some(Flow::Go)
            }
            (_, "warnings") | ("\\W", _) => {
                self.show_warnings = true;
                outln!("Show warnings enabled.");
                Some(Flow::Go)
            }
            (_, "nowarning") | ("\\w", _) => {
                self.show_warnings = false;
                outln!("Show warnings disabled.");
                Some(Flow::Go)
            }
            (_, "status") | ("\\s", _) if arg.is_empty() => {
                self.status();
                Some(Flow::Go)
            }
            (_, "tee") | ("\\T", _) => {
                if arg.is_empty() {
                    outln!("No outfile specified!");
                } else {
                    match output::tee(arg) {
                        Ok(()) => outln!("Logging to file '{arg}'"),
                        Err(_) => outln!("Error logging to file '{arg}'"),
                    }
                }
                Some(Flow::Go)
            }
            (_, "notee") | ("\\t", _) => {
                output::notee();
                outln!("Outfile disabled.");
                Some(Flow::Go)
            }
            (_, "pager") | ("\\P", _) => {
                let cmd = if arg.is_empty() {
                    std::env::var("PAGER").ok().filter(|p| !p.is_empty())
                } else {
                    Some(arg.to_string())
                };
                match cmd {
                    Some(c) if self.interactive => {
                        outln!("PAGER set to '{c}'");
                        output::set_pager(Some(c));
                    }
                    Some(_) => {}
                    None => outln!("Default pager wasn't set, using stdout."),
                }
                Some(Flow::Go)
            }
            (_, "nopager") | ("\\n", _) => {
                output::set_pager(None);
                outln!("PAGER set to stdout");
                Some(Flow::Go)
            }
            _ => None,
        }
    }

    fn source(&mut self, path: &Path) {
        if self.depth >= MAX_SOURCE_DEPTH {
            outln!("ERROR: source files nest deeper than {MAX_SOURCE_DEPTH}");
            self.failed = true;
            return;
        }
        let file = match std::fs::File::open(path) {
            Ok(f) => std::io::BufReader::new(f),
            Err(e) => {
                outln!(
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
        outln!("--------------");
        outln!("quarry sql, embedded in the shell's own process");
        outln!();
        outln!("Connection id:\t\t{}", s.info.id);
        outln!(
            "Current database:\t{}",
            s.current_db.clone().unwrap_or_default()
        );
        outln!("Current user:\t\t{}@localhost", s.info.user);
        outln!("Server version:\t\t{}", quarry_core::vars::VERSION);
        outln!("Using delimiter:\t{}", self.delimiter);
        outln!("--------------");
    }

    fn error(&mut self, e: &quarry_core::quarry_common::Error) {
        outln!("ERROR {} ({}): {}", e.code, e.sqlstate(), e.message);
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
                    outln!("ERROR 1366 (22007): Invalid utf8mb4 character string in query");
                    self.failed = true;
                    return;
                }
            },
        };
        let sql = text.trim();
        if sql.is_empty() {
            if vertical {
                outln!("ERROR: No query specified");
            }
            return;
        }
        if self.interactive {
            output::hold_for_pager();
        }
        self.run_and_print(sql, vertical);
        if self.interactive {
            output::release_to_pager();
        }
    }

    fn run_and_print(&mut self, sql: &str, vertical: bool) {
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
                        outln!("{level} ({code}): {msg}");
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
nopager   (\\n) Disable pager, print to stdout.
notee     (\\t) Don't write into outfile.
pager     (\\P) Set PAGER [to_pager]. Print the query results via PAGER (on a terminal).
tee       (\\T) Set outfile [to_outfile]. Append everything into given outfile.
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
        sh.feed_all(std::io::stdin().lock(), !settings.force);
        return if sh.failed && !settings.force { 1 } else { 0 };
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
    sh.interactive = true;
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
    outln!("Bye");
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
