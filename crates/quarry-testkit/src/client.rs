//! A small blocking MySQL client: the handshake (mysql_native_password, with auth switch),
//! text-protocol queries, and `LOAD DATA LOCAL INFILE`. The harness speaks to MariaDB and
//! Quarry through the same code, so neither side gets a faster driver.

use sha1::{Digest, Sha1};
use std::fmt;
use std::io::{BufReader, BufWriter, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

const CLIENT_LONG_PASSWORD: u32 = 1;
const CLIENT_CONNECT_WITH_DB: u32 = 8;
const CLIENT_LOCAL_FILES: u32 = 0x80;
const CLIENT_PROTOCOL_41: u32 = 0x200;
const CLIENT_TRANSACTIONS: u32 = 0x2000;
const CLIENT_SECURE_CONNECTION: u32 = 0x8000;
const CLIENT_MULTI_RESULTS: u32 = 0x20000;
const CLIENT_PLUGIN_AUTH: u32 = 0x80000;
const SERVER_MORE_RESULTS_EXISTS: u16 = 8;
const MAX_PACKET: usize = 0xFF_FFFF;

/// A server error (code, message) or a transport failure (code 0).
#[derive(Debug, Clone)]
pub struct DbError {
    pub code: u16,
    pub message: String,
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.code == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "ERROR {}: {}", self.code, self.message)
        }
    }
}

impl std::error::Error for DbError {}

impl From<std::io::Error> for DbError {
    fn from(e: std::io::Error) -> Self {
        DbError {
            code: 0,
            message: format!("connection: {e}"),
        }
    }
}

pub type DbResult<T> = Result<T, DbError>;

/// What one statement returned.
#[derive(Debug, Default)]
pub struct QueryResult {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Option<String>>>,
    pub affected: u64,
}

impl QueryResult {
    /// The first column of the first row, for `SELECT count(*)`-style probes.
    pub fn scalar(&self) -> Option<&str> {
        self.rows.first()?.first()?.as_deref()
    }
}

#[derive(Clone, Debug)]
pub struct ConnectOptions {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: String,
    pub database: Option<String>,
    /// Read timeout per packet; a query slower than this fails with a transport error.
    pub read_timeout: Option<Duration>,
}

impl ConnectOptions {
    pub fn new(port: u16) -> ConnectOptions {
        ConnectOptions {
            host: "127.0.0.1".into(),
            port,
            user: "root".into(),
            password: String::new(),
            database: None,
            read_timeout: None,
        }
    }

    pub fn db(mut self, db: &str) -> ConnectOptions {
        self.database = Some(db.to_string());
        self
    }
}

pub struct Conn {
    reader: BufReader<TcpStream>,
    writer: BufWriter<TcpStream>,
    seq: u8,
    pub connection_id: u32,
    pub server_version: String,
}

fn proto(msg: impl Into<String>) -> DbError {
    DbError {
        code: 0,
        message: msg.into(),
    }
}

fn native_scramble(password: &str, seed: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let stage1 = Sha1::digest(password.as_bytes());
    let stage2 = Sha1::digest(stage1);
    let mut h = Sha1::new();
    h.update(seed);
    h.update(stage2);
    let mix = h.finalize();
    stage1.iter().zip(mix.iter()).map(|(a, b)| a ^ b).collect()
}

fn lenenc_int(buf: &[u8], pos: &mut usize) -> DbResult<u64> {
    let first = *buf.get(*pos).ok_or_else(|| proto("short packet"))?;
    *pos += 1;
    let width = match first {
        0xFC => 2,
        0xFD => 3,
        0xFE => 8,
        _ => return Ok(first as u64),
    };
    let bytes = buf
        .get(*pos..*pos + width)
        .ok_or_else(|| proto("short packet"))?;
    *pos += width;
    Ok(bytes
        .iter()
        .rev()
        .fold(0u64, |acc, b| (acc << 8) | *b as u64))
}

fn lenenc_str(buf: &[u8], pos: &mut usize) -> DbResult<Option<String>> {
    if buf.get(*pos) == Some(&0xFB) {
        *pos += 1;
        return Ok(None);
    }
    let n = lenenc_int(buf, pos)? as usize;
    let s = buf
        .get(*pos..*pos + n)
        .ok_or_else(|| proto("short packet"))?;
    *pos += n;
    Ok(Some(String::from_utf8_lossy(s).into_owned()))
}

fn parse_err(p: &[u8]) -> DbError {
    let code = u16::from_le_bytes([
        p.get(1).copied().unwrap_or(0),
        p.get(2).copied().unwrap_or(0),
    ]);
    let msg_start = if p.get(3) == Some(&b'#') { 9 } else { 3 };
    DbError {
        code,
        message: String::from_utf8_lossy(p.get(msg_start..).unwrap_or(&[])).into_owned(),
    }
}

fn cstr(buf: &[u8], pos: &mut usize) -> String {
    let end = buf[*pos..]
        .iter()
        .position(|b| *b == 0)
        .map_or(buf.len(), |i| *pos + i);
    let s = String::from_utf8_lossy(&buf[*pos..end]).into_owned();
    *pos = (end + 1).min(buf.len());
    s
}

impl Conn {
    pub fn connect(opts: &ConnectOptions) -> DbResult<Conn> {
        let stream = TcpStream::connect((opts.host.as_str(), opts.port))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(opts.read_timeout)?;
        let mut conn = Conn {
            reader: BufReader::with_capacity(64 * 1024, stream.try_clone()?),
            writer: BufWriter::with_capacity(64 * 1024, stream),
            seq: 0,
            connection_id: 0,
            server_version: String::new(),
        };
        conn.handshake(opts)?;
        Ok(conn)
    }

    fn handshake(&mut self, opts: &ConnectOptions) -> DbResult<()> {
        let hello = self.read_packet()?;
        if hello.first() == Some(&0xFF) {
            return Err(parse_err(&hello));
        }
        let mut pos = 1;
        self.server_version = cstr(&hello, &mut pos);
        let id = hello
            .get(pos..pos + 4)
            .ok_or_else(|| proto("short handshake"))?;
        self.connection_id = u32::from_le_bytes([id[0], id[1], id[2], id[3]]);
        pos += 4;
        let mut seed = hello
            .get(pos..pos + 8)
            .ok_or_else(|| proto("short handshake"))?
            .to_vec();
        pos += 8 + 1 + 2 + 1 + 2 + 2;
        let auth_len = *hello.get(pos).unwrap_or(&0) as usize;
        pos += 1 + 10;
        let part2 = auth_len.saturating_sub(8).max(13);
        if let Some(rest) = hello.get(pos..pos + part2) {
            seed.extend_from_slice(&rest[..rest.len() - 1]);
        }
        let mut caps = CLIENT_LONG_PASSWORD
            | CLIENT_LOCAL_FILES
            | CLIENT_PROTOCOL_41
            | CLIENT_TRANSACTIONS
            | CLIENT_SECURE_CONNECTION
            | CLIENT_MULTI_RESULTS
            | CLIENT_PLUGIN_AUTH;
        if opts.database.is_some() {
            caps |= CLIENT_CONNECT_WITH_DB;
        }
        let mut p = Vec::with_capacity(128);
        p.extend_from_slice(&caps.to_le_bytes());
        p.extend_from_slice(&(MAX_PACKET as u32).to_le_bytes());
        p.push(8); // latin1, like the baseline MariaDB's server default
        p.extend_from_slice(&[0; 23]);
        p.extend_from_slice(opts.user.as_bytes());
        p.push(0);
        let auth = native_scramble(&opts.password, &seed);
        p.push(auth.len() as u8);
        p.extend_from_slice(&auth);
        if let Some(db) = &opts.database {
            p.extend_from_slice(db.as_bytes());
            p.push(0);
        }
        p.extend_from_slice(b"mysql_native_password\0");
        self.write_packet(&p)?;
        self.writer.flush()?;
        loop {
            let reply = self.read_packet()?;
            match reply.first() {
                Some(0x00) => return Ok(()),
                Some(0xFF) => return Err(parse_err(&reply)),
                Some(0xFE) => {
                    let mut pos = 1;
                    let plugin = cstr(&reply, &mut pos);
                    if plugin != "mysql_native_password" {
                        return Err(proto(format!("unsupported auth plugin {plugin}")));
                    }
                    let seed = reply[pos..].strip_suffix(&[0]).unwrap_or(&reply[pos..]);
                    let auth = native_scramble(&opts.password, seed);
                    self.write_packet(&auth)?;
                    self.writer.flush()?;
                }
                // caching_sha2 "fast auth success" and similar progress packets.
                Some(0x01) => continue,
                _ => return Err(proto("unexpected handshake reply")),
            }
        }
    }

    fn read_packet(&mut self) -> DbResult<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            let mut hdr = [0u8; 4];
            self.reader.read_exact(&mut hdr)?;
            let len = u32::from_le_bytes([hdr[0], hdr[1], hdr[2], 0]) as usize;
            self.seq = hdr[3].wrapping_add(1);
            let start = out.len();
            out.resize(start + len, 0);
            self.reader.read_exact(&mut out[start..])?;
            if len < MAX_PACKET {
                return Ok(out);
            }
        }
    }

    fn write_packet(&mut self, payload: &[u8]) -> DbResult<()> {
        let mut chunks = payload.chunks(MAX_PACKET).peekable();
        if payload.is_empty() {
            self.writer.write_all(&[0, 0, 0, self.seq])?;
            self.seq = self.seq.wrapping_add(1);
            return Ok(());
        }
        while let Some(c) = chunks.next() {
            let len = (c.len() as u32).to_le_bytes();
            self.writer.write_all(&[len[0], len[1], len[2], self.seq])?;
            self.writer.write_all(c)?;
            self.seq = self.seq.wrapping_add(1);
            if chunks.peek().is_none() && c.len() == MAX_PACKET {
                self.writer.write_all(&[0, 0, 0, self.seq])?;
                self.seq = self.seq.wrapping_add(1);
            }
        }
        Ok(())
    }

    /// Run one statement and read its whole result (every row is fetched).
    pub fn query(&mut self, sql: &str) -> DbResult<QueryResult> {
        self.seq = 0;
        let mut p = Vec::with_capacity(sql.len() + 1);
        p.push(0x03);
        p.extend_from_slice(sql.as_bytes());
        self.write_packet(&p)?;
        self.writer.flush()?;
        let mut result = QueryResult::default();
        loop {
            let more = self.read_result(&mut result)?;
            if !more {
                return Ok(result);
            }
        }
    }

    /// Run a statement whose result is not needed (errors still surface).
    pub fn exec(&mut self, sql: &str) -> DbResult<u64> {
        Ok(self.query(sql)?.affected)
    }

    /// Reads one result set or OK; returns whether more results follow.
    fn read_result(&mut self, out: &mut QueryResult) -> DbResult<bool> {
        let first = self.read_packet()?;
        match first.first() {
            Some(0x00) => {
                let mut pos = 1;
                out.affected += lenenc_int(&first, &mut pos)?;
                lenenc_int(&first, &mut pos)?;
                let status = u16::from_le_bytes([
                    first.get(pos).copied().unwrap_or(0),
                    first.get(pos + 1).copied().unwrap_or(0),
                ]);
                Ok(status & SERVER_MORE_RESULTS_EXISTS != 0)
            }
            Some(0xFF) => Err(parse_err(&first)),
            Some(0xFB) => {
                let name = String::from_utf8_lossy(&first[1..]).into_owned();
                self.send_local_file(&name)?;
                self.read_result(out)
            }
            _ => {
                let mut pos = 0;
                let ncols = lenenc_int(&first, &mut pos)? as usize;
                out.columns.clear();
                out.rows.clear();
                for _ in 0..ncols {
                    let def = self.read_packet()?;
                    let mut pos = 0;
                    for _ in 0..4 {
                        lenenc_str(&def, &mut pos)?; // catalog, schema, table, org_table
                    }
                    out.columns
                        .push(lenenc_str(&def, &mut pos)?.unwrap_or_default());
                }
                let eof = self.read_packet()?;
                if eof.first() != Some(&0xFE) {
                    return Err(proto("expected EOF after column definitions"));
                }
                loop {
                    let row = self.read_packet()?;
                    if row.first() == Some(&0xFE) && row.len() < 9 {
                        let status = u16::from_le_bytes([
                            row.get(3).copied().unwrap_or(0),
                            row.get(4).copied().unwrap_or(0),
                        ]);
                        return Ok(status & SERVER_MORE_RESULTS_EXISTS != 0);
                    }
                    if row.first() == Some(&0xFF) {
                        return Err(parse_err(&row));
                    }
                    let mut pos = 0;
                    let mut vals = Vec::with_capacity(ncols);
                    for _ in 0..ncols {
                        vals.push(lenenc_str(&row, &mut pos)?);
                    }
                    out.rows.push(vals);
                }
            }
        }
    }

    fn send_local_file(&mut self, name: &str) -> DbResult<()> {
        match std::fs::File::open(name) {
            Ok(mut f) => {
                let mut buf = vec![0u8; 1 << 20];
                loop {
                    let n = f.read(&mut buf)?;
                    if n == 0 {
                        break;
                    }
                    self.write_packet(&buf[..n])?;
                }
            }
            Err(e) => eprintln!("LOAD DATA LOCAL: cannot read {name}: {e}"),
        }
        self.write_packet(&[])?;
        self.writer.flush()?;
        Ok(())
    }

    /// COM_QUIT; the server closes the connection.
    pub fn quit(mut self) {
        self.seq = 0;
        let _ = self.write_packet(&[0x01]);
        let _ = self.writer.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenenc_integers_decode_all_widths() {
        let buf = [
            0x05, 0xFC, 0x34, 0x12, 0xFD, 1, 2, 3, 0xFE, 1, 0, 0, 0, 0, 0, 0, 1,
        ];
        let mut pos = 0;
        assert_eq!(lenenc_int(&buf, &mut pos).unwrap(), 5);
        assert_eq!(lenenc_int(&buf, &mut pos).unwrap(), 0x1234);
        assert_eq!(lenenc_int(&buf, &mut pos).unwrap(), 0x030201);
        assert_eq!(lenenc_int(&buf, &mut pos).unwrap(), (1u64 << 56) | 1);
        assert!(lenenc_int(&buf, &mut pos).is_err());
    }

    #[test]
    fn error_packets_keep_code_and_message() {
        let e = parse_err(b"\xff\x26\x04#23000Duplicate entry '1' for key 'PRIMARY'");
        assert_eq!(e.code, 1062);
        assert_eq!(e.message, "Duplicate entry '1' for key 'PRIMARY'");
    }

    #[test]
    fn empty_password_sends_no_scramble() {
        assert!(native_scramble("", b"01234567890123456789").is_empty());
        assert_eq!(native_scramble("pw", b"01234567890123456789").len(), 20);
    }
}
