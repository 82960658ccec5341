//! What the live inventory reads of DRA: the devices a workload's pods hold, from claims the
//! pods own and from claims they name (shared, owned by no pod).

use serde_json::json;
use wlmap_engine::Object;
use wlmap_inventory::{Index, ObjectKey};

/// A Job of two running pods that share the ResourceClaim `team-gpus` by name, allocated two
/// devices of a node's ResourceSlice (kubernetes/api resource/v1/types.go v0.37.2).
fn job_sharing_a_claim() -> Vec<Object> {
    let claims = json!([{"name": "gpu", "resourceClaimName": "team-gpus"}]);
    let container =
        json!([{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}]);
    let job = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml", "uid": "job-1"},
        "spec": {"parallelism": 2, "template": {"spec": {"resourceClaims": claims, "containers": container}}},
        "status": {"active": 2, "ready": 2}});
    let pod = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml", "uid": format!("uid-{name}"),
                "labels": {"batch.kubernetes.io/job-name": "train"},
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "job-1", "controller": true}]},
            "spec": {"nodeName": "node-a", "resourceClaims": claims, "containers": container},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})
    };
    let device = |d: &str| json!({"request": "gpu", "driver": "gpu.nvidia.com", "pool": "node-a", "device": d});
    let claim = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "team-gpus", "namespace": "ml", "uid": "claim-team"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 2}}]}},
        "status": {"allocation": {"devices": {"results": [device("gpu-0"), device("gpu-1")]}}}});
    let slice = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": "node-a-gpu.nvidia.com-x"},
        "spec": {"driver": "gpu.nvidia.com", "pool": {"name": "node-a", "generation": 1, "resourceSliceCount": 1},
            "nodeName": "node-a", "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]}});
    [job, pod("train-a"), pod("train-b"), claim, slice]
        .into_iter()
        .map(Object::new)
        .collect()
}

/// The workload of `key` as the inventory resolved it.
fn resolved<'a>(
    inv: &'a wlmap_inventory::Inventory,
    key: &ObjectKey,
) -> &'a wlmap_engine::Workload {
    let entry = inv.workload(key).expect("held");
    entry.result.as_ref().expect("resolves")
}

#[test]
fn a_claim_the_pods_share_by_name_is_held_once() {
    let objects = job_sharing_a_claim();
    let job = ObjectKey::of(&objects[0]);
    let index = Index::new(wlmap_catalog::registry().expect("catalog"), objects);
    let entry = index.evaluate(&job, None).expect("the Job is a workload");
    let w = entry.result.expect("resolves");
    assert_eq!(
        w.gpus(&Default::default()),
        2.0,
        "asked once for the workload"
    );
    assert_eq!(w.gpus_held(), 2.0, "held: the claim's two devices, once");
    assert!(w.root.all_pods().all(|p| p.held.len() == 2), "{w:?}");
}

/// The DRA objects as the live inventory holds them: what the engine reads stays (the same
/// GPUs asked and held), the rest goes (driver configuration, device status, the pods a
/// claim is reserved for, capacities).
#[test]
fn dra_objects_are_trimmed_to_what_is_read() {
    let mut objects: Vec<serde_json::Value> = job_sharing_a_claim()
        .iter()
        .map(|o| o.json().clone())
        .collect();
    let claim = &mut objects[3];
    claim["status"]["reservedFor"] =
        json!([{"resource": "pods", "name": "train-a", "uid": "uid-train-a"}]);
    claim["status"]["devices"] = json!([{"driver": "gpu.nvidia.com", "pool": "node-a", "device": "gpu-0",
        "conditions": [{"type": "Ready", "status": "True"}]}]);
    claim["spec"]["devices"]["config"] =
        json!([{"opaque": {"driver": "gpu.nvidia.com", "parameters": {"sharing": {}}}}]);
    let slice = &mut objects[4];
    slice["spec"]["devices"][0]["capacity"] = json!({"memory": {"value": "80Gi"}});
    slice["spec"]["devices"][0]["attributes"] =
        json!({"type": {"string": "gpu"}, "uuid": {"string": "GPU-1"}});
    let class = json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}],
            "config": [{"opaque": {"driver": "gpu.nvidia.com", "parameters": {}}}]}});
    objects.push(class);
    let reg = wlmap_catalog::registry().expect("catalog");
    let whole: Vec<Object> = objects.iter().cloned().map(Object::new).collect();
    let job = ObjectKey::of(&whole[0]);
    let index = Index::new(reg.clone(), whole);
    let mut trimmed = objects.clone();
    for o in &mut trimmed {
        index.trim(o);
    }
    assert!(
        trimmed[3]["status"].get("reservedFor").is_none(),
        "{}",
        trimmed[3]
    );
    assert!(
        trimmed[3]["status"].get("devices").is_none(),
        "{}",
        trimmed[3]
    );
    assert!(
        trimmed[3]["spec"]["devices"].get("config").is_none(),
        "{}",
        trimmed[3]
    );
    assert_eq!(
        trimmed[3]["status"]["allocation"]["devices"]["results"][1]["device"],
        "gpu-1"
    );
    assert_eq!(
        trimmed[4]["spec"]["devices"][0],
        json!({"name": "gpu-0", "attributes": {"type": {"string": "gpu"}}})
    );
    assert_eq!(
        trimmed[5]["spec"],
        json!({"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]})
    );
    let shown = |i: &Index| {
        let w = i
            .evaluate(&job, None)
            .expect("a workload")
            .result
            .expect("resolves");
        (
            w.gpus(&Default::default()),
            w.gpus_held(),
            serde_json::to_string(&w).expect("serialises"),
        )
    };
    let lean = Index::new(reg, trimmed.into_iter().map(Object::new));
    assert_eq!(shown(&lean), shown(&index));
}

/// A DRA object no owner chain reaches changes the workloads that read it: a claim template
/// created after its workload, and the ResourceSlice of the node a held device is on (a
/// live view may list slices last: they are watched once DRA is in use).
#[test]
fn a_template_or_slice_that_comes_later_changes_the_workloads_that_read_it() {
    let mut inv = wlmap_inventory::Inventory::new(wlmap_catalog::registry().expect("catalog"));
    let job = Object::new(json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml", "uid": "job-1"},
        "spec": {"parallelism": 1, "template": {"spec": {
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "four-gpus"}],
            "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}]}}}}));
    let key = ObjectKey::of(&job);
    inv.apply(job);
    let gpus = |inv: &wlmap_inventory::Inventory| {
        let w = resolved(inv, &key);
        (w.gpus(&Default::default()), w.notes.len())
    };
    assert_eq!(
        gpus(&inv),
        (0.0, 1),
        "the template is not there yet, and that is said"
    );
    let template = Object::new(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "four-gpus", "namespace": "ml"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 4}}]}}}}),
    );
    let changed = inv.apply(template);
    assert!(changed.iter().any(|c| c.key == key), "{changed:?}");
    assert_eq!(gpus(&inv), (4.0, 0));
    // A template of another namespace changes nothing here.
    let elsewhere = Object::new(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "four-gpus", "namespace": "other"}, "spec": {"spec": {"devices": {"requests": []}}}}),
    );
    assert!(inv.apply(elsewhere).is_empty());

    // A pod holding a MIG device; its profile is read from the slice once the slice is there.
    let mut inv = wlmap_inventory::Inventory::new(wlmap_catalog::registry().expect("catalog"));
    let objects = job_sharing_a_claim();
    let key = ObjectKey::of(&objects[0]);
    let mut slice = objects[4].json().clone();
    slice["spec"]["devices"][0]["attributes"] =
        json!({"type": {"string": "mig"}, "profile": {"string": "1g.10gb"}});
    for o in objects.into_iter().take(4) {
        inv.apply(o);
    }
    let profiles = |inv: &wlmap_inventory::Inventory| -> Vec<Option<String>> {
        resolved(inv, &key)
            .root
            .all_pods()
            .flat_map(|p| p.held.iter().map(|d| d.profile.clone()))
            .collect()
    };
    assert!(profiles(&inv).iter().all(Option::is_none));
    let changed = inv.apply(Object::new(slice));
    assert!(changed.iter().any(|c| c.key == key), "{changed:?}");
    assert!(
        profiles(&inv).contains(&Some("1g.10gb".into())),
        "{:?}",
        profiles(&inv)
    );
}
