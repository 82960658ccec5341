//! Structural validation: everything the public format's validator checks, and more.
//!
//! Expressions are compiled (and their errors reported) by `wlmap-engine`, which adds its
//! findings to these.

use crate::types::{ComponentDefinition, Karta};
use std::collections::{BTreeMap, BTreeSet};

/// How serious a finding is.
///
/// ```
/// use wlmap_schema::Severity;
/// assert_eq!(Severity::Warning.to_string(), "warning");
/// assert!(Severity::Error < Severity::Warning);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The definition cannot be used.
    Error,
    /// The definition works but probably not as intended.
    Warning,
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

/// Which field a finding is about, so a caller with the source text can locate it.
///
/// ```
/// let f = wlmap_schema::Finding::error(Some("pod"), "ownerRef", Some("x"), "unknown owner", "fix it");
/// let expected = wlmap_schema::FieldRef { component: Some("pod".into()), field: "ownerRef".into(), value: Some("x".into()) };
/// assert_eq!(f.field, expected);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldRef {
    /// Component name, when the finding is inside a component.
    pub component: Option<String>,
    /// Field name as written in the file (e.g. `ownerRef`, `replicasPath`).
    pub field: String,
    /// The field's value, when it is a string (helps locating it).
    pub value: Option<String>,
}

/// One validation finding with a one-line fix hint.
///
/// ```
/// let mut k = wlmap_schema::Karta::example();
/// k.spec.structure_definition.root_component.owner_ref = Some("x".into());
/// let f = wlmap_schema::validate(&k).into_iter().find(|f| f.field.field == "ownerRef").unwrap();
/// assert!(!f.message.is_empty() && !f.hint.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Error or warning.
    pub severity: Severity,
    /// Where in the definition.
    pub field: FieldRef,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: String,
}

impl Finding {
    /// A new error finding.
    ///
    /// ```
    /// let f = wlmap_schema::Finding::error(Some("w"), "ownerRef", None, "missing", "set it");
    /// assert_eq!(f.severity, wlmap_schema::Severity::Error);
    /// ```
    pub fn error(
        component: Option<&str>,
        field: &str,
        value: Option<&str>,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> Self {
        Self::new(Severity::Error, component, field, value, message, hint)
    }

    /// A new warning finding.
    ///
    /// ```
    /// let f = wlmap_schema::Finding::warning(None, "spec", None, "odd", "check it");
    /// assert_eq!(f.severity, wlmap_schema::Severity::Warning);
    /// ```
    pub fn warning(
        component: Option<&str>,
        field: &str,
        value: Option<&str>,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> Self {
        Self::new(Severity::Warning, component, field, value, message, hint)
    }

    fn new(
        severity: Severity,
        component: Option<&str>,
        field: &str,
        value: Option<&str>,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> Self {
        Finding {
            severity,
            field: FieldRef {
                component: component.map(str::to_string),
                field: field.to_string(),
                value: value.map(str::to_string),
            },
            message: message.into(),
            hint: hint.into(),
        }
    }
}

/// Validate a definition's structure. Every finding is collected; none stops the others.
///
/// ```
/// let mut k = wlmap_schema::Karta::example();
/// k.spec.structure_definition.root_component.owner_ref = Some("x".into());
/// let f = wlmap_schema::validate(&k);
/// assert!(f.iter().any(|f| f.field.field == "ownerRef"));
/// ```
pub fn validate(k: &Karta) -> Vec<Finding> {
    let mut out = Vec::new();
    validate_root(k, &mut out);
    let names = validate_names(k, &mut out);
    validate_owners(k, &names, &mut out);
    validate_siblings(k, &mut out);
    validate_gangs(k, &names, &mut out);
    validate_references(k, &mut out);
    validate_short_names(k, &mut out);
    out
}

/// The root names a full kind (a group unless it is Pod), has no owner and reads the status.
fn validate_root(k: &Karta, out: &mut Vec<Finding>) {
    let root = k.root();
    let rn = Some(root.name.as_str());
    match &root.kind {
        None => out.push(Finding::error(
            rn,
            "kind",
            None,
            "the root component has no kind",
            "set kind: {group, version, kind} of the workload",
        )),
        Some(g) => {
            if g.version.is_empty() || g.kind.is_empty() {
                out.push(Finding::error(
                    rn,
                    "kind",
                    None,
                    "the root component's kind needs a version and a kind",
                    "set kind.version and kind.kind",
                ));
            }
            if g.group.is_empty() && g.kind != "Pod" {
                out.push(Finding::error(
                    rn,
                    "kind",
                    None,
                    format!(
                        "the root kind {} has an empty group (only Pod is in the core group)",
                        g.kind
                    ),
                    "set kind.group to the API group of the workload",
                ));
            }
        }
    }
    if root.owner_ref.is_some() {
        out.push(Finding::error(
            rn,
            "ownerRef",
            root.owner_ref.as_deref(),
            "the root component cannot have an ownerRef",
            "remove ownerRef from the root component",
        ));
    }
    if root.status_definition.is_none() {
        out.push(Finding::error(
            rn,
            "statusDefinition",
            None,
            "the root component has no statusDefinition",
            "add statusDefinition with statusMappings",
        ));
    }
}

/// Every component has a name of its own; each is checked on its own too. Returns the names.
fn validate_names<'a>(k: &'a Karta, out: &mut Vec<Finding>) -> BTreeSet<&'a str> {
    let mut names = BTreeSet::new();
    for c in k.components() {
        let cn = Some(c.name.as_str());
        if c.name.is_empty() {
            out.push(Finding::error(
                None,
                "name",
                None,
                "a component has an empty name",
                "give every component a unique name",
            ));
        } else if !names.insert(c.name.as_str()) {
            out.push(Finding::error(
                cn,
                "name",
                cn,
                format!("component name {:?} is used twice", c.name),
                "rename one of the components",
            ));
        }
        validate_component(c, out);
    }
    names
}

/// Every child names an existing parent, with no cycle; only the root reads status.
fn validate_owners(k: &Karta, names: &BTreeSet<&str>, out: &mut Vec<Finding>) {
    let parents: BTreeMap<&str, Option<&str>> = k
        .components()
        .map(|c| (c.name.as_str(), c.owner_ref.as_deref()))
        .collect();
    for c in &k.spec.structure_definition.child_components {
        let cn = Some(c.name.as_str());
        match c.owner_ref.as_deref() {
            None | Some("") => out.push(Finding::error(
                cn,
                "ownerRef",
                None,
                format!("child component {:?} has no ownerRef", c.name),
                "set ownerRef to the parent component's name",
            )),
            Some(p) if !parents.contains_key(p) => out.push(Finding::error(
                cn,
                "ownerRef",
                Some(p),
                format!("ownerRef {p:?} names no component"),
                format!(
                    "use one of: {}",
                    names.iter().copied().collect::<Vec<_>>().join(", ")
                ),
            )),
            Some(_) => {
                // Walk up; more steps than components means a cycle.
                let mut at = c.owner_ref.as_deref();
                let mut steps = 0;
                while let Some(p) = at {
                    steps += 1;
                    if p == c.name || steps > parents.len() {
                        out.push(Finding::error(
                            cn,
                            "ownerRef",
                            c.owner_ref.as_deref(),
                            format!("ownership cycle through {:?}", c.name),
                            "make every chain of ownerRefs end at the root",
                        ));
                        break;
                    }
                    at = parents.get(p).copied().flatten();
                }
            }
        }
        if c.status_definition.is_some() {
            out.push(Finding::warning(
                cn,
                "statusDefinition",
                None,
                "statusDefinition on a child component is not used for the workload status",
                "move it to the root component",
            ));
        }
    }
}

/// Reference names are jq variable names, each declared once.
fn validate_references(k: &Karta, out: &mut Vec<Finding>) {
    let mut refs = BTreeSet::new();
    for r in &k.spec.references {
        let ok = !r.name.is_empty()
            && r.name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
            && !r.name.starts_with(|ch: char| ch.is_ascii_digit());
        if !ok {
            out.push(Finding::error(
                None,
                "references",
                Some(&r.name),
                format!("reference name {:?} is not a jq variable name", r.name),
                "use letters, digits and _ (not starting with a digit)",
            ));
        }
        if !refs.insert(r.name.as_str()) {
            out.push(Finding::error(
                None,
                "references",
                Some(&r.name),
                format!("reference {:?} is declared twice", r.name),
                "rename one of them",
            ));
        }
    }
}

/// Short names are what kubectl accepts in a CRD's `shortNames`: lower case letters and
/// digits, starting with a letter.
fn validate_short_names(k: &Karta, out: &mut Vec<Finding>) {
    for n in &k.spec.short_names {
        let ok = n.starts_with(|ch: char| ch.is_ascii_lowercase())
            && n.chars()
                .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit());
        if !ok {
            out.push(Finding::error(
                None,
                "shortNames",
                Some(n),
                format!("short name {n:?} is not lower case letters and digits"),
                "use a name like `lws` or `vcjob`",
            ));
        }
    }
}

fn validate_component(c: &ComponentDefinition, out: &mut Vec<Finding>) {
    validate_spec_shape(c, out);
    validate_instances(c, out);
    validate_type_selector(c, out);
    validate_suspend(c, out);
    validate_status(c, out);
}

/// One spec shape, and metadataPath only beside podSpecPath.
fn validate_spec_shape(c: &ComponentDefinition, out: &mut Vec<Finding>) {
    let cn = Some(c.name.as_str());
    if let Some(s) = &c.spec_definition {
        if s.shape_count() > 1 {
            out.push(Finding::error(cn, "specDefinition", None, "more than one of podTemplateSpecPath, podSpecPath and fragmentedPodSpecDefinition is set", "keep exactly one spec shape"));
        }
        if s.metadata_path.is_some() && s.pod_spec_path.is_none() {
            out.push(Finding::warning(
                cn,
                "metadataPath",
                s.metadata_path.as_deref(),
                "metadataPath is only read together with podSpecPath",
                "add podSpecPath or remove metadataPath",
            ));
        }
        if s.shape_count() == 0 && s.metadata_path.is_none() {
            out.push(Finding::warning(
                cn,
                "specDefinition",
                None,
                "specDefinition is empty",
                "remove it or set a spec path",
            ));
        }
    }
}

/// instanceIdPath and componentInstanceSelector come together.
fn validate_instances(c: &ComponentDefinition, out: &mut Vec<Finding>) {
    let cn = Some(c.name.as_str());
    let has_ids = c.instance_id_path.is_some();
    let has_sel = c
        .pod_selector
        .as_ref()
        .and_then(|p| p.component_instance_selector.as_ref())
        .is_some();
    if has_ids && !has_sel {
        out.push(Finding::error(
            cn,
            "instanceIdPath",
            c.instance_id_path.as_deref(),
            "instanceIdPath is set but podSelector.componentInstanceSelector is not",
            "add podSelector.componentInstanceSelector.idPath reading the instance id from a pod",
        ));
    }
    if has_sel && !has_ids {
        out.push(Finding::error(
            cn,
            "componentInstanceSelector",
            None,
            "componentInstanceSelector is set but instanceIdPath is not",
            "add instanceIdPath yielding one id per instance",
        ));
    }
}

/// A componentTypeSelector says what to compare.
fn validate_type_selector(c: &ComponentDefinition, out: &mut Vec<Finding>) {
    let cn = Some(c.name.as_str());
    if let Some(t) = c
        .pod_selector
        .as_ref()
        .and_then(|p| p.component_type_selector.as_ref())
    {
        if t.key_path.is_none() && t.match_labels.as_ref().is_none_or(|m| m.is_empty()) {
            out.push(Finding::error(
                cn,
                "componentTypeSelector",
                None,
                "componentTypeSelector needs keyPath or matchLabels",
                "add keyPath (and value) or matchLabels",
            ));
        }
        if t.value.is_some() && t.key_path.is_none() {
            out.push(Finding::error(
                cn,
                "componentTypeSelector",
                t.value.as_deref(),
                "componentTypeSelector.value needs keyPath",
                "add keyPath",
            ));
        }
    }
}

/// Action values are JSON, and suspend comes with resume.
fn validate_suspend(c: &ComponentDefinition, out: &mut Vec<Finding>) {
    let cn = Some(c.name.as_str());
    if let Some(sd) = &c.suspend_definition {
        for a in sd.suspend_actions.iter().chain(&sd.resume_actions) {
            if serde_json::from_str::<serde_json::Value>(&a.value).is_err() {
                out.push(Finding::error(cn, "value", Some(&a.value), format!("action value {:?} is not JSON", a.value), "quote strings as JSON, e.g. '\"Suspended\"', and write true/false/numbers bare"));
            }
        }
        if sd.suspend_actions.is_empty() != sd.resume_actions.is_empty() {
            out.push(Finding::warning(
                cn,
                "suspendDefinition",
                None,
                "only one of suspendActions and resumeActions is set",
                "define both so a suspended workload can be resumed",
            ));
        }
    }
}

/// Status keys of the format (older ones warned about), matchers that can match, and the
/// phase or conditions definition each matcher needs.
fn validate_status(c: &ComponentDefinition, out: &mut Vec<Finding>) {
    let cn = Some(c.name.as_str());
    if let Some(st) = &c.status_definition {
        let m = &st.status_mappings;
        for (key, list) in [("pending", &m.pending), ("progressing", &m.progressing)] {
            if !list.is_empty() {
                out.push(Finding::warning(
                    cn,
                    key,
                    None,
                    format!("`{key}` is a status key of an older release of the format: read as `initializing`"),
                    "rename it `initializing` (or `running`, if that is what it means for this kind)",
                ));
            }
        }
        let all = [
            &m.pending,
            &m.progressing,
            &m.initializing,
            &m.running,
            &m.completed,
            &m.failed,
            &m.degraded,
            &m.suspended,
            &m.suspending,
            &m.resuming,
        ];
        if all.iter().all(|v| v.is_empty()) {
            out.push(Finding::warning(
                cn,
                "statusMappings",
                None,
                "no status mapping: every object will be Undefined",
                "map at least running, completed or failed",
            ));
        }
        for matcher in all.iter().flat_map(|v| v.iter()) {
            if matcher.by_phase.is_none()
                && matcher.by_conditions.is_empty()
                && matcher.by_expression.is_none()
            {
                out.push(Finding::error(
                    cn,
                    "statusMappings",
                    None,
                    "an empty status matcher matches everything",
                    "give it byPhase, byConditions or byExpression",
                ));
            }
            if matcher.by_phase.is_some() && st.phase_definition.is_none() {
                out.push(Finding::error(
                    cn,
                    "byPhase",
                    matcher.by_phase.as_deref(),
                    "byPhase is used but phaseDefinition is not set",
                    "add statusDefinition.phaseDefinition.path",
                ));
            }
            if !matcher.by_conditions.is_empty() && st.conditions_definition.is_none() {
                out.push(Finding::error(
                    cn,
                    "byConditions",
                    None,
                    "byConditions is used but conditionsDefinition is not set",
                    "add statusDefinition.conditionsDefinition.path",
                ));
            }
        }
    }
}

/// Sibling pod-bearing components must be told apart by their pods.
fn validate_siblings(k: &Karta, out: &mut Vec<Finding>) {
    let mut by_parent: BTreeMap<Option<&str>, Vec<&ComponentDefinition>> = BTreeMap::new();
    for c in k.components().filter(|c| c.has_pod_spec()) {
        by_parent.entry(c.owner_ref.as_deref()).or_default().push(c);
    }
    for sibs in by_parent.values().filter(|s| s.len() > 1) {
        for (i, a) in sibs.iter().enumerate() {
            let sel_a = a
                .pod_selector
                .as_ref()
                .and_then(|p| p.component_type_selector.as_ref());
            if sel_a.is_none() {
                let kind_unique = a.kind.as_ref().is_some_and(|ka| {
                    ka.kind != "Pod"
                        && sibs
                            .iter()
                            .filter(|b| b.kind.as_ref().map(|x| &x.kind) == Some(&ka.kind))
                            .count()
                            == 1
                });
                // wlmap's rule, not the format's (the Go implementation accepts it): a warning.
                // Its pods are then shown unattributed rather than guessed.
                if !kind_unique {
                    out.push(Finding::warning(Some(&a.name), "podSelector", None, format!("{:?} has pod-bearing siblings but no componentTypeSelector, so its pods cannot be told apart (they are shown unattributed)", a.name), "add podSelector.componentTypeSelector (keyPath/value or matchLabels)"));
                }
            }
            for b in &sibs[i + 1..] {
                let sel_b = b
                    .pod_selector
                    .as_ref()
                    .and_then(|p| p.component_type_selector.as_ref());
                if sel_a.is_some() && sel_a == sel_b {
                    out.push(Finding::warning(
                        Some(&b.name),
                        "componentTypeSelector",
                        None,
                        format!(
                            "{:?} and {:?} have the same componentTypeSelector",
                            a.name, b.name
                        ),
                        "give each sibling a selector value of its own",
                    ));
                }
            }
        }
    }
}

fn validate_gangs(k: &Karta, names: &BTreeSet<&str>, out: &mut Vec<Finding>) {
    let Some(g) = k
        .spec
        .optimization_instructions
        .as_ref()
        .and_then(|o| o.gang_scheduling.as_ref())
    else {
        return;
    };
    let mut group_names = BTreeSet::new();
    for pg in &g.pod_groups {
        if !group_names.insert(pg.name.as_str()) {
            out.push(Finding::error(
                None,
                "podGroups",
                Some(&pg.name),
                format!("pod group {:?} is defined twice", pg.name),
                "rename one of the groups",
            ));
        }
        for m in &pg.members {
            if !names.contains(m.component_name.as_str()) {
                out.push(Finding::error(
                    None,
                    "componentName",
                    Some(&m.component_name),
                    format!("gang member {:?} names no component", m.component_name),
                    "use a component name of this definition",
                ));
            }
        }
    }
    if !g.pod_groups.is_empty() {
        let used = if g.pod_group.is_some() {
            "podGroup is given too and is the one used"
        } else {
            "it is still read"
        };
        out.push(Finding::warning(
            None,
            "podGroups",
            None,
            format!("gangScheduling.podGroups is deprecated since Workload Map v0.2 ({used})"),
            "use gangScheduling.podGroup with subGroups",
        ));
    }
    if let Some(pg) = &g.pod_group {
        let mut seen = BTreeSet::new();
        for s in &pg.sub_groups {
            if !names.contains(s.component_name.as_str()) {
                out.push(Finding::error(
                    None,
                    "componentName",
                    Some(&s.component_name),
                    format!("sub-group {:?} names no component", s.component_name),
                    "use a component name of this definition",
                ));
            }
            if !seen.insert(s.component_name.as_str()) {
                out.push(Finding::error(
                    None,
                    "componentName",
                    Some(&s.component_name),
                    format!("sub-group {:?} is listed twice", s.component_name),
                    "list each component once",
                ));
            }
            let has_instances = k
                .components()
                .any(|c| c.name == s.component_name && c.instance_id_path.is_some());
            if s.instances_path.is_some() && !has_instances {
                out.push(Finding::error(
                    Some(&s.component_name),
                    "instancesPath",
                    s.instances_path.as_deref(),
                    format!(
                        "sub-group {:?} selects instances of a component without instanceIdPath",
                        s.component_name
                    ),
                    "give the component an instanceIdPath, or drop instancesPath",
                ));
            }
        }
        for t in pg
            .topology
            .iter()
            .chain(pg.sub_groups.iter().filter_map(|s| s.topology.as_ref()))
        {
            if t.required_topology_level.is_empty() && t.preferred_topology_level.is_empty() {
                out.push(Finding::warning(
                    None,
                    "topology",
                    Some(&t.topology_name),
                    "topology constraint without a required or preferred level",
                    "set requiredTopologyLevel or preferredTopologyLevel",
                ));
            }
        }
    }
}
