//! Why a command-line value of the webhook options does not parse (clap's
//! value parsers take any `std::error::Error` and show its message).

use std::num::ParseIntError;

/// A value clap could not take.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArgError {
    /// A duration without a number.
    #[error("{0:?}: expected a number with s, m, h or d")]
    NotANumber(String),
    /// A duration with a unit other than s, m, h, d.
    #[error("{0:?}: unknown unit {1:?} (s, m, h, d)")]
    UnknownUnit(String, String),
    /// A duration past what a `Duration` holds.
    #[error("{0:?}: too large")]
    TooLarge(String),
    /// Not `KEY=VALUE`.
    #[error("{0:?}: expected KEY=VALUE")]
    NotALabel(String),
    /// Not `NAMESPACE/NAME`.
    #[error("{0:?}: expected NAMESPACE/NAME")]
    NotALease(String),
    /// Not `NAMESPACE/NAME[:PORT]`.
    #[error("{0:?}: expected NAMESPACE/NAME[:PORT]")]
    NotAService(String),
    /// `NAMESPACE/NAME:PORT` with a port that is not a number.
    #[error("{value:?}: bad port: {source}")]
    BadPort {
        /// The whole value.
        value: String,
        /// Why the port is not a number.
        #[source]
        source: ParseIntError,
    },
}
