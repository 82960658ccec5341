//! The controller's errors, with their sources kept: what failed, and whether trying again
//! soon can help ([`Error::is_transient`]), so retries look at kinds, never at messages.

use std::path::PathBuf;
use std::time::Duration;

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A request to the API server failed.
    #[error("{what}: {source}")]
    Api {
        /// The request (`apply PodGroup train-gang`).
        what: String,
        /// What the client said.
        #[source]
        source: kube::Error,
    },
    /// A request got no answer in time.
    #[error("{what} did not come within {after:?}")]
    Timeout {
        /// The request.
        what: String,
        /// How long it waited.
        after: Duration,
    },
    /// The workload's gang objects cannot be rendered with its definition.
    #[error(transparent)]
    Evaluate(#[from] wlmap_engine::Error),
    /// A file the options name cannot be read.
    #[error("{}: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// Why not.
        #[source]
        source: std::io::Error,
    },
    /// A certificate or key cannot be made or read.
    #[error(transparent)]
    Tls(#[from] crate::tls::Error),
    /// The cluster or the options cannot work as asked (a kind not served, an address
    /// taken); the message says what to change.
    #[error("{0}")]
    Setup(String),
    /// An object looked for is not there, or is another one of the same name now.
    #[error("{0}")]
    Missing(String),
    /// The inventory holds the workload, but its definition cannot evaluate it (the
    /// inventory keeps the engine's error; its message is carried).
    #[error("{0}")]
    Unevaluated(String),
}

impl Error {
    /// A failed request, saying which.
    pub fn api(what: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
        let what = what.into();
        move |source| Error::Api { what, source }
    }

    /// True when the same request may succeed if made again soon: the server throttled,
    /// failed or was not reached, or another writer came first (409). A refusal (400, 403,
    /// 404, 422), a definition that does not evaluate or a bad option stays until something
    /// changes.
    ///
    /// ```
    /// use wlmap_controller::Error;
    /// let status = |code| kube::Error::Api(kube::core::Status::failure("x", "y").with_code(code).boxed());
    /// assert!(Error::api("apply")(status(503)).is_transient());
    /// assert!(Error::api("apply")(status(409)).is_transient());
    /// assert!(!Error::api("apply")(status(422)).is_transient());
    /// assert!(!Error::Setup("no".into()).is_transient());
    /// ```
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Api {
                source: kube::Error::Api(s),
                ..
            } => s.code == 409 || s.code == 429 || s.code >= 500,
            // The connection: refused, reset, timed out, cut mid-answer.
            Error::Api { source, .. } => matches!(
                source,
                kube::Error::HyperError(_)
                    | kube::Error::Service(_)
                    | kube::Error::ReadEvents(_)
                    | kube::Error::HttpError(_)
            ),
            Error::Timeout { .. } => true,
            _ => false,
        }
    }
}

/// Why a definition is refused (the Karta webhook's answer, a Karta's `Valid` condition).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);
