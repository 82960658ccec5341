//! Kubernetes v1.35 Workload API (`scheduling.k8s.io/v1alpha1`, one Workload of at most 8
//! pod groups, which pods name in `spec.workloadRef`); v1.37 no longer serves it (see the
//! native form).

use super::{Format, GangKind, PodTag, Rendered, object};
use crate::gang::{PodGroup, gang_name};
use crate::object::Object;
use crate::resolve::Workload;
use serde_json::{Value, json};

const WORKLOAD: GangKind = GangKind::new("scheduling.k8s.io", "v1alpha1", "Workload", "workloads");

/// The most pod groups a v1alpha1 Workload holds.
const MAX_GROUPS: usize = 8;

/// The v1.35 Workload API.
pub(super) const FORMAT: Format = Format::new(
    "workload",
    "Kubernetes v1.35 Workload API (scheduling.k8s.io/v1alpha1)",
    &[WORKLOAD],
    render,
    PodTag::Spec("workloadRef"),
)
.not_by_controller("Kubernetes v1.37 no longer serves scheduling.k8s.io/v1alpha1 Workloads");

fn render(groups: &[PodGroup], _: &Workload, o: &Object) -> Rendered {
    let pgs: Vec<Value> = groups
        .iter()
        .take(MAX_GROUPS)
        .map(|g| json!({"name": g.name, "policy": {"gang": {"minCount": g.min_member}}}))
        .collect();
    let gv = o.gvk();
    let spec = json!({"controllerRef": {"apiGroup": gv.group, "kind": gv.kind, "name": o.name()}, "podGroups": pgs});
    let mut r = Rendered::default();
    r.objects
        .push(object(&WORKLOAD, &gang_name(&[o.name()]), o, spec));
    if groups.len() > MAX_GROUPS {
        r.warnings.push(format!(
            "the Workload API allows {MAX_GROUPS} pod groups; {} were cut",
            groups.len() - MAX_GROUPS
        ));
    }
    r
}
