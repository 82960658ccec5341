//! A snapshot's text read as the live source holds a cluster: split into its objects, parsed
//! on every core, each object trimmed as soon as it is parsed and kept only when it is in the
//! namespace the command reads. The whole file is never held as JSON values.
//!
//! The result is that of reading the text whole ([`wlmap_schema::decode_objects_warned`]) and
//! filtering and trimming afterwards: the same objects in the same order. Text this reader
//! does not split (YAML directives, a List written in another layout, anchors used across
//! items, a repeated key) or cannot read (invalid text, an item that is not an object) is read
//! whole, so errors and warnings are those of the whole read.

use crate::Index;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;
use wlmap_engine::Object;
use wlmap_schema::{RepeatedKey, decode_objects_warned};

/// What to keep of a snapshot's objects.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scope<'a> {
    /// Only the objects in this namespace and the cluster-scoped ones; every object when
    /// `None`. What a command about one namespace would LIST from a cluster.
    pub namespace: Option<&'a str>,
    /// Trim each object as the live inventory holds it ([`Index::trim`]).
    pub trim: bool,
}

impl Index {
    /// Add the objects of a snapshot's text (YAML or JSON documents, or Lists of objects),
    /// keeping what `scope` says; returns the repeated YAML keys read (the later value wins).
    ///
    /// ```
    /// use wlmap_inventory::{Index, Scope};
    /// let text = r#"{"apiVersion": "v1", "kind": "List", "items": [
    ///   {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ml"}},
    ///   {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "web"}},
    ///   {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"}}]}"#;
    /// let mut index = Index::new(wlmap_catalog::registry().unwrap(), []);
    /// index.read(text, "cluster.json", Scope { namespace: Some("ml"), trim: true }).unwrap();
    /// let names: Vec<&str> = index.objects().map(|o| o.name()).collect();
    /// assert_eq!(names.len(), 2); // the ConfigMap of `ml` and the cluster-scoped DeviceClass
    /// assert!(names.contains(&"a") && names.contains(&"gpu"));
    /// ```
    pub fn read(
        &mut self,
        text: &str,
        file: &str,
        scope: Scope<'_>,
    ) -> Result<Vec<RepeatedKey>, wlmap_schema::Error> {
        let (objects, repeated) = self.read_objects(text, file, scope)?;
        for o in objects {
            self.store.insert(o);
        }
        Ok(repeated)
    }

    /// The objects of a snapshot's text as [`Index::read`] would add them, without adding them
    /// (the caller's index only decides how they are trimmed); and the repeated YAML keys read.
    ///
    /// ```
    /// use wlmap_inventory::{Index, Scope};
    /// let index = Index::new(wlmap_catalog::registry().unwrap(), []);
    /// let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ml\n";
    /// let (objects, repeated) = index.read_objects(text, "cm.yaml", Scope::default()).unwrap();
    /// assert_eq!((objects.len(), repeated.len(), index.len()), (1, 0, 0));
    /// ```
    pub fn read_objects(
        &self,
        text: &str,
        file: &str,
        scope: Scope<'_>,
    ) -> Result<(Vec<Object>, Vec<RepeatedKey>), wlmap_schema::Error> {
        let keep = |mut v: Value| {
            in_scope(&v, scope.namespace).then(|| {
                if scope.trim {
                    self.trim(&mut v);
                }
                Object::new(v)
            })
        };
        if let Some(pieces) = split(text) {
            let read = crate::parallel::map(&pieces, |p| p.read(scope.namespace, &keep));
            if let Some(objects) = read.into_iter().collect::<Option<Vec<_>>>() {
                return Ok((objects.into_iter().flatten().collect(), Vec::new()));
            }
        }
        let (values, repeated) = decode_objects_warned(text, file)?;
        Ok((values.into_iter().filter_map(keep).collect(), repeated))
    }
}

/// Is the object in the namespace (or cluster-scoped)?
fn in_scope(v: &Value, namespace: Option<&str>) -> bool {
    let ns = v
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    namespace.is_none_or(|want| ns.is_empty() || ns == want)
}

/// A part of the text that holds one object (or, for a YAML document, any number).
enum Piece<'t> {
    /// One JSON object.
    Json(&'t str),
    /// A top-level JSON object, as its fields.
    JsonFields(Vec<(Cow<'t, str>, Field<'t>)>),
    /// One item of a YAML List, with its `- ` (a sequence of one).
    YamlItem(&'t str),
    /// A whole YAML document.
    YamlDocument(&'t str),
}

impl Piece<'_> {
    /// The piece's objects that `keep` keeps; `None` when the piece is not what it seemed
    /// (then the text is read whole).
    fn read(
        &self,
        namespace: Option<&str>,
        keep: &impl Fn(Value) -> Option<Object>,
    ) -> Option<Vec<Object>> {
        let values = match *self {
            Piece::Json(raw) => {
                if namespace.is_some_and(|ns| elsewhere_json(raw, ns)) {
                    return Some(Vec::new());
                }
                vec![serde_json::from_str::<Value>(raw).ok()?]
            }
            Piece::YamlItem(text) => {
                if namespace.is_some_and(|ns| elsewhere_yaml(text, ns)) {
                    return Some(Vec::new());
                }
                yaml(text)?
            }
            Piece::YamlDocument(text) => yaml(text)?,
            Piece::JsonFields(ref fields) => {
                if namespace.is_some_and(|ns| elsewhere_fields(fields, ns)) {
                    return Some(Vec::new());
                }
                vec![object_of(fields)?]
            }
        };
        values
            .into_iter()
            .map(|v| v.get("kind").is_some().then(|| keep(v)))
            .collect::<Option<Vec<_>>>()
            .map(|kept| kept.into_iter().flatten().collect())
    }
}

/// The object a top-level document's fields make (a repeated key: the later value, in the
/// place of the first, as `serde_json` reads it whole).
fn object_of(fields: &[(Cow<'_, str>, Field<'_>)]) -> Option<Value> {
    let mut m = serde_json::Map::new();
    for (k, f) in fields {
        let v = match f {
            Field::Raw(raw) => serde_json::from_str(raw.get()).ok()?,
            Field::Items(items) => Value::Array(
                items
                    .iter()
                    .map(|i| serde_json::from_str(i.get()))
                    .collect::<Result<_, _>>()
                    .ok()?,
            ),
            Field::Other(v) => v.clone(),
        };
        m.insert(k.to_string(), v);
    }
    Some(Value::Object(m))
}

/// A YAML text's objects, when it reads without a repeated key.
fn yaml(text: &str) -> Option<Vec<Value>> {
    match decode_objects_warned(text, "") {
        Ok((values, repeated)) if repeated.is_empty() => Some(values),
        _ => None,
    }
}

/// The text's pieces, when it is JSON documents or Lists, or YAML documents or Lists written
/// as kubectl writes them; `None` for anything else.
fn split(text: &str) -> Option<Vec<Piece<'_>>> {
    let start = text.trim_start();
    if start.starts_with('{') || start.starts_with('[') {
        split_json(text)
    } else {
        split_yaml(text)
    }
}

/// A top-level JSON document, read in one pass without building it: an array's items, a
/// List's items, or an object's fields (its `items` split too, in case it is a List).
enum Document<'t> {
    Null,
    Items(Vec<&'t RawValue>),
    Object(Vec<(Cow<'t, str>, Field<'t>)>),
}

/// A field of a top-level JSON object.
enum Field<'t> {
    Raw(&'t RawValue),
    /// `items` when it is an array.
    Items(Vec<&'t RawValue>),
    /// `items` when it is anything else (read as is).
    Other(Value),
}

impl<'de> Deserialize<'de> for Document<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DocumentVisitor)
    }
}

struct DocumentVisitor;

impl<'de> serde::de::Visitor<'de> for DocumentVisitor {
    type Value = Document<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object, an array or null")
    }

    fn visit_unit<E>(self) -> Result<Document<'de>, E> {
        Ok(Document::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Document<'de>, A::Error> {
        raw_items(seq).map(Document::Items)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> Result<Document<'de>, A::Error> {
        let mut fields = Vec::new();
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let field = if key == "items" {
                match map.next_value::<ItemsOrValue>()? {
                    ItemsOrValue::Items(items) => Field::Items(items),
                    ItemsOrValue::Value(v) => Field::Other(v),
                }
            } else {
                Field::Raw(map.next_value()?)
            };
            fields.push((key, field));
        }
        Ok(Document::Object(fields))
    }
}

/// An array's items, each as its text.
fn raw_items<'de, A: serde::de::SeqAccess<'de>>(
    mut seq: A,
) -> Result<Vec<&'de RawValue>, A::Error> {
    let mut items = Vec::new();
    while let Some(i) = seq.next_element()? {
        items.push(i);
    }
    Ok(items)
}

/// A value that is an array of raw items, or any other value.
enum ItemsOrValue<'t> {
    Items(Vec<&'t RawValue>),
    Value(Value),
}

impl<'de> Deserialize<'de> for ItemsOrValue<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = ItemsOrValue<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any value")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<ItemsOrValue<'de>, A::Error> {
                raw_items(seq).map(ItemsOrValue::Items)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<ItemsOrValue<'de>, A::Error> {
                Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(ItemsOrValue::Value)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ItemsOrValue<'de>, E> {
                Ok(ItemsOrValue::Value(Value::from(v)))
            }
            fn visit_bool<E>(self, v: bool) -> Result<ItemsOrValue<'de>, E> {
                Ok(ItemsOrValue::Value(Value::from(v)))
            }
            fn visit_i64<E>(self, v: i64) -> Result<ItemsOrValue<'de>, E> {
                Ok(ItemsOrValue::Value(Value::from(v)))
            }
            fn visit_u64<E>(self, v: u64) -> Result<ItemsOrValue<'de>, E> {
                Ok(ItemsOrValue::Value(Value::from(v)))
            }
            fn visit_f64<E>(self, v: f64) -> Result<ItemsOrValue<'de>, E> {
                Ok(ItemsOrValue::Value(Value::from(v)))
            }
            fn visit_unit<E>(self) -> Result<ItemsOrValue<'de>, E> {
                Ok(ItemsOrValue::Value(Value::Null))
            }
        }
        d.deserialize_any(V)
    }
}

fn split_json(text: &str) -> Option<Vec<Piece<'_>>> {
    let mut pieces = Vec::new();
    for doc in serde_json::Deserializer::from_str(text).into_iter::<Document>() {
        match doc.ok()? {
            Document::Null => {}
            Document::Items(items) => {
                pieces.extend(items.into_iter().map(|i| Piece::Json(i.get())))
            }
            Document::Object(fields) => {
                let kind = fields
                    .iter()
                    .rev()
                    .find(|(k, _)| k == "kind")
                    .map(|(_, f)| f);
                let is_list = matches!(kind, Some(Field::Raw(raw))
                    if serde_json::from_str::<Cow<str>>(raw.get()).is_ok_and(|k| k.ends_with("List")));
                // As the whole read takes a List: its kind ends with List, its (last) items is
                // a list.
                let items = fields
                    .iter()
                    .rev()
                    .find(|(k, _)| k == "items")
                    .map(|(_, f)| f);
                match items {
                    Some(Field::Items(items)) if is_list => {
                        pieces.extend(items.iter().map(|i| Piece::Json(i.get())));
                    }
                    _ => pieces.push(Piece::JsonFields(fields)),
                }
            }
        }
    }
    Some(pieces)
}

/// What an object's text says of where it is, read without building it.
#[derive(Deserialize)]
struct WherePeek<'a> {
    #[serde(borrow)]
    kind: Option<&'a RawValue>,
    #[serde(borrow)]
    metadata: Option<MetadataPeek<'a>>,
}

#[derive(Deserialize)]
struct MetadataPeek<'a> {
    #[serde(borrow)]
    namespace: Option<Cow<'a, str>>,
}

/// True when a JSON object has a kind and is in a namespace other than `ns` (read without
/// building it). Anything unexpected (no kind, metadata of another shape, a repeated key) is
/// parsed, so that the whole read reports it.
fn elsewhere_json(raw: &str, ns: &str) -> bool {
    match serde_json::from_str::<WherePeek>(raw) {
        Ok(WherePeek {
            kind: Some(_),
            metadata: Some(MetadataPeek { namespace: Some(n) }),
        }) => !n.is_empty() && n != ns,
        _ => false,
    }
}

/// [`elsewhere_json`] of a top-level object read as its fields.
fn elsewhere_fields(fields: &[(Cow<'_, str>, Field<'_>)], ns: &str) -> bool {
    let last = |key: &str| fields.iter().rev().find(|(k, _)| k == key).map(|(_, f)| f);
    let Some(Field::Raw(metadata)) = last("metadata") else {
        return false;
    };
    last("kind").is_some()
        && matches!(serde_json::from_str::<MetadataPeek>(metadata.get()),
            Ok(MetadataPeek { namespace: Some(n) }) if !n.is_empty() && n != ns)
}

/// True when a YAML List item (as kubectl writes one: its keys indented by two, metadata's
/// by four) is certainly of another namespace than `ns`: its text does not name `ns` at all,
/// and it has a kind and a `metadata.namespace`. Any other layout is parsed.
fn elsewhere_yaml(item: &str, ns: &str) -> bool {
    if item.contains(ns) {
        return false;
    }
    let mut lines = item.lines();
    let first = lines.next().unwrap_or("");
    let mut has_kind = first.starts_with("- kind:");
    let (mut in_metadata, mut namespaced) = (first == "- metadata:", false);
    for line in lines {
        if let Some(key) = line.strip_prefix("  ").filter(|l| !l.starts_with(' ')) {
            has_kind |= key.starts_with("kind:");
            in_metadata = key.trim_end() == "metadata:";
        } else if in_metadata && let Some(v) = line.strip_prefix("    namespace:") {
            // A namespace's name as written plainly or quoted; an alias, a tag or anything
            // else is left to the parser.
            let name = v.trim().trim_matches(['"', '\'']);
            namespaced = !name.is_empty()
                && name != "null"
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        }
    }
    has_kind && namespaced
}

/// A YAML text's pieces: its documents (split at `---` lines), and the items of each
/// document that is a List as kubectl writes one (`items:` at the left edge, each item
/// starting `- ` at the left edge). `None` with directives or document-end markers.
fn split_yaml(text: &str) -> Option<Vec<Piece<'_>>> {
    let mut pieces = Vec::new();
    for doc in documents(text)? {
        match list_items(doc) {
            Some(items) => pieces.extend(items.into_iter().map(Piece::YamlItem)),
            None => pieces.push(Piece::YamlDocument(doc)),
        }
    }
    Some(pieces)
}

/// Each line of the text with the byte offset it starts at.
fn lines_at(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split_inclusive('\n').scan(0, |at, line| {
        let start = *at;
        *at += line.len();
        Some((start, line.trim_end_matches(['\n', '\r'])))
    })
}

/// The documents of a YAML text.
fn documents(text: &str) -> Option<Vec<&str>> {
    let mut docs = Vec::new();
    let mut start = 0;
    for (at, line) in lines_at(text) {
        if line.starts_with('%') || line.starts_with("...") {
            return None;
        }
        if line == "---" || line.starts_with("--- ") || line.starts_with("---\t") {
            docs.push(&text[start..at]);
            // `--- value` opens the next document on its own line.
            start = if line == "---" { at + line.len() } else { at };
        }
    }
    docs.push(&text[start..]);
    Some(docs)
}

/// The items of a document that is a List as kubectl writes one; `None` for any other
/// document (it is then read whole).
fn list_items(doc: &str) -> Option<Vec<&str>> {
    let mut items: Vec<std::ops::Range<usize>> = Vec::new();
    let (mut in_items, mut item_start) = (false, None);
    for (at, line) in lines_at(doc) {
        let top_level = !line.is_empty() && !line.starts_with([' ', '\t', '#']);
        if !top_level {
            let content = !line.trim().is_empty() && !line.trim_start().starts_with('#');
            // `items:` whose items are indented: another layout.
            if in_items && item_start.is_none() && content {
                return None;
            }
            continue;
        }
        if in_items && (line == "-" || line.starts_with("- ")) {
            if let Some(s) = item_start.replace(at) {
                items.push(s..at);
            }
            continue;
        }
        if let Some(s) = item_start.take() {
            items.push(s..at);
        }
        in_items = line.trim_end() == "items:";
    }
    if let Some(s) = item_start {
        items.push(s..doc.len());
    }
    if items.is_empty() {
        return None;
    }
    // What is left once the items are taken out must read as a List whose items are null: the
    // whole text is read, as the whole read would (a line that ends the items early, a repeated
    // key, anything invalid between them sends the document to the whole read).
    let mut rest = String::new();
    let mut last = 0;
    for r in &items {
        rest.push_str(&doc[last..r.start]);
        last = r.end;
    }
    rest.push_str(&doc[last..]);
    match yaml(&rest)?.as_slice() {
        [list]
            if list.get("items").is_some_and(Value::is_null)
                && list
                    .get("kind")
                    .and_then(Value::as_str)
                    .is_some_and(|k| k.ends_with("List")) =>
        {
            Some(items.into_iter().map(|r| &doc[r]).collect())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: &str = "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: a\n    namespace: ml\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: b\n    namespace: web\n  spec:\n    containers:\n    - name: c\nkind: List\nmetadata:\n  resourceVersion: \"\"\n";

    #[test]
    fn a_kubectl_yaml_list_is_split_into_its_items() {
        let items = list_items(LIST).expect("a List");
        assert_eq!(items.len(), 2);
        assert!(items[0].starts_with("- apiVersion: v1\n  kind: Pod\n"));
        assert!(items[1].ends_with("    - name: c\n"));
    }

    #[test]
    fn other_layouts_are_not_split() {
        // Items indented under `items:`, a flow list, no List kind, a repeated key.
        for doc in [
            "kind: List\nitems:\n  - kind: Pod\n",
            "kind: List\nitems: []\n",
            "kind: Pod\nitems:\n- a\n",
            "kind: List\nkind: List\nitems:\n- kind: Pod\n",
            "kind: List\nitems:\nmetadata: {}\n",
        ] {
            assert_eq!(list_items(doc), None, "{doc}");
        }
    }

    #[test]
    fn yaml_documents_split_at_their_markers() {
        let docs = documents("a: 1\n---\nb: 2\n--- {c: 3}\n").unwrap();
        assert_eq!(docs, vec!["a: 1\n", "\nb: 2\n", "--- {c: 3}\n"]);
        assert_eq!(documents("%YAML 1.2\n---\na: 1\n"), None);
    }

    #[test]
    fn an_item_of_another_namespace_is_known_without_parsing() {
        let items = list_items(LIST).unwrap();
        assert!(!elsewhere_yaml(items[0], "ml"));
        assert!(elsewhere_yaml(items[1], "ml"));
        // No kind: parsed, so that the whole read says what is wrong.
        assert!(!elsewhere_yaml("- metadata:\n    namespace: web\n", "ml"));
        let json = r#"{"kind": "Pod", "metadata": {"name": "b", "namespace": "web"}}"#;
        assert!(elsewhere_json(json, "ml"));
        assert!(!elsewhere_json(json, "web"));
        assert!(!elsewhere_json(
            r#"{"kind": "DeviceClass", "metadata": {"name": "g"}}"#,
            "ml"
        ));
    }
}
