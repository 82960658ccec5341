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

mod budget;
mod convert;
mod costed;
mod error;
mod evaluate;
mod native;
mod plain;
mod program;
mod reads;
mod rewrite;
mod run;
mod sandbox;
mod syntax;
mod walk;

pub use convert::{from_val, to_jq_string, to_val};
pub use error::{CompileError, EvalError, Exhausted, Limits};
pub use evaluate::{Evaluator, Input, Output};
pub use jaq_json::Val;
pub use program::Batch;
pub use reads::{Footprint, Key, footprint, paths_read};
pub use syntax::MAX_SYNTAX_DEPTH;

use program::{PATHS, Program, analyse, compile_program, not_compiled};
use run::{checked, json_len, run, run_native_parts, spent};
use sandbox::Sandbox;
use std::sync::{Arc, OnceLock};

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
        if self.program.get().is_none() {
            return Err(not_compiled());
        }
        if let Some(steps) = &self.plain {
            let out = plain::eval(steps, input, limits.max_outputs.saturating_add(1))
                .map_err(|message| EvalError::Runtime { message })?;
            return checked(out, limits);
        }
        let nvars = self.vars.len();
        if let Some(node) = &self.native
            && let Some(r) =
                run_native_parts(node, native::V::O(input.clone()), vars, limits, nvars)
        {
            return r.map(|out| out.into_iter().map(native::V::into_val).collect());
        }
        self.eval_interpreted(input, vars, limits)
    }

    /// The batch's jaq program, compiled now if it was deferred.
    fn filter(&self) -> Result<&Filter, EvalError> {
        self.program.get().ok_or_else(not_compiled)?.filter()
    }

    /// Evaluate with jaq only, bypassing the plain-path walk and the native evaluator: the
    /// reference the differential tests and the fuzz target compare them with. In a batch,
    /// the expression's index is the program's first variable.
    pub(crate) fn eval_interpreted(
        &self,
        input: &Val,
        vars: &[Val],
        limits: &Limits,
    ) -> Result<Vec<Val>, EvalError> {
        let filter = self.filter()?;
        let nvars = self.vars.len();
        match self.index {
            None => run(filter, input, vars, limits, nvars),
            Some(i) => {
                let mut all = Vec::with_capacity(nvars + 1);
                all.push(Val::from(i as isize));
                all.extend(vars.iter().take(nvars).cloned());
                all.resize(nvars + 1, Val::Null);
                run(filter, input, &all, limits, nvars + 1)
            }
        }
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
            Ok(out) if out.len() > limits.max_outputs => {
                Err(spent(Exhausted::Outputs(limits.max_outputs)))
            }
            Ok(out) if out.iter().any(|v| json_len(v) > limits.max_len) => {
                Err(spent(Exhausted::Size(limits.max_len)))
            }
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
            Ok(out) if out.len() > limits.max_outputs => {
                Err(spent(Exhausted::Outputs(limits.max_outputs)))
            }
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

#[cfg(test)]
mod native_tests;
#[cfg(test)]
mod tests;
