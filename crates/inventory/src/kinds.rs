//! Which kinds to watch to keep every workload of a registry's kinds whole: the roots, the
//! kinds their definitions create that may own pods (the owner chains), and pods.

use std::collections::BTreeSet;
use wlmap_engine::Registry;
use wlmap_schema::GroupVersionKind;

/// Kinds that definitions list as children (for RBAC and owner walks) but that never own pods:
/// a cluster-wide view has no use for them, and listing Secrets would read every secret in
/// the cluster.
const NEVER_OWN_PODS: &[(&str, &str)] = &[
    ("", "Secret"),
    ("", "ConfigMap"),
    ("", "Service"),
    ("", "Endpoints"),
    ("", "PersistentVolumeClaim"),
    ("", "ServiceAccount"),
    ("autoscaling", "HorizontalPodAutoscaler"),
    ("policy", "PodDisruptionBudget"),
    ("networking.k8s.io", "Ingress"),
    ("networking.k8s.io", "NetworkPolicy"),
    ("discovery.k8s.io", "EndpointSlice"),
    ("rbac.authorization.k8s.io", "Role"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
    // Routing, autoscaling and scheduling objects the catalog's definitions create.
    ("gateway.networking.k8s.io", "HTTPRoute"),
    ("inference.networking.k8s.io", "InferencePool"),
    ("networking.istio.io", "VirtualService"),
    ("serving.knative.dev", "Route"),
    ("autoscaling.internal.knative.dev", "PodAutoscaler"),
    ("keda.sh", "ScaledObject"),
    ("scheduler.grove.io", "PodGang"),
    ("scheduling.volcano.sh", "PodGroup"),
];

/// False for kinds that never own pods (Secrets, Services, ...).
///
/// ```
/// use wlmap_schema::GroupVersionKind;
/// assert!(wlmap_inventory::may_own_pods(&GroupVersionKind::new("batch", "v1", "Job")));
/// assert!(!wlmap_inventory::may_own_pods(&GroupVersionKind::new("", "v1", "Secret")));
/// ```
pub fn may_own_pods(g: &GroupVersionKind) -> bool {
    !NEVER_OWN_PODS
        .iter()
        .any(|(group, kind)| g.group == *group && g.kind == *kind)
}

/// The kinds to watch for every workload of these roots: each root, what its definition
/// creates that may own pods, and pods.
///
/// ```
/// let reg = wlmap_catalog::registry().unwrap();
/// let jobset = wlmap_schema::GroupVersionKind::new("jobset.x-k8s.io", "v1alpha2", "JobSet");
/// let kinds = wlmap_inventory::kinds_to_watch(&reg, &[jobset.clone()]);
/// assert!(kinds.contains(&jobset));
/// assert!(kinds.contains(&wlmap_schema::GroupVersionKind::new("batch", "v1", "Job")));
/// assert!(kinds.contains(&wlmap_schema::GroupVersionKind::new("", "v1", "Pod")));
/// ```
pub fn kinds_to_watch(reg: &Registry, roots: &[GroupVersionKind]) -> BTreeSet<GroupVersionKind> {
    let mut want: BTreeSet<GroupVersionKind> = BTreeSet::new();
    for r in roots {
        want.insert(r.clone());
        if let Some(d) = reg.for_kind(r) {
            want.extend(d.child_kinds().into_iter().filter(may_own_pods));
        }
    }
    want.insert(GroupVersionKind::new("", "v1", "Pod"));
    // The claims pods hold DRA devices through (owned by their pods, so part of the workload).
    want.insert(wlmap_engine::dra::kind("ResourceClaim"));
    want
}

/// The kinds the definitions of these roots read as references, for a live view to watch
/// (a one-off view reads each reference when it needs it). A referenced kind of the sort that
/// never owns pods (a ConfigMap, a Secret) is left out: a live view would hold every one the
/// caller can list; such a reference reads nothing in a live view.
///
/// ```
/// let reg = wlmap_catalog::registry().unwrap();
/// let trainjob = wlmap_schema::GroupVersionKind::new("trainer.kubeflow.org", "v1alpha1", "TrainJob");
/// let kinds = wlmap_inventory::referenced_kinds(&reg, &[trainjob]);
/// assert!(kinds.iter().any(|k| k.kind == "ClusterTrainingRuntime"));
/// ```
pub fn referenced_kinds(reg: &Registry, roots: &[GroupVersionKind]) -> BTreeSet<GroupVersionKind> {
    roots
        .iter()
        .filter_map(|r| reg.for_kind(r))
        .flat_map(|d| d.karta().spec.references.iter().map(|r| r.kind.clone()))
        .filter(may_own_pods)
        .collect()
}

/// The kinds a live view of these roots' workloads watches: [`kinds_to_watch`],
/// [`referenced_kinds`], and the DRA kinds requests are read from (ResourceClaimTemplates,
/// DeviceClasses, ResourceSlices). `wlmap get --watch`, `describe --watch`, `serve` and the
/// controller all follow these.
///
/// ```
/// let reg = wlmap_catalog::registry().unwrap();
/// let trainjob = wlmap_schema::GroupVersionKind::new("trainer.kubeflow.org", "v1alpha1", "TrainJob");
/// let kinds = wlmap_inventory::kinds_to_follow(&reg, &[trainjob.clone()]);
/// assert!(kinds.contains(&trainjob));
/// assert!(kinds.iter().any(|k| k.kind == "ClusterTrainingRuntime"));
/// assert!(kinds.iter().any(|k| k.kind == "Pod"));
/// ```
pub fn kinds_to_follow(reg: &Registry, roots: &[GroupVersionKind]) -> BTreeSet<GroupVersionKind> {
    let mut want = kinds_to_watch(reg, roots);
    want.extend(referenced_kinds(reg, roots));
    // What DRA requests are read from: the claim templates pod templates name, the
    // DeviceClasses (which are GPUs) and the nodes' ResourceSlices (a node's devices, MIG
    // profiles). A one-off view reads a template when it needs it.
    want.extend(
        ["ResourceClaimTemplate", "DeviceClass", "ResourceSlice"].map(wlmap_engine::dra::kind),
    );
    want
}

/// True for the kinds a live view watches only once DRA is in use, that is once it holds a
/// ResourceClaim or ResourceClaimTemplate ([`is_dra_use`]): the cluster's DeviceClasses and
/// the nodes' ResourceSlices, read only to tell which claimed devices are GPUs and what they
/// are. A cluster whose workloads claim nothing never lists them.
///
/// ```
/// use wlmap_schema::GroupKind;
/// assert!(wlmap_inventory::waits_for_dra_use(&GroupKind::new("resource.k8s.io", "ResourceSlice")));
/// assert!(!wlmap_inventory::waits_for_dra_use(&GroupKind::new("resource.k8s.io", "ResourceClaim")));
/// ```
pub fn waits_for_dra_use(g: &wlmap_schema::GroupKind) -> bool {
    g.group == "resource.k8s.io" && (g.kind == "DeviceClass" || g.kind == "ResourceSlice")
}

/// True for the kinds whose objects are DRA in use: ResourceClaims and ResourceClaimTemplates
/// (made by a user for a workload, or for a pod from its template).
///
/// ```
/// use wlmap_schema::GroupKind;
/// assert!(wlmap_inventory::is_dra_use(&GroupKind::new("resource.k8s.io", "ResourceClaimTemplate")));
/// ```
pub fn is_dra_use(g: &wlmap_schema::GroupKind) -> bool {
    g.group == "resource.k8s.io" && (g.kind == "ResourceClaim" || g.kind == "ResourceClaimTemplate")
}
