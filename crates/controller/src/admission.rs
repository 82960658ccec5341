//! The pod admission webhook's decisions: given an `AdmissionReview` of a Pod CREATE and the
//! pod's placement, the review's answer. It never refuses a pod: one it cannot place is let
//! through unchanged, and the caller counts and reports it.

use base64::Engine;
use serde_json::{Value, json};
use wlmap_engine::{Object, SchedulerFormat};

/// The pod of a review, with the request's namespace (a pod being created may not carry its
/// own yet); `None` when the review is not a Pod CREATE.
///
/// ```
/// let review = serde_json::json!({"request": {"uid": "r1", "namespace": "ml", "operation": "CREATE",
///     "kind": {"group": "", "version": "v1", "kind": "Pod"},
///     "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "p-"}}}});
/// let pod = wlmap_controller::admission::pod_of(&review).unwrap();
/// assert_eq!(pod.namespace(), "ml");
/// ```
pub fn pod_of(review: &Value) -> Option<Object> {
    let req = review.get("request")?;
    if req["operation"] != "CREATE" || req["kind"]["kind"] != "Pod" || req["kind"]["group"] != "" {
        return None;
    }
    let mut pod = req.get("object")?.clone();
    if let Some(ns) = req["namespace"].as_str()
        && let Some(m) = pod.get_mut("metadata").and_then(Value::as_object_mut)
        && !m.contains_key("namespace")
    {
        m.insert("namespace".into(), Value::from(ns));
    }
    Some(Object::new(pod))
}

/// True when the pod already names its group the way this format reads it (its operator or
/// a native integration put it there): such a pod is left as it is.
///
/// ```
/// use wlmap_engine::{Object, SchedulerFormat};
/// let pod = Object::new(serde_json::json!({"spec": {"schedulingGroup": {"podGroupName": "g"}}}));
/// assert!(wlmap_controller::admission::already_grouped(&pod, SchedulerFormat::Native));
/// assert!(!wlmap_controller::admission::already_grouped(&pod, SchedulerFormat::Volcano));
/// ```
pub fn already_grouped(pod: &Object, format: SchedulerFormat) -> bool {
    let j = pod.json();
    match format {
        SchedulerFormat::Native => !j["spec"]["schedulingGroup"].is_null(),
        SchedulerFormat::Coscheduling => {
            !j["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"].is_null()
        }
        SchedulerFormat::Volcano => {
            !j["metadata"]["annotations"]["scheduling.k8s.io/group-name"].is_null()
        }
        _ => false,
    }
}

/// The JSON patch that merges `tags` (`labels`, `annotations`, `spec` fields) into the pod.
///
/// ```
/// let pod = serde_json::json!({"metadata": {}, "spec": {}});
/// let p = wlmap_controller::admission::patch(&pod, &serde_json::json!({"labels": {"a/b": "g"}}));
/// assert_eq!(p, serde_json::json!([{"op": "add", "path": "/metadata/labels", "value": {}},
///     {"op": "add", "path": "/metadata/labels/a~1b", "value": "g"}]));
/// ```
pub fn patch(pod: &Value, tags: &Value) -> Value {
    let mut ops = Vec::new();
    let mut merge = |parent: &str, current: &Value, fields: &Value| {
        let Some(fields) = fields.as_object() else {
            return;
        };
        if current.is_null() {
            ops.push(json!({"op": "add", "path": parent, "value": {}}));
        }
        for (k, v) in fields {
            let key = k.replace('~', "~0").replace('/', "~1");
            ops.push(json!({"op": "add", "path": format!("{parent}/{key}"), "value": v}));
        }
    };
    merge(
        "/metadata/labels",
        &pod["metadata"]["labels"],
        &tags["labels"],
    );
    merge(
        "/metadata/annotations",
        &pod["metadata"]["annotations"],
        &tags["annotations"],
    );
    merge("/spec", &pod["spec"], &tags["spec"]);
    Value::Array(ops)
}

/// The answer to a review: allowed, with the patch when there is one.
///
/// ```
/// let review = serde_json::json!({"apiVersion": "admission.k8s.io/v1", "request": {"uid": "r1"}});
/// let a = wlmap_controller::admission::answer(&review, None, None);
/// assert_eq!(a["response"], serde_json::json!({"uid": "r1", "allowed": true}));
/// ```
pub fn answer(review: &Value, patch: Option<&Value>, warning: Option<&str>) -> Value {
    let mut response = json!({"uid": review["request"]["uid"], "allowed": true});
    if let Some(p) = patch {
        let bytes = serde_json::to_vec(p).unwrap_or_default();
        response["patchType"] = json!("JSONPatch");
        response["patch"] = json!(base64::engine::general_purpose::STANDARD.encode(bytes));
    }
    if let Some(w) = warning {
        response["warnings"] = json!([w]);
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}
