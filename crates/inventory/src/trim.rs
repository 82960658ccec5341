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
    }
    compact(obj);
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
