//! scheduler-plugins coscheduling: a `scheduling.x-k8s.io/v1alpha1` PodGroup per group; pods
//! name it in the `scheduling.x-k8s.io/pod-group` label.

use super::{Format, GangKind, PodTag, Rendered, object, tag_members};
use crate::gang::PodGroup;
use crate::object::Object;
use crate::resolve::Workload;
use serde_json::json;

const POD_GROUP: GangKind = GangKind::pod_group("scheduling.x-k8s.io", "v1alpha1");

/// The label that puts a pod in a coscheduling PodGroup.
const LABEL: &str = "scheduling.x-k8s.io/pod-group";

/// scheduler-plugins coscheduling PodGroups.
pub(super) const FORMAT: Format = Format::new(
    "coscheduling",
    "scheduler-plugins coscheduling PodGroup (scheduling.x-k8s.io/v1alpha1), pod label",
    &[POD_GROUP],
    render,
    PodTag::Label(LABEL),
);

fn render(groups: &[PodGroup], _: &Workload, o: &Object) -> Rendered {
    Rendered {
        objects: groups
            .iter()
            .map(|g| {
                let spec = json!({"minMember": g.min_member, "scheduleTimeoutSeconds": 60});
                object(&POD_GROUP, &g.name, o, spec)
            })
            .collect(),
        pod_tags: tag_members(groups, |g, p| json!({"pod": p, "labels": {LABEL: g.name}})),
        ..Rendered::default()
    }
}
