//! The one way to evaluate an expression: [`Expr::evaluate`] over an [`Input`], which is a
//! JSON document or a jaq value. Which evaluator runs (a plain path walk, the native subset,
//! or jaq) and the fallback between them are decided here, not by callers.

use crate::{EvalError, Expr, Limits, Val, from_val, to_val};
use serde_json::Value;
use std::borrow::Cow;
use std::sync::OnceLock;

/// What an expression reads.
///
/// ```
/// use std::sync::OnceLock;
/// let doc = serde_json::json!({"spec": {"replicas": 2}});
/// let converted = OnceLock::new();
/// let input = wlmap_expr::Input::json(&doc, &converted);
/// let out = wlmap_expr::Expr::compile(".spec.replicas").unwrap()
///     .evaluate(input, &[], &Default::default()).unwrap();
/// assert_eq!(out[0].to_json().as_ref(), &serde_json::json!(2));
/// assert!(converted.get().is_none()); // a plain path reads the JSON in place
/// ```
#[derive(Clone, Copy)]
pub enum Input<'a> {
    /// A JSON document. Plain paths and the native subset read it in place; an expression
    /// that needs jaq converts it once, into the cache (shared by every expression that
    /// reads the same document).
    Json {
        /// The document.
        json: &'a Value,
        /// Its jaq value, made on first need.
        converted: &'a OnceLock<Val>,
    },
    /// A jaq value.
    Val(&'a Val),
}

impl<'a> Input<'a> {
    /// A JSON document with the cache its jaq value goes into when one is needed.
    ///
    /// ```
    /// let doc = serde_json::json!({});
    /// let cache = std::sync::OnceLock::new();
    /// assert!(matches!(wlmap_expr::Input::json(&doc, &cache), wlmap_expr::Input::Json { .. }));
    /// ```
    pub fn json(json: &'a Value, converted: &'a OnceLock<Val>) -> Input<'a> {
        Input::Json { json, converted }
    }

    /// The input as a jaq value (converted once, when it is JSON).
    fn val(self) -> Cow<'a, Val> {
        match self {
            Input::Val(v) => Cow::Borrowed(v),
            Input::Json { json, converted } => {
                Cow::Borrowed(converted.get_or_init(|| to_val(json)))
            }
        }
    }
}

/// One output of an expression: a part of a JSON input (borrowed, not copied), or a value
/// the expression built.
///
/// ```
/// let doc = serde_json::json!({"a": [1, 2]});
/// let cache = std::sync::OnceLock::new();
/// let e = wlmap_expr::Expr::compile(".a[] | . + 1").unwrap();
/// let out = e.evaluate(wlmap_expr::Input::json(&doc, &cache), &[], &Default::default()).unwrap();
/// let got: Vec<serde_json::Value> = out.iter().map(|o| o.to_json().into_owned()).collect();
/// assert_eq!(got, vec![serde_json::json!(2), serde_json::json!(3)]);
/// ```
#[derive(Debug, Clone)]
pub enum Output<'a> {
    /// A part of the JSON input.
    Part(&'a Value),
    /// A value the expression made (or read from a jaq input).
    Made(Val),
}

impl<'a> Output<'a> {
    /// As JSON: borrowed when it is a part of the input.
    ///
    /// ```
    /// let v = wlmap_expr::Output::Made(wlmap_expr::Val::from(1isize));
    /// assert_eq!(v.to_json().as_ref(), &serde_json::json!(1));
    /// ```
    pub fn to_json(&self) -> Cow<'a, Value> {
        match self {
            Output::Part(j) => Cow::Borrowed(*j),
            Output::Made(v) => Cow::Owned(from_val(v)),
        }
    }

    /// As a jaq value.
    ///
    /// ```
    /// let doc = serde_json::json!("x");
    /// assert_eq!(wlmap_expr::Output::Part(&doc).to_val(), wlmap_expr::Val::from("x".to_string()));
    /// ```
    pub fn to_val(&self) -> Val {
        match self {
            Output::Part(j) => to_val(j),
            Output::Made(v) => v.clone(),
        }
    }

    /// Into a jaq value (a made value is moved, not cloned).
    ///
    /// ```
    /// let v = wlmap_expr::Output::Made(wlmap_expr::Val::from(2isize));
    /// assert_eq!(v.into_val(), wlmap_expr::Val::from(2isize));
    /// ```
    pub fn into_val(self) -> Val {
        match self {
            Output::Part(j) => to_val(j),
            Output::Made(v) => v,
        }
    }

    /// As text, the way [`to_jq_string`](crate::to_jq_string) prints it (a string as it is,
    /// anything else as JSON): borrowed when it is a string of the input, which is what a
    /// status rule compares most.
    ///
    /// ```
    /// let doc = serde_json::json!({"phase": "Running", "n": 2});
    /// assert!(matches!(wlmap_expr::Output::Part(&doc["phase"]).to_text(), std::borrow::Cow::Borrowed("Running")));
    /// assert_eq!(wlmap_expr::Output::Part(&doc["n"]).to_text(), "2");
    /// ```
    pub fn to_text(&self) -> Cow<'a, str> {
        match self {
            Output::Part(Value::String(s)) => Cow::Borrowed(s.as_str()),
            Output::Part(j) => Cow::Owned(crate::to_jq_string(&to_val(j))),
            Output::Made(v) => Cow::Owned(crate::to_jq_string(v)),
        }
    }

    /// True when the output is null.
    ///
    /// ```
    /// assert!(wlmap_expr::Output::Made(wlmap_expr::Val::Null).is_null());
    /// ```
    pub fn is_null(&self) -> bool {
        matches!(self, Output::Part(Value::Null) | Output::Made(Val::Null))
    }

    /// A part of the input, when it is one.
    ///
    /// ```
    /// let doc = serde_json::json!(1);
    /// assert!(wlmap_expr::Output::Part(&doc).part().is_some());
    /// ```
    pub fn part(&self) -> Option<&'a Value> {
        match self {
            Output::Part(j) => Some(j),
            Output::Made(_) => None,
        }
    }
}

/// The evaluators, in the order [`Expr::evaluate`] tries them.
///
/// ```
/// use wlmap_expr::{Evaluator, Expr};
/// assert_eq!(Expr::compile(".a.b").unwrap().evaluator(), Evaluator::Plain);
/// assert_eq!(Expr::compile(".a // 1").unwrap().evaluator(), Evaluator::Native);
/// assert_eq!(Expr::compile("[range(3)]").unwrap().evaluator(), Evaluator::Jaq);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Evaluator {
    /// A plain path (`.status.phase`, `.spec.jobs[].template`): a walk of the value.
    Plain,
    /// The jq subset evaluated without jaq (`(.spec.replicas // 0) > 0`).
    Native,
    /// jaq, sandboxed: everything else.
    Jaq,
}

impl std::fmt::Display for Evaluator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Evaluator::Plain => "plain",
            Evaluator::Native => "native",
            Evaluator::Jaq => "jaq",
        })
    }
}

impl Expr {
    /// Evaluate on an input, with values for the declared variables (in declaration order;
    /// missing ones are null). On JSON, a plain path and the native subset read the document
    /// in place and borrow the parts they yield; anything else is evaluated by jaq on the
    /// document's jaq value, converted once into the input's cache. The answers are the same
    /// whichever evaluator runs.
    ///
    /// ```
    /// use wlmap_expr::{Expr, Input, Limits};
    /// let job = serde_json::json!({"status": {"conditions": [{"type": "Complete"}]}});
    /// let cache = std::sync::OnceLock::new();
    /// let e = Expr::compile(".status.conditions[]").unwrap();
    /// let out = e.evaluate(Input::json(&job, &cache), &[], &Limits::default()).unwrap();
    /// assert!(std::ptr::eq(out[0].part().unwrap(), &job["status"]["conditions"][0]));
    ///
    /// let spin = Expr::compile("last(repeat(.))").unwrap();
    /// let r = spin.evaluate(Input::json(&job, &cache), &[], &Limits::default());
    /// assert!(matches!(r, Err(wlmap_expr::EvalError::Budget { .. })));
    /// ```
    pub fn evaluate<'a>(
        &self,
        input: Input<'a>,
        vars: &[Val],
        limits: &Limits,
    ) -> Result<Vec<Output<'a>>, EvalError> {
        if let Input::Json { json, .. } = input
            && let Some(out) = self.on_json(json, vars, limits)
        {
            return out;
        }
        let out = self.eval(&input.val(), vars, limits)?;
        Ok(out.into_iter().map(Output::Made).collect())
    }

    /// The paths the expression designates in the input (jq's `path(EXPR)`), as JSON arrays
    /// of keys and indices: where a write through the expression lands. On JSON, plain paths
    /// and pipes of paths are read in place; anything else through jaq.
    ///
    /// ```
    /// use wlmap_expr::{Expr, Input, Limits};
    /// let doc = serde_json::json!({"spec": {"jobs": [{}, {}]}});
    /// let cache = std::sync::OnceLock::new();
    /// let e = Expr::compile(".spec.jobs[].template").unwrap();
    /// let p = e.paths_in(Input::json(&doc, &cache), &[], &Limits::default()).unwrap();
    /// assert_eq!(p[1], serde_json::json!(["spec", "jobs", 1, "template"]));
    /// ```
    pub fn paths_in(
        &self,
        input: Input<'_>,
        vars: &[Val],
        limits: &Limits,
    ) -> Result<Vec<Value>, EvalError> {
        if let Input::Json { json, .. } = input
            && let Some(out) = self.paths_json(json, limits)
        {
            return out;
        }
        self.paths(&input.val(), vars, limits)
    }

    /// Which evaluator [`Expr::evaluate`] tries first.
    ///
    /// ```
    /// assert_eq!(wlmap_expr::Expr::compile(".a").unwrap().evaluator().to_string(), "plain");
    /// ```
    pub fn evaluator(&self) -> crate::Evaluator {
        if self.plain.is_some() {
            Evaluator::Plain
        } else if self.native.is_some() {
            Evaluator::Native
        } else {
            Evaluator::Jaq
        }
    }

    /// Evaluate with one evaluator only, for the differential tests and fuzz targets that
    /// compare them: `None` when that evaluator cannot run the expression on this input
    /// (plain and native need a JSON input, and the expression in their form).
    ///
    /// ```
    /// use wlmap_expr::{Evaluator, Expr, Input, Limits};
    /// let doc = serde_json::json!({});
    /// let cache = std::sync::OnceLock::new();
    /// let e = Expr::compile("(.a // 1) + 1").unwrap();
    /// let input = Input::json(&doc, &cache);
    /// let jaq = e.evaluate_by(Evaluator::Jaq, input, &[], &Limits::default()).unwrap().unwrap();
    /// let native = e.evaluate_by(Evaluator::Native, input, &[], &Limits::default()).unwrap().unwrap();
    /// assert_eq!(jaq[0].to_json(), native[0].to_json());
    /// ```
    #[doc(hidden)]
    pub fn evaluate_by<'a>(
        &self,
        evaluator: Evaluator,
        input: Input<'a>,
        vars: &[Val],
        limits: &Limits,
    ) -> Option<Result<Vec<Output<'a>>, EvalError>> {
        match (evaluator, input) {
            (Evaluator::Jaq, _) => Some(
                self.eval_interpreted(&input.val(), vars, limits)
                    .map(|o| o.into_iter().map(Output::Made).collect()),
            ),
            (Evaluator::Plain, Input::Json { json, .. }) if self.plain.is_some() => {
                self.on_json(json, vars, limits)
            }
            (Evaluator::Native, Input::Json { json, .. })
                if self.plain.is_none() && self.native.is_some() =>
            {
                self.on_json(json, vars, limits)
            }
            _ => None,
        }
    }

    /// The fast forms on JSON: a plain path's parts borrowed, the native subset's parts
    /// borrowed and its built values made; `None` when the expression needs jaq.
    fn on_json<'a>(
        &self,
        json: &'a Value,
        vars: &[Val],
        limits: &Limits,
    ) -> Option<Result<Vec<Output<'a>>, EvalError>> {
        if self.plain.is_some() {
            return self
                .eval_json_refs(json, limits)
                .map(|r| r.map(|out| out.into_iter().map(Output::Part).collect()));
        }
        self.program.get()?; // the batch did not compile: let jaq's path say so
        let node = self.native.as_ref()?;
        let out = crate::run::run_native_parts(
            node,
            crate::native::V::J(json),
            vars,
            limits,
            self.vars.len(),
        )?;
        Some(out.map(|out| {
            out.into_iter()
                .map(|v| match v {
                    crate::native::V::J(j) => Output::Part(j),
                    crate::native::V::O(v) => Output::Made(v),
                })
                .collect()
        }))
    }
}
