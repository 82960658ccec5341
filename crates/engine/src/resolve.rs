//! Resolving one workload object: the component tree (instances, replicas), desired pods,
//! normalised pod templates and resources, and the status. Spec only; pods come later
//! ([`crate::attribute`]).

use crate::definition::{Definition, SpecShape};
use crate::error::{Error, Result};
use crate::object::Object;
use crate::resources::{GpuPolicy, Resources, pod_request};
use crate::status::{Phase, Status, evaluate};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;
use wlmap_expr::{Val, from_val, to_jq_string};
use wlmap_json::Field;
use wlmap_schema::GroupVersionKind;

/// Replica copies of a sub-structure are expanded into nodes up to this many; beyond it the
/// subtree is kept once with a multiplier, so a hostile `replicas: 1e9` cannot exhaust memory.
///
/// ```
/// assert_eq!(wlmap_engine::MAX_EXPANDED_REPLICAS, 10_000);
/// ```
pub const MAX_EXPANDED_REPLICAS: u64 = 10_000;

/// A pod placed in the tree.
///
/// ```
/// let pod = wlmap_engine::Object::new(serde_json::json!({"kind": "Pod", "metadata": {"name": "p"},
///     "status": {"phase": "Failed", "reason": "Evicted"}}));
/// let info = wlmap_engine::PodInfo::from_pod(&pod, &Default::default());
/// assert_eq!((info.phase.as_str(), info.reason.as_deref()), ("Failed", Some("Evicted")));
/// assert!(!info.ready);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodInfo {
    /// Pod name.
    pub name: String,
    /// `status.phase`.
    pub phase: String,
    /// The `Ready` condition is True.
    pub ready: bool,
    /// `spec.nodeName`.
    pub node: Option<String>,
    /// GPUs the pod requests.
    pub gpus: f64,
    /// Replica key read by the replica selector, when any.
    pub replica: Option<String>,
    /// Why the pod is not running (waiting reason, status reason), when known.
    pub reason: Option<String>,
    /// The scheduler's words when it could not place the pod (the `PodScheduled=False`
    /// condition's reason and message).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unscheduled: Option<Unscheduled>,
    /// Its effective request.
    #[serde(skip)]
    pub resources: Resources,
    /// GPU devices allocated to it through DRA ResourceClaims ([`crate::dra::held_devices`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<crate::dra::HeldDevice>,
    /// It has a claim the scheduler made for DRA-backed extended resources: its extended
    /// GPUs are held as devices, not counted again from its spec.
    #[serde(skip)]
    pub extended_by_dra: bool,
}

impl PodInfo {
    /// Read a pod object.
    ///
    /// ```
    /// let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
    ///   "metadata": {"name": "p"}, "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 4}}}]},
    ///   "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}));
    /// let info = wlmap_engine::PodInfo::from_pod(&pod, &Default::default());
    /// assert!(info.ready);
    /// assert_eq!(info.gpus, 4.0);
    /// ```
    pub fn from_pod(pod: &Object, gpu: &GpuPolicy) -> PodInfo {
        let j = pod.json();
        let status = j.field("status");
        let conditions = status
            .and_then(|s| s.field("conditions"))
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        let condition = |kind: &str, value: &str| {
            conditions.iter().find(|c| {
                c.field("type").and_then(Value::as_str) == Some(kind)
                    && c.field("status").and_then(Value::as_str) == Some(value)
            })
        };
        let ready = condition("Ready", "True").is_some();
        let waiting = status
            .and_then(|s| s.field("containerStatuses"))
            .and_then(Value::as_array)
            .and_then(|cs| {
                cs.iter().find_map(|c| {
                    // Fields, not `pointer`: it allocates per segment, and this runs per pod.
                    let state = c.field("state");
                    let reason = |k| state?.field(k)?.field("reason");
                    reason("waiting")
                        .or_else(|| reason("terminated"))
                        .and_then(Value::as_str)
                })
            });
        let not_placed = condition("PodScheduled", "False");
        let unschedulable = not_placed.and_then(|c| c.field("reason").and_then(Value::as_str));
        let text =
            |c: &Value, k: &str| c.field(k).and_then(Value::as_str).unwrap_or("").to_string();
        let unscheduled = not_placed.map(|c| Unscheduled {
            reason: text(c, "reason"),
            message: text(c, "message"),
        });
        let reason = status
            .and_then(|s| s.field("reason"))
            .and_then(Value::as_str)
            .or(waiting)
            .or(unschedulable)
            .map(str::to_string);
        let resources = pod_request(j.field("spec").unwrap_or(&Value::Null));
        PodInfo {
            name: pod.name().to_string(),
            phase: status
                .and_then(|s| s.field("phase"))
                .and_then(Value::as_str)
                .unwrap_or("Unknown")
                .to_string(),
            ready,
            node: j
                .field("spec")
                .and_then(|s| s.field("nodeName"))
                .and_then(Value::as_str)
                .map(str::to_string),
            gpus: resources.gpus(gpu),
            replica: None,
            reason,
            unscheduled,
            resources,
            held: Vec::new(),
            extended_by_dra: pod
                .json()
                .pointer("/status/extendedResourceClaimStatus/resourceClaimName")
                .is_some(),
        }
    }

    /// GPUs the pod holds: the GPU devices allocated to its DRA claims, and, once Running, the
    /// GPUs its spec asks for from device plugins (unless the scheduler serves its extended
    /// resources through DRA: those are among the devices).
    ///
    /// ```
    /// let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
    ///   "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 4}}}]},
    ///   "status": {"phase": "Running"}}));
    /// assert_eq!(wlmap_engine::PodInfo::from_pod(&pod, &Default::default()).gpus_held(), 4.0);
    /// ```
    pub fn gpus_held(&self) -> f64 {
        self.plugin_gpus_held() + self.held.len() as f64
    }

    /// The GPUs a running pod holds through device plugins (extended resources not backed
    /// by DRA).
    fn plugin_gpus_held(&self) -> f64 {
        if self.phase == "Running" && !self.extended_by_dra {
            self.gpus
        } else {
            0.0
        }
    }

    /// The GPUs these pods hold together: each pod's device-plugin GPUs, and each DRA device
    /// once, however many of the pods share the claim it is allocated to.
    ///
    /// ```
    /// use wlmap_engine::{PodInfo, dra::HeldDevice};
    /// let device = HeldDevice { claim: "shared".into(), request: "gpu".into(), class: "gpu.nvidia.com".into(),
    ///     driver: "gpu.nvidia.com".into(), pool: "n1".into(), device: "gpu-0".into(), profile: None };
    /// let pod = |name: &str| {
    ///     let mut p = PodInfo::from_pod(&wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
    ///         "metadata": {"name": name}, "status": {"phase": "Running"}})), &Default::default());
    ///     p.held = vec![device.clone()];
    ///     p
    /// };
    /// let (a, b) = (pod("a"), pod("b"));
    /// assert_eq!(a.gpus_held() + b.gpus_held(), 2.0); // each pod holds it
    /// assert_eq!(PodInfo::gpus_held_together([&a, &b]), 1.0); // the workload holds it once
    /// ```
    pub fn gpus_held_together<'a>(pods: impl IntoIterator<Item = &'a PodInfo>) -> f64 {
        let mut devices: BTreeSet<(&str, &str, &str)> = BTreeSet::new();
        let mut plugins = 0.0;
        for p in pods {
            plugins += p.plugin_gpus_held();
            devices.extend(
                p.held
                    .iter()
                    .map(|d| (d.driver.as_str(), d.pool.as_str(), d.device.as_str())),
            );
        }
        plugins + devices.len() as f64
    }
}

/// Why the scheduler has not placed a pod, in its own words.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Unscheduled {
    /// The condition's reason (`Unschedulable`, `SchedulingGated`).
    pub reason: String,
    /// The scheduler's message (`0/3 nodes are available: 3 Insufficient nvidia.com/gpu.`).
    pub message: String,
}

/// Pods the scheduler has not placed for one reason, counted (pods of one shape get the same
/// message, which is said once).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Waiting {
    /// The scheduler's reason and message.
    #[serde(flatten)]
    pub why: Unscheduled,
    /// How many pods it holds back.
    pub pods: usize,
}

/// A node of the component tree: one instance (and replica copy) of a component.
///
/// ```
/// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
/// let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}));
/// let w = wlmap_engine::resolve(&def, &pod).unwrap();
/// assert_eq!((w.root.component.as_str(), w.root.desired_pods), ("pod", 1));
/// assert!(w.root.has_pod_spec && w.root.path.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    /// Component name.
    pub component: String,
    /// Component kind, when the definition names one.
    pub kind: Option<GroupVersionKind>,
    /// Instance id (`instanceIdPath`), when the component has instances.
    pub instance: Option<String>,
    /// Replica key, for expanded copies of a sub-structure.
    pub replica: Option<String>,
    /// `name[instance]#replica` of every ancestor below the root and this node, joined by `/`;
    /// empty for the root.
    pub path: String,
    /// Desired replicas: pods of this instance for a pod-bearing component, copies of the
    /// subtree otherwise (1 for an expanded copy).
    pub replicas: u64,
    /// Minimum replicas, when the definition says.
    pub min_replicas: Option<u64>,
    /// Maximum replicas, when the definition says.
    pub max_replicas: Option<u64>,
    /// Desired pods of this node's subtree.
    pub desired_pods: u64,
    /// True when the component has a pod spec.
    pub has_pod_spec: bool,
    /// The normalised PodTemplateSpec of one pod of this instance (shared by the replica copies
    /// of a subtree: cloning a node does not copy it).
    pub template: Option<Arc<Value>>,
    /// Effective request of one pod of this instance.
    #[serde(skip)]
    pub pod_request: Option<Resources>,
    /// Desired resources of the subtree.
    #[serde(skip)]
    pub resources: Resources,
    /// Child nodes.
    pub children: Vec<Node>,
    /// Pods placed here (after attribution).
    pub pods: Vec<PodInfo>,
    /// Index of the component in the definition (root = 0).
    #[serde(skip)]
    pub(crate) component_index: usize,
    /// Why this component could not be read from the object (one of its paths failed):
    /// the node stands for it, empty, and the rest of the tree is still shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Node {
    /// This node and every descendant, depth first.
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// # let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}}));
    /// let w = wlmap_engine::resolve(&def, &pod).unwrap();
    /// assert_eq!(w.root.walk().count(), 1);
    /// ```
    pub fn walk(&self) -> Box<dyn Iterator<Item = &Node> + '_> {
        Box::new(std::iter::once(self).chain(self.children.iter().flat_map(|c| c.walk())))
    }

    /// A pod of this subtree by name, to change.
    fn pod_mut(&mut self, name: &str) -> Option<&mut PodInfo> {
        if let Some(i) = self.pods.iter().position(|p| p.name == name) {
            return self.pods.get_mut(i);
        }
        self.children.iter_mut().find_map(|c| c.pod_mut(name))
    }

    /// Pods in this subtree.
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// # let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}));
    /// let w = wlmap_engine::resolve(&def, &pod).unwrap();
    /// assert_eq!(w.root.all_pods().count(), 0);
    /// ```
    pub fn all_pods(&self) -> impl Iterator<Item = &PodInfo> {
        self.walk().flat_map(|n| n.pods.iter())
    }

    /// Ready pods in this subtree.
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// # let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}));
    /// # let w = wlmap_engine::resolve(&def, &pod).unwrap();
    /// assert_eq!(w.root.ready_pods(), 0);
    /// ```
    pub fn ready_pods(&self) -> u64 {
        self.all_pods().filter(|p| p.ready).count() as u64
    }

    /// The segment of this node in a path: `name`, `name[instance]`, `name#replica`.
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// # let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}));
    /// # let w = wlmap_engine::resolve(&def, &pod).unwrap();
    /// assert_eq!(w.root.segment(), "pod");
    /// ```
    pub fn segment(&self) -> String {
        let mut s = self.component.clone();
        if let Some(i) = &self.instance {
            s.push_str(&format!("[{i}]"));
        }
        if let Some(r) = &self.replica {
            s.push_str(&format!("#{r}"));
        }
        s
    }
}

/// A resolved workload.
///
/// ```
/// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
/// let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"}, "spec": {}}));
/// let w = wlmap_engine::resolve(&def, &pod).unwrap();
/// assert_eq!((w.definition.as_str(), w.kind.as_str(), w.namespace.as_str()), ("core-pod-v1", "Pod", "ml"));
/// assert!(!w.pods_observed()); // no pods attributed yet
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Workload {
    /// Definition name.
    pub definition: String,
    /// The workload's apiVersion.
    pub api_version: String,
    /// The workload object's kind (`JobSet`).
    pub kind: String,
    /// The workload object's name.
    pub name: String,
    /// The workload object's namespace (empty for a cluster-scoped kind).
    pub namespace: String,
    /// The status the definition reads from the object.
    pub status: Status,
    /// The component tree; the root is the workload itself.
    pub root: Node,
    /// Pods whose owner chain reaches the workload but that no component claims.
    pub unattributed: Vec<PodInfo>,
    /// True once pods were attributed (observed counts are meaningful): see
    /// [`Workload::pods_observed`].
    pub(crate) pods_observed: bool,
    /// The definition's own reading, kept while the pods overrule it (see
    /// [`Workload::settle_status`]).
    #[serde(skip)]
    pub(crate) overruled: Option<Box<Status>>,
    /// The controller named by `spec.managedBy` (or `spec.runPolicy.managedBy`) when it is
    /// not the kind's own in-cluster controller: the workload runs elsewhere (MultiKueue runs
    /// it on a worker cluster and copies its status back), so no pods of it are here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<String>,
    /// What could not be counted (a missing ResourceClaimTemplate, all of a node's devices
    /// without its ResourceSlices) and the choices made (a `firstAvailable` alternative).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The instances each `podGroup` sub-group covers, where its `instancesPath` says (one
    /// entry per sub-group; `None` for every instance), or why they could not be read.
    #[serde(skip)]
    pub(crate) sub_group_instances: Vec<Option<std::result::Result<BTreeSet<String>, String>>>,
}

impl Workload {
    /// Read a pod again where it already is: its facts (phase, readiness, node, requests,
    /// reason) replace those held, its place and replica key stay. For a new version of a pod
    /// that agrees with the old one at every place placement reads
    /// ([`crate::Definition::pod_placement_reads`]), under the same owner, this gives what
    /// attributing every pod again gives. `None` when the workload does not hold the pod;
    /// else whether what it shows changed.
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// let pod = |phase: &str| wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
    ///     "metadata": {"name": "p", "uid": "u"}, "spec": {}, "status": {"phase": phase}}));
    /// let mut w = wlmap_engine::resolve(&def, &pod("Pending")).unwrap();
    /// wlmap_engine::attribute(&def, &mut w, &pod("Pending"), &[pod("Pending")]).unwrap();
    /// assert_eq!(w.refresh_pod(&pod("Running")), Some(true));
    /// assert_eq!(w.root.pods[0].phase, "Running");
    /// assert_eq!(w.refresh_pod(&pod("Running")), Some(false));
    /// ```
    pub fn refresh_pod(&mut self, pod: &Object) -> Option<bool> {
        let held = self
            .unattributed
            .iter_mut()
            .find(|p| p.name == pod.name())
            .or_else(|| self.root.pod_mut(pod.name()))?;
        let mut fresh = PodInfo::from_pod(pod, &GpuPolicy::default());
        fresh.replica = held.replica.take();
        // Its devices come from its claims, not from the pod: kept until it is attributed again.
        fresh.held = std::mem::take(&mut held.held);
        let changed = fresh != *held;
        *held = fresh;
        Some(self.settle_status() | changed)
    }

    /// Let the pods overrule what the definition reads from the workload object, where the
    /// object cannot tell:
    /// - a workload read as Running or Initializing one of whose pods the kubelet keeps
    ///   failing to start ([`RETRIED_FAILURES`]: a crash loop, an image it cannot pull) is
    ///   Degraded, with reason [`PODS_FAILING`]: StatefulSets, ReplicaSets, LeaderWorkerSets
    ///   and most operators report no such failure of their own;
    /// - a workload read as Running from counters which cannot tell a pending pod from a
    ///   running one (a JobSet's `active` Jobs, a Job's `active` pods) whose pods are all
    ///   Pending is Initializing, with reason [`PODS_PENDING`].
    ///
    /// Once the pods no longer say so, or are no longer shown, the definition's reading is
    /// back. Returns whether the status changed. Called after every change to the pods
    /// ([`crate::attribute`], [`Workload::refresh_pod`]).
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// use wlmap_engine::Phase;
    /// let pod = |phase: &str| wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
    ///     "metadata": {"name": "p", "uid": "u"}, "spec": {}, "status": {"phase": phase}}));
    /// // The example definition reads Running from the phase; its pod says Pending.
    /// let mut w = wlmap_engine::resolve(&def, &pod("Running")).unwrap();
    /// w.root.pods.push(wlmap_engine::PodInfo::from_pod(&pod("Pending"), &Default::default()));
    /// assert!(!w.settle_status()); // pods not attributed: the definition's reading stands
    /// wlmap_engine::attribute(&def, &mut w, &pod("Running"), &[]).unwrap();
    /// w.root.pods = vec![wlmap_engine::PodInfo::from_pod(&pod("Pending"), &Default::default())];
    /// assert!(w.settle_status());
    /// assert_eq!((w.status.phase, w.status.reason.as_deref()), (Phase::Initializing, Some("PodsPending")));
    /// assert_eq!(w.refresh_pod(&pod("Running")), Some(true));
    /// assert_eq!(w.status.phase, Phase::Running);
    /// ```
    pub fn settle_status(&mut self) -> bool {
        let before = (self.status.phase, self.status.message.clone());
        if let Some(read) = self.overruled.take() {
            self.status = *read;
        }
        if let Some((phase, reason, message)) = self.pods_say() {
            let read = self.status.clone();
            let status = &mut self.status;
            status.phase = phase;
            // Every matched status stays but the one overruled.
            status.phases = Phase::PRECEDENCE
                .into_iter()
                .filter(|p| *p == phase || (*p != read.phase && read.phases.contains(p)))
                .collect();
            status.reason = Some(reason.into());
            status.message = Some(message);
            self.overruled = Some(Box::new(read));
        }
        before != (self.status.phase, self.status.message.clone())
    }

    /// What the pods say over the definition's reading (see [`Workload::settle_status`]),
    /// with the reason and message: `None` when they say nothing more.
    fn pods_say(&self) -> Option<(Phase, &'static str, String)> {
        if !self.pods_observed {
            return None;
        }
        let (mut n, mut pending) = (0usize, 0usize);
        let mut failing: std::collections::BTreeMap<&str, usize> = Default::default();
        for p in self.root.all_pods().chain(self.unattributed.iter()) {
            n += 1;
            pending += usize::from(p.phase == "Pending");
            if let Some(r) = p.reason.as_deref().filter(|r| RETRIED_FAILURES.contains(r)) {
                *failing.entry(r).or_default() += 1;
            }
        }
        let read = self.status.phase;
        if !failing.is_empty() && matches!(read, Phase::Running | Phase::Initializing) {
            let said: Vec<String> = failing
                .iter()
                .map(|(r, k)| format!("{k} pod(s) {r}"))
                .collect();
            let message = format!("{}: the kubelet keeps retrying", said.join(", "));
            return Some((Phase::Degraded, PODS_FAILING, message));
        }
        if read == Phase::Running && n > 0 && pending == n {
            return Some((Phase::Initializing, PODS_PENDING, pods_pending_message(n)));
        }
        None
    }

    /// Whether pods were attributed, so that observed and ready counts mean something (a
    /// workload read from its spec alone has none, and one managed elsewhere
    /// ([`Workload::managed_by`]) has its pods in another cluster).
    pub fn pods_observed(&self) -> bool {
        self.pods_observed && self.managed_by.is_none()
    }

    /// Read as the spec alone: the pods attributed are kept, but the counts of observed and
    /// ready pods are not to be shown (a manifest given without its pods).
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// # let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"}, "spec": {}}));
    /// let mut w = wlmap_engine::resolve(&def, &pod).unwrap();
    /// wlmap_engine::attribute(&def, &mut w, &pod, &[pod.clone()]).unwrap();
    /// assert!(w.pods_observed());
    /// w.spec_only();
    /// assert!(!w.pods_observed());
    /// ```
    pub fn spec_only(&mut self) {
        self.pods_observed = false;
        self.settle_status();
    }

    /// The components that could not be read from the object, each with its error: a partial
    /// answer (the status and the other components are still given).
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// # let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}}));
    /// assert!(wlmap_engine::resolve(&def, &pod).unwrap().unreadable().is_empty());
    /// ```
    pub fn unreadable(&self) -> Vec<(&Node, &str)> {
        self.root
            .walk()
            .filter_map(|n| n.error.as_deref().map(|e| (n, e)))
            .collect()
    }

    /// Desired GPUs (from the spec) under a policy.
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// # let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 2}}}]}}));
    /// let w = wlmap_engine::resolve(&def, &pod).unwrap();
    /// assert_eq!(w.gpus(&Default::default()), 2.0);
    /// ```
    pub fn gpus(&self, policy: &GpuPolicy) -> f64 {
        self.root.resources.gpus(policy)
    }

    /// GPUs its pods hold ([`PodInfo::gpus_held`]), attributed or not.
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// # let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}));
    /// assert_eq!(wlmap_engine::resolve(&def, &pod).unwrap().gpus_held(), 0.0);
    /// ```
    pub fn gpus_held(&self) -> f64 {
        PodInfo::gpus_held_together(self.root.all_pods().chain(&self.unattributed))
    }

    /// True when the workload asks for devices through DRA claims (a pod template names
    /// one) or its pods hold some: what it shows then depends on ResourceClaimTemplates,
    /// shared ResourceClaims, DeviceClasses and ResourceSlices too.
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
    ///     "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "four-gpus"}]}}));
    /// assert!(wlmap_engine::resolve(&def, &pod).unwrap().uses_dra());
    /// ```
    pub fn uses_dra(&self) -> bool {
        let claims = |t: &Arc<Value>| {
            t.pointer("/spec/resourceClaims")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
        };
        self.root
            .walk()
            .any(|n| n.template.as_ref().is_some_and(claims))
            || self
                .root
                .all_pods()
                .chain(&self.unattributed)
                .any(|p| !p.held.is_empty())
    }

    /// Pods of the workload (their owner chain reaches it): attributed and unattributed.
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// # let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}));
    /// # let w = wlmap_engine::resolve(&def, &pod).unwrap();
    /// assert_eq!(w.observed_pods(), 0);
    /// ```
    pub fn observed_pods(&self) -> u64 {
        (self.root.all_pods().count() + self.unattributed.len()) as u64
    }

    /// Why pods of the workload are not placed, in the scheduler's words: one entry per
    /// distinct reason and message, the most pods first.
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// let pending = |name: &str| wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
    ///     "metadata": {"name": name, "uid": name}, "spec": {}, "status": {"phase": "Pending", "conditions": [
    ///     {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
    ///      "message": "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."}]}}));
    /// let mut w = wlmap_engine::resolve(&def, &pending("p")).unwrap();
    /// wlmap_engine::attribute(&def, &mut w, &pending("p"), &[pending("p")]).unwrap();
    /// let why = w.waiting();
    /// assert_eq!((why[0].pods, why[0].why.reason.as_str()), (1, "Unschedulable"));
    /// assert!(why[0].why.message.contains("Insufficient nvidia.com/gpu"));
    /// ```
    pub fn waiting(&self) -> Vec<Waiting> {
        let mut counts: std::collections::BTreeMap<&Unscheduled, usize> = Default::default();
        let pods = self.root.all_pods().chain(self.unattributed.iter());
        for u in pods.filter_map(|p| p.unscheduled.as_ref()) {
            *counts.entry(u).or_default() += 1;
        }
        let mut out: Vec<Waiting> = counts
            .into_iter()
            .map(|(why, pods)| Waiting {
                why: why.clone(),
                pods,
            })
            .collect();
        out.sort_by_key(|w| std::cmp::Reverse(w.pods));
        out
    }

    /// Ready pods of the workload, attributed or not.
    ///
    /// ```
    /// # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
    /// # let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}));
    /// # let w = wlmap_engine::resolve(&def, &pod).unwrap();
    /// assert_eq!(w.ready_pods(), 0);
    /// ```
    pub fn ready_pods(&self) -> u64 {
        self.root.ready_pods() + self.unattributed.iter().filter(|p| p.ready).count() as u64
    }
}

/// Provides the objects that `references` name (a snapshot, or the cluster).
///
/// ```
/// use wlmap_engine::ReferenceProvider;
/// struct Echo;
/// impl ReferenceProvider for Echo {
///     fn get(&self, _: &wlmap_schema::GroupVersionKind, _: Option<&str>, name: &str) -> Option<serde_json::Value> { Some(serde_json::json!({"name": name})) }
/// }
/// assert_eq!(Echo.get(&Default::default(), None, "q").unwrap()["name"], "q");
/// ```
pub trait ReferenceProvider {
    /// The object of this kind and name, in `namespace` (None for cluster-scoped), if known.
    fn get(&self, kind: &GroupVersionKind, namespace: Option<&str>, name: &str) -> Option<Value>;

    /// Every object of a kind (any version), when the provider can list them (a snapshot,
    /// the files given); `None` when it cannot (the default).
    fn list(&self, kind: &GroupVersionKind) -> Option<Vec<Value>> {
        let _ = kind;
        None
    }
}

/// A provider that knows no objects: every reference resolves to `null`.
///
/// ```
/// use wlmap_engine::ReferenceProvider;
/// let cm = wlmap_schema::GroupVersionKind::new("", "v1", "ConfigMap");
/// assert!(wlmap_engine::NoReferences.get(&cm, Some("default"), "settings").is_none());
/// ```
pub struct NoReferences;

impl ReferenceProvider for NoReferences {
    fn get(&self, _: &GroupVersionKind, _: Option<&str>, _: &str) -> Option<Value> {
        None
    }
}

/// References resolved from a set of objects (a snapshot, the objects of a file): the first
/// object of the same group and kind (any version), namespace and name.
///
/// ```
/// use wlmap_engine::{Object, ObjectsProvider, ReferenceProvider};
/// let objs = vec![Object::new(serde_json::json!({"apiVersion": "a.io/v1", "kind": "R", "metadata": {"name": "r"}}))];
/// let p = ObjectsProvider(&objs);
/// assert!(p.get(&wlmap_schema::GroupVersionKind::new("a.io", "v2", "R"), None, "r").is_some());
/// ```
pub struct ObjectsProvider<'a>(pub &'a [Object]);

impl ReferenceProvider for ObjectsProvider<'_> {
    fn get(&self, kind: &GroupVersionKind, namespace: Option<&str>, name: &str) -> Option<Value> {
        self.0
            .iter()
            .find(|o| {
                let g = o.gvk();
                g.group == kind.group
                    && g.kind == kind.kind
                    && o.name() == name
                    && namespace.is_none_or(|n| o.namespace() == n)
            })
            .map(|o| o.json().clone())
    }

    fn list(&self, kind: &GroupVersionKind) -> Option<Vec<Value>> {
        Some(
            self.0
                .iter()
                .filter(|o| {
                    let g = o.gvk();
                    g.group == kind.group && g.kind == kind.kind
                })
                .map(|o| o.json().clone())
                .collect(),
        )
    }
}

/// Resolve a workload object with a definition (no references).
///
/// ```
/// let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
/// let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
///     "metadata": {"name": "p"}, "spec": {"containers": []}, "status": {"phase": "Running"}}));
/// let w = wlmap_engine::resolve(&def, &pod).unwrap();
/// assert_eq!(w.status.phase, wlmap_engine::Phase::Running);
/// assert_eq!(w.root.desired_pods, 1);
/// ```
pub fn resolve(def: &Definition, obj: &Object) -> Result<Workload> {
    resolve_with(def, obj, &NoReferences)
}

/// Resolve a workload, reading the definition's references through a provider.
///
/// ```
/// let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
/// let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}));
/// let w = wlmap_engine::resolve_with(&def, &pod, &wlmap_engine::NoReferences).unwrap();
/// assert_eq!(w.name, "p");
/// ```
pub fn resolve_with(
    def: &Definition,
    obj: &Object,
    refs: &dyn ReferenceProvider,
) -> Result<Workload> {
    // Expressions read the object's JSON; the jaq value is made only if one needs jaq.
    let vars = reference_values(def, obj, refs)?;
    let status = evaluate(def, obj, &vars, true)?;
    let mut nodes = build(def, 0, obj, &vars)?;
    let mut root = if nodes.is_empty() {
        return Err(Error::Shape {
            definition: def.name(),
            component: def.components[0].def.name.clone(),
            message: "the root component yields no instance".into(),
        });
    } else {
        nodes.swap_remove(0)
    };
    set_paths(&mut root, "", true);
    let notes = add_claims(&mut root, obj.namespace(), refs);
    Ok(Workload {
        definition: def.name(),
        api_version: obj.api_version().to_string(),
        kind: obj.kind().to_string(),
        name: obj.name().to_string(),
        namespace: obj.namespace().to_string(),
        status,
        root,
        unattributed: Vec::new(),
        pods_observed: false,
        overruled: None,
        managed_by: managed_elsewhere(obj),
        notes,
        sub_group_instances: sub_group_instances(def, obj, &vars),
    })
}

/// The instances each `podGroup` sub-group covers, where its `instancesPath` says. A failure
/// is kept, not raised: the workload is still shown, and its gangs say why there are none.
fn sub_group_instances(
    def: &Definition,
    obj: &Object,
    vars: &[Val],
) -> Vec<Option<std::result::Result<BTreeSet<String>, String>>> {
    let names: Vec<&str> = def
        .karta
        .spec
        .optimization_instructions
        .as_ref()
        .and_then(|o| o.gang_scheduling.as_ref())
        .and_then(|g| g.pod_group.as_ref())
        .map(|pg| {
            pg.sub_groups
                .iter()
                .map(|s| s.component_name.as_str())
                .collect()
        })
        .unwrap_or_default();
    def.sub_group_instances
        .iter()
        .zip(names)
        .map(|(e, component)| {
            let e = e.as_ref()?;
            Some(
                def.eval_obj(e, obj, vars, component, "instancesPath")
                    .map(|ids| ids.iter().map(to_jq_string).collect())
                    .map_err(|e| e.to_string()),
            )
        })
        .collect()
}

/// Add what the pod templates ask for through DRA ResourceClaims ([`crate::dra`]) to every
/// node's resources: a template's own claims per pod, a ResourceClaim shared by name once for
/// the workload (at the root). Returns what could not be counted, each said once.
fn add_claims(root: &mut Node, namespace: &str, refs: &dyn ReferenceProvider) -> Vec<String> {
    let policy = GpuPolicy::default();
    let mut shared: std::collections::BTreeMap<String, Resources> = Default::default();
    let mut notes = Vec::new();
    add_node_claims(root, namespace, refs, &policy, &mut shared, &mut notes);
    for r in shared.values() {
        root.resources.add_scaled(r, 1);
    }
    mark_dra_backed(root, refs, &policy);
    notes.sort();
    notes.dedup();
    notes
}

/// Extended resources a GPU DeviceClass backs (its `extendedResourceName`, KEP-5004) count as
/// GPUs wherever they are asked for, whatever their name. Read only when a template asks for
/// an extended resource the policy does not already count.
fn mark_dra_backed(root: &mut Node, refs: &dyn ReferenceProvider, policy: &GpuPolicy) {
    let unknown = |r: &Resources| {
        r.extended()
            .keys()
            .any(|k| !policy.is_gpu(k) && !r.gpu_names.contains(k))
    };
    if !root.walk().any(|n| unknown(&n.resources)) {
        return;
    }
    let backed: Vec<String> = refs
        .list(&crate::dra::kind("DeviceClass"))
        .unwrap_or_default()
        .iter()
        .filter(|c| {
            let name = c
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            crate::dra::is_gpu_class(name, refs, policy)
        })
        .filter_map(|c| {
            c.pointer("/spec/extendedResourceName")
                .and_then(Value::as_str)
        })
        .map(str::to_string)
        .collect();
    if backed.is_empty() {
        return;
    }
    fn mark(n: &mut Node, backed: &[String]) {
        for name in backed {
            if n.resources.amounts.contains_key(name) {
                n.resources.gpu_names.insert(name.clone());
            }
            if let Some(pr) = &mut n.pod_request
                && pr.amounts.contains_key(name)
            {
                pr.gpu_names.insert(name.clone());
            }
        }
        for c in &mut n.children {
            mark(c, backed);
        }
    }
    mark(root, &backed);
}

/// The claims of a subtree, added to its nodes; returns what the subtree gained.
fn add_node_claims(
    n: &mut Node,
    namespace: &str,
    refs: &dyn ReferenceProvider,
    policy: &GpuPolicy,
    shared: &mut std::collections::BTreeMap<String, Resources>,
    notes: &mut Vec<String>,
) -> Resources {
    let mut gained = Resources::default();
    if let (true, Some(t)) = (n.has_pod_spec, &n.template) {
        let spec = t.field("spec").unwrap_or(&Value::Null);
        if spec.field("resourceClaims").is_some() {
            let c = crate::dra::template_claims(spec, namespace, refs, policy);
            if let Some(pr) = &mut n.pod_request {
                pr.add_scaled(&c.per_pod, 1);
            }
            gained.add_scaled(&c.per_pod, n.replicas);
            shared.extend(c.shared);
            notes.extend(c.notes);
        }
    }
    let copies = if n.has_pod_spec { 1 } else { n.replicas };
    for ch in &mut n.children {
        let g = add_node_claims(ch, namespace, refs, policy, shared, notes);
        gained.add_scaled(&g, copies);
    }
    n.resources.add_scaled(&gained, 1);
    gained
}

/// The values of `managedBy` that name a kind's own controller in this cluster (the
/// default each API reserves): kubernetes/api batch/v1/types.go `JobControllerName`,
/// sigs.k8s.io/jobset api/jobset/v1alpha2 `JobSetControllerName`, kubeflow/trainer
/// trainjob_types.go, kubeflow/mpi-operator v2beta1 `KubeflowJobController`,
/// kubeflow/training-operator v1.9 `runPolicy.managedBy`, ray-project/kuberay
/// raycluster_types.go / rayjob_types.go.
pub const IN_CLUSTER_MANAGERS: &[&str] = &[
    "kubernetes.io/job-controller",
    "jobset.sigs.k8s.io/jobset-controller",
    "trainer.kubeflow.org/trainjob-controller",
    "kubeflow.org/mpi-operator",
    "kubeflow.org/training-operator",
    "ray.io/kuberay-operator",
];

/// `spec.managedBy` (or `spec.runPolicy.managedBy`) when it names another controller than
/// the kind's own ([`IN_CLUSTER_MANAGERS`]).
fn managed_elsewhere(obj: &Object) -> Option<String> {
    let json = obj.json();
    ["/spec/managedBy", "/spec/runPolicy/managedBy"]
        .iter()
        .find_map(|p| json.pointer(p).and_then(Value::as_str))
        .filter(|m| !m.is_empty() && !IN_CLUSTER_MANAGERS.contains(m))
        .map(str::to_string)
}

/// The reason a status carries when the pods overrule the definition's Running: all of them
/// are Pending ([`Workload::settle_status`]).
pub const PODS_PENDING: &str = "PodsPending";

/// The reason a status carries when a pod the kubelet keeps failing to start makes the
/// workload Degraded ([`Workload::settle_status`]).
pub const PODS_FAILING: &str = "PodsFailing";

/// Container waiting reasons of a failure the kubelet keeps retrying with back-off
/// (kubernetes/kubernetes pkg/kubelet/images/types.go, pkg/kubelet/kuberuntime
/// kuberuntime_manager.go, pkg/kubelet/container/sync_result.go).
pub const RETRIED_FAILURES: &[&str] = &[
    "CrashLoopBackOff",
    "ImagePullBackOff",
    "ErrImagePull",
    "CreateContainerConfigError",
    "CreateContainerError",
    "InvalidImageName",
];

fn pods_pending_message(pods: usize) -> String {
    format!(
        "all {pods} pod(s) are Pending: the workload's own status counts them as active, none has started"
    )
}

/// Values of `$parentInstance` (null at the root) and every reference.
pub(crate) fn reference_values(
    def: &Definition,
    root: &Object,
    refs: &dyn ReferenceProvider,
) -> Result<Vec<Val>> {
    let mut vars = vec![Val::Null];
    for r in &def.references {
        let first = |e: &wlmap_expr::Expr, field: &str| -> Result<Option<String>> {
            Ok(def
                .eval_obj(e, root, &vars_null(def), &def.components[0].def.name, field)?
                .first()
                .filter(|v| !matches!(v, Val::Null))
                .map(to_jq_string))
        };
        let name = first(&r.name_path, "references.namePath")?;
        let ns = match &r.namespace_path {
            Some(e) => first(e, "references.namespacePath")?,
            None if r.def.cluster_scoped => None,
            None => Some(root.namespace().to_string()),
        };
        let v = name
            .and_then(|n| refs.get(&r.def.kind, ns.as_deref(), &n))
            .map(|j| wlmap_expr::to_val(&j))
            .unwrap_or(Val::Null);
        vars.push(v);
    }
    Ok(vars)
}

fn vars_null(def: &Definition) -> Vec<Val> {
    vec![Val::Null; 1 + def.references.len()]
}

fn set_paths(n: &mut Node, prefix: &str, is_root: bool) {
    n.path = if is_root {
        String::new()
    } else if prefix.is_empty() {
        n.segment()
    } else {
        format!("{prefix}/{}", n.segment())
    };
    let p = n.path.clone();
    for c in &mut n.children {
        set_paths(c, &p, false);
    }
}

/// The instances of one component under one parent: what per-instance outputs are zipped
/// with.
#[derive(Debug, Clone, Copy)]
struct Instances<'a> {
    /// The component's name (for error messages).
    comp: &'a str,
    /// How many instances.
    n: usize,
    /// True when the component has an instanceIdPath: outputs are zipped by position.
    multi: bool,
}

/// How an expression's outputs are kept per instance: as jaq values (replicas, counts), or as
/// JSON copied out of the object (templates: no round trip through jaq values).
trait Kept: Clone {
    fn keep(o: wlmap_expr::Output) -> Self;
    fn is_null(&self) -> bool;
}

impl Kept for Val {
    fn keep(o: wlmap_expr::Output) -> Val {
        o.into_val()
    }
    fn is_null(&self) -> bool {
        matches!(self, Val::Null)
    }
}

impl Kept for Value {
    fn keep(o: wlmap_expr::Output) -> Value {
        o.to_json().into_owned()
    }
    fn is_null(&self) -> bool {
        Value::is_null(self)
    }
}

/// Per-instance outputs of an expression: a value per instance (None = absent).
fn per_instance<T: Kept>(
    def: &Definition,
    e: Option<&wlmap_expr::Expr>,
    root: &Object,
    vars: &[Val],
    at: Instances,
    field: &str,
) -> Result<Vec<Option<T>>> {
    let Some(e) = e else {
        return Ok(vec![None; at.n]);
    };
    let out: Vec<T> = def
        .outputs(e, root, vars, at.comp, field)?
        .into_iter()
        .map(T::keep)
        .collect();
    zip_instances(def, at, field, out, T::is_null)
}

/// Outputs zipped with the instances: `n` values by position with an instanceIdPath (none at
/// all = absent everywhere), else at most one non-null value.
fn zip_instances<T: Clone>(
    def: &Definition,
    at: Instances,
    field: &str,
    out: Vec<T>,
    is_null: impl Fn(&T) -> bool,
) -> Result<Vec<Option<T>>> {
    let Instances { comp, n, multi } = at;
    if multi {
        if out.is_empty() {
            return Ok(vec![None; n]);
        }
        if out.len() != n {
            return Err(Error::Shape {
                definition: def.name(),
                component: comp.to_string(),
                message: format!(
                    "instanceIdPath yields {n} ids but {field} yields {} values (they are zipped by position)",
                    out.len()
                ),
            });
        }
        return Ok(out
            .into_iter()
            .map(|v| if is_null(&v) { None } else { Some(v) })
            .collect());
    }
    let non_null: Vec<T> = out.into_iter().filter(|v| !is_null(v)).collect();
    if non_null.len() > 1 {
        return Err(Error::Shape {
            definition: def.name(),
            component: comp.to_string(),
            message: format!(
                "{field} yields {} values but the component has no instanceIdPath",
                non_null.len()
            ),
        });
    }
    Ok(vec![non_null.into_iter().next()])
}

fn count(v: &Option<Val>) -> Option<u64> {
    let j = from_val(v.as_ref()?);
    let f = match &j {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    Some(if f.is_finite() && f > 0.0 {
        f.floor() as u64
    } else {
        0
    })
}

/// Build the nodes of component `ci` under one parent (whose instance id is `vars[0]`).
fn build(def: &Definition, ci: usize, root: &Object, vars: &[Val]) -> Result<Vec<Node>> {
    let c = &def.components[ci];
    let name = c.def.name.as_str();
    let (ids, multi) = instance_ids(def, c, root, vars)?;
    let n = ids.len();
    let at = Instances {
        comp: name,
        n,
        multi,
    };
    let field = |e: &Option<wlmap_expr::Expr>, f: &str| {
        per_instance::<Val>(def, e.as_ref(), root, vars, at, f)
    };
    let replicas = field(&c.replicas, "replicasPath")?;
    let mins = field(&c.min_replicas, "minReplicasPath")?;
    let maxs = field(&c.max_replicas, "maxReplicasPath")?;
    let mut templates = templates(def, ci, root, vars, at)?;
    let has_spec = c.spec.is_some();
    let mut nodes = Vec::new();
    for (i, id) in ids.into_iter().enumerate() {
        let min_replicas = count(&mins[i]);
        let max_replicas = count(&maxs[i]);
        let replicas_n = count(&replicas[i]).or(min_replicas).unwrap_or(1);
        let mut child_vars = vars.to_vec();
        child_vars[0] = id.clone().map(Val::from).unwrap_or(Val::Null);
        let children = children_of(def, c, root, &child_vars);
        let template = templates[i].take().map(Arc::new);
        let pod_req = if has_spec {
            template
                .as_ref()
                .map(|t| pod_request(t.field("spec").unwrap_or(&Value::Null)))
        } else {
            None
        };
        let expand = !has_spec && c.replica_key.is_some() && replicas_n <= MAX_EXPANDED_REPLICAS;
        let make = |replica: Option<String>, replicas: u64, children: Vec<Node>| {
            let copies = if has_spec { 1 } else { replicas };
            let child_pods: u64 = children.iter().map(|c| c.desired_pods).sum();
            let own = if has_spec && template.is_some() {
                replicas
            } else {
                0
            };
            let mut resources = Resources::default();
            if let (Some(r), true) = (&pod_req, own > 0) {
                resources.add_scaled(r, own);
            }
            for ch in &children {
                resources.add_scaled(&ch.resources, copies);
            }
            Node {
                component: name.to_string(),
                kind: c.def.kind.clone(),
                instance: id.clone(),
                replica,
                path: String::new(),
                replicas,
                min_replicas,
                max_replicas,
                desired_pods: own.saturating_add(copies.saturating_mul(child_pods)),
                has_pod_spec: has_spec,
                template: template.clone(),
                pod_request: pod_req.clone(),
                resources,
                children,
                pods: Vec::new(),
                component_index: ci,
                error: None,
            }
        };
        if expand {
            for r in 0..replicas_n {
                nodes.push(make(Some(r.to_string()), 1, children.clone()));
            }
        } else {
            nodes.push(make(None, replicas_n, children));
        }
    }
    Ok(nodes)
}

/// The instance ids of a component (one instance, `None`, without `instanceIdPath`), and
/// whether it has them.
fn instance_ids(
    def: &Definition,
    c: &crate::definition::Component,
    root: &Object,
    vars: &[Val],
) -> Result<(Vec<Option<String>>, bool)> {
    let Some(e) = &c.instance_ids else {
        return Ok((vec![None], false));
    };
    let ids = def
        .eval_obj(e, root, vars, &c.def.name, "instanceIdPath")?
        .iter()
        .map(|v| Some(to_jq_string(v)))
        .collect();
    Ok((ids, true))
}

/// The nodes of a component's children under one instance; a child that cannot be read is an
/// unreadable node, and does not hide the others.
fn children_of(
    def: &Definition,
    c: &crate::definition::Component,
    root: &Object,
    vars: &[Val],
) -> Vec<Node> {
    let mut children = Vec::new();
    for &k in &c.children {
        match build(def, k, root, vars) {
            Ok(built) => children.extend(built),
            Err(e) => children.push(unreadable(def, k, e)),
        }
    }
    children
}

/// The node of a component whose paths could not be evaluated: no replicas, no pods, the
/// error kept (its sub-components cannot be read either: their paths depend on its instances).
fn unreadable(def: &Definition, ci: usize, e: Error) -> Node {
    let c = &def.components[ci];
    Node {
        component: c.def.name.clone(),
        kind: c.def.kind.clone(),
        instance: None,
        replica: None,
        path: String::new(),
        replicas: 0,
        min_replicas: None,
        max_replicas: None,
        desired_pods: 0,
        has_pod_spec: c.spec.is_some(),
        template: None,
        pod_request: None,
        resources: Resources::default(),
        children: Vec::new(),
        pods: Vec::new(),
        component_index: ci,
        error: Some(e.to_string()),
    }
}

/// The normalised PodTemplateSpec of every instance (None where the component has no spec or
/// the path yields nothing).
fn templates(
    def: &Definition,
    ci: usize,
    root: &Object,
    vars: &[Val],
    at: Instances,
) -> Result<Vec<Option<Value>>> {
    let c = &def.components[ci];
    let name = c.def.name.as_str();
    let shape_err = |field: &str, got: &Value| Error::Shape {
        definition: def.name(),
        component: name.to_string(),
        message: format!("{field} must yield an object, got {}", type_name(got)),
    };
    let obj = |field: &str, v: Option<Value>| -> Result<Option<Value>> {
        match v {
            None => Ok(None),
            Some(j @ Value::Object(_)) => Ok(Some(j)),
            Some(other) => Err(shape_err(field, &other)),
        }
    };
    match &c.spec {
        None => Ok(vec![None; at.n]),
        Some(SpecShape::Template(e)) => {
            per_instance::<Value>(def, Some(e), root, vars, at, "podTemplateSpecPath")?
                .into_iter()
                .map(|v| obj("podTemplateSpecPath", v))
                .collect()
        }
        Some(SpecShape::PodSpec { spec, metadata }) => {
            let specs = per_instance::<Value>(def, Some(spec), root, vars, at, "podSpecPath")?;
            let metas =
                per_instance::<Value>(def, metadata.as_ref(), root, vars, at, "metadataPath")?;
            specs
                .into_iter()
                .zip(metas)
                .map(|(s, m)| {
                    let Some(s) = obj("podSpecPath", s)? else {
                        return Ok(None);
                    };
                    let m = obj("metadataPath", m)?.unwrap_or_else(|| json!({}));
                    Ok(Some(json!({"metadata": m, "spec": s})))
                })
                .collect()
        }
        Some(SpecShape::Fragmented(f)) => fragmented_templates(def, f, root, vars, at),
    }
}

/// The values of every fragment path, one per instance (`None` where a path yields nothing).
struct FragmentValues {
    scheduler_name: Vec<Option<Value>>,
    labels: Vec<Option<Value>>,
    annotations: Vec<Option<Value>>,
    resources: Vec<Option<Value>>,
    resource_claims: Vec<Option<Value>>,
    pod_affinity: Vec<Option<Value>>,
    node_affinity: Vec<Option<Value>>,
    containers: Vec<Option<Value>>,
    container: Vec<Option<Value>>,
    priority_class_name: Vec<Option<Value>>,
    image: Vec<Option<Value>>,
}

/// A pod template per instance, put together from the fragment paths of a component.
fn fragmented_templates(
    def: &Definition,
    f: &crate::definition::Fragments,
    root: &Object,
    vars: &[Val],
    at: Instances,
) -> Result<Vec<Option<Value>>> {
    let get = |e: &Option<wlmap_expr::Expr>, field: &str| {
        per_instance::<Value>(def, e.as_ref(), root, vars, at, field)
    };
    let mut v = FragmentValues {
        scheduler_name: get(&f.scheduler_name, "schedulerNamePath")?,
        labels: get(&f.labels, "labelsPath")?,
        annotations: get(&f.annotations, "annotationsPath")?,
        resources: get(&f.resources, "resourcesPath")?,
        resource_claims: get(&f.resource_claims, "resourceClaimsPath")?,
        pod_affinity: get(&f.pod_affinity, "podAffinityPath")?,
        node_affinity: get(&f.node_affinity, "nodeAffinityPath")?,
        containers: get(&f.containers, "containersPath")?,
        container: get(&f.container, "containerPath")?,
        priority_class_name: get(&f.priority_class_name, "priorityClassNamePath")?,
        image: get(&f.image, "imagePath")?,
    };
    Ok((0..at.n).map(|i| Some(v.template(i))).collect())
}

impl FragmentValues {
    /// Instance `i`'s template (each value is used once, so it is taken, not cloned).
    fn template(&mut self, i: usize) -> Value {
        let mut spec = Map::new();
        let mut meta = Map::new();
        let j = Option::take;
        if let Some(v) = j(&mut self.scheduler_name[i]) {
            spec.insert("schedulerName".into(), v);
        }
        if let Some(v) = j(&mut self.priority_class_name[i]) {
            spec.insert("priorityClassName".into(), v);
        }
        if let Some(v) = j(&mut self.resource_claims[i]) {
            spec.insert("resourceClaims".into(), v);
        }
        let mut affinity = Map::new();
        if let Some(v) = j(&mut self.pod_affinity[i]) {
            affinity.insert("podAffinity".into(), v);
        }
        if let Some(v) = j(&mut self.node_affinity[i]) {
            affinity.insert("nodeAffinity".into(), v);
        }
        if !affinity.is_empty() {
            spec.insert("affinity".into(), Value::Object(affinity));
        }
        spec.insert("containers".into(), Value::Array(self.containers_of(i)));
        if let Some(v) = j(&mut self.labels[i]) {
            meta.insert("labels".into(), v);
        }
        if let Some(v) = j(&mut self.annotations[i]) {
            meta.insert("annotations".into(), v);
        }
        json!({"metadata": Value::Object(meta), "spec": Value::Object(spec)})
    }

    /// The list and the single container; the CR-level resources (and image) make one
    /// container only when neither is given (no double counting).
    fn containers_of(&mut self, i: usize) -> Vec<Value> {
        let j = Option::take;
        let mut cs: Vec<Value> = match j(&mut self.containers[i]) {
            Some(Value::Array(a)) => a,
            Some(o @ Value::Object(_)) => vec![o],
            _ => vec![],
        };
        if let Some(c @ Value::Object(_)) = j(&mut self.container[i]) {
            cs.push(c);
        }
        if !cs.is_empty() {
            return cs;
        }
        let res = j(&mut self.resources[i]);
        let img = j(&mut self.image[i]);
        if res.is_none() && img.is_none() {
            return cs;
        }
        let mut c = Map::new();
        c.insert("name".into(), Value::from("main"));
        if let Some(img) = img {
            c.insert("image".into(), img);
        }
        if let Some(res) = res {
            // Keep the shape Kubernetes uses even if the path gives bare requests.
            let rr = if res.field("requests").is_some() || res.field("limits").is_some() {
                res
            } else {
                json!({"requests": res})
            };
            c.insert("resources".into(), rr);
        }
        vec![Value::Object(c)]
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
