//! An object as a watch delivers it, read once into a JSON value.
//!
//! Why not `kube`'s `DynamicObject`: its two flattened fields make serde buffer every object
//! into an intermediate tree before reading it, and the inventory wants a JSON value, which
//! took a second conversion (`serde_json::to_value`). Together they were a fifth of a
//! controller replica's CPU under a burst of pods (the scale run, `perf`). This type reads
//! the text into a value in one pass and copies out only the four metadata fields the
//! watcher reads (name, namespace, uid, resourceVersion). What no reader keeps is skipped as
//! it is read, never built: the field managers' `managedFields` and kubectl's
//! last-applied annotation, a copy of the whole object as last applied (the inventory's
//! trimming drops both).

use kube::core::{DynamicResourceScope, ObjectMeta, Resource};
use kube::discovery::ApiResource;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::fmt;

/// Metadata fields skipped as they are read.
const SKIPPED_METADATA: &[&str] = &["managedFields"];
/// Annotations skipped as they are read.
const SKIPPED_ANNOTATIONS: &[&str] = &["kubectl.kubernetes.io/last-applied-configuration"];

/// A watched object: its JSON (without `managedFields` and kubectl's last-applied
/// annotation), and the metadata the watcher keeps its place by.
///
/// ```
/// let text = r#"{"metadata": {"name": "p", "namespace": "ml", "uid": "u1",
///     "resourceVersion": "42", "labels": {"app": "x"},
///     "managedFields": [{"manager": "kubelet"}]}, "spec": {"nodeName": "n1"}}"#;
/// let o: wlmap_kube::Watched = serde_json::from_str(text).unwrap();
/// use kube::core::Resource;
/// assert_eq!(o.meta().resource_version.as_deref(), Some("42"));
/// assert_eq!(o.meta().name.as_deref(), Some("p"));
/// let v = o.into_value();
/// assert_eq!(v["spec"]["nodeName"], "n1");
/// assert!(v["metadata"].get("managedFields").is_none());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Watched {
    meta: ObjectMeta,
    value: Value,
}

impl Watched {
    /// The object's JSON, as the API server sent it.
    pub fn into_value(self) -> Value {
        self.value
    }

    /// The object's JSON with `apiVersion` and `kind` set from the kind it was read as (a
    /// list's items come without them).
    ///
    /// ```
    /// let o: wlmap_kube::Watched = serde_json::from_str(r#"{"metadata": {"name": "j"}}"#).unwrap();
    /// let job = wlmap_kube::Kind { group: "batch".into(), version: "v1".into(), kind: "Job".into(),
    ///     plural: "jobs".into(), namespaced: true };
    /// let v = o.into_typed(&job);
    /// assert_eq!((v["apiVersion"].as_str(), v["kind"].as_str()), (Some("batch/v1"), Some("Job")));
    /// ```
    pub fn into_typed(self, k: &crate::Kind) -> Value {
        let mut v = self.value;
        if let Some(m) = v.as_object_mut() {
            m.insert("apiVersion".into(), Value::from(k.api_version()));
            m.insert("kind".into(), Value::from(k.kind.clone()));
        }
        v
    }
}

/// A map read as a JSON object, the values of some keys read by a seed of their own and
/// the `skipped` keys not read into anything.
struct Fields {
    what: &'static str,
    skipped: &'static [&'static str],
    nested: fn(&str) -> Option<Fields>,
}

impl<'de> DeserializeSeed<'de> for Fields {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        // `any`, not `map`: a null (an absent map, as Go may write it) is read as null.
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Fields {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} as a JSON object", self.what)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Value, A::Error> {
        let mut m = Map::new();
        while let Some(k) = a.next_key::<String>()? {
            if self.skipped.contains(&k.as_str()) {
                a.next_value::<IgnoredAny>()?;
                continue;
            }
            let v = match (self.nested)(&k) {
                Some(seed) => a.next_value_seed(seed)?,
                None => a.next_value::<Value>()?,
            };
            m.insert(k, v);
        }
        Ok(Value::Object(m))
    }
}

/// The object: its `metadata` read without what is skipped.
fn object() -> Fields {
    Fields {
        what: "an object",
        skipped: &[],
        nested: |k| (k == "metadata").then(metadata),
    }
}

fn metadata() -> Fields {
    Fields {
        what: "metadata",
        skipped: SKIPPED_METADATA,
        nested: |k| {
            (k == "annotations").then_some(Fields {
                what: "annotations",
                skipped: SKIPPED_ANNOTATIONS,
                nested: |_| None,
            })
        },
    }
}

impl<'de> Deserialize<'de> for Watched {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = object().deserialize(d)?;
        let field = |k: &str| {
            value
                .get("metadata")
                .and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let meta = ObjectMeta {
            name: field("name"),
            namespace: field("namespace"),
            uid: field("uid"),
            resource_version: field("resourceVersion"),
            ..ObjectMeta::default()
        };
        Ok(Watched { meta, value })
    }
}

impl Resource for Watched {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.meta
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.meta
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A watch event as the API server writes it (a pod of the testbed, trimmed of most of
    /// its spec), read the way the watcher reads it: the same JSON as `DynamicObject`'s
    /// path gave, and the metadata the watcher asks for.
    #[test]
    fn reads_a_watch_event_as_the_dynamic_object_path_did() {
        let text = r#"{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"w00000-leader-0-0-bnfh2","generateName":"w00000-leader-0-0-","namespace":"scale-without","uid":"6c1e3f0a-5b0e-4a8e-9d55-2f0f5f1d0c1a","resourceVersion":"20417","creationTimestamp":"2026-12-06T05:00:40Z","labels":{"jobset.sigs.k8s.io/jobset-name":"w00000"},"annotations":{"jobset.sigs.k8s.io/replicatedjob-replicas":"1","kubectl.kubernetes.io/last-applied-configuration":"{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}"},"ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":"w00000-leader-0","uid":"1b7d","controller":true,"blockOwnerDeletion":true}],"managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2026-12-06T05:00:40Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:generateName":{}}}}]},"spec":{"nodeName":"kwok-0002","containers":[{"name":"main","image":"pause","resources":{"limits":{"nvidia.com/gpu":"1"}}}]},"status":{"phase":"Running"}}}"#;
        let event: kube::core::WatchEvent<Watched> = serde_json::from_str(text).expect("reads");
        let kube::core::WatchEvent::Modified(o) = event else {
            panic!("a MODIFIED event")
        };
        assert_eq!(o.meta().resource_version.as_deref(), Some("20417"));
        assert_eq!(o.meta().namespace.as_deref(), Some("scale-without"));
        assert_eq!(
            o.meta().uid.as_deref(),
            Some("6c1e3f0a-5b0e-4a8e-9d55-2f0f5f1d0c1a")
        );
        let old: kube::core::WatchEvent<kube::api::DynamicObject> =
            serde_json::from_str(text).expect("reads");
        let kube::core::WatchEvent::Modified(old) = old else {
            panic!("a MODIFIED event")
        };
        let mut want = serde_json::to_value(old).expect("a value");
        want["metadata"]
            .as_object_mut()
            .expect("metadata")
            .remove("managedFields");
        want["metadata"]["annotations"]
            .as_object_mut()
            .expect("annotations")
            .remove("kubectl.kubernetes.io/last-applied-configuration");
        assert_eq!(
            o.into_value(),
            want,
            "the same JSON, field for field, but what no reader keeps"
        );
    }

    #[test]
    fn an_object_that_is_not_a_map_is_an_error_not_a_panic() {
        for text in [
            r#""text""#,
            r#"{"metadata": 3}"#,
            r#"{"metadata": {"annotations": []}}"#,
        ] {
            let e = serde_json::from_str::<Watched>(text).expect_err(text);
            assert!(e.to_string().contains("as a JSON object"), "{text}: {e}");
        }
        // Null maps are read as null, as `ObjectMeta` reads them.
        let o: Watched =
            serde_json::from_str(r#"{"metadata": {"name": "a", "annotations": null}}"#)
                .expect("reads");
        assert!(o.into_value()["metadata"]["annotations"].is_null());
    }
}
