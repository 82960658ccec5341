//! An inventory fed by watches: one stream of events per kind, each kind listed first (and
//! listed again whenever its watch cannot resume), then its changes.

use crate::index::Entry;
use crate::inventory::{Change, ChangeKind, Inventory, Update};
use crate::key::ObjectKey;
use std::collections::{BTreeMap, BTreeSet};
use wlmap_engine::{Object, Registry};
use wlmap_schema::GroupKind;

/// Whether a pod's change matters to a workload above it: the workload, the pod before and
/// after ([`Feed::on_all`]).
pub type Matters = dyn Fn(&Entry, &Object, &Object) -> bool;

/// Updates gathered for one [`Inventory::apply_batch`], with each update's pod before and
/// after when it changes a pod already held.
#[derive(Default)]
struct Batch {
    updates: Vec<Update>,
    pods: Vec<Option<(Object, Object)>>,
}

/// One watch event, for the kind at an index of the kinds fed.
#[derive(Debug)]
pub enum Event {
    /// The kind's objects are about to be listed anew.
    Relisting(usize),
    /// An object as it now is (created, changed, or listed during a relist).
    Applied(usize, Object),
    /// An object deleted, as it was last.
    Deleted(usize, Object),
    /// The listing that `Relisting` began is complete.
    Listed(usize),
}

/// What an event did to the feed.
#[derive(Debug, PartialEq)]
pub enum Fed {
    /// Not every kind has been listed yet (or the kind is being relisted).
    Listing,
    /// Every kind has now been listed, for the first time.
    Synced,
    /// These keys changed: the object, its owners, the workloads whose view changed.
    Touched(Vec<ObjectKey>),
}

/// The live inventory as watches feed it: a kind being relisted is buffered until its
/// listing completes (then its objects replace the kind's), and every event says which keys
/// it touched once every kind has been listed.
///
/// ```
/// use wlmap_inventory::{Feed, FeedEvent, Fed};
/// let job = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
///     "metadata": {"name": "train", "namespace": "ml", "uid": "j1"}, "spec": {}}));
/// let mut feed = Feed::new(wlmap_catalog::registry().unwrap(), vec![wlmap_schema::GroupKind::new("batch", "Job")]);
/// assert_eq!(feed.on(FeedEvent::Relisting(0)), Fed::Listing);
/// assert_eq!(feed.on(FeedEvent::Applied(0, job.clone())), Fed::Listing);
/// assert_eq!(feed.on(FeedEvent::Listed(0)), Fed::Synced);
/// assert_eq!(feed.inventory.workloads().count(), 1);
/// assert!(matches!(feed.on(FeedEvent::Deleted(0, job)), Fed::Touched(_)));
/// assert_eq!(feed.inventory.workloads().count(), 0);
/// ```
pub struct Feed {
    kinds: Vec<GroupKind>,
    /// The inventory the events build.
    pub inventory: Inventory,
    /// Objects of a kind being relisted, until its listing completes.
    relisting: BTreeMap<usize, Vec<Object>>,
    /// Kinds listed at least once.
    listed: BTreeSet<usize>,
    /// Kinds watched only once DRA is in use ([`crate::waits_for_dra_use`]): the feed is
    /// synced without them.
    waiting: BTreeSet<usize>,
    synced: bool,
    /// True once a ResourceClaim or ResourceClaimTemplate was fed ([`crate::is_dra_use`]).
    uses_dra: bool,
}

impl Feed {
    /// A feed of these kinds (events name them by index) with these definitions.
    pub fn new(registry: Registry, kinds: Vec<GroupKind>) -> Feed {
        let waiting = (kinds.iter().enumerate())
            .filter(|(_, k)| crate::waits_for_dra_use(k))
            .map(|(i, _)| i)
            .collect();
        Feed {
            kinds,
            inventory: Inventory::from_index(crate::Index::new(registry, []).packed()),
            relisting: BTreeMap::new(),
            listed: BTreeSet::new(),
            waiting,
            synced: false,
            uses_dra: false,
        }
    }

    /// True once the feed has held a ResourceClaim or ResourceClaimTemplate: the watches of
    /// the kinds that wait for DRA use ([`crate::waits_for_dra_use`]) are to start (a feed
    /// is synced without them until they list).
    ///
    /// ```
    /// use wlmap_inventory::{Feed, FeedEvent};
    /// use wlmap_schema::GroupKind;
    /// let kinds = vec![GroupKind::new("resource.k8s.io", "ResourceClaimTemplate"), GroupKind::new("resource.k8s.io", "ResourceSlice")];
    /// let mut feed = Feed::new(wlmap_engine::Registry::default(), kinds);
    /// feed.on(FeedEvent::Relisting(0));
    /// feed.on(FeedEvent::Listed(0));
    /// assert!(feed.is_synced() && !feed.uses_dra()); // synced without the slices
    /// let t = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "resource.k8s.io/v1",
    ///     "kind": "ResourceClaimTemplate", "metadata": {"name": "four-gpus", "namespace": "ml"}}));
    /// feed.on(FeedEvent::Applied(0, t));
    /// assert!(feed.uses_dra());
    /// ```
    pub fn uses_dra(&self) -> bool {
        self.uses_dra
    }

    /// True once every kind has been listed.
    ///
    /// ```
    /// let feed = wlmap_inventory::Feed::new(Default::default(), vec![]);
    /// assert!(!feed.is_synced());
    /// ```
    pub fn is_synced(&self) -> bool {
        self.synced
    }

    /// Take one event.
    pub fn on(&mut self, ev: Event) -> Fed {
        let touched: Vec<ObjectKey> = match ev {
            Event::Relisting(i) => {
                self.relisting.insert(i, Vec::new());
                return Fed::Listing;
            }
            Event::Applied(i, o) => {
                self.uses_dra |= self.kinds.get(i).is_some_and(crate::is_dra_use);
                if let Some(buf) = self.relisting.get_mut(&i) {
                    // Held as text until its listing completes: a first listing of every
                    // pod would otherwise be held parsed, whole, at once.
                    let mut packed = self.inventory.index().hold(o);
                    packed.release();
                    buf.push(packed);
                    return Fed::Listing;
                }
                let key = ObjectKey::of(&o);
                let changes = self.inventory.apply(o);
                self.related(&key, changes)
            }
            Event::Deleted(_, o) => {
                let key = ObjectKey::of(&o);
                let owners = self.inventory.index().owners(&key);
                let changes = self.inventory.delete(&key);
                let mut keys = self.related(&key, changes);
                keys.extend(owners);
                keys
            }
            Event::Listed(i) => {
                let objects = self.relisting.remove(&i).unwrap_or_default();
                let Some(kind) = self.kinds.get(i) else {
                    return Fed::Listing;
                };
                let changes = self.inventory.replace_kind(kind, objects);
                self.listed.insert(i);
                changes.into_iter().map(|c| c.key).collect()
            }
        };
        if self.synced {
            return Fed::Touched(touched);
        }
        if (0..self.kinds.len()).all(|i| self.listed.contains(&i) || self.waiting.contains(&i)) {
            self.synced = true;
            return Fed::Synced;
        }
        Fed::Listing
    }

    /// Take several events at once (those a watch had ready together): the objects go in as
    /// they come and the workloads they touch are resolved once, after the last
    /// ([`Inventory::apply_batch`]). What the events touched, as [`Feed::on`] says it, less
    /// what a pod's change touched where `matters` (the workload above it, the pod before
    /// and after) says the change does not matter to that workload. A relist's events, and
    /// any before every kind is listed, are taken one by one.
    ///
    /// ```
    /// use wlmap_inventory::{Feed, FeedEvent, Fed};
    /// use serde_json::json;
    /// let job = wlmap_engine::Object::new(json!({"apiVersion": "batch/v1", "kind": "Job",
    ///     "metadata": {"name": "train", "namespace": "ml", "uid": "j1"}, "spec": {"template": {"spec": {"containers": []}}}}));
    /// let pod = |phase: &str| wlmap_engine::Object::new(json!({"apiVersion": "v1", "kind": "Pod",
    ///     "metadata": {"name": "train-0", "namespace": "ml", "uid": "p1",
    ///         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "j1", "controller": true}]},
    ///     "spec": {"containers": [{"name": "t"}]}, "status": {"phase": phase}}));
    /// let kinds = vec![wlmap_schema::GroupKind::new("batch", "Job"), wlmap_schema::GroupKind::new("", "Pod")];
    /// let mut feed = Feed::new(wlmap_catalog::registry().unwrap(), kinds);
    /// let listing = [FeedEvent::Relisting(0), FeedEvent::Listed(0), FeedEvent::Relisting(1), FeedEvent::Listed(1)];
    /// assert_eq!(feed.on_all(listing.into(), &|_, _, _| true), Fed::Synced);
    /// let all = |_: &_, _: &_, _: &_| true;
    /// let Fed::Touched(keys) = feed.on_all(vec![FeedEvent::Applied(0, job), FeedEvent::Applied(1, pod("Pending"))], &all) else { panic!() };
    /// assert_eq!(keys.len(), 2); // the Job and its pod
    /// // A pod's change that does not matter to its Job touches the pod alone.
    /// let phase_only = |_: &_, old: &wlmap_engine::Object, new: &wlmap_engine::Object| old.json()["metadata"] != new.json()["metadata"];
    /// let Fed::Touched(keys) = feed.on_all(vec![FeedEvent::Applied(1, pod("Running"))], &phase_only) else { panic!() };
    /// assert_eq!(keys, vec![wlmap_inventory::ObjectKey::of(&pod("Running"))]);
    /// ```
    pub fn on_all(&mut self, events: Vec<Event>, matters: &Matters) -> Fed {
        let mut batch = Batch::default();
        let mut keys = Vec::new();
        let mut synced_now = false;
        for ev in events {
            match ev {
                Event::Applied(i, o) if self.synced && !self.relisting.contains_key(&i) => {
                    self.uses_dra |= self.kinds.get(i).is_some_and(crate::is_dra_use);
                    let key = ObjectKey::of(&o);
                    let before = o
                        .is_pod()
                        .then(|| self.inventory.index().object(&key).cloned())
                        .flatten();
                    let pod = before.map(|b| (b, o.clone()));
                    batch.updates.push(Update::Apply(o));
                    batch.pods.push(pod);
                }
                Event::Deleted(_, o) if self.synced => {
                    batch.updates.push(Update::Delete(ObjectKey::of(&o)));
                    batch.pods.push(None);
                }
                other => {
                    keys.extend(self.take(std::mem::take(&mut batch), matters));
                    match self.on(other) {
                        Fed::Touched(k) => keys.extend(k),
                        Fed::Synced => synced_now = true,
                        Fed::Listing => {}
                    }
                }
            }
        }
        keys.extend(self.take(batch, matters));
        if synced_now {
            Fed::Synced
        } else if self.synced {
            Fed::Touched(keys)
        } else {
            Fed::Listing
        }
    }

    /// Apply a batch; the keys it touched that matter.
    fn take(&mut self, batch: Batch, matters: &Matters) -> Vec<ObjectKey> {
        if batch.updates.is_empty() {
            return Vec::new();
        }
        let applied = self.inventory.apply_batch(batch.updates);
        let mut keys: BTreeSet<ObjectKey> = (applied.changes.into_iter())
            .filter(|c| c.kind != ChangeKind::Changed)
            .map(|c| c.key)
            .collect();
        for (affected, pod) in applied.affected.into_iter().zip(batch.pods) {
            keys.extend(affected.into_iter().filter(|k| {
                match (&pod, self.inventory.workload(k)) {
                    (Some((before, after)), Some(w)) => matters(w, before, after),
                    _ => true,
                }
            }));
        }
        keys.into_iter().collect()
    }

    /// The keys an event touches: the object, its owners, and the workloads that changed.
    fn related(&self, key: &ObjectKey, changes: Vec<Change>) -> Vec<ObjectKey> {
        let mut keys = vec![key.clone()];
        keys.extend(self.inventory.index().owners(key));
        keys.extend(changes.into_iter().map(|c| c.key));
        keys
    }
}
