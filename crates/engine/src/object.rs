//! Kubernetes objects as the engine sees them: JSON plus a jaq value made once and shared.
//! An object may be held *packed*: as its compact JSON text, parsed again when read.

use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
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
    inner: Arc<Inner>,
}

struct Inner {
    /// What a packed object keeps besides its parsed JSON ([`Object::packed`]), shared by
    /// its released copies.
    packed: Option<Arc<Packed>>,
    json: OnceLock<Value>,
    val: OnceLock<Val>,
    // Read once: attribution asks it several times of every object.
    pod: bool,
}

/// A packed object's compact JSON text (what its JSON is parsed from again once released),
/// what identifies it (read without parsing the text), and the count it belongs to.
struct Packed {
    text: Box<str>,
    ids: Ids,
    packing: Packing,
}

/// The fields that identify an object ([`Object::id_in`]), which the inventory's indexes and
/// walks read of every object they pass.
#[derive(Clone, Copy)]
enum Id {
    ApiVersion,
    Kind,
    Name,
    Namespace,
    Uid,
    ControllerUid,
    /// The controller owner reference's apiVersion and kind (`""` when it has none).
    ControllerApiVersion,
    ControllerKind,
    Created,
}

const IDS: [Id; 9] = [
    Id::ApiVersion,
    Id::Kind,
    Id::Name,
    Id::Namespace,
    Id::Uid,
    Id::ControllerUid,
    Id::ControllerApiVersion,
    Id::ControllerKind,
    Id::Created,
];

/// An object's [`Id`]s in one string: where each ends, and which are present.
struct Ids {
    all: Box<str>,
    ends: [u32; IDS.len()],
    present: u16,
}

impl Ids {
    fn of(json: &Value) -> Ids {
        let (mut all, mut ends, mut present) = (String::new(), [0u32; IDS.len()], 0u16);
        for (i, id) in IDS.iter().enumerate() {
            if let Some(text) = Object::id_in(json, *id) {
                all.push_str(text);
                present |= 1 << i;
            }
            ends[i] = u32::try_from(all.len()).unwrap_or(u32::MAX);
        }
        Ids {
            all: all.into_boxed_str(),
            ends,
            present,
        }
    }

    fn get(&self, id: Id) -> Option<&str> {
        let i = id as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        (self.present & (1 << i) != 0)
            .then(|| self.all.get(start..self.ends[i] as usize))
            .flatten()
    }
}

/// Packed objects counted together (those of one inventory): how many of them hold their
/// parsed JSON now, what releasing them ([`Object::released`]) would give back.
///
/// ```
/// use wlmap_engine::{Object, Packing};
/// let packing = Packing::default();
/// let o = Object::new(serde_json::json!({"kind": "Job"})).packed(&packing);
/// assert_eq!(packing.parsed(), 1); // packed, its JSON still held
/// let released = o.released().unwrap();
/// drop(o);
/// assert_eq!(packing.parsed(), 0);
/// assert_eq!(released.kind(), "Job"); // what identifies it is read without parsing
/// assert_eq!(packing.parsed(), 0);
/// assert_eq!(released.json()["kind"], "Job"); // its JSON: parsed again
/// assert_eq!(packing.parsed(), 1);
/// ```
#[derive(Clone, Default, Debug)]
pub struct Packing(Arc<AtomicUsize>);

impl Packing {
    /// How many of these packed objects hold their parsed JSON now.
    pub fn parsed(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    fn add(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Deeper than this, a value is not packed: serde_json reads at most 128 levels back.
const MAX_PACKED_DEPTH: usize = 100;

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(packed) = &self.packed
            && self.json.get().is_some()
        {
            packed.packing.0.fetch_sub(1, Ordering::Relaxed);
        }
    }
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
            inner: Arc::new(Inner {
                packed: None,
                json: OnceLock::from(json),
                val: OnceLock::new(),
                pod,
            }),
        }
    }

    /// The same object held packed, counted in `packing`: its compact JSON text is kept, and
    /// its parsed JSON only until [`Object::released`] lets it go (then it is parsed again
    /// when read). Why: a JSON value takes about eight times the bytes of its text (a map
    /// entry alone is 104 bytes), and a long-running inventory reads most of its objects
    /// rarely. An object packed already (counted where it was packed), or too deep to be read
    /// back (over 100 levels), stays as it is.
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"kind": "Job", "spec": {"parallelism": 2}}));
    /// let packed = o.clone().packed(&Default::default());
    /// assert!(packed.is_packed() && !o.is_packed());
    /// let released = packed.released().unwrap();
    /// assert_eq!(released.json(), o.json()); // parsed again, the same JSON
    /// ```
    pub fn packed(self, packing: &Packing) -> Object {
        if self.is_packed() || deeper_than(self.json(), MAX_PACKED_DEPTH) {
            return self;
        }
        let pod = self.inner.pod;
        let val = self.inner.val.get().cloned();
        let json = match Arc::try_unwrap(self.inner) {
            Ok(mut inner) => inner.json.take().unwrap_or_default(),
            Err(shared) => shared.json.get().cloned().unwrap_or_default(),
        };
        let packed = Packed {
            text: serde_json::to_string(&json).unwrap_or_default().into(),
            ids: Ids::of(&json),
            packing: packing.clone(),
        };
        packing.add();
        Object {
            inner: Arc::new(Inner {
                packed: Some(Arc::new(packed)),
                json: OnceLock::from(json),
                val: val.map(OnceLock::from).unwrap_or_default(),
                pod,
            }),
        }
    }

    /// A packed object whose JSON is parsed, without it: a copy holding the text alone (the
    /// JSON is parsed again when read). `None` when the object is not packed or holds its
    /// text alone already.
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"kind": "Job"}));
    /// assert!(o.released().is_none()); // not packed
    /// let released = o.packed(&Default::default()).released().unwrap();
    /// assert!(released.released().is_none()); // nothing left to let go
    /// assert_eq!(released.kind(), "Job");
    /// ```
    pub fn released(&self) -> Option<Object> {
        let packed = self.inner.packed.as_ref()?;
        self.inner.json.get()?;
        Some(Object {
            inner: Arc::new(Inner {
                packed: Some(packed.clone()),
                json: OnceLock::new(),
                val: OnceLock::new(),
                pod: self.inner.pod,
            }),
        })
    }

    /// Let go of this packed object's parsed JSON in place ([`Object::released`]); nothing
    /// changes when it is not packed or holds its text alone already.
    ///
    /// ```
    /// let mut o = wlmap_engine::Object::new(serde_json::json!({"kind": "Job"})).packed(&Default::default());
    /// assert!(o.is_parsed());
    /// o.release();
    /// assert!(!o.is_parsed());
    /// assert_eq!(o.kind(), "Job");
    /// ```
    pub fn release(&mut self) {
        if let Some(released) = self.released() {
            *self = released;
        }
    }

    /// True when the object is held packed ([`Object::packed`]).
    ///
    /// ```
    /// assert!(!wlmap_engine::Object::new(serde_json::json!({})).is_packed());
    /// ```
    pub fn is_packed(&self) -> bool {
        self.inner.packed.is_some()
    }

    /// True when the object holds its parsed JSON (an object not packed always does).
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"kind": "Job"}));
    /// let released = o.packed(&Default::default()).released().unwrap();
    /// assert!(!released.is_parsed());
    /// assert_eq!(released.json()["kind"], "Job");
    /// assert!(released.is_parsed());
    /// ```
    pub fn is_parsed(&self) -> bool {
        self.inner.json.get().is_some()
    }

    /// Same JSON? Two packed objects compare their texts (equal texts are equal JSON; a
    /// difference in key order alone reads as different).
    ///
    /// ```
    /// let p = wlmap_engine::Packing::default();
    /// let a = wlmap_engine::Object::new(serde_json::json!({"kind": "Job"})).packed(&p);
    /// let b = wlmap_engine::Object::new(serde_json::json!({"kind": "Job"})).packed(&p);
    /// assert!(a.same_json(&b));
    /// assert!(!a.same_json(&wlmap_engine::Object::new(serde_json::json!({"kind": "Pod"}))));
    /// ```
    pub fn same_json(&self, other: &Object) -> bool {
        match (&self.inner.packed, &other.inner.packed) {
            (Some(a), Some(b)) => a.text == b.text,
            _ => self.json() == other.json(),
        }
    }

    /// The JSON.
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"kind": "Job"}));
    /// assert_eq!(o.json()["kind"], "Job");
    /// ```
    pub fn json(&self) -> &Value {
        self.inner.json.get_or_init(|| {
            let Some(packed) = &self.inner.packed else {
                return Value::Null; // an object not packed holds its JSON from the start
            };
            packed.packing.add();
            // The text was written from a JSON value no deeper than serde_json reads
            // (`packed`), so it reads back; `null` is never reached.
            serde_json::from_str(&packed.text).unwrap_or_default()
        })
    }

    /// The jaq value (converted once).
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"a": 1}));
    /// assert_eq!(wlmap_expr::from_val(&o.val()), serde_json::json!({"a": 1}));
    /// ```
    pub fn val(&self) -> Val {
        self.inner
            .val
            .get_or_init(|| wlmap_expr::to_val(self.json()))
            .clone()
    }

    /// The object as an expression input: its JSON, with the cache its jaq value goes into
    /// when an expression needs one.
    pub(crate) fn input(&self) -> wlmap_expr::Input<'_> {
        wlmap_expr::Input::json(self.json(), &self.inner.val)
    }

    /// One of the fields that identify an object, read from its JSON.
    fn id_in(json: &Value, id: Id) -> Option<&str> {
        // `field`, not `get`: a linear scan of a small map beats hashing the key (this runs
        // for every object of an owner index and every pod attributed).
        let meta = |k| json.field("metadata")?.field(k)?.as_str();
        match id {
            Id::ApiVersion => json.field("apiVersion")?.as_str(),
            Id::Kind => json.field("kind")?.as_str(),
            Id::Name => meta("name"),
            Id::Namespace => meta("namespace"),
            Id::Uid => meta("uid"),
            Id::Created => meta("creationTimestamp"),
            Id::ControllerUid => Object::controller_ref_in(json)?.field("uid")?.as_str(),
            Id::ControllerApiVersion | Id::ControllerKind => {
                let field = if matches!(id, Id::ControllerKind) {
                    "kind"
                } else {
                    "apiVersion"
                };
                let r = Object::controller_ref_in(json)?;
                Some(r.field(field).and_then(Value::as_str).unwrap_or(""))
            }
        }
    }

    /// The owner reference marked `controller: true`, or the only one.
    fn controller_ref_in(json: &Value) -> Option<&Value> {
        let refs = json
            .field("metadata")?
            .field("ownerReferences")?
            .as_array()?;
        refs.iter()
            .find(|r| r.field("controller").and_then(Value::as_bool) == Some(true))
            .or_else(|| if refs.len() == 1 { refs.first() } else { None })
    }

    /// One of the fields that identify the object: a packed object's without parsing it.
    fn id(&self, id: Id) -> Option<&str> {
        match &self.inner.packed {
            Some(packed) => packed.ids.get(id),
            None => Object::id_in(self.json(), id),
        }
    }

    /// `metadata.name`.
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"metadata": {"name": "a"}}));
    /// assert_eq!(o.name(), "a");
    /// ```
    pub fn name(&self) -> &str {
        self.id(Id::Name).unwrap_or("")
    }

    /// `metadata.namespace` (empty for cluster-scoped objects).
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"metadata": {"namespace": "ml"}}));
    /// assert_eq!(o.namespace(), "ml");
    /// ```
    pub fn namespace(&self) -> &str {
        self.id(Id::Namespace).unwrap_or("")
    }

    /// `metadata.uid`.
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"metadata": {"uid": "x"}}));
    /// assert_eq!(o.uid(), "x");
    /// ```
    pub fn uid(&self) -> &str {
        self.id(Id::Uid).unwrap_or("")
    }

    /// `kind`.
    ///
    /// ```
    /// assert_eq!(wlmap_engine::Object::new(serde_json::json!({"kind": "Pod"})).kind(), "Pod");
    /// ```
    pub fn kind(&self) -> &str {
        self.id(Id::Kind).unwrap_or("")
    }

    /// `apiVersion`.
    ///
    /// ```
    /// assert_eq!(wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1"})).api_version(), "v1");
    /// ```
    pub fn api_version(&self) -> &str {
        self.id(Id::ApiVersion).unwrap_or("")
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
        self.id(Id::Created)
    }

    /// A label's value.
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"metadata": {"labels": {"a": "b"}}}));
    /// assert_eq!(o.label("a"), Some("b"));
    /// ```
    pub fn label(&self, key: &str) -> Option<&str> {
        self.json()
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
        self.id(Id::ControllerUid)
    }

    /// The apiVersion and kind the controlling owner reference names (`""` for a field it
    /// lacks); `None` without one.
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"metadata": {"ownerReferences": [
    ///     {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u", "controller": true}]}}));
    /// assert_eq!(o.controller_type(), Some(("batch/v1", "Job")));
    /// assert_eq!(wlmap_engine::Object::new(serde_json::json!({})).controller_type(), None);
    /// ```
    pub fn controller_type(&self) -> Option<(&str, &str)> {
        Some((
            self.id(Id::ControllerApiVersion)?,
            self.id(Id::ControllerKind)?,
        ))
    }

    /// True for a Pod.
    ///
    /// ```
    /// assert!(wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod"})).is_pod());
    /// ```
    pub fn is_pod(&self) -> bool {
        self.inner.pod
    }
}

/// Do maps and lists nest in a value more than `levels` deep? (Recurses `levels` deep at most.)
fn deeper_than(v: &Value, levels: usize) -> bool {
    let deeper = |mut items: Box<dyn Iterator<Item = &Value> + '_>| {
        levels == 0 || items.any(|x| deeper_than(x, levels - 1))
    };
    match v {
        Value::Array(a) => deeper(Box::new(a.iter())),
        Value::Object(m) => deeper(Box::new(m.values())),
        _ => false,
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_packed_object_reads_back_the_same_json_numbers_and_order_included() {
        let v = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "uid": "u", "labels": {"z": "1", "a": "2"}},
            "spec": {"priority": -5, "big": 18446744073709551615u64, "ratio": 0.1,
                "containers": [{"name": "c", "text": "line\nquoted \"x\" é"}]}});
        let released = Object::new(v.clone())
            .packed(&Packing::default())
            .released()
            .unwrap();
        assert_eq!(released.json(), &v);
        let keys: Vec<&String> = released.json()["metadata"]["labels"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(keys, ["z", "a"]);
        assert!(released.is_pod());
    }

    /// Found by the `resolve` fuzz target: an integer too large for 64 bits is read as a
    /// float, printed as its shortest form, and must read back as the same float (serde_json
    /// reads floats exactly only with its `float_roundtrip` feature).
    #[test]
    fn fuzz_found_a_large_integer_reads_back_as_the_same_float() {
        let text = r#"{"kind":"NIMS","metada":{"ns":76666666664666666666666666,"resa[":"Fad"}}"#;
        let v: Value = serde_json::from_str(text).unwrap();
        let released = Object::new(v.clone())
            .packed(&Packing::default())
            .released()
            .unwrap();
        assert_eq!(released.json(), &v);
        for f in [
            7.666_666_666_466_667e25,
            0.1,
            1e-300,
            123_456_789.123_456_79,
        ] {
            let v = json!({"x": f});
            let released = Object::new(v.clone())
                .packed(&Packing::default())
                .released()
                .unwrap();
            assert_eq!(released.json(), &v, "{f}");
        }
    }

    #[test]
    fn a_value_too_deep_to_read_back_is_not_packed() {
        let mut deep = json!(1);
        for _ in 0..=MAX_PACKED_DEPTH {
            deep = json!([deep]);
        }
        assert!(
            !Object::new(deep.clone())
                .packed(&Packing::default())
                .is_packed()
        );
        let mut shallow = json!(1);
        for _ in 0..MAX_PACKED_DEPTH {
            shallow = json!([shallow]);
        }
        assert!(Object::new(shallow).packed(&Packing::default()).is_packed());
    }

    #[test]
    fn a_shared_object_packs_a_copy_and_keeps_its_jaq_value() {
        let o = Object::new(json!({"a": [1, 2]}));
        let before = o.val();
        let packed = o.clone().packed(&Packing::default());
        assert!(!o.is_packed());
        assert_eq!(packed.val(), before);
        assert_eq!(packed.json(), o.json());
    }
}
