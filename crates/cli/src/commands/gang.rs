//! `wlmap gang`: gang-scheduling groups, in each scheduler's language.

use crate::args::{GangArgs, GangFormat, Output};
use crate::context::{Context, print_data, resolve_all};
use crate::exit::Result;
use crate::source::ObjectSet;
use serde_json::{Value, json};
use wlmap_engine::{GpuPolicy, Object, PodGroup, Workload};

fn owner_ref(o: &Object) -> Value {
    json!([{"apiVersion": o.api_version(), "kind": o.kind(), "name": o.name(), "uid": o.uid(), "controller": true, "blockOwnerDeletion": false}])
}

fn meta(name: &str, o: &Object) -> Value {
    let mut m = json!({"name": name, "ownerReferences": owner_ref(o)});
    if !o.namespace().is_empty() {
        m["namespace"] = json!(o.namespace());
    }
    m
}

/// Render groups as scheduler objects (a list of documents).
pub fn render(format: GangFormat, groups: &[PodGroup], w: &Workload, o: &Object) -> Vec<Value> {
    let gpu = GpuPolicy::default();
    let label = |k: &str| o.label(k).map(str::to_string);
    let mut docs = Vec::new();
    let mut pod_tags = Vec::new();
    match format {
        GangFormat::Kai => {
            for g in groups {
                let mut spec = json!({"queue": label("kai.scheduler/queue").unwrap_or_else(|| "default-queue".into())});
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
                    // KAI: minMember and minSubGroup are exclusive; a group with sub-groups
                    // needs all of them (each sub-group carries its own minMember).
                    spec["minSubGroup"] = json!(g.sub_groups.len());
                    spec["subGroups"] = g
                        .sub_groups
                        .iter()
                        .map(|s| {
                            let mut sg = json!({"name": s.name, "minMember": s.min_member});
                            if let Some(t) = &s.topology {
                                sg["topologyConstraint"] = json!({"topology": t.topology_name, "requiredTopologyLevel": t.required_topology_level, "preferredTopologyLevel": t.preferred_topology_level});
                            }
                            sg
                        })
                        .collect();
                }
                if let Some(t) = &g.topology {
                    spec["topologyConstraint"] = json!({"topology": t.topology_name, "requiredTopologyLevel": t.required_topology_level, "preferredTopologyLevel": t.preferred_topology_level});
                }
                docs.push(json!({"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup", "metadata": meta(&g.name, o), "spec": spec}));
                for s in &g.sub_groups {
                    for p in &s.members {
                        pod_tags.push(json!({"pod": p, "annotations": {"pod-group-name": g.name}, "labels": {"kai.scheduler/subgroup-name": s.name}}));
                    }
                }
                if g.sub_groups.is_empty() {
                    for p in &g.members {
                        pod_tags.push(json!({"pod": p, "annotations": {"pod-group-name": g.name}}));
                    }
                }
            }
        }
        GangFormat::Coscheduling => {
            for g in groups {
                docs.push(json!({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup", "metadata": meta(&g.name, o), "spec": {"minMember": g.min_member, "scheduleTimeoutSeconds": 60}}));
                for p in &g.members {
                    pod_tags.push(
                        json!({"pod": p, "labels": {"scheduling.x-k8s.io/pod-group": g.name}}),
                    );
                }
            }
        }
        GangFormat::Volcano => {
            let r = &w.root.resources;
            let mut min_res = serde_json::Map::new();
            if r.cpu_millis() > 0 {
                min_res.insert("cpu".into(), json!(format!("{}m", r.cpu_millis())));
            }
            if r.memory_bytes() > 0 {
                min_res.insert("memory".into(), json!(r.memory_bytes().to_string()));
            }
            for (k, v) in r.extended() {
                min_res.insert(k, json!(crate::render::num(v)));
            }
            let single = groups.len() == 1;
            for g in groups {
                let mut spec = json!({"minMember": g.min_member, "queue": o.json().pointer("/metadata/annotations/scheduling.volcano.sh~1queue-name").and_then(Value::as_str).unwrap_or("default")});
                // minResources is the whole workload's desired request; exact only when the
                // workload is one group.
                if single && !min_res.is_empty() {
                    spec["minResources"] = Value::Object(min_res.clone());
                }
                docs.push(json!({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup", "metadata": meta(&g.name, o), "spec": spec}));
                for p in &g.members {
                    pod_tags.push(
                        json!({"pod": p, "annotations": {"scheduling.k8s.io/group-name": g.name}}),
                    );
                }
            }
            let _ = gpu;
        }
        GangFormat::Kueue => {
            for g in groups {
                let tags = json!({"labels": {"kueue.x-k8s.io/pod-group-name": g.name}, "annotations": {"kueue.x-k8s.io/pod-group-total-count": g.min_member.to_string()}});
                docs.push(json!({"podGroup": g.name, "podTemplateMetadata": tags}));
                for p in &g.members {
                    pod_tags.push(json!({"pod": p, "labels": {"kueue.x-k8s.io/pod-group-name": g.name}, "annotations": {"kueue.x-k8s.io/pod-group-total-count": g.min_member.to_string()}}));
                }
            }
        }
        GangFormat::Workload => {
            let pgs: Vec<Value> = groups
                .iter()
                .take(8)
                .map(|g| json!({"name": g.name, "policy": {"gang": {"minCount": g.min_member}}}))
                .collect();
            let gv = o.gvk();
            docs.push(json!({
                "apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
                "metadata": meta(&wlmap_engine::gang_name(&[o.name()]), o),
                "spec": {"controllerRef": {"apiGroup": gv.group, "kind": gv.kind, "name": o.name()}, "podGroups": pgs}}));
            if groups.len() > 8 {
                eprintln!(
                    "wlmap: warning: the Workload API allows 8 pod groups; {} were cut",
                    groups.len() - 8
                );
            }
        }
    }
    if !pod_tags.is_empty() {
        docs.push(json!({"kind": "PodTags", "comment": "labels/annotations that tie each pod to its group", "pods": pod_tags}));
    }
    docs
}

/// Run.
pub fn run(ctx: &Context, a: &GangArgs) -> Result {
    let (holder, def, idx, file_mode);
    if let Some(f) = &a.file {
        let (s, d, i) = crate::commands::describe::from_file(ctx, f)?;
        holder = s;
        def = d;
        idx = i;
        file_mode = true;
    } else {
        let (d, i) = crate::commands::describe::find(ctx, &a.targets)?;
        holder = ObjectSet::default();
        def = d;
        idx = i;
        file_mode = false;
    }
    let set = if file_mode { &holder } else { &ctx.set };
    let obj = &set.objects[idx];
    let w = resolve_all(set, &[(def.clone(), idx)])
        .pop()
        .expect("one in, one out")?;
    let has_pods = w.observed_pods() > 0;
    let groups = wlmap_engine::gangs(&def, &w, has_pods.then_some(set.objects.as_slice()))?;
    match a.format {
        None => {
            let out = if ctx.output() == Output::Yaml {
                Output::Yaml
            } else {
                Output::Json
            };
            print_data(
                out,
                &json!({"podGroups": groups, "mode": if has_pods { "observed" } else { "predicted" }}),
            )
        }
        Some(f) => {
            let docs = render(f, &groups, &w, obj);
            if ctx.output() == Output::Json {
                return print_data(Output::Json, &json!({"items": docs}));
            }
            let mut s = String::new();
            for d in docs {
                s.push_str("---\n");
                s.push_str(&serde_saphyr::to_string(&d).map_err(|e| anyhow::anyhow!("yaml: {e}"))?);
            }
            crate::write_stdout(&s);
            Ok(())
        }
    }
}
