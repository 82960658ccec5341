//! The public types of an evaluation's limits and of its failures. Every message about a
//! spent budget or a size cap is written here, by [`Exhausted`]'s `Display`.

use std::ops::Range;
use std::time::Duration;

/// Limits of one evaluation.
///
/// ```
/// let l = wlmap_expr::Limits::default();
/// assert_eq!(l.max_outputs, 10_000);
/// ```
#[derive(Debug, Clone)]
pub struct Limits {
    /// Steps: iterations of loop builtins (`range`, `repeat`, `recurse`, `while`, `until`),
    /// collected items, and values made by `,`, `.[]` and `..`.
    pub max_steps: u64,
    /// Number of outputs of one expression.
    pub max_outputs: usize,
    /// Wall-clock budget, checked while looping.
    pub timeout: Duration,
    /// Longest string (bytes) or array/object (entries) that a loop may carry or one
    /// operation may build, and the largest output (values, keys and string bytes, read as a
    /// tree). Kubernetes objects are at most 1.5 MB, so 4 MiB is generous. What `+`, `*` and
    /// conversions to strings build in one evaluation adds up to at most 64 times this.
    pub max_len: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_steps: 100_000,
            max_outputs: 10_000,
            timeout: Duration::from_secs(1),
            max_len: 4 << 20,
        }
    }
}

/// An expression that failed to compile.
///
/// ```
/// let e = wlmap_expr::Expr::compile("env.HOME").unwrap_err();
/// assert_eq!(e.source_text, "env.HOME");
/// assert_eq!(e.span, 0..3); // the offending `env`
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at byte {}..{} of `{source_text}`", span.start, span.end)]
pub struct CompileError {
    /// The expression text.
    pub source_text: String,
    /// Byte range inside the expression.
    pub span: Range<usize>,
    /// What is wrong.
    pub message: String,
}

/// An evaluation that failed.
///
/// ```
/// use wlmap_expr::{EvalError, Expr, Input, Limits, to_val};
/// let e = Expr::compile(".a - 1").unwrap();
/// let input = to_val(&serde_json::json!({"a": "x"}));
/// let err = e.evaluate(Input::Val(&input), &[], &Limits::default()).unwrap_err();
/// assert!(matches!(err, EvalError::Runtime { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// A jq run-time error, e.g. `.a * 2` on a string (`cannot multiply`).
    #[error("{message}")]
    Runtime {
        /// jq's message.
        message: String,
    },
    /// `last(range(1e12))`: a limit of the evaluation ran out.
    #[error("evaluation exceeded its {which}")]
    Budget {
        /// Which limit.
        which: Exhausted,
    },
}

/// The limit an evaluation ran out of ([`EvalError::Budget`]). Its `Display` is the one
/// wording of each limit, for the evaluation's error and for the jq error value a builtin
/// returns.
///
/// ```
/// use wlmap_expr::{EvalError, Exhausted, Expr, Input, Limits, to_val};
/// let e = Expr::compile("last(range(1e9))").unwrap();
/// let null = to_val(&serde_json::Value::Null);
/// let err = e.evaluate(Input::Val(&null), &[], &Limits::default()).unwrap_err();
/// assert_eq!(err, EvalError::Budget { which: Exhausted::Steps });
/// assert_eq!(err.to_string(), "evaluation exceeded its step budget");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Exhausted {
    /// [`Limits::max_steps`].
    Steps,
    /// [`Limits::timeout`].
    Time,
    /// [`Limits::max_outputs`] (the cap).
    Outputs(usize),
    /// [`Limits::max_len`] (the cap): a value built or kept, or an output, too long.
    Size(usize),
    /// A value nested deeper than this many levels.
    Depth(usize),
    /// All that `+`, `*` and conversions to strings built in one evaluation (the cap).
    TotalSize(usize),
    /// A number too large to multiply a string or an array by.
    NumberSize,
}

impl std::fmt::Display for Exhausted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exhausted::Steps => write!(f, "step budget"),
            Exhausted::Time => write!(f, "time budget"),
            Exhausted::Outputs(n) => write!(f, "output cap of {n}"),
            Exhausted::Size(n) => write!(f, "size cap of {n} bytes or entries"),
            Exhausted::Depth(n) => write!(f, "depth cap of {n} levels"),
            Exhausted::TotalSize(n) => write!(f, "total size budget of {n} bytes or entries"),
            Exhausted::NumberSize => write!(f, "number size cap"),
        }
    }
}
