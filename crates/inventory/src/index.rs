//! The objects and the definitions in force, indexed: which objects are top-level workloads,
//! and any object resolved with its pods attributed, on demand.

use crate::definitions::Definitions;
use crate::key::ObjectKey;
use crate::store::ObjectStore;
use std::sync::Arc;
use wlmap_engine::{Definition, Object, OwnerIndex, ReferenceProvider, Registry, Workload};

/// One workload: the object, the definition in force for its kind, and the result of
/// resolving it with its pods attributed.
#[derive(Debug)]
pub struct Entry {
    /// The workload's key.
    pub key: ObjectKey,
    /// The workload object.
    pub object: Object,
    /// The definition that resolved it.
    pub definition: Arc<Definition>,
    /// The resolved workload, or why its definition could not evaluate it.
    pub result: Result<Workload, wlmap_engine::Error>,
}

impl Entry {
    /// True when two entries show the same thing: the same definition, and the same workload
    /// or the same error.
    pub(crate) fn same_as(&self, other: &Entry) -> bool {
        self.definition.name() == other.definition.name()
            && self.definition.origin() == other.definition.origin()
            && match (&self.result, &other.result) {
                (Ok(a), Ok(b)) => a == b,
                (Err(a), Err(b)) => a.to_string() == b.to_string(),
                _ => false,
            }
    }
}

/// A set of objects and the definitions in force, indexed by key, uid and controller owner.
/// Answers one-off questions (is this a top-level workload? resolve that one) without
/// resolving anything else; [`crate::Inventory`] keeps every top-level workload resolved.
///
/// ```
/// use wlmap_inventory::{Index, ObjectKey};
/// let job = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
///     "metadata": {"name": "train", "namespace": "ml", "uid": "j1"},
///     "spec": {"parallelism": 2, "template": {"spec": {"containers": [
///         {"name": "t", "resources": {"limits": {"nvidia.com/gpu": 4}}}]}}}}));
/// let key = ObjectKey::of(&job);
/// let index = Index::new(wlmap_catalog::registry().unwrap(), [job]);
/// assert_eq!(index.top_level_keys(), vec![key.clone()]);
/// let w = index.evaluate(&key, None).unwrap().result.unwrap();
/// assert_eq!(w.gpus(&Default::default()), 8.0);
/// ```
#[derive(Default)]
pub struct Index {
    pub(crate) defs: Definitions,
    pub(crate) store: ObjectStore,
}

impl Index {
    /// Index these objects (nothing is resolved yet). An object given twice (same kind,
    /// namespace and name) is held once, as given last.
    ///
    /// ```
    /// let index = wlmap_inventory::Index::new(wlmap_engine::Registry::default(), []);
    /// assert!(index.is_empty());
    /// ```
    pub fn new(registry: Registry, objects: impl IntoIterator<Item = Object>) -> Index {
        let mut index = Index {
            defs: Definitions::new(registry),
            store: ObjectStore::default(),
        };
        for o in objects {
            index.store.insert(o);
        }
        index
    }

    /// The same index holding its objects packed ([`Object::packed`]): each as its compact
    /// JSON text, parsed again when read. What a long-running inventory does ([`crate::Feed`]):
    /// about a seventh of the memory for a pod, for a parse each time a released object is
    /// read again ([`Inventory::apply`](crate::Inventory::apply) lets go of them in bulk).
    ///
    /// ```
    /// let job = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
    ///     "metadata": {"name": "j", "namespace": "ml"}}));
    /// let index = wlmap_inventory::Index::new(wlmap_engine::Registry::default(), [job]).packed();
    /// assert!(index.objects().all(|o| o.is_packed()));
    /// ```
    pub fn packed(mut self) -> Index {
        self.store.pack();
        self
    }

    /// An object as this index holds it: packed when the index is ([`Index::packed`]).
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"kind": "Job"}));
    /// assert!(!wlmap_inventory::Index::default().hold(o.clone()).is_packed());
    /// assert!(wlmap_inventory::Index::default().packed().hold(o).is_packed());
    /// ```
    pub fn hold(&self, obj: Object) -> Object {
        self.store.hold(obj)
    }

    /// Number of objects held.
    ///
    /// ```
    /// assert_eq!(wlmap_inventory::Index::default().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.store.len()
    }

    /// True when no object is held.
    ///
    /// ```
    /// assert!(wlmap_inventory::Index::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.store.len() == 0
    }

    /// An object by key.
    ///
    /// ```
    /// # use wlmap_inventory::*;
    /// let k = ObjectKey::new("", wlmap_schema::GroupKind::new("", "Node"), "n1");
    /// assert!(Index::default().object(&k).is_none());
    /// ```
    pub fn object(&self, key: &ObjectKey) -> Option<&Object> {
        self.store.get(key)
    }

    /// Every object held, in no particular order.
    ///
    /// ```
    /// assert_eq!(wlmap_inventory::Index::default().objects().count(), 0);
    /// ```
    pub fn objects(&self) -> impl Iterator<Item = &Object> {
        self.store.iter().map(|(_, o)| o)
    }

    /// The definitions in force.
    ///
    /// ```
    /// assert!(wlmap_inventory::Index::default().registry().is_empty());
    /// ```
    pub fn registry(&self) -> &Registry {
        self.defs.registry()
    }

    /// The definition in force for an object's kind: its exact version first, else the same
    /// kind at another version.
    ///
    /// ```
    /// let index = wlmap_inventory::Index::new(wlmap_catalog::registry().unwrap(), []);
    /// let job = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job"}));
    /// assert!(index.definition_for(&job).is_some());
    /// ```
    pub fn definition_for(&self, o: &Object) -> Option<&Arc<Definition>> {
        self.defs.for_object(o)
    }

    /// Is this object a top-level workload: its kind has a definition, and no object of a
    /// known kind (a definition's root, or a kind a definition creates) controls it? A Job of
    /// a JobSet is part of the JobSet, even before the JobSet itself is seen.
    ///
    /// ```
    /// let index = wlmap_inventory::Index::new(wlmap_catalog::registry().unwrap(), []);
    /// let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
    ///     "metadata": {"name": "p", "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "uid": "j", "controller": true}]}}));
    /// assert!(!index.is_top_level(&pod));
    /// ```
    pub fn is_top_level(&self, o: &Object) -> bool {
        self.defs.for_object(o).is_some()
            && !self.store.owned_by_known(o, &|gk| self.defs.is_known(gk))
    }

    /// Trim an object as the live inventory holds it. Every object loses its
    /// `metadata.managedFields` and last-applied annotation. A Pod whose controller is of a
    /// kind the definitions know (so it is only ever part of that workload) keeps only what
    /// attribution and the Pod definition read: its metadata, where it runs, its restart
    /// policy, what it requests, its phase, conditions (and the scheduler's message when it
    /// cannot place the pod) and container states; volumes,
    /// environment, images, probes and timestamps go. Any other Pod is a workload of its own,
    /// shown whole, and keeps its spec and status. Maps and lists are sized to what they hold.
    ///
    /// ```
    /// let index = wlmap_inventory::Index::new(wlmap_catalog::registry().unwrap(), []);
    /// let owner = serde_json::json!([{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u", "controller": true}]);
    /// let mut pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
    ///     "metadata": {"name": "p", "labels": {"app": "a"}, "ownerReferences": owner, "managedFields": [{"manager": "kubelet"}]},
    ///     "spec": {"nodeName": "n1", "volumes": [{"name": "data"}],
    ///         "containers": [{"name": "c", "image": "i", "env": [{"name": "X"}],
    ///             "resources": {"limits": {"nvidia.com/gpu": 4}}}]},
    ///     "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}]}});
    /// index.trim(&mut pod);
    /// assert_eq!(pod, serde_json::json!({"apiVersion": "v1", "kind": "Pod",
    ///     "metadata": {"name": "p", "labels": {"app": "a"}, "ownerReferences": owner},
    ///     "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 4}}}]},
    ///     "status": {"phase": "Running"}}));
    /// // The scheduler's words on why it cannot place a pod stay; other conditions' messages go.
    /// let mut pending = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
    ///     "metadata": {"name": "q", "ownerReferences": owner}, "status": {"phase": "Pending", "conditions": [
    ///     {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/2 nodes are available"},
    ///     {"type": "Ready", "status": "False", "reason": "X", "message": "long text", "lastTransitionTime": "t"}]}});
    /// index.trim(&mut pending);
    /// assert_eq!(pending["status"]["conditions"][0]["message"], "0/2 nodes are available");
    /// assert_eq!(pending["status"]["conditions"][1], serde_json::json!({"type": "Ready", "status": "False", "reason": "X"}));
    /// // A pod of its own keeps its spec.
    /// let mut bare = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b"}, "spec": {"volumes": []}});
    /// index.trim(&mut bare);
    /// assert!(bare["spec"].get("volumes").is_some());
    /// ```
    pub fn trim(&self, obj: &mut serde_json::Value) {
        crate::trim::trim(obj, |gk| self.defs.is_known(gk));
    }

    /// The keys of the objects above this one on its controller owner chain that are held,
    /// nearest first.
    ///
    /// ```
    /// # use wlmap_inventory::*;
    /// let job = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "uid": "j1"}}));
    /// let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
    ///     "metadata": {"name": "p", "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "uid": "j1", "controller": true}]}}));
    /// let index = Index::new(wlmap_engine::Registry::default(), [job.clone(), pod.clone()]);
    /// assert_eq!(index.owners(&ObjectKey::of(&pod)), vec![ObjectKey::of(&job)]);
    /// ```
    pub fn owners(&self, key: &ObjectKey) -> Vec<ObjectKey> {
        self.store
            .get(key)
            .map(|o| {
                self.store
                    .ancestors(o)
                    .into_iter()
                    .map(ObjectKey::of)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The pods held below an object (on its controller owner chain), in name order.
    ///
    /// ```
    /// # use wlmap_inventory::*;
    /// let job = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "uid": "j1"}}));
    /// let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
    ///     "metadata": {"name": "p", "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "uid": "j1", "controller": true}]}}));
    /// let index = Index::new(wlmap_engine::Registry::default(), [job.clone(), pod]);
    /// assert_eq!(index.pods_below(&ObjectKey::of(&job)).len(), 1);
    /// ```
    pub fn pods_below(&self, key: &ObjectKey) -> Vec<Object> {
        let Some(o) = self.store.get(key) else {
            return vec![];
        };
        let mut pods: Vec<Object> = self
            .store
            .descendants(o.uid())
            .into_iter()
            .filter(|o| o.is_pod())
            .cloned()
            .collect();
        pods.sort_by(|a, b| a.name().cmp(b.name()));
        pods
    }

    /// The keys of every top-level workload, in key order (namespace, kind, name).
    ///
    /// ```
    /// assert!(wlmap_inventory::Index::default().top_level_keys().is_empty());
    /// ```
    pub fn top_level_keys(&self) -> Vec<ObjectKey> {
        let mut keys: Vec<ObjectKey> = self
            .store
            .iter()
            .filter(|(_, o)| self.is_top_level(o))
            .map(|(k, _)| k.clone())
            .collect();
        keys.sort();
        keys
    }

    /// Resolve any object that has a definition (top-level or not) and attribute the pods
    /// below it; references through `refs`, or from the objects held when `None`. `None` when
    /// there is no such object or no definition for its kind.
    ///
    /// ```
    /// # use wlmap_inventory::*;
    /// let k = ObjectKey::new("ml", wlmap_schema::GroupKind::new("batch", "Job"), "x");
    /// assert!(Index::default().evaluate(&k, None).is_none());
    /// ```
    pub fn evaluate(&self, key: &ObjectKey, refs: Option<&dyn ReferenceProvider>) -> Option<Entry> {
        let object = self.store.get(key)?;
        let definition = self.defs.for_object(object)?.clone();
        let refs: &dyn ReferenceProvider = refs.unwrap_or(&self.store);
        let result = self.resolve_attributed(&definition, object, refs);
        Some(Entry {
            key: key.clone(),
            object: object.clone(),
            definition,
            result,
        })
    }

    /// [`Index::evaluate`] of many objects on every core, references from the objects held.
    /// Results keep the order of `keys`.
    ///
    /// ```
    /// # use wlmap_inventory::*;
    /// let k = ObjectKey::new("ml", wlmap_schema::GroupKind::new("batch", "Job"), "x");
    /// assert!(Index::default().evaluate_all(&[k])[0].is_none());
    /// ```
    pub fn evaluate_all(&self, keys: &[ObjectKey]) -> Vec<Option<Entry>> {
        crate::parallel::map(keys, |k| self.evaluate(k, None))
    }

    fn resolve_attributed(
        &self,
        def: &Definition,
        root: &Object,
        refs: &dyn ReferenceProvider,
    ) -> Result<Workload, wlmap_engine::Error> {
        self.resolve_among(def, root, refs, None)
    }

    /// Resolve a workload with a pod not held (one being created) among its pods.
    pub(crate) fn resolve_with_pod(
        &self,
        def: &Definition,
        root: &Object,
        pod: &Object,
    ) -> Result<Workload, wlmap_engine::Error> {
        self.resolve_among(def, root, &self.store, Some(pod))
    }

    fn resolve_among(
        &self,
        def: &Definition,
        root: &Object,
        refs: &dyn ReferenceProvider,
        extra_pod: Option<&Object>,
    ) -> Result<Workload, wlmap_engine::Error> {
        let mut w = wlmap_engine::resolve_with(def, root, refs)?;
        let below = self.store.descendants(root.uid());
        let mut pods: Vec<&Object> = below
            .iter()
            .copied()
            .filter(|o| o.is_pod())
            .chain(extra_pod)
            .collect();
        // Pods in name order, whatever order they arrived in.
        pods.sort_by(|a, b| (a.namespace(), a.name()).cmp(&(b.namespace(), b.name())));
        // The owner index holds the workload's objects and its owners above it: attribution
        // reads the kinds on each pod's owner chain.
        let above = self.store.ancestors(root);
        // Pods that hold DRA devices have them read against the DeviceClasses and
        // ResourceSlices (which are GPUs, MIG profiles); only those workloads pay for them.
        let dra = pods
            .iter()
            .any(|p| !wlmap_engine::dra::pod_claim_names(p.json()).is_empty());
        let cluster_dra = dra
            .then(|| self.store.dra_cluster_objects())
            .into_iter()
            .flatten();
        // Claims the pods name themselves: no pod owns them, so they are not below the root.
        let claim = wlmap_schema::GroupKind::new("resource.k8s.io", "ResourceClaim");
        let shared: Vec<&Object> = pods
            .iter()
            .flat_map(|p| {
                let key = |name: String| ObjectKey::new(p.namespace(), claim.clone(), &name);
                wlmap_engine::dra::shared_claim_names(p.json())
                    .into_iter()
                    .map(key)
            })
            .filter_map(|k| self.store.get(&k))
            .collect();
        let index = OwnerIndex::from_objects(
            below
                .iter()
                .copied()
                .chain(std::iter::once(root))
                .chain(above)
                .chain(cluster_dra)
                .chain(shared),
        );
        wlmap_engine::attribute_indexed(def, &mut w, root, pods, &index)?;
        Ok(w)
    }
}
