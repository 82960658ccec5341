//! Where a pod being created belongs for gang scheduling: the group of its top-level
//! workload it joins, and the tags (labels, annotations or spec fields) that tie it there.
//! An admission webhook asks this of every pod before the pod exists, so the pod is placed
//! as if it were already held, without its name (a pod made from `generateName` has none yet).

use crate::index::Index;
use crate::key::ObjectKey;
use crate::store::controller_ref;
use serde_json::Value;
use wlmap_engine::{MAX_OWNER_DEPTH, Object, SchedulerFormat};
use wlmap_schema::GroupKind;

/// What a pod being created is, for gang scheduling.
#[derive(Debug, Clone, PartialEq)]
pub enum Placement {
    /// The pod joins `group` of `workload`; merge `tags` into it (`labels`, `annotations`
    /// and/or `spec`, as the scheduler format reads them).
    Group {
        /// The top-level workload.
        workload: ObjectKey,
        /// The group's name (the gang object the scheduler reads).
        group: String,
        /// What ties the pod to the group: `{"labels"?, "annotations"?, "spec"?}`.
        tags: Value,
    },
    /// No workload of a defined kind controls the pod.
    NoWorkload,
    /// The pod's workload declares no gang scheduling.
    NoGangs {
        /// The top-level workload.
        workload: ObjectKey,
    },
    /// The pod's workload gangs, but none of its groups holds the pod: a `podGroups` member's
    /// filters leave it out, or the format gangs its group by sub-groups and the pod is in
    /// none (a RayJob's submitter, beside its cluster's head and workers). It is scheduled
    /// on its own, as the definition says.
    OutsideGangs {
        /// The top-level workload.
        workload: ObjectKey,
    },
    /// The pod's workload gangs, but the pod could not be put in a group; `why` says why.
    Unplaced {
        /// The top-level workload.
        workload: ObjectKey,
        /// Why, in words.
        why: String,
    },
    /// An owner on the pod's controller chain, of a kind a definition knows, is not held:
    /// fetch it, add it, and ask again.
    MissingOwner(OwnerRef),
}

/// A controller owner reference, with the namespace of the object that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerRef {
    /// `apiVersion` of the owner.
    pub api_version: String,
    /// `kind` of the owner.
    pub kind: String,
    /// Name of the owner.
    pub name: String,
    /// uid of the owner.
    pub uid: String,
    /// Namespace of the owned object (an owner is in the same namespace, or cluster-scoped).
    pub namespace: String,
}

/// The name a nameless pod (`generateName`) is placed under: not a valid object name, so it
/// never matches a pod that exists, and it sorts after every valid one, so the pod comes last
/// among its workload's pods and the groups already numbered keep their names.
const UNNAMED: &str = "~pod being created";

impl Index {
    /// Place a pod being created (not yet held): walk its controller owners up to the
    /// top-level workload, resolve that workload with the pod among its pods, and find the
    /// group the pod falls in.
    ///
    /// ```
    /// use wlmap_inventory::{Index, Placement};
    /// // The catalog's Job definition gangs a Job's pods by their job-name label.
    /// let reg = wlmap_catalog::registry().unwrap();
    /// let job = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
    ///     "metadata": {"name": "train", "namespace": "ml", "uid": "j1"},
    ///     "spec": {"parallelism": 2, "template": {"spec": {"containers": []}}}}));
    /// let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
    ///     "metadata": {"generateName": "train-", "namespace": "ml",
    ///         "labels": {"batch.kubernetes.io/job-name": "train"}, "ownerReferences": [
    ///         {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "j1", "controller": true}]},
    ///     "spec": {"containers": []}}));
    /// let index = Index::new(reg, [job]);
    /// let Placement::Group { group, tags, .. } = index.place_pod(&pod, wlmap_engine::SchedulerFormat::Native) else { panic!() };
    /// assert_eq!(group, "train-job");
    /// assert_eq!(tags["spec"]["schedulingGroup"]["podGroupName"], "train-job");
    /// ```
    pub fn place_pod(&self, pod: &Object, format: SchedulerFormat) -> Placement {
        let top = match self.top_owner(pod) {
            Ok(Some(top)) => top,
            Ok(None) => return Placement::NoWorkload,
            Err(missing) => return Placement::MissingOwner(missing),
        };
        let workload = ObjectKey::of(top);
        let Some(def) = self.definition_for(top).filter(|d| d.has_gangs()) else {
            return Placement::NoGangs { workload };
        };
        let unplaced = |why: String| Placement::Unplaced {
            workload: workload.clone(),
            why,
        };
        let pod = named(pod);
        let w = match self.resolve_with_pod(def, top, &pod) {
            Ok(w) => w,
            Err(e) => return unplaced(format!("{} cannot evaluate {workload}: {e}", def.name())),
        };
        let mut pods = self.pods_below(&workload);
        pods.push(pod.clone());
        let groups = match wlmap_engine::gangs(def, &w, Some(&pods)) {
            Ok(g) => g,
            Err(e) => return unplaced(format!("{} cannot group {workload}: {e}", def.name())),
        };
        let Some(g) = groups
            .iter()
            .find(|g| g.members.iter().any(|m| m == pod.name()))
        else {
            return Placement::OutsideGangs { workload };
        };
        let rendered = wlmap_engine::render_gangs(format, std::slice::from_ref(g), &w, top);
        let tags = rendered
            .pod_tags
            .into_iter()
            .find(|t| t["pod"] == pod.name())
            .map(|mut t| {
                if let Some(m) = t.as_object_mut() {
                    m.remove("pod");
                }
                t
            });
        match tags {
            Some(tags) => Placement::Group {
                workload,
                group: g.name.clone(),
                tags,
            },
            None => Placement::OutsideGangs { workload },
        }
    }

    /// The topmost top-level workload on the pod's controller chain; an error naming the
    /// first owner of a known kind that is not held.
    fn top_owner<'a>(&'a self, pod: &'a Object) -> Result<Option<&'a Object>, OwnerRef> {
        let mut top = None;
        let mut at = pod;
        for _ in 0..MAX_OWNER_DEPTH {
            let Some(r) = controller_ref(at) else { break };
            let text = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            match self.store.by_uid(&text("uid")) {
                Some(owner) => {
                    if self.is_top_level(owner) {
                        top = Some(owner);
                    }
                    at = owner;
                }
                None => {
                    let gk = GroupKind::from_api_version(&text("apiVersion"), &text("kind"));
                    if self.defs.is_known(&gk) {
                        return Err(OwnerRef {
                            api_version: text("apiVersion"),
                            kind: text("kind"),
                            name: text("name"),
                            uid: text("uid"),
                            namespace: at.namespace().to_string(),
                        });
                    }
                    break;
                }
            }
        }
        Ok(top)
    }
}

/// The pod with a name to be found by: its own, or a placeholder while it has none.
fn named(pod: &Object) -> Object {
    if !pod.name().is_empty() {
        return pod.clone();
    }
    let mut json = pod.json().clone();
    if let Some(m) = json.get_mut("metadata").and_then(Value::as_object_mut) {
        m.insert("name".into(), Value::from(UNNAMED));
    }
    Object::new(json)
}
