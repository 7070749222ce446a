//! Shared vocabulary of every Quarry layer: values, SQL types, collation and the error type.
//!
//! Owns: [`Value`] and its MySQL conversion/comparison rules, [`SqlType`] with wire metadata,
//! [`Error`] with the single mapping to MySQL error numbers and SQLSTATE.
//! Must not touch: files, sockets, SQL text.

pub mod error;
pub mod types;
pub mod value;

pub use error::{Error, Result};
pub use types::{SqlType, TypeKind};
pub use value::{Date, DateTime, Decimal, Row, Value};
