//! Kubernetes objects from YAML or JSON text: snapshots, manifests, `kubectl get -o yaml`
//! output. Same YAML budgets as definitions, so an alias bomb in someone else's snapshot costs
//! what its text costs.

use crate::decode::{json_error, options, yaml_error};
use crate::{Error, Location, Result};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
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
    decode_objects_warned(text, file).map(|(objects, _)| objects)
}

/// A key given twice in one YAML mapping: accepted as kubectl accepts it (the later value is
/// used, as Go's YAML readers decide), and reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepeatedKey {
    /// The key.
    pub key: String,
    /// Where it is repeated (file, line and column of the later one).
    pub location: Location,
}

impl std::fmt::Display for RepeatedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: key {:?} is repeated; the later value is used",
            self.location, self.key
        )
    }
}

/// [`decode_objects`], also saying which mapping keys were repeated. A YAML mapping that
/// repeats a key is read as kubectl reads it: the later value wins.
///
/// ```
/// let text = "kind: Pod\nmetadata:\n  name: a\n  name: b\n";
/// let (objects, repeated) = wlmap_schema::decode_objects_warned(text, "pod.yaml").unwrap();
/// assert_eq!(objects[0]["metadata"]["name"], "b");
/// assert_eq!(repeated[0].to_string(), "pod.yaml:4:3: key \"name\" is repeated; the later value is used");
/// ```
pub fn decode_objects_warned(text: &str, file: &str) -> Result<(Vec<Value>, Vec<RepeatedKey>)> {
    let trimmed = text.trim_start();
    let mut repeated = Vec::new();
    let docs: Vec<Value> = if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let mut out = Vec::new();
        for v in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
            out.push(v.map_err(|e| json_error(&e, file))?);
        }
        out
    } else {
        match serde_saphyr::from_multiple_with_options(text, options()) {
            Ok(docs) => docs,
            // Rare: only then is the text read again, to find every repeated key and to
            // keep the later values.
            Err(serde_saphyr::Error::DuplicateMappingKey { .. }) => {
                repeated = repeated_keys(text, file)?;
                let mut o = options();
                o.duplicate_keys = serde_saphyr::options::DuplicateKeyPolicy::LastWins;
                serde_saphyr::from_multiple_with_options(text, o)
                    .map_err(|e| yaml_error(&e, file))?
            }
            Err(e) => return Err(yaml_error(&e, file)),
        }
    };
    Ok((flatten(docs, file)?, repeated))
}

/// Every repeated key of a YAML text, in document order.
fn repeated_keys(text: &str, file: &str) -> Result<Vec<RepeatedKey>> {
    let mut o = options();
    o.duplicate_keys = serde_saphyr::options::DuplicateKeyPolicy::PassThrough;
    let docs: Vec<Repeats> =
        serde_saphyr::from_multiple_with_options(text, o).map_err(|e| yaml_error(&e, file))?;
    Ok(docs
        .into_iter()
        .flat_map(|d| d.0)
        .map(|(key, line, column)| RepeatedKey {
            key,
            location: Location::new(file, line, column),
        })
        .collect())
}

/// The repeated keys of one YAML node and everything under it: (key, line, column).
struct Repeats(Vec<(String, u64, u64)>);

impl<'de> Deserialize<'de> for Repeats {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(RepeatsVisitor)
    }
}

struct RepeatsVisitor;

impl<'de> Visitor<'de> for RepeatsVisitor {
    type Value = Repeats;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any YAML node")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Repeats, A::Error> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        while let Some(key) = map.next_key::<serde_saphyr::Spanned<Value>>()? {
            let name = match &key.value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            if !seen.insert(name.clone()) {
                let at = key.referenced;
                out.push((name, at.line(), at.column()));
            }
            out.extend(map.next_value::<Repeats>()?.0);
        }
        Ok(Repeats(out))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Repeats, A::Error> {
        let mut out = Vec::new();
        while let Some(item) = seq.next_element::<Repeats>()? {
            out.extend(item.0);
        }
        Ok(Repeats(out))
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Repeats, D::Error> {
        Repeats::deserialize(d)
    }

    fn visit_none<E>(self) -> std::result::Result<Repeats, E> {
        Ok(Repeats(vec![]))
    }

    fn visit_unit<E>(self) -> std::result::Result<Repeats, E> {
        Ok(Repeats(vec![]))
    }

    fn visit_bool<E>(self, _: bool) -> std::result::Result<Repeats, E> {
        Ok(Repeats(vec![]))
    }

    fn visit_i64<E>(self, _: i64) -> std::result::Result<Repeats, E> {
        Ok(Repeats(vec![]))
    }

    fn visit_u64<E>(self, _: u64) -> std::result::Result<Repeats, E> {
        Ok(Repeats(vec![]))
    }

    fn visit_i128<E>(self, _: i128) -> std::result::Result<Repeats, E> {
        Ok(Repeats(vec![]))
    }

    fn visit_u128<E>(self, _: u128) -> std::result::Result<Repeats, E> {
        Ok(Repeats(vec![]))
    }

    fn visit_f64<E>(self, _: f64) -> std::result::Result<Repeats, E> {
        Ok(Repeats(vec![]))
    }

    fn visit_str<E>(self, _: &str) -> std::result::Result<Repeats, E> {
        Ok(Repeats(vec![]))
    }

    fn visit_bytes<E>(self, _: &[u8]) -> std::result::Result<Repeats, E> {
        Ok(Repeats(vec![]))
    }
}

/// Documents to objects: `List`s and top-level arrays unpacked, empty documents skipped.
fn flatten(docs: Vec<Value>, file: &str) -> Result<Vec<Value>> {
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
