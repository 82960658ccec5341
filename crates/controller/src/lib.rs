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
//! The pure parts ([`gangs`], [`admission`], [`tls`], [`leader::Holding`]) are tested here;
//! the rest runs against a real API server and scheduler in `crates/e2e/tests/controller.rs`.

pub mod admission;
pub mod definitions;
pub mod gangs;
pub mod leader;
pub mod metrics;
pub mod reconcile;
pub mod registration;
pub mod run;
mod serve;
pub mod state;
pub mod tls;
mod watches;
mod webhook;

pub use run::{Certificates, Endpoint, Options, run};
