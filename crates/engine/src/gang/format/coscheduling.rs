//! scheduler-plugins coscheduling: a `scheduling.x-k8s.io/v1alpha1` PodGroup per group; pods
//! name it in the `scheduling.x-k8s.io/pod-group` label.

use super::{Format, GangKind, Rendered, has_label, object, tag_members};
use crate::gang::PodGroup;
use crate::object::Object;
use crate::resolve::Workload;
use serde_json::{Value, json};

const POD_GROUP: GangKind = GangKind {
    group: "scheduling.x-k8s.io",
    version: "v1alpha1",
    kind: "PodGroup",
    plural: "podgroups",
};

/// The label that puts a pod in a coscheduling PodGroup.
const LABEL: &str = "scheduling.x-k8s.io/pod-group";

/// scheduler-plugins coscheduling PodGroups.
pub(super) const FORMAT: Format = Format {
    name: "coscheduling",
    summary: "scheduler-plugins coscheduling PodGroup (scheduling.x-k8s.io/v1alpha1), pod label",
    kinds: &[POD_GROUP],
    render,
    already_grouped,
    not_written_by_controller: None,
    when_not_served: None,
};

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

fn already_grouped(pod: &Value) -> bool {
    has_label(pod, LABEL)
}
