//! The watches that keep the controller's view: the workloads (one watch per kind the
//! definitions need, restarted when those kinds change), the gang objects that exist, the
//! `kartas.run.ai` definitions (and what the controller keeps on each), and the CRDs that tell
//! which kinds are served.

use crate::error::Error;
use crate::options::FIELD_MANAGER;
use crate::report::log;
use crate::state::Shared;
use crate::state::{reading, writing};
use futures::StreamExt;
use kube::api::{DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use wlmap_engine::Object;
use wlmap_inventory::{Entry, Fed, Feed, ObjectKey};
use wlmap_kube::live::{Change, DraGate, Relists, Said, Step};
use wlmap_kube::{Kind, WatchEvent};
use wlmap_schema::{GroupKind, GroupVersionKind};

fn karta_resource() -> kube::discovery::ApiResource {
    wlmap_kube::Cluster::karta_kind().api_resource()
}

pub(crate) async fn list_kartas(client: &kube::Client) -> BTreeMap<String, Value> {
    let api: kube::Api<DynamicObject> = kube::Api::all_with(client.clone(), &karta_resource());
    match api.list(&Default::default()).await {
        Ok(list) => list
            .items
            .into_iter()
            .filter_map(|k| serde_json::to_value(k).ok())
            .map(|v| (v["metadata"]["name"].as_str().unwrap_or("").to_string(), v))
            .collect(),
        Err(kube::Error::Api(s)) if s.code == 404 => {
            log(
                "info",
                "the kartas.run.ai CRD is not installed: the catalog's definitions only",
                json!({}),
            );
            BTreeMap::new()
        }
        Err(e) => {
            log(
                "warning",
                "cluster definitions not read; using the catalog",
                json!({"error": e.to_string()}),
            );
            BTreeMap::new()
        }
    }
}

pub(crate) fn registry_of(kartas: &BTreeMap<String, Value>) -> wlmap_engine::Registry {
    let items: Vec<Value> = kartas
        .values()
        .map(|v| {
            let mut v = v.clone();
            v["apiVersion"] = json!("run.ai/v1alpha1");
            v["kind"] = json!("Karta");
            v
        })
        .collect();
    let (reg, warnings) = crate::definitions::registry(&items);
    for w in warnings {
        log("warning", &w, json!({}));
    }
    reg
}

/// Follow `kartas.run.ai`: a definition added, changed or removed takes effect at once.
pub(crate) async fn watch_kartas(
    shared: Arc<Shared>,
    client: kube::Client,
    mut kartas: BTreeMap<String, Value>,
) {
    let kind = wlmap_kube::Cluster::karta_kind();
    let spec_of = |m: &BTreeMap<String, Value>| -> BTreeMap<String, String> {
        m.iter()
            .map(|(k, v)| (k.clone(), v["spec"].to_string()))
            .collect()
    };
    let mut stream = wlmap_kube::watch_stream(&client, "", &[kind], None);
    let mut relists = Relists::default();
    let name_of = |v: &Value| v["metadata"]["name"].as_str().unwrap_or("").to_string();
    while let Some(ev) = stream.next().await {
        let before = spec_of(&kartas);
        match relists.on(ev) {
            None => continue,
            Some(Change::Put(_, v)) => {
                if shared.is_leader() {
                    tokio::spawn(keep_karta(shared.clone(), v.clone()));
                }
                kartas.insert(name_of(&v), v);
            }
            Some(Change::Gone(_, v)) => {
                kartas.remove(&name_of(&v));
            }
            Some(Change::Listed(_, listed)) => {
                kartas = listed.into_iter().map(|v| (name_of(&v), v)).collect();
                *writing(&shared.kartas) = kartas.clone();
                keep_kartas(&shared);
            }
            Some(Change::Failing(e)) => {
                warn("watch of kartas.run.ai failed (retrying)", &e);
            }
        }
        *writing(&shared.kartas) = kartas.clone();
        if spec_of(&kartas) != before {
            log(
                "info",
                "definitions changed",
                json!({"kartas": kartas.keys().collect::<Vec<_>>()}),
            );
            *writing(&shared.registry) = registry_of(&kartas);
            shared.definitions_changed.notify_one();
        }
    }
}

/// Keep every Karta's labels and conditions (when this replica leads).
pub fn keep_kartas(shared: &Arc<Shared>) {
    if !shared.is_leader() {
        return;
    }
    let all: Vec<Value> = reading(&shared.kartas).values().cloned().collect();
    for k in all {
        tokio::spawn(keep_karta(shared.clone(), k));
    }
}

/// Keep one Karta's lookup labels (server-side apply of the labels alone) and its
/// conditions (the status subresource); nothing is written when both are as they should be.
async fn keep_karta(shared: Arc<Shared>, k: Value) {
    let name = k["metadata"]["name"].as_str().unwrap_or("").to_string();
    let root = &k["spec"]["structureDefinition"]["rootComponent"]["kind"];
    let text = |f: &str| root[f].as_str().unwrap_or("").to_string();
    let gvk = kube::api::GroupVersionKind::gvk(&text("group"), &text("version"), &text("kind"));
    let pinned = kube::discovery::pinned_kind(&shared.client, &gvk).await;
    let schema = match &pinned {
        Ok((ar, _)) if !ar.group.is_empty() => {
            schema_findings(&shared, &k, &ar.plural, &ar.group).await
        }
        _ => None,
    };
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let u = crate::definitions::upkeep(&k, pinned.is_ok(), schema, &now);
    let api: kube::Api<DynamicObject> =
        kube::Api::all_with(shared.client.clone(), &karta_resource());
    if let Some(labels) = u.labels {
        let patch = json!({"apiVersion": "run.ai/v1alpha1", "kind": "Karta",
            "metadata": {"name": name, "labels": labels}});
        let params = PatchParams::apply(FIELD_MANAGER).force();
        if let Err(e) = api.patch(&name, &params, &Patch::Apply(&patch)).await {
            log(
                "warning",
                "could not label a Karta",
                json!({"karta": name, "error": e.to_string()}),
            );
        }
    }
    if let Some(conditions) = u.conditions {
        let patch = json!({"status": {"conditions": conditions}});
        if let Err(e) = api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            log(
                "warning",
                "could not write a Karta's status",
                json!({"karta": name, "error": e.to_string()}),
            );
        }
    }
}

/// What `wlmap check` finds of a Karta against its kind's CRD (`PLURAL.GROUP`); None when
/// there is no such CRD or the Karta does not decode (its `Valid` condition says why).
async fn schema_findings(
    shared: &Shared,
    k: &Value,
    plural: &str,
    group: &str,
) -> crate::definitions::SchemaFindings {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let api: kube::Api<CustomResourceDefinition> = kube::Api::all(shared.client.clone());
    let crd = api.get_opt(&format!("{plural}.{group}")).await.ok()??;
    let crd = wlmap_author::Crd::from_value(&serde_json::to_value(crd).ok()?).ok()?;
    let karta = wlmap_schema::decode_compatible(&k.to_string(), "karta")
        .ok()?
        .kartas
        .into_iter()
        .next()?;
    Some(
        wlmap_author::check(&karta, &crd)
            .into_iter()
            .map(|f| format!("{}: {}", f.field, f.problem))
            .collect(),
    )
}

/// After a CRD event, discovery is asked again after these waits.
const DISCOVERY_LAG: [Duration; 2] = [Duration::from_secs(1), Duration::from_secs(4)];

/// Follow CustomResourceDefinitions: a kind a definition names may be served only later
/// (its CRD installed after the controller started), or no longer.
pub(crate) async fn watch_crds(shared: Arc<Shared>, client: kube::Client) {
    let kind = Kind::new(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
    );
    let mut stream = wlmap_kube::watch_stream(&client, "", &[kind], None);
    let mut relists = Relists::default();
    let mut listed = false;
    while let Some(ev) = stream.next().await {
        match relists.on(ev) {
            None => {}
            // Established or gone (or relisted after a gap): the kinds to watch may differ.
            Some(Change::Put(..) | Change::Gone(..)) => crds_changed(&shared),
            Some(Change::Listed(..)) if listed => crds_changed(&shared),
            Some(Change::Listed(..)) => listed = true,
            Some(Change::Failing(e)) => warn("watch of CRDs failed (retrying)", &e),
        }
    }
}

/// A CRD came or went: look for the kinds to watch again, now and after discovery's lag, and
/// judge the Kartas again (a Karta's kind may be served now, or no longer).
fn crds_changed(shared: &Arc<Shared>) {
    shared.definitions_changed.notify_one();
    keep_kartas(shared);
    // The API server's discovery lists a kind a moment after its CRD's last event
    // (Established): look again then, or the kind would wait for the next CRD event.
    let later = shared.clone();
    tokio::spawn(async move {
        for wait in DISCOVERY_LAG {
            tokio::time::sleep(wait).await;
            later.definitions_changed.notify_one();
            keep_kartas(&later);
        }
    });
}

/// The kinds to watch for the definitions in force, as the server serves them.
async fn kinds_for(
    client: &kube::Client,
    reg: &wlmap_engine::Registry,
) -> Result<Vec<Kind>, Error> {
    let roots: Vec<GroupVersionKind> = reg.iter().map(|d| d.root_gvk()).collect();
    let d = kube::Discovery::new(client.clone())
        .run_aggregated()
        .await
        .map_err(Error::api("API discovery"))?;
    let mut kinds: Vec<Kind> = Vec::new();
    // A TrainJob's runtime, and any kind a definition reads as a reference, live too.
    for g in wlmap_inventory::kinds_to_follow(reg, &roots) {
        if let Some(k) = wlmap_kube::kind_in(&d, &g)
            && !kinds.iter().any(|x| x.group_kind() == k.group_kind())
        {
            kinds.push(k);
        }
    }
    Ok(kinds)
}

/// Keep the inventory live: one watch per kind the definitions need; new definitions with
/// the same kinds are swapped in place, new kinds start the watches again.
pub(crate) async fn watch_workloads(shared: Arc<Shared>, watch_client: kube::Client) {
    loop {
        let reg = reading(&shared.registry).clone();
        let kinds = match kinds_for(&shared.client, &reg).await {
            Ok(k) => k,
            Err(e) => {
                log(
                    "warning",
                    "cannot tell which kinds to watch (retrying)",
                    json!({"error": e.to_string()}),
                );
                tokio::time::sleep(Duration::from_secs(2)).await;
                continue;
            }
        };
        let gks: Vec<GroupKind> = kinds.iter().map(|k| k.group_kind()).collect();
        log(
            "info",
            "watching",
            json!({"kinds": gks.iter().map(|g| g.to_string()).collect::<Vec<_>>()}),
        );
        *writing(&shared.kinds) = kinds.clone();
        *shared.write_feed() = Feed::new(reg, gks.clone());
        let gate = wlmap_kube::live::DraGate::default();
        // The events a watch has ready together are taken as one batch.
        let mut stream =
            wlmap_kube::watch_stream_gated(&watch_client, "", &kinds, None, Some(&gate))
                .ready_chunks(BATCH);
        let mut said = Said::default();
        loop {
            tokio::select! {
                evs = stream.next() => {
                    let Some(evs) = evs else { break };
                    on_workload_events(&shared, evs, &mut said, &gate);
                }
                _ = shared.definitions_changed.notified() => {
                    let reg = reading(&shared.registry).clone();
                    match kinds_for(&shared.client, &reg).await {
                        Ok(k) if same_kinds(&k, &kinds) => {
                            let changes = shared.write_feed().inventory.set_definitions(reg);
                            shared.enqueue(changes.into_iter().map(|c| c.key));
                        }
                        // New kinds (or discovery failed): watch again from scratch.
                        _ => break,
                    }
                }
            }
        }
    }
}

fn same_kinds(a: &[Kind], b: &[Kind]) -> bool {
    let set = |k: &[Kind]| -> std::collections::BTreeSet<(String, String)> {
        k.iter()
            .map(|k| (k.group.clone(), k.kind.clone()))
            .collect()
    };
    set(a) == set(b)
}

/// The most watch events taken in one batch: the inventory's write lock is held through a
/// batch (a review waits for it), and a batch of this many resolves in a few milliseconds.
const BATCH: usize = 256;

/// Feed the events a watch had ready together, as one batch: a burst of a workload's events
/// (its pods created, its children's status written) resolves it once, where resolving it at
/// each event was most of a replica's work under a burst of pods. Workloads whose gangs the
/// events may change are queued ([`crate::gangs::pod_change_matters`]).
fn on_workload_events(shared: &Shared, evs: Vec<WatchEvent>, said: &mut Said, gate: &DraGate) {
    let trim = |v: &mut Value| shared.read_feed().inventory.index().trim(v);
    let mut events = Vec::with_capacity(evs.len());
    for ev in evs {
        match wlmap_kube::live::feed_event(ev, &trim, said) {
            Step::Feed(ev) => events.push(ev),
            Step::Failing(e) => log(
                "warning",
                "a watch failed (retrying)",
                json!({"error": e.to_string()}),
            ),
            Step::StillFailing => {}
        }
    }
    if events.is_empty() {
        return;
    }
    let matters = |w: &Entry, old: &Object, new: &Object| {
        crate::gangs::pod_change_matters(&w.definition, old, new)
    };
    let fed = {
        let mut feed = shared.write_feed();
        // A replica that does not lead reads its workloads only to show them (its webhook
        // reads the objects): it resolves them now and then, not at every event.
        feed.inventory.put_off_resolving(!shared.is_leader());
        let fed = feed.on_all(events, &matters);
        gate.after(&feed, fed)
    };
    match fed {
        Fed::Listing => {}
        Fed::Synced => {
            shared.catch_up();
            log(
                "info",
                "inventory listed",
                json!({"workloads": shared.read_feed().inventory.workloads().count()}),
            );
            shared.enqueue_all();
        }
        Fed::Touched(keys) => {
            let feed = shared.read_feed();
            let workloads: Vec<ObjectKey> = keys
                .into_iter()
                .filter(|k| feed.inventory.workload(k).is_some())
                .collect();
            drop(feed);
            shared.enqueue(workloads);
        }
    }
}

/// How often a replica that does not lead resolves the workloads that changed.
pub(crate) const CATCH_UP_EVERY: Duration = Duration::from_secs(2);

/// Resolve, every [`CATCH_UP_EVERY`], what a replica that does not lead put off: its
/// `/metrics` and web view are that much behind the leader's at most.
pub(crate) async fn catch_up(shared: Arc<Shared>) {
    let mut every = tokio::time::interval(CATCH_UP_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        shared.catch_up();
    }
}

/// Keep the store of gang objects that exist; one of ours deleted by someone else is
/// written again (its workload is queued).
pub(crate) async fn watch_gang_objects(shared: Arc<Shared>, watch_client: kube::Client) {
    let kinds = crate::gangs::kinds(shared.opts.format);
    let mut stream = wlmap_kube::watch_stream(&watch_client, "", &kinds, None);
    let mut relists = Relists::default();
    let store = || writing(&shared.gang_objects);
    while let Some(ev) = stream.next().await {
        match relists.on(ev) {
            None => {}
            Some(Change::Put(_, v)) => store().insert(v),
            Some(Change::Gone(_, v)) => {
                store().remove(&v);
                if crate::gangs::is_ours(&v) {
                    shared.enqueue(owner_key(&v));
                }
            }
            Some(Change::Listed(i, listed)) => {
                store().replace_kind(&kinds[i].kind, listed);
                shared.enqueue_all();
            }
            Some(Change::Failing(e)) => warn("watch of gang objects failed (retrying)", &e),
        }
    }
}

/// The workload that owns a gang object.
fn owner_key(v: &Value) -> Option<ObjectKey> {
    let r = v["metadata"]["ownerReferences"].as_array()?.first()?;
    Some(ObjectKey::new(
        v["metadata"]["namespace"].as_str().unwrap_or(""),
        GroupKind::from_api_version(r["apiVersion"].as_str()?, r["kind"].as_str()?),
        r["name"].as_str()?,
    ))
}

/// Log a watch's failure (each distinct one once: the watch retries with backoff).
fn warn(msg: &str, e: &wlmap_kube::Error) {
    log("warning", msg, json!({"error": e.to_string()}));
}

#[cfg(test)]
mod tests {
    use super::*;
    use wlmap_inventory::FeedEvent;

    fn pod(phase: &str, node: Option<&str>, team: &str) -> Object {
        let mut p = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "train-0", "namespace": "ml", "uid": "p1",
                "labels": {"batch.kubernetes.io/job-name": "train", "team": team},
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train",
                    "uid": "j1", "controller": true}]},
            "spec": {"schedulingGroup": {"podGroupName": "train-job"},
                "containers": [{"name": "main"}]},
            "status": {"phase": phase}});
        if let Some(n) = node {
            p["spec"]["nodeName"] = json!(n);
        }
        Object::new(p)
    }

    /// The workloads a batch of a pod's events leaves to reconcile, in a synced feed of one
    /// Job and that pod, as the controller feeds it.
    fn reconciled_after(news: Vec<Object>) -> Vec<ObjectKey> {
        let job = Object::new(json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "train", "namespace": "ml", "uid": "j1"},
            "spec": {"parallelism": 1, "template": {"spec": {"containers": [{"name": "main"}]}}}}));
        let kinds = vec![GroupKind::new("batch", "Job"), GroupKind::new("", "Pod")];
        let mut feed = Feed::new(wlmap_catalog::registry().expect("catalog"), kinds);
        for (i, o) in [job, pod("Pending", None, "a")].into_iter().enumerate() {
            feed.on(FeedEvent::Relisting(i));
            feed.on(FeedEvent::Applied(i, o));
            feed.on(FeedEvent::Listed(i));
        }
        let matters = |w: &Entry, old: &Object, new: &Object| {
            crate::gangs::pod_change_matters(&w.definition, old, new)
        };
        let evs = news.into_iter().map(|o| FeedEvent::Applied(1, o)).collect();
        let Fed::Touched(keys) = feed.on_all(evs, &matters) else {
            panic!("synced: a change is touched")
        };
        keys.into_iter()
            .filter(|k| feed.inventory.workload(k).is_some())
            .collect()
    }

    #[test]
    fn a_pod_bound_and_running_leaves_its_workload_alone() {
        let moved_on = vec![
            pod("Pending", Some("n1"), "a"),
            pod("Running", Some("n1"), "a"),
        ];
        assert_eq!(reconciled_after(moved_on), vec![]);
        let job = ObjectKey::new("ml", GroupKind::new("batch", "Job"), "train");
        assert_eq!(
            reconciled_after(vec![pod("Failed", Some("n1"), "a")]),
            vec![job.clone()]
        );
        assert_eq!(
            reconciled_after(vec![pod("Pending", None, "b")]),
            vec![job.clone()]
        );
        // In one batch with a change that matters, the workload is queued (once).
        let both = vec![
            pod("Running", Some("n1"), "a"),
            pod("Running", Some("n1"), "b"),
        ];
        assert_eq!(reconciled_after(both), vec![job]);
    }
}
