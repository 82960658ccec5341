//! Kueue: no objects of its own; each group's pods carry what Kueue's pod-group integration
//! reads (sigs.k8s.io/kueue v0.17.0 pkg/controller/jobs/pod): the pod-group label, the total
//! count annotation, and the queue label, taken from the workload's own
//! `kueue.x-k8s.io/queue-name` label. Kueue manages only pods that name a queue: a workload
//! without the label gets no tags (and a warning).

use super::{Format, PodTag, Rendered, tag_members};
use crate::gang::PodGroup;
use crate::object::Object;
use crate::resolve::Workload;
use serde_json::json;

/// The label that names a pod's Kueue pod group.
const LABEL: &str = "kueue.x-k8s.io/pod-group-name";
/// The object Kueue writes for each pod group it considers (its own, read to say why a group
/// waits: `QuotaReserved`, `Admitted`), owned by the group's pods.
pub(super) const WORKLOAD: super::GangKind =
    super::GangKind::new("kueue.x-k8s.io", "v1beta2", "Workload", "workloads");
/// The label that names the LocalQueue a workload (and its pods) is submitted to.
pub const QUEUE_LABEL: &str = "kueue.x-k8s.io/queue-name";

/// Kueue's pod groups (labels only).
pub(super) const FORMAT: Format = Format::new(
    "kueue",
    "Kueue pod-group labels and annotations",
    &[],
    render,
    PodTag::Label(LABEL),
);

fn render(groups: &[PodGroup], _: &Workload, o: &Object) -> Rendered {
    let queue = o.json()["metadata"]["labels"][QUEUE_LABEL].as_str();
    let tags = |g: &PodGroup| {
        let mut labels = json!({LABEL: g.name});
        if let Some(q) = queue {
            labels[QUEUE_LABEL] = json!(q);
        }
        json!({"labels": labels, "annotations": {"kueue.x-k8s.io/pod-group-total-count": g.min_member.to_string()}})
    };
    let templates = groups
        .iter()
        .map(|g| json!({"podGroup": g.name, "podTemplateMetadata": tags(g)}))
        .collect();
    if queue.is_none() {
        // Kueue manages only pods that name a queue: pods without one are left as they are.
        return Rendered {
            templates,
            warnings: vec![format!(
                "{} {} has no {QUEUE_LABEL} label: Kueue manages none of its pods, so none is put in a pod group",
                o.kind(),
                o.name()
            )],
            ..Rendered::default()
        };
    }
    Rendered {
        templates,
        pod_tags: tag_members(groups, |g, p| {
            let mut t = tags(g);
            t["pod"] = json!(p);
            t
        }),
        ..Rendered::default()
    }
}
