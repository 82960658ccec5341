//! What the controller tells people: one structured log line per happening, and Kubernetes
//! events on the workloads concerned.

use kube::runtime::events::Recorder;
use serde_json::{Value, json};
use wlmap_engine::Object;

/// Log one structured line (JSON) to stderr.
pub fn log(level: &str, msg: &str, fields: Value) {
    let mut line = serde_json::json!({
        "ts": k8s_openapi::jiff::Timestamp::now().to_string(),
        "level": level,
        "msg": msg,
    });
    if let (Some(l), Some(f)) = (line.as_object_mut(), fields.as_object()) {
        for (k, v) in f {
            l.insert(k.clone(), v.clone());
        }
    }
    eprintln!("{line}");
}

/// Publish an event about a workload (failures are logged, never fatal).
pub async fn event(
    recorder: &Recorder,
    root: &Object,
    type_: &str,
    reason: &str,
    action: &str,
    note: &str,
) {
    use kube::runtime::events::{Event, EventType};
    let reference = k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some(root.api_version().to_string()),
        kind: Some(root.kind().to_string()),
        name: Some(root.name().to_string()),
        namespace: Some(root.namespace().to_string()).filter(|n| !n.is_empty()),
        uid: Some(root.uid().to_string()),
        ..Default::default()
    };
    let ev = Event {
        type_: if type_ == "Warning" {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: reason.into(),
        note: Some(note.chars().take(1000).collect()),
        action: action.into(),
        secondary: None,
    };
    if let Err(e) = recorder.publish(&ev, &reference).await {
        log(
            "warning",
            "could not publish an event",
            json!({"error": e.to_string()}),
        );
    }
}
