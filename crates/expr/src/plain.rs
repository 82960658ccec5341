//! Plain paths (`.status.phase`, `.metadata.labels["app.kubernetes.io/name"]`, `.spec.items[]?`)
//! evaluated by walking the value, without the jq interpreter: most expressions in definitions
//! are of this form, and a walk costs a few map lookups where an interpreted run costs a
//! context, a budget and boxed iterators. Anything else returns `None` from [`parse`] and runs
//! in jaq. The answers are the same as jaq's, errors included (a property test checks).

use jaq_json::Val;
use wlmap_json::Field;

/// One step of a plain path; `bool` = followed by `?` (errors of this step yield nothing).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    Key(String, bool),
    Index(usize, bool),
    Iter(bool),
}

const KEYWORDS: &[&str] = &[
    "and", "or", "not", "if", "then", "elif", "else", "end", "as", "def", "reduce", "foreach",
    "try", "catch", "label", "import", "include", "__loc__",
];

/// Longest plain path walked natively (Kubernetes paths have a dozen steps).
const MAX_STEPS: usize = 64;

/// The steps of a plain path or of a pipe of plain paths (`.spec.services | .[] | .labels`,
/// the same walk as `.spec.services[].labels`), or `None` when the text is anything else.
pub(crate) fn parse(text: &str) -> Option<Vec<Step>> {
    let mut in_string = false;
    let mut segments = text.split(|c| {
        in_string ^= c == '"';
        c == '|' && !in_string
    });
    let first = segments.next()?;
    let mut steps = parse_path(first)?;
    for segment in segments {
        steps.extend(parse_path(segment)?);
        if steps.len() > MAX_STEPS {
            return None;
        }
    }
    Some(steps)
}

/// The steps of one plain path.
fn parse_path(text: &str) -> Option<Vec<Step>> {
    let s = text.trim();
    let b = s.as_bytes();
    if b.first() != Some(&b'.') {
        return None;
    }
    let mut steps = Vec::new();
    let mut i = 1;
    let mut need_dot = false; // after a step, the next one starts with `.` or `[`
    while i < b.len() {
        let c = b[i];
        if c == b'.' && need_dot {
            i += 1;
            if i >= b.len() || b[i] == b'[' {
                return None; // `.a.` or `.a.["b"]`: leave to jaq
            }
        }
        let c = b[i];
        let step = if c == b'[' {
            let close = s[i..].find(']')? + i;
            let inner = &s[i + 1..close];
            i = close + 1;
            if inner.is_empty() {
                Step::Iter(false)
            } else if let Some(key) = inner.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
                if key.contains(['"', '\\']) {
                    return None;
                }
                Step::Key(key.to_string(), false)
            } else if inner.bytes().all(|d| d.is_ascii_digit()) && inner.len() < 9 {
                Step::Index(inner.parse().ok()?, false)
            } else {
                return None;
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let end = s[i..]
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                .map_or(s.len(), |e| e + i);
            let ident = &s[i..end];
            if KEYWORDS.contains(&ident) {
                return None;
            }
            i = end;
            Step::Key(ident.to_string(), false)
        } else {
            return None;
        };
        let mut step = step;
        if b.get(i) == Some(&b'?') {
            i += 1;
            match &mut step {
                Step::Key(_, o) | Step::Index(_, o) | Step::Iter(o) => *o = true,
            }
        }
        steps.push(step);
        if steps.len() > MAX_STEPS {
            return None; // the walk recurses per step: leave very long paths to jaq
        }
        need_dot = true;
        if i < b.len() && b[i] != b'.' && b[i] != b'[' {
            return None;
        }
    }
    Some(steps)
}

/// jaq's own error for a step that cannot apply to `v` (so messages match jaq's to the byte,
/// number formatting included).
fn step_error(step: &Step, v: &Val) -> String {
    use jaq_core::ValT;
    let err = match step {
        Step::Key(k, _) => v.clone().index(&Val::from(k.clone())).err(),
        Step::Index(n, _) => v.clone().index(&Val::from(*n)).err(),
        Step::Iter(_) => v.clone().values().find_map(Result::err),
    };
    err.map_or_else(
        || format!("cannot apply a path step to {v}"),
        |e| e.to_string(),
    )
}

/// Walk the steps depth first, like jq: outputs in jq's order, and an error only if it comes
/// before `take` outputs.
pub(crate) fn eval(steps: &[Step], input: &Val, take: usize) -> Result<Vec<Val>, String> {
    let mut out = Vec::new();
    walk(steps, input, take, &mut out)?;
    Ok(out)
}

fn walk(steps: &[Step], v: &Val, take: usize, out: &mut Vec<Val>) -> Result<(), String> {
    if out.len() >= take {
        return Ok(());
    }
    let Some((step, rest)) = steps.split_first() else {
        out.push(v.clone());
        return Ok(());
    };
    match (step, v) {
        (Step::Key(_, _) | Step::Index(_, _), Val::Null) => walk(rest, &Val::Null, take, out),
        (Step::Key(k, _), Val::Obj(m)) => match m.get(&Val::from(k.clone())) {
            Some(c) => walk(rest, c, take, out),
            None => walk(rest, &Val::Null, take, out),
        },
        // jaq: an object indexed by a number has no such key.
        (Step::Index(_, _), Val::Obj(_)) => walk(rest, &Val::Null, take, out),
        (Step::Index(n, _), Val::Arr(a)) => match a.get(*n) {
            Some(c) => walk(rest, c, take, out),
            None => walk(rest, &Val::Null, take, out),
        },
        (Step::Iter(_), Val::Arr(a)) => a.iter().try_for_each(|c| walk(rest, c, take, out)),
        (Step::Iter(_), Val::Obj(m)) => m.values().try_for_each(|c| walk(rest, c, take, out)),
        (Step::Key(_, true) | Step::Index(_, true) | Step::Iter(true), _) => Ok(()),
        // jaq's messages, word for word.
        (step, _) => Err(step_error(step, v)),
    }
}

/// The paths a plain path designates in a JSON value (jq's `path(...)`), as arrays of keys and
/// indices: the walk of [`eval_json`] (same outputs, same errors), recording where it went.
pub(crate) fn paths_json(
    steps: &[Step],
    input: &serde_json::Value,
    take: usize,
) -> Result<Vec<serde_json::Value>, String> {
    let mut out = Vec::new();
    let mut at = Vec::new();
    walk_paths(steps, input, take, &mut at, &mut out)?;
    Ok(out)
}

fn walk_paths(
    steps: &[Step],
    v: &serde_json::Value,
    take: usize,
    at: &mut Vec<serde_json::Value>,
    out: &mut Vec<serde_json::Value>,
) -> Result<(), String> {
    use serde_json::Value as J;
    const NULL: J = J::Null;
    if out.len() >= take {
        return Ok(());
    }
    let Some((step, rest)) = steps.split_first() else {
        out.push(J::Array(at.clone()));
        return Ok(());
    };
    let down = |key: J, child: &J, at: &mut Vec<J>, out: &mut Vec<J>| {
        at.push(key);
        let r = walk_paths(rest, child, take, at, out);
        at.pop();
        r
    };
    match (step, v) {
        (Step::Key(k, _), J::Null | J::Object(_)) => {
            down(J::from(k.as_str()), v.field(k).unwrap_or(&NULL), at, out)
        }
        (Step::Index(n, _), J::Null | J::Object(_)) => down(J::from(*n), &NULL, at, out),
        (Step::Index(n, _), J::Array(a)) => down(J::from(*n), a.get(*n).unwrap_or(&NULL), at, out),
        (Step::Iter(_), J::Array(a)) => {
            for (i, c) in a.iter().enumerate() {
                down(J::from(i), c, at, out)?;
            }
            Ok(())
        }
        (Step::Iter(_), J::Object(m)) => {
            for (k, c) in m {
                down(J::from(k.as_str()), c, at, out)?;
            }
            Ok(())
        }
        (Step::Key(_, true) | Step::Index(_, true) | Step::Iter(true), _) => Ok(()),
        // Errors are rare: convert the value so the message is jaq's.
        (step, _) => Err(step_error(step, &crate::to_val(v))),
    }
}

/// [`eval_json`] without converting the outputs: references into the input.
pub(crate) fn refs_json<'a>(
    steps: &[Step],
    input: &'a serde_json::Value,
    take: usize,
) -> Result<Vec<&'a serde_json::Value>, String> {
    let mut out = Vec::new();
    walk_refs(steps, input, take, &mut out)?;
    Ok(out)
}

fn walk_refs<'a>(
    steps: &[Step],
    v: &'a serde_json::Value,
    take: usize,
    out: &mut Vec<&'a serde_json::Value>,
) -> Result<(), String> {
    use serde_json::Value as J;
    const NULL: &J = &J::Null;
    if out.len() >= take {
        return Ok(());
    }
    let Some((step, rest)) = steps.split_first() else {
        out.push(v);
        return Ok(());
    };
    match (step, v) {
        (Step::Key(_, _) | Step::Index(_, _), J::Null) => walk_refs(rest, NULL, take, out),
        (Step::Key(k, _), j @ J::Object(_)) => {
            walk_refs(rest, j.field(k).unwrap_or(NULL), take, out)
        }
        (Step::Index(_, _), J::Object(_)) => walk_refs(rest, NULL, take, out),
        (Step::Index(n, _), J::Array(a)) => walk_refs(rest, a.get(*n).unwrap_or(NULL), take, out),
        (Step::Iter(_), J::Array(a)) => a.iter().try_for_each(|c| walk_refs(rest, c, take, out)),
        (Step::Iter(_), J::Object(m)) => m.values().try_for_each(|c| walk_refs(rest, c, take, out)),
        (Step::Key(_, true) | Step::Index(_, true) | Step::Iter(true), _) => Ok(()),
        (step, _) => Err(step_error(step, &crate::to_val(v))),
    }
}
