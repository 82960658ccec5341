//! An arbitrary expression on arbitrary JSON, in the sandbox with budgets: compile errors and
//! evaluation errors are fine, a panic or an unbounded run is not. Where `evaluate` does not
//! use jaq (a plain path or the native subset), its answer must be jaq's, on the jaq value and
//! on the JSON: same outputs in the same order, or the same error message (budget errors
//! aside: the deadline depends on the machine). Paths read on the JSON must be jaq's. The
//! paths the expression reads (`paths_read`, what `wlmap check` follows) are found without a
//! panic, and an expression that compiles parses for it too.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wlmap_expr::{EvalError, Evaluator, Input, Output};

fuzz_target!(|data: &[u8]| {
    let Some((expr, json)) = wlmap_fuzz::split_expression(data) else {
        return;
    };
    let input: serde_json::Value = serde_json::from_str(json).unwrap_or(serde_json::Value::Null);
    let vars = ["parentInstance"];
    let read = wlmap_expr::paths_read(expr);
    let Ok(e) = wlmap_expr::Expr::compile_with_vars(expr, &vars) else {
        return;
    };
    assert!(read.is_ok(), "{expr:?} compiles but paths_read refuses it: {read:?}");
    let val = wlmap_expr::to_val(&input);
    let vs = [val.clone()];
    let converted = std::sync::OnceLock::new();
    let (on_val, on_json) = (Input::Val(&val), Input::json(&input, &converted));
    let limits = wlmap_fuzz::limits();
    let show = |r: Result<Vec<Output<'_>>, EvalError>| {
        r.map(|o| o.iter().map(|x| x.to_json().into_owned()).collect::<Vec<_>>())
    };
    let ours = show(e.evaluate(on_val, &vs, &limits));
    if let Ok(outs) = &ours {
        assert!(outs.len() <= limits.max_outputs);
    }
    let budget = |r: &Result<_, EvalError>| matches!(r, Err(EvalError::Budget { .. }));
    // An answer that ran out of budget is not compared (the deadline depends on the machine),
    // so jaq is not run for it either: hostile inputs would cost twice their deadline.
    if e.evaluator() != Evaluator::Jaq && !budget(&ours) {
        let jaq = show(
            e.evaluate_by(Evaluator::Jaq, on_val, &vs, &limits)
                .expect("jaq evaluates everything"),
        );
        if !budget(&jaq) {
            assert_eq!(ours, jaq, "`{expr}` on {input}");
            let json = show(e.evaluate(on_json, &vs, &limits));
            if !budget(&json) {
                assert_eq!(json, jaq, "on JSON: `{expr}` on {input}");
            }
        }
    }
    // Both sides may run jaq (an expression that is no path of the JSON falls back to it), so
    // a deadline can end either: compare only answers that neither budget ended.
    let on_val_paths = e.paths_in(on_val, &vs, &limits);
    if e.evaluator() != Evaluator::Jaq && !budget(&on_val_paths) {
        let on_json_paths = e.paths_in(on_json, &vs, &limits);
        if !budget(&on_json_paths) {
            assert_eq!(on_json_paths, on_val_paths, "paths of `{expr}` on {input}");
        }
    }
});
