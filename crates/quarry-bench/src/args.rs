//! Command-line options of the harness and the `--quick` / full presets.

use std::path::PathBuf;

pub const USAGE: &str = "\
quarry-bench: Quarry vs MariaDB vs DuckDB, side by side, in one run

USAGE: quarry-bench [OPTIONS]

  --quick                  small sizes: sysbench 10 000 rows x 5 s, seed 1 M rows, ...
  --only LIST              phases to run, comma-separated: sysbench,seed,sqlbench,tpch,io
                           (default: all)
  --out DIR                report directory (default bench/results/<date>-<host>)
  --work DIR               scratch directory for servers and data (default target/bench-work)
  --threads LIST           sysbench thread counts (default 1,4)
  --time SECS              seconds per sysbench run (default 20; quick 5)
  --tables N               sysbench tables (default 1)
  --table-size N           sysbench rows per table (default 100000; quick 10000)
  --seed-rows N            TestBig rows (default 10000000; quick 1000000)
  --t1-rows N              rows of the seed-004 GROUP BY table (default 1000000; quick 100000)
  --sqlbench-scale F       multiply sql-bench counts (default 1; quick 0.1)
  --sf F                   TPC-H scale factor (default 0.1; e.g. 1)
  --query-timeout SECS     per-query limit in the seed workload (default 600)
  --io-max-mb N            largest file of the aio experiment (default 2048; quick 256)
  --flush-log N            innodb_flush_log_at_trx_commit, MariaDB and Quarry (default 1)
  --buffer-pool SIZE       innodb_buffer_pool_size (default 2G)
  --key-buffer SIZE        key_buffer_size (default 512M)
  --mariadb-port P         (default 13306)
  --quarry-port P          (default 13307)
  --quarry-bin PATH        quarry binary (default target/release/quarry)
  --python PATH            Python with duckdb (default target/bench-venv/bin/python)
  --engines LIST           Quarry engines to run (default: every engine SHOW ENGINES lists)
  --workloads LIST         sysbench workloads to run (default: all six)
  --app-account            also run Quarry's sysbench as an account holding only
                           sbtest's table privileges (the cost of privilege checks)
  --quarry-partitions LIST also run Quarry's sysbench once per buffer-pool page-table
                           partition count (e.g. 1,4,16), restarting it for each
  -h, --help               this text
";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Sysbench,
    Seed,
    SqlBench,
    Tpch,
    Io,
}

impl Phase {
    pub const ALL: [Phase; 5] = [
        Phase::Sysbench,
        Phase::Seed,
        Phase::SqlBench,
        Phase::Tpch,
        Phase::Io,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Phase::Sysbench => "sysbench",
            Phase::Seed => "seed",
            Phase::SqlBench => "sqlbench",
            Phase::Tpch => "tpch",
            Phase::Io => "io",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Options {
    pub quick: bool,
    pub phases: Vec<Phase>,
    pub out: Option<PathBuf>,
    pub work: PathBuf,
    pub threads: Vec<u32>,
    pub time: u32,
    pub tables: u32,
    pub table_size: u64,
    pub seed_rows: u64,
    pub t1_rows: u64,
    pub sqlbench_scale: f64,
    /// TPC-H scale factor.
    pub sf: f64,
    pub query_timeout: u64,
    pub io_max_mb: u64,
    pub flush_log: u32,
    pub buffer_pool: String,
    pub key_buffer: String,
    pub mariadb_port: u16,
    pub quarry_port: u16,
    pub quarry_bin: PathBuf,
    pub python: PathBuf,
    pub engines: Option<Vec<String>>,
    pub workloads: Vec<String>,
    pub quarry_partitions: Vec<u32>,
    /// Run Quarry's sysbench again as an account with sbtest's privileges only.
    pub app_account: bool,
}

impl Options {
    pub fn servers(&self) -> quarry_testkit::servers::ServerOptions {
        quarry_testkit::servers::ServerOptions {
            work: self.work.clone(),
            mariadb_port: self.mariadb_port,
            quarry_port: self.quarry_port,
            quarry_bin: self.quarry_bin.clone(),
            buffer_pool: self.buffer_pool.clone(),
            key_buffer: self.key_buffer.clone(),
            flush_log: self.flush_log,
        }
    }
}

fn full_defaults() -> Options {
    Options {
        quick: false,
        phases: Phase::ALL.to_vec(),
        out: None,
        work: PathBuf::from("target/bench-work"),
        threads: vec![1, 4],
        time: 20,
        tables: 1,
        table_size: 100_000,
        seed_rows: 10_000_000,
        t1_rows: 1_000_000,
        sqlbench_scale: 1.0,
        sf: 0.1,
        query_timeout: 600,
        io_max_mb: 2048,
        flush_log: 1,
        buffer_pool: "2G".into(),
        key_buffer: "512M".into(),
        mariadb_port: 13306,
        quarry_port: 13307,
        quarry_bin: PathBuf::from("target/release/quarry"),
        python: PathBuf::from("target/bench-venv/bin/python"),
        engines: None,
        workloads: crate::sysbench::WORKLOADS
            .iter()
            .map(|w| w.to_string())
            .collect(),
        quarry_partitions: vec![],
        app_account: false,
    }
}

/// `Ok(None)` means help was asked for.
pub fn parse(args: &[String]) -> Result<Option<Options>, String> {
    let mut o = full_defaults();
    // --quick changes the defaults; explicit options win wherever they appear.
    if args.iter().any(|a| a == "--quick") {
        o.quick = true;
        o.time = 5;
        o.table_size = 10_000;
        o.seed_rows = 1_000_000;
        o.t1_rows = 100_000;
        o.sqlbench_scale = 0.1;
        o.io_max_mb = 256;
    }
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let mut value = || -> Result<String, String> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => it.next().cloned().ok_or(format!("{flag} needs a value")),
            }
        };
        match flag {
            "-h" | "--help" => return Ok(None),
            "--quick" => {}
            "--only" => {
                o.phases = value()?
                    .split(',')
                    .map(|p| {
                        Phase::ALL
                            .into_iter()
                            .find(|x| x.name() == p.trim())
                            .ok_or(format!(
                                "unknown phase '{p}' (sysbench, seed, sqlbench, tpch, io)"
                            ))
                    })
                    .collect::<Result<_, _>>()?
            }
            "--out" => o.out = Some(PathBuf::from(value()?)),
            "--work" => o.work = PathBuf::from(value()?),
            "--threads" => o.threads = num_list(flag, &value()?)?,
            "--time" => o.time = num(flag, &value()?)?,
            "--tables" => o.tables = num(flag, &value()?)?,
            "--table-size" => o.table_size = num(flag, &value()?)?,
            "--seed-rows" => o.seed_rows = num(flag, &value()?)?,
            "--t1-rows" => o.t1_rows = num(flag, &value()?)?,
            "--sqlbench-scale" => o.sqlbench_scale = num(flag, &value()?)?,
            "--sf" => o.sf = num(flag, &value()?)?,
            "--query-timeout" => o.query_timeout = num(flag, &value()?)?,
            "--io-max-mb" => o.io_max_mb = num(flag, &value()?)?,
            "--flush-log" => o.flush_log = num(flag, &value()?)?,
            "--buffer-pool" => o.buffer_pool = value()?,
            "--key-buffer" => o.key_buffer = value()?,
            "--mariadb-port" => o.mariadb_port = num(flag, &value()?)?,
            "--quarry-port" => o.quarry_port = num(flag, &value()?)?,
            "--quarry-bin" => o.quarry_bin = PathBuf::from(value()?),
            "--python" => o.python = PathBuf::from(value()?),
            "--engines" => {
                o.engines = Some(value()?.split(',').map(|s| s.trim().to_string()).collect())
            }
            "--workloads" => {
                o.workloads = value()?
                    .split(',')
                    .map(|w| {
                        let w = w.trim();
                        crate::sysbench::WORKLOADS
                            .contains(&w)
                            .then(|| w.to_string())
                            .ok_or(format!("unknown sysbench workload '{w}'"))
                    })
                    .collect::<Result<_, _>>()?
            }
            "--quarry-partitions" => o.quarry_partitions = num_list(flag, &value()?)?,
            "--app-account" => o.app_account = true,
            other => return Err(format!("unknown option '{other}' (see --help)")),
        }
    }
    if o.quarry_partitions.contains(&0) {
        return Err("--quarry-partitions needs positive numbers".into());
    }
    if o.threads.is_empty() || o.threads.contains(&0) {
        return Err("--threads needs positive numbers".into());
    }
    if o.time == 0 || o.table_size == 0 || o.seed_rows == 0 || o.t1_rows == 0 {
        return Err("--time, --table-size, --seed-rows and --t1-rows must be positive".into());
    }
    if o.sf <= 0.0 {
        return Err("--sf must be positive".into());
    }
    if o.sqlbench_scale <= 0.0 {
        return Err("--sqlbench-scale must be positive".into());
    }
    if o.flush_log > 2 {
        return Err("--flush-log is 0, 1 or 2".into());
    }
    Ok(Some(o))
}

fn num<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    let cleaned: String = v.chars().filter(|c| *c != '_').collect();
    cleaned
        .parse()
        .map_err(|_| format!("{flag}: '{v}' is not a number"))
}

fn num_list(flag: &str, v: &str) -> Result<Vec<u32>, String> {
    v.split(',').map(|x| num(flag, x.trim())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Option<Options>, String> {
        parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn defaults_are_the_issue_sizes() {
        let o = p(&[]).unwrap().unwrap();
        assert_eq!(
            (o.table_size, o.time, o.threads.clone()),
            (100_000, 20, vec![1, 4])
        );
        assert_eq!(o.seed_rows, 10_000_000);
        assert_eq!(o.phases, Phase::ALL.to_vec());
    }

    #[test]
    fn quick_shrinks_but_explicit_options_win_in_any_order() {
        let o = p(&["--time", "7", "--quick"]).unwrap().unwrap();
        assert!(o.quick);
        assert_eq!((o.table_size, o.time), (10_000, 7));
        let o = p(&["--quick", "--table-size=50_000", "--threads", "2,8"])
            .unwrap()
            .unwrap();
        assert_eq!((o.table_size, o.threads), (50_000, vec![2, 8]));
    }

    #[test]
    fn phases_and_errors() {
        let o = p(&["--only", "seed,io"]).unwrap().unwrap();
        assert_eq!(o.phases, vec![Phase::Seed, Phase::Io]);
        let o = p(&["--only=tpch", "--sf", "1"]).unwrap().unwrap();
        assert_eq!((o.phases, o.sf), (vec![Phase::Tpch], 1.0));
        assert!(p(&["--sf", "0"]).is_err());
        assert!(p(&["--only", "tpcc"])
            .unwrap_err()
            .contains("unknown phase"));
        assert!(p(&["--time"]).unwrap_err().contains("needs a value"));
        assert!(p(&["--time", "x"]).unwrap_err().contains("not a number"));
        assert!(p(&["--threads", "0"]).is_err());
        assert!(p(&["--frobnicate"]).unwrap_err().contains("unknown option"));
        assert!(p(&["--help"]).unwrap().is_none());
    }
}
