//! Volcano: a `scheduling.volcano.sh/v1beta1` PodGroup per group, with `minResources` when the
//! workload is one group (it is the whole workload's desired request); pods name it in the
//! `scheduling.k8s.io/group-name` annotation.

use super::{Format, GangKind, PodTag, Rendered, object, tag_members};
use crate::gang::PodGroup;
use crate::object::Object;
use crate::resolve::Workload;
use serde_json::{Value, json};

const POD_GROUP: GangKind = GangKind::pod_group("scheduling.volcano.sh", "v1beta1");

/// The annotation that puts a pod in a Volcano PodGroup.
const ANNOTATION: &str = "scheduling.k8s.io/group-name";

/// Volcano PodGroups.
pub(super) const FORMAT: Format = Format::new(
    "volcano",
    "Volcano PodGroup (scheduling.volcano.sh/v1beta1), pod annotation",
    &[POD_GROUP],
    render,
    PodTag::Annotation(ANNOTATION),
);

fn render(groups: &[PodGroup], w: &Workload, o: &Object) -> Rendered {
    let min_res = min_resources(w);
    let single = groups.len() == 1;
    let queue = o
        .json()
        .pointer("/metadata/annotations/scheduling.volcano.sh~1queue-name")
        .and_then(Value::as_str)
        .unwrap_or("default");
    let objects = groups
        .iter()
        .map(|g| {
            let mut spec = json!({"minMember": g.min_member, "queue": queue});
            if single && !min_res.is_empty() {
                spec["minResources"] = Value::Object(min_res.clone());
            }
            object(&POD_GROUP, &g.name, o, spec)
        })
        .collect();
    Rendered {
        objects,
        pod_tags: tag_members(
            groups,
            |g, p| json!({"pod": p, "annotations": {ANNOTATION: g.name}}),
        ),
        ..Rendered::default()
    }
}

/// The workload's whole desired request, as quantities.
fn min_resources(w: &Workload) -> serde_json::Map<String, Value> {
    let r = &w.root.resources;
    let mut min_res = serde_json::Map::new();
    if r.cpu_millis() > 0 {
        min_res.insert("cpu".into(), json!(format!("{}m", r.cpu_millis())));
    }
    if r.memory_bytes() > 0 {
        min_res.insert("memory".into(), json!(r.memory_bytes().to_string()));
    }
    for (k, v) in r.extended() {
        min_res.insert(k, json!(quantity(v)));
    }
    min_res
}

/// A count as a quantity: whole numbers without a fraction.
fn quantity(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}
