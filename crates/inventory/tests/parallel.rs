//! Resolving on every core gives the same results, in the same order, as one thread.

use serde_json::Value;
use wlmap_engine::Object;
use wlmap_inventory::{Entry, Index};

/// Every state of every catalog fixture, each in a namespace of its own.
fn all_fixture_objects() -> Vec<Object> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalog/fixtures");
    let mut out = Vec::new();
    let mut defs: Vec<_> = std::fs::read_dir(&root)
        .expect("fixtures")
        .flatten()
        .collect();
    defs.sort_by_key(|e| e.file_name());
    for def in defs {
        let mut states: Vec<_> = std::fs::read_dir(def.path())
            .expect("states")
            .flatten()
            .collect();
        states.sort_by_key(|e| e.file_name());
        for state in states {
            let path = state.path().join("objects.yaml");
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let ns = format!(
                "{}-{}",
                def.file_name().to_string_lossy(),
                state.file_name().to_string_lossy()
            );
            for mut v in wlmap_schema::decode_objects(&text, &ns).expect("decodes") {
                if v["metadata"].get("namespace").is_some() {
                    v["metadata"]["namespace"] = Value::from(ns.clone());
                }
                out.push(Object::new(v));
            }
        }
    }
    out
}

fn shown(e: &Option<Entry>) -> String {
    match e {
        Some(Entry { result: Ok(w), .. }) => serde_json::to_string(w).expect("serialises"),
        Some(Entry {
            result: Err(err), ..
        }) => err.to_string(),
        None => "none".into(),
    }
}

#[test]
fn every_core_gives_what_one_thread_gives() {
    let index = Index::new(
        wlmap_catalog::registry().expect("catalog"),
        all_fixture_objects(),
    );
    let keys = index.top_level_keys();
    assert!(
        keys.len() >= 64,
        "the parallel path needs 64 keys: {}",
        keys.len()
    );
    let parallel: Vec<String> = index.evaluate_all(&keys).iter().map(shown).collect();
    let one: Vec<String> = keys
        .iter()
        .map(|k| shown(&index.evaluate(k, None)))
        .collect();
    assert_eq!(parallel, one);
    let resolved = one.iter().filter(|s| s.starts_with('{')).count();
    assert!(
        resolved * 10 >= one.len() * 9,
        "{resolved} of {} resolve",
        one.len()
    );
}
