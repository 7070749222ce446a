//! `SELECT … INTO OUTFILE / DUMPFILE`: a query's rows written to a new server file. OUTFILE
//! writes LOAD DATA's text format (what LOAD DATA INFILE reads back with the same options),
//! DUMPFILE one row's bytes as they are. Where the file may go is `secure_file_priv`'s
//! (checked by the caller); an existing file is never overwritten.
//!
//! Owns the file's format; the query's plan and the path check are the session's.

use std::io::Write;
use std::path::Path;

use quarry_common::time::shown_in_column;
use quarry_common::value::format_float;
use quarry_common::{Error, Result, TypeKind, Value};
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
                for v in &r {
                    if !v.is_null() {
                        line.extend_from_slice(&text(v, None));
                    }
                }
            } else {
                line.extend_from_slice(into.lines_starting.as_bytes());
                for (i, (v, c)) in r.iter().zip(&sp.columns).enumerate() {
                    if i > 0 {
                        line.extend_from_slice(into.fields_terminated.as_bytes());
                    }
                    field(v, c, into, &mut line);
                }
                line.extend_from_slice(into.lines_terminated.as_bytes());
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

/// A value as the text protocol shows it.
fn text(v: &Value, col: Option<&OutColumn>) -> Vec<u8> {
    match (v, col) {
        (Value::Double(d), Some(c)) if c.ty.kind == TypeKind::Float => {
            format_float(*d).into_bytes()
        }
        (Value::Str(s), _) => s.as_bytes().to_vec(),
        _ => match col.and_then(|c| shown_in_column(v, &c.ty)) {
            Some(t) => t.into_bytes(),
            None => v.to_wire_bytes().unwrap_or_default(),
        },
    }
}

/// One field of an OUTFILE line: NULL as `\N`, else its text, enclosed when asked
/// (OPTIONALLY: text columns only), with the escape character before what would end or
/// confuse the field.
fn field(v: &Value, c: &OutColumn, into: &IntoFile, out: &mut Vec<u8>) {
    if v.is_null() {
        match into.escaped {
            Some(e) => {
                let mut b = [0u8; 4];
                out.extend_from_slice(e.encode_utf8(&mut b).as_bytes());
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
    let enclose = into
        .enclosed
        .filter(|_| !(into.optionally_enclosed && numeric));
    let mut b = [0u8; 4];
    if let Some(q) = enclose {
        out.extend_from_slice(q.encode_utf8(&mut b).as_bytes());
    }
    let t = text(v, Some(c));
    match into.escaped {
        Some(e) => {
            let mut special: Vec<char> = vec![e];
            match enclose {
                Some(q) => special.push(q),
                None => {
                    special.extend(into.fields_terminated.chars().next());
                    special.extend(into.lines_terminated.chars().next());
                }
            }
            let e = e.encode_utf8(&mut b).as_bytes().to_vec();
            for ch in String::from_utf8_lossy(&t).chars() {
                if ch == '\0' {
                    out.extend_from_slice(&e);
                    out.push(b'0');
                    continue;
                }
                if special.contains(&ch) {
                    out.extend_from_slice(&e);
                }
                let mut cb = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut cb).as_bytes());
            }
        }
        None => out.extend_from_slice(&t),
    }
    if let Some(q) = enclose {
        out.extend_from_slice(q.encode_utf8(&mut b).as_bytes());
    }
}
