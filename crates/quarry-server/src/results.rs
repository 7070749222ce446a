//! Result sets on the wire: column definitions, then rows as text or in the binary
//! protocol, with text in the client's `character_set_results`. Owns the encoding of
//! values; what a statement returns is the session's.

use crate::tls::Socket;
use quarry_common::charset::Charset;
use quarry_common::time::value_to_time;
use quarry_common::types::flags;
use quarry_common::value::column_text;
use quarry_common::{TypeKind, Value};
use quarry_core::{OutColumn, Output, RowSink};
use quarry_protocol::*;

use crate::Client;

impl Client {
    /// A character set variable of the session (`character_set_client`, …_results).
    pub(crate) fn charset(&self, var: &str) -> Charset {
        let v = match self.session.session_value(var) {
            Some(v) => v.clone(),
            None => self.session.db.global(var).unwrap_or(Value::Null),
        };
        match v {
            Value::Null => Charset::Binary,
            v => Charset::named(&v.as_str_lossy()).unwrap_or(Charset::Utf8),
        }
    }

    pub(crate) fn send_columns(&mut self, cols: &[OutColumn]) {
        let cs = self.charset("character_set_results");
        push_columns(&mut self.conn, cols, cs);
    }

    pub(crate) fn send_output(&mut self, out: Output, binary: bool, more: bool) {
        match out {
            Output::Ok {
                affected,
                last_insert_id,
                info,
            } => self.send_ok(
                affected,
                last_insert_id,
                info.as_deref().unwrap_or(""),
                more,
            ),
            Output::Rows { columns, rows } => {
                let mut p = vec![];
                put_lenenc_int(&mut p, columns.len() as u64);
                self.conn.push(&p);
                self.send_columns(&columns);
                if self.caps & CLIENT_DEPRECATE_EOF == 0 {
                    let st = self.status();
                    self.conn.push(&eof_packet(st, 0));
                }
                let cs = self.charset("character_set_results");
                let mut buf = Vec::with_capacity(256);
                for r in &rows {
                    encode_row(&mut buf, &columns, r, cs, binary);
                    self.conn.push(&buf);
                }
                self.send_eof(more);
            }
            // The rows went out as they came (`Streamer`): only the end is left.
            Output::Streamed { .. } => self.send_eof(more),
        }
    }
}

fn push_columns(conn: &mut Conn<Socket>, cols: &[OutColumn], cs: Charset) {
    for c in cols {
        let mut f = c.flags | c.ty.column_flags();
        if !c.nullable {
            f |= flags::NOT_NULL;
        }
        let p = column_packet(&ColumnDef {
            db: &c.db,
            table: &c.table,
            org_table: &c.org_table,
            name: &String::from_utf8_lossy(&cs.encode(&c.name)),
            org_name: &c.org_name,
            charset: match c.ty.charset() {
                45 => cs.collation_id(),
                other => other,
            },
            length: c.ty.display_length(),
            type_code: c.ty.wire_type(),
            flags: f,
            decimals: c.ty.decimals(),
        });
        conn.push(&p);
    }
}

/// One row's packet payload into `buf` (cleared first), as text or binary protocol.
fn encode_row(buf: &mut Vec<u8>, columns: &[OutColumn], r: &[Value], cs: Charset, binary: bool) {
    buf.clear();
    if binary {
        encode_binary_row(buf, columns, r, cs);
        return;
    }
    for (v, c) in r.iter().zip(columns) {
        match v {
            Value::Null => buf.push(0xfb),
            Value::Str(s) => put_lenenc_str(buf, &cs.encode(s)),
            _ => put_lenenc_str(buf, &column_text(v, &c.ty)),
        }
    }
}

/// Written to the socket once this much is buffered: a result set is sent as it is
/// produced, never held whole.
const STREAM_CHUNK: usize = 256 << 10;

/// A result set going to the client batch by batch while the statement runs (the
/// session's [`RowSink`]); the final EOF is sent by the caller once the statement ended.
pub(crate) struct Streamer<'a> {
    pub conn: &'a mut Conn<Socket>,
    pub caps: u32,
    /// Status flags for the EOF after the column definitions.
    pub status: u16,
    pub cs: Charset,
    pub binary: bool,
    columns: Vec<OutColumn>,
    buf: Vec<u8>,
}

impl<'a> Streamer<'a> {
    pub(crate) fn new(
        conn: &'a mut Conn<Socket>,
        caps: u32,
        status: u16,
        cs: Charset,
        binary: bool,
    ) -> Streamer<'a> {
        Streamer {
            conn,
            caps,
            status,
            cs,
            binary,
            columns: vec![],
            buf: Vec::with_capacity(256),
        }
    }
}

impl RowSink for Streamer<'_> {
    fn columns(&mut self, cols: &[OutColumn]) -> quarry_common::Result<()> {
        let mut p = vec![];
        put_lenenc_int(&mut p, cols.len() as u64);
        self.conn.push(&p);
        push_columns(self.conn, cols, self.cs);
        if self.caps & CLIENT_DEPRECATE_EOF == 0 {
            self.conn.push(&eof_packet(self.status, 0));
        }
        self.columns = cols.to_vec();
        Ok(())
    }

    fn rows(&mut self, rows: Vec<quarry_common::Row>) -> quarry_common::Result<()> {
        for r in &rows {
            encode_row(&mut self.buf, &self.columns, r, self.cs, self.binary);
            self.conn.push(&self.buf);
        }
        if self.conn.buffered() >= STREAM_CHUNK {
            // The client is gone (or stalled past its timeouts): stop the statement.
            self.conn
                .flush()
                .map_err(|_| quarry_common::Error::query_interrupted())?;
        }
        Ok(())
    }
}

/// One binary-protocol row: header, NULL bitmap (offset 2), values in their column types.
fn encode_binary_row(buf: &mut Vec<u8>, cols: &[OutColumn], row: &[Value], cs: Charset) {
    buf.push(0);
    let nb = (cols.len() + 7 + 2) / 8;
    let start = buf.len();
    buf.resize(start + nb, 0);
    for (i, (c, v)) in cols.iter().zip(row).enumerate() {
        if v.is_null() {
            buf[start + (i + 2) / 8] |= 1 << ((i + 2) % 8);
            continue;
        }
        match c.ty.kind {
            TypeKind::TinyInt => buf.push(v.to_i64() as u8),
            TypeKind::SmallInt | TypeKind::Year => {
                buf.extend_from_slice(&(v.to_i64() as u16).to_le_bytes())
            }
            TypeKind::MediumInt | TypeKind::Int => {
                buf.extend_from_slice(&(v.to_i64() as u32).to_le_bytes())
            }
            TypeKind::BigInt => {
                let bits = match v {
                    Value::UInt(u) => *u,
                    other => other.to_i64() as u64,
                };
                buf.extend_from_slice(&bits.to_le_bytes())
            }
            TypeKind::Float => buf.extend_from_slice(&(v.to_f64() as f32).to_le_bytes()),
            TypeKind::Double => buf.extend_from_slice(&v.to_f64().to_le_bytes()),
            TypeKind::Date | TypeKind::DateTime | TypeKind::Timestamp => match v.to_datetime() {
                Some(dt) => {
                    // As MariaDB: only the parts that are not zero (clients read the
                    // length; some print a fraction whenever one is sent).
                    let d = dt.date;
                    let len = if c.ty.kind != TypeKind::Date && dt.micro != 0 {
                        11
                    } else if c.ty.kind != TypeKind::Date
                        && (dt.hour, dt.minute, dt.second) != (0, 0, 0)
                    {
                        7
                    } else if (d.year, d.month, d.day) != (0, 0, 0) {
                        4
                    } else {
                        0
                    };
                    buf.push(len);
                    if len >= 4 {
                        buf.extend_from_slice(&d.year.to_le_bytes());
                        buf.extend_from_slice(&[d.month, d.day]);
                    }
                    if len >= 7 {
                        buf.extend_from_slice(&[dt.hour, dt.minute, dt.second]);
                    }
                    if len == 11 {
                        buf.extend_from_slice(&dt.micro.to_le_bytes());
                    }
                }
                None => buf.push(0),
            },
            TypeKind::Time => match value_to_time(v) {
                Some(t) if t.micros() != 0 => {
                    let us = t.micros();
                    let a = us.unsigned_abs();
                    let secs = a / 1_000_000;
                    let micro = (a % 1_000_000) as u32;
                    buf.push(if micro == 0 { 8 } else { 12 });
                    buf.push((us < 0) as u8);
                    buf.extend_from_slice(&((secs / 86_400) as u32).to_le_bytes());
                    buf.extend_from_slice(&[
                        (secs / 3600 % 24) as u8,
                        (secs / 60 % 60) as u8,
                        (secs % 60) as u8,
                    ]);
                    if micro != 0 {
                        buf.extend_from_slice(&micro.to_le_bytes());
                    }
                }
                _ => buf.push(0),
            },
            _ => match v {
                Value::Str(s) => put_lenenc_str(buf, &cs.encode(s)),
                _ => put_lenenc_str(buf, &v.to_wire_bytes().unwrap_or_default()),
            },
        }
    }
}
