//! Leader election on a `coordination.k8s.io/v1` Lease, as client-go's leaderelection does it:
//! the holder renews `renewTime` every period; anyone may take the Lease once
//! `renewTime + leaseDurationSeconds` has passed. Every write is a replace with the
//! resourceVersion read (or a create), so two replicas never both win the same round.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use std::time::Duration;

/// Who holds a Lease, and until when.
#[derive(Debug, Clone, PartialEq)]
pub struct Holding {
    /// The holder's identity (empty when released).
    pub holder: String,
    /// When the holder last renewed.
    pub renewed: Option<Timestamp>,
    /// How long a renewal holds.
    pub duration: Duration,
}

impl Holding {
    fn of(lease: &Lease) -> Holding {
        let spec = lease.spec.clone().unwrap_or_default();
        Holding {
            holder: spec.holder_identity.unwrap_or_default(),
            renewed: spec.renew_time.map(|t| t.0),
            duration: Duration::from_secs(spec.lease_duration_seconds.unwrap_or(0).max(0) as u64),
        }
    }

    /// May `me` take or keep the Lease at `now`: it is mine, released, or expired.
    ///
    /// ```
    /// use wlmap_controller::leader::Holding;
    /// let now = k8s_openapi::jiff::Timestamp::from_second(1_000).unwrap();
    /// let h = |holder: &str, at: i64| Holding { holder: holder.into(),
    ///     renewed: Some(k8s_openapi::jiff::Timestamp::from_second(at).unwrap()),
    ///     duration: std::time::Duration::from_secs(15) };
    /// assert!(h("a", 990).open_to("a", now));   // mine
    /// assert!(!h("b", 990).open_to("a", now));  // b renewed 10 s ago
    /// assert!(h("b", 980).open_to("a", now));   // b is 20 s late
    /// assert!(h("", 999).open_to("a", now));    // released
    /// ```
    pub fn open_to(&self, me: &str, now: Timestamp) -> bool {
        if self.holder.is_empty() || self.holder == me {
            return true;
        }
        let Some(renewed) = self.renewed else {
            return true;
        };
        let expiry = renewed + SignedDuration::try_from(self.duration).unwrap_or_default();
        expiry < now
    }
}

/// One replica's side of the election.
pub struct Elector {
    api: Api<Lease>,
    name: String,
    identity: String,
    duration: Duration,
}

impl Elector {
    /// An elector for the Lease `name` in the Api's namespace.
    pub fn new(api: Api<Lease>, name: &str, identity: &str, duration: Duration) -> Elector {
        Elector {
            api,
            name: name.to_string(),
            identity: identity.to_string(),
            duration,
        }
    }

    /// One round: take or renew the Lease if it is open to us. `Ok(true)` while we hold it.
    pub async fn round(&self) -> Result<bool, kube::Error> {
        let now = Timestamp::now();
        let Some(lease) = self.api.get_opt(&self.name).await? else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..Default::default()
                },
                spec: Some(self.spec(None, now)),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        };
        let held = Holding::of(&lease);
        if !held.open_to(&self.identity, now) {
            return Ok(false);
        }
        let mut next = lease.clone();
        next.spec = Some(self.spec(Some(&lease), now));
        // The resourceVersion read is the precondition: a concurrent taker makes this a 409.
        match self
            .api
            .replace(&self.name, &PostParams::default(), &next)
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Give the Lease up (on shutdown), so another replica takes over at once.
    pub async fn release(&self) -> Result<(), kube::Error> {
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            return Ok(());
        };
        if Holding::of(&lease).holder != self.identity {
            return Ok(());
        }
        if let Some(spec) = lease.spec.as_mut() {
            spec.holder_identity = None;
            spec.lease_duration_seconds = Some(1);
        }
        self.api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
            .map(|_| ())
    }

    fn spec(&self, old: Option<&Lease>, now: Timestamp) -> LeaseSpec {
        let old_spec = old.and_then(|l| l.spec.clone()).unwrap_or_default();
        let taking = old_spec.holder_identity.as_deref() != Some(self.identity.as_str());
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(self.duration.as_secs() as i32),
            acquire_time: if taking {
                Some(MicroTime(now))
            } else {
                old_spec.acquire_time.clone()
            },
            renew_time: Some(MicroTime(now)),
            lease_transitions: Some(
                old_spec.lease_transitions.unwrap_or(0) + i32::from(taking && old.is_some()),
            ),
            ..Default::default()
        }
    }
}
