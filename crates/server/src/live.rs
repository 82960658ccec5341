//! What the server shows: an inventory that can be read at any time, and a signal each time
//! it changes.

use std::sync::RwLock;
use tokio::sync::watch;
use wlmap_inventory::{Feed, Inventory};

/// A live inventory as the server reads it. `wlmap serve` uses [`Live`]; the controller
/// implements it over its own state, so both serve the same endpoints.
pub trait Map: Send + Sync {
    /// Run `f` on the inventory as it is now (under a read lock: `f` must be quick).
    fn read(&self, f: &mut dyn FnMut(&Inventory));
    /// True once the source has been read in full (every kind listed).
    fn synced(&self) -> bool;
    /// A receiver that sees a new version each time the inventory changes.
    fn changes(&self) -> watch::Receiver<u64>;
}

/// An inventory behind a lock, with a version bumped on every update.
///
/// ```
/// use wlmap_server::{Live, Map};
/// let live = Live::fixed(wlmap_inventory::Inventory::default());
/// let before = *live.changes().borrow();
/// live.update(|feed| feed.inventory.replace_all(vec![]));
/// assert_eq!(*live.changes().borrow(), before + 1);
/// assert!(live.synced());
/// ```
pub struct Live {
    feed: RwLock<Feed>,
    /// A fixed source (snapshot, demo) is complete from the start; a feed is once listed.
    fixed: bool,
    version: watch::Sender<u64>,
}

impl Live {
    /// A live inventory fed by watches (not synced until every kind has been listed).
    pub fn fed(feed: Feed) -> Live {
        Live {
            feed: RwLock::new(feed),
            fixed: false,
            version: watch::Sender::new(0),
        }
    }

    /// An inventory read in full from a snapshot or the demo (it changes only by
    /// [`Live::update`]).
    pub fn fixed(inventory: Inventory) -> Live {
        let mut feed = Feed::new(inventory.index().registry().clone(), vec![]);
        feed.inventory = inventory;
        Live {
            feed: RwLock::new(feed),
            fixed: true,
            version: watch::Sender::new(0),
        }
    }

    /// Change the inventory and tell every subscriber.
    pub fn update<R>(&self, f: impl FnOnce(&mut Feed) -> R) -> R {
        let mut feed = self.feed.write().unwrap_or_else(|e| e.into_inner());
        let r = f(&mut feed);
        // Bumped under the write lock: a reader that takes the version under the read lock
        // never pairs new contents with the old version.
        self.version.send_modify(|v| *v += 1);
        r
    }
}

impl Map for Live {
    fn read(&self, f: &mut dyn FnMut(&Inventory)) {
        let feed = self.feed.read().unwrap_or_else(|e| e.into_inner());
        f(&feed.inventory)
    }

    fn synced(&self) -> bool {
        self.fixed || self.feed.read().is_ok_and(|f| f.is_synced())
    }

    fn changes(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }
}
