//! SQL column types as MySQL declares them, and what each one tells a client.
//!
//! A [`SqlType`] is what `CREATE TABLE` declared (or what the binder inferred for an
//! expression). It knows its wire type code, display length and flags, so the protocol can
//! send exact column metadata without knowing anything about SQL.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TypeKind {
    TinyInt,
    SmallInt,
    MediumInt,
    Int,
    BigInt,
    Decimal,
    Float,
    Double,
    Char,
    VarChar,
    Text,
    Binary,
    VarBinary,
    Blob,
    Date,
    DateTime,
    Timestamp,
    Time,
    Year,
    /// The type of the `NULL` literal.
    Null,
}

/// A declared or inferred SQL type.
/// A FLOAT/DOUBLE's scale when its decimals are fixed at zero (FLOOR(f), ROUND(f, -1):
/// shown without an exponent, 1e20 as 100000000000000000000). A double's scale 0 means its
/// decimals are not fixed; 1..=30 fixes that many (ROUND(f, 2)).
pub const DOUBLE_FIXED_ZERO: u8 = 31;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SqlType {
    pub kind: TypeKind,
    pub unsigned: bool,
    /// Characters for strings, precision for DECIMAL, display width otherwise (0 = default).
    pub len: u32,
    /// Digits after the point for DECIMAL / fractional seconds.
    pub scale: u8,
    /// A character string's collation (and so its character set); others keep the
    /// default.
    pub coll: crate::Collation,
}

/// Wire-protocol column type codes (`enum_field_types`).
pub mod wire {
    pub const DECIMAL: u8 = 0;
    pub const TINY: u8 = 1;
    pub const SHORT: u8 = 2;
    pub const LONG: u8 = 3;
    pub const FLOAT: u8 = 4;
    pub const DOUBLE: u8 = 5;
    pub const NULL: u8 = 6;
    pub const TIMESTAMP: u8 = 7;
    pub const LONGLONG: u8 = 8;
    pub const INT24: u8 = 9;
    pub const DATE: u8 = 10;
    pub const TIME: u8 = 11;
    pub const DATETIME: u8 = 12;
    pub const YEAR: u8 = 13;
    pub const VARCHAR: u8 = 15;
    pub const NEWDECIMAL: u8 = 246;
    pub const TINY_BLOB: u8 = 249;
    pub const MEDIUM_BLOB: u8 = 250;
    pub const LONG_BLOB: u8 = 251;
    pub const BLOB: u8 = 252;
    pub const VAR_STRING: u8 = 253;
    pub const STRING: u8 = 254;
}

/// Column definition flags sent in result-set metadata.
pub mod flags {
    pub const NOT_NULL: u16 = 1;
    pub const PRI_KEY: u16 = 2;
    pub const UNIQUE_KEY: u16 = 4;
    pub const MULTIPLE_KEY: u16 = 8;
    pub const BLOB: u16 = 16;
    pub const UNSIGNED: u16 = 32;
    pub const BINARY: u16 = 128;
    pub const AUTO_INCREMENT: u16 = 512;
    pub const TIMESTAMP: u16 = 1024;
    pub const NO_DEFAULT_VALUE: u16 = 4096;
    pub const NUM: u16 = 32768;
}

/// The bytes TINYTEXT, TEXT, MEDIUMTEXT and LONGTEXT hold (and the BLOBs alike).
pub const LOB_BYTES: [u32; 4] = [255, 65_535, 16_777_215, u32::MAX];

/// Which of the four TEXT/BLOB sizes is the smallest that holds `bytes`.
fn lob_size(bytes: u64) -> usize {
    LOB_BYTES
        .iter()
        .position(|&b| bytes <= b as u64)
        .unwrap_or(LOB_BYTES.len() - 1)
}

pub const CHARSET_UTF8MB4: u16 = 45; // utf8mb4_general_ci
pub const CHARSET_BINARY: u16 = 63;

impl SqlType {
    pub const fn new(kind: TypeKind) -> SqlType {
        SqlType {
            kind,
            unsigned: false,
            len: 0,
            scale: 0,
            coll: crate::Collation::Utf8mb4GeneralCi,
        }
    }
    pub const BIGINT: SqlType = SqlType::new(TypeKind::BigInt);
    pub const INT: SqlType = SqlType::new(TypeKind::Int);
    pub const DOUBLE: SqlType = SqlType::new(TypeKind::Double);
    pub const NULL: SqlType = SqlType::new(TypeKind::Null);
    pub const DATE: SqlType = SqlType::new(TypeKind::Date);
    pub const DATETIME: SqlType = SqlType::new(TypeKind::DateTime);
    pub const TIME: SqlType = SqlType::new(TypeKind::Time);
    /// TEXT or BLOB (`kind`) holding at most `bytes` (255: TINY…, 65 535, 16 777 215:
    /// MEDIUM…, 4 294 967 295: LONG…).
    pub const fn lob(kind: TypeKind, bytes: u32) -> SqlType {
        SqlType {
            kind,
            unsigned: false,
            len: bytes,
            scale: 0,
            coll: crate::Collation::Utf8mb4GeneralCi,
        }
    }
    /// The smallest TEXT or BLOB (`kind`) that holds `bytes` (`BLOB(n)`).
    pub fn lob_holding(kind: TypeKind, bytes: u64) -> SqlType {
        SqlType::lob(kind, LOB_BYTES[lob_size(bytes)])
    }
    pub fn varchar(len: u32) -> SqlType {
        SqlType {
            kind: TypeKind::VarChar,
            unsigned: false,
            len,
            scale: 0,
            coll: crate::Collation::Utf8mb4GeneralCi,
        }
    }
    pub fn decimal(precision: u32, scale: u8) -> SqlType {
        SqlType {
            kind: TypeKind::Decimal,
            unsigned: false,
            len: precision.min(65),
            scale: scale.min(38),
            coll: crate::Collation::Utf8mb4GeneralCi,
        }
    }

    /// A DECIMAL with more digits than an i128 mantissa holds: stored in the engines'
    /// 32-byte forms (docs/formats).
    pub fn wide_decimal(&self) -> bool {
        self.kind == TypeKind::Decimal && self.len > crate::decimal::NARROW_PRECISION
    }

    pub fn is_integer(&self) -> bool {
        use TypeKind::*;
        matches!(
            self.kind,
            TinyInt | SmallInt | MediumInt | Int | BigInt | Year
        )
    }
    pub fn is_numeric(&self) -> bool {
        self.is_integer()
            || matches!(
                self.kind,
                TypeKind::Decimal | TypeKind::Float | TypeKind::Double
            )
    }
    pub fn is_string(&self) -> bool {
        use TypeKind::*;
        matches!(self.kind, Char | VarChar | Text | Binary | VarBinary | Blob)
    }
    pub fn is_binary(&self) -> bool {
        matches!(
            self.kind,
            TypeKind::Binary | TypeKind::VarBinary | TypeKind::Blob
        )
    }
    pub fn is_temporal(&self) -> bool {
        use TypeKind::*;
        matches!(self.kind, Date | DateTime | Timestamp | Time)
    }
    /// Variable-length types (their presence makes DYNAMIC the default row format).
    pub fn is_variable(&self) -> bool {
        use TypeKind::*;
        matches!(self.kind, VarChar | Text | VarBinary | Blob)
    }

    /// Inclusive range of an integer type.
    pub fn int_range(&self) -> (i128, i128) {
        use TypeKind::*;
        let bits = match self.kind {
            TinyInt => 8,
            SmallInt => 16,
            MediumInt => 24,
            Int => 32,
            Year => 16,
            _ => 64,
        };
        if self.unsigned {
            (0, (1i128 << bits) - 1)
        } else {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        }
    }

    /// The bytes a TEXT or BLOB type holds (a length of 0, as a computed value's type
    /// has, counts as TEXT/BLOB's 65 535).
    pub fn lob_bytes(&self) -> u32 {
        if self.len == 0 {
            LOB_BYTES[1]
        } else {
            self.len
        }
    }

    pub fn wire_type(&self) -> u8 {
        use TypeKind::*;
        match self.kind {
            TinyInt => wire::TINY,
            SmallInt => wire::SHORT,
            MediumInt => wire::INT24,
            Int => wire::LONG,
            BigInt => wire::LONGLONG,
            Decimal => wire::NEWDECIMAL,
            Float => wire::FLOAT,
            Double => wire::DOUBLE,
            Char | Binary => wire::STRING,
            VarChar | VarBinary => wire::VAR_STRING,
            Text | Blob => wire::BLOB,
            Date => wire::DATE,
            DateTime => wire::DATETIME,
            Timestamp => wire::TIMESTAMP,
            Time => wire::TIME,
            Year => wire::YEAR,
            Null => wire::NULL,
        }
    }

    pub fn charset(&self) -> u16 {
        if self.is_string() && !self.is_binary() {
            CHARSET_UTF8MB4
        } else {
            CHARSET_BINARY
        }
    }

    /// Display length in bytes, as MariaDB reports it in column metadata.
    pub fn display_length(&self) -> u32 {
        use TypeKind::*;
        let w = |d: u32| if self.len > 0 { self.len } else { d };
        match self.kind {
            TinyInt => w(if self.unsigned { 3 } else { 4 }),
            SmallInt => w(if self.unsigned { 5 } else { 6 }),
            MediumInt => w(if self.unsigned { 8 } else { 9 }),
            Int => w(if self.unsigned { 10 } else { 11 }),
            BigInt => w(20),
            Year => 4,
            Decimal => {
                self.len + if self.scale > 0 { 1 } else { 0 } + if self.unsigned { 0 } else { 1 }
            }
            Float => 12,
            Double => 22,
            Char | VarChar => self.len * 4,
            Binary | VarBinary => self.len,
            Text => self.lob_bytes().saturating_mul(4),
            Blob => self.lob_bytes(),
            Date => 10,
            DateTime | Timestamp => {
                19 + if self.scale > 0 {
                    self.scale as u32 + 1
                } else {
                    0
                }
            }
            Time => {
                10 + if self.scale > 0 {
                    self.scale as u32 + 1
                } else {
                    0
                }
            }
            Null => 0,
        }
    }

    /// Decimals byte of the column definition (31 = "not fixed" for floats and strings).
    pub fn decimals(&self) -> u8 {
        use TypeKind::*;
        match self.kind {
            Decimal | DateTime | Timestamp | Time => self.scale,
            // MariaDB's 31 is "not fixed", which a double's scale 0 is here.
            Float | Double => match self.scale {
                0 => 31,
                DOUBLE_FIXED_ZERO => 0,
                s => s,
            },
            Char | VarChar | Text | Binary | VarBinary | Blob => 0,
            _ => 0,
        }
    }

    pub fn column_flags(&self) -> u16 {
        let mut f = 0;
        if self.unsigned {
            f |= flags::UNSIGNED;
        }
        if self.is_numeric() {
            f |= flags::NUM;
        }
        if matches!(self.kind, TypeKind::Text | TypeKind::Blob) {
            f |= flags::BLOB;
        }
        if self.is_binary() || self.is_string() && self.coll.compares_bytes() {
            f |= flags::BINARY;
        }
        f
    }
}

impl fmt::Display for SqlType {
    /// The type as `SHOW CREATE TABLE` prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use TypeKind::*;
        let base = match self.kind {
            TinyInt => "tinyint",
            SmallInt => "smallint",
            MediumInt => "mediumint",
            Int => "int",
            BigInt => "bigint",
            Decimal => {
                return write!(
                    f,
                    "decimal({},{}){}",
                    self.len,
                    self.scale,
                    if self.unsigned { " unsigned" } else { "" }
                )
            }
            Float => "float",
            Double => "double",
            Char => return write!(f, "char({})", self.len),
            VarChar => return write!(f, "varchar({})", self.len),
            Binary => return write!(f, "binary({})", self.len),
            VarBinary => return write!(f, "varbinary({})", self.len),
            Text | Blob => {
                let size = ["tiny", "", "medium", "long"][lob_size(self.lob_bytes() as u64)];
                let kind = if self.kind == Text { "text" } else { "blob" };
                return write!(f, "{size}{kind}");
            }
            Date => "date",
            // Fractional digits are part of the type (definition files are this text).
            DateTime | Timestamp | Time if self.scale > 0 => {
                let base = match self.kind {
                    DateTime => "datetime",
                    Timestamp => "timestamp",
                    _ => "time",
                };
                return write!(f, "{base}({})", self.scale);
            }
            DateTime => "datetime",
            Timestamp => "timestamp",
            Time => "time",
            Year => "year",
            Null => "null",
        };
        if self.is_integer() && self.kind != Year {
            write!(f, "{base}({})", self.display_length())?;
        } else {
            f.write_str(base)?;
        }
        if self.unsigned {
            f.write_str(" unsigned")?;
        }
        Ok(())
    }
}
