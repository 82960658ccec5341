//! What the controller's tasks share: the live inventory, the gang objects that exist, the
//! queue of workloads to reconcile, and who is leader.

use crate::metrics::Metrics;
use crate::options::Options;
use crate::queue::Queue;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, RwLock};
use tokio::sync::Notify;
use wlmap_engine::Registry;
use wlmap_inventory::{Feed, ObjectKey};
use wlmap_kube::Kind;

/// Shared state. Locks are `std` locks held for in-memory work only, never across an await.
pub struct Shared {
    /// How the controller was started.
    pub opts: Options,
    /// The API client (requests); watches use their own with a longer read timeout.
    pub client: kube::Client,
    /// The definitions in force (catalog plus cluster Kartas).
    pub registry: RwLock<Registry>,
    /// Wakes the workload watch when the definitions change.
    pub definitions_changed: Notify,
    /// The live inventory, fed by the workload watches.
    pub feed: RwLock<Feed>,
    /// The `kartas.run.ai` objects, by name.
    pub kartas: RwLock<BTreeMap<String, Value>>,
    /// The kinds watched (for fetching an owner the webhook has not seen yet).
    pub kinds: RwLock<Vec<Kind>>,
    /// The gang objects of the configured format that exist, by (namespace, name).
    pub gang_objects: RwLock<crate::gangs::GangStore>,
    /// Conflicts already reported, so each is said once.
    pub conflicts: Mutex<BTreeSet<(ObjectKey, String)>>,
    /// Pods without a group, per workload, as of its last reconcile.
    pub ungrouped: Mutex<BTreeMap<ObjectKey, usize>>,
    /// The workloads to reconcile.
    pub queue: Queue,
    leader: AtomicBool,
    /// Bumped each time the inventory changes (the web view's `/api/events`).
    pub version: tokio::sync::watch::Sender<u64>,
    /// Set once the TLS listener and every watch are up.
    pub webhook_ready: AtomicBool,
    /// The controller's metrics.
    pub metrics: Metrics,
    /// Publishes Kubernetes events.
    pub recorder: kube::runtime::events::Recorder,
}

impl Shared {
    /// Shared state for a controller with these options and definitions.
    pub fn new(opts: Options, client: kube::Client, registry: Registry, queue: Queue) -> Shared {
        let reporter = kube::runtime::events::Reporter {
            controller: "wlmap-controller".into(),
            instance: Some(opts.identity.clone()),
        };
        let metrics = Metrics::new();
        metrics.set_build(&opts.build);
        Shared {
            recorder: kube::runtime::events::Recorder::new(client.clone(), reporter),
            opts,
            client,
            feed: RwLock::new(Feed::new(registry.clone(), vec![])),
            registry: RwLock::new(registry),
            definitions_changed: Notify::new(),
            kartas: RwLock::new(BTreeMap::new()),
            kinds: RwLock::new(vec![]),
            gang_objects: RwLock::new(Default::default()),
            conflicts: Mutex::new(BTreeSet::new()),
            ungrouped: Mutex::new(BTreeMap::new()),
            queue,
            leader: AtomicBool::new(false),
            webhook_ready: AtomicBool::new(false),
            version: tokio::sync::watch::Sender::new(0),
            metrics,
        }
    }

    /// Ask for these workloads to be reconciled (a key given twice is reconciled once).
    pub fn enqueue(&self, keys: impl IntoIterator<Item = ObjectKey>) {
        self.queue.now(keys);
    }

    /// Every top-level workload, queued (on becoming leader, on a full relist).
    pub fn enqueue_all(&self) {
        let keys: Vec<ObjectKey> = self
            .read_feed()
            .inventory
            .workloads()
            .map(|e| e.key.clone())
            .collect();
        self.enqueue(keys);
    }

    /// Resolve the workloads that wait ([`wlmap_inventory::Inventory::put_off_resolving`]:
    /// a replica that does not lead puts resolving off); a leader queues those that changed.
    /// Nothing is locked for writing when nothing waits.
    pub fn catch_up(&self) {
        if !self.read_feed().inventory.is_behind() {
            return;
        }
        let changes = self.write_feed().inventory.catch_up();
        if self.is_leader() {
            self.enqueue(changes.into_iter().map(|c| c.key));
        }
    }

    /// The inventory, to read.
    pub fn read_feed(&self) -> std::sync::RwLockReadGuard<'_, Feed> {
        reading(&self.feed)
    }

    /// The inventory, to change; the web view hears of the change when the guard is dropped.
    pub fn write_feed(&self) -> FeedWriter<'_> {
        FeedWriter {
            feed: writing(&self.feed),
            version: &self.version,
        }
    }

    /// True while this replica holds the Lease.
    pub fn is_leader(&self) -> bool {
        self.leader.load(Ordering::SeqCst)
    }

    /// Record leadership; true when it changed.
    pub fn set_leader(&self, leader: bool) -> bool {
        self.metrics.leader.set(i64::from(leader));
        self.leader.swap(leader, Ordering::SeqCst) != leader
    }

    /// Ready to answer reviews: the listener is up and the inventory is listed.
    pub fn ready(&self) -> bool {
        self.webhook_ready.load(Ordering::SeqCst) && self.read_feed().is_synced()
    }
}

/// The inventory under its write lock; dropping it tells the web view the inventory changed.
pub struct FeedWriter<'a> {
    feed: std::sync::RwLockWriteGuard<'a, Feed>,
    version: &'a tokio::sync::watch::Sender<u64>,
}

impl std::ops::Deref for FeedWriter<'_> {
    type Target = Feed;
    fn deref(&self) -> &Feed {
        &self.feed
    }
}

impl std::ops::DerefMut for FeedWriter<'_> {
    fn deref_mut(&mut self) -> &mut Feed {
        &mut self.feed
    }
}

impl Drop for FeedWriter<'_> {
    // Runs before the guard field is dropped, so the version moves while the write lock is
    // still held: the web view reads both under one read lock and sees them agree.
    fn drop(&mut self) {
        self.version.send_modify(|v| *v += 1);
    }
}

/// The controller serves the same platform view as `wlmap serve`, from its own inventory.
impl wlmap_server::Map for Shared {
    fn read(&self, f: &mut dyn FnMut(&wlmap_inventory::Inventory)) {
        f(&self.read_feed().inventory)
    }

    fn synced(&self) -> bool {
        self.read_feed().is_synced()
    }

    fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.version.subscribe()
    }
}

/// A read lock, taken whatever a panicked holder left: a reconcile that panics must not stop
/// every other task (each value is replaced whole, never left half-written).
pub(crate) fn reading<T>(l: &std::sync::RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

/// A write lock, taken like [`reading`].
pub(crate) fn writing<T>(l: &std::sync::RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

/// A mutex, taken like [`reading`].
pub(crate) fn locked<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
