//! `SELECT … INTO OUTFILE / DUMPFILE`: a query's rows written to a new server file. OUTFILE
//! writes LOAD DATA's text format (what LOAD DATA INFILE reads back with the same options),
//! DUMPFILE one row's bytes as they are. Where the file may go is `secure_file_priv`'s
//! (checked by the caller); an existing file is never overwritten.
//!
//! Owns the file's format; the query's plan and the path check are the session's.

use std::io::Write;
use std::path::Path;

use quarry_common::value::column_text;
use quarry_common::{Error, Result, Value};
use quarry_executor::exec::run;
use quarry_executor::{ExecCtx, OutColumn, SelectPlan};
use quarry_sql::IntoFile;

/// Write the rows of `sp` to `path` (`name` as the statement gave it, for errors);
/// returns how many rows were written.
pub(super) fn write(
    path: &Path,
    name: &str,
    into: &IntoFile,
    sp: &SelectPlan,
    ctx: &ExecCtx,
) -> Result<u64> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => {
                Error::new(1086, format!("File '{name}' already exists"))
            }
            _ => Error::new(
                1,
                format!("Can't create/write to file '{name}' (Errcode: {e})"),
            ),
        })?;
    let mut out = std::io::BufWriter::with_capacity(256 << 10, file);
    let io =
        |e: std::io::Error| Error::new(3, format!("Error writing file '{name}' (Errcode: {e})"));
    let fields = Fields::new(into);
    let mut rows = 0u64;
    let mut line = Vec::new();
    let written = run(&sp.plan, ctx, &mut |batch| {
        for r in batch {
            rows += 1;
            line.clear();
            if into.dump {
                if rows > 1 {
                    return Err(Error::new(1172, "Result consisted of more than one row"));
                }
                for (v, c) in r.iter().zip(&sp.columns) {
                    if !v.is_null() {
                        line.extend_from_slice(&column_text(v, &c.ty));
                    }
                }
            } else {
                line.extend_from_slice(into.format.lines_starting.as_bytes());
                for (i, (v, c)) in r.iter().zip(&sp.columns).enumerate() {
                    if i > 0 {
                        line.extend_from_slice(into.format.fields_terminated.as_bytes());
                    }
                    fields.write(v, c, &mut line);
                }
                line.extend_from_slice(into.format.lines_terminated.as_bytes());
            }
            out.write_all(&line).map_err(io)?;
        }
        Ok(true)
    })
    .and_then(|()| out.flush().map_err(io));
    if let Err(e) = written {
        // A statement that fails leaves no file behind, as MariaDB.
        drop(out);
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(rows)
}

/// How OUTFILE fields are written, worked out once per statement.
struct Fields<'i> {
    into: &'i IntoFile,
    /// The escape character's bytes (none: nothing is escaped, NULL is `NULL`).
    escape: Option<Vec<u8>>,
    /// The enclosing character's bytes.
    enclose: Option<Vec<u8>>,
    /// What gets the escape character before it: itself, then the enclosing character,
    /// or (not enclosed) the first characters of the field and line terminators.
    special: Vec<Vec<u8>>,
}

impl<'i> Fields<'i> {
    fn new(into: &'i IntoFile) -> Fields<'i> {
        let bytes = |c: char| c.to_string().into_bytes();
        let escape = into.format.escaped.map(bytes);
        let mut special = vec![];
        if let Some(e) = into.format.escaped {
            special.push(bytes(e));
            match into.format.enclosed {
                Some(q) => special.push(bytes(q)),
                None => {
                    special.extend(into.format.fields_terminated.chars().next().map(bytes));
                    special.extend(into.format.lines_terminated.chars().next().map(bytes));
                }
            }
        }
        Fields {
            into,
            escape,
            enclose: into.format.enclosed.map(bytes),
            special,
        }
    }

    /// One field: NULL as `\N`, else its text, enclosed when asked (OPTIONALLY: not
    /// numbers), with the escape character before what would end or confuse the field,
    /// byte by byte (a binary value is written as it is, not as text).
    fn write(&self, v: &Value, c: &OutColumn, out: &mut Vec<u8>) {
        if v.is_null() {
            match &self.escape {
                Some(e) => {
                    out.extend_from_slice(e);
                    out.push(b'N');
                }
                None => out.extend_from_slice(b"NULL"),
            }
            return;
        }
        let numeric = matches!(
            v,
            Value::Int(_) | Value::UInt(_) | Value::Double(_) | Value::Decimal(_)
        );
        let enclose = self
            .enclose
            .as_deref()
            .filter(|_| !(self.into.format.optionally_enclosed && numeric));
        if let Some(q) = enclose {
            out.extend_from_slice(q);
        }
        let t = column_text(v, &c.ty);
        match &self.escape {
            Some(e) => {
                let mut i = 0;
                while i < t.len() {
                    if t[i] == 0 {
                        out.extend_from_slice(e);
                        out.push(b'0');
                        i += 1;
                        continue;
                    }
                    match self.special.iter().find(|s| t[i..].starts_with(s)) {
                        Some(s) => {
                            out.extend_from_slice(e);
                            out.extend_from_slice(s);
                            i += s.len();
                        }
                        None => {
                            out.push(t[i]);
                            i += 1;
                        }
                    }
                }
            }
            None => out.extend_from_slice(&t),
        }
        if let Some(q) = enclose {
            out.extend_from_slice(q);
        }
    }
}
