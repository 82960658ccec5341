//! The controller's decisions over every catalog fixture, in every format it writes, with no
//! cluster: what it writes from nothing (only its format's kinds, parents first, each owned
//! by the workload and marked as wlmap's), that it writes nothing more once the server holds
//! those objects, that it leaves someone else's object of a wanted name alone, that it deletes
//! only its own leftovers (after its writes), that it steps aside for a workload ganged
//! elsewhere, and which pods it counts as without a group.

use serde_json::{Value, json};
use std::path::Path;
use wlmap_controller::gangs::{Action, Decision, GangStore, decide};
use wlmap_engine::{Object, SchedulerFormat};
use wlmap_inventory::{Entry, Inventory};

/// Every fixture's objects, by `definition/case`.
fn fixtures() -> Vec<(String, Vec<Object>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalog/fixtures");
    let mut out = Vec::new();
    for def in sorted(&root) {
        for case in sorted(&def) {
            let text = std::fs::read_to_string(case.join("objects.yaml")).expect("objects.yaml");
            let objects = wlmap_schema::decode_objects(&text, "default")
                .expect("decodes")
                .into_iter()
                .map(Object::new)
                .collect();
            let name = case
                .strip_prefix(&root)
                .expect("below")
                .display()
                .to_string();
            out.push((name, objects));
        }
    }
    out
}

fn sorted(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .expect("dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

/// An object as the server keeps it after an apply: a uid, and a default the request did not
/// name.
fn served(o: &Value, n: usize) -> Value {
    let mut s = o.clone();
    s["metadata"]["uid"] = json!(format!("served-{n}"));
    s["metadata"]["resourceVersion"] = json!("1");
    s["spec"]["defaultedByTheServer"] = json!(true);
    s
}

fn applied(d: &Decision) -> Vec<Value> {
    d.writes
        .iter()
        .filter_map(|(_, a)| match a {
            Action::Apply(o) => Some(o.clone()),
            _ => None,
        })
        .collect()
}

fn store_of(objects: &[Value]) -> GangStore {
    let mut store = GangStore::default();
    for o in objects {
        store.insert(o.clone());
    }
    store
}

/// The pods below a workload, each tagged as the format's webhook tags it.
fn tagged(pods: &[Object], entry: &Entry, format: SchedulerFormat) -> Vec<Object> {
    let w = entry.result.as_ref().expect("resolves");
    let groups = wlmap_engine::gangs(&entry.definition, w, Some(pods)).expect("groups");
    let tags = wlmap_engine::render_gangs(format, &groups, w, &entry.object).pod_tags;
    pods.iter()
        .map(|p| {
            let mut j = p.json().clone();
            for t in tags.iter().filter(|t| t["pod"] == p.name()) {
                for part in ["labels", "annotations"] {
                    for (k, v) in t[part].as_object().into_iter().flatten() {
                        j["metadata"][part][k] = v.clone();
                    }
                }
                for (k, v) in t["spec"].as_object().into_iter().flatten() {
                    j["spec"][k] = v.clone();
                }
            }
            Object::new(j)
        })
        .collect()
}

#[test]
fn every_fixture_in_every_format_the_controller_writes() {
    let reg = wlmap_catalog::registry().expect("catalog");
    let (mut ganged, mut with_pods) = (0, 0);
    for (case, objects) in fixtures() {
        let inventory = Inventory::from_objects(reg.clone(), objects);
        for entry in inventory.workloads() {
            let pods = inventory.index().pods_below(&entry.key);
            for format in SchedulerFormat::controller_formats() {
                let at = format!("{case} {} ({format})", entry.key);
                let d = match decide(entry, &pods, &GangStore::default(), format) {
                    Ok(d) => d,
                    Err(e) => {
                        // Only a workload its definition cannot evaluate has no decision.
                        assert!(entry.result.is_err(), "{at}: {e}");
                        assert!(matches!(e, wlmap_controller::Error::Unevaluated(_)), "{at}");
                        continue;
                    }
                };
                if !entry.definition.has_gangs() {
                    assert_eq!(d, Decision::default(), "{at}");
                    continue;
                }
                ganged += 1;
                from_nothing(&d, entry, format, &at);
                let wanted = applied(&d);
                // The server holds them: nothing more to write.
                let held: Vec<Value> = wanted
                    .iter()
                    .enumerate()
                    .map(|(i, o)| served(o, i))
                    .collect();
                let case = Case {
                    entry,
                    pods: &pods,
                    held,
                    format,
                    at: &at,
                };
                assert_eq!(case.decide(&case.held).writes, vec![], "{at}");
                if !case.held.is_empty() {
                    case.someone_elses();
                    case.leftovers();
                    case.ganged_elsewhere();
                }
                // Pods the webhook tagged are grouped; untagged running members are not.
                let members = tagged(&pods, entry, format);
                let tagged_d =
                    decide(entry, &members, &store_of(&case.held), format).expect("decides");
                assert_eq!(tagged_d.ungrouped, 0, "{at}");
                assert_eq!(
                    tagged_d.stepped_aside, None,
                    "its own groups are wlmap's: {at}"
                );
                if d.ungrouped > 0 {
                    with_pods += 1;
                    assert!(d.ungrouped <= pods.len(), "{at}");
                }
            }
        }
    }
    // About a hundred ganged workloads of the catalog's kinds, in each of the four formats,
    // most with pods to count.
    assert!(ganged >= 4 * 100, "{ganged} decisions");
    assert!(
        with_pods >= 4 * 60,
        "{with_pods} decisions with ungrouped pods"
    );
}

/// From nothing: applies only, of the format's kinds in its order, owned by the workload.
fn from_nothing(d: &Decision, entry: &Entry, format: SchedulerFormat, at: &str) {
    let kinds = format.format().kinds();
    let mut last = 0;
    for (kind, action) in &d.writes {
        let Action::Apply(o) = action else {
            panic!("{at}: {action:?} from nothing")
        };
        let rank = kinds.iter().position(|k| k == kind).expect("its kind");
        assert!(rank >= last, "{at}: {} before its parent", kind.kind);
        last = rank;
        assert_eq!(o["kind"], kind.kind, "{at}");
        assert_eq!(o["apiVersion"], kind.api_version(), "{at}");
        assert_eq!(o["metadata"]["namespace"], entry.object.namespace(), "{at}");
        assert_eq!(
            o["metadata"]["ownerReferences"][0]["uid"],
            entry.object.uid(),
            "{at}"
        );
        assert!(wlmap_controller::gangs::is_ours(o), "{at}");
    }
}

/// One workload in one format, with the gang objects the server holds once the controller
/// wrote them.
struct Case<'a> {
    entry: &'a Entry,
    pods: &'a [Object],
    held: Vec<Value>,
    format: SchedulerFormat,
    at: &'a str,
}

impl Case<'_> {
    /// The decision with these gang objects in the store.
    fn decide(&self, store: &[Value]) -> Decision {
        decide(self.entry, self.pods, &store_of(store), self.format).expect("decides")
    }

    /// An object of the first wanted name that is not wlmap's: left alone, the rest written.
    fn someone_elses(&self) {
        let (first, at) = (&self.held[0], self.at);
        let mut theirs = first.clone();
        theirs["metadata"]["labels"] = json!({"app.kubernetes.io/managed-by": "kueue"});
        let d = self.decide(&[theirs]);
        let name = first["metadata"]["name"].as_str().expect("name");
        let conflict = Action::Conflict { name: name.into() };
        assert!(d.writes.iter().any(|(_, a)| *a == conflict), "{at}");
        let theirs_written =
            |o: &Value| o["metadata"]["name"] == name && o["kind"] == first["kind"];
        assert!(!applied(&d).iter().any(theirs_written), "{at}");
        assert_eq!(applied(&d).len() + 1, self.held.len(), "{at}");
    }

    /// Something else gangs the workload: an object of the format's kind it owns that wlmap
    /// did not write (another name), or member pods naming a scheduling group of their own.
    /// Then wlmap applies nothing, says why, and removes only what it wrote itself.
    fn ganged_elsewhere(&self) {
        let (first, at) = (&self.held[0], self.at);
        let mut theirs = first.clone();
        theirs["metadata"]["name"] = json!("train-job-controller-pg");
        theirs["metadata"]["uid"] = json!("theirs-uid");
        theirs["metadata"]["labels"] = json!({});
        let mut store = self.held.clone();
        store.push(theirs);
        let d = self.decide(&store);
        assert!(
            d.stepped_aside
                .as_deref()
                .is_some_and(|w| w.contains("train-job-controller-pg")),
            "{at}"
        );
        assert!(applied(&d).is_empty(), "{at}");
        let deleted: Vec<&str> = d
            .writes
            .iter()
            .filter_map(|(_, a)| match a {
                Action::Delete { uid, .. } => Some(uid.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            deleted.len(),
            self.held.len(),
            "only its own, every one: {at}"
        );
        assert!(!deleted.contains(&"theirs-uid"), "{at}");
        // Pods naming their own scheduling group (the Job controller with WorkloadWithJob).
        if let Some(p) = self.pods.first() {
            let mut j = p.json().clone();
            j["spec"]["schedulingGroup"] = json!({"podGroupName": "set-by-its-controller"});
            let pods: Vec<Object> = std::iter::once(Object::new(j))
                .chain(self.pods.iter().skip(1).cloned())
                .collect();
            let d = decide(self.entry, &pods, &store_of(&[]), self.format).expect("decides");
            // A member of a gang (the webhook would tag it) makes wlmap step aside.
            let w = self.entry.result.as_ref().expect("resolves");
            let groups =
                wlmap_engine::gangs(&self.entry.definition, w, Some(self.pods)).expect("groups");
            let tags =
                wlmap_engine::render_gangs(self.format, &groups, w, &self.entry.object).pod_tags;
            let member = tags.iter().any(|t| t["pod"] == p.name());
            assert_eq!(d.stepped_aside.is_some(), member, "{at}");
            if member {
                assert!(applied(&d).is_empty(), "{at}");
            }
        }
    }

    /// One of ours for this workload that it no longer needs: deleted by uid, after the
    /// writes; one of ours for another workload is kept.
    fn leftovers(&self) {
        let first = &self.held[0];
        let mut stale = first.clone();
        stale["metadata"]["name"] = json!("stale-gang");
        stale["metadata"]["uid"] = json!("stale-uid");
        let mut another = stale.clone();
        another["metadata"]["name"] = json!("another-gang");
        another["metadata"]["ownerReferences"][0]["uid"] = json!("another-workload");
        let mut all = self.held.clone();
        all.extend([stale, another]);
        let kinds = self.format.format().kinds();
        let kind = kinds.iter().find(|k| first["kind"] == k.kind).copied();
        let delete = Action::Delete {
            name: "stale-gang".into(),
            uid: "stale-uid".into(),
        };
        assert_eq!(
            self.decide(&all).writes,
            vec![(kind.expect("kind"), delete)],
            "{}",
            self.at
        );
    }
}

/// A member created while the webhook was unreachable can never join its group (a pod's
/// `schedulingGroup` is fixed at creation); the group's minimum is lowered by it, so the
/// members it can hold are not kept waiting forever, and it holds again once that pod is
/// done. (Seen on the scale run: a leader killed mid-burst left one pod of a Job of 10
/// without its group, and the nine others Pending under a minimum of 10.)
#[test]
fn a_member_created_without_its_group_lowers_the_minimum_by_one() {
    let reg = wlmap_catalog::registry().expect("catalog");
    let job = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "train", "namespace": "ml", "uid": "job-1"},
        "spec": {"parallelism": 3, "completions": 3,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "pause"}]}}}});
    let pod = |name: &str, group: Option<&str>, phase: &str| {
        let mut p = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml", "uid": format!("uid-{name}"),
                "labels": {"batch.kubernetes.io/job-name": "train", "job-name": "train",
                    "batch.kubernetes.io/controller-uid": "job-1"},
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train",
                    "uid": "job-1", "controller": true}]},
            "spec": {"containers": [{"name": "main", "image": "pause"}]},
            "status": {"phase": phase}});
        if let Some(g) = group {
            p["spec"]["schedulingGroup"] = json!({"podGroupName": g});
        }
        Object::new(p)
    };
    let min_count = |pods: Vec<Object>| {
        let mut objects = vec![Object::new(job.clone())];
        objects.extend(pods);
        let inventory = Inventory::from_objects(reg.clone(), objects);
        let entry = inventory.workloads().next().expect("the Job");
        let pods = inventory.index().pods_below(&entry.key);
        let d =
            decide(entry, &pods, &GangStore::default(), SchedulerFormat::Native).expect("decides");
        let groups = applied(&d);
        assert_eq!(groups.len(), 1, "{groups:?}");
        assert_eq!(groups[0]["metadata"]["name"], "train-job");
        (
            groups[0]["spec"]["schedulingPolicy"]["gang"]["minCount"].clone(),
            d.ungrouped,
        )
    };
    let grouped = |n: &str| pod(n, Some("train-job"), "Pending");
    assert_eq!(
        min_count(vec![grouped("a"), grouped("b"), grouped("c")]),
        (json!(3), 0)
    );
    assert_eq!(
        min_count(vec![grouped("a"), grouped("b"), pod("c", None, "Running")]),
        (json!(2), 1),
        "the pod outside is not waited for"
    );
    assert_eq!(
        min_count(vec![
            grouped("a"),
            grouped("b"),
            pod("c", None, "Succeeded")
        ]),
        (json!(3), 0),
        "a finished pod is no longer counted out"
    );
    assert_eq!(
        min_count(vec![
            pod("a", None, "Running"),
            pod("b", None, "Running"),
            pod("c", None, "Running")
        ]),
        (json!(1), 3),
        "never below 1"
    );
}

/// What a pod becomes as the scheduler, the kubelet and KWOK move it on, its group and
/// labels untouched: bound to a node, its conditions and container states rewritten, running
/// (or back to pending: the decision reads neither).
fn moved_on(p: &Object) -> Object {
    let mut j = p.json().clone();
    j["spec"]["nodeName"] = json!("gpu-node-7");
    j["metadata"]["resourceVersion"] = json!("999999");
    let phase = if p.json()["status"]["phase"] == "Running" {
        "Pending"
    } else {
        "Running"
    };
    j["status"] = json!({"phase": phase, "nominatedNodeName": "gpu-node-7",
        "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}],
        "containerStatuses": [{"name": "main", "ready": true, "restartCount": 0,
            "state": {"running": {"startedAt": "2026-12-06T10:00:00Z"}}}]});
    Object::new(j)
}

/// The decision for a fixture's objects with one pod replaced by another version of it.
fn decision_with(
    reg: &wlmap_engine::Registry,
    objects: &[Object],
    key: &wlmap_inventory::ObjectKey,
    pod: &Object,
    format: SchedulerFormat,
) -> Decision {
    let replaced = objects.iter().map(|o| {
        if o.is_pod() && o.name() == pod.name() && o.namespace() == pod.namespace() {
            pod.clone()
        } else {
            o.clone()
        }
    });
    let inventory = Inventory::from_objects(reg.clone(), replaced);
    let entry = inventory.workload(key).expect("the workload");
    let pods = inventory.index().pods_below(key);
    decide(entry, &pods, &GangStore::default(), format).expect("decides")
}

/// The controller reconciles a workload on a pod's change only when
/// `pod_change_matters`; so wherever it says a change does not matter, the decision must be
/// the one the change would have given. Checked over every fixture's pods in every format,
/// untagged and as the webhook tags them: a pod moved on (bound, running) leaves it as it
/// was and is skipped; a pod finished or relabelled is reconciled.
#[test]
fn a_pod_change_that_is_skipped_leaves_the_decision_as_it_was() {
    let reg = wlmap_catalog::registry().expect("catalog");
    let (mut skipped, mut reconciled) = (0, 0);
    for (case, objects) in fixtures() {
        let inventory = Inventory::from_objects(reg.clone(), objects.clone());
        for entry in inventory.workloads() {
            if !entry.definition.has_gangs() || entry.result.is_err() {
                continue;
            }
            let pods = inventory.index().pods_below(&entry.key);
            for format in SchedulerFormat::controller_formats() {
                let members = tagged(&pods, entry, format);
                let objects: Vec<Object> = objects
                    .iter()
                    .filter(|o| !o.is_pod())
                    .chain(&members)
                    .chain(
                        pods.iter()
                            .filter(|p| !members.iter().any(|m| m.name() == p.name())),
                    )
                    .cloned()
                    .collect();
                for p in members.iter().take(2) {
                    let at = format!("{case} {} pod {} ({format})", entry.key, p.name());
                    let before = decision_with(&reg, &objects, &entry.key, p, format);
                    let new = moved_on(p);
                    if !wlmap_controller::gangs::pod_change_matters(&entry.definition, p, &new) {
                        skipped += 1;
                        let after = decision_with(&reg, &objects, &entry.key, &new, format);
                        assert_eq!(after, before, "{at}: skipped, yet the decision changed");
                    }
                    let matters = |j: Value| {
                        let changed = Object::new(j);
                        wlmap_controller::gangs::pod_change_matters(&entry.definition, p, &changed)
                    };
                    let mut relabelled = p.json().clone();
                    relabelled["metadata"]["labels"]["team"] = json!("other");
                    assert!(matters(relabelled), "{at}: relabelled");
                    reconciled += 1;
                    let phase = p.json()["status"]["phase"].as_str().unwrap_or("");
                    if !matches!(phase, "Succeeded" | "Failed") {
                        let mut finished = p.json().clone();
                        finished["status"]["phase"] = json!("Succeeded");
                        assert!(matters(finished), "{at}: finished");
                        reconciled += 1;
                    }
                }
            }
        }
    }
    // Most pods' moves are skipped (the catalog's definitions read named places of a pod).
    assert!(skipped >= 500, "{skipped} skipped");
    assert!(reconciled >= 1000, "{reconciled} reconciled");
}
