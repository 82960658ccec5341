//! Errors of the schema crate.

use crate::Location;

/// Decoding errors.
///
/// ```
/// let err = wlmap_schema::decode("kind: [", "x.yaml").unwrap_err();
/// assert!(matches!(err, wlmap_schema::Error::Decode { .. }));
/// assert!(err.to_string().starts_with("x.yaml:"));
/// ```
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
///
/// ```
/// let r: wlmap_schema::Result<wlmap_schema::Karta> = wlmap_schema::decode_one("{}", "empty.json");
/// assert!(r.is_err());
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;
