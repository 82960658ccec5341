//! Conformance with real operators: recorded objects (see `shared/conformance/README.md`) go
//! through the catalog, and the primary status must equal the recorded state.

use serde_json::Value;
use std::collections::BTreeMap;
use wlmap_engine::{Object, Registry};

/// The outcome of one recorded STATE event.
///
/// ```
/// let reg = wlmap_catalog::registry().unwrap();
/// let doc = serde_json::json!({"events": [{"kind": "STATE", "state": "Undefined",
///     "object": {"apiVersion": "x.io/v1", "kind": "Unknown", "metadata": {"name": "u"}}}]});
/// let r = &wlmap_catalog::conformance::check_recording(&reg, &doc)[0];
/// assert_eq!((r.computed.as_str(), r.definite()), ("NoDefinition", false));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct EventResult {
    /// Definition used (or the kind when none).
    pub definition: String,
    /// Event index in the recording.
    pub index: usize,
    /// Recorded state (`Undefined` when the recorder could not tell).
    pub recorded: String,
    /// What the catalog reads.
    pub computed: String,
}

impl EventResult {
    /// True when the recorded state is definite.
    ///
    /// ```
    /// let e = wlmap_catalog::conformance::EventResult { definition: "x".into(), index: 0, recorded: "Undefined".into(), computed: "Running".into() };
    /// assert!(!e.definite());
    /// ```
    pub fn definite(&self) -> bool {
        self.recorded != "Undefined"
    }

    /// True when a definite state agrees.
    ///
    /// ```
    /// let e = wlmap_catalog::conformance::EventResult { definition: "x".into(), index: 0, recorded: "Running".into(), computed: "Running".into() };
    /// assert!(e.agrees());
    /// ```
    pub fn agrees(&self) -> bool {
        self.recorded == self.computed
    }
}

/// Check one recording document (`{events: [...]}`).
///
/// ```
/// let reg = wlmap_catalog::registry().unwrap();
/// let doc = serde_json::json!({"events": [{"kind": "STATE", "state": "Running", "object": {
///   "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {},
///   "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}}]});
/// let r = wlmap_catalog::conformance::check_recording(&reg, &doc);
/// assert!(r[0].agrees());
/// ```
pub fn check_recording(reg: &Registry, doc: &Value) -> Vec<EventResult> {
    let mut out = Vec::new();
    let Some(events) = doc.get("events").and_then(Value::as_array) else {
        return out;
    };
    for (index, e) in events.iter().enumerate() {
        if e.get("kind").and_then(Value::as_str) != Some("STATE") {
            continue;
        }
        let (Some(obj), Some(state)) = (e.get("object"), e.get("state").and_then(Value::as_str))
        else {
            continue;
        };
        let o = Object::new(obj.clone());
        let (definition, computed) = match reg.for_kind(&o.gvk()) {
            None => (o.gvk().to_string(), "NoDefinition".to_string()),
            Some(d) => (
                d.name(),
                wlmap_engine::resolve(d, &o)
                    .map(|w| w.status.phase.to_string())
                    .unwrap_or_else(|e| format!("Error: {e}")),
            ),
        };
        out.push(EventResult {
            definition,
            index,
            recorded: state.to_string(),
            computed,
        });
    }
    out
}

/// Every recording file (`*.yaml`) under a directory, sorted.
///
/// ```
/// let none = wlmap_catalog::conformance::recordings(std::path::Path::new("/nonexistent"));
/// assert!(none.is_empty());
/// ```
pub fn recordings(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut entries: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            out.extend(recordings(&p));
        } else if p.extension().is_some_and(|x| x == "yaml") {
            out.push(p);
        }
    }
    out
}

/// The recorded STATE events of one definition, counted.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Counts {
    /// Every STATE event.
    pub events: usize,
    /// Events whose recorded state is definite.
    pub definite: usize,
    /// Definite events the catalog reads the same.
    pub agree: usize,
    /// Events recorded as Undefined.
    pub undefined: usize,
    /// Each definite event read otherwise: `FILE #INDEX: recorded X, computed Y`.
    pub disagreements: Vec<String>,
}

/// Recordings checked against a registry, counted per definition (what `wlmap conformance`
/// prints and what `CONFORMANCE.tsv` keeps).
///
/// ```
/// let reg = wlmap_catalog::registry().unwrap();
/// let doc = serde_json::json!({"events": [{"kind": "STATE", "state": "Running", "object": {
///   "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {},
///   "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}}]});
/// let mut t = wlmap_catalog::conformance::Tally::default();
/// t.add(&reg, "pod.yaml", &doc);
/// assert_eq!(t.per_definition["core-pod-v1"].agree, 1);
/// assert_eq!(t.disagreements(), 0);
/// ```
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Tally {
    /// By definition name (or the kind, for a kind with no definition).
    pub per_definition: BTreeMap<String, Counts>,
}

impl Tally {
    /// Check one recording document and count its events.
    pub fn add(&mut self, reg: &Registry, source: &str, doc: &Value) {
        for r in check_recording(reg, doc) {
            let c = self.per_definition.entry(r.definition.clone()).or_default();
            c.events += 1;
            if !r.definite() {
                c.undefined += 1;
            } else if r.agrees() {
                c.definite += 1;
                c.agree += 1;
            } else {
                c.definite += 1;
                c.disagreements.push(format!(
                    "{source} #{}: recorded {}, computed {}",
                    r.index, r.recorded, r.computed
                ));
            }
        }
    }

    /// Every recording file under a directory, read and counted.
    pub fn of_dir(reg: &Registry, dir: &std::path::Path) -> Result<Tally, String> {
        let mut t = Tally::default();
        t.add_dir(reg, dir)?;
        Ok(t)
    }

    /// Read and count every recording file under one more directory (another corpus).
    ///
    /// ```
    /// let reg = wlmap_catalog::registry().unwrap();
    /// let mut t = wlmap_catalog::conformance::Tally::default();
    /// t.add_dir(&reg, std::path::Path::new("/nonexistent")).unwrap();
    /// assert!(t.per_definition.is_empty());
    /// ```
    pub fn add_dir(&mut self, reg: &Registry, dir: &std::path::Path) -> Result<(), String> {
        for p in recordings(dir) {
            let name = p.display().to_string();
            let text = std::fs::read_to_string(&p).map_err(|e| format!("{name}: {e}"))?;
            let doc: Value =
                serde_saphyr::from_str_with_options(&text, wlmap_schema::yaml_options())
                    .map_err(|e| format!("{name}: {e}"))?;
            self.add(reg, &name, &doc);
        }
        Ok(())
    }

    /// Definite events read otherwise, over every definition.
    pub fn disagreements(&self) -> usize {
        self.per_definition
            .values()
            .map(|c| c.disagreements.len())
            .sum()
    }
}
