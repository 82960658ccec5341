//! # wlmap-schema
//!
//! The definition format of wlmap: serde types for the public `Karta` API
//! (`run.ai/v1alpha1`, kind `Karta`), strict decoding from YAML or JSON with locations, the
//! conversion of the older `optimization.nvidia.com/v1alpha1` `ResourceInterface`, and the
//! structural validator. No expressions, no network: the `wlmap-expr` and `wlmap-engine`
//! crates build on these types.
//!
//! ```
//! let yaml = r#"
//! apiVersion: optimization.nvidia.com/v1alpha1
//! kind: ResourceInterface
//! metadata: {name: batch-job-v1}
//! spec:
//!   structureDefinition:
//!     rootComponent:
//!       name: job
//!       kind: {group: batch, version: v1, kind: Job}
//!       specDefinition: {podTemplateSpecPath: .spec.template}
//!       statusDefinition:
//!         conditionsDefinition: {path: .status.conditions}
//!         statusMappings:
//!           completed: [{byConditions: [{type: Complete, status: "True"}]}]
//! "#;
//! let kartas = wlmap_schema::decode(yaml, "job.yaml").unwrap();
//! assert_eq!(kartas[0].kind, "Karta"); // converted from the legacy kind
//! let findings = wlmap_schema::validate(&kartas[0]);
//! assert!(findings.iter().all(|f| f.severity != wlmap_schema::Severity::Error));
//! ```

mod compatible;
mod crd;
mod decode;
mod error;
mod fast_yaml;
mod location;
mod objects;
mod types;
mod validate;

pub use compatible::{Decoded, IgnoredField, decode_compatible};
pub use crd::karta_crd;
pub use decode::{decode, decode_one, decode_with_saphyr, options as yaml_options};
pub use error::{Error, Result};
pub use location::{Location, Source};
pub use objects::{RepeatedKey, decode_objects, decode_objects_warned};
pub use types::*;
pub use validate::{FieldRef, Finding, Severity, validate};
