//! The JSON views of workloads: the output contract of `wlmap get -o json`, `describe -o json`
//! and the web API (see README "Output contract"). Field names here are what scripts rely on:
//! add fields, never rename them.

use crate::Entry;
use serde::Serialize;
use std::collections::BTreeMap;
use wlmap_engine::{Definition, GpuPolicy, Node, Phase, PodInfo, Workload};

/// `definition` block.
#[derive(Serialize)]
pub struct DefinitionRef {
    /// The definition's name (its Karta's `metadata.name`, or the catalog slug).
    pub name: String,
    /// `catalog`, `cluster` or `file`.
    pub origin: String,
}

/// `status` block.
#[derive(Serialize)]
pub struct StatusView {
    /// The primary status: the first of `phases` in precedence order.
    pub phase: Phase,
    /// Every matched status.
    pub phases: Vec<Phase>,
    /// Reason of the deciding condition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Message of the deciding condition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Status rules that could not be evaluated (then `reason` is `StatusRuleFailed`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<wlmap_engine::RuleFailure>,
}

/// `pods` block.
#[derive(Serialize)]
pub struct PodsView {
    /// Desired from the spec.
    pub desired: u64,
    /// Observed (null in file mode without pods).
    pub observed: Option<u64>,
    /// Ready (null in file mode without pods).
    pub ready: Option<u64>,
}

/// `resources` block of a workload.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesView {
    /// Desired GPUs.
    pub gpus: f64,
    /// GPUs its pods hold, when the pods are known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpus_held: Option<f64>,
    /// Desired CPU in millicores.
    pub cpu_millis: u64,
    /// Desired memory in bytes.
    pub memory_bytes: u64,
    /// Extended resources by name.
    pub extended: BTreeMap<String, f64>,
}

/// One row of `get`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetItem {
    /// The workload object's `apiVersion` (`jobset.x-k8s.io/v1alpha2`).
    pub api_version: String,
    /// The workload object's kind (`JobSet`).
    pub kind: String,
    /// The workload object's name.
    pub name: String,
    /// The workload object's namespace (empty for a cluster-scoped kind).
    pub namespace: String,
    /// The status its definition reads from the object.
    pub status: StatusView,
    /// GPUs its spec asks for, over every component and replica.
    pub resources: GpuOnly,
    /// Pods desired, observed and ready.
    pub pods: PodsView,
    /// The definition that read it, and where that came from.
    pub definition: DefinitionRef,
    /// Components (names), root first.
    pub components: Vec<String>,
    /// `metadata.creationTimestamp`, as the object has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// An evaluation error, when the workload could not be resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Components that could not be read (`component: error`): the row is a partial answer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<String>,
    /// Why pods of it wait for the scheduler, in the scheduler's words (see
    /// [`wlmap_engine::Workload::waiting`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waiting: Vec<wlmap_engine::Waiting>,
    /// The controller that runs it elsewhere (`spec.managedBy`, see
    /// [`wlmap_engine::Workload::managed_by`]): its pods are not counted here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<String>,
}

/// `{gpus, gpusHeld}`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GpuOnly {
    /// GPUs requested: the GPU extended resources and the GPU devices of DRA claims.
    pub gpus: f64,
    /// GPUs held by its pods (allocated DRA devices; device-plugin GPUs of Running pods),
    /// when the pods are known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpus_held: Option<f64>,
}

/// A pod in `describe`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodView {
    /// The pod's name.
    pub name: String,
    /// `status.phase` (`Pending`, `Running`, ...).
    pub phase: String,
    /// True when the pod's `Ready` condition is `True`.
    pub ready: bool,
    /// The node it is bound to (`spec.nodeName`), if any.
    pub node: Option<String>,
    /// GPUs its containers request.
    pub gpus: f64,
    /// GPUs it holds ([`wlmap_engine::PodInfo::gpus_held`]).
    pub gpus_held: f64,
    /// The GPU devices allocated to it through DRA claims: which device of which node.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<wlmap_engine::dra::HeldDevice>,
}

/// `replicas` of a node.
#[derive(Serialize)]
pub struct ReplicasView {
    /// Replicas the spec asks for.
    pub desired: u64,
    /// Ready pods (null when pods are unknown).
    pub ready: Option<u64>,
}

/// A component node in `describe`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeView {
    /// The component's name in the definition (`worker`).
    pub name: String,
    /// Component kind (`group/version/Kind`).
    pub kind: Option<String>,
    /// The instance id, for a component with many instances (a replicated job's name).
    pub instance: Option<String>,
    /// The replica key, for a component whose replicas are told apart (a job index).
    pub replica: Option<String>,
    /// Replicas desired and ready.
    pub replicas: ReplicasView,
    /// Desired pods of the subtree.
    pub desired_pods: u64,
    /// GPUs this node's subtree asks for.
    pub resources: GpuOnly,
    /// DRA resource claims of the pod template (names), when any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_claims: Vec<String>,
    /// Pods placed here.
    pub pods: Vec<PodView>,
    /// The nodes of child components, under this instance.
    pub components: Vec<NodeView>,
    /// Why the component could not be read from the object (a partial answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `describe` output.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DescribeView {
    /// The workload object's `apiVersion`.
    pub api_version: String,
    /// The workload object's kind.
    pub kind: String,
    /// The workload object's name.
    pub name: String,
    /// The workload object's namespace (empty for a cluster-scoped kind).
    pub namespace: String,
    /// The definition that read it, and where that came from.
    pub definition: DefinitionRef,
    /// The status its definition reads from the object.
    pub status: StatusView,
    /// What its spec asks for: GPUs, CPU, memory, other resources.
    pub resources: ResourcesView,
    /// Pods desired, observed and ready.
    pub pods: PodsView,
    /// The tree, root first.
    pub components: Vec<NodeView>,
    /// Pods of the workload no component claims.
    pub unattributed_pods: Vec<String>,
    /// Why pods of it wait for the scheduler, in the scheduler's words, counted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waiting: Vec<wlmap_engine::Waiting>,
    /// The controller that runs it elsewhere (`spec.managedBy`): its pods are not here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<String>,
    /// What could not be counted, and the choices made (see [`wlmap_engine::Workload::notes`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The gang objects schedulers read for it and what they say ([`gang_objects`]); filled
    /// by the caller that has the objects.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gangs: Vec<GangView>,
    /// How each status rule evaluated (with --explain).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Vec<wlmap_engine::MatcherTrace>>,
}

/// Status block of a workload.
pub fn status(w: &Workload) -> StatusView {
    StatusView {
        phase: w.status.phase,
        phases: w.status.phases.clone(),
        reason: w.status.reason.clone(),
        message: w.status.message.clone(),
        failures: w.status.failures.clone(),
    }
}

/// Pods block.
pub fn pods(w: &Workload) -> PodsView {
    PodsView {
        desired: w.root.desired_pods,
        observed: w.pods_observed().then(|| w.observed_pods()),
        ready: w.pods_observed().then(|| w.ready_pods()),
    }
}

/// Definition block.
pub fn definition(d: &Definition) -> DefinitionRef {
    DefinitionRef {
        name: d.name(),
        origin: d.origin().to_string(),
    }
}

fn node(n: &Node, observed: bool, gpu: &GpuPolicy) -> NodeView {
    NodeView {
        name: n.component.clone(),
        kind: n.kind.as_ref().map(|k| k.to_string()),
        instance: n.instance.clone(),
        replica: n.replica.clone(),
        replicas: ReplicasView {
            desired: n.replicas,
            ready: observed.then(|| n.ready_pods()),
        },
        desired_pods: n.desired_pods,
        resources: GpuOnly {
            gpus: n.resources.gpus(gpu),
            gpus_held: observed.then(|| PodInfo::gpus_held_together(n.all_pods())),
        },
        resource_claims: resource_claims(n),
        pods: n
            .pods
            .iter()
            .map(|p| PodView {
                name: p.name.clone(),
                phase: p.phase.clone(),
                ready: p.ready,
                node: p.node.clone(),
                gpus: p.gpus,
                gpus_held: p.gpus_held(),
                held: p.held.clone(),
            })
            .collect(),
        components: n.children.iter().map(|c| node(c, observed, gpu)).collect(),
        error: n.error.clone(),
    }
}

/// Names of the DRA resource claims in a node's pod template.
pub fn resource_claims(n: &Node) -> Vec<String> {
    n.template
        .as_ref()
        .and_then(|t| t.pointer("/spec/resourceClaims"))
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|c| c.get("name").and_then(|x| x.as_str()).map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The `describe` view.
pub fn describe(d: &Definition, w: &Workload, explain: bool) -> DescribeView {
    let gpu = GpuPolicy::default();
    let r = &w.root.resources;
    DescribeView {
        api_version: w.api_version.clone(),
        kind: w.kind.clone(),
        name: w.name.clone(),
        namespace: w.namespace.clone(),
        definition: definition(d),
        status: status(w),
        resources: ResourcesView {
            gpus: r.gpus(&gpu),
            gpus_held: w.pods_observed().then(|| w.gpus_held()),
            cpu_millis: r.cpu_millis(),
            memory_bytes: r.memory_bytes(),
            extended: r.extended(),
        },
        pods: pods(w),
        components: vec![node(&w.root, w.pods_observed(), &gpu)],
        unattributed_pods: w.unattributed.iter().map(|p| p.name.clone()).collect(),
        waiting: w.waiting(),
        managed_by: w.managed_by.clone(),
        notes: w.notes.clone(),
        gangs: Vec::new(),
        explain: explain.then(|| w.status.trace.clone()),
    }
}

/// One row of `get` for an inventory entry; an entry whose definition could not evaluate it
/// gets status `Undefined`, zero pods and GPUs, and the error in `error`.
///
/// ```
/// let job = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
///     "metadata": {"name": "train", "namespace": "ml", "uid": "j1"},
///     "spec": {"parallelism": 2, "template": {"spec": {"containers": [
///         {"name": "t", "resources": {"limits": {"nvidia.com/gpu": 4}}}]}}}}));
/// let inv = wlmap_inventory::Inventory::from_objects(wlmap_catalog::registry().unwrap(), [job]);
/// let item = wlmap_inventory::view::item(inv.workloads().next().unwrap());
/// assert_eq!((item.name.as_str(), item.resources.gpus, item.pods.desired), ("train", 8.0, 2));
/// ```
pub fn item(e: &Entry) -> GetItem {
    let o = &e.object;
    let d = &e.definition;
    match &e.result {
        Ok(w) => GetItem {
            api_version: w.api_version.clone(),
            kind: w.kind.clone(),
            name: w.name.clone(),
            namespace: w.namespace.clone(),
            status: status(w),
            resources: GpuOnly {
                gpus: w.gpus(&GpuPolicy::default()),
                gpus_held: w.pods_observed().then(|| w.gpus_held()),
            },
            pods: pods(w),
            definition: definition(d),
            components: d.component_names().into_iter().map(String::from).collect(),
            created: o.creation_timestamp().map(String::from),
            error: None,
            unreadable: w
                .unreadable()
                .into_iter()
                .map(|(n, e)| format!("{}: {e}", n.component))
                .collect(),
            waiting: w.waiting(),
            managed_by: w.managed_by.clone(),
        },
        Err(err) => GetItem {
            api_version: o.api_version().into(),
            kind: o.kind().into(),
            name: o.name().into(),
            namespace: o.namespace().into(),
            status: StatusView {
                phase: Phase::Undefined,
                phases: vec![],
                reason: None,
                message: None,
                failures: vec![],
            },
            resources: GpuOnly {
                gpus: 0.0,
                gpus_held: None,
            },
            pods: PodsView {
                desired: 0,
                observed: None,
                ready: None,
            },
            definition: definition(d),
            components: vec![],
            created: o.creation_timestamp().map(String::from),
            error: Some(err.to_string()),
            unreadable: vec![],
            waiting: vec![],
            managed_by: None,
        },
    }
}

/// A gang object of a workload (a PodGroup, a Workload) and what its scheduler says in it.
#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GangView {
    /// `apiVersion`.
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Name.
    pub name: String,
    /// `status.phase`, where the kind has one (scheduler-plugins' PodGroup: Pending,
    /// Scheduling, Running...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Its status conditions.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ConditionView>,
    /// For a gang object the workload's pods name that was not found: how many pending pods
    /// name it (the scheduler holds them until it exists). 0 for one that exists.
    #[serde(skip_serializing_if = "is_zero")]
    pub missing_for_pods: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Where a pod names its gang object, for each scheduler that reads one: the place in the
/// pod (a JSON pointer), and the object's apiVersion and kind.
const POD_GROUP_REFS: &[(&str, &str, &str)] = &[
    // Kubernetes v1.37 (`native`): the PodGroup must exist for the pod to be scheduled.
    (
        "/spec/schedulingGroup/podGroupName",
        "scheduling.k8s.io/v1beta1",
        "PodGroup",
    ),
    // scheduler-plugins' Coscheduling.
    (
        "/metadata/labels/scheduling.x-k8s.io~1pod-group",
        "scheduling.x-k8s.io/v1alpha1",
        "PodGroup",
    ),
    // Volcano.
    (
        "/metadata/annotations/scheduling.k8s.io~1group-name",
        "scheduling.volcano.sh/v1beta1",
        "PodGroup",
    ),
];

/// The gang objects the workload's pending pods name that are not among `found` (its gang
/// objects, [`gang_objects`]): a PodGroup deleted, or never written (the controller away, or
/// refused). The schedulers hold such pods until it exists. Each once, with how many pending
/// pods name it.
///
/// ```
/// let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod",
///     "metadata": {"name": "p"}, "spec": {"schedulingGroup": {"podGroupName": "train-gang"}},
///     "status": {"phase": "Pending"}}));
/// let missing = wlmap_inventory::view::missing_gang_objects(&[&pod], &[]);
/// assert_eq!((missing[0].name.as_str(), missing[0].missing_for_pods), ("train-gang", 1));
/// ```
pub fn missing_gang_objects(pods: &[&wlmap_engine::Object], found: &[GangView]) -> Vec<GangView> {
    let group_of = |api_version: &str| api_version.split('/').next().unwrap_or("").to_string();
    let mut named: BTreeMap<(String, String, String), u64> = BTreeMap::new();
    for p in pods
        .iter()
        .filter(|p| p.json()["status"]["phase"] == "Pending")
    {
        for (at, api_version, kind) in POD_GROUP_REFS {
            if let Some(name) = p.json().pointer(at).and_then(|n| n.as_str()) {
                let key = (api_version.to_string(), kind.to_string(), name.to_string());
                *named.entry(key).or_default() += 1;
            }
        }
    }
    named
        .into_iter()
        .filter(|((api_version, kind, name), _)| {
            !found.iter().any(|g| {
                group_of(&g.api_version) == group_of(api_version)
                    && g.kind == *kind
                    && g.name == *name
            })
        })
        .map(|((api_version, kind, name), pods)| GangView {
            api_version,
            kind,
            name,
            phase: None,
            conditions: Vec::new(),
            missing_for_pods: pods,
        })
        .collect()
}

/// A status condition, as the object has it.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct ConditionView {
    /// `type`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `status`.
    pub status: String,
    /// `reason`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `message`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The gang objects among `objects` that the workload owns, or its pods own (any kind a
/// scheduler format writes, and Kueue's Workload for a pod group, which the group's pods own):
/// `owners` are the uids of the workload and of its pods. Each with its phase and conditions,
/// by kind and name.
///
/// ```
/// let pg = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "scheduling.x-k8s.io/v1alpha1",
///     "kind": "PodGroup", "metadata": {"name": "train-gang", "ownerReferences": [{"uid": "w1"}]},
///     "status": {"phase": "Pending"}}));
/// let g = wlmap_inventory::view::gang_objects(&[pg], &["w1"]);
/// assert_eq!((g[0].name.as_str(), g[0].phase.as_deref()), ("train-gang", Some("Pending")));
/// ```
pub fn gang_objects(objects: &[wlmap_engine::Object], owners: &[&str]) -> Vec<GangView> {
    let kinds: Vec<_> = wlmap_engine::gang_object_kinds().collect();
    let text = |v: &serde_json::Value, k: &str| v.get(k).and_then(|x| x.as_str()).map(String::from);
    let mut out: Vec<GangView> = objects
        .iter()
        .filter(|o| {
            let g = o.gvk();
            kinds.iter().any(|k| k.group == g.group && k.kind == g.kind)
        })
        .filter(|o| {
            o.json()
                .pointer("/metadata/ownerReferences")
                .and_then(|r| r.as_array())
                .is_some_and(|refs| {
                    refs.iter().any(|r| {
                        r.get("uid")
                            .and_then(|u| u.as_str())
                            .is_some_and(|u| owners.contains(&u))
                    })
                })
        })
        .map(|o| {
            let status = o.json().get("status").cloned().unwrap_or_default();
            GangView {
                api_version: o.api_version().to_string(),
                kind: o.kind().to_string(),
                name: o.name().to_string(),
                phase: text(&status, "phase"),
                conditions: status
                    .get("conditions")
                    .and_then(|c| c.as_array())
                    .into_iter()
                    .flatten()
                    .map(|c| ConditionView {
                        kind: text(c, "type").unwrap_or_default(),
                        status: text(c, "status").unwrap_or_default(),
                        reason: text(c, "reason"),
                        message: text(c, "message"),
                    })
                    .collect(),
                missing_for_pods: 0,
            }
        })
        .collect();
    out.sort_by(|a, b| (&a.kind, &a.name).cmp(&(&b.kind, &b.name)));
    out
}
