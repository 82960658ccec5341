//! `wlmap controller` on a testbed that schedules: the real kube-scheduler with gang
//! scheduling, the real Job controller, KWOK GPU nodes. The controller runs as a process next
//! to the API server (its webhook reached by URL, its certificates its own), as it would run
//! as a Deployment. Run through
//! `WLMAP_TESTBED_SCHEDULING=1 testbed/with-testbed.sh cargo test -p wlmap-e2e --test controller -- --include-ignored --test-threads=1`
//! (scripts/test.sh does).

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use wlmap_e2e::{Testbed, json, testbed_crds};

fn testbed() -> Testbed {
    let tb = Testbed::from_env();
    assert_eq!(
        std::env::var("WLMAP_TESTBED_SCHEDULING").as_deref(),
        Ok("1"),
        "these tests need a testbed started with WLMAP_TESTBED_SCHEDULING=1"
    );
    tb
}

/// A free local port (bound, then released for the controller to take).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `GET path` on a local plain-HTTP port: status code and body.
fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let code = out.split_whitespace().nth(1)?.parse().ok()?;
    let body = out.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((code, body))
}

/// One controller replica, killed when dropped (its webhook configuration deleted with it,
/// so the tests that follow create pods as if it never ran).
struct Controller {
    child: Child,
    probes: u16,
    kubectl: String,
    kubeconfig: String,
    webhook_config: String,
}

impl Controller {
    fn start(tb: &Testbed, identity: &str, webhook_config: &str) -> Controller {
        let (webhook, probes) = (free_port(), free_port());
        let log = std::fs::File::create(format!(
            "{}/controller-{identity}.log",
            std::env::var("WLMAP_TESTBED_DIR").unwrap_or_else(|_| "/tmp".into())
        ))
        .expect("log file");
        let child = Command::new(wlmap_e2e::wlmap_bin())
            .args([
                "--kubeconfig",
                tb.kubeconfig.as_str(),
                "controller",
                "-n",
                "wlmap-system",
                "--identity",
                identity,
                "--webhook-address",
                &format!("127.0.0.1:{webhook}"),
                "--probe-address",
                &format!("127.0.0.1:{probes}"),
                "--webhook-url",
                &format!("https://127.0.0.1:{webhook}/mutate-pods"),
                "--webhook-host",
                "127.0.0.1",
                "--webhook-config",
                webhook_config,
                "--lease-duration",
                "6",
                "--renew-every",
                "2",
            ])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("wlmap controller starts");
        let c = Controller {
            child,
            probes,
            kubectl: tb.kubectl.clone(),
            kubeconfig: tb.kubeconfig.clone(),
            webhook_config: webhook_config.to_string(),
        };
        tb.wait_for("the controller ready", 120, || {
            http_get(c.probes, "/readyz").is_some_and(|(code, _)| code == 200)
        });
        c
    }

    /// The value of a metric line (`name{labels}` exactly as exported), 0 when absent.
    fn metric(&self, series: &str) -> f64 {
        let (_, body) = http_get(self.probes, "/metrics").expect("metrics");
        body.lines()
            .find_map(|l| l.strip_prefix(series).and_then(|v| v.trim().parse().ok()))
            .unwrap_or(0.0)
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = Command::new(&self.kubectl)
            .args(["--kubeconfig", &self.kubeconfig, "delete", "mutatingwebhookconfiguration"])
            .args([&self.webhook_config, "--ignore-not-found"])
            .output();
    }
}

fn gpu_container(gpus: u32) -> Value {
    let r = json!({"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": gpus.to_string()});
    json!({"name": "trainer", "image": "nvcr.io/nvidia/pytorch:24.08-py3",
        "resources": {"requests": r, "limits": r}})
}

/// The JobSet's Jobs as the JobSet controller makes them (kubernetes-sigs/jobset
/// pkg/controllers/jobset_controller.go, constructJob and labelAndAnnotateObject): named
/// `<jobset>-<replicatedJob>-<index>`, labelled on the Job and its pod template, controlled by
/// the JobSet.
fn jobset_jobs(jobset: &Value) -> Vec<Value> {
    let name = jobset["metadata"]["name"].as_str().expect("name");
    let uid = jobset["metadata"]["uid"].as_str().expect("uid");
    let ns = jobset["metadata"]["namespace"].as_str().expect("namespace");
    let mut out = Vec::new();
    let mut global = 0;
    for rj in jobset["spec"]["replicatedJobs"]
        .as_array()
        .expect("replicatedJobs")
    {
        let rname = rj["name"].as_str().expect("name");
        let replicas = rj["replicas"].as_u64().unwrap_or(1);
        for i in 0..replicas {
            let labels = json!({
                "jobset.sigs.k8s.io/jobset-name": name,
                "jobset.sigs.k8s.io/jobset-uid": uid,
                "jobset.sigs.k8s.io/replicatedjob-name": rname,
                "jobset.sigs.k8s.io/replicatedjob-replicas": replicas.to_string(),
                "jobset.sigs.k8s.io/job-index": i.to_string(),
                "jobset.sigs.k8s.io/job-global-index": global.to_string(),
                "jobset.sigs.k8s.io/restart-attempt": "0"});
            global += 1;
            let mut spec = rj["template"]["spec"].clone();
            let mut pod_labels = labels.clone();
            if let (Some(l), Some(own)) = (
                pod_labels.as_object_mut(),
                spec["template"]["metadata"]["labels"].as_object(),
            ) {
                l.extend(own.clone());
            }
            spec["template"]["metadata"] = json!({"labels": pod_labels, "annotations": labels});
            out.push(json!({"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": format!("{name}-{rname}-{i}"), "namespace": ns,
                    "labels": labels, "annotations": labels,
                    "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                        "name": name, "uid": uid, "controller": true, "blockOwnerDeletion": true}]},
                "spec": spec}));
        }
    }
    out
}

/// The JobSet controller's status: per replicatedJob, the ready and active Jobs.
fn jobset_status(tb: &Testbed, ns: &str, jobset: &str) -> Value {
    let jobs = tb.get_json(&["get", "jobs", "-n", ns]);
    let mut per: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for j in jobs["items"].as_array().into_iter().flatten() {
        if j["metadata"]["labels"]["jobset.sigs.k8s.io/jobset-name"] != jobset {
            continue;
        }
        let rj = j["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let e = per.entry(rj).or_default();
        e.0 += u64::from(j["status"]["ready"].as_u64().unwrap_or(0) > 0);
        e.1 += u64::from(j["status"]["active"].as_u64().unwrap_or(0) > 0);
    }
    let rjs: Vec<Value> = per
        .into_iter()
        .map(|(name, (ready, active))| {
            json!({"name": name, "ready": ready, "active": active,
            "succeeded": 0, "failed": 0, "suspended": 0})
        })
        .collect();
    json!({"status": {"replicatedJobsStatus": rjs, "restarts": 0}})
}

fn pods(tb: &Testbed, ns: &str) -> Vec<Value> {
    tb.get_json(&["get", "pods", "-n", ns])["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The seed's story, scheduled: a JobSet of a leader Job and two worker Jobs, one 4-GPU pod
/// each, ganged as one group of 3 by the controller (a v1.37 PodGroup it writes, and the
/// pods' scheduling group its webhook sets). On 8 GPUs no pod binds (without the gang two
/// would); with a second node all three bind together; `wlmap get` shows one workload of
/// 12 GPUs, Running.
#[test]
#[ignore = "needs the scheduling testbed (see the file's doc)"]
fn a_jobset_is_ganged_as_one_workload() {
    let tb = testbed();
    tb.apply_file(&testbed_crds().join("jobset.x-k8s.io_jobsets.yaml"));
    tb.wait_established(&["crd/jobsets.jobset.x-k8s.io"]);
    tb.kubectl(&["create", "namespace", "wlmap-system"], None);
    let ns = "ctl-jobset";
    tb.kubectl(&["create", "namespace", ns], None);
    tb.add_node("ctl-gpu-0", "ctl", 8);
    let ctl = Controller::start(&tb, "a", "wlmap-test");
    let mwc = tb.get_json(&["get", "mutatingwebhookconfiguration", "wlmap-test"]);
    assert_eq!(mwc["webhooks"][0]["failurePolicy"], "Ignore", "{mwc}");

    // KWOK completes a Job's pod at once unless it is labelled to keep running (testbed/kwok).
    let pod_template = json!({"metadata": {"labels": {"wlmap.test/keep-running": "true"}},
        "spec": {"restartPolicy": "OnFailure",
        "nodeSelector": {"wlmap.test/pool": "ctl"}, "containers": [gpu_container(4)]}});
    let job_template = json!({"spec": {"parallelism": 1, "completions": 1, "backoffLimit": 0,
        "completionMode": "Indexed", "template": pod_template}});
    let jobset = json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "train", "namespace": ns},
        "spec": {"replicatedJobs": [
            {"name": "leader", "replicas": 1, "template": job_template},
            {"name": "workers", "replicas": 2, "template": job_template}]}});
    tb.kubectl(&["create", "-f", "-"], Some(&jobset.to_string()));
    // The gang object exists from the spec, before any pod.
    tb.wait_for("the controller's PodGroup", 60, || {
        tb.kubectl(
            &["get", "podgroups.scheduling.k8s.io", "-n", ns, "-o", "name"],
            None,
        )
        .contains("train-gang")
    });
    let group = tb.get_json(&["get", "podgroups.scheduling.k8s.io/train-gang", "-n", ns]);
    assert_eq!(
        group["spec"]["schedulingPolicy"]["gang"]["minCount"], 3,
        "{group}"
    );
    assert_eq!(
        group["metadata"]["ownerReferences"][0]["kind"], "JobSet",
        "{group}"
    );
    assert_eq!(
        group["metadata"]["labels"]["app.kubernetes.io/managed-by"], "wlmap",
        "{group}"
    );

    let created = tb.get_json(&["get", "jobset/train", "-n", ns]);
    for job in jobset_jobs(&created) {
        tb.kubectl(&["create", "-f", "-"], Some(&job.to_string()));
    }
    tb.wait_for("three pods created", 60, || pods(&tb, ns).len() == 3);
    for p in pods(&tb, ns) {
        assert_eq!(
            p["spec"]["schedulingGroup"]["podGroupName"], "train-gang",
            "the webhook put every pod in the group: {p}"
        );
    }
    tb.wait_for("the PodGroup marked unschedulable", 120, || {
        let g = tb.get_json(&["get", "podgroups.scheduling.k8s.io/train-gang", "-n", ns]);
        g["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "PodGroupInitiallyScheduled" && c["status"] == "False")
    });
    let bound = |ps: &[Value]| {
        ps.iter()
            .filter(|p| p["spec"]["nodeName"].is_string())
            .count()
    };
    assert_eq!(
        bound(&pods(&tb, ns)),
        0,
        "8 GPUs hold two pods, and a gang of 3 binds none"
    );

    tb.add_node("ctl-gpu-1", "ctl", 8);
    tb.wait_for("all three pods bound and running", 120, || {
        let ps = pods(&tb, ns);
        ps.len() == 3 && ps.iter().all(|p| p["status"]["phase"] == "Running")
    });
    tb.wait_for("the Jobs ready", 60, || {
        jobset_status(&tb, ns, "train")["status"]["replicatedJobsStatus"]
            .as_array()
            .is_some_and(|r| {
                r.iter()
                    .map(|s| s["ready"].as_u64().unwrap_or(0))
                    .sum::<u64>()
                    == 3
            })
    });
    tb.kubectl(
        &[
            "patch",
            "jobset/train",
            "-n",
            ns,
            "--subresource=status",
            "--type=merge",
            "-p",
            &jobset_status(&tb, ns, "train").to_string(),
        ],
        None,
    );
    let o = tb.wlmap(&["get", "-n", ns, "--all-types", "-o", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let items = json(&o)["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 1, "one workload, not three Jobs: {items:#?}");
    assert_eq!(items[0]["kind"], "JobSet");
    assert_eq!(items[0]["resources"]["gpus"], 12.0, "{}", items[0]);
    assert_eq!(items[0]["status"]["phase"], "Running", "{}", items[0]);
    assert_eq!(
        ctl.metric(r#"wlmap_admission_requests_total{result="grouped"}"#),
        3.0
    );
    assert!(ctl.metric(r#"wlmap_controller_gang_object_writes_total{action="apply"}"#) >= 1.0);
    assert_eq!(ctl.metric("wlmap_controller_leader"), 1.0);
}
