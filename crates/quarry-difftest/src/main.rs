//! The differential tester: random schemas, data and queries run on Quarry and on a
//! private MariaDB 10.11 side by side, plus oracles that need no second server —
//! ternary-logic partitioning, NoREC, and plan independence (the same query over the row
//! engine with and without secondary indexes and over the column engine). Each mismatch
//! outside the allow-list is reduced and written as a sqllogictest file.
//!
//! `quarry-difftest [--seed N] [--queries N] [--minutes M] [--mixed-types] [--no-mariadb]
//! [--out DIR] [--allow FILE] [--quarry-bin PATH] [--work DIR] [--per-case N]`

mod check;
mod query;
mod reduce;
mod runner;
mod schema;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use quarry_common::fuzz::Rng;
use quarry_testkit::servers::{self, ServerOptions};

use check::same;
use query::{Gen, Select};
use runner::{Outcome, Side, VARIANTS};
use schema::{Table, Variant};

struct Args {
    seed: u64,
    queries: usize,
    minutes: f64,
    mariadb: bool,
    out: PathBuf,
    allow: PathBuf,
    quarry_bin: PathBuf,
    work: PathBuf,
    /// Queries per generated schema.
    per_case: usize,
    /// Operands of mixed types (see [`query::Gen::mixed`]).
    mixed: bool,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        seed: 1,
        queries: 2000,
        minutes: 5.0,
        mariadb: true,
        out: PathBuf::from("target/difftest"),
        allow: PathBuf::from("tests/difftest/allow.txt"),
        quarry_bin: PathBuf::from("target/release/quarry"),
        work: std::env::temp_dir().join(format!("quarry-difftest-{}", std::process::id())),
        per_case: 60,
        mixed: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().ok_or(format!("{flag} needs a value"));
        let num = |s: String| s.parse::<f64>().map_err(|_| format!("bad number {s}"));
        match flag.as_str() {
            "--seed" => a.seed = num(val()?)? as u64,
            "--queries" => a.queries = num(val()?)? as usize,
            "--minutes" => a.minutes = num(val()?)?,
            "--per-case" => a.per_case = num(val()?)?.max(1.0) as usize,
            "--no-mariadb" => a.mariadb = false,
            "--mixed-types" => a.mixed = true,
            "--out" => a.out = val()?.into(),
            "--allow" => a.allow = val()?.into(),
            "--quarry-bin" => a.quarry_bin = val()?.into(),
            "--work" => a.work = val()?.into(),
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(a)
}

/// A known difference: mismatches it matches are counted, not failed.
struct Allowed {
    kind: String,
    value: String,
    hits: usize,
}

fn read_allow(path: &PathBuf) -> Result<Vec<Allowed>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = vec![];
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let rule = line.split(" -- ").next().unwrap_or(line).trim();
        let (kind, value) = rule.split_once(' ').ok_or(format!("allow-list: {line}"))?;
        if ![
            "sql",
            "quarry-error",
            "mariadb-error",
            "dml-mariadb-error",
            "sql-more-rows",
        ]
        .contains(&kind)
        {
            return Err(format!("allow-list: unknown kind {kind}"));
        }
        out.push(Allowed {
            kind: kind.into(),
            value: value.trim().into(),
            hits: 0,
        });
    }
    Ok(out)
}

struct Mismatch {
    /// "MariaDB", "plan", "TLP", "NoREC", "DML", "load".
    oracle: &'static str,
    variant: Variant,
    sql: String,
    expected: Outcome,
    got: Outcome,
}

impl Mismatch {
    fn allowed_by(&self, allow: &mut [Allowed]) -> bool {
        for a in allow.iter_mut() {
            let hit = match a.kind.as_str() {
                "sql" => a.value.split(" && ").all(|part| self.sql.contains(part)),
                "quarry-error" => {
                    matches!(&self.got, Outcome::Error(c, _) if c.to_string() == a.value)
                }
                "mariadb-error" => {
                    matches!(&self.expected, Outcome::Error(c, _) if c.to_string() == a.value)
                }
                "sql-more-rows" => {
                    a.value.split(" && ").all(|part| self.sql.contains(part))
                        && more_rows(&self.expected, &self.got)
                }
                "dml-mariadb-error" => {
                    self.oracle == "DML"
                        && matches!(&self.expected, Outcome::Error(c, _) if c.to_string() == a.value)
                }
                _ => false,
            };
            if hit {
                a.hits += 1;
                return true;
            }
        }
        false
    }
}

/// `more` holds every row of `fewer` and more besides (as multisets).
fn more_rows(more: &Outcome, fewer: &Outcome) -> bool {
    let (Outcome::Rows(m), Outcome::Rows(f)) = (more, fewer) else {
        return false;
    };
    if m.len() <= f.len() {
        return false;
    }
    let mut rest = m.clone();
    for r in f {
        match rest.iter().position(|x| x == r) {
            Some(i) => {
                rest.swap_remove(i);
            }
            None => return false,
        }
    }
    true
}

struct Run {
    args: Args,
    maria: Option<Side>,
    quarry: Side,
    allow: Vec<Allowed>,
    mismatches: usize,
    allowed: usize,
    queries: usize,
    oracle_checks: usize,
    reduced: usize,
}

fn main() {
    servers::install_signal_handlers();
    let code = match args().and_then(run) {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(e) => {
            eprintln!("difftest: {e}");
            2
        }
    };
    std::process::exit(code);
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(13399)
}

fn run(args: Args) -> Result<bool, String> {
    let opts = ServerOptions {
        work: args.work.clone(),
        mariadb_port: free_port(),
        quarry_port: free_port(),
        quarry_bin: args.quarry_bin.clone(),
        buffer_pool: "256M".into(),
        key_buffer: "16M".into(),
        flush_log: 2,
    };
    let allow = read_allow(&args.allow)?;
    // Strings with accents go over the wire as UTF-8 (the harness's client says latin1).
    let quarry = Side::open(
        servers::start_quarry(&opts)?,
        &VARIANTS,
        &["SET NAMES utf8mb4"],
    )?;
    let maria = if args.mariadb {
        let s = servers::start_mariadb(&opts)?;
        eprintln!("difftest: {} against {}", quarry.server.version, s.version);
        // MariaDB 10.11's materialized NOT IN (partial matching) keeps rows whose
        // comparison with a NULL of the subquery is unknown (`1 NOT IN (SELECT x)` with x
        // {0, NULL} passes; the scalar form is NULL, as the standard has it): the reference
        // runs the IN-to-EXISTS strategy instead. COMPAT.md, NOT IN.
        // Its subquery cache keys a correlated subquery's results by the outer values under
        // the outer column's collation: with `s.c_bin = a.c_ci`, the row of 'abc' reuses
        // the result of 'ABC' (the same query without the cache compares under _bin, as it
        // must).
        Some(Side::open(
            s,
            &[Variant::Reference],
            &[
                "SET NAMES utf8mb4",
                "SET SESSION optimizer_switch = 'materialization=off,subquery_cache=off'",
            ],
        )?)
    } else {
        eprintln!(
            "difftest: {} (no MariaDB: oracles only)",
            quarry.server.version
        );
        None
    };
    std::fs::create_dir_all(&args.out).map_err(|e| e.to_string())?;
    let mut r = Run {
        args,
        maria,
        quarry,
        allow,
        mismatches: 0,
        allowed: 0,
        queries: 0,
        oracle_checks: 0,
        reduced: 0,
    };
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(r.args.minutes * 60.0);
    let mut rng = Rng::new(r.args.seed);
    let mut case = 0;
    while r.queries < r.args.queries && Instant::now() < deadline && r.mismatches < 50 {
        case += 1;
        let tables = schema::generate(&mut rng);
        r.case(&mut rng, case, tables, deadline)?;
    }
    let _ = std::fs::remove_dir_all(&r.args.work);
    eprintln!(
        "difftest: seed {}, {case} schemas, {} queries on {} variants{}, {} oracle checks, \
         {:.0} s: {} mismatches ({} reduced into {}), {} allowed",
        r.args.seed,
        r.queries,
        VARIANTS.len(),
        if r.maria.is_some() {
            " and MariaDB"
        } else {
            ""
        },
        r.oracle_checks,
        started.elapsed().as_secs_f64(),
        r.mismatches,
        r.reduced,
        r.args.out.display(),
        r.allowed
    );
    for a in &r.allow {
        if a.hits > 0 {
            eprintln!("  allowed {} × {} {}", a.hits, a.kind, a.value);
        }
    }
    Ok(r.mismatches == 0)
}

impl Run {
    fn case(
        &mut self,
        rng: &mut Rng,
        case: usize,
        mut tables: Vec<Table>,
        deadline: Instant,
    ) -> Result<(), String> {
        if let Some(m) = &mut self.maria {
            m.load(&tables, &[Variant::Reference])?;
        }
        if let Err(e) = self.quarry.load(&tables, &VARIANTS) {
            let m = Mismatch {
                oracle: "load",
                variant: Variant::Indexed,
                sql: e,
                expected: Outcome::Done(0),
                got: Outcome::Error(0, String::new()),
            };
            self.report(&m, None, &tables, case)?;
            return Ok(());
        }
        for step in 0..self.args.per_case {
            if self.queries >= self.args.queries || Instant::now() >= deadline {
                break;
            }
            if step % 12 == 11 {
                let mut g = Gen::new(rng, &tables);
                g.mixed = self.args.mixed;
                let sql = g.dml(step);
                if !self.dml(&sql, &mut tables, case)? {
                    return Ok(());
                }
                continue;
            }
            let mut g = Gen::new(rng, &tables);
            g.mixed = self.args.mixed;
            let sel = g.select();
            self.queries += 1;
            self.select(&sel, &tables, case)?;
        }
        Ok(())
    }

    /// One SELECT against MariaDB and every Quarry variant, then TLP and NoREC on Quarry.
    fn select(&mut self, sel: &Select, tables: &[Table], case: usize) -> Result<(), String> {
        let sql = sel.to_string();
        let ordered = sel.fully_ordered();
        let loose = sel.picks_among_equals();
        let mut found = vec![];
        let reference = match &mut self.maria {
            Some(m) => Some(m.run(0, &sql)?),
            None => None,
        };
        let mut first: Option<Outcome> = None;
        for (i, v) in VARIANTS.iter().enumerate() {
            let got = self.quarry.run(i, &sql)?;
            let (oracle, expected) = match (&reference, &first) {
                (Some(m), _) => ("MariaDB", m.clone()),
                (None, Some(f)) => ("plan", f.clone()),
                (None, None) => {
                    first = Some(got);
                    continue;
                }
            };
            if !same(&expected, &got, ordered, loose) {
                found.push(Mismatch {
                    oracle,
                    variant: *v,
                    sql: sql.clone(),
                    expected,
                    got,
                });
                // One variant's report is enough for one query.
                break;
            }
        }
        if found.is_empty() {
            self.oracles(sel, &mut found)?;
        }
        for m in found {
            self.report(&m, Some(sel), tables, case)?;
        }
        Ok(())
    }

    fn oracles(&mut self, sel: &Select, found: &mut Vec<Mismatch>) -> Result<(), String> {
        // TLP: take one WHERE conjunct as the partitioning predicate.
        if sel.partitionable() && !sel.filter.is_empty() {
            let mut base = sel.clone();
            let p = base.filter.pop().unwrap();
            base.ordered = false;
            let whole = self.quarry.run(0, &base.to_string())?;
            if matches!(whole, Outcome::Rows(_)) {
                let parts: Vec<Outcome> = check::tlp_partitions(&base, &p)
                    .iter()
                    .map(|q| self.quarry.run(0, q))
                    .collect::<Result<_, _>>()?;
                self.oracle_checks += 1;
                let joined = check::union_all(&parts);
                if joined
                    .as_ref()
                    .is_none_or(|j| !same(&whole, j, false, false))
                {
                    let [a, b, c] = check::tlp_partitions(&base, &p);
                    found.push(Mismatch {
                        oracle: "TLP",
                        variant: Variant::Indexed,
                        sql: format!("{base}\n  vs the UNION ALL of\n  {a}\n  {b}\n  {c}"),
                        expected: whole,
                        got: joined.unwrap_or_else(|| parts[0].clone()),
                    });
                    return Ok(());
                }
            }
        }
        if let Some((count, per_row)) = check::norec_pair(sel) {
            for (i, v) in VARIANTS.iter().enumerate() {
                let a = self.quarry.run(i, &count)?;
                let b = self.quarry.run(i, &per_row)?;
                self.oracle_checks += 1;
                let comparable = matches!((&a, &b), (Outcome::Rows(_), Outcome::Rows(_)));
                if comparable && !same(&a, &b, true, false) {
                    found.push(Mismatch {
                        oracle: "NoREC",
                        variant: *v,
                        sql: format!("{count}\n  vs\n  {per_row}"),
                        expected: b,
                        got: a,
                    });
                    break;
                }
            }
        }
        Ok(())
    }

    /// One DML statement everywhere, then the changed table compared. False when the
    /// sides now hold different data (the case ends).
    fn dml(&mut self, sql: &str, tables: &mut [Table], case: usize) -> Result<bool, String> {
        let reference = match &mut self.maria {
            Some(m) => Some(m.run(0, sql)?),
            None => None,
        };
        let mut outcomes = vec![];
        for i in 0..VARIANTS.len() {
            outcomes.push(self.quarry.run(i, sql)?);
        }
        let expected = reference.clone().unwrap_or_else(|| outcomes[0].clone());
        for (i, got) in outcomes.iter().enumerate() {
            if !same(&expected, got, true, false) {
                let m = Mismatch {
                    oracle: if reference.is_some() { "DML" } else { "plan" },
                    variant: VARIANTS[i],
                    sql: sql.to_string(),
                    expected: expected.clone(),
                    got: got.clone(),
                };
                self.report(&m, None, tables, case)?;
                return Ok(false);
            }
        }
        // The tables' contents, everywhere; the in-memory copy follows the reference.
        for ti in 0..tables.len() {
            let q = format!("SELECT * FROM {} ORDER BY pk", tables[ti].name);
            let want = match &mut self.maria {
                Some(m) => m.run(0, &q)?,
                None => self.quarry.run(0, &q)?,
            };
            for (i, v) in VARIANTS.iter().enumerate() {
                let got = self.quarry.run(i, &q)?;
                if !same(&want, &got, true, false) {
                    let m = Mismatch {
                        oracle: "DML",
                        variant: *v,
                        sql: format!("{sql}\n  then {q}"),
                        expected: want.clone(),
                        got,
                    };
                    self.report(&m, None, tables, case)?;
                    return Ok(false);
                }
            }
            if let Outcome::Rows(rows) = want {
                tables[ti].rows = rows
                    .iter()
                    .map(|r| {
                        r.iter()
                            .map(|v| match v {
                                None => "NULL".to_string(),
                                Some(s) => {
                                    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
                                }
                            })
                            .collect()
                    })
                    .collect();
            }
        }
        Ok(true)
    }

    fn report(
        &mut self,
        m: &Mismatch,
        sel: Option<&Select>,
        tables: &[Table],
        case: usize,
    ) -> Result<(), String> {
        if m.allowed_by(&mut self.allow) {
            self.allowed += 1;
            return Ok(());
        }
        self.mismatches += 1;
        let n = self.mismatches;
        eprintln!(
            "\nMISMATCH {n} ({} oracle, Quarry {}), seed {} schema {case}:\n  {}\n  expected: {}\n  quarry:   {}",
            m.oracle,
            m.variant.db(),
            self.args.seed,
            m.sql,
            m.expected.show().replace('\n', "\n  "),
            m.got.show().replace('\n', "\n  ")
        );
        let header = format!(
            "quarry-difftest --seed {} (schema {case}): {} oracle, Quarry's {} variant.\n\
             Expected (MariaDB 10.11 where it ran): {}\nQuarry gave: {}",
            self.args.seed,
            m.oracle,
            m.variant.db(),
            m.expected.show(),
            m.got.show()
        );
        let file = self.args.out.join(format!("mismatch-{n}.slt"));
        let text = match (sel, m.oracle) {
            (Some(sel), "MariaDB") if self.reduced < 20 => {
                self.reduced += 1;
                let (small, tabs) = self.reduce(sel, tables, m.variant)?;
                let (expected, got) = self.both_on(&small, &tabs, m.variant)?;
                eprintln!(
                    "  reduced: {small}\n  expected: {}\n  quarry:   {}",
                    expected.show().replace('\n', "\n  "),
                    got.show().replace('\n', "\n  ")
                );
                let header = format!("{header}\nReduced, Quarry gives: {}", got.show());
                reduce::slt(&header, &small, &tabs, m.variant, &expected)
            }
            (Some(sel), _) => reduce::slt(&header, sel, tables, m.variant, &m.expected),
            (None, _) => {
                let mut t = String::new();
                for l in header.lines() {
                    t.push_str(&format!("# {l}\n"));
                }
                t.push_str(&format!("# statement: {}\n", m.sql.replace('\n', "\n# ")));
                for tb in tables {
                    for stmt in tb.load(m.variant) {
                        t.push_str(&format!("# {stmt}\n"));
                    }
                }
                t
            }
        };
        std::fs::write(&file, text).map_err(|e| e.to_string())?;
        eprintln!("  written: {}", file.display());
        Ok(())
    }

    /// Shrink a query that Quarry's `variant` answers differently from MariaDB, in a
    /// scratch database on each side (the case's own databases stay as they are).
    fn reduce(
        &mut self,
        sel: &Select,
        tables: &[Table],
        variant: Variant,
    ) -> Result<(Select, Vec<Table>), String> {
        let vi = VARIANTS.iter().position(|v| *v == variant).unwrap();
        let maria = self.maria.as_mut().unwrap();
        let quarry = &mut self.quarry;
        let mut loaded: Option<Vec<String>> = None;
        let mut still = |s: &Select, ts: &[Table]| -> Result<bool, String> {
            let key: Vec<String> = ts
                .iter()
                .map(|t| format!("{}{:?}", t.create(variant), t.rows))
                .collect();
            if loaded.as_ref() != Some(&key) {
                load_into(maria, 0, ts, Variant::Reference)?;
                load_into(quarry, vi, ts, variant)?;
                loaded = Some(key);
            }
            let sql = s.to_string();
            let a = maria.run(0, &sql)?;
            let b = quarry.run(vi, &sql)?;
            Ok(!same(&a, &b, s.fully_ordered(), s.picks_among_equals()))
        };
        let r = reduce::reduce(sel.clone(), tables.to_vec(), 400, &mut still);
        scratch(self.maria.as_mut().unwrap(), 0, false)?;
        scratch(&mut self.quarry, vi, false)?;
        r
    }

    /// MariaDB's and Quarry's answers to `sel` over `tables` (loaded into scratch
    /// databases).
    fn both_on(
        &mut self,
        sel: &Select,
        tables: &[Table],
        variant: Variant,
    ) -> Result<(Outcome, Outcome), String> {
        let vi = VARIANTS.iter().position(|v| *v == variant).unwrap();
        let sql = sel.to_string();
        let m = self.maria.as_mut().unwrap();
        load_into(m, 0, tables, Variant::Reference)?;
        let expected = m.run(0, &sql)?;
        scratch(m, 0, false)?;
        let q = &mut self.quarry;
        load_into(q, vi, tables, variant)?;
        let got = q.run(vi, &sql)?;
        scratch(q, vi, false)?;
        Ok((expected, got))
    }
}

/// Switch connection `i` of `side` into (or back out of) the scratch database `dr`.
fn scratch(side: &mut Side, i: usize, into: bool) -> Result<(), String> {
    if into {
        side.run(i, "DROP DATABASE IF EXISTS dr")?;
        side.run(i, &format!("CREATE DATABASE dr {}", runner::UTF8MB4))?;
        side.use_db(i, "dr")
    } else {
        side.use_db(i, VARIANTS[i].db())?;
        side.run(i, "DROP DATABASE IF EXISTS dr").map(|_| ())
    }
}

/// `tables` in a fresh scratch database `dr`, which connection `i` of `side` is then in.
fn load_into(side: &mut Side, i: usize, tables: &[Table], variant: Variant) -> Result<(), String> {
    scratch(side, i, true)?;
    for t in tables {
        for stmt in t.load(variant) {
            side.run(i, &stmt)?;
        }
    }
    Ok(())
}
