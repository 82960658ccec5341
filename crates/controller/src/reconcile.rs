//! One workload's gang objects brought to what its definition says: computed from the live
//! inventory, compared with the gang objects that exist, written by server-side apply.

use crate::admission::already_grouped;
use crate::gangs::{Action, desired, plan};
use crate::metrics::Metrics;
use crate::state::{Shared, log};
use crate::state::{locked, reading, writing};
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, Preconditions};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use wlmap_engine::SchedulerFormat;
use wlmap_inventory::ObjectKey;
use wlmap_kube::Kind;

/// The field manager of every write.
pub const FIELD_MANAGER: &str = "wlmap-controller";

/// The kinds of a format's gang objects, parents before children (the order they are
/// written in; deletions go the other way).
///
/// ```
/// use wlmap_engine::SchedulerFormat;
/// let r = &wlmap_controller::reconcile::gang_kinds(SchedulerFormat::Native)[0];
/// assert_eq!((r.group.as_str(), r.version.as_str(), r.plural.as_str()), ("scheduling.k8s.io", "v1beta1", "podgroups"));
/// let kinds: Vec<String> = wlmap_controller::reconcile::gang_kinds(SchedulerFormat::NativeComposite)
///     .into_iter().map(|k| k.kind).collect();
/// assert_eq!(kinds, ["Workload", "CompositePodGroup", "PodGroup"]);
/// ```
pub fn gang_kinds(format: SchedulerFormat) -> Vec<Kind> {
    let pod_group = |group, version| Kind::new(group, version, "PodGroup", "podgroups", true);
    match format {
        SchedulerFormat::Coscheduling => vec![pod_group("scheduling.x-k8s.io", "v1alpha1")],
        SchedulerFormat::Volcano => vec![pod_group("scheduling.volcano.sh", "v1beta1")],
        SchedulerFormat::NativeComposite => vec![
            Kind::new(
                "scheduling.k8s.io",
                "v1beta1",
                "Workload",
                "workloads",
                true,
            ),
            Kind::new(
                "scheduling.k8s.io",
                "v1alpha3",
                "CompositePodGroup",
                "compositepodgroups",
                true,
            ),
            pod_group("scheduling.k8s.io", "v1beta1"),
        ],
        _ => vec![pod_group("scheduling.k8s.io", "v1beta1")],
    }
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
            .filter(|p| want.members.contains(p.name()))
            .filter(|p| !already_grouped(p, format) && !finished(p))
            .count();
        (want.objects, e.object.clone(), ungrouped)
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
        reading(&shared.gang_objects).concerning(&ns, &names, &uid)
    };
    let mut outcome = Outcome::Unchanged;
    for (kind, action) in plan_all(format, &want, &existing, &uid) {
        let done = act(shared, key, &root, &kind, action).await?;
        outcome = match (outcome, done) {
            (_, Outcome::Applied) | (Outcome::Applied, _) => Outcome::Applied,
            (_, Outcome::Conflict) | (Outcome::Conflict, _) => Outcome::Conflict,
            _ => Outcome::Unchanged,
        };
    }
    Ok(outcome)
}

/// Each kind's plan, in the order to carry it out: creations and changes parents first (a
/// child may name its parent), deletions children first.
fn plan_all(
    format: SchedulerFormat,
    want: &[Value],
    existing: &[Value],
    uid: &str,
) -> Vec<(Kind, Action)> {
    let of_kind = |objs: &[Value], k: &Kind| -> Vec<Value> {
        objs.iter()
            .filter(|o| o["kind"] == k.kind.as_str())
            .cloned()
            .collect()
    };
    let mut writes = Vec::new();
    let mut deletes = Vec::new();
    for k in gang_kinds(format) {
        for a in plan(&of_kind(want, &k), &of_kind(existing, &k), uid) {
            match a {
                Action::Delete { .. } => deletes.push((k.clone(), a)),
                _ => writes.push((k.clone(), a)),
            }
        }
    }
    deletes.reverse();
    writes.extend(deletes);
    writes
}

/// Carry out one action on a gang object of this kind.
async fn act(
    shared: &Shared,
    key: &ObjectKey,
    root: &wlmap_engine::Object,
    kind: &Kind,
    action: Action,
) -> Result<Outcome, String> {
    let api: kube::Api<DynamicObject> = kube::Api::namespaced_with(
        shared.client.clone(),
        root.namespace(),
        &kind.api_resource(),
    );
    match action {
        Action::Apply(obj) => {
            apply(shared, &api, &obj, root.uid()).await?;
            Ok(Outcome::Applied)
        }
        Action::Delete { name, uid } => {
            delete(shared, &api, &name, &uid).await?;
            Ok(Outcome::Applied)
        }
        Action::Conflict { name } => {
            conflict(shared, key, root, &kind.kind, &name).await;
            Ok(Outcome::Conflict)
        }
    }
}

/// Server-side apply an object. One of ours that the server refuses to change (a field it
/// holds immutable, such as a CompositePodGroup's `minGroupCount` when a workload gains a
/// role) is deleted and created anew: the pods name their groups, never the object's uid.
async fn apply(
    shared: &Shared,
    api: &kube::Api<DynamicObject>,
    obj: &Value,
    workload_uid: &str,
) -> Result<(), String> {
    let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let out = match api.patch(&name, &params, &Patch::Apply(obj)).await {
        Err(kube::Error::Api(s)) if s.code == 422 => {
            let Some(old) = ours_to_replace(shared, obj, workload_uid) else {
                return Err(format!("apply {name}: {}", s.message));
            };
            log(
                "info",
                "replacing a gang object the server will not change in place",
                json!({"name": name, "kind": obj["kind"], "error": s.message}),
            );
            delete(shared, api, &name, &old).await?;
            api.patch(&name, &params, &Patch::Apply(obj)).await
        }
        other => other,
    }
    .map_err(|e| format!("apply {name}: {e}"))?;
    remember(shared, out);
    Metrics::count(&shared.metrics.writes, "action", "apply");
    Ok(())
}

/// The uid of the object of `obj`'s kind and name when wlmap wrote it for this workload.
fn ours_to_replace(shared: &Shared, obj: &Value, workload_uid: &str) -> Option<String> {
    let store = reading(&shared.gang_objects);
    let ns = obj["metadata"]["namespace"].as_str().unwrap_or("");
    let name = obj["metadata"]["name"].as_str()?;
    store
        .concerning(ns, &[name], workload_uid)
        .into_iter()
        .find(|e| e["kind"] == obj["kind"] && e["metadata"]["name"] == name)
        .filter(|e| crate::gangs::is_ours(e) && crate::gangs::owned_by(e, workload_uid))
        .and_then(|e| e["metadata"]["uid"].as_str().map(String::from))
}

/// Delete one of our objects, on the condition that it is still the one of this uid.
async fn delete(
    shared: &Shared,
    api: &kube::Api<DynamicObject>,
    name: &str,
    uid: &str,
) -> Result<(), String> {
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid.to_string()),
            resource_version: None,
        }),
        ..Default::default()
    };
    match api.delete(name, &params).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
        Err(e) => return Err(format!("delete {name}: {e}")),
    }
    Metrics::count(&shared.metrics.writes, "action", "delete");
    Ok(())
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
    let mut m = locked(&shared.ungrouped);
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
        writing(&shared.gang_objects).insert(v);
    }
}

/// Say once, in an event on the workload and in the log, that a gang object of the wanted
/// name belongs to someone else.
async fn conflict(
    shared: &Shared,
    key: &ObjectKey,
    root: &wlmap_engine::Object,
    kind: &str,
    name: &str,
) {
    let first = locked(&shared.conflicts).insert((key.clone(), format!("{kind}/{name}")));
    if !first {
        return;
    }
    let note = format!(
        "{kind} {name} exists and was not written by wlmap; it is left alone (a native integration or another tool takes precedence)"
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
