//! The controller's own metrics, in the OpenMetrics text format Prometheus scrapes, named as
//! kube-state-metrics names things (`wlmap_<subsystem>_<what>_<unit>`, counters `_total`).

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

type Labels = Vec<(&'static str, String)>;

/// Every metric the controller exports.
pub struct Metrics {
    registry: Registry,
    /// Admission reviews answered, by result: `grouped`, `already_grouped`, `no_gang`,
    /// `unplaced`, `not_a_pod`.
    pub admissions: Family<Labels, Counter>,
    /// Time from a review's arrival to its answer, inside the webhook.
    pub admission_duration: Histogram,
    /// Pods of a workload with gang instructions let through without a group, by reason:
    /// `owner_not_found`, `evaluation`, `not_a_member`.
    pub pods_unplaced: Family<Labels, Counter>,
    /// Karta reviews answered, by result: `allowed`, `denied`.
    pub karta_reviews: Family<Labels, Counter>,
    /// Owners the webhook fetched because the watch had not brought them yet.
    pub owner_fetches: Counter,
    /// Workload reconciles, by result: `applied`, `unchanged`, `conflict`, `error`.
    pub reconciles: Family<Labels, Counter>,
    /// Gang object writes, by action: `apply`, `delete`.
    pub writes: Family<Labels, Counter>,
    /// Pods of workloads with gang instructions that carry no group (created while the
    /// webhook was unreachable, or let through unplaced), as of the last reconcile of each.
    pub pods_ungrouped: Gauge,
    /// 1 while this replica holds the leader Lease.
    pub leader: Gauge,
    /// Top-level workloads in the live inventory.
    pub workloads: Gauge,
    /// 1, labelled with the running wlmap's version and revision.
    pub build_info: Family<Labels, Gauge>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// The metrics, registered.
    ///
    /// ```
    /// let m = wlmap_controller::metrics::Metrics::new();
    /// m.admissions.get_or_create(&vec![("result", "grouped".to_string())]).inc();
    /// let text = m.render();
    /// assert!(text.contains(r#"wlmap_admission_requests_total{result="grouped"} 1"#), "{text}");
    /// ```
    pub fn new() -> Metrics {
        let mut registry = Registry::default();
        let admissions = Family::<Labels, Counter>::default();
        let pods_unplaced = Family::<Labels, Counter>::default();
        let reconciles = Family::<Labels, Counter>::default();
        let writes = Family::<Labels, Counter>::default();
        let owner_fetches = Counter::default();
        let karta_reviews = Family::<Labels, Counter>::default();
        // 50 µs to about 0.5 s in steps of 1.5×: fine enough to read a p99 against 5 ms.
        let admission_duration = Histogram::new(exponential_buckets(0.00005, 1.5, 24));
        let (leader, workloads, pods_ungrouped) =
            (Gauge::default(), Gauge::default(), Gauge::default());
        registry.register(
            "wlmap_admission_requests",
            "Pod admission reviews answered, by result",
            admissions.clone(),
        );
        registry.register_with_unit(
            "wlmap_admission_duration",
            "Time to answer a pod admission review, inside the webhook",
            Unit::Seconds,
            admission_duration.clone(),
        );
        registry.register(
            "wlmap_admission_pods_unplaced",
            "Pods of workloads with gang instructions let through without a group, by reason",
            pods_unplaced.clone(),
        );
        registry.register(
            "wlmap_admission_karta_reviews",
            "Karta admission reviews answered, by result",
            karta_reviews.clone(),
        );
        registry.register(
            "wlmap_admission_owner_fetches",
            "Owners the webhook fetched because the watch had not brought them yet",
            owner_fetches.clone(),
        );
        registry.register(
            "wlmap_controller_reconciles",
            "Workload reconciles, by result",
            reconciles.clone(),
        );
        registry.register(
            "wlmap_controller_gang_object_writes",
            "Gang object writes (server-side apply or delete), by action",
            writes.clone(),
        );
        registry.register(
            "wlmap_controller_pods_ungrouped",
            "Pods of workloads with gang instructions that carry no scheduling group",
            pods_ungrouped.clone(),
        );
        registry.register(
            "wlmap_controller_leader",
            "1 while this replica holds the leader Lease",
            leader.clone(),
        );
        let build_info = Family::<Labels, Gauge>::default();
        registry.register(
            "wlmap_build_info",
            "The running wlmap: 1, labelled with its version and the git revision it was built from",
            build_info.clone(),
        );
        registry.register(
            "wlmap_inventory_workloads",
            "Top-level workloads in the live inventory",
            workloads.clone(),
        );
        Metrics {
            registry,
            admissions,
            admission_duration,
            pods_unplaced,
            owner_fetches,
            karta_reviews,
            reconciles,
            writes,
            pods_ungrouped,
            leader,
            workloads,
            build_info,
        }
    }

    /// Say which build runs (`wlmap_build_info`).
    ///
    /// ```
    /// let m = wlmap_controller::metrics::Metrics::new();
    /// m.set_build(&wlmap_controller::Build { version: "0.1.0".into(), revision: "abc".into() });
    /// assert!(m.render().contains(r#"wlmap_build_info{version="0.1.0",revision="abc"} 1"#));
    /// ```
    pub fn set_build(&self, b: &crate::options::Build) {
        let labels = vec![
            ("version", b.version.clone()),
            ("revision", b.revision.clone()),
        ];
        self.build_info.get_or_create(&labels).set(1);
    }

    /// Count one under a label.
    pub fn count(family: &Family<Labels, Counter>, key: &'static str, value: &str) {
        family.get_or_create(&vec![(key, value.to_string())]).inc();
    }

    /// The metrics as OpenMetrics text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}
