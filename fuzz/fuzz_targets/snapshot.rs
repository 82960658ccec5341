//! Snapshot text → objects → owner index and owner chains (what `--snapshot` does before any
//! definition is involved). Differential: the reader that splits a snapshot and parses its
//! pieces on every core (`Index::read`, unscoped and scoped to a namespace with objects
//! trimmed) must hold exactly what the whole read holds once filtered and trimmed, or fail
//! with the same error; it may read a text the whole read refuses only for its size (the
//! YAML node, event and document budgets hold per piece).
#![no_main]
use libfuzzer_sys::fuzz_target;
use wlmap_inventory::{Index, Scope};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let whole = wlmap_schema::decode_objects(text, "fuzz.yaml");
    for scope in [
        Scope::default(),
        Scope {
            namespace: Some("a"),
            trim: true,
        },
    ] {
        agrees(text, &whole, scope);
    }
    let Ok(docs) = whole else {
        return;
    };
    let objects: Vec<wlmap_engine::Object> =
        docs.into_iter().map(wlmap_engine::Object::new).collect();
    let index = wlmap_engine::OwnerIndex::new(&objects);
    for o in &objects {
        let chain = index.chain(o);
        assert!(chain.len() <= wlmap_engine::MAX_OWNER_DEPTH + 1);
        let _ = (
            o.name(),
            o.namespace(),
            o.gvk(),
            o.controller_uid(),
            o.val(),
        );
    }
});

/// `Index::read` holds what the whole read holds, filtered and trimmed as `scope` says.
fn agrees(
    text: &str,
    whole: &Result<Vec<serde_json::Value>, wlmap_schema::Error>,
    scope: Scope,
) {
    let mut read = Index::new(wlmap_engine::Registry::default(), []);
    let got = read.read(text, "fuzz.yaml", scope);
    match (whole, got) {
        (Ok(values), Ok(_)) => {
            let expected = Index::new(wlmap_engine::Registry::default(), []);
            let kept = values.iter().cloned().filter_map(|mut v| {
                let ns = v
                    .pointer("/metadata/namespace")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("");
                if scope.namespace.is_some_and(|want| !ns.is_empty() && ns != want) {
                    return None;
                }
                if scope.trim {
                    expected.trim(&mut v);
                }
                Some(wlmap_engine::Object::new(v))
            });
            let kept: Vec<_> = kept.collect();
            let expected = Index::new(wlmap_engine::Registry::default(), kept);
            let json = |i: &Index| {
                let mut all: Vec<String> = i.objects().map(|o| o.json().to_string()).collect();
                all.sort();
                all
            };
            assert_eq!(json(&read), json(&expected), "{scope:?}");
        }
        (Err(e), Err(f)) => assert_eq!(e.to_string(), f.to_string()),
        (Err(e), Ok(_)) => assert!(
            e.to_string().contains("over the reading budget"),
            "the whole read says {e}, the split read reads it"
        ),
        (Ok(_), Err(f)) => panic!("the whole read reads it, the split read says {f}"),
    }
}
