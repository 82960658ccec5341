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

/// scheduler-plugins coscheduling.
pub(super) struct Coscheduling;

impl Format for Coscheduling {
    fn name(&self) -> &'static str {
        "coscheduling"
    }

    fn summary(&self) -> &'static str {
        "scheduler-plugins coscheduling PodGroup (scheduling.x-k8s.io/v1alpha1), pod label"
    }

    fn kinds(&self) -> &'static [GangKind] {
        &[POD_GROUP]
    }

    fn render(&self, groups: &[PodGroup], _: &Workload, o: &Object) -> Rendered {
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

    fn already_grouped(&self, pod: &Value) -> bool {
        has_label(pod, LABEL)
    }
}
