//! The MySQL client/server wire protocol: packets, handshake, and value encodings.
//!
//! Knows nothing of SQL: it frames packets (with sequence ids and the 16 MiB split),
//! builds handshake/OK/ERR/EOF/column-definition packets, and encodes text and binary
//! rows. Responses are accumulated in one buffer and written with a single `write` per
//! response (DEPS.md: 16k → 44k queries/s on loopback).

use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use sha1::{Digest, Sha1};

pub const CLIENT_LONG_PASSWORD: u32 = 1;
pub const CLIENT_FOUND_ROWS: u32 = 2;
pub const CLIENT_LONG_FLAG: u32 = 4;
pub const CLIENT_CONNECT_WITH_DB: u32 = 8;
pub const CLIENT_LOCAL_FILES: u32 = 128;
pub const CLIENT_PROTOCOL_41: u32 = 512;
pub const CLIENT_INTERACTIVE: u32 = 1024;
pub const CLIENT_SSL: u32 = 2048;
pub const CLIENT_TRANSACTIONS: u32 = 8192;
pub const CLIENT_SECURE_CONNECTION: u32 = 32768;
pub const CLIENT_MULTI_STATEMENTS: u32 = 1 << 16;
pub const CLIENT_MULTI_RESULTS: u32 = 1 << 17;
pub const CLIENT_PS_MULTI_RESULTS: u32 = 1 << 18;
pub const CLIENT_PLUGIN_AUTH: u32 = 1 << 19;
pub const CLIENT_CONNECT_ATTRS: u32 = 1 << 20;
pub const CLIENT_PLUGIN_AUTH_LENENC_DATA: u32 = 1 << 21;
pub const CLIENT_SESSION_TRACK: u32 = 1 << 23;
pub const CLIENT_DEPRECATE_EOF: u32 = 1 << 24;

pub const SERVER_STATUS_IN_TRANS: u16 = 1;
pub const SERVER_STATUS_AUTOCOMMIT: u16 = 2;
pub const SERVER_MORE_RESULTS_EXISTS: u16 = 8;

pub const SERVER_CAPABILITIES: u32 = CLIENT_LONG_PASSWORD
    | CLIENT_FOUND_ROWS
    | CLIENT_LONG_FLAG
    | CLIENT_CONNECT_WITH_DB
    | CLIENT_LOCAL_FILES
    | CLIENT_PROTOCOL_41
    | CLIENT_INTERACTIVE
    | CLIENT_TRANSACTIONS
    | CLIENT_SECURE_CONNECTION
    | CLIENT_MULTI_STATEMENTS
    | CLIENT_MULTI_RESULTS
    | CLIENT_PS_MULTI_RESULTS
    | CLIENT_PLUGIN_AUTH
    | CLIENT_CONNECT_ATTRS
    | CLIENT_PLUGIN_AUTH_LENENC_DATA;

pub const MAX_PACKET: usize = 0xff_ffff;

/// Packet framing over a stream, with a response buffer flushed once per response.
///
/// Input is read in chunks into `inbuf` (one `read` usually brings a whole command). A
/// stream with a read timeout may time out between reads: before the first byte of a
/// command that means the client is idle ([`Conn::read_command`] says so); inside a
/// packet the read goes on until `patience` has passed without a byte.
pub struct Conn<S> {
    pub stream: S,
    pub seq: u8,
    out: Vec<u8>,
    /// Received bytes not consumed yet are `inbuf[start..end]`.
    inbuf: Vec<u8>,
    start: usize,
    end: usize,
    /// Largest incoming (reassembled) packet accepted.
    pub max_packet: usize,
    /// How long a packet may stall once begun before the read fails.
    pub patience: Duration,
    /// No read waits past this (the handshake's `connect_timeout`, however slowly the
    /// bytes trickle in).
    pub deadline: Option<Instant>,
    /// A write failed (the client went away, or stalled past the write timeout) with some
    /// of a packet perhaps sent: nothing more can be written in sequence.
    broken: bool,
}

const READ_CHUNK: usize = 16 * 1024;
const OUT_CAPACITY: usize = 16 * 1024;

fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// One read of at least a byte (end of stream is UnexpectedEof), waiting through read
/// timeouts until `patience` has passed without one.
fn read_some(
    stream: &mut impl Read,
    buf: &mut [u8],
    patience: Duration,
    deadline: Option<Instant>,
) -> io::Result<usize> {
    let mut stalled: Option<Instant> = None;
    loop {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(io::ErrorKind::TimedOut.into());
        }
        match stream.read(buf) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if timed_out(&e) => {
                if stalled.get_or_insert_with(Instant::now).elapsed() >= patience {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

impl<S: Read + Write> Conn<S> {
    pub fn new(stream: S) -> Conn<S> {
        Conn {
            stream,
            seq: 0,
            out: Vec::with_capacity(OUT_CAPACITY),
            inbuf: Vec::new(),
            start: 0,
            end: 0,
            max_packet: 16 << 20,
            patience: Duration::from_secs(28800),
            deadline: None,
            broken: false,
        }
    }

    /// The next command, or None when the stream's read timeout passed before any of it
    /// arrived: the client is idle.
    pub fn read_command(&mut self) -> io::Result<Option<Vec<u8>>> {
        if self.start == self.end {
            match self.fill(Duration::ZERO) {
                Ok(()) => {}
                Err(e) if timed_out(&e) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        self.read_packet().map(Some)
    }

    /// The bytes received past the packets read, taken out: a client that asked for TLS
    /// may send its first TLS record right behind the request, in the same read.
    pub fn take_unread(&mut self) -> Vec<u8> {
        let rest = self.inbuf[self.start..self.end].to_vec();
        self.start = 0;
        self.end = 0;
        rest
    }

    /// Give back the buffers' memory while nothing is pending (an idle connection).
    pub fn shrink(&mut self) {
        if self.start == self.end {
            self.inbuf = Vec::new();
            self.start = 0;
            self.end = 0;
        }
        if self.out.is_empty() {
            self.out = Vec::new();
        }
    }

    /// Read once into `inbuf` (at least one byte, or an error; end of stream is
    /// UnexpectedEof), waiting through read timeouts up to `patience`.
    fn fill(&mut self, patience: Duration) -> io::Result<()> {
        if self.inbuf.is_empty() {
            self.inbuf = vec![0; READ_CHUNK];
        }
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.inbuf.len() {
            self.inbuf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        self.end += read_some(
            &mut self.stream,
            &mut self.inbuf[self.end..],
            patience,
            self.deadline,
        )?;
        Ok(())
    }

    /// Fill `buf` from what is buffered and then from the stream.
    fn read_exactly(&mut self, buf: &mut [u8]) -> io::Result<()> {
        let mut at = 0;
        while at < buf.len() {
            if self.start == self.end {
                if buf.len() - at >= READ_CHUNK {
                    // Large payloads go straight to their place.
                    at += read_some(
                        &mut self.stream,
                        &mut buf[at..],
                        self.patience,
                        self.deadline,
                    )?;
                    continue;
                }
                self.fill(self.patience)?;
            }
            let n = (self.end - self.start).min(buf.len() - at);
            buf[at..at + n].copy_from_slice(&self.inbuf[self.start..self.start + n]);
            self.start += n;
            at += n;
        }
        Ok(())
    }

    /// Read one logical packet (joining 16 MiB continuation frames). Err(InvalidData) when
    /// it exceeds `max_packet`.
    pub fn read_packet(&mut self) -> io::Result<Vec<u8>> {
        let mut payload = Vec::new();
        loop {
            let mut h = [0u8; 4];
            self.read_exactly(&mut h)?;
            let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
            self.seq = h[3].wrapping_add(1);
            if payload.len() + len > self.max_packet {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "packet too large",
                ));
            }
            let start = payload.len();
            payload.resize(start + len, 0);
            self.read_exactly(&mut payload[start..])?;
            if len < MAX_PACKET {
                return Ok(payload);
            }
        }
    }

    /// Queue one packet (split into 16 MiB frames as the protocol requires).
    pub fn push(&mut self, payload: &[u8]) {
        let mut rest = payload;
        loop {
            let n = rest.len().min(MAX_PACKET);
            let len = (n as u32).to_le_bytes();
            self.out
                .extend_from_slice(&[len[0], len[1], len[2], self.seq]);
            self.seq = self.seq.wrapping_add(1);
            self.out.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            if n < MAX_PACKET {
                break;
            }
        }
    }

    /// Bytes pushed and not yet written.
    pub fn buffered(&self) -> usize {
        self.out.len()
    }

    pub fn flush(&mut self) -> io::Result<()> {
        if self.broken {
            self.out.clear();
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        if !self.out.is_empty() {
            if let Err(e) = self.stream.write_all(&self.out) {
                self.broken = true;
                self.out = Vec::new();
                return Err(e);
            }
            self.out.clear();
            // A large result's buffer is not kept for the session's life.
            if self.out.capacity() > 64 * OUT_CAPACITY {
                self.out = Vec::with_capacity(OUT_CAPACITY);
            }
        }
        self.stream.flush()
    }
}

pub fn put_lenenc_int(out: &mut Vec<u8>, v: u64) {
    if v < 251 {
        out.push(v as u8);
    } else if v < 1 << 16 {
        out.push(0xfc);
        out.extend_from_slice(&(v as u16).to_le_bytes());
    } else if v < 1 << 24 {
        out.push(0xfd);
        out.extend_from_slice(&(v as u32).to_le_bytes()[..3]);
    } else {
        out.push(0xfe);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

pub fn put_lenenc_str(out: &mut Vec<u8>, s: &[u8]) {
    put_lenenc_int(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// Cursor over a received packet; every read is bounds-checked (malformed input → None).
pub struct Reader<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }
    pub fn remaining(&self) -> &'a [u8] {
        &self.buf[self.pos.min(self.buf.len())..]
    }
    pub fn u8(&mut self) -> Option<u8> {
        let b = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some(b)
    }
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.buf.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }
    pub fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.bytes(2)?.try_into().ok()?))
    }
    pub fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.bytes(4)?.try_into().ok()?))
    }
    pub fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.bytes(8)?.try_into().ok()?))
    }
    pub fn lenenc_int(&mut self) -> Option<u64> {
        match self.u8()? {
            0xfc => Some(self.u16()? as u64),
            0xfd => {
                let b = self.bytes(3)?;
                Some(u32::from_le_bytes([b[0], b[1], b[2], 0]) as u64)
            }
            0xfe => self.u64(),
            0xfb | 0xff => None,
            b => Some(b as u64),
        }
    }
    pub fn lenenc_bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.lenenc_int()?;
        self.bytes(usize::try_from(n).ok()?)
    }
    pub fn null_str(&mut self) -> Option<&'a [u8]> {
        let rest = self.remaining();
        let end = rest.iter().position(|b| *b == 0)?;
        self.pos += end + 1;
        Some(&rest[..end])
    }
}

/// The greeting; `ssl`: CLIENT_SSL is offered (the client may ask for TLS before it
/// answers).
pub fn handshake(conn_id: u32, version: &str, scramble: &[u8; 20], ssl: bool) -> Vec<u8> {
    let caps = SERVER_CAPABILITIES | if ssl { CLIENT_SSL } else { 0 };
    let mut p = vec![10];
    p.extend_from_slice(version.as_bytes());
    p.push(0);
    p.extend_from_slice(&conn_id.to_le_bytes());
    p.extend_from_slice(&scramble[..8]);
    p.push(0);
    p.extend_from_slice(&(caps as u16).to_le_bytes());
    p.push(45); // utf8mb4_general_ci
    p.extend_from_slice(&SERVER_STATUS_AUTOCOMMIT.to_le_bytes());
    p.extend_from_slice(&((caps >> 16) as u16).to_le_bytes());
    p.push(21);
    p.extend_from_slice(&[0; 10]);
    p.extend_from_slice(&scramble[8..]);
    p.push(0);
    p.extend_from_slice(b"mysql_native_password\0");
    p
}

pub struct HandshakeResponse {
    pub capabilities: u32,
    pub max_packet: u32,
    pub charset: u8,
    pub user: String,
    pub auth: Vec<u8>,
    pub database: Option<String>,
    pub plugin: Option<String>,
    /// The connection attributes the client sent (`_client_name`, `program_name`, …), in
    /// its order; none when it sent none or they did not parse.
    pub attrs: Vec<(String, String)>,
}

pub fn parse_handshake_response(p: &[u8]) -> Option<HandshakeResponse> {
    let mut r = Reader::new(p);
    let capabilities = r.u32()?;
    if capabilities & CLIENT_PROTOCOL_41 == 0 {
        return None;
    }
    let max_packet = r.u32()?;
    let charset = r.u8()?;
    r.bytes(23)?;
    let user = String::from_utf8_lossy(r.null_str()?).into_owned();
    let auth = if capabilities & CLIENT_PLUGIN_AUTH_LENENC_DATA != 0 {
        r.lenenc_bytes()?.to_vec()
    } else if capabilities & CLIENT_SECURE_CONNECTION != 0 {
        let n = r.u8()? as usize;
        r.bytes(n)?.to_vec()
    } else {
        r.null_str()?.to_vec()
    };
    let database = if capabilities & CLIENT_CONNECT_WITH_DB != 0 {
        r.null_str()
            .map(|d| String::from_utf8_lossy(d).into_owned())
            .filter(|d| !d.is_empty())
    } else {
        None
    };
    let plugin = if capabilities & CLIENT_PLUGIN_AUTH != 0 {
        r.null_str()
            .map(|d| String::from_utf8_lossy(d).into_owned())
    } else {
        None
    };
    let attrs = if capabilities & CLIENT_CONNECT_ATTRS != 0 {
        connect_attrs(&mut r).unwrap_or_default()
    } else {
        vec![]
    };
    Some(HandshakeResponse {
        capabilities,
        max_packet,
        charset,
        user,
        auth,
        database,
        plugin,
        attrs,
    })
}

/// The attributes block: its length, then key and value pairs, each a length-encoded
/// string. None when it does not parse (a login does not fail on it).
fn connect_attrs(r: &mut Reader) -> Option<Vec<(String, String)>> {
    let n = usize::try_from(r.lenenc_int()?).ok()?;
    let mut block = Reader::new(r.bytes(n)?);
    let mut out = vec![];
    while !block.remaining().is_empty() {
        let k = String::from_utf8_lossy(block.lenenc_bytes()?).into_owned();
        let v = String::from_utf8_lossy(block.lenenc_bytes()?).into_owned();
        out.push((k, v));
    }
    Some(out)
}

/// mysql_native_password: SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password))).
pub fn native_password_token(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return vec![];
    }
    let h1 = Sha1::digest(password);
    let h2 = Sha1::digest(h1);
    let mut h = Sha1::new();
    h.update(scramble);
    h.update(h2);
    let h3 = h.finalize();
    h1.iter().zip(h3.iter()).map(|(a, b)| a ^ b).collect()
}

pub fn ok_packet(
    affected: u64,
    last_insert_id: u64,
    status: u16,
    warnings: u16,
    info: &str,
) -> Vec<u8> {
    let mut p = vec![0];
    put_lenenc_int(&mut p, affected);
    put_lenenc_int(&mut p, last_insert_id);
    p.extend_from_slice(&status.to_le_bytes());
    p.extend_from_slice(&warnings.to_le_bytes());
    // MySQL and MariaDB send the info text length-encoded (libmariadb parses it so).
    if !info.is_empty() {
        put_lenenc_str(&mut p, info.as_bytes());
    }
    p
}

pub fn err_packet(code: u16, sqlstate: &str, msg: &str) -> Vec<u8> {
    let mut p = vec![0xff];
    p.extend_from_slice(&code.to_le_bytes());
    p.push(b'#');
    p.extend_from_slice(&sqlstate.as_bytes()[..5]);
    p.extend_from_slice(msg.as_bytes());
    p
}

pub fn eof_packet(status: u16, warnings: u16) -> Vec<u8> {
    let mut p = vec![0xfe];
    p.extend_from_slice(&warnings.to_le_bytes());
    p.extend_from_slice(&status.to_le_bytes());
    p
}

/// Column metadata as the protocol carries it.
pub struct ColumnDef<'a> {
    pub db: &'a str,
    pub table: &'a str,
    pub org_table: &'a str,
    pub name: &'a str,
    pub org_name: &'a str,
    pub charset: u16,
    pub length: u32,
    pub type_code: u8,
    pub flags: u16,
    pub decimals: u8,
}

pub fn column_packet(c: &ColumnDef) -> Vec<u8> {
    let mut p = Vec::with_capacity(64);
    put_lenenc_str(&mut p, b"def");
    put_lenenc_str(&mut p, c.db.as_bytes());
    put_lenenc_str(&mut p, c.table.as_bytes());
    put_lenenc_str(&mut p, c.org_table.as_bytes());
    put_lenenc_str(&mut p, c.name.as_bytes());
    put_lenenc_str(&mut p, c.org_name.as_bytes());
    p.push(0x0c);
    p.extend_from_slice(&c.charset.to_le_bytes());
    p.extend_from_slice(&c.length.to_le_bytes());
    p.push(c.type_code);
    p.extend_from_slice(&c.flags.to_le_bytes());
    p.push(c.decimals);
    p.extend_from_slice(&[0, 0]);
    p
}

/// A random 20-byte scramble without NUL bytes.
pub fn scramble() -> [u8; 20] {
    let mut s = [0u8; 20];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = f.read_exact(&mut s);
    }
    for b in s.iter_mut() {
        *b = (*b % 94) + 33;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenenc_round_trip() {
        for v in [0u64, 250, 251, 65535, 65536, 1 << 24, u64::MAX] {
            let mut b = vec![];
            put_lenenc_int(&mut b, v);
            assert_eq!(Reader::new(&b).lenenc_int(), Some(v));
        }
        assert_eq!(Reader::new(&[0xfe, 1, 2]).lenenc_int(), None);
    }

    #[test]
    fn packets_split_at_16mib() {
        let mut c = Conn::new(std::io::Cursor::new(Vec::new()));
        c.push(&vec![7u8; MAX_PACKET + 10]);
        c.flush().unwrap();
        let out = c.stream.into_inner();
        assert_eq!(out.len(), MAX_PACKET + 10 + 8);
        let mut rd = Conn::new(std::io::Cursor::new(out));
        rd.max_packet = 32 << 20;
        assert_eq!(rd.read_packet().unwrap().len(), MAX_PACKET + 10);
    }

    /// A stream that delivers scripted pieces, a `None` piece being a read timeout.
    struct Trickle(std::collections::VecDeque<Option<Vec<u8>>>);

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match self.0.pop_front() {
                None => Ok(0),
                Some(None) => Err(io::ErrorKind::WouldBlock.into()),
                Some(Some(mut piece)) => {
                    let n = piece.len().min(buf.len());
                    buf[..n].copy_from_slice(&piece[..n]);
                    if n < piece.len() {
                        self.0.push_front(Some(piece.split_off(n)));
                    }
                    Ok(n)
                }
            }
        }
    }

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn framed(seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut p = (payload.len() as u32).to_le_bytes()[..3].to_vec();
        p.push(seq);
        p.extend_from_slice(payload);
        p
    }

    #[test]
    fn read_timeouts_mean_idle_between_commands_and_wait_inside_one() {
        let big = vec![9u8; 3 * READ_CHUNK + 5];
        let mut two = framed(0, b"\x03SELECT 1");
        two.extend(framed(0, b"\x0e"));
        let whole_big = framed(0, &big);
        let pieces = vec![
            None, // idle before the first command
            Some(two),
            None,
            Some(whole_big[..2].to_vec()), // half a header, then a stall
            None,
            None,
            Some(whole_big[2..READ_CHUNK].to_vec()),
            None,
            Some(whole_big[READ_CHUNK..].to_vec()),
        ];
        let mut c = Conn::new(Trickle(pieces.into_iter().collect()));
        assert_eq!(c.read_command().unwrap(), None);
        assert_eq!(c.read_command().unwrap().unwrap(), b"\x03SELECT 1");
        // The second packet came in the same read: no wait, no idle.
        assert_eq!(c.read_command().unwrap().unwrap(), b"\x0e");
        assert_eq!(c.read_command().unwrap(), None);
        assert_eq!(c.read_command().unwrap().unwrap(), big);
        c.shrink();
        let e = c.read_command().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);

        // A packet stalled past its patience fails instead of waiting forever.
        let mut c = Conn::new(Trickle(
            [Some(framed(0, b"abc")[..5].to_vec()), None, None]
                .into_iter()
                .collect(),
        ));
        c.patience = Duration::ZERO;
        let e = c.read_command().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    }

    #[test]
    fn malformed_handshake_is_rejected() {
        assert!(parse_handshake_response(&[1, 2, 3]).is_none());
        let mut p = (CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION)
            .to_le_bytes()
            .to_vec();
        p.extend_from_slice(&[0; 4 + 1 + 23]);
        p.extend_from_slice(b"root\0");
        p.push(200); // auth length beyond the packet
        assert!(parse_handshake_response(&p).is_none());
    }

    #[test]
    fn native_password_known_vector() {
        assert!(native_password_token(b"", b"x").is_empty());
        assert_eq!(native_password_token(b"secret", &[1; 20]).len(), 20);
    }
}

/// What clients send, as hostile clients may send it: packet framing over a byte stream
/// and handshake responses never panic the reader (errors end that connection only).
#[cfg(test)]
mod fuzz {
    use super::*;
    use quarry_common::fuzz::{mutate, run};

    fn good_handshake() -> Vec<u8> {
        let mut p = (0x0000_0200u32 | 0x0000_8000 | 0x0008_0000 | 0x0000_0008)
            .to_le_bytes()
            .to_vec();
        p.extend_from_slice(&(16u32 << 20).to_le_bytes());
        p.push(45);
        p.extend_from_slice(&[0; 23]);
        p.extend_from_slice(b"root\0");
        p.push(20);
        p.extend_from_slice(&[7; 20]);
        p.extend_from_slice(b"db\0mysql_native_password\0");
        p
    }

    #[test]
    fn handshake_responses_never_panic() {
        let good = good_handshake();
        run(
            "handshake response",
            5000,
            |rng| mutate(rng, &good),
            |input| {
                let _ = parse_handshake_response(input);
            },
        );
    }

    #[test]
    fn packet_framing_never_panics() {
        let mut frames = vec![];
        for len in [0usize, 1, 5, 300] {
            frames.extend_from_slice(&(len as u32).to_le_bytes()[..3]);
            frames.push(0);
            frames.extend(std::iter::repeat_n(3u8, len));
        }
        run(
            "packet framing",
            5000,
            |rng| mutate(rng, &frames),
            |input| {
                let mut c = Conn::new(std::io::Cursor::new(input.to_vec()));
                c.max_packet = 1 << 16;
                c.patience = std::time::Duration::ZERO;
                for _ in 0..8 {
                    if c.read_packet().is_err() {
                        break;
                    }
                }
                let mut r = Reader::new(input);
                while r.lenenc_bytes().is_some() {}
            },
        );
    }
}
