//! The definitions in force: the catalog, overridden by `kartas.run.ai` objects of the same
//! kind (unknown fields dropped and named, legacy ResourceInterface converted; a bad one is
//! skipped and said).

use crate::error::Invalid;
use serde_json::Value;
use wlmap_engine::{Definition, Origin, Registry};

/// The catalog plus these Karta objects ([`wlmap_catalog::with_cluster_kartas`]); the
/// warnings say what was skipped or ignored, and why. A broken catalog (a test guards against
/// it) leaves the cluster's definitions alone in force.
///
/// ```
/// let (reg, warnings) = wlmap_controller::definitions::registry(&[serde_json::json!({"kind": "Karta"})]);
/// assert_eq!(reg.len(), wlmap_catalog::registry().unwrap().len());
/// assert_eq!(warnings.len(), 1);
/// ```
pub fn registry(kartas: &[Value]) -> (Registry, Vec<String>) {
    match wlmap_catalog::with_cluster_kartas(kartas) {
        Ok(r) => r,
        Err(e) => (Registry::default(), vec![format!("built-in catalog: {e}")]),
    }
}

/// What a Karta object should carry that the controller keeps: the labels KAI Scheduler finds
/// it by, and its conditions (`Valid`: decodes (unknown fields ignored and named) and compiles; `KindServed`: the API
/// server serves its root kind; `SchemaMatches`: every path it reads is in its kind's CRD
/// schema, as `wlmap check` finds).
#[derive(Debug, Clone, PartialEq)]
pub struct Upkeep {
    /// Labels to set (only when one is missing or different).
    pub labels: Option<std::collections::BTreeMap<String, String>>,
    /// `status.conditions` to write (only when a condition changed).
    pub conditions: Option<Vec<Value>>,
}

/// The condition types the controller writes on Kartas.
pub const CONDITIONS: [&str; 3] = ["Valid", "KindServed", "SchemaMatches"];

/// What `wlmap check` finds of a Karta against its kind's CRD: None when the kind has no CRD
/// (a built-in kind, or not served); else each finding as `field: problem`.
pub type SchemaFindings = Option<Vec<String>>;

/// What to change on a Karta object, given whether its root kind is served and the time now
/// (RFC 3339). Conditions keep their `lastTransitionTime` while their status stays.
///
/// ```
/// let k = serde_json::json!({"apiVersion": "run.ai/v1alpha1", "kind": "Karta",
///     "metadata": {"name": "bad", "generation": 1},
///     "spec": {"structureDefinition": {"rootComponent": {"name": "x",
///         "kind": {"group": "example.io", "version": "v1", "kind": "X"}, "specDefinition": {"podTemplateSpecPath": ".spec.template | ("}}}}});
/// let u = wlmap_controller::definitions::upkeep(&k, false, None, "2026-12-02T00:00:00Z");
/// assert_eq!(u.labels.unwrap()["run.ai/karta-kind"], "X");
/// let c = u.conditions.unwrap();
/// assert_eq!((c[0]["type"].as_str(), c[0]["status"].as_str()), (Some("Valid"), Some("False")));
/// assert_eq!(c[1]["status"], "False");
/// assert_eq!((c[2]["status"].as_str(), c[2]["reason"].as_str()), (Some("Unknown"), Some("NoCRD")));
/// ```
pub fn upkeep(obj: &Value, served: bool, schema: SchemaFindings, now: &str) -> Upkeep {
    let root = &obj["spec"]["structureDefinition"]["rootComponent"]["kind"];
    let text = |k: &str| root[k].as_str().unwrap_or("").to_string();
    let gvk = format!("{}/{} {}", text("group"), text("version"), text("kind"));
    let condition = Conditions {
        generation: obj["metadata"]["generation"].clone(),
    };
    let mut conditions = vec![
        condition.valid(&verdict(obj)),
        condition.kind_served(&gvk, served),
        condition.schema_matches(&gvk, schema),
    ];
    let changed = keep_transition_times(&mut conditions, obj, now);
    Upkeep {
        labels: lookup_labels(obj, &text),
        conditions: changed.then_some(conditions),
    }
}

/// Whether the Karta decodes (read as the format's Go implementation reads it) and compiles:
/// the unknown fields it ignored, or why not.
fn verdict(obj: &Value) -> Result<Vec<String>, Invalid> {
    let name = obj["metadata"]["name"].as_str().unwrap_or("?");
    let d = wlmap_schema::decode_compatible(&obj.to_string(), &format!("kartas.run.ai/{name}"))
        .map_err(|e| Invalid(e.to_string()))?;
    let ignored: Vec<String> = d.ignored.iter().map(|i| i.path.clone()).collect();
    let k = d
        .kartas
        .into_iter()
        .next()
        .ok_or_else(|| Invalid("no definition".into()))?;
    Definition::compile(k, Origin::Cluster)
        .map(|_| ignored)
        .map_err(|e| Invalid(e.to_string()))
}

/// KAI Scheduler's lookup labels from the root kind, when one is missing or different.
fn lookup_labels(
    obj: &Value,
    text: &impl Fn(&str) -> String,
) -> Option<std::collections::BTreeMap<String, String>> {
    let want: std::collections::BTreeMap<String, String> = [
        ("run.ai/karta-group", text("group")),
        ("run.ai/karta-version", text("version")),
        ("run.ai/karta-kind", text("kind")),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let have = &obj["metadata"]["labels"];
    want.iter()
        .any(|(k, v)| have[k].as_str() != Some(v.as_str()))
        .then_some(want)
}

/// The conditions of one generation of a Karta.
struct Conditions {
    generation: Value,
}

impl Conditions {
    fn make(&self, t: &str, ok: bool, reason: &str, message: String) -> Value {
        serde_json::json!({"type": t, "status": if ok { "True" } else { "False" },
            "reason": reason, "message": message, "observedGeneration": self.generation})
    }

    fn valid(&self, verdict: &Result<Vec<String>, Invalid>) -> Value {
        match verdict {
            Ok(ignored) if ignored.is_empty() => self.make(
                "Valid",
                true,
                "Valid",
                "the definition decodes and compiles".into(),
            ),
            Ok(ignored) => self.make(
                "Valid",
                true,
                "UnknownFieldsIgnored",
                format!(
                    "the definition decodes and compiles; unknown fields ignored, as the format's Go implementation ignores them: {}",
                    ignored.join(", ")
                ),
            ),
            Err(e) => self.make("Valid", false, "Invalid", e.0.clone()),
        }
    }

    fn kind_served(&self, gvk: &str, served: bool) -> Value {
        if served {
            self.make("KindServed", true, "Served", format!("{gvk} is served"))
        } else {
            self.make(
                "KindServed",
                false,
                "NotServed",
                format!("{gvk} is not served (its CRD is not installed)"),
            )
        }
    }

    fn schema_matches(&self, gvk: &str, schema: SchemaFindings) -> Value {
        match schema {
            None => {
                let mut c = self.make(
                    "SchemaMatches",
                    false,
                    "NoCRD",
                    format!("{gvk} has no CustomResourceDefinition to check against"),
                );
                c["status"] = Value::from("Unknown");
                c
            }
            Some(f) if f.is_empty() => self.make(
                "SchemaMatches",
                true,
                "Matches",
                "every path the definition reads is in its CRD's schema".into(),
            ),
            Some(f) => self.make("SchemaMatches", false, "SchemaMismatch", f.join("; ")),
        }
    }
}

/// Give each condition the transition time it had while its status stays (else `now`);
/// true when any condition differs from the one the Karta carries.
fn keep_transition_times(conditions: &mut [Value], obj: &Value, now: &str) -> bool {
    let old: Vec<Value> = obj["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut changed = false;
    for c in conditions {
        let prior = old.iter().find(|o| o["type"] == c["type"]);
        let same = |k: &str| prior.is_some_and(|p| p[k] == c[k]);
        let kept_time = prior
            .filter(|_| same("status"))
            .and_then(|p| p["lastTransitionTime"].as_str())
            .unwrap_or(now)
            .to_string();
        changed |=
            !(same("status") && same("reason") && same("message") && same("observedGeneration"));
        c["lastTransitionTime"] = Value::from(kept_time);
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Karta with a field the format does not have, as a CRD that keeps unknown fields
    /// (the Go project's, say) would store it.
    fn karta_with_unknown_field() -> Value {
        serde_json::json!({"apiVersion": "run.ai/v1alpha1", "kind": "Karta",
            "metadata": {"name": "widget", "generation": 2},
            "spec": {"structureDefinition": {"rootComponent": {"name": "widget",
                "kind": {"group": "example.io", "version": "v1", "kind": "Widget"},
                "description": "not a field of the format",
                "specDefinition": {"podTemplateSpecPath": ".spec.template"},
                "statusDefinition": {"phaseDefinition": {"path": ".status.phase"},
                    "statusMappings": {"running": [{"byPhase": "Running"}]}}}}}})
    }

    #[test]
    fn an_unknown_field_leaves_the_karta_valid_and_is_named() {
        let u = upkeep(
            &karta_with_unknown_field(),
            true,
            None,
            "2026-12-03T00:00:00Z",
        );
        let c = u.conditions.expect("conditions");
        let valid = c.iter().find(|c| c["type"] == "Valid").expect("Valid");
        assert_eq!(valid["status"], "True");
        assert_eq!(valid["reason"], "UnknownFieldsIgnored");
        assert!(
            valid["message"]
                .as_str()
                .is_some_and(|m| m.contains("spec.structureDefinition.rootComponent.description")),
            "{valid}"
        );
    }

    #[test]
    fn an_unknown_field_is_loaded_with_a_warning() {
        let (reg, warnings) = registry(&[karta_with_unknown_field()]);
        assert!(reg.iter().any(|d| d.name() == "widget"));
        assert!(
            warnings
                .iter()
                .any(|w| w.starts_with("kartas.run.ai/widget:") && w.contains("description")),
            "{warnings:?}"
        );
    }
}
