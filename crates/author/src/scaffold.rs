//! A draft Karta from a CRD's schema: pod templates by shape, replicas, status, suspend.

use crate::crd::{Crd, CrdVersion, Error};
use crate::observed::{Observed, Seen};
use crate::paths::{Step, Template, keeps_unknown_fields, text};
use crate::vocabulary::word_for;
use serde_json::Value;
use std::collections::BTreeMap;

/// A drafted definition.
#[derive(Debug, Clone)]
pub struct Draft {
    /// The definition's name (`<group>-<kind>-<version>`, as the catalog names them).
    pub name: String,
    /// The Karta as YAML, with a `# TODO` comment at each guess to review.
    pub yaml: String,
    /// How many `# TODO` comments it has.
    pub todos: usize,
}

/// Integer fields that count pods or copies, most specific first.
const COUNT_FIELDS: [&str; 7] = [
    "replicas",
    "size",
    "parallelism",
    "numWorkers",
    "workers",
    "count",
    "instances",
];

/// Draft a Karta for the CRD's storage version; with live objects of the kind (and their pods
/// and the objects between), confirm and complete the guesses.
///
/// ```
/// # let crd = serde_json::json!({"kind": "CustomResourceDefinition", "spec": {"group": "g.io",
/// #   "names": {"kind": "K", "plural": "ks"}, "versions": [{"name": "v1", "served": true, "storage": true,
/// #   "schema": {"openAPIV3Schema": {"properties": {"spec": {"properties": {}}}}}}]}});
/// let crd = wlmap_author::Crd::from_value(&crd).unwrap();
/// let draft = wlmap_author::scaffold(&crd, None).unwrap();
/// assert_eq!(draft.name, "g-io-k-v1");
/// assert!(draft.yaml.contains("# TODO: no pod template found"));
/// ```
pub fn scaffold(crd: &Crd, observed: Option<&Observed>) -> Result<Draft, Error> {
    let version = crd
        .storage()
        .ok_or_else(|| Error::NotACrd("no served or storage version".into()))?;
    let spec = version.part("spec").cloned().unwrap_or(Value::Null);
    let mut templates = Vec::new();
    find_templates(&spec, vec![Step::Key("spec".into())], 0, &mut templates);
    let seen = observed.map(|o| o.see(crd, &templates));
    let name = format!(
        "{}-{}-{}",
        crd.group.replace('.', "-"),
        crd.kind.to_ascii_lowercase(),
        version.name
    );
    let mut w = Yaml::default();
    header(&mut w, crd, version, &name, observed.is_some());
    root(&mut w, crd, version, seen.as_ref());
    children(&mut w, crd, version, &templates, seen.as_ref());
    let todos = w.todos;
    Ok(Draft {
        name,
        yaml: w.out,
        todos,
    })
}

/// Walk a schema node and collect every pod template below it.
fn find_templates(node: &Value, steps: Vec<Step>, depth: usize, out: &mut Vec<Template>) {
    if depth > 16 || !node.is_object() {
        return;
    }
    let props = node.get("properties");
    let has = |n: &Value, k: &str| n.get("properties").and_then(|p| p.get(k)).is_some();
    if props
        .and_then(|p| p.get("spec"))
        .is_some_and(|s| has(s, "containers"))
    {
        let in_job = ends_with(&steps, &["template", "spec", "template"]);
        out.push(Template {
            steps,
            pod_spec: false,
            in_job,
            guess: None,
        });
        return;
    }
    if has(node, "containers") {
        out.push(Template {
            steps,
            pod_spec: true,
            in_job: false,
            guess: None,
        });
        return;
    }
    if keeps_unknown_fields(node) {
        if let Some(t) = opaque_template(node, steps) {
            out.push(t);
        }
        return;
    }
    if let Some(p) = props.and_then(Value::as_object) {
        for (k, child) in p {
            let mut s = steps.clone();
            s.push(Step::Key(k.clone()));
            find_templates(child, s, depth + 1, out);
        }
    }
    let each = node
        .get("items")
        .or_else(|| node.get("additionalProperties").filter(|v| v.is_object()));
    if let Some(each) = each {
        let mut s = steps;
        s.push(Step::Iter);
        find_templates(each, s, depth + 1, out);
    }
}

/// A field the schema keeps opaque, read as a template by its name and description: a
/// `template` or `...Template` (not a volume claim's), a PodTemplateSpec, or a JobTemplateSpec
/// (whose pod template is at `.spec.template`).
fn opaque_template(node: &Value, steps: Vec<Step>) -> Option<Template> {
    let key = match steps.last() {
        Some(Step::Key(k)) => k.to_ascii_lowercase(),
        _ => return None,
    };
    let description = node["description"]
        .as_str()
        .unwrap_or_default()
        .to_ascii_lowercase();
    if key.contains("volumeclaim") {
        return None;
    }
    if description.contains("jobtemplatespec") || description.contains("job template") {
        let mut s = steps;
        s.extend([Step::Key("spec".into()), Step::Key("template".into())]);
        return Some(Template {
            steps: s,
            pod_spec: false,
            in_job: true,
            guess: Some("the schema keeps this JobTemplateSpec opaque: its pod template is assumed at .spec.template".into()),
        });
    }
    let named = key == "template" || key.ends_with("template");
    if description.contains("podtemplatespec") || description.contains("pod template") || named {
        return Some(Template {
            steps,
            pod_spec: false,
            in_job: false,
            guess: Some(
                "the schema keeps this field opaque: assumed to be a PodTemplateSpec by its name"
                    .into(),
            ),
        });
    }
    None
}

fn ends_with(steps: &[Step], keys: &[&str]) -> bool {
    steps.len() >= keys.len()
        && steps[steps.len() - keys.len()..]
            .iter()
            .zip(keys)
            .all(|(s, k)| matches!(s, Step::Key(x) if x == k))
}

/// The schema node at each prefix of `steps` (the root's `.spec` first).
fn nodes_along<'a>(spec: &'a Value, steps: &[Step]) -> Vec<(usize, &'a Value)> {
    let mut out = vec![(1, spec)];
    let mut at = spec;
    for (i, st) in steps.iter().enumerate().skip(1) {
        let next = match st {
            Step::Key(k) => at.get("properties").and_then(|p| p.get(k)),
            Step::Iter => at
                .get("items")
                .or_else(|| at.get("additionalProperties").filter(|v| v.is_object())),
        };
        match next {
            Some(n) => {
                at = n;
                out.push((i + 1, n));
            }
            None => break,
        }
    }
    out
}

/// The first count field of a schema node, with its default.
fn count_field(node: &Value) -> Option<(String, i64)> {
    let props = node.get("properties")?;
    COUNT_FIELDS.iter().find_map(|f| {
        let p = props.get(*f)?;
        let ty = p["type"].as_str();
        (ty == Some("integer") || ty == Some("number"))
            .then(|| (f.to_string(), p["default"].as_i64().unwrap_or(1)))
    })
}

/// How many pods a template makes: the count fields met on the way from `.spec` to it
/// multiplied (inside a list, per element), and a Job's pods at once (the lesser of
/// parallelism and completions). Also the min/max counts of the template's own level.
struct Counts {
    replicas: String,
    min: Option<String>,
    max: Option<String>,
    notes: Vec<String>,
}

fn counts(spec: &Value, t: &Template, all: &[Template], scale: Option<&ScaleField>) -> Counts {
    let iter_at = t.steps.iter().position(|s| *s == Step::Iter);
    let (base, rel_from) = match iter_at {
        Some(i) => (text(&t.steps[..=i]), i + 1),
        None => (String::new(), 0),
    };
    let mut factors = Vec::new();
    let mut notes = Vec::new();
    let mut min_max = (None, None);
    let template_depth = t.steps.len();
    for (depth, node) in nodes_along(spec, &t.steps) {
        if depth >= template_depth {
            break;
        }
        // The scale subresource names the count authoritatively, whatever it is called.
        let scaled = scale
            .filter(|s| s.parent == t.steps[..depth])
            .map(|s| (s.field.clone(), 1));
        let Some((field, default)) = scaled.or_else(|| count_field(node)) else {
            continue;
        };
        let path = text(&t.steps[..depth]);
        if iter_at.is_some_and(|i| depth <= i) {
            notes.push(format!(
                "{path}.{field} also counts copies of this list (not multiplied in)"
            ));
            continue;
        }
        let rel = relative(&t.steps[rel_from.min(depth)..depth]);
        factors.push(format!("({}{field} // {default})", rel));
        let sharing: Vec<String> = all
            .iter()
            .filter(|o| o.steps != t.steps && o.steps.starts_with(&t.steps[..depth]))
            .map(|o| component_name(&o.steps))
            .collect();
        if !sharing.is_empty() {
            notes.push(format!(
                "{path}.{field} counts the {} template's pods too: say how many of it are this template's (e.g. one leader per group)",
                sharing.join(", ")
            ));
        }
        let bound = |name: &str| {
            let p = node.get("properties")?.get(name)?;
            let ty = p["type"].as_str()?;
            (ty == "integer").then(|| {
                format!(
                    "{}{name} // {}",
                    relative(&t.steps[rel_from.min(depth)..depth]),
                    if name.starts_with("min") {
                        0
                    } else {
                        2147483647
                    }
                )
            })
        };
        min_max = (bound("minReplicas"), bound("maxReplicas"));
    }
    if t.in_job {
        let job = relative(&t.steps[rel_from.min(t.steps.len() - 1)..t.steps.len() - 1]);
        factors.push(format!(
            "([({job}parallelism // 1), ({job}completions // {job}parallelism // 1)] | min)"
        ));
    }
    let product = factors.join(" * ");
    let with_base = |e: String| {
        if base.is_empty() {
            e
        } else {
            format!("{base} | {e}")
        }
    };
    let replicas = match factors.len() {
        0 => "1".to_string(),
        1 if base.is_empty() && !t.in_job => strip_parens(&product),
        _ => with_base(product),
    };
    Counts {
        replicas,
        min: min_max.0.map(with_base),
        max: min_max.1.map(with_base),
        notes,
    }
}

/// The field the CRD's scale subresource names (`specReplicasPath`), with the path of the
/// object that holds it, map keys read as `[]` (the schema cannot name them).
pub(crate) struct ScaleField {
    parent: Vec<Step>,
    field: String,
}

impl ScaleField {
    fn of(v: &CrdVersion, spec: &Value) -> Option<ScaleField> {
        let path = v.scale.as_ref()?.get("specReplicasPath")?.as_str()?;
        let steps = crate::paths::plain_prefix(path);
        let (last, parent) = steps.split_last()?;
        let Step::Key(field) = last else { return None };
        // Walk the parent through the schema: a step into a map (no properties, a schema for
        // its values) is an iteration.
        let mut shaped = vec![Step::Key("spec".into())];
        let mut at = spec;
        for st in parent.iter().skip(1) {
            let is_map = at.get("properties").is_none()
                && at.get("additionalProperties").is_some_and(Value::is_object);
            let (step, next) = match st {
                Step::Key(_) if is_map => (Step::Iter, at.get("additionalProperties")),
                Step::Key(k) => (st.clone(), at.get("properties").and_then(|p| p.get(k))),
                Step::Iter => (Step::Iter, at.get("items")),
            };
            shaped.push(step);
            at = next?;
        }
        (parent.first() == Some(&Step::Key("spec".into()))).then(|| ScaleField {
            parent: shaped,
            field: field.clone(),
        })
    }
}

/// `.a.b.` for steps relative to a list element (`.` alone for none).
fn relative(steps: &[Step]) -> String {
    if steps.is_empty() {
        ".".into()
    } else {
        text(steps) + "."
    }
}

fn strip_parens(s: &str) -> String {
    s.strip_prefix('(')
        .and_then(|x| x.strip_suffix(')'))
        .unwrap_or(s)
        .to_string()
}

/// A component's name from its template's path: the last name that is not `spec` or
/// `template`, without `GroupSpecs`, `ReplicaSpecs`, `Template`, `Spec` or a plural `s`.
pub(crate) fn component_name(steps: &[Step]) -> String {
    let key = steps.iter().rev().find_map(|s| match s {
        Step::Key(k) if k != "spec" && k != "template" => Some(k.as_str()),
        _ => None,
    });
    let mut n = key.unwrap_or("pod").to_string();
    for suffix in [
        "GroupSpecs",
        "GroupSpec",
        "ReplicaSpecs",
        "ReplicaSpec",
        "TemplateSpec",
        "Template",
        "Specs",
        "Spec",
        "s",
    ] {
        if n.len() > suffix.len() && n.ends_with(suffix) {
            n.truncate(n.len() - suffix.len());
            break;
        }
    }
    let n = n.to_ascii_lowercase();
    if n.is_empty() { "pod".into() } else { n }
}

/// `.spec.list[]?.name` (or the map's keys) when the template sits in a list or map whose
/// elements are named.
fn instance_id(spec: &Value, t: &Template) -> Option<String> {
    let i = t.steps.iter().position(|s| *s == Step::Iter)?;
    let nodes = nodes_along(spec, &t.steps[..i]);
    let (_, collection) = nodes.last()?;
    if collection
        .get("additionalProperties")
        .is_some_and(|v| v.is_object())
    {
        return Some(format!("{} | keys_unsorted[]", text(&t.steps[..i])));
    }
    let item = collection.get("items")?.get("properties")?;
    ["name", "groupName", "role", "id"]
        .iter()
        .find(|k| item.get(**k).is_some())
        .map(|k| format!("{}.{k}", text(&t.steps[..=i])))
}

fn header(w: &mut Yaml, crd: &Crd, v: &CrdVersion, name: &str, observed: bool) {
    w.comment(&format!(
        "{}/{} {} — drafted by `wlmap scaffold` from the CRD {}.{}{}.",
        crd.group,
        v.name,
        crd.kind,
        crd.plural,
        crd.group,
        if observed {
            ", confirmed with live objects"
        } else {
            ""
        }
    ));
    w.comment("Review every TODO, then: wlmap validate FILE && wlmap check --crd CRD.yaml --definitions FILE");
    w.line(0, "apiVersion: run.ai/v1alpha1");
    w.line(0, "kind: Karta");
    w.line(0, "metadata:");
    w.kv(1, "name", name);
    w.line(0, "spec:");
    if !crd.short_names.is_empty() {
        w.line(1, "shortNames:");
        for n in &crd.short_names {
            w.line(1, &format!("- {}", scalar(n)));
        }
    }
    w.line(1, "structureDefinition:");
    w.line(2, "rootComponent:");
}

fn root(w: &mut Yaml, crd: &Crd, v: &CrdVersion, seen: Option<&Seen>) {
    w.kv(3, "name", &crd.kind.to_ascii_lowercase());
    kind(w, 3, &crd.group, &v.name, &crd.kind);
    status(w, v, seen, &crd.kind);
    suspend(w, v);
}

fn kind(w: &mut Yaml, indent: usize, group: &str, version: &str, kind: &str) {
    w.line(indent, "kind:");
    w.kv(indent + 1, "group", group);
    w.kv(indent + 1, "version", version);
    w.kv(indent + 1, "kind", kind);
}

/// The status rules: conditions and phase where the schema has them, mappings from the
/// phase's enum values and the condition types seen (or named by the schema's enum).
fn status(w: &mut Yaml, v: &CrdVersion, seen: Option<&Seen>, kind: &str) {
    let st = v.part("status");
    let field = |k: &str| st.and_then(|s| s.get("properties")).and_then(|p| p.get(k));
    let conditions = field("conditions").filter(|c| c["type"] == "array");
    let phase_key = ["phase", "state"]
        .into_iter()
        .find(|k| field(k).is_some_and(|f| f["type"] == "string"));
    if conditions.is_none() && phase_key.is_none() {
        w.todo(3, "the status has no conditions and no phase or state: write status rules by hand (statusDefinition)");
        return;
    }
    w.line(3, "statusDefinition:");
    if conditions.is_some() {
        w.line(4, "conditionsDefinition:");
        w.kv(5, "path", ".status.conditions");
    }
    if let Some(k) = phase_key {
        w.line(4, "phaseDefinition:");
        w.kv(5, "path", &format!(".status.{k}"));
    }
    let mut rules: BTreeMap<&str, Vec<(String, bool)>> = BTreeMap::new();
    let mut unknown = Vec::new();
    let phase_values: Vec<String> = phase_key
        .and_then(field)
        .and_then(|f| f["enum"].as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let condition_types: Vec<String> = conditions
        .and_then(|c| c.pointer("/items/properties/type/enum"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let seen_types = seen.map(|s| s.condition_types.clone()).unwrap_or_default();
    let seen_phases = seen.map(|s| s.phases.clone()).unwrap_or_default();
    for (name, is_phase) in phase_values
        .iter()
        .chain(&seen_phases)
        .map(|p| (p.clone(), true))
        .chain(
            condition_types
                .iter()
                .chain(&seen_types)
                .map(|t| (t.clone(), false)),
        )
    {
        match word_for(&name, kind) {
            Some(word) => {
                let e = rules.entry(word).or_default();
                if !e.contains(&(name.clone(), is_phase)) {
                    e.push((name, is_phase));
                }
            }
            None if !unknown.contains(&name) => unknown.push(name),
            None => {}
        }
    }
    w.line(4, "statusMappings:");
    if rules.is_empty() {
        w.todo(5, "no condition type or phase value is known from the schema: map them by hand, e.g. running: [{byConditions: [{type: Ready, status: \"True\"}]}]; `--from-objects` drafts them from the types live objects carry");
        w.line(5, "running: []");
    }
    for (word, names) in &rules {
        w.line(5, &format!("{word}:"));
        for (name, is_phase) in names {
            if *is_phase {
                w.line(5, &format!("- byPhase: {}", scalar(name)));
            } else {
                w.line(5, "- byConditions:");
                w.line(6, &format!("- type: {}", scalar(name)));
                w.kv(7, "status", "True");
            }
        }
    }
    if !unknown.is_empty() {
        w.todo(
            5,
            &format!("also seen or declared, not mapped: {}", unknown.join(", ")),
        );
    }
}

fn suspend(w: &mut Yaml, v: &CrdVersion) {
    let Some(spec) = v.part("spec") else { return };
    let candidates = [vec!["suspend"], vec!["runPolicy", "suspend"]];
    let found = candidates.iter().find(|path| {
        let mut at = spec;
        path.iter()
            .all(|k| match at.get("properties").and_then(|p| p.get(*k)) {
                Some(n) => {
                    at = n;
                    true
                }
                None => false,
            })
            && at["type"] == "boolean"
    });
    let Some(path) = found else { return };
    let path = format!(".spec.{}", path.join("."));
    w.line(3, "suspendDefinition:");
    w.line(4, "suspendActions:");
    w.line(4, &format!("- path: {path}"));
    w.kv(5, "value", "true");
    w.line(4, "resumeActions:");
    w.line(4, &format!("- path: {path}"));
    w.kv(5, "value", "false");
}

fn children(w: &mut Yaml, crd: &Crd, v: &CrdVersion, templates: &[Template], seen: Option<&Seen>) {
    let spec = v.part("spec").cloned().unwrap_or(Value::Null);
    if templates.is_empty() {
        w.todo(
            2,
            "no pod template found in the schema: add child components by hand",
        );
        w.line(2, "childComponents: []");
        return;
    }
    let root_name = crd.kind.to_ascii_lowercase();
    let scale = ScaleField::of(v, &spec);
    let mut names: Vec<String> = Vec::new();
    w.line(2, "childComponents:");
    for t in templates {
        let mut name = component_name(&t.steps);
        while names.contains(&name) || name == root_name {
            name.push('x');
        }
        names.push(name.clone());
        let found = seen.and_then(|s| s.components.get(&text(&t.steps)));
        let siblings = templates.len() > 1;
        child(
            w,
            &spec,
            scale.as_ref(),
            t,
            templates,
            &name,
            &root_name,
            found,
            siblings,
        );
    }
}

#[allow(clippy::too_many_arguments)]
fn child(
    w: &mut Yaml,
    spec: &Value,
    scale: Option<&ScaleField>,
    t: &Template,
    all: &[Template],
    name: &str,
    owner: &str,
    found: Option<&crate::observed::SeenComponent>,
    siblings: bool,
) {
    w.line(2, &format!("- name: {}", scalar(name)));
    let (group, version, kind_name) = match found.and_then(|f| f.owner_kind.clone()) {
        Some((g, v, k)) => (g, v, k),
        None if t.in_job => ("batch".into(), "v1".into(), "Job".into()),
        None => (String::new(), "v1".into(), "Pod".into()),
    };
    if found.is_none_or(|f| f.owner_kind.is_none() && !f.direct) {
        w.todo(3, &format!("the pods are assumed to be {}'s own children (kind {kind_name}); if another object sits between (a StatefulSet, a Job), name its kind here (`--from-objects` finds it)", owner));
    }
    kind(w, 3, &group, &version, &kind_name);
    w.kv(3, "ownerRef", owner);
    if let Some(id) = instance_id(spec, t) {
        // The pods' label holds the instance in lower case: compare in lower case.
        let lower = found
            .and_then(|f| f.instance_label.as_ref())
            .is_some_and(|l| l.1);
        let id = if lower {
            format!("{id} | ascii_downcase")
        } else {
            id
        };
        w.kv(3, "instanceIdPath", &id);
    }
    w.line(3, "specDefinition:");
    if let Some(g) = &t.guess {
        w.todo(4, g);
    }
    let field = if t.pod_spec {
        "podSpecPath"
    } else {
        "podTemplateSpecPath"
    };
    w.kv(4, field, &text(&t.steps));
    let c = counts(spec, t, all, scale);
    w.line(3, "scaleDefinition:");
    if c.replicas == "1" {
        w.todo(
            4,
            "no count field found next to the template: one pod assumed",
        );
    }
    for n in &c.notes {
        w.todo(4, n);
    }
    w.kv(4, "replicasPath", &c.replicas);
    if let Some(m) = &c.min {
        w.kv(4, "minReplicasPath", m);
    }
    if let Some(m) = &c.max {
        w.kv(4, "maxReplicasPath", m);
    }
    selector(w, name, found, siblings, instance_id(spec, t).is_some());
}

/// The pod selector: from the labels live pods carry, else a placeholder to fill in when
/// several components' pods share an owner (wlmap tells them apart only by a selector).
fn selector(
    w: &mut Yaml,
    name: &str,
    found: Option<&crate::observed::SeenComponent>,
    siblings: bool,
    instances: bool,
) {
    let type_label = found.and_then(|f| f.type_label.clone());
    let instance_label = found.and_then(|f| f.instance_label.clone());
    if type_label.is_none() && instance_label.is_none() && !siblings && !instances {
        return;
    }
    w.line(3, "podSelector:");
    match type_label {
        Some((key, value)) => {
            w.line(4, "componentTypeSelector:");
            w.kv(
                5,
                "keyPath",
                &format!(".metadata.labels[{}]", Value::from(key)),
            );
            w.kv(5, "value", &value);
        }
        None if siblings => {
            w.todo(4, "several templates: name the pod label that tells this component's pods apart (`--from-objects` finds it)");
            w.line(4, "componentTypeSelector:");
            w.kv(5, "keyPath", ".metadata.labels[\"TODO/component\"]");
            w.kv(5, "value", name);
        }
        None => {}
    }
    match instance_label {
        Some((key, _)) => {
            w.line(4, "componentInstanceSelector:");
            w.kv(
                5,
                "idPath",
                &format!(".metadata.labels[{}]", Value::from(key)),
            );
        }
        None if instances => {
            w.todo(4, "instances: name the pod label that holds the instance id (`--from-objects` finds it)");
            w.line(4, "componentInstanceSelector:");
            w.kv(5, "idPath", ".metadata.labels[\"TODO/instance\"]");
        }
        None => {}
    }
}

/// YAML written line by line, with comments where a guess needs a look.
#[derive(Default)]
struct Yaml {
    out: String,
    todos: usize,
}

impl Yaml {
    fn line(&mut self, indent: usize, s: &str) {
        self.out.push_str(&"  ".repeat(indent));
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn kv(&mut self, indent: usize, k: &str, v: &str) {
        self.line(indent, &format!("{k}: {}", scalar(v)));
    }

    fn comment(&mut self, s: &str) {
        self.line(0, &format!("# {s}"));
    }

    fn todo(&mut self, indent: usize, s: &str) {
        self.todos += 1;
        self.line(indent, &format!("# TODO: {s}"));
    }
}

/// A string as a YAML scalar: plain when YAML reads it back as the same string, else quoted
/// (JSON's double-quoted form is YAML's).
pub(crate) fn scalar(s: &str) -> String {
    let reserved = ["true", "false", "null", "yes", "no", "on", "off", "~", ""];
    let plain = !reserved.contains(&s.to_ascii_lowercase().as_str())
        && s.parse::<f64>().is_err()
        && !s.contains(": ")
        && !s.contains(" #")
        && !s.ends_with(':')
        && s.trim() == s
        && !s.starts_with(|c: char| "-?:,[]{}#&*!|>'\"%@`".contains(c))
        && s.chars().all(|c| !c.is_control());
    if plain {
        s.to_string()
    } else {
        Value::from(s).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn component_names_come_from_the_path() {
        let steps = |p: &str| crate::paths::plain_prefix(p);
        assert_eq!(
            component_name(&steps(".spec.replicatedJobs[].template.spec.template")),
            "replicatedjob"
        );
        assert_eq!(
            component_name(&steps(".spec.headGroupSpec.template")),
            "head"
        );
        assert_eq!(
            component_name(&steps(".spec.workerGroupSpecs[].template")),
            "worker"
        );
        assert_eq!(
            component_name(&steps(".spec.leaderWorkerTemplate.leaderTemplate")),
            "leader"
        );
        assert_eq!(component_name(&steps(".spec.template")), "pod");
    }

    #[test]
    fn scalars_that_yaml_would_misread_are_quoted() {
        assert_eq!(scalar("1"), "\"1\"");
        assert_eq!(scalar("true"), "\"true\"");
        assert_eq!(scalar(".spec.replicas // 1"), ".spec.replicas // 1");
        assert_eq!(scalar("a: b"), "\"a: b\"");
        assert_eq!(scalar(""), "\"\"");
    }
}
