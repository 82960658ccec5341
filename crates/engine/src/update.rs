//! Updates of pod templates through a definition, for all three spec shapes.
//!
//! Writes go through the paths the definition's expressions designate (`path(EXPR)`), so a
//! definition that reads `.spec.replicatedJobs[].template.spec.template` writes exactly there.
//! Only the asked fields change: a value equal to the current one is not written, missing
//! parents are created as objects, and nothing is ever set to null. A write never changes the
//! kind of a value (a string where an object is, an object where a list is) and never pads a
//! list with nulls (an index past its end): those are errors, and an update that fails leaves
//! the object as it was. Applied twice, an update changes nothing the second time.

use crate::definition::{Definition, SpecShape};
use crate::error::{Error, Result};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use wlmap_expr::{Evaluator, Expr, Input};

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

/// Apply an update to a workload object (in place) through a definition. All or nothing:
/// on an error (a field the definition has no path for, a path through a value of another
/// kind, an index past the end of a list) the object is left as it was. An update holds:
/// applied again, it changes nothing. When a component's paths are computed (not plain
/// paths), the update is applied a second time to check it, and one that would write again
/// (its paths read what it writes) is an error.
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
    all_or_nothing(doc, |doc, log| {
        update_in_place(def, doc, target, u, log)?;
        if log.report.changed.is_empty() {
            return Ok(()); // nothing written: a second pass would read the same document
        }
        let moving: Vec<&str> = def
            .components
            .iter()
            .filter(|c| target.component.as_deref().is_none_or(|t| t == c.def.name))
            .filter(|c| places_may_move(c))
            .map(|c| c.def.name.as_str())
            .collect();
        if moving.is_empty() {
            return Ok(()); // plain paths only: the places cannot move
        }
        // Applied again, an update changes nothing; a second pass that writes (or fails)
        // means the places the definition names depend on what the first pass wrote.
        let (wrote, templates) = (log.report.changed.len(), log.report.templates);
        let again = update_in_place(def, doc, target, u, log);
        log.report.templates = templates;
        let what = match again {
            Err(e) => format!("fail ({e})"),
            Ok(()) if log.report.changed.len() > wrote => {
                format!("write {} again", log.report.changed[wrote..].join(", "))
            }
            Ok(()) => return Ok(()),
        };
        Err(Error::Update {
            component: moving.join(", "),
            message: format!(
                "its paths read what the update writes: applied again, the update would {what}; nothing was written"
            ),
        })
    })
}

/// Whether the places a component writes may move when the update writes. Plain paths
/// (`.spec.template`, `.spec.roles[].template`) name places by keys, indices and iteration,
/// which writes below those places never change; any other expression may read what the
/// update writes (`."\(.)"`, a key made of the whole document). Instance ids count too: with a
/// targeted instance they choose the places.
fn places_may_move(c: &crate::definition::Component) -> bool {
    let computed = |e: &Expr| e.evaluator() != Evaluator::Plain;
    let ids = c.instance_ids.as_ref().is_some_and(computed);
    ids || match &c.spec {
        None => false,
        Some(SpecShape::Template(e)) => computed(e),
        Some(SpecShape::PodSpec { spec, metadata }) => {
            computed(spec) || metadata.as_ref().is_some_and(computed)
        }
        Some(SpecShape::Fragmented(f)) => [
            &f.scheduler_name,
            &f.priority_class_name,
            &f.labels,
            &f.annotations,
            &f.node_affinity,
            &f.pod_affinity,
            &f.resources,
        ]
        .into_iter()
        .flatten()
        .any(computed),
    }
}

/// Run `f` on `doc`, and put `doc` back as it was if `f` fails: an update stops at its first
/// error, and what it wrote before (other components, other instances) must not stay half
/// done. Each write logs how to undo it (the value it replaced, moved out, or the key it
/// added), so success costs no copy of the object.
fn all_or_nothing(
    doc: &mut Value,
    f: impl FnOnce(&mut Value, &mut Log) -> Result<()>,
) -> Result<UpdateReport> {
    let mut log = Log::default();
    match f(doc, &mut log) {
        Ok(()) => Ok(log.report),
        Err(e) => {
            log.undo(doc);
            Err(e)
        }
    }
}

/// What an update did so far, and how to undo it.
#[derive(Default)]
struct Log {
    report: UpdateReport,
    /// Per write, in order: the path of the first place it changed, and what was there
    /// (`None`: nothing, the write added that key or element).
    undo: Vec<(Vec<Value>, Option<Value>)>,
}

impl Log {
    /// Undo every write, last first.
    fn undo(self, doc: &mut Value) {
        for (path, old) in self.undo.into_iter().rev() {
            match (old, path.split_last()) {
                (Some(v), _) => {
                    if let Some(at) = get_mut(doc, &path) {
                        *at = v;
                    }
                }
                (None, Some((last, parent))) => match (get_mut(doc, parent), last) {
                    (Some(Value::Object(m)), Value::String(k)) => {
                        m.shift_remove(k.as_str());
                    }
                    (Some(Value::Array(a)), _) => {
                        a.pop(); // an element is only ever appended
                    }
                    _ => {}
                },
                (None, None) => {}
            }
        }
    }
}

fn get_mut<'a>(doc: &'a mut Value, path: &[Value]) -> Option<&'a mut Value> {
    let mut at = doc;
    for seg in path {
        at = match seg {
            Value::String(k) => at.get_mut(k.as_str())?,
            Value::Number(n) => at.get_mut(usize::try_from(n.as_u64()?).ok()?)?,
            _ => return None,
        };
    }
    Some(at)
}

fn update_in_place(
    def: &Definition,
    doc: &mut Value,
    target: &Target,
    u: &PodUpdate,
    log: &mut Log,
) -> Result<()> {
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
                        log.report.templates += 1;
                        apply_template(doc, &p, &p, u, log, &name)?;
                    }
                }
            }
            (SpecShape::PodSpec { .. }, Paths::PodSpec { specs, metas }) => {
                for (i, sp) in specs.into_iter().enumerate() {
                    if !keep(i) {
                        continue;
                    }
                    log.report.templates += 1;
                    let meta = metas.as_ref().and_then(|m| m.get(i).cloned());
                    if meta.is_none() && (!u.labels.is_empty() || !u.annotations.is_empty()) {
                        return Err(Error::Update { component: name, message: "the definition has no metadataPath, so labels and annotations cannot be set".into() });
                    }
                    apply_spec_parts(doc, &sp, meta.as_deref(), u, log, &name)?;
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
                        let at = Writer {
                            comp: &name,
                            field: &w.field,
                        };
                        if let Some(v) = &w.value {
                            at.set(doc, &p, v.clone(), log)?;
                        }
                        for (k, v) in &w.merge {
                            let mut pk = p.clone();
                            pk.push(Value::from(k.clone()));
                            at.set(doc, &pk, Value::from(v.clone()), log)?;
                        }
                    }
                }
                if touched {
                    log.report.templates += 1;
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
    Ok(())
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
    /// The field and its expression, for errors: "schedulerNamePath `.spec.scheduler`".
    field: String,
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
    let converted = std::sync::OnceLock::new();
    let input = Input::json(doc, &converted);
    let ids: Option<Vec<String>> = match &c.instance_ids {
        Some(e) => {
            let out = e
                .evaluate(input, &vars(def), &def.limits)
                .map_err(|source| def.located(e, name, "instanceIdPath", source))?;
            Some(out.iter().map(|o| o.to_text().into_owned()).collect())
        }
        None => None,
    };
    let paths_of = |e: &Expr, field: &str| -> Result<Vec<Vec<Value>>> {
        let ps = e
            .paths_in(input, &vars(def), &def.limits)
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
        SpecShape::Fragmented(f) => Paths::Fragments(fragment_writes(f, u, name, &paths_of)?),
    };
    Ok(Plan { ids, paths })
}

/// The places an expression names in the document (each a list of keys and indices).
type PathsOf<'a> = dyn Fn(&Expr, &str) -> Result<Vec<Vec<Value>>> + 'a;

/// The writes an update makes through a fragmented definition: one per field asked, at the
/// places its fragment path names; a field asked for that has no path refuses the update.
fn fragment_writes(
    f: &crate::definition::Fragments,
    u: &PodUpdate,
    name: &str,
    paths_of: &PathsOf,
) -> Result<Vec<FragmentWrite>> {
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
            field: format!("{field} `{}`", e.text()),
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
    Ok(writes)
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
    r: &mut Log,
    comp: &str,
) -> Result<()> {
    if let Some(t) = &u.template {
        Writer::pod_template(comp).set(doc, spec_base, t.clone(), r)?;
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
    r: &mut Log,
    comp: &str,
) -> Result<()> {
    let w = Writer::pod_template(comp);
    if let Some(s) = &u.scheduler_name {
        w.set(
            doc,
            &join(spec, &["schedulerName"]),
            Value::from(s.clone()),
            r,
        )?;
    }
    if let Some(s) = &u.priority_class_name {
        w.set(
            doc,
            &join(spec, &["priorityClassName"]),
            Value::from(s.clone()),
            r,
        )?;
    }
    if let Some(meta) = meta {
        for (k, v) in &u.labels {
            w.set(doc, &join(meta, &["labels", k]), Value::from(v.clone()), r)?;
        }
        for (k, v) in &u.annotations {
            w.set(
                doc,
                &join(meta, &["annotations", k]),
                Value::from(v.clone()),
                r,
            )?;
        }
    }
    for (k, v) in &u.node_selector {
        w.set(
            doc,
            &join(spec, &["nodeSelector", k]),
            Value::from(v.clone()),
            r,
        )?;
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
            w.set(doc, &p, Value::Array(list), r)?;
        }
    }
    if let Some(a) = &u.affinity {
        w.set(doc, &join(spec, &["affinity"]), a.clone(), r)?;
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
                w.set(doc, &join(&cp, &["resources"]), res.clone(), r)?;
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

/// Where writes come from, for their errors: a component, and a fragment's field when the
/// path is the definition's own rather than the pod template's.
struct Writer<'a> {
    comp: &'a str,
    field: &'a str,
}

impl<'a> Writer<'a> {
    /// Writes into a pod template or pod spec, at the fields the Kubernetes API gives them.
    fn pod_template(comp: &'a str) -> Writer<'a> {
        Writer { comp, field: "" }
    }

    /// Set a value at a path, creating missing (or null) parents; record the pointer when the
    /// value changed. Equal values are left alone, so that an update with current values is a
    /// no-op. A write never changes what kind of value is somewhere: a path through (or to) a
    /// string, a number or a list where the write needs something else is an error, not a
    /// replacement, so that a definition whose path names the wrong place (`schedulerNamePath:
    /// .`, which would put a string where the whole object is) loses nothing.
    fn set(&self, doc: &mut Value, path: &[Value], value: Value, r: &mut Log) -> Result<()> {
        if self.needs_write(doc, path, &value)? {
            set_at(doc, path, value, r);
        }
        Ok(())
    }

    /// False when `value` is already at `path`; the error when writing it there would replace
    /// a value of another kind.
    fn needs_write(&self, doc: &Value, path: &[Value], value: &Value) -> Result<bool> {
        if path.iter().any(|seg| !seg.is_string() && !seg.is_u64()) {
            return Err(self.error(format!(
                "cannot write at {}: a path of keys and indices is needed, not a slice",
                pointer(path)
            )));
        }
        let mut at = Some(doc);
        for (i, seg) in path.iter().enumerate() {
            let Some(here) = at.filter(|v| !v.is_null()) else {
                // Created from here on: each list made starts empty, so only index 0 is in it.
                return match path[i..]
                    .iter()
                    .position(|s| s.as_u64().is_some_and(|n| n > 0))
                {
                    Some(j) => Err(self.past_the_end(path, &path[..i + j], 0)),
                    None => Ok(true),
                };
            };
            at = match (seg, here) {
                (Value::String(k), Value::Object(m)) => m.get(k.as_str()),
                (Value::Number(n), Value::Array(a)) => match n.as_u64() {
                    // jq's paths may index past a list's end (`path(.a[5])` on `[]`); writing
                    // there would pad the list with nulls, and appending instead would write
                    // somewhere else each time.
                    Some(n) if n as usize > a.len() => {
                        return Err(self.past_the_end(path, &path[..i], a.len()));
                    }
                    Some(n) => a.get(n as usize),
                    None => None,
                },
                (Value::String(_), _) => {
                    return Err(self.conflict(path, &path[..i], here, "an object"));
                }
                _ => return Err(self.conflict(path, &path[..i], here, "a list")),
            };
        }
        match at {
            Some(old) if old == value => Ok(false),
            Some(old) if !old.is_null() && kind(old) != kind(value) => {
                Err(self.conflict(path, path, old, kind(value)))
            }
            _ => Ok(true),
        }
    }

    /// The error for a write at an index past the end of the list at `list` (`len` entries;
    /// 0 for a list the write would create).
    fn past_the_end(&self, path: &[Value], list: &[Value], len: usize) -> Error {
        self.error(format!(
            "cannot write at {}: index {} is past the end of the list at {} ({len} entries); an update never pads a list with nulls",
            pointer(path),
            path[list.len()],
            place(list),
        ))
    }

    fn conflict(&self, path: &[Value], at: &[Value], old: &Value, new: &str) -> Error {
        self.error(format!(
            "writing {} would replace {} at {} with {new}; an update never changes the kind of a value",
            place(path),
            kind(old),
            place(at),
        ))
    }

    /// An error of this component, naming the definition's field when the path is its own.
    fn error(&self, message: String) -> Error {
        let message = match self.field {
            "" => message,
            field => format!("{field}: {message}"),
        };
        Error::Update {
            component: self.comp.to_string(),
            message,
        }
    }
}

/// A place in the object, as errors name it: its JSON pointer, or "the whole object".
fn place(p: &[Value]) -> String {
    match pointer(p) {
        p if p.is_empty() => "the whole object".to_string(),
        p => p,
    }
}

/// A JSON value's kind, as errors name it.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Set a value at a path, creating missing (or null) parents as objects; record the pointer
/// and how to undo the write. Only through [`Writer::set`], which refuses what would replace a
/// value of another kind.
fn set_at(doc: &mut Value, path: &[Value], value: Value, r: &mut Log) {
    // The first place the write changes is all its undo needs: below it, everything is new.
    let mut first: Option<(usize, Option<Value>)> = None;
    if let Some(at) = walk_creating(doc, path, &mut first) {
        let old = std::mem::replace(at, value);
        first.get_or_insert((path.len(), Some(old)));
        r.report.changed.push(pointer(path));
    }
    if let Some((depth, old)) = first {
        r.undo.push((path[..depth].to_vec(), old));
    }
}

/// The value at `path`, its missing (or null) parents created; `first` gets the depth of the
/// first change and what was there.
fn walk_creating<'a>(
    doc: &'a mut Value,
    path: &[Value],
    first: &mut Option<(usize, Option<Value>)>,
) -> Option<&'a mut Value> {
    let mut at = doc;
    for (i, seg) in path.iter().enumerate() {
        at = match seg {
            Value::String(k) => {
                if !at.is_object() {
                    let old = std::mem::replace(at, Value::Object(Map::new()));
                    first.get_or_insert((i, Some(old)));
                }
                let m = at.as_object_mut()?;
                // Scanned, not hashed (SipHash) and no key copy when the key is there: keys of
                // objects are few, and this runs for every location of every update.
                let big = m.len() > 32;
                let present = if big {
                    m.contains_key(k.as_str())
                } else {
                    m.keys().any(|x| x == k)
                };
                if !present {
                    first.get_or_insert((i + 1, None));
                }
                if big {
                    m.entry(k.clone()).or_insert(Value::Null)
                } else {
                    if !present {
                        m.insert(k.clone(), Value::Null);
                    }
                    let (_, v) = m.iter_mut().find(|(x, _)| *x == k)?;
                    v
                }
            }
            Value::Number(n) => {
                let idx = n.as_u64().unwrap_or(0) as usize;
                if !at.is_array() {
                    let old = std::mem::replace(at, Value::Array(vec![]));
                    first.get_or_insert((i, Some(old)));
                }
                let a = at.as_array_mut()?;
                if idx >= a.len() {
                    // The index is the list's length (`Writer::needs_write` refuses any past
                    // it): the entry is appended.
                    first.get_or_insert((i + 1, None));
                    a.push(Value::Object(Map::new()));
                    let last = a.len() - 1;
                    &mut a[last]
                } else {
                    &mut a[idx]
                }
            }
            _ => return None, // refused by `Writer::needs_write`
        };
    }
    Some(at)
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
    all_or_nothing(doc, |doc, log| {
        suspend_in_place(def, doc, root, actions, log)
    })
}

fn suspend_in_place(
    def: &Definition,
    doc: &mut Value,
    root: &crate::definition::Component,
    actions: &[wlmap_schema::Action],
    log: &mut Log,
) -> Result<()> {
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
        let converted = std::sync::OnceLock::new();
        let paths = e
            .paths_in(
                Input::json(doc, &converted),
                &[wlmap_expr::Val::Null],
                &def.limits,
            )
            .map_err(|e| Error::Update {
                component: root.def.name.clone(),
                message: e.to_string(),
            })?;
        let field = format!("suspendDefinition path `{}`", a.path);
        let at = Writer {
            comp: &root.def.name,
            field: &field,
        };
        for p in paths {
            let p = p.as_array().map(Vec::as_slice).unwrap_or(&[]);
            at.set(doc, p, value.clone(), log)?;
        }
    }
    Ok(())
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

#[cfg(test)]
mod undo_tests {
    use super::{Log, Writer};
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            (0u8..3).prop_map(Value::from),
            "[ab]{0,2}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::vec(("[abc]", inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    fn arb_path() -> impl Strategy<Value = Vec<Value>> {
        prop::collection::vec(
            prop_oneof![
                "[abc]".prop_map(Value::from),
                (0u64..4).prop_map(Value::from)
            ],
            0..4,
        )
    }

    proptest! {
        /// Undoing writes, last first, gives back the document exactly: the same values and
        /// the same key order (compared as text), whatever each write created or replaced.
        #[test]
        fn undone_writes_leave_the_document_as_it_was(
            doc in arb_json(),
            writes in prop::collection::vec((arb_path(), arb_json()), 1..6),
        ) {
            let before = serde_json::to_string(&doc).unwrap();
            let mut doc = doc;
            let mut log = Log::default();
            let w = Writer { comp: "c", field: "" };
            let mut wrote = 0;
            for (path, value) in writes {
                if w.set(&mut doc, &path, value, &mut log).is_ok() {
                    wrote += 1;
                }
            }
            prop_assert!(log.undo.len() <= wrote);
            log.undo(&mut doc);
            prop_assert_eq!(serde_json::to_string(&doc).unwrap(), before);
        }
    }

    /// Each kind of first change: a leaf replaced, a key added under existing objects, a null
    /// parent replaced by an object, an element appended (at the list's length).
    #[test]
    fn each_kind_of_write_is_undone() {
        let original = json!({"z": 1, "a": {"b": "x", "n": null}, "l": [{"k": 1}]});
        let mut doc = original.clone();
        let mut log = Log::default();
        let w = Writer {
            comp: "c",
            field: "",
        };
        let p = |s: &[Value]| s.to_vec();
        w.set(
            &mut doc,
            &p(&[json!("a"), json!("b")]),
            json!("y"),
            &mut log,
        )
        .unwrap();
        w.set(
            &mut doc,
            &p(&[json!("a"), json!("new"), json!("deep")]),
            json!(1),
            &mut log,
        )
        .unwrap();
        w.set(
            &mut doc,
            &p(&[json!("a"), json!("n"), json!("m")]),
            json!(true),
            &mut log,
        )
        .unwrap();
        w.set(
            &mut doc,
            &p(&[json!("l"), json!(1), json!("k")]),
            json!(2),
            &mut log,
        )
        .unwrap();
        assert_eq!(doc["a"]["b"], "y");
        assert_eq!(doc["a"]["new"]["deep"], 1);
        assert_eq!(doc["a"]["n"]["m"], true);
        assert_eq!(doc["l"][1]["k"], 2);
        assert_eq!(log.undo.len(), 4);
        log.undo(&mut doc);
        assert_eq!(
            serde_json::to_string(&doc).unwrap(),
            serde_json::to_string(&original).unwrap()
        );
    }
}
