//! Watches feeding a live inventory: the one place a watch event becomes an inventory event.
//! `wlmap get --watch`, `describe --watch`, `serve` and the controller take their events
//! through [`feed_event`].

use crate::{Error, WatchEvent};
use serde_json::Value;
use std::collections::BTreeSet;
use wlmap_engine::Object;
use wlmap_inventory::FeedEvent;

/// What a watch event is for a live inventory.
#[derive(Debug)]
pub enum Step {
    /// The event to feed ([`wlmap_inventory::Feed::on`]).
    Feed(FeedEvent),
    /// The watch failed (it retries with backoff): the failure, the first time it is seen.
    Failing(Error),
    /// A failure already said (a retrying watch would say the same at every attempt).
    StillFailing,
}

/// The failures said so far.
#[derive(Debug, Default)]
pub struct Said(BTreeSet<String>);

/// One watch event for a live inventory: its object trimmed by `trim` (as the inventory keeps
/// objects: [`wlmap_inventory::Index::trim`]), or the failure, once.
///
/// ```
/// use wlmap_kube::live::{Said, Step, feed_event};
/// let mut said = Said::default();
/// let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "managedFields": []}});
/// let strip = |v: &mut serde_json::Value| { v["metadata"].as_object_mut().unwrap().remove("managedFields"); };
/// let Step::Feed(wlmap_inventory::FeedEvent::Applied(0, o)) = feed_event(wlmap_kube::WatchEvent::Applied(0, pod), &strip, &mut said) else { panic!() };
/// assert!(o.json()["metadata"].get("managedFields").is_none());
/// let gone = || wlmap_kube::WatchEvent::Failed(0, wlmap_kube::Error::Forbidden("pods".into()));
/// assert!(matches!(feed_event(gone(), &strip, &mut said), Step::Failing(_)));
/// assert!(matches!(feed_event(gone(), &strip, &mut said), Step::StillFailing));
/// ```
pub fn feed_event(ev: WatchEvent, trim: &dyn Fn(&mut Value), said: &mut Said) -> Step {
    let object = |mut v: Value| {
        trim(&mut v);
        Object::new(v)
    };
    Step::Feed(match ev {
        WatchEvent::Relisting(i) => FeedEvent::Relisting(i),
        WatchEvent::Applied(i, v) => FeedEvent::Applied(i, object(v)),
        WatchEvent::Deleted(i, v) => FeedEvent::Deleted(i, object(v)),
        WatchEvent::Listed(i) => FeedEvent::Listed(i),
        WatchEvent::Failed(_, e) if said.0.insert(e.to_string()) => return Step::Failing(e),
        WatchEvent::Failed(..) => return Step::StillFailing,
    })
}

/// The gate the watches of the kinds that wait for DRA use
/// ([`wlmap_inventory::waits_for_dra_use`]) start behind: opened once the inventory they feed
/// holds a claim or claim template ([`wlmap_inventory::Feed::uses_dra`]); it stays open.
///
/// ```
/// let gate = wlmap_kube::live::DraGate::default();
/// assert!(!gate.is_open());
/// gate.open();
/// assert!(gate.is_open());
/// ```
#[derive(Debug, Clone, Default)]
pub struct DraGate(std::sync::Arc<(std::sync::atomic::AtomicBool, tokio::sync::Notify)>);

impl DraGate {
    /// Open the gate (once open, again does nothing).
    pub fn open(&self) {
        if !self.0.0.swap(true, std::sync::atomic::Ordering::SeqCst) {
            self.0.1.notify_waiters();
        }
    }

    /// True once opened.
    pub fn is_open(&self) -> bool {
        self.0.0.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Wait until it is open.
    pub async fn opened(&self) {
        loop {
            let notified = self.0.1.notified();
            if self.is_open() {
                return;
            }
            notified.await;
        }
    }

    /// Open the gate when the feed now uses DRA; what the feed did, passed on.
    pub fn after<T>(&self, feed: &wlmap_inventory::Feed, fed: T) -> T {
        if feed.uses_dra() {
            self.open();
        }
        fed
    }
}

/// What a watch event means for a store of plain objects that a listing replaces whole.
#[derive(Debug)]
pub enum Change {
    /// An object as it now is, outside a listing.
    Put(usize, Value),
    /// An object deleted, as it was last.
    Gone(usize, Value),
    /// A listing of the kind at this index completed: its objects, all of them.
    Listed(usize, Vec<Value>),
    /// The watch failed (it retries with backoff): the failure, the first time it is seen.
    Failing(Error),
}

/// The relist buffer of a watch feeding a store of plain objects: objects listed while a kind
/// is relisted are held until its listing completes, then replace the kind's objects at once
/// (no moment where the store has lost what the listing has not brought back yet).
///
/// ```
/// use wlmap_kube::WatchEvent;
/// use wlmap_kube::live::{Change, Relists};
/// let mut r = Relists::default();
/// let pg = serde_json::json!({"metadata": {"name": "g"}});
/// assert!(r.on(WatchEvent::Relisting(0)).is_none());
/// assert!(r.on(WatchEvent::Applied(0, pg.clone())).is_none());
/// assert!(matches!(r.on(WatchEvent::Listed(0)), Some(Change::Listed(0, v)) if v == [pg.clone()]));
/// assert!(matches!(r.on(WatchEvent::Applied(0, pg)), Some(Change::Put(0, _))));
/// ```
#[derive(Debug, Default)]
pub struct Relists {
    listing: std::collections::BTreeMap<usize, Vec<Value>>,
    said: Said,
}

impl Relists {
    /// The change an event makes, if any yet.
    pub fn on(&mut self, ev: WatchEvent) -> Option<Change> {
        match ev {
            WatchEvent::Relisting(i) => {
                self.listing.insert(i, Vec::new());
                None
            }
            WatchEvent::Applied(i, v) => match self.listing.get_mut(&i) {
                Some(l) => {
                    l.push(v);
                    None
                }
                None => Some(Change::Put(i, v)),
            },
            WatchEvent::Deleted(i, v) => Some(Change::Gone(i, v)),
            WatchEvent::Listed(i) => Some(Change::Listed(
                i,
                self.listing.remove(&i).unwrap_or_default(),
            )),
            WatchEvent::Failed(_, e) if self.said.0.insert(e.to_string()) => {
                Some(Change::Failing(e))
            }
            WatchEvent::Failed(..) => None,
        }
    }
}
