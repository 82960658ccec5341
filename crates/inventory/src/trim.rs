//! Objects kept lean: what a long-running inventory holds of each object. The engine reads a
//! pod's metadata, where it runs, what it requests and how it is doing; the rest of a pod
//! (volumes, environment, probes, commands, images, timestamps) is most of its bytes and never
//! read. A pod whose controller is of a kind the definitions know keeps what attribution and
//! the Pod definition read; any other pod is a workload of its own and is kept whole.

use serde_json::{Map, Value};
use wlmap_schema::GroupKind;

/// Pod spec fields kept: where the pod runs, what it requests, and its restart policy.
const POD_SPEC: &[&str] = &[
    "nodeName",
    "restartPolicy",
    "schedulerName",
    "schedulingGroup",
    "priorityClassName",
    "priority",
    "resources",
    "overhead",
    "containers",
    "initContainers",
    "resourceClaims",
];
/// Container fields kept: its name and what it requests (and an init container's restart
/// policy, which makes it a sidecar).
const CONTAINER: &[&str] = &["name", "resources", "restartPolicy"];
/// Pod status fields kept: phase, conditions, the reason it is in that state, and the DRA
/// claims made for it (what it holds is read from them).
const POD_STATUS: &[&str] = &[
    "phase",
    "reason",
    "conditions",
    "containerStatuses",
    "initContainerStatuses",
    "resourceClaimStatuses",
    "extendedResourceClaimStatus",
];
/// Pod condition fields kept (not their times and messages).
const CONDITION: &[&str] = &["type", "status", "reason"];
/// The fields kept of the condition saying the scheduler could not place the pod
/// (`PodScheduled=False`): its message too, the scheduler's own words on why.
const NOT_SCHEDULED: &[&str] = &["type", "status", "reason", "message"];
/// Container status fields kept: readiness, restarts, and a waiting or ended state.
const CONTAINER_STATUS: &[&str] = &["name", "ready", "restartCount", "state"];
/// Container states kept (`running` holds only its start time).
const CONTAINER_STATE: &[&str] = &["waiting", "terminated"];
/// Owner reference fields kept: what names the owner, and whether it is the controller.
const OWNER_REFERENCE: &[&str] = &["apiVersion", "kind", "name", "uid", "controller"];

/// Trim one object as the live inventory holds it (see [`crate::Index::trim`]); `known` tells
/// whether a kind is known to the definitions in force.
pub(crate) fn trim(obj: &mut Value, known: impl Fn(&GroupKind) -> bool) {
    trim_metadata(obj);
    if is_pod(obj) && controller_kind(obj).is_some_and(|gk| known(&gk)) {
        trim_pod(obj);
    } else if let Some(kind) = dra_kind(obj) {
        trim_dra(obj, &kind);
    }
    compact(obj);
}

/// The kind of a DRA object (`resource.k8s.io`).
fn dra_kind(obj: &Value) -> Option<String> {
    let api_version = obj.get("apiVersion").and_then(Value::as_str)?;
    api_version
        .starts_with("resource.k8s.io/")
        .then(|| obj.get("kind").and_then(Value::as_str).map(str::to_string))
        .flatten()
}

/// Of a DRA object, what the GPUs asked for and held are read from (the engine's `dra`
/// module): a claim's requests and allocation results, a template's requests, a
/// DeviceClass's selectors and extended-resource name, a ResourceSlice's devices by name with
/// their `type` and `profile`. Driver configuration, device status, the pods a claim is
/// reserved for, capacities and counters are most of their bytes and never read.
fn trim_dra(obj: &mut Value, kind: &str) {
    let Some(m) = obj.as_object_mut() else { return };
    match kind {
        "ResourceClaim" => {
            requests_only(object_at(m, "spec"));
            if let Some(status) = object_at(m, "status") {
                keep(status, &["allocation"]);
                let devices = object_at(status, "allocation").and_then(|a| {
                    keep(a, &["devices"]);
                    object_at(a, "devices")
                });
                if let Some(d) = devices {
                    keep(d, &["results"]);
                    each(d, "results", ALLOCATION_RESULT);
                }
            }
        }
        "ResourceClaimTemplate" => requests_only(object_at(m, "spec").and_then(|s| {
            keep(s, &["spec"]);
            object_at(s, "spec")
        })),
        "DeviceClass" => {
            if let Some(spec) = object_at(m, "spec") {
                keep(spec, &["selectors", "extendedResourceName"]);
            }
        }
        "ResourceSlice" => {
            if let Some(spec) = object_at(m, "spec") {
                keep(spec, &["driver", "nodeName", "pool", "devices"]);
                if let Some(pool) = object_at(spec, "pool") {
                    keep(pool, &["name"]);
                }
                each(spec, "devices", &["name", "attributes"]);
                for d in list_items(spec, "devices") {
                    if let Some(a) = object_at(d, "attributes") {
                        keep(a, &["type", "profile"]);
                    }
                }
            }
        }
        _ => {}
    }
}

/// Allocation result fields kept: which request, and which device of which driver's pool.
const ALLOCATION_RESULT: &[&str] = &["request", "driver", "pool", "device", "adminAccess"];

/// A claim spec (`spec` of a ResourceClaim, `spec.spec` of a template) kept to its device
/// requests.
fn requests_only(spec: Option<&mut Map<String, Value>>) {
    if let Some(spec) = spec {
        keep(spec, &["devices"]);
        if let Some(d) = object_at(spec, "devices") {
            keep(d, &["requests"]);
        }
    }
}

/// The map at `key`, when there is one.
fn object_at<'a>(m: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    m.get_mut(key).and_then(Value::as_object_mut)
}

/// The kind of the object's controller, when it has one.
fn controller_kind(obj: &Value) -> Option<GroupKind> {
    let refs = obj.pointer("/metadata/ownerReferences")?.as_array()?;
    let r = refs
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))?;
    let text = |k| r.get(k).and_then(Value::as_str).unwrap_or("");
    Some(GroupKind::from_api_version(
        text("apiVersion"),
        text("kind"),
    ))
}

fn is_pod(obj: &Value) -> bool {
    obj.get("kind").and_then(Value::as_str) == Some("Pod")
        && obj.get("apiVersion").and_then(Value::as_str) == Some("v1")
}

/// What no object needs: the field managers' bookkeeping and kubectl's last-applied copy.
fn trim_metadata(obj: &mut Value) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
        if let Some(a) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            a.remove("kubectl.kubernetes.io/last-applied-configuration");
        }
    }
}

/// Of a pod read only as part of a workload: what attribution and the Pod definition read.
fn trim_pod(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        keep(spec, POD_SPEC);
        for list in ["containers", "initContainers"] {
            each(spec, list, CONTAINER);
        }
    }
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        each(meta, "ownerReferences", OWNER_REFERENCE);
    }
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
        keep(status, POD_STATUS);
        for c in list_items(status, "conditions") {
            let not_scheduled = c.get("type").and_then(Value::as_str) == Some("PodScheduled")
                && c.get("status").and_then(Value::as_str) == Some("False");
            keep(
                c,
                if not_scheduled {
                    NOT_SCHEDULED
                } else {
                    CONDITION
                },
            );
        }
        for list in ["containerStatuses", "initContainerStatuses"] {
            each(status, list, CONTAINER_STATUS);
            for c in list_items(status, list) {
                if let Some(state) = c.get_mut("state").and_then(Value::as_object_mut) {
                    keep(state, CONTAINER_STATE);
                }
            }
        }
    }
}

/// Give back the room maps and lists were grown into while the object was read (a map
/// grows by doubling, and keeps its room when fields are dropped): a trimmed pod held this
/// way takes about half the memory.
fn compact(v: &mut Value) {
    match v {
        Value::Object(m) => {
            // Collecting sizes the new map exactly; `serde_json::Map` has no shrink_to_fit.
            *m = std::mem::take(m).into_iter().collect();
            m.values_mut().for_each(compact);
        }
        Value::Array(a) => {
            a.shrink_to_fit();
            a.iter_mut().for_each(compact);
        }
        _ => {}
    }
}

fn keep(m: &mut Map<String, Value>, fields: &[&str]) {
    m.retain(|k, _| fields.contains(&k.as_str()));
}

fn each(m: &mut Map<String, Value>, list: &str, fields: &[&str]) {
    for o in list_items(m, list) {
        keep(o, fields);
    }
}

/// The maps in the list at `list`.
fn list_items<'a>(
    m: &'a mut Map<String, Value>,
    list: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    m.get_mut(list)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}
