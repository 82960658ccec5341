//! The inventory: objects in, top-level workloads out, kept resolved as objects and definitions
//! change.

use crate::definitions::Definitions;
use crate::index::{Entry, Index};
use crate::key::ObjectKey;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use wlmap_engine::{Object, Registry};
use wlmap_schema::GroupKind;

/// How many packed objects may hold their parsed JSON, at least, beyond those left after a
/// release ([`Inventory::releasing_beyond`]).
const RELEASE_FLOOR: usize = 4096;

/// How a top-level workload changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// It became a top-level workload (created, or no longer part of a bigger one).
    Added,
    /// Its tree, status, pods or resources changed.
    Changed,
    /// It is no longer a top-level workload (deleted, or now part of a bigger one).
    Removed,
}

/// A change to one top-level workload, as returned by every update of the inventory.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Change {
    /// The workload.
    pub key: ObjectKey,
    /// What happened to it.
    pub kind: ChangeKind,
}

/// One update of an [`Inventory::apply_batch`].
#[derive(Debug, Clone)]
pub enum Update {
    /// Add or replace an object.
    Apply(Object),
    /// Remove the object of this key.
    Delete(ObjectKey),
}

/// What an [`Inventory::apply_batch`] did.
#[derive(Debug, Default)]
pub struct Applied {
    /// The top-level workloads that changed, each once.
    pub changes: Vec<Change>,
    /// For each update, in order, the keys it affected: its own, the objects up its owner
    /// chain (and down it when ownership changed), and the workloads that read it as a
    /// reference or through DRA.
    pub affected: Vec<BTreeSet<ObjectKey>>,
}

/// A batch under way: the keys to decide and resolve at its end, and the changes made on
/// the way (a pod's facts read where it already is).
#[derive(Default)]
struct Staged {
    pending: BTreeSet<ObjectKey>,
    changes: BTreeMap<ObjectKey, ChangeKind>,
}

/// Which objects form which workload, kept up to date.
///
/// Holds a set of Kubernetes objects and the definitions in force, decides which objects are
/// top-level workloads (an object whose kind has a definition and that no object of a known
/// kind controls), and keeps each one resolved with its pods attributed. Every update returns
/// the workloads it changed, and touches only the workloads it can affect: those up the owner
/// chain of the changed object (and down it when ownership itself changed), and, for a kind
/// read as a reference, the workloads whose definitions read it.
///
/// ```
/// use wlmap_inventory::{ChangeKind, Inventory};
/// use wlmap_engine::Object;
/// let registry = wlmap_catalog::registry().unwrap();
/// let job = Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
///     "metadata": {"name": "train", "namespace": "ml", "uid": "j1"},
///     "spec": {"parallelism": 1, "template": {"spec": {"containers": [
///         {"name": "t", "resources": {"limits": {"nvidia.com/gpu": 4}}}]}}}}));
/// let mut inv = Inventory::from_objects(registry, [job]);
/// assert_eq!(inv.workloads().count(), 1);
///
/// let pod = Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
///     "metadata": {"name": "train-x", "namespace": "ml", "uid": "p1",
///         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "j1", "controller": true}]},
///     "spec": {"containers": [{"name": "t"}]}, "status": {"phase": "Running"}}));
/// let changes = inv.apply(pod);
/// assert_eq!(changes.len(), 1);
/// assert_eq!(changes[0].kind, ChangeKind::Changed); // the Job got a pod; the pod is not a workload of its own
/// let w = inv.workloads().next().unwrap().result.as_ref().unwrap();
/// assert_eq!(w.observed_pods(), 1);
/// ```
#[derive(Default)]
pub struct Inventory {
    index: Index,
    workloads: BTreeMap<ObjectKey, Entry>,
    /// When more packed objects than this hold their parsed JSON, the inventory lets go of
    /// it ([`Inventory::settle`]).
    release_above: usize,
    /// The keys updated since the last [`Inventory::settle`]: what they read is let go of.
    touched: Vec<ObjectKey>,
    /// How many more may hold it after a release, when set ([`Inventory::releasing_beyond`]);
    /// else an eighth of the objects, at least [`RELEASE_FLOOR`].
    release_slack: Option<usize>,
    /// True while resolving is put off ([`Inventory::put_off_resolving`]).
    putting_off: bool,
    /// The workloads updates affected while resolving was put off, resolved at the next
    /// [`Inventory::catch_up`] (or the next update taken while resolving is not put off).
    behind: BTreeSet<ObjectKey>,
}

impl Inventory {
    /// An empty inventory with these definitions.
    ///
    /// ```
    /// let inv = wlmap_inventory::Inventory::new(wlmap_engine::Registry::default());
    /// assert_eq!(inv.workloads().count(), 0);
    /// ```
    pub fn new(registry: Registry) -> Inventory {
        Inventory::from_index(Index::new(registry, []))
    }

    /// An inventory of these objects, every top-level workload resolved on every core
    /// (references are read from the objects given).
    ///
    /// ```
    /// let inv = wlmap_inventory::Inventory::from_objects(wlmap_engine::Registry::default(), []);
    /// assert!(inv.index().is_empty());
    /// ```
    pub fn from_objects(
        registry: Registry,
        objects: impl IntoIterator<Item = Object>,
    ) -> Inventory {
        Inventory::from_index(Index::new(registry, objects))
    }

    /// An inventory of an index's objects, every top-level workload resolved on every core.
    ///
    /// ```
    /// let inv = wlmap_inventory::Inventory::from_index(wlmap_inventory::Index::default());
    /// assert!(inv.index().is_empty());
    /// ```
    pub fn from_index(index: Index) -> Inventory {
        let roots = index.top_level_keys();
        let workloads = index
            .evaluate_all(&roots)
            .into_iter()
            .flatten()
            .map(|e| (e.key.clone(), e))
            .collect();
        let mut inv = Inventory {
            index,
            workloads,
            release_above: 0,
            release_slack: None,
            touched: Vec::new(),
            putting_off: false,
            behind: BTreeSet::new(),
        };
        inv.settle();
        inv
    }

    /// The objects and definitions, indexed: the one-off questions.
    ///
    /// ```
    /// let inv = wlmap_inventory::Inventory::default();
    /// assert!(inv.index().is_empty());
    /// ```
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// The top-level workloads, in key order (namespace, kind, name).
    ///
    /// ```
    /// assert!(wlmap_inventory::Inventory::default().workloads().next().is_none());
    /// ```
    pub fn workloads(&self) -> impl Iterator<Item = &Entry> {
        self.workloads.values()
    }

    /// A top-level workload by key.
    ///
    /// ```
    /// # use wlmap_inventory::*;
    /// let k = ObjectKey::new("ml", wlmap_schema::GroupKind::new("batch", "Job"), "x");
    /// assert!(Inventory::default().workload(&k).is_none());
    /// ```
    pub fn workload(&self, key: &ObjectKey) -> Option<&Entry> {
        self.workloads.get(key)
    }

    /// Add or replace an object; returns the top-level workloads that changed.
    ///
    /// ```
    /// let mut inv = wlmap_inventory::Inventory::new(wlmap_catalog::registry().unwrap());
    /// let job = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
    ///     "metadata": {"name": "j", "namespace": "ml", "uid": "j1"}, "spec": {"template": {"spec": {"containers": []}}}}));
    /// assert_eq!(inv.apply(job.clone())[0].kind, wlmap_inventory::ChangeKind::Added);
    /// assert!(inv.apply(job).is_empty()); // the same object again changes nothing
    /// ```
    pub fn apply(&mut self, obj: Object) -> Vec<Change> {
        self.apply_batch(vec![Update::Apply(obj)]).changes
    }

    /// Take several updates in at once: each object goes into the store as it comes, and the
    /// workloads they affect are resolved once, after the last. A burst of one workload's
    /// objects (its pods created, its children's status written) resolves it once, not at
    /// each object; what the workloads show is what applying the updates one by one gives.
    ///
    /// ```
    /// use wlmap_inventory::{ChangeKind, Inventory, Update};
    /// let mut inv = Inventory::new(wlmap_catalog::registry().unwrap());
    /// let job = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
    ///     "metadata": {"name": "j", "namespace": "ml", "uid": "j1"}, "spec": {"template": {"spec": {"containers": []}}}}));
    /// let pod = |n: &str| wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
    ///     "metadata": {"name": n, "namespace": "ml", "uid": n,
    ///         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "j1", "controller": true}]},
    ///     "spec": {"containers": [{"name": "t"}]}, "status": {"phase": "Pending"}}));
    /// let applied = inv.apply_batch(vec![Update::Apply(job.clone()), Update::Apply(pod("a")), Update::Apply(pod("b"))]);
    /// assert_eq!(applied.changes.len(), 1);
    /// assert_eq!(applied.changes[0].kind, ChangeKind::Added); // added once, with both pods
    /// assert_eq!(inv.workloads().next().unwrap().result.as_ref().unwrap().observed_pods(), 2);
    /// // Each update's affected keys: the pod's own and its Job's.
    /// assert!(applied.affected[2].contains(&wlmap_inventory::ObjectKey::of(&job)));
    /// ```
    pub fn apply_batch(&mut self, updates: Vec<Update>) -> Applied {
        let mut staged = Staged::default();
        let affected = updates
            .into_iter()
            .map(|u| match u {
                Update::Apply(obj) => {
                    let held = self.index.store.hold(obj);
                    self.stage_apply(held, &mut staged)
                }
                Update::Delete(key) => self.stage_delete(&key, &mut staged),
            })
            .collect();
        if self.putting_off {
            self.behind.extend(staged.pending);
        } else {
            let mut pending = std::mem::take(&mut self.behind);
            pending.extend(staged.pending);
            for c in self.refresh(pending) {
                merge_change(&mut staged.changes, c);
            }
        }
        self.settle();
        Applied {
            changes: (staged.changes.into_iter())
                .map(|(key, kind)| Change { key, kind })
                .collect(),
            affected,
        }
    }

    /// Put an object in the store; its workloads are resolved with the batch (their pod's
    /// facts now, when that shortcut holds). The keys it affects.
    fn stage_apply(&mut self, obj: Object, staged: &mut Staged) -> BTreeSet<ObjectKey> {
        let key = ObjectKey::of(&obj);
        let old = self.index.store.get(&key).cloned();
        if let Some(old) = &old
            && let Some((above, changes)) = self.refresh_pod_facts(&key, old, &obj, staged)
        {
            for c in changes {
                merge_change(&mut staged.changes, c);
            }
            return above.into_iter().chain([key]).collect();
        }
        if let Some(old) = &old
            && self.unseen_change(&key, old, &obj)
        {
            self.index.store.insert(obj);
            self.touched.push(key.clone());
            return BTreeSet::from([key]);
        }
        let mut affected = BTreeSet::from([key.clone()]);
        let structural = old.as_ref().is_none_or(|o| ownership_changed(o, &obj));
        if let Some(old) = &old {
            self.collect_affected(old, structural, &mut affected);
        }
        self.index.store.insert(obj.clone());
        self.collect_affected(&obj, structural, &mut affected);
        staged.pending.extend(affected.iter().cloned());
        affected
    }

    /// Remove an object; returns the top-level workloads that changed.
    ///
    /// ```
    /// # use wlmap_inventory::*;
    /// let mut inv = Inventory::new(wlmap_catalog::registry().unwrap());
    /// let job = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
    ///     "metadata": {"name": "j", "namespace": "ml", "uid": "j1"}, "spec": {"template": {"spec": {"containers": []}}}}));
    /// inv.apply(job.clone());
    /// assert_eq!(inv.delete(&ObjectKey::of(&job))[0].kind, ChangeKind::Removed);
    /// ```
    pub fn delete(&mut self, key: &ObjectKey) -> Vec<Change> {
        self.apply_batch(vec![Update::Delete(key.clone())]).changes
    }

    /// Take an object out of the store; its workloads are resolved with the batch. The keys
    /// it affects.
    fn stage_delete(&mut self, key: &ObjectKey, staged: &mut Staged) -> BTreeSet<ObjectKey> {
        let Some(old) = self.index.store.get(key).cloned() else {
            return BTreeSet::new();
        };
        let mut affected = BTreeSet::from([key.clone()]);
        self.collect_affected(&old, true, &mut affected);
        self.index.store.remove(key);
        staged.pending.extend(affected.iter().cloned());
        affected
    }

    /// Replace every object (a relist): objects not in `objects` are deleted, the others
    /// applied; returns the top-level workloads that changed.
    ///
    /// ```
    /// let mut inv = wlmap_inventory::Inventory::new(wlmap_catalog::registry().unwrap());
    /// assert!(inv.replace_all(vec![]).is_empty());
    /// ```
    pub fn replace_all(&mut self, objects: Vec<Object>) -> Vec<Change> {
        self.replace_where(|_| true, objects)
    }

    /// Replace every object of a kind (a relist of one watch): objects of the kind not in
    /// `objects` are deleted, the others applied; returns the top-level workloads that
    /// changed.
    ///
    /// ```
    /// # use wlmap_inventory::*;
    /// let mut inv = Inventory::new(wlmap_catalog::registry().unwrap());
    /// let job = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
    ///     "metadata": {"name": "j", "namespace": "ml", "uid": "j1"}, "spec": {"template": {"spec": {"containers": []}}}}));
    /// inv.apply(job);
    /// let jobs = wlmap_schema::GroupKind::new("batch", "Job");
    /// assert_eq!(inv.replace_kind(&jobs, vec![])[0].kind, ChangeKind::Removed);
    /// ```
    pub fn replace_kind(&mut self, kind: &GroupKind, objects: Vec<Object>) -> Vec<Change> {
        self.replace_where(|k| k.kind == *kind, objects)
    }

    fn replace_where(
        &mut self,
        in_scope: impl Fn(&ObjectKey) -> bool,
        objects: Vec<Object>,
    ) -> Vec<Change> {
        let keep: BTreeSet<ObjectKey> = objects.iter().map(ObjectKey::of).collect();
        let gone: Vec<ObjectKey> = self
            .index
            .store
            .iter()
            .map(|(k, _)| k)
            .filter(|k| in_scope(k) && !keep.contains(*k))
            .cloned()
            .collect();
        let mut changes: BTreeMap<ObjectKey, ChangeKind> = BTreeMap::new();
        for k in gone {
            for c in self.delete(&k) {
                merge_change(&mut changes, c);
            }
        }
        for o in objects {
            let same = self
                .index
                .store
                .get(&ObjectKey::of(&o))
                .is_some_and(|old| old.same_json(&o));
            if !same {
                for c in self.apply(o) {
                    merge_change(&mut changes, c);
                }
            }
        }
        self.settle();
        changes
            .into_iter()
            .map(|(key, kind)| Change { key, kind })
            .collect()
    }

    /// Put new definitions in force; returns the top-level workloads that changed. Workloads
    /// whose kind's definition changed are resolved again; when the set of known kinds
    /// changed, every object's place (top-level or part of another) is decided again.
    ///
    /// ```
    /// let mut inv = wlmap_inventory::Inventory::new(wlmap_engine::Registry::default());
    /// let job = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
    ///     "metadata": {"name": "j", "namespace": "ml", "uid": "j1"}, "spec": {"template": {"spec": {"containers": []}}}}));
    /// assert!(inv.apply(job).is_empty()); // no definition for Job yet
    /// let changes = inv.set_definitions(wlmap_catalog::registry().unwrap());
    /// assert_eq!(changes[0].kind, wlmap_inventory::ChangeKind::Added);
    /// ```
    pub fn set_definitions(&mut self, registry: Registry) -> Vec<Change> {
        let new = Definitions::new(registry);
        let every_place = !self.index.defs.same_kinds(&new);
        let old = std::mem::replace(&mut self.index.defs, new);
        let affected = self
            .index
            .store
            .iter()
            .filter(|(_, o)| {
                every_place || {
                    let (a, b) = (old.for_object(o), self.index.defs.for_object(o));
                    match (a, b) {
                        (Some(a), Some(b)) => !Arc::ptr_eq(a, b),
                        (None, None) => false,
                        _ => true,
                    }
                }
            })
            .map(|(k, _)| k.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>();
        // New definitions may read every object again: let go as they are read.
        let mut changes = Vec::new();
        for some in affected.chunks(256) {
            changes.extend(self.refresh(some.iter().cloned().collect()));
            self.settle();
        }
        self.settle();
        changes
    }

    /// Lets go of the parsed JSON of what the updates since the last time read (the objects
    /// around each key updated: its owners and every object below it), so an update costs
    /// the parsing of what it reads and leaves nothing parsed. Why not keep the objects of
    /// busy workloads parsed a while: a cache of the last 64 workloads updated cost more per
    /// update when updates go from workload to workload (memory freed long after it was
    /// filled) and saved no CPU measurable in the scale run. Objects read between updates (a
    /// view, the webhook) stay parsed until an update reads them, or until more packed
    /// objects hold their parsed JSON than an eighth of the objects (at least 4,096) beyond
    /// those left after the last release of every object, which costs a step per object and
    /// so comes every so many reads.
    fn settle(&mut self) {
        let touched = std::mem::take(&mut self.touched);
        let Some(packing) = self.index.store.packing().cloned() else {
            return;
        };
        for key in &touched {
            self.index.store.release_around(key);
            if let Some(e) = self.workloads.get_mut(key) {
                e.object.release();
            }
        }
        if packing.parsed() <= self.release_above {
            return;
        }
        self.index.store.release();
        for e in self.workloads.values_mut() {
            e.object.release();
        }
        let slack = (self.release_slack).unwrap_or((self.index.len() / 8).max(RELEASE_FLOOR));
        self.release_above = packing.parsed() + slack;
    }

    /// The same inventory, letting go of its packed objects' parsed JSON once more than
    /// `slack` hold it beyond those left after the last release (unless set: an eighth of the
    /// objects, at least 4,096). For tests, and for a holder that trades memory and time
    /// differently.
    ///
    /// ```
    /// use wlmap_inventory::{Index, Inventory};
    /// let mut inv = Inventory::from_index(Index::new(wlmap_catalog::registry().unwrap(), []).packed())
    ///     .releasing_beyond(0);
    /// inv.apply(wlmap_engine::Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
    ///     "metadata": {"name": "j", "namespace": "ml", "uid": "j1"}, "spec": {"template": {"spec": {"containers": []}}}})));
    /// assert!(inv.index().objects().all(|o| o.is_packed() && !o.is_parsed()));
    /// ```
    pub fn releasing_beyond(mut self, slack: usize) -> Inventory {
        self.release_slack = Some(slack);
        self.release_above = self.release_above.min(slack);
        self
    }

    /// Put off resolving workloads (`true`), or resolve them as updates come (`false`, the
    /// default). While it is put off, updates go into the store at once, so what is read of
    /// the objects (an admission webhook placing a pod, [`crate::Index`]'s questions) is
    /// current, but the workloads stay as they were: the ones updates affect are resolved at
    /// the next [`Inventory::catch_up`], or with the next update taken once resolving is no
    /// longer put off. A burst of updates to a workload then resolves it once per catch-up
    /// instead of once per update: what a controller replica that does not lead (and reads
    /// its workloads only to show them) saves.
    ///
    /// ```
    /// use wlmap_inventory::Inventory;
    /// let mut inv = Inventory::new(wlmap_catalog::registry().unwrap());
    /// inv.put_off_resolving(true);
    /// let job = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
    ///     "metadata": {"name": "j", "namespace": "ml", "uid": "j1"}, "spec": {"template": {"spec": {"containers": []}}}}));
    /// assert!(inv.apply(job.clone()).is_empty());
    /// assert!(inv.workloads().next().is_none() && inv.is_behind());
    /// assert!(inv.index().object(&wlmap_inventory::ObjectKey::of(&job)).is_some()); // held already
    /// assert_eq!(inv.catch_up()[0].kind, wlmap_inventory::ChangeKind::Added);
    /// assert!(!inv.is_behind());
    /// ```
    pub fn put_off_resolving(&mut self, put_off: bool) {
        self.putting_off = put_off;
    }

    /// True when updates wait to be resolved ([`Inventory::put_off_resolving`]).
    pub fn is_behind(&self) -> bool {
        !self.behind.is_empty()
    }

    /// Resolve the workloads updates affected while resolving was put off; returns the
    /// top-level workloads that changed ([`Inventory::put_off_resolving`]).
    pub fn catch_up(&mut self) -> Vec<Change> {
        let behind = std::mem::take(&mut self.behind);
        let changes = self.refresh(behind);
        self.settle();
        changes
    }

    /// A pod that changed only where no definition above it looks to place it (its phase,
    /// readiness, node, requests): each workload above it reads the pod's facts again where
    /// the pod already is, instead of being resolved and attributed again. What the
    /// workloads show is what that would give ([`wlmap_engine::Workload::refresh_pod`]).
    /// `None`, with nothing changed, when the shortcut does not hold.
    /// In a batch, a workload above the pod that is to be resolved anyway (an earlier update
    /// affected it) is not refreshed here: the shortcut does not hold.
    fn refresh_pod_facts(
        &mut self,
        key: &ObjectKey,
        old: &Object,
        new: &Object,
        staged: &Staged,
    ) -> Option<(Vec<ObjectKey>, Vec<Change>)> {
        let plain_pod = new.is_pod()
            && !ownership_changed(old, new)
            && !self.workloads.contains_key(key)
            && !self.index.is_top_level(new)
            && !self.index.defs.is_referenced(&new.gvk().group_kind());
        if !plain_pod {
            return None;
        }
        let above: Vec<ObjectKey> = self
            .index
            .store
            .ancestors(old)
            .into_iter()
            .map(ObjectKey::of)
            .filter(|k| self.workloads.contains_key(k))
            .collect();
        for k in &above {
            if staged.pending.contains(k) || self.behind.contains(k) {
                return None;
            }
            let e = &self.workloads[k];
            let reads = e.definition.pod_placement_reads()?;
            let w = e.result.as_ref().ok()?;
            let holds = (w.root.all_pods())
                .chain(&w.unattributed)
                .any(|p| p.name == new.name());
            if !holds || !reads.iter().all(|path| same_at(old, new, path)) {
                return None;
            }
        }
        self.index.store.insert(new.clone());
        // Only the pod was read (its workloads read the new version where it already is).
        self.touched.push(key.clone());
        let mut changes = Vec::new();
        for k in &above {
            let w = self
                .workloads
                .get_mut(k)
                .and_then(|e| e.result.as_mut().ok());
            if w.and_then(|w| w.refresh_pod(new)) == Some(true) {
                changes.push(Change {
                    key: k.clone(),
                    kind: ChangeKind::Changed,
                });
            }
        }
        Some((above, changes))
    }

    /// True when no workload can see this change of an object: one between a workload and
    /// its pods (a JobSet's Jobs, a LeaderWorkerSet's StatefulSets) whose uid and owners stay
    /// as they were. Resolving reads a workload's own object and the objects it references;
    /// of the objects between it and its pods, attribution reads only their uid, kind and
    /// controller (a pod's owner chain). So a Job's status moving on (its ready count, as
    /// each pod starts) changes nothing above it, and resolving the JobSet again for it was
    /// a good part of a controller replica's work under a burst. Pods (whose facts are read),
    /// workloads, referenced kinds and DRA objects (whose allocations say what a pod holds)
    /// are always seen.
    fn unseen_change(&self, key: &ObjectKey, old: &Object, new: &Object) -> bool {
        !new.is_pod()
            && !new.api_version().starts_with("resource.k8s.io/")
            && !self.workloads.contains_key(key)
            && !self.index.is_top_level(new)
            && !self.index.defs.is_referenced(&key.kind)
            && !ownership_changed(old, new)
    }

    /// The keys an update of `o` can affect besides its own: the workloads up its owner chain
    /// (they attribute its pods), the objects down it when ownership changed (their place
    /// depends on it), and the readers of a referenced kind.
    fn collect_affected(&self, o: &Object, structural: bool, out: &mut BTreeSet<ObjectKey>) {
        out.extend(self.index.store.ancestors(o).into_iter().map(ObjectKey::of));
        if structural {
            out.extend(
                self.index
                    .store
                    .descendants(o.uid())
                    .into_iter()
                    .map(ObjectKey::of),
            );
        }
        if let Some(reach) = DraReach::of(o) {
            out.extend(
                self.workloads
                    .values()
                    .filter(|e| e.result.as_ref().is_ok_and(|w| reach.covers(w)))
                    .map(|e| e.key.clone()),
            );
        }
        let gk = o.gvk().group_kind();
        if self.index.defs.is_referenced(&gk) {
            out.extend(
                self.workloads
                    .values()
                    .filter(|e| Definitions::references(&e.definition))
                    .map(|e| e.key.clone()),
            );
        }
    }

    /// Decide each key's place again and resolve the top-level ones; report what changed.
    fn refresh(&mut self, keys: BTreeSet<ObjectKey>) -> Vec<Change> {
        let mut changes = Vec::new();
        self.touched.extend(keys.iter().cloned());
        for key in keys {
            let fresh = self
                .index
                .store
                .get(&key)
                .filter(|o| self.index.is_top_level(o))
                .and_then(|_| self.index.evaluate(&key, None));
            let kind = match (fresh, self.workloads.get(&key)) {
                (Some(new), Some(old)) if new.same_as(old) => {
                    // Same result; keep the newest object (metadata may have moved on).
                    self.workloads.insert(key.clone(), new);
                    None
                }
                (Some(new), old) => {
                    let kind = if old.is_some() {
                        ChangeKind::Changed
                    } else {
                        ChangeKind::Added
                    };
                    self.workloads.insert(key.clone(), new);
                    Some(kind)
                }
                (None, Some(_)) => {
                    self.workloads.remove(&key);
                    Some(ChangeKind::Removed)
                }
                (None, None) => None,
            };
            if let Some(kind) = kind {
                changes.push(Change { key, kind });
            }
        }
        changes
    }
}

/// The workloads a DRA object that is in no owner chain can change (a claim made for a pod
/// is below it, and reaches its workload that way): those that use DRA
/// ([`wlmap_engine::Workload::uses_dra`]), in the object's namespace for a claim template or
/// a claim pods share by name, holding a device of the node's pool (or with something not
/// counted) for a ResourceSlice, all of them for a DeviceClass.
enum DraReach {
    Namespace(String),
    Pool(String),
    All,
}

impl DraReach {
    fn of(o: &Object) -> Option<DraReach> {
        if !o.api_version().starts_with("resource.k8s.io/") {
            return None;
        }
        match o.kind() {
            "ResourceClaim" if o.controller_uid().is_none() => {
                Some(DraReach::Namespace(o.namespace().to_string()))
            }
            "ResourceClaimTemplate" => Some(DraReach::Namespace(o.namespace().to_string())),
            "DeviceClass" => Some(DraReach::All),
            "ResourceSlice" => o
                .json()
                .pointer("/spec/pool/name")
                .and_then(serde_json::Value::as_str)
                .map(|p| DraReach::Pool(p.to_string())),
            _ => None,
        }
    }

    fn covers(&self, w: &wlmap_engine::Workload) -> bool {
        if !w.uses_dra() {
            return false;
        }
        match self {
            DraReach::Namespace(ns) => w.namespace == *ns,
            DraReach::Pool(pool) => {
                !w.notes.is_empty()
                    || w.root
                        .all_pods()
                        .chain(&w.unattributed)
                        .any(|p| p.held.iter().any(|d| d.pool == *pool))
            }
            DraReach::All => true,
        }
    }
}

/// Do two versions of an object hold the same value (or none) at a path of keys?
fn same_at(a: &Object, b: &Object, path: &[String]) -> bool {
    fn at<'a>(o: &'a Object, path: &[String]) -> Option<&'a serde_json::Value> {
        path.iter()
            .try_fold(o.json(), |v, k| wlmap_json::Field::field(v, k))
    }
    at(a, path) == at(b, path)
}

/// Did the object's place in owner chains change (uid or controller owner)?
fn ownership_changed(old: &Object, new: &Object) -> bool {
    old.uid() != new.uid()
        || old.json().pointer("/metadata/ownerReferences")
            != new.json().pointer("/metadata/ownerReferences")
}

/// Fold a change into a set of changes made by several steps: added then removed is nothing,
/// removed then added is a change.
fn merge_change(changes: &mut BTreeMap<ObjectKey, ChangeKind>, c: Change) {
    use ChangeKind::*;
    let merged = match (changes.get(&c.key).copied(), c.kind) {
        (None, k) => Some(k),
        (Some(Added), Removed) => None,
        (Some(Added), _) => Some(Added),
        (Some(Removed), Added | Changed) => Some(Changed),
        (Some(Removed), Removed) => Some(Removed),
        (Some(Changed), k) => Some(k),
    };
    match merged {
        Some(k) => changes.insert(c.key, k),
        None => changes.remove(&c.key),
    };
}
