//! The gang objects a workload needs, and what to do to get there from what exists: apply
//! what is missing or different, delete what wlmap wrote for this workload and no longer
//! needs, and leave alone what someone else wrote under the same name.

use crate::error::Error;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use wlmap_engine::{Definition, GangKind, MANAGED_BY, Object, SchedulerFormat, Workload};
use wlmap_inventory::Entry;
use wlmap_kube::Kind;

/// The kinds of a format's gang objects as the API serves them, parents before children.
///
/// ```
/// use wlmap_engine::SchedulerFormat;
/// let r = &wlmap_controller::gangs::kinds(SchedulerFormat::Native)[0];
/// assert_eq!((r.group.as_str(), r.version.as_str(), r.plural.as_str()), ("scheduling.k8s.io", "v1beta1", "podgroups"));
/// ```
pub fn kinds(format: SchedulerFormat) -> Vec<Kind> {
    format.format().kinds().iter().map(kind).collect()
}

/// A gang kind as the API serves it (every gang kind is namespaced).
pub fn kind(k: &GangKind) -> Kind {
    Kind::new(k.group, k.version, k.kind, k.plural, true)
}

/// What one reconcile of a workload is to do.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decision {
    /// The writes, in the order to make them: creations and changes parents first (a child
    /// may name its parent), deletions children first.
    pub writes: Vec<(GangKind, Action)>,
    /// Member pods without their group (created while the webhook was unreachable, or
    /// before the workload had gangs), not yet finished: the scheduler places them one by one.
    pub ungrouped: usize,
    /// Why wlmap writes nothing for this workload: something else gangs it (see
    /// [`gangs_itself`]). Its own leftovers are still removed.
    pub stepped_aside: Option<String>,
}

/// What to write for a workload, from what the controller holds: the workload as the
/// inventory resolved it, its pods, and the gang objects that exist. Pure: the same inputs
/// give the same decision, with no cluster.
///
/// ```
/// use wlmap_engine::{Object, SchedulerFormat};
/// use wlmap_controller::gangs::{Action, GangStore, decide};
/// let job = Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
///     "metadata": {"name": "train", "namespace": "ml", "uid": "j1"},
///     "spec": {"parallelism": 2, "template": {"spec": {"containers": []}}}}));
/// let index = wlmap_inventory::Index::new(wlmap_catalog::registry().unwrap(), [job.clone()]);
/// let entry = index.evaluate(&wlmap_inventory::ObjectKey::of(&job), None).unwrap();
/// let d = decide(&entry, &[], &GangStore::default(), SchedulerFormat::Native).unwrap();
/// let (kind, Action::Apply(pg)) = &d.writes[0] else { panic!() };
/// assert_eq!((kind.kind, pg["metadata"]["name"].as_str()), ("PodGroup", Some("train-job")));
/// ```
pub fn decide(
    entry: &Entry,
    pods: &[Object],
    store: &GangStore,
    format: SchedulerFormat,
) -> Result<Decision, Error> {
    if !entry.definition.has_gangs() {
        return Ok(Decision::default());
    }
    let w = entry
        .result
        .as_ref()
        .map_err(|e| Error::Unevaluated(e.to_string()))?;
    let root = &entry.object;
    let want = desired(&entry.definition, w, root, pods, format)?;
    let grouped = |p: &Object| format.format().already_grouped(p.json());
    let ungrouped = pods
        .iter()
        .filter(|p| want.members.contains(p.name()))
        .filter(|p| !grouped(p) && !finished(p))
        .count();
    let names: Vec<&str> = want
        .objects
        .iter()
        .filter_map(|o| o["metadata"]["name"].as_str())
        .collect();
    let existing = store.concerning(root.namespace(), &names, root.uid());
    if let Some(why) = gangs_itself(root, pods, &want.members, &names, &existing) {
        return Ok(Decision {
            writes: ordered(format, &[], &existing, root.uid()),
            ungrouped: 0,
            stepped_aside: Some(why),
        });
    }
    Ok(Decision {
        writes: ordered(format, &want.objects, &existing, root.uid()),
        ungrouped,
        stepped_aside: None,
    })
}

/// Kueue's integrations on by default (sigs.k8s.io/kueue v0.17.0
/// config/components/manager/controller_manager_config.yaml, `integrations.frameworks`).
pub const KUEUE_FRAMEWORKS: &[&str] = &[
    "batch/job",
    "kubeflow.org/mpijob",
    "ray.io/rayjob",
    "ray.io/raycluster",
    "ray.io/rayservice",
    "jobset.x-k8s.io/jobset",
    "kubeflow.org/paddlejob",
    "kubeflow.org/pytorchjob",
    "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob",
    "kubeflow.org/jaxjob",
    "workload.codeflare.dev/appwrapper",
    "trainer.kubeflow.org/trainjob",
    "pod",
    "deployment",
    "statefulset",
    "leaderworkerset.x-k8s.io/leaderworkerset",
];

/// The name of Kueue's MutatingWebhookConfiguration (its install's, kustomize and Helm):
/// wlmap's must sort before it.
pub const KUEUE_WEBHOOK_CONFIG: &str = "kueue-mutating-webhook-configuration";

/// Why Kueue runs a workload itself, when it does: the workload names a LocalQueue
/// (`kueue.x-k8s.io/queue-name`) and Kueue's integration for its kind is on (`frameworks`,
/// named as Kueue's configuration names them). Kueue then admits it whole through its own
/// integration, and wlmap writes no pod group for it.
///
/// ```
/// let js = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "jobset.x-k8s.io/v1alpha2",
///     "kind": "JobSet", "metadata": {"name": "js", "labels": {"kueue.x-k8s.io/queue-name": "team"}}}));
/// let on = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
/// assert!(wlmap_controller::gangs::kueue_runs_itself(&js, &on(&["jobset.x-k8s.io/jobset"])).is_some());
/// assert!(wlmap_controller::gangs::kueue_runs_itself(&js, &on(&["pod"])).is_none());
/// ```
pub fn kueue_runs_itself(root: &Object, frameworks: &[String]) -> Option<String> {
    let queue = root.json()["metadata"]["labels"][wlmap_engine::KUEUE_QUEUE_LABEL].as_str()?;
    let gvk = root.gvk();
    let kind = gvk.kind.to_lowercase();
    let name = match (gvk.group.as_str(), kind.as_str()) {
        ("", "pod") | ("apps", "deployment") | ("apps", "statefulset") => kind.clone(),
        (group, _) => format!("{group}/{kind}"),
    };
    frameworks.contains(&name).then(|| {
        format!(
            "Kueue admits it itself (its integration {name} is on; queue {queue}): wlmap writes no pod group for it"
        )
    })
}

/// Why a workload needs no gang from wlmap, when something else gangs it: a member pod
/// already names a scheduling group that is not wlmap's (`spec.schedulingGroup`: the v1.37
/// Job controller with `WorkloadWithJob`, an operator that sets it), or the workload owns a
/// gang object wlmap did not write, under another name (an operator's own PodGroup or
/// Workload; one of the wanted name stays a conflict, said as such).
///
/// ```
/// use std::collections::BTreeSet;
/// let job = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
///     "metadata": {"name": "train", "namespace": "ml", "uid": "j1"}}));
/// let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
///     "metadata": {"name": "train-0", "namespace": "ml"},
///     "spec": {"schedulingGroup": {"podGroupName": "train-job-pg"}}}));
/// let members: BTreeSet<String> = ["train-0".to_string()].into();
/// let why = wlmap_controller::gangs::gangs_itself(&job, &[pod], &members, &["train-job"], &[]);
/// assert!(why.unwrap().contains("train-job-pg"));
/// ```
pub fn gangs_itself(
    root: &Object,
    pods: &[Object],
    members: &BTreeSet<String>,
    ours: &[&str],
    existing: &[Value],
) -> Option<String> {
    let named = pods
        .iter()
        .filter(|p| members.contains(p.name()))
        .find_map(|p| {
            let g = p
                .json()
                .pointer("/spec/schedulingGroup/podGroupName")?
                .as_str()?;
            (!ours.contains(&g)).then(|| (p.name().to_string(), g.to_string()))
        });
    if let Some((pod, group)) = named {
        return Some(format!(
            "its pods name their own scheduling group (pod {pod}: PodGroup {group}), as the Job controller with WorkloadWithJob or an operator writes it: wlmap writes no gang for it"
        ));
    }
    let managed = |o: &Value| o["metadata"]["labels"][MANAGED_BY.0] == MANAGED_BY.1;
    let owned = |o: &Value| {
        o["metadata"]["ownerReferences"]
            .as_array()
            .is_some_and(|r| r.iter().any(|x| x["uid"] == root.uid()))
    };
    existing
        .iter()
        .find(|o| {
            let name = o["metadata"]["name"].as_str().unwrap_or("");
            owned(o) && !managed(o) && !ours.contains(&name)
        })
        .map(|o| {
            format!(
                "it owns a {} of its own ({}), written by its controller: wlmap writes no gang for it",
                o["kind"].as_str().unwrap_or("gang object"),
                o["metadata"]["name"].as_str().unwrap_or("")
            )
        })
}

/// Each kind's plan, in the order to carry it out: creations and changes parents first,
/// deletions children first.
fn ordered(
    format: SchedulerFormat,
    want: &[Value],
    existing: &[Value],
    uid: &str,
) -> Vec<(GangKind, Action)> {
    let of_kind = |objs: &[Value], k: &GangKind| -> Vec<Value> {
        objs.iter()
            .filter(|o| o["kind"] == k.kind)
            .cloned()
            .collect()
    };
    let mut writes = Vec::new();
    let mut deletes = Vec::new();
    for k in format.format().kinds() {
        for a in plan(&of_kind(want, k), &of_kind(existing, k), uid) {
            match a {
                Action::Delete { .. } => deletes.push((*k, a)),
                _ => writes.push((*k, a)),
            }
        }
    }
    deletes.reverse();
    writes.extend(deletes);
    writes
}

/// The places of a pod that the formats and [`decide`] read besides the definition's own
/// ([`Definition::pod_gang_reads`]): its labels and annotations (the group tags of
/// coscheduling, KAI, Kueue, Volcano), its owners, and the group it names (native and
/// hierarchical: `schedulingGroup`; workload: `workloadRef`). Whether it has finished is
/// compared too ([`finished`]).
const POD_GANG_PLACES: &[&[&str]] = &[
    &["metadata", "labels"],
    &["metadata", "annotations"],
    &["metadata", "ownerReferences"],
    &["spec", "schedulingGroup"],
    &["spec", "workloadRef"],
];

/// Can this change of a pod change what its workload's gangs need? Not when the two
/// versions agree at every place grouping reads (the definition's, [`POD_GANG_PLACES`]) and
/// both have finished or neither has: most of a pod's changes (bound to a node, its
/// conditions, its containers started, running) leave its workload's decision as it was,
/// and reconciling on each of them was most of what a leader spent on a burst of pods.
/// True when unsure (a definition whose grouping may read any part of a pod).
///
/// ```
/// use wlmap_engine::Object;
/// let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
/// let pod = |phase: &str, node: &str| Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
///     "metadata": {"name": "p", "labels": {"app": "x"}}, "spec": {"nodeName": node}, "status": {"phase": phase}}));
/// use wlmap_controller::gangs::pod_change_matters;
/// assert!(!pod_change_matters(&def, &pod("Pending", ""), &pod("Running", "n1")));
/// assert!(pod_change_matters(&def, &pod("Running", "n1"), &pod("Succeeded", "n1")));
/// ```
pub fn pod_change_matters(def: &Definition, old: &Object, new: &Object) -> bool {
    let Some(reads) = def.pod_gang_reads() else {
        return true;
    };
    let differ = |path: &[&str]| place(old, path) != place(new, path);
    old.uid() != new.uid()
        || finished(old) != finished(new)
        || POD_GANG_PLACES.iter().any(|p| differ(p))
        || reads.iter().any(|p| {
            let keys: Vec<&str> = p.iter().map(String::as_str).collect();
            differ(&keys)
        })
}

/// The value at a path of keys (`None` for null or absent alike).
fn place<'o>(o: &'o Object, path: &[&str]) -> Option<&'o Value> {
    path.iter()
        .try_fold(o.json(), |v, k| v.get(k))
        .filter(|v| !v.is_null())
}

/// A pod that has run its course (its group no longer matters).
fn finished(p: &Object) -> bool {
    matches!(
        p.json()["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    )
}

/// A pod created without its group (the webhook unreachable at that moment) can never join
/// it: the tag is fixed when the pod is created. Each group's minimum, and each sub-group's,
/// is lowered by its members outside it (to no less than 1), so that the members it can
/// still hold are not kept waiting for them forever; once those pods are gone (replaced
/// through the webhook), the definition's minimum holds again.
fn lower_by_outsiders(
    g: &mut wlmap_engine::PodGroup,
    seen: &wlmap_engine::PodGroup,
    outside: &BTreeSet<&str>,
) {
    let is_out = |n: &&String| outside.contains(n.as_str());
    // A pod is counted once, whether the group lists it or one of its sub-groups does.
    let lost: BTreeSet<&String> = seen
        .members
        .iter()
        .chain(seen.sub_groups.iter().flat_map(|s| &s.members))
        .filter(is_out)
        .collect();
    g.min_member = lowered(g.min_member, lost.len());
    for s in &mut g.sub_groups {
        if let Some(seen) = seen.sub_groups.iter().find(|x| x.name == s.name) {
            s.min_member = lowered(s.min_member, seen.members.iter().filter(is_out).count());
        }
    }
}

/// A minimum lowered by `lost` members, to no less than 1 (untouched when none is lost: a
/// group of no pods keeps its 0).
fn lowered(min: u64, lost: usize) -> u64 {
    if lost == 0 {
        min
    } else {
        min.saturating_sub(lost as u64).max(1)
    }
}

/// What a workload's gangs need: the objects to write, and the pods they hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Desired {
    /// One per group its spec predicts, plus one per group its pods fall in that the spec
    /// does not predict (pods already tagged with such a group must find it), with minimum
    /// counts from the spec.
    pub objects: Vec<Value>,
    /// The names of the pods the format puts in a group (a pod outside every group, such as
    /// one outside every sub-group in the hierarchical form, is scheduled on its own).
    pub members: BTreeSet<String>,
}

/// The gang objects of a workload and the pods they hold.
///
/// ```
/// use wlmap_engine::{Object, SchedulerFormat};
/// let job = Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
///     "metadata": {"name": "train", "namespace": "ml", "uid": "j1"},
///     "spec": {"parallelism": 3, "template": {"spec": {"containers": []}}}}));
/// let reg = wlmap_catalog::registry().unwrap();
/// let def = reg.for_kind(&job.gvk()).unwrap();
/// let w = wlmap_engine::resolve(def, &job).unwrap();
/// let objs = wlmap_controller::gangs::desired(def, &w, &job, &[], SchedulerFormat::Native).unwrap().objects;
/// assert_eq!(objs[0]["metadata"]["name"], "train-job");
/// assert_eq!(objs[0]["spec"]["schedulingPolicy"]["gang"]["minCount"], 3);
/// ```
pub fn desired(
    def: &Definition,
    w: &Workload,
    root: &Object,
    pods: &[Object],
    format: SchedulerFormat,
) -> Result<Desired, wlmap_engine::Error> {
    let mut groups = wlmap_engine::gangs(def, w, None)?;
    let mut members = BTreeSet::new();
    if !pods.is_empty() {
        let observed = wlmap_engine::gangs(def, w, Some(pods))?;
        let tags = wlmap_engine::render_gangs(format, &observed, w, root).pod_tags;
        members.extend(
            tags.iter()
                .filter_map(|t| t["pod"].as_str().map(String::from)),
        );
        let outside: BTreeSet<&str> = pods
            .iter()
            .filter(|p| members.contains(p.name()))
            .filter(|p| !format.format().already_grouped(p.json()) && !finished(p))
            .map(Object::name)
            .collect();
        for g in &observed {
            if !groups.iter().any(|p| p.name == g.name) {
                groups.push(g.clone());
            }
        }
        // In the hierarchical form the lowered sub-group minimums go to the leaf PodGroups and
        // to the Workload's templates alike; the API server (v1.37) takes either in place.
        for g in &mut groups {
            if let Some(seen) = observed.iter().find(|o| o.name == g.name) {
                lower_by_outsiders(g, seen, &outside);
            }
        }
    }
    let objects = wlmap_engine::render_gangs(format, &groups, w, root).objects;
    Ok(Desired { objects, members })
}

/// One write to make.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Server-side apply this object (create it, or take it to this state).
    Apply(Value),
    /// Delete the object of this name and uid (one wlmap wrote for this workload).
    Delete {
        /// The object's name.
        name: String,
        /// uid: the delete's precondition, so a newer object of the same name is kept.
        uid: String,
    },
    /// An object of the wanted name exists and is not wlmap's: leave it (a native
    /// integration, or another tool, takes precedence).
    Conflict {
        /// The name wlmap would give its object, held by someone else's.
        name: String,
    },
}

/// True when wlmap wrote the object (it carries the managed-by label).
///
/// ```
/// let o = serde_json::json!({"metadata": {"labels": {"app.kubernetes.io/managed-by": "wlmap"}}});
/// assert!(wlmap_controller::gangs::is_ours(&o));
/// assert!(!wlmap_controller::gangs::is_ours(&serde_json::json!({"metadata": {}})));
/// ```
pub fn is_ours(o: &Value) -> bool {
    o.pointer("/metadata/labels")
        .and_then(|l| l.get(MANAGED_BY.0))
        .and_then(Value::as_str)
        == Some(MANAGED_BY.1)
}

pub(crate) fn owned_by(o: &Value, uid: &str) -> bool {
    o.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| refs.iter().any(|r| r["uid"] == uid))
}

/// Does the existing object already say what the desired one says (spec, labels, owner)?
fn holds(existing: &Value, want: &Value) -> bool {
    // A subset: the server fills in defaults the desired object does not name.
    says(&want["spec"], &existing["spec"])
        && says(&want["metadata"]["labels"], &existing["metadata"]["labels"])
        && want["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .all(|r| owned_by(existing, r["uid"].as_str().unwrap_or("")))
}

/// Does `have` say everything `want` says, at every depth? Fields `want` does not name may be
/// there (defaults, or `null` where the API writes its unset optional fields, as in a
/// Workload's templates); lists must have the same length, item by item.
///
/// ```
/// use serde_json::json;
/// use wlmap_controller::gangs::says;
/// let want = json!({"templates": [{"name": "a", "policy": {"gang": {"minCount": 2}}}]});
/// let have = json!({"templates": [{"name": "a", "constraints": null,
///     "policy": {"gang": {"minCount": 2}}}], "mode": {"single": {}}});
/// assert!(says(&want, &have));
/// let scaled = json!({"templates": [{"name": "a", "policy": {"gang": {"minCount": 3}}}]});
/// assert!(!says(&scaled, &have));
/// ```
pub fn says(want: &Value, have: &Value) -> bool {
    match (want, have) {
        (Value::Null, _) => true,
        (Value::Object(w), Value::Object(h)) => w
            .iter()
            .all(|(k, v)| says(v, h.get(k).unwrap_or(&Value::Null))),
        (Value::Object(w), Value::Null) => w.is_empty(),
        (Value::Array(w), Value::Array(h)) => {
            w.len() == h.len() && w.iter().zip(h).all(|(w, h)| says(w, h))
        }
        _ => want == have,
    }
}

/// What to do for one workload: `desired` objects against the `existing` objects of the same
/// kind in its namespace (by name).
///
/// ```
/// use wlmap_controller::gangs::{Action, plan};
/// let want = serde_json::json!({"metadata": {"name": "train-job"}, "spec": {"minMember": 3}});
/// let theirs = serde_json::json!({"metadata": {"name": "train-job", "uid": "x"}, "spec": {"minMember": 2}});
/// assert_eq!(plan(&[want.clone()], &[], "j1"), vec![Action::Apply(want.clone())]);
/// assert_eq!(plan(&[want], &[theirs], "j1"), vec![Action::Conflict { name: "train-job".into() }]);
/// ```
pub fn plan(desired: &[Value], existing: &[Value], workload_uid: &str) -> Vec<Action> {
    let name = |o: &Value| o["metadata"]["name"].as_str().unwrap_or("").to_string();
    let by_name: BTreeMap<String, &Value> = existing.iter().map(|o| (name(o), o)).collect();
    let mut out = Vec::new();
    for want in desired {
        match by_name.get(&name(want)) {
            Some(e) if !is_ours(e) => out.push(Action::Conflict { name: name(want) }),
            Some(e) if holds(e, want) => {}
            _ => out.push(Action::Apply(want.clone())),
        }
    }
    for e in existing {
        let n = name(e);
        if is_ours(e)
            && owned_by(e, workload_uid)
            && !desired.iter().any(|d| name(d) == n)
            && e["metadata"]["deletionTimestamp"].is_null()
        {
            out.push(Action::Delete {
                name: n,
                uid: e["metadata"]["uid"].as_str().unwrap_or("").to_string(),
            });
        }
    }
    out
}

/// The gang objects that exist, by kind, namespace and name, with an index by owner uid: a
/// reconcile reads the few that concern its workload, however many the namespace holds.
///
/// ```
/// let mut store = wlmap_controller::gangs::GangStore::default();
/// store.insert(serde_json::json!({"kind": "PodGroup", "metadata": {"namespace": "ml", "name": "a-gang",
///     "ownerReferences": [{"uid": "w1"}]}}));
/// store.insert(serde_json::json!({"kind": "PodGroup", "metadata": {"namespace": "ml", "name": "b-gang"}}));
/// store.insert(serde_json::json!({"kind": "Workload", "metadata": {"namespace": "ml", "name": "b-gang"}}));
/// assert_eq!(store.concerning("ml", &["b-gang"], "w1").len(), 3);
/// assert_eq!(store.concerning("ml", &[], "w2").len(), 0);
/// store.replace_kind("Workload", vec![]);
/// assert_eq!(store.concerning("ml", &["b-gang"], "w1").len(), 2);
/// ```
#[derive(Debug, Default)]
pub struct GangStore {
    objects: BTreeMap<Key, Value>,
    by_owner: BTreeMap<String, std::collections::BTreeSet<Key>>,
    /// The kinds ever held (a format writes one to three).
    kinds: std::collections::BTreeSet<String>,
}

/// Kind, namespace, name: a CompositePodGroup and its Workload share a name.
type Key = (String, String, String);

fn key_of(v: &Value) -> Key {
    let m = &v["metadata"];
    let text = |k: &str| m[k].as_str().unwrap_or("").to_string();
    let kind = v["kind"].as_str().unwrap_or("").to_string();
    (kind, text("namespace"), text("name"))
}

fn owner_uids(v: &Value) -> impl Iterator<Item = String> + '_ {
    v["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["uid"].as_str().map(String::from))
}

impl GangStore {
    /// Hold an object as it now is.
    pub fn insert(&mut self, v: Value) {
        let key = key_of(&v);
        self.remove(&v);
        self.kinds.insert(key.0.clone());
        for uid in owner_uids(&v) {
            self.by_owner.entry(uid).or_default().insert(key.clone());
        }
        self.objects.insert(key, v);
    }

    /// Forget the object of this one's namespace and name.
    pub fn remove(&mut self, v: &Value) {
        let key = key_of(v);
        if let Some(old) = self.objects.remove(&key) {
            for uid in owner_uids(&old) {
                if let Some(keys) = self.by_owner.get_mut(&uid) {
                    keys.remove(&key);
                    if keys.is_empty() {
                        self.by_owner.remove(&uid);
                    }
                }
            }
        }
    }

    /// Replace every object of a kind (a relist of its watch).
    pub fn replace_kind(&mut self, kind: &str, objects: impl IntoIterator<Item = Value>) {
        let old: Vec<Value> = self
            .objects
            .iter()
            .filter(|(k, _)| k.0 == kind)
            .map(|(_, v)| v.clone())
            .collect();
        for v in &old {
            self.remove(v);
        }
        for v in objects {
            self.insert(v);
        }
    }

    /// The objects of a namespace with one of these names (of any kind), or owned by this uid.
    pub fn concerning(&self, ns: &str, names: &[&str], owner_uid: &str) -> Vec<Value> {
        let mut keys: std::collections::BTreeSet<Key> = self
            .kinds
            .iter()
            .flat_map(|k| {
                names
                    .iter()
                    .map(move |n| (k.clone(), ns.to_string(), n.to_string()))
            })
            .collect();
        keys.extend(self.by_owner.get(owner_uid).into_iter().flatten().cloned());
        keys.iter()
            .filter_map(|k| self.objects.get(k))
            .cloned()
            .collect()
    }
}
