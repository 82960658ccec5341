//! Over every state of every catalog fixture: resolving on every core gives what one thread
//! gives, and trimmed objects (what a live inventory holds) give what whole ones give.

use serde_json::Value;
use wlmap_engine::Object;
use wlmap_inventory::{Entry, Index};

/// Every state of every catalog fixture, each in a namespace of its own (uids made unique the
/// same way: states of one fixture reuse them).
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
                if let Some(uid) = v["metadata"]["uid"].as_str() {
                    v["metadata"]["uid"] = Value::from(format!("{ns}/{uid}"));
                }
                for r in v["metadata"]["ownerReferences"]
                    .as_array_mut()
                    .into_iter()
                    .flatten()
                {
                    if let Some(uid) = r["uid"].as_str() {
                        r["uid"] = Value::from(format!("{ns}/{uid}"));
                    }
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

#[test]
fn trimmed_objects_resolve_as_whole_ones() {
    let reg = wlmap_catalog::registry().expect("catalog");
    let whole = all_fixture_objects();
    let trimmed: Vec<Object> = whole
        .iter()
        .map(|o| {
            let mut v = o.json().clone();
            wlmap_inventory::trim(&mut v);
            Object::new(v)
        })
        .collect();
    let pods_trimmed = whole
        .iter()
        .zip(&trimmed)
        .filter(|(w, t)| w.is_pod() && w.json() != t.json())
        .count();
    assert!(
        pods_trimmed > 50,
        "the fixtures' pods carry fields to trim: {pods_trimmed}"
    );
    let (a, b) = (Index::new(reg.clone(), whole), Index::new(reg, trimmed));
    let keys = a.top_level_keys();
    assert_eq!(keys, b.top_level_keys());
    let (ea, eb) = (a.evaluate_all(&keys), b.evaluate_all(&keys));
    for (k, (x, y)) in keys.iter().zip(ea.iter().zip(&eb)) {
        assert_eq!(shown(x), shown(y), "{k} resolves otherwise when trimmed");
    }
}
