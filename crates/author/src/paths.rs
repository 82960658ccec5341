//! Plain paths (`.spec.a[].b["c"]`) in expressions, and where they lead in an OpenAPI schema.

use serde_json::Value;

/// One step of a plain path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// `.key` or `["key"]`.
    Key(String),
    /// `[]`: every element of an array, or every value of a map.
    Iter,
}

/// The plain path an expression starts with (`.a.b[]?.c["d"] // 1` gives a, b, [], c, d);
/// empty when it starts with anything else. Read from the parsed expression
/// ([`wlmap_expr::paths_read`]).
///
/// ```
/// use wlmap_author::{Step, plain_prefix};
/// assert_eq!(plain_prefix(".spec.x[]?.y // 1"),
///     vec![Step::Key("spec".into()), Step::Key("x".into()), Step::Iter, Step::Key("y".into())]);
/// assert!(plain_prefix("1").is_empty());
/// assert!(plain_prefix("[.spec.a[]] | length").is_empty());
/// ```
pub fn plain_prefix(expr: &str) -> Vec<Step> {
    let starts_with_path = expr
        .trim_start_matches(['(', ' ', '\n', '\t'])
        .starts_with('.');
    if !starts_with_path {
        return Vec::new();
    }
    read(expr).into_iter().next().unwrap_or_default()
}

/// Every path an expression reads that starts at `.spec` or `.status` of the object it is
/// evaluated on and goes at least one step further (`(.status.a // 0) < .status.b` gives
/// `.status.a` and `.status.b`). Paths after a `|` or inside a mapping function's argument
/// are relative to something else and are not taken ([`wlmap_expr::paths_read`]).
///
/// ```
/// let p = wlmap_author::rooted_paths("(.status.ready // 0) < (.spec.replicas // 1)");
/// assert_eq!(p.len(), 2);
/// assert!(wlmap_author::rooted_paths(".metadata.name | .x").is_empty());
/// assert!(wlmap_author::rooted_paths(".spec.a[] | .status.b").len() == 1);
/// ```
pub fn rooted_paths(expr: &str) -> Vec<Vec<Step>> {
    let mut out: Vec<Vec<Step>> = Vec::new();
    for steps in read(expr) {
        let rooted = matches!(steps.first(), Some(Step::Key(k)) if k == "spec" || k == "status");
        if rooted && steps.len() >= 2 && !out.contains(&steps) {
            out.push(steps);
        }
    }
    out
}

/// The paths an expression reads, as steps; none when it does not parse (compiling the
/// definition reports that).
fn read(expr: &str) -> Vec<Vec<Step>> {
    let paths = wlmap_expr::paths_read(expr).unwrap_or_default();
    paths
        .into_iter()
        .map(|p| {
            p.into_iter()
                .map(|k| match k {
                    wlmap_expr::Key::Field(f) => Step::Key(f),
                    wlmap_expr::Key::Each => Step::Iter,
                })
                .collect()
        })
        .collect()
}

/// Follow a path through an OpenAPI v3 schema. A schema node that keeps unknown fields and
/// names no properties takes any path below it.
///
/// ```
/// use wlmap_author::{plain_prefix, walk};
/// let schema = serde_json::json!({"properties": {"spec": {"properties": {"replicas": {"type": "integer"}}}}});
/// assert_eq!(walk(&schema, &plain_prefix(".spec.replicas")).unwrap()["type"], "integer");
/// assert_eq!(walk(&schema, &plain_prefix(".spec.size")).unwrap_err(), ".spec.size is not in the schema");
/// ```
pub fn walk<'a>(schema: &'a Value, steps: &[Step]) -> Result<&'a Value, String> {
    let mut at = schema;
    let mut seen = String::new();
    for st in steps {
        if keeps_unknown_fields(at) {
            return Ok(at);
        }
        match st {
            Step::Key(k) => {
                seen.push_str(&format!(".{k}"));
                at = match at.get("properties").and_then(|p| p.get(k)) {
                    Some(v) => v,
                    None => match at.get("additionalProperties") {
                        Some(v) if v.is_object() => v,
                        _ => return Err(format!("{seen} is not in the schema")),
                    },
                };
            }
            Step::Iter => {
                seen.push_str("[]");
                at = at
                    .get("items")
                    .or_else(|| at.get("additionalProperties").filter(|v| v.is_object()))
                    .ok_or_else(|| format!("{seen}: not an array or a map in the schema"))?;
            }
        }
    }
    Ok(at)
}

/// True for a schema node that accepts any fields and names none.
pub fn keeps_unknown_fields(node: &Value) -> bool {
    node.get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true)
        && node.get("properties").is_none()
}

/// `.a.b[]?.c` for steps (a list or map that is absent iterates as nothing).
pub fn text(steps: &[Step]) -> String {
    let mut s = String::new();
    for st in steps {
        match st {
            Step::Key(k) if k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
                s.push('.');
                s.push_str(k);
            }
            Step::Key(k) => s.push_str(&format!(".[{}]", serde_json::Value::from(k.as_str()))),
            Step::Iter => s.push_str("[]?"),
        }
    }
    if s.is_empty() {
        s.push('.');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rooted_paths_skip_strings_relative_paths_and_variables() {
        // `|` binds loosest: everything right of it reads the conditions, not the object.
        let e = r#"(.status.conditions // []) | any(.type == "X.status.y" and .status == "True") and $g.spec.a and .spec.items[]?.replicas > 0"#;
        let got: Vec<String> = rooted_paths(e).iter().map(|p| text(p)).collect();
        assert_eq!(got, [".status.conditions"]);
        let e = r#"any(.status.conditions[]; .type == "X.status.y") and $g.spec.a and (.spec.items[]?.replicas > 0)"#;
        let got: Vec<String> = rooted_paths(e).iter().map(|p| text(p)).collect();
        assert_eq!(got, [".status.conditions[]?", ".spec.items[]?.replicas"]);
    }

    #[test]
    fn quoted_keys_are_steps() {
        assert_eq!(
            plain_prefix(".metadata.labels[\"a/b\"]"),
            vec![
                Step::Key("metadata".into()),
                Step::Key("labels".into()),
                Step::Key("a/b".into())
            ]
        );
    }
}

/// One pod template found in the schema.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    /// From the object's root to the template (or pod spec).
    pub steps: Vec<Step>,
    /// The path ends at a PodSpec (`podSpecPath`), not a PodTemplateSpec.
    pub pod_spec: bool,
    /// Inside a JobTemplateSpec: the pods are a Job's.
    pub in_job: bool,
    /// Why this is a guess, when the schema does not show the template's shape.
    pub guess: Option<String>,
}
