//! Benchmark of the live inventory (BENCHMARKS.md, "Live inventory"): the cost of one event
//! against the size of the cluster, of resolving every workload again (new definitions), and
//! the memory the inventory holds against the same objects parsed into JSON values. The
//! inventory is built and held as the live feed does (objects packed, applied one by one);
//! `HELD=parsed` holds them parsed, built in one go.
//!
//! The cluster: N Jobs (the catalog's `batch/v1` definition) of 10 pods each, objects as the
//! Job controller and the kubelet write them (see crates/catalog/fixtures/batch-job-v1).
//!
//! ```sh
//! cargo run --release -p wlmap-inventory --example events -- events 10000    # per-event cost
//! cargo run --release -p wlmap-inventory --example events -- memory 10000    # RSS held
//! HELD=parsed cargo run --release -p wlmap-inventory --example events -- memory 10000
//! cargo run --release -p wlmap-inventory --example events -- parse-only 10000
//! cargo run --release -p wlmap-inventory --example events -- trimmed 10000   # objects alone
//! ```

use serde_json::{Value, json};
use std::time::Instant;
use wlmap_engine::Object;
use wlmap_inventory::{Index, Inventory};

// The allocator the `wlmap` binary ships with.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const PODS_PER_JOB: usize = 10;

fn job(i: usize) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": format!("train-{i}"), "namespace": format!("team-{}", i % 100),
            "uid": format!("job-{i:08}"), "creationTimestamp": "2026-11-30T10:00:00Z",
            "labels": {"app": "train", "team": format!("team-{}", i % 100)},
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                "apiVersion": "batch/v1", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:status": {"f:active": {}, "f:ready": {}, "f:startTime": {}}}}]},
        "spec": {"parallelism": PODS_PER_JOB, "completions": PODS_PER_JOB, "completionMode": "Indexed",
            "backoffLimit": 6, "suspend": false,
            "template": {"metadata": {"labels": {"app": "train"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "trainer",
                    "image": "nvcr.io/nvidia/pytorch:25.08-py3", "command": ["torchrun"],
                    "args": ["--nproc-per-node=4", "train.py"],
                    "resources": {"requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "4"},
                        "limits": {"nvidia.com/gpu": "4"}}}]}}},
        "status": {"active": PODS_PER_JOB, "ready": PODS_PER_JOB, "startTime": "2026-11-30T10:00:05Z",
            "terminating": 0, "uncountedTerminatedPods": {}}})
}

/// A pod as the API server returns it once the Job controller made it and the kubelet runs it:
/// the fields the API server defaults, the service-account volume and default tolerations the
/// admission plugins add, and the kubelet's status (five conditions, the container's state),
/// shaped like crates/catalog/fixtures/batch-job-v1/running.
fn pod(i: usize, p: usize, phase: &str) -> Value {
    let ready = if phase == "Running" { "True" } else { "False" };
    let condition = |t: &str, s: &str| {
        json!({"type": t, "status": s, "lastProbeTime": null,
        "lastTransitionTime": "2026-11-30T10:00:04Z"})
    };
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("train-{i}-{p}-x7k2q"), "generateName": format!("train-{i}-{p}-"),
            "namespace": format!("team-{}", i % 100),
            "uid": format!("pod-{i:08}-{p:02}"), "resourceVersion": "2210457",
            "creationTimestamp": "2026-11-30T10:00:02Z",
            "labels": {"app": "train", "batch.kubernetes.io/job-name": format!("train-{i}"),
                "job-name": format!("train-{i}"),
                "batch.kubernetes.io/job-completion-index": p.to_string(),
                "batch.kubernetes.io/controller-uid": format!("job-{i:08}"),
                "controller-uid": format!("job-{i:08}")},
            "annotations": {"batch.kubernetes.io/job-completion-index": p.to_string()},
            "finalizers": ["batch.kubernetes.io/job-tracking"],
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": format!("train-{i}"),
                "uid": format!("job-{i:08}"), "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [{"manager": "kubelet", "operation": "Update", "apiVersion": "v1",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:conditions": {}, "f:phase": {}}}}]},
        "spec": {"nodeName": format!("gpu-node-{}", (i * PODS_PER_JOB + p) % 1000),
            "restartPolicy": "Never", "schedulerName": "default-scheduler", "hostname": format!("train-{i}-{p}"),
            "subdomain": format!("train-{i}"), "dnsPolicy": "ClusterFirst", "enableServiceLinks": true,
            "preemptionPolicy": "PreemptLowerPriority", "priority": 0, "securityContext": {},
            "serviceAccount": "default", "serviceAccountName": "default", "terminationGracePeriodSeconds": 30,
            "containers": [{"name": "trainer", "image": "nvcr.io/nvidia/pytorch:25.08-py3",
                "command": ["torchrun"], "args": ["--nproc-per-node=4", "train.py"],
                "env": [{"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath":
                    "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}],
                "resources": {"requests": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "4"},
                    "limits": {"nvidia.com/gpu": "4"}},
                "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}]}],
            "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}],
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}]},
        "status": {"phase": phase, "hostIP": "10.1.0.1", "hostIPs": [{"ip": "10.1.0.1"}],
            "podIP": "10.244.0.1", "podIPs": [{"ip": "10.244.0.1"}], "startTime": "2026-11-30T10:00:03Z",
            "qosClass": "Burstable",
            "conditions": [condition("PodReadyToStartContainers", "True"), condition("Initialized", "True"),
                condition("Ready", ready), condition("ContainersReady", ready), condition("PodScheduled", "True")],
            "containerStatuses": [{"name": "trainer", "ready": ready == "True", "restartCount": 0, "started": true,
                "image": "nvcr.io/nvidia/pytorch:25.08-py3", "imageID": "nvcr.io/nvidia/pytorch@sha256:0f3e",
                "containerID": "containerd://1", "lastState": {},
                "state": {"running": {"startedAt": "2026-11-30T10:00:04Z"}}}]}})
}

/// The objects, made one at a time (so that holding them is what is measured).
fn cluster(n: usize) -> impl Iterator<Item = Value> {
    (0..n).flat_map(|i| {
        std::iter::once(job(i)).chain((0..PODS_PER_JOB).map(move |p| pod(i, p, "Running")))
    })
}

/// As the live source holds it: trimmed for the catalog's definitions.
fn trimmed(mut v: Value) -> Object {
    static TRIMMER: std::sync::OnceLock<Index> = std::sync::OnceLock::new();
    TRIMMER
        .get_or_init(|| Index::new(wlmap_catalog::registry().expect("catalog"), []))
        .trim(&mut v);
    Object::new(v)
}

/// The inventory as the live feed builds and holds it: objects packed, applied one by one
/// (`HELD=parsed`: held parsed, built in one go).
fn live(registry: wlmap_engine::Registry, objects: impl Iterator<Item = Object>) -> Inventory {
    if std::env::var("HELD").as_deref() == Ok("parsed") {
        return Inventory::from_objects(registry, objects);
    }
    let mut inv = Inventory::from_index(Index::new(registry, []).packed());
    for o in objects {
        inv.apply(o);
    }
    inv
}

fn rss_mb() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0.0);
    pages * 4096.0 / 1e6
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn report(what: &str, mut us: Vec<f64>) {
    us.sort_by(|a, b| a.total_cmp(b));
    println!(
        "{what}: {} events, median {:.1} µs, p99 {:.1} µs, max {:.1} µs",
        us.len(),
        percentile(&us, 0.5),
        percentile(&us, 0.99),
        us[us.len() - 1]
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("events");
    let n: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let registry = wlmap_catalog::registry().expect("catalog");
    let base = rss_mb();
    match mode {
        "parse-only" => {
            let objects: Vec<Value> = cluster(n).collect();
            println!(
                "parse-only: {} objects as JSON values, {:.0} MB held",
                objects.len(),
                rss_mb() - base
            );
            std::hint::black_box(&objects);
        }
        "trimmed" => {
            let objects: Vec<Object> = cluster(n).map(trimmed).collect();
            println!(
                "trimmed objects alone: {} objects, {:.0} MB held",
                objects.len(),
                rss_mb() - base
            );
            std::hint::black_box(&objects);
        }
        "memory" => {
            let inv = live(registry, cluster(n).map(trimmed));
            println!(
                "inventory: {} objects ({} of them parsed), {} workloads, {:.0} MB held",
                inv.index().len(),
                inv.index().objects().filter(|o| o.is_parsed()).count(),
                inv.workloads().count(),
                rss_mb() - base
            );
        }
        _ => {
            let t = Instant::now();
            let mut inv = live(registry.clone(), cluster(n).map(trimmed));
            let build = t.elapsed();
            println!(
                "built: {} objects, {} workloads: {:.2} s",
                inv.index().len(),
                inv.workloads().count(),
                build.as_secs_f64()
            );
            let events: usize = std::env::var("EVENTS")
                .ok()
                .and_then(|e| e.parse().ok())
                .unwrap_or(20_000);
            let mut pod_us = Vec::with_capacity(events);
            for e in 0..events {
                let (i, p) = ((e * 7919) % n, e % PODS_PER_JOB);
                let phase = if (e / n).is_multiple_of(2) {
                    "Pending"
                } else {
                    "Running"
                };
                let o = trimmed(pod(i, p, phase));
                let t = Instant::now();
                let changes = inv.apply(o);
                pod_us.push(t.elapsed().as_secs_f64() * 1e6);
                assert_eq!(changes.len(), 1, "a pod change changes its Job");
            }
            report("pod status change", pod_us);
            let mut job_us = Vec::with_capacity(events);
            for e in 0..events {
                let i = (e * 7919) % n;
                let mut j = job(i);
                j["spec"]["parallelism"] = json!(PODS_PER_JOB - 1 - (e / n) % 2);
                let o = trimmed(j);
                let t = Instant::now();
                inv.apply(o);
                job_us.push(t.elapsed().as_secs_f64() * 1e6);
            }
            report("workload spec change", job_us);
            // New definitions (compiled again, so every one differs): every workload is
            // resolved again from the objects held, as when a Karta changes.
            let fresh = wlmap_catalog::registry().expect("catalog");
            let t = Instant::now();
            let changes = inv.set_definitions(fresh);
            println!(
                "every workload resolved again (new definitions): {:.2} s ({} workloads, {} changed)",
                t.elapsed().as_secs_f64(),
                inv.workloads().count(),
                changes.len()
            );
        }
    }
}
