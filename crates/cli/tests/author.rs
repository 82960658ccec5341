//! `wlmap scaffold` and `wlmap check` as a user runs them: a CRD and a snapshot of live
//! objects to a definition that shows the workload as the catalog does; the catalog checked
//! against the testbed's CRDs, and a CRD whose status field was renamed reported.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn wlmap(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_wlmap"))
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("KUBECONFIG")
        .env("HOME", "/nonexistent")
        .output()
        .expect("wlmap")
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf8")
}

fn get_json(args: &[&str]) -> serde_json::Value {
    let o = wlmap(args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("JSON")
}

#[test]
fn a_crd_and_live_objects_become_a_definition_that_reads_the_workload_as_the_catalog_does() {
    let crd = repo().join("crates/author/testdata/crds/kubeflow.org_pytorchjobs.yaml");
    let snapshot =
        repo().join("crates/catalog/fixtures/kubeflow-org-pytorchjob-v1/running/objects.yaml");
    let o = wlmap(&[
        "--snapshot",
        s(&snapshot),
        "scaffold",
        s(&crd),
        "--from-objects",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("drafted kubeflow-org-pytorchjob-v1"),
        "{stderr}"
    );
    let dir = tempfile::tempdir().expect("tmp");
    let draft = dir.path().join("pytorchjob.yaml");
    std::fs::write(&draft, &o.stdout).expect("write");
    let v = wlmap(&["validate", s(&draft)]);
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));

    let ours = get_json(&[
        "--snapshot",
        s(&snapshot),
        "--definitions",
        s(&draft),
        "get",
        "-A",
        "--all-types",
        "-o",
        "json",
    ]);
    let catalog = get_json(&[
        "--snapshot",
        s(&snapshot),
        "get",
        "-A",
        "--all-types",
        "-o",
        "json",
    ]);
    let (a, b) = (&ours["items"][0], &catalog["items"][0]);
    assert_eq!(a["definition"]["origin"], "file");
    for field in ["/pods", "/resources/gpus", "/status/phase"] {
        assert_eq!(
            a.pointer(field),
            b.pointer(field),
            "{field}: draft {a} catalog {b}"
        );
    }
}

#[test]
fn the_catalog_fits_the_testbeds_crds_and_a_renamed_status_field_is_reported() {
    let crds: Vec<PathBuf> = [
        "jobset.x-k8s.io_jobsets.yaml",
        "kubeflow.org_pytorchjobs.yaml",
        "leaderworkerset.x-k8s.io_leaderworkersets.yaml",
        "ray.io_rayclusters.yaml",
    ]
    .iter()
    .map(|f| repo().join("crates/author/testdata/crds").join(f))
    .collect();
    let mut args = vec!["check"];
    for c in &crds {
        args.extend(["--crd", s(c)]);
    }
    let o = wlmap(&args);
    wlmap_e2e::stdout_of("", &o, 0);
    assert!(String::from_utf8_lossy(&o.stderr).contains("checked 4 definition(s): 0 finding(s)"));

    let text = std::fs::read_to_string(&crds[3]).expect("CRD");
    let renamed = text.replace("readyWorkerReplicas:", "readyWorkers:");
    assert_ne!(renamed, text);
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("rayclusters.yaml");
    std::fs::write(&file, renamed).expect("write");
    let o = wlmap(&["check", "--crd", s(&file)]);
    let out = wlmap_e2e::stdout_of("", &o, 5);
    assert!(
        out.lines().any(|l| l
            .starts_with("ray-io-raycluster-v1: statusMappings.running: byExpression: ")
            && l.contains(".status.readyWorkerReplicas is not in the schema")),
        "{out}"
    );
    let j = wlmap(&["check", "--crd", s(&file), "-o", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&j.stdout).expect("JSON");
    assert_eq!(v["checked"], serde_json::json!(["ray-io-raycluster-v1"]));
    assert!(v["findings"].as_array().is_some_and(
        |f| !f.is_empty() && f.iter().all(|x| x["definition"] == "ray-io-raycluster-v1")
    ));
}

#[test]
fn check_without_a_cluster_or_crds_is_a_usage_error_and_scaffold_refuses_a_non_crd() {
    let o = wlmap(&["check"]);
    wlmap_e2e::stdout_of("", &o, 2);
    let fixture =
        repo().join("crates/catalog/fixtures/kubeflow-org-pytorchjob-v1/running/objects.yaml");
    let o = wlmap(&["scaffold", s(&fixture)]);
    assert_eq!(o.status.code(), Some(5));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no CustomResourceDefinition"));
}
