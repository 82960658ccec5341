//! Objects kept lean: what a long-running inventory holds of each object. The engine reads a
//! pod's metadata, where it runs, what it requests and how it is doing; the rest of a pod
//! (volumes, environment, probes, commands, images) is most of its bytes and never read.

use serde_json::{Map, Value};

/// Pod spec fields kept: where the pod runs and what it requests.
const POD_SPEC: &[&str] = &[
    "nodeName",
    "schedulerName",
    "schedulingGroup",
    "priorityClassName",
    "priority",
    "resources",
    "overhead",
    "containers",
    "initContainers",
];
/// Container fields kept: its name and what it requests (and an init container's restart
/// policy, which makes it a sidecar).
const CONTAINER: &[&str] = &["name", "resources", "restartPolicy"];
/// Pod status fields kept: phase, conditions, the reason it is in that state.
const POD_STATUS: &[&str] = &[
    "phase",
    "reason",
    "message",
    "conditions",
    "startTime",
    "containerStatuses",
    "initContainerStatuses",
];
/// Container status fields kept.
const CONTAINER_STATUS: &[&str] = &["name", "ready", "started", "restartCount", "state"];

/// Drop what wlmap never reads: every object's `metadata.managedFields` and its
/// last-applied annotation; of a Pod that another object controls, every spec and status
/// field but those above. Pod selectors of definitions read metadata (labels, annotations,
/// owner references), which is kept whole; a Pod of its own is a workload whose definition
/// reads its whole spec, so it is kept whole too.
///
/// ```
/// let owner = serde_json::json!([{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u", "controller": true}]);
/// let mut pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
///     "metadata": {"name": "p", "labels": {"app": "a"}, "ownerReferences": owner, "managedFields": [{"manager": "kubelet"}]},
///     "spec": {"nodeName": "n1", "volumes": [{"name": "data"}],
///         "containers": [{"name": "c", "image": "i", "env": [{"name": "X"}],
///             "resources": {"limits": {"nvidia.com/gpu": 4}}}]},
///     "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}]}});
/// wlmap_inventory::trim(&mut pod);
/// assert_eq!(pod, serde_json::json!({"apiVersion": "v1", "kind": "Pod",
///     "metadata": {"name": "p", "labels": {"app": "a"}, "ownerReferences": owner},
///     "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 4}}}]},
///     "status": {"phase": "Running"}}));
/// ```
pub fn trim(obj: &mut Value) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
        if let Some(a) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            a.remove("kubectl.kubernetes.io/last-applied-configuration");
        }
    }
    let is_pod = obj.get("kind").and_then(Value::as_str) == Some("Pod")
        && obj.get("apiVersion").and_then(Value::as_str) == Some("v1");
    let controlled = obj
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty());
    if !is_pod || !controlled {
        return;
    }
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        keep(spec, POD_SPEC);
        for list in ["containers", "initContainers"] {
            each(spec, list, CONTAINER);
        }
    }
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
        keep(status, POD_STATUS);
        for list in ["containerStatuses", "initContainerStatuses"] {
            each(status, list, CONTAINER_STATUS);
        }
    }
}

fn keep(m: &mut Map<String, Value>, fields: &[&str]) {
    m.retain(|k, _| fields.contains(&k.as_str()));
}

fn each(m: &mut Map<String, Value>, list: &str, fields: &[&str]) {
    for item in m
        .get_mut(list)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(o) = item.as_object_mut() {
            keep(o, fields);
        }
    }
}
