//! `validate --crd`: check that a definition's plain spec paths exist in the target kind's CRD
//! schema and point at the right shape.

use crate::exit::{Result, invalid};
use serde_json::Value;
use wlmap_schema::Karta;

/// One step of a plain path.
#[derive(Debug, PartialEq)]
enum Step {
    Key(String),
    Iter,
}

/// The leading plain-path part of an expression (`.a.b[]?.c["d"] // 1` gives a, b, [], c, d).
fn plain_prefix(expr: &str) -> Vec<Step> {
    let mut out = Vec::new();
    let s = expr.trim().trim_start_matches('(');
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
                }
            }
            b'[' => {
                if s[i..].starts_with("[]") {
                    out.push(Step::Iter);
                    i += 2;
                } else if s[i..].starts_with("[\"") {
                    let rest = &s[i + 2..];
                    let Some(end) = rest.find("\"]") else { break };
                    out.push(Step::Key(rest[..end].to_string()));
                    i += 2 + end + 2;
                } else {
                    break;
                }
            }
            b'?' => i += 1,
            _ => break,
        }
    }
    out
}

fn walk<'a>(schema: &'a Value, steps: &[Step]) -> std::result::Result<&'a Value, String> {
    let mut at = schema;
    let mut seen = String::new();
    for st in steps {
        if at
            .get("x-kubernetes-preserve-unknown-fields")
            .and_then(Value::as_bool)
            == Some(true)
            && at.get("properties").is_none()
        {
            return Ok(at);
        }
        match st {
            Step::Key(k) => {
                seen.push_str(&format!(".{k}"));
                at = match at.get("properties").and_then(|p| p.get(k)) {
                    Some(v) => v,
                    None => match at.get("additionalProperties") {
                        Some(v) if v.is_object() => v,
                        _ => return Err(format!("{seen} is not in the CRD schema")),
                    },
                };
            }
            Step::Iter => {
                seen.push_str("[]");
                at = at
                    .get("items")
                    .or_else(|| at.get("additionalProperties"))
                    .ok_or_else(|| format!("{seen}: not an array or map in the CRD schema"))?;
            }
        }
    }
    Ok(at)
}

/// Warnings for paths missing from the CRD or of the wrong shape.
pub fn check(k: &Karta, crd_text: &str, name: &str) -> Result<Vec<String>> {
    let docs = crate::source::parse_documents(crd_text, name)?;
    let crd = docs
        .iter()
        .find(|d| d.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition"))
        .ok_or_else(|| invalid(format!("{name}: no CustomResourceDefinition")))?;
    let root = k.root().kind.clone().unwrap_or_default();
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let v = versions
        .iter()
        .find(|v| v.get("name").and_then(Value::as_str) == Some(root.version.as_str()))
        .ok_or_else(|| {
            invalid(format!(
                "{name}: the CRD does not serve version {}",
                root.version
            ))
        })?;
    let schema = v.pointer("/schema/openAPIV3Schema").ok_or_else(|| {
        invalid(format!(
            "{name}: version {} has no openAPIV3Schema",
            root.version
        ))
    })?;
    let mut out = Vec::new();
    for c in k.components() {
        let mut paths: Vec<(&str, &String, &str)> = Vec::new();
        if let Some(s) = &c.spec_definition {
            if let Some(p) = &s.pod_template_spec_path {
                paths.push(("podTemplateSpecPath", p, "object"));
            }
            if let Some(p) = &s.pod_spec_path {
                paths.push(("podSpecPath", p, "object"));
            }
        }
        if let Some(s) = &c.scale_definition {
            for (f, p) in [
                ("replicasPath", &s.replicas_path),
                ("minReplicasPath", &s.min_replicas_path),
                ("maxReplicasPath", &s.max_replicas_path),
            ] {
                if let Some(p) = p {
                    paths.push((f, p, "integer"));
                }
            }
        }
        for (field, expr, want) in paths {
            let steps = plain_prefix(expr);
            if steps.is_empty() {
                continue;
            }
            match walk(schema, &steps) {
                Err(e) => out.push(format!("component {}: {field} `{expr}`: {e}", c.name)),
                Ok(node) => {
                    let ty = node.get("type").and_then(Value::as_str);
                    let whole = !expr.contains('|') && !expr.contains("//") && !expr.contains('*');
                    if whole
                        && ty.is_some()
                        && ty != Some(want)
                        && !(want == "integer" && ty == Some("number"))
                    {
                        out.push(format!("component {}: {field} `{expr}` points at a {} in the CRD, expected {want}", c.name, ty.unwrap_or("?")));
                    }
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_prefixes() {
        assert_eq!(
            plain_prefix(".spec.replicatedJobs[].template // 1"),
            vec![
                Step::Key("spec".into()),
                Step::Key("replicatedJobs".into()),
                Step::Iter,
                Step::Key("template".into())
            ]
        );
        assert_eq!(
            plain_prefix(".metadata.labels[\"a/b\"]"),
            vec![
                Step::Key("metadata".into()),
                Step::Key("labels".into()),
                Step::Key("a/b".into())
            ]
        );
        assert!(plain_prefix("1").is_empty());
    }
}
