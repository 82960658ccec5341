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
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use wlmap_expr::{Val, to_jq_string};
use wlmap_schema::TopologyConstraint;

pub mod format;

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
        return Ok(vec![one_group(def, w, pg, pods.is_some())?]);
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

/// `podGroup`: one group for the workload, one sub-group per node of each listed component
/// (of the instances its `instancesPath` selects); the members are listed only when the pods
/// are known. The pods of instances a sub-group leaves out are in no group.
fn one_group(
    def: &Definition,
    w: &Workload,
    pg: &wlmap_schema::PodGroupMapping,
    observed: bool,
) -> Result<PodGroup> {
    let gname = gang_name(&[&w.name, &pg.name]);
    let mut subs = Vec::new();
    let mut left_out: BTreeSet<&str> = BTreeSet::new();
    // True once an `instancesPath` selected: the group is then its sub-groups, even none.
    let mut selected = false;
    for (i, s) in pg.sub_groups.iter().enumerate() {
        let only = match w.sub_group_instances.get(i) {
            Some(Some(Ok(ids))) => {
                selected = true;
                Some(ids)
            }
            Some(Some(Err(e))) => {
                return Err(Error::Shape {
                    definition: def.name(),
                    component: s.component_name.clone(),
                    message: format!("no gang groups: the sub-group's instancesPath failed: {e}"),
                });
            }
            _ => None,
        };
        for n in w.root.walk().filter(|n| n.component == s.component_name) {
            let covered =
                only.is_none_or(|ids| n.instance.as_ref().is_some_and(|i| ids.contains(i)));
            if !covered {
                left_out.extend(n.all_pods().map(|p| p.name.as_str()));
                continue;
            }
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
    let min = if subs.is_empty() && !selected {
        w.root.desired_pods
    } else {
        subs.iter().map(|s| s.min_member).sum()
    };
    let members: Vec<String> = if observed {
        w.root
            .all_pods()
            .filter(|p| !left_out.contains(p.name.as_str()))
            .map(|p| p.name.clone())
            .collect()
    } else {
        vec![]
    };
    Ok(PodGroup {
        name: gname,
        incomplete: observed && (members.len() as u64) < min,
        min_member: min,
        sub_groups: subs,
        members,
        topology: pg.topology.clone(),
    })
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
