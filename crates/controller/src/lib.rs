//! # wlmap-controller
//!
//! `wlmap controller`: gang scheduling for every workload kind with a definition. One
//! process, run as a Deployment:
//!
//! - a **live inventory** of the workloads (one watch per kind the definitions need, and the
//!   `kartas.run.ai` definitions, hot-reloaded);
//! - **gang objects** per top-level workload whose definition declares gangs, for the
//!   configured scheduler (Kubernetes v1.37 `scheduling.k8s.io/v1beta1` PodGroups by default,
//!   coscheduling or Volcano PodGroups), written by server-side apply, owned by the workload
//!   (garbage-collected with it), written only by the replica holding the leader Lease, and
//!   never over an object of the same name someone else wrote;
//! - a **mutating admission webhook** on Pod CREATE that puts each pod in its group (the
//!   native `spec.schedulingGroup` must be set at creation), served by every replica, failing
//!   open;
//! - `/healthz`, `/readyz` and `/metrics` on a plain HTTP port.
//!
//! Each part has one job. [`gangs::decide`] says what a workload's gang objects need, from
//! what the controller holds (the workload as the inventory resolved it, its pods, the gang
//! objects that exist) and the scheduler format, whose module in `wlmap-engine` says what it
//! writes and how a pod is tied to its group; [`reconcile`] carries the writes out;
//! [`queue`] holds the workloads to reconcile (kube-runtime's scheduler, a backoff per
//! workload); [`leader`] takes part in the election on a Lease; [`admission`] answers the
//! webhooks. Errors are an [`Error`] whose kind says whether retrying can help.
//!
//! The pure parts ([`gangs`], [`queue`], [`admission`], [`tls`], [`leader::Holding`]) are
//! tested here, [`gangs::decide`] over every catalog fixture in every format
//! (`tests/decide.rs`); the rest runs against a real API server and scheduler in
//! `crates/e2e/tests/controller.rs`.

pub mod admission;
pub mod definitions;
mod error;
pub mod gangs;
pub mod leader;
pub mod metrics;
mod options;
pub mod queue;
pub mod reconcile;
pub mod registration;
mod report;
mod run;
mod serve;
pub mod state;
pub mod tls;
mod watches;
mod webhook;

pub use error::{Error, Invalid};
pub use options::{Build, Certificates, Endpoint, FIELD_MANAGER, Options};
pub use run::run;
