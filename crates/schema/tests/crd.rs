//! The checked-in CRD equals the one generated from the Rust types
//! (`scripts/bless.sh` rewrites it), and it is structural.

use serde_json::Value;

const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/crd/kartas.run.ai.yaml");

fn render() -> String {
    let body = serde_saphyr::to_string(&wlmap_schema::karta_crd()).expect("yaml");
    format!(
        "# Generated from crates/schema/src/types.rs by `WLMAP_BLESS=1 cargo test -p wlmap-schema --test crd`. Do not edit.\n{body}"
    )
}

#[test]
fn checked_in_crd_is_current() {
    let want = render();
    if std::env::var_os("WLMAP_BLESS").is_some() {
        std::fs::write(PATH, &want).expect("write");
    }
    let have = std::fs::read_to_string(PATH).unwrap_or_default();
    assert!(
        have == want,
        "crates/schema/crd/kartas.run.ai.yaml is stale: run scripts/bless.sh"
    );
}

fn walk(v: &Value, path: &str, bad: &mut Vec<String>) {
    if let Some(m) = v.as_object() {
        for k in ["$ref", "anyOf", "oneOf", "allOf", "definitions", "$defs"] {
            if m.contains_key(k) {
                bad.push(format!("{path}: {k}"));
            }
        }
        if m.contains_key("properties") && m.contains_key("additionalProperties") {
            bad.push(format!(
                "{path}: properties and additionalProperties are exclusive"
            ));
        }
        if m.get("type").is_some_and(|t| !t.is_string()) {
            bad.push(format!("{path}: type must be one string"));
        }
        if !m.contains_key("type")
            && !m.contains_key("x-kubernetes-preserve-unknown-fields")
            && !path.is_empty()
        {
            bad.push(format!("{path}: no type"));
        }
        for (k, c) in m
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            walk(c, &format!("{path}.{k}"), bad);
        }
        for k in ["items", "additionalProperties"] {
            if let Some(c) = m.get(k).filter(|c| c.is_object()) {
                walk(c, &format!("{path}[{k}]"), bad);
            }
        }
    }
}

#[test]
fn the_schema_is_structural_and_knows_every_field() {
    let crd = wlmap_schema::karta_crd();
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let mut bad = Vec::new();
    walk(schema, "", &mut bad);
    assert!(bad.is_empty(), "{bad:?}");
    let comp = &schema["properties"]["spec"]["properties"]["structureDefinition"]["properties"]["rootComponent"]
        ["properties"];
    for f in [
        "name",
        "kind",
        "ownerRef",
        "specDefinition",
        "scaleDefinition",
        "instanceIdPath",
        "statusDefinition",
        "suspendDefinition",
        "podSelector",
    ] {
        assert!(comp.get(f).is_some(), "component field {f} missing");
    }
    assert_eq!(
        schema["properties"]["spec"]["required"],
        serde_json::json!(["structureDefinition"])
    );
}
