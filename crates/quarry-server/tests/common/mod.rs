#![allow(dead_code)]
//! A raw MySQL protocol client for the server tests: packets by hand, so tests can send
//! what real clients never would.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quarry_core::quarry_common::Value;
use quarry_core::{Database, Options};
use quarry_server::Server;

pub struct Raw {
    pub s: TcpStream,
}

/// A handshake response for mysql_native_password: protocol 4.1, secure connection and
/// plugin auth, with the capabilities `extra` besides.
pub fn response(user: &str, token: &[u8], extra: u32) -> Vec<u8> {
    let caps: u32 = 0x0000_0200 | 0x0000_8000 | 0x0008_0000 | extra;
    let mut p = caps.to_le_bytes().to_vec();
    p.extend_from_slice(&(16u32 << 20).to_le_bytes());
    p.push(45);
    p.extend_from_slice(&[0; 23]);
    p.extend_from_slice(user.as_bytes());
    p.push(0);
    p.push(token.len() as u8);
    p.extend_from_slice(token);
    p.extend_from_slice(b"mysql_native_password\0");
    p
}

impl Raw {
    pub fn connect(port: u16) -> Raw {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Raw { s }
    }
    pub fn read(&mut self) -> Option<(u8, Vec<u8>)> {
        let mut h = [0u8; 4];
        self.s.read_exact(&mut h).ok()?;
        let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
        let mut p = vec![0; len];
        self.s.read_exact(&mut p).ok()?;
        Some((h[3], p))
    }
    pub fn send(&mut self, seq: u8, payload: &[u8]) {
        let l = (payload.len() as u32).to_le_bytes();
        let mut b = vec![l[0], l[1], l[2], seq];
        b.extend_from_slice(payload);
        let _ = self.s.write_all(&b);
    }
    /// Handshake as root with no password; panics unless the server answers OK.
    pub fn login(port: u16) -> Raw {
        Raw::login_with(port, 0x0001_0000)
    }
    /// Log in as `user` with `password` (mysql_native_password): the connection, or the
    /// error code the server answered.
    pub fn login_as(port: u16, user: &str, password: &str) -> Result<Raw, u16> {
        let mut c = Raw::connect(port);
        let (_, hello) = c.read().expect("greeting");
        // Protocol 10: version, NUL, connection id, 8 scramble bytes, … 12 more before
        // the plugin name.
        let v = 1 + hello[1..].iter().position(|&b| b == 0).unwrap() + 1;
        let mut scramble = hello[v + 4..v + 12].to_vec();
        let rest = v + 12 + 1 + 2 + 1 + 2 + 2 + 1 + 10;
        scramble.extend_from_slice(&hello[rest..rest + 12]);
        let token = quarry_core::accounts::native_token(password, &scramble);
        c.send(1, &response(user, &token, 0x0002_0000));
        let (_, reply) = c.read().expect("auth reply");
        match reply[0] {
            0 => Ok(c),
            _ => Err(u16::from_le_bytes([reply[1], reply[2]])),
        }
    }
    /// `login` with the client's capability flags `extra` (CLIENT_MULTI_STATEMENTS is
    /// 0x0001_0000) besides protocol 4.1, secure connection, plugin auth and multi results.
    pub fn login_with(port: u16, extra: u32) -> Raw {
        let mut c = Raw::connect(port);
        c.read().expect("greeting");
        c.send(1, &response("root", &[], 0x0002_0000 | extra));
        let (_, ok) = c.read().expect("auth reply");
        assert_eq!(ok[0], 0, "login failed: {:?}", String::from_utf8_lossy(&ok));
        c
    }
    pub fn query(&mut self, sql: &[u8]) -> Vec<u8> {
        let mut p = vec![3];
        p.extend_from_slice(sql);
        self.send(0, &p);
        self.read().map(|(_, p)| p).unwrap_or_default()
    }
    /// Read a result set's packets after its column count (already read, with sequence
    /// id `seq`), checking every sequence id follows the one before; returns the row
    /// packets and the ERR code if it ended with one.
    fn read_rest(&mut self, columns: usize, mut seq: u8) -> (Vec<Vec<u8>>, Option<u16>) {
        let mut next = |c: &mut Raw| {
            let (s, p) = c.read().expect("packet");
            seq = seq.wrapping_add(1);
            assert_eq!(s, seq, "sequence ids run on");
            p
        };
        for _ in 0..=columns {
            next(self);
        }
        let mut rows = vec![];
        loop {
            let p = next(self);
            match p.first() {
                Some(0xfe) if p.len() < 9 => return (rows, None),
                Some(0xff) => return (rows, Some(u16::from_le_bytes([p[1], p[2]]))),
                _ => rows.push(p),
            }
        }
    }

    /// A COM_QUERY's column definitions as (name, character set, length, type, flags);
    /// its rows are read and dropped.
    pub fn columns(&mut self, sql: &[u8]) -> Vec<(String, u16, u32, u8, u16)> {
        let mut p = vec![3];
        p.extend_from_slice(sql);
        self.send(0, &p);
        let (_, first) = self.read().expect("reply");
        assert!(
            !matches!(first[0], 0 | 0xff),
            "{:?}",
            String::from_utf8_lossy(&first)
        );
        let mut out = vec![];
        for _ in 0..first[0] {
            let (_, d) = self.read().expect("definition");
            // catalog, schema, table, org_table, name, org_name: short lenenc strings.
            let mut at = 0;
            let mut name = String::new();
            for i in 0..6 {
                let n = d[at] as usize;
                if i == 4 {
                    name = String::from_utf8_lossy(&d[at + 1..at + 1 + n]).into_owned();
                }
                at += 1 + n;
            }
            let f = &d[at + 1..];
            out.push((
                name,
                u16::from_le_bytes([f[0], f[1]]),
                u32::from_le_bytes([f[2], f[3], f[4], f[5]]),
                f[6],
                u16::from_le_bytes([f[7], f[8]]),
            ));
        }
        let mut eofs = 0;
        while eofs < 2 {
            let (_, p) = self.read().expect("packet");
            match p.first() {
                Some(0xfe) if p.len() < 9 => eofs += 1,
                Some(0xff) => break,
                _ => {}
            }
        }
        out
    }

    fn reply(&mut self) -> (Vec<Vec<u8>>, Option<u16>) {
        let (seq, first) = self.read().expect("reply");
        assert_eq!(seq, 1);
        match first[0] {
            0xff => (vec![], Some(u16::from_le_bytes([first[1], first[2]]))),
            0 => (vec![], None),
            n => self.read_rest(n as usize, seq),
        }
    }

    /// A COM_QUERY's result set as raw row packets (sequence ids checked), or its error.
    pub fn result_set(&mut self, sql: &[u8]) -> (Vec<Vec<u8>>, Option<u16>) {
        let mut p = vec![3];
        p.extend_from_slice(sql);
        self.send(0, &p);
        self.reply()
    }

    /// COM_STMT_PREPARE, then COM_STMT_EXECUTE with `params` (binary-protocol type code
    /// and encoded value each); the binary rows, or the error.
    pub fn execute(&mut self, sql: &[u8], params: &[(u8, Vec<u8>)]) -> (Vec<Vec<u8>>, Option<u16>) {
        let mut p = vec![0x16];
        p.extend_from_slice(sql);
        self.send(0, &p);
        let (_, ok) = self.read().expect("prepare reply");
        assert_eq!(ok[0], 0, "{:?}", String::from_utf8_lossy(&ok));
        let id = ok[1..5].to_vec();
        let columns = u16::from_le_bytes([ok[5], ok[6]]) as usize;
        let n = u16::from_le_bytes([ok[7], ok[8]]) as usize;
        assert_eq!(n, params.len());
        let defs = |k: usize| if k > 0 { k + 1 } else { 0 };
        for _ in 0..defs(n) + defs(columns) {
            self.read().expect("definitions");
        }
        let mut e = vec![0x17];
        e.extend_from_slice(&id);
        e.push(0); // no cursor
        e.extend_from_slice(&1u32.to_le_bytes());
        if n > 0 {
            e.extend(std::iter::repeat_n(0, n.div_ceil(8))); // no NULLs
            e.push(1); // types follow
            for (t, _) in params {
                e.extend_from_slice(&[*t, 0]);
            }
            for (_, v) in params {
                e.extend_from_slice(v);
            }
        }
        self.send(0, &e);
        self.reply()
    }

    /// Run `sql` and read its whole reply: Ok(rows, each a raw row packet) for a result
    /// set or an OK packet (no rows), Err(code) for an error packet.
    pub fn query_rows(&mut self, sql: &[u8]) -> Result<Vec<Vec<u8>>, u16> {
        let first = self.query(sql);
        match first.first() {
            Some(0) => return Ok(vec![]),
            Some(0xff) => return Err(u16::from_le_bytes([first[1], first[2]])),
            None => return Err(0),
            _ => {}
        }
        // A result set: column count, column definitions, EOF, rows, EOF (no
        // CLIENT_DEPRECATE_EOF at login).
        let columns = first[0] as usize;
        for _ in 0..=columns {
            self.read().ok_or(0u16)?;
        }
        let mut rows = vec![];
        loop {
            let (_, p) = self.read().ok_or(0u16)?;
            match p.first() {
                Some(0xfe) if p.len() < 9 => return Ok(rows),
                Some(0xff) => return Err(u16::from_le_bytes([p[1], p[2]])),
                _ => rows.push(p),
            }
        }
    }
}

/// A server on an ephemeral port over a fresh datadir, with some globals set.
pub struct Running {
    pub server: Arc<Server>,
    pub port: u16,
    pub dir: std::path::PathBuf,
    thread: std::thread::JoinHandle<std::io::Result<()>>,
}

impl Running {
    pub fn start(name: &str, globals: &[(&str, i64)]) -> Running {
        Running::start_with(name, globals, &Options::default())
    }
    pub fn start_with(name: &str, globals: &[(&str, i64)], opts: &Options) -> Running {
        Running::start_at(name, globals, opts, "127.0.0.1:0")
    }
    /// Listening on `addr` (e.g. every address: "0.0.0.0:0").
    pub fn start_at(name: &str, globals: &[(&str, i64)], opts: &Options, addr: &str) -> Running {
        let dir = quarry_core::quarry_common::test_dir(name);
        let db = Database::open_with(&dir, opts).unwrap();
        for &(k, v) in globals {
            db.set_global(k, Value::Int(v));
        }
        let server = Arc::new(Server::bind(db, addr).unwrap());
        let port = server.local_addr().unwrap().port();
        let thread = {
            let server = server.clone();
            std::thread::spawn(move || server.run())
        };
        Running {
            server,
            port,
            dir,
            thread,
        }
    }

    pub fn stop(self) {
        let Running {
            server,
            dir,
            thread,
            ..
        } = self;
        server
            .stop_handle()
            .store(true, std::sync::atomic::Ordering::Relaxed);
        thread.join().unwrap().unwrap();
        drop(server); // closes the database before its directory goes
        let _ = std::fs::remove_dir_all(&dir);
    }
}

pub fn wait_until(done: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < Duration::from_secs(10), "timed out waiting");
        std::thread::sleep(Duration::from_millis(20));
    }
}
