//! The one error type of the core; the binding layer maps it to Python exceptions.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoreError {
    /// A value is out of range or inconsistent (Python `ValueError`).
    Value(String),
    /// An argument has the wrong type (Python `TypeError`).
    Type(String),
}

impl fmt::Display for CoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CoreError::Value(message) | CoreError::Type(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for CoreError {}

pub type CoreResult<T> = Result<T, CoreError>;

pub(crate) fn value_error<T>(message: impl Into<String>) -> CoreResult<T> {
    Err(CoreError::Value(message.into()))
}
