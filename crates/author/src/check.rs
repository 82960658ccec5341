//! Where a definition no longer fits its kind's schema.

use crate::crd::Crd;
use crate::paths::{Step, plain_prefix, rooted_paths, walk};
use serde::Serialize;
use serde_json::Value;
use std::fmt;
use wlmap_schema::{ComponentDefinition, Karta, StatusMatcher};

/// One problem: `definition: field: problem`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Finding {
    /// The definition's name.
    pub definition: String,
    /// Where in it (`component worker: replicasPath`).
    pub field: String,
    /// What is wrong.
    pub problem: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.definition, self.field, self.problem)
    }
}

/// Check a definition against its kind's CRD: the version is served, every path that reads
/// the workload object (pod templates, replicas, instances, conditions, phase, status
/// expressions, suspend) exists in that version's schema with the right shape, and the
/// condition types and phases it matches are among the values the schema enumerates, where it
/// enumerates them.
///
/// ```
/// # let crd = serde_json::json!({"kind": "CustomResourceDefinition", "spec": {"group": "g.io",
/// #   "names": {"kind": "K", "plural": "ks"}, "versions": [{"name": "v2", "served": true, "storage": true}]}});
/// let crd = wlmap_author::Crd::from_value(&crd).unwrap();
/// let mut k = wlmap_schema::Karta::example();
/// k.spec.structure_definition.root_component.kind = Some(wlmap_schema::GroupVersionKind::new("g.io", "v1", "K"));
/// let found = wlmap_author::check(&k, &crd);
/// assert_eq!(found[0].problem, "version v1 is not in the CRD (its versions: v2)");
/// ```
pub fn check(k: &Karta, crd: &Crd) -> Vec<Finding> {
    let name = k.name();
    let finding = |field: &str, problem: String| Finding {
        definition: name.clone(),
        field: field.to_string(),
        problem,
    };
    let version = k
        .root()
        .kind
        .as_ref()
        .map(|g| g.version.clone())
        .unwrap_or_default();
    let Some(v) = crd.version(&version) else {
        let all: Vec<&str> = crd.versions.iter().map(|v| v.name.as_str()).collect();
        return vec![finding(
            "rootComponent.kind",
            format!(
                "version {version} is not in the CRD (its versions: {})",
                all.join(", ")
            ),
        )];
    };
    let mut out = Vec::new();
    if !v.served {
        out.push(finding(
            "rootComponent.kind",
            format!(
                "version {version} is not served (served: {})",
                crd.served().join(", ")
            ),
        ));
    }
    let Some(schema) = &v.schema else {
        return out;
    };
    for (field, expr, shape) in reads(k) {
        for problem in check_expression(schema, &expr, shape) {
            out.push(finding(&field, problem));
        }
    }
    out.extend(
        enumerated(k, schema)
            .into_iter()
            .map(|(field, problem)| finding(&field, problem)),
    );
    out
}

/// What a whole plain path must point at.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Object,
    Integer,
    Any,
}

/// Every expression of the definition that reads the workload object, with the field it is
/// in and the shape a whole plain path must have.
fn reads(k: &Karta) -> Vec<(String, String, Shape)> {
    let mut out = Vec::new();
    for c in k.components() {
        let at = |f: &str| format!("component {}: {f}", c.name);
        if let Some(s) = &c.spec_definition {
            for (f, p) in [
                ("podTemplateSpecPath", &s.pod_template_spec_path),
                ("podSpecPath", &s.pod_spec_path),
            ] {
                if let Some(p) = p {
                    out.push((at(f), p.clone(), Shape::Object));
                }
            }
        }
        if let Some(s) = &c.scale_definition {
            for (f, p) in [
                ("replicasPath", &s.replicas_path),
                ("minReplicasPath", &s.min_replicas_path),
                ("maxReplicasPath", &s.max_replicas_path),
            ] {
                if let Some(p) = p {
                    out.push((at(f), p.clone(), Shape::Integer));
                }
            }
        }
        if let Some(p) = &c.instance_id_path {
            out.push((at("instanceIdPath"), p.clone(), Shape::Any));
        }
    }
    let root = k.root();
    out.extend(root_reads(root));
    out
}

fn root_reads(root: &ComponentDefinition) -> Vec<(String, String, Shape)> {
    let mut out = Vec::new();
    if let Some(s) = &root.status_definition {
        if let Some(c) = &s.conditions_definition {
            out.push((
                "conditionsDefinition.path".into(),
                c.path.clone(),
                Shape::Any,
            ));
        }
        if let Some(p) = &s.phase_definition {
            out.push(("phaseDefinition.path".into(), p.path.clone(), Shape::Any));
        }
        for (word, m) in matchers(root) {
            if let Some(e) = &m.by_expression {
                out.push((
                    format!("statusMappings.{word}: byExpression"),
                    e.expression.clone(),
                    Shape::Any,
                ));
            }
        }
    }
    if let Some(s) = &root.suspend_definition {
        for a in s.suspend_actions.iter().chain(&s.resume_actions) {
            out.push(("suspendDefinition".into(), a.path.clone(), Shape::Any));
        }
    }
    out
}

fn matchers(c: &ComponentDefinition) -> Vec<(&'static str, &StatusMatcher)> {
    let Some(s) = &c.status_definition else {
        return vec![];
    };
    let m = &s.status_mappings;
    [
        ("initializing", &m.initializing),
        ("running", &m.running),
        ("completed", &m.completed),
        ("failed", &m.failed),
        ("degraded", &m.degraded),
        ("suspended", &m.suspended),
        ("suspending", &m.suspending),
        ("resuming", &m.resuming),
        ("pending", &m.pending),
        ("progressing", &m.progressing),
    ]
    .into_iter()
    .flat_map(|(w, list)| list.iter().map(move |x| (w, x)))
    .collect()
}

/// The problems of one expression: each path it reads from `.spec` or `.status` must be in
/// the schema, and when the whole expression is one plain path, of the expected shape.
fn check_expression(schema: &Value, expr: &str, shape: Shape) -> Vec<String> {
    let mut paths = rooted_paths(expr);
    let prefix = plain_prefix(expr);
    let starts_rooted =
        matches!(prefix.first(), Some(Step::Key(k)) if k == "spec" || k == "status");
    if starts_rooted && !paths.contains(&prefix) {
        paths.insert(0, prefix.clone());
    }
    let mut out = Vec::new();
    let shown = short(expr);
    for p in &paths {
        if let Err(e) = walk(schema, p) {
            let problem = format!("{e} (read by `{shown}`)");
            if !out.contains(&problem) {
                out.push(problem);
            }
        }
    }
    let whole =
        !expr.contains('|') && !expr.contains("//") && !expr.contains('*') && !expr.contains('(');
    if whole
        && starts_rooted
        && let Ok(node) = walk(schema, &prefix)
    {
        let ty = node["type"].as_str();
        let want = match shape {
            Shape::Object if ty.is_some_and(|t| t != "object") => Some("an object"),
            Shape::Integer if ty.is_some_and(|t| t != "integer" && t != "number") => {
                Some("an integer")
            }
            _ => None,
        };
        if let Some(want) = want {
            out.push(format!(
                "`{shown}` points at a {} in the schema, expected {want}",
                ty.unwrap_or("?")
            ));
        }
    }
    out
}

/// An expression on one line, at most 80 characters (findings are one line each).
fn short(expr: &str) -> String {
    let one: String = expr.split_whitespace().collect::<Vec<_>>().join(" ");
    match one.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &one[..i]),
        None => one,
    }
}

/// Condition types and phases the root's rules match that the schema's enums leave out.
fn enumerated(k: &Karta, schema: &Value) -> Vec<(String, String)> {
    let root = k.root();
    let Some(s) = &root.status_definition else {
        return vec![];
    };
    let values = |steps: Vec<Step>| -> Option<Vec<String>> {
        let node = walk(schema, &steps).ok()?;
        Some(
            node.get("enum")?
                .as_array()?
                .iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect(),
        )
    };
    let condition_types = s.conditions_definition.as_ref().and_then(|c| {
        let field = c.type_field_name.as_deref().unwrap_or("type");
        let mut steps = plain_prefix(&c.path);
        steps.extend([Step::Iter, Step::Key(field.to_string())]);
        values(steps)
    });
    let phases = s
        .phase_definition
        .as_ref()
        .and_then(|p| values(plain_prefix(&p.path)));
    let mut out = Vec::new();
    for (word, m) in matchers(root) {
        if let (Some(allowed), Some(p)) = (&phases, &m.by_phase)
            && !allowed.contains(p)
        {
            out.push((
                format!("statusMappings.{word}: byPhase"),
                format!(
                    "phase {p:?} is not one of the schema's values ({})",
                    allowed.join(", ")
                ),
            ));
        }
        for c in &m.by_conditions {
            if let Some(allowed) = &condition_types
                && !allowed.contains(&c.type_)
            {
                out.push((
                    format!("statusMappings.{word}: byConditions"),
                    format!(
                        "condition type {:?} is not one of the schema's values ({})",
                        c.type_,
                        allowed.join(", ")
                    ),
                ));
            }
        }
    }
    out
}
