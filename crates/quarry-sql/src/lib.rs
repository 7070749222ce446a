//! SQL text → statements: an adapter over `sqlparser`'s MySQL dialect.
//!
//! Owns: versioned-comment handling (`/*!40101 … */` is executed, as MySQL does), the small
//! keyword pre-dispatch for statements `sqlparser` does not parse (LOAD DATA, SHOW ENGINES,
//! SHOW WARNINGS, SHOW TABLE STATUS, SHOW INDEX, CHECK/OPTIMIZE/ANALYZE/REPAIR TABLE, …),
//! and the mapping of parse errors to MySQL error 1064.
//! Must not touch: the catalog, execution, sessions.

pub use cycle::{cycle_columns, query_text};
use quarry_common::{Error, Result};
use sqlparser::ast::Statement as AstStatement;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, Word};

pub use sqlparser::ast;

mod accounts;
mod binary_literals;
mod cycle;
mod dialect;
mod digest_text;
mod grants;
mod into_file;
mod long_literals;

pub use binary_literals::hex_binary_literals;
pub use digest_text::digest_text;

pub use accounts::{AccountOptions, PasswordLifetime, Secret};
pub use grants::{GrantOn, GranteeSpec, PrivItem};
pub use into_file::IntoFile;

/// A statement ready for binding.
#[derive(Debug, Clone)]
pub enum Stmt {
    Ast(Box<AstStatement>),
    /// `SELECT … INTO OUTFILE / DUMPFILE` (the query without the clause).
    SelectInto(Box<AstStatement>, IntoFile),
    LoadData(LoadData),
    ShowEngines,
    ShowWarnings {
        errors: bool,
        count: bool,
        /// `LIMIT [offset,] row_count`.
        limit: Option<(u64, u64)>,
    },
    ShowTableStatus {
        db: Option<String>,
        like: Option<String>,
        /// `WHERE …` over the output's columns.
        filter: Option<Box<ast::Expr>>,
    },
    ShowIndex {
        table: String,
        db: Option<String>,
        /// `WHERE …` over the output's columns.
        filter: Option<Box<ast::Expr>>,
    },
    ShowCreateDatabase {
        name: String,
    },
    /// ALTER DATABASE [name] [DEFAULT] CHARACTER SET x [COLLATE y]: the database's default
    /// collation (None: the current database).
    AlterDatabase {
        name: Option<String>,
        charset: Option<String>,
        collate: Option<String>,
    },
    ShowProcessList,
    /// CHECKSUM TABLE t, … [QUICK | EXTENDED] (`quick`: only a checksum kept live).
    ChecksumTable {
        tables: Vec<(Option<String>, String)>,
        quick: bool,
    },
    /// CHECK / OPTIMIZE / ANALYZE / REPAIR TABLE t, …
    TableMaintenance {
        op: String,
        tables: Vec<(Option<String>, String)>,
    },
    /// ALTER TABLE t ENGINE = e: the table rebuilt in (or into) an engine.
    AlterEngine {
        db: Option<String>,
        table: String,
        engine: String,
    },
    /// SHOW FUNCTION / PROCEDURE / PACKAGE [BODY] STATUS, SHOW EVENTS, SHOW TRIGGERS
    /// (`what`: ROUTINES, EVENTS or TRIGGERS) [FROM db] [LIKE … | WHERE …]: Quarry has no
    /// stored programs, events or triggers yet, so these list none.
    ShowProgramObjects {
        what: &'static str,
        db: Option<String>,
    },
    /// SHOW forms about what Quarry does not have yet or keeps elsewhere (`what`:
    /// PROFILES, MASTER STATUS, SLAVE STATUS, ALL SLAVES STATUS, SLAVE HOSTS, BINARY LOGS,
    /// PLUGINS, OPEN TABLES, ENGINE INNODB STATUS), with MariaDB's columns.
    ShowServer {
        what: &'static str,
        db: Option<String>,
        like: Option<String>,
    },
    /// SHOW CREATE PROCEDURE / FUNCTION / TRIGGER / EVENT name: none exists yet.
    ShowCreateProgram {
        kind: &'static str,
        name: String,
    },
    /// SHUTDOWN [WAIT FOR ALL SLAVES | REPLICAS]: the server stops (SHUTDOWN privilege).
    Shutdown,
    /// ALTER TABLE t DISABLE KEYS / ENABLE KEYS (what dumps wrap each table's rows in).
    AlterKeys {
        db: Option<String>,
        table: String,
        enable: bool,
    },
    /// FLUSH …: it needs RELOAD, as in MariaDB. `hosts`: FLUSH HOSTS (clears the
    /// max_connect_errors counts); `read_lock`: FLUSH TABLES [t, …] WITH READ LOCK (no
    /// tables: the global read lock). The rest has nothing to do (tables, logs and
    /// privileges are always current).
    Flush {
        hosts: bool,
        read_lock: Option<Vec<TableName>>,
    },
    /// LOCK TABLES t [AS a] READ [LOCAL] | [LOW_PRIORITY] WRITE [CONCURRENT], …
    LockTables(Vec<LockItem>),
    UnlockTables,
    CreateUser {
        users: Vec<(String, String, Secret)>,
        opts: AccountOptions,
        if_not_exists: bool,
    },
    /// SHOW CREATE USER 'user'@'host'.
    ShowCreateUser((String, String)),
    /// ALTER USER: a password (Secret::None: unchanged) and options for each account.
    AlterUser {
        users: Vec<(String, String, Secret)>,
        opts: AccountOptions,
        if_exists: bool,
    },
    DropUser {
        users: Vec<(String, String)>,
        if_exists: bool,
    },
    /// SET PASSWORD [FOR user] = 'pw' / ALTER USER user IDENTIFIED BY 'pw'; None = current user.
    SetPassword {
        user: Option<(String, String)>,
        password: String,
    },
    /// GRANT privileges ON … TO … (an IDENTIFIED BY makes a missing account).
    Grant {
        privs: Vec<PrivItem>,
        on: GrantOn,
        to: Vec<(GranteeSpec, Secret)>,
        grant_option: bool,
        opts: AccountOptions,
    },
    Revoke {
        privs: Vec<PrivItem>,
        on: GrantOn,
        from: Vec<GranteeSpec>,
    },
    /// REVOKE ALL PRIVILEGES, GRANT OPTION FROM …
    RevokeAll {
        from: Vec<GranteeSpec>,
    },
    GrantRole {
        roles: Vec<String>,
        to: Vec<GranteeSpec>,
        admin: bool,
    },
    RevokeRole {
        roles: Vec<String>,
        from: Vec<GranteeSpec>,
    },
    CreateRole {
        names: Vec<String>,
        if_not_exists: bool,
    },
    DropRole {
        names: Vec<String>,
        if_exists: bool,
    },
    /// SET ROLE name | NONE.
    SetRole(Option<String>),
    /// SET DEFAULT ROLE name | NONE [FOR user].
    SetDefaultRole {
        role: Option<String>,
        user: GranteeSpec,
    },
    /// SHOW GRANTS [FOR user] (None: the current user).
    ShowGrants(GranteeSpec),
    ShowPrivileges,
}

/// How fields and lines are delimited, for LOAD DATA and SELECT … INTO OUTFILE; by default
/// MySQL's (tab, newline, backslash escapes, nothing enclosed).
#[derive(Debug, Clone, PartialEq)]
pub struct FieldFormat {
    pub fields_terminated: String,
    pub enclosed: Option<char>,
    pub optionally_enclosed: bool,
    pub escaped: Option<char>,
    pub lines_starting: String,
    pub lines_terminated: String,
}

impl Default for FieldFormat {
    fn default() -> FieldFormat {
        FieldFormat {
            fields_terminated: "\t".into(),
            enclosed: None,
            optionally_enclosed: false,
            escaped: Some('\\'),
            lines_starting: String::new(),
            lines_terminated: "\n".into(),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct LoadData {
    pub local: bool,
    pub file: String,
    pub db: Option<String>,
    pub table: String,
    pub replace: bool,
    pub ignore: bool,
    pub format: FieldFormat,
    pub ignore_lines: u64,
    pub columns: Vec<String>,
}

/// The version number versioned comments are compared with: 10.11.19, the MariaDB
/// release Quarry answers as (`quarry_core::vars::VERSION`).
pub const SERVER_VERSION_ID: u32 = 101119;

/// Replace `/*!NNNNN body */` and `/*M!NNNNNN body */` by `body` when the version
/// NNNNN[N] (five or six digits; none: any) is not above [`SERVER_VERSION_ID`], and drop
/// them when it is, as MariaDB does: a dump's `/*M!999999\- enable the sandbox mode */`
/// is a comment, its `/*!40101 SET NAMES utf8mb4 */` a statement. String literals and
/// quoted names are left alone.
pub fn unwrap_versioned_comments(sql: &str) -> std::borrow::Cow<'_, str> {
    if !sql.contains("/*!") && !sql.contains("/*M!") {
        return std::borrow::Cow::Borrowed(sql);
    }
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < b.len() {
        let c = b[i];
        if let Some(q) = quote {
            if c == b'\\' && i + 1 < b.len() {
                out.push('\\');
                i += 1;
            } else if c == q {
                quote = None;
            }
            let ch = sql[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
            continue;
        }
        if c == b'\'' || c == b'"' || c == b'`' {
            quote = Some(c);
            out.push(c as char);
            i += 1;
            continue;
        }
        let opener = if sql[i..].starts_with("/*!") {
            3
        } else if sql[i..].starts_with("/*M!") {
            4
        } else {
            0
        };
        if opener > 0 {
            let digits = b[i + opener..]
                .iter()
                .take(6)
                .take_while(|d| d.is_ascii_digit())
                .count();
            let j = i + opener + digits;
            if let Some(end) = sql[j..].find("*/") {
                let version: u32 = sql[i + opener..j].parse().unwrap_or(0);
                out.push(' ');
                // Fewer than five digits are the body's, as MariaDB reads them.
                if digits < 5 {
                    out.push_str(&sql[i + opener..j + end]);
                    out.push(' ');
                } else if version <= SERVER_VERSION_ID {
                    out.push_str(&sql[j..j + end]);
                    out.push(' ');
                }
                i = j + end + 2;
                continue;
            }
        }
        let ch = sql[i..].chars().next().unwrap();
        out.push(ch);
        i += ch.len_utf8();
    }
    std::borrow::Cow::Owned(out)
}

/// Rewrite each occurrence of the word sequence `phrase` (any case, any whitespace
/// between): `replace` gets the token indexes of its words and of the token after the
/// phrase, and edits the tokens' texts. `sql` comes back as it was when it cannot hold
/// `phrase` (its last word is looked for first in `sql`'s [`bare_text`]).
fn rewrite_phrase<'a>(
    sql: &'a str,
    bare: &str,
    phrase: &[&str],
    replace: impl Fn(&[usize], Option<(usize, &Token)>, &mut [String]),
) -> std::borrow::Cow<'a, str> {
    if !bare.contains(phrase[phrase.len() - 1]) {
        return std::borrow::Cow::Borrowed(sql);
    }
    let Some((toks, words, mut out)) = for_rewrite(sql) else {
        return std::borrow::Cow::Borrowed(sql);
    };
    for (at, w) in words.windows(phrase.len()).enumerate() {
        let is_phrase = w
            .iter()
            .zip(phrase)
            .all(|(&i, p)| matches!(&toks[i], Token::Word(x) if x.value.eq_ignore_ascii_case(p)));
        if is_phrase {
            let next = words.get(at + phrase.len()).map(|&n| (n, &toks[n]));
            replace(w, next, &mut out);
        }
    }
    std::borrow::Cow::Owned(out.concat())
}

/// `sql`'s tokens, the indexes of those that are not whitespace, and each token's text
/// (to edit and join again); None when it does not tokenize.
///
/// Each token's text is its own source text, not the token printed again: a printed
/// string literal loses its escapes (`'C:\\temp'` came back as `'C:\temp'`, a tab, and
/// `'it''s'` as `'it's'`, a syntax error), so a statement a rewrite touched changed the
/// data it wrote.
fn for_rewrite(sql: &str) -> Option<(Vec<Token>, Vec<usize>, Vec<String>)> {
    let spanned = Tokenizer::new(&dialect(), sql)
        .tokenize_with_location()
        .ok()?;
    let starts = token_offsets(sql, &spanned)?;
    let out: Vec<String> = (0..starts.len())
        .map(|i| sql[starts[i]..starts.get(i + 1).copied().unwrap_or(sql.len())].to_string())
        .collect();
    let toks: Vec<Token> = spanned.into_iter().map(|t| t.token).collect();
    let words: Vec<usize> = (0..toks.len())
        .filter(|&i| !matches!(toks[i], Token::Whitespace(_)))
        .collect();
    Some((toks, words, out))
}

/// The byte offset in `sql` where each token starts (the tokenizer counts lines and
/// characters from 1); None when they do not rise through the text.
fn token_offsets(sql: &str, toks: &[TokenWithSpan]) -> Option<Vec<usize>> {
    let mut out = Vec::with_capacity(toks.len());
    let (mut line, mut column, mut at) = (1u64, 1u64, 0usize);
    let mut chars = sql.char_indices().peekable();
    for t in toks {
        let want = (t.span.start.line, t.span.start.column);
        while (line, column) < want {
            let (_, c) = chars.next()?;
            at += c.len_utf8();
            if c == '\n' {
                line += 1;
                column = 1;
            } else {
                column += 1;
            }
        }
        if (line, column) != want || out.last().is_some_and(|&prev| prev > at) {
            return None;
        }
        out.push(at);
    }
    if out.first().is_some_and(|&first| first != 0) {
        return None;
    }
    Some(out)
}

/// `START TRANSACTION WITH CONSISTENT SNAPSHOT` (the parser does not know it): the snapshot
/// is taken when the transaction starts anyway, so the clause is dropped.
fn drop_consistent_snapshot<'a>(sql: &'a str, bare: &str) -> std::borrow::Cow<'a, str> {
    let phrase = ["START", "TRANSACTION", "WITH", "CONSISTENT", "SNAPSHOT"];
    rewrite_phrase(sql, bare, &phrase, |w, next, out| {
        for s in &mut out[w[2]..=w[4]] {
            s.clear();
        }
        // A following `, READ ONLY` keeps its comma as the first mode's separator.
        if let Some((n, Token::Comma)) = next {
            out[n].clear();
        }
    })
}

/// The marker an IGNORE of `DELETE` leaves in its statement (an optimizer hint: the only
/// place the parsed statement keeps for it).
const DELETE_IGNORE_HINT: &str = "QUARRY_IGNORE";

/// MySQL's modifiers after a statement's `UPDATE` / `DELETE` (`LOW_PRIORITY`, `QUICK`,
/// `IGNORE`, which the parser does not take): dropped, and IGNORE kept as `UPDATE OR
/// IGNORE` (the parser's conflict clause) or a `DELETE` hint (see [`delete_ignores`]).
fn dml_modifiers<'a>(sql: &'a str, bare: &str) -> std::borrow::Cow<'a, str> {
    let rest = &sql.as_bytes()[skip_blank(sql, 0)..];
    let verb = |v: &[u8]| {
        rest.get(..v.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(v))
            && rest
                .get(v.len())
                .is_none_or(|c| !c.is_ascii_alphanumeric() && *c != b'_')
    };
    if !(verb(b"UPDATE") || verb(b"DELETE")) {
        return std::borrow::Cow::Borrowed(sql);
    }
    if !(bare.contains("IGNORE") || bare.contains("LOW_PRIORITY") || bare.contains("QUICK")) {
        return std::borrow::Cow::Borrowed(sql);
    }
    let Some((toks, words, mut out)) = for_rewrite(sql) else {
        return std::borrow::Cow::Borrowed(sql);
    };
    let word = |i: usize| match &toks[i] {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    };
    for (k, &w) in words.iter().enumerate() {
        let starts = k == 0 || matches!(toks[words[k - 1]], Token::SemiColon);
        let verb = word(w);
        if !starts || !matches!(verb.as_deref(), Some("UPDATE" | "DELETE")) {
            continue;
        }
        let mut ignore = false;
        for &m in &words[k + 1..] {
            match word(m).as_deref() {
                Some("LOW_PRIORITY") => {}
                Some("QUICK") if verb.as_deref() == Some("DELETE") => {}
                Some("IGNORE") => ignore = true,
                _ => break,
            }
            out[m].clear();
        }
        if ignore {
            out[w] = match verb.as_deref() {
                Some("UPDATE") => format!("{} OR IGNORE", out[w]),
                _ => format!("{} /*+{DELETE_IGNORE_HINT}*/", out[w]),
            };
        }
    }
    std::borrow::Cow::Owned(out.concat())
}

/// `DELETE IGNORE`: a row a FOREIGN KEY keeps is left, with a warning.
pub fn delete_ignores(d: &ast::Delete) -> bool {
    d.optimizer_hints
        .iter()
        .any(|h| h.text.trim() == DELETE_IGNORE_HINT)
}

/// `UPDATE IGNORE`: a row a key or constraint refuses is left unchanged, with a warning.
pub fn update_ignores(u: &ast::Update) -> bool {
    matches!(u.or, Some(ast::SqliteOnConflict::Ignore))
}

/// MySQL's `CREATE SCHEMA` is `CREATE DATABASE`, options and all (`sqlparser` reads no
/// CHARACTER SET after CREATE SCHEMA).
fn schema_as_database<'a>(sql: &'a str, bare: &str) -> std::borrow::Cow<'a, str> {
    rewrite_phrase(sql, bare, &["CREATE", "SCHEMA"], |w, _, out| {
        out[w[1]] = "DATABASE".into();
    })
}

/// MySQL's `LOCK IN SHARE MODE` is `FOR SHARE` (which `sqlparser` parses).
fn share_mode_as_for_share<'a>(sql: &'a str, bare: &str) -> std::borrow::Cow<'a, str> {
    rewrite_phrase(sql, bare, &["LOCK", "IN", "SHARE", "MODE"], |w, _, out| {
        for s in &mut out[w[0]..=w[3]] {
            s.clear();
        }
        out[w[0]] = "FOR SHARE".into();
    })
}

/// MySQL's compound interval units (`INTERVAL '1:30' HOUR_MINUTE`), which `sqlparser`
/// does not know, as the SQL standard's `HOUR TO MINUTE` (which it parses); only right
/// after `INTERVAL` and a literal, so a column named `day_hour` stays one.
fn compound_interval_units<'a>(sql: &'a str, bare: &str) -> std::borrow::Cow<'a, str> {
    const UNITS: [&str; 11] = [
        "YEAR_MONTH",
        "DAY_HOUR",
        "DAY_MINUTE",
        "DAY_SECOND",
        "DAY_MICROSECOND",
        "HOUR_MINUTE",
        "HOUR_SECOND",
        "HOUR_MICROSECOND",
        "MINUTE_SECOND",
        "MINUTE_MICROSECOND",
        "SECOND_MICROSECOND",
    ];
    if !bare.contains("INTERVAL") || !UNITS.iter().any(|u| bare.contains(u)) {
        return std::borrow::Cow::Borrowed(sql);
    }
    let Some((toks, words, mut out)) = for_rewrite(sql) else {
        return std::borrow::Cow::Borrowed(sql);
    };
    for w in words.windows(3) {
        let is_interval =
            matches!(&toks[w[0]], Token::Word(x) if x.value.eq_ignore_ascii_case("INTERVAL"));
        let literal = matches!(
            &toks[w[1]],
            Token::SingleQuotedString(_) | Token::DoubleQuotedString(_) | Token::Number(..)
        );
        if let (true, true, Token::Word(u)) = (is_interval, literal, &toks[w[2]]) {
            let up = u.value.to_ascii_uppercase();
            if UNITS.contains(&up.as_str()) {
                out[w[2]] = up.replacen('_', " TO ", 1);
            }
        }
    }
    std::borrow::Cow::Owned(out.concat())
}

fn dialect() -> dialect::MariaDialect {
    dialect::MariaDialect::default()
}

/// Parse one or more `;`-separated statements.
pub fn parse(sql: &str) -> Result<Vec<Stmt>> {
    let parts = split_statements(sql);
    if parts.len() > 1 {
        // Each on its own, so statements the pre-dispatch knows work in a batch too.
        let mut out = Vec::with_capacity(parts.len());
        for p in parts {
            out.extend(parse_one_text(p)?);
        }
        return Ok(out);
    }
    parse_one_text(sql)
}

/// The text of `sql` outside quoted strings and names and comments, upper-cased: where
/// the rewrites look for their words before tokenizing the whole text. A dump's INSERT
/// holds megabytes of literals, whose words (a `MODE` in a product name) must not cost a
/// tokenizing. Comments are the tokenizer's: `#`, `-- ` (a blank after), `/* */`. Each
/// skipped stretch leaves a space, so words on both sides of it stay apart.
fn bare_text(sql: &str) -> String {
    let b = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let skip_to = match b[i] {
            q @ (b'\'' | b'"' | b'`') => {
                let mut j = i + 1;
                while j < b.len() && b[j] != q {
                    j += if b[j] == b'\\' && q != b'`' { 2 } else { 1 };
                }
                j + 1
            }
            b'#' => line_end(b, i),
            b'-' if b.get(i + 1) == Some(&b'-')
                && b.get(i + 2).is_none_or(|c| c.is_ascii_whitespace()) =>
            {
                line_end(b, i)
            }
            b'/' if b.get(i + 1) == Some(&b'*') => match sql[i + 2..].find("*/") {
                Some(e) => i + 2 + e + 2,
                None => b.len(),
            },
            c => {
                out.push(c.to_ascii_uppercase());
                i += 1;
                continue;
            }
        };
        out.push(b' ');
        i = skip_to.min(b.len());
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn line_end(b: &[u8], from: usize) -> usize {
    b[from..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |n| from + n)
}

/// Byte offsets of the `;`s of `sql` outside quotes, backquotes and comments.
fn statement_ends(sql: &str) -> Vec<usize> {
    let b = sql.as_bytes();
    let (mut out, mut i) = (vec![], 0);
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while i < b.len() && b[i] != q {
                    i += if b[i] == b'\\' && q != b'`' { 2 } else { 1 };
                }
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b';' => out.push(i),
            _ => {}
        }
        i += 1;
    }
    out
}

/// `sql` cut at each `;` outside quotes, backquotes and comments; empty pieces dropped.
pub fn split_statements(sql: &str) -> Vec<&str> {
    if !sql.contains(';') {
        return vec![sql];
    }
    let mut out = vec![];
    let mut start = 0;
    for end in statement_ends(sql) {
        out.push(&sql[start..end]);
        start = end + 1;
    }
    out.push(&sql[start.min(sql.len())..]);
    out.retain(|p| !p.trim().is_empty());
    if out.is_empty() {
        out.push(sql);
    }
    out
}

/// The offset in `sql` past whitespace and comments from `from`.
fn skip_blank(sql: &str, mut from: usize) -> usize {
    let b = sql.as_bytes();
    loop {
        while from < b.len() && b[from].is_ascii_whitespace() {
            from += 1;
        }
        let rest = &b[from.min(b.len())..];
        let line_comment = rest.starts_with(b"#")
            || (rest.starts_with(b"--") && rest.get(2).is_none_or(|c| c.is_ascii_whitespace()));
        if line_comment {
            while from < b.len() && b[from] != b'\n' {
                from += 1;
            }
        } else if rest.starts_with(b"/*") && !rest.starts_with(b"/*!") && !rest.starts_with(b"/*M!")
        {
            match sql[from + 2..].find("*/") {
                Some(e) => from += 2 + e + 2,
                None => return b.len(),
            }
        } else {
            return from;
        }
    }
}

/// Where `sql` goes on past its first statement, if it does: the offset of the second
/// statement (or of the `;` after a first one that is only comments). A client that did
/// not set CLIENT_MULTI_STATEMENTS may not send such a text; trailing `;`s and comments
/// are allowed, as MariaDB allows them.
pub fn second_statement(sql: &str) -> Option<usize> {
    let first = *statement_ends(sql).first()?;
    // Nothing before the first `;`: MariaDB points at the `;` itself.
    let blank_first = skip_blank(sql, 0) >= first;
    let mut at = first + 1;
    loop {
        at = skip_blank(sql, at);
        if at >= sql.len() {
            return None;
        }
        if sql.as_bytes()[at] != b';' {
            return Some(if blank_first { first } else { at });
        }
        at += 1;
    }
}

fn parse_one_text(sql: &str) -> Result<Vec<Stmt>> {
    let sql = unwrap_versioned_comments(sql);
    // The rewrites add none of the words the others look for.
    let bare = bare_text(&sql);
    let sql = drop_consistent_snapshot(&sql, &bare);
    let sql = share_mode_as_for_share(&sql, &bare);
    let sql = schema_as_database(&sql, &bare);
    let sql = dml_modifiers(&sql, &bare);
    let sql = compound_interval_units(&sql, &bare);
    let trimmed = sql.trim().trim_end_matches(';').trim();
    if trimmed.is_empty() {
        return Err(Error::new(1065, "Query was empty"));
    }
    if let Some(s) = predispatch(trimmed)? {
        return Ok(vec![s]);
    }
    let has_cycle = bare.contains("CYCLE");
    let into: std::cell::RefCell<Option<IntoFile>> = Default::default();
    let parse = |swap: bool| {
        Tokenizer::new(&dialect(), &sql)
            .tokenize_with_location()
            .map_err(|e| ParserError::TokenizerError(e.to_string()))
            .and_then(|mut toks| {
                *into.borrow_mut() = into_file::take(&mut toks)?;
                let cycles = if has_cycle {
                    cycle::take(&mut toks)
                } else {
                    Default::default()
                };
                let toks = number_placeholders(toks);
                let (toks, stash) = match swap {
                    true => long_literals::swap_out(toks),
                    false => (toks, long_literals::Stash::empty()),
                };
                let mut stmts = Parser::new(&dialect())
                    .with_recursion_limit(MAX_PARSE_NESTING)
                    .with_tokens_with_locations(toks)
                    .parse_statements()?;
                if !cycles.is_empty() && !cycles.put_back(&mut stmts) {
                    return Err(ParserError::ParserError("CYCLE".into()));
                }
                if stash.is_empty() || long_literals::swap_in(&mut stmts, stash) {
                    Ok(Some(stmts))
                } else {
                    Ok(None)
                }
            })
    };
    let parsed = match parse(true) {
        Ok(None) => parse(false).map(Option::unwrap_or_default),
        other => other.map(Option::unwrap_or_default),
    };
    match parsed {
        Ok(stmts) if stmts.is_empty() => Err(Error::new(1065, "Query was empty")),
        Ok(mut stmts) if into.borrow().is_some() => {
            let into = into.take().expect("checked");
            match stmts.pop() {
                Some(q @ AstStatement::Query(_)) if stmts.is_empty() => {
                    Ok(vec![Stmt::SelectInto(Box::new(q), into)])
                }
                _ => Err(Error::syntax_near("INTO")),
            }
        }
        Ok(stmts) => Ok(stmts.into_iter().map(|s| Stmt::Ast(Box::new(s))).collect()),
        Err(ParserError::RecursionLimitExceeded) => Err(Error::too_deep(MAX_PARSE_NESTING)),
        Err(e) => Err(parse_error(&sql, &e.to_string())),
    }
}

/// Marks a placeholder numbered by [`number_placeholders`]: `?`, this, then the number
/// (a control character, so no placeholder a client writes looks like one).
pub const NUMBERED_PLACEHOLDER: &str = "?\u{1f}";

/// Each `?` becomes [`NUMBERED_PLACEHOLDER`] and its number, counting from 0 in the
/// order of the text, so a statement's parameters are numbered as the client sends them
/// whatever order the binder meets them in (it binds FROM and WHERE before the select
/// list).
fn number_placeholders(mut toks: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let mut n = 0;
    for t in &mut toks {
        if matches!(&t.token, Token::Placeholder(p) if p == "?") {
            t.token = Token::Placeholder(format!("{NUMBERED_PLACEHOLDER}{n}"));
            n += 1;
        }
    }
    toks
}

/// Parentheses, subqueries and function calls nested in one another, as the parser
/// counts them (each one several of its calls deep; MariaDB takes 1 000 parentheses).
/// Statements are parsed on a stack sized for this (`quarry_core::STATEMENT_STACK`).
pub const MAX_PARSE_NESTING: usize = 2500;

/// The milliseconds of a MySQL optimizer hint `/*+ … MAX_EXECUTION_TIME(ms) … */` in
/// `sql`, if it has one.
pub fn max_execution_time_hint(sql: &str) -> Option<u64> {
    let at = sql.find("/*+")?;
    let body = &sql[at + 3..];
    let body = &body[..body.find("*/")?];
    let upper = body.to_ascii_uppercase();
    let p = upper.find("MAX_EXECUTION_TIME")?;
    let rest = upper[p + "MAX_EXECUTION_TIME".len()..].trim_start();
    let rest = rest.strip_prefix('(')?;
    rest[..rest.find(')')?].trim().parse().ok()
}

/// Parse a statement that must be a single one (prepared statements).
pub fn parse_one(sql: &str) -> Result<Stmt> {
    let mut v = parse(sql)?;
    if v.len() != 1 {
        return Err(Error::syntax_near(sql));
    }
    Ok(v.pop().unwrap())
}

fn parse_error(sql: &str, msg: &str) -> Error {
    // sqlparser reports "… at Line: L, Column: C"; MariaDB quotes the text from there.
    let near = msg
        .rsplit_once("Line: ")
        .and_then(|(_, rest)| {
            let (l, c) = rest.split_once(", Column: ")?;
            let l: usize = l.trim().parse().ok()?;
            let c: usize = c.trim().parse().ok()?;
            let line = sql.lines().nth(l.saturating_sub(1))?;
            let start = line
                .char_indices()
                .nth(c.saturating_sub(1))
                .map(|(i, _)| i)
                .unwrap_or(line.len());
            let mut rest: String = line[start..].to_string();
            for more in sql.lines().skip(l) {
                rest.push('\n');
                rest.push_str(more);
            }
            Some(rest)
        })
        .unwrap_or_default();
    Error::syntax_near(&near)
}

struct Toks {
    toks: Vec<Token>,
    pos: usize,
}

impl Toks {
    fn new(sql: &str) -> Result<Toks> {
        let toks = Tokenizer::new(&dialect(), sql)
            .tokenize()
            .map_err(|e| Error::syntax(e.to_string()))?
            .into_iter()
            .filter(|t| !matches!(t, Token::Whitespace(_)))
            .collect();
        Ok(Toks { toks, pos: 0 })
    }
    fn peek_word(&self) -> Option<String> {
        match self.toks.get(self.pos) {
            Some(Token::Word(Word { value, .. })) => Some(value.to_ascii_uppercase()),
            _ => None,
        }
    }
    fn eat(&mut self, kw: &str) -> bool {
        if self.peek_word().as_deref() == Some(kw) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn eat_seq(&mut self, kws: &[&str]) -> bool {
        let save = self.pos;
        for k in kws {
            if !self.eat(k) {
                self.pos = save;
                return false;
            }
        }
        true
    }
    fn expect(&mut self, kw: &str) -> Result<()> {
        if self.eat(kw) {
            Ok(())
        } else {
            Err(self.error())
        }
    }
    fn error(&self) -> Error {
        let rest: Vec<String> = self.toks[self.pos.min(self.toks.len())..]
            .iter()
            .map(|t| t.to_string())
            .collect();
        Error::syntax_near(&rest.join(" "))
    }
    fn ident(&mut self) -> Result<String> {
        match self.toks.get(self.pos) {
            Some(Token::Word(w)) => {
                self.pos += 1;
                Ok(w.value.clone())
            }
            _ => Err(self.error()),
        }
    }
    /// `name` or `db.name`
    fn object(&mut self) -> Result<(Option<String>, String)> {
        let first = self.ident()?;
        if self.toks.get(self.pos) == Some(&Token::Period) {
            self.pos += 1;
            let second = self.ident()?;
            return Ok((Some(first), second));
        }
        Ok((None, first))
    }
    fn string(&mut self) -> Result<String> {
        match self.toks.get(self.pos) {
            Some(Token::SingleQuotedString(s)) | Some(Token::DoubleQuotedString(s)) => {
                self.pos += 1;
                Ok(s.clone())
            }
            _ => Err(self.error()),
        }
    }
    fn number(&mut self) -> Result<u64> {
        match self.toks.get(self.pos) {
            Some(Token::Number(n, _)) => {
                self.pos += 1;
                n.parse().map_err(|_| self.error())
            }
            _ => Err(self.error()),
        }
    }
    fn at(&self, t: &Token) -> bool {
        self.toks.get(self.pos) == Some(t)
    }
    fn done(&self) -> bool {
        self.pos >= self.toks.len()
            || (self.pos == self.toks.len() - 1 && self.at(&Token::SemiColon))
    }
    /// `WHERE expr` to the end of the statement, if that is what comes next.
    fn where_clause(&mut self) -> Result<Option<Box<ast::Expr>>> {
        if !self.eat("WHERE") {
            return Ok(None);
        }
        let rest = self.toks[self.pos..].to_vec();
        let d = dialect();
        let mut p = Parser::new(&d).with_tokens(rest);
        let e = p.parse_expr().map_err(|e| Error::syntax(e.to_string()))?;
        if p.peek_token().token != Token::EOF {
            return Err(Error::syntax_near(&p.peek_token().token.to_string()));
        }
        self.pos = self.toks.len();
        Ok(Some(Box::new(e)))
    }

    fn finish(&self, s: Stmt) -> Result<Option<Stmt>> {
        if self.done() {
            Ok(Some(s))
        } else {
            Err(self.error())
        }
    }
}

/// A table as a statement names it: (database if given, table).
pub type TableName = (Option<String>, String);

/// One table of LOCK TABLES: where it is, the name statements use for it (its alias, else
/// its name) and whether they may write it.
#[derive(Debug, Clone, PartialEq)]
pub struct LockItem {
    pub db: Option<String>,
    pub table: String,
    pub alias: Option<String>,
    pub write: bool,
}

/// The tables of `FLUSH [LOCAL | NO_WRITE_TO_BINLOG] TABLES [t, …] WITH READ LOCK` (none:
/// all, the global read lock); None for any other FLUSH.
fn flush_read_lock(sql: &str) -> Result<Option<Vec<TableName>>> {
    let mut t = Toks::new(sql)?;
    t.pos = 1;
    if !t.eat("LOCAL") {
        t.eat("NO_WRITE_TO_BINLOG");
    }
    if !(t.eat("TABLES") || t.eat("TABLE")) {
        return Ok(None);
    }
    let mut tables = vec![];
    if !t.done() && t.peek_word().as_deref() != Some("WITH") {
        loop {
            tables.push(t.object()?);
            if !t.at(&Token::Comma) {
                break;
            }
            t.pos += 1;
        }
    }
    if t.eat_seq(&["WITH", "READ", "LOCK"]) {
        if !t.done() {
            return Err(t.error());
        }
        return Ok(Some(tables));
    }
    Ok(None)
}

fn first_words(sql: &str, n: usize) -> Vec<String> {
    sql.split(|c: char| c.is_whitespace() || c == '(' || c == ';')
        .filter(|w| !w.is_empty())
        .take(n)
        .map(|w| w.to_ascii_uppercase())
        .collect()
}

fn predispatch(sql: &str) -> Result<Option<Stmt>> {
    let w = first_words(sql, 3);
    let w: Vec<&str> = w.iter().map(String::as_str).collect();
    match w.as_slice() {
        ["LOAD", "DATA", ..] => parse_load_data(sql).map(Some),
        ["SHOW", "ENGINES", ..] | ["SHOW", "STORAGE", "ENGINES"] => Ok(Some(Stmt::ShowEngines)),
        ["SHOW", "WARNINGS" | "ERRORS", ..] => {
            let mut t = Toks::new(sql)?;
            t.pos = 2;
            let mut limit = None;
            if t.eat("LIMIT") {
                let first = t.number()?;
                limit = Some(if t.at(&Token::Comma) {
                    t.pos += 1;
                    (first, t.number()?)
                } else {
                    (0, first)
                });
            }
            t.finish(Stmt::ShowWarnings {
                errors: w[1] == "ERRORS",
                count: false,
                limit,
            })
        }
        ["SHOW", "COUNT", ..] => {
            let errors = sql.to_ascii_uppercase().contains("ERRORS");
            Ok(Some(Stmt::ShowWarnings {
                errors,
                count: true,
                limit: None,
            }))
        }
        ["SHOW", "PROCESSLIST", ..] | ["SHOW", "FULL", "PROCESSLIST"] => {
            Ok(Some(Stmt::ShowProcessList))
        }
        ["SHOW", "CREATE", "PROCEDURE" | "FUNCTION" | "TRIGGER" | "EVENT"] => {
            let kind = match w[2] {
                "PROCEDURE" => "PROCEDURE",
                "FUNCTION" => "FUNCTION",
                "TRIGGER" => "TRIGGER",
                _ => "EVENT",
            };
            let mut t = Toks::new(sql)?;
            t.pos = 3;
            let (_, name) = t.object()?;
            t.finish(Stmt::ShowCreateProgram { kind, name })
        }
        // MariaDB's EXPLAIN EXTENDED / PARTITIONS: the plain EXPLAIN, whose columns are
        // already EXTENDED's (with `filtered`); SHOW FULL TRIGGERS: SHOW TRIGGERS.
        ["EXPLAIN" | "DESCRIBE" | "DESC", "EXTENDED" | "PARTITIONS", ..]
        | ["SHOW", "FULL", "TRIGGERS"] => {
            let word = if w[0] == "SHOW" { "FULL" } else { w[1] };
            let at = sql.to_ascii_uppercase().find(word).unwrap_or(0);
            let rewritten = format!("{}{}", &sql[..at], &sql[at + word.len()..]);
            parse_one(&rewritten).map(Some)
        }
        ["SHOW", "SCHEMAS", ..] => {
            // SHOW DATABASES by its other name.
            let at = sql.to_ascii_uppercase().find("SCHEMAS").unwrap_or(0);
            let rewritten = format!("{}DATABASES{}", &sql[..at], &sql[at + 7..]);
            parse_one(&rewritten).map(Some)
        }
        ["SHOW", "PROFILES" | "PLUGINS" | "MASTER" | "BINLOG" | "SLAVE" | "REPLICA" | "ALL" | "BINARY"
        | "OPEN" | "ENGINE", ..] => {
            let words = first_words(sql, 5);
            let rest: Vec<&str> = words[1..].iter().map(String::as_str).collect();
            let (what, used) = match rest.as_slice() {
                ["PROFILES", ..] => ("PROFILES", 1),
                ["PLUGINS", ..] => ("PLUGINS", 1),
                ["MASTER" | "BINLOG", "STATUS", ..] => ("MASTER STATUS", 2),
                ["MASTER" | "BINARY", "LOGS", ..] => ("BINARY LOGS", 2),
                ["SLAVE" | "REPLICA", "HOSTS", ..] => ("SLAVE HOSTS", 2),
                ["SLAVE" | "REPLICA", "STATUS", ..] => ("SLAVE STATUS", 2),
                ["ALL", "SLAVES" | "REPLICAS", "STATUS", ..] => ("ALL SLAVES STATUS", 3),
                ["OPEN", "TABLES", ..] => ("OPEN TABLES", 2),
                ["ENGINE", "INNODB", "STATUS", ..] => ("ENGINE INNODB STATUS", 3),
                // Not one of these: the parser's answer (or its error).
                _ => return Ok(None),
            };
            let mut t = Toks::new(sql)?;
            t.pos = 1 + used;
            // Only SHOW OPEN TABLES takes FROM and LIKE (MariaDB: 1064 elsewhere; its
            // WHERE is not taken yet).
            let (mut db, mut like) = (None, None);
            if what == "OPEN TABLES" {
                if t.eat("FROM") || t.eat("IN") {
                    db = Some(t.ident()?);
                }
                if t.eat("LIKE") {
                    like = Some(t.string()?);
                }
            }
            t.finish(Stmt::ShowServer { what, db, like })
        }
        ["SHUTDOWN", ..] => {
            let mut t = Toks::new(sql)?;
            t.pos = 1;
            if t.eat("WAIT") {
                t.expect("FOR")?;
                t.expect("ALL")?;
                if !(t.eat("SLAVES") || t.eat("REPLICAS")) {
                    return Err(t.error());
                }
            }
            t.finish(Stmt::Shutdown)
        }
        ["SHOW", "FUNCTION" | "PROCEDURE" | "PACKAGE", ..]
        | ["SHOW", "EVENTS" | "TRIGGERS", ..] => {
            let mut t = Toks::new(sql)?;
            t.pos = 1;
            let what = if t.eat("EVENTS") {
                "EVENTS"
            } else if t.eat("TRIGGERS") {
                "TRIGGERS"
            } else {
                t.pos = 2;
                t.eat("BODY");
                t.expect("STATUS")?;
                "ROUTINES"
            };
            let mut db = None;
            if what != "ROUTINES" && (t.eat("FROM") || t.eat("IN")) {
                db = Some(t.ident()?);
            }
            if t.eat("LIKE") {
                t.string()?;
            }
            t.where_clause()?;
            t.finish(Stmt::ShowProgramObjects { what, db })
        }
        ["SHOW", "TABLE", "STATUS"] => {
            let mut t = Toks::new(sql)?;
            t.pos = 3;
            let mut db = None;
            let mut like = None;
            if t.eat("FROM") || t.eat("IN") {
                db = Some(t.ident()?);
            }
            if t.eat("LIKE") {
                like = Some(t.string()?);
            }
            let filter = t.where_clause()?;
            t.finish(Stmt::ShowTableStatus { db, like, filter })
        }
        ["SHOW", "INDEX" | "INDEXES" | "KEYS", ..] => {
            let mut t = Toks::new(sql)?;
            t.pos = 2;
            if !(t.eat("FROM") || t.eat("IN")) {
                return Err(t.error());
            }
            let (mut db, table) = t.object()?;
            if t.eat("FROM") || t.eat("IN") {
                db = Some(t.ident()?);
            }
            let filter = t.where_clause()?;
            t.finish(Stmt::ShowIndex { table, db, filter })
        }
        ["ALTER", "DATABASE" | "SCHEMA", ..] => {
            let mut t = Toks::new(sql)?;
            t.pos = 2;
            let name = match t.peek_word().as_deref() {
                Some("DEFAULT" | "CHARACTER" | "CHARSET" | "COLLATE") => None,
                _ => Some(t.ident()?),
            };
            let (mut charset, mut collate) = (None, None);
            loop {
                t.eat("DEFAULT");
                let set = t.eat_seq(&["CHARACTER", "SET"]) || t.eat("CHARSET");
                if !set && !t.eat("COLLATE") {
                    break;
                }
                if t.at(&Token::Eq) {
                    t.pos += 1;
                }
                let v = match t.string() {
                    Ok(v) => v,
                    Err(_) => t.ident()?,
                };
                if set {
                    charset = Some(v);
                } else {
                    collate = Some(v);
                }
            }
            if charset.is_none() && collate.is_none() {
                return Err(t.error());
            }
            t.finish(Stmt::AlterDatabase {
                name,
                charset,
                collate,
            })
        }
        ["SHOW", "CREATE", "DATABASE" | "SCHEMA"] => {
            let mut t = Toks::new(sql)?;
            t.pos = 3;
            t.eat_seq(&["IF", "NOT", "EXISTS"]);
            let name = t.ident()?;
            t.finish(Stmt::ShowCreateDatabase { name })
        }
        ["CHECKSUM", "TABLE" | "TABLES", ..] => {
            let mut t = Toks::new(sql)?;
            t.pos = 2;
            let mut tables = vec![t.object()?];
            while t.at(&Token::Comma) {
                t.pos += 1;
                tables.push(t.object()?);
            }
            let quick = t.eat("QUICK");
            if !quick {
                t.eat("EXTENDED");
            }
            t.finish(Stmt::ChecksumTable { tables, quick })
        }
        ["CHECK" | "OPTIMIZE" | "ANALYZE" | "REPAIR", "TABLE" | "TABLES" | "LOCAL" | "NO_WRITE_TO_BINLOG", ..] =>
        {
            let mut t = Toks::new(sql)?;
            let op = t.ident()?.to_ascii_uppercase();
            t.eat("LOCAL");
            t.eat("NO_WRITE_TO_BINLOG");
            if !(t.eat("TABLE") || t.eat("TABLES")) {
                return Err(t.error());
            }
            let mut tables = vec![t.object()?];
            while t.at(&Token::Comma) {
                t.pos += 1;
                tables.push(t.object()?);
            }
            // options like QUICK / EXTENDED / FOR UPGRADE are accepted and ignored
            Ok(Some(Stmt::TableMaintenance { op, tables }))
        }
        // `ALTER TABLE t ENGINE = e` and `ALTER TABLE t DISABLE | ENABLE KEYS` alone
        // (sqlparser does not take them); other ALTERs go on.
        ["ALTER", "TABLE", ..] => {
            let mut t = Toks::new(sql)?;
            t.pos = 2;
            let Ok((db, table)) = t.object() else {
                return Ok(None);
            };
            for (word, enable) in [("DISABLE", false), ("ENABLE", true)] {
                if t.eat(word) {
                    t.expect("KEYS")?;
                    return t.finish(Stmt::AlterKeys { db, table, enable });
                }
            }
            if !t.eat("ENGINE") {
                return Ok(None);
            }
            if t.at(&Token::Eq) {
                t.pos += 1;
            }
            let engine = t.ident()?;
            t.finish(Stmt::AlterEngine { db, table, engine })
        }
        ["LOCK", "TABLES" | "TABLE", ..] => {
            let mut t = Toks::new(sql)?;
            t.pos = 2;
            let mut items = vec![];
            loop {
                let (db, table) = t.object()?;
                let aliased = t.eat("AS")
                    || !matches!(
                        t.peek_word().as_deref(),
                        Some("READ" | "WRITE" | "LOW_PRIORITY")
                    );
                let alias = if aliased { Some(t.ident()?) } else { None };
                let write = if t.eat("READ") {
                    t.eat("LOCAL");
                    false
                } else {
                    t.eat("LOW_PRIORITY");
                    t.expect("WRITE")?;
                    t.eat("CONCURRENT");
                    true
                };
                items.push(LockItem {
                    db,
                    table,
                    alias,
                    write,
                });
                if !t.at(&Token::Comma) {
                    break;
                }
                t.pos += 1;
            }
            t.finish(Stmt::LockTables(items))
        }
        ["UNLOCK", "TABLES" | "TABLE", ..] => {
            let mut t = Toks::new(sql)?;
            t.pos = 2;
            t.finish(Stmt::UnlockTables)
        }
        ["FLUSH", ..] => Ok(Some(Stmt::Flush {
            hosts: first_words(sql, 8)
                .iter()
                .any(|w| w.trim_matches(',') == "HOSTS"),
            read_lock: flush_read_lock(sql)?,
        })),
        ["GRANT", ..] | ["REVOKE", ..] => grants::parse_grant(sql).map(Some),
        ["CREATE" | "DROP", "ROLE", ..]
        | ["SET", "ROLE", ..]
        | ["SET", "DEFAULT", "ROLE"]
        | ["SHOW", "GRANTS", ..]
        | ["SHOW", "PRIVILEGES", ..] => grants::parse_role_or_show(sql).map(Some),
        ["CREATE", "USER", ..] | ["DROP", "USER", ..] | ["ALTER", "USER", ..] => {
            accounts::parse_user_stmt(sql).map(Some)
        }
        ["SET", "PASSWORD", ..] | ["SHOW", "CREATE", "USER"] => {
            accounts::parse_user_stmt(sql).map(Some)
        }
        _ => Ok(None),
    }
}

fn one_char(s: &str) -> Option<char> {
    s.chars().next()
}

/// A reader of keywords and quoted strings: LOAD DATA's and INTO OUTFILE's.
pub(crate) trait OptionWords {
    fn eat_seq(&mut self, kws: &[&str]) -> bool;
    fn quoted(&mut self) -> Result<String>;
}

impl OptionWords for Toks {
    fn eat_seq(&mut self, kws: &[&str]) -> bool {
        Toks::eat_seq(self, kws)
    }
    fn quoted(&mut self) -> Result<String> {
        self.string()
    }
}

/// `[FIELDS|COLUMNS {TERMINATED|[OPTIONALLY] ENCLOSED|ESCAPED} BY '…' …]
/// [LINES {STARTING|TERMINATED} BY '…' …]`.
pub(crate) fn field_line_options(w: &mut impl OptionWords, o: &mut FieldFormat) -> Result<()> {
    if w.eat_seq(&["FIELDS"]) || w.eat_seq(&["COLUMNS"]) {
        loop {
            if w.eat_seq(&["TERMINATED", "BY"]) {
                o.fields_terminated = w.quoted()?;
            } else if w.eat_seq(&["OPTIONALLY", "ENCLOSED", "BY"]) {
                o.enclosed = one_char(&w.quoted()?);
                o.optionally_enclosed = true;
            } else if w.eat_seq(&["ENCLOSED", "BY"]) {
                o.enclosed = one_char(&w.quoted()?);
            } else if w.eat_seq(&["ESCAPED", "BY"]) {
                o.escaped = one_char(&w.quoted()?);
            } else {
                break;
            }
        }
    }
    if w.eat_seq(&["LINES"]) {
        loop {
            if w.eat_seq(&["STARTING", "BY"]) {
                o.lines_starting = w.quoted()?;
            } else if w.eat_seq(&["TERMINATED", "BY"]) {
                o.lines_terminated = w.quoted()?;
            } else {
                break;
            }
        }
    }
    Ok(())
}

fn parse_load_data(sql: &str) -> Result<Stmt> {
    let mut t = Toks::new(sql)?;
    let mut ld = LoadData::default();
    t.expect("LOAD")?;
    t.expect("DATA")?;
    t.eat("LOW_PRIORITY");
    t.eat("CONCURRENT");
    ld.local = t.eat("LOCAL");
    t.expect("INFILE")?;
    ld.file = t.string()?;
    if t.eat("REPLACE") {
        ld.replace = true;
    } else if t.eat("IGNORE") {
        ld.ignore = true;
    }
    t.expect("INTO")?;
    t.expect("TABLE")?;
    let (db, table) = t.object()?;
    ld.db = db;
    ld.table = table;
    if t.eat_seq(&["CHARACTER", "SET"]) || t.eat("CHARSET") {
        t.ident().or_else(|_| t.string())?;
    }
    field_line_options(&mut t, &mut ld.format)?;
    if t.eat("IGNORE") {
        ld.ignore_lines = t.number()?;
        if !(t.eat("LINES") || t.eat("ROWS")) {
            return Err(t.error());
        }
    }
    if t.at(&Token::LParen) {
        t.pos += 1;
        loop {
            ld.columns.push(t.ident()?);
            if t.at(&Token::Comma) {
                t.pos += 1;
                continue;
            }
            if t.at(&Token::RParen) {
                t.pos += 1;
                break;
            }
            return Err(t.error());
        }
    }
    if !t.done() {
        return Err(t.error());
    }
    if ld.format.fields_terminated.is_empty() || ld.format.lines_terminated.is_empty() {
        return Err(Error::unsupported(
            "LOAD DATA with empty field or line terminator",
        ));
    }
    Ok(Stmt::LoadData(ld))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rewrites' pre-test reads words outside literals, names and comments only,
    /// and a quote inside a comment or a literal does not hide the words after it.
    #[test]
    fn bare_text_skips_literals_names_and_comments() {
        for (sql, word, want) in [
            ("SELECT 'LOCK IN SHARE MODE'", "MODE", false),
            ("SELECT 1 LOCK IN SHARE mode", "MODE", true),
            ("SELECT `mode` FROM t", "MODE", false),
            ("SELECT 1 /* mode */", "MODE", false),
            ("SELECT 1 # mode", "MODE", false),
            ("SELECT 1 -- mode", "MODE", false),
            ("SELECT 1--mode", "MODE", true),
            ("/* don't */ SELECT 1 FOR SHARE MODE", "MODE", true),
            ("SELECT 'it''s', 'a\\'b' MODE", "MODE", true),
            ("SELECT 'a\\'' MODE", "MODE", true),
            ("SELECT 'a\\' MODE", "MODE", false),
            ("SELECT 'never closed MODE", "MODE", false),
        ] {
            assert_eq!(bare_text(sql).contains(word), want, "{sql}");
        }
        // The rewrites still happen after a comment holding a quote.
        for sql in [
            "/* don't */ START TRANSACTION WITH CONSISTENT SNAPSHOT",
            "/* it's */ DELETE QUICK FROM t WHERE a = 'QUICK'",
            "# it's\nSELECT * FROM t LOCK IN SHARE MODE",
        ] {
            parse(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        }
    }

    /// A statement a text rewrite touches (IGNORE, SCHEMA, LOCK IN SHARE MODE, …) keeps
    /// its string literals as written: `INSERT IGNORE … ('C:\\temp')` stored a tab, and
    /// `'it''s'` before a word holding SCHEMA was a syntax error.
    #[test]
    fn rewritten_statements_keep_their_literals() {
        let literals = |sql: &str| -> Vec<String> {
            let mut out = vec![];
            for st in parse(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}")) {
                let Stmt::Ast(a) = st else { continue };
                let _ = sqlparser::ast::visit_expressions(&*a, |e| {
                    if let sqlparser::ast::Expr::Value(v) = e {
                        if let sqlparser::ast::Value::SingleQuotedString(t) = &v.value {
                            out.push(t.clone());
                        }
                    }
                    std::ops::ControlFlow::<()>::Continue(())
                });
            }
            out
        };
        for (sql, want) in [
            (
                r"INSERT IGNORE INTO t VALUES ('C:\\temp'), ('it''s')",
                vec![r"C:\temp", "it's"],
            ),
            (
                r"SELECT 'a''b', 'é\'x' FROM information_schema.SCHEMATA",
                vec!["a'b", "é'x"],
            ),
            (
                "SELECT 'née' FROM t WHERE a = 'x''y' LOCK IN SHARE MODE",
                vec!["née", "x'y"],
            ),
            (
                "DELETE QUICK FROM t WHERE s = 'tab\there'",
                vec!["tab\there"],
            ),
        ] {
            assert_eq!(literals(sql), want, "{sql}");
        }
    }

    /// Where MariaDB 10.11 reports a client without CLIENT_MULTI_STATEMENTS sending more
    /// than one statement (its 1064 "near" text starts there), and the texts it accepts.
    #[test]
    fn a_second_statement_is_found_past_comments_and_empty_ones() {
        fn near(sql: &str) -> Option<&str> {
            second_statement(sql).map(|at| &sql[at..])
        }
        assert_eq!(near("SELECT 1; SELECT 2"), Some("SELECT 2"));
        assert_eq!(
            near("INSERT INTO t VALUES (2);\n\n  INSERT INTO t VALUES (3)"),
            Some("INSERT INTO t VALUES (3)")
        );
        assert_eq!(near("SELECT 1; garbage"), Some("garbage"));
        assert_eq!(near("/* x */ ; SELECT 1"), Some("; SELECT 1"));
        assert_eq!(near("SELECT 1; -- x\nSELECT 2"), Some("SELECT 2"));
        assert_eq!(near("SELECT 1; /*!SELECT 2*/"), Some("/*!SELECT 2*/"));
        for one in [
            "SELECT 1",
            "SELECT 1;",
            "SELECT 1; ",
            "SELECT 1;;",
            "SELECT 1; ;",
            "SELECT 1; -- x",
            "SELECT 1; /* c */",
            "SELECT 1;\n# comment\n",
            "SELECT 'a;b'",
            "SELECT `a;b` FROM t -- ;x",
        ] {
            assert_eq!(second_statement(one), None, "{one}");
        }
    }

    #[test]
    fn versioned_comments_are_executed() {
        assert_eq!(
            unwrap_versioned_comments("CREATE TABLE t (a int) /*! ENGINE = InnoDB */")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
            "CREATE TABLE t (a int) ENGINE = InnoDB"
        );
        assert_eq!(
            unwrap_versioned_comments("SELECT '/*!x*/'"),
            "SELECT '/*!x*/'"
        );
        assert_eq!(
            unwrap_versioned_comments("/*!40101 SET NAMES utf8 */").trim(),
            "SET NAMES utf8"
        );
        let words = |s: &str| {
            unwrap_versioned_comments(s)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        // A version above the server's is a comment (MariaDB's dumps start with one).
        assert_eq!(
            words("/*M!999999\\- enable the sandbox mode */ SELECT 1"),
            "SELECT 1"
        );
        assert_eq!(
            words("SELECT 1 /*!101120 + 1 */ /*!101119 + 2 */"),
            "SELECT 1 + 2"
        );
        assert_eq!(
            words("SELECT 1 /*M!100500 + 3 */ /*!50001 + 4*/"),
            "SELECT 1 + 3 + 4"
        );
        assert_eq!(
            words("SELECT 'é\\'/*!x' /*!+ 'ü' */"),
            "SELECT 'é\\'/*!x' + 'ü'"
        );
    }

    #[test]
    fn load_data_options() {
        let Stmt::LoadData(ld) = parse_one(
            "LOAD DATA LOCAL INFILE '/tmp/x.csv' IGNORE INTO TABLE db.t FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' LINES TERMINATED BY '\\r\\n' IGNORE 1 LINES (a, b)",
        )
        .unwrap() else {
            panic!()
        };
        assert!(ld.local && ld.ignore);
        assert_eq!((ld.db.as_deref(), ld.table.as_str()), (Some("db"), "t"));
        assert_eq!(ld.format.fields_terminated, ",");
        assert_eq!(ld.format.enclosed, Some('"'));
        assert_eq!(ld.format.lines_terminated, "\r\n");
        assert_eq!(ld.ignore_lines, 1);
        assert_eq!(ld.columns, vec!["a", "b"]);
    }

    #[test]
    fn account_statements() {
        let Stmt::CreateUser {
            users,
            opts,
            if_not_exists,
        } = parse_one(
            "CREATE USER IF NOT EXISTS 'app'@'%' IDENTIFIED BY 'p''w', bob \
             WITH MAX_USER_CONNECTIONS 4 ACCOUNT LOCK",
        )
        .unwrap()
        else {
            panic!()
        };
        assert!(if_not_exists);
        assert_eq!(
            users,
            vec![
                ("app".into(), "%".into(), Secret::Password("p'w".into())),
                ("bob".into(), "%".into(), Secret::None)
            ]
        );
        assert_eq!(
            opts,
            AccountOptions {
                max_user_connections: Some(4),
                locked: Some(true),
                expire: false,
                require_ssl: None,
                lifetime: None,
            }
        );
        // A bare ALTER USER changes nothing (it cleared the password); BY PASSWORD is a
        // hash, not the password "PASSWORD".
        let Stmt::AlterUser { users, opts, .. } = parse_one("ALTER USER app").unwrap() else {
            panic!()
        };
        assert_eq!(
            (users[0].2.clone(), opts),
            (Secret::None, AccountOptions::default())
        );
        let Stmt::AlterUser { users, .. } =
            parse_one("ALTER USER app IDENTIFIED BY PASSWORD '*AB'").unwrap()
        else {
            panic!()
        };
        assert_eq!(users[0].2, Secret::Hash("*AB".into()));
        // IDENTIFIED WITH a plugin Quarry does not have, and no password: refused, not an
        // account without a password (it was one for a moment in this change's history).
        assert_eq!(
            parse_one("CREATE USER s IDENTIFIED WITH unix_socket")
                .unwrap_err()
                .code,
            1235
        );
        assert_eq!(
            parse_one("CREATE USER s IDENTIFIED").unwrap_err().code,
            1064
        );
        let Stmt::CreateUser { users, .. } = parse_one(
            "CREATE USER s IDENTIFIED VIA mysql_native_password USING '*AB', \
             t IDENTIFIED WITH ed25519 BY 'pw'",
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(users[0].2, Secret::Hash("*AB".into()));
        assert_eq!(users[1].2, Secret::Password("pw".into()));
        assert_eq!(
            parse_one("CREATE USER a ACCOUNT LOCK WITH MAX_USER_CONNECTIONS 3")
                .unwrap_err()
                .code,
            1064,
            "MariaDB's order: resource limits before the lock"
        );
        let Stmt::SetPassword { user, password } =
            parse_one("SET PASSWORD FOR 'app'@'localhost' = PASSWORD('x')").unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (user, password.as_str()),
            (Some(("app".into(), "localhost".into())), "x")
        );
        assert!(matches!(
            parse_one("DROP USER IF EXISTS app@localhost").unwrap(),
            Stmt::DropUser {
                if_exists: true,
                ..
            }
        ));
        assert_eq!(parse_one("CREATE USER 'a'@").unwrap_err().code, 1064);
    }

    #[test]
    fn syntax_errors_are_1064_with_context() {
        let e = parse("SELEC 1").unwrap_err();
        assert_eq!(e.code, 1064);
        let e = parse("SELECT * FROM t WHERE").unwrap_err();
        assert_eq!(e.code, 1064);
        assert_eq!(parse("  ;").unwrap_err().code, 1065);
    }
}
