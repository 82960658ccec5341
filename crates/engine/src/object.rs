//! Kubernetes objects as the engine sees them: JSON plus a jaq value made once and shared.

use serde_json::Value;
use std::sync::Arc;
use wlmap_expr::Val;
use wlmap_json::Field;
use wlmap_schema::GroupVersionKind;

/// One Kubernetes object (workload, intermediate owner or pod).
///
/// The jaq value of the object is built on first use and then shared by every expression, so
/// an object is converted at most once however many expressions read it.
///
/// ```
/// let o = wlmap_engine::Object::new(serde_json::json!({
///     "apiVersion": "v1", "kind": "Pod",
///     "metadata": {"name": "p", "namespace": "ml", "uid": "u1"}}));
/// assert_eq!(o.name(), "p");
/// assert_eq!(o.gvk().kind, "Pod");
/// ```
#[derive(Clone)]
pub struct Object {
    json: Arc<Value>,
    val: Arc<std::sync::OnceLock<Val>>,
    // Read once: attribution asks it several times of every object.
    pod: bool,
}

impl std::fmt::Debug for Object {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.gvk(), self.name())
    }
}

impl Object {
    /// Wrap a JSON object.
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"kind": "Job"}));
    /// assert_eq!(o.kind(), "Job");
    /// ```
    pub fn new(json: Value) -> Self {
        let str_of = |k| json.field(k).and_then(Value::as_str);
        let pod = str_of("kind") == Some("Pod") && str_of("apiVersion") == Some("v1");
        Object {
            json: Arc::new(json),
            val: Arc::new(std::sync::OnceLock::new()),
            pod,
        }
    }

    /// The JSON.
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"kind": "Job"}));
    /// assert_eq!(o.json()["kind"], "Job");
    /// ```
    pub fn json(&self) -> &Value {
        &self.json
    }

    /// The jaq value (converted once).
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"a": 1}));
    /// assert_eq!(wlmap_expr::from_val(&o.val()), serde_json::json!({"a": 1}));
    /// ```
    pub fn val(&self) -> Val {
        self.val
            .get_or_init(|| wlmap_expr::to_val(&self.json))
            .clone()
    }

    /// The object as an expression input: its JSON, with the cache its jaq value goes into
    /// when an expression needs one.
    pub(crate) fn input(&self) -> wlmap_expr::Input<'_> {
        wlmap_expr::Input::json(&self.json, &self.val)
    }

    fn str_at(&self, a: &str, b: &str) -> &str {
        // `field`, not `get`: a linear scan of a small map beats hashing the key (this runs
        // for every object of an owner index and every pod attributed).
        self.json
            .field(a)
            .and_then(|m| m.field(b))
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// `metadata.name`.
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"metadata": {"name": "a"}}));
    /// assert_eq!(o.name(), "a");
    /// ```
    pub fn name(&self) -> &str {
        self.str_at("metadata", "name")
    }

    /// `metadata.namespace` (empty for cluster-scoped objects).
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"metadata": {"namespace": "ml"}}));
    /// assert_eq!(o.namespace(), "ml");
    /// ```
    pub fn namespace(&self) -> &str {
        self.str_at("metadata", "namespace")
    }

    /// `metadata.uid`.
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"metadata": {"uid": "x"}}));
    /// assert_eq!(o.uid(), "x");
    /// ```
    pub fn uid(&self) -> &str {
        self.str_at("metadata", "uid")
    }

    /// `kind`.
    ///
    /// ```
    /// assert_eq!(wlmap_engine::Object::new(serde_json::json!({"kind": "Pod"})).kind(), "Pod");
    /// ```
    pub fn kind(&self) -> &str {
        self.json
            .field("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// `apiVersion`.
    ///
    /// ```
    /// assert_eq!(wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1"})).api_version(), "v1");
    /// ```
    pub fn api_version(&self) -> &str {
        self.json
            .field("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// Group, version and kind.
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job"}));
    /// assert_eq!(o.gvk().group, "batch");
    /// ```
    pub fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::from_api_version(self.api_version(), self.kind())
    }

    /// `metadata.creationTimestamp`.
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}}));
    /// assert_eq!(o.creation_timestamp(), Some("2026-01-01T00:00:00Z"));
    /// ```
    pub fn creation_timestamp(&self) -> Option<&str> {
        self.json
            .field("metadata")
            .and_then(|m| m.field("creationTimestamp"))
            .and_then(Value::as_str)
    }

    /// A label's value.
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"metadata": {"labels": {"a": "b"}}}));
    /// assert_eq!(o.label("a"), Some("b"));
    /// ```
    pub fn label(&self, key: &str) -> Option<&str> {
        self.json
            .field("metadata")?
            .field("labels")?
            .field(key)?
            .as_str()
    }

    /// The owner reference that controls this object (`controller: true`), or the only one.
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"metadata": {"ownerReferences": [
    ///     {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u", "controller": true}]}}));
    /// assert_eq!(o.controller_uid(), Some("u"));
    /// ```
    pub fn controller_uid(&self) -> Option<&str> {
        let refs = self
            .json
            .field("metadata")?
            .field("ownerReferences")?
            .as_array()?;
        let pick = refs
            .iter()
            .find(|r| r.field("controller").and_then(Value::as_bool) == Some(true))
            .or_else(|| if refs.len() == 1 { refs.first() } else { None })?;
        pick.field("uid")?.as_str()
    }

    /// True for a Pod.
    ///
    /// ```
    /// assert!(wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod"})).is_pod());
    /// ```
    pub fn is_pod(&self) -> bool {
        self.pod
    }
}

/// Seconds since the Unix epoch of an RFC 3339 UTC timestamp (`2026-09-16T14:00:00Z`), as
/// Kubernetes writes `metadata.creationTimestamp`; None when it is not one.
///
/// ```
/// assert_eq!(wlmap_engine::unix_seconds("2026-09-16T14:00:00Z"), Some(1_789_567_200));
/// assert_eq!(wlmap_engine::unix_seconds("yesterday"), None);
/// ```
pub fn unix_seconds(ts: &str) -> Option<i64> {
    let b = ts.as_bytes();
    if b.len() < 19 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| ts.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    // Days from civil (Howard Hinnant's algorithm).
    let y2 = if m <= 2 { y - 1 } else { y };
    let era = if y2 >= 0 { y2 } else { y2 - 399 } / 400;
    let yoe = y2 - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    Some(days * 86400 + hh * 3600 + mm * 60 + ss)
}
