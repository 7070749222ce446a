//! Random inserts, updates and deletes go to a table with indexes (unique, composite,
//! string with collation) and to the same table without any: every query the optimizer
//! may answer through an index (lookups, ranges, index-only counts, MIN/MAX, ORDER BY …
//! LIMIT in index order, index nested-loop joins) must give what full scans of the plain
//! table give, before and after a restart, and CHECK TABLE must find the indexes in step.

mod common;

use common::rows;
use quarry_core::quarry_common::Value;
use quarry_core::{Database, Output, Session};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn a_value(r: &mut Rng) -> String {
    if r.below(10) == 0 {
        "NULL".into()
    } else {
        r.below(60).to_string()
    }
}

/// Strings that collide under the case-insensitive collation now and then.
fn b_value(r: &mut Rng) -> String {
    let base = format!(
        "{}{}",
        if r.below(2) == 0 { "k" } else { "K" },
        r.below(400)
    );
    if r.below(12) == 0 {
        "NULL".into()
    } else if r.below(5) == 0 {
        format!("'{base} '")
    } else {
        format!("'{base}'")
    }
}

fn d_value(r: &mut Rng) -> String {
    format!("{}.{:02}", r.below(50), r.below(100))
}

fn check(s: &mut Session) {
    let out = rows(s, "CHECK TABLE ix");
    let last = out.last().unwrap();
    assert_eq!(last[3], Value::Str("OK".into()), "{out:?}");
}

/// Run `sql` on `ix` first; if it succeeds, run it on `plain` too (a unique-key error on
/// `ix` must leave it unchanged, which the comparisons then check).
fn both(s: &mut Session, sql: &str) {
    match s.query(&sql.replace("{t}", "ix")) {
        Ok(_) => {
            s.query(&sql.replace("{t}", "plain"))
                .unwrap_or_else(|e| panic!("{sql} on plain: {e:?}"));
        }
        Err(e) => assert_eq!(e.code, 1062, "{sql}: {e:?}"),
    }
}

fn queries(r: &mut Rng) -> Vec<String> {
    let (a, a2) = (r.below(60), r.below(60));
    let (lo, hi) = (a.min(a2), a.max(a2));
    let b = b_value(r);
    let b2 = b_value(r);
    vec![
        format!("SELECT id, a, b, d FROM {{t}} WHERE a = {a} ORDER BY id"),
        format!("SELECT id, a FROM {{t}} WHERE a BETWEEN {lo} AND {hi} ORDER BY id"),
        format!("SELECT id FROM {{t}} WHERE a IN ({a}, {a2}, NULL) OR a > 57 ORDER BY id"),
        format!("SELECT id, b FROM {{t}} WHERE b = {b} ORDER BY id"),
        format!("SELECT id, b FROM {{t}} WHERE b >= {b} AND b < {b2} ORDER BY id"),
        format!("SELECT count(*) FROM {{t}} WHERE a = {a}"),
        format!("SELECT count(a), count(*) FROM {{t}} WHERE a < {a}"),
        "SELECT count(*) FROM {t}".into(),
        "SELECT min(a), max(a) FROM {t}".into(),
        "SELECT min(a) FROM {t}".into(),
        "SELECT max(b) FROM {t}".into(),
        format!("SELECT max(d) FROM {{t}} WHERE a = {a}"),
        "SELECT a FROM {t} ORDER BY a LIMIT 7".into(),
        "SELECT a FROM {t} ORDER BY a DESC LIMIT 5".into(),
        format!("SELECT a FROM {{t}} WHERE a > {a} ORDER BY a LIMIT 4"),
        "SELECT id, a, b FROM {t} ORDER BY id DESC LIMIT 3".into(),
        "SELECT upper(b) FROM {t} WHERE b IS NOT NULL ORDER BY b LIMIT 4".into(),
        format!("SELECT a, d FROM {{t}} WHERE a = {a} ORDER BY d LIMIT 3"),
        format!("SELECT a, d FROM {{t}} WHERE a = {a} ORDER BY d DESC LIMIT 2"),
        format!(
            "SELECT x.id, y.id, y.b FROM {{t}} x JOIN {{t}} y ON y.id = x.a \
             WHERE x.d < {lo} ORDER BY x.id, y.id"
        ),
        format!(
            "SELECT x.id, y.id FROM {{t}} x LEFT JOIN {{t}} y ON y.a = x.id \
             WHERE x.id < {hi} ORDER BY x.id, y.id"
        ),
        format!(
            "SELECT x.id, y.d FROM {{t}} x JOIN {{t}} y ON y.id = x.a AND y.b > {b} \
             WHERE x.id BETWEEN {lo} AND {lo} + 15 ORDER BY x.id"
        ),
        format!("SELECT a, count(*) FROM {{t}} WHERE a >= {lo} GROUP BY a ORDER BY a"),
        // DESC key parts: ranges trade ends, order comes from reading forwards or back.
        format!("SELECT id, d FROM {{t}} WHERE a = {a} AND d > {lo}.5 ORDER BY id"),
        format!("SELECT id, d FROM {{t}} WHERE a = {a} AND d BETWEEN {lo} AND {hi} ORDER BY id"),
        format!("SELECT d FROM {{t}} WHERE d < {hi} ORDER BY d DESC LIMIT 4"),
        format!("SELECT d FROM {{t}} WHERE d >= {lo} ORDER BY d LIMIT 4"),
        format!("SELECT id FROM {{t}} WHERE d IN ({lo}.25, {hi}.5) OR d IS NULL ORDER BY id"),
        format!("SELECT count(*) FROM {{t}} WHERE a IN ({a}, {a2}) OR a BETWEEN {lo} AND {hi}"),
        format!("SELECT count(*) FROM {{t}} WHERE d > {lo} AND d <= {hi}.5"),
        "SELECT min(d) FROM {t}".into(),
        "SELECT max(d) FROM {t}".into(),
        format!("SELECT count(*), max(x.id) FROM (SELECT id, a, b FROM {{t}} WHERE a > {lo}) x"),
    ]
}

fn compare(s: &mut Session, r: &mut Rng, step: usize) {
    for q in queries(r) {
        let want = rows(s, &q.replace("{t}", "plain"));
        let got = rows(s, &q.replace("{t}", "ix"));
        // The string case of b may differ between tables only in rows the other lacks,
        // so rows are compared as printed.
        assert_eq!(
            format!("{got:?}"),
            format!("{want:?}"),
            "step {step}: {q}\nplan:\n{}",
            match s
                .query(&format!("EXPLAIN FORMAT=TREE {}", q.replace("{t}", "ix")))
                .unwrap()
                .pop()
            {
                Some(Output::Rows { rows, .. }) => rows[0][0].to_string(),
                _ => String::new(),
            }
        );
    }
}

#[test]
fn random_operations_agree_with_a_table_without_indexes() {
    random_operations("InnoDB");
}

/// Column tables' indexes are in memory and rebuilt at each open: the restarts check that.
#[test]
fn random_operations_agree_with_a_table_without_indexes_on_column_tables() {
    random_operations("COLUMN");
}

fn random_operations(engine: &str) {
    let dir = std::env::temp_dir().join(format!("quarry-ixrandom-{engine}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    let mut next_id = 1u64;
    for round in 0..3 {
        let db = Database::open(&dir).unwrap();
        let mut s = db.session("root", "localhost");
        if round == 0 {
            s.query("CREATE DATABASE d").unwrap();
            s.query("USE d").unwrap();
            s.query(&format!(
                "CREATE TABLE ix (id INT PRIMARY KEY, a INT, b VARCHAR(8), d DECIMAL(6,2), \
                 UNIQUE KEY ub (b), KEY ka (a), KEY kad (a, d DESC), KEY kd (d DESC)) \
                 ENGINE={engine}",
            ))
            .unwrap();
            s.query("CREATE TABLE plain (id INT, a INT, b VARCHAR(8), d DECIMAL(6,2))")
                .unwrap();
        } else {
            s.query("USE d").unwrap();
            // What the restart kept must still agree.
            compare(&mut s, &mut r, round * 10_000);
            check(&mut s);
        }
        for step in 0..1500 {
            match r.below(20) {
                0..=8 => {
                    let id = if r.below(20) == 0 && next_id > 1 {
                        r.below(next_id) + 1 // a duplicate primary key now and then
                    } else {
                        next_id += 1;
                        next_id - 1
                    };
                    let sql = format!(
                        "INSERT INTO {{t}} VALUES ({id}, {}, {}, {})",
                        a_value(&mut r),
                        b_value(&mut r),
                        d_value(&mut r)
                    );
                    both(&mut s, &sql);
                }
                9..=11 => {
                    let id = r.below(next_id) + 1;
                    let sql = format!(
                        "UPDATE {{t}} SET a = {}, d = {} WHERE id = {id}",
                        a_value(&mut r),
                        d_value(&mut r)
                    );
                    both(&mut s, &sql);
                }
                12 => {
                    let id = r.below(next_id) + 1;
                    both(
                        &mut s,
                        &format!("UPDATE {{t}} SET b = {} WHERE id = {id}", b_value(&mut r)),
                    );
                }
                13 => {
                    let a = r.below(60);
                    both(&mut s, &format!("UPDATE {{t}} SET d = d + 1 WHERE a = {a}"));
                }
                14..=16 => {
                    let id = r.below(next_id) + 1;
                    both(&mut s, &format!("DELETE FROM {{t}} WHERE id = {id}"));
                }
                17 => {
                    let a = r.below(60);
                    both(
                        &mut s,
                        &format!("DELETE FROM {{t}} WHERE a BETWEEN {a} AND {}", a + 1),
                    );
                }
                _ => {
                    // Several rows at once; a duplicate fails the whole statement.
                    let vals: Vec<String> = (0..5)
                        .map(|_| {
                            next_id += 1;
                            format!(
                                "({}, {}, {}, {})",
                                next_id - 1,
                                a_value(&mut r),
                                b_value(&mut r),
                                d_value(&mut r)
                            )
                        })
                        .collect();
                    both(
                        &mut s,
                        &format!("INSERT INTO {{t}} VALUES {}", vals.join(",")),
                    );
                }
            }
            if step % 150 == 149 {
                compare(&mut s, &mut r, round * 10_000 + step);
            }
            if step == 700 {
                s.query("ANALYZE TABLE ix").unwrap();
            }
        }
        check(&mut s);
        // The index paths the comparisons are meant to cover are the ones chosen.
        for (q, path) in [
            (
                "SELECT count(*) FROM ix WHERE a = 5",
                "Covering index lookup on ix using ka",
            ),
            (
                "SELECT min(a) FROM ix",
                "Covering index scan on ix using ka",
            ),
            (
                "SELECT a FROM ix ORDER BY a DESC LIMIT 5",
                "using ka (reverse)",
            ),
            (
                "SELECT max(b) FROM ix",
                "Index scan on ix using ub (reverse)",
            ),
            (
                "SELECT a, d FROM ix WHERE a = 5 ORDER BY d LIMIT 3",
                "using kad (ix.a = 5) (reverse)",
            ),
            (
                "SELECT a, d FROM ix WHERE a = 5 ORDER BY d DESC LIMIT 3",
                "Covering index lookup on ix using kad (ix.a = 5)  (rows",
            ),
            (
                "SELECT max(d) FROM ix",
                "Covering index scan on ix using kd",
            ),
            (
                "SELECT x.id, y.id FROM ix x JOIN ix y ON y.id = x.a WHERE x.id < 20",
                "Single-row index lookup on y using PRIMARY",
            ),
        ] {
            let plan = rows(&mut s, &format!("EXPLAIN FORMAT=TREE {q}"))[0][0].to_string();
            assert!(plan.contains(path), "{q}:\n{plan}");
        }
        drop(s);
        drop(db);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
