//! The evaluation loops: the native evaluator's and jaq's, each under a fresh [`Budget`],
//! with the output cap and the size cap applied to what they yield, and panics of a builtin
//! turned into an error of that evaluation.

use crate::budget::{Budget, shallow_len};
use crate::native;
use crate::sandbox::{RunData, Sandbox};
use crate::{EvalError, Exhausted, Limits, Val};
use jaq_core::{Ctx, Vars};
use std::time::Instant;

type Filter = jaq_core::Filter<Sandbox>;

/// A fresh budget for one evaluation under `limits`.
fn budget(limits: &Limits) -> Budget {
    let deadline = Instant::now().checked_add(limits.timeout);
    Budget::new(limits.max_steps, deadline, limits.max_len)
}

/// The error of a spent limit.
pub(crate) fn spent(which: Exhausted) -> EvalError {
    EvalError::Budget { which }
}

/// The values of the `nvars` declared variables: those given, the rest null.
fn declared(vars: &[Val], nvars: usize) -> Vec<Val> {
    let mut vals: Vec<Val> = vars.iter().take(nvars).cloned().collect();
    vals.resize(nvars, Val::Null);
    vals
}

/// The message of a caught panic.
fn panic_message(panic: Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a builtin panicked".into())
}

/// Evaluate natively; `None` when the evaluator bails out (then jaq evaluates, and reports a
/// panic with its own message). Parts of the input JSON in the outputs stay borrowed.
pub(crate) fn run_native_parts<'a>(
    node: &native::Node,
    input: native::V<'a>,
    vars: &[Val],
    limits: &Limits,
    nvars: usize,
) -> Option<Result<Vec<native::V<'a>>, EvalError>> {
    use std::ops::ControlFlow::{Break, Continue};
    let vals = declared(vars, nvars);
    let budget = budget(limits);
    let run = native::Run::new(&vals, &budget);
    let mut out = Vec::new();
    let mut failed = None;
    let guarded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run.run(node, &input, None, &mut |r| {
            if let Some(which) = budget.exhausted() {
                failed = Some(spent(which));
                return Break(());
            }
            match r {
                Ok(v) => {
                    if let Err(why) = run.keep(&v) {
                        failed = Some(spent(why));
                    } else if out.len() >= limits.max_outputs {
                        failed = Some(spent(Exhausted::Outputs(limits.max_outputs)));
                    } else {
                        out.push(v);
                        return Continue(());
                    }
                }
                Err(e) => {
                    failed = Some(EvalError::Runtime {
                        message: e.to_string(),
                    })
                }
            }
            Break(())
        })
    }));
    if guarded.is_err() || run.bail.get() {
        return None;
    }
    if let Some(e) = failed {
        return Some(Err(e));
    }
    if let Some(which) = budget.exhausted() {
        return Some(Err(spent(which)));
    }
    Some(Ok(out))
}

/// [`shallow_len`] of a JSON value: bytes of a string, entries of an array or object.
pub(crate) fn json_len(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::String(s) => s.len(),
        serde_json::Value::Array(a) => a.len(),
        serde_json::Value::Object(o) => o.len(),
        _ => 0,
    }
}

/// The output and size caps on the outputs of a plain path.
pub(crate) fn checked(out: Vec<Val>, limits: &Limits) -> Result<Vec<Val>, EvalError> {
    if out.len() > limits.max_outputs {
        return Err(spent(Exhausted::Outputs(limits.max_outputs)));
    }
    if out.iter().any(|v| shallow_len(v) > limits.max_len) {
        return Err(spent(Exhausted::Size(limits.max_len)));
    }
    Ok(out)
}

/// Evaluate with jaq under a fresh budget. A jaq builtin that panics (`"x" * 1e18` overflows
/// a capacity) fails this evaluation, not the process.
pub(crate) fn run(
    filter: &Filter,
    input: &Val,
    vars: &[Val],
    limits: &Limits,
    nvars: usize,
) -> Result<Vec<Val>, EvalError> {
    let budget = budget(limits);
    let data = RunData {
        lut: &filter.lut,
        budget: &budget,
    };
    let ctx = Ctx::<Sandbox>::new(data, Vars::new(declared(vars, nvars)));
    let mut out = Vec::new();
    let guarded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for r in filter.id.run((ctx, input.clone())) {
            if let Some(which) = budget.exhausted() {
                return Err(spent(which));
            }
            match r {
                Ok(v) => {
                    budget.keep(&v).map_err(spent)?;
                    if out.len() >= limits.max_outputs {
                        return Err(spent(Exhausted::Outputs(limits.max_outputs)));
                    }
                    out.push(v);
                }
                // Never `unwrap_valr`: it exits the process on `halt`. Inspect the exception.
                Err(e) => {
                    let message = match e.get_err() {
                        Ok(err) => err.to_string(),
                        Err(_) => "unexpected control flow".to_string(),
                    };
                    return Err(EvalError::Runtime { message });
                }
            }
        }
        Ok(())
    }));
    match guarded {
        Err(panic) => Err(EvalError::Runtime {
            message: format!("evaluation failed: {}", panic_message(panic)),
        }),
        Ok(Err(e)) => Err(e),
        Ok(Ok(())) => match budget.exhausted() {
            Some(which) => Err(spent(which)),
            None => Ok(out),
        },
    }
}
