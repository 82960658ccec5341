//! The inventory kept up to date event by event gives what building it again from the same
//! objects gives, and every update reports exactly the workloads whose view changed.
//!
//! Random sequences of events over objects from the catalog's fixtures (realistic objects:
//! each fixture cites the upstream controller code it imitates): objects applied in any order
//! (owners after their children), changed (pod phases, labels), re-created under a new uid,
//! stripped of their owner, deleted; definitions swapped for registries that lack a kind.

use proptest::prelude::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;
use wlmap_engine::{Object, Registry};
use wlmap_inventory::{Change, ChangeKind, Index, Inventory, ObjectKey, Update};

/// Fixture states whose objects make the universe (one state of each, distinct objects).
const FIXTURES: &[&str] = &[
    "jobset-x-k8s-io-jobset-v1alpha2/running",
    "apps-deployment-v1/rolling-update",
    "ray-io-raycluster-v1/running",
    "trainer-kubeflow-org-trainjob-v1alpha1/running",
    "leaderworkerset-x-k8s-io-leaderworkerset-v1/two-groups",
    "core-pod-v1/running",
];

const EXPERIMENT_UID: &str = "0d5e7c1a-experiment";

fn universe() -> &'static Vec<Value> {
    static U: OnceLock<Vec<Value>> = OnceLock::new();
    U.get_or_init(|| {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalog/fixtures");
        let mut out = Vec::new();
        for f in FIXTURES {
            let path = root.join(f).join("objects.yaml");
            let text = std::fs::read_to_string(&path).expect("fixture");
            out.extend(wlmap_schema::decode_objects(&text, f).expect("fixture decodes"));
        }
        assert!(out.len() > 30, "a universe of {} objects", out.len());
        // An object of a kind no definition knows, controlled by the JobSet: what it controls
        // (variant 5 below) is part of the JobSet only while this object says so, so its
        // changes move objects below it in and out of the top level.
        let jobset = out.iter().find(|v| v["kind"] == "JobSet").expect("a JobSet").clone();
        out.push(serde_json::json!({
            "apiVersion": "example.com/v1", "kind": "Experiment",
            "metadata": {"name": "sweep", "namespace": "ml", "uid": EXPERIMENT_UID,
                "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                    "name": jobset["metadata"]["name"], "uid": jobset["metadata"]["uid"], "controller": true}]}}));
        out
    })
}

/// Registries: the catalog, and the catalog without one kind each.
fn registries() -> &'static Vec<Registry> {
    static R: OnceLock<Vec<Registry>> = OnceLock::new();
    R.get_or_init(|| {
        let full = wlmap_catalog::registry().expect("catalog");
        let without = |kind: &str| {
            let mut r = Registry::default();
            for d in full.iter().filter(|d| d.root_gvk().kind != kind) {
                r.insert(
                    wlmap_engine::Definition::compile(d.karta().clone(), d.origin().clone())
                        .expect("compiles"),
                );
            }
            r
        };
        vec![
            full.clone(),
            without("JobSet"),
            without("Job"),
            without("Pod"),
            without("ClusterTrainingRuntime"),
        ]
    })
}

#[derive(Debug, Clone)]
enum Event {
    /// Apply object `i` of the universe, changed by `variant`.
    Apply(usize, u8),
    /// Delete object `i` of the universe (whatever variant is held).
    Delete(usize),
    /// Put registry `i` in force.
    Definitions(usize),
    /// Relist the kind of object `i`: the universe's objects of that kind whose bit is set
    /// in the mask (as recorded) replace those held.
    Relist(usize, u64),
}

fn variant(v: &Value, which: u8) -> Value {
    let mut v = v.clone();
    match which {
        // As recorded.
        0 => {}
        // Status changed: a pod goes back to Pending, anything else loses its status.
        1 => {
            if v["kind"] == "Pod" {
                v["status"] = serde_json::json!({"phase": "Pending"});
            } else if let Some(m) = v.as_object_mut() {
                m.remove("status");
            }
        }
        // No owner.
        2 => {
            if let Some(m) = v["metadata"].as_object_mut() {
                m.remove("ownerReferences");
            }
        }
        // Re-created: same name, new uid (its children still point at the old one).
        3 => {
            let uid = v["metadata"]["uid"].as_str().unwrap_or("").to_string();
            v["metadata"]["uid"] = Value::from(format!("{uid}-again"));
        }
        // Adopted by the Experiment (an owner of a kind no definition knows).
        5 => {
            v["metadata"]["ownerReferences"] = serde_json::json!([{"apiVersion": "example.com/v1",
                "kind": "Experiment", "name": "sweep", "uid": EXPERIMENT_UID, "controller": true}]);
        }
        // A label added (metadata only).
        _ => {
            v["metadata"]["labels"]["wlmap.test/touched"] = Value::from("yes");
        }
    }
    v
}

fn event() -> impl Strategy<Value = Event> {
    let n = universe().len();
    prop_oneof![
        6 => (0..n, 0u8..6).prop_map(|(i, v)| Event::Apply(i, v)),
        2 => (0..n).prop_map(Event::Delete),
        1 => (0..registries().len()).prop_map(Event::Definitions),
        1 => (0..n, any::<u64>()).prop_map(|(i, m)| Event::Relist(i, m)),
    ]
}

/// What a view shows of every top-level workload.
fn view(inv: &Inventory) -> BTreeMap<ObjectKey, String> {
    inv.workloads()
        .map(|e| {
            let shown = match &e.result {
                Ok(w) => serde_json::to_string(w).expect("serialises"),
                Err(err) => format!("error: {err}"),
            };
            (e.key.clone(), format!("{} {shown}", e.definition.name()))
        })
        .collect()
}

/// The changes a view diff implies.
fn diff(
    before: &BTreeMap<ObjectKey, String>,
    after: &BTreeMap<ObjectKey, String>,
) -> BTreeSet<Change> {
    let keys: BTreeSet<&ObjectKey> = before.keys().chain(after.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let kind = match (before.get(k), after.get(k)) {
                (None, Some(_)) => ChangeKind::Added,
                (Some(_), None) => ChangeKind::Removed,
                (Some(a), Some(b)) if a != b => ChangeKind::Changed,
                _ => return None,
            };
            Some(Change {
                key: k.clone(),
                kind,
            })
        })
        .collect()
}

/// Take one event into the inventory (`registry`: the definitions in force, changed by a
/// [`Event::Definitions`]); the changes it reports.
fn take(inv: &mut Inventory, ev: &Event, registry: &mut usize) -> Vec<Change> {
    match ev {
        Event::Apply(i, v) => inv.apply(Object::new(variant(&universe()[*i], *v))),
        Event::Delete(i) => inv.delete(&ObjectKey::of(&Object::new(universe()[*i].clone()))),
        Event::Definitions(r) => {
            *registry = *r;
            inv.set_definitions(registries()[*registry].clone())
        }
        Event::Relist(i, mask) => {
            let kind = ObjectKey::of(&Object::new(universe()[*i].clone())).kind;
            let objects = universe()
                .iter()
                .map(|v| Object::new(v.clone()))
                .filter(|o| ObjectKey::of(o).kind == kind)
                .enumerate()
                .filter(|(j, _)| mask & (1 << (j % 64)) != 0)
                .map(|(_, o)| held(inv, o))
                .collect();
            inv.replace_kind(&kind, objects)
        }
    }
}

/// Run the events on an inventory (`packed`: holding its objects packed, letting go of their
/// parsed JSON after every update, as a live feed does now and then) and compare it, after
/// each, with one built again from its objects.
fn run(events: &[Event], packed: bool) -> Result<(), TestCaseError> {
    let mut registry = 0;
    let mut inv = if packed {
        Inventory::from_index(Index::new(registries()[registry].clone(), []).packed())
            .releasing_beyond(0)
    } else {
        Inventory::new(registries()[registry].clone())
    };
    for (step, ev) in events.iter().enumerate() {
        let before = view(&inv);
        let changes = take(&mut inv, ev, &mut registry);
        let after = view(&inv);
        if packed {
            prop_assert!(
                inv.index()
                    .objects()
                    .all(|o| o.is_packed() && !o.is_parsed()),
                "step {}: every object held packed and released",
                step
            );
        }
        let rebuilt = Inventory::from_objects(
            registries()[registry].clone(),
            inv.index().objects().cloned(),
        );
        prop_assert_eq!(
            &after,
            &view(&rebuilt),
            "step {}: {:?} differs from a rebuild",
            step,
            ev
        );
        let reported: BTreeSet<Change> = changes.into_iter().collect();
        prop_assert_eq!(
            reported,
            diff(&before, &after),
            "step {}: {:?} reported other changes",
            step,
            ev
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn incremental_updates_equal_a_rebuild(events in proptest::collection::vec(event(), 1..60)) {
        run(&events, false)?;
    }

    #[test]
    fn packed_incremental_updates_equal_a_rebuild(events in proptest::collection::vec(event(), 1..60)) {
        run(&events, true)?;
    }
}

/// Run the events in batches (each run of applies and deletes one [`Inventory::apply_batch`],
/// as the controller feeds what a watch had ready together), packed and released as a live
/// feed holds them, and compare after each batch with a rebuild; the changes reported cover
/// every workload whose view changed, with the right kind.
fn run_batched(events: &[Event]) -> Result<(), TestCaseError> {
    let mut registry = 0;
    let mut inv = Inventory::from_index(Index::new(registries()[registry].clone(), []).packed())
        .releasing_beyond(0);
    let mut rest = events;
    while !rest.is_empty() {
        let before = view(&inv);
        let run = rest
            .iter()
            .take_while(|e| matches!(e, Event::Apply(..) | Event::Delete(_)))
            .count();
        let (step, changes) = if run == 0 {
            let Event::Definitions(r) = &rest[0] else {
                // Relists are run one by one by `run`; here they end a batch and are skipped.
                rest = &rest[1..];
                continue;
            };
            registry = *r;
            (
                &rest[..1],
                inv.set_definitions(registries()[registry].clone()),
            )
        } else {
            let updates = rest[..run]
                .iter()
                .map(|e| match e {
                    Event::Apply(i, v) => Update::Apply(Object::new(variant(&universe()[*i], *v))),
                    Event::Delete(i) => {
                        Update::Delete(ObjectKey::of(&Object::new(universe()[*i].clone())))
                    }
                    _ => unreachable!("a run holds applies and deletes"),
                })
                .collect();
            let applied = inv.apply_batch(updates);
            prop_assert_eq!(applied.affected.len(), run);
            (&rest[..run], applied.changes)
        };
        rest = &rest[step.len()..];
        let after = view(&inv);
        prop_assert!(
            inv.index()
                .objects()
                .all(|o| o.is_packed() && !o.is_parsed()),
            "{:?}: every object held packed and released",
            step
        );
        let rebuilt = Inventory::from_objects(
            registries()[registry].clone(),
            inv.index().objects().cloned(),
        );
        prop_assert_eq!(&after, &view(&rebuilt), "{:?} differs from a rebuild", step);
        let reported: BTreeSet<Change> = changes.into_iter().collect();
        let diff = diff(&before, &after);
        // A pod's facts changed and changed back within a batch may be reported as a change.
        let extra: Vec<&Change> = reported
            .difference(&diff)
            .filter(|c| c.kind != ChangeKind::Changed || !after.contains_key(&c.key))
            .collect();
        prop_assert!(
            diff.is_subset(&reported),
            "{:?}: {:?} not all in {:?}",
            step,
            diff,
            reported
        );
        prop_assert!(extra.is_empty(), "{:?}: reported {:?}", step, extra);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn batched_updates_equal_a_rebuild(events in proptest::collection::vec(event(), 1..60)) {
        run_batched(&events)?;
    }
}

/// Run the events with resolving put off or not at each (as a controller replica puts it
/// off while it does not lead), then catch up: the workloads are what a rebuild gives, and
/// the changes reported on the way and at the catch-up name every workload whose view
/// changed. An update taken while resolving is not put off resolves what waited too.
fn run_put_off(events: &[Event], put_off: &[bool]) -> Result<(), TestCaseError> {
    let mut registry = 0;
    let mut inv = Inventory::from_index(Index::new(registries()[registry].clone(), []).packed())
        .releasing_beyond(0);
    let since = view(&inv);
    let mut reported = BTreeSet::new();
    let rebuilt = |inv: &Inventory, registry: usize| {
        view(&Inventory::from_objects(
            registries()[registry].clone(),
            inv.index().objects().cloned(),
        ))
    };
    for (ev, off) in events.iter().zip(put_off.iter().cycle()) {
        inv.put_off_resolving(*off);
        reported.extend(take(&mut inv, ev, &mut registry).into_iter().map(|c| c.key));
        if !off && matches!(ev, Event::Apply(..) | Event::Delete(_)) {
            prop_assert!(!inv.is_behind(), "{:?} left workloads behind", ev);
            prop_assert_eq!(view(&inv), rebuilt(&inv, registry), "{:?}", ev);
        }
    }
    reported.extend(inv.catch_up().into_iter().map(|c| c.key));
    prop_assert!(!inv.is_behind());
    let after = view(&inv);
    prop_assert_eq!(&after, &rebuilt(&inv, registry));
    for c in diff(&since, &after) {
        prop_assert!(reported.contains(&c.key), "{:?} not reported", c);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn put_off_then_caught_up_equals_a_rebuild(
        events in proptest::collection::vec(event(), 1..60),
        put_off in proptest::collection::vec(proptest::bool::weighted(0.8), 1..8),
    ) {
        run_put_off(&events, &put_off)?;
    }
}

/// An object as a relisting feed buffers it: as the inventory holds it, released if packed.
fn held(inv: &Inventory, o: Object) -> Object {
    let held = inv.index().hold(o);
    held.released().unwrap_or(held)
}

/// Every object of the universe applied, children first: the same workloads as loading them
/// at once, and the JobSet holds its pods though they arrived before it.
#[test]
fn owners_arriving_after_their_children() {
    let reg = registries()[0].clone();
    let mut inv = Inventory::new(reg.clone());
    for v in universe().iter().rev() {
        inv.apply(Object::new(v.clone()));
    }
    let at_once = Inventory::from_objects(reg, universe().iter().cloned().map(Object::new));
    assert_eq!(view(&inv), view(&at_once));
    let jobset = inv
        .workloads()
        .find(|e| e.key.kind.kind == "JobSet")
        .expect("the JobSet is a top-level workload");
    let w = jobset.result.as_ref().expect("resolves");
    assert!(w.observed_pods() >= 2, "{} pods", w.observed_pods());
    assert!(
        inv.workloads().all(|e| e.key.kind.kind != "Job"),
        "a Job of the JobSet is not listed on its own"
    );
}

/// A Job whose owner reference names a JobSet is part of it; without that reference it is a
/// workload of its own, and the JobSet loses its pods; with it again, the Job is part of the
/// JobSet again.
#[test]
fn a_job_without_its_owner_reference_becomes_a_workload() {
    let reg = registries()[0].clone();
    let mut inv = Inventory::from_objects(reg, universe().iter().cloned().map(Object::new));
    let job = universe()
        .iter()
        .find(|v| v["kind"] == "Job" && v["metadata"]["ownerReferences"][0]["kind"] == "JobSet")
        .expect("a Job of a JobSet");
    let changes = inv.apply(Object::new(variant(job, 2)));
    let key = ObjectKey::of(&Object::new(job.clone()));
    assert!(
        changes.contains(&Change {
            key: key.clone(),
            kind: ChangeKind::Added
        }),
        "{changes:?}"
    );
    assert!(
        changes
            .iter()
            .any(|c| c.key.kind.kind == "JobSet" && c.kind == ChangeKind::Changed),
        "the JobSet lost the Job's pods: {changes:?}"
    );
    let back = inv.apply(Object::new(job.clone()));
    assert!(
        back.contains(&Change {
            key,
            kind: ChangeKind::Removed
        }),
        "{back:?}"
    );
}

/// The sequences above go through the inventory's shortcut for pods whose facts alone
/// changed: every definition of the universe's workloads places pods by named places only.
#[test]
fn the_universe_takes_the_pod_shortcut() {
    let reg = &registries()[0];
    let mut kinds = 0;
    for v in universe() {
        let o = Object::new(v.clone());
        if let Some(d) = reg.for_kind(&o.gvk()) {
            kinds += 1;
            assert!(d.pod_placement_reads().is_some(), "{}", d.name());
        }
    }
    assert!(kinds > 5);
}

/// A Job of a JobSet whose status moves on (as the Job controller writes it at each pod
/// that starts) is read by no workload: it affects itself only, and the JobSet is not
/// resolved again for it. The JobSet's own status is its own: it is resolved again.
#[test]
fn a_status_between_a_workload_and_its_pods_is_seen_by_no_workload() {
    let of_kind = |kind: &str| {
        universe()
            .iter()
            .find(|v| {
                v["kind"] == kind && v["metadata"]["ownerReferences"][0]["kind"] != "TrainJob"
            })
            .expect("an object of the kind")
    };
    let job = of_kind("Job");
    assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "JobSet");
    let jobset = ObjectKey::of(&Object::new(of_kind("JobSet").clone()));
    for (moved, affects) in [(job, vec![]), (of_kind("JobSet"), vec![jobset.clone()])] {
        let mut inv = Inventory::from_objects(
            registries()[0].clone(),
            universe().iter().cloned().map(Object::new),
        );
        let mut moved_on = moved.clone();
        moved_on["status"]["ready"] = Value::from(7);
        moved_on["metadata"]["resourceVersion"] = Value::from("999999");
        let key = ObjectKey::of(&Object::new(moved.clone()));
        let applied = inv.apply_batch(vec![Update::Apply(Object::new(moved_on))]);
        let mut expected = BTreeSet::from([key]);
        expected.extend(affects);
        assert_eq!(applied.affected[0], expected);
        // What the view shows is what building it again from the same objects shows.
        let rebuilt =
            Inventory::from_objects(registries()[0].clone(), inv.index().objects().cloned());
        assert_eq!(view(&inv), view(&rebuilt));
        let held =
            inv.workload(&jobset).expect("the JobSet").object.json()["status"]["ready"].clone();
        assert_eq!(held == 7, moved["kind"] == "JobSet");
    }
}
