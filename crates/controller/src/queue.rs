//! The work queue: kube-runtime's scheduler holds each workload key once, at its earliest
//! due time (a change while a retry waits is reconciled at once), and [`Backoff`] spaces out
//! the retries of one workload that keeps failing without slowing down the others.

use futures::Stream;
use futures::channel::mpsc;
use kube::runtime::scheduler::{ScheduleRequest, scheduler};
use std::collections::HashMap;
use std::time::Duration;
use tokio::time::Instant;
use wlmap_inventory::ObjectKey;

/// Where keys are queued (cheap to clone; every task that hears of a change holds one).
#[derive(Clone)]
pub struct Queue {
    tx: mpsc::UnboundedSender<ScheduleRequest<ObjectKey>>,
}

impl Queue {
    /// A queue and the stream of due keys its worker takes from it.
    pub fn new() -> (Queue, impl Stream<Item = ObjectKey> + Send + Unpin) {
        let (tx, rx) = mpsc::unbounded();
        (Queue { tx }, Box::pin(scheduler(rx)))
    }

    /// Reconcile these workloads now (a key already waiting is taken once).
    pub fn now(&self, keys: impl IntoIterator<Item = ObjectKey>) {
        let run_at = Instant::now();
        for message in keys {
            // Fails only once the worker has gone, when the process is ending.
            let _ = self.tx.unbounded_send(ScheduleRequest { message, run_at });
        }
    }

    /// Reconcile this workload after a pause (unless something asks for it sooner).
    pub fn after(&self, key: ObjectKey, pause: Duration) {
        let run_at = Instant::now() + pause;
        let _ = self.tx.unbounded_send(ScheduleRequest {
            message: key,
            run_at,
        });
    }
}

/// Per-workload exponential backoff: the first retry after [`Backoff::FIRST`], each further
/// failure doubling it up to [`Backoff::MOST`]; a success forgets the workload's failures.
///
/// ```
/// use std::time::Duration;
/// use wlmap_controller::queue::Backoff;
/// use wlmap_inventory::ObjectKey;
/// let key = ObjectKey::new("ml", wlmap_schema::GroupKind::new("batch", "Job"), "train");
/// let mut b = Backoff::default();
/// assert_eq!(b.failed(&key, true), Duration::from_millis(500));
/// assert_eq!(b.failed(&key, true), Duration::from_secs(1));
/// // An error that waits for a change (a definition that does not evaluate) waits longest.
/// assert_eq!(b.failed(&key, false), Backoff::MOST);
/// b.succeeded(&key);
/// assert_eq!(b.failed(&key, true), Duration::from_millis(500));
/// ```
#[derive(Debug, Default)]
pub struct Backoff {
    failures: HashMap<ObjectKey, u32>,
}

impl Backoff {
    /// The pause after a first failure.
    pub const FIRST: Duration = Duration::from_millis(500);
    /// The longest pause; also the pause after an error that lasts until something changes
    /// (a refusal, a definition that does not evaluate): a change queues the workload anyway,
    /// and this picks up what changes unseen (a role granted).
    pub const MOST: Duration = Duration::from_secs(300);

    /// Count a failure; the pause before the next attempt.
    pub fn failed(&mut self, key: &ObjectKey, transient: bool) -> Duration {
        let n = self.failures.entry(key.clone()).or_insert(0);
        *n = n.saturating_add(1);
        if !transient {
            return Self::MOST;
        }
        Self::FIRST
            .saturating_mul(1 << (*n - 1).min(16))
            .min(Self::MOST)
    }

    /// Forget a workload's failures.
    pub fn succeeded(&mut self, key: &ObjectKey) {
        self.failures.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use wlmap_schema::GroupKind;

    fn key(n: &str) -> ObjectKey {
        ObjectKey::new("ml", GroupKind::new("batch", "Job"), n)
    }

    /// A key queued twice while waiting comes out once; a retry asked for later is overtaken
    /// by a change that asks for it now.
    #[tokio::test(start_paused = true)]
    async fn keys_come_out_once_at_their_earliest_time() {
        let (q, mut due) = Queue::new();
        q.now([key("a"), key("b"), key("a")]);
        let first = [due.next().await, due.next().await];
        assert!(first.contains(&Some(key("a"))) && first.contains(&Some(key("b"))));
        q.after(key("c"), Duration::from_secs(60));
        q.now([key("c")]);
        let start = Instant::now();
        assert_eq!(due.next().await, Some(key("c")));
        assert!(start.elapsed() < Duration::from_secs(60));
        // Nothing more is due: the later request was the same key.
        q.after(key("d"), Duration::from_secs(5));
        assert_eq!(due.next().await, Some(key("d")));
        assert!(Instant::now() - start >= Duration::from_secs(5));
    }

    #[test]
    fn backoff_doubles_up_to_its_cap_per_key() {
        let mut b = Backoff::default();
        let pauses: Vec<Duration> = (0..12).map(|_| b.failed(&key("a"), true)).collect();
        assert_eq!(pauses[3], Duration::from_secs(4));
        assert_eq!(pauses[11], Backoff::MOST);
        // Another workload starts from the first pause.
        assert_eq!(b.failed(&key("b"), true), Backoff::FIRST);
    }
}
