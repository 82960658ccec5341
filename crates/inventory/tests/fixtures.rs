//! Over every state of every catalog fixture: resolving on every core gives what one thread
//! gives, and trimmed objects (what a live inventory holds) give what whole ones give.

mod common;

use common::all_fixture_objects;
use wlmap_engine::Object;
use wlmap_inventory::{Entry, Index};

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

/// The fixtures' bare pods, each also as the pod of an owner of a kind no definition knows:
/// a workload of its own that is trimmed (it has a controller), read by the Pod definition.
fn with_pods_of_unknown_owners(mut objects: Vec<Object>) -> Vec<Object> {
    let bare: Vec<Object> = objects
        .iter()
        .filter(|o| o.is_pod() && o.controller_uid().is_none())
        .cloned()
        .collect();
    assert!(bare.len() > 5, "{} bare pods", bare.len());
    for p in bare {
        let mut v = p.json().clone();
        v["metadata"]["name"] = format!("{}-owned", p.name()).into();
        v["metadata"]["uid"] = format!("{}-owned", p.uid()).into();
        v["metadata"]["ownerReferences"] = serde_json::json!([{"apiVersion": "example.com/v1",
            "kind": "Experiment", "name": "sweep", "uid": "experiment-1", "controller": true,
            "blockOwnerDeletion": true}]);
        objects.push(Object::new(v));
    }
    objects
}

#[test]
fn trimmed_objects_resolve_as_whole_ones() {
    let reg = wlmap_catalog::registry().expect("catalog");
    let whole = with_pods_of_unknown_owners(all_fixture_objects());
    let trimmer = Index::new(reg.clone(), []);
    let trimmed: Vec<Object> = whole
        .iter()
        .map(|o| {
            let mut v = o.json().clone();
            trimmer.trim(&mut v);
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

/// Every fixture object held packed and released reads back the same JSON and the same
/// identity without being parsed, and an index of packed objects resolves every workload as
/// one of whole objects (each read from its text: every object is released first).
#[test]
fn packed_objects_read_and_resolve_as_whole_ones() {
    let reg = wlmap_catalog::registry().expect("catalog");
    let whole = all_fixture_objects();
    let packing = wlmap_engine::Packing::default();
    let released: Vec<Object> = whole
        .iter()
        .map(|o| o.clone().packed(&packing).released().expect("packed"))
        .collect();
    assert_eq!(packing.parsed(), 0);
    for (w, r) in whole.iter().zip(&released) {
        let ids = |o: &Object| {
            let (a, b, c, d) = (o.name(), o.namespace(), o.uid(), o.kind());
            let (e, f, g) = (o.api_version(), o.creation_timestamp(), o.controller_uid());
            let h = o.controller_type();
            format!("{a} {b} {c} {d} {e} {f:?} {g:?} {h:?} {}", o.is_pod())
        };
        assert_eq!(ids(w), ids(r));
        assert!(!r.is_parsed(), "{w:?}: identity read without parsing");
    }
    assert!(whole.iter().any(|o| o.controller_uid().is_some()));
    assert!(whole.iter().any(|o| o.creation_timestamp().is_some()));
    for (w, r) in whole.iter().zip(&released) {
        assert_eq!(w.json(), r.json());
    }
    assert_eq!(packing.parsed(), released.len());

    let again: Vec<Object> = released.iter().map(|o| o.released().unwrap()).collect();
    drop(released);
    let packed = Index::new(reg.clone(), again).packed();
    let index = Index::new(reg, whole);
    let keys = index.top_level_keys();
    assert_eq!(packed.top_level_keys(), keys);
    let one: Vec<String> = keys
        .iter()
        .map(|k| shown(&index.evaluate(k, None)))
        .collect();
    let from_text: Vec<String> = keys
        .iter()
        .map(|k| shown(&packed.evaluate(k, None)))
        .collect();
    assert_eq!(from_text, one);
}
