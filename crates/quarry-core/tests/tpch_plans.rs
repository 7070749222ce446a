//! Golden plans of the 22 TPC-H queries (`bench/tpch/queries`) on both engines, over a
//! small TPC-H database made here (scale factor 0.01: the specification's table sizes and
//! key relations, its nations, regions, types, containers, segments, priorities, modes
//! and date ranges, a subset of its words and colours, drawn from a fixed seed): for each
//! query, MySQL's EXPLAIN table and
//! `EXPLAIN FORMAT=TREE` with `quarry_explain_passes` on — each SELECT block's plan after
//! decorrelation, pushdown, join order and each optimizer pass. A change to the planner
//! that changes a plan fails here until the files are made again and the change is read
//! as a diff:
//!
//! ```text
//! QUARRY_BLESS=1 cargo test -p quarry-core --test tpch_plans
//! ```
//!
//! The files are `tests/plans/tpch/<engine>/qNN.plan`.

mod common;

use std::fmt::Write as _;
use std::path::PathBuf;

use common::{fresh_db, rows, texts};
use quarry_core::quarry_common::fuzz::Rng;
use quarry_core::quarry_common::value::Date;
use quarry_core::Session;

const SF: f64 = 0.01;

const NATIONS: [(&str, usize); 25] = [
    ("ALGERIA", 0),
    ("ARGENTINA", 1),
    ("BRAZIL", 1),
    ("CANADA", 1),
    ("EGYPT", 4),
    ("ETHIOPIA", 0),
    ("FRANCE", 3),
    ("GERMANY", 3),
    ("INDIA", 2),
    ("INDONESIA", 2),
    ("IRAN", 4),
    ("IRAQ", 4),
    ("JAPAN", 2),
    ("JORDAN", 4),
    ("KENYA", 0),
    ("MOROCCO", 0),
    ("MOZAMBIQUE", 0),
    ("PERU", 1),
    ("CHINA", 2),
    ("ROMANIA", 3),
    ("SAUDI ARABIA", 4),
    ("VIETNAM", 2),
    ("RUSSIA", 3),
    ("UNITED KINGDOM", 3),
    ("UNITED STATES", 1),
];
const REGIONS: [&str; 5] = ["AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"];
const COLORS: [&str; 24] = [
    "almond",
    "antique",
    "aquamarine",
    "azure",
    "beige",
    "bisque",
    "black",
    "blanched",
    "blue",
    "blush",
    "brown",
    "burlywood",
    "chartreuse",
    "chocolate",
    "coral",
    "cornsilk",
    "forest",
    "frosted",
    "green",
    "honeydew",
    "ivory",
    "khaki",
    "lavender",
    "lime",
];
const TYPE_1: [&str; 6] = ["STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"];
const TYPE_2: [&str; 5] = ["ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"];
const TYPE_3: [&str; 5] = ["TIN", "NICKEL", "BRASS", "STEEL", "COPPER"];
const CONTAINER_1: [&str; 5] = ["SM", "LG", "MED", "JUMBO", "WRAP"];
const CONTAINER_2: [&str; 8] = ["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"];
const SEGMENTS: [&str; 5] = [
    "AUTOMOBILE",
    "BUILDING",
    "FURNITURE",
    "MACHINERY",
    "HOUSEHOLD",
];
const PRIORITIES: [&str; 5] = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"];
const INSTRUCTIONS: [&str; 4] = [
    "DELIVER IN PERSON",
    "COLLECT COD",
    "NONE",
    "TAKE BACK RETURN",
];
const MODES: [&str; 7] = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"];
const WORDS: [&str; 16] = [
    "furiously",
    "special",
    "requests",
    "carefully",
    "final",
    "deposits",
    "ironic",
    "packages",
    "slyly",
    "regular",
    "accounts",
    "quickly",
    "bold",
    "pending",
    "blithely",
    "express",
];

/// A date's day number (`Date::to_days`), and back as a literal.
fn days(year: u16, month: u8, day: u8) -> i64 {
    Date { year, month, day }.to_days()
}

fn date(n: i64) -> String {
    format!("'{}'", Date::from_days(n))
}

fn text(r: &mut Rng, words: usize) -> String {
    let v: Vec<&str> = (0..words).map(|_| *r.pick(&WORDS)).collect();
    format!("'{}'", v.join(" "))
}

/// Hundredths in `lo..=hi` as a DECIMAL literal.
fn money(r: &mut Rng, lo: i64, hi: i64) -> String {
    let c = lo + r.below((hi - lo + 1) as usize) as i64;
    format!(
        "{}{}.{:02}",
        if c < 0 { "-" } else { "" },
        c.abs() / 100,
        c.abs() % 100
    )
}

fn phone(r: &mut Rng, nation: usize) -> String {
    format!(
        "'{}-{}-{}-{}'",
        nation + 10,
        100 + r.below(900),
        100 + r.below(900),
        1000 + r.below(9000)
    )
}

/// INSERT `rows` into `table`, a thousand at a time.
fn insert(s: &mut Session, table: &str, rows: &[String]) {
    for chunk in rows.chunks(1000) {
        s.query(&format!("INSERT INTO {table} VALUES {}", chunk.join(",")))
            .unwrap();
    }
}

fn load(s: &mut Session) {
    let mut r = Rng::new(0x7c4);
    let suppliers = (10_000.0 * SF) as usize;
    let parts = (200_000.0 * SF) as usize;
    let customers = (150_000.0 * SF) as usize;
    let orders = (1_500_000.0 * SF) as usize;
    let regions: Vec<String> = REGIONS
        .iter()
        .enumerate()
        .map(|(i, n)| format!("({i}, '{n}', {})", text(&mut r, 4)))
        .collect();
    insert(s, "region", &regions);
    let nations: Vec<String> = NATIONS
        .iter()
        .enumerate()
        .map(|(i, (n, reg))| format!("({i}, '{n}', {reg}, {})", text(&mut r, 5)))
        .collect();
    insert(s, "nation", &nations);
    let mut v = vec![];
    for k in 1..=suppliers {
        let nation = r.below(25);
        // Q16 leaves out suppliers with complaints.
        let comment = if r.chance(20) {
            "'slyly Customer pending Complaints final'".to_string()
        } else {
            text(&mut r, 6)
        };
        v.push(format!(
            "({k}, 'Supplier#{k:09}', {}, {nation}, {}, {}, {comment})",
            text(&mut r, 2),
            phone(&mut r, nation),
            money(&mut r, -99_999, 999_999),
        ));
    }
    insert(s, "supplier", &v);
    let mut prices = vec![0i64];
    let mut v = vec![];
    for k in 1..=parts {
        let name: Vec<&str> = (0..5).map(|_| *r.pick(&COLORS)).collect();
        let m = 1 + r.below(5);
        let price = 90_000 + ((k as i64 / 10) % 20_001) + 100 * (k as i64 % 1000);
        prices.push(price);
        v.push(format!(
            "({k}, '{}', 'Manufacturer#{m}', 'Brand#{m}{}', '{} {} {}', {}, '{} {}', {}.{:02}, {})",
            name.join(" "),
            1 + r.below(5),
            r.pick(&TYPE_1),
            r.pick(&TYPE_2),
            r.pick(&TYPE_3),
            1 + r.below(50),
            r.pick(&CONTAINER_1),
            r.pick(&CONTAINER_2),
            price / 100,
            price % 100,
            text(&mut r, 2),
        ));
    }
    insert(s, "part", &v);
    // Each part's four suppliers, as the specification spreads them.
    let supplier_of = |part: usize, i: usize| {
        (part + i * (suppliers / 4 + (part - 1) / suppliers)) % suppliers + 1
    };
    let mut v = vec![];
    for k in 1..=parts {
        for i in 0..4 {
            v.push(format!(
                "({k}, {}, {}, {}, {})",
                supplier_of(k, i),
                1 + r.below(9999),
                money(&mut r, 100, 100_000),
                text(&mut r, 8),
            ));
        }
    }
    insert(s, "partsupp", &v);
    let mut v = vec![];
    for k in 1..=customers {
        let nation = r.below(25);
        v.push(format!(
            "({k}, 'Customer#{k:09}', {}, {nation}, {}, {}, '{}', {})",
            text(&mut r, 2),
            phone(&mut r, nation),
            money(&mut r, -99_999, 999_999),
            r.pick(&SEGMENTS),
            text(&mut r, 6),
        ));
    }
    insert(s, "customer", &v);
    let start = days(1992, 1, 1);
    let last_order = days(1998, 8, 2) - 151;
    let current = days(1995, 6, 17);
    let (mut ov, mut lv) = (vec![], vec![]);
    for k in 1..=orders {
        // A third of the customers place no orders (Q13, Q22).
        let cust = loop {
            let c = 1 + r.below(customers);
            if !c.is_multiple_of(3) {
                break c;
            }
        };
        let ordered = start + r.below((last_order - start + 1) as usize) as i64;
        let (mut total, mut open, mut filled) = (0i64, 0, 0);
        let lines = 1 + r.below(7);
        for line in 1..=lines {
            let part = 1 + r.below(parts);
            let supp = supplier_of(part, r.below(4));
            let qty = 1 + r.below(50) as i64;
            let price = qty * prices[part];
            let (discount, tax) = (r.below(11) as i64, r.below(9) as i64);
            total += price * (100 - discount) / 100 * (100 + tax) / 100;
            let shipped = ordered + 1 + r.below(121) as i64;
            let committed = ordered + 30 + r.below(61) as i64;
            let received = shipped + 1 + r.below(30) as i64;
            let flag = if received <= current {
                *r.pick(&["R", "A"])
            } else {
                "N"
            };
            let status = if shipped > current {
                open += 1;
                "O"
            } else {
                filled += 1;
                "F"
            };
            lv.push(format!(
                "({k}, {part}, {supp}, {line}, {qty}, {}.{:02}, 0.{discount:02}, 0.{tax:02}, '{flag}', '{status}', {}, {}, {}, '{}', '{}', {})",
                price / 100,
                price % 100,
                date(shipped),
                date(committed),
                date(received),
                r.pick(&INSTRUCTIONS),
                r.pick(&MODES),
                text(&mut r, 3),
            ));
        }
        let status = match (open, filled) {
            (_, 0) => "O",
            (0, _) => "F",
            _ => "P",
        };
        ov.push(format!(
            "({k}, {cust}, '{status}', {}.{:02}, {}, '{}', 'Clerk#{:09}', 0, {})",
            total / 100,
            total % 100,
            date(ordered),
            r.pick(&PRIORITIES),
            1 + r.below((1000.0 * SF).max(1.0) as usize),
            text(&mut r, 4),
        ));
    }
    insert(s, "orders", &ov);
    insert(s, "lineitem", &lv);
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What the golden file of one query holds: the EXPLAIN table, then the traced TREE.
fn plan_text(s: &mut Session, query: &str) -> String {
    let mut out = String::from("EXPLAIN\n");
    for row in texts(s, &format!("EXPLAIN {query}")) {
        writeln!(out, "{}", row.join(" | ")).unwrap();
    }
    out.push_str("\nEXPLAIN FORMAT=TREE, quarry_explain_passes=ON\n");
    let tree = rows(s, &format!("EXPLAIN FORMAT=TREE {query}"));
    out.push_str(&tree[0][0].to_string());
    out.push('\n');
    out
}

#[test]
fn tpch_plans_are_the_golden_ones() {
    let bless = std::env::var_os("QUARRY_BLESS").is_some();
    let schema = std::fs::read_to_string(repo().join("bench/tpch/schema.sql")).unwrap();
    let queries_dir = repo().join("bench/tpch/queries");
    let mut queries: Vec<(String, String)> = std::fs::read_dir(&queries_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sql"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            let sql = std::fs::read_to_string(&p).unwrap();
            (name, sql.trim().trim_end_matches(';').to_string())
        })
        .collect();
    queries.sort();
    assert_eq!(queries.len(), 22);
    let (_dir, db) = fresh_db("tpch-plans");
    let mut s = db.session("root", "localhost");
    let mut failed = vec![];
    for engine in ["ROW", "COLUMN"] {
        let name = engine.to_lowercase();
        s.query(&format!(
            "CREATE DATABASE tpch_{name}; USE tpch_{name}; SET default_storage_engine = {engine}"
        ))
        .unwrap();
        s.query(&schema).unwrap();
        load(&mut s);
        s.query(
            "ANALYZE TABLE nation, region, part, supplier, partsupp, customer, orders, lineitem",
        )
        .unwrap();
        s.query("SET quarry_explain_passes = ON").unwrap();
        let dir = repo().join("tests/plans/tpch").join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        for (q, sql) in &queries {
            let got = plan_text(&mut s, sql);
            let file = dir.join(format!("{q}.plan"));
            if bless {
                std::fs::write(&file, &got).unwrap();
                continue;
            }
            let want = std::fs::read_to_string(&file).unwrap_or_default();
            if got != want {
                let at = got
                    .lines()
                    .zip(want.lines())
                    .position(|(a, b)| a != b)
                    .unwrap_or(got.lines().count().min(want.lines().count()));
                failed.push(format!(
                    "{}: line {}: got {:?}, golden {:?}",
                    file.display(),
                    at + 1,
                    got.lines().nth(at).unwrap_or(""),
                    want.lines().nth(at).unwrap_or("")
                ));
            }
        }
        s.query("SET quarry_explain_passes = OFF").unwrap();
    }
    assert!(
        failed.is_empty(),
        "plans differ from the golden files (QUARRY_BLESS=1 makes them again):\n{}",
        failed.join("\n")
    );
}
