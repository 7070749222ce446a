//! Random schemas and data: tables of every column type the tester covers, with NULLs,
//! duplicates, empty strings, trailing spaces and extreme values, and random secondary
//! indexes. Owns the DDL and INSERT text for each variant a case is loaded into; knows
//! nothing of queries or servers.

use quarry_common::fuzz::Rng;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Int,
    BigInt,
    TinyInt,
    Decimal,
    Double,
    Varchar,
    /// A case-sensitive string column: comparisons with the others follow the
    /// coercibility rules (the `_bin` one wins). Not in `KINDS`: see `table`.
    VarcharBin,
    Char,
    Date,
    DateTime,
}

pub const KINDS: [Kind; 9] = [
    Kind::Int,
    Kind::BigInt,
    Kind::TinyInt,
    Kind::Decimal,
    Kind::Double,
    Kind::Varchar,
    Kind::Char,
    Kind::Date,
    Kind::DateTime,
];

impl Kind {
    pub fn sql(self) -> &'static str {
        match self {
            Kind::Int => "INT",
            Kind::BigInt => "BIGINT",
            Kind::TinyInt => "TINYINT",
            Kind::Decimal => "DECIMAL(10,2)",
            Kind::Double => "DOUBLE",
            Kind::Varchar => "VARCHAR(10)",
            Kind::VarcharBin => "VARCHAR(10) COLLATE utf8mb4_bin",
            Kind::Char => "CHAR(5)",
            Kind::Date => "DATE",
            Kind::DateTime => "DATETIME",
        }
    }

    pub fn numeric(self) -> bool {
        matches!(
            self,
            Kind::Int | Kind::BigInt | Kind::TinyInt | Kind::Decimal | Kind::Double
        )
    }

    pub fn text(self) -> bool {
        matches!(self, Kind::Varchar | Kind::VarcharBin | Kind::Char)
    }

    pub fn temporal(self) -> bool {
        matches!(self, Kind::Date | Kind::DateTime)
    }

    /// Literals a column of this kind holds (and queries compare it with): edges first.
    pub fn values(self) -> &'static [&'static str] {
        match self {
            Kind::Int => &[
                "0",
                "1",
                "-1",
                "2",
                "3",
                "7",
                "10",
                "-100",
                "2147483647",
                "-2147483648",
            ],
            Kind::BigInt => &[
                "0",
                "1",
                "-1",
                "5",
                "42",
                "1000000",
                "9223372036854775807",
                "-9223372036854775808",
            ],
            Kind::TinyInt => &["0", "1", "-1", "2", "127", "-128", "5"],
            Kind::Decimal => &[
                "0.00",
                "1.50",
                "-2.25",
                "3.00",
                "0.01",
                "99999999.99",
                "-99999999.99",
                "10.10",
            ],
            Kind::Double => &["0", "0.5", "-1.25", "3", "100", "1e10", "-0.001", "2.5"],
            Kind::Varchar | Kind::VarcharBin => &[
                "''", "'a'", "'A'", "'a '", "'b'", "'abc'", "'ABC'", "'x y'", "'10'", "'2'", "'Ä'",
                "'zz'",
            ],
            Kind::Char => &["''", "'a'", "'B'", "'b'", "'abc'", "'10'", "'Á b'"],
            Kind::Date => &[
                "'2000-01-01'",
                "'1999-12-31'",
                "'2024-02-29'",
                "'1970-01-01'",
                "'2038-01-19'",
                "'2000-01-02'",
            ],
            Kind::DateTime => &[
                "'2000-01-01 00:00:00'",
                "'2024-02-29 12:34:56'",
                "'1999-12-31 23:59:59'",
                "'2000-01-01 12:00:00'",
                "'1970-01-01 00:00:01'",
            ],
        }
    }
}

#[derive(Clone, Debug)]
pub struct Column {
    pub name: String,
    pub kind: Kind,
    pub nullable: bool,
}

#[derive(Clone, Debug)]
pub struct Table {
    pub name: String,
    /// `pk` INT PRIMARY KEY, 1..=rows, is always the first column.
    pub columns: Vec<Column>,
    /// Secondary indexes: column positions.
    pub indexes: Vec<Vec<usize>>,
    /// Values as SQL literals ("NULL" for NULL), one Vec per row.
    pub rows: Vec<Vec<String>>,
}

/// How a table is stored in one variant: the plan-independence oracle compares them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// Row engine with the generated indexes (and MariaDB's InnoDB).
    Indexed,
    /// Row engine, primary key only.
    NoIndex,
    /// Column engine with the generated indexes.
    Column,
    /// MariaDB's tables: no keys at all. The reference is MariaDB's answer, not its plan,
    /// and its index paths give wrong answers (an INT key looked up with 10.10 finds 10;
    /// NOT IN through an index subquery skips the NULL check).
    Reference,
}

impl Variant {
    pub fn db(self) -> &'static str {
        match self {
            Variant::Indexed => "dt",
            Variant::NoIndex => "dt_noix",
            Variant::Column => "dt_col",
            Variant::Reference => "dt",
        }
    }
}

pub fn generate(rng: &mut Rng) -> Vec<Table> {
    let ntables = 2 + rng.below(2);
    (0..ntables).map(|i| table(rng, i)).collect()
}

fn table(rng: &mut Rng, i: usize) -> Table {
    let mut columns = vec![Column {
        name: "pk".into(),
        kind: Kind::Int,
        nullable: false,
    }];
    let ncols = 2 + rng.below(4);
    for c in 0..ncols {
        // Every table has an INT and a string column, so joins and predicates on them
        // always find a partner.
        let kind = match c {
            0 => Kind::Int,
            1 => Kind::Varchar,
            _ => *rng.pick(&KINDS),
        };
        // Every third string column is case-sensitive, chosen without drawing from `rng`
        // (seeds keep the schemas, data and queries they had).
        let kind = if kind == Kind::Varchar && (i + c) % 3 == 2 {
            Kind::VarcharBin
        } else {
            kind
        };
        columns.push(Column {
            name: format!("c{c}"),
            kind,
            nullable: !rng.chance(4),
        });
    }
    let mut indexes = vec![];
    for _ in 0..rng.below(3) {
        let a = 1 + rng.below(ncols);
        if rng.chance(3) {
            let b = 1 + rng.below(ncols);
            if b != a {
                indexes.push(vec![a, b]);
                continue;
            }
        }
        indexes.push(vec![a]);
    }
    let nrows = match rng.below(6) {
        0 => 0,
        1 => 1,
        _ => 3 + rng.below(25),
    };
    let rows = (0..nrows)
        .map(|r| {
            columns
                .iter()
                .enumerate()
                .map(|(ci, col)| {
                    if ci == 0 {
                        (r + 1).to_string()
                    } else if col.nullable && rng.chance(5) {
                        "NULL".to_string()
                    } else {
                        rng.pick(col.kind.values()).to_string()
                    }
                })
                .collect()
        })
        .collect();
    Table {
        name: format!("t{i}"),
        columns,
        indexes,
        rows,
    }
}

impl Table {
    pub fn create(&self, variant: Variant) -> String {
        let mut parts: Vec<String> = self
            .columns
            .iter()
            .map(|c| {
                format!(
                    "{} {}{}",
                    c.name,
                    c.kind.sql(),
                    if c.nullable { "" } else { " NOT NULL" }
                )
            })
            .collect();
        if variant != Variant::Reference {
            parts.push("PRIMARY KEY (pk)".into());
        }
        if variant == Variant::Indexed || variant == Variant::Column {
            for (k, ix) in self.indexes.iter().enumerate() {
                let cols: Vec<&str> = ix.iter().map(|&i| self.columns[i].name.as_str()).collect();
                parts.push(format!("KEY k{k} ({})", cols.join(", ")));
            }
        }
        let engine = if variant == Variant::Column {
            " ENGINE=COLUMN"
        } else {
            ""
        };
        format!("CREATE TABLE {} ({}){engine}", self.name, parts.join(", "))
    }

    /// The statements that make the table in `variant` with its rows. A column table
    /// gets three rows in four merged into a segment (OPTIMIZE TABLE) and the rest left
    /// in its delta, so conditions and aggregates run on encoded chunks as well as on
    /// rows (one INSERT of a few rows would stay in the delta).
    pub fn load(&self, variant: Variant) -> Vec<String> {
        let mut out = vec![self.create(variant)];
        let n = self.rows.len();
        if variant == Variant::Column && n >= 4 {
            let cut = n * 3 / 4;
            out.extend(self.insert_rows(&self.rows[..cut]));
            out.push(format!("OPTIMIZE TABLE {}", self.name));
            out.extend(self.insert_rows(&self.rows[cut..]));
        } else {
            out.extend(self.insert());
        }
        out
    }

    /// One INSERT of every row (None for an empty table).
    pub fn insert(&self) -> Option<String> {
        self.insert_rows(&self.rows)
    }

    pub fn insert_rows(&self, rows: &[Vec<String>]) -> Option<String> {
        if rows.is_empty() {
            return None;
        }
        let vals: Vec<String> = rows.iter().map(|r| format!("({})", r.join(", "))).collect();
        Some(format!(
            "INSERT INTO {} VALUES {}",
            self.name,
            vals.join(", ")
        ))
    }
}
