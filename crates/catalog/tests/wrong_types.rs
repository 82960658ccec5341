//! Wrong types at every path: the root object of every catalog fixture, with each value in
//! turn replaced by a value of another type. Resolving, reading status, computing gangs and
//! updating must each give an answer or a located error (definition, component, field), and
//! never panic. The CLI maps these errors to exit code 5 (`crates/cli/tests/cli.rs`).

use serde_json::{Value, json};
use wlmap_engine::{Error, Object, ObjectsProvider, PodUpdate, Target};

mod common;
use common::{fixtures_dir, name, objects, representative, sorted_dirs};

/// Every JSON pointer under the object's `spec` and `status` (containers and leaves).
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    if !at.is_empty() {
        out.push(at.clone());
    }
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                let k = k.replace('~', "~0").replace('/', "~1");
                pointers(c, format!("{at}/{k}"), out);
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                pointers(c, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// Values of a different type than `v`.
fn replacements(v: &Value) -> Vec<Value> {
    [
        json!("oops"),
        json!(-7),
        json!([1]),
        json!({"x": 1}),
        json!(true),
    ]
    .into_iter()
    .filter(|r| std::mem::discriminant(r) != std::mem::discriminant(v))
    .collect()
}

#[test]
fn wrong_types_at_every_path_give_located_errors_never_panics() {
    let registry = wlmap_catalog::registry().expect("catalog");
    let mut cases = 0usize;
    let mut errors = 0usize;
    for kind_dir in sorted_dirs(&fixtures_dir()) {
        let slug = name(&kind_dir);
        let def = registry.by_name(&slug).expect("definition").clone();
        let objs = objects(&representative(&slug));
        let root = objs[0].json().clone();
        let mut paths = Vec::new();
        for top in ["spec", "status"] {
            if let Some(v) = root.get(top) {
                pointers(v, format!("/{top}"), &mut paths);
            }
        }
        for p in &paths {
            let original = root.pointer(p).expect("pointer").clone();
            for r in replacements(&original) {
                let mut bad = root.clone();
                *bad.pointer_mut(p).expect("pointer") = r.clone();
                cases += 1;
                let what = format!("{slug} {p} = {r}");
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let o = Object::new(bad.clone());
                    let mut results = Vec::new();
                    match wlmap_engine::resolve_with(&def, &o, &ObjectsProvider(&objs)) {
                        Ok(mut w) => {
                            results.push(wlmap_engine::attribute(&def, &mut w, &o, &objs[1..]));
                            results.push(wlmap_engine::gangs(&def, &w, None).map(|_| ()));
                        }
                        Err(e) => results.push(Err(e)),
                    }
                    results.push(wlmap_engine::status(&def, &o).map(|_| ()));
                    let u = PodUpdate {
                        scheduler_name: Some("kai-scheduler".into()),
                        ..Default::default()
                    };
                    let mut doc = bad.clone();
                    results
                        .push(wlmap_engine::update(&def, &mut doc, &Target::all(), &u).map(|_| ()));
                    results
                }));
                let results = outcome.unwrap_or_else(|_| panic!("panicked: {what}"));
                for r in results {
                    if let Err(e) = r {
                        errors += 1;
                        let located = match &e {
                            Error::Evaluation { at, .. } => {
                                at.definition == slug && !at.field.is_empty()
                            }
                            Error::Shape { definition, .. } => definition == &slug,
                            Error::Update { component, .. } => !component.is_empty(),
                            _ => false,
                        };
                        assert!(located, "{what}: unlocated error {e}");
                    }
                }
            }
        }
    }
    // The sweep must be wide and must actually hit errors (else it tests nothing).
    assert!(cases > 5_000, "only {cases} cases");
    assert!(errors > 500, "only {errors} errors in {cases} cases");
    eprintln!("{cases} wrong-type cases, {errors} located errors, no panic");
}
