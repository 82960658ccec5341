//! Every expression of every catalog definition, evaluated on every object of its fixtures
//! (workloads, children and pods as the controllers wrote them): the evaluator `eval` picks
//! (plain path walk, native subset or jaq) answers exactly as jaq does, first output included.

use wlmap_expr::{Expr, Limits, Val, from_val, to_val};

mod common;

#[test]
fn catalog_expressions_answer_like_jaq_on_fixture_objects() {
    let limits = Limits::default();
    let (mut by_evaluator, mut compared) = (std::collections::BTreeMap::new(), 0usize);
    for (_, karta) in wlmap_catalog::kartas().unwrap() {
        let slug = karta.name();
        let fixtures = common::fixtures_dir().join(&slug);
        if !fixtures.is_dir() {
            continue;
        }
        let mut vars = vec!["parentInstance".to_string()];
        vars.extend(karta.spec.references.iter().map(|r| r.name.clone()));
        let vars: Vec<&str> = vars.iter().map(String::as_str).collect();
        let mut texts = Vec::new();
        common::collect_expressions(&serde_json::to_value(&karta).unwrap(), &mut texts);
        texts.sort();
        texts.dedup();
        let exprs: Vec<Expr> = texts
            .iter()
            // Definitions may hold multi-line expressions with `def`s: all must compile.
            .map(|t| Expr::compile_with_vars(t, &vars).expect(t))
            .collect();
        for e in &exprs {
            *by_evaluator.entry(e.evaluator()).or_insert(0usize) += 1;
            if e.evaluator() == "jaq" && std::env::var_os("WLMAP_SHOW_JAQ").is_some() {
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
                for e in &exprs {
                    for vs in &var_sets {
                        let ours = e.eval(&input, vs, &limits);
                        let jaq = e.eval_interpreted(&input, vs, &limits);
                        let show = |r: &Result<Vec<Val>, _>| {
                            r.as_ref()
                                .map(|o| o.iter().map(from_val).collect::<Vec<_>>())
                                .map_err(Clone::clone)
                        };
                        assert_eq!(
                            show(&ours),
                            show(&jaq),
                            "{slug}: `{}` on {}",
                            e.text(),
                            common::name(&state)
                        );
                        if let Some(on_json) = e.eval_json_with(obj.json(), vs, &limits) {
                            assert_eq!(
                                show(&on_json),
                                show(&jaq),
                                "{slug}: `{}` on the JSON of {}",
                                e.text(),
                                common::name(&state)
                            );
                        }
                        if let Some(parts) = e.eval_json_cow(obj.json(), vs, &limits) {
                            let parts = parts.map(|o| {
                                o.into_iter()
                                    .map(std::borrow::Cow::into_owned)
                                    .collect::<Vec<_>>()
                            });
                            assert_eq!(parts, show(&jaq), "{slug}: parts of `{}`", e.text());
                        }
                        if let Some(paths) = e.paths_json(obj.json(), &limits) {
                            assert_eq!(
                                paths,
                                e.paths(&input, vs, &limits),
                                "{slug}: paths of `{}`",
                                e.text()
                            );
                        }
                        let first = e
                            .first(&input, vs, &limits)
                            .map(|o| o.map(|v| from_val(&v)));
                        if let Ok(all) = show(&jaq) {
                            assert_eq!(
                                first,
                                Ok(all.first().cloned()),
                                "{slug}: first of `{}`",
                                e.text()
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
        by_evaluator.get("plain").copied().unwrap_or(0),
        by_evaluator.get("native").copied().unwrap_or(0),
        by_evaluator.get("jaq").copied().unwrap_or(0),
    );
    assert!(compared > 10_000, "only {compared} comparisons");
    assert!(
        jaq * 10 < plain + native + jaq,
        "{jaq} of {} catalog expressions still need jaq (plain {plain}, native {native})",
        plain + native + jaq
    );
    eprintln!("plain {plain}, native {native}, jaq {jaq}; {compared} comparisons");
}
