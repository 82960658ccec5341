//! Reading the catalog fixtures, shared by the fixture runner, the update property test and the
//! benches (`#[path]`-included there).
#![allow(dead_code)] // each user needs a different subset

use serde_json::Value;
use std::path::{Path, PathBuf};

/// `crates/catalog/fixtures`.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// The sub-directories of a directory, sorted.
pub fn sorted_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

/// The documents of a YAML file (null documents dropped).
pub fn load_yaml(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let docs: Vec<Value> =
        serde_saphyr::from_multiple_with_options(&text, wlmap_schema::yaml_options())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

/// The objects of one fixture state directory.
pub fn objects(state_dir: &Path) -> Vec<wlmap_engine::Object> {
    load_yaml(&state_dir.join("objects.yaml"))
        .into_iter()
        .map(wlmap_engine::Object::new)
        .collect()
}

/// The representative state of a kind: `running` when it has one, else its first state.
pub fn representative(slug: &str) -> PathBuf {
    let states = sorted_dirs(&fixtures_dir().join(slug));
    states
        .iter()
        .find(|p| p.ends_with("running"))
        .unwrap_or(&states[0])
        .clone()
}

/// The name of a path's last component.
pub fn name(p: &Path) -> String {
    p.file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string()
}

/// One catalog definition with fixtures, as the expression tests read it.
pub struct DefinitionExpressions {
    /// The definition's name (its fixtures' directory).
    pub slug: String,
    /// `crates/catalog/fixtures/<slug>`.
    pub fixtures: PathBuf,
    /// The variables its expressions may read: `parentInstance` and its references.
    pub vars: Vec<String>,
    /// Its expressions, sorted, each once.
    pub texts: Vec<String>,
}

/// Every catalog definition that has fixtures, with its expressions.
pub fn catalog_expressions() -> Vec<DefinitionExpressions> {
    let mut out = Vec::new();
    for (_, karta) in wlmap_catalog::kartas().expect("catalog") {
        let slug = karta.name();
        let fixtures = fixtures_dir().join(&slug);
        if !fixtures.is_dir() {
            continue;
        }
        let mut vars = vec!["parentInstance".to_string()];
        vars.extend(karta.spec.references.iter().map(|r| r.name.clone()));
        let mut texts = Vec::new();
        collect_expressions(&serde_json::to_value(&karta).expect("json"), &mut texts);
        texts.sort();
        texts.dedup();
        out.push(DefinitionExpressions {
            slug,
            fixtures,
            vars,
            texts,
        });
    }
    out
}

/// Strings under keys that hold expressions (`...Path`, `...Expression`, `expression`, `path`).
pub fn collect_expressions(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                let is_expr = k.ends_with("Path")
                    || k.ends_with("Expression")
                    || k == "expression"
                    || k == "path";
                match v {
                    Value::String(s) if is_expr => out.push(s.clone()),
                    _ => collect_expressions(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| collect_expressions(v, out)),
        _ => {}
    }
}

/// One test case of another status reader (`readers/cases.yaml`).
pub struct ReaderCase {
    /// `kstatus` or `argo`.
    pub reader: String,
    /// The case's name in that reader's tests (or `(code)` when read from its rules).
    pub case: String,
    /// What that reader says.
    pub says: String,
    /// What wlmap reads.
    pub wlmap: String,
    /// Why wlmap reads it otherwise, when the two fall in different classes.
    pub why: Option<String>,
    /// The object.
    pub object: Value,
}

/// Every case of `readers/cases.yaml`.
pub fn reader_cases() -> Vec<ReaderCase> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("readers/cases.yaml");
    let docs = load_yaml(&path);
    let items = docs[0].as_array().expect("a list of cases");
    let text = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("case {v}: no `{k}`"))
            .to_string()
    };
    items
        .iter()
        .map(|v| ReaderCase {
            reader: text(v, "reader"),
            case: text(v, "case"),
            says: text(v, "says"),
            wlmap: text(v, "wlmap"),
            why: v.get("why").and_then(Value::as_str).map(str::to_string),
            object: v.get("object").cloned().expect("object"),
        })
        .collect()
}

/// The words of wlmap's vocabulary that fall in the class of what another reader says:
/// kstatus's Current, InProgress and Failed; Argo CD's Healthy, Progressing, Degraded,
/// Suspended and Unknown.
pub fn same_class(reader: &str, says: &str) -> &'static [&'static str] {
    match (reader, says) {
        ("kstatus", "Current") => &["Running", "Completed", "Suspended"],
        ("kstatus", "InProgress") => &["Initializing", "Suspending", "Resuming"],
        ("kstatus", "Failed") => &["Failed"],
        ("argo", "Healthy") => &["Running", "Completed"],
        ("argo", "Progressing") => &["Initializing", "Suspending", "Resuming"],
        ("argo", "Degraded") => &["Degraded", "Failed"],
        ("argo", "Suspended") => &["Suspended"],
        ("argo", "Unknown") => &["Undefined"],
        _ => panic!("unknown reader word {reader} {says}"),
    }
}
