//! The `kartas.run.ai` CustomResourceDefinition, generated from the Rust types.
//!
//! The checked-in manifest (`crates/schema/crd/kartas.run.ai.yaml`) is compared with this
//! output by a test, so it can never go stale. Additions of wlmap (the `references` field) are
//! optional fields: the public format's definitions load unchanged.

use crate::types::KartaSpec;
use serde_json::{Map, Value, json};

/// Rewrite a schemars schema into a Kubernetes structural schema: no `$ref`, no `null` types
/// (optional fields are simply not required), arbitrary JSON kept with
/// `x-kubernetes-preserve-unknown-fields`.
fn structural(v: Value) -> Value {
    match v {
        Value::Bool(true) => json!({"x-kubernetes-preserve-unknown-fields": true}),
        Value::Object(m) => {
            let mut out = Map::new();
            // `anyOf: [X, {type: null}]` (an Option of a struct) becomes X.
            if let Some(Value::Array(any)) = m.get("anyOf") {
                let non_null: Vec<&Value> = any
                    .iter()
                    .filter(|s| s.get("type") != Some(&json!("null")))
                    .collect();
                if non_null.len() == 1 {
                    let mut inner = structural(non_null[0].clone());
                    if let (Some(d), Some(o)) = (m.get("description"), inner.as_object_mut()) {
                        o.entry("description").or_insert(d.clone());
                    }
                    return inner;
                }
            }
            for (k, val) in m {
                match k.as_str() {
                    "$schema" | "title" | "default" | "format" | "nullable" | "definitions"
                    | "$defs" => {}
                    "type" => {
                        let t = match &val {
                            Value::Array(ts) => ts
                                .iter()
                                .find(|t| *t != "null")
                                .cloned()
                                .unwrap_or(json!("object")),
                            other => other.clone(),
                        };
                        out.insert(k, t);
                    }
                    "description" => {
                        // Only the summary paragraph: rustdoc examples do not belong in a CRD.
                        let d = val.as_str().unwrap_or_default();
                        let summary = d.split("\n\n").next().unwrap_or_default().trim();
                        if !summary.is_empty() && !summary.starts_with("```") {
                            out.insert(k, Value::from(summary));
                        }
                    }
                    "properties" => {
                        let props: Map<String, Value> = val
                            .as_object()
                            .cloned()
                            .unwrap_or_default()
                            .into_iter()
                            .map(|(pk, pv)| (pk, structural(pv)))
                            .collect();
                        out.insert(k, Value::Object(props));
                    }
                    "additionalProperties" | "items" => {
                        out.insert(k, structural(val));
                    }
                    _ => {
                        out.insert(k, val);
                    }
                }
            }
            if out.is_empty() {
                return json!({"x-kubernetes-preserve-unknown-fields": true});
            }
            // `deny_unknown_fields` gives `additionalProperties: false`; Kubernetes forbids it
            // beside `properties` (the API server prunes unknown fields instead, and wlmap's
            // strict decoder reports them).
            if out.contains_key("properties") {
                out.remove("additionalProperties");
            }
            Value::Object(out)
        }
        other => other,
    }
}

/// The CRD as JSON.
///
/// ```
/// let crd = wlmap_schema::karta_crd();
/// assert_eq!(crd["metadata"]["name"], "kartas.run.ai");
/// assert_eq!(crd["spec"]["names"]["shortNames"][0], "krt");
/// ```
pub fn karta_crd() -> Value {
    let mut settings = schemars::generate::SchemaSettings::openapi3();
    settings.inline_subschemas = true;
    let spec = settings
        .into_generator()
        .into_root_schema_for::<KartaSpec>();
    let spec = structural(serde_json::to_value(spec).unwrap_or(Value::Null));
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "kartas.run.ai"},
        "spec": {
            "group": "run.ai",
            "names": {"kind": "Karta", "listKind": "KartaList", "plural": "kartas", "singular": "karta", "shortNames": ["krt"]},
            "scope": "Cluster",
            "versions": [{
                "name": "v1alpha1",
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Framework", "type": "string", "jsonPath": ".spec.structureDefinition.rootComponent.kind.kind"},
                    {"name": "Root Component", "type": "string", "jsonPath": ".spec.structureDefinition.rootComponent.name"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                ],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "description": "A workload definition: where a kind keeps its pod templates, replicas, components, status and gangs.",
                    "required": ["spec"],
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {"type": "object"},
                        "spec": spec,
                        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                    }
                }}
            }]
        }
    })
}
