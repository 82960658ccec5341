//! Reading definitions as the format's Go implementation reads them: a field the format does
//! not have is dropped, not refused (Go decodes Karta YAML without strict mode), and wlmap says
//! which fields it dropped and where, so a misspelling (`ownerName`) is still seen.
//!
//! The known fields are those of the `kartas.run.ai` schema ([`crate::karta_crd`], generated
//! from the same types the strict decoder uses), so pruning here is what the API server does
//! to a Karta object before storing it.

use crate::decode::{convert, decode, from_values, json_error, looks_like_json, yaml_error};
use crate::{Error, Karta, Location};
use serde_json::Value;
use std::sync::OnceLock;

/// Definitions decoded with unknown fields ignored, and the fields that were.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// The definitions, as the Go implementation would read them.
    pub kartas: Vec<Karta>,
    /// Fields the format does not have, each dropped from its definition.
    pub ignored: Vec<IgnoredField>,
}

/// A field the format does not have, dropped as the Go implementation drops it.
///
/// ```
/// let text = "apiVersion: run.ai/v1alpha1\nkind: Karta\nspec:\n  structureDefinition:\n    rootComponent: {name: x, ownerName: y}\n";
/// let d = wlmap_schema::decode_compatible(text, "f.yaml").unwrap();
/// assert_eq!(d.ignored[0].to_string(),
///     "f.yaml:5:30: unknown field `spec.structureDefinition.rootComponent.ownerName` ignored \
///      (the format has no such field; its Go implementation drops it too)");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct IgnoredField {
    /// The field's path in its definition (`spec.structureDefinition.childComponents[1].x`).
    pub path: String,
    /// Where the field is in the file (the line is 0 when it cannot be found).
    pub location: Location,
}

impl std::fmt::Display for IgnoredField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: unknown field `{}` ignored (the format has no such field; its Go implementation drops it too)",
            self.location, self.path
        )
    }
}

/// Decode every definition in a file as the format's Go implementation does: like
/// [`decode`], except that a field the format does not have is dropped and reported in
/// [`Decoded::ignored`] instead of failing the file. A wrong type or a bad document is an
/// error as in [`decode`].
///
/// ```
/// let text = "apiVersion: run.ai/v1alpha1\nkind: Karta\nspec:\n  structureDefinition:\n    rootComponent: {name: x, ownerName: y}\n";
/// assert!(wlmap_schema::decode(text, "f.yaml").is_err()); // strict
/// let d = wlmap_schema::decode_compatible(text, "f.yaml").unwrap();
/// assert_eq!(d.kartas[0].root().name, "x");
/// assert_eq!(d.ignored[0].path, "spec.structureDefinition.rootComponent.ownerName");
/// assert_eq!(d.ignored[0].location.line, 5);
/// ```
pub fn decode_compatible(text: &str, file: &str) -> Result<Decoded, Error> {
    let strict = match decode(text, file) {
        Ok(kartas) => {
            return Ok(Decoded {
                kartas,
                ignored: Vec::new(),
            });
        }
        Err(e) => e,
    };
    // Only the files the strict decoder refuses are read a second time.
    let mut documents = documents(text, file)?;
    let mut ignored = Vec::new();
    for (d, doc) in documents.iter_mut().enumerate() {
        for item in items_mut(doc) {
            let mut paths = Vec::new();
            prune(item, document_schema(), "", &mut Vec::new(), &mut paths);
            ignored.extend(paths.into_iter().map(|(path, needles)| IgnoredField {
                location: locate(text, file, d, &needles),
                path,
            }));
        }
    }
    if ignored.is_empty() {
        // Not an unknown field: the strict decoder's error, with its place in the file.
        return Err(strict);
    }
    let kartas = from_values(&documents, file, |v| serde_json::from_value(v.clone()))?
        .into_iter()
        .map(|k| convert(k, file))
        .collect::<Result<_, _>>()?;
    Ok(Decoded { kartas, ignored })
}

/// The documents of a file as JSON values (null documents left out).
fn documents(text: &str, file: &str) -> Result<Vec<Value>, Error> {
    let mut out = Vec::new();
    if looks_like_json(text) {
        for v in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
            out.push(v.map_err(|e| json_error(&e, file))?);
        }
    } else {
        out = serde_saphyr::from_multiple_with_options(text, crate::decode::options())
            .map_err(|e| yaml_error(&e, file))?;
    }
    out.retain(|v| !v.is_null());
    Ok(out)
}

/// The definitions of one document: its `items` when it is a `List`, else itself.
fn items_mut(doc: &mut Value) -> Vec<&mut Value> {
    let is_list = matches!(doc.get("items"), Some(Value::Array(_))) && doc.get("spec").is_none();
    if !is_list {
        return vec![doc];
    }
    match doc.get_mut("items") {
        Some(Value::Array(items)) => items.iter_mut().collect(),
        _ => Vec::new(),
    }
}

/// The schema of one Karta document, from the CRD (built once).
fn document_schema() -> &'static Value {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    SCHEMA.get_or_init(|| {
        crate::karta_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone()
    })
}

/// Remove the keys `schema` does not know from `value`, recording each one's path and the
/// words that find it in the text (the keys above it, and the names of list items).
fn prune(
    value: &mut Value,
    schema: &Value,
    path: &str,
    needles: &mut Vec<String>,
    out: &mut Vec<(String, Vec<String>)>,
) {
    if schema["x-kubernetes-preserve-unknown-fields"] == true {
        return;
    }
    match value {
        Value::Object(m) => {
            let props = schema["properties"].as_object();
            let extra = &schema["additionalProperties"];
            let unknown: Vec<String> = match props {
                Some(p) => m.keys().filter(|k| !p.contains_key(*k)).cloned().collect(),
                None => Vec::new(),
            };
            for k in unknown {
                m.remove(&k);
                let mut at = needles.clone();
                at.push(k.clone());
                out.push((join(path, &k), at));
            }
            for (k, v) in m.iter_mut() {
                let sub = match props {
                    Some(p) => &p[k],
                    None if extra.is_object() => extra,
                    None => continue,
                };
                needles.push(k.clone());
                prune(v, sub, &join(path, k), needles, out);
                needles.pop();
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter_mut().enumerate() {
                // A list item is found by its name, when it has one (components do).
                let name = v.get("name").and_then(Value::as_str).map(str::to_string);
                let pushed = name.is_some();
                needles.extend(name);
                prune(v, &schema["items"], &format!("{path}[{i}]"), needles, out);
                if pushed {
                    needles.pop();
                }
            }
        }
        _ => {}
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Where a pruned field is in the text: each word searched after the one before, from the
/// start of its document. Approximate by design (decoded values carry no spans); a field that
/// cannot be found gets the file without a line.
fn locate(text: &str, file: &str, document: usize, needles: &[String]) -> Location {
    let mut at = document_start(text, document);
    let mut found = None;
    for n in needles {
        match text[at..].find(n.as_str()) {
            Some(i) => {
                found = Some(at + i);
                at += i + n.len();
            }
            None => return Location::new(file, 0, 0),
        }
    }
    let Some(i) = found else {
        return Location::new(file, 0, 0);
    };
    let line_start = text[..i].rfind('\n').map_or(0, |p| p + 1);
    let line = text[..i].matches('\n').count() as u64 + 1;
    let column = text[line_start..i].chars().count() as u64 + 1;
    Location::new(file, line, column)
}

/// The byte offset where the `document`th YAML document (0-based, null ones not counted
/// apart) begins: after that many `---` separators when the file starts without one.
fn document_start(text: &str, document: usize) -> usize {
    if document == 0 {
        return 0;
    }
    let mut offsets = text.match_indices("\n---").map(|(i, _)| i + 1);
    let skip = if text.starts_with("---") { 0 } else { 1 };
    offsets.nth(document - skip).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example_yaml() -> String {
        let v = serde_json::to_value(Karta::example()).unwrap();
        serde_saphyr::to_string(&v).unwrap()
    }

    #[test]
    fn a_clean_file_reads_as_the_strict_decoder_reads_it() {
        let text = example_yaml();
        let d = decode_compatible(&text, "f.yaml").unwrap();
        assert_eq!(d.kartas, decode(&text, "f.yaml").unwrap());
        assert!(d.ignored.is_empty());
    }

    #[test]
    fn unknown_fields_are_dropped_and_located_in_every_document() {
        let one = example_yaml();
        let bad = one.replacen("spec:\n", "spec:\n  extra: 1\n", 1);
        let text = format!("{one}---\n{bad}");
        let d = decode_compatible(&text, "f.yaml").unwrap();
        assert_eq!(d.kartas.len(), 2);
        assert!(d.kartas.iter().all(|k| *k == Karta::example()));
        assert_eq!(d.ignored.len(), 1, "{:?}", d.ignored);
        assert_eq!(d.ignored[0].path, "spec.extra");
        let line = text.lines().position(|l| l == "  extra: 1").unwrap() as u64 + 1;
        assert_eq!(d.ignored[0].location.line, line);
    }

    #[test]
    fn a_child_component_is_found_by_its_name_and_json_reads_too() {
        let text = r#"{"apiVersion": "run.ai/v1alpha1", "kind": "Karta", "spec": {"structureDefinition": {
            "rootComponent": {"name": "set"},
            "childComponents": [{"name": "a", "ownerRef": "set"}, {"name": "b", "ownerRef": "set", "replicas": 2}]}}}"#;
        let d = decode_compatible(text, "f.json").unwrap();
        assert_eq!(
            d.ignored[0].path,
            "spec.structureDefinition.childComponents[1].replicas"
        );
        assert_eq!(d.ignored[0].location.line, 3);
        assert_eq!(
            d.kartas[0].spec.structure_definition.child_components.len(),
            2
        );
    }

    #[test]
    fn maps_and_free_form_fields_keep_their_keys() {
        // Labels are free-form (metadata), and status mappings of the format's releases
        // (`pending`, `progressing`) are fields: nothing is dropped.
        let text = "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: x, labels: {anything: goes}}\nspec:\n  structureDefinition:\n    rootComponent:\n      name: x\n      statusDefinition:\n        statusMappings: {pending: [{byPhase: Pending}]}\n";
        let d = decode_compatible(text, "f.yaml").unwrap();
        assert!(d.ignored.is_empty(), "{:?}", d.ignored);
    }

    #[test]
    fn other_errors_stay_errors_with_their_place() {
        let text = "apiVersion: run.ai/v1alpha1\nkind: Karta\nspec:\n  structureDefinition:\n    rootComponent: {name: [1]}\n";
        let e = decode_compatible(text, "f.yaml").unwrap_err();
        assert_eq!(e.location().unwrap().line, 5, "{e}");
        // An unknown field beside a wrong type: the type error is still an error.
        let both = text.replace("{name: [1]}", "{name: [1], ownerName: y}");
        assert!(decode_compatible(&both, "f.yaml").is_err());
    }
}
