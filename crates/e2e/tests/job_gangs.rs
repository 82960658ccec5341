//! Gangs that Kubernetes writes itself, and gang objects that are not there, on a testbed of
//! their own with the v1.37 Job controller's gangs on (feature gate `WorkloadWithJob`, alpha;
//! with it, every Job without an owner is ganged by the Job controller). Run through
//! `WLMAP_TESTBED_SCHEDULING=1 WLMAP_TESTBED_FEATURE_GATES=WorkloadWithJob=true testbed/with-testbed.sh cargo test -p wlmap-e2e --test job_gangs -- --include-ignored --test-threads=1`
//! (scripts/test.sh does, as the `job-gangs` tier).

use serde_json::{Value, json};
use wlmap_e2e::{Controller, Testbed, gpu_container, json, stdout_of};

fn with_the_gate() -> Testbed {
    let tb = Testbed::scheduling();
    assert!(
        std::env::var("WLMAP_TESTBED_FEATURE_GATES")
            .is_ok_and(|g| g.contains("WorkloadWithJob=true")),
        "needs a testbed started with WLMAP_TESTBED_FEATURE_GATES=WorkloadWithJob=true"
    );
    tb
}

/// The PodGroups of a namespace that wlmap wrote (its managed-by label).
fn wlmap_pod_groups(tb: &Testbed, ns: &str) -> Vec<Value> {
    tb.get_json(&["get", "podgroups.scheduling.k8s.io", "-n", ns])["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|g| g["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "wlmap")
        .cloned()
        .collect()
}

/// A Job of two 4-GPU pods, with the Job controller's gangs on: the Job controller writes the
/// Job's Workload and PodGroup and names the group in each pod; `wlmap controller` leaves the
/// Job to it (no PodGroup of its own remains) and says why once in a `GangedElsewhere` event;
/// the pods run in the Job controller's group.
#[test]
#[ignore = "needs a testbed with WorkloadWithJob (see the file's doc)"]
fn a_job_the_job_controller_gangs_gets_no_gang_from_wlmap() {
    let tb = with_the_gate();
    tb.namespace("wlmap-system");
    let ns = "jobgang";
    tb.namespace(ns);
    tb.add_node("jobgang-gpu-0", "jobgang", 8);
    let _ctl = Controller::start(&tb, "jobgang", "wlmap-jobgang");
    // KWOK completes a Job's pod at once unless it is labelled to keep running (testbed/kwok).
    let job = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "namespace": ns},
        "spec": {"parallelism": 2, "completions": 2, "completionMode": "Indexed", "backoffLimit": 0,
            "template": {"metadata": {"labels": {"wlmap.test/keep-running": "true"}},
                "spec": {"restartPolicy": "Never", "nodeSelector": {"wlmap.test/pool": "jobgang"},
                    "containers": [gpu_container(4)]}}}});
    tb.kubectl(&["create", "-f", "-"], Some(&job.to_string()));
    tb.wait_for("the Job controller's two pods, running", 120, || {
        let ps = tb.pods(ns);
        ps.len() == 2 && ps.iter().all(|p| p["status"]["phase"] == "Running")
    });
    // Each pod names the Job controller's PodGroup: a PodGroup the Job owns, not wlmap's.
    let groups: Vec<String> = tb
        .pods(ns)
        .iter()
        .map(|p| {
            p["spec"]["schedulingGroup"]["podGroupName"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect();
    assert!(
        groups[0] == groups[1] && !groups[0].is_empty(),
        "{groups:?}"
    );
    let pg = tb.get_json(&[
        "get",
        &format!("podgroups.scheduling.k8s.io/{}", groups[0]),
        "-n",
        ns,
    ]);
    assert_eq!(pg["metadata"]["ownerReferences"][0]["kind"], "Job", "{pg}");
    assert!(
        pg["metadata"]["labels"]["app.kubernetes.io/managed-by"].is_null(),
        "the Job controller's own: {pg}"
    );
    tb.wait_for(
        "an event on the Job says wlmap leaves it to its own gang",
        60,
        || {
            tb.get_json(&["get", "events", "-n", ns])["items"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|e| {
                    e["reason"] == "GangedElsewhere"
                        && e["involvedObject"]["name"] == "train"
                        && e["message"]
                            .as_str()
                            .is_some_and(|m| m.contains(&groups[0]))
                })
        },
    );
    tb.wait_for("no PodGroup of wlmap's for it", 60, || {
        wlmap_pod_groups(&tb, ns).is_empty()
    });
}

/// A pod that names a PodGroup which does not exist is held by the scheduler for good;
/// `wlmap describe` says which gang object is missing, in text and JSON.
#[test]
#[ignore = "needs a testbed with WorkloadWithJob (see the file's doc)"]
fn a_missing_gang_object_is_said_in_why() {
    let tb = with_the_gate();
    let ns = "nogang";
    tb.namespace(ns);
    tb.add_node("nogang-gpu-0", "nogang", 8);
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "lonely", "namespace": ns},
        "spec": {"nodeSelector": {"wlmap.test/pool": "nogang"},
            "schedulingGroup": {"podGroupName": "nowhere"},
            "containers": [gpu_container(1)]}});
    tb.kubectl(&["create", "-f", "-"], Some(&pod.to_string()));
    // A pod beside it in no group binds; the scheduler has seen both, and holds the one whose
    // PodGroup is not there (there is room: 8 GPUs for 2).
    let mut beside = pod.clone();
    beside["metadata"]["name"] = json!("beside");
    beside["spec"]
        .as_object_mut()
        .map(|s| s.remove("schedulingGroup"));
    tb.kubectl(&["create", "-f", "-"], Some(&beside.to_string()));
    let node_of = |name: &str| {
        tb.get_json(&["get", &format!("pod/{name}"), "-n", ns])["spec"]["nodeName"].clone()
    };
    tb.wait_for("the pod beside it bound", 60, || {
        node_of("beside").is_string()
    });
    assert!(node_of("lonely").is_null(), "held for want of its PodGroup");
    let d = json(&tb.wlmap(&["describe", "pod/lonely", "-n", ns, "-o", "json"]));
    let missing: Vec<&Value> = d["gangs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|g| g["missingForPods"] == 1)
        .collect();
    assert_eq!(missing.len(), 1, "{d}");
    assert_eq!(
        (missing[0]["kind"].as_str(), missing[0]["name"].as_str()),
        (Some("PodGroup"), Some("nowhere")),
        "{d}"
    );
    let text = stdout_of(
        "describe",
        &tb.wlmap(&["describe", "pod/lonely", "-n", ns]),
        0,
    );
    assert!(
        text.contains("Gang: PodGroup/nowhere") && text.contains("not found"),
        "{text}"
    );
}
