//! A CustomResourceDefinition, as far as authoring needs it: names, versions and schemas.

use serde_json::Value;

/// Why a document is not a usable CustomResourceDefinition.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum Error {
    /// Not a CRD, or one without what authoring needs.
    #[error("not a usable CustomResourceDefinition: {0}")]
    NotACrd(String),
}

/// One version of a CRD.
#[derive(Debug, Clone)]
pub struct CrdVersion {
    /// Version name (`v1`).
    pub name: String,
    /// Served by the API server.
    pub served: bool,
    /// The version objects are stored in.
    pub storage: bool,
    /// `schema.openAPIV3Schema`, when given.
    pub schema: Option<Value>,
    /// `subresources.scale`, when given.
    pub scale: Option<Value>,
}

impl CrdVersion {
    /// The schema of `.spec` or `.status` (None when absent).
    pub fn part(&self, name: &str) -> Option<&Value> {
        self.schema.as_ref()?.get("properties")?.get(name)
    }
}

/// The parts of a CustomResourceDefinition a definition is written against.
#[derive(Debug, Clone)]
pub struct Crd {
    /// API group.
    pub group: String,
    /// Kind.
    pub kind: String,
    /// Plural resource name.
    pub plural: String,
    /// `spec.names.shortNames` (`lws`), for the draft's `shortNames`.
    pub short_names: Vec<String>,
    /// Every version, in the CRD's order.
    pub versions: Vec<CrdVersion>,
}

impl Crd {
    /// Read a CRD object (`apiextensions.k8s.io/v1`).
    ///
    /// ```
    /// let crd = serde_json::json!({"kind": "CustomResourceDefinition", "spec": {"group": "g.io",
    ///     "names": {"kind": "K", "plural": "ks"}, "versions": [{"name": "v1", "served": true, "storage": true}]}});
    /// let crd = wlmap_author::Crd::from_value(&crd).unwrap();
    /// assert_eq!(crd.storage().map(|v| v.name.as_str()), Some("v1"));
    /// assert!(wlmap_author::Crd::from_value(&serde_json::json!({"kind": "Pod"})).is_err());
    /// ```
    pub fn from_value(v: &Value) -> Result<Crd, Error> {
        if v.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition") {
            return Err(Error::NotACrd(
                "its kind is not CustomResourceDefinition".into(),
            ));
        }
        let text = |p: &str| v.pointer(p).and_then(Value::as_str).map(String::from);
        let missing = |what: &str| Error::NotACrd(format!("no {what}"));
        let versions: Vec<CrdVersion> = v
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .ok_or_else(|| missing("spec.versions"))?
            .iter()
            .map(|ver| CrdVersion {
                name: ver["name"].as_str().unwrap_or_default().to_string(),
                served: ver["served"].as_bool().unwrap_or(false),
                storage: ver["storage"].as_bool().unwrap_or(false),
                schema: ver.pointer("/schema/openAPIV3Schema").cloned(),
                scale: ver.pointer("/subresources/scale").cloned(),
            })
            .collect();
        Ok(Crd {
            group: text("/spec/group").ok_or_else(|| missing("spec.group"))?,
            kind: text("/spec/names/kind").ok_or_else(|| missing("spec.names.kind"))?,
            plural: text("/spec/names/plural").unwrap_or_default(),
            short_names: v
                .pointer("/spec/names/shortNames")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default(),
            versions,
        })
    }

    /// Every CRD among parsed documents.
    pub fn all_in(docs: &[Value]) -> Vec<Crd> {
        docs.iter()
            .filter_map(|d| Crd::from_value(d).ok())
            .collect()
    }

    /// The storage version (else the first served one).
    pub fn storage(&self) -> Option<&CrdVersion> {
        self.versions
            .iter()
            .find(|v| v.storage)
            .or_else(|| self.versions.iter().find(|v| v.served))
    }

    /// A version by name.
    pub fn version(&self, name: &str) -> Option<&CrdVersion> {
        self.versions.iter().find(|v| v.name == name)
    }

    /// Names of the served versions.
    pub fn served(&self) -> Vec<&str> {
        self.versions
            .iter()
            .filter(|v| v.served)
            .map(|v| v.name.as_str())
            .collect()
    }
}
