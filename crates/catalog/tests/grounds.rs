//! Every fixture's expected status says what grounds it: `expected.yaml` holds a `grounds:`
//! list whose entries are a recording of the real operator that shows the same status
//! (`recording: OPERATOR/VERSION/DEFINITION/FLOW.yaml`, in `../shared/conformance/recorded` or
//! in this crate's `recorded/`), the upstream source that writes or documents the field the
//! status follows (`upstream: OWNER/REPO PATH (what it shows)`), or an upstream document
//! (`document: https://... (what it shows)`). A recording is checked: it must exist and hold a
//! definite state equal to the fixture's. Recordings of `../shared` are required with
//! `CI=true`; elsewhere a missing corpus skips only those entries, and says so.

use serde_json::Value;
use std::path::{Path, PathBuf};

mod common;
use common::{fixtures_dir, load_yaml, name, sorted_dirs};

/// The corpora a `recording:` entry may name, in the order they are looked up.
fn corpora() -> Vec<PathBuf> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    vec![
        here.join("recorded"),
        here.join("../../../shared/conformance/recorded"),
    ]
}

/// The definite states a recording holds.
fn recorded_states(path: &Path) -> Vec<String> {
    let doc = load_yaml(path).into_iter().next().unwrap_or(Value::Null);
    doc["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["kind"] == "STATE")
        .filter_map(|e| e["state"].as_str())
        .filter(|s| *s != "Undefined")
        .map(str::to_string)
        .collect()
}

/// `OWNER/REPO PATH (what)`: a repository, a file in it, and what the file shows.
fn upstream_ok(s: &str) -> bool {
    let mut words = s.splitn(3, ' ');
    let (Some(repo), Some(path), Some(what)) = (words.next(), words.next(), words.next()) else {
        return false;
    };
    let repo_ok = repo.split('/').count() == 2 && !repo.starts_with('/') && !repo.ends_with('/');
    let path_ok = path.contains('.') && !path.starts_with("http");
    repo_ok && path_ok && what.starts_with('(') && what.ends_with(')') && what.len() > 4
}

/// `https://... (what)`.
fn document_ok(s: &str) -> bool {
    s.split_once(' ').is_some_and(|(url, what)| {
        url.starts_with("https://") && what.starts_with('(') && what.ends_with(')')
    })
}

/// What is wrong with one state's grounds (empty when they hold); `skipped` counts recordings
/// that could not be checked because their corpus is absent.
fn check_grounds(expected: &Value, skipped: &mut usize) -> Vec<String> {
    let phase = expected
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    let Some(grounds) = expected.get("grounds").and_then(Value::as_array) else {
        return vec!["no `grounds:` list".into()];
    };
    if grounds.is_empty() {
        return vec!["`grounds:` is empty".into()];
    }
    let mut errs = Vec::new();
    for g in grounds {
        let entry = g.as_object().filter(|m| m.len() == 1);
        let Some((key, value)) = entry.and_then(|m| m.iter().next()) else {
            errs.push(format!("not a one-key entry: {g}"));
            continue;
        };
        let value = value.as_str().unwrap_or("");
        match key.as_str() {
            "recording" => {
                let found = corpora()
                    .into_iter()
                    .map(|c| c.join(value))
                    .find(|p| p.is_file());
                match found {
                    Some(p) if recorded_states(&p).iter().any(|s| s == phase) => {}
                    Some(_) => errs.push(format!("{value} records no definite {phase}")),
                    None if shared_absent_outside_ci() => *skipped += 1,
                    None => errs.push(format!("no recording {value}")),
                }
            }
            "upstream" if upstream_ok(value) => {}
            "document" if document_ok(value) => {}
            "upstream" => errs.push(format!("not `OWNER/REPO PATH (what)`: {value}")),
            "document" => errs.push(format!("not `https://... (what)`: {value}")),
            other => errs.push(format!("unknown kind of ground `{other}`")),
        }
    }
    errs
}

fn shared_absent_outside_ci() -> bool {
    !corpora()[1].is_dir() && std::env::var("CI").as_deref() != Ok("true")
}

#[test]
fn every_expected_status_cites_its_grounds() {
    let mut failures = Vec::new();
    let mut skipped = 0;
    let mut cases = 0;
    for slug_dir in sorted_dirs(&fixtures_dir()) {
        for dir in sorted_dirs(&slug_dir) {
            cases += 1;
            let expected = load_yaml(&dir.join("expected.yaml"))
                .into_iter()
                .next()
                .unwrap_or(Value::Null);
            let errs = check_grounds(&expected, &mut skipped);
            if !errs.is_empty() {
                let case = format!("{}/{}", name(&slug_dir), name(&dir));
                failures.push(format!("{case}: {}", errs.join("; ")));
            }
        }
    }
    if skipped > 0 {
        eprintln!("grounds: {skipped} recording(s) not checked: ../shared/conformance is absent");
    }
    assert!(cases > 0);
    assert!(
        failures.is_empty(),
        "{} of {cases} fixture states:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn a_ground_must_say_where_and_what() {
    assert!(upstream_ok(
        "kubernetes/kubernetes pkg/controller/job/job_controller.go (the Complete condition)"
    ));
    assert!(!upstream_ok(
        "kubernetes pkg/controller/job/job_controller.go (x)"
    ));
    assert!(!upstream_ok("kubernetes/kubernetes the job controller"));
    assert!(!upstream_ok(
        "kubernetes/kubernetes pkg/controller/job/job_controller.go"
    ));
    assert!(document_ok(
        "https://kubernetes.io/docs/concepts/workloads/controllers/job/ (Job conditions)"
    ));
    assert!(!document_ok("kubernetes.io/docs (x)"));
    let mut skipped = 0;
    let bare = serde_json::json!({"status": {"phase": "Running"}});
    assert_eq!(check_grounds(&bare, &mut skipped).len(), 1);
    let unknown = serde_json::json!({"status": {"phase": "Running"}, "grounds": [{"belief": "x"}]});
    assert_eq!(check_grounds(&unknown, &mut skipped).len(), 1);
}
