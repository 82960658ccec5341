//! GPUs through Dynamic Resource Allocation, on in-memory objects shaped as Kubernetes v1.37
//! writes them (kubernetes/api resource/v1/types.go v0.37.2): what pod templates request
//! through ResourceClaimTemplates and ResourceClaims, and what pods hold from allocations.

use serde_json::{Value, json};
use wlmap_engine::*;

/// A Job-like kind: one pod template, `parallelism` pods.
const JOB: &str = r#"
apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: batch-job-v1}
spec:
  structureDefinition:
    rootComponent:
      name: job
      kind: {group: batch, version: v1, kind: Job}
      specDefinition: {podTemplateSpecPath: .spec.template}
      scaleDefinition: {replicasPath: .spec.parallelism // 1}
      statusDefinition: {statusMappings: {running: [{byExpression: {expression: "(.status.ready // 0) > 0", expectedResult: "true"}}]}}
"#;

fn job_def() -> Definition {
    let k = wlmap_schema::decode_one(JOB, "job.yaml").expect("decodes");
    Definition::compile(k, Origin::File).expect("compiles")
}

/// A Job of `pods` pods whose template has these `resourceClaims` and containers.
fn job(pods: u64, claims: Value, containers: Value) -> Object {
    Object::new(json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml", "uid": "job-1"},
        "spec": {"parallelism": pods, "template": {"spec": {
            "resourceClaims": claims, "containers": containers}}}}))
}

fn one_container() -> Value {
    json!([{"name": "trainer", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}])
}

fn template(name: &str, requests: Value) -> Object {
    Object::new(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"spec": {"devices": {"requests": requests}}}}),
    )
}

fn exactly(class: &str, count: u64) -> Value {
    json!({"name": "gpu", "exactly": {"deviceClassName": class, "allocationMode": "ExactCount", "count": count}})
}

/// A node's ResourceSlice of NVIDIA's driver: `gpus` full GPUs and `migs` MIG devices.
fn slice(node: &str, gpus: usize, migs: usize) -> Object {
    let mut devices: Vec<Value> = (0..gpus)
        .map(|i| json!({"name": format!("gpu-{i}"), "attributes": {"type": {"string": "gpu"},
            "productName": {"string": "NVIDIA H100 80GB HBM3"}}, "capacity": {"memory": {"value": "80Gi"}}}))
        .collect();
    devices.extend((0..migs).map(|i| {
        json!({"name": format!("gpu-7-mig-1g10gb-19-{i}"),
        "attributes": {"type": {"string": "mig"}, "profile": {"string": "1g.10gb"}}})
    }));
    Object::new(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": format!("00000-gpu.nvidia.com-{node}-abcde")},
        "spec": {"driver": "gpu.nvidia.com", "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                 "nodeName": node, "devices": devices}}),
    )
}

fn requested(obj: &Object, objects: &[Object]) -> Workload {
    resolve_with(&job_def(), obj, &ObjectsProvider(objects)).expect("resolves")
}

fn gpus(w: &Workload) -> f64 {
    w.gpus(&GpuPolicy::default())
}

#[test]
fn a_claim_template_of_four_gpus_per_pod_is_four_gpus_a_pod() {
    let tpl = template("four", json!([exactly("gpu.nvidia.com", 4)]));
    let claims = json!([{"name": "gpu", "resourceClaimTemplateName": "four"}]);
    let w = requested(&job(3, claims, one_container()), &[tpl]);
    assert_eq!(gpus(&w), 12.0);
    assert!(w.notes.is_empty(), "{:?}", w.notes);
    // Booked under the DeviceClass's own extended-resource name (KEP-5004).
    let r = &w.root.resources.amounts;
    assert_eq!(
        r.get("deviceclass.resource.kubernetes.io/gpu.nvidia.com"),
        Some(&12.0)
    );
}

#[test]
fn count_defaults_to_one_and_several_containers_of_one_claim_count_it_once() {
    let tpl = template(
        "one",
        json!([{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]),
    );
    let containers = json!([
        {"name": "a", "image": "x", "resources": {"claims": [{"name": "gpu"}]}},
        {"name": "b", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}]);
    let claims = json!([{"name": "gpu", "resourceClaimTemplateName": "one"}]);
    assert_eq!(gpus(&requested(&job(2, claims, containers), &[tpl])), 2.0);
}

#[test]
fn all_devices_of_a_node_are_counted_from_its_resource_slices_or_said_unknown() {
    let tpl = template(
        "all",
        json!([{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}}]),
    );
    let claims = json!([{"name": "gpu", "resourceClaimTemplateName": "all"}]);
    let j = job(2, claims, one_container());
    // Nodes of 8 and of 4 full GPUs (and 2 MIG slices, another class): a node's all is 8.
    let known = requested(
        &j,
        &[tpl.clone(), slice("node-a", 8, 0), slice("node-b", 4, 2)],
    );
    assert_eq!(gpus(&known), 16.0);
    assert!(known.notes.is_empty(), "{:?}", known.notes);
    let unknown = requested(&j, &[tpl]);
    assert_eq!(gpus(&unknown), 0.0);
    assert_eq!(unknown.notes.len(), 1);
    assert!(
        unknown.notes[0].contains("asks for all gpu.nvidia.com devices of a node"),
        "{:?}",
        unknown.notes
    );
}

#[test]
fn first_available_counts_the_largest_alternative_and_says_which() {
    let tpl = template(
        "prio",
        json!([{"name": "gpu", "firstAvailable": [
        {"name": "big", "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 2},
        {"name": "small", "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 4}]}]),
    );
    let claims = json!([{"name": "gpu", "resourceClaimTemplateName": "prio"}]);
    let w = requested(&job(1, claims, one_container()), &[tpl]);
    assert_eq!(gpus(&w), 4.0);
    assert_eq!(w.notes.len(), 1);
    assert!(
        w.notes[0].contains("counted the largest, small (4 gpu.nvidia.com)"),
        "{:?}",
        w.notes
    );
}

#[test]
fn a_resource_claim_shared_by_every_pod_counts_once_for_the_workload() {
    let shared = Object::new(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "team-gpus", "namespace": "ml"},
        "spec": {"devices": {"requests": [exactly("gpu.nvidia.com", 2)]}}}),
    );
    let claims = json!([{"name": "gpu", "resourceClaimName": "team-gpus"}]);
    let w = requested(&job(3, claims, one_container()), &[shared]);
    assert_eq!(gpus(&w), 2.0, "three pods share one claim of two GPUs");
}

#[test]
fn mig_slices_count_one_each_and_other_classes_not_at_all() {
    let tpl = template(
        "mixed",
        json!([exactly("mig.nvidia.com", 2),
        {"name": "nic", "exactly": {"deviceClassName": "rdma.example.com", "count": 1}},
        {"name": "watch", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 8, "adminAccess": true}}]),
    );
    let claims = json!([{"name": "gpu", "resourceClaimTemplateName": "mixed"}]);
    let w = requested(&job(1, claims, one_container()), &[tpl]);
    assert_eq!(
        gpus(&w),
        2.0,
        "2 MIG slices; the NIC and the admin-access request take no GPU"
    );
}

#[test]
fn a_missing_template_is_reported_not_guessed() {
    let claims = json!([{"name": "gpu", "resourceClaimTemplateName": "gone"}]);
    let w = requested(&job(2, claims, one_container()), &[]);
    assert_eq!(gpus(&w), 0.0);
    assert_eq!(
        w.notes,
        ["ResourceClaimTemplate ml/gone not found: the devices it asks for are not counted"]
    );
}

#[test]
fn a_device_class_selecting_a_gpu_driver_is_a_gpu_class() {
    let class = Object::new(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "h100.example.com"},
        "spec": {"selectors": [{"cel": {"expression":
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100 80GB HBM3'"}}]}}),
    );
    let tpl = template("h100", json!([exactly("h100.example.com", 4)]));
    let claims = json!([{"name": "gpu", "resourceClaimTemplateName": "h100"}]);
    let w = requested(
        &job(2, claims.clone(), one_container()),
        &[tpl.clone(), class],
    );
    assert_eq!(gpus(&w), 8.0);
    // Without the DeviceClass object, its name alone says nothing.
    assert_eq!(
        gpus(&requested(&job(2, claims, one_container()), &[tpl])),
        0.0
    );
    // A setting names it (WLMAP_GPU_DEVICE_CLASSES, here through the policy's builder).
    let policy = GpuPolicy::builtin().with(vec![], vec!["h100.example.com".into()]);
    assert!(policy.is_gpu("deviceclass.resource.kubernetes.io/h100.example.com"));
}

#[test]
fn the_device_class_extended_resource_name_counts_as_its_class() {
    let j = Object::new(json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml", "uid": "job-1"},
        "spec": {"parallelism": 2, "template": {"spec": {"containers": [{"name": "c", "image": "x",
            "resources": {"limits": {"deviceclass.resource.kubernetes.io/gpu.nvidia.com": 2}}}]}}}}));
    assert_eq!(gpus(&requested(&j, &[])), 4.0);
}

/// A pod of the Job, with its claim made from the template and allocated `devices`.
fn pod_and_claim(name: &str, node: &str, results: Value) -> (Object, Object) {
    let claim = format!("{name}-gpu-x7k2q");
    let pod = Object::new(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "uid": format!("uid-{name}"),
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "job-1", "controller": true}]},
        "spec": {"nodeName": node, "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "prio"}],
                 "containers": one_container()},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                   "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": claim}]}}));
    let claim = Object::new(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": claim, "namespace": "ml", "uid": format!("claim-{name}"),
            "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": name, "uid": format!("uid-{name}"), "controller": true}]},
        "spec": {"devices": {"requests": [
            {"name": "gpu", "firstAvailable": [
                {"name": "full", "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1},
                {"name": "slices", "deviceClassName": "mig.nvidia.com", "allocationMode": "ExactCount", "count": 2}]},
            {"name": "nic", "exactly": {"deviceClassName": "rdma.example.com", "allocationMode": "ExactCount", "count": 1}}]}},
        "status": {"allocation": {"devices": {"results": results}},
                   "reservedFor": [{"resource": "pods", "name": name, "uid": format!("uid-{name}")}]}}),
    );
    (pod, claim)
}

#[test]
fn held_gpus_are_the_gpu_devices_allocated_to_the_pods_claims() {
    let tpl = template(
        "prio",
        json!([{"name": "gpu", "firstAvailable": [
        {"name": "full", "deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1},
        {"name": "slices", "deviceClassName": "mig.nvidia.com", "allocationMode": "ExactCount", "count": 2}]}]),
    );
    let claims = json!([{"name": "gpu", "resourceClaimTemplateName": "prio"}]);
    let j = job(2, claims, one_container());
    // One pod got the full GPU; the other the two MIG slices (and a NIC, not a GPU).
    let (p1, c1) = pod_and_claim(
        "train-a",
        "node-a",
        json!([
        {"request": "gpu/full", "driver": "gpu.nvidia.com", "pool": "node-a", "device": "gpu-0"}]),
    );
    let (p2, c2) = pod_and_claim(
        "train-b",
        "node-b",
        json!([
        {"request": "gpu/slices", "driver": "gpu.nvidia.com", "pool": "node-b", "device": "gpu-7-mig-1g10gb-19-0"},
        {"request": "gpu/slices", "driver": "gpu.nvidia.com", "pool": "node-b", "device": "gpu-7-mig-1g10gb-19-1"},
        {"request": "gpu/slices", "driver": "gpu.nvidia.com", "pool": "node-b", "device": "gpu-7-mig-1g10gb-19-1"},
        {"request": "nic", "driver": "rdma.example.com", "pool": "node-b", "device": "nic-0"}]),
    );
    let objects = vec![
        j.clone(),
        tpl,
        p1,
        c1,
        p2,
        c2,
        slice("node-a", 8, 0),
        slice("node-b", 0, 2),
    ];
    let def = job_def();
    let mut w = resolve_with(&def, &j, &ObjectsProvider(&objects)).expect("resolves");
    attribute(&def, &mut w, &j, &objects).expect("attributes");
    assert_eq!(
        gpus(&w),
        4.0,
        "asked: the largest alternative, 2 slices, per pod"
    );
    assert_eq!(
        w.gpus_held(),
        3.0,
        "held: one full GPU, two slices (a device named twice once)"
    );
    let b = w
        .root
        .pods
        .iter()
        .find(|p| p.name == "train-b")
        .expect("train-b");
    let held: Vec<(&str, Option<&str>)> = b
        .held
        .iter()
        .map(|d| (d.device.as_str(), d.profile.as_deref()))
        .collect();
    assert_eq!(
        held,
        [
            ("gpu-7-mig-1g10gb-19-0", Some("1g.10gb")),
            ("gpu-7-mig-1g10gb-19-1", Some("1g.10gb"))
        ]
    );
    assert!(
        b.held
            .iter()
            .all(|d| d.class == "mig.nvidia.com" && d.pool == "node-b")
    );
}

/// Pods sharing a ResourceClaim by name (`resourceClaimName`; the claim is the user's, no pod
/// owns it): each pod holds its devices, the workload holds them once.
fn shared_claim_and_pods() -> (Object, Vec<Object>) {
    let claims = json!([{"name": "gpu", "resourceClaimName": "team-gpus"}]);
    let j = job(2, claims.clone(), one_container());
    let pod = |name: &str| {
        Object::new(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml", "uid": format!("uid-{name}"),
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "job-1", "controller": true}]},
            "spec": {"nodeName": "node-a", "resourceClaims": claims, "containers": one_container()},
            "status": {"phase": "Running"}}))
    };
    let device = |d: &str| json!({"request": "gpu", "driver": "gpu.nvidia.com", "pool": "node-a", "device": d});
    let shared = Object::new(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "team-gpus", "namespace": "ml", "uid": "claim-team"},
        "spec": {"devices": {"requests": [exactly("gpu.nvidia.com", 2)]}},
        "status": {"allocation": {"devices": {"results": [device("gpu-0"), device("gpu-1")]}},
            "reservedFor": [{"resource": "pods", "name": "train-a", "uid": "uid-train-a"},
                            {"resource": "pods", "name": "train-b", "uid": "uid-train-b"}]}}),
    );
    (
        j,
        vec![
            pod("train-a"),
            pod("train-b"),
            shared,
            slice("node-a", 8, 0),
        ],
    )
}

#[test]
fn devices_of_a_claim_shared_by_name_are_held_once_for_the_workload() {
    let (j, mut objects) = shared_claim_and_pods();
    objects.insert(0, j.clone());
    let def = job_def();
    let mut w = resolve_with(&def, &j, &ObjectsProvider(&objects)).expect("resolves");
    attribute(&def, &mut w, &j, &objects).expect("attributes");
    assert_eq!(gpus(&w), 2.0, "asked: the shared claim's two GPUs, once");
    assert_eq!(w.gpus_held(), 2.0, "held: its two devices, once");
    for p in &w.root.pods {
        assert_eq!(p.held.len(), 2, "each pod holds them: {}", p.name);
        assert!(p.held.iter().all(|d| d.claim == "team-gpus"));
    }
}

#[test]
fn a_pending_pod_holds_nothing_until_its_claim_is_allocated() {
    let (p, c) = pod_and_claim("train-a", "", json!([]));
    let objects = vec![p.clone(), c];
    let def = job_def();
    let j = job(
        1,
        json!([{"name": "gpu", "resourceClaimTemplateName": "prio"}]),
        one_container(),
    );
    let mut w = resolve_with(&def, &j, &ObjectsProvider(&objects)).expect("resolves");
    attribute(&def, &mut w, &j, &objects).expect("attributes");
    assert_eq!(w.gpus_held(), 0.0);
    assert_eq!(w.observed_pods(), 1);
}

#[test]
fn an_extended_resource_a_gpu_device_class_backs_counts_as_gpus() {
    // A DeviceClass of NVIDIA's driver maps `example.com/h100` to its devices (KEP-5004).
    let class = Object::new(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "h100.example.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}],
                 "extendedResourceName": "example.com/h100"}}),
    );
    let j = Object::new(json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml", "uid": "job-1"},
        "spec": {"parallelism": 2, "template": {"spec": {"containers": [{"name": "c", "image": "x",
            "resources": {"limits": {"example.com/h100": 4}}}]}}}}));
    assert_eq!(gpus(&requested(&j, &[class])), 8.0);
    // Without the DeviceClass, the name is nobody's GPU.
    assert_eq!(gpus(&requested(&j, &[])), 0.0);
}
