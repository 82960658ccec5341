//! Kubernetes objects from YAML or JSON text: snapshots, manifests, `kubectl get -o yaml`
//! output. Same YAML budgets as definitions, so an alias bomb in someone else's snapshot costs
//! what its text costs.

use crate::decode::{json_error, options, yaml_error};
use crate::{Error, Location, Result};
use serde_json::Value;

/// Parse YAML or JSON documents into objects, flattening `List` objects (`kind: ...List` with
/// `items`) and top-level arrays; empty documents are skipped, and every item must be a mapping
/// with a `kind`.
///
/// ```
/// let text = "kind: List\nitems:\n- {kind: Pod, metadata: {name: a}}\n---\nkind: Job\n";
/// let objects = wlmap_schema::decode_objects(text, "snap.yaml").unwrap();
/// assert_eq!(objects.len(), 2);
/// let err = wlmap_schema::decode_objects("- 3\n", "snap.yaml").unwrap_err();
/// assert_eq!(err.to_string(), "snap.yaml: item 1 is not a Kubernetes object (no kind)");
/// ```
pub fn decode_objects(text: &str, file: &str) -> Result<Vec<Value>> {
    let trimmed = text.trim_start();
    let docs: Vec<Value> = if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let mut out = Vec::new();
        for v in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
            out.push(v.map_err(|e| json_error(&e, file))?);
        }
        out
    } else {
        serde_saphyr::from_multiple_with_options(text, options())
            .map_err(|e| yaml_error(&e, file))?
    };
    let mut out = Vec::new();
    for (i, d) in docs.into_iter().enumerate() {
        match d {
            Value::Null => {}
            Value::Array(items) => out.extend(items),
            Value::Object(mut m)
                if m.get("kind")
                    .and_then(Value::as_str)
                    .is_some_and(|k| k.ends_with("List"))
                    && m.get("items").is_some_and(Value::is_array) =>
            {
                if let Some(Value::Array(items)) = m.remove("items") {
                    out.extend(items);
                }
            }
            Value::Object(_) => out.push(d),
            _ => {
                return Err(whole_file(
                    file,
                    format!("document {} is not an object", i + 1),
                ));
            }
        }
    }
    if let Some(bad) = out
        .iter()
        .position(|v| !v.is_object() || v.get("kind").is_none())
    {
        return Err(whole_file(
            file,
            format!("item {} is not a Kubernetes object (no kind)", bad + 1),
        ));
    }
    Ok(out)
}

/// An error about the file as a whole: the location prints as `file:` with no line.
fn whole_file(file: &str, message: String) -> Error {
    Error::Decode {
        location: Some(Location::new(file, 0, 0)),
        message,
    }
}
