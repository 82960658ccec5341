//! Placing a pod before it exists (what an admission webhook does) agrees with the groups
//! computed once the pod is held, over every pod of every catalog fixture whose workload
//! gangs; owners not yet seen are named, kinds without gangs pass.

mod common;

use common::all_fixture_objects;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use wlmap_engine::{Object, SchedulerFormat};
use wlmap_inventory::{Index, ObjectKey, OwnerRef, Placement};

/// The group each held pod is in, computed the way `wlmap gang` does with every pod held, and
/// the group it names in the hierarchical form: its sub-group, when its group has some (none
/// when it is in none of them).
type Held = (String, Option<String>);

fn group_when_held(index: &Index, top: &ObjectKey, pod: &Object) -> Option<Held> {
    let entry = index.evaluate(top, None)?;
    let w = entry.result.ok()?;
    let pods: Vec<Object> = index
        .objects()
        .filter(|o| o.is_pod() && o.namespace() == top.namespace)
        .cloned()
        .collect();
    let groups = wlmap_engine::gangs(&entry.definition, &w, Some(&pods)).ok()?;
    let g = groups
        .into_iter()
        .find(|g| g.members.iter().any(|m| m == pod.name()))?;
    let leaf = if g.sub_groups.is_empty() {
        Some(g.name.clone())
    } else {
        g.sub_groups
            .iter()
            .find(|s| s.members.iter().any(|m| m == pod.name()))
            .map(|s| s.name.clone())
    };
    Some((g.name, leaf))
}

fn without_name(pod: &Object) -> Object {
    let mut v = pod.json().clone();
    let name = v["metadata"]["name"].as_str().unwrap_or("").to_string();
    let m = v["metadata"].as_object_mut().expect("metadata");
    m.remove("name");
    m.insert("generateName".into(), Value::from(format!("{name}-")));
    Object::new(v)
}

#[test]
fn a_pod_placed_before_it_exists_joins_the_group_it_is_in_once_held() {
    let reg = wlmap_catalog::registry().expect("catalog");
    let all = all_fixture_objects();
    let full = Index::new(reg.clone(), all.clone());
    let tops: BTreeSet<ObjectKey> = full.top_level_keys().into_iter().collect();
    let (mut placed, mut kinds) = (0, BTreeSet::new());
    for pod in all.iter().filter(|o| o.is_pod()) {
        let key = ObjectKey::of(pod);
        let Some(top) = full
            .owners(&key)
            .into_iter()
            .rev()
            .find(|k| tops.contains(k))
        else {
            continue;
        };
        let has_gangs = full
            .object(&top)
            .and_then(|o| full.definition_for(o))
            .is_some_and(|d| d.has_gangs());
        let expected = group_when_held(&full, &top, pod);
        // The same namespace (one fixture state) and the cluster-scoped objects (a TrainJob's
        // ClusterTrainingRuntime) without this pod: the pod is being created.
        let before = Index::new(
            reg.clone(),
            all.iter()
                .filter(|o| o.namespace() == pod.namespace() || o.namespace().is_empty())
                .filter(|o| ObjectKey::of(o) != key)
                .cloned(),
        );
        for (what, p, expected) in [
            ("named", pod.clone(), &expected),
            // Groups are not numbered by pod names: the pod falls in the same group before
            // it has one.
            ("nameless", without_name(pod), &expected),
        ] {
            let leaf = expected.as_ref().and_then(|(_, leaf)| leaf.as_ref());
            match before.place_pod(&p, SchedulerFormat::NativeComposite) {
                Placement::Group { tags, .. } => assert_eq!(
                    tags["spec"]["schedulingGroup"]["podGroupName"].as_str(),
                    leaf.map(String::as_str),
                    "{what} {key} (hierarchical)"
                ),
                other => assert!(
                    leaf.is_none()
                        && matches!(
                            other,
                            Placement::OutsideGangs { .. } | Placement::NoGangs { .. }
                        ),
                    "{what} {key} (hierarchical): {other:?}"
                ),
            }
            let expected = expected.as_ref().map(|(group, _)| group);
            match (before.place_pod(&p, SchedulerFormat::Native), expected) {
                (
                    Placement::Group {
                        workload,
                        group,
                        tags,
                    },
                    Some(want),
                ) => {
                    assert_eq!(workload, top, "{what} {key}");
                    assert_eq!(&group, want, "{what} {key}");
                    assert_eq!(
                        tags,
                        json!({"spec": {"schedulingGroup": {"podGroupName": want}}})
                    );
                    placed += 1;
                    kinds.insert(top.kind.kind.clone());
                }
                (Placement::NoGangs { workload }, None) => {
                    assert_eq!(workload, top, "{what} {key}");
                    assert!(!has_gangs, "{what} {key}: its definition gangs");
                }
                (Placement::OutsideGangs { workload }, None) => {
                    assert_eq!(workload, top, "{what} {key}");
                    assert!(has_gangs, "{what} {key}");
                }
                (got, want) => panic!("{what} {key}: placed {got:?}, held in {want:?}"),
            }
        }
    }
    assert!(placed >= 40, "pods placed in a group: {placed}");
    for k in [
        "JobSet",
        "RayCluster",
        "LeaderWorkerSet",
        "Job",
        "PyTorchJob",
    ] {
        assert!(kinds.contains(k), "no {k} pod was placed: {kinds:?}");
    }
}

fn job(name: &str, uid: &str, owner: Option<Value>) -> Object {
    let mut v = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "namespace": "ml", "uid": uid},
        "spec": {"parallelism": 1, "template": {"spec": {"containers": []}}}});
    if let Some(o) = owner {
        v["metadata"]["ownerReferences"] = json!([o]);
    }
    Object::new(v)
}

fn pod_of(owner: Value, labels: Value) -> Object {
    Object::new(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": "x-", "namespace": "ml", "labels": labels,
            "ownerReferences": [owner]},
        "spec": {"containers": []}}))
}

#[test]
fn an_owner_not_yet_seen_is_named_for_fetching() {
    let reg = wlmap_catalog::registry().expect("catalog");
    let jobset_ref = json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "name": "train", "uid": "js1", "controller": true});
    let job_ref = json!({"apiVersion": "batch/v1", "kind": "Job", "name": "train-workers-0",
        "uid": "j1", "controller": true});
    let pod = pod_of(
        job_ref,
        json!({"batch.kubernetes.io/job-name": "train-workers-0"}),
    );
    // Neither the Job nor its JobSet is held: the Job is named first.
    let none = Index::new(reg.clone(), []);
    assert_eq!(
        none.place_pod(&pod, SchedulerFormat::Native),
        Placement::MissingOwner(OwnerRef {
            api_version: "batch/v1".into(),
            kind: "Job".into(),
            name: "train-workers-0".into(),
            uid: "j1".into(),
            namespace: "ml".into(),
        })
    );
    // The Job is held, its JobSet is not: the JobSet is named next.
    let half = Index::new(
        reg.clone(),
        [job("train-workers-0", "j1", Some(jobset_ref))],
    );
    let Placement::MissingOwner(r) = half.place_pod(&pod, SchedulerFormat::Native) else {
        panic!("the JobSet is missing")
    };
    assert_eq!((r.kind.as_str(), r.name.as_str()), ("JobSet", "train"));
    // An owner of a kind no definition knows ends the walk: a bare pod of nobody we know.
    let foreign = pod_of(
        json!({"apiVersion": "example.com/v1", "kind": "Thing", "name": "t", "uid": "t1", "controller": true}),
        json!({}),
    );
    assert_eq!(
        none.place_pod(&foreign, SchedulerFormat::Native),
        Placement::NoWorkload
    );
}

#[test]
fn each_scheduler_format_tags_the_pod_its_own_way() {
    let reg = wlmap_catalog::registry().expect("catalog");
    let index = Index::new(reg, [job("train", "j1", None)]);
    let pod = pod_of(
        json!({"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "j1", "controller": true}),
        json!({"batch.kubernetes.io/job-name": "train"}),
    );
    let tags = |f| match index.place_pod(&pod, f) {
        Placement::Group { group, tags, .. } => (group, tags),
        other => panic!("{f:?}: {other:?}"),
    };
    assert_eq!(
        tags(SchedulerFormat::Coscheduling),
        (
            "train-job".into(),
            json!({"labels": {"scheduling.x-k8s.io/pod-group": "train-job"}})
        )
    );
    let (_, volcano) = tags(SchedulerFormat::Volcano);
    assert_eq!(
        volcano["annotations"]["scheduling.k8s.io/group-name"],
        "train-job"
    );
}
