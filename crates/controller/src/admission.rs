//! The pod admission webhook's decisions: given an `AdmissionReview` of a Pod CREATE and the
//! pod's placement, the review's answer. It never refuses a pod: one it cannot place is let
//! through unchanged, and the caller counts and reports it.

use crate::error::Invalid;
use base64::Engine;
use serde_json::{Value, json};
use wlmap_engine::Object;

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

/// The answer refusing a review, with the message `kubectl` shows.
///
/// ```
/// let review = serde_json::json!({"request": {"uid": "r1"}});
/// let a = wlmap_controller::admission::refusal(&review, "no");
/// assert_eq!(a["response"]["allowed"], false);
/// assert_eq!(a["response"]["status"]["message"], "no");
/// ```
pub fn refusal(review: &Value, message: &str) -> Value {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": {
        "uid": review["request"]["uid"], "allowed": false,
        "status": {"code": 422, "reason": "Invalid", "message": message}}})
}

fn root_kind(karta: &Value) -> (String, String, String) {
    let k = &karta["spec"]["structureDefinition"]["rootComponent"]["kind"];
    let text = |f: &str| k[f].as_str().unwrap_or("").to_string();
    (text("group"), text("version"), text("kind"))
}

fn gangs(karta: &Value) -> bool {
    let g = &karta["spec"]["optimizationInstructions"]["gangScheduling"];
    !g["podGroup"].is_null() || g["podGroups"].as_array().is_some_and(|a| !a.is_empty())
}

/// Judge a Karta being created or updated: what `wlmap validate` refuses (decoding,
/// structure, expressions), a second Karta with gang instructions for a root kind that
/// already has one (KAI Scheduler's pod-grouper drops both when two match), and a change of
/// an existing Karta's root kind. An update that leaves the spec as it was (labels, status)
/// is always allowed. `others` are the Kartas that exist, by name. Allowed, it may carry a
/// warning for the client (unknown fields, ignored as the format's Go implementation does).
///
/// ```
/// use serde_json::json;
/// let karta = |name: &str, kind: &str| json!({"apiVersion": "run.ai/v1alpha1", "kind": "Karta",
///     "metadata": {"name": name}, "spec": {"structureDefinition": {"rootComponent": {"name": "r",
///         "kind": {"group": "example.io", "version": "v1", "kind": kind},
///         "specDefinition": {"podTemplateSpecPath": ".spec.template"},
///         "statusDefinition": {"phaseDefinition": {"path": ".status.phase"},
///             "statusMappings": {"running": [{"byPhase": "Running"}]}}}},
///         "optimizationInstructions": {"gangScheduling": {"podGroup": {"name": "gang"}}}}});
/// let review = |obj: serde_json::Value, old: serde_json::Value| json!({"request": {"uid": "u",
///     "operation": if old.is_null() { "CREATE" } else { "UPDATE" },
///     "kind": {"group": "run.ai", "version": "v1alpha1", "kind": "Karta"}, "object": obj, "oldObject": old}});
/// let others = std::collections::BTreeMap::from([("a".to_string(), karta("a", "Widget"))]);
/// use wlmap_controller::admission::judge_karta;
/// assert_eq!(judge_karta(&review(karta("b", "Gadget"), serde_json::Value::Null), &others), Ok(None));
/// let mut odd = karta("c", "Gizmo");
/// odd["spec"]["structureDefinition"]["rootComponent"]["ownerName"] = json!("x");
/// let warned = judge_karta(&review(odd, serde_json::Value::Null), &others).unwrap().unwrap();
/// assert!(warned.contains("spec.structureDefinition.rootComponent.ownerName"));
/// let twice = judge_karta(&review(karta("b", "Widget"), serde_json::Value::Null), &others);
/// assert!(twice.unwrap_err().0.contains("already"));
/// let moved = judge_karta(&review(karta("a", "Gadget"), karta("a", "Widget")), &others);
/// assert!(moved.unwrap_err().0.contains("root kind"));
/// ```
pub fn judge_karta(
    review: &Value,
    others: &std::collections::BTreeMap<String, Value>,
) -> Result<Option<String>, Invalid> {
    let req = &review["request"];
    let obj = &req["object"];
    let old = &req["oldObject"];
    if req["operation"] == "UPDATE" && obj["spec"] == old["spec"] {
        return Ok(None);
    }
    let name = obj["metadata"]["name"].as_str().unwrap_or("?");
    // Read as the format's Go implementation reads it: an unknown field (which the API
    // server keeps only under a CRD other than wlmap's) is let through with a warning.
    let decoded =
        wlmap_schema::decode_compatible(&obj.to_string(), &format!("kartas.run.ai/{name}"))
            .map_err(|e| Invalid(e.to_string()))?;
    let warning = (!decoded.ignored.is_empty()).then(|| {
        let paths: Vec<&str> = decoded.ignored.iter().map(|i| i.path.as_str()).collect();
        format!(
            "unknown fields ignored, as the format's Go implementation ignores them: {}",
            paths.join(", ")
        )
    });
    let karta = decoded
        .kartas
        .into_iter()
        .next()
        .ok_or_else(|| Invalid("no definition".into()))?;
    // The API server hands over an object, not the user's file: the message names each
    // component and field and where in its expression the error is; the file's own lines are
    // for `wlmap validate`.
    wlmap_engine::Definition::compile(karta, wlmap_engine::Origin::Cluster).map_err(|e| {
        Invalid(format!(
            "{e} (`wlmap validate FILE` shows the line and column in the file)"
        ))
    })?;
    let kind = root_kind(obj);
    if req["operation"] == "UPDATE" && !old.is_null() && root_kind(old) != kind {
        let was = root_kind(old);
        return Err(Invalid(format!(
            "the root kind of a Karta cannot change (was {}/{} {}, now {}/{} {}): create another Karta",
            was.0, was.1, was.2, kind.0, kind.1, kind.2
        )));
    }
    if gangs(obj) {
        let clash = others
            .iter()
            .find(|(n, k)| n.as_str() != name && root_kind(k) == kind && gangs(k));
        if let Some((other, _)) = clash {
            return Err(Invalid(format!(
                "Karta {other} already gives gang instructions for {}/{} {}: KAI Scheduler drops both when two match; change that one instead",
                kind.0, kind.1, kind.2
            )));
        }
    }
    Ok(warning)
}
