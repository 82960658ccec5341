//! `wlmap serve` as a Prometheus server and a JSON API sees it: the demo's metrics read with a
//! Prometheus text-format parser, the workload rows and trees, the token, and a snapshot
//! re-read when its file changes.

use prometheus_parse::{Sample, Scrape, Value};
use std::collections::BTreeMap;
use wlmap_e2e::served::Served;

fn demo() -> Served {
    Served::start(env!("CARGO_BIN_EXE_wlmap"), &["--demo"], &[])
}

fn scrape(s: &Served) -> Scrape {
    let r = s.get("/metrics");
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type")
            .is_some_and(|c| c.starts_with("text/plain; version=0.0.4"))
    );
    Scrape::parse(r.body.lines().map(|l| Ok(l.to_string()))).expect("Prometheus text format")
}

fn value(s: &Sample) -> f64 {
    match s.value {
        Value::Gauge(v) | Value::Counter(v) | Value::Untyped(v) => v,
        _ => panic!("{} is not a plain sample", s.metric),
    }
}

/// The one sample of a family whose labels include these.
fn one<'a>(scrape: &'a Scrape, family: &str, labels: &[(&str, &str)]) -> &'a Sample {
    let found: Vec<&Sample> = scrape
        .samples
        .iter()
        .filter(|s| s.metric == family && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .collect();
    assert_eq!(found.len(), 1, "{family} {labels:?}: {found:?}");
    found[0]
}

const LLM_TRAIN: &[(&str, &str)] = &[
    ("namespace", "ml"),
    ("group", "jobset.x-k8s.io"),
    ("kind", "JobSet"),
    ("name", "llm-train"),
];

#[test]
fn the_demo_jobset_is_one_workload_of_12_gpus_and_3_ready_pods() {
    let s = demo();
    let m = scrape(&s);
    assert_eq!(
        value(one(&m, "wlmap_workload_gpus_requested", LLM_TRAIN)),
        12.0
    );
    assert_eq!(value(one(&m, "wlmap_workload_gpus_held", LLM_TRAIN)), 12.0);
    assert_eq!(value(one(&m, "wlmap_workload_pods_ready", LLM_TRAIN)), 3.0);
    assert_eq!(
        value(one(&m, "wlmap_workload_pods_desired", LLM_TRAIN)),
        3.0
    );
    let running = [LLM_TRAIN, &[("phase", "Running")]].concat();
    assert_eq!(value(one(&m, "wlmap_workload_status_phase", &running)), 1.0);
    let phases: f64 = m
        .samples
        .iter()
        .filter(|x| x.metric == "wlmap_workload_status_phase")
        .filter(|x| x.labels.get("name") == Some("llm-train"))
        .map(value)
        .sum();
    assert_eq!(phases, 1.0, "a state-set has exactly one phase set");
    // Its three pods, each attributed to the JobSet (not to their Jobs).
    let pods: Vec<&Sample> = m
        .samples
        .iter()
        .filter(|x| x.metric == "wlmap_pod_workload_info")
        .filter(|x| x.labels.get("workload") == Some("llm-train"))
        .collect();
    assert_eq!(pods.len(), 3);
    assert!(
        pods.iter()
            .all(|p| p.labels.get("workload_kind") == Some("JobSet"))
    );
    assert!(
        pods.iter()
            .any(|p| p.labels.get("component_instance") == Some("leader"))
    );
    // The Jobs of the JobSet are not workloads of their own.
    assert!(!m.samples.iter().any(|x| {
        x.metric == "wlmap_workload_info"
            && x.labels.get("kind") == Some("Job")
            && x.labels.get("namespace") == Some("ml")
            && x.labels
                .get("name")
                .is_some_and(|n| n.starts_with("llm-train"))
    }));
}

#[test]
fn totals_per_namespace_and_kind_add_up() {
    let m = scrape(&demo());
    let mut sums: BTreeMap<(String, String, String), (f64, f64)> = BTreeMap::new();
    for x in m
        .samples
        .iter()
        .filter(|x| x.metric == "wlmap_workload_gpus_requested")
    {
        let k = (
            x.labels.get("namespace").unwrap_or_default().to_string(),
            x.labels.get("group").unwrap_or_default().to_string(),
            x.labels.get("kind").unwrap_or_default().to_string(),
        );
        let e = sums.entry(k).or_default();
        e.0 += value(x);
        e.1 += 1.0;
    }
    assert!(sums.len() > 5, "the demo has many kinds: {sums:?}");
    for ((ns, group, kind), (gpus, workloads)) in &sums {
        let labels = [("namespace", ns.as_str()), ("group", group), ("kind", kind)];
        assert_eq!(
            value(one(&m, "wlmap_kind_gpus_requested", &labels)),
            *gpus,
            "{labels:?}"
        );
        assert_eq!(
            value(one(&m, "wlmap_kind_workloads", &labels)),
            *workloads,
            "{labels:?}"
        );
    }
    let ml: f64 = sums
        .iter()
        .filter(|(k, _)| k.0 == "ml")
        .map(|(_, v)| v.0)
        .sum();
    assert!(ml >= 12.0, "ml holds at least the JobSet's 12 GPUs");
}

#[test]
fn the_api_lists_the_same_workloads_as_get_and_shows_the_tree() {
    let s = demo();
    let rows: serde_json::Value =
        serde_json::from_str(&s.get("/api/workloads").body).expect("JSON");
    let get = std::process::Command::new(env!("CARGO_BIN_EXE_wlmap"))
        .args(["--demo", "get", "-A", "--all-types", "-o", "json"])
        .output()
        .expect("wlmap get");
    let listed: serde_json::Value = serde_json::from_slice(&get.stdout).expect("JSON");
    let names = |v: &serde_json::Value| -> Vec<String> {
        let mut n: Vec<String> = v["items"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|i| format!("{}/{}/{}", i["namespace"], i["kind"], i["name"]))
                    .collect()
            })
            .unwrap_or_default();
        n.sort();
        n
    };
    assert_eq!(names(&rows), names(&listed));
    assert_eq!(rows["synced"], true);
    let d = s.get("/api/workload?namespace=ml&group=jobset.x-k8s.io&kind=JobSet&name=llm-train");
    assert_eq!(d.status, 200);
    let d: serde_json::Value = serde_json::from_str(&d.body).expect("JSON");
    let root = &d["describe"]["components"][0];
    let instances: Vec<&str> = root["components"]
        .as_array()
        .expect("children")
        .iter()
        .filter_map(|c| c["instance"].as_str())
        .collect();
    assert_eq!(instances, ["leader", "workers"]);
    assert_eq!(root["resources"]["gpus"], 12.0);
    assert!(
        d["describe"]["explain"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
    );
    let missing = s.get("/api/workload?namespace=ml&group=batch&kind=Job&name=nope");
    assert_eq!(missing.status, 404);
}

#[test]
fn a_token_is_required_when_given_and_probes_stay_open() {
    let dir = tempfile::tempdir().expect("tmp");
    let token = dir.path().join("token");
    std::fs::write(&token, "t0ken\n").expect("write");
    let s = Served::start(
        env!("CARGO_BIN_EXE_wlmap"),
        &["--demo"],
        &["--token-file", token.to_str().expect("utf8")],
    );
    assert_eq!(s.get("/metrics").status, 401);
    assert_eq!(
        s.get_with("/metrics", &[("Authorization", "Bearer t0ken")])
            .status,
        200
    );
    assert_eq!(s.get("/healthz").status, 200);
    assert_eq!(s.get("/readyz").status, 200);
}

#[test]
fn a_changed_snapshot_is_read_again() {
    let dir = tempfile::tempdir().expect("tmp");
    let snap = dir.path().join("cluster.yaml");
    let job = |name: &str, gpus: u32| {
        format!(
            "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: {name}, namespace: ml, uid: {name}-uid}}\n\
             spec:\n  parallelism: 1\n  template:\n    spec:\n      containers:\n      - name: t\n        \
             resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}\n"
        )
    };
    std::fs::write(&snap, job("first", 2)).expect("write");
    let s = Served::start(
        env!("CARGO_BIN_EXE_wlmap"),
        &["--snapshot", snap.to_str().expect("utf8")],
        &[],
    );
    let before = s.wait_rows("the first Job", |v| v["items"][0]["name"] == "first");
    std::fs::write(
        &snap,
        format!("{}---\n{}", job("first", 2), job("second", 8)),
    )
    .expect("write");
    let after = s.wait_rows("the second Job", |v| {
        v["items"]
            .as_array()
            .is_some_and(|a| a.iter().any(|i| i["name"] == "second"))
    });
    assert!(after["version"].as_u64() > before["version"].as_u64());
    let m = scrape(&s);
    let ml = [("namespace", "ml"), ("group", "batch"), ("kind", "Job")];
    assert_eq!(value(one(&m, "wlmap_kind_gpus_requested", &ml)), 10.0);
}

#[test]
fn a_snapshot_served_for_one_namespace_shows_that_namespace_also_once_read_again() {
    let dir = tempfile::tempdir().expect("tmp");
    let snap = dir.path().join("cluster.json");
    let job = |name: &str, ns: &str| {
        serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": ns, "uid": format!("{ns}-{name}")},
            "spec": {"parallelism": 1, "template": {"spec": {"containers": [{"name": "t",
                "resources": {"limits": {"nvidia.com/gpu": 2}}}]}}}})
    };
    let list = |items: Vec<serde_json::Value>| {
        serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()
    };
    std::fs::write(&snap, list(vec![job("a", "ml"), job("b", "web")])).expect("write");
    let s = Served::start(
        env!("CARGO_BIN_EXE_wlmap"),
        &["--snapshot", snap.to_str().expect("utf8"), "-n", "ml"],
        &[],
    );
    let names = |v: &serde_json::Value| -> Vec<String> {
        let mut n: Vec<String> = v["items"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|i| {
                format!(
                    "{}/{}",
                    i["namespace"].as_str().unwrap_or(""),
                    i["name"].as_str().unwrap_or("")
                )
            })
            .collect();
        n.sort();
        n
    };
    let before = s.wait_rows("the Job of ml", |v| !names(v).is_empty());
    assert_eq!(names(&before), vec!["ml/a"]);
    std::fs::write(
        &snap,
        list(vec![
            job("a", "ml"),
            job("b", "web"),
            job("c", "ml"),
            job("d", "web"),
        ]),
    )
    .expect("write");
    let after = s.wait_rows("the second Job of ml", |v| names(v).len() > 1);
    assert_eq!(names(&after), vec!["ml/a", "ml/c"]);
}
