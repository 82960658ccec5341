//! The objects, indexed the ways the inventory asks: by key, by uid, and by controller owner
//! (so a workload's objects are found by walking down from it, never by scanning them all).

use crate::key::ObjectKey;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use wlmap_engine::{MAX_OWNER_DEPTH, Object, Packing, ReferenceProvider};
use wlmap_schema::{GroupKind, GroupVersionKind};

type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Objects by key, with a uid index and a children index.
#[derive(Default)]
pub(crate) struct ObjectStore {
    objects: FastMap<ObjectKey, Object>,
    by_uid: FastMap<String, ObjectKey>,
    /// Controller owner uid → the objects it controls. Kept for owners not (yet) seen, so an
    /// owner that arrives after its children finds them.
    children: FastMap<String, BTreeSet<ObjectKey>>,
    /// The cluster-wide DRA objects (DeviceClasses, ResourceSlices): what a pod's devices are
    /// read against, for every workload that holds some.
    dra_cluster: BTreeSet<ObjectKey>,
    /// Objects are held packed ([`Object::packed`]), counted here.
    packing: Option<Packing>,
}

/// A cluster-wide DRA kind ([`ObjectStore::dra_cluster_objects`]).
fn is_dra_cluster(key: &ObjectKey) -> bool {
    key.kind.group == "resource.k8s.io"
        && (key.kind.kind == "DeviceClass" || key.kind.kind == "ResourceSlice")
}

impl ObjectStore {
    pub(crate) fn len(&self) -> usize {
        self.objects.len()
    }

    pub(crate) fn get(&self, key: &ObjectKey) -> Option<&Object> {
        self.objects.get(key)
    }

    pub(crate) fn by_uid(&self, uid: &str) -> Option<&Object> {
        self.by_uid.get(uid).and_then(|k| self.objects.get(k))
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&ObjectKey, &Object)> {
        self.objects.iter()
    }

    /// Hold every object packed from now on, those held already too.
    pub(crate) fn pack(&mut self) {
        let packing = self.packing.get_or_insert_default();
        for o in self.objects.values_mut() {
            *o = o.clone().packed(packing);
        }
    }

    /// The count of the packed objects held, when objects are held packed.
    pub(crate) fn packing(&self) -> Option<&Packing> {
        self.packing.as_ref()
    }

    /// Let go of the parsed JSON of every packed object held ([`Object::released`]).
    pub(crate) fn release(&mut self) {
        self.objects.values_mut().for_each(Object::release);
    }

    /// Let go of the parsed JSON of an object, the objects above it on its owner chain and
    /// every object below it: what resolving its workload reads.
    pub(crate) fn release_around(&mut self, key: &ObjectKey) {
        let Some(o) = self.objects.get(key) else {
            return;
        };
        let mut keys = vec![key.clone()];
        keys.extend(self.ancestors(o).into_iter().map(ObjectKey::of));
        keys.extend(self.descendant_keys(o.uid()).into_iter().cloned());
        for k in keys {
            if let Some(o) = self.objects.get_mut(&k) {
                o.release();
            }
        }
    }

    /// An object as this store holds it (packed or not).
    pub(crate) fn hold(&self, obj: Object) -> Object {
        match &self.packing {
            Some(packing) => obj.packed(packing),
            None => obj,
        }
    }

    /// Insert or replace; returns the object it replaced.
    pub(crate) fn insert(&mut self, obj: Object) -> Option<Object> {
        let obj = self.hold(obj);
        let key = ObjectKey::of(&obj);
        let old = self.remove(&key);
        if !obj.uid().is_empty() {
            self.by_uid.insert(obj.uid().to_string(), key.clone());
        }
        if let Some(owner) = obj.controller_uid().filter(|u| !u.is_empty()) {
            self.children
                .entry(owner.to_string())
                .or_default()
                .insert(key.clone());
        }
        if is_dra_cluster(&key) {
            self.dra_cluster.insert(key.clone());
        }
        self.objects.insert(key, obj);
        old
    }

    /// The DeviceClasses and ResourceSlices held.
    pub(crate) fn dra_cluster_objects(&self) -> impl Iterator<Item = &Object> {
        self.dra_cluster.iter().filter_map(|k| self.objects.get(k))
    }

    /// Remove; returns the object removed.
    pub(crate) fn remove(&mut self, key: &ObjectKey) -> Option<Object> {
        let old = self.objects.remove(key)?;
        self.dra_cluster.remove(key);
        if self.by_uid.get(old.uid()) == Some(key) {
            self.by_uid.remove(old.uid());
        }
        if let Some(owner) = old.controller_uid()
            && let Some(set) = self.children.get_mut(owner)
        {
            set.remove(key);
            if set.is_empty() {
                self.children.remove(owner);
            }
        }
        Some(old)
    }

    /// The objects above `obj` on its controller owner chain that are present, nearest first
    /// (bounded and cycle-safe, like the engine's owner index).
    pub(crate) fn ancestors<'a>(&'a self, obj: &'a Object) -> Vec<&'a Object> {
        let mut out: Vec<&Object> = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        let mut at = obj.controller_uid();
        while let Some(uid) = at {
            if seen.len() >= MAX_OWNER_DEPTH || seen.contains(&uid) {
                break;
            }
            seen.push(uid);
            let next = self.by_uid(uid);
            out.extend(next);
            at = next.and_then(|o| o.controller_uid());
        }
        out
    }

    /// Every object below the one with this uid (its controlled objects, theirs, ...), down to
    /// the owner-chain depth the engine follows, in key order per level.
    pub(crate) fn descendants(&self, uid: &str) -> Vec<&Object> {
        (self.descendant_keys(uid).into_iter())
            .filter_map(|k| self.objects.get(k))
            .collect()
    }

    /// The keys of [`ObjectStore::descendants`].
    fn descendant_keys(&self, uid: &str) -> Vec<&ObjectKey> {
        let mut out = Vec::new();
        if uid.is_empty() {
            return out;
        }
        let mut seen: BTreeSet<&str> = BTreeSet::from([uid]);
        let mut level: Vec<&str> = vec![uid];
        for _ in 0..MAX_OWNER_DEPTH {
            let mut next = Vec::new();
            for owner in level {
                for key in self.children.get(owner).into_iter().flatten() {
                    let Some(o) = self.objects.get(key) else {
                        continue;
                    };
                    out.push(key);
                    if !o.uid().is_empty() && seen.insert(o.uid()) {
                        next.push(o.uid());
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            level = next;
        }
        out
    }

    /// Is the object part of a bigger workload? True when a controller owner up its chain is
    /// of a known kind (read from the owner reference itself, so a Job of a JobSet not yet
    /// seen is still part of it).
    pub(crate) fn owned_by_known(&self, obj: &Object, known: &impl Fn(&GroupKind) -> bool) -> bool {
        let mut at = obj;
        for _ in 0..MAX_OWNER_DEPTH {
            // Read from what identifies the object: a packed one is not parsed for it.
            let Some((api_version, kind)) = at.controller_type() else {
                return false;
            };
            if known(&GroupKind::from_api_version(api_version, kind)) {
                return true;
            }
            match self.by_uid(at.controller_uid().unwrap_or("")) {
                Some(next) => at = next,
                None => return false,
            }
        }
        false
    }
}

/// The owner reference marked `controller: true`, or the only one (as the engine reads it).
pub(crate) fn controller_ref(o: &Object) -> Option<&Value> {
    let refs = o.json().pointer("/metadata/ownerReferences")?.as_array()?;
    refs.iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .or_else(|| (refs.len() == 1).then(|| &refs[0]))
}

/// References are read from the objects held: same group and kind (any version), namespace
/// and name; a cluster-scoped reference takes the object of that name in any namespace.
impl ReferenceProvider for ObjectStore {
    fn get(&self, kind: &GroupVersionKind, namespace: Option<&str>, name: &str) -> Option<Value> {
        let gk = kind.group_kind();
        let exact = ObjectKey::new(namespace.unwrap_or(""), gk.clone(), name);
        if let Some(o) = self.objects.get(&exact) {
            return Some(o.json().clone());
        }
        if namespace.is_some() {
            return None;
        }
        self.objects
            .iter()
            .filter(|(k, _)| k.kind == gk && k.name == name)
            .min_by(|a, b| a.0.cmp(b.0))
            .map(|(_, o)| o.json().clone())
    }

    /// Lists the cluster-wide DRA kinds only (the others would cost a scan of every object).
    fn list(&self, kind: &GroupVersionKind) -> Option<Vec<Value>> {
        let gk = kind.group_kind();
        let probe = ObjectKey::new("", gk.clone(), "");
        is_dra_cluster(&probe).then(|| {
            self.dra_cluster_objects()
                .filter(|o| o.kind() == gk.kind)
                .map(|o| o.json().clone())
                .collect()
        })
    }
}
