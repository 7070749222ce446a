//! The `quarry` binary: `serve` (MySQL server), `sql` (embedded shell), `--version`.

use std::path::PathBuf;
use std::sync::Arc;

use quarry_core::oplog::Level;
use quarry_core::{parse_size, Database, Options};

mod shell;

// Loads and scans allocate and free millions of small values a second, across threads;
// glibc's malloc spent a quarter of a column-table LOAD in its free lists.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const USAGE: &str = "usage:
  quarry serve [--datadir DIR] [--bind ADDR] [--port N] [--config FILE] [ENGINE OPTIONS]
  quarry sql [--datadir DIR] [-e \"SQL\"] [--batch|--raw|--table|--vertical] [-N] [-f] [ENGINE OPTIONS]
             (statements from -e, a pipe, or the terminal; mariadb client commands: help)
  quarry --version
engine options (also config file keys, e.g. innodb_flush_log_at_trx_commit = 2):
  --buffer-pool-size SIZE        page cache for indexes, e.g. 512M (default: 1/4 of RAM)
  --buffer-pool-partitions N     partitions of its page table (default 8)
  --innodb-flush-log-at-trx-commit N
                                 1 fsync the log at commit (default), 2 write at commit
                                 and fsync each second, 0 write and fsync each second
  --innodb-log-file-size SIZE    log growth between checkpoints (default 96M)
  --quarry-disk-keep-free SIZE   changes are refused while the disk has less free
                                 (default 1G or a sixteenth of the disk; 0: off)
  --secure-file-priv DIR         the only directory LOAD DATA INFILE and LOAD_FILE() read
                                 (default: quarry-files beside the datadir; '' anywhere,
                                 NULL nowhere)
TLS (serve; config keys ssl_cert, ssl_key, ssl_ca, tls_version, require_secure_transport,
ssl = 0 for --skip-ssl):
  --ssl-cert FILE --ssl-key FILE the server's certificate and key, PEM (default: a CA and a
                                 certificate made in the datadir at the first start)
  --ssl-ca FILE                  the CA certificate clients are told about (@@ssl_ca)
  --tls-version LIST             TLSv1.2,TLSv1.3 (default) or either alone
  --require-secure-transport 1   TCP logins without TLS are refused (1045)
  --skip-ssl                     no TLS at all (have_ssl = DISABLED)
logs (also config keys; MariaDB's names, relative files in the datadir):
  --log-error FILE               the error log (default: standard error)
  --general-log[=1]              every statement, in general_log_file (quarry.log)
  --slow-query-log[=1]           statements past long_query_time (default 10 s), in
                                 slow_query_log_file (quarry-slow.log)
  --general-log-file FILE --slow-query-log-file FILE --long-query-time SECONDS
  --log-queries-not-using-indexes --log-slow-verbosity query_plan --log-output FILE|NONE
  --performance-schema           statements summarised by digest in performance_schema
                                 (events_statements_summary_by_digest; off by default)
metrics (serve; config key metrics_port):
  --metrics-port N               Prometheus text at http://BIND:N/metrics: status counters
                                 and variables under mysqld_exporter's names, statement
                                 latency histograms by type";

struct Opts {
    datadir: PathBuf,
    bind: String,
    port: u16,
    exec: Option<String>,
    /// How `sql` prints results (`--batch`, `--raw`, `--table`, `--vertical`, `-N`).
    output: shell::Settings,
    engine: Options,
    skip_ssl: bool,
    /// `--metrics-port`: Prometheus text on this port (same bind address).
    metrics_port: Option<u16>,
}

/// A TLS setting (`ssl_cert`, …) for the server to read from the globals.
fn tls_setting(o: &mut Opts, key: &str, v: &str) -> Result<(), String> {
    use quarry_core::quarry_common::Value;
    let v = v.trim_matches('"');
    let value = match key {
        "require_secure_transport" => Value::Int(match v.to_ascii_uppercase().as_str() {
            "1" | "ON" | "TRUE" => 1,
            "0" | "OFF" | "FALSE" => 0,
            _ => return Err(format!("bad require_secure_transport: {v}")),
        }),
        _ => Value::Str(v.to_string()),
    };
    o.engine.tls.push((key.to_string(), value));
    Ok(())
}

fn parse_config(path: &str, o: &mut Opts) -> Result<(), String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("cannot read config {path}: {e}"))?;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty()
            || line.starts_with('#')
            || line.starts_with(';')
            || line.starts_with('[')
        {
            continue;
        }
        let (k, v) = line
            .split_once('=')
            .map(|(k, v)| (k.trim(), v.trim()))
            .unwrap_or((line, ""));
        match k.replace('-', "_").as_str() {
            "datadir" => o.datadir = PathBuf::from(v),
            "bind" | "bind_address" => o.bind = v.to_string(),
            "port" => o.port = v.parse().map_err(|_| format!("bad port in config: {v}"))?,
            "quarry_buffer_pool_size" | "buffer_pool_size" => {
                o.engine.buffer_pool_size =
                    Some(parse_size(v).ok_or_else(|| format!("bad buffer pool size: {v}"))?)
            }
            "innodb_flush_log_at_trx_commit" => {
                o.engine.flush_log_at_trx_commit = Some(
                    v.parse()
                        .map_err(|_| format!("bad innodb_flush_log_at_trx_commit: {v}"))?,
                )
            }
            "innodb_log_file_size" => {
                o.engine.log_file_size =
                    Some(parse_size(v).ok_or_else(|| format!("bad innodb_log_file_size: {v}"))?)
            }
            "quarry_disk_keep_free" => {
                o.engine.disk_keep_free = Some(
                    parse_size(v).ok_or_else(|| format!("bad quarry_disk_keep_free: {v}"))? as u64,
                )
            }
            "secure_file_priv" => o.engine.secure_file_priv = Some(v.trim_matches('"').to_string()),
            key if quarry_core::oplog::is_log_variable(key) => {
                let v = if v.is_empty() {
                    "1"
                } else {
                    v.trim_matches('"')
                };
                o.engine.log_settings.push((key.to_string(), v.to_string()))
            }
            key @ ("ssl_cert"
            | "ssl_key"
            | "ssl_ca"
            | "tls_version"
            | "require_secure_transport") => tls_setting(o, key, v)?,
            "ssl" => o.skip_ssl = matches!(v.to_ascii_uppercase().as_str(), "0" | "OFF" | "FALSE"),
            "skip_ssl" => o.skip_ssl = true,
            "performance_schema" => {
                o.engine.performance_schema =
                    matches!(v.to_ascii_uppercase().as_str(), "" | "1" | "ON" | "TRUE")
            }
            "metrics_port" => {
                o.metrics_port = Some(v.parse().map_err(|_| format!("bad metrics_port: {v}"))?)
            }
            "quarry_buffer_pool_partitions" | "buffer_pool_partitions" => {
                o.engine.buffer_pool_partitions = Some(
                    v.parse()
                        .map_err(|_| format!("bad buffer pool partitions: {v}"))?,
                )
            }
            other => return Err(format!("unknown config key '{other}' in {path}")),
        }
    }
    Ok(())
}

fn parse_args(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        datadir: PathBuf::from("quarry-data"),
        bind: "127.0.0.1".into(),
        port: 3306,
        exec: None,
        output: shell::Settings {
            format: shell::Format::Table,
            names: true,
            force: false,
        },
        engine: Options::default(),
        skip_ssl: false,
        metrics_port: None,
    };
    let mut i = 0;
    while i < args.len() {
        let val = |i: usize| {
            args.get(i + 1)
                .cloned()
                .ok_or_else(|| format!("{} needs a value", args[i]))
        };
        // Log options: `--general-log`, `--general-log=0`, `--slow-query-log-file F`.
        let (flag, inline) = match args[i].split_once('=') {
            Some((f, v)) => (f.to_string(), Some(v.to_string())),
            None => (args[i].clone(), None),
        };
        let key = flag.trim_start_matches("--").replace('-', "_");
        if flag.starts_with("--") && quarry_core::oplog::is_log_variable(&key) {
            let is_switch = matches!(
                key.as_str(),
                "general_log"
                    | "slow_query_log"
                    | "log_slow_query"
                    | "log_queries_not_using_indexes"
            );
            let (value, used) = match inline {
                Some(v) => (v, 1),
                None if is_switch => ("1".to_string(), 1),
                None => (val(i)?, 2),
            };
            o.engine.log_settings.push((key, value));
            i += used;
            continue;
        }
        match args[i].as_str() {
            "--datadir" => o.datadir = PathBuf::from(val(i)?),
            "--bind" => o.bind = val(i)?,
            "--port" => o.port = val(i)?.parse().map_err(|_| "bad --port".to_string())?,
            "--config" => parse_config(&val(i)?, &mut o)?,
            "-e" | "--execute" => o.exec = Some(val(i)?),
            "-B" | "--batch" => {
                o.output.format = shell::Format::Batch { raw: false };
                i += 1;
                continue;
            }
            "-r" | "--raw" => {
                o.output.format = shell::Format::Batch { raw: true };
                i += 1;
                continue;
            }
            "-t" | "--table" => {
                o.output.format = shell::Format::Table;
                i += 1;
                continue;
            }
            "-E" | "--vertical" => {
                o.output.format = shell::Format::Vertical;
                i += 1;
                continue;
            }
            "-N" | "--skip-column-names" => {
                o.output.names = false;
                i += 1;
                continue;
            }
            "-f" | "--force" => {
                o.output.force = true;
                i += 1;
                continue;
            }
            "--buffer-pool-size" => {
                let v = val(i)?;
                o.engine.buffer_pool_size =
                    Some(parse_size(&v).ok_or_else(|| format!("bad --buffer-pool-size {v}"))?)
            }
            "--buffer-pool-partitions" => {
                let v = val(i)?;
                o.engine.buffer_pool_partitions = Some(
                    v.parse()
                        .map_err(|_| format!("bad --buffer-pool-partitions {v}"))?,
                )
            }
            "--innodb-flush-log-at-trx-commit" => {
                let v = val(i)?;
                o.engine.flush_log_at_trx_commit = Some(
                    v.parse()
                        .map_err(|_| format!("bad --innodb-flush-log-at-trx-commit {v}"))?,
                )
            }
            "--innodb-log-file-size" => {
                let v = val(i)?;
                o.engine.log_file_size =
                    Some(parse_size(&v).ok_or_else(|| format!("bad --innodb-log-file-size {v}"))?)
            }
            "--quarry-disk-keep-free" => {
                let v = val(i)?;
                o.engine.disk_keep_free = Some(
                    parse_size(&v).ok_or_else(|| format!("bad --quarry-disk-keep-free {v}"))?
                        as u64,
                )
            }
            "--secure-file-priv" => o.engine.secure_file_priv = Some(val(i)?),
            flag @ ("--ssl-cert"
            | "--ssl-key"
            | "--ssl-ca"
            | "--tls-version"
            | "--require-secure-transport") => {
                let key = flag.trim_start_matches("--").replace('-', "_");
                tls_setting(&mut o, &key, &val(i)?)?
            }
            "--performance-schema" => {
                o.engine.performance_schema = true;
                i += 1;
                continue;
            }
            "--metrics-port" => {
                let v = val(i)?;
                o.metrics_port = Some(v.parse().map_err(|_| format!("bad --metrics-port {v}"))?)
            }
            "--skip-ssl" => {
                o.skip_ssl = true;
                i += 1;
                continue;
            }
            other => return Err(format!("unknown option {other}\n{USAGE}")),
        }
        i += 2;
    }
    Ok(o)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match args.first().map(String::as_str) {
        Some("--version") | Some("-V") => {
            println!(
                "quarry {} (MySQL protocol compatible with MariaDB 10.11)",
                env!("CARGO_PKG_VERSION")
            );
            0
        }
        Some("serve") => match parse_args(&args[1..]) {
            Ok(o) => serve(o),
            Err(e) => {
                eprintln!("{e}");
                2
            }
        },
        Some("sql") => match parse_args(&args[1..]) {
            Ok(o) => shell(o),
            Err(e) => {
                eprintln!("{e}");
                2
            }
        },
        _ => {
            eprintln!("{USAGE}");
            2
        }
    };
    std::process::exit(code);
}

/// Open the datadir, reporting a failure (e.g. the lock held by another process).
/// `port`: what the query logs' header says the server listens on (0: the shell).
fn open_db(datadir: &std::path::Path, opts: &Options, port: u16) -> Option<Arc<Database>> {
    match Database::open_with(datadir, opts).and_then(|db| {
        db.logs.set_listening(port);
        db.apply_log_settings(&opts.log_settings)?;
        Ok(db)
    }) {
        Ok(db) => Some(db),
        Err(e) => {
            eprintln!(
                "quarry: cannot open datadir {}: {}",
                datadir.display(),
                e.message
            );
            None
        }
    }
}

fn serve(o: Opts) -> i32 {
    let Some(db) = open_db(&o.datadir, &o.engine, o.port) else {
        return 1;
    };
    // From here on the server's messages go to the error log (`--log-error`, else
    // standard error), in MariaDB's line format.
    let log = |level, text: String| db.logs.error(level, 0, &text);
    for p in db.catalog.open_problems() {
        log(
            Level::Warning,
            format!(
                "quarry: cannot open {p}; it answers with this error until repaired or dropped"
            ),
        );
    }
    for n in &db.accounts.notes {
        log(Level::Warning, format!("quarry: {n}"));
    }
    let r = &db.recovery;
    if r.redone > 0 || r.undone_txns > 0 {
        log(Level::Note, format!(
            "quarry: recovery scanned {} bytes of log, redid {} records ({} committed transactions), rolled back {} unfinished, in {} ms",
            r.scanned_bytes,
            r.redone,
            r.committed_txns,
            r.undone_txns,
            r.elapsed.as_millis()
        ));
    }
    let addr = format!("{}:{}", o.bind, o.port);
    let bound = if o.skip_ssl {
        quarry_server::Server::bind_without_tls(db.clone(), &addr)
    } else {
        quarry_server::Server::bind(db.clone(), &addr)
    };
    let server = match bound {
        Ok(s) => s,
        Err(e) => {
            log(
                Level::Error,
                format!("quarry: cannot listen on {addr}: {e}"),
            );
            return 1;
        }
    };
    let local = server.local_addr().map(|a| a.to_string()).unwrap_or(addr);
    db.set_global(
        "port",
        quarry_core::quarry_common::Value::Int(o.port as i64),
    );
    if let Some(port) = o.metrics_port {
        match quarry_server::metrics::serve(db.clone(), &format!("{}:{port}", o.bind)) {
            Ok(a) => log(
                Level::Note,
                format!("quarry: metrics on http://{a}/metrics"),
            ),
            Err(e) => {
                log(
                    Level::Error,
                    format!("quarry: cannot serve metrics on port {port}: {e}"),
                );
                return 1;
            }
        }
    }
    let stop = server.stop_handle();
    signals::install(stop.clone());
    log(
        Level::Note,
        format!(
            "quarry: serving on {local}, datadir {}",
            o.datadir.display()
        ),
    );
    let r = server.run();
    let flushed = db.shutdown();
    log(
        Level::Note,
        format!(
            "quarry: stopped ({}), datadir {}{}",
            if r.is_ok() { "clean shutdown" } else { "error" },
            o.datadir.display(),
            match &flushed {
                Ok(()) => String::new(),
                Err(e) => format!(", flush failed: {}", e.message),
            }
        ),
    );
    if r.is_err() || flushed.is_err() {
        1
    } else {
        0
    }
}

/// SIGINT/SIGTERM set the stop flag; the accept loop notices within 100 ms.
mod signals {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    static mut STOP: Option<Arc<AtomicBool>> = None;
    static FLAG: AtomicBool = AtomicBool::new(false);

    extern "C" fn on_signal(_: i32) {
        FLAG.store(true, Ordering::SeqCst);
    }

    #[allow(unsafe_code)]
    pub fn install(stop: Arc<AtomicBool>) {
        extern "C" {
            fn signal(sig: i32, handler: extern "C" fn(i32)) -> usize;
        }
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            signal(2, on_signal);
            signal(15, on_signal);
            STOP = None;
        }
        std::thread::spawn(move || loop {
            if FLAG.load(Ordering::SeqCst) {
                stop.store(true, Ordering::SeqCst);
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        });
    }
}

fn shell(o: Opts) -> i32 {
    let Some(db) = open_db(&o.datadir, &o.engine, 0) else {
        return 1;
    };
    let code = shell::run_shell(&db, o.exec, o.output);
    let _ = db.shutdown();
    code
}
