//! Joins of up to five tables, written with commas or `JOIN … ON` in random orders with
//! random equality and range conditions, must return exactly the rows a brute-force
//! nested loop over the same data returns, whatever order and join methods the optimizer
//! picks (hash, index nested-loop, nested loop).

mod common;

use common::{fresh_db, rows};

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

const TABLES: usize = 5;
const COLS: [&str; 3] = ["id", "x", "y"];

#[test]
fn reordered_joins_return_what_a_nested_loop_returns() {
    let (dir, db) = fresh_db("joinorder");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE d; USE d").unwrap();
    let mut r = Rng(0x5eed);
    // data[t][row] = [id, x, y]; None is NULL.
    let mut data: Vec<Vec<[Option<i64>; 3]>> = vec![];
    for t in 0..TABLES {
        // Table sizes differ so the cost model has something to choose from; x is indexed.
        s.query(&format!(
            "CREATE TABLE t{t} (id INT PRIMARY KEY, x INT, y INT, KEY kx (x))"
        ))
        .unwrap();
        let n = [4, 40, 12, 25, 8][t];
        let mut rows_t = vec![];
        let mut values = vec![];
        for id in 0..n {
            let v = |r: &mut Rng| (r.below(8) != 0).then(|| r.below(9) as i64);
            let (x, y) = (v(&mut r), v(&mut r));
            let sql = |o: Option<i64>| o.map_or("NULL".to_string(), |v| v.to_string());
            values.push(format!("({id}, {}, {})", sql(x), sql(y)));
            rows_t.push([Some(id as i64), x, y]);
        }
        s.query(&format!("INSERT INTO t{t} VALUES {}", values.join(",")))
            .unwrap();
        data.push(rows_t);
    }
    s.query("ANALYZE TABLE t0, t1, t2, t3, t4").unwrap();
    for q in 0..60 {
        // A random chain of 2..=5 distinct tables, each joined to an earlier one.
        let k = 2 + r.below(TABLES as u64 - 1) as usize;
        let mut picked: Vec<usize> = vec![];
        while picked.len() < k {
            let t = r.below(TABLES as u64) as usize;
            if !picked.contains(&t) {
                picked.push(t);
            }
        }
        // (table a, col a, table b, col b, op) over positions in `picked`.
        let mut conds: Vec<(usize, usize, usize, usize, &str)> = vec![];
        for i in 1..k {
            let j = r.below(i as u64) as usize;
            let op = ["=", "=", "=", "<"][r.below(4) as usize];
            conds.push((j, r.below(3) as usize, i, r.below(3) as usize, op));
        }
        if r.below(2) == 0 {
            let i = r.below(k as u64) as usize;
            conds.push((i, 1, i, 2, "<"));
        }
        let col = |p: usize, c: usize| format!("a{p}.{}", COLS[c]);
        let cond_sql = |c: &(usize, usize, usize, usize, &str)| {
            format!("{} {} {}", col(c.0, c.1), c.4, col(c.2, c.3))
        };
        let select: Vec<String> = (0..k)
            .flat_map(|p| (0..3).map(move |c| (p, c)))
            .map(|(p, c)| col(p, c))
            .collect();
        let sql = if r.below(2) == 0 {
            let from: Vec<String> = picked
                .iter()
                .enumerate()
                .map(|(p, t)| format!("t{t} a{p}"))
                .collect();
            let wh: Vec<String> = conds.iter().map(cond_sql).collect();
            format!(
                "SELECT {} FROM {} WHERE {}",
                select.join(", "),
                from.join(", "),
                wh.join(" AND ")
            )
        } else {
            // JOIN … ON: each condition goes to the first join where its tables are in.
            let mut from = format!("t{} a0", picked[0]);
            for (p, t) in picked.iter().enumerate().skip(1) {
                let on: Vec<String> = conds
                    .iter()
                    .filter(|c| c.0.max(c.2) == p)
                    .map(cond_sql)
                    .collect();
                let on = if on.is_empty() {
                    "TRUE".to_string()
                } else {
                    on.join(" AND ")
                };
                from.push_str(&format!(" JOIN t{t} a{p} ON {on}"));
            }
            let wh: Vec<String> = conds
                .iter()
                .filter(|c| c.0.max(c.2) == 0)
                .map(cond_sql)
                .collect();
            let wh = if wh.is_empty() {
                String::new()
            } else {
                format!(" WHERE {}", wh.join(" AND "))
            };
            format!("SELECT {} FROM {from}{wh}", select.join(", "))
        };
        let mut got: Vec<String> = rows(&mut s, &sql)
            .iter()
            .map(|row| {
                row.iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect();
        got.sort();
        let mut expect = vec![];
        let mut at = vec![0usize; k];
        'outer: loop {
            let row = |p: usize| &data[picked[p]][at[p]];
            let ok = conds.iter().all(|c| match (row(c.0)[c.1], row(c.2)[c.3]) {
                (Some(a), Some(b)) => {
                    if c.4 == "=" {
                        a == b
                    } else {
                        a < b
                    }
                }
                _ => false,
            });
            if ok {
                let cells: Vec<String> = (0..k)
                    .flat_map(|p| {
                        row(p)
                            .iter()
                            .map(|v| v.map_or("NULL".to_string(), |v| v.to_string()))
                            .collect::<Vec<_>>()
                    })
                    .collect();
                expect.push(cells.join(","));
            }
            for p in (0..k).rev() {
                at[p] += 1;
                if at[p] < data[picked[p]].len() {
                    continue 'outer;
                }
                at[p] = 0;
            }
            break;
        }
        expect.sort();
        assert_eq!(got, expect, "query {q}: {sql}");
    }
    drop(dir);
}

/// The widest join MariaDB runs (61 tables) runs; one more is 1116, as in MariaDB.
#[test]
fn a_join_of_as_many_tables_as_mariadb_allows_runs() {
    let (dir, db) = fresh_db("joinwide");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE d; USE d").unwrap();
    s.query("CREATE TABLE one (x INT)").unwrap();
    s.query("INSERT INTO one VALUES (1), (2)").unwrap();
    let sql = |n: usize| {
        let from: Vec<String> = (0..n).map(|i| format!("one a{i}")).collect();
        let on: Vec<String> = (1..n).map(|i| format!("a{}.x = a{i}.x", i - 1)).collect();
        format!(
            "SELECT count(*) FROM {} WHERE {}",
            from.join(", "),
            on.join(" AND ")
        )
    };
    assert_eq!(rows(&mut s, &sql(61))[0][0].to_string(), "2");
    assert_eq!(s.query(&sql(62)).unwrap_err().code, 1116);
    drop(dir);
}
