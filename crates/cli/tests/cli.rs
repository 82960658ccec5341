//! The `wlmap` binary, end to end on its offline sources (the embedded demo, snapshots, `-f`
//! files). Live-cluster tests are in `crates/e2e` (they need the testbed).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use wlmap_e2e::json;

/// The binary with no way to find a cluster: no `KUBECONFIG`, a `HOME` without
/// `.kube/config`, no in-cluster service variables. A test that means to reach a cluster
/// says so with `--kubeconfig`.
fn isolated() -> Command {
    static HOME: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    let home = HOME.get_or_init(|| tempfile::tempdir().expect("temp home"));
    let mut c = Command::new(env!("CARGO_BIN_EXE_wlmap"));
    c.env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .env("HOME", home.path())
        .env("NO_COLOR", "1");
    c
}

fn wlmap(args: &[&str]) -> Output {
    isolated().args(args).output().expect("run wlmap")
}

fn wlmap_stdin(args: &[&str], stdin: &str) -> Output {
    let mut c = isolated();
    c.args(args);
    wlmap_e2e::run_command(c, Some(stdin))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Files written to a temporary directory for one test (removed with it).
struct Files(tempfile::TempDir);

impl Files {
    /// Write each (name, text).
    fn new(files: &[(&str, &str)]) -> Files {
        let dir = tempfile::tempdir().expect("tmp");
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).expect("write");
        }
        Files(dir)
    }

    /// A file's path, as an argument.
    fn path(&self, name: &str) -> String {
        self.0.path().join(name).to_str().expect("utf8").to_string()
    }
}

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../catalog/fixtures")
        .join(rel)
        .join("objects.yaml")
}

#[test]
fn the_story_three_jobs_and_three_pods_are_one_jobset_with_12_gpus() {
    let v = json(&wlmap(&[
        "--demo",
        "get",
        "-A",
        "--all-types",
        "-o",
        "json",
    ]));
    let items = v["items"].as_array().expect("items");
    let in_ml: Vec<&Value> = items
        .iter()
        .filter(|i| {
            i["namespace"] == "ml" && i["name"].as_str().unwrap_or("").starts_with("llm-train")
        })
        .collect();
    assert_eq!(
        in_ml.len(),
        1,
        "the Jobs and Pods of the JobSet are not rows of their own: {in_ml:?}"
    );
    let js = in_ml[0];
    assert_eq!(js["kind"], "JobSet");
    assert_eq!(js["resources"]["gpus"], 12.0);
    assert_eq!(js["pods"]["desired"], 3);
    assert_eq!(js["pods"]["ready"], 3);
    assert_eq!(js["status"]["phase"], "Running");
    assert_eq!(js["definition"]["origin"], "catalog");
    // No Job or Pod of any workload leaks into the top-level list.
    assert!(
        items
            .iter()
            .all(|i| i["kind"] != "Pod" && i["kind"] != "ReplicaSet"),
        "{items:?}"
    );
}

#[test]
fn describe_places_leader_and_workers() {
    let v = json(&wlmap(&[
        "--demo",
        "describe",
        "jobset/llm-train",
        "-n",
        "ml",
        "-o",
        "json",
    ]));
    let root = &v["components"][0];
    assert_eq!(root["name"], "jobset");
    let kids = root["components"].as_array().expect("children");
    let by_inst = |i: &str| {
        kids.iter()
            .find(|k| k["instance"] == i)
            .unwrap_or_else(|| panic!("no instance {i}"))
    };
    assert_eq!(by_inst("leader")["pods"].as_array().map(Vec::len), Some(1));
    assert_eq!(by_inst("workers")["pods"].as_array().map(Vec::len), Some(2));
    assert_eq!(by_inst("workers")["replicas"]["desired"], 2);
    assert_eq!(v["unattributedPods"], serde_json::json!([]));
    assert_eq!(v["resources"]["gpus"], 12.0);
    assert_eq!(v["pods"]["observed"], 3);
}

#[test]
fn describe_table_shows_the_tree_and_totals() {
    let o = wlmap(&["--demo", "describe", "jobset", "llm-train", "-n", "ml"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.contains("|-- replicatedjob[leader]"), "{out}");
    assert!(out.contains("`-- replicatedjob[workers]"), "{out}");
    assert!(out.contains("GPUs: 12"), "{out}");
    let explain = wlmap(&[
        "--demo",
        "describe",
        "jobset/llm-train",
        "-n",
        "ml",
        "--explain",
    ]);
    assert!(String::from_utf8_lossy(&explain.stdout).contains("Status rules:"));
}

#[test]
fn a_snapshot_file_and_stdin_read_like_the_demo() {
    let path = fixture("jobset-x-k8s-io-jobset-v1alpha2/leader-workers");
    let p = path.to_str().expect("utf8 path");
    let a = json(&wlmap(&[
        "--snapshot",
        p,
        "get",
        "jobsets",
        "-A",
        "-o",
        "json",
    ]));
    let text = std::fs::read_to_string(&path).expect("fixture");
    let b = json(&wlmap_stdin(
        &["--snapshot", "-", "get", "jobset", "-n", "ml", "-o", "json"],
        &text,
    ));
    assert_eq!(a["items"].as_array().map(Vec::len), Some(1));
    assert_eq!(a["items"][0]["resources"], b["items"][0]["resources"]);
    assert_eq!(a["items"][0]["pods"], b["items"][0]["pods"]);
    // A List (kubectl get -o json) works too.
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).expect("yaml");
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": docs});
    let c = json(&wlmap_stdin(
        &[
            "--snapshot",
            "-",
            "get",
            "jobset/llm-train",
            "-n",
            "ml",
            "-o",
            "json",
        ],
        &list.to_string(),
    ));
    assert_eq!(c["items"][0]["resources"]["gpus"], 12.0);
}

#[test]
fn file_mode_has_no_live_counts_without_pods() {
    let dir = tempfile::tempdir().expect("tmp");
    let text = std::fs::read_to_string(fixture("jobset-x-k8s-io-jobset-v1alpha2/leader-workers"))
        .expect("fixture");
    let first = text.split("\n---").next().expect("first doc");
    let f = dir.path().join("js.yaml");
    std::fs::write(&f, first).expect("write");
    let v = json(&wlmap(&[
        "describe",
        "-f",
        f.to_str().expect("utf8"),
        "-o",
        "json",
    ]));
    assert_eq!(v["pods"]["desired"], 3);
    assert_eq!(v["pods"]["observed"], Value::Null);
    assert_eq!(v["resources"]["gpus"], 12.0);
}

#[test]
fn exit_codes_are_distinct() {
    let not_found = wlmap(&["--demo", "describe", "jobset/nope", "-n", "ml"]);
    assert_eq!(not_found.status.code(), Some(3), "{}", stderr(&not_found));
    assert!(stderr(&not_found).contains("\"nope\" not found"));
    let no_def = wlmap(&["--demo", "get", "frobnicators"]);
    assert_eq!(no_def.status.code(), Some(4));
    let usage = wlmap(&["--demo", "get"]);
    assert_eq!(usage.status.code(), Some(2));
    let bad_flag = wlmap(&["get", "--no-such-flag"]);
    assert_eq!(bad_flag.status.code(), Some(2));
    let dir = tempfile::tempdir().expect("tmp");
    let junk = dir.path().join("junk.yaml");
    std::fs::write(&junk, "kind: [unclosed\n").expect("write");
    let invalid = wlmap(&[
        "--snapshot",
        junk.to_str().expect("utf8"),
        "get",
        "-A",
        "--all-types",
    ]);
    assert_eq!(invalid.status.code(), Some(5), "{}", stderr(&invalid));
    assert!(
        stderr(&invalid).contains("junk.yaml:"),
        "{}",
        stderr(&invalid)
    );
    let binary = dir.path().join("bin.yaml");
    std::fs::write(&binary, [0u8, 159, 146, 150, 255]).expect("write");
    let b = wlmap(&[
        "--snapshot",
        binary.to_str().expect("utf8"),
        "get",
        "-A",
        "--all-types",
    ]);
    assert_eq!(b.status.code(), Some(5));
    assert!(!stderr(&b).contains("panicked"));
}

#[test]
fn an_unreachable_cluster_is_named_and_exits_1() {
    let dir = tempfile::tempdir().expect("tmp");
    let kc = dir.path().join("kubeconfig");
    std::fs::write(&kc, "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:1', insecure-skip-tls-verify: true}\nusers:\n- name: u\n  user: {token: s3cr3t-token}\ncontexts:\n- name: x\n  context: {cluster: c, user: u, namespace: ml}\ncurrent-context: x\n").expect("write");
    let o = wlmap(&[
        "--kubeconfig",
        kc.to_str().expect("utf8"),
        "--request-timeout",
        "5",
        "get",
        "jobsets",
        "-v",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("127.0.0.1:1"), "{err}");
    assert!(
        !err.contains("s3cr3t-token"),
        "credentials must never appear: {err}"
    );
    // A server that never answered is a wrong address, not a restart: no retries.
    assert!(!err.contains("gave up after"), "{err}");
}

#[test]
fn validate_points_at_the_unknown_field() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = dir.path().join("k.yaml");
    std::fs::write(&f, "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: x}\nspec:\n  structureDefinition:\n    rootComponent:\n      name: x\n      kind: {group: a.io, version: v1, kind: X}\n      statusDefinition: {statusMappings: {running: [{byPhase: Running}]}}\n    childComponents:\n    - name: w\n      ownerName: x\n").expect("write");
    let o = wlmap(&["validate", f.to_str().expect("utf8")]);
    // The misspelt `ownerRef` is dropped (as the Go implementation drops it), so the child
    // has no parent: an error, and the warning says why.
    assert_eq!(o.status.code(), Some(5));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(
            "k.yaml:12:7: warning: unknown field `spec.structureDefinition.childComponents[0].ownerName`"
        ),
        "{out}"
    );
    assert!(out.contains("error:"), "{out}");
}

#[test]
fn an_unknown_field_is_a_warning_as_the_go_implementation_ignores_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = dir.path().join("k.yaml");
    let text = "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: widget}\nspec:\n  structureDefinition:\n    rootComponent:\n      name: widget\n      kind: {group: example.io, version: v1, kind: Widget}\n      description: a field of no release of the format\n      specDefinition: {podTemplateSpecPath: .spec.template}\n      statusDefinition: {phaseDefinition: {path: .status.phase}, statusMappings: {running: [{byPhase: Running}]}}\n";
    std::fs::write(&f, text).expect("write");
    let path = f.to_str().expect("utf8");
    let o = wlmap(&["validate", path]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("k.yaml:9:7: warning: unknown field `spec.structureDefinition.rootComponent.description`"),
        "{out}"
    );
    assert!(out.contains("k.yaml: ok: 1 definition(s): widget"), "{out}");
    // --strict counts the warning as an error.
    let o = wlmap(&["validate", "--strict", path]);
    assert_eq!(o.status.code(), Some(5));
    assert!(
        stderr(&o).contains("0 error(s), 1 warning(s)"),
        "{}",
        stderr(&o)
    );
    // Loaded with --definitions: used, with the warning on stderr.
    let o = wlmap(&["--demo", "--definitions", path, "definitions"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("widget"));
    assert!(
        stderr(&o).contains("wlmap: warning: ")
            && stderr(&o).contains("rootComponent.description` ignored"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn validate_reports_expression_errors_with_a_location_and_hint() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = dir.path().join("k.yaml");
    std::fs::write(&f, "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: x}\nspec:\n  structureDefinition:\n    rootComponent:\n      name: x\n      kind: {group: a.io, version: v1, kind: X}\n      scaleDefinition:\n        replicasPath: '.spec.replicas | env.HOME'\n      statusDefinition: {phaseDefinition: {path: .status.phase}, statusMappings: {running: [{byPhase: Running}]}}\n").expect("write");
    let o = wlmap(&["validate", f.to_str().expect("utf8")]);
    assert_eq!(o.status.code(), Some(5));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("k.yaml:10:"), "{out}");
    assert!(out.contains("error: replicasPath"), "{out}");
    assert!(out.contains("hint:"), "{out}");
}

#[test]
fn validate_accepts_every_catalog_file_and_the_legacy_format() {
    let defs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalog/definitions");
    let mut files: Vec<String> = std::fs::read_dir(&defs)
        .expect("dir")
        .filter_map(|e| e.ok())
        .map(|e| e.path().display().to_string())
        .collect();
    files.sort();
    let mut args = vec!["validate"];
    args.extend(files.iter().map(String::as_str));
    let o = wlmap(&args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let legacy = std::fs::read_to_string(defs.join("batch-job-v1.yaml"))
        .expect("read")
        .replace(
            "apiVersion: run.ai/v1alpha1",
            "apiVersion: optimization.nvidia.com/v1alpha1",
        )
        .replace("kind: Karta", "kind: ResourceInterface");
    let o = wlmap_stdin(&["validate", "-"], &legacy);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn set_changes_only_the_pod_templates_and_is_idempotent() {
    let dir = tempfile::tempdir().expect("tmp");
    let text = std::fs::read_to_string(fixture("jobset-x-k8s-io-jobset-v1alpha2/leader-workers"))
        .expect("fixture");
    let f = dir.path().join("js.yaml");
    std::fs::write(&f, text.split("\n---").next().expect("doc")).expect("write");
    let p = f.to_str().expect("utf8");
    let before = json(&wlmap(&["describe", "-f", p, "-o", "json"]));
    let o = wlmap(&[
        "set",
        "-f",
        p,
        "--scheduler-name",
        "kai-scheduler",
        "--label",
        "team=ml",
        "--toleration",
        "nvidia.com/gpu:NoSchedule",
        "-o",
        "json",
    ]);
    let after = json(&o);
    for rj in after["spec"]["replicatedJobs"].as_array().expect("rjs") {
        let t = &rj["template"]["spec"]["template"];
        assert_eq!(t["spec"]["schedulerName"], "kai-scheduler");
        assert_eq!(t["metadata"]["labels"]["team"], "ml");
        assert_eq!(t["spec"]["tolerations"][0]["key"], "nvidia.com/gpu");
    }
    // Everything else is untouched.
    let original: Value =
        serde_saphyr::from_str(text.split("\n---").next().expect("doc")).expect("yaml");
    let mut stripped = after.clone();
    for rj in stripped["spec"]["replicatedJobs"]
        .as_array_mut()
        .expect("rjs")
    {
        let t = &mut rj["template"]["spec"]["template"];
        t["spec"]["schedulerName"] = original["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["schedulerName"].clone();
        t["spec"]
            .as_object_mut()
            .expect("spec")
            .remove("tolerations");
        let labels = t["metadata"]["labels"].as_object_mut().expect("labels");
        labels.remove("team");
        if labels.is_empty() {
            t["metadata"]
                .as_object_mut()
                .expect("meta")
                .remove("labels");
        }
    }
    assert_eq!(stripped, original);
    // Applying it again changes nothing.
    let f2 = dir.path().join("js2.json");
    std::fs::write(&f2, after.to_string()).expect("write");
    let again = wlmap(&[
        "set",
        "-f",
        f2.to_str().expect("utf8"),
        "--scheduler-name",
        "kai-scheduler",
        "--label",
        "team=ml",
        "--toleration",
        "nvidia.com/gpu:NoSchedule",
        "-o",
        "json",
    ]);
    assert_eq!(json(&again), after);
    assert!(stderr(&again).contains("0 value(s) changed"));
    // What the update touched is scheduling only: the workload reads the same after it
    // (tree, pods, GPUs, status).
    let described = json(&wlmap(&[
        "describe",
        "-f",
        f2.to_str().expect("utf8"),
        "-o",
        "json",
    ]));
    assert_eq!(described, before);
}

#[test]
fn set_refuses_a_read_only_source_and_bad_flags() {
    let o = wlmap(&[
        "--demo",
        "set",
        "jobset/llm-train",
        "-n",
        "ml",
        "--scheduler-name",
        "x",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let o = wlmap(&[
        "--demo",
        "set",
        "jobset/llm-train",
        "-n",
        "ml",
        "--toleration",
        "k:Sometimes",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn definitions_list_and_print_one_ready_to_apply() {
    let v = json(&wlmap(&["definitions", "-o", "json"]));
    let items = v["items"].as_array().expect("items");
    assert!(items.len() >= 20);
    assert!(
        items
            .iter()
            .all(|k| k["apiVersion"] == "run.ai/v1alpha1" && k["kind"] == "Karta")
    );
    let one = wlmap(&["definitions", "batch-job-v1", "-o", "yaml"]);
    assert!(one.status.success());
    let text = String::from_utf8_lossy(&one.stdout);
    let back = wlmap_stdin(&["validate", "-"], &text);
    assert!(
        back.status.success(),
        "{}",
        String::from_utf8_lossy(&back.stdout)
    );
    let table = wlmap(&["definitions"]);
    assert!(String::from_utf8_lossy(&table.stdout).starts_with("NAME"));
}

#[test]
fn every_command_has_help_with_examples_and_completions_exist() {
    for cmd in [
        "get",
        "describe",
        "definitions",
        "validate",
        "set",
        "gang",
        "conformance",
        "completion",
    ] {
        let o = wlmap(&[cmd, "--help"]);
        assert!(o.status.success());
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("Examples:"),
            "{cmd} --help has no examples"
        );
    }
    let o = wlmap(&["completion", "bash"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("_wlmap"));
    let v = wlmap(&["--version"]);
    assert!(String::from_utf8_lossy(&v.stdout).starts_with("wlmap "));
}

#[test]
fn wide_output_and_label_selectors() {
    let o = wlmap(&["--demo", "get", "-A", "--all-types", "-o", "wide"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.lines()
            .next()
            .is_some_and(|h| h.contains("COMPONENTS") && h.contains("DEFINITION")),
        "{out}"
    );
    let v = json(&wlmap(&[
        "--demo",
        "get",
        "jobsets",
        "-A",
        "-l",
        "no-such-label=x",
        "-o",
        "json",
    ]));
    assert_eq!(v["items"].as_array().map(Vec::len), Some(0));
}

/// The repository's own recordings (`crates/catalog/recorded`) are always there.
#[test]
fn conformance_command_reads_the_repository_recordings() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalog/recorded");
    let o = wlmap(&["conformance", dir.to_str().expect("utf8")]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    for d in [
        "batch-job-v1",
        "apps-statefulset-v1",
        "ray-io-raycluster-v1",
        "jobset-x-k8s-io-jobset-v1alpha2",
        "leaderworkerset-x-k8s-io-leaderworkerset-v1",
        "kubeflow-org-pytorchjob-v1",
        "trainer-kubeflow-org-trainjob-v1alpha1",
        "kubeflow-org-mpijob-v2beta1",
    ] {
        assert!(out.contains(d), "{d}: {out}");
    }
}

#[test]
fn conformance_command_agrees_when_recordings_are_present() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance/recorded");
    if !dir.is_dir() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "no recordings at {} (CI=true: every tier must run)",
            dir.display()
        );
        eprintln!("no recordings; skipped");
        return;
    }
    let o = wlmap(&["conformance", dir.to_str().expect("utf8")]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("jobset-x-k8s-io-jobset-v1alpha2"), "{out}");
}

/// Golden files for every gang output format (`scripts/bless.sh` rewrites them).
#[test]
fn gang_formats_match_their_golden_files() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let bless = std::env::var_os("WLMAP_BLESS").is_some();
    let mut diffs = Vec::new();
    for (rel, short) in [
        (
            "leaderworkerset-x-k8s-io-leaderworkerset-v1/two-groups",
            "lws",
        ),
        ("jobset-x-k8s-io-jobset-v1alpha2/leader-workers", "jobset"),
        ("ray-io-raycluster-v1/two-worker-groups", "raycluster"),
    ] {
        let f = fixture(rel);
        let p = f.to_str().expect("utf8");
        for format in [
            "default",
            "kai",
            "coscheduling",
            "volcano",
            "kueue",
            "native",
            "native-composite",
            "workload",
        ] {
            let mut args = vec!["gang", "-f", p];
            if format != "default" {
                args.extend(["--format", format]);
            } else {
                args.extend(["-o", "yaml"]);
            }
            let o = wlmap(&args);
            assert!(o.status.success(), "{short} {format}: {}", stderr(&o));
            let path = golden.join(format!("gang-{short}-{format}.yaml"));
            if bless {
                std::fs::write(&path, &o.stdout).expect("write golden");
            }
            let want = std::fs::read(&path).unwrap_or_default();
            if want != o.stdout {
                diffs.push(format!(
                    "{} differs:\n{}",
                    path.display(),
                    String::from_utf8_lossy(&o.stdout)
                ));
            }
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

#[test]
fn predicted_gangs_from_a_manifest_without_pods() {
    let dir = tempfile::tempdir().expect("tmp");
    let text = std::fs::read_to_string(fixture(
        "leaderworkerset-x-k8s-io-leaderworkerset-v1/two-groups",
    ))
    .expect("fixture");
    let f = dir.path().join("lws.yaml");
    std::fs::write(&f, text.split("\n---").next().expect("doc")).expect("write");
    let v = json(&wlmap(&["gang", "-f", f.to_str().expect("utf8")]));
    assert_eq!(v["mode"], "predicted");
    let groups = v["podGroups"].as_array().expect("groups");
    let per_group: Vec<&Value> = groups
        .iter()
        .filter(|g| g["name"].as_str().unwrap_or("").contains("-group-group-"))
        .collect();
    assert_eq!(per_group.len(), 2, "{groups:?}");
    assert!(
        per_group
            .iter()
            .all(|g| g["minMember"] == 2 && g.get("members").is_none())
    );
}

#[test]
fn validate_with_a_crd_flags_paths_the_kind_does_not_have() {
    let dir = tempfile::tempdir().expect("tmp");
    let crd = dir.path().join("crd.yaml");
    std::fs::write(&crd, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.io}\nspec:\n  group: example.io\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              count: {type: integer}\n              name: {type: string}\n              template: {type: object, x-kubernetes-preserve-unknown-fields: true}\n          status:\n            type: object\n            properties:\n              phase: {type: string}\n").expect("write");
    let k = dir.path().join("k.yaml");
    let karta = |replicas: &str, template: &str| {
        format!(
            "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {{name: w}}\nspec:\n  structureDefinition:\n    rootComponent:\n      name: w\n      kind: {{group: example.io, version: v1, kind: Widget}}\n      specDefinition: {{podTemplateSpecPath: {template}}}\n      scaleDefinition: {{replicasPath: {replicas}}}\n      statusDefinition: {{phaseDefinition: {{path: .status.phase}}, statusMappings: {{running: [{{byPhase: Up}}]}}}}\n"
        )
    };
    std::fs::write(&k, karta(".spec.count", ".spec.template")).expect("write");
    let ok = wlmap(&[
        "validate",
        k.to_str().expect("utf8"),
        "--crd",
        crd.to_str().expect("utf8"),
    ]);
    assert!(ok.status.success());
    assert!(
        !String::from_utf8_lossy(&ok.stdout).contains("warning"),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
    std::fs::write(&k, karta(".spec.name", ".spec.templat")).expect("write");
    let bad = wlmap(&[
        "validate",
        k.to_str().expect("utf8"),
        "--crd",
        crd.to_str().expect("utf8"),
    ]);
    let out = String::from_utf8_lossy(&bad.stdout);
    assert!(out.contains(".spec.templat is not in the schema"), "{out}");
    assert!(
        out.contains("points at a string in the schema, expected an integer"),
        "{out}"
    );
}

#[test]
fn dra_resource_claims_are_shown() {
    let pod = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "dra", "namespace": "ml"},
      "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}],
               "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}]},
      "status": {"phase": "Pending"}}"#;
    let v = json(&wlmap_stdin(&["describe", "-f", "-", "-o", "json"], pod));
    assert_eq!(
        v["components"][0]["resourceClaims"],
        serde_json::json!(["gpu"])
    );
    let t = wlmap_stdin(&["describe", "-f", "-"], pod);
    assert!(String::from_utf8_lossy(&t.stdout).contains("claims: gpu"));
}

#[test]
fn references_are_resolved_from_the_snapshot() {
    // A Kubeflow TrainJob keeps its pods' shape in a referenced TrainingRuntime.
    let path = fixture("trainer-kubeflow-org-trainjob-v1alpha1/running");
    let v = json(&wlmap(&[
        "--snapshot",
        path.to_str().expect("utf8"),
        "get",
        "trainjobs",
        "-A",
        "-o",
        "json",
    ]));
    assert_eq!(v["items"].as_array().map(Vec::len), Some(1));
    assert_eq!(v["items"][0]["resources"]["gpus"], 16.0);
    // Without the runtime in the snapshot the shape is unknown: no desired pods, no GPUs.
    let text = std::fs::read_to_string(&path).expect("fixture");
    let without: Vec<&str> = text
        .split("\n---")
        .filter(|d| !d.contains("\nkind: TrainingRuntime"))
        .collect();
    let v = json(&wlmap_stdin(
        &["--snapshot", "-", "get", "trainjobs", "-A", "-o", "json"],
        &without.join("\n---"),
    ));
    assert_eq!(v["items"][0]["resources"]["gpus"], 0.0);
}

#[test]
fn yaml_alias_bombs_and_deep_nesting_are_refused_quickly() {
    let mut bomb = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for i in 1..10 {
        let prev = (b'a' + i - 1) as char;
        let cur = (b'a' + i) as char;
        bomb.push_str(&format!("{cur}: &{cur} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"));
    }
    bomb.push_str("kind: Pod\napiVersion: v1\n");
    let o = wlmap_stdin(&["--snapshot", "-", "get", "-A", "--all-types"], &bomb);
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    assert!(stderr(&o).contains("budget"), "{}", stderr(&o));
    let deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
    let o = wlmap_stdin(&["--snapshot", "-", "get", "-A", "--all-types"], &deep);
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    let deep_yaml = format!(
        "kind: Pod\nx: {}1{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let o = wlmap_stdin(&["--snapshot", "-", "get", "-A", "--all-types"], &deep_yaml);
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"));
}

/// 100 MB inputs: junk is refused (exit 5, no panic); a valid snapshot whose pod carries a
/// 100 MB annotation is read and its pod listed.
#[test]
fn hundred_megabyte_snapshots() {
    let dir = tempfile::tempdir().expect("tmp");
    let junk = dir.path().join("junk.json");
    let bytes: Vec<u8> = (0..100_000_000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 24) as u8)
        .collect();
    std::fs::write(&junk, &bytes).expect("write");
    drop(bytes);
    let o = wlmap(&[
        "--snapshot",
        junk.to_str().expect("utf8"),
        "get",
        "-A",
        "--all-types",
    ]);
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    let big = dir.path().join("big.json");
    let pod = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "huge", "namespace": "ml", "uid": "u1",
            "annotations": {"note": "x".repeat(100_000_000)}},
        "spec": {"containers": [{"name": "c", "image": "i",
            "resources": {"limits": {"nvidia.com/gpu": "2"}}}]},
        "status": {"phase": "Running"}
    });
    std::fs::write(&big, pod.to_string()).expect("write");
    drop(pod);
    let o = wlmap(&[
        "--snapshot",
        big.to_str().expect("utf8"),
        "get",
        "pods",
        "-A",
        "-o",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert!(out.to_string().contains("\"huge\""), "{out}");
}

#[test]
fn an_object_of_the_wrong_shape_exits_5_naming_definition_component_and_field() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = dir.path().join("bad.yaml");
    // `replicatedJobs` must be a list (jobset api/v1alpha2/jobset_types.go); here a string.
    std::fs::write(&f, "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: bad, namespace: default, uid: u1}\nspec:\n  replicatedJobs: oops\n").expect("write");
    let snap = f.to_str().expect("utf8");
    let get = wlmap(&["--snapshot", snap, "get", "-A", "--all-types"]);
    assert_eq!(get.status.code(), Some(5), "{}", stderr(&get));
    let err = stderr(&get);
    // The JobSet's status still reads; its replicated jobs cannot: a partial answer.
    assert!(
        err.contains("default/JobSet/bad: component replicatedjob"),
        "{err}"
    );
    assert!(
        err.contains("component replicatedjob, field instanceIdPath"),
        "{err}"
    );
    let describe = wlmap(&[
        "--snapshot",
        snap,
        "describe",
        "jobset/bad",
        "-n",
        "default",
    ]);
    assert_eq!(describe.status.code(), Some(5), "{}", stderr(&describe));
    let err = stderr(&describe);
    assert!(
        err.contains("definition jobset-x-k8s-io-jobset-v1alpha2"),
        "{err}"
    );
    assert_eq!(
        err.matches("cannot use \"oops\"").count(),
        1,
        "the cause is said once: {err}"
    );
}

/// A status rule whose expression fails (a type error, a spent step budget) is never silent:
/// `!` in the table, `StatusRuleFailed` with the rule and the error in the JSON, a warning
/// naming definition, rule and error on stderr, exit 5 after the whole answer.
#[test]
fn a_status_rule_that_fails_is_said_everywhere() {
    let files = Files::new(&[
        (
            "widget.yaml",
            "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: example-io-widget-v1}\nspec:\n  structureDefinition:\n    rootComponent:\n      name: widget\n      kind: {group: example.io, version: v1, kind: Widget}\n      specDefinition: {podTemplateSpecPath: .spec.template}\n      statusDefinition:\n        phaseDefinition: {path: .status.phase}\n        statusMappings:\n          failed:\n          - byExpression: {expression: '.status.failures + 1 > 0', expectedResult: \"true\"}\n          running:\n          - byPhase: Running\n",
        ),
        (
            "w.yaml",
            "apiVersion: example.io/v1\nkind: Widget\nmetadata: {name: w1, namespace: ml, uid: u1}\nspec:\n  template: {spec: {containers: [{name: c}]}}\nstatus: {phase: Running, failures: \"none\"}\n",
        ),
    ]);
    let (d, o) = (&files.path("widget.yaml"), &files.path("w.yaml"));
    let text = wlmap(&["--definitions", d, "describe", "-f", o]);
    assert_eq!(text.status.code(), Some(5));
    let out = String::from_utf8_lossy(&text.stdout);
    assert!(
        out.contains("Status: Running!"),
        "the status is still shown, marked: {out}"
    );
    let err = String::from_utf8_lossy(&text.stderr);
    assert!(
        err.contains(
            "definition example-io-widget-v1: status rule statusMappings.failed[0].byExpression:"
        ) && err.contains("cannot"),
        "{err}"
    );
    let json_out = wlmap(&["--definitions", d, "describe", "-f", o, "-o", "json"]);
    assert_eq!(json_out.status.code(), Some(5));
    let v: serde_json::Value = serde_json::from_slice(&json_out.stdout).expect("JSON");
    assert_eq!(v["status"]["reason"], "StatusRuleFailed", "{v}");
    assert!(
        v["status"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("statusMappings.failed[0].byExpression: ")),
        "{v}"
    );
    assert_eq!(v["status"]["failures"][0]["status"], "Failed");
    let get = wlmap(&["--definitions", d, "--snapshot", o, "get", "widgets", "-A"]);
    assert_eq!(get.status.code(), Some(5));
    let table = String::from_utf8_lossy(&get.stdout);
    assert!(table.contains("Running!"), "{table}");
    let err = String::from_utf8_lossy(&get.stderr);
    assert!(
        err.contains("failed on 1 workload(s) (first ml/Widget/w1)"),
        "{err}"
    );
}

/// Definitions from the release of the format whose catalog used `pending` and `progressing`
/// (dsx-ai-factory/karta at 9eca29c) load: both keys read as `initializing`, with a warning.
#[test]
fn older_status_keys_pending_and_progressing_read_as_initializing() {
    let dir = tempfile::tempdir().expect("tmp");
    let def = dir.path().join("nim.yaml");
    std::fs::write(
        &def,
        "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: example-io-svc-v1}\nspec:\n  structureDefinition:\n    rootComponent:\n      name: svc\n      kind: {group: example.io, version: v1, kind: Svc}\n      specDefinition: {podTemplateSpecPath: .spec.template}\n      statusDefinition:\n        phaseDefinition: {path: .status.state}\n        statusMappings:\n          pending:\n          - byPhase: Pending\n          progressing:\n          - byPhase: Deploying\n          running:\n          - byPhase: Ready\n",
    )
    .expect("write");
    let d = def.to_str().expect("utf8");
    let v = wlmap(&["validate", d]);
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
    let out = String::from_utf8_lossy(&v.stdout);
    assert!(
        out.contains(
            "`pending` is a status key of an older release of the format: read as `initializing`"
        ),
        "{out}"
    );
    assert!(out.contains("`progressing` is a status key"), "{out}");
    for (state, want) in [
        ("Pending", "Initializing"),
        ("Deploying", "Initializing"),
        ("Ready", "Running"),
    ] {
        let obj = dir.path().join("svc.yaml");
        std::fs::write(
            &obj,
            format!("apiVersion: example.io/v1\nkind: Svc\nmetadata: {{name: s, namespace: ml, uid: u1}}\nspec:\n  template: {{spec: {{containers: [{{name: c}}]}}}}\nstatus: {{state: {state}}}\n"),
        )
        .expect("write");
        let o = wlmap(&[
            "--definitions",
            d,
            "describe",
            "-f",
            obj.to_str().expect("utf8"),
            "-o",
            "json",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
        assert_eq!(v["status"]["phase"], want, "{state}: {v}");
    }
}

/// A rule of wlmap's own that the format does not have (pod-bearing siblings without a
/// selector: the Go implementation accepts them) is a warning, and it points at the component
/// it is about, not at the next component's selector.
#[test]
fn wlmap_only_rules_warn_and_point_at_their_own_component() {
    let dir = tempfile::tempdir().expect("tmp");
    let def = dir.path().join("milvus.yaml");
    let text = "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: example-io-db-v1}\nspec:\n  structureDefinition:\n    rootComponent:\n      name: db\n      kind: {group: example.io, version: v1, kind: Db}\n      statusDefinition: {phaseDefinition: {path: .status.phase}, statusMappings: {running: [{byPhase: Healthy}]}}\n    childComponents:\n    - name: proxy\n      kind: {group: \"\", version: v1, kind: Pod}\n      ownerRef: db\n      specDefinition: {podTemplateSpecPath: .spec.proxy.template}\n      podSelector:\n        componentTypeSelector: {keyPath: '.metadata.labels.component', value: proxy}\n    - name: etcd\n      kind: {group: \"\", version: v1, kind: Pod}\n      ownerRef: db\n      specDefinition: {podTemplateSpecPath: .spec.etcd.template}\n    - name: data\n      kind: {group: \"\", version: v1, kind: Pod}\n      ownerRef: db\n      specDefinition: {podTemplateSpecPath: .spec.data.template}\n      podSelector:\n        componentTypeSelector: {keyPath: '.metadata.labels.component', value: data}\n";
    std::fs::write(&def, text).expect("write");
    let o = wlmap(&["validate", def.to_str().expect("utf8")]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "a warning, not an error: {out}");
    let etcd_line = text
        .lines()
        .position(|l| l.contains("name: etcd"))
        .expect("etcd")
        + 1;
    let warning = out
        .lines()
        .find(|l| l.contains("\"etcd\" has pod-bearing siblings"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        warning.contains(&format!("milvus.yaml:{etcd_line}:")) && warning.contains(": warning: "),
        "points at etcd's line {etcd_line}: {warning}"
    );
}

/// One component whose path cannot be evaluated on an object (the Go JobSet definition's
/// `replicas * parallelism` with parallelism unset) does not hide the rest: the status and the
/// other components are shown, the failing one marked with its error, exit 5 (partial).
#[test]
fn a_component_that_cannot_be_read_gives_a_partial_answer() {
    let files = Files::new(&[
        (
            "pair.yaml",
            "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: example-io-pair-v1}\nspec:\n  structureDefinition:\n    rootComponent:\n      name: pair\n      kind: {group: example.io, version: v1, kind: Pair}\n      statusDefinition: {phaseDefinition: {path: .status.phase}, statusMappings: {running: [{byPhase: Running}]}}\n    childComponents:\n    - name: leader\n      kind: {group: \"\", version: v1, kind: Pod}\n      ownerRef: pair\n      specDefinition: {podTemplateSpecPath: .spec.leader.template}\n      scaleDefinition: {replicasPath: \"1\"}\n      podSelector: {componentTypeSelector: {keyPath: '.metadata.labels.role', value: leader}}\n    - name: worker\n      kind: {group: \"\", version: v1, kind: Pod}\n      ownerRef: pair\n      specDefinition: {podTemplateSpecPath: .spec.worker.template}\n      scaleDefinition: {replicasPath: '.spec.worker.replicas * .spec.worker.parallelism'}\n      podSelector: {componentTypeSelector: {keyPath: '.metadata.labels.role', value: worker}}\n",
        ),
        (
            "p.yaml",
            "apiVersion: example.io/v1\nkind: Pair\nmetadata: {name: p1, namespace: ml, uid: u1}\nspec:\n  leader: {template: {spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 2}}}]}}}\n  worker: {replicas: 2, template: {spec: {containers: [{name: c}]}}}\nstatus: {phase: Running}\n",
        ),
    ]);
    let (d, o) = (&files.path("pair.yaml"), &files.path("p.yaml"));
    let text = wlmap(&["--definitions", d, "describe", "-f", o]);
    let out = wlmap_e2e::stdout_of("", &text, 5);
    assert!(out.contains("Status: Running"), "{out}");
    assert!(
        out.contains("leader") && out.contains("gpu: 2"),
        "the readable component: {out}"
    );
    assert!(
        out.lines()
            .any(|l| l.contains("worker") && l.contains("UNREADABLE:")),
        "{out}"
    );
    let err = String::from_utf8_lossy(&text.stderr);
    assert!(
        err.contains("component worker could not be read") && err.contains("partial answer"),
        "{err}"
    );
    let json_out = wlmap(&["--definitions", d, "describe", "-f", o, "-o", "json"]);
    assert_eq!(json_out.status.code(), Some(5));
    let v: serde_json::Value = serde_json::from_slice(&json_out.stdout).expect("JSON");
    let kids = v["components"][0]["components"]
        .as_array()
        .expect("children");
    let worker = kids.iter().find(|k| k["name"] == "worker").expect("worker");
    assert!(
        worker["error"]
            .as_str()
            .is_some_and(|e| e.contains("replicasPath")),
        "{worker}"
    );
    let leader = kids.iter().find(|k| k["name"] == "leader").expect("leader");
    assert!(
        leader.get("error").is_none() && leader["resources"]["gpus"] == 2.0,
        "{leader}"
    );
    let get = wlmap(&[
        "--definitions",
        d,
        "--snapshot",
        o,
        "get",
        "pairs",
        "-A",
        "-o",
        "json",
    ]);
    assert_eq!(get.status.code(), Some(5));
    let v: serde_json::Value = serde_json::from_slice(&get.stdout).expect("JSON");
    assert!(
        v["items"][0]["unreadable"][0]
            .as_str()
            .is_some_and(|u| u.starts_with("worker: ")),
        "{v}"
    );
}

/// A TYPE argument may be a short name that a definition declares (`spec.shortNames`); it
/// names that definition's kind alone: `vcjob` is Volcano's Job, never batch/v1 Job, while a
/// bare `job` is batch/v1 Job (Kubernetes' own groups first, as kubectl resolves it).
#[test]
fn short_names_come_from_the_definitions() {
    let dir = tempfile::tempdir().expect("tmp");
    let def = dir.path().join("trainer.yaml");
    std::fs::write(
        &def,
        "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: example-io-trainer-v1}\nspec:\n  shortNames: [trn]\n  structureDefinition:\n    rootComponent:\n      name: trainer\n      kind: {group: example.io, version: v1, kind: Trainer}\n      specDefinition: {podTemplateSpecPath: .spec.template}\n      statusDefinition:\n        phaseDefinition: {path: .status.phase}\n        statusMappings:\n          running:\n          - byPhase: Running\n",
    )
    .expect("write");
    let objects = dir.path().join("objects.yaml");
    std::fs::write(
        &objects,
        "apiVersion: example.io/v1\nkind: Trainer\nmetadata: {name: t1, namespace: ml, uid: u1}\nspec:\n  template: {spec: {containers: [{name: c}]}}\n---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: j1, namespace: ml, uid: u2}\nspec:\n  template: {spec: {containers: [{name: c}]}}\n",
    )
    .expect("write");
    let (d, o) = (def.to_str().expect("utf8"), objects.to_str().expect("utf8"));
    let get = |ty: &str| {
        let out = wlmap(&["--definitions", d, "--snapshot", o, "get", ty, "-A"]);
        assert!(out.status.success(), "{ty}: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(get("trn").contains("t1"), "{}", get("trn"));
    assert!(!get("trn").contains("j1"));
    assert!(get("job").contains("j1"));
    let vcjob = wlmap(&["--definitions", d, "--snapshot", o, "get", "vcjob", "-A"]);
    assert!(
        !String::from_utf8_lossy(&vcjob.stdout).contains("j1"),
        "vcjob named batch/v1 Job j1"
    );
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&def)
            .expect("read")
            .replace("[trn]", "[Trn-1]"),
    )
    .expect("write");
    let v = wlmap(&["validate", bad.to_str().expect("utf8")]);
    assert!(!v.status.success());
    assert!(
        String::from_utf8_lossy(&v.stdout).contains("short name \"Trn-1\" is not lower case"),
        "{}",
        String::from_utf8_lossy(&v.stdout)
    );
}

/// Every `wlmap --demo` example that the help shows runs as written (`serve` aside: it runs
/// until stopped).
#[test]
fn the_demo_examples_in_help_run() {
    let top = String::from_utf8_lossy(&wlmap(&["--help"]).stdout).to_string();
    let commands: Vec<String> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect();
    assert!(commands.len() > 5, "{top}");
    let mut examples = Vec::new();
    for c in [String::new()].iter().chain(&commands) {
        let args: Vec<&str> = if c.is_empty() {
            vec!["--help"]
        } else {
            vec![c.as_str(), "--help"]
        };
        let help = String::from_utf8_lossy(&wlmap(&args).stdout).to_string();
        examples.extend(
            help.lines()
                .map(str::trim)
                .filter(|l| l.starts_with("wlmap --demo ") && !l.contains(" serve"))
                .map(str::to_string),
        );
    }
    assert!(examples.len() >= 3, "{examples:?}");
    for e in &examples {
        let args: Vec<&str> = e.split_whitespace().skip(1).collect();
        let o = wlmap(&args);
        assert_eq!(o.status.code(), Some(0), "`{e}`: {}", stderr(&o));
        assert!(!o.stdout.is_empty(), "`{e}` printed nothing");
    }
}

/// A workload whose pods the scheduler cannot place says why, in the scheduler's words: the
/// demo's TFJob of three workers waiting for GPUs (its fixture's pods carry the
/// `PodScheduled=False` condition kube-scheduler writes).
#[test]
fn a_workload_the_scheduler_cannot_place_says_why() {
    let words = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.";
    let d = wlmap_e2e::stdout_of(
        "wlmap",
        &wlmap(&[
            "--demo",
            "describe",
            "tfjob/tf-workers-only",
            "-n",
            "kubeflow",
        ]),
        0,
    );
    let line = d
        .lines()
        .find(|l| l.starts_with("Waiting: "))
        .unwrap_or_default();
    assert!(line.starts_with("Waiting: 3 pod(s) Unschedulable: "), "{d}");
    assert!(line.contains(words), "{d}");
    let item = &json(&wlmap(&[
        "--demo", "get", "tfjobs", "-n", "kubeflow", "-o", "json",
    ]))["items"]
        .as_array()
        .expect("items")
        .iter()
        .find(|i| i["name"] == "tf-workers-only")
        .cloned()
        .expect("the TFJob");
    assert_eq!(item["waiting"][0]["pods"], 3, "{item}");
    assert_eq!(item["waiting"][0]["reason"], "Unschedulable");
    let wide = wlmap_e2e::stdout_of(
        "wlmap",
        &wlmap(&["--demo", "get", "tfjobs", "-n", "kubeflow", "-o", "wide"]),
        0,
    );
    let row = wide
        .lines()
        .find(|l| l.starts_with("tf-workers-only"))
        .unwrap_or_default();
    assert!(row.ends_with("Unschedulable (3 pod(s))"), "{wide}");
    // A running workload waits for nothing.
    let running = wlmap_e2e::stdout_of(
        "wlmap",
        &wlmap(&["--demo", "describe", "jobset/llm-train", "-n", "ml"]),
        0,
    );
    assert!(!running.contains("Waiting:"), "{running}");
}

/// kubectl applies a manifest that repeats a key (the API server warns of a duplicate field);
/// wlmap reads it too, with the later value, and names the key and its line on stderr.
#[test]
fn a_repeated_key_in_a_manifest_is_read_with_a_warning() {
    let pod = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: first\n  namespace: ml\n  name: second\nspec:\n  containers: [{name: c, image: x}]\nstatus: {phase: Running}\n";
    let out = wlmap_stdin(&["describe", "-f", "-", "-o", "json"], pod);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(json(&out)["name"], "second");
    assert_eq!(
        stderr(&out),
        "wlmap: warning: -:6:3: key \"name\" is repeated; the later value is used\n"
    );
}

/// A workload that waits says why in its status: an unplaced Pod carries the scheduler's
/// reason and message, and a JobSet whose Jobs are active but whose pods are all Pending reads
/// Initializing (its own counters say Running), with the reason that overrules them.
#[test]
fn a_waiting_workload_says_why_in_its_status() {
    let pod = fixture("core-pod-v1/initializing");
    let v = json(&wlmap(&[
        "describe",
        "-f",
        pod.to_str().expect("utf8"),
        "-o",
        "json",
    ]));
    assert_eq!(v["status"]["phase"], "Initializing");
    assert_eq!(v["status"]["reason"], "Unschedulable");
    assert!(
        v["status"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("Insufficient nvidia.com/gpu"),
        "{v}"
    );
    let held = fixture("jobset-x-k8s-io-jobset-v1alpha2/pods-pending");
    let v = json(&wlmap(&[
        "describe",
        "-f",
        held.to_str().expect("utf8"),
        "-o",
        "json",
    ]));
    assert_eq!(v["status"]["phase"], "Initializing");
    assert_eq!(v["status"]["reason"], "PodsPending");
    assert_eq!(v["resources"]["gpus"], 12.0);
    // The same JobSet without its pods: only its counters speak, and they say Running.
    let text = std::fs::read_to_string(&held).expect("fixture");
    let root = text.split("\n---").next().expect("root");
    let v = json(&wlmap_stdin(&["describe", "-f", "-", "-o", "json"], root));
    assert_eq!(v["status"]["phase"], "Running");
}

/// Workload Map v0.3: a definition marked `experimental` is listed but not used unless asked
/// for; a definition still using the deprecated `podGroups` works, with a warning.
#[test]
fn experimental_definitions_wait_for_the_flag_and_pod_groups_warn() {
    let karta = "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: example-com-widget-v1}\nspec:\n  experimental: true\n  structureDefinition:\n    rootComponent:\n      name: widget\n      kind: {group: example.com, version: v1, kind: Widget}\n      specDefinition: {podTemplateSpecPath: .spec.template}\n      scaleDefinition: {replicasPath: .spec.replicas}\n      statusDefinition: {phaseDefinition: {path: .status.phase}, statusMappings: {running: [{byPhase: Running}]}}\n  optimizationInstructions:\n    gangScheduling:\n      podGroups:\n      - name: all\n        members: [{componentName: widget}]\n";
    let widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: ml}\nspec:\n  replicas: 2\n  template: {spec: {containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: 2}}}]}}\nstatus: {phase: Running}\n";
    let files = Files::new(&[("widget-karta.yaml", karta), ("widget.yaml", widget)]);
    let (k, w) = (files.path("widget-karta.yaml"), files.path("widget.yaml"));
    // Listed, marked unused; `validate` takes the field without a warning of an unknown one.
    let list = wlmap(&["--definitions", &k, "definitions"]);
    let text = String::from_utf8_lossy(&list.stdout).into_owned();
    let row = text
        .lines()
        .find(|l| l.starts_with("example-com-widget-v1"))
        .unwrap_or("");
    assert!(
        row.contains("experimental, unused without --experimental"),
        "{text}"
    );
    assert!(
        stderr(&list).contains("gangScheduling.podGroups is deprecated"),
        "{}",
        stderr(&list)
    );
    let v = wlmap(&["validate", &k]);
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stdout));
    let said = String::from_utf8_lossy(&v.stdout).into_owned();
    assert!(!said.contains("unknown field"), "{said}");
    assert!(
        said.contains("podGroups is deprecated since Workload Map v0.2 (it is still read)"),
        "{said}"
    );
    // Not used without the flag: the Widget has no definition (exit 4).
    let without = wlmap(&["--definitions", &k, "describe", "-f", &w]);
    assert_eq!(without.status.code(), Some(4), "{}", stderr(&without));
    // With it, the Widget is one workload of 4 GPUs, and its deprecated gang still works.
    let with = json(&wlmap(&[
        "--experimental",
        "--definitions",
        &k,
        "describe",
        "-f",
        &w,
        "-o",
        "json",
    ]));
    assert_eq!(with["resources"]["gpus"], 4.0, "{with}");
    let gang = wlmap(&[
        "--experimental",
        "--definitions",
        &k,
        "gang",
        "-f",
        &w,
        "-o",
        "json",
    ]);
    assert!(gang.status.success(), "{}", stderr(&gang));
    assert!(
        String::from_utf8_lossy(&gang.stdout).contains("\"minMember\": 2"),
        "{}",
        String::from_utf8_lossy(&gang.stdout)
    );
}

/// A JobSet that MultiKueue runs on a worker cluster (`spec.managedBy`) is shown as managed
/// elsewhere: its copied-back status, its GPUs, and no pod count of this cluster (not a
/// workload stuck with 0 of 3 pods).
#[test]
fn a_workload_managed_elsewhere_is_shown_as_such() {
    let snap = fixture("jobset-x-k8s-io-jobset-v1alpha2/managed-by-multikueue");
    let snap = snap.to_str().expect("utf8");
    let wide = wlmap(&["--snapshot", snap, "get", "-A", "--all-types", "-o", "wide"]);
    let text = String::from_utf8_lossy(&wide.stdout).into_owned();
    let row = text.lines().find(|l| l.contains("llm-train")).unwrap_or("");
    for cell in [
        "Running",
        "-/3",
        "12",
        "ManagedElsewhere (kueue.x-k8s.io/multikueue)",
    ] {
        assert!(row.contains(cell), "{cell} in {text}");
    }
    let v = json(&wlmap(&[
        "--snapshot",
        snap,
        "describe",
        "jobset/llm-train",
        "-n",
        "ml",
        "-o",
        "json",
    ]));
    assert_eq!(v["managedBy"], "kueue.x-k8s.io/multikueue", "{v}");
    assert_eq!(v["pods"]["observed"], serde_json::Value::Null, "{v}");
    assert_eq!(v["status"]["phase"], "Running");
    let d = wlmap(&[
        "--snapshot",
        snap,
        "describe",
        "jobset/llm-train",
        "-n",
        "ml",
    ]);
    assert!(String::from_utf8_lossy(&d.stdout).contains("Managed by: kueue.x-k8s.io/multikueue"));
    // The kind's own controller named (the default) is not elsewhere.
    let text = std::fs::read_to_string(fixture(
        "jobset-x-k8s-io-jobset-v1alpha2/managed-by-multikueue",
    ))
    .expect("fixture");
    let own = text.replace(
        "kueue.x-k8s.io/multikueue",
        "jobset.sigs.k8s.io/jobset-controller",
    );
    let v = json(&wlmap_stdin(
        &["--snapshot", "-", "get", "-A", "--all-types", "-o", "json"],
        &own,
    ));
    assert_eq!(v["items"][0].get("managedBy"), None, "{v}");
}

/// The seed JobSet with its GPUs asked through DRA (a ResourceClaimTemplate of 4
/// `gpu.nvidia.com` devices per pod; each pod's claim allocated 4 devices of its node): one
/// workload of 12 GPUs requested and 12 held, and which devices of which node each pod holds.
#[test]
fn gpus_through_dra_are_requested_and_held() {
    let snap = fixture("jobset-x-k8s-io-jobset-v1alpha2/dra-claim-templates");
    let snap = snap.to_str().expect("utf8");
    let wide = wlmap(&["--snapshot", snap, "get", "-A", "--all-types", "-o", "wide"]);
    let text = String::from_utf8_lossy(&wide.stdout).into_owned();
    let header: Vec<&str> = text
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let row: Vec<&str> = text
        .lines()
        .find(|l| l.contains("llm-train"))
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let cell = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .and_then(|i| row.get(i).copied())
    };
    assert_eq!(
        (cell("GPUS"), cell("HELD")),
        (Some("12"), Some("12")),
        "{text}"
    );
    let v = json(&wlmap(&[
        "--snapshot",
        snap,
        "describe",
        "jobset/llm-train",
        "-n",
        "ml",
        "-o",
        "json",
    ]));
    assert_eq!(v["resources"]["gpus"], 12.0, "{v}");
    assert_eq!(v["resources"]["gpusHeld"], 12.0, "{v}");
    let leader = &v["components"][0]["components"][0];
    assert_eq!(leader["resources"]["gpus"], 4.0, "{leader}");
    let held = &leader["pods"][0]["held"];
    let devices: Vec<String> = held
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| {
            format!(
                "{}/{}",
                d["pool"].as_str().unwrap_or(""),
                d["device"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        devices,
        [
            "gpu-node-1/gpu-0",
            "gpu-node-1/gpu-1",
            "gpu-node-1/gpu-2",
            "gpu-node-1/gpu-3"
        ]
    );
    assert_eq!(held[0]["class"], "gpu.nvidia.com");
    let d = wlmap(&[
        "--snapshot",
        snap,
        "describe",
        "jobset/llm-train",
        "-n",
        "ml",
    ]);
    let text = String::from_utf8_lossy(&d.stdout).into_owned();
    assert!(text.contains("GPUs: 12 (held: 12)"), "{text}");
    assert!(text.contains("held: gpu-0,gpu-1,gpu-2,gpu-3"), "{text}");
    // A quota-facing gang output counts them too (Volcano's minResources).
    let gang = wlmap(&["gang", "-f", snap, "--format", "volcano"]);
    let text = String::from_utf8_lossy(&gang.stdout).into_owned();
    assert!(
        text.contains("deviceclass.resource.kubernetes.io/gpu.nvidia.com: \"12\""),
        "{text}"
    );
    // The manifest without its claim template: nothing is guessed, and describe says why.
    let manifest = std::fs::read_to_string(fixture(
        "jobset-x-k8s-io-jobset-v1alpha2/dra-claim-templates",
    ))
    .expect("fixture");
    let root = manifest.split("\n---").next().expect("the JobSet");
    let alone = wlmap_stdin(&["describe", "-f", "-"], root);
    let text = String::from_utf8_lossy(&alone.stdout).into_owned();
    assert!(text.contains("GPUs: 0"), "{text}");
    assert!(
        text.contains("note: ResourceClaimTemplate ml/four-h100 not found"),
        "{text}"
    );
}

/// `describe` shows the gang objects a scheduler reads for the workload (owned by it) and what
/// their scheduler says in them: scheduler-plugins' PodGroup phase, a PodGroup's conditions.
#[test]
fn describe_shows_what_the_schedulers_say_of_the_gang() {
    let jobset = std::fs::read_to_string(fixture("jobset-x-k8s-io-jobset-v1alpha2/pods-pending"))
        .expect("fixture");
    let uid = "baae5558-ec20-4a58-85f8-1acbc7e29d16";
    assert!(jobset.contains(uid), "the fixture's JobSet uid");
    let group = format!(
        "---\napiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata:\n  name: llm-train-gang\n  namespace: ml\n  ownerReferences: [{{apiVersion: jobset.x-k8s.io/v1alpha2, kind: JobSet, name: llm-train, uid: {uid}, controller: true}}]\nspec: {{minMember: 3}}\nstatus:\n  phase: Pending\n  conditions:\n  - {{type: Scheduled, status: \"False\", reason: Unschedulable, message: \"0/2 nodes are available: 2 Insufficient nvidia.com/gpu.\"}}\n"
    );
    let files = Files::new(&[("held.yaml", &format!("{jobset}\n{group}"))]);
    let f = files.path("held.yaml");
    let text = String::from_utf8_lossy(&wlmap(&["describe", "-f", &f]).stdout).into_owned();
    assert!(
        text.contains(
            "Gang: PodGroup/llm-train-gang (scheduling.x-k8s.io/v1alpha1): phase Pending"
        ),
        "{text}"
    );
    assert!(
        text.contains("  Scheduled=False (Unschedulable): 0/2 nodes are available"),
        "{text}"
    );
    let v = json(&wlmap(&["describe", "-f", &f, "-o", "json"]));
    assert_eq!(
        v["gangs"][0]["conditions"][0]["reason"], "Unschedulable",
        "{v}"
    );
}

/// With `--scheduler kueue` the controller's pod webhook must be called before Kueue's (the API
/// server calls mutating webhooks in the order of their configurations' names): a name that
/// sorts after Kueue's is refused before anything runs, saying what to do.
#[test]
fn the_kueue_controller_refuses_a_webhook_configuration_kueue_would_precede() {
    let o = wlmap(&["controller", "--scheduler", "kueue"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("kueue-mutating-webhook-configuration")
            && e.contains("--webhook-config 00-wlmap"),
        "{e}"
    );
}
