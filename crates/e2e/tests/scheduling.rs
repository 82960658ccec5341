//! End to end on a testbed that schedules: the real kube-scheduler (gang scheduling on), the
//! real Job controller, the real KubeRay operator, and KWOK nodes that advertise GPUs and run
//! the pods bound to them. Run through
//! `WLMAP_TESTBED_OPERATORS=kuberay testbed/with-testbed.sh cargo test -p wlmap-e2e --test scheduling -- --include-ignored --test-threads=1`
//! (scripts/test.sh does). Each test has its own namespace and its own node pool (pods select
//! it), so what one leaves running does not take another's capacity.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use wlmap_e2e::{Testbed, gpu_container, json};

fn namespace(tb: &Testbed, ns: &str) {
    tb.kubectl(&["create", "namespace", ns], None);
}

/// Pods of a namespace by name: node name (None while unbound) and phase.
fn pods(tb: &Testbed, ns: &str) -> BTreeMap<String, (Option<String>, String)> {
    tb.pods(ns)
        .iter()
        .map(|p| {
            let name = p["metadata"]["name"].as_str().unwrap_or("").to_string();
            let node = p["spec"]["nodeName"].as_str().map(String::from);
            let phase = p["status"]["phase"].as_str().unwrap_or("").to_string();
            (name, (node, phase))
        })
        .collect()
}

fn bound(pods: &BTreeMap<String, (Option<String>, String)>) -> usize {
    pods.values().filter(|(n, _)| n.is_some()).count()
}

/// A Job of 3 pods × 4 GPUs on two nodes of 8 GPUs: the real scheduler spreads them (no node
/// holds more than two), KWOK runs them to completion, the Job controller completes the Job,
/// and wlmap shows it Completed with 12 GPUs.
#[test]
#[ignore = "needs the scheduling testbed (see the file's doc)"]
fn a_job_is_scheduled_runs_and_completes() {
    let tb = Testbed::scheduling();
    let ns = "sched-job";
    namespace(&tb, ns);
    tb.add_node("job-gpu-0", "job", 8);
    tb.add_node("job-gpu-1", "job", 8);
    let job = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "namespace": ns},
        "spec": {"parallelism": 3, "completions": 3, "completionMode": "Indexed", "backoffLimit": 0,
            "template": {"spec": {"restartPolicy": "Never",
                "nodeSelector": {"wlmap.test/pool": "job"},
                "containers": [gpu_container(4)]}}}});
    tb.kubectl(&["create", "-f", "-"], Some(&job.to_string()));
    tb.kubectl(
        &[
            "wait",
            "-n",
            ns,
            "--for=condition=Complete",
            "job/train",
            "--timeout=180s",
        ],
        None,
    );
    let all = pods(&tb, ns);
    assert_eq!(all.len(), 3, "{all:?}");
    let mut per_node: BTreeMap<&str, usize> = BTreeMap::new();
    for (node, phase) in all.values() {
        assert_eq!(phase, "Succeeded", "{all:?}");
        *per_node.entry(node.as_deref().expect("bound")).or_default() += 1;
    }
    assert!(
        per_node.values().all(|&n| n <= 2),
        "8 GPUs hold two pods of 4: {per_node:?}"
    );
    let o = tb.wlmap(&["get", "job/train", "-n", ns, "-o", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let item = &json(&o)["items"][0];
    assert_eq!(item["status"]["phase"], "Completed", "{item}");
    assert_eq!(item["resources"]["gpus"], 12.0, "{item}");
    assert_eq!(item["pods"]["desired"], 3, "{item}");
}

/// Five pods of 4 GPUs in a gang of minimum 5 (a v1.37 PodGroup) on two nodes of 8 GPUs:
/// room for four, so the scheduler binds none (and says so on the PodGroup); with a third
/// node all five bind. The same five pods without the gang bind four and leave one Pending:
/// the partial allocation gangs exist to prevent.
#[test]
#[ignore = "needs the scheduling testbed (see the file's doc)"]
fn a_gang_binds_all_or_nothing() {
    let tb = Testbed::scheduling();
    tb.add_node("gang-gpu-0", "gang", 8);
    tb.add_node("gang-gpu-1", "gang", 8);
    let pod = |ns: &str, i: usize, group: Option<&str>| {
        let mut p = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("worker-{i}"), "namespace": ns},
            "spec": {"nodeSelector": {"wlmap.test/pool": "gang"}, "containers": [gpu_container(4)]}});
        if let Some(g) = group {
            p["spec"]["schedulingGroup"] = json!({"podGroupName": g});
        }
        p.to_string()
    };

    // Control: no gang, four of five bind.
    let ns = "sched-nogang";
    namespace(&tb, ns);
    for i in 0..5 {
        tb.kubectl(&["create", "-f", "-"], Some(&pod(ns, i, None)));
    }
    tb.wait_for("four plain pods bound", 120, || bound(&pods(&tb, ns)) == 4);
    tb.wait_for("the fifth plain pod found unschedulable", 120, || {
        tb.kubectl(&["get", "events", "-n", ns, "-o", "json"], None)
            .contains("FailedScheduling")
    });
    assert_eq!(bound(&pods(&tb, ns)), 4);
    tb.kubectl(
        &["delete", "namespace", ns, "--wait=true", "--timeout=120s"],
        None,
    );

    // The gang.
    let ns = "sched-gang";
    namespace(&tb, ns);
    let group = json!({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "workers", "namespace": ns},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 5}}}});
    tb.kubectl(&["create", "-f", "-"], Some(&group.to_string()));
    for i in 0..5 {
        tb.kubectl(&["create", "-f", "-"], Some(&pod(ns, i, Some("workers"))));
    }
    // The scheduler's verdict on the group, not a pause: it tried and could not place it.
    tb.wait_for("the PodGroup marked unschedulable", 120, || {
        tb.pod_group_scheduled(ns, "workers") == Some(false)
    });
    assert_eq!(
        bound(&pods(&tb, ns)),
        0,
        "a gang binds no pod short of its minimum"
    );

    tb.add_node("gang-gpu-2", "gang", 8);
    tb.wait_for("all five gang pods bound and running", 120, || {
        let p = pods(&tb, ns);
        p.len() == 5
            && p.values()
                .all(|(n, phase)| n.is_some() && phase == "Running")
    });
    assert_eq!(tb.pod_group_scheduled(ns, "workers"), Some(true));
}

/// A RayCluster through the real KubeRay operator: it creates the head and the workers, the
/// scheduler puts them on KWOK nodes, they run, the operator reports the cluster ready; wlmap
/// shows the live tree with the same counts as the operator's own status.
#[test]
#[ignore = "needs the scheduling testbed (see the file's doc)"]
fn a_raycluster_from_the_real_operator() {
    let tb = Testbed::scheduling();
    wlmap_e2e::require_operator("kuberay");
    let ns = "sched-ray";
    namespace(&tb, ns);
    tb.add_node("ray-cpu-0", "ray", 0);
    tb.add_node("ray-gpu-0", "ray", 8);
    let rc = wlmap_e2e::raycluster(ns, "ray", 4);
    tb.kubectl(&["create", "-f", "-"], Some(&rc.to_string()));
    tb.wait_for("the operator to report the RayCluster ready", 180, || {
        tb.get_json(&["get", "raycluster/tune", "-n", ns])["status"]["state"] == "ready"
    });
    let status = tb.get_json(&["get", "raycluster/tune", "-n", ns])["status"].clone();

    let o = tb.wlmap(&["describe", "raycluster/tune", "-n", ns, "-o", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = json(&o);
    assert_eq!(v["status"]["phase"], "Running", "{v}");
    assert_eq!(v["resources"]["gpus"], 8.0, "{v}");
    let workers = status["readyWorkerReplicas"]
        .as_u64()
        .expect("readyWorkerReplicas");
    assert_eq!(workers, 2, "{status}");
    assert_eq!(v["pods"]["observed"], workers + 1, "head and workers: {v}");
    assert_eq!(v["pods"]["ready"], workers + 1, "{v}");
    assert_eq!(
        status["desiredGPU"].as_str().unwrap_or(""),
        "8",
        "the operator counts the same GPUs: {status}"
    );
    assert!(
        v["unattributedPods"]
            .as_array()
            .is_none_or(|u| u.is_empty()),
        "{v}"
    );
    // Every pod the operator made sits on a KWOK node of the pool and is placed in the tree.
    let placed = pods(&tb, ns);
    assert_eq!(placed.len(), 3, "{placed:?}");
    assert!(
        placed
            .values()
            .all(|(n, p)| n.as_deref().is_some_and(|n| n.starts_with("ray-")) && p == "Running"),
        "{placed:?}"
    );
    let text = tb.wlmap(&["describe", "raycluster/tune", "-n", ns]);
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    for name in placed.keys() {
        assert!(
            text.contains(name.as_str()),
            "{name} not in the tree:\n{text}"
        );
    }
}

/// `wlmap get --watch` against the live cluster: a Deployment created, scaled up, scaled down
/// across an API server restart, and deleted, each seen as a row of its own (JSON lines), with
/// the right pods and GPUs, the workload added once and never twice.
#[test]
#[ignore = "needs the scheduling testbed (see the file's doc)"]
fn get_watch_follows_a_workload_through_an_api_server_restart() {
    let tb = Testbed::scheduling();
    let ns = "sched-watch";
    namespace(&tb, ns);
    tb.add_node("watch-gpu-0", "watch", 8);
    let (mut child, rx) = watch_lines(&tb, &["get", "-n", ns, "--all-types", "-w", "-o", "json"]);
    let mut seen: Vec<Value> = Vec::new();
    let mut wait_line = |what: &str, ok: &dyn Fn(&Value) -> bool| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(v) => {
                    let hit = ok(&v);
                    seen.push(v);
                    if hit {
                        return;
                    }
                }
                Err(_) => panic!("no line for {what}; lines so far: {seen:#?}"),
            }
        }
    };
    // A row of web in this state, whether the first one (ADDED) or a later one (MODIFIED).
    let web = |ready: u64, desired: u64| {
        move |v: &Value| {
            v["type"] != "DELETED"
                && v["object"]["name"] == "web"
                && v["object"]["kind"] == "Deployment"
                && v["object"]["pods"]["ready"] == ready
                && v["object"]["pods"]["desired"] == desired
                && v["object"]["resources"]["gpus"] == (desired * 2) as f64
        }
    };
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"nodeSelector": {"wlmap.test/pool": "watch"}, "containers": [gpu_container(2)]}}}});
    tb.kubectl(&["create", "-f", "-"], Some(&deployment.to_string()));
    wait_line("web running with one pod", &web(1, 1));
    // `describe --watch` of the same workload: the tree again each time it changes.
    let (mut tree, trx) = watch_lines(
        &tb,
        &["describe", "deployment/web", "-n", ns, "-w", "-o", "json"],
    );
    // Its first tree (the one-pod state) before anything changes: a handshake, not a pause.
    let first = trx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("describe --watch draws the tree once listed");
    assert_eq!(first["kind"], "Deployment", "{first}");
    assert_eq!(first["pods"]["ready"], 1, "the one-pod state: {first}");
    tb.kubectl(&["scale", "-n", ns, "deployment/web", "--replicas=3"], None);
    wait_line("web scaled up to three ready pods", &web(3, 3));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let mut trees = vec![first];
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let v = trx
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("describe --watch never showed 3 ready pods: {trees:#?}"));
        let done = v["pods"]["observed"] == 3 && v["pods"]["ready"] == 3;
        trees.push(v);
        if done {
            break;
        }
    }
    assert_eq!(trees[0]["kind"], "Deployment", "{trees:#?}");
    assert_eq!(
        trees[0]["pods"]["ready"], 1,
        "the first tree is the one-pod state: {trees:#?}"
    );
    let last = trees.last().expect("a tree");
    assert_eq!(last["resources"]["gpus"], 6.0, "{last}");
    let _ = tree.kill();
    let _ = tree.wait();

    tb.restart_api_server();
    tb.kubectl(&["scale", "-n", ns, "deployment/web", "--replicas=2"], None);
    wait_line("web scaled down to two, after the restart", &web(2, 2));
    tb.kubectl(&["delete", "-n", ns, "deployment/web"], None);
    wait_line("web deleted", &|v: &Value| {
        v["type"] == "DELETED" && v["object"]["name"] == "web"
    });
    let _ = child.kill();
    let _ = child.wait();
    let added = seen
        .iter()
        .filter(|v| v["type"] == "ADDED" && v["object"]["name"] == "web")
        .count();
    assert_eq!(added, 1, "web added once: {seen:#?}");
    // Every row between creation and deletion is a workload of one Deployment: its
    // ReplicaSet and pods are part of it, never rows of their own.
    assert!(
        seen.iter().all(|v| v["object"]["kind"] == "Deployment"),
        "{seen:#?}"
    );
}

/// Start `wlmap ARGS` (a watch printing one JSON object per line); its lines arrive on the
/// receiver as they are printed.
fn watch_lines(
    tb: &Testbed,
    args: &[&str],
) -> (std::process::Child, std::sync::mpsc::Receiver<Value>) {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(wlmap_e2e::wlmap_bin())
        .args([&["--kubeconfig", tb.kubeconfig.as_str()], args].concat())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("wlmap runs");
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let stdout = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
            let v: Value = serde_json::from_str(&line).expect("one JSON object per line");
            if tx.send(v).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// `wlmap serve` against the live cluster: a RayCluster of the real KubeRay operator shows as
/// one workload with its pods on KWOK nodes, and follows the operator as it scales up, in the
/// web view's API and in the metrics, without being restarted.
#[test]
#[ignore = "needs the scheduling testbed with KubeRay (see the file's doc)"]
fn serve_follows_a_raycluster_as_it_scales() {
    let tb = Testbed::scheduling();
    wlmap_e2e::require_operator("kuberay");
    let ns = "sched-serve";
    namespace(&tb, ns);
    tb.add_node("srv-cpu-0", "srv", 0);
    tb.add_node("srv-gpu-0", "srv", 8);
    tb.add_node("srv-gpu-1", "srv", 8);
    let served = wlmap_e2e::served::Served::start(
        &wlmap_e2e::wlmap_bin(),
        &["--kubeconfig", &tb.kubeconfig, "-n", ns],
        &[],
    );
    served.wait_rows("the watches listed", |v| v["synced"] == true);
    let rc = wlmap_e2e::raycluster(ns, "srv", 4);
    tb.kubectl(&["create", "-f", "-"], Some(&rc.to_string()));
    let ray = |v: &Value| -> Option<Value> {
        v["items"]
            .as_array()?
            .iter()
            .find(|r| r["kind"] == "RayCluster" && r["name"] == "tune")
            .cloned()
    };
    let row = |gpus: f64, ready: u64| {
        move |v: &Value| {
            ray(v).is_some_and(|r| {
                r["resources"]["gpus"] == gpus
                    && r["gpusHeld"] == gpus
                    && r["pods"]["ready"] == ready
            })
        }
    };
    let v = served.wait_rows("the head and two 4-GPU workers running", row(8.0, 3));
    assert_eq!(
        v["items"].as_array().map(|a| a.len()),
        Some(1),
        "one workload: {v}"
    );

    let detail = served.get(&format!(
        "/api/workload?namespace={ns}&group=ray.io&kind=RayCluster&name=tune"
    ));
    assert_eq!(detail.status, 200);
    let d: Value = serde_json::from_str(&detail.body).expect("JSON");
    let mut pods = Vec::new();
    let mut stack = vec![d["describe"]["components"][0].clone()];
    while let Some(n) = stack.pop() {
        pods.extend(n["pods"].as_array().cloned().unwrap_or_default());
        stack.extend(n["components"].as_array().cloned().unwrap_or_default());
    }
    assert_eq!(pods.len(), 3, "{d}");
    assert!(
        pods.iter()
            .all(|p| p["node"].as_str().is_some_and(|n| n.starts_with("srv-"))),
        "every pod on a KWOK node of the pool: {pods:?}"
    );

    // Scale the worker group up: the view follows the operator, the server is not restarted.
    tb.kubectl(
        &[
            "patch",
            "raycluster/tune",
            "-n",
            ns,
            "--type=json",
            "-p",
            r#"[{"op": "replace", "path": "/spec/workerGroupSpecs/0/replicas", "value": 3}]"#,
        ],
        None,
    );
    served.wait_rows("a third worker running", row(12.0, 4));
    let metrics = served.get("/metrics").body;
    let series = format!(
        "wlmap_workload_gpus_held{{namespace=\"{ns}\",group=\"ray.io\",kind=\"RayCluster\",name=\"tune\"}} 12"
    );
    assert!(
        metrics.lines().any(|l| l == series),
        "{series} not in /metrics"
    );
}

/// `wlmap scaffold` and `wlmap check` against the live cluster: KubeRay's published CRD (full
/// PodTemplateSpec schemas) and a RayCluster the operator runs give a draft that reads the
/// workload as the catalog does; `check` finds the catalog's RayCluster definition fitting
/// the published CRD and its live objects, and reports the kinds the cluster does not serve.
#[test]
#[ignore = "needs the scheduling testbed with KubeRay (see the file's doc)"]
fn scaffold_and_check_against_the_live_cluster() {
    let tb = Testbed::scheduling();
    wlmap_e2e::require_operator("kuberay");
    let ns = "sched-author";
    namespace(&tb, ns);
    tb.add_node("aut-cpu-0", "aut", 0);
    tb.add_node("aut-gpu-0", "aut", 8);
    let rc = wlmap_e2e::raycluster(ns, "aut", 4);
    tb.kubectl(&["create", "-f", "-"], Some(&rc.to_string()));
    tb.wait_for("the operator to report the RayCluster ready", 180, || {
        tb.get_json(&["get", "raycluster/tune", "-n", ns])["status"]["state"] == "ready"
    });

    let o = tb.wlmap(&["scaffold", "--crd", "rayclusters.ray.io", "--from-objects"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("drafted ray-io-raycluster-v1"), "{stderr}");
    let draft = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        !draft.contains("keeps this field opaque"),
        "the published CRD has full pod templates:\n{draft}"
    );
    for want in [
        "podTemplateSpecPath: .spec.headGroupSpec.template",
        "podTemplateSpecPath: .spec.workerGroupSpecs[]?.template",
        r#"keyPath: .metadata.labels["ray.io/node-type"]"#,
    ] {
        assert!(draft.contains(want), "{want} not in:\n{draft}");
    }
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("raycluster.yaml");
    std::fs::write(&file, &draft).expect("write");
    let path = file.to_str().expect("utf8");
    let read = |extra: &[&str]| {
        let o = tb.wlmap(&[extra, &["get", "raycluster/tune", "-n", ns, "-o", "json"]].concat());
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        json(&o)["items"][0].clone()
    };
    let (ours, catalog) = (read(&["--definitions", path]), read(&[]));
    assert_eq!(ours["definition"]["origin"], "file", "{ours}");
    assert_eq!(ours["pods"], catalog["pods"], "{ours} {catalog}");
    assert_eq!(ours["resources"], catalog["resources"], "{ours} {catalog}");

    // A Milvus CRD that serves only an older version than the catalog's definition reads.
    let milvus = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "milvuses.milvus.io"},
        "spec": {"group": "milvus.io", "scope": "Namespaced",
            "names": {"kind": "Milvus", "plural": "milvuses", "singular": "milvus"},
            "versions": [{"name": "v1alpha1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    tb.kubectl(&["apply", "-f", "-"], Some(&milvus.to_string()));
    tb.wait_established(&["crd/milvuses.milvus.io"]);
    let o = tb.wlmap(&["check"]);
    let out = wlmap_e2e::stdout_of("", &o, 5);
    assert!(
        out.lines().any(|l| l
            == "milvus-io-milvus-v1beta1: rootComponent.kind: version v1beta1 is not in the CRD (its versions: v1alpha1)"),
        "{out}"
    );
    assert!(
        out.lines().any(|l| l
            .starts_with("apps-nvidia-com-nimcache-v1alpha1: rootComponent.kind: ")
            && l.ends_with("is not served by the cluster (no CRD for it)")),
        "{out}"
    );
    assert!(
        !out.lines().any(|l| l.starts_with("ray-io-raycluster-v1: ")),
        "the catalog's RayCluster fits KubeRay's CRD and live objects:\n{out}"
    );
}
