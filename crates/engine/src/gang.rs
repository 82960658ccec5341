//! Gang scheduling: pod groups computed from a definition's `gangScheduling` instructions.
//!
//! Rules (documented in README "Gang groups"):
//! - `podGroup`: one group per workload, named `<workload>-<podGroup.name>`, with one sub-group
//!   per node of each listed component (per parent instance and replica copy). A sub-group's
//!   `minMember` is the desired pod count of its node's subtree; the group's `minMember` is the
//!   sum of its sub-groups (or the workload's desired pods when it lists none).
//! - When a definition has both forms, `podGroup` wins (a pod belongs to one group; KAI reads
//!   `podGroup` too) and `podGroups` is ignored.
//! - `podGroups` (deprecated): a member component's pods form one group per *scope*: the
//!   nearest expanded replica copy above (or at) the component, else the whole workload. This
//!   is the prediction; with pods, `groupByKeyPaths` and `filters` are evaluated on each pod
//!   and pods are grouped by their keys (each key must yield exactly one non-empty value).
//! - A component scaled to zero gives `minMember: 0`; a component without scale counts 1 pod.
//! - Names are lowercase DNS labels of at most 63 characters; longer names are cut and end
//!   in a stable hash, so two groups of one workload never share a name.

use crate::definition::{Definition, GangMember};
use crate::error::{Error, Result};
use crate::object::Object;
use crate::resolve::{Node, Workload};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use wlmap_expr::{Val, to_jq_string};
use wlmap_schema::TopologyConstraint;

/// A sub-group of a pod group.
///
/// ```
/// let mut k = wlmap_schema::Karta::example();
/// k.spec.optimization_instructions = Some(serde_json::from_value(serde_json::json!({"gangScheduling": {"podGroup": {"name": "gang", "subGroups": [{"componentName": "pod"}]}}})).unwrap());
/// let def = wlmap_engine::Definition::compile(k, wlmap_engine::Origin::File).unwrap();
/// let w = wlmap_engine::resolve(&def, &wlmap_engine::Object::new(serde_json::json!({"kind": "Pod", "metadata": {"name": "p"}, "spec": {}}))).unwrap();
/// let s = &wlmap_engine::gangs(&def, &w, None).unwrap()[0].sub_groups[0];
/// assert_eq!((s.name.as_str(), s.min_member), ("p-gang-pod", 1));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubGroupOut {
    /// Name, unique within the workload.
    pub name: String,
    /// Pods that must be scheduled together.
    pub min_member: u64,
    /// The component node this sub-group stands for.
    pub component: String,
    /// Pod names (observed mode).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<String>,
    /// Topology constraint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology: Option<TopologyConstraint>,
}

/// A gang: pods that must be scheduled all together or not at all.
///
/// ```
/// let mut k = wlmap_schema::Karta::example();
/// k.spec.optimization_instructions = Some(serde_json::from_value(serde_json::json!({"gangScheduling": {"podGroup": {"name": "gang"}}})).unwrap());
/// let def = wlmap_engine::Definition::compile(k, wlmap_engine::Origin::File).unwrap();
/// let w = wlmap_engine::resolve(&def, &wlmap_engine::Object::new(serde_json::json!({"kind": "Pod", "metadata": {"name": "p"}, "spec": {}}))).unwrap();
/// let g = wlmap_engine::gangs(&def, &w, None).unwrap();
/// assert_eq!((g[0].name.as_str(), g[0].min_member), ("p-gang", 1));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGroup {
    /// Name, unique within the workload, at most 63 characters.
    pub name: String,
    /// Minimum number of pods.
    pub min_member: u64,
    /// Sub-groups.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sub_groups: Vec<SubGroupOut>,
    /// Pod names (observed mode).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<String>,
    /// Topology constraint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology: Option<TopologyConstraint>,
    /// In observed mode: fewer member pods than `minMember`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
}

/// Make a Kubernetes-safe name of at most 63 characters, stable for the same input.
///
/// ```
/// let n = wlmap_engine::gang_name(&["My_Job", "workers[0]"]);
/// assert_eq!(n, "my-job-workers-0");
/// assert!(wlmap_engine::gang_name(&[&"x".repeat(100)]).len() <= 63);
/// ```
pub fn gang_name(parts: &[&str]) -> String {
    let raw = parts
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("-");
    let mut s: String = raw
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    let s = s.trim_matches('-').to_string();
    if s.len() <= 63 {
        return s;
    }
    // FNV-1a of the full raw name keeps cut names distinct and stable.
    let mut h: u64 = 0xcbf29ce484222325;
    for b in raw.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    format!(
        "{}-{:010x}",
        s[..52].trim_end_matches('-'),
        h & 0xff_ffff_ffff
    )
}

/// Compute the gang groups of a resolved workload. With `pods` (observed mode) members are
/// filled and `podGroups` keys are evaluated on the pods; without, groups are predicted from
/// the spec alone.
///
/// ```
/// let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
/// let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}));
/// let w = wlmap_engine::resolve(&def, &pod).unwrap();
/// assert!(wlmap_engine::gangs(&def, &w, None).unwrap().is_empty()); // no instructions
/// ```
pub fn gangs(def: &Definition, w: &Workload, pods: Option<&[Object]>) -> Result<Vec<PodGroup>> {
    let Some(g) = def
        .karta
        .spec
        .optimization_instructions
        .as_ref()
        .and_then(|o| o.gang_scheduling.as_ref())
    else {
        return Ok(vec![]);
    };
    // Groups from a partial tree would undercount their members: a gang too small binds
    // part of a workload, which is what gangs exist to prevent.
    if let Some((n, e)) = w.unreadable().first() {
        return Err(Error::Shape {
            definition: def.name(),
            component: n.component.clone(),
            message: format!(
                "no gang groups from a partial tree: the component could not be read: {e}"
            ),
        });
    }
    if let Some(pg) = &g.pod_group {
        return Ok(vec![one_group(w, pg, pods.is_some())]);
    }
    let mut out = Vec::new();
    for (group_name, members) in &def.gang_members {
        let groups = match pods {
            None => predicted_groups(def, w, group_name, members),
            Some(pods) => observed_groups(def, w, group_name, members, pods)?,
        };
        out.extend(groups);
    }
    Ok(out)
}

/// `podGroup`: one group for the workload, one sub-group per node of each listed component;
/// the members are listed only when the pods are known.
fn one_group(w: &Workload, pg: &wlmap_schema::PodGroupMapping, observed: bool) -> PodGroup {
    let gname = gang_name(&[&w.name, &pg.name]);
    let mut subs = Vec::new();
    for s in &pg.sub_groups {
        for n in w.root.walk().filter(|n| n.component == s.component_name) {
            let seg = if n.path.is_empty() {
                n.segment()
            } else {
                n.path.clone()
            };
            subs.push(SubGroupOut {
                name: gang_name(&[&gname, &seg]),
                min_member: n.desired_pods,
                component: seg.clone(),
                members: if observed {
                    n.all_pods().map(|p| p.name.clone()).collect()
                } else {
                    vec![]
                },
                topology: s.topology.clone(),
            });
        }
    }
    let min = if subs.is_empty() {
        w.root.desired_pods
    } else {
        subs.iter().map(|s| s.min_member).sum()
    };
    let members: Vec<String> = if observed {
        w.root.all_pods().map(|p| p.name.clone()).collect()
    } else {
        vec![]
    };
    PodGroup {
        name: gname,
        incomplete: observed && (members.len() as u64) < min,
        min_member: min,
        sub_groups: subs,
        members,
        topology: pg.topology.clone(),
    }
}

/// The scopes of a `podGroups` entry (one per replica copy of the members' common ancestor,
/// or the workload) with the pods each should have, in tree order.
fn scopes(
    def: &Definition,
    w: &Workload,
    members: &[GangMember],
) -> (BTreeMap<String, u64>, Vec<String>) {
    let member_comps: Vec<usize> = members.iter().map(|m| m.component).collect();
    let mut predicted: BTreeMap<String, u64> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    collect_scopes(
        def,
        &w.root,
        None,
        &member_comps,
        &mut predicted,
        &mut order,
    );
    (predicted, order)
}

/// A `podGroups` group's name in a scope.
fn scoped_name(w: &Workload, group_name: &str, scope: &str) -> String {
    if scope.is_empty() {
        gang_name(&[&w.name, group_name])
    } else {
        gang_name(&[&w.name, group_name, scope])
    }
}

/// `podGroups` without pods: one group per scope, sized from the spec.
fn predicted_groups(
    def: &Definition,
    w: &Workload,
    group_name: &str,
    members: &[GangMember],
) -> Vec<PodGroup> {
    let (predicted, order) = scopes(def, w, members);
    order
        .iter()
        .map(|scope| PodGroup {
            name: scoped_name(w, group_name, scope),
            min_member: predicted[scope],
            sub_groups: vec![],
            members: vec![],
            topology: None,
            incomplete: false,
        })
        .collect()
}

/// `podGroups` with pods: the attributed pods that pass the member's filters, grouped by the
/// values of its keys (a workload may have a group per pod, one per job index). Groups come in
/// the order of their scopes in the tree, then of their keys; a name used twice gets a number
/// in that order. Neither depends on pod names, so a pod being created (nameless, from
/// `generateName`) falls in the group it is in once named.
fn observed_groups(
    def: &Definition,
    w: &Workload,
    group_name: &str,
    members: &[GangMember],
    pods: &[Object],
) -> Result<Vec<PodGroup>> {
    let (predicted, _) = scopes(def, w, members);
    let mut groups = keyed_groups(def, w, members, pods)?;
    groups.sort_by(|a, b| (a.scope_rank, &a.keys).cmp(&(b.scope_rank, &b.keys)));
    let mut used: BTreeMap<String, usize> = BTreeMap::new();
    Ok(groups
        .into_iter()
        .map(|g| {
            let mut name = scoped_name(w, group_name, &g.scope);
            let n = used.entry(name.clone()).or_insert(0);
            *n += 1;
            if *n > 1 {
                name = gang_name(&[&name, &n.to_string()]);
            }
            let min = predicted
                .get(&g.scope)
                .copied()
                .unwrap_or(g.pods.len() as u64);
            PodGroup {
                incomplete: (g.pods.len() as u64) < min,
                name,
                min_member: min,
                sub_groups: vec![],
                members: g.pods,
                topology: None,
            }
        })
        .collect())
}

/// The pods of one observed group: its scope (and that scope's place in the tree), the
/// values of its member's keys, its pods.
struct KeyedGroup {
    scope_rank: usize,
    scope: String,
    keys: Vec<String>,
    pods: Vec<String>,
}

/// The attributed pods that pass their member's filters, grouped by the values of its keys.
fn keyed_groups(
    def: &Definition,
    w: &Workload,
    members: &[GangMember],
    pods: &[Object],
) -> Result<Vec<KeyedGroup>> {
    let by_name: HashMap<&str, &Object, foldhash::fast::RandomState> = pods
        .iter()
        .filter(|o| o.is_pod())
        .map(|o| (o.name(), o))
        .collect();
    let mut groups: Vec<KeyedGroup> = Vec::new();
    let mut group_of: HashMap<Vec<String>, usize, foldhash::fast::RandomState> = HashMap::default();
    let mut scope_ranks: HashMap<String, usize, foldhash::fast::RandomState> = HashMap::default();
    let mut placed = Vec::new();
    pods_with_scope(&w.root, None, &mut placed);
    for (node, scope, pod_name) in placed {
        // Scopes are ranked as the tree walk meets them (before any filter), not by pods.
        let rank = scope_ranks.len();
        let scope_rank = *scope_ranks.entry(scope.clone()).or_insert(rank);
        let Some(m) = effective_member(def, members, node.component_index) else {
            continue;
        };
        let Some(pod) = by_name.get(pod_name.as_str()) else {
            continue;
        };
        let Some(keys) = member_keys(def, m, pod, &pod_name)? else {
            continue; // filtered out
        };
        match group_of.get(&keys) {
            Some(&i) => groups[i].pods.push(pod_name.clone()),
            None => {
                group_of.insert(keys.clone(), groups.len());
                groups.push(KeyedGroup {
                    scope_rank,
                    scope: scope.clone(),
                    keys,
                    pods: vec![pod_name.clone()],
                });
            }
        }
    }
    Ok(groups)
}

/// The values of a member's keys on a pod (one non-empty value each); `None` when the pod
/// fails one of the member's filters.
fn member_keys(
    def: &Definition,
    m: &GangMember,
    pod: &Object,
    pod_name: &str,
) -> Result<Option<Vec<String>>> {
    let cname = &def.components[m.component].def.name;
    for f in &m.filters {
        let out = def.eval_obj(f, pod, &[Val::Null], cname, "filters")?;
        if !matches!(out.first(), Some(Val::Bool(true))) {
            return Ok(None);
        }
    }
    let mut keys = Vec::new();
    for k in &m.keys {
        let vals = match label_strings(def, k, pod) {
            Some(vals) => vals,
            None => def
                .eval_obj(k, pod, &[Val::Null], cname, "groupByKeyPaths")?
                .iter()
                .filter(|v| !matches!(v, Val::Null))
                .map(to_jq_string)
                .filter(|s| !s.is_empty())
                .collect(),
        };
        if vals.len() != 1 {
            return Err(Error::Shape {
                definition: def.name(),
                component: cname.clone(),
                message: format!(
                    "groupByKeyPaths `{}` must yield exactly one non-empty value on pod {}, got {}",
                    k.text(),
                    pod_name,
                    vals.len()
                ),
            });
        }
        keys.extend(vals);
    }
    Ok(Some(keys))
}

/// The non-empty strings a key (a pod label, most often) reads, taken from the pod's JSON
/// without converting it when the key is a path; `None` when the key fails or reads anything
/// but strings and nulls (then it is evaluated the general way, errors included).
fn label_strings(def: &Definition, k: &wlmap_expr::Expr, pod: &Object) -> Option<Vec<String>> {
    let outs = k.evaluate(pod.input(), &[], &def.limits).ok()?;
    let mut out = Vec::with_capacity(outs.len());
    for o in &outs {
        match o.to_json().as_ref() {
            Value::String(s) if !s.is_empty() => out.push(s.clone()),
            Value::String(_) | Value::Null => {}
            _ => return None,
        }
    }
    Some(out)
}

/// The member a pod of component `ci` belongs to: the first member naming it, else the first
/// naming its nearest ancestor.
fn effective_member<'a>(
    def: &Definition,
    members: &'a [crate::definition::GangMember],
    ci: usize,
) -> Option<&'a crate::definition::GangMember> {
    let mut at = Some(ci);
    while let Some(c) = at {
        if let Some(m) = members.iter().find(|m| m.component == c) {
            return Some(m);
        }
        at = def.components[c].parent;
    }
    None
}

fn in_member(def: &Definition, ci: usize, member_comps: &[usize]) -> bool {
    let mut at = Some(ci);
    while let Some(c) = at {
        if member_comps.contains(&c) {
            return true;
        }
        at = def.components[c].parent;
    }
    false
}

fn collect_scopes(
    def: &Definition,
    n: &Node,
    scope: Option<&str>,
    member_comps: &[usize],
    acc: &mut BTreeMap<String, u64>,
    order: &mut Vec<String>,
) {
    let scope = if n.replica.is_some() {
        Some(n.path.as_str())
    } else {
        scope
    };
    if n.has_pod_spec && in_member(def, n.component_index, member_comps) {
        let key = scope.unwrap_or("").to_string();
        if !acc.contains_key(&key) {
            order.push(key.clone());
        }
        *acc.entry(key).or_insert(0) += if n.template.is_some() { n.replicas } else { 0 };
    }
    for c in &n.children {
        collect_scopes(def, c, scope, member_comps, acc, order);
    }
}

fn pods_with_scope<'a>(
    n: &'a Node,
    scope: Option<&str>,
    out: &mut Vec<(&'a Node, String, String)>,
) {
    let scope = if n.replica.is_some() {
        Some(n.path.as_str())
    } else {
        scope
    };
    for p in &n.pods {
        out.push((n, scope.unwrap_or("").to_string(), p.name.clone()));
    }
    for c in &n.children {
        pods_with_scope(c, scope, out);
    }
}

/// The scheduler languages gangs can be rendered in.
///
/// ```
/// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
/// # let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u"}, "spec": {}}));
/// # let w = wlmap_engine::resolve(&def, &pod).unwrap();
/// let g = vec![wlmap_engine::PodGroup { name: "p".into(), min_member: 1, sub_groups: vec![], members: vec![], topology: None, incomplete: false }];
/// let r = wlmap_engine::render_gangs(wlmap_engine::SchedulerFormat::Volcano, &g, &w, &pod);
/// assert_eq!(r.objects[0]["apiVersion"], "scheduling.volcano.sh/v1beta1");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedulerFormat {
    /// KAI Scheduler `scheduling.run.ai/v2alpha2` PodGroup.
    Kai,
    /// scheduler-plugins coscheduling `scheduling.x-k8s.io/v1alpha1` PodGroup.
    Coscheduling,
    /// Volcano `scheduling.volcano.sh/v1beta1` PodGroup.
    Volcano,
    /// Kueue pod-group labels and annotations.
    Kueue,
    /// Kubernetes v1.37 gang scheduling: `scheduling.k8s.io/v1beta1` PodGroups.
    Native,
    /// Kubernetes v1.37 hierarchical gangs (alpha, feature gate `CompositePodGroup`): a group
    /// with sub-groups is a `scheduling.k8s.io/v1alpha3` CompositePodGroup over one PodGroup
    /// per sub-group, described by a Workload; a group without is a PodGroup as in
    /// [`SchedulerFormat::Native`].
    NativeComposite,
    /// Kubernetes v1.35 Workload API (`scheduling.k8s.io/v1alpha1`).
    Workload,
}

impl SchedulerFormat {
    /// Every format, in the order help lists them.
    pub const ALL: [SchedulerFormat; 7] = [
        SchedulerFormat::Kai,
        SchedulerFormat::Coscheduling,
        SchedulerFormat::Volcano,
        SchedulerFormat::Kueue,
        SchedulerFormat::Native,
        SchedulerFormat::NativeComposite,
        SchedulerFormat::Workload,
    ];

    /// The format's name on a command line (`--format volcano`).
    ///
    /// ```
    /// use wlmap_engine::SchedulerFormat;
    /// assert_eq!(SchedulerFormat::Volcano.name(), "volcano");
    /// assert_eq!("native".parse::<SchedulerFormat>(), Ok(SchedulerFormat::Native));
    /// assert!("slurm".parse::<SchedulerFormat>().unwrap_err().contains("kai, coscheduling"));
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            SchedulerFormat::Kai => "kai",
            SchedulerFormat::Coscheduling => "coscheduling",
            SchedulerFormat::Volcano => "volcano",
            SchedulerFormat::Kueue => "kueue",
            SchedulerFormat::Native => "native",
            SchedulerFormat::NativeComposite => "native-composite",
            SchedulerFormat::Workload => "workload",
        }
    }

    /// What the format writes, in a line.
    pub fn summary(self) -> &'static str {
        match self {
            SchedulerFormat::Kai => "KAI Scheduler PodGroup (scheduling.run.ai/v2alpha2)",
            SchedulerFormat::Coscheduling => {
                "scheduler-plugins coscheduling PodGroup (scheduling.x-k8s.io/v1alpha1), pod label"
            }
            SchedulerFormat::Volcano => {
                "Volcano PodGroup (scheduling.volcano.sh/v1beta1), pod annotation"
            }
            SchedulerFormat::Kueue => "Kueue pod-group labels and annotations",
            SchedulerFormat::Native => {
                "Kubernetes v1.37 gang scheduling: PodGroups (scheduling.k8s.io/v1beta1), pod spec.schedulingGroup"
            }
            SchedulerFormat::NativeComposite => {
                "Kubernetes v1.37 hierarchical gangs: a CompositePodGroup (scheduling.k8s.io/v1alpha3, gate CompositePodGroup) over a PodGroup per sub-group"
            }
            SchedulerFormat::Workload => {
                "Kubernetes v1.35 Workload API (scheduling.k8s.io/v1alpha1)"
            }
        }
    }
}

impl std::str::FromStr for SchedulerFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        SchedulerFormat::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = SchedulerFormat::ALL.iter().map(|f| f.name()).collect();
                format!(
                    "unknown scheduler format {s:?} (one of {})",
                    names.join(", ")
                )
            })
    }
}

impl std::fmt::Display for SchedulerFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

fn owner_ref(o: &Object) -> Value {
    json!([{"apiVersion": o.api_version(), "kind": o.kind(), "name": o.name(), "uid": o.uid(), "controller": true, "blockOwnerDeletion": false}])
}

/// The label every gang object wlmap writes carries: the controller changes and deletes only
/// objects with it (an object of the same name without it belongs to someone else).
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "wlmap");

fn meta(name: &str, o: &Object) -> Value {
    let mut m = json!({"name": name, "labels": {MANAGED_BY.0: MANAGED_BY.1}, "ownerReferences": owner_ref(o)});
    if !o.namespace().is_empty() {
        m["namespace"] = json!(o.namespace());
    }
    m
}

/// What a scheduler format renders of a workload's gang groups.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rendered {
    /// The objects to create, each owned by the workload (valid for `kubectl apply`). Kueue
    /// has none: its groups are pod labels and annotations only.
    pub objects: Vec<Value>,
    /// What ties each known pod to its group: `{"pod", "labels"?, "annotations"?, "spec"?}`.
    /// A pod carries these from its creation (a webhook or the operator sets them): the
    /// native `spec.schedulingGroup` cannot change afterwards.
    pub pod_tags: Vec<Value>,
    /// What the format could not say (more groups than it holds, ...).
    pub warnings: Vec<String>,
    /// Kueue: the labels and annotations each group's pod templates need.
    pub templates: Vec<Value>,
}

impl Rendered {
    fn extend(&mut self, other: Rendered) {
        self.objects.extend(other.objects);
        self.pod_tags.extend(other.pod_tags);
        self.warnings.extend(other.warnings);
        self.templates.extend(other.templates);
    }
}

/// Render groups as a scheduler's objects: PodGroups (KAI, coscheduling, Volcano, the
/// Kubernetes v1.37 `PodGroup`), a v1.35 `Workload`, or pod labels and annotations (Kueue),
/// each owned by the workload, with what ties each known pod to its group.
///
/// ```
/// let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
/// let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u"}, "spec": {}}));
/// let w = wlmap_engine::resolve(&def, &pod).unwrap();
/// let g = vec![wlmap_engine::PodGroup { name: "p".into(), min_member: 1, sub_groups: vec![], members: vec!["p".into()], topology: None, incomplete: false }];
/// let r = wlmap_engine::render_gangs(wlmap_engine::SchedulerFormat::Native, &g, &w, &pod);
/// assert_eq!(r.objects[0]["apiVersion"], "scheduling.k8s.io/v1beta1");
/// assert_eq!(r.objects[0]["spec"]["schedulingPolicy"]["gang"]["minCount"], 1);
/// assert_eq!(r.pod_tags[0]["spec"]["schedulingGroup"]["podGroupName"], "p");
/// ```
pub fn render_gangs(
    format: SchedulerFormat,
    groups: &[PodGroup],
    w: &Workload,
    o: &Object,
) -> Rendered {
    match format {
        SchedulerFormat::Kai => kai(groups, o),
        SchedulerFormat::Coscheduling => coscheduling(groups, o),
        SchedulerFormat::Volcano => volcano(groups, w, o),
        SchedulerFormat::Kueue => kueue(groups),
        SchedulerFormat::Native => native(groups, o),
        SchedulerFormat::NativeComposite => native_composite(groups, o),
        SchedulerFormat::Workload => workload(groups, o),
    }
}

fn topology(t: &TopologyConstraint) -> Value {
    json!({"topology": t.topology_name, "requiredTopologyLevel": t.required_topology_level, "preferredTopologyLevel": t.preferred_topology_level})
}

/// Tags for each member pod of each group.
fn tag_members(groups: &[PodGroup], tag: impl Fn(&PodGroup, &str) -> Value) -> Vec<Value> {
    groups
        .iter()
        .flat_map(|g| g.members.iter().map(move |p| (g, p)))
        .map(|(g, p)| tag(g, p))
        .collect()
}

/// KAI Scheduler `scheduling.run.ai/v2alpha2` PodGroups; sub-groups as KAI's `subGroups`.
fn kai(groups: &[PodGroup], o: &Object) -> Rendered {
    let label = |k: &str| o.label(k).map(str::to_string);
    let mut r = Rendered::default();
    for g in groups {
        let mut spec = json!({"queue": label("kai.scheduler/queue").unwrap_or_else(|| "default-queue".into())});
        if let Some(p) = label("priorityClassName").or_else(|| {
            o.json()
                .pointer("/spec/priorityClassName")
                .and_then(Value::as_str)
                .map(str::to_string)
        }) {
            spec["priorityClassName"] = json!(p);
        }
        if g.sub_groups.is_empty() {
            spec["minMember"] = json!(g.min_member);
        } else {
            // KAI: minMember and minSubGroup are exclusive; a group with sub-groups needs all
            // of them (each sub-group carries its own minMember).
            spec["minSubGroup"] = json!(g.sub_groups.len());
            spec["subGroups"] = g
                .sub_groups
                .iter()
                .map(|s| {
                    let mut sg = json!({"name": s.name, "minMember": s.min_member});
                    if let Some(t) = &s.topology {
                        sg["topologyConstraint"] = topology(t);
                    }
                    sg
                })
                .collect();
        }
        if let Some(t) = &g.topology {
            spec["topologyConstraint"] = topology(t);
        }
        r.objects.push(json!({"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup", "metadata": meta(&g.name, o), "spec": spec}));
        for s in &g.sub_groups {
            for p in &s.members {
                r.pod_tags.push(json!({"pod": p, "annotations": {"pod-group-name": g.name}, "labels": {"kai.scheduler/subgroup-name": s.name}}));
            }
        }
        if g.sub_groups.is_empty() {
            for p in &g.members {
                r.pod_tags
                    .push(json!({"pod": p, "annotations": {"pod-group-name": g.name}}));
            }
        }
    }
    r
}

/// scheduler-plugins coscheduling `scheduling.x-k8s.io/v1alpha1` PodGroups.
fn coscheduling(groups: &[PodGroup], o: &Object) -> Rendered {
    Rendered {
        objects: groups
            .iter()
            .map(|g| json!({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": meta(&g.name, o), "spec": {"minMember": g.min_member, "scheduleTimeoutSeconds": 60}}))
            .collect(),
        pod_tags: tag_members(groups, |g, p| {
            json!({"pod": p, "labels": {"scheduling.x-k8s.io/pod-group": g.name}})
        }),
        ..Rendered::default()
    }
}

/// Volcano `scheduling.volcano.sh/v1beta1` PodGroups, with `minResources` when the workload is
/// one group (it is the whole workload's desired request).
fn volcano(groups: &[PodGroup], w: &Workload, o: &Object) -> Rendered {
    let r = &w.root.resources;
    let mut min_res = serde_json::Map::new();
    if r.cpu_millis() > 0 {
        min_res.insert("cpu".into(), json!(format!("{}m", r.cpu_millis())));
    }
    if r.memory_bytes() > 0 {
        min_res.insert("memory".into(), json!(r.memory_bytes().to_string()));
    }
    for (k, v) in r.extended() {
        min_res.insert(k, json!(num(v)));
    }
    let single = groups.len() == 1;
    let queue = o
        .json()
        .pointer("/metadata/annotations/scheduling.volcano.sh~1queue-name")
        .and_then(Value::as_str)
        .unwrap_or("default");
    let objects = groups
        .iter()
        .map(|g| {
            let mut spec = json!({"minMember": g.min_member, "queue": queue});
            if single && !min_res.is_empty() {
                spec["minResources"] = Value::Object(min_res.clone());
            }
            json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": meta(&g.name, o), "spec": spec})
        })
        .collect();
    Rendered {
        objects,
        pod_tags: tag_members(
            groups,
            |g, p| json!({"pod": p, "annotations": {"scheduling.k8s.io/group-name": g.name}}),
        ),
        ..Rendered::default()
    }
}

/// Kueue: no objects, the pod-group labels and annotations of each group's pods.
fn kueue(groups: &[PodGroup]) -> Rendered {
    let tags = |g: &PodGroup| json!({"labels": {"kueue.x-k8s.io/pod-group-name": g.name}, "annotations": {"kueue.x-k8s.io/pod-group-total-count": g.min_member.to_string()}});
    Rendered {
        templates: groups
            .iter()
            .map(|g| json!({"podGroup": g.name, "podTemplateMetadata": tags(g)}))
            .collect(),
        pod_tags: tag_members(groups, |g, p| {
            let mut t = tags(g);
            t["pod"] = json!(p);
            t
        }),
        ..Rendered::default()
    }
}

/// Kubernetes v1.37 gang scheduling: a `scheduling.k8s.io/v1beta1` PodGroup per group (gang
/// policy, `minCount`), which the pods name in `spec.schedulingGroup.podGroupName` from their
/// creation. A PodGroup needs no Workload. A group of no pods (scaled to zero) has none: the
/// API holds `minCount` to at least 1.
fn native(groups: &[PodGroup], o: &Object) -> Rendered {
    let mut r = Rendered::default();
    for g in groups.iter().filter(|g| g.min_member > 0) {
        r.objects
            .push(native_pod_group(&g.name, g.min_member, None, o));
        tag_native(&mut r, &g.name, &g.members);
    }
    r
}

/// A v1.37 PodGroup; a leaf of a CompositePodGroup names its parent and the Workload template
/// it stands for (the API requires both together), and carries its sub-group's topology.
fn native_pod_group(
    name: &str,
    min_count: u64,
    leaf: Option<(&str, &SubGroupOut)>,
    o: &Object,
) -> Value {
    let mut spec = json!({"schedulingPolicy": {"gang": {"minCount": min_count}}});
    if let Some((parent, s)) = leaf {
        spec["parentCompositePodGroupName"] = json!(parent);
        spec["workloadRef"] = json!({"workloadName": parent, "templateName": name});
        constrain(&mut spec, &s.topology);
    }
    json!({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": meta(name, o), "spec": spec})
}

/// A group's required topology level as the v1.37 constraint: every pod of the group in one
/// domain of that node label (a rack, an NVLink domain). v1.37 has no preferred level, and
/// the constraint needs the `TopologyAwareWorkloadScheduling` gate, which the hierarchical
/// form needs anyway: flat PodGroups carry none.
fn constrain(spec: &mut Value, t: &Option<TopologyConstraint>) {
    if let Some(t) = t.as_ref().filter(|t| !t.required_topology_level.is_empty()) {
        spec["schedulingConstraints"] = json!({"topology": [{"key": t.required_topology_level}]});
    }
}

/// What puts each member pod in a v1.37 PodGroup: the group's name in its spec.
fn tag_native(r: &mut Rendered, group: &str, members: &[String]) {
    for p in members {
        r.pod_tags
            .push(json!({"pod": p, "spec": {"schedulingGroup": {"podGroupName": group}}}));
    }
}

/// The most templates a Workload holds at one level.
const MAX_TEMPLATES: usize = 8;

/// Kubernetes v1.37 hierarchical gangs: a group with sub-groups is a `scheduling.k8s.io/v1alpha3`
/// CompositePodGroup that needs every sub-group (`minGroupCount`), over a PodGroup per
/// sub-group with its own `minCount`, so that each role is complete, not only the total.
/// The pods name their sub-group's PodGroup. A Workload of the group's name holds the
/// templates both refer to (the scheduler reads the groups only; the API requires the
/// reference). Groups without sub-groups, or with more than a Workload holds, are PodGroups
/// as in `native`.
///
/// ```
/// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
/// # let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u"}, "spec": {}}));
/// # let w = wlmap_engine::resolve(&def, &pod).unwrap();
/// use wlmap_engine::{PodGroup, SubGroupOut, SchedulerFormat, render_gangs};
/// let sub = |n: &str, m: u64| SubGroupOut { name: n.into(), min_member: m, component: n.into(), members: vec![format!("{n}-0")], topology: None };
/// let mut workers = sub("p-gang-workers", 2);
/// workers.topology = Some(serde_json::from_value(serde_json::json!({"topologyName": "dc", "requiredTopologyLevel": "example.com/rack"})).unwrap());
/// let g = PodGroup { name: "p-gang".into(), min_member: 3, sub_groups: vec![sub("p-gang-leader", 1), workers], members: vec![], topology: None, incomplete: false };
/// let r = render_gangs(SchedulerFormat::NativeComposite, &[g], &w, &pod);
/// let kinds: Vec<&str> = r.objects.iter().map(|o| o["kind"].as_str().unwrap()).collect();
/// assert_eq!(kinds, ["Workload", "CompositePodGroup", "PodGroup", "PodGroup"]);
/// assert_eq!(r.objects[1]["spec"]["schedulingPolicy"]["gang"]["minGroupCount"], 2);
/// assert_eq!(r.objects[3]["spec"]["parentCompositePodGroupName"], "p-gang");
/// // The workers in one rack; the leader anywhere.
/// assert_eq!(r.objects[3]["spec"]["schedulingConstraints"]["topology"][0]["key"], "example.com/rack");
/// assert!(r.objects[2]["spec"]["schedulingConstraints"].is_null());
/// assert_eq!(r.pod_tags[1]["spec"]["schedulingGroup"]["podGroupName"], "p-gang-workers");
/// ```
fn native_composite(groups: &[PodGroup], o: &Object) -> Rendered {
    let mut r = Rendered::default();
    for g in groups {
        let leaves: Vec<&SubGroupOut> = g.sub_groups.iter().filter(|s| s.min_member > 0).collect();
        if leaves.len() > MAX_TEMPLATES {
            r.warnings.push(format!(
                "{}: {} sub-groups, more than the {MAX_TEMPLATES} templates a Workload holds: one PodGroup for the whole group",
                g.name,
                leaves.len()
            ));
        }
        if leaves.is_empty() || leaves.len() > MAX_TEMPLATES {
            r.extend(native(std::slice::from_ref(g), o));
        } else {
            composite(&mut r, g, &leaves, o);
        }
    }
    r
}

/// The Workload, the CompositePodGroup and the leaf PodGroups of one group.
fn composite(r: &mut Rendered, g: &PodGroup, leaves: &[&SubGroupOut], o: &Object) {
    let gv = o.gvk();
    let policy = json!({"gang": {"minGroupCount": leaves.len()}});
    let templates: Vec<Value> = leaves
        .iter()
        .map(|s| {
            let mut t =
                json!({"name": s.name, "schedulingPolicy": {"gang": {"minCount": s.min_member}}});
            constrain(&mut t, &s.topology);
            t
        })
        .collect();
    let mut template =
        json!({"name": g.name, "schedulingPolicy": policy, "podGroupTemplates": templates});
    constrain(&mut template, &g.topology);
    r.objects.push(json!({
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": meta(&g.name, o),
        "spec": {"controllerRef": {"apiGroup": gv.group, "kind": gv.kind, "name": o.name()},
            "compositePodGroupTemplates": [template]}}));
    let mut spec = json!({"workloadRef": {"workloadName": g.name, "templateName": g.name}, "schedulingPolicy": policy});
    constrain(&mut spec, &g.topology);
    r.objects.push(json!({
        "apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup", "metadata": meta(&g.name, o),
        "spec": spec}));
    for s in leaves {
        r.objects.push(native_pod_group(
            &s.name,
            s.min_member,
            Some((&g.name, s)),
            o,
        ));
        tag_native(r, &s.name, &s.members);
    }
}

/// Kubernetes v1.35 Workload API (`scheduling.k8s.io/v1alpha1`, one Workload of at most 8
/// pod groups); v1.37 no longer serves it (see [`SchedulerFormat::Native`]).
fn workload(groups: &[PodGroup], o: &Object) -> Rendered {
    let pgs: Vec<Value> = groups
        .iter()
        .take(8)
        .map(|g| json!({"name": g.name, "policy": {"gang": {"minCount": g.min_member}}}))
        .collect();
    let gv = o.gvk();
    let mut r = Rendered::default();
    r.objects.push(json!({
        "apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
        "metadata": meta(&gang_name(&[o.name()]), o),
        "spec": {"controllerRef": {"apiGroup": gv.group, "kind": gv.kind, "name": o.name()}, "podGroups": pgs}}));
    if groups.len() > 8 {
        r.warnings.push(format!(
            "the Workload API allows 8 pod groups; {} were cut",
            groups.len() - 8
        ));
    }
    r
}
