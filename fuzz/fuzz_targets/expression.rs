//! An arbitrary expression on arbitrary JSON, in the sandbox with budgets: compile errors and
//! evaluation errors are fine, a panic or an unbounded run is not. Where `eval` does not use
//! jaq (a plain path or the native subset), its answer must be jaq's: same outputs in the same
//! order, or the same error message (budget errors aside: the deadline depends on the machine).
#![no_main]
use libfuzzer_sys::fuzz_target;
use wlmap_expr::EvalError;

fuzz_target!(|data: &[u8]| {
    let Some((expr, json)) = wlmap_fuzz::split_expression(data) else {
        return;
    };
    let input: serde_json::Value = serde_json::from_str(json).unwrap_or(serde_json::Value::Null);
    let vars = ["parentInstance"];
    let Ok(e) = wlmap_expr::Expr::compile_with_vars(expr, &vars) else {
        return;
    };
    let val = wlmap_expr::to_val(&input);
    let limits = wlmap_fuzz::limits();
    let ours = e.eval(&val, &[val.clone()], &limits);
    if let Ok(outs) = &ours {
        assert!(outs.len() <= limits.max_outputs);
        for o in outs {
            let _ = wlmap_expr::from_val(o);
        }
    }
    let budget = |r: &Result<_, EvalError>| matches!(r, Err(EvalError::Budget { .. }));
    // An answer that ran out of budget is not compared (the deadline depends on the machine),
    // so jaq is not run for it either: hostile inputs would cost twice their deadline.
    if e.evaluator() != "jaq" && !budget(&ours) {
        let jaq = e.eval_interpreted(&val, &[val.clone()], &limits);
        if !budget(&jaq) {
            let show = |r: &Result<Vec<wlmap_expr::Val>, EvalError>| {
                r.as_ref()
                    .map(|o| o.iter().map(wlmap_expr::from_val).collect::<Vec<_>>())
                    .map_err(Clone::clone)
            };
            assert_eq!(show(&ours), show(&jaq), "`{expr}` on {input}");
            if let Some(on_json) = e.eval_json_with(&input, &[val.clone()], &limits)
                && !budget(&on_json)
            {
                assert_eq!(show(&on_json), show(&jaq), "on JSON: `{expr}` on {input}");
            }
            if let Some(Ok(parts)) = e.eval_json_cow(&input, &[val.clone()], &limits) {
                let parts: Vec<_> = parts.into_iter().map(std::borrow::Cow::into_owned).collect();
                assert_eq!(Ok(parts), show(&jaq), "parts of JSON: `{expr}` on {input}");
            }
        }
    }
    let _ = e.paths(&val, &[val.clone()], &limits);
    if let Some(p) = e.paths_json(&input, &limits) {
        let jaq = e.paths(&val, &[val.clone()], &limits);
        if !matches!(jaq, Err(EvalError::Budget { .. })) {
            assert_eq!(p, jaq, "paths of `{expr}` on {input}");
        }
    }
});
