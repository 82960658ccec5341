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

/// The plain path an expression starts with (`.a.b[]?.c["d"] // 1` gives a, b, [], c, d).
///
/// ```
/// use wlmap_author::{Step, plain_prefix};
/// assert_eq!(plain_prefix(".spec.x[]?.y // 1"),
///     vec![Step::Key("spec".into()), Step::Key("x".into()), Step::Iter, Step::Key("y".into())]);
/// assert!(plain_prefix("1").is_empty());
/// ```
pub fn plain_prefix(expr: &str) -> Vec<Step> {
    let s = expr.trim().trim_start_matches('(');
    path_at(s).0
}

/// The plain path at the start of `s`, and how many bytes it takes.
fn path_at(s: &str) -> (Vec<Step>, usize) {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'.' => {
                i += 1;
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                if i > start {
                    out.push(Step::Key(s[start..i].to_string()));
                } else if !s[i..].starts_with('[') {
                    break;
                }
            }
            b'[' if s[i..].starts_with("[]") => {
                out.push(Step::Iter);
                i += 2;
            }
            b'[' if s[i..].starts_with("[\"") => {
                let rest = &s[i + 2..];
                let Some(end) = rest.find("\"]") else { break };
                out.push(Step::Key(rest[..end].to_string()));
                i += 2 + end + 2;
            }
            b'?' => i += 1,
            _ => break,
        }
    }
    (out, i)
}

/// Every plain path in an expression that starts at `.spec` or `.status` of the object it is
/// evaluated on and goes at least one step further (`(.status.a // 0) < .status.b` gives
/// `.status.a` and `.status.b`). Paths after a `|` or inside a function's argument may be
/// relative to something else: only `.spec` and `.status` roots are taken, as those are what
/// an object's own fields are called.
///
/// ```
/// let p = wlmap_author::rooted_paths("(.status.ready // 0) < (.spec.replicas // 1)");
/// assert_eq!(p.len(), 2);
/// assert!(wlmap_author::rooted_paths(".metadata.name | .x").is_empty());
/// ```
pub fn rooted_paths(expr: &str) -> Vec<Vec<Step>> {
    let mut out = Vec::new();
    let b = expr.as_bytes();
    let mut i = 0;
    let mut in_string = false;
    while i < b.len() {
        let c = b[i];
        if in_string {
            if c == b'\\' {
                i += 2;
                continue;
            }
            in_string = c != b'"';
            i += 1;
            continue;
        }
        if c == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        // A path starts at a `.` that does not continue a name, a `$var` or another path.
        let after_word =
            i > 0 && (b[i - 1].is_ascii_alphanumeric() || b"_]?)$".contains(&b[i - 1]));
        if c == b'.' && !after_word {
            let (steps, used) = path_at(&expr[i..]);
            let rooted =
                matches!(steps.first(), Some(Step::Key(k)) if k == "spec" || k == "status");
            if rooted && steps.len() >= 2 {
                out.push(steps);
            }
            i += used.max(1);
            continue;
        }
        i += 1;
    }
    out
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
        let e = r#"(.status.conditions // []) | any(.type == "X.status.y" and .status == "True") and $g.spec.a and .spec.items[]?.replicas > 0"#;
        let got: Vec<String> = rooted_paths(e).iter().map(|p| text(p)).collect();
        assert_eq!(got, [".status.conditions", ".spec.items[]?.replicas"]);
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
