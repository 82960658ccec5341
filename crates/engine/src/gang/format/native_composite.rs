//! Kubernetes v1.37 hierarchical gangs: a group with sub-groups is a
//! `scheduling.k8s.io/v1alpha3` CompositePodGroup that needs every sub-group
//! (`minGroupCount`), over a PodGroup per sub-group with its own `minCount`, so that each role
//! is complete, not only the total. The pods name their sub-group's PodGroup. A Workload of
//! the group's name holds the templates both refer to (the scheduler reads the groups only;
//! the API requires the reference). Groups without sub-groups, or with more than a Workload
//! holds, are PodGroups as in the flat form.
//!
//! ```
//! # let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
//! # let pod = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u"}, "spec": {}}));
//! # let w = wlmap_engine::resolve(&def, &pod).unwrap();
//! use wlmap_engine::{PodGroup, SubGroupOut, SchedulerFormat, render_gangs};
//! let sub = |n: &str, m: u64| SubGroupOut { name: n.into(), min_member: m, component: n.into(), members: vec![format!("{n}-0")], topology: None };
//! let mut workers = sub("p-gang-workers", 2);
//! workers.topology = Some(serde_json::from_value(serde_json::json!({"topologyName": "dc", "requiredTopologyLevel": "example.com/rack"})).unwrap());
//! let g = PodGroup { name: "p-gang".into(), min_member: 3, sub_groups: vec![sub("p-gang-leader", 1), workers], members: vec![], topology: None, incomplete: false };
//! let r = render_gangs(SchedulerFormat::NativeComposite, &[g], &w, &pod);
//! let kinds: Vec<&str> = r.objects.iter().map(|o| o["kind"].as_str().unwrap()).collect();
//! assert_eq!(kinds, ["Workload", "CompositePodGroup", "PodGroup", "PodGroup"]);
//! assert_eq!(r.objects[1]["spec"]["schedulingPolicy"]["gang"]["minGroupCount"], 2);
//! assert_eq!(r.objects[3]["spec"]["parentCompositePodGroupName"], "p-gang");
//! // The workers in one rack; the leader anywhere.
//! assert_eq!(r.objects[3]["spec"]["schedulingConstraints"]["topology"][0]["key"], "example.com/rack");
//! assert!(r.objects[2]["spec"]["schedulingConstraints"].is_null());
//! assert_eq!(r.pod_tags[1]["spec"]["schedulingGroup"]["podGroupName"], "p-gang-workers");
//! ```

use super::native::{GROUP_FIELD, POD_GROUP, constrain, flat, pod_group, tag};
use super::{Format, GangKind, Rendered, object};
use crate::gang::{PodGroup, SubGroupOut};
use crate::object::Object;
use crate::resolve::Workload;
use serde_json::{Value, json};

const WORKLOAD: GangKind = GangKind::new("scheduling.k8s.io", "v1beta1", "Workload", "workloads");

const COMPOSITE: GangKind = GangKind::new(
    "scheduling.k8s.io",
    "v1alpha3",
    "CompositePodGroup",
    "compositepodgroups",
);

/// The most templates a Workload holds at one level.
const MAX_TEMPLATES: usize = 8;

/// Kubernetes v1.37 CompositePodGroups over PodGroups.
pub(super) const FORMAT: Format = Format::new(
    "native-composite",
    "Kubernetes v1.37 hierarchical gangs: a CompositePodGroup (scheduling.k8s.io/v1alpha3, gate CompositePodGroup) over a PodGroup per sub-group",
    &[WORKLOAD, COMPOSITE, POD_GROUP],
    render,
    GROUP_FIELD,
)
.off_by_default("turn on the feature gates GenericWorkload, TopologyAwareWorkloadScheduling and CompositePodGroup (API server and scheduler) and --runtime-config=scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true, or use --scheduler native");

fn render(groups: &[PodGroup], _: &Workload, o: &Object) -> Rendered {
    let mut r = Rendered::default();
    for g in groups {
        let leaves: Vec<&SubGroupOut> = g.sub_groups.iter().filter(|s| s.min_member > 0).collect();
        if leaves.len() > MAX_TEMPLATES {
            r.warnings.push(format!(
                "{}: {} sub-groups, more than the {MAX_TEMPLATES} templates a Workload holds: one PodGroup for the whole group",
                g.name,
                leaves.len()
            ));
        }
        if leaves.is_empty() || leaves.len() > MAX_TEMPLATES {
            r.extend(flat(std::slice::from_ref(g), o));
        } else {
            composite(&mut r, g, &leaves, o);
        }
    }
    r
}

/// The Workload, the CompositePodGroup and the leaf PodGroups of one group.
fn composite(r: &mut Rendered, g: &PodGroup, leaves: &[&SubGroupOut], o: &Object) {
    let gv = o.gvk();
    let policy = json!({"gang": {"minGroupCount": leaves.len()}});
    let templates: Vec<Value> = leaves
        .iter()
        .map(|s| {
            let mut t =
                json!({"name": s.name, "schedulingPolicy": {"gang": {"minCount": s.min_member}}});
            constrain(&mut t, &s.topology);
            t
        })
        .collect();
    let mut template =
        json!({"name": g.name, "schedulingPolicy": policy, "podGroupTemplates": templates});
    constrain(&mut template, &g.topology);
    let workload = json!({"controllerRef": {"apiGroup": gv.group, "kind": gv.kind, "name": o.name()},
        "compositePodGroupTemplates": [template]});
    r.objects.push(object(&WORKLOAD, &g.name, o, workload));
    let mut spec = json!({"workloadRef": {"workloadName": g.name, "templateName": g.name}, "schedulingPolicy": policy});
    constrain(&mut spec, &g.topology);
    r.objects.push(object(&COMPOSITE, &g.name, o, spec));
    for s in leaves {
        r.objects
            .push(pod_group(&s.name, s.min_member, Some((&g.name, s)), o));
        tag(r, &s.name, &s.members);
    }
}
