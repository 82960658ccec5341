//! The JSON the web page reads: every workload as a row, one workload in full, and the keys
//! of a workload as the page names them.

use serde::Serialize;
use serde_json::{Value, json};
use wlmap_engine::{GpuPolicy, Workload};
use wlmap_inventory::view::{self, GetItem};
use wlmap_inventory::{Entry, Inventory, ObjectKey};
use wlmap_schema::GroupKind;

/// One row of the workloads table: `wlmap get -o json`'s item, plus the API group and the
/// GPUs its pods hold (DRA devices allocated to their claims, device-plugin GPUs of Running pods).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    /// The `get` item.
    #[serde(flatten)]
    pub item: GetItem,
    /// API group ("" for the core group).
    pub group: String,
    /// GPUs the workload's pods hold ([`wlmap_engine::Workload::gpus_held`]).
    pub gpus_held: f64,
}

/// The row of an inventory entry.
pub fn row(e: &Entry) -> Row {
    Row {
        item: view::item(e),
        group: e.key.kind.group.clone(),
        gpus_held: e.result.as_ref().map_or(0.0, gpus_held),
    }
}

/// GPUs requested by the workload's pods that are Running (a Pending pod may not be on a node
/// yet; a finished one has given its GPUs back).
///
/// ```
/// use serde_json::json;
/// let gpu = json!({"limits": {"nvidia.com/gpu": 4}});
/// let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "t", "namespace": "ml", "uid": "j1"},
///     "spec": {"parallelism": 2, "template": {"spec": {"containers": [{"name": "c", "resources": gpu}]}}}});
/// let pod = |name: &str, phase: &str| json!({"apiVersion": "v1", "kind": "Pod",
///     "metadata": {"name": name, "namespace": "ml", "uid": name, "labels": {"batch.kubernetes.io/job-name": "t"},
///         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "t", "uid": "j1", "controller": true}]},
///     "spec": {"containers": [{"name": "c", "resources": gpu}]}, "status": {"phase": phase}});
/// let objects = [job, pod("t-a", "Running"), pod("t-b", "Pending")].map(wlmap_engine::Object::new);
/// let inv = wlmap_inventory::Inventory::from_objects(wlmap_catalog::registry().unwrap(), objects);
/// let w = inv.workloads().next().unwrap().result.as_ref().unwrap();
/// assert_eq!(wlmap_server::api::gpus_held(w), 4.0); // the Pending pod holds none yet
/// ```
pub fn gpus_held(w: &Workload) -> f64 {
    w.gpus_held()
}

/// `/api/workloads`: every top-level workload as a row, with the inventory's version (what
/// `/api/events` announces) and whether the source has been read in full.
///
/// ```
/// let inv = wlmap_inventory::Inventory::default();
/// let v = wlmap_server::api::rows(&inv, 7, true);
/// assert_eq!(v["version"], 7);
/// assert_eq!(v["items"].as_array().unwrap().len(), 0);
/// ```
pub fn rows(inv: &Inventory, version: u64, synced: bool) -> Value {
    let items: Vec<Row> = inv.workloads().map(row).collect();
    json!({"version": version, "synced": synced, "items": items})
}

/// `/api/workload?namespace=&group=&kind=&name=`: one workload in full: its row, the
/// `describe -o json` view with every status rule's trace, and its gang groups (observed
/// when it has pods, else predicted; `error` when its definition cannot form them). None when
/// it is not a top-level workload.
pub fn workload(inv: &Inventory, key: &ObjectKey) -> Option<Value> {
    let e = inv.workload(key)?;
    let mut out = json!({"row": row(e)});
    if let Ok(w) = &e.result {
        out["describe"] = json!(view::describe(&e.definition, w, true));
        out["gangs"] = gangs(inv, e, w);
        out["gpusRequested"] = json!(w.gpus(&GpuPolicy::default()));
    }
    Some(out)
}

fn gangs(inv: &Inventory, e: &Entry, w: &Workload) -> Value {
    if !e.definition.has_gangs() {
        return json!({"podGroups": [], "mode": "none"});
    }
    let pods = inv.index().pods_below(&e.key);
    let observed = w.observed_pods() > 0;
    let found = wlmap_engine::gangs(&e.definition, w, observed.then_some(pods.as_slice()));
    match found {
        Ok(groups) => json!({
            "podGroups": groups,
            "mode": if observed { "observed" } else { "predicted" },
        }),
        Err(err) => json!({"podGroups": [], "error": err.to_string()}),
    }
}

/// The key a request names with `namespace`, `group`, `kind` and `name` in its query string.
pub fn key_of(query: &str) -> Option<ObjectKey> {
    let get = |k| crate::query::get(query, k);
    Some(ObjectKey::new(
        &get("namespace").unwrap_or_default(),
        GroupKind::new(&get("group").unwrap_or_default(), &get("kind")?),
        &get("name")?,
    ))
}
