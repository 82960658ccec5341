//! # wlmap-server
//!
//! The platform view of the live inventory: what a platform team looks at, as opposed to a
//! terminal. One HTTP server, read-only, with
//! - `/metrics`: Prometheus text format, kube-state-metrics naming ([`metrics`]);
//! - `/api/workloads`, `/api/workload`, `/api/events`: JSON rows, one workload in full, and a
//!   server-sent event each time the inventory changes ([`api`]);
//! - `/`: a web page of every workload, its tree, status rules and gang groups, embedded in
//!   the binary (no build step, nothing fetched from the internet), updated live.
//!
//! It serves whatever implements [`Map`]: [`Live`] for `wlmap serve` (a snapshot, the demo or
//! a cluster's watches feed it), the controller's own state for `wlmap controller`.
//!
//! ```
//! use wlmap_server::{Live, Map};
//! let registry = wlmap_catalog::registry().unwrap();
//! let live = Live::fixed(wlmap_inventory::Inventory::from_objects(registry, []));
//! let mut text = String::new();
//! live.read(&mut |inv| wlmap_server::metrics::render(inv, &mut text));
//! assert!(text.contains("# TYPE wlmap_workload_gpus_requested gauge"));
//! ```

pub mod api;
mod http;
mod live;
pub mod metrics;
mod page;
mod query;

pub use http::{Body, Options, next_connection, respond, serve};
pub use live::{Live, Map};
