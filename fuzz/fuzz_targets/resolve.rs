//! Arbitrary objects through each catalog definition: the first byte picks the definition,
//! the rest is JSON (one or more objects, or arrays and Lists of them); the first object
//! becomes the workload (its apiVersion and kind forced to the definition's), the others are
//! its children and pods. JSON only: YAML decoding is the `snapshot` target's, and JSON reaches
//! every value YAML can (both end as `serde_json::Value`), so this target's time goes to the
//! engine rather than to the YAML parser.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let defs = wlmap_fuzz::catalog();
    let def = &defs[pick as usize % defs.len()];
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    if !text.trim_start().starts_with(['{', '[']) {
        return;
    }
    let Ok(mut docs) = wlmap_schema::decode_objects(text, "fuzz.json") else {
        return;
    };
    if docs.is_empty() {
        return;
    }
    let mut root = docs.remove(0);
    let gvk = def.root_gvk();
    if let Some(m) = root.as_object_mut() {
        let api = if gvk.group.is_empty() {
            gvk.version.clone()
        } else {
            format!("{}/{}", gvk.group, gvk.version)
        };
        m.insert("apiVersion".into(), api.into());
        m.insert("kind".into(), gvk.kind.clone().into());
    }
    let others: Vec<wlmap_engine::Object> =
        docs.into_iter().map(wlmap_engine::Object::new).collect();
    let root = wlmap_engine::Object::new(root);
    wlmap_fuzz::exercise(def, root.clone(), &others);
    wlmap_fuzz::check_packed(def, &root, &others);
});
