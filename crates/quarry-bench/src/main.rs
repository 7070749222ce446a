//! `quarry-bench`: Quarry against MariaDB (InnoDB, MyISAM) and DuckDB on the same machine
//! in the same run — sysbench, the seed workload, an sql-bench-like suite, TPC-H and the
//! seed's I/O experiments — reported as the seed's relative tables, JSON and PNG charts.

mod args;
mod chart;
mod ioexp;
mod report;
mod seed;
mod seedgen;
mod sqlbench;
mod sysbench;
mod tpch;

use args::{Options, Phase};
use indicatif::{ProgressBar, ProgressStyle};
use quarry_testkit::servers;
use report::{Json, SecondsTable, SysbenchResult};
use servers::Server;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let o = match args::parse(&argv) {
        Ok(Some(o)) => o,
        Ok(None) => {
            print!("{}", args::USAGE);
            return;
        }
        Err(e) => {
            eprintln!("quarry-bench: {e}");
            std::process::exit(2);
        }
    };
    servers::install_signal_handlers();
    if let Err(e) = run(&o) {
        eprintln!("quarry-bench: {e}");
        std::process::exit(1);
    }
}

fn sh(cmd: &str, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn meminfo(key: &str) -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

fn machine() -> Vec<(String, String)> {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .unwrap_or("?")
        .trim()
        .to_string();
    vec![
        ("host".into(), sh("hostname", &[])),
        (
            "cores".into(),
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
                .to_string(),
        ),
        ("cpu".into(), cpu),
        (
            "memory".into(),
            format!("{} MiB", meminfo("MemTotal:") / 1024),
        ),
        ("kernel".into(), sh("uname", &["-sr"])),
        ("date".into(), sh("date", &["-u", "+%Y-%m-%d %H:%M UTC"])),
    ]
}

/// One progress line: a spinner with the current step and the time since the run began.
struct Progress {
    bar: ProgressBar,
}

impl Progress {
    fn new() -> Progress {
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress { bar }
    }

    /// Without a terminal the spinner is hidden, so steps become timestamped log lines.
    fn step(&self, msg: &str) {
        if self.bar.is_hidden() {
            let secs = self.bar.elapsed().as_secs();
            eprintln!(
                "[{:02}:{:02}:{:02}] {msg}",
                secs / 3600,
                secs / 60 % 60,
                secs % 60
            );
        }
        self.bar.set_message(msg.to_string());
    }

    fn log(&self, msg: &str) {
        if self.bar.is_hidden() {
            eprintln!("{msg}");
        } else {
            self.bar.println(msg);
        }
    }
}

#[derive(Default)]
struct Results {
    machine: Vec<(String, String)>,
    versions: Vec<(String, String)>,
    settings: Vec<(String, String)>,
    sysbench: Vec<SysbenchResult>,
    seed: Option<SecondsTable>,
    seed_facts: seed::SeedFacts,
    sqlbench: Option<SecondsTable>,
    tpch: Option<SecondsTable>,
    /// Answer comparisons and target checks of the TPC-H phase.
    tpch_facts: Vec<String>,
    aio: Vec<ioexp::AioRow>,
    caches: Vec<ioexp::CacheRow>,
    caches_rows: u64,
    notes: Vec<String>,
}

impl Results {
    fn text(&self) -> String {
        let mut s = String::new();
        s.push_str("# quarry-bench report\n\n");
        for (k, v) in &self.machine {
            s.push_str(&format!("{k:<10} {v}\n"));
        }
        s.push('\n');
        for (k, v) in &self.versions {
            s.push_str(&format!("version    {k}: {v}\n"));
        }
        for (k, v) in &self.settings {
            s.push_str(&format!("setting    {k} = {v}\n"));
        }
        if !self.sysbench.is_empty() {
            s.push_str("\n## sysbench (tps; x1st = tps relative to the first system, bigger is faster)\n\n");
            s.push_str(&report::render_sysbench(&self.sysbench));
        }
        if let Some(t) = &self.seed {
            s.push_str("\n## Seed workload\n\n");
            s.push_str(&t.render());
            s.push_str("\nAnswers, load rates, temp space and sizes:\n");
            for (sys, item, v) in &self.seed_facts.lines {
                s.push_str(&format!("  {sys:<16} {item:<48} {v}\n"));
            }
        }
        if let Some(t) = &self.sqlbench {
            s.push_str("\n## sql-bench-like suite\n\n");
            s.push_str(&t.render());
        }
        if let Some(t) = &self.tpch {
            s.push_str("\n## TPC-H\n\n");
            s.push_str(&t.render());
            s.push_str("\nAnswers and targets:\n");
            for l in &self.tpch_facts {
                s.push_str(&format!("  {l}\n"));
            }
        }
        if !self.aio.is_empty() {
            s.push_str("\n## I/O experiments\n\n");
            s.push_str(&ioexp::render_aio(
                &self.aio,
                meminfo("MemAvailable:") / 1024,
            ));
        }
        if !self.caches.is_empty() {
            s.push('\n');
            s.push_str(&ioexp::render_caches(&self.caches, self.caches_rows));
        }
        if !self.notes.is_empty() {
            s.push_str("\n## Notes\n\n");
            for n in &self.notes {
                s.push_str(&format!("- {n}\n"));
            }
        }
        s
    }

    fn json(&self) -> Json {
        let pairs = |v: &[(String, String)]| {
            Json::Obj(v.iter().map(|(k, v)| (k.clone(), Json::str(v))).collect())
        };
        Json::obj(vec![
            (
                "quick",
                Json::Bool(
                    self.settings
                        .iter()
                        .any(|(k, v)| k == "mode" && v == "quick"),
                ),
            ),
            ("machine", pairs(&self.machine)),
            ("versions", pairs(&self.versions)),
            ("settings", pairs(&self.settings)),
            ("sysbench", report::sysbench_json(&self.sysbench)),
            (
                "seed",
                self.seed.as_ref().map_or(Json::Null, |t| t.to_json()),
            ),
            ("seed_facts", self.seed_facts.to_json()),
            (
                "sqlbench",
                self.sqlbench.as_ref().map_or(Json::Null, |t| t.to_json()),
            ),
            (
                "tpch",
                self.tpch.as_ref().map_or(Json::Null, |t| t.to_json()),
            ),
            (
                "tpch_facts",
                Json::Arr(self.tpch_facts.iter().map(Json::str).collect()),
            ),
            ("aio", ioexp::aio_json(&self.aio)),
            ("caches", ioexp::caches_json(&self.caches)),
            (
                "notes",
                Json::Arr(self.notes.iter().map(Json::str).collect()),
            ),
        ])
    }

    fn write(&self, dir: &Path) -> Result<(), String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        std::fs::write(dir.join("report.txt"), self.text()).map_err(|e| e.to_string())?;
        std::fs::write(dir.join("results.json"), self.json().to_pretty())
            .map_err(|e| e.to_string())?;
        Ok(())
    }

    fn charts(&self, dir: &Path) -> Vec<String> {
        let mut errors = Vec::new();
        let mut chart = |file: &str,
                         title: &str,
                         xl: &str,
                         cats: Vec<String>,
                         series: Vec<(String, Vec<Option<f64>>)>,
                         log: bool| {
            if let Err(e) = chart::grouped_bars(&dir.join(file), title, xl, &cats, &series, log) {
                errors.push(format!("{file}: {e}"));
            }
        };
        if !self.sysbench.is_empty() {
            let mut cats: Vec<(String, u32)> = Vec::new();
            let mut systems: Vec<String> = Vec::new();
            for r in &self.sysbench {
                if !cats.contains(&(r.workload.clone(), r.threads)) {
                    cats.push((r.workload.clone(), r.threads));
                }
                if !systems.contains(&r.system) {
                    systems.push(r.system.clone());
                }
            }
            let series = systems
                .iter()
                .map(|sys| {
                    let v = cats
                        .iter()
                        .map(|(w, t)| {
                            self.sysbench
                                .iter()
                                .find(|r| {
                                    &r.system == sys
                                        && &r.workload == w
                                        && r.threads == *t
                                        && r.failure.is_empty()
                                })
                                .map(|r| r.tps)
                        })
                        .collect();
                    (sys.clone(), v)
                })
                .collect();
            let labels = cats.iter().map(|(w, t)| format!("{w} t={t}")).collect();
            chart(
                "sysbench.png",
                "sysbench transactions per second (bigger is faster)",
                "tps (log scale)",
                labels,
                series,
                true,
            );
        }
        for (t, file) in [
            (&self.seed, "seed.png"),
            (&self.sqlbench, "sqlbench.png"),
            (&self.tpch, "tpch.png"),
        ] {
            if let Some(t) = t {
                let cats = t.rows.iter().map(|r| r.name.clone()).collect();
                let series = t
                    .systems
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (s.clone(), t.rows.iter().map(|r| r.secs[i]).collect()))
                    .collect();
                chart(
                    file,
                    &format!("{} (seconds, smaller is faster)", t.title),
                    "seconds (log scale)",
                    cats,
                    series,
                    true,
                );
            }
        }
        if !self.aio.is_empty() {
            let sizes: Vec<u64> =
                self.aio
                    .iter()
                    .map(|r| r.size_mb)
                    .fold(Vec::new(), |mut v, s| {
                        if !v.contains(&s) {
                            v.push(s)
                        }
                        v
                    });
            let mut cats = Vec::new();
            let mut w = Vec::new();
            let mut r = Vec::new();
            for sz in &sizes {
                for row in self.aio.iter().filter(|x| x.size_mb == *sz) {
                    cats.push(format!("{sz} MiB {}", row.strategy.name()));
                    w.push(Some(row.write_secs));
                    r.push(Some(row.read_secs));
                }
            }
            chart(
                "aio.png",
                "seed 002 aio: 103-byte records",
                "seconds",
                cats,
                vec![("write".into(), w), ("read".into(), r)],
                false,
            );
        }
        if !self.caches.is_empty() {
            let cats = self.caches.iter().map(|c| ioexp::human(c.buffer)).collect();
            chart(
                "caches.png",
                "seed 002 caches: time per buffer size",
                "seconds",
                cats,
                vec![
                    (
                        "INSERT ... SELECT".into(),
                        self.caches.iter().map(|c| Some(c.insert_secs)).collect(),
                    ),
                    (
                        "full scan".into(),
                        self.caches.iter().map(|c| Some(c.scan_secs)).collect(),
                    ),
                ],
                false,
            );
        }
        errors
    }
}

/// One sysbench result as a log line.
fn sysbench_line(r: &SysbenchResult) -> String {
    format!(
        "  {:<16} {:<22} t={} tps={:.0} p95={}ms err={} {}",
        r.system, r.workload, r.threads, r.tps, r.p95_ms, r.errors, r.failure
    )
}

/// Every server-side system of a phase, as (label, server, engine): MariaDB MyISAM (the
/// seed's baseline), MariaDB InnoDB, then each Quarry engine.
fn server_systems<'a>(
    maria: &'a Server,
    quarry: &'a Server,
    engines: &[String],
) -> Vec<(String, &'a Server, String)> {
    let mut v = vec![
        ("MariaDB-MyISAM".to_string(), maria, "MyISAM".to_string()),
        ("MariaDB-InnoDB".to_string(), maria, "InnoDB".to_string()),
    ];
    v.extend(
        engines
            .iter()
            .map(|e| (format!("Quarry-{e}"), quarry, e.clone())),
    );
    v
}

/// Quarry engines by name, from SHOW ENGINES ("… maps to the Quarry 'row' engine"): one
/// SQL name per distinct engine, so a new engine joins the runs without code changes.
fn quarry_engines(server: &Server) -> Result<Vec<String>, String> {
    let mut c = server.connect(None)?;
    let res = c.query("SHOW ENGINES").map_err(|e| e.to_string())?;
    c.quit();
    Ok(engines_from_show(&res.rows))
}

fn engines_from_show(rows: &[Vec<Option<String>>]) -> Vec<String> {
    let mut picked: Vec<(String, String)> = Vec::new();
    for r in rows {
        let (Some(Some(name)), Some(Some(support)), Some(Some(comment))) =
            (r.first(), r.get(1), r.get(2))
        else {
            continue;
        };
        if support == "NO" {
            continue;
        }
        let Some(engine) = comment
            .split("Quarry '")
            .nth(1)
            .and_then(|s| s.split('\'').next())
        else {
            continue;
        };
        match picked.iter_mut().find(|(e, _)| e == engine) {
            // Prefer the alias spelled like the engine itself (ROW for 'row').
            Some(p) if name.eq_ignore_ascii_case(engine) => p.1 = name.clone(),
            Some(_) => {}
            None => picked.push((engine.to_string(), name.clone())),
        }
    }
    picked.into_iter().map(|(_, n)| n).collect()
}

fn run(o: &Options) -> Result<(), String> {
    let started = Instant::now();
    let p = Progress::new();
    let date = sh("date", &["-u", "+%Y-%m-%d"]);
    let host = sh("hostname", &[]);
    let out = o.out.clone().unwrap_or_else(|| {
        PathBuf::from(format!(
            "bench/results/{date}-{host}{}",
            if o.quick { "-quick" } else { "" }
        ))
    });
    let mut res = Results {
        machine: machine(),
        ..Default::default()
    };
    res.settings.push((
        "mode".into(),
        if o.quick {
            "quick".into()
        } else {
            "full".into()
        },
    ));
    res.settings.push((
        "command".into(),
        format!(
            "quarry-bench {}",
            std::env::args().skip(1).collect::<Vec<_>>().join(" ")
        ),
    ));
    res.versions
        .push(("sysbench".into(), sh("sysbench", &["--version"])));
    p.log(&format!("quarry-bench: report in {}", out.display()));
    for (k, v) in &res.machine {
        p.log(&format!("  {k}: {v}"));
    }

    let need_servers = o.phases.iter().any(|ph| *ph != Phase::Io);
    let mut servers: Option<(Server, Server, Vec<String>)> = None;
    if need_servers {
        p.step("starting MariaDB (mariadb-install-db + mariadbd)");
        let maria = servers::start_mariadb(&o.servers())?;
        p.step("starting quarry serve");
        let quarry = servers::start_quarry(&o.servers())?;
        let engines = match &o.engines {
            Some(e) => e.clone(),
            None => quarry_engines(&quarry)?,
        };
        res.versions.push(("MariaDB".into(), maria.version.clone()));
        res.versions.push(("Quarry".into(), quarry.version.clone()));
        for (k, v) in &maria.settings {
            res.settings.push((
                format!("MariaDB {k}"),
                if v.is_empty() { "ON".into() } else { v.clone() },
            ));
        }
        res.settings.push((
            "MariaDB other settings".into(),
            "compiled-in defaults (own --defaults-file; latin1)".into(),
        ));
        res.settings.push((
            "Quarry durability".into(),
            format!(
                "write-ahead log, innodb_flush_log_at_trx_commit = {} (as MariaDB); \
                 REPEATABLE READ snapshots, row locks on unique keys",
                o.flush_log
            ),
        ));
        res.settings
            .push(("Quarry engines".into(), engines.join(", ")));
        p.log(&format!(
            "  MariaDB {} on port {} (pid {:?})",
            maria.version,
            maria.port,
            maria.pid()
        ));
        p.log(&format!(
            "  Quarry {} on port {} (pid {:?}), engines: {}",
            quarry.version,
            quarry.port,
            quarry.pid(),
            engines.join(", ")
        ));
        for (k, v) in &maria.settings {
            p.log(&format!(
                "  MariaDB {k}{}{v}",
                if v.is_empty() { "" } else { "=" }
            ));
        }
        servers = Some((maria, quarry, engines));
    }

    for phase in &o.phases {
        match phase {
            Phase::Sysbench => {
                let (maria, quarry, engines) = servers.as_ref().unwrap();
                res.settings.push(("sysbench".into(), format!(
                    "--tables={} --table-size={} --time={} --threads={:?} --db-ps-mode=auto; MyISAM with --mysql-ignore-errors=1062",
                    o.tables, o.table_size, o.time, o.threads
                )));
                // InnoDB is the sysbench baseline (the OLTP targets are set against it).
                let mut systems = server_systems(maria, quarry, engines);
                systems.swap(0, 1);
                let targets: Vec<sysbench::Target> = systems
                    .into_iter()
                    .map(|(label, server, engine)| sysbench::Target {
                        label,
                        server,
                        ignore_duplicates: engine == "MyISAM",
                        engine,
                        app_account: false,
                    })
                    .collect();
                // The same Quarry runs as an application account: the cost of checking
                // privileges on every statement (root's are skipped as "everything").
                let mut targets = targets;
                if o.app_account {
                    let apps: Vec<sysbench::Target> = targets
                        .iter()
                        .filter(|t| t.label.starts_with("Quarry"))
                        .map(|t| sysbench::Target {
                            label: format!("{} {}", t.label, sysbench::APP_USER),
                            server: t.server,
                            engine: t.engine.clone(),
                            ignore_duplicates: t.ignore_duplicates,
                            app_account: true,
                        })
                        .collect();
                    targets.extend(apps);
                }
                for t in &targets {
                    let r = sysbench::run_target(
                        o,
                        t,
                        |r| {
                            p.log(&sysbench_line(&r));
                            res.sysbench.push(r);
                        },
                        &|m| p.step(m),
                    );
                    if let Err(e) = r {
                        p.log(&format!("  {}: {e}", t.label));
                        res.notes.push(format!("sysbench {}: {e}", t.label));
                    }
                }
                drop(targets);
                if !o.quarry_partitions.is_empty() {
                    // Seed 003's experiment: the same runs with the page table split
                    // 1, 4, 16… ways; the default server comes back for later phases.
                    let (maria, quarry, engines) = servers.take().unwrap();
                    drop(quarry);
                    for &parts in &o.quarry_partitions {
                        p.step(&format!(
                            "restarting quarry serve with {parts} page-table partitions"
                        ));
                        let server = servers::start_quarry_with(
                            &o.servers(),
                            &["--buffer-pool-partitions".into(), parts.to_string()],
                        )?;
                        for e in &engines {
                            let t = sysbench::Target {
                                label: format!("Quarry-{e} p{parts}"),
                                server: &server,
                                engine: e.clone(),
                                ignore_duplicates: false,
                                app_account: false,
                            };
                            let r = sysbench::run_target(
                                o,
                                &t,
                                |r| {
                                    p.log(&sysbench_line(&r));
                                    res.sysbench.push(r);
                                },
                                &|m| p.step(m),
                            );
                            if let Err(e) = r {
                                res.notes.push(format!("sysbench {}: {e}", t.label));
                            }
                        }
                    }
                    res.settings.push((
                        "Quarry page-table partitions".into(),
                        format!(
                            "default 8 for Quarry-<engine>; 'pN' rows ran with --buffer-pool-partitions N ({:?})",
                            o.quarry_partitions
                        ),
                    ));
                    let quarry = servers::start_quarry(&o.servers())?;
                    servers = Some((maria, quarry, engines));
                }
                res.write(&out)?;
            }
            Phase::Seed => {
                let (maria, quarry, engines) = servers.as_ref().unwrap();
                let data_dir = servers::abs(&o.work).join("seed-data");
                let bar = ProgressBar::new(o.seed_rows + seedgen::SMALL_ROWS + 2 * o.t1_rows);
                p.step("generating the seed data set");
                let t0 = Instant::now();
                let files = seedgen::generate(&data_dir, o.seed_rows, o.t1_rows, &|_, _, _| {
                    bar.inc(100_000)
                })
                .map_err(|e| format!("seed data: {e}"))?;
                bar.finish_and_clear();
                p.log(&format!(
                    "  seed data in {} ({:.1} s)",
                    data_dir.display(),
                    t0.elapsed().as_secs_f64()
                ));
                let mut table = SecondsTable::new(
                    "Seed workload (seeds 002/004): seconds, relative to MariaDB-MyISAM",
                    vec!["MariaDB-MyISAM".into()],
                );
                let mut systems: Vec<seed::SeedSystem> = server_systems(maria, quarry, engines)
                    .into_iter()
                    .map(|(label, server, engine)| seed::SeedSystem {
                        label,
                        server,
                        engine,
                        side_file: false,
                    })
                    .collect();
                // Seed 002's column side file on a row table, when the row engine runs.
                if let Some(row) = engines.iter().find(|e| e.eq_ignore_ascii_case("ROW")) {
                    systems.push(seed::SeedSystem {
                        label: format!("Quarry-{row}+cols"),
                        server: quarry,
                        engine: row.clone(),
                        side_file: true,
                    });
                }
                for (i, s) in systems.iter().enumerate() {
                    if let Err(e) =
                        seed::run_system(o, s, &files, &mut table, &mut res.seed_facts, &|m| {
                            p.step(m)
                        })
                    {
                        p.log(&format!("  {}: {e}", s.label));
                        res.notes.push(format!("seed {}: {e}", s.label));
                    }
                    if i == 1 {
                        p.step("DuckDB: seed workload (Python, in-process)");
                        match seed::run_duckdb(o, &files, &mut table, &mut res.seed_facts) {
                            Ok(v) => res.versions.push(("DuckDB".into(), v)),
                            Err(e) => {
                                p.log(&format!("  DuckDB: {e}"));
                                res.notes.push(format!("seed DuckDB: {e}"));
                            }
                        }
                    }
                    res.seed = Some(table.clone());
                    res.write(&out)?;
                }
                check_answers(&res.seed_facts, &mut res.notes);
                res.seed = Some(table);
                res.settings.push(("seed".into(), format!("TestBig {} rows, TestSmall {} rows, t1 {} rows, generator seed {}, query timeout {} s", o.seed_rows, seedgen::SMALL_ROWS, o.t1_rows, seedgen::SEED, o.query_timeout)));
                res.write(&out)?;
            }
            Phase::SqlBench => {
                let (maria, quarry, engines) = servers.as_ref().unwrap();
                let mut table = SecondsTable::new(
                    "sql-bench-like suite: seconds, relative to MariaDB-MyISAM",
                    vec!["MariaDB-MyISAM".into()],
                );
                let suites: Vec<sqlbench::Suite> = server_systems(maria, quarry, engines)
                    .into_iter()
                    .map(|(label, server, engine)| sqlbench::Suite {
                        label,
                        server,
                        engine,
                        scale: o.sqlbench_scale,
                    })
                    .collect();
                for s in &suites {
                    if let Err(e) = sqlbench::run(s, &mut table, &|m| p.step(m)) {
                        p.log(&format!("  {}: {e}", s.label));
                        res.notes.push(format!("sqlbench {}: {e}", s.label));
                    }
                    res.sqlbench = Some(table.clone());
                    res.write(&out)?;
                }
                res.settings
                    .push(("sqlbench".into(), format!("counts x{}", o.sqlbench_scale)));
            }
            Phase::Tpch => {
                let (maria, quarry, engines) = servers.as_ref().unwrap();
                p.step(&format!("generating TPC-H data (tpchgen-cli -s {})", o.sf));
                let data = tpch::generate(o)?;
                let mut table = SecondsTable::new(
                    &format!("TPC-H SF {}: seconds, relative to {}", o.sf, tpch::BASELINE),
                    vec![tpch::BASELINE.into()],
                );
                let mut answers = tpch::Answers::default();
                // The baseline first: its answers are the ones the others are checked against.
                let mut systems = server_systems(maria, quarry, engines);
                systems.swap(0, 1);
                for (i, (label, server, engine)) in systems.into_iter().enumerate() {
                    let s = tpch::TpchSystem {
                        label,
                        server,
                        engine,
                    };
                    if let Err(e) =
                        tpch::run_system(o, &s, &data, &mut table, &mut answers, &|m| p.step(m))
                    {
                        p.log(&format!("  {}: {e}", s.label));
                        res.notes.push(format!("tpch {}: {e}", s.label));
                    }
                    if i == 1 {
                        p.step("DuckDB: TPC-H (Python, in-process)");
                        match tpch::run_duckdb(o, &data, &mut table, &mut answers) {
                            Ok(v) => {
                                if !res.versions.iter().any(|(k, _)| k == "DuckDB") {
                                    res.versions.push(("DuckDB".into(), v));
                                }
                            }
                            Err(e) => {
                                p.log(&format!("  DuckDB: {e}"));
                                res.notes.push(format!("tpch DuckDB: {e}"));
                            }
                        }
                    }
                    res.tpch = Some(table.clone());
                    res.write(&out)?;
                }
                res.tpch_facts = answers.compare();
                res.tpch_facts.extend(tpch::targets(&table));
                for l in &res.tpch_facts {
                    p.log(&format!("  {l}"));
                }
                res.tpch = Some(table);
                res.settings.push((
                    "tpch".into(),
                    format!(
                        "scale factor {}, tpchgen-cli data, ANALYZE TABLE after load, median of 3",
                        o.sf
                    ),
                ));
                res.write(&out)?;
            }
            Phase::Io => {}
        }
    }
    if let Some((mut maria, mut quarry, _)) = servers.take() {
        p.step("stopping servers");
        maria.stop();
        quarry.stop();
    }
    if o.phases.contains(&Phase::Io) {
        let dir = servers::abs(&o.work).join("io");
        p.step("aio experiment");
        match ioexp::run_aio(&dir, o.io_max_mb, 240.0, &|m| p.step(m)) {
            Ok(rows) => res.aio = rows,
            Err(e) => res.notes.push(format!("aio: {e}")),
        }
        res.write(&out)?;
        let rows = o.seed_rows;
        let data_dir = servers::abs(&o.work).join("seed-data");
        let files = seedgen::generate(&data_dir, o.seed_rows, o.t1_rows, &|_, _, _| {})
            .map_err(|e| format!("seed data: {e}"))?;
        match ioexp::run_caches(&dir.join("caches-db"), &files.big, rows, &|m| p.step(m)) {
            Ok(r) => {
                res.caches = r;
                res.caches_rows = rows;
            }
            Err(e) => res.notes.push(format!("caches: {e}")),
        }
        res.settings.push(("io".into(), format!("aio sizes up to {} MiB (a size over 240 s stops the doubling); caches sweep over {} rows", o.io_max_mb, rows)));
    }
    p.step("writing report");
    res.write(&out)?;
    for e in res.charts(&out) {
        res.notes.push(format!("chart {e}"));
    }
    res.notes.push(format!(
        "total run time {:.0} s",
        started.elapsed().as_secs_f64()
    ));
    res.write(&out)?;
    p.bar.finish_and_clear();
    println!("{}", res.text());
    println!("report: {}/report.txt, results.json, *.png", out.display());
    Ok(())
}

/// Every system must give the same answers to the count queries; a mismatch is a bug.
fn check_answers(facts: &seed::SeedFacts, notes: &mut Vec<String>) {
    for (sys, item, v) in &facts.lines {
        if !(item.starts_with("a)")
            || item.starts_with("b)")
            || item.starts_with("c)")
            || item.starts_with("d)"))
        {
            continue;
        }
        if let Some((bs, _, bv)) = facts.lines.iter().find(|(s, i, _)| i == item && s != sys) {
            if bv != v {
                notes.push(format!("ANSWER MISMATCH: {item}: {sys} = {v}, {bs} = {bv}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, support: &str, engine: &str) -> Vec<Option<String>> {
        vec![
            Some(name.into()),
            Some(support.into()),
            Some(format!("Row store (maps to the Quarry '{engine}' engine)")),
        ]
    }

    #[test]
    fn engines_are_discovered_by_name_once_each() {
        let rows = vec![
            row("InnoDB", "DEFAULT", "row"),
            row("MyISAM", "YES", "row"),
            row("ROW", "YES", "row"),
            row("COLUMNSTORE", "YES", "column"),
            row("COLUMN", "YES", "column"),
            row("BROKEN", "NO", "broken"),
        ];
        assert_eq!(
            engines_from_show(&rows),
            vec!["ROW".to_string(), "COLUMN".to_string()]
        );
    }

    #[test]
    fn answer_mismatches_are_reported() {
        let mut f = seed::SeedFacts::default();
        f.add("MariaDB-MyISAM", "a) count Hersteller='36440'", "300106");
        f.add("Quarry-ROW", "a) count Hersteller='36440'", "300106");
        f.add("Quarry-ROW", "d) join TestSmall x TestBig", "7");
        f.add("MariaDB-MyISAM", "d) join TestSmall x TestBig", "1391");
        let mut notes = Vec::new();
        check_answers(&f, &mut notes);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].contains("d) join"));
    }
}
