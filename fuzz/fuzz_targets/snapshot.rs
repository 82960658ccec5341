//! Snapshot text → objects → owner index and owner chains (what `--snapshot` does before any
//! definition is involved).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(docs) = wlmap_schema::decode_objects(text, "fuzz.yaml") else {
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
