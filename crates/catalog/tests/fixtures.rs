//! Runs every fixture under `fixtures/<slug>/<state>/`: the objects go through the catalog
//! definition named by the slug, and the reading must equal `expected.yaml`. Adding a fixture
//! needs no code. `WLMAP_FIXTURE=<slug>/<state>` runs one.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use wlmap_engine::{Object, ObjectsProvider, attribute, gangs, resolve_with};

mod common;
use common::{fixtures_dir, load_yaml, name, objects, sorted_dirs};

/// The text at `key` of an expected-values object ("" when absent).
fn text_at<'v>(v: &'v Value, key: &str) -> &'v str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// [`num`] of the value at `key` (null when absent).
fn num_at(v: &Value, key: &str) -> f64 {
    num(v.get(key).unwrap_or(&Value::Null))
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

/// The keys `expected.yaml` may hold, at the top and in its nested mappings: a key outside
/// them (a misspelling) would otherwise check nothing, silently.
const TOP_KEYS: &[&str] = &[
    "status",
    "grounds",
    "desiredPods",
    "gpus",
    "observedPods",
    "readyPods",
    "components",
    "pods",
    "unattributed",
    "gangs",
];
const NESTED_KEYS: &[(&str, &[&str])] = &[
    ("status", &["phase", "phases"]),
    ("components", &["path", "replicas", "desiredPods"]),
    ("gangs", &["name", "minMember", "members"]),
];

/// What is wrong with the shape of an `expected.yaml`: empty, not a mapping, or a key the
/// runner does not read.
fn shape_errors(expected: &Value) -> Vec<String> {
    let Some(top) = expected.as_object().filter(|m| !m.is_empty()) else {
        return vec!["expected.yaml is empty or not a mapping".into()];
    };
    let unknown = |m: &serde_json::Map<String, Value>, allowed: &[&str], at: &str| {
        m.keys()
            .filter(|k| !allowed.contains(&k.as_str()))
            .map(|k| format!("expected.yaml: unknown key `{at}{k}`"))
            .collect::<Vec<_>>()
    };
    let mut errs = unknown(top, TOP_KEYS, "");
    for (key, allowed) in NESTED_KEYS {
        let items = match top.get(*key) {
            Some(Value::Array(a)) => a.iter().collect(),
            Some(v) => vec![v],
            None => vec![],
        };
        for item in items {
            match item.as_object() {
                Some(m) => errs.extend(unknown(m, allowed, &format!("{key}."))),
                None => errs.push(format!("expected.yaml: `{key}` holds a non-mapping {item}")),
            }
        }
    }
    if !top.contains_key("status") {
        errs.push("expected.yaml: no `status`".into());
    }
    errs
}

#[test]
fn a_misspelled_or_empty_expected_file_is_refused() {
    assert_eq!(shape_errors(&Value::Null).len(), 1);
    assert_eq!(shape_errors(&serde_json::json!({})).len(), 1);
    let typo = serde_json::json!({"status": {"phase": "Running", "phses": ["Running"]},
        "desiredpods": 3, "components": [{"path": "a", "replica": 1}]});
    assert_eq!(
        shape_errors(&typo),
        [
            "expected.yaml: unknown key `desiredpods`",
            "expected.yaml: unknown key `status.phses`",
            "expected.yaml: unknown key `components.replica`",
        ]
    );
    assert!(
        shape_errors(&serde_json::json!({"status": {"phase": "Running"}, "gpus": 4})).is_empty()
    );
}

fn check_case(reg: &wlmap_engine::Registry, dir: &Path, slug: &str) -> Vec<String> {
    let objects: Vec<Object> = objects(dir);
    let expected = load_yaml(&dir.join("expected.yaml"))
        .into_iter()
        .next()
        .unwrap_or(Value::Null);
    let mut errs = shape_errors(&expected);
    if !errs.is_empty() {
        return errs;
    }
    let Some(def) = reg.by_name(slug) else {
        return vec![format!("no catalog definition named {slug}")];
    };
    let root = &objects[0];
    let mut w = match resolve_with(def, root, &ObjectsProvider(&objects)) {
        Ok(w) => w,
        Err(e) => return vec![format!("resolve failed: {e}")],
    };
    if let Err(e) = attribute(def, &mut w, root, &objects) {
        return vec![format!("attribute failed: {e}")];
    }
    let mut want = |what: &str, got: String, exp: Option<String>| {
        if let Some(exp) = exp
            && got != exp
        {
            errs.push(format!("{what}: got {got}, expected {exp}"));
        }
    };
    let s = |v: Option<&Value>| {
        v.map(|v| {
            v.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string())
        })
    };
    want(
        "status.phase",
        w.status.phase.to_string(),
        s(expected.pointer("/status/phase")),
    );
    want(
        "status.phases",
        format!(
            "{:?}",
            w.status
                .phases
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
        ),
        expected.pointer("/status/phases").map(|v| {
            format!(
                "{:?}",
                v.as_array()
                    .map(|a| a
                        .iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect::<Vec<_>>())
                    .unwrap_or_default()
            )
        }),
    );
    want(
        "desiredPods",
        w.root.desired_pods.to_string(),
        expected.get("desiredPods").map(|v| num(v).to_string()),
    );
    want(
        "gpus",
        w.gpus(&Default::default()).to_string(),
        expected.get("gpus").map(|v| num(v).to_string()),
    );
    want(
        "observedPods",
        w.observed_pods().to_string(),
        expected.get("observedPods").map(|v| num(v).to_string()),
    );
    want(
        "readyPods",
        w.ready_pods().to_string(),
        expected.get("readyPods").map(|v| num(v).to_string()),
    );
    if let Some(comps) = expected.get("components").and_then(Value::as_array) {
        let got: Vec<String> = w
            .root
            .walk()
            .skip(1)
            .map(|n| {
                format!(
                    "{} replicas={} desiredPods={}",
                    n.path, n.replicas, n.desired_pods
                )
            })
            .collect();
        let exp: Vec<String> = comps
            .iter()
            .map(|c| {
                format!(
                    "{} replicas={} desiredPods={}",
                    text_at(c, "path"),
                    num_at(c, "replicas"),
                    num_at(c, "desiredPods")
                )
            })
            .collect();
        if got != exp {
            errs.push(format!(
                "components:\n    got      {got:?}\n    expected {exp:?}"
            ));
        }
    }
    if let Some(pods) = expected.get("pods").and_then(Value::as_object) {
        let mut got: BTreeMap<String, String> = BTreeMap::new();
        for n in w.root.walk() {
            for p in &n.pods {
                got.insert(p.name.clone(), n.path.clone());
            }
        }
        let exp: BTreeMap<String, String> = pods
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
            .collect();
        if got != exp {
            errs.push(format!("pods:\n    got      {got:?}\n    expected {exp:?}"));
        }
    }
    if let Some(un) = expected.get("unattributed").and_then(Value::as_array) {
        let mut got: Vec<String> = w.unattributed.iter().map(|p| p.name.clone()).collect();
        let mut exp: Vec<String> = un
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        got.sort();
        exp.sort();
        if got != exp {
            errs.push(format!("unattributed: got {got:?}, expected {exp:?}"));
        }
    }
    if let Some(gs) = expected.get("gangs").and_then(Value::as_array) {
        errs.extend(gang_errors(def, &w, gs, &objects));
    }
    errs
}

/// How the gangs differ from `gangs:`: their names and sizes as the spec predicts them, and,
/// where a gang lists `members`, the fixture's pods each holds.
fn gang_errors(
    def: &wlmap_engine::Definition,
    w: &wlmap_engine::Workload,
    gs: &[Value],
    objects: &[Object],
) -> Vec<String> {
    let mut errs = Vec::new();
    if gs.iter().any(|g| g.get("members").is_some()) {
        let pods: Vec<Object> = objects
            .iter()
            .filter(|o| o.kind() == "Pod")
            .cloned()
            .collect();
        match gangs(def, w, Some(&pods)) {
            Err(e) => errs.push(format!("gangs with pods failed: {e}")),
            Ok(got) => {
                let got: Vec<(String, Vec<String>)> =
                    got.into_iter().map(|g| (g.name, g.members)).collect();
                let exp: Vec<(String, Vec<String>)> = gs
                    .iter()
                    .map(|g| {
                        let members = g["members"].as_array().into_iter().flatten();
                        let members = members.filter_map(|m| m.as_str().map(str::to_string));
                        (text_at(g, "name").to_string(), members.collect())
                    })
                    .collect();
                if got != exp {
                    errs.push(format!(
                        "gang members:\n    got      {got:?}\n    expected {exp:?}"
                    ));
                }
            }
        }
    }
    {
        match gangs(def, w, None) {
            Err(e) => errs.push(format!("gangs failed: {e}")),
            Ok(got) => {
                let got: Vec<String> = got
                    .iter()
                    .map(|g| format!("{} minMember={}", g.name, g.min_member))
                    .collect();
                let exp: Vec<String> = gs
                    .iter()
                    .map(|g| {
                        format!(
                            "{} minMember={}",
                            text_at(g, "name"),
                            num_at(g, "minMember")
                        )
                    })
                    .collect();
                if got != exp {
                    errs.push(format!(
                        "gangs:\n    got      {got:?}\n    expected {exp:?}"
                    ));
                }
            }
        }
    }
    errs
}

#[test]
fn every_fixture_reads_as_expected() {
    let reg = wlmap_catalog::registry().expect("catalog compiles");
    let only = std::env::var("WLMAP_FIXTURE").ok();
    let mut failures = Vec::new();
    let mut cases = 0;
    for slug_dir in sorted_dirs(&fixtures_dir()) {
        let slug = name(&slug_dir);
        let states = sorted_dirs(&slug_dir);
        for dir in states {
            let case = format!("{slug}/{}", name(&dir));
            if only.as_ref().is_some_and(|o| *o != case) {
                continue;
            }
            cases += 1;
            let errs = check_case(&reg, &dir, &slug);
            if !errs.is_empty() {
                failures.push(format!("{case}:\n  {}", errs.join("\n  ")));
            }
        }
    }
    assert!(cases > 0, "no fixtures found");
    assert!(
        failures.is_empty(),
        "{} of {cases} fixtures differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_catalog_definition_has_fixtures() {
    let root = fixtures_dir();
    for (_, k) in wlmap_catalog::kartas().expect("catalog decodes") {
        let dir = root.join(k.name());
        let n = std::fs::read_dir(&dir).map(|d| d.count()).unwrap_or(0);
        assert!(
            n > 0,
            "definition {} has no fixtures in {}",
            k.name(),
            dir.display()
        );
    }
}

#[test]
fn every_catalog_definition_is_valid_without_warnings_that_matter() {
    for (file, k) in wlmap_catalog::kartas().expect("catalog decodes") {
        let findings = wlmap_engine::Definition::check(&k, None);
        let errors: Vec<_> = findings
            .iter()
            .filter(|(f, _)| f.severity == wlmap_schema::Severity::Error)
            .collect();
        assert!(errors.is_empty(), "{file}: {errors:?}");
        assert_eq!(
            file.trim_end_matches(".yaml"),
            k.name(),
            "file name must be the slug"
        );
        let gvk = k.root().kind.clone().expect("root kind");
        assert_eq!(
            gvk.slug(),
            k.name(),
            "metadata.name must be the slug of the root kind"
        );
    }
}
