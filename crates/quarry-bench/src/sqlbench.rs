//! An sql-bench-like suite: operations named and shaped after sql-bench's (seed 000's
//! table), with counts scaled for this machine, run through the MySQL protocol.

use crate::report::SecondsTable;
use crate::seedgen::Rng;
use quarry_testkit::client::{Conn, ConnectOptions};
use quarry_testkit::servers::Server;
use std::time::Instant;

/// Rows of the main table `bench1` (scaled like the counts).
const ROWS: u64 = 100_000;
const WISC_ROWS: u64 = 10_000;

pub struct Suite<'a> {
    pub label: String,
    pub server: &'a Server,
    pub engine: String,
    pub scale: f64,
}

struct Test {
    name: &'static str,
    base_count: u64,
    run: fn(&mut Ctx, u64) -> Result<(), String>,
}

const TESTS: &[Test] = &[
    Test {
        name: "connect",
        base_count: 35_000,
        run: connect,
    },
    Test {
        name: "connect+select_1_row",
        base_count: 25_000,
        run: connect_select,
    },
    Test {
        name: "select_1_row",
        base_count: 150_000,
        run: select_1_row,
    },
    Test {
        name: "insert",
        base_count: ROWS,
        run: insert,
    },
    Test {
        name: "select_key",
        base_count: 100_000,
        run: select_key,
    },
    Test {
        name: "select_key_prefix",
        base_count: 100_000,
        run: select_key_prefix,
    },
    Test {
        name: "select_range",
        base_count: 8_000,
        run: select_range,
    },
    Test {
        name: "select_group",
        base_count: 150,
        run: select_group,
    },
    Test {
        name: "select_distinct",
        base_count: 500,
        run: select_distinct,
    },
    Test {
        name: "count_distinct",
        base_count: 280,
        run: count_distinct,
    },
    Test {
        name: "order_by_big",
        base_count: 36,
        run: order_by_big,
    },
    Test {
        name: "outer_join",
        base_count: 30,
        run: outer_join,
    },
    Test {
        name: "wisc_benchmark (joins)",
        base_count: 80,
        run: wisconsin,
    },
    Test {
        name: "insert_duplicates",
        base_count: 100_000,
        run: insert_duplicates,
    },
    Test {
        name: "multiple_value_insert",
        base_count: 1_000_000,
        run: multiple_value_insert,
    },
    Test {
        name: "update_with_key",
        base_count: 80_000,
        run: update_with_key,
    },
    Test {
        name: "update_of_key",
        base_count: 70_000,
        run: update_of_key,
    },
    Test {
        name: "delete_key",
        base_count: 70_000,
        run: delete_key,
    },
    Test {
        name: "create+drop",
        base_count: 3_000,
        run: create_drop,
    },
    Test {
        name: "alter_table_add",
        base_count: 200,
        run: alter_table_add,
    },
];

#[cfg(test)]
pub fn test_names() -> Vec<&'static str> {
    TESTS.iter().map(|t| t.name).collect()
}

pub fn scaled(base: u64, scale: f64) -> u64 {
    ((base as f64 * scale).round() as u64).max(1)
}

struct Ctx<'a> {
    suite: &'a Suite<'a>,
    conn: Conn,
    rng: Rng,
    rows: u64,
}

impl Ctx<'_> {
    fn q(&mut self, sql: &str) -> Result<usize, String> {
        self.conn
            .query(sql)
            .map(|r| r.rows.len())
            .map_err(|e| format!("{e} [{}]", short(sql)))
    }

    fn opts(&self) -> ConnectOptions {
        ConnectOptions::new(self.suite.server.port).db("sqlbench")
    }

    fn engine(&self) -> &str {
        &self.suite.engine
    }
}

fn short(sql: &str) -> String {
    sql.chars().take(80).collect()
}

/// Run every test in order; each test's time lands in `table` under the suite's label.
pub fn run(suite: &Suite, table: &mut SecondsTable, progress: &dyn Fn(&str)) -> Result<(), String> {
    let mut admin = suite.server.connect(None)?;
    admin
        .exec("DROP DATABASE IF EXISTS sqlbench")
        .and_then(|_| admin.exec("CREATE DATABASE sqlbench"))
        .map_err(|e| format!("{}: {e}", suite.label))?;
    admin.quit();
    let opts = ConnectOptions::new(suite.server.port).db("sqlbench");
    let mut ctx = Ctx {
        suite,
        conn: Conn::connect(&opts).map_err(|e| e.to_string())?,
        rng: Rng::new(4711),
        rows: scaled(ROWS, suite.scale),
    };
    for t in TESTS {
        let count = if t.name == "insert" {
            ctx.rows
        } else {
            scaled(t.base_count, suite.scale)
        };
        progress(&format!("{}: {} ({count})", suite.label, t.name));
        let start = Instant::now();
        let res = (t.run)(&mut ctx, count);
        let secs = start.elapsed().as_secs_f64();
        match res {
            Ok(()) => table.set(t.name, Some(count), &suite.label, Some(secs)),
            Err(e) => {
                eprintln!("  {}: {}: {e}", suite.label, t.name);
                table.set(t.name, Some(count), &suite.label, None);
                table.note(t.name, &suite.label, "failed");
                // A failed test may have left the connection mid-result.
                ctx.conn = Conn::connect(&opts).map_err(|e| e.to_string())?;
            }
        }
    }
    ctx.conn
        .exec("DROP DATABASE sqlbench")
        .map_err(|e| e.to_string())?;
    Ok(())
}

fn connect(ctx: &mut Ctx, n: u64) -> Result<(), String> {
    let o = ctx.opts();
    for _ in 0..n {
        Conn::connect(&o).map_err(|e| e.to_string())?.quit();
    }
    Ok(())
}

fn connect_select(ctx: &mut Ctx, n: u64) -> Result<(), String> {
    let o = ctx.opts();
    for _ in 0..n {
        let mut c = Conn::connect(&o).map_err(|e| e.to_string())?;
        c.query("SELECT 1").map_err(|e| e.to_string())?;
        c.quit();
    }
    Ok(())
}

/// Run `n` queries, each made by `sql` from the suite's random stream and the row count.
fn repeat(ctx: &mut Ctx, n: u64, sql: impl Fn(&mut Rng, u64) -> String) -> Result<(), String> {
    for _ in 0..n {
        let q = sql(&mut ctx.rng, ctx.rows);
        ctx.q(&q)?;
    }
    Ok(())
}

fn select_1_row(ctx: &mut Ctx, n: u64) -> Result<(), String> {
    repeat(ctx, n, |_, _| "SELECT 1".into())
}

/// bench1 row `i`: four rows per `id`, a unique `id3`, 100 groups.
fn bench1_values(i: u64, rows: u64) -> String {
    format!(
        "({},{},{},{},'ABCDEFGHIJKLMNOPQRST{i}')",
        i / 4,
        i % 4,
        (i * 7919) % rows,
        i % 100
    )
}

fn insert(ctx: &mut Ctx, n: u64) -> Result<(), String> {
    let e = ctx.engine().to_string();
    ctx.q(&format!(
        "CREATE TABLE bench1 (id int NOT NULL, id2 int NOT NULL, id3 int NOT NULL, \
         grp int NOT NULL, dummy1 char(30), PRIMARY KEY (id, id2), KEY index_id3 (id3)) ENGINE={e}"
    ))?;
    // Rows arrive in a scattered order, as sql-bench's insert test does.
    for k in 0..n {
        let i = (k * 7) % n;
        ctx.q(&format!(
            "INSERT INTO bench1 VALUES {}",
            bench1_values(i, n)
        ))?;
    }
    Ok(())
}

fn select_key(ctx: &mut Ctx, n: u64) -> Result<(), String> {
    for _ in 0..n {
        let i = ctx.rng.below(ctx.rows);
        let got = ctx.q(&format!(
            "SELECT * FROM bench1 WHERE id={} AND id2={}",
            i / 4,
            i % 4
        ))?;
        if got != 1 {
            return Err(format!("select_key found {got} rows for row {i}"));
        }
    }
    Ok(())
}

fn select_key_prefix(ctx: &mut Ctx, n: u64) -> Result<(), String> {
    repeat(ctx, n, |rng, rows| {
        format!("SELECT * FROM bench1 WHERE id={}", rng.below(rows / 4))
    })
}

fn select_range(ctx: &mut Ctx, n: u64) -> Result<(), String> {
    repeat(ctx, n, |rng, rows| {
        let a = rng.below(rows / 4);
        format!(
            "SELECT id, id2, dummy1 FROM bench1 WHERE id BETWEEN {a} AND {}",
            a + 250
        )
    })
}

fn select_group(ctx: &mut Ctx, n: u64) -> Result<(), String> {
    repeat(ctx, n, |_, _| {
        "SELECT grp, count(*), sum(id3) FROM bench1 GROUP BY grp".into()
    })
}

fn select_distinct(ctx: &mut Ctx, n: u64) -> Result<(), String> {
    repeat(ctx, n, |rng, rows| {
        let a = rng.below(rows / 4);
        format!(
            "SELECT DISTINCT grp FROM bench1 WHERE id BETWEEN {a} AND {}",
            a + 5000
        )
    })
}

fn count_distinct(ctx: &mut Ctx, n: u64) -> Result<(), String> {
    repeat(ctx, n, |_, _| {
        "SELECT count(DISTINCT grp) FROM bench1".into()
    })
}

fn order_by_big(ctx: &mut Ctx, n: u64) -> Result<(), String> {
    for _ in 0..n {
        let got = ctx.q("SELECT id, id2, id3, dummy1 FROM bench1 ORDER BY dummy1 DESC")?;
        if got as u64 != ctx.rows {
            return Err(format!("order_by_big returned {got} rows"));
        }
    }
    Ok(())
}

fn outer_join(ctx: &mut Ctx, n: u64) -> Result<(), String> {
    let e = ctx.engine().to_string();
    ctx.q(&format!(
        "CREATE TABLE bench2 (id int NOT NULL PRIMARY KEY, name char(20)) ENGINE={e}"
    ))?;
    let half = ctx.rows / 2;
    for chunk in (0..half).collect::<Vec<_>>().chunks(1000) {
        let vals: Vec<String> = chunk
            .iter()
            .map(|i| format!("({},'name{i}')", i * 2))
            .collect();
        ctx.q(&format!("INSERT INTO bench2 VALUES {}", vals.join(",")))?;
    }
    for _ in 0..n {
        ctx.q(
            "SELECT count(*) FROM bench1 a LEFT JOIN bench2 b ON a.id3 = b.id WHERE b.id IS NULL",
        )?;
    }
    Ok(())
}

fn wisconsin(ctx: &mut Ctx, n: u64) -> Result<(), String> {
    let e = ctx.engine().to_string();
    let rows = scaled(WISC_ROWS, ctx.suite.scale.max(0.1));
    for t in ["tenk1", "tenk2"] {
        ctx.q(&format!(
            "CREATE TABLE {t} (unique1 int NOT NULL, unique2 int NOT NULL PRIMARY KEY, two int, \
             four int, ten int, twenty int, hundred int, thousand int, stringu1 char(52)) ENGINE={e}"
        ))?;
        ctx.q(&format!("CREATE INDEX {t}_u1 ON {t} (unique1)"))?;
        let mut order: Vec<u64> = (0..rows).collect();
        for i in (1..order.len()).rev() {
            let j = ctx.rng.below(i as u64 + 1) as usize;
            order.swap(i, j);
        }
        for chunk in (0..rows).collect::<Vec<_>>().chunks(1000) {
            let vals: Vec<String> = chunk
                .iter()
                .map(|&u2| {
                    let u1 = order[u2 as usize];
                    format!(
                        "({u1},{u2},{},{},{},{},{},{},'W{u1:06}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx')",
                        u1 % 2,
                        u1 % 4,
                        u1 % 10,
                        u1 % 20,
                        u1 % 100,
                        u1 % 1000
                    )
                })
                .collect();
            ctx.q(&format!("INSERT INTO {t} VALUES {}", vals.join(",")))?;
        }
    }
    let tenth = rows / 10;
    let queries = [
        format!("SELECT * FROM tenk1 WHERE unique2 BETWEEN 0 AND {}", rows / 100),
        format!(
            "SELECT count(*) FROM tenk1 t1, tenk2 t2 WHERE t1.unique2 = t2.unique2 AND t2.unique2 < {tenth}"
        ),
        format!(
            "SELECT count(*) FROM tenk1 t1 JOIN tenk2 t2 ON t1.unique1 = t2.unique1 WHERE t1.unique2 < {tenth}"
        ),
        "SELECT t1.ten, count(*) FROM tenk1 t1 JOIN tenk2 t2 ON t1.unique1 = t2.unique1 \
         WHERE t2.hundred < 10 GROUP BY t1.ten"
            .to_string(),
        "SELECT t1.twenty, min(t2.thousand) FROM tenk1 t1 JOIN tenk2 t2 ON t1.unique2 = t2.unique2 \
         GROUP BY t1.twenty ORDER BY t1.twenty"
            .to_string(),
    ];
    for _ in 0..n {
        for q in &queries {
            ctx.q(q)?;
        }
    }
    Ok(())
}

fn insert_duplicates(ctx: &mut Ctx, n: u64) -> Result<(), String> {
    for _ in 0..n {
        let i = ctx.rng.below(ctx.rows);
        match ctx.conn.query(&format!(
            "INSERT INTO bench1 VALUES {}",
            bench1_values(i, ctx.rows)
        )) {
            Err(e) if e.code == 1062 => {}
            Err(e) => return Err(e.to_string()),
            Ok(_) => return Err(format!("duplicate of row {i} was accepted")),
        }
    }
    Ok(())
}

fn multiple_value_insert(ctx: &mut Ctx, n: u64) -> Result<(), String> {
    let e = ctx.engine().to_string();
    ctx.q(&format!(
        "CREATE TABLE bench_mv (id int NOT NULL PRIMARY KEY, id2 int NOT NULL, dummy1 char(30)) ENGINE={e}"
    ))?;
    let mut i = 0;
    while i < n {
        let end = (i + 1000).min(n);
        let vals: Vec<String> = (i..end)
            .map(|k| format!("({k},{},'MULTIPLE{k}')", k % 13))
            .collect();
        ctx.q(&format!("INSERT INTO bench_mv VALUES {}", vals.join(",")))?;
        i = end;
    }
    Ok(())
}

fn update_with_key(ctx: &mut Ctx, n: u64) -> Result<(), String> {
    for k in 0..n {
        let i = ctx.rng.below(ctx.rows);
        ctx.q(&format!(
            "UPDATE bench1 SET dummy1='updated{k}' WHERE id={} AND id2={}",
            i / 4,
            i % 4
        ))?;
    }
    Ok(())
}

fn update_of_key(ctx: &mut Ctx, n: u64) -> Result<(), String> {
    // Moves id3 (an indexed column) to values above every existing one.
    for k in 0..n {
        let i = ctx.rng.below(ctx.rows);
        ctx.q(&format!(
            "UPDATE bench1 SET id3={} WHERE id={} AND id2={}",
            ctx.rows + k,
            i / 4,
            i % 4
        ))?;
    }
    Ok(())
}

fn delete_key(ctx: &mut Ctx, n: u64) -> Result<(), String> {
    let n = n.min(ctx.rows);
    for k in 0..n {
        let i = (k * 7919) % ctx.rows;
        ctx.q(&format!(
            "DELETE FROM bench1 WHERE id={} AND id2={}",
            i / 4,
            i % 4
        ))?;
    }
    Ok(())
}

fn create_drop(ctx: &mut Ctx, n: u64) -> Result<(), String> {
    let e = ctx.engine().to_string();
    for _ in 0..n {
        ctx.q(&format!(
            "CREATE TABLE bench_cd (i int NOT NULL PRIMARY KEY, s char(10), KEY (s)) ENGINE={e}"
        ))?;
        ctx.q("DROP TABLE bench_cd")?;
    }
    Ok(())
}

fn alter_table_add(ctx: &mut Ctx, n: u64) -> Result<(), String> {
    let e = ctx.engine().to_string();
    ctx.q(&format!(
        "CREATE TABLE bench_alter (i int NOT NULL PRIMARY KEY, s char(10)) ENGINE={e}"
    ))?;
    let rows = scaled(10_000, ctx.suite.scale.max(0.1));
    for chunk in (0..rows).collect::<Vec<_>>().chunks(1000) {
        let vals: Vec<String> = chunk.iter().map(|i| format!("({i},'s{i}')")).collect();
        ctx.q(&format!(
            "INSERT INTO bench_alter VALUES {}",
            vals.join(",")
        ))?;
    }
    for k in 0..n {
        ctx.q(&format!(
            "ALTER TABLE bench_alter ADD COLUMN c{k} int DEFAULT {k}"
        ))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_scale_and_never_reach_zero() {
        assert_eq!(scaled(10_000, 0.1), 1_000);
        assert_eq!(scaled(3, 0.1), 1);
        let names = test_names();
        for required in [
            "connect",
            "connect+select_1_row",
            "select_1_row",
            "select_key",
            "select_key_prefix",
            "select_range",
            "select_group",
            "select_distinct",
            "count_distinct",
            "order_by_big",
            "outer_join",
            "insert",
            "insert_duplicates",
            "multiple_value_insert",
            "update_with_key",
            "update_of_key",
            "delete_key",
            "create+drop",
            "alter_table_add",
        ] {
            assert!(names.contains(&required), "{required} missing");
        }
    }

    #[test]
    fn bench1_keys_are_unique_and_id3_is_a_permutation() {
        let rows = 1000;
        let mut keys = std::collections::HashSet::new();
        let mut id3 = std::collections::HashSet::new();
        for i in 0..rows {
            let v = bench1_values(i, rows);
            let f: Vec<&str> = v
                .trim_matches(|c| c == '(' || c == ')')
                .split(',')
                .collect();
            assert!(keys.insert((f[0].to_string(), f[1].to_string())));
            assert!(id3.insert(f[2].to_string()));
        }
        // dummy1 is CHAR(30): strict mode rejects longer values on every server.
        let longest = bench1_values(9_999_999, 10_000_000);
        let dummy = longest
            .rsplit(',')
            .next()
            .unwrap()
            .trim_matches(|c| c == '\'' || c == ')');
        assert!(dummy.len() <= 30, "{dummy}");
    }
}
