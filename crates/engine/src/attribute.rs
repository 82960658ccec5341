//! Pod attribution: place each pod of a workload under its component, instance and replica.
//!
//! Candidates are the pods whose controller owner chain reaches the workload (through the
//! intermediate objects given: Jobs, ReplicaSets, StatefulSets...). Each candidate is placed by
//! the definition's selectors, falling back to the kinds of its owners; a candidate no component
//! claims is reported as unattributed, never dropped.

use crate::definition::Definition;
use crate::error::Result;
use crate::object::Object;
use crate::resolve::{Node, PodInfo, Workload, reference_values};
use crate::resources::GpuPolicy;
use std::collections::HashMap;
use wlmap_expr::{Val, to_jq_string};

/// How far owner chains are followed.
///
/// ```
/// let objs: Vec<_> = (0..20).map(|i| wlmap_engine::Object::new(serde_json::json!({"kind": "X", "metadata":
///     {"uid": format!("u{i}"), "ownerReferences": [{"uid": format!("u{}", i + 1), "controller": true}]}}))).collect();
/// let ix = wlmap_engine::OwnerIndex::new(&objs);
/// assert_eq!(ix.chain(&objs[0]).len(), wlmap_engine::MAX_OWNER_DEPTH);
/// ```
pub const MAX_OWNER_DEPTH: usize = 16;

/// An index of objects by uid, for owner-chain walks.
///
/// ```
/// let objs = vec![wlmap_engine::Object::new(serde_json::json!({"kind": "Job", "metadata": {"uid": "j1"}}))];
/// let ix = wlmap_engine::OwnerIndex::new(&objs);
/// assert!(ix.get("j1").is_some());
/// ```
pub struct OwnerIndex<'a> {
    // foldhash: uids are hashed for every pod's owner walk; SipHash was a tenth of attribution.
    by_uid: HashMap<&'a str, &'a Object, foldhash::fast::RandomState>,
    /// The DRA objects among them (ResourceClaims, DeviceClasses, ResourceSlices): what pods
    /// hold is read from these.
    dra: Vec<&'a Object>,
}

impl<'a> OwnerIndex<'a> {
    /// Index objects by uid.
    ///
    /// ```
    /// let ix = wlmap_engine::OwnerIndex::new(&[]);
    /// assert!(ix.get("x").is_none());
    /// ```
    pub fn new(objects: &'a [Object]) -> Self {
        Self::from_objects(objects)
    }

    /// Index any objects by uid (a part of a bigger set: one workload's objects).
    ///
    /// ```
    /// let objs = vec![wlmap_engine::Object::new(serde_json::json!({"kind": "Job", "metadata": {"uid": "j1"}}))];
    /// let ix = wlmap_engine::OwnerIndex::from_objects(objs.iter().filter(|o| o.kind() == "Job"));
    /// assert!(ix.get("j1").is_some());
    /// ```
    pub fn from_objects(objects: impl IntoIterator<Item = &'a Object>) -> Self {
        let objects = objects.into_iter();
        let mut by_uid = HashMap::with_capacity_and_hasher(
            objects.size_hint().0,
            foldhash::fast::RandomState::default(),
        );
        let mut dra = Vec::new();
        for o in objects {
            let uid = o.uid();
            if !uid.is_empty() {
                by_uid.insert(uid, o);
            }
            if o.api_version().starts_with("resource.k8s.io/") {
                dra.push(o);
            }
        }
        OwnerIndex { by_uid, dra }
    }

    /// Look an object up by uid.
    ///
    /// ```
    /// let ix = wlmap_engine::OwnerIndex::new(&[]);
    /// assert!(ix.get("").is_none());
    /// ```
    pub fn get(&self, uid: &str) -> Option<&'a Object> {
        self.by_uid.get(uid).copied()
    }

    /// The controller owner chain of an object: uids from its controller upwards, with the
    /// objects found for them (None when an owner is not in the index).
    ///
    /// ```
    /// let objs = vec![
    ///   wlmap_engine::Object::new(serde_json::json!({"kind": "Job", "metadata": {"uid": "j1", "ownerReferences": [{"uid": "js", "controller": true}]}})),
    ///   wlmap_engine::Object::new(serde_json::json!({"kind": "Pod", "metadata": {"uid": "p1", "ownerReferences": [{"uid": "j1", "controller": true}]}}))];
    /// let ix = wlmap_engine::OwnerIndex::new(&objs);
    /// let chain: Vec<&str> = ix.chain(&objs[1]).iter().map(|(u, _)| *u).collect();
    /// assert_eq!(chain, vec!["j1", "js"]);
    /// ```
    pub fn chain(&self, obj: &'a Object) -> Vec<(&'a str, Option<&'a Object>)> {
        let mut out = Vec::new();
        let mut at = obj.controller_uid();
        while let Some(uid) = at {
            if out.len() >= MAX_OWNER_DEPTH || out.iter().any(|(u, _)| *u == uid) {
                break;
            }
            let o = self.get(uid);
            out.push((uid, o));
            at = o.and_then(|o| o.controller_uid());
        }
        out
    }
}

/// The DRA objects an owner index holds, for what pods hold ([`crate::dra::held_devices`]).
impl crate::resolve::ReferenceProvider for OwnerIndex<'_> {
    fn get(
        &self,
        kind: &wlmap_schema::GroupVersionKind,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<serde_json::Value> {
        self.dra
            .iter()
            .find(|o| {
                o.kind() == kind.kind
                    && o.name() == name
                    && namespace.is_none_or(|n| o.namespace() == n)
            })
            .map(|o| o.json().clone())
    }

    fn list(&self, kind: &wlmap_schema::GroupVersionKind) -> Option<Vec<serde_json::Value>> {
        Some(
            self.dra
                .iter()
                .filter(|o| o.kind() == kind.kind)
                .map(|o| o.json().clone())
                .collect(),
        )
    }
}

/// Attribute pods to a resolved workload. `objects` holds the pods and the intermediate
/// objects of their owner chains (anything else is ignored). Observed pods, ready pods and
/// unattributed pods are filled in.
///
/// ```
/// let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
/// let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
///     "metadata": {"name": "p", "uid": "u"}, "spec": {}, "status": {"phase": "Running"}}));
/// let mut w = wlmap_engine::resolve(&def, &pod).unwrap();
/// wlmap_engine::attribute(&def, &mut w, &pod, &[pod.clone()]).unwrap();
/// assert_eq!(w.observed_pods(), 1);
/// ```
pub fn attribute(
    def: &Definition,
    w: &mut Workload,
    root: &Object,
    objects: &[Object],
) -> Result<()> {
    let index = OwnerIndex::new(objects);
    attribute_indexed(def, w, root, objects.iter().filter(|o| o.is_pod()), &index)
}

/// [`attribute`] with a prebuilt owner index and a pre-filtered list of pods, for callers that
/// resolve many workloads over one object set (build the index once, pass each workload the
/// pods whose owner chain reaches it).
///
/// ```
/// let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
/// let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u"}, "spec": {}}));
/// let all = vec![pod.clone()];
/// let ix = wlmap_engine::OwnerIndex::new(&all);
/// let mut w = wlmap_engine::resolve(&def, &pod).unwrap();
/// wlmap_engine::attribute_indexed(&def, &mut w, &pod, all.iter(), &ix).unwrap();
/// assert_eq!(w.observed_pods(), 1);
/// ```
pub fn attribute_indexed<'a>(
    def: &Definition,
    w: &mut Workload,
    root: &Object,
    pods: impl IntoIterator<Item = &'a Object>,
    index: &OwnerIndex<'a>,
) -> Result<()> {
    let gpu = GpuPolicy::default();
    w.pods_observed = true;
    let root_uid = root.uid();
    // A Pod workload is its own pod.
    if root.is_pod() {
        let mut info = PodInfo::from_pod(root, &gpu);
        if !index.dra.is_empty() {
            info.held = crate::dra::held_devices(root, index, &gpu);
        }
        w.root.pods.push(info);
        w.settle_status();
        return Ok(());
    }
    let vars = reference_values(def, root, &crate::resolve::NoReferences)?;
    for pod in pods.into_iter().filter(|o| o.is_pod()) {
        let chain = index.chain(pod);
        let reaches = !root_uid.is_empty() && chain.iter().any(|(u, _)| *u == root_uid);
        if !reaches {
            continue;
        }
        let owner_kinds: Vec<&str> = chain
            .iter()
            .filter(|(u, _)| *u != root_uid)
            .filter_map(|(_, o)| o.map(|o| o.kind()))
            .collect();
        let mut info = PodInfo::from_pod(pod, &gpu);
        if !index.dra.is_empty() {
            info.held = crate::dra::held_devices(pod, index, &gpu);
        }
        if let Some(info) = place(def, &mut w.root, pod, &owner_kinds, &vars, info)? {
            w.unattributed.push(info);
        }
    }
    w.settle_status();
    Ok(())
}

/// Does component `ci` claim the pod? `Some(true)` by its selector, `Some(false)` by fallback.
fn claims(
    def: &Definition,
    ci: usize,
    pod: &Object,
    owner_kinds: &[&str],
    sole: bool,
    vars: &[Val],
) -> Result<Option<bool>> {
    let c = &def.components[ci];
    let sel = c
        .def
        .pod_selector
        .as_ref()
        .and_then(|s| s.component_type_selector.as_ref());
    match sel {
        Some(t) => {
            let mut ok = true;
            if let Some(e) = &c.type_key {
                let v = def
                    .eval_obj(e, pod, vars, &c.def.name, "componentTypeSelector.keyPath")?
                    .into_iter()
                    .next();
                ok &= match (&t.value, v) {
                    (_, None) | (_, Some(Val::Null)) => false,
                    (None, Some(Val::Bool(false))) => false,
                    (None, Some(_)) => true,
                    (Some(want), Some(got)) => to_jq_string(&got) == *want,
                };
            }
            if let Some(ml) = &t.match_labels {
                ok &= ml.iter().all(|(k, v)| pod.label(k) == Some(v.as_str()));
            }
            Ok(ok.then_some(true))
        }
        None => {
            let by_kind = c
                .def
                .kind
                .as_ref()
                .is_some_and(|k| k.kind != "Pod" && owner_kinds.contains(&k.kind.as_str()));
            Ok((sole || by_kind).then_some(false))
        }
    }
}

fn place(
    def: &Definition,
    root: &mut Node,
    pod: &Object,
    owner_kinds: &[&str],
    vars: &[Val],
    mut info: PodInfo,
) -> Result<Option<PodInfo>> {
    let bearing: Vec<usize> = (0..def.components.len())
        .filter(|&i| def.components[i].spec.is_some())
        .collect();
    let sole = bearing.len() == 1;
    let mut explicit = None;
    let mut fallback = None;
    for &ci in &bearing {
        match claims(def, ci, pod, owner_kinds, sole, vars)? {
            Some(true) if explicit.is_none() => explicit = Some(ci),
            Some(false) if fallback.is_none() => fallback = Some(ci),
            _ => {}
        }
    }
    let Some(ci) = explicit.or(fallback) else {
        return Ok(Some(info));
    };
    // Components from the root down to ci.
    let mut chain = vec![ci];
    while let Some(p) = def.components[*chain.last().unwrap_or(&0)].parent {
        if chain.contains(&p) {
            break;
        }
        chain.push(p);
    }
    chain.reverse();
    if chain.first() != Some(&0) {
        return Ok(Some(info));
    }
    // Keys the pod carries for every component on the way.
    let mut keys = Vec::new();
    for &k in &chain {
        let c = &def.components[k];
        let first = |e: &Option<wlmap_expr::Expr>, field: &str| -> Result<Option<String>> {
            match e {
                Some(e) => Ok(def
                    .eval_obj(e, pod, vars, &c.def.name, field)?
                    .into_iter()
                    .find(|v| !matches!(v, Val::Null))
                    .map(|v| to_jq_string(&v))),
                None => Ok(None),
            }
        };
        keys.push((
            first(&c.instance_key, "componentInstanceSelector.idPath")?,
            first(&c.replica_key, "replicaSelector.keyPath")?,
        ));
    }
    if let Some((_, r)) = keys.last() {
        info.replica = r.clone();
    }
    let mut node = root;
    for (depth, &k) in chain.iter().enumerate().skip(1) {
        let (inst, rep) = &keys[depth];
        let pos = node.children.iter().position(|n| {
            n.component_index == k
                && (n.instance.is_none() || inst.is_none() || n.instance == *inst)
                && (n.replica.is_none() || n.replica == *rep)
                && !(n.instance.is_some() && inst.is_none())
        });
        match pos {
            Some(i) => node = &mut node.children[i],
            None => return Ok(Some(info)),
        }
    }
    // Placed: the pod is moved into the tree (returned only when nothing claims it).
    node.pods.push(info);
    Ok(None)
}
