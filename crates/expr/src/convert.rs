//! Conversion between serde_json values and jaq values.

use jaq_json::{Num, Val};
use serde_json::Value;

/// Convert a JSON value into a jaq value (done once per object, then shared).
///
/// ```
/// let v = wlmap_expr::to_val(&serde_json::json!({"a": [1, "x"]}));
/// assert_eq!(wlmap_expr::from_val(&v), serde_json::json!({"a": [1, "x"]}));
/// ```
pub fn to_val(v: &Value) -> Val {
    // A direct walk: the same values as jaq-json's serde `Deserialize` (integers as integers,
    // other numbers as floats, strings as text), without a visitor per node.
    match v {
        Value::Null => Val::Null,
        Value::Bool(b) => Val::Bool(*b),
        Value::Number(n) => Val::Num(if let Some(i) = n.as_i64() {
            Num::from_integral(i)
        } else if let Some(u) = n.as_u64() {
            Num::from_integral(u)
        } else {
            Num::Float(n.as_f64().unwrap_or(f64::NAN))
        }),
        Value::String(s) => Val::utf8_str(s.clone().into_bytes()),
        Value::Array(a) => a.iter().map(to_val).collect(),
        Value::Object(m) => {
            let mut out = jaq_json::Map::with_capacity_and_hasher(m.len(), Default::default());
            for (k, v) in m {
                out.insert(Val::utf8_str(k.clone().into_bytes()), to_val(v));
            }
            Val::obj(out)
        }
    }
}

/// The conversion jaq-json's serde support does, kept as the reference for [`to_val`].
#[cfg(test)]
pub(crate) fn to_val_by_serde(v: &Value) -> Val {
    use serde::Deserialize;
    Val::deserialize(v).unwrap_or(Val::Null)
}

/// Convert a jaq value back into JSON. Non-finite numbers become null, non-string keys are
/// printed, byte strings are read as UTF-8 (lossily).
///
/// ```
/// let v = wlmap_expr::to_val(&serde_json::json!(1.5));
/// assert_eq!(wlmap_expr::from_val(&v), serde_json::json!(1.5));
/// ```
pub fn from_val(v: &Val) -> Value {
    match v {
        Val::Null => Value::Null,
        Val::Bool(b) => Value::Bool(*b),
        Val::Num(n) => num_to_json(n),
        Val::TStr(b) | Val::BStr(b) => Value::String(String::from_utf8_lossy(b).into_owned()),
        Val::Arr(a) => Value::Array(a.iter().map(from_val).collect()),
        Val::Obj(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (key_string(k), from_val(v)))
                .collect(),
        ),
    }
}

fn key_string(k: &Val) -> String {
    match k {
        Val::TStr(b) | Val::BStr(b) => String::from_utf8_lossy(b).into_owned(),
        other => from_val(other).to_string(),
    }
}

fn num_to_json(n: &Num) -> Value {
    match n {
        Num::Int(i) => Value::from(*i as i64),
        Num::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        other => {
            let s = other.to_string();
            s.parse::<i64>()
                .map(Value::from)
                .or_else(|_| s.parse::<u64>().map(Value::from))
                .ok()
                .or_else(|| {
                    s.parse::<f64>()
                        .ok()
                        .and_then(serde_json::Number::from_f64)
                        .map(Value::Number)
                })
                .unwrap_or(Value::Null)
        }
    }
}

/// jq's `tostring`: strings as they are, everything else as compact JSON.
///
/// ```
/// use wlmap_expr::{to_val, to_jq_string};
/// assert_eq!(to_jq_string(&to_val(&serde_json::json!("a"))), "a");
/// assert_eq!(to_jq_string(&to_val(&serde_json::json!(true))), "true");
/// ```
pub fn to_jq_string(v: &Val) -> String {
    match v {
        Val::TStr(b) | Val::BStr(b) => String::from_utf8_lossy(b).into_owned(),
        other => from_val(other).to_string(),
    }
}
