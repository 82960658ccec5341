//! Kubernetes v1.37 gang scheduling: a `scheduling.k8s.io/v1beta1` PodGroup per group (gang
//! policy, `minCount`), which the pods name in `spec.schedulingGroup.podGroupName` from their
//! creation. A PodGroup needs no Workload. A group of no pods (scaled to zero) has none: the
//! API holds `minCount` to at least 1.

use super::{Format, GangKind, PodTag, Rendered, object};
use crate::gang::{PodGroup, SubGroupOut};
use crate::object::Object;
use crate::resolve::Workload;
use serde_json::{Value, json};
use wlmap_schema::TopologyConstraint;

pub(super) const POD_GROUP: GangKind = GangKind::pod_group("scheduling.k8s.io", "v1beta1");

/// Kubernetes v1.37 PodGroups.
pub(super) const FORMAT: Format = Format::new(
    "native",
    "Kubernetes v1.37 gang scheduling: PodGroups (scheduling.k8s.io/v1beta1), pod spec.schedulingGroup",
    &[POD_GROUP],
    render,
    GROUP_FIELD,
);

fn render(groups: &[PodGroup], _: &Workload, o: &Object) -> Rendered {
    flat(groups, o)
}

/// Where a pod names its PodGroup (it cannot change after creation).
pub(super) const GROUP_FIELD: PodTag = PodTag::Spec("schedulingGroup");

/// A PodGroup per group.
pub(super) fn flat(groups: &[PodGroup], o: &Object) -> Rendered {
    let mut r = Rendered::default();
    for g in groups.iter().filter(|g| g.min_member > 0) {
        r.objects.push(pod_group(&g.name, g.min_member, None, o));
        tag(&mut r, &g.name, &g.members);
    }
    r
}

/// A v1.37 PodGroup; a leaf of a CompositePodGroup names its parent and the Workload template
/// it stands for (the API requires both together), and carries its sub-group's topology.
pub(super) fn pod_group(
    name: &str,
    min_count: u64,
    leaf: Option<(&str, &SubGroupOut)>,
    o: &Object,
) -> Value {
    let mut spec = json!({"schedulingPolicy": {"gang": {"minCount": min_count}}});
    if let Some((parent, s)) = leaf {
        spec["parentCompositePodGroupName"] = json!(parent);
        spec["workloadRef"] = json!({"workloadName": parent, "templateName": name});
        constrain(&mut spec, &s.topology);
    }
    object(&POD_GROUP, name, o, spec)
}

/// A group's required topology level as the v1.37 constraint: every pod of the group in one
/// domain of that node label (a rack, an NVLink domain). v1.37 has no preferred level, and
/// the constraint needs the `TopologyAwareWorkloadScheduling` gate, which the hierarchical
/// form needs anyway: flat PodGroups carry none.
pub(super) fn constrain(spec: &mut Value, t: &Option<TopologyConstraint>) {
    if let Some(t) = t.as_ref().filter(|t| !t.required_topology_level.is_empty()) {
        spec["schedulingConstraints"] = json!({"topology": [{"key": t.required_topology_level}]});
    }
}

/// What puts each member pod in a v1.37 PodGroup: the group's name in its spec.
pub(super) fn tag(r: &mut Rendered, group: &str, members: &[String]) {
    for p in members {
        r.pod_tags
            .push(json!({"pod": p, "spec": {"schedulingGroup": {"podGroupName": group}}}));
    }
}
