//! Scans as column vectors ([`Table::scan_columns`](crate::Table::scan_columns)): the batch
//! an engine hands the vectorised executor, and the Apache Arrow array each SQL type
//! travels as. Engines that build vectors and the executor that reads them both take the
//! mapping from here, so a value read from a vector is the value a row scan gives.
//!
//! Must not touch: expressions, aggregates (the executor's), encodings (the engines').

use std::sync::Arc;

use arrow_array::types::UInt16Type;
use arrow_array::{
    Array, ArrayRef, Decimal128Array, DictionaryArray, Float64Array, Int64Array, StringArray,
};
use arrow_buffer::NullBuffer;
use quarry_common::{Decimal, Result, SqlType, TypeKind, Value};

pub use arrow_array;
pub use arrow_buffer;

/// The vector a column's values travel in.
///
/// | SQL type | array | value |
/// |---|---|---|
/// | TINYINT … BIGINT (not BIGINT UNSIGNED) | `Int64Array` | `Value::Int` |
/// | DECIMAL(p, s), p ≤ 38 | `Decimal128Array`, scale s | `Value::Decimal` of scale s |
/// | FLOAT, DOUBLE | `Float64Array` | `Value::Double` |
/// | CHAR, VARCHAR, TEXT | `StringArray` or `DictionaryArray<UInt16, Utf8>` | `Value::Str` |
///
/// Other types (dates and times, binary strings, BIGINT UNSIGNED, wider decimals) have no
/// vector yet: a scan reading them is not offered as vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorType {
    Int,
    Decimal(u8),
    Double,
    Str,
}

impl VectorType {
    pub fn of(ty: &SqlType) -> Option<VectorType> {
        Some(match ty.kind {
            TypeKind::BigInt if ty.unsigned => return None,
            TypeKind::TinyInt
            | TypeKind::SmallInt
            | TypeKind::MediumInt
            | TypeKind::Int
            | TypeKind::BigInt => VectorType::Int,
            TypeKind::Decimal if ty.len <= 38 => VectorType::Decimal(ty.scale),
            TypeKind::Float | TypeKind::Double => VectorType::Double,
            TypeKind::Char | TypeKind::VarChar | TypeKind::Text if !ty.is_binary() => {
                VectorType::Str
            }
            _ => return None,
        })
    }

    /// An array of `values`, which must be of this type's value kind or NULL (any other
    /// value is an error, never a silent NULL).
    pub fn array_of<'v>(self, values: impl Iterator<Item = &'v Value>) -> Result<ArrayRef> {
        // Each value through `pick`; NULL as NULL, a value `pick` refuses as an error.
        fn each<'v, X, A: FromIterator<Option<X>>>(
            ty: VectorType,
            values: impl Iterator<Item = &'v Value>,
            pick: impl Fn(&'v Value) -> Option<X>,
        ) -> Result<A> {
            values
                .map(|v| match v {
                    Value::Null => Ok(None),
                    v => pick(v).map(Some).ok_or_else(|| {
                        quarry_common::Error::internal(format!("a {v:?} in a {ty:?} vector"))
                    }),
                })
                .collect()
        }
        Ok(match self {
            VectorType::Int => Arc::new(each::<_, Int64Array>(self, values, |v| match v {
                Value::Int(i) => Some(*i),
                _ => None,
            })?),
            VectorType::Decimal(s) => {
                let a = each::<_, Decimal128Array>(self, values, |v| match v {
                    // Widening is exact; a value with more digits than the column keeps
                    // is no value of it.
                    Value::Decimal(d) if d.scale <= s => {
                        d.checked_rescale(s).and_then(|d| d.mantissa.to_i128())
                    }
                    _ => None,
                })?;
                Arc::new(decimal_scale(a, s)?)
            }
            VectorType::Double => Arc::new(each::<_, Float64Array>(self, values, |v| match v {
                Value::Double(f) => Some(*f),
                _ => None,
            })?),
            VectorType::Str => Arc::new(each::<_, StringArray>(self, values, |v| match v {
                Value::Str(s) => Some(s.as_str()),
                _ => None,
            })?),
        })
    }
}

/// A decimal array with its column's scale (precision 38: every mantissa fits).
pub fn decimal_scale(a: Decimal128Array, scale: u8) -> Result<Decimal128Array> {
    a.with_precision_and_scale(38, scale as i8)
        .map_err(|e| quarry_common::Error::internal(format!("decimal vector: {e}")))
}

/// Row `i` of a vector built as [`VectorType`] says, as the row scan gives it.
pub fn value_at(a: &dyn Array, i: usize) -> Value {
    if a.is_null(i) {
        return Value::Null;
    }
    let any = a.as_any();
    if let Some(a) = any.downcast_ref::<Int64Array>() {
        Value::Int(a.value(i))
    } else if let Some(a) = any.downcast_ref::<Decimal128Array>() {
        Value::Decimal(Decimal::new(a.value(i), a.scale() as u8))
    } else if let Some(a) = any.downcast_ref::<Float64Array>() {
        Value::Double(a.value(i))
    } else if let Some(a) = any.downcast_ref::<StringArray>() {
        Value::Str(a.value(i).to_string())
    } else if let Some(a) = any.downcast_ref::<DictionaryArray<UInt16Type>>() {
        let k = a.keys().value(i) as usize;
        match a.values().as_any().downcast_ref::<StringArray>() {
            Some(v) => Value::Str(v.value(k).to_string()),
            None => Value::Null,
        }
    } else {
        Value::Null
    }
}

/// NULLs of a vector from one flag per row (true = NULL); None when there are none.
pub fn nulls_from(null: &[bool]) -> Option<NullBuffer> {
    null.iter()
        .any(|&n| n)
        .then(|| NullBuffer::from_iter(null.iter().map(|&n| !n)))
}

/// Some rows of a scan, a vector per column asked for (in the order asked), all of
/// `rows` rows.
#[derive(Debug)]
pub struct ColumnBatch {
    pub columns: Vec<ArrayRef>,
    pub rows: usize,
}

pub trait ColumnCursor {
    /// Next batch, or None at the end. A batch may hold no rows: a scan whose condition
    /// kept none of the many records it read hands one over, so its caller gets to check
    /// for KILL.
    fn next_columns(&mut self) -> Result<Option<ColumnBatch>>;
}

/// Cursors over consecutive runs of a scan's rows, each for a thread of its own.
pub type ColumnCursors<'a> = Vec<Box<dyn ColumnCursor + Send + 'a>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_come_back_from_their_vectors() {
        let cases = [
            (
                VectorType::Int,
                vec![Value::Int(-3), Value::Null, Value::Int(i64::MAX)],
            ),
            (
                VectorType::Decimal(2),
                vec![
                    Value::Decimal(Decimal::new(12345, 2)),
                    Value::Null,
                    Value::Decimal(Decimal::new(-1, 2)),
                ],
            ),
            (
                VectorType::Double,
                vec![Value::Double(1.5), Value::Null, Value::Double(-0.0)],
            ),
            (
                VectorType::Str,
                vec![
                    Value::Str("ä b".into()),
                    Value::Null,
                    Value::Str(String::new()),
                ],
            ),
        ];
        for (ty, vals) in cases {
            let a = ty.array_of(vals.iter()).unwrap();
            let back: Vec<Value> = (0..vals.len()).map(|i| value_at(&*a, i)).collect();
            assert_eq!(format!("{back:?}"), format!("{vals:?}"), "{ty:?}");
        }
    }

    #[test]
    fn a_value_of_another_kind_is_an_error() {
        assert!(VectorType::Int
            .array_of([Value::Str("1".into())].iter())
            .is_err());
        let too_wide = Value::Decimal(Decimal::new(1, 3));
        assert!(VectorType::Decimal(2).array_of([too_wide].iter()).is_err());
    }
}
