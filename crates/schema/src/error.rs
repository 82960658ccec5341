//! Errors of the schema crate.

use crate::Location;

/// Decoding errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The text is not a valid definition: syntax, unknown field (`ownerName`), wrong type.
    #[error("{}{message}", location.as_ref().map(|l| format!("{l}: ")).unwrap_or_default())]
    Decode {
        /// Where, when known.
        location: Option<Location>,
        /// What is wrong.
        message: String,
    },
}

impl Error {
    /// Where the error is, when known.
    ///
    /// ```
    /// let e = wlmap_schema::decode("kind: [", "x.yaml").unwrap_err();
    /// assert_eq!(e.location().unwrap().file, "x.yaml");
    /// ```
    pub fn location(&self) -> Option<&Location> {
        match self {
            Error::Decode { location, .. } => location.as_ref(),
        }
    }
}

/// Result with this crate's error.
pub type Result<T, E = Error> = std::result::Result<T, E>;
