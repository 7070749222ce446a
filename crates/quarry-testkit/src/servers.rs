//! The servers under test: a private MariaDB (its own datadir, port, socket and tmpdir)
//! and `quarry serve`, both started fresh and stopped by PID at the end, on failure
//! (drop) and on Ctrl-C (signal handler).

use crate::client::{Conn, ConnectOptions};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// PIDs the signal handler must stop; 0 = free slot.
static CHILDREN: [AtomicI32; 8] = [const { AtomicI32::new(0) }; 8];

extern "C" fn on_signal(_: libc::c_int) {
    for slot in &CHILDREN {
        let pid = slot.load(Ordering::SeqCst);
        if pid > 0 {
            // SAFETY: kill and _exit are async-signal-safe.
            #[allow(unsafe_code)]
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
    }
    eprintln!("\ninterrupted: servers told to stop");
    #[allow(unsafe_code)]
    unsafe {
        libc::_exit(130);
    }
}

/// Ctrl-C and SIGTERM stop every started server before the harness exits.
pub fn install_signal_handlers() {
    #[allow(unsafe_code)]
    // SAFETY: the handler only reads atomics and calls async-signal-safe functions.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}

fn register(pid: i32) {
    for slot in &CHILDREN {
        if slot
            .compare_exchange(0, pid, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return;
        }
    }
}

fn unregister(pid: i32) {
    for slot in &CHILDREN {
        let _ = slot.compare_exchange(pid, 0, Ordering::SeqCst, Ordering::SeqCst);
    }
}

/// Where and how the servers run (the bench takes these from its command line).
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Scratch directory: each server's datadir, logs and temporary files go under it.
    pub work: PathBuf,
    pub mariadb_port: u16,
    pub quarry_port: u16,
    pub quarry_bin: PathBuf,
    /// innodb_buffer_pool_size, e.g. "1G".
    pub buffer_pool: String,
    /// key_buffer_size (MyISAM), e.g. "512M".
    pub key_buffer: String,
    /// innodb_flush_log_at_trx_commit, the same on both.
    pub flush_log: u32,
}

pub struct Server {
    pub name: &'static str,
    pub port: u16,
    pub version: String,
    /// Where this server writes temporary files (for peak temp-space measurements).
    pub tmpdir: PathBuf,
    pub settings: Vec<(String, String)>,
    child: Option<Child>,
}

impl Server {
    pub fn connect(&self, db: Option<&str>) -> Result<Conn, String> {
        let mut o = ConnectOptions::new(self.port);
        o.database = db.map(str::to_string);
        Conn::connect(&o).map_err(|e| format!("{}: {e}", self.name))
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// SIGTERM, then SIGKILL if it has not exited within a minute.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pid = child.id() as i32;
        #[allow(unsafe_code)]
        // SAFETY: plain syscall on our own child's PID.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break;
                }
            }
        }
        unregister(pid);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn wait_for_port(name: &str, port: u16, child: &mut Child, log: &Path) -> Result<Conn, String> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let tail = fs::read_to_string(log).unwrap_or_default();
            let tail: Vec<&str> = tail.lines().rev().take(15).collect();
            return Err(format!(
                "{name} exited at startup ({status}); log {}:\n{}",
                log.display(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
        if let Ok(c) = Conn::connect(&ConnectOptions::new(port)) {
            return Ok(c);
        }
        if Instant::now() > deadline {
            return Err(format!(
                "{name} did not accept connections on port {port} in 120 s"
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn server_version(mut conn: Conn) -> String {
    let v = conn
        .query("SELECT VERSION()")
        .ok()
        .and_then(|r| r.scalar().map(str::to_string))
        .unwrap_or_default();
    conn.quit();
    v
}

fn find_binary(candidates: &[&str]) -> Option<PathBuf> {
    for c in candidates {
        let p = Path::new(c);
        if p.is_absolute() && p.exists() {
            return Some(p.to_path_buf());
        }
        if !p.is_absolute() {
            for dir in std::env::var("PATH").unwrap_or_default().split(':') {
                let full = Path::new(dir).join(c);
                if full.exists() {
                    return Some(full);
                }
            }
        }
    }
    None
}

pub fn abs(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir().unwrap().join(p)
    }
}

/// Install a fresh MariaDB datadir and start `mariadbd` on it.
pub fn start_mariadb(o: &ServerOptions) -> Result<Server, String> {
    let base = abs(&o.work).join("mariadb");
    let _ = fs::remove_dir_all(&base);
    let data = base.join("data");
    let tmp = base.join("tmp");
    fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    let sock = base.join("mariadb.sock");
    let log = base.join("mariadb.err");
    let settings: Vec<(String, String)> = vec![
        ("innodb_buffer_pool_size".into(), o.buffer_pool.clone()),
        ("key_buffer_size".into(), o.key_buffer.clone()),
        ("aria_pagecache_buffer_size".into(), "512M".into()),
        (
            "innodb_flush_log_at_trx_commit".into(),
            o.flush_log.to_string(),
        ),
        ("max_connections".into(), "200".into()),
        ("local_infile".into(), "1".into()),
        ("skip-name-resolve".into(), String::new()),
        ("performance_schema".into(), "OFF".into()),
    ];
    let mut cnf = format!(
        "[mysqld]\nuser=root\ndatadir={}\nsocket={}\nport={}\nbind-address=127.0.0.1\n\
         pid-file={}\nlog-error={}\ntmpdir={}\n",
        data.display(),
        sock.display(),
        o.mariadb_port,
        base.join("mariadb.pid").display(),
        log.display(),
        tmp.display()
    );
    for (k, v) in &settings {
        if v.is_empty() {
            cnf.push_str(&format!("{k}\n"));
        } else {
            cnf.push_str(&format!("{k}={v}\n"));
        }
    }
    let cnf_path = base.join("my.cnf");
    fs::write(&cnf_path, cnf).map_err(|e| e.to_string())?;
    let install = find_binary(&["mariadb-install-db", "mysql_install_db"])
        .ok_or("mariadb-install-db not found: install mariadb-server (scripts/bench.sh does)")?;
    let out = Command::new(install)
        .arg(format!("--defaults-file={}", cnf_path.display()))
        .args([
            "--user=root",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
        ])
        .arg(format!("--datadir={}", data.display()))
        .output()
        .map_err(|e| format!("mariadb-install-db: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "mariadb-install-db failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mariadbd = find_binary(&["/usr/sbin/mariadbd", "mariadbd", "/usr/sbin/mysqld"])
        .ok_or("mariadbd not found")?;
    let mut child = Command::new(mariadbd)
        .arg(format!("--defaults-file={}", cnf_path.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("mariadbd: {e}"))?;
    register(child.id() as i32);
    // root@localhost is the socket account; the harness and sysbench come over TCP.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let st = Command::new("mariadb")
            .arg(format!("--socket={}", sock.display()))
            .args(["-uroot", "-e"])
            .arg(
                "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'; \
                 GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;",
            )
            .output();
        if matches!(&st, Ok(o) if o.status.success()) {
            break;
        }
        if let Ok(Some(status)) = child.try_wait() {
            unregister(child.id() as i32);
            let tail = fs::read_to_string(&log).unwrap_or_default();
            return Err(format!("mariadbd exited at startup ({status}):\n{tail}"));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err("mariadbd did not start in 120 s".into());
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let version = server_version(wait_for_port("mariadbd", o.mariadb_port, &mut child, &log)?);
    Ok(Server {
        name: "MariaDB",
        port: o.mariadb_port,
        version,
        tmpdir: tmp,
        settings,
        child: Some(child),
    })
}

/// Start `quarry serve` on a fresh datadir.
pub fn start_quarry(o: &ServerOptions) -> Result<Server, String> {
    start_quarry_with(o, &[])
}

/// `quarry serve` with extra command-line options (a fresh datadir each time).
pub fn start_quarry_with(o: &ServerOptions, extra: &[String]) -> Result<Server, String> {
    let bin = abs(&o.quarry_bin);
    if !bin.exists() {
        return Err(format!(
            "{} not found: build it with cargo build --release -p quarry",
            bin.display()
        ));
    }
    let base = abs(&o.work).join("quarry");
    let _ = fs::remove_dir_all(&base);
    let data = base.join("data");
    fs::create_dir_all(&data).map_err(|e| e.to_string())?;
    let log = base.join("quarry.log");
    let logf = fs::File::create(&log).map_err(|e| e.to_string())?;
    let mut child = Command::new(&bin)
        .arg("serve")
        .arg("--datadir")
        .arg(&data)
        .args(["--bind", "127.0.0.1", "--port"])
        .arg(o.quarry_port.to_string())
        // The same durability as MariaDB's InnoDB in the same run.
        .arg("--innodb-flush-log-at-trx-commit")
        .arg(o.flush_log.to_string())
        .args(extra)
        .stdin(Stdio::null())
        .stdout(logf.try_clone().map_err(|e| e.to_string())?)
        .stderr(logf)
        .spawn()
        .map_err(|e| format!("{}: {e}", bin.display()))?;
    register(child.id() as i32);
    let version = server_version(wait_for_port("quarry", o.quarry_port, &mut child, &log)?);
    Ok(Server {
        name: "Quarry",
        port: o.quarry_port,
        version,
        // Spill files go to the system temp directory.
        tmpdir: std::env::temp_dir(),
        settings: vec![
            ("datadir".into(), data.display().to_string()),
            ("options".into(), extra.join(" ")),
        ],
        child: Some(child),
    })
}

/// Bytes free on the file system holding `dir` (for peak temp-space sampling, which
/// must also see files a server unlinked right after creating them).
pub fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    #[allow(unsafe_code)]
    // SAFETY: statvfs writes into the zeroed struct we own; the path is NUL-terminated.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        if libc::statvfs(c.as_ptr(), &mut st) != 0 {
            return None;
        }
        Some(st.f_bavail as u64 * st.f_frsize as u64)
    }
}
