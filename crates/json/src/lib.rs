//! # wlmap-json
//!
//! [`Field`]: the field lookup every layer of wlmap does on Kubernetes objects as
//! `serde_json::Value`, tuned for their maps (a few to a few dozen keys). The plain-path walk
//! and the native evaluator of `wlmap-expr` read objects with it, and so does the engine when
//! it reads the metadata of pods and owners.

use serde_json::Value;

/// Field lookup tuned for the small maps Kubernetes objects are made of: a map of up to 32
/// entries is scanned in order (a handful of short string compares), a larger one is hashed.
/// `serde_json::Value::get` always hashes the key (SipHash), about twice as slow on a pod's
/// maps; attribution reads a dozen fields of every pod.
///
/// ```
/// use wlmap_json::Field;
/// let pod = serde_json::json!({"kind": "Pod", "status": {"phase": "Running"}});
/// assert_eq!(pod.field("status").and_then(|s| s.field("phase")), Some(&serde_json::json!("Running")));
/// assert_eq!(pod.field("spec"), None);
/// assert_eq!(serde_json::json!([1]).field("kind"), None);
/// ```
pub trait Field {
    /// The value at `key` of an object; `None` for a missing key or a value of another type.
    fn field(&self, key: &str) -> Option<&Value>;
}

/// Byte equality for map keys: Kubernetes keys are mostly 4 to 16 bytes, which two overlapping
/// word loads compare without a call to `memcmp` (callgrind put that call at 15 % of
/// attributing pods, most of it for keys that match).
#[inline(always)]
fn key_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if (8..=16).contains(&n) {
        let w = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().unwrap_or([0; 8]));
        return w(a, 0) == w(b, 0) && w(a, n - 8) == w(b, n - 8);
    }
    if (4..8).contains(&n) {
        let w = |s: &[u8], i: usize| u32::from_le_bytes(s[i..i + 4].try_into().unwrap_or([0; 4]));
        return w(a, 0) == w(b, 0) && w(a, n - 4) == w(b, n - 4);
    }
    a == b
}

impl Field for Value {
    // Inlinable in every crate that reads objects: the lookup is a loop of a few compares,
    // and a call per field read costs as much as the lookup on small maps.
    #[inline]
    fn field(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(m) if m.len() <= 32 => {
                let key = key.as_bytes();
                m.iter()
                    .find(|(k, _)| key_eq(k.as_bytes(), key))
                    .map(|(_, v)| v)
            }
            Value::Object(m) => m.get(key),
            _ => None,
        }
    }
}

#[cfg(test)]
mod key_eq_tests {
    use super::key_eq;

    #[test]
    fn key_eq_is_byte_equality_at_every_length_and_position() {
        for n in 0..=24usize {
            let a: Vec<u8> = (0..n as u8).map(|i| b'a' + i).collect();
            assert!(key_eq(&a, &a.clone()), "equal, length {n}");
            // One byte different, at each position: the overlapping word loads must see it.
            for i in 0..n {
                let mut b = a.clone();
                b[i] ^= 0x20;
                assert!(!key_eq(&a, &b), "length {n}, byte {i} differs");
            }
            let mut longer = a.clone();
            longer.push(b'z');
            assert!(
                !key_eq(&a, &longer) && !key_eq(&longer, &a),
                "lengths {n} and {}",
                n + 1
            );
        }
    }
}
