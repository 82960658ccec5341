//! What the integration tests share: the objects of every catalog fixture.

use serde_json::Value;
use wlmap_engine::Object;

/// Every state of every catalog fixture, each in a namespace of its own (uids made unique the
/// same way: states of one fixture reuse them).
pub fn all_fixture_objects() -> Vec<Object> {
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
