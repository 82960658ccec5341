//! Exit codes and the CLI's error type: one place decides how each failure ends the process.

/// Process exit codes (stable; scripts rely on them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// Success (documented; returned by `main` falling through).
    #[allow(dead_code)]
    Ok = 0,
    /// Runtime error: cluster unreachable or forbidden, a write conflict that persists.
    Runtime = 1,
    /// Usage error (clap also exits 2).
    Usage = 2,
    /// The object was not found.
    NotFound = 3,
    /// No definition for the kind.
    NoDefinition = 4,
    /// Invalid input: malformed manifest, definition, snapshot or expression, an object its
    /// definition cannot evaluate (wrong types, a budget exhausted), or a change the cluster's
    /// admission (an operator's webhook) refuses.
    Invalid = 5,
}

/// A failure with its exit code and one clear line of text.
#[derive(Debug)]
pub struct Failure {
    /// Exit code.
    pub code: Code,
    /// The error chain.
    pub error: anyhow::Error,
}

impl Failure {
    /// A failure with a code.
    pub fn new(code: Code, error: impl Into<anyhow::Error>) -> Self {
        Failure {
            code,
            error: error.into(),
        }
    }
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(e: E) -> Self {
        let error: anyhow::Error = e.into();
        let invalid_object = matches!(
            error.downcast_ref::<wlmap_engine::Error>(),
            Some(wlmap_engine::Error::Evaluation { .. } | wlmap_engine::Error::Shape { .. })
        );
        let code = if error.downcast_ref::<wlmap_schema::Error>().is_some() || invalid_object {
            Code::Invalid
        } else {
            Code::Runtime
        };
        Failure { code, error }
    }
}

/// An invalid answer (exit code 5): a workload or definition could not be read in full, and
/// what could be was printed.
pub fn invalid(msg: impl std::fmt::Display) -> Failure {
    Failure::new(Code::Invalid, anyhow::anyhow!("{msg}"))
}

/// Nothing found (exit code 3): no workload, object or kind of that name.
pub fn not_found(msg: impl std::fmt::Display) -> Failure {
    Failure::new(Code::NotFound, anyhow::anyhow!("{msg}"))
}

/// No definition reads the kind asked for (exit code 4).
pub fn no_definition(msg: impl std::fmt::Display) -> Failure {
    Failure::new(Code::NoDefinition, anyhow::anyhow!("{msg}"))
}

/// A usage error (exit code 2): the command line cannot be run as given.
pub fn usage(msg: impl std::fmt::Display) -> Failure {
    Failure::new(Code::Usage, anyhow::anyhow!("{msg}"))
}

/// Result of a command.
pub type Result<T = (), E = Failure> = std::result::Result<T, E>;

/// The error chain on one line, `outer: cause: cause`, skipping a cause whose text the line
/// already ends with (errors that print their source in their own message).
pub fn one_line(error: &anyhow::Error) -> String {
    let mut line = error.to_string();
    for cause in error.chain().skip(1) {
        let text = cause.to_string();
        if !line.ends_with(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
    }
    line
}
