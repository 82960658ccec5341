//! # wlmap-author
//!
//! Writing definitions, and knowing when one rots. No network code: callers hand in the
//! CustomResourceDefinition (a file, or the cluster's) and, when they have them, live objects.
//!
//! - [`scaffold`] drafts a Karta for a CRD's storage version: a component per pod template
//!   found by the schema's shape, each paired with its replica count, status rules from the
//!   conditions and phase fields, suspend when the spec has it. What it cannot decide it marks
//!   `# TODO` with the candidates. Given live objects and their pods ([`Observed`]), it drafts
//!   pod selectors, the kinds between the workload and its pods, and status rules from the
//!   condition types seen.
//! - [`check`] lists where a definition no longer fits its kind's schema: paths that are not
//!   there, condition types and phases the schema's enums do not have, a version not served.
//!
//! ```
//! let crd = serde_json::json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
//!   "spec": {"group": "example.com", "names": {"kind": "Trainer", "plural": "trainers"}, "scope": "Namespaced",
//!     "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
//!       "type": "object", "properties": {"spec": {"type": "object", "properties": {
//!         "replicas": {"type": "integer"},
//!         "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}}}]}});
//! let crd = wlmap_author::Crd::from_value(&crd).unwrap();
//! let draft = wlmap_author::scaffold(&crd, None).unwrap();
//! assert!(draft.yaml.contains("podTemplateSpecPath: .spec.template"));
//! assert!(draft.yaml.contains("replicasPath: .spec.replicas // 1"));
//! let karta = wlmap_schema::decode_one(&draft.yaml, "draft.yaml").unwrap();
//! assert!(wlmap_author::check(&karta, &crd).is_empty());
//! ```

mod check;
mod crd;
mod observed;
mod paths;
mod scaffold;
mod vocabulary;

pub use check::{Finding, check};
pub use crd::{Crd, CrdVersion, Error};
pub use observed::Observed;
pub use paths::{Step, plain_prefix, rooted_paths, walk};
pub use scaffold::{Draft, scaffold};
