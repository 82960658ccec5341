//! One workload's gang objects brought to what its definition says: computed from the live
//! inventory, compared with the gang objects that exist, written by server-side apply.

use crate::admission::already_grouped;
use crate::gangs::{Action, desired, plan};
use crate::metrics::Metrics;
use crate::state::{Shared, log};
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, Preconditions};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use wlmap_engine::SchedulerFormat;
use wlmap_inventory::ObjectKey;
use wlmap_kube::Kind;

/// The field manager of every write.
pub const FIELD_MANAGER: &str = "wlmap-controller";

/// The API resource of a format's gang objects.
///
/// ```
/// let r = wlmap_controller::reconcile::gang_resource(wlmap_engine::SchedulerFormat::Native);
/// assert_eq!((r.group.as_str(), r.version.as_str(), r.plural.as_str()), ("scheduling.k8s.io", "v1beta1", "podgroups"));
/// ```
pub fn gang_resource(format: SchedulerFormat) -> Kind {
    let (group, version) = match format {
        SchedulerFormat::Coscheduling => ("scheduling.x-k8s.io", "v1alpha1"),
        SchedulerFormat::Volcano => ("scheduling.volcano.sh", "v1beta1"),
        _ => ("scheduling.k8s.io", "v1beta1"),
    };
    Kind::new(group, version, "PodGroup", "podgroups", true)
}

/// What a reconcile did (the `result` label of its metric).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to do: gone, no gangs, or everything already as wanted.
    Unchanged,
    /// Objects were applied or deleted.
    Applied,
    /// An object of a wanted name belongs to someone else.
    Conflict,
}

/// Reconcile workers: while this replica leads, take workloads off the queue and reconcile
/// each; a failure is retried after a pause.
pub async fn worker(shared: Arc<Shared>) {
    loop {
        let key = shared.next().await;
        if !shared.is_leader() {
            // Followers keep their queue empty: the new leader queues everything.
            continue;
        }
        let result = match reconcile(&shared, &key).await {
            Ok(Outcome::Unchanged) => "unchanged",
            Ok(Outcome::Applied) => "applied",
            Ok(Outcome::Conflict) => "conflict",
            Err(e) => {
                log(
                    "error",
                    "reconcile failed",
                    json!({"workload": key.to_string(), "error": e}),
                );
                let again = shared.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    again.enqueue([key]);
                });
                "error"
            }
        };
        Metrics::count(&shared.metrics.reconciles, "result", result);
    }
}

/// Reconcile one workload.
pub async fn reconcile(shared: &Shared, key: &ObjectKey) -> Result<Outcome, String> {
    let format = shared.opts.format;
    let (want, root, ungrouped) = {
        let feed = shared.read_feed();
        let Some(e) = feed
            .inventory
            .workload(key)
            .filter(|e| e.definition.has_gangs())
        else {
            count_ungrouped(shared, key, 0);
            return Ok(Outcome::Unchanged);
        };
        let w = e.result.as_ref().map_err(|err| err.to_string())?;
        let pods = feed.inventory.index().pods_below(key);
        let want =
            desired(&e.definition, w, &e.object, &pods, format).map_err(|e| e.to_string())?;
        let ungrouped = pods
            .iter()
            .filter(|p| !already_grouped(p, format) && !finished(p))
            .count();
        (want, e.object.clone(), ungrouped)
    };
    if count_ungrouped(shared, key, ungrouped) {
        let note = format!(
            "{ungrouped} pod(s) carry no scheduling group (created while the webhook was unreachable): the scheduler places them one by one"
        );
        log("warning", &note, json!({"workload": key.to_string()}));
        crate::run::event(
            shared,
            &root,
            "Warning",
            "PodsWithoutGroup",
            "Reconcile",
            &note,
        )
        .await;
    }
    let uid = root.uid().to_string();
    let ns = root.namespace().to_string();
    let existing: Vec<Value> = {
        let names: Vec<&str> = want
            .iter()
            .filter_map(|o| o["metadata"]["name"].as_str())
            .collect();
        shared
            .gang_objects
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .concerning(&ns, &names, &uid)
    };
    let api: kube::Api<DynamicObject> = kube::Api::namespaced_with(
        shared.client.clone(),
        &ns,
        &gang_resource(format).api_resource(),
    );
    let mut outcome = Outcome::Unchanged;
    for action in plan(&want, &existing, &uid) {
        match action {
            Action::Apply(obj) => {
                let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
                let params = PatchParams::apply(FIELD_MANAGER).force();
                let out = api
                    .patch(&name, &params, &Patch::Apply(&obj))
                    .await
                    .map_err(|e| format!("apply {name}: {e}"))?;
                remember(shared, out);
                Metrics::count(&shared.metrics.writes, "action", "apply");
                outcome = Outcome::Applied;
            }
            Action::Delete { name, uid } => {
                let params = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid: Some(uid),
                        resource_version: None,
                    }),
                    ..Default::default()
                };
                match api.delete(&name, &params).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
                    Err(e) => return Err(format!("delete {name}: {e}")),
                }
                Metrics::count(&shared.metrics.writes, "action", "delete");
                outcome = Outcome::Applied;
            }
            Action::Conflict { name } => {
                conflict(shared, key, &root, &name).await;
                if outcome == Outcome::Unchanged {
                    outcome = Outcome::Conflict;
                }
            }
        }
    }
    Ok(outcome)
}

/// A pod that has run its course (its group no longer matters).
fn finished(p: &wlmap_engine::Object) -> bool {
    matches!(
        p.json()["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    )
}

/// Record a workload's pods without a group; true when it has some and had none before
/// (the moment to say so).
fn count_ungrouped(shared: &Shared, key: &ObjectKey, n: usize) -> bool {
    let mut m = shared.ungrouped.lock().unwrap_or_else(|e| e.into_inner());
    let before = if n == 0 {
        m.remove(key).unwrap_or(0)
    } else {
        m.insert(key.clone(), n).unwrap_or(0)
    };
    shared
        .metrics
        .pods_ungrouped
        .set(m.values().sum::<usize>() as i64);
    n > 0 && before == 0
}

/// Keep what the server answered, so the next reconcile compares with it before the watch
/// brings it.
fn remember(shared: &Shared, out: DynamicObject) {
    if let Ok(v) = serde_json::to_value(out) {
        shared
            .gang_objects
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(v);
    }
}

/// Say once, in an event on the workload and in the log, that a gang object of the wanted
/// name belongs to someone else.
async fn conflict(shared: &Shared, key: &ObjectKey, root: &wlmap_engine::Object, name: &str) {
    let first = shared
        .conflicts
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert((key.clone(), name.to_string()));
    if !first {
        return;
    }
    let note = format!(
        "{} {name} exists and was not written by wlmap; it is left alone (a native integration or another tool takes precedence)",
        gang_resource(shared.opts.format).kind
    );
    log("warning", &note, json!({"workload": key.to_string()}));
    crate::run::event(
        shared,
        root,
        "Warning",
        "GangObjectConflict",
        "Reconcile",
        &note,
    )
    .await;
}
