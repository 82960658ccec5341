//! Where objects come from: snapshot files, the embedded demo, or manifests (`-f`). A live
//! cluster is read by `cluster.rs` into the same [`ObjectSet`].

use crate::exit::{Failure, Result, invalid};
use serde_json::Value;
use std::io::Read;
use std::path::Path;
use wlmap_engine::Object;

/// A set of objects as the engine sees them, whatever their source.
#[derive(Default)]
pub struct ObjectSet {
    /// Every object.
    pub objects: Vec<Object>,
}

/// Read a file or stdin (`-`).
pub fn read_input(path: &Path) -> Result<String> {
    let mut text = String::new();
    if path.as_os_str() == "-" {
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| invalid(format!("stdin: {e}")))?;
    } else {
        let bytes = std::fs::read(path).map_err(|e| {
            Failure::new(
                crate::exit::Code::Invalid,
                anyhow::anyhow!("{}: {e}", path.display()),
            )
        })?;
        text = String::from_utf8(bytes)
            .map_err(|_| invalid(format!("{}: not UTF-8 text (binary data?)", path.display())))?;
    }
    Ok(text)
}

/// Parse YAML or JSON documents, flattening `List` objects; every document must be an object.
/// A repeated mapping key is read as kubectl reads it (the later value), with a warning.
pub fn parse_documents(text: &str, name: &str) -> Result<Vec<Value>> {
    let (objects, repeated) =
        wlmap_schema::decode_objects_warned(text, name).map_err(|e| invalid(e.to_string()))?;
    for r in repeated {
        eprintln!("wlmap: warning: {r}");
    }
    Ok(objects)
}

/// The objects of snapshot files, keeping what `scope` says and trimmed for `reader`'s
/// definitions (a snapshot of a whole cluster is read on every core, never held whole as JSON
/// values: `wlmap_inventory::Index::read_objects`); repeated YAML keys are warned of.
pub fn snapshot_objects(
    reader: &wlmap_inventory::Index,
    paths: &[std::path::PathBuf],
    scope: wlmap_inventory::Scope,
) -> Result<Vec<Object>> {
    let mut objects = Vec::new();
    for p in paths {
        let text = read_input(p)?;
        let (read, repeated) = reader
            .read_objects(&text, &p.display().to_string(), scope)
            .map_err(|e| invalid(e.to_string()))?;
        for r in repeated {
            eprintln!("wlmap: warning: {r}");
        }
        objects.extend(read);
    }
    Ok(objects)
}

impl ObjectSet {
    /// The embedded demo cluster.
    pub fn demo() -> Result<ObjectSet> {
        let mut objects = Vec::new();
        for (name, text) in wlmap_catalog::DEMO {
            objects.extend(parse_documents(text, name)?.into_iter().map(Object::new));
        }
        Ok(ObjectSet { objects })
    }
}

/// A parsed label selector: `k=v`, `k==v`, `k!=v`, `k`, `!k`, comma-separated.
pub struct Selector(Vec<(String, Option<String>, bool)>);

impl Selector {
    /// Parse a selector as `kubectl -l` takes it; set-based forms (`k in (a,b)`) are a usage
    /// error.
    pub fn parse(s: &str) -> Result<Selector> {
        let mut out = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if let Some((k, v)) = part.split_once("!=") {
                out.push((k.trim().to_string(), Some(v.trim().to_string()), false));
            } else if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                out.push((k.trim().to_string(), Some(v.trim().to_string()), true));
            } else if let Some(k) = part.strip_prefix('!') {
                out.push((k.trim().to_string(), None, false));
            } else if part.contains(' ') {
                return Err(crate::exit::usage(format!(
                    "unsupported label selector {part:?} (use k=v, k!=v, k or !k)"
                )));
            } else {
                out.push((part.to_string(), None, true));
            }
        }
        Ok(Selector(out))
    }

    /// Does the object match?
    pub fn matches(&self, o: &Object) -> bool {
        self.0.iter().all(|(k, v, eq)| match (o.label(k), v) {
            (got, None) => got.is_some() == *eq,
            (got, Some(v)) => (got == Some(v.as_str())) == *eq,
        })
    }
}
