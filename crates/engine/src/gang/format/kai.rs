//! KAI Scheduler: a `scheduling.run.ai/v2alpha2` PodGroup per group, sub-groups as KAI's
//! `subGroups`; pods name their group in the `pod-group-name` annotation and their sub-group
//! in the `kai.scheduler/subgroup-name` label (as KAI's pod-grouper writes them).

use super::{Format, GangKind, PodTag, Rendered, object, topology};
use crate::gang::PodGroup;
use crate::object::Object;
use crate::resolve::Workload;
use serde_json::{Value, json};

const POD_GROUP: GangKind = GangKind::pod_group("scheduling.run.ai", "v2alpha2");

/// KAI Scheduler's PodGroups.
pub(super) const FORMAT: Format = Format::new(
    "kai",
    "KAI Scheduler PodGroup (scheduling.run.ai/v2alpha2)",
    &[POD_GROUP],
    render,
    PodTag::Annotation("pod-group-name"),
)
.not_by_controller("KAI Scheduler's pod-grouper reads definitions itself");

fn render(groups: &[PodGroup], _: &Workload, o: &Object) -> Rendered {
    let mut r = Rendered::default();
    for g in groups {
        r.objects.push(object(&POD_GROUP, &g.name, o, spec(g, o)));
        for s in &g.sub_groups {
            for p in &s.members {
                r.pod_tags.push(json!({"pod": p, "annotations": {"pod-group-name": g.name}, "labels": {"kai.scheduler/subgroup-name": s.name}}));
            }
        }
        if g.sub_groups.is_empty() {
            for p in &g.members {
                r.pod_tags
                    .push(json!({"pod": p, "annotations": {"pod-group-name": g.name}}));
            }
        }
    }
    r
}

/// The queue from the workload's `kai.scheduler/queue` label, its priority class, and either
/// `minMember` or sub-groups.
fn spec(g: &PodGroup, o: &Object) -> Value {
    let label = |k: &str| o.label(k).map(str::to_string);
    let mut spec =
        json!({"queue": label("kai.scheduler/queue").unwrap_or_else(|| "default-queue".into())});
    if let Some(p) = label("priorityClassName").or_else(|| {
        o.json()
            .pointer("/spec/priorityClassName")
            .and_then(Value::as_str)
            .map(str::to_string)
    }) {
        spec["priorityClassName"] = json!(p);
    }
    if g.sub_groups.is_empty() {
        spec["minMember"] = json!(g.min_member);
    } else {
        // KAI: minMember and minSubGroup are exclusive; a group with sub-groups needs all
        // of them (each sub-group carries its own minMember).
        spec["minSubGroup"] = json!(g.sub_groups.len());
        spec["subGroups"] = g
            .sub_groups
            .iter()
            .map(|s| {
                let mut sg = json!({"name": s.name, "minMember": s.min_member});
                if let Some(t) = &s.topology {
                    sg["topologyConstraint"] = topology(t);
                }
                sg
            })
            .collect();
    }
    if let Some(t) = &g.topology {
        spec["topologyConstraint"] = topology(t);
    }
    spec
}
