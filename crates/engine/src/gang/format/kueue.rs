//! Kueue: no objects of its own; each group's pods carry the pod-group label and the total
//! count annotation that Kueue's pod-group integration reads.

use super::{Format, Rendered, has_label, tag_members};
use crate::gang::PodGroup;
use crate::object::Object;
use crate::resolve::Workload;
use serde_json::{Value, json};

/// The label that names a pod's Kueue pod group.
const LABEL: &str = "kueue.x-k8s.io/pod-group-name";

/// Kueue's pod groups (labels only).
pub(super) const FORMAT: Format = Format::new(
    "kueue",
    "Kueue pod-group labels and annotations",
    &[],
    render,
    already_grouped,
)
.not_by_controller("Kueue's groups are pod labels only: `wlmap gang --format kueue` prints them");

fn render(groups: &[PodGroup], _: &Workload, _: &Object) -> Rendered {
    let tags = |g: &PodGroup| json!({"labels": {LABEL: g.name}, "annotations": {"kueue.x-k8s.io/pod-group-total-count": g.min_member.to_string()}});
    Rendered {
        templates: groups
            .iter()
            .map(|g| json!({"podGroup": g.name, "podTemplateMetadata": tags(g)}))
            .collect(),
        pod_tags: tag_members(groups, |g, p| {
            let mut t = tags(g);
            t["pod"] = json!(p);
            t
        }),
        ..Rendered::default()
    }
}

fn already_grouped(pod: &Value) -> bool {
    has_label(pod, LABEL)
}
