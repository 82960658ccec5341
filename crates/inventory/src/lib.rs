//! # wlmap-inventory
//!
//! Which objects form which workload. An [`Inventory`] holds a set of Kubernetes objects (from
//! a snapshot, a LIST or a watch stream) and the definitions in force, decides which objects
//! are top-level workloads, and keeps each one resolved and attributed (tree, status, pods,
//! GPUs, unattributed pods). It does no I/O: callers feed it objects and events.
//!
//! - **Top-level**: an object whose kind has a definition and that no object of a known kind
//!   controls (a known kind is a definition's root or a kind a definition creates). A Job of a
//!   JobSet is part of the JobSet; a Job of nobody is a workload.
//! - **Incremental**: [`Inventory::apply`], [`Inventory::delete`],
//!   [`Inventory::replace_all`] and [`Inventory::set_definitions`] re-resolve only the
//!   workloads the change can affect and return them as [`Change`]s. The result is the same as
//!   building the inventory again from the same objects (a property test checks it after every
//!   step of random event sequences).
//!
//! ```
//! use wlmap_inventory::Inventory;
//! let registry = wlmap_catalog::registry().unwrap();
//! let objects: Vec<wlmap_engine::Object> = vec![]; // from a snapshot, a LIST, a watch
//! let inv = Inventory::from_objects(registry, objects);
//! for e in inv.workloads() {
//!     println!("{} {:?}", e.key, e.result.as_ref().map(|w| w.status.phase));
//! }
//! ```

mod definitions;
mod feed;
mod index;
mod inventory;
mod key;
mod kinds;
mod parallel;
mod placement;
mod read;
mod store;
mod trim;
pub mod view;

pub use feed::{Event as FeedEvent, Fed, Feed, Matters};
pub use index::{Entry, Index};
pub use inventory::{Applied, Change, ChangeKind, Inventory, Update};
pub use key::ObjectKey;
pub use kinds::{
    is_dra_use, kinds_to_follow, kinds_to_watch, may_own_pods, referenced_kinds, waits_for_dra_use,
};
pub use placement::{OwnerRef, Placement};
pub use read::Scope;
