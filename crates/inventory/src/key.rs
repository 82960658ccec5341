//! How an object is named in the inventory: group, kind, namespace and name (what a watch
//! event and a kubectl argument name; the version is not part of it).

use serde::Serialize;
use std::fmt;
use wlmap_engine::Object;
use wlmap_schema::GroupKind;

/// The identity of an object: its kind without version, its namespace (empty when
/// cluster-scoped) and its name. Keys order as kubectl lists: by namespace, kind, name (and
/// group last, to tell apart kinds of the same name).
///
/// ```
/// let o = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
///     "metadata": {"name": "train", "namespace": "ml"}}));
/// let k = wlmap_inventory::ObjectKey::of(&o);
/// assert_eq!(k.to_string(), "ml/Job.batch/train");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct ObjectKey {
    /// Namespace; empty for a cluster-scoped object.
    pub namespace: String,
    /// Group and kind.
    #[serde(flatten)]
    pub kind: GroupKind,
    /// The object's name.
    pub name: String,
}

impl ObjectKey {
    /// The key of an object.
    ///
    /// ```
    /// let o = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}));
    /// assert_eq!(wlmap_inventory::ObjectKey::of(&o).name, "p");
    /// ```
    pub fn of(o: &Object) -> ObjectKey {
        ObjectKey {
            namespace: o.namespace().to_string(),
            kind: GroupKind::from_api_version(o.api_version(), o.kind()),
            name: o.name().to_string(),
        }
    }

    /// Build a key.
    ///
    /// ```
    /// let k = wlmap_inventory::ObjectKey::new("ml", wlmap_schema::GroupKind::new("jobset.x-k8s.io", "JobSet"), "llm-train");
    /// assert_eq!(k.kind.kind, "JobSet");
    /// ```
    pub fn new(namespace: &str, kind: GroupKind, name: &str) -> ObjectKey {
        ObjectKey {
            namespace: namespace.to_string(),
            kind,
            name: name.to_string(),
        }
    }
}

/// `namespace/Kind.group/name` (`Kind.group/name` when cluster-scoped).
impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.namespace.is_empty() {
            write!(f, "{}/", self.namespace)?;
        }
        write!(f, "{}/{}", self.kind, self.name)
    }
}

impl Ord for ObjectKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (
            &self.namespace,
            &self.kind.kind,
            &self.name,
            &self.kind.group,
        )
            .cmp(&(
                &other.namespace,
                &other.kind.kind,
                &other.name,
                &other.kind.group,
            ))
    }
}

impl PartialOrd for ObjectKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
