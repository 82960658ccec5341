//! Updates of pod templates through a definition, for all three spec shapes.
//!
//! Writes go through the paths the definition's expressions designate (`path(EXPR)`), so a
//! definition that reads `.spec.replicatedJobs[].template.spec.template` writes exactly there.
//! Only the asked fields change: a value equal to the current one is not written, missing
//! parents are created as objects, and nothing is ever set to null.

use crate::definition::{Definition, SpecShape};
use crate::error::{Error, Result};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use wlmap_expr::{Expr, to_jq_string, to_val};

/// What to change in the pod templates.
///
/// ```
/// let mut u = wlmap_engine::PodUpdate::default();
/// u.scheduler_name = Some("kai-scheduler".into());
/// assert!(!u.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodUpdate {
    /// Replace the whole pod template (PodTemplateSpec: `{metadata, spec}`).
    pub template: Option<Value>,
    /// `spec.schedulerName`.
    pub scheduler_name: Option<String>,
    /// `spec.priorityClassName`.
    pub priority_class_name: Option<String>,
    /// Labels merged into `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// Annotations merged into `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
    /// Entries merged into `spec.nodeSelector`.
    pub node_selector: BTreeMap<String, String>,
    /// Tolerations added to `spec.tolerations` when not already there.
    pub tolerations: Vec<Value>,
    /// `spec.affinity`, replaced.
    pub affinity: Option<Value>,
    /// Resources (ResourceRequirements) of the named container, or of every container.
    pub resources: Option<(Option<String>, Value)>,
}

impl PodUpdate {
    /// True when nothing is asked.
    ///
    /// ```
    /// assert!(wlmap_engine::PodUpdate::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        *self == PodUpdate::default()
    }
}

/// Which components (and instances) an update touches.
///
/// ```
/// let t = wlmap_engine::Target::component("worker");
/// assert_eq!(t.component.as_deref(), Some("worker"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Target {
    /// Only this component (every pod-bearing component when None).
    pub component: Option<String>,
    /// Only this instance of it.
    pub instance: Option<String>,
}

impl Target {
    /// Every pod-bearing component.
    ///
    /// ```
    /// assert!(wlmap_engine::Target::all().component.is_none());
    /// ```
    pub fn all() -> Target {
        Target::default()
    }

    /// One component, every instance.
    ///
    /// ```
    /// assert!(wlmap_engine::Target::component("x").instance.is_none());
    /// ```
    pub fn component(name: &str) -> Target {
        Target {
            component: Some(name.into()),
            instance: None,
        }
    }
}

/// What an update did.
///
/// ```
/// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
/// let mut pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"schedulerName": "kai"}});
/// let u = wlmap_engine::PodUpdate { scheduler_name: Some("kai".into()), ..Default::default() };
/// let r = wlmap_engine::update(&def, &mut pod, &wlmap_engine::Target::all(), &u).unwrap();
/// assert_eq!(r.templates, 1);
/// assert!(r.changed.is_empty()); // unchanged values are not listed
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpdateReport {
    /// JSON pointers of every value written (unchanged values are not listed).
    pub changed: Vec<String>,
    /// Pod templates (component instances) the update reached.
    pub templates: usize,
}

/// Apply an update to a workload object (in place) through a definition.
///
/// ```
/// let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
/// let mut pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}});
/// let mut u = wlmap_engine::PodUpdate::default();
/// u.scheduler_name = Some("kai-scheduler".into());
/// let r = wlmap_engine::update(&def, &mut pod, &wlmap_engine::Target::all(), &u).unwrap();
/// assert_eq!(pod["spec"]["schedulerName"], "kai-scheduler");
/// assert_eq!(r.changed, vec!["/spec/schedulerName"]);
/// ```
pub fn update(
    def: &Definition,
    doc: &mut Value,
    target: &Target,
    u: &PodUpdate,
) -> Result<UpdateReport> {
    let mut report = UpdateReport::default();
    let mut matched_component = false;
    for c in &def.components {
        let Some(shape) = &c.spec else { continue };
        if target.component.as_deref().is_some_and(|t| t != c.def.name) {
            continue;
        }
        matched_component = true;
        let name = c.def.name.clone();
        // Read everything this component needs before writing anything, from the document as
        // it is now: plain paths walk the JSON, other expressions its jaq value (converted at
        // most once).
        let plan = read_component(def, c, doc, u, &name)?;
        let keep = |i: usize| -> bool {
            match (&target.instance, &plan.ids) {
                (None, _) => true,
                (Some(want), Some(ids)) => ids.get(i) == Some(want),
                (Some(_), None) => false,
            }
        };
        match (shape, plan.paths) {
            (SpecShape::Template(_), Paths::Template(paths)) => {
                for (i, p) in paths.into_iter().enumerate() {
                    if keep(i) {
                        report.templates += 1;
                        apply_template(doc, &p, &p, u, &mut report, &name)?;
                    }
                }
            }
            (SpecShape::PodSpec { .. }, Paths::PodSpec { specs, metas }) => {
                for (i, sp) in specs.into_iter().enumerate() {
                    if !keep(i) {
                        continue;
                    }
                    report.templates += 1;
                    let meta = metas.as_ref().and_then(|m| m.get(i).cloned());
                    if meta.is_none() && (!u.labels.is_empty() || !u.annotations.is_empty()) {
                        return Err(Error::Update { component: name, message: "the definition has no metadataPath, so labels and annotations cannot be set".into() });
                    }
                    apply_spec_parts(doc, &sp, meta.as_deref(), u, &mut report, &name)?;
                }
            }
            (SpecShape::Fragmented(_), Paths::Fragments(writes)) => {
                let mut touched = false;
                for w in writes {
                    for (i, p) in w.paths.into_iter().enumerate() {
                        if !keep(i) {
                            continue;
                        }
                        touched = true;
                        if let Some(v) = &w.value {
                            set_at(doc, &p, v.clone(), &mut report);
                        }
                        for (k, v) in &w.merge {
                            let mut pk = p.clone();
                            pk.push(Value::from(k.clone()));
                            set_at(doc, &pk, Value::from(v.clone()), &mut report);
                        }
                    }
                }
                if touched {
                    report.templates += 1;
                }
            }
            _ => unreachable!("read_component follows the spec shape"),
        }
    }
    if !matched_component {
        return Err(Error::Update {
            component: target.component.clone().unwrap_or_default(),
            message: format!(
                "no pod-bearing component of that name; components with a pod spec: {}",
                def.components
                    .iter()
                    .filter(|c| c.spec.is_some())
                    .map(|c| c.def.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    Ok(report)
}

/// What one component's update reads from the document before writing.
struct Plan {
    ids: Option<Vec<String>>,
    paths: Paths,
}

/// The write locations of one component, by spec shape.
enum Paths {
    Template(Vec<Vec<Value>>),
    PodSpec {
        specs: Vec<Vec<Value>>,
        metas: Option<Vec<Vec<Value>>>,
    },
    /// One entry per fragment to write: its paths (one per instance) and what to write there.
    Fragments(Vec<FragmentWrite>),
}

struct FragmentWrite {
    paths: Vec<Vec<Value>>,
    value: Option<Value>,
    merge: BTreeMap<String, String>,
}

fn read_component(
    def: &Definition,
    c: &crate::definition::Component,
    doc: &Value,
    u: &PodUpdate,
    name: &str,
) -> Result<Plan> {
    let converted = std::cell::OnceCell::new();
    let val = || converted.get_or_init(|| to_val(doc));
    let ids: Option<Vec<String>> = match &c.instance_ids {
        Some(e) => {
            let out = match e.eval_json(doc, &def.limits) {
                Some(r) => r.map_err(|source| def.located(e, name, "instanceIdPath", source))?,
                None => def.eval(e, val(), &vars(def), name, "instanceIdPath")?,
            };
            Some(out.iter().map(to_jq_string).collect())
        }
        None => None,
    };
    let paths_of = |e: &Expr, field: &str| -> Result<Vec<Vec<Value>>> {
        let ps = match e.paths_json(doc, &def.limits) {
            Some(r) => r,
            None => e.paths(val(), &vars(def), &def.limits),
        }
        .map_err(|source| Error::Update {
            component: name.to_string(),
            message: format!("{field} `{}` is not a writable path: {source}", e.text()),
        })?;
        Ok(ps
            .into_iter()
            .map(|p| p.as_array().cloned().unwrap_or_default())
            .collect())
    };
    let paths = match c.spec.as_ref().expect("a component with a spec") {
        SpecShape::Template(e) => Paths::Template(paths_of(e, "podTemplateSpecPath")?),
        SpecShape::PodSpec { spec, metadata } => Paths::PodSpec {
            specs: paths_of(spec, "podSpecPath")?,
            metas: match metadata {
                Some(m) => Some(paths_of(m, "metadataPath")?),
                None => None,
            },
        },
        SpecShape::Fragmented(f) => {
            if u.template.is_some() || !u.node_selector.is_empty() || !u.tolerations.is_empty() {
                return Err(Error::Update { component: name.to_string(), message: "the definition spreads the pod spec over fragments: a whole template, nodeSelector and tolerations have no path".into() });
            }
            let mut writes = Vec::new();
            let mut want = |e: &Option<Expr>,
                            field: &str,
                            value: Option<&Value>,
                            merge: &BTreeMap<String, String>|
             -> Result<()> {
                if value.is_none() && merge.is_empty() {
                    return Ok(());
                }
                let Some(e) = e else {
                    return Err(Error::Update {
                        component: name.to_string(),
                        message: format!("the definition has no {field}"),
                    });
                };
                writes.push(FragmentWrite {
                    paths: paths_of(e, field)?,
                    value: value.cloned(),
                    merge: merge.clone(),
                });
                Ok(())
            };
            let none = BTreeMap::new();
            let sched = u.scheduler_name.clone().map(Value::from);
            let prio = u.priority_class_name.clone().map(Value::from);
            want(
                &f.scheduler_name,
                "schedulerNamePath",
                sched.as_ref(),
                &none,
            )?;
            want(
                &f.priority_class_name,
                "priorityClassNamePath",
                prio.as_ref(),
                &none,
            )?;
            want(&f.labels, "labelsPath", None, &u.labels)?;
            want(&f.annotations, "annotationsPath", None, &u.annotations)?;
            if let Some(a) = &u.affinity {
                want(
                    &f.node_affinity,
                    "nodeAffinityPath",
                    a.get("nodeAffinity"),
                    &none,
                )?;
                want(
                    &f.pod_affinity,
                    "podAffinityPath",
                    a.get("podAffinity"),
                    &none,
                )?;
            }
            if let Some((_, res)) = &u.resources {
                want(&f.resources, "resourcesPath", Some(res), &none)?;
            }
            Paths::Fragments(writes)
        }
    };
    Ok(Plan { ids, paths })
}

fn vars(def: &Definition) -> Vec<wlmap_expr::Val> {
    vec![wlmap_expr::Val::Null; 1 + def.references.len()]
}

fn join(base: &[Value], rest: &[&str]) -> Vec<Value> {
    base.iter()
        .cloned()
        .chain(rest.iter().map(|s| Value::from(*s)))
        .collect()
}

fn apply_template(
    doc: &mut Value,
    spec_base: &[Value],
    meta_base: &[Value],
    u: &PodUpdate,
    r: &mut UpdateReport,
    comp: &str,
) -> Result<()> {
    if let Some(t) = &u.template {
        set_at(doc, spec_base, t.clone(), r);
    }
    apply_spec_parts(
        doc,
        &join(spec_base, &["spec"]),
        Some(&join(meta_base, &["metadata"])),
        u,
        r,
        comp,
    )
}

fn apply_spec_parts(
    doc: &mut Value,
    spec: &[Value],
    meta: Option<&[Value]>,
    u: &PodUpdate,
    r: &mut UpdateReport,
    comp: &str,
) -> Result<()> {
    if let Some(s) = &u.scheduler_name {
        set_at(
            doc,
            &join(spec, &["schedulerName"]),
            Value::from(s.clone()),
            r,
        );
    }
    if let Some(s) = &u.priority_class_name {
        set_at(
            doc,
            &join(spec, &["priorityClassName"]),
            Value::from(s.clone()),
            r,
        );
    }
    if let Some(meta) = meta {
        for (k, v) in &u.labels {
            set_at(doc, &join(meta, &["labels", k]), Value::from(v.clone()), r);
        }
        for (k, v) in &u.annotations {
            set_at(
                doc,
                &join(meta, &["annotations", k]),
                Value::from(v.clone()),
                r,
            );
        }
    }
    for (k, v) in &u.node_selector {
        set_at(
            doc,
            &join(spec, &["nodeSelector", k]),
            Value::from(v.clone()),
            r,
        );
    }
    if !u.tolerations.is_empty() {
        let p = join(spec, &["tolerations"]);
        let mut list = get_at(doc, &p)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let before = list.len();
        for t in &u.tolerations {
            if !list.contains(t) {
                list.push(t.clone());
            }
        }
        if list.len() != before {
            set_at(doc, &p, Value::Array(list), r);
        }
    }
    if let Some(a) = &u.affinity {
        set_at(doc, &join(spec, &["affinity"]), a.clone(), r);
    }
    if let Some((name, res)) = &u.resources {
        let cs = get_at(doc, &join(spec, &["containers"]))
            .and_then(Value::as_array)
            .map(|a| a.len())
            .unwrap_or(0);
        let mut hit = false;
        for i in 0..cs {
            let cp = {
                let mut p = join(spec, &["containers"]);
                p.push(Value::from(i));
                p
            };
            let cname = get_at(doc, &join(&cp, &["name"]))
                .and_then(Value::as_str)
                .map(str::to_string);
            if name.is_none() || cname == *name {
                hit = true;
                set_at(doc, &join(&cp, &["resources"]), res.clone(), r);
            }
        }
        if !hit {
            return Err(Error::Update {
                component: comp.to_string(),
                message: format!("no container named {:?}", name.as_deref().unwrap_or("*")),
            });
        }
    }
    Ok(())
}

fn get_at<'a>(doc: &'a Value, path: &[Value]) -> Option<&'a Value> {
    let mut at = doc;
    for seg in path {
        at = match seg {
            Value::String(k) => at.get(k.as_str())?,
            Value::Number(n) => at.get(usize::try_from(n.as_u64()?).ok()?)?,
            _ => return None,
        };
    }
    Some(at)
}

/// Set a value at a path, creating missing parents as objects; record the pointer when the
/// value changed. Equal values are left alone so an update with current values is a no-op.
pub(crate) fn set_at(doc: &mut Value, path: &[Value], value: Value, r: &mut UpdateReport) {
    if get_at(doc, path) == Some(&value) {
        return;
    }
    let mut at = doc;
    for seg in path {
        at = match seg {
            Value::String(k) => {
                if !at.is_object() {
                    *at = Value::Object(Map::new());
                }
                let Some(m) = at.as_object_mut() else { return };
                // Scanned, not hashed (SipHash) and no key copy when the key is there: keys of
                // objects are few, and this runs for every location of every update.
                if m.len() > 32 {
                    m.entry(k.clone()).or_insert(Value::Null)
                } else {
                    if !m.keys().any(|x| x == k) {
                        m.insert(k.clone(), Value::Null);
                    }
                    let Some((_, v)) = m.iter_mut().find(|(x, _)| *x == k) else {
                        return;
                    };
                    v
                }
            }
            Value::Number(n) => {
                let i = n.as_u64().unwrap_or(0) as usize;
                if !at.is_array() {
                    *at = Value::Array(vec![]);
                }
                let Some(a) = at.as_array_mut() else { return };
                if i >= a.len() {
                    // Paths come from the document itself, so an index past the end means the
                    // document changed under us; append rather than pad with nulls.
                    a.push(Value::Object(Map::new()));
                    let last = a.len() - 1;
                    &mut a[last]
                } else {
                    &mut a[i]
                }
            }
            _ => return,
        };
    }
    *at = value;
    r.changed.push(pointer(path));
}

/// The JSON pointer (RFC 6901) of a path. Written into one string: this runs for every
/// location an update changes, and a string per segment was a third of an update.
fn pointer(path: &[Value]) -> String {
    let mut out = String::new();
    for seg in path {
        out.push('/');
        match seg {
            Value::String(k) => {
                for c in k.chars() {
                    match c {
                        '~' => out.push_str("~0"),
                        '/' => out.push_str("~1"),
                        c => out.push(c),
                    }
                }
            }
            other => {
                use std::fmt::Write;
                let _ = write!(out, "{other}");
            }
        }
    }
    out
}

/// Apply the definition's suspend (or resume) actions to a workload object.
///
/// ```
/// let yaml = "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: j}\nspec:\n  structureDefinition:\n    rootComponent:\n      name: job\n      kind: {group: batch, version: v1, kind: Job}\n      statusDefinition: {phaseDefinition: {path: .status.phase}, statusMappings: {running: [{byPhase: Running}]}}\n      suspendDefinition:\n        suspendActions: [{path: .spec.suspend, value: 'true'}]\n        resumeActions: [{path: .spec.suspend, value: 'false'}]\n";
/// let def = wlmap_engine::Definition::compile(wlmap_schema::decode_one(yaml, "j").unwrap(), wlmap_engine::Origin::File).unwrap();
/// let mut job = serde_json::json!({"spec": {}});
/// wlmap_engine::suspend(&def, &mut job, true).unwrap();
/// assert_eq!(job["spec"]["suspend"], true);
/// ```
pub fn suspend(def: &Definition, doc: &mut Value, suspend: bool) -> Result<UpdateReport> {
    let root = &def.components[0];
    let Some(sd) = &root.def.suspend_definition else {
        return Err(Error::Update {
            component: root.def.name.clone(),
            message: "the definition has no suspendDefinition".into(),
        });
    };
    let actions = if suspend {
        &sd.suspend_actions
    } else {
        &sd.resume_actions
    };
    let mut report = UpdateReport::default();
    for a in actions {
        let e =
            Expr::compile_with_vars(&a.path, &["parentInstance"]).map_err(|e| Error::Update {
                component: root.def.name.clone(),
                message: e.to_string(),
            })?;
        let value: Value = serde_json::from_str(&a.value).map_err(|e| Error::Update {
            component: root.def.name.clone(),
            message: format!("action value {:?} is not JSON: {e}", a.value),
        })?;
        let paths = e
            .paths(&to_val(doc), &[wlmap_expr::Val::Null], &def.limits)
            .map_err(|e| Error::Update {
                component: root.def.name.clone(),
                message: e.to_string(),
            })?;
        for p in paths {
            set_at(
                doc,
                p.as_array().map(Vec::as_slice).unwrap_or(&[]),
                value.clone(),
                &mut report,
            );
        }
    }
    Ok(report)
}

#[cfg(test)]
mod pointer_tests {
    use super::pointer;
    use serde_json::{Value, json};

    /// RFC 6901: `~` is written `~0` and `/` is written `~1`; indices as numbers. What the
    /// pointer names must be what `Value::pointer` finds.
    #[test]
    fn changed_locations_are_json_pointers() {
        let path = [json!("metadata"), json!("labels"), json!("a/b~c"), json!(0)];
        assert_eq!(pointer(&path), "/metadata/labels/a~1b~0c/0");
        let doc = json!({"metadata": {"labels": {"a/b~c": ["x"]}}});
        assert_eq!(doc.pointer(&pointer(&path)), Some(&json!("x")));
        assert_eq!(pointer(&[] as &[Value]), "");
    }
}
