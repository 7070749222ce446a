//! CREATE TABLE AST → [`TableDef`], and back to canonical SHOW CREATE TABLE text.

use quarry_common::decimal;
use quarry_common::types::LOB_BYTES;
use quarry_common::{Collation, Error, Result, SqlType, TypeKind, Value};
use quarry_sql::ast::{
    self, CharacterLength, ColumnOption, CreateTable, DataType, ExactNumberInfo, Expr, IndexColumn,
    SqlOption, TableConstraint,
};
use quarry_storage_api::RowFormat;

use crate::{CheckDef, ColumnDef, DefaultValue, FkAction, ForeignKeyDef, IndexDef, TableDef};

fn char_len(l: &Option<CharacterLength>, default: u32) -> u32 {
    match l {
        Some(CharacterLength::IntegerLength { length, .. }) => *length as u32,
        Some(CharacterLength::Max) => 65535,
        None => default,
    }
}

fn int(kind: TypeKind, unsigned: bool, width: &Option<u64>) -> SqlType {
    SqlType {
        coll: Default::default(),
        kind,
        unsigned,
        len: width.unwrap_or(0) as u32,
        scale: 0,
    }
}

/// DECIMAL(p,s) of the column (or CAST operand) `name`: MariaDB's limits, its errors.
fn exact(info: &ExactNumberInfo, unsigned: bool, name: &str) -> Result<SqlType> {
    let (p, s) = match info {
        ExactNumberInfo::None => (10, 0),
        ExactNumberInfo::Precision(p) => (*p, 0),
        ExactNumberInfo::PrecisionAndScale(p, s) => (*p, (*s).max(0) as u64),
    };
    if p > decimal::MAX_PRECISION as u64 {
        return Err(Error::too_big_precision(name, decimal::MAX_PRECISION));
    }
    if s > decimal::MAX_SCALE as u64 {
        return Err(Error::too_big_scale(name, decimal::MAX_SCALE));
    }
    if s > p {
        return Err(Error::scale_above_precision(name));
    }
    Ok(SqlType {
        coll: Default::default(),
        kind: TypeKind::Decimal,
        unsigned,
        // MariaDB: DECIMAL(0) is DECIMAL(10).
        len: if p == 0 { 10 } else { p as u32 },
        scale: s as u8,
    })
}

/// Map a parsed SQL data type to Quarry's type.
pub fn sql_type(dt: &DataType, name: &str) -> Result<SqlType> {
    use DataType as D;
    use TypeKind as K;
    Ok(match dt {
        D::TinyInt(w) => int(K::TinyInt, false, w),
        D::TinyIntUnsigned(w) => int(K::TinyInt, true, w),
        D::Bool | D::Boolean => SqlType {
            len: 1,
            ..int(K::TinyInt, false, &None)
        },
        D::SmallInt(w) | D::Int2(w) => int(K::SmallInt, false, w),
        D::SmallIntUnsigned(w) | D::Int2Unsigned(w) => int(K::SmallInt, true, w),
        D::MediumInt(w) => int(K::MediumInt, false, w),
        D::MediumIntUnsigned(w) => int(K::MediumInt, true, w),
        D::Int(w) | D::Integer(w) | D::Int4(w) => int(K::Int, false, w),
        D::IntUnsigned(w) | D::IntegerUnsigned(w) | D::Int4Unsigned(w) => int(K::Int, true, w),
        D::BigInt(w) | D::Int8(w) => int(K::BigInt, false, w),
        D::BigIntUnsigned(w) | D::Int8Unsigned(w) => int(K::BigInt, true, w),
        D::Signed | D::SignedInteger => SqlType::BIGINT,
        D::Unsigned | D::UnsignedInteger => SqlType {
            unsigned: true,
            ..SqlType::BIGINT
        },
        D::Decimal(i) | D::Numeric(i) | D::Dec(i) => exact(i, false, name)?,
        D::DecimalUnsigned(i) | D::DecUnsigned(i) => exact(i, true, name)?,
        D::Float(ExactNumberInfo::Precision(p)) if *p > 24 => SqlType::DOUBLE,
        D::Float(_) | D::Float4 => SqlType::new(K::Float),
        D::FloatUnsigned(_) => SqlType {
            unsigned: true,
            ..SqlType::new(K::Float)
        },
        D::Double(_) | D::DoublePrecision | D::Real | D::Float8 | D::Float64 => SqlType::DOUBLE,
        D::DoubleUnsigned(_) | D::DoublePrecisionUnsigned | D::RealUnsigned => SqlType {
            unsigned: true,
            ..SqlType::DOUBLE
        },
        D::Char(l) | D::Character(l) => SqlType {
            len: char_len(l, 1),
            ..SqlType::new(K::Char)
        },
        D::Varchar(l) | D::CharacterVarying(l) | D::CharVarying(l) | D::Nvarchar(l) => {
            let len = char_len(l, 0);
            if l.is_none() {
                return Err(Error::syntax_near("VARCHAR needs a length"));
            }
            SqlType::varchar(len)
        }
        D::TinyText => SqlType::lob(K::Text, LOB_BYTES[0]),
        D::Text | D::String(None) => SqlType::lob(K::Text, LOB_BYTES[1]),
        D::MediumText => SqlType::lob(K::Text, LOB_BYTES[2]),
        D::LongText | D::JSON => SqlType::lob(K::Text, LOB_BYTES[3]),
        D::Binary(l) => SqlType {
            len: l.unwrap_or(1) as u32,
            ..SqlType::new(K::Binary)
        },
        D::Varbinary(l) => SqlType {
            len: match l {
                Some(ast::BinaryLength::IntegerLength { length }) => *length as u32,
                _ => 65535,
            },
            ..SqlType::new(K::VarBinary)
        },
        // BLOB(n): the smallest BLOB that holds n bytes.
        D::Blob(n) => SqlType::lob_holding(K::Blob, n.unwrap_or(LOB_BYTES[1] as u64)),
        D::Bytea => SqlType::lob(K::Blob, LOB_BYTES[1]),
        D::TinyBlob => SqlType::lob(K::Blob, LOB_BYTES[0]),
        D::MediumBlob => SqlType::lob(K::Blob, LOB_BYTES[2]),
        D::LongBlob => SqlType::lob(K::Blob, LOB_BYTES[3]),
        D::Date => SqlType::DATE,
        D::Datetime(p) => SqlType {
            scale: p.unwrap_or(0).min(6) as u8,
            ..SqlType::DATETIME
        },
        D::Timestamp(p, _) => SqlType {
            scale: p.unwrap_or(0).min(6) as u8,
            ..SqlType::new(K::Timestamp)
        },
        D::Time(p, _) => SqlType {
            scale: p.unwrap_or(0).min(6) as u8,
            ..SqlType::new(K::Time)
        },
        D::Custom(name, args) => {
            let n = name.to_string().to_ascii_uppercase();
            match n.as_str() {
                "YEAR" => SqlType::new(K::Year),
                "TINYBLOB" => SqlType::lob(K::Blob, LOB_BYTES[0]),
                "MEDIUMBLOB" => SqlType::lob(K::Blob, LOB_BYTES[2]),
                "LONGBLOB" => SqlType::lob(K::Blob, LOB_BYTES[3]),
                "SERIAL" => SqlType {
                    unsigned: true,
                    ..SqlType::BIGINT
                },
                _ => return Err(Error::syntax_near(&format!("{name}({})", args.join(",")))),
            }
        }
        other => return Err(Error::unsupported(format!("data type {other}"))),
    })
}

fn literal(e: &Expr) -> Result<DefaultValue> {
    use ast::Value as V;
    Ok(match e {
        Expr::Value(v) => match &v.value {
            V::Null => DefaultValue::Value(Value::Null),
            V::Number(n, _) => DefaultValue::Value(if let Ok(i) = n.parse::<i64>() {
                Value::Int(i)
            } else {
                Value::Str(n.clone())
            }),
            V::SingleQuotedString(s) | V::DoubleQuotedString(s) => {
                DefaultValue::Value(Value::Str(s.clone()))
            }
            V::Boolean(b) => DefaultValue::Value(Value::Int(*b as i64)),
            other => return Err(Error::syntax_near(&other.to_string())),
        },
        Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => match literal(expr)? {
            DefaultValue::Value(Value::Int(i)) => DefaultValue::Value(Value::Int(-i)),
            DefaultValue::Value(Value::Str(s)) => DefaultValue::Value(Value::Str(format!("-{s}"))),
            other => other,
        },
        Expr::Function(f) if is_now(&f.name.to_string()) => DefaultValue::CurrentTimestamp,
        Expr::Identifier(i) if is_now(&i.value) => DefaultValue::CurrentTimestamp,
        Expr::Nested(e) => literal(e)?,
        other => return Err(Error::unsupported(format!("DEFAULT {other}"))),
    })
}

fn is_now(name: &str) -> bool {
    matches!(
        name.to_ascii_uppercase().as_str(),
        "CURRENT_TIMESTAMP" | "NOW" | "LOCALTIMESTAMP" | "LOCALTIME"
    )
}

fn index_columns(
    def: &TableDef,
    cols: &[IndexColumn],
) -> Result<(Vec<usize>, Vec<u32>, Vec<bool>)> {
    let mut idx = vec![];
    let mut prefix = vec![];
    let mut desc = vec![];
    for c in cols {
        let (name, p) = match &c.column.expr {
            Expr::Identifier(i) => (i.value.clone(), 0),
            Expr::Function(f) => {
                let n = match &f.args {
                    ast::FunctionArguments::List(l) if l.args.len() == 1 => match &l.args[0] {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(Expr::Value(v))) => {
                            v.value.to_string().parse::<u32>().ok()
                        }
                        _ => None,
                    },
                    _ => None,
                };
                // `pad`(20) parses as a call of `pad`: the column is the name's identifier.
                let column = match f.name.0.as_slice() {
                    [ast::ObjectNamePart::Identifier(i)] => i.value.clone(),
                    _ => return Err(Error::syntax_near(&f.to_string())),
                };
                (column, n.ok_or_else(|| Error::syntax_near(&f.to_string()))?)
            }
            other => return Err(Error::syntax_near(&other.to_string())),
        };
        let i = def.column_index(&name).ok_or_else(|| {
            Error::new(1072, format!("Key column '{name}' doesn't exist in table"))
        })?;
        idx.push(i);
        prefix.push(p);
        desc.push(matches!(
            c.column.options.sort,
            Some(ast::OrderBySort::Desc)
        ));
    }
    Ok((idx, prefix, desc))
}

fn add_index(
    def: &mut TableDef,
    name: Option<String>,
    cols: &[IndexColumn],
    unique: bool,
    primary: bool,
) -> Result<()> {
    let (columns, prefix, desc) = index_columns(def, cols)?;
    if primary {
        if def.indexes.iter().any(|i| i.primary) {
            return Err(Error::new(1068, "Multiple primary key defined"));
        }
        for &c in &columns {
            def.columns[c].nullable = false;
        }
    }
    let name = if primary {
        "PRIMARY".to_string()
    } else {
        match name {
            Some(n) => n,
            None => {
                let base = def.columns[columns[0]].name.clone();
                let mut n = base.clone();
                let mut k = 2;
                while def.indexes.iter().any(|i| i.name.eq_ignore_ascii_case(&n)) {
                    n = format!("{base}_{k}");
                    k += 1;
                }
                n
            }
        }
    };
    if def
        .indexes
        .iter()
        .any(|i| i.name.eq_ignore_ascii_case(&name))
    {
        return Err(Error::new(1061, format!("Duplicate key name '{name}'")));
    }
    let ix = IndexDef {
        name,
        columns,
        prefix,
        desc,
        unique: unique || primary,
        primary,
    };
    if primary {
        def.indexes.insert(0, ix);
    } else {
        def.indexes.push(ix);
    }
    Ok(())
}

/// The collation a column or table names (COLLATE, else its CHARACTER SET's default;
/// `utf8` is `utf8mb3`), with MariaDB's errors: 1115 for an unknown character set, 1273
/// for an unknown collation, 1253 for one of another set. None: it names neither.
pub fn resolve_collation(
    charset: Option<&str>,
    collate: Option<&str>,
) -> Result<Option<Collation>> {
    let set = match charset {
        Some(cs) => Some(
            Collation::default_of(cs)
                .ok_or_else(|| Error::new(1115, format!("Unknown character set: '{cs}'")))?,
        ),
        None => None,
    };
    let Some(name) = collate else {
        return Ok(set);
    };
    let c = Collation::named(name)
        .ok_or_else(|| Error::new(1273, format!("Unknown collation: '{name}'")))?;
    if let (Some(set), Some(cs)) = (set, charset) {
        if set.charset() != c.charset() {
            return Err(Error::new(
                1253,
                format!(
                    "COLLATION '{}' is not valid for CHARACTER SET '{cs}'",
                    c.name()
                ),
            ));
        }
    }
    Ok(Some(c))
}

/// A string column's type in its collation: a character string takes it (CHARACTER SET
/// binary makes it a binary string, as in MariaDB); others are left as they are.
fn collated(mut ty: SqlType, coll: Collation) -> SqlType {
    if !ty.is_string() || ty.is_binary() {
        return ty;
    }
    if coll == Collation::Binary {
        ty.kind = match ty.kind {
            TypeKind::Char => TypeKind::Binary,
            TypeKind::VarChar => TypeKind::VarBinary,
            _ => TypeKind::Blob,
        };
        return ty;
    }
    ty.coll = coll;
    ty
}

/// A column definition; its string type takes its own collation, else `table_coll` (a
/// JSON column utf8mb4_bin, as MariaDB's).
pub fn column_def(
    c: &ast::ColumnDef,
    table_coll: Collation,
) -> Result<(ColumnDef, Vec<(bool, bool)>)> {
    let mut charset = None;
    let mut collate = None;
    for o in &c.options {
        match &o.option {
            ColumnOption::CharacterSet(n) => charset = Some(object_text(n)),
            ColumnOption::Collation(n) => collate = Some(object_text(n)),
            _ => {}
        }
    }
    let own = resolve_collation(charset.as_deref(), collate.as_deref())?;
    let json = matches!(c.data_type, DataType::JSON);
    let coll = own.unwrap_or(if json {
        Collation::Utf8mb4Bin
    } else {
        table_coll
    });
    let ty = collated(sql_type(&c.data_type, &c.name.value)?, coll);
    let mut col = ColumnDef {
        name: c.name.value.clone(),
        ty,
        nullable: true,
        default: DefaultValue::None,
        auto_increment: false,
        on_update_now: false,
        comment: String::new(),
    };
    let serial = matches!(&c.data_type, DataType::Custom(n, _) if n.to_string().eq_ignore_ascii_case("SERIAL"));
    if serial {
        col.nullable = false;
        col.auto_increment = true;
    }
    let mut keys = vec![];
    for o in &c.options {
        match &o.option {
            ColumnOption::Null => col.nullable = true,
            ColumnOption::NotNull => col.nullable = false,
            ColumnOption::Default(e) => col.default = literal(e)?,
            ColumnOption::PrimaryKey(_) => keys.push((true, true)),
            ColumnOption::Unique(_) => keys.push((true, false)),
            ColumnOption::Comment(s) => col.comment = s.clone(),
            ColumnOption::OnUpdate(e) => {
                if matches!(literal(e)?, DefaultValue::CurrentTimestamp) {
                    col.on_update_now = true;
                }
            }
            // The table's (table_def_from_ast reads them).
            ColumnOption::CharacterSet(_)
            | ColumnOption::Collation(_)
            | ColumnOption::Check(_)
            | ColumnOption::ForeignKey(_) => {}
            ColumnOption::DialectSpecific(toks) => {
                let s: Vec<String> = toks
                    .iter()
                    .map(|t| t.to_string().to_ascii_uppercase())
                    .collect();
                match s.join(" ").as_str() {
                    "AUTO_INCREMENT" => col.auto_increment = true,
                    "ZEROFILL" | "SIGNED" => {}
                    "UNSIGNED" => col.ty.unsigned = true,
                    other => return Err(Error::syntax_near(other)),
                }
            }
            other => return Err(Error::unsupported(format!("column option {other}"))),
        }
    }
    // SERIAL is BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE (a PRIMARY KEY on the
    // column stands for the UNIQUE), as MariaDB defines it: mariadb-slap's `id serial`
    // was 1075 without its key.
    if serial && !keys.iter().any(|(_, primary)| *primary) {
        keys.push((true, false));
    }
    if col.auto_increment && !col.ty.is_numeric() {
        return Err(Error::new(
            1063,
            format!("Incorrect column specifier for column '{}'", col.name),
        ));
    }
    if let DefaultValue::Value(Value::Null) = col.default {
        if !col.nullable {
            return Err(Error::new(
                1067,
                format!("Invalid default value for '{}'", col.name),
            ));
        }
    }
    if col.ty.kind == TypeKind::Timestamp
        && matches!(col.default, DefaultValue::None)
        && !col.nullable
    {
        // MariaDB's first TIMESTAMP NOT NULL column defaults to the current time.
        col.default = DefaultValue::CurrentTimestamp;
    }
    Ok((col, keys))
}

/// A CHECK's condition as SHOW CREATE TABLE prints it: names in backticks, as MariaDB.
pub fn check_text(e: &Expr) -> String {
    let mut e = e.clone();
    let _ = ast::visit_expressions_mut(&mut e, |x| {
        match x {
            Expr::Identifier(i) => i.quote_style = Some('`'),
            Expr::CompoundIdentifier(v) => v.iter_mut().for_each(|i| i.quote_style = Some('`')),
            _ => {}
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    e.to_string()
}

/// The CHECKs written on a column; a JSON column without one gets MariaDB's
/// `CHECK (json_valid(col))` (MariaDB's JSON is LONGTEXT so checked).
pub fn column_checks(c: &ast::ColumnDef) -> Vec<CheckDef> {
    let check = |expr: String| CheckDef {
        name: String::new(),
        expr,
        column: Some(c.name.value.clone()),
    };
    let mut out: Vec<CheckDef> = c
        .options
        .iter()
        .filter_map(|o| match &o.option {
            ColumnOption::Check(ck) => Some(check(check_text(&ck.expr))),
            _ => None,
        })
        .collect();
    if out.is_empty() && matches!(c.data_type, DataType::JSON) {
        out.push(check(format!("json_valid({})", quote_ident(&c.name.value))));
    }
    out
}

/// A name as written, without its backticks (`utf8mb4_bin`).
fn object_text(n: &ast::ObjectName) -> String {
    n.to_string().trim_matches('`').to_string()
}

/// The table options' DEFAULT CHARSET / CHARACTER SET and COLLATE, as one collation.
fn table_collation(ct: &CreateTable) -> Result<Option<Collation>> {
    let opts: &[SqlOption] = match &ct.table_options {
        ast::CreateTableOptions::Plain(v)
        | ast::CreateTableOptions::Options(v)
        | ast::CreateTableOptions::With(v) => v,
        _ => &[],
    };
    let (mut charset, mut collate) = (None, None);
    for o in opts {
        if let SqlOption::KeyValue { key, value } = o {
            let v = value.to_string().trim_matches(['`', '\'', '"']).to_string();
            match key.value.to_ascii_uppercase().as_str() {
                "DEFAULT CHARSET" | "CHARSET" | "DEFAULT CHARACTER SET" | "CHARACTER SET" => {
                    charset = Some(v)
                }
                "DEFAULT COLLATE" | "COLLATE" => collate = Some(v),
                _ => {}
            }
        }
    }
    resolve_collation(charset.as_deref(), collate.as_deref())
}

/// Build a table definition from a parsed CREATE TABLE (a stored definition's: one that
/// names no collation has utf8mb4_general_ci).
pub fn table_def_from_ast(ct: &CreateTable) -> Result<TableDef> {
    table_def_in(ct, Collation::Utf8mb4GeneralCi)
}

/// Build a table definition from a CREATE TABLE run in a database whose default collation
/// is `db_default` (what the table takes when it names none).
pub fn table_def_in(ct: &CreateTable, db_default: Collation) -> Result<TableDef> {
    let name = ct
        .name
        .0
        .last()
        .map(|p| p.to_string().trim_matches('`').to_string())
        .unwrap_or_default();
    let mut def = TableDef {
        name,
        columns: vec![],
        indexes: vec![],
        // Empty: not given; the session's default_storage_engine applies.
        engine: String::new(),
        row_format: None,
        comment: String::new(),
        auto_increment_start: 1,
        checks: vec![],
        foreign_keys: vec![],
        collation: Collation::Utf8mb4GeneralCi,
    };
    def.collation = table_collation(ct)?.unwrap_or(db_default);
    let mut col_keys = vec![];
    for c in &ct.columns {
        let (col, keys) = column_def(c, def.collation)?;
        if def.column_index(&col.name).is_some() {
            return Err(Error::duplicate_column(&col.name));
        }
        if col.name.is_empty() || col.name.len() > 64 {
            return Err(Error::new(
                1166,
                format!("Incorrect column name '{}'", col.name),
            ));
        }
        col_keys.push((def.columns.len(), keys));
        def.columns.push(col);
    }
    for (ci, keys) in col_keys {
        for (unique, primary) in keys {
            let ic = IndexColumn {
                column: ast::OrderByExpr {
                    expr: Expr::Identifier(ast::Ident::new(def.columns[ci].name.clone())),
                    options: ast::OrderByOptions {
                        sort: None,
                        nulls_first: None,
                    },
                    with_fill: None,
                },
                operator_class: None,
            };
            add_index(&mut def, None, &[ic], unique, primary)?;
        }
    }
    // Column-level CHECKs, then the table's (named CONSTRAINT_n when unnamed, n counting
    // the table's CHECKs, as MariaDB).
    for c in &ct.columns {
        def.checks.extend(column_checks(c));
    }
    // Column-level REFERENCES first (MariaDB numbers them, and places their indexes,
    // before the table's keys).
    let mut column_fks = vec![];
    for c in &ct.columns {
        for o in &c.options {
            if let ColumnOption::ForeignKey(fk) = &o.option {
                column_fks.push((fk.clone(), Some(c.name.clone())));
            }
        }
    }
    add_foreign_keys(&mut def, column_fks)?;
    let mut foreign_keys = vec![];
    let mut table_checks = 0;
    for c in &ct.constraints {
        match c {
            TableConstraint::PrimaryKey(p) => add_index(&mut def, None, &p.columns, true, true)?,
            TableConstraint::Unique(u) => {
                let n = u
                    .index_name
                    .as_ref()
                    .or(u.name.as_ref())
                    .map(|i| i.value.clone());
                add_index(&mut def, n, &u.columns, true, false)?
            }
            TableConstraint::Index(i) => add_index(
                &mut def,
                i.name.as_ref().map(|i| i.value.clone()),
                &i.columns,
                false,
                false,
            )?,
            TableConstraint::Check(ck) => {
                table_checks += 1;
                let name = match &ck.name {
                    Some(n) => n.value.clone(),
                    None => format!("CONSTRAINT_{table_checks}"),
                };
                if def
                    .checks
                    .iter()
                    .any(|c| c.column.is_none() && c.name.eq_ignore_ascii_case(&name))
                {
                    return Err(Error::new(
                        1826,
                        format!("Duplicate CHECK constraint name '{name}'"),
                    ));
                }
                def.checks.push(CheckDef {
                    name,
                    expr: check_text(&ck.expr),
                    column: None,
                });
            }
            TableConstraint::ForeignKey(fk) => foreign_keys.push((fk.clone(), None)),
            other => return Err(Error::unsupported(format!("constraint {other}"))),
        }
    }
    add_foreign_keys(&mut def, foreign_keys)?;
    let opts: &[SqlOption] = match &ct.table_options {
        ast::CreateTableOptions::Plain(v)
        | ast::CreateTableOptions::Options(v)
        | ast::CreateTableOptions::With(v) => v,
        _ => &[],
    };
    for o in opts {
        match o {
            SqlOption::NamedParenthesizedList(l) if l.key.value.eq_ignore_ascii_case("ENGINE") => {
                def.engine = l.name.as_ref().map(|n| n.value.clone()).unwrap_or_default();
            }
            SqlOption::KeyValue { key, value } => {
                let v = match value {
                    Expr::Value(v) => match &v.value {
                        ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => {
                            s.clone()
                        }
                        other => other.to_string(),
                    },
                    other => other.to_string(),
                };
                match key.value.to_ascii_uppercase().as_str() {
                    "ENGINE" => def.engine = v,
                    "ROW_FORMAT" => {
                        def.row_format = match v.to_ascii_uppercase().as_str() {
                            "FIXED" => Some(RowFormat::Fixed),
                            "DEFAULT" => None,
                            _ => Some(RowFormat::Dynamic),
                        }
                    }
                    "AUTO_INCREMENT" => def.auto_increment_start = v.parse().unwrap_or(1),
                    "COMMENT" => def.comment = v,
                    _ => {}
                }
            }
            SqlOption::Comment(c) => {
                def.comment = match c {
                    ast::CommentDef::WithEq(s) | ast::CommentDef::WithoutEq(s) => s.clone(),
                }
            }
            _ => {}
        }
    }
    if let Some(c) = &ct.comment {
        def.comment = match c {
            ast::CommentDef::WithEq(s) | ast::CommentDef::WithoutEq(s) => s.clone(),
        };
    }
    if def.columns.is_empty() && ct.query.is_none() {
        return Err(Error::new(1113, "A table must have at least 1 column"));
    }
    if let Some(ai) = def.auto_increment_column() {
        if !def.indexes.iter().any(|i| i.columns.first() == Some(&ai)) {
            return Err(Error::new(1075, "Incorrect table definition; there can be only one auto column and it must be defined as a key"));
        }
    }
    Ok(def)
}

fn fk_action(a: Option<&ast::ReferentialAction>) -> FkAction {
    use ast::ReferentialAction as R;
    match a {
        Some(R::Cascade) => FkAction::Cascade,
        Some(R::SetNull) => FkAction::SetNull,
        Some(R::NoAction) => FkAction::NoAction,
        None | Some(R::Restrict) | Some(R::SetDefault) => FkAction::Restrict,
    }
}

/// The FOREIGN KEYs of a CREATE TABLE (`column`: written on that column) into `def`:
/// unnamed ones named `<table>_ibfk_<n>` past the highest such n, an index made for
/// each whose columns no index starts with (named after the constraint, else its first
/// column), as InnoDB does.
fn add_foreign_keys(
    def: &mut TableDef,
    fks: Vec<(ast::ForeignKeyConstraint, Option<ast::Ident>)>,
) -> Result<()> {
    let prefix = format!("{}_ibfk_", def.name);
    let given_names = fks
        .iter()
        .filter_map(|(fk, _)| fk.name.as_ref().or(fk.index_name.as_ref()))
        .map(|i| i.value.as_str());
    let mut next = 1 + def
        .foreign_keys
        .iter()
        .map(|f| f.name.as_str())
        .chain(given_names)
        .filter_map(|n| n.strip_prefix(&prefix)?.parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    let mut made: Vec<usize> = vec![];
    for (fk, column) in fks {
        let names: Vec<&ast::Ident> = match &column {
            Some(c) => vec![c],
            None => fk.columns.iter().collect(),
        };
        let mut columns = vec![];
        for n in &names {
            let c = def.column_index(&n.value).ok_or_else(|| {
                Error::new(
                    1072,
                    format!("Key column '{}' doesn't exist in table", n.value),
                )
            })?;
            columns.push(c);
        }
        let parts: Vec<String> = fk
            .foreign_table
            .0
            .iter()
            .map(|p| p.to_string().trim_matches('`').to_string())
            .collect();
        let (ref_db, ref_table) = match parts.as_slice() {
            [db, t] => (Some(db.clone()), t.clone()),
            [t] => (None, t.clone()),
            _ => return Err(Error::syntax_near(&fk.foreign_table.to_string())),
        };
        let ref_columns: Vec<String> = fk
            .referred_columns
            .iter()
            .map(|i| i.value.clone())
            .collect();
        // `FOREIGN KEY name (…)` names the constraint when CONSTRAINT does not.
        let given = fk.name.as_ref().or(fk.index_name.as_ref());
        if ref_columns.len() != columns.len() {
            let shown = given.map_or("foreign key without name".to_string(), |n| n.value.clone());
            return Err(Error::new(
                1239,
                format!("Incorrect foreign key definition for '{shown}': Key reference and table reference don't match"),
            ));
        }
        let name = match given {
            Some(n) => n.value.clone(),
            None => {
                let n = format!("{prefix}{next}");
                next += 1;
                n
            }
        };
        // An index made for an earlier key on the same columns takes this key's name
        // (MariaDB keeps the later of two such indexes).
        let made_before = made
            .iter()
            .copied()
            .find(|&i: &usize| def.indexes[i].columns == columns);
        if made_before.is_some() || foreign_key_index(def, &columns).is_none() {
            let base = given
                .map(|i| i.value.clone())
                .unwrap_or_else(|| def.columns[columns[0]].name.clone());
            let taken = |n: &str| {
                def.indexes
                    .iter()
                    .enumerate()
                    .any(|(i, ix)| Some(i) != made_before && ix.name.eq_ignore_ascii_case(n))
            };
            let mut n = base.clone();
            let mut k = 2;
            while taken(&n) {
                n = format!("{base}_{k}");
                k += 1;
            }
            match made_before {
                Some(i) => def.indexes[i].name = n,
                None => {
                    made.push(def.indexes.len());
                    def.indexes.push(IndexDef {
                        name: n,
                        prefix: vec![0; columns.len()],
                        desc: vec![false; columns.len()],
                        columns: columns.clone(),
                        unique: false,
                        primary: false,
                    });
                }
            }
        }
        def.foreign_keys.push(ForeignKeyDef {
            name,
            columns,
            ref_db,
            ref_table,
            ref_columns,
            on_delete: fk_action(fk.on_delete.as_ref()),
            on_update: fk_action(fk.on_update.as_ref()),
        });
    }
    def.foreign_keys.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(())
}

/// The index a foreign key's `columns` use: the first whose columns start with them,
/// whole (no prefix) and in order.
pub fn foreign_key_index(def: &TableDef, columns: &[usize]) -> Option<usize> {
    def.indexes.iter().position(|ix| {
        ix.columns.len() >= columns.len()
            && ix.columns[..columns.len()] == *columns
            && ix.prefix[..columns.len()].iter().all(|&p| p == 0)
    })
}

pub fn quote_ident(s: &str) -> String {
    format!("`{}`", s.replace('`', "``"))
}

pub fn quote_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\'' => out.push_str("''"),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

pub fn show_create(def: &TableDef, auto_inc_next: Option<u64>) -> String {
    let mut lines = vec![];
    for c in &def.columns {
        let mut s = format!("  {} {}", quote_ident(&c.name), c.ty);
        if c.ty.is_string() && !c.ty.is_binary() && c.ty.coll != def.collation {
            s.push_str(&format!(
                " CHARACTER SET {} COLLATE {}",
                c.ty.coll.charset(),
                c.ty.coll.name()
            ));
        }
        if !c.nullable {
            s.push_str(" NOT NULL");
        }
        if c.auto_increment {
            s.push_str(" AUTO_INCREMENT");
        }
        match &c.default {
            DefaultValue::None => {
                if c.nullable {
                    s.push_str(" DEFAULT NULL");
                }
            }
            DefaultValue::Value(Value::Null) => s.push_str(" DEFAULT NULL"),
            DefaultValue::Value(v) => {
                s.push_str(" DEFAULT ");
                s.push_str(&quote_string(&v.to_string()));
            }
            DefaultValue::CurrentTimestamp => s.push_str(" DEFAULT current_timestamp()"),
        }
        if c.on_update_now {
            s.push_str(" ON UPDATE current_timestamp()");
        }
        if !c.comment.is_empty() {
            s.push_str(" COMMENT ");
            s.push_str(&quote_string(&c.comment));
        }
        for ck in &def.checks {
            if ck.column.as_deref() == Some(c.name.as_str()) {
                s.push_str(&format!(" CHECK ({})", ck.expr));
            }
        }
        lines.push(s);
    }
    for ix in &def.indexes {
        let cols: Vec<String> = ix
            .columns
            .iter()
            .zip(&ix.prefix)
            .zip(&ix.desc)
            .map(|((&c, &p), &d)| {
                let mut s = quote_ident(&def.columns[c].name);
                if p > 0 {
                    s.push_str(&format!("({p})"));
                }
                if d {
                    s.push_str(" DESC");
                }
                s
            })
            .collect();
        let kind = if ix.primary {
            "PRIMARY KEY".to_string()
        } else if ix.unique {
            format!("UNIQUE KEY {}", quote_ident(&ix.name))
        } else {
            format!("KEY {}", quote_ident(&ix.name))
        };
        lines.push(format!("  {kind} ({})", cols.join(",")));
    }
    for fk in &def.foreign_keys {
        lines.push(format!(
            "  CONSTRAINT {} {}",
            quote_ident(&fk.name),
            fk.clause(def, None, true)
        ));
    }
    for ck in def.checks.iter().filter(|c| c.column.is_none()) {
        lines.push(format!(
            "  CONSTRAINT {} CHECK ({})",
            quote_ident(&ck.name),
            ck.expr
        ));
    }
    let mut s = format!(
        "CREATE TABLE {} (\n{}\n) ENGINE={}",
        quote_ident(&def.name),
        lines.join(",\n"),
        def.engine
    );
    if let Some(n) = auto_inc_next.filter(|n| *n > 1) {
        s.push_str(&format!(" AUTO_INCREMENT={n}"));
    }
    s.push_str(&format!(
        " DEFAULT CHARSET={} COLLATE={}",
        def.collation.charset(),
        def.collation.name()
    ));
    if let Some(f) = def.row_format {
        s.push_str(match f {
            RowFormat::Fixed => " ROW_FORMAT=FIXED",
            RowFormat::Dynamic => " ROW_FORMAT=DYNAMIC",
        });
    }
    if !def.comment.is_empty() {
        s.push_str(" COMMENT=");
        s.push_str(&quote_string(&def.comment));
    }
    s
}
