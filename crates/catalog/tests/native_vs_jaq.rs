//! Every expression of every catalog definition, evaluated on every object of its fixtures
//! (workloads, children and pods as the controllers wrote them): whichever evaluator
//! `evaluate` picks (plain path walk, native subset or jaq), on the object's JSON or on its jaq
//! value, the answers are exactly jaq's; each fast evaluator run alone answers the same; the
//! paths read on the JSON are the paths jaq finds.

use std::sync::OnceLock;
use wlmap_expr::{EvalError, Evaluator, Expr, Input, Limits, Output, Val, to_val};

mod common;

#[test]
fn catalog_expressions_answer_like_jaq_on_fixture_objects() {
    let limits = Limits::default();
    let (mut by_evaluator, mut compared) = (std::collections::BTreeMap::new(), 0usize);
    for common::DefinitionExpressions {
        slug,
        fixtures,
        vars,
        texts,
    } in common::catalog_expressions()
    {
        let vars: Vec<&str> = vars.iter().map(String::as_str).collect();
        let exprs: Vec<Expr> = texts
            .iter()
            // Definitions may hold multi-line expressions with `def`s: all must compile.
            .map(|t| Expr::compile_with_vars(t, &vars).expect(t))
            .collect();
        for e in &exprs {
            *by_evaluator.entry(e.evaluator()).or_insert(0usize) += 1;
            if e.evaluator() == Evaluator::Jaq && std::env::var_os("WLMAP_SHOW_JAQ").is_some() {
                eprintln!("jaq: {}", e.text());
            }
        }
        for state in common::sorted_dirs(&fixtures) {
            for obj in common::objects(&state) {
                let input = obj.val();
                // `$parentInstance` and references as a resolve passes them: null or an object.
                let var_sets: [Vec<Val>; 2] = [
                    vec![Val::Null; vars.len()],
                    vec![to_val(obj.json()); vars.len()],
                ];
                let converted = OnceLock::new();
                let on_json = Input::json(obj.json(), &converted);
                let on_val = Input::Val(&input);
                let show = |r: Result<Vec<Output<'_>>, EvalError>| {
                    r.map(|o| {
                        o.iter()
                            .map(|x| x.to_json().into_owned())
                            .collect::<Vec<_>>()
                    })
                };
                for e in &exprs {
                    for vs in &var_sets {
                        let jaq = show(
                            e.evaluate_by(Evaluator::Jaq, on_val, vs, &limits)
                                .expect("jaq evaluates everything"),
                        );
                        let at = common::name(&state);
                        let text = e.text();
                        assert_eq!(
                            show(e.evaluate(on_val, vs, &limits)),
                            jaq,
                            "{slug}: `{text}` on {at}"
                        );
                        assert_eq!(
                            show(e.evaluate(on_json, vs, &limits)),
                            jaq,
                            "{slug}: `{text}` on the JSON of {at}"
                        );
                        for fast in [Evaluator::Plain, Evaluator::Native] {
                            if let Some(r) = e.evaluate_by(fast, on_json, vs, &limits) {
                                assert_eq!(show(r), jaq, "{slug}: `{text}` by {fast} on {at}");
                            }
                        }
                        if e.evaluator() != Evaluator::Jaq {
                            assert_eq!(
                                e.paths_in(on_json, vs, &limits),
                                e.paths_in(on_val, vs, &limits),
                                "{slug}: paths of `{text}`"
                            );
                        }
                        compared += 1;
                    }
                }
            }
        }
    }
    // Most catalog expressions must avoid jaq: that is what makes resolving fast.
    let (plain, native, jaq) = (
        by_evaluator.get(&Evaluator::Plain).copied().unwrap_or(0),
        by_evaluator.get(&Evaluator::Native).copied().unwrap_or(0),
        by_evaluator.get(&Evaluator::Jaq).copied().unwrap_or(0),
    );
    assert!(compared > 10_000, "only {compared} comparisons");
    assert!(
        jaq * 10 < plain + native + jaq,
        "{jaq} of {} catalog expressions still need jaq (plain {plain}, native {native})",
        plain + native + jaq
    );
    eprintln!("plain {plain}, native {native}, jaq {jaq}; {compared} comparisons");
}
