//! Reconciling: take a workload off the queue while this replica leads, [`decide`] what its
//! gang objects need from what the controller holds, and carry the writes out (server-side
//! apply, deletes preconditioned on uid), retrying failures with a per-workload backoff.

use crate::error::Error;
use crate::gangs::{Action, Decision, GangStore, decide, is_ours, kueue_runs_itself, owned_by};
use crate::metrics::Metrics;
use crate::options::FIELD_MANAGER;
use crate::queue::Backoff;
use crate::report::{event, log};
use crate::state::Shared;
use crate::state::{locked, reading, writing};
use futures::{Stream, StreamExt};
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, Preconditions};
use serde_json::{Value, json};
use std::sync::Arc;
use wlmap_engine::{GangKind, Object, SchedulerFormat};
use wlmap_inventory::ObjectKey;

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

impl Outcome {
    /// The label of the reconciles metric.
    fn label(self) -> &'static str {
        match self {
            Outcome::Unchanged => "unchanged",
            Outcome::Applied => "applied",
            Outcome::Conflict => "conflict",
        }
    }

    /// Two outcomes as one: any write counts, then any conflict.
    fn and(self, other: Outcome) -> Outcome {
        match (self, other) {
            (Outcome::Applied, _) | (_, Outcome::Applied) => Outcome::Applied,
            (Outcome::Conflict, _) | (_, Outcome::Conflict) => Outcome::Conflict,
            _ => Outcome::Unchanged,
        }
    }
}

/// The reconcile worker: while this replica leads, take due workloads off the queue and
/// reconcile each; a failure is retried after the workload's backoff.
pub async fn worker(shared: Arc<Shared>, mut due: impl Stream<Item = ObjectKey> + Unpin) {
    let mut backoff = Backoff::default();
    while let Some(key) = due.next().await {
        if !shared.is_leader() {
            // Followers keep their queue empty: the new leader queues everything.
            continue;
        }
        let result = match reconcile(&shared, &key).await {
            Ok(outcome) => {
                backoff.succeeded(&key);
                outcome.label()
            }
            Err(e) => {
                let pause = backoff.failed(&key, e.is_transient());
                log(
                    "error",
                    "reconcile failed",
                    json!({"workload": key.to_string(), "error": e.to_string(),
                        "retryInSeconds": pause.as_secs_f64()}),
                );
                shared.queue.after(key, pause);
                "error"
            }
        };
        Metrics::count(&shared.metrics.reconciles, "result", result);
    }
}

/// Reconcile one workload.
pub async fn reconcile(shared: &Shared, key: &ObjectKey) -> Result<Outcome, Error> {
    let format = shared.opts.format;
    // Events taken in the moment this replica became leader may have been put off.
    shared.catch_up();
    let decided = {
        let feed = shared.read_feed();
        match feed.inventory.workload(key) {
            None => None,
            Some(e) => {
                let pods = feed.inventory.index().pods_below(key);
                let kueue = (format == SchedulerFormat::Kueue)
                    .then(|| kueue_runs_itself(&e.object, &shared.opts.kueue_frameworks))
                    .flatten();
                let d = match kueue {
                    Some(why) => Decision {
                        stepped_aside: Some(why),
                        ..Decision::default()
                    },
                    None => decide(e, &pods, &reading(&shared.gang_objects), format)?,
                };
                Some((d, e.object.clone()))
            }
        }
    };
    let Some((
        Decision {
            writes,
            ungrouped,
            stepped_aside,
        },
        root,
    )) = decided
    else {
        count_ungrouped(shared, key, 0);
        return Ok(Outcome::Unchanged);
    };
    if let Some(why) = &stepped_aside {
        step_aside(shared, key, &root, why).await;
    }
    if count_ungrouped(shared, key, ungrouped) {
        let note = format!(
            "{ungrouped} pod(s) carry no scheduling group (created while the webhook was unreachable): the scheduler places them one by one, and their group's minimum is lowered by them so that the others do not wait for them"
        );
        log("warning", &note, json!({"workload": key.to_string()}));
        event(
            &shared.recorder,
            &root,
            "Warning",
            "PodsWithoutGroup",
            "Reconcile",
            &note,
        )
        .await;
    }
    if being_deleted(root.json()) {
        // Its gang objects are owned by it and go with it (the garbage collector), and its
        // namespace may be terminating, where nothing can be created.
        return Ok(Outcome::Unchanged);
    }
    let mut outcome = Outcome::Unchanged;
    for (kind, action) in writes {
        outcome = outcome.and(act(shared, key, &root, &kind, action).await?);
    }
    Ok(outcome)
}

/// True when the object has been asked to go (`metadata.deletionTimestamp`).
fn being_deleted(o: &Value) -> bool {
    !o["metadata"]["deletionTimestamp"].is_null()
}

/// True when the API server refused a create because the namespace is being deleted
/// (the NamespaceLifecycle admission plugin's `NamespaceTerminating` cause): the namespace
/// takes the workload with it, so there is nothing to write and nothing to retry.
fn namespace_terminating(s: &kube::core::Status) -> bool {
    s.code == 403
        && s.details
            .as_ref()
            .is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating"))
}

/// Carry out one action on a gang object of this kind.
async fn act(
    shared: &Shared,
    key: &ObjectKey,
    root: &Object,
    kind: &GangKind,
    action: Action,
) -> Result<Outcome, Error> {
    let api: kube::Api<DynamicObject> = kube::Api::namespaced_with(
        shared.client.clone(),
        root.namespace(),
        &crate::gangs::kind(kind).api_resource(),
    );
    match action {
        Action::Apply(obj) => apply(shared, &api, &obj, root.uid()).await,
        Action::Delete { name, uid } => {
            delete(shared, &api, kind.kind, &name, &uid).await?;
            Ok(Outcome::Applied)
        }
        Action::Conflict { name } => {
            conflict(shared, key, root, kind.kind, &name).await;
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
) -> Result<Outcome, Error> {
    let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
    let what = format!("apply {} {name}", obj["kind"].as_str().unwrap_or(""));
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let out = match api.patch(&name, &params, &Patch::Apply(obj)).await {
        Err(kube::Error::Api(s)) if namespace_terminating(&s) => return Ok(Outcome::Unchanged),
        Err(kube::Error::Api(s)) if s.code == 422 => {
            let Some(old) = ours_to_replace(&reading(&shared.gang_objects), obj, workload_uid)
            else {
                return Err(Error::api(what)(kube::Error::Api(s)));
            };
            log(
                "info",
                "replacing a gang object the server will not change in place",
                json!({"name": name, "kind": obj["kind"], "error": s.message}),
            );
            let kind = obj["kind"].as_str().unwrap_or("");
            delete(shared, api, kind, &name, &old).await?;
            api.patch(&name, &params, &Patch::Apply(obj)).await
        }
        other => other,
    }
    .map_err(Error::api(what))?;
    if let Ok(v) = serde_json::to_value(out) {
        // Kept, so the next reconcile compares with it before the watch brings it.
        writing(&shared.gang_objects).insert(v);
    }
    Metrics::count(&shared.metrics.writes, "action", "apply");
    Ok(Outcome::Applied)
}

/// The uid of the object of `obj`'s kind and name when wlmap wrote it for this workload.
fn ours_to_replace(store: &GangStore, obj: &Value, workload_uid: &str) -> Option<String> {
    let ns = obj["metadata"]["namespace"].as_str().unwrap_or("");
    let name = obj["metadata"]["name"].as_str()?;
    store
        .concerning(ns, &[name], workload_uid)
        .into_iter()
        .find(|e| e["kind"] == obj["kind"] && e["metadata"]["name"] == name)
        .filter(|e| is_ours(e) && owned_by(e, workload_uid))
        .and_then(|e| e["metadata"]["uid"].as_str().map(String::from))
}

/// Delete one of our objects, on the condition that it is still the one of this uid.
async fn delete(
    shared: &Shared,
    api: &kube::Api<DynamicObject>,
    kind: &str,
    name: &str,
    uid: &str,
) -> Result<(), Error> {
    let params = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid.to_string()),
            resource_version: None,
        }),
        ..Default::default()
    };
    match api.delete(name, &params).await {
        Ok(_) => {}
        // Gone already, or another object of that name now: nothing of ours to delete.
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
        Err(e) => return Err(Error::api(format!("delete {kind} {name}"))(e)),
    }
    Metrics::count(&shared.metrics.writes, "action", "delete");
    Ok(())
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

/// Say once, in an event on the workload and in the log, that something else gangs it and
/// wlmap writes nothing for it.
async fn step_aside(shared: &Shared, key: &ObjectKey, root: &Object, why: &str) {
    let first = locked(&shared.conflicts).insert((key.clone(), "stepped-aside".to_string()));
    if !first {
        return;
    }
    log("info", why, json!({"workload": key.to_string()}));
    event(
        &shared.recorder,
        root,
        "Normal",
        "GangedElsewhere",
        "Reconcile",
        why,
    )
    .await;
}

/// Say once, in an event on the workload and in the log, that a gang object of the wanted
/// name belongs to someone else.
async fn conflict(shared: &Shared, key: &ObjectKey, root: &Object, kind: &str, name: &str) {
    let first = locked(&shared.conflicts).insert((key.clone(), format!("{kind}/{name}")));
    if !first {
        return;
    }
    let note = format!(
        "{kind} {name} exists and was not written by wlmap; it is left alone (a native integration or another tool takes precedence)"
    );
    log("warning", &note, json!({"workload": key.to_string()}));
    event(
        &shared.recorder,
        root,
        "Warning",
        "GangObjectConflict",
        "Reconcile",
        &note,
    )
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The API server's answer to a PodGroup created in a namespace being deleted
    /// (kube-apiserver v1.37.2 of the testbed, a namespace held Terminating by a finalizer,
    /// `kubectl create --raw ... -v=9`).
    const TERMINATING: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"podgroups.scheduling.k8s.io \"x\" is forbidden: unable to create new content in namespace term-probe because it is being terminated","reason":"Forbidden","details":{"name":"x","group":"scheduling.k8s.io","kind":"podgroups","causes":[{"reason":"NamespaceTerminating","message":"namespace term-probe is being terminated","field":"metadata.namespace"}]},"code":403}"#;

    #[test]
    fn a_create_refused_in_a_terminating_namespace_is_nothing_to_retry() {
        let s: kube::core::Status = serde_json::from_str(TERMINATING).expect("a Status");
        assert!(namespace_terminating(&s));
        // Forbidden for another reason (RBAC): an error, retried and logged.
        let mut rbac = s.clone();
        rbac.details = None;
        assert!(!namespace_terminating(&rbac));
    }

    #[test]
    fn a_workload_with_a_deletion_timestamp_is_being_deleted() {
        assert!(being_deleted(
            &json!({"metadata": {"deletionTimestamp": "2026-12-06T04:00:00Z"}})
        ));
        assert!(!being_deleted(&json!({"metadata": {"name": "train"}})));
    }
}
