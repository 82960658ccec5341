//! An arbitrary expression on arbitrary JSON, in the sandbox with budgets: compile errors and
//! evaluation errors are fine, a panic or an unbounded run is not.
#![no_main]
use libfuzzer_sys::fuzz_target;

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
    if let Ok(outs) = e.eval(&val, &[val.clone()], &wlmap_fuzz::limits()) {
        assert!(outs.len() <= wlmap_fuzz::limits().max_outputs);
        for o in &outs {
            let _ = wlmap_expr::from_val(o);
        }
    }
    let _ = e.paths(&val, &[val.clone()], &wlmap_fuzz::limits());
});
