//! # wlmap-expr
//!
//! jq expressions as definitions use them, evaluated in-process with the jaq crates:
//!
//! - **compiled once**: [`Expr::compile`] parses and compiles; [`Expr::evaluate`] runs many
//!   times, on a JSON document or a jaq value ([`Input`]), choosing the evaluator itself (a
//!   plain path walk, the native subset, or jaq: [`Evaluator`]);
//! - **sandboxed**: builtins that reach the process (`env`, `$ENV`, `input`, `debug`, `stderr`,
//!   `halt`, ...) are refused at compile time with the offending span, and are not even
//!   registered; user `def`s are refused when they are recursive (they could run without
//!   bound);
//! - **bounded**: every loop builtin (`range`, `repeat`, `recurse`, `while`, `until`), every
//!   collected item and every value made by `,`, `.[]` or `..` spends from a step budget, so
//!   do builtins whose one call could do unbounded work (`indices`, `contains`, regular
//!   expressions); evaluation has a deadline, and the number of outputs is capped; an
//!   exhausted budget is an [`EvalError::Budget`], never a hang, and no `try` catches it.
//!
//! ```
//! use wlmap_expr::{Expr, Input, Limits};
//! let e = Expr::compile(".spec.replicatedJobs[] | .replicas // 1").unwrap();
//! let obj = serde_json::json!({"spec": {"replicatedJobs": [{"replicas": 2}, {}]}});
//! let converted = std::sync::OnceLock::new(); // the jaq value of `obj`, made only if needed
//! let out = e.evaluate(Input::json(&obj, &converted), &[], &Limits::default()).unwrap();
//! let got: Vec<serde_json::Value> = out.iter().map(|o| o.to_json().into_owned()).collect();
//! assert_eq!(got, vec![serde_json::json!(2), serde_json::json!(1)]);
//!
//! let err = Expr::compile("env.HOME").unwrap_err();
//! assert!(err.to_string().contains("env"));
//! let spin = Expr::compile("last(repeat(.))").unwrap();
//! let r = spin.evaluate(Input::json(&obj, &converted), &[], &Limits::default());
//! assert!(matches!(r, Err(wlmap_expr::EvalError::Budget { .. })));
//! ```

mod convert;
mod costed;
mod evaluate;
mod native;
mod plain;
mod rewrite;
mod sandbox;

pub use convert::{Field, from_val, to_jq_string, to_val};
pub use evaluate::{Evaluator, Input, Output};
pub use jaq_json::Val;

use jaq_core::load::lex::{StrPart, Tok, Token};
use jaq_core::load::parse::{Def, Term};
use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, Vars};
use rewrite::{Names, Rewrite};
use sandbox::Sandbox;
use sandbox::{
    Budget, CHECKED_OPS, FORBIDDEN_VARS, FORBIDDEN_WORDS, GETPATH, PRELUDE, REMOVED_NATIVES,
    REPLACED_NATIVES, RESERVED_PREFIX, RunData, WRAPPED_NATIVES,
};
use std::ops::Range;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

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
    /// `last(range(1e12))`: the step, time or output budget ran out.
    #[error("evaluation exceeded its {which}")]
    Budget {
        /// Which budget: `step budget`, `time budget` or `output cap`.
        which: String,
    },
}

type Filter = jaq_core::Filter<Sandbox>;

/// A compiled, sandboxed jq expression.
///
/// `Expr` is `Send + Sync`: compile once, share it between threads, evaluate anywhere.
///
/// ```
/// use wlmap_expr::{Expr, Input, Limits, to_val};
/// fn shareable<T: Send + Sync>(_: &T) {}
/// let e = Expr::compile(".spec.replicas // 1").unwrap();
/// shareable(&e);
/// let input = to_val(&serde_json::json!({"spec": {"replicas": 3}}));
/// let v = e.evaluate(Input::Val(&input), &[], &Limits::default()).unwrap();
/// assert_eq!(v[0].to_json().as_ref(), &serde_json::json!(3));
/// ```
pub struct Expr {
    text: String,
    /// Set when the expression (or its batch) passed [`Batch::finish`].
    program: Arc<OnceLock<Program>>,
    /// Position in the program (its `$__which`); None for a single-expression program.
    index: Option<usize>,
    vars: Vec<String>,
    paths: OnceLock<Result<Filter, CompileError>>,
    /// Set when the text is a plain path: evaluated by walking the value, not by jaq.
    plain: Option<Vec<plain::Step>>,
    /// Set when the text is in the subset `native.rs` evaluates without jaq.
    native: Option<native::Node>,
}

/// The jaq program shared by the expressions of one batch. When every expression has a plain
/// or native form, it is compiled on first use instead of by [`Batch::finish`]: most
/// definitions never need it, and compiling it is most of the cost of loading a definition.
/// Such expressions parsed, passed the sandbox checks and bind only known names, so the
/// deferred compilation succeeds (if it ever did not, evaluation would say so).
struct Program {
    texts: Vec<String>,
    /// A batch's program dispatches on `$__which` (built when compiled: it is not small).
    batch: bool,
    /// Global variables of the program (`$__which` first for a batch).
    vars: Vec<String>,
    filter: OnceLock<Result<Filter, CompileError>>,
}

impl Program {
    /// A program compiled on first use (see [`Program::compile`]).
    fn new(texts: Vec<String>, batch: bool, vars: Vec<String>) -> Program {
        Program {
            texts,
            batch,
            vars,
            filter: OnceLock::new(),
        }
    }

    /// Compile now if not yet done (once; later calls return the same result).
    fn compile(&self) -> Result<&Filter, &CompileError> {
        self.filter
            .get_or_init(|| {
                let texts: Vec<&str> = self.texts.iter().map(String::as_str).collect();
                let vars: Vec<&str> = self.vars.iter().map(String::as_str).collect();
                let main = if self.batch {
                    dispatch(0, texts.len())
                } else {
                    "__w0".to_string()
                };
                compile_program(&texts, &main, &vars, VALUES)
            })
            .as_ref()
    }

    fn filter(&self) -> Result<&Filter, EvalError> {
        self.compile().map_err(|e| EvalError::Runtime {
            message: format!("the expression does not compile: {}", e.message),
        })
    }
}

/// Compile many expressions as **one** jaq program, so the standard library is compiled once
/// per batch (a definition) instead of once per expression. Each expression becomes a
/// definition `__wN` and the program dispatches on a hidden `$__which` variable with a binary
/// tree of `if`s (a few comparisons per evaluation).
///
/// ```
/// use wlmap_expr::{Batch, Input, Limits, to_val};
/// let mut b = Batch::new(&["parentInstance"]);
/// let a = b.add(".spec.replicas // 1").unwrap();
/// let k = b.add(".kind").unwrap();
/// b.finish().unwrap();
/// let obj = to_val(&serde_json::json!({"kind": "Job", "spec": {}}));
/// let null = [to_val(&serde_json::Value::Null)];
/// let first = |e: &wlmap_expr::Expr| e.evaluate(Input::Val(&obj), &null, &Limits::default()).unwrap()[0].to_json().into_owned();
/// assert_eq!(first(&a), serde_json::json!(1));
/// assert_eq!(first(&k), serde_json::json!("Job"));
/// ```
pub struct Batch {
    texts: Vec<String>,
    vars: Vec<String>,
    cell: Arc<OnceLock<Program>>,
    /// Every expression added so far has a plain or native form.
    all_fast: bool,
}

impl Batch {
    /// A new batch whose expressions may read these global variables (names without `$`).
    ///
    /// ```
    /// let mut b = wlmap_expr::Batch::new(&["runtime"]);
    /// let e = b.add("$runtime.x").unwrap();
    /// assert!(b.finish().is_ok());
    /// assert_eq!(e.text(), "$runtime.x");
    /// ```
    pub fn new(vars: &[&str]) -> Batch {
        Batch {
            texts: Vec::new(),
            vars: vars.iter().map(|v| v.to_string()).collect(),
            cell: Arc::new(OnceLock::new()),
            all_fast: true,
        }
    }

    /// Add an expression. The sandbox is checked now; compile errors come from [`Batch::finish`].
    ///
    /// ```
    /// let mut b = wlmap_expr::Batch::new(&[]);
    /// assert!(b.add("$ENV.HOME").is_err()); // refused by the sandbox at once
    /// assert!(b.add(".a |").is_ok()); // syntax errors come from `finish`
    /// assert!(b.finish().is_err());
    /// ```
    pub fn add(&mut self, text: &str) -> Result<Expr, CompileError> {
        let (plain, native) = analyse(text, &self.vars)?;
        self.all_fast &= plain.is_some() || native.is_some();
        let index = self.texts.len();
        self.texts.push(text.to_string());
        Ok(Expr {
            text: text.to_string(),
            program: self.cell.clone(),
            index: Some(index),
            vars: self.vars.clone(),
            paths: OnceLock::new(),
            plain,
            native,
        })
    }

    /// Compile the batch. On failure, every expression that does not compile on its own is
    /// returned with its error (by the order of [`Batch::add`]).
    ///
    /// ```
    /// let mut b = wlmap_expr::Batch::new(&[]);
    /// b.add(".a").unwrap();
    /// b.add(".b |").unwrap();
    /// let errs = b.finish().unwrap_err();
    /// assert_eq!(errs.len(), 1);
    /// assert_eq!(errs[0].0, 1); // the second expression
    /// ```
    pub fn finish(self) -> Result<(), Vec<(usize, CompileError)>> {
        if self.texts.is_empty() {
            return Ok(());
        }
        let mut vars: Vec<String> = vec!["__which".into()];
        vars.extend(self.vars.iter().cloned());
        let program = Program::new(self.texts.clone(), true, vars);
        // Compiled now only when an expression needs jaq, so its errors are reported here.
        if self.all_fast || program.compile().is_ok() {
            let _ = self.cell.set(program);
            return Ok(());
        }
        let user_vars: Vec<&str> = self.vars.iter().map(String::as_str).collect();
        let errs: Vec<(usize, CompileError)> = self
            .texts
            .iter()
            .enumerate()
            .filter_map(|(i, t)| {
                compile_program(&[t], "__w0", &user_vars, VALUES)
                    .err()
                    .map(|e| (i, e))
            })
            .collect();
        if errs.is_empty() {
            // Each compiles alone but not together (should not happen): say so.
            return Err(vec![(
                0,
                CompileError {
                    source_text: self.texts[0].clone(),
                    span: 0..0,
                    message: "the expressions of this definition do not compile together".into(),
                },
            )]);
        }
        Err(errs)
    }
}

/// `if $__which < mid then ... else ... end`, down to the `__wN` calls.
fn dispatch(lo: usize, hi: usize) -> String {
    if hi - lo == 1 {
        return format!("__w{lo}");
    }
    let mid = (lo + hi) / 2;
    format!(
        "(if $__which < {mid} then {} else {} end)",
        dispatch(lo, mid),
        dispatch(mid, hi)
    )
}

impl std::fmt::Debug for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expr").field("text", &self.text).finish()
    }
}

impl Expr {
    /// Compile an expression with no variables.
    ///
    /// ```
    /// assert!(wlmap_expr::Expr::compile(".a |").is_err());
    /// ```
    pub fn compile(text: &str) -> Result<Expr, CompileError> {
        Self::compile_with_vars(text, &[])
    }

    /// Compile an expression that may read the given global variables (names without `$`).
    ///
    /// ```
    /// use wlmap_expr::{Expr, Input, Limits, to_val};
    /// let e = Expr::compile_with_vars("$runtime.spec.x", &["runtime"]).unwrap();
    /// let rt = to_val(&serde_json::json!({"spec": {"x": 3}}));
    /// let null = to_val(&serde_json::json!(null));
    /// let out = e.evaluate(Input::Val(&null), &[rt], &Limits::default()).unwrap();
    /// assert_eq!(out[0].to_json().as_ref(), &serde_json::json!(3));
    /// ```
    pub fn compile_with_vars(text: &str, vars: &[&str]) -> Result<Expr, CompileError> {
        let vars: Vec<String> = vars.iter().map(|v| v.to_string()).collect();
        let (plain, native) = analyse(text, &vars)?;
        let program = Program::new(vec![text.to_string()], false, vars.clone());
        if plain.is_none() && native.is_none() {
            program.compile().map_err(Clone::clone)?; // errors are reported now
        }
        Ok(Expr {
            text: text.to_string(),
            program: Arc::new(OnceLock::from(program)),
            index: None,
            vars,
            paths: OnceLock::new(),
            plain,
            native,
        })
    }

    /// The expression's text.
    ///
    /// ```
    /// assert_eq!(wlmap_expr::Expr::compile(".a").unwrap().text(), ".a");
    /// ```
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Evaluate on an input, with values for the declared variables (in declaration order).
    pub(crate) fn eval(
        &self,
        input: &Val,
        vars: &[Val],
        limits: &Limits,
    ) -> Result<Vec<Val>, EvalError> {
        self.run_main(input, vars, limits, usize::MAX)
    }

    fn run_main(
        &self,
        input: &Val,
        vars: &[Val],
        limits: &Limits,
        take: usize,
    ) -> Result<Vec<Val>, EvalError> {
        if self.program.get().is_none() {
            return Err(not_compiled());
        }
        if let Some(steps) = &self.plain {
            let out = plain::eval(steps, input, take.min(limits.max_outputs.saturating_add(1)))
                .map_err(|message| EvalError::Runtime { message })?;
            return checked(out, limits);
        }
        if let Some(node) = &self.native
            && let Some(r) = run_native(
                node,
                native::V::O(input.clone()),
                vars,
                limits,
                self.vars.len(),
                take,
            )
        {
            return r;
        }
        self.run_jaq(input, vars, limits, take)
    }

    /// The batch's jaq program, compiled now if it was deferred.
    fn filter(&self) -> Result<&Filter, EvalError> {
        self.program.get().ok_or_else(not_compiled)?.filter()
    }

    fn run_jaq(
        &self,
        input: &Val,
        vars: &[Val],
        limits: &Limits,
        take: usize,
    ) -> Result<Vec<Val>, EvalError> {
        let filter = self.filter()?;
        match self.index {
            None => run_take(filter, input, vars, limits, self.vars.len(), take),
            Some(i) => {
                let mut all = Vec::with_capacity(vars.len() + 1);
                all.push(Val::from(i as isize));
                all.extend(vars.iter().take(self.vars.len()).cloned());
                all.resize(self.vars.len() + 1, Val::Null);
                run_take(filter, input, &all, limits, self.vars.len() + 1, take)
            }
        }
    }

    /// Evaluate with jaq only, bypassing the plain-path walk and the native evaluator: the
    /// reference the differential tests and the fuzz target compare them with.
    pub(crate) fn eval_interpreted(
        &self,
        input: &Val,
        vars: &[Val],
        limits: &Limits,
    ) -> Result<Vec<Val>, EvalError> {
        self.run_jaq(input, vars, limits, usize::MAX)
    }

    /// `eval_json` of a plain path without converting anything: references into the
    /// input. `None` when the expression is not a plain path. The outputs are checked like
    /// `eval_json`'s (output cap, size cap on each output's length).
    pub(crate) fn eval_json_refs<'a>(
        &self,
        input: &'a serde_json::Value,
        limits: &Limits,
    ) -> Option<Result<Vec<&'a serde_json::Value>, EvalError>> {
        self.program.get()?;
        let steps = self.plain.as_ref()?;
        let take = limits.max_outputs.saturating_add(1);
        Some(match plain::refs_json(steps, input, take) {
            Ok(out) if out.len() > limits.max_outputs => Err(EvalError::Budget {
                which: format!("output cap of {}", limits.max_outputs),
            }),
            Ok(out) if out.iter().any(|v| json_len(v) > limits.max_len) => Err(EvalError::Budget {
                which: format!("size cap of {} bytes or entries", limits.max_len),
            }),
            Ok(out) => Ok(out),
            Err(message) => Err(EvalError::Runtime { message }),
        })
    }

    /// `paths` read directly from a JSON value (no conversion of the value), for plain
    /// paths and pipes of paths (`.spec.services | .[] | .labels`); `None` for anything else.
    /// Same answers as `paths` on the converted value.
    pub(crate) fn paths_json(
        &self,
        input: &serde_json::Value,
        limits: &Limits,
    ) -> Option<Result<Vec<serde_json::Value>, EvalError>> {
        self.program.get()?;
        let take = limits.max_outputs.saturating_add(1);
        let paths = match (&self.plain, &self.native) {
            (Some(steps), _) => plain::paths_json(steps, input, take),
            (None, Some(node)) if native::is_simple_path(node) => {
                native::paths_json(node, input, take)
            }
            _ => return None,
        };
        Some(match paths {
            Ok(out) if out.len() > limits.max_outputs => Err(EvalError::Budget {
                which: format!("output cap of {}", limits.max_outputs),
            }),
            Ok(out) => Ok(out),
            Err(message) => Err(EvalError::Runtime { message }),
        })
    }

    /// The paths the expression designates in the input (jq's `path(EXPR)`), as JSON arrays
    /// of keys and indices. Used to write at the places an expression reads from.
    pub(crate) fn paths(
        &self,
        input: &Val,
        vars: &[Val],
        limits: &Limits,
    ) -> Result<Vec<serde_json::Value>, EvalError> {
        let vars_ref: Vec<&str> = self.vars.iter().map(String::as_str).collect();
        let filter = self
            .paths
            .get_or_init(|| compile_program(&[&self.text], "path(__w0)", &vars_ref, PATHS))
            .as_ref()
            .map_err(|e| EvalError::Runtime {
                message: format!("expression is not a path: {}", e.message),
            })?;
        let out = run(filter, input, vars, limits, self.vars.len())?;
        Ok(out.iter().map(from_val).collect())
    }
}

fn not_compiled() -> EvalError {
    EvalError::Runtime {
        message: "expression batch was not compiled".into(),
    }
}

/// Check an expression against the sandbox and find its fast forms: a plain path (`plain.rs`)
/// or the native subset (`native.rs`). The text is lexed and parsed once here; jaq compiles
/// it later, and only when it has neither form or its batch's program is first needed.
fn analyse(
    text: &str,
    vars: &[String],
) -> Result<(Option<Vec<plain::Step>>, Option<native::Node>), CompileError> {
    check_depth(text)?;
    if let Some(steps) = plain::parse(text) {
        // Fields and indices only: nothing the sandbox or the compiler could refuse.
        return Ok((Some(steps), None));
    }
    let Some(term) = check_sandbox(text)? else {
        return Ok((None, None)); // a syntax error: compiling reports it with its span
    };
    let mut names = Names::default();
    names.term(&term);
    let reserved = names
        .calls
        .iter()
        .chain(&names.vars)
        .any(|n| n.trim_start_matches('$').starts_with(RESERVED_PREFIX));
    // A reserved name is refused by compiling, with its span.
    let native = if reserved {
        None
    } else {
        native::convert(&term, vars)
    };
    Ok((None, native))
}

/// Evaluate natively; `None` when the evaluator bails out (then jaq evaluates).
fn run_native(
    node: &native::Node,
    input: native::V,
    vars: &[Val],
    limits: &Limits,
    nvars: usize,
    take: usize,
) -> Option<Result<Vec<Val>, EvalError>> {
    run_native_parts(node, input, vars, limits, nvars, take)
        .map(|r| r.map(|out| out.into_iter().map(native::V::into_val).collect()))
}

/// [`run_native`] with the outputs as they are: parts of the input JSON stay borrowed.
fn run_native_parts<'a>(
    node: &native::Node,
    input: native::V<'a>,
    vars: &[Val],
    limits: &Limits,
    nvars: usize,
    take: usize,
) -> Option<Result<Vec<native::V<'a>>, EvalError>> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_native_unguarded(node, input, vars, limits, nvars, take)
    }))
    .unwrap_or(None) // jaq reports the panic with its own message
}

fn run_native_unguarded<'a>(
    node: &native::Node,
    input: native::V<'a>,
    vars: &[Val],
    limits: &Limits,
    nvars: usize,
    take: usize,
) -> Option<Result<Vec<native::V<'a>>, EvalError>> {
    use std::ops::ControlFlow::{Break, Continue};
    let mut vals: Vec<Val> = vars.iter().take(nvars).cloned().collect();
    vals.resize(nvars, Val::Null);
    let deadline = Instant::now().checked_add(limits.timeout);
    let budget = Budget::new(limits.max_steps, deadline, limits.max_len);
    let run = native::Run::new(&vals, &budget);
    let mut out = Vec::new();
    let mut failed = None;
    let budget_error = |which: &str| EvalError::Budget {
        which: match which {
            "size cap" => format!("size cap of {} bytes or entries", limits.max_len),
            other => other.to_string(),
        },
    };
    let _ = run.run(node, &input, None, &mut |r| {
        if let Some(which) = budget.exhausted() {
            failed = Some(budget_error(which));
            return Break(());
        }
        match r {
            Ok(v) => {
                if let Err(why) = run.keep(&v) {
                    failed = Some(budget_error(why));
                } else if out.len() >= limits.max_outputs {
                    failed = Some(EvalError::Budget {
                        which: format!("output cap of {}", limits.max_outputs),
                    });
                } else {
                    out.push(v);
                    if out.len() < take {
                        return Continue(());
                    }
                }
            }
            Err(e) => {
                failed = Some(EvalError::Runtime {
                    message: e.to_string(),
                })
            }
        }
        Break(())
    });
    if run.bail.get() {
        return None;
    }
    if let Some(e) = failed {
        return Some(Err(e));
    }
    if let Some(which) = budget.exhausted() {
        return Some(Err(budget_error(which)));
    }
    Some(Ok(out))
}

/// [`sandbox::shallow_len`] of a JSON value: bytes of a string, entries of an array or object.
fn json_len(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::String(s) => s.len(),
        serde_json::Value::Array(a) => a.len(),
        serde_json::Value::Object(o) => o.len(),
        _ => 0,
    }
}

/// The output and size caps on the outputs of a plain path.
fn checked(out: Vec<Val>, limits: &Limits) -> Result<Vec<Val>, EvalError> {
    if out.len() > limits.max_outputs {
        return Err(EvalError::Budget {
            which: format!("output cap of {}", limits.max_outputs),
        });
    }
    if out.iter().any(|v| sandbox::shallow_len(v) > limits.max_len) {
        return Err(EvalError::Budget {
            which: format!("size cap of {} bytes or entries", limits.max_len),
        });
    }
    Ok(out)
}

fn run(
    filter: &Filter,
    input: &Val,
    vars: &[Val],
    limits: &Limits,
    nvars: usize,
) -> Result<Vec<Val>, EvalError> {
    run_take(filter, input, vars, limits, nvars, usize::MAX)
}

fn run_take(
    filter: &Filter,
    input: &Val,
    vars: &[Val],
    limits: &Limits,
    nvars: usize,
    take: usize,
) -> Result<Vec<Val>, EvalError> {
    // A jaq builtin that panics (`"x" * 1e18` overflows a capacity) fails this evaluation,
    // not the process.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_unguarded(filter, input, vars, limits, nvars, take)
    }))
    .unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a builtin panicked".into());
        Err(EvalError::Runtime {
            message: format!("evaluation failed: {what}"),
        })
    })
}

fn run_unguarded(
    filter: &Filter,
    input: &Val,
    vars: &[Val],
    limits: &Limits,
    nvars: usize,
    take: usize,
) -> Result<Vec<Val>, EvalError> {
    let mut vals: Vec<Val> = vars.iter().take(nvars).cloned().collect();
    vals.resize(nvars, Val::Null);
    let deadline = Instant::now().checked_add(limits.timeout);
    let budget = Budget::new(limits.max_steps, deadline, limits.max_len);
    let data = RunData {
        lut: &filter.lut,
        budget: &budget,
    };
    let ctx = Ctx::<Sandbox>::new(data, Vars::new(vals));
    let mut out = Vec::new();
    for r in filter.id.run((ctx, input.clone())) {
        if let Some(which) = budget.exhausted() {
            return Err(EvalError::Budget {
                which: which.to_string(),
            });
        }
        match r {
            Ok(v) => {
                if let Err(why) = budget.keep(&v) {
                    return Err(EvalError::Budget {
                        which: match why {
                            "size cap" => {
                                format!("size cap of {} bytes or entries", limits.max_len)
                            }
                            other => other.to_string(),
                        },
                    });
                }
                if out.len() >= limits.max_outputs {
                    return Err(EvalError::Budget {
                        which: format!("output cap of {}", limits.max_outputs),
                    });
                }
                out.push(v);
                if out.len() >= take {
                    break;
                }
            }
            Err(e) => {
                // Never `unwrap_valr`: it exits the process on `halt`. Inspect the exception.
                let message = match e.get_err() {
                    Ok(err) => err.to_string(),
                    Err(_) => "unexpected control flow".to_string(),
                };
                return Err(EvalError::Runtime { message });
            }
        }
    }
    if let Some(which) = budget.exhausted() {
        return Err(EvalError::Budget {
            which: which.to_string(),
        });
    }
    Ok(out)
}

/// Rewrite for evaluation: fold updates get a size-checked step.
const VALUES: Rewrite = Rewrite { tick_folds: true };
/// Rewrite for `path(...)`: folds stay path expressions.
const PATHS: Rewrite = Rewrite { tick_folds: false };

/// The standard definitions (jaq's and wlmap's prelude), parsed and rewritten once per
/// process, each with the names it calls.
fn prelude() -> &'static [(Def<&'static str>, Vec<&'static str>)] {
    static DEFS: OnceLock<Vec<(Def<&'static str>, Vec<&'static str>)>> = OnceLock::new();
    DEFS.get_or_init(|| {
        let ours = |text| jaq_core::load::parse(text, |p| p.defs()).unwrap_or_default();
        let getpath = ours(GETPATH);
        ours(CHECKED_OPS)
            .into_iter()
            .chain(jaq_core::defs().map(|d| match d.name {
                "getpath" => getpath[0].clone(),
                _ => d,
            }))
            .chain(jaq_std::defs())
            .chain(jaq_json::defs())
            .chain(ours(PRELUDE))
            .map(|d| {
                let d = PATHS.def(d);
                let mut names = Names::default();
                names.term(&d.body);
                let deps = names.calls.into_iter().collect();
                (d, deps)
            })
            .collect()
    })
}

/// Parse one expression, with jaq's messages and spans on failure.
fn parse_term(text: &str) -> Result<Term<&str>, CompileError> {
    let at = |part: &str, message: String| CompileError {
        source_text: text.to_string(),
        span: jaq_core::load::span(text, part),
        message,
    };
    let tokens = jaq_core::load::lex::Lexer::new(text).lex().map_err(|es| {
        let (exp, part) = &es[0];
        at(part, format!("expected {}", exp.as_str()))
    })?;
    jaq_core::load::parse::Parser::new(&tokens)
        .parse(|p| p.term())
        .map_err(|es| {
            let (exp, found) = &es[0];
            at(
                Token::opt_as_str(*found, text),
                format!("expected {}", exp.as_str()),
            )
        })
}

/// Compile expressions into one program: each text becomes a definition `__wN`, rewritten
/// for the sandbox (`rewrite.rs`), after only the standard definitions it can reach; `main`
/// (generated, never user text) calls them.
fn compile_program(
    texts: &[&str],
    main: &str,
    vars: &[&str],
    rw: Rewrite,
) -> Result<Filter, CompileError> {
    let names: Vec<String> = (0..texts.len()).map(|i| format!("__w{i}")).collect();
    let mut used = Names::default();
    let mut user = Vec::with_capacity(texts.len());
    for (text, name) in texts.iter().zip(&names) {
        let term = parse_term(text)?;
        let mut own = Names::default();
        own.term(&term);
        if let Some(reserved) = own
            .calls
            .iter()
            .chain(&own.vars)
            .find(|n| n.trim_start_matches('$').starts_with(RESERVED_PREFIX))
        {
            return Err(CompileError {
                source_text: text.to_string(),
                span: jaq_core::load::span(text, reserved),
                message: format!(
                    "`{reserved}`: names that start with `{RESERVED_PREFIX}` are reserved for wlmap"
                ),
            });
        }
        let body = rw.term(term);
        used.term(&body);
        user.push(Def {
            name: name.as_str(),
            args: Vec::new(),
            body,
        });
    }
    if let Some(main_term) = jaq_core::load::parse(main, |p| p.term()) {
        used.term(&main_term);
    }
    let std: Vec<Def<&str>> = rewrite::reachable(prelude(), &used.calls)
        .into_iter()
        .cloned()
        .collect();
    let defs = std.into_iter().chain(user);
    let funs = jaq_core::funs::<Sandbox>()
        .chain(jaq_std::funs::<Sandbox>())
        .chain(jaq_json::funs::<Sandbox>())
        .filter(|(name, _, _)| !REMOVED_NATIVES.contains(name) && !REPLACED_NATIVES.contains(name))
        .map(|(name, args, run)| {
            let wrapped = WRAPPED_NATIVES.iter().find(|(jaq, _)| *jaq == name);
            (wrapped.map_or(name, |(_, ours)| ours), args, run)
        })
        .chain(sandbox::natives());
    let loader = Loader::new(defs);
    let arena = Arena::default();
    // An error points into the user text that contains it.
    let err = |part: &str, message: String| {
        let inside = |t: &&&str| {
            let (p, s) = (part.as_ptr() as usize, t.as_ptr() as usize);
            p >= s && p + part.len() <= s + t.len()
        };
        match texts.iter().find(inside) {
            Some(text) => CompileError {
                source_text: text.to_string(),
                span: jaq_core::load::span(text, part),
                message,
            },
            None => CompileError {
                source_text: texts.first().map(|t| t.to_string()).unwrap_or_default(),
                span: 0..0,
                message: format!("{message} (in wlmap's own code `{part}`)"),
            },
        }
    };
    let modules = loader
        .load(
            &arena,
            File {
                code: main,
                path: (),
            },
        )
        .map_err(|errs| {
            let (_, e) = errs
                .into_iter()
                .next()
                .expect("load errors are never empty");
            match e {
                jaq_core::load::Error::Lex(es) => {
                    let (exp, part) = &es[0];
                    err(part, format!("expected {}", exp.as_str()))
                }
                jaq_core::load::Error::Parse(es) => {
                    let (exp, part) = &es[0];
                    err(part, format!("expected {}", exp.as_str()))
                }
                jaq_core::load::Error::Io(es) => {
                    err("", es.first().map(|e| e.1.clone()).unwrap_or_default())
                }
            }
        })?;
    let globals: Vec<String> = vars.iter().map(|v| format!("${v}")).collect();
    Compiler::default()
        .with_funs(funs)
        .with_global_vars(globals.iter().map(String::as_str))
        .compile(modules)
        .map_err(|errs| {
            let (_, es) = errs
                .into_iter()
                .next()
                .expect("compile errors are never empty");
            let (part, undef) = &es[0];
            err(part, format!("undefined {} `{}`", undef.as_str(), part))
        })
}

/// How deep an expression's syntax may nest, counted by [`check_depth`]. Lexing, parsing,
/// compiling and evaluating recurse once per level or more: in a release build, `2*2*…*2` with
/// 1,000 factors overflowed a 2 MiB thread stack (a Tokio worker's), which aborts the process.
/// 128 leaves a margin of more than 4× there, and fits an AddressSanitizer build's bigger
/// frames on the 8 MiB main stack; the catalog's deepest expression (TrainJob's) is at 53.
pub const MAX_SYNTAX_DEPTH: usize = 128;

/// Refuse an expression whose syntax nests deeper than [`MAX_SYNTAX_DEPTH`], before anything
/// recursive reads it. The depth at a place is an upper bound of the syntax tree's: the
/// brackets open there (`(`, `[`, `{`, string interpolations) plus every operator character
/// and keyword met so far at each of those levels (a chain `a * b * c` is a tree as deep as it
/// has operators). Strings and comments do not count.
///
/// ```
/// let deep = vec!["2"; 200].join(" * ");
/// let e = wlmap_expr::Expr::compile(&deep).unwrap_err();
/// assert!(e.message.contains("nests too deeply"), "{e}");
/// assert!(wlmap_expr::Expr::compile(&vec!["2"; 100].join(" * ")).is_ok());
/// ```
fn check_depth(text: &str) -> Result<(), CompileError> {
    const KEYWORDS: &[&str] = &[
        "and", "or", "if", "then", "elif", "else", "reduce", "foreach", "def", "try", "catch",
        "label", "as",
    ];
    // Per open level: whether it is a string interpolation `\(`, and its operators so far.
    let mut levels: Vec<(bool, usize)> = vec![(false, 0)];
    let mut total = 0usize; // open levels beyond the first, plus every level's operators
    let b = text.as_bytes();
    let (mut i, mut in_string) = (0, false);
    while i < b.len() {
        let c = b[i];
        let before = total;
        let mut operator = false;
        if in_string {
            match c {
                b'\\' if b.get(i + 1) == Some(&b'(') => {
                    levels.push((true, 0));
                    total += 1;
                    in_string = false;
                    i += 1;
                }
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
        } else {
            match c {
                b'"' => in_string = true,
                b'#' => {
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                }
                b'(' | b'[' | b'{' => {
                    levels.push((false, 0));
                    total += 1;
                }
                b')' | b']' | b'}' if levels.len() > 1 => {
                    let (interpolation, ops) = levels.pop().unwrap_or_default();
                    total -= 1 + ops;
                    in_string = interpolation && c == b')';
                }
                b'|' | b',' | b'/' | b'=' | b'<' | b'>' | b'!' | b'+' | b'-' | b'*' | b'%'
                | b'?' => operator = true,
                c if c.is_ascii_alphabetic() || c == b'_' => {
                    let start = i;
                    while i + 1 < b.len() && (b[i + 1].is_ascii_alphanumeric() || b[i + 1] == b'_')
                    {
                        i += 1;
                    }
                    // `.if` is a field, `$as` a variable: only a bare word is a keyword.
                    let bare = start == 0 || !matches!(b[start - 1], b'.' | b'$');
                    operator = bare && KEYWORDS.contains(&&text[start..=i]);
                }
                _ => {}
            }
        }
        if operator {
            // `levels` always holds the outermost level: closing brackets never pop it.
            if let Some(l) = levels.last_mut() {
                l.1 += 1;
            }
            total += 1;
        }
        if total > before && total > MAX_SYNTAX_DEPTH {
            return Err(CompileError {
                source_text: text.to_string(),
                span: i..(i + 1).min(text.len()),
                message: format!(
                    "the expression nests too deeply: more than {MAX_SYNTAX_DEPTH} levels of brackets and operators here (evaluating it could overflow the stack)"
                ),
            });
        }
        i += 1;
    }
    Ok(())
}

/// Refuse forbidden builtins and variables (with the span of the first offending token) and
/// recursive definitions; the parsed term when the text parses.
fn check_sandbox(text: &str) -> Result<Option<Term<&str>>, CompileError> {
    let Ok(tokens) = jaq_core::load::lex::Lexer::new(text).lex() else {
        return Ok(None); // the compiler reports lex errors with their own spans
    };
    fn walk<'a>(text: &'a str, toks: &[Token<&'a str>]) -> Result<(), CompileError> {
        for Token(s, tok) in toks {
            let found = match tok {
                Tok::Word => FORBIDDEN_WORDS.iter().find(|(w, _)| w == s),
                Tok::Var => FORBIDDEN_VARS.iter().find(|(w, _)| w == s),
                Tok::Block(inner) => {
                    walk(text, inner)?;
                    None
                }
                Tok::Str(parts) => {
                    for p in parts {
                        if let StrPart::Term(t) = p {
                            walk(text, std::slice::from_ref(t))?;
                        }
                    }
                    None
                }
                _ => None,
            };
            if let Some((w, why)) = found {
                let span = jaq_core::load::span(text, s);
                return Err(CompileError {
                    source_text: text.to_string(),
                    span,
                    message: format!("`{w}` is not available in definition expressions: it {why}"),
                });
            }
        }
        Ok(())
    }
    walk(text, &tokens)?;
    let Ok(term) = jaq_core::load::parse::Parser::new(&tokens).parse(|p| p.term()) else {
        return Ok(None); // syntax errors are reported by the compiler with their spans
    };
    check_recursion(text, &term)?;
    Ok(Some(term))
}

/// Refuse recursive `def`s: with lexical scoping, a definition can only recurse by calling its
/// own name from its body (or from a definition nested in it).
fn check_recursion(text: &str, term: &Term<&str>) -> Result<(), CompileError> {
    use jaq_core::load::parse::Pattern;
    use jaq_core::path::Part;
    fn calls(t: &Term<&str>, name: &str) -> bool {
        match t {
            Term::Call(n, args) => *n == name || args.iter().any(|a| calls(a, name)),
            Term::Str(_, parts) => parts
                .iter()
                .any(|p| matches!(p, jaq_core::load::lex::StrPart::Term(t) if calls(t, name))),
            Term::Arr(a) => a.as_ref().is_some_and(|a| calls(a, name)),
            Term::Obj(kvs) => kvs
                .iter()
                .any(|(k, v)| calls(k, name) || v.as_ref().is_some_and(|v| calls(v, name))),
            Term::Neg(a) | Term::Label(_, a) => calls(a, name),
            Term::BinOp(a, _, b) => calls(a, name) || calls(b, name),
            Term::Fold(_, x, pat, ts) => {
                calls(x, name) || pattern_calls(pat, name) || ts.iter().any(|t| calls(t, name))
            }
            Term::TryCatch(a, b) => calls(a, name) || b.as_ref().is_some_and(|b| calls(b, name)),
            Term::IfThenElse(branches, e) => {
                branches
                    .iter()
                    .any(|(c, t)| calls(c, name) || calls(t, name))
                    || e.as_ref().is_some_and(|e| calls(e, name))
            }
            Term::Def(defs, body) => defs.iter().any(|d| calls(&d.body, name)) || calls(body, name),
            Term::Path(t, path) => {
                calls(t, name)
                    || path.0.iter().any(|(part, _)| match part {
                        Part::Index(i) => calls(i, name),
                        Part::Range(a, b) => {
                            a.as_ref().is_some_and(|a| calls(a, name))
                                || b.as_ref().is_some_and(|b| calls(b, name))
                        }
                    })
            }
            _ => false,
        }
    }
    fn pattern_calls(p: &Pattern<&str>, name: &str) -> bool {
        match p {
            Pattern::Var(_) => false,
            Pattern::Arr(ps) => ps.iter().any(|p| pattern_calls(p, name)),
            Pattern::Obj(kvs) => kvs
                .iter()
                .any(|(k, p)| calls(k, name) || pattern_calls(p, name)),
        }
    }
    fn find<'a>(t: &Term<&'a str>) -> Option<&'a str> {
        match t {
            Term::Def(defs, body) => defs
                .iter()
                .find(|d| calls(&d.body, d.name))
                .map(|d| d.name)
                .or_else(|| defs.iter().find_map(|d| find(&d.body)))
                .or_else(|| find(body)),
            Term::Path(t, _) | Term::Neg(t) | Term::Label(_, t) => find(t),
            Term::BinOp(a, _, b) => find(a).or_else(|| find(b)),
            Term::Arr(Some(a)) => find(a),
            Term::TryCatch(a, b) => find(a).or_else(|| b.as_deref().and_then(find)),
            Term::IfThenElse(br, e) => br
                .iter()
                .find_map(|(c, t)| find(c).or_else(|| find(t)))
                .or_else(|| e.as_deref().and_then(find)),
            Term::Fold(_, x, _, ts) => find(x).or_else(|| ts.iter().find_map(find)),
            Term::Call(_, args) => args.iter().find_map(find),
            Term::Obj(kvs) => kvs
                .iter()
                .find_map(|(k, v)| find(k).or_else(|| v.as_ref().and_then(find))),
            _ => None,
        }
    }
    match find(term) {
        Some(name) => Err(CompileError {
            source_text: text.to_string(),
            span: jaq_core::load::span(text, name),
            message: format!(
                "`{name}` calls itself: recursive definitions are not available in definition expressions (they can run without bound)"
            ),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod native_tests;
#[cfg(test)]
mod tests;
