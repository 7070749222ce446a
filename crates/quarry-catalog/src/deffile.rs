//! Definition files: `<db>/<t>.qdef` (a table) and `<db>/<v>.qview` (a view), their text
//! and how they are read back. A file that cannot be read is the error 1033 of its name
//! (as MariaDB answers for a damaged `.frm`); the detail goes to the startup report.
//!
//! ```text
//! .qdef   QUARRY-TABLE-DEF 2 / row_format=FIXED|DYNAMIC / CREATE TABLE … (canonical)
//! .qview  QUARRY-VIEW-DEF 2 / definer<TAB>user<TAB>host<TAB>DEFINER|INVOKER /
//!         column names, tab-separated (may be empty) / SELECT …  (version 1: no definer
//!         line)
//! ```

use std::path::Path;

use quarry_common::field::{escape, unescape};
use quarry_common::{Error, Result};
use quarry_storage_api::RowFormat;

use crate::{table_def_from_ast, TableDef, ViewDef};

const DEF_HEADER: &str = "QUARRY-TABLE-DEF 2";
/// Version 1 stored every DECIMAL in the narrow forms (38 digits; wider values were
/// refused): its DECIMAL(p > 38) columns open as DECIMAL(38,s), which is what their cells
/// and keys hold. `ALTER TABLE … MODIFY` rebuilds such a column wide.
const DEF_HEADER_1: &str = "QUARRY-TABLE-DEF 1";
const VIEW_HEADER: &str = "QUARRY-VIEW-DEF 2";
/// Version 1 had no definer line: such views read as made by `root`@`localhost` with SQL
/// SECURITY DEFINER (any account could do everything when they were made).
const VIEW_HEADER_1: &str = "QUARRY-VIEW-DEF 1";

pub(crate) fn def_text(def: &TableDef, row_format: RowFormat) -> String {
    let fmt = match row_format {
        RowFormat::Fixed => "FIXED",
        RowFormat::Dynamic => "DYNAMIC",
    };
    format!("{DEF_HEADER}\nrow_format={fmt}\n{}\n", def.create_sql(None))
}

pub(crate) fn view_text(view: &ViewDef) -> String {
    let security = if view.invoker { "INVOKER" } else { "DEFINER" };
    format!(
        "{VIEW_HEADER}\ndefiner\t{}\t{}\t{security}\n{}\n{}\n",
        escape(&view.definer.0),
        escape(&view.definer.1),
        view.columns.join("\t"),
        view.sql
    )
}

/// 1033 for `file`, named relative to the datadir; `why` says what is wrong with it.
fn incorrect(file: &Path, datadir: &Path, why: &str) -> Error {
    let name = file.strip_prefix(datadir).unwrap_or(file);
    Error::incorrect_file(format!("./{}", name.display()), why)
}

/// A definition file's second line and the rest, after its header line.
fn split_headed(
    bytes: Vec<u8>,
    file: &Path,
    datadir: &Path,
    header: &str,
) -> Result<(String, String)> {
    let text = String::from_utf8(bytes).map_err(|_| incorrect(file, datadir, "not UTF-8"))?;
    let mut lines = text.splitn(3, '\n');
    if lines.next() != Some(header) {
        return Err(incorrect(file, datadir, "unknown header"));
    }
    let second = lines.next().unwrap_or("").to_string();
    Ok((second, lines.next().unwrap_or("").to_string()))
}

/// A table definition file: the definition and its row format.
pub(crate) fn read_def(file: &Path, datadir: &Path) -> Result<(TableDef, RowFormat)> {
    let bytes = std::fs::read(file).map_err(|e| Error::io(file.display(), e))?;
    def_from_bytes(bytes, file, datadir)
}

/// A table definition from the bytes of its file (named `file` in errors).
fn def_from_bytes(bytes: Vec<u8>, file: &Path, datadir: &Path) -> Result<(TableDef, RowFormat)> {
    let version_1 = bytes.starts_with(format!("{DEF_HEADER_1}\n").as_bytes());
    let header = if version_1 { DEF_HEADER_1 } else { DEF_HEADER };
    let (fmt_line, sql) = split_headed(bytes, file, datadir, header)?;
    let row_format = match fmt_line.strip_prefix("row_format=") {
        Some("FIXED") => RowFormat::Fixed,
        _ => RowFormat::Dynamic,
    };
    let bad = |e: Error| incorrect(file, datadir, &e.message);
    let stmt = quarry_sql::parse_one(&sql).map_err(bad)?;
    let quarry_sql::Stmt::Ast(ast) = stmt else {
        return Err(incorrect(file, datadir, "not a CREATE TABLE"));
    };
    let quarry_sql::ast::Statement::CreateTable(mut ct) = *ast else {
        return Err(incorrect(file, datadir, "not a CREATE TABLE"));
    };
    if version_1 {
        widen_scale_above_precision(&mut ct);
    }
    let mut def = table_def_from_ast(&ct).map_err(bad)?;
    if version_1 {
        for c in &mut def.columns {
            if c.ty.wide_decimal() {
                c.ty.len = quarry_common::decimal::NARROW_PRECISION;
            }
        }
    }
    Ok((def, row_format))
}

/// Version 1 took DECIMAL(p,s) with s > p (now 1427) and stored its cells at scale s:
/// such a column reads as DECIMAL(s,s), which holds every one of them.
fn widen_scale_above_precision(ct: &mut quarry_sql::ast::CreateTable) {
    use quarry_sql::ast::{DataType as D, ExactNumberInfo};
    for c in &mut ct.columns {
        if let D::Decimal(info)
        | D::Numeric(info)
        | D::Dec(info)
        | D::DecimalUnsigned(info)
        | D::DecUnsigned(info) = &mut c.data_type
        {
            if let ExactNumberInfo::PrecisionAndScale(p, s) = info {
                if *s > 0 && *s as u64 > *p {
                    *p = *s as u64;
                }
            }
        }
    }
}

pub(crate) fn read_view(file: &Path, datadir: &Path) -> Result<ViewDef> {
    let bytes = std::fs::read(file).map_err(|e| Error::io(file.display(), e))?;
    let version_1 = bytes.starts_with(format!("{VIEW_HEADER_1}\n").as_bytes());
    let header = if version_1 {
        VIEW_HEADER_1
    } else {
        VIEW_HEADER
    };
    let (second, rest) = split_headed(bytes, file, datadir, header)?;
    let (definer, invoker, cols, sql) = if version_1 {
        (("root".into(), "localhost".into()), false, second, rest)
    } else {
        let f: Vec<&str> = second.split('\t').collect();
        let invoker = match f.as_slice() {
            ["definer", _, _, "DEFINER"] => false,
            ["definer", _, _, "INVOKER"] => true,
            _ => return Err(incorrect(file, datadir, "no definer line")),
        };
        let (cols, sql) = rest.split_once('\n').unwrap_or((rest.as_str(), ""));
        (
            (unescape(f[1]), unescape(f[2])),
            invoker,
            cols.to_string(),
            sql.to_string(),
        )
    };
    let columns = if cols.is_empty() {
        vec![]
    } else {
        cols.split('\t').map(str::to_string).collect()
    };
    Ok(ViewDef {
        columns,
        sql: sql.trim_end().to_string(),
        definer,
        invoker,
    })
}

/// Definition files damaged or written by hand: reading one gives 1033, never a panic.
/// Inputs: definitions of tables with every kind of column and key, mutated.
#[cfg(test)]
mod fuzz {
    use super::*;
    use quarry_common::fuzz::{mutate, run};
    use std::path::PathBuf;

    #[test]
    fn definition_files_never_panic() {
        let samples: Vec<Vec<u8>> = [
            "CREATE TABLE `t` (\n  `id` int(11) NOT NULL AUTO_INCREMENT,\n  `pad` varchar(200) DEFAULT 'x',\n  `d` decimal(20,6) DEFAULT NULL,\n  `k` int(11) NOT NULL DEFAULT 7,\n  PRIMARY KEY (`id`),\n  KEY `pad` (`pad`(20)),\n  UNIQUE KEY `kd` (`k` DESC, `d`)\n) ENGINE=InnoDB AUTO_INCREMENT=5 DEFAULT CHARSET=utf8mb4",
            "CREATE TABLE `c` (\n  `a` bigint(20) unsigned DEFAULT NULL,\n  `b` datetime(6) DEFAULT CURRENT_TIMESTAMP,\n  `t` text,\n  `y` year(4),\n  `f` float COMMENT 'columnar_storage'\n) ENGINE=COLUMN",
        ]
        .iter()
        .map(|sql| format!("{DEF_HEADER}\nrow_format=DYNAMIC\n{sql}\n").into_bytes())
        .collect();
        let (file, datadir) = (PathBuf::from("/d/db/t.qdef"), PathBuf::from("/d"));
        run(
            "definition file",
            500,
            |rng| {
                let base = rng.pick(&samples).clone();
                mutate(rng, &base)
            },
            |input| {
                if let Err(e) = def_from_bytes(input.to_vec(), &file, &datadir) {
                    assert_eq!(e.code, 1033, "{}", e.message);
                }
            },
        );
    }
}
