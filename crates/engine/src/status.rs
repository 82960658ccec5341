//! Status: every matching common status, one primary status, its reason and a trace.

use crate::definition::{Definition, Matcher, StatusRules};
use crate::error::Result;
use serde::Serialize;
use std::borrow::Cow;
use wlmap_expr::Val;
use wlmap_json::Field;

/// The common status vocabulary.
///
/// ```
/// use wlmap_engine::Phase;
/// assert!(Phase::Failed < Phase::Running); // ordered by precedence
/// assert_eq!(Phase::Suspended.to_string(), "Suspended");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Phase {
    /// Something failed for good.
    Failed,
    /// Finished successfully.
    Completed,
    /// Being suspended.
    Suspending,
    /// Being resumed.
    Resuming,
    /// Suspended.
    Suspended,
    /// Running with less than it asked for.
    Degraded,
    /// Running.
    Running,
    /// Starting.
    Initializing,
    /// No mapping matched.
    Undefined,
}

impl Phase {
    /// Every phase, in precedence order (the primary status is the first that matched).
    ///
    /// ```
    /// use wlmap_engine::Phase;
    /// assert_eq!(Phase::PRECEDENCE[0], Phase::Failed);
    /// assert_eq!(Phase::PRECEDENCE.last(), Some(&Phase::Undefined));
    /// ```
    pub const PRECEDENCE: [Phase; 9] = [
        Phase::Failed,
        Phase::Completed,
        Phase::Suspending,
        Phase::Resuming,
        Phase::Suspended,
        Phase::Degraded,
        Phase::Running,
        Phase::Initializing,
        Phase::Undefined,
    ];

    /// The name as printed (`Running`).
    ///
    /// ```
    /// assert_eq!(wlmap_engine::Phase::Degraded.as_str(), "Degraded");
    /// ```
    pub fn as_str(&self) -> &'static str {
        match self {
            Phase::Failed => "Failed",
            Phase::Completed => "Completed",
            Phase::Suspending => "Suspending",
            Phase::Resuming => "Resuming",
            Phase::Suspended => "Suspended",
            Phase::Degraded => "Degraded",
            Phase::Running => "Running",
            Phase::Initializing => "Initializing",
            Phase::Undefined => "Undefined",
        }
    }

    /// Parse a name (case-insensitive).
    ///
    /// ```
    /// assert_eq!(wlmap_engine::Phase::parse("running"), Some(wlmap_engine::Phase::Running));
    /// ```
    pub fn parse(s: &str) -> Option<Phase> {
        Self::PRECEDENCE
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(s))
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How one matcher evaluated (for `--explain`).
///
/// ```
/// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
/// let pod = wlmap_engine::Object::new(serde_json::json!({"kind": "Pod", "metadata": {"name": "p"}, "spec": {}, "status": {"phase": "Running"}}));
/// let w = wlmap_engine::resolve(&def, &pod).unwrap();
/// let t = &w.status.trace[0];
/// assert_eq!((t.status, t.index, t.matched), (wlmap_engine::Phase::Running, 0, true));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MatcherTrace {
    /// The status this matcher maps to.
    pub status: Phase,
    /// Index of the matcher in its list.
    pub index: usize,
    /// Whether every part matched.
    pub matched: bool,
    /// One line per part: what was expected and what was found.
    pub parts: Vec<String>,
}

/// A status rule that could not be evaluated (its expression failed: a type error, a budget
/// spent). The rule counts as not matched, and the status says so: its reason becomes
/// `StatusRuleFailed`, its message names the rule and the error.
///
/// ```
/// let f = wlmap_engine::RuleFailure { status: wlmap_engine::Phase::Failed, index: 1, error: "boom".into() };
/// assert_eq!(f.to_string(), "statusMappings.failed[1].byExpression: boom");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleFailure {
    /// The status the rule maps to.
    pub status: Phase,
    /// Index of the rule in that status's list.
    pub index: usize,
    /// The error.
    pub error: String,
}

impl std::fmt::Display for RuleFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "statusMappings.{}[{}].byExpression: {}",
            self.status.to_string().to_ascii_lowercase(),
            self.index,
            self.error
        )
    }
}

/// The reason a status carries when one of its rules failed.
pub const RULE_FAILED: &str = "StatusRuleFailed";

/// The status of a workload.
///
/// ```
/// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
/// let pod = wlmap_engine::Object::new(serde_json::json!({"kind": "Pod", "metadata": {"name": "p"}, "spec": {}, "status": {"phase": "Pending"}}));
/// let s = wlmap_engine::resolve(&def, &pod).unwrap().status;
/// assert_eq!(s.phase, wlmap_engine::Phase::Undefined); // the example maps only Running
/// assert_eq!(s.raw_phase.as_deref(), Some("Pending"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// The primary status: the first matched in [`Phase::PRECEDENCE`], or Undefined.
    pub phase: Phase,
    /// Every matched status, in precedence order (`[Undefined]` when none matched).
    pub phases: Vec<Phase>,
    /// Reason of the condition that decided the primary status, when a condition did.
    pub reason: Option<String>,
    /// Message of that condition.
    pub message: Option<String>,
    /// The raw phase string read by `phaseDefinition`, if any.
    pub raw_phase: Option<String>,
    /// How every matcher evaluated: filled by `resolve` and [`status_explained`],
    /// empty from [`status`] (which formats nothing, for callers that poll many workloads).
    pub trace: Vec<MatcherTrace>,
    /// The rules that could not be evaluated (always filled). When any did, the status is
    /// not to be trusted: `reason` is [`RULE_FAILED`] and `message` names the first.
    pub failures: Vec<RuleFailure>,
}

impl Status {
    /// The status of an object no rule matched.
    ///
    /// ```
    /// assert_eq!(wlmap_engine::Status::undefined().phase, wlmap_engine::Phase::Undefined);
    /// ```
    pub fn undefined() -> Status {
        Status {
            phase: Phase::Undefined,
            phases: vec![Phase::Undefined],
            reason: None,
            message: None,
            raw_phase: None,
            trace: vec![],
            failures: vec![],
        }
    }
}

/// A condition's field as text (strings as they are, anything else as JSON), borrowed when
/// it is a string: matchers compare many fields of many conditions.
fn field_str<'c>(c: &'c serde_json::Value, f: &str) -> Option<Cow<'c, str>> {
    c.field(f).map(|v| match v {
        serde_json::Value::String(s) => Cow::Borrowed(s.as_str()),
        other => Cow::Owned(other.to_string()),
    })
}

fn owned(s: Option<Cow<'_, str>>) -> Option<String> {
    s.map(Cow::into_owned)
}

/// Evaluate a definition's status rules on an object.
/// With `explain`, every matcher's evaluation is recorded in [`Status::trace`] (what
/// `describe` and `--explain` show); without, nothing is formatted.
pub(crate) fn evaluate(
    def: &Definition,
    root: &crate::Object,
    vars: &[Val],
    explain: bool,
) -> Result<Status> {
    let Some(rules) = &def.status else {
        return Ok(Status::undefined());
    };
    let comp = def.components[0].def.name.as_str();
    let raw_phase = match &rules.phase {
        Some(e) => def
            .outputs(e, root, vars, comp, "phaseDefinition.path")?
            .iter()
            .find(|o| !o.is_null())
            .map(|o| o.to_text().into_owned()),
        None => None,
    };
    // Conditions that are parts of the object are read in place, not copied.
    let mut conditions: Vec<Cow<serde_json::Value>> = Vec::new();
    if let Some(e) = &rules.conditions {
        for o in &def.outputs(e, root, vars, comp, "conditionsDefinition.path")? {
            add_condition(&mut conditions, o.to_json());
        }
    }
    let mut phases = Vec::new();
    let mut trace = Vec::new();
    let mut failures = Vec::new();
    let mut decided: Option<(Option<String>, Option<String>)> = None;
    for (phase, matchers) in &rules.mappings {
        for (index, m) in matchers.iter().enumerate() {
            let mut parts = explain.then(Vec::new);
            let mut failed = None;
            let (matched, cond) = eval_matcher(
                def,
                rules,
                m,
                root,
                vars,
                raw_phase.as_deref(),
                &conditions,
                &mut parts,
                &mut failed,
            );
            if let Some(error) = failed {
                failures.push(RuleFailure {
                    status: *phase,
                    index,
                    error,
                });
            }
            if matched && !phases.contains(phase) {
                phases.push(*phase);
                if decided.is_none() {
                    decided = Some(cond.map_or((None, None), |c| {
                        (
                            owned(field_str(c, &rules.reason_field)),
                            owned(field_str(c, &rules.message_field)),
                        )
                    }));
                }
            }
            if let Some(parts) = parts {
                trace.push(MatcherTrace {
                    status: *phase,
                    index,
                    matched,
                    parts,
                });
            }
        }
    }
    let (mut reason, mut message) = decided.unwrap_or((None, None));
    if let Some(first) = failures.first() {
        reason = Some(RULE_FAILED.into());
        let more = match failures.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        message = Some(format!("{first}{more}"));
    }
    if phases.is_empty() {
        phases.push(Phase::Undefined);
    }
    Ok(Status {
        phase: phases[0],
        phases,
        reason,
        message,
        raw_phase,
        trace,
        failures,
    })
}

/// A list of conditions is spread, a single one kept, null skipped.
fn add_condition<'a>(list: &mut Vec<Cow<'a, serde_json::Value>>, v: Cow<'a, serde_json::Value>) {
    use serde_json::Value as J;
    match v {
        Cow::Borrowed(J::Array(a)) => list.extend(a.iter().map(Cow::Borrowed)),
        Cow::Owned(J::Array(a)) => list.extend(a.into_iter().map(Cow::Owned)),
        Cow::Borrowed(J::Null) | Cow::Owned(J::Null) => {}
        other => list.push(other),
    }
}

/// Whether a matcher matches, and the condition that decided it; with `parts`, what each
/// part of the matcher saw (for the trace); `failed` gets the error of an expression that
/// could not be evaluated (the matcher then does not match).
#[allow(clippy::too_many_arguments)] // the evaluation's context, passed down as is
fn eval_matcher<'c>(
    def: &Definition,
    rules: &StatusRules,
    m: &Matcher,
    root: &crate::Object,
    vars: &[Val],
    raw_phase: Option<&str>,
    conditions: &'c [Cow<'c, serde_json::Value>],
    parts: &mut Option<Vec<String>>,
    failed: &mut Option<String>,
) -> (bool, Option<&'c serde_json::Value>) {
    let mut ok = true;
    let mut decisive = None;
    if let Some(want) = &m.def.by_phase {
        let hit = raw_phase == Some(want.as_str());
        if let Some(parts) = parts {
            parts.push(format!(
                "byPhase {want:?}: phase is {:?} -> {}",
                raw_phase.unwrap_or("<none>"),
                hit
            ));
        }
        ok &= hit;
    }
    for ec in &m.def.by_conditions {
        let found = conditions
            .iter()
            .map(|c| &**c)
            .find(|c| field_str(c, &rules.type_field).as_deref() == Some(ec.type_.as_str()));
        let hit = match (ec.status.as_deref(), found) {
            (Some("Absent"), f) => f.is_none(),
            (_, None) => false,
            (s, Some(c)) => {
                s.is_none_or(|s| field_str(c, &rules.status_field).as_deref() == Some(s))
                    && ec.reason.as_ref().is_none_or(|r| {
                        field_str(c, &rules.reason_field).as_deref() == Some(r.as_str())
                    })
            }
        };
        if let Some(parts) = parts {
            let seen = found.map_or("absent".to_string(), |c| {
                format!(
                    "status={} reason={}",
                    field_str(c, &rules.status_field).unwrap_or_default(),
                    field_str(c, &rules.reason_field).unwrap_or_default()
                )
            });
            parts.push(format!(
                "byConditions {} status={} reason={}: found {} -> {}",
                ec.type_,
                ec.status.as_deref().unwrap_or("*"),
                ec.reason.as_deref().unwrap_or("*"),
                seen,
                hit
            ));
        }
        if hit && decisive.is_none() {
            decisive = found;
        }
        ok &= hit;
    }
    if let (Some(bx), Some(e)) = (&m.def.by_expression, &m.expression) {
        match def.outputs(e, root, vars, &def.components[0].def.name, &m.field) {
            Ok(out) => {
                let got = out.first().map(wlmap_expr::Output::to_text);
                let hit = got.as_deref() == Some(bx.expected_result.as_str());
                if let Some(parts) = parts {
                    parts.push(format!(
                        "byExpression `{}` = {:?}, expected {:?} -> {}",
                        bx.expression,
                        got.as_deref().unwrap_or("<no output>"),
                        bx.expected_result,
                        hit
                    ));
                }
                ok &= hit;
            }
            Err(err) => {
                if let Some(parts) = parts {
                    parts.push(format!(
                        "byExpression `{}` failed: {err} -> false",
                        bx.expression
                    ));
                }
                *failed = Some(err.to_string());
                ok = false;
            }
        }
    }
    (ok, decisive)
}

/// The status of a workload object alone (no tree, no resources): what a dashboard polling
/// many workloads needs.
///
/// ```
/// let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
/// let pod = wlmap_engine::Object::new(serde_json::json!({"status": {"phase": "Running"}}));
/// assert_eq!(wlmap_engine::status(&def, &pod).unwrap().phase, Phase::Running);
/// # use wlmap_engine::Phase;
/// ```
pub fn status(def: &Definition, obj: &crate::Object) -> Result<Status> {
    let vars = vec![Val::Null; 1 + def.references.len()];
    // Plain paths and the native subset read the JSON: no conversion of the object.
    evaluate(def, obj, &vars, false)
}

/// [`status`] with [`Status::trace`] filled: what every matcher saw (for `describe` and
/// `--explain`; `resolve` fills it too).
///
/// ```
/// let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
/// let pod = wlmap_engine::Object::new(serde_json::json!({"status": {"phase": "Running"}}));
/// let s = wlmap_engine::status_explained(&def, &pod).unwrap();
/// assert!(s.trace.iter().any(|t| t.matched));
/// assert!(wlmap_engine::status(&def, &pod).unwrap().trace.is_empty());
/// ```
pub fn status_explained(def: &Definition, obj: &crate::Object) -> Result<Status> {
    let vars = vec![Val::Null; 1 + def.references.len()];
    evaluate(def, obj, &vars, true)
}
