//! # wlmap-engine
//!
//! The engine of wlmap: given a workload definition and objects, it answers *what is inside
//! this workload, how big is it, what state is it in, and how do I change its pods*. It does no
//! I/O: callers hand it objects (from a cluster, a snapshot or files).
//!
//! - [`Definition::compile`] validates a [`wlmap_schema::Karta`] and compiles every expression
//!   once.
//! - [`resolve`] turns one workload object into a [`Workload`]: the component tree with
//!   instances and replica copies, desired pods, normalised pod templates, resources and GPUs,
//!   and the [`Status`] (every matched status, one primary, the deciding reason, a trace).
//! - [`attribute`] places live pods under components, instances and replicas, reporting the
//!   ones nothing claims.
//! - [`update`] and [`suspend`] change pod templates and suspend state through the
//!   definition's paths, touching nothing else.
//! - [`gangs`] computes gang-scheduling groups.
//!
//! ```
//! use wlmap_engine::{Definition, Object, Origin, Phase, resolve, attribute};
//! let yaml = r#"
//! apiVersion: run.ai/v1alpha1
//! kind: Karta
//! metadata: {name: batch-job-v1}
//! spec:
//!   structureDefinition:
//!     rootComponent:
//!       name: job
//!       kind: {group: batch, version: v1, kind: Job}
//!       specDefinition: {podTemplateSpecPath: .spec.template}
//!       scaleDefinition: {replicasPath: .spec.parallelism // 1}
//!       statusDefinition:
//!         conditionsDefinition: {path: .status.conditions}
//!         statusMappings:
//!           running: [{byExpression: {expression: '(.status.active // 0) > 0', expectedResult: 'true'}}]
//!           completed: [{byConditions: [{type: Complete, status: "True"}]}]
//! "#;
//! let def = Definition::compile(wlmap_schema::decode_one(yaml, "job.yaml").unwrap(), Origin::File).unwrap();
//! let job = Object::new(serde_json::json!({
//!   "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "uid": "j1"},
//!   "spec": {"parallelism": 2, "template": {"spec": {"containers": [
//!     {"name": "t", "resources": {"limits": {"nvidia.com/gpu": 8}}}]}}},
//!   "status": {"active": 2}}));
//! let mut w = resolve(&def, &job).unwrap();
//! assert_eq!(w.status.phase, Phase::Running);
//! assert_eq!(w.root.desired_pods, 2);
//! assert_eq!(w.gpus(&Default::default()), 16.0);
//! let pod = Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
//!   "metadata": {"name": "train-x", "uid": "p1", "ownerReferences": [{"uid": "j1", "controller": true}]},
//!   "spec": {}, "status": {"phase": "Running"}}));
//! attribute(&def, &mut w, &job, &[pod]).unwrap();
//! assert_eq!(w.observed_pods(), 1);
//! ```

mod attribute;
mod definition;
pub mod dra;
mod error;
mod gang;
mod object;
mod registry;
mod resolve;
mod resources;
mod status;
mod update;

pub use attribute::{MAX_OWNER_DEPTH, OwnerIndex, attribute, attribute_indexed};
pub use definition::{Definition, Origin};
pub use error::{Error, ExprField, Result};
pub use gang::format::{
    Format, GangKind, KUEUE_QUEUE_LABEL, MANAGED_BY, Rendered, SchedulerFormat, gang_object_kinds,
    render_gangs,
};
pub use gang::{PodGroup, SubGroupOut, gang_name, gangs};
pub use object::{Object, Packing, unix_seconds};
pub use registry::Registry;
pub use resolve::{
    IN_CLUSTER_MANAGERS, MAX_EXPANDED_REPLICAS, NoReferences, Node, ObjectsProvider, PODS_FAILING,
    PODS_PENDING, PodInfo, RETRIED_FAILURES, ReferenceProvider, Unscheduled, Waiting, Workload,
    resolve, resolve_with,
};
pub use resources::{
    GpuPolicy, Resources, container_request, parse_quantity, pod_request, resource_requirements,
};
pub use status::{MatcherTrace, Phase, RULE_FAILED, RuleFailure, Status, status, status_explained};
pub use update::{PodUpdate, Target, UpdateReport, suspend, update};
