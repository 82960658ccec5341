//! What live objects tell a draft: which pods belong to which template, what owns them, which
//! pod labels tell components and instances apart, which condition types and phases occur.

use crate::crd::Crd;
use crate::paths::Template;
use crate::paths::{Step, text};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Live objects of a kind, with their pods and the objects between (from a cluster or a
/// snapshot).
pub struct Observed<'a> {
    objects: &'a [Value],
}

/// What the objects showed.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    /// Condition types that were `True` on some object.
    pub condition_types: Vec<String>,
    /// Values of `.status.phase` or `.status.state`.
    pub phases: Vec<String>,
    /// By template path (`.spec.x[].template`).
    pub components: BTreeMap<String, SeenComponent>,
}

/// What the pods of one template showed.
#[derive(Debug, Default)]
pub(crate) struct SeenComponent {
    /// The kind that owns the pods, when it is not the workload and is owned by it.
    pub owner_kind: Option<(String, String, String)>,
    /// A pod label whose value is the same for every pod of this template and differs
    /// between templates.
    pub type_label: Option<(String, String)>,
    /// A pod label whose value is the instance the pod belongs to, and whether it holds the
    /// instance's name in lower case (Kubeflow's `replica-type: worker` for `Worker`).
    pub instance_label: Option<(String, bool)>,
    /// Every pod's controller is the workload itself.
    pub direct: bool,
}

/// A pod placed under a template.
struct Placed<'a> {
    pod: &'a Value,
    template: String,
    /// The instances whose template the pod matches (several when they look alike).
    instances: BTreeSet<String>,
    /// The pod's controller, when it is not the workload.
    owner: Option<&'a Value>,
    /// Objects between the workload and the pod.
    depth: usize,
}

impl<'a> Observed<'a> {
    /// Objects to learn from: workloads of the kind, pods, and anything in between.
    ///
    /// ```
    /// let objects = vec![serde_json::json!({"kind": "Pod", "metadata": {"name": "p"}})];
    /// let _ = wlmap_author::Observed::new(&objects);
    /// ```
    pub fn new(objects: &'a [Value]) -> Observed<'a> {
        Observed { objects }
    }

    pub(crate) fn see(&self, crd: &Crd, templates: &[Template]) -> Seen {
        let workloads: Vec<&Value> = self
            .objects
            .iter()
            .filter(|o| o["kind"] == crd.kind.as_str() && group_of(o) == crd.group)
            .collect();
        let by_uid: BTreeMap<&str, &Value> = self
            .objects
            .iter()
            .filter_map(|o| Some((o.pointer("/metadata/uid")?.as_str()?, o)))
            .collect();
        let mut placed = Vec::new();
        for pod in self.objects.iter().filter(|o| o["kind"] == "Pod") {
            if let Some(p) = place(pod, &workloads, &by_uid, templates) {
                placed.push(p);
            }
        }
        let mut seen = Seen {
            condition_types: condition_types(&workloads),
            phases: phases(&workloads),
            components: BTreeMap::new(),
        };
        let type_labels = type_labels(&placed);
        for t in templates {
            let key = text(&t.steps);
            let mine: Vec<&Placed> = placed.iter().filter(|p| p.template == key).collect();
            if mine.is_empty() {
                continue;
            }
            seen.components.insert(
                key.clone(),
                SeenComponent {
                    owner_kind: owner_kind(&mine),
                    type_label: type_labels.get(&key).cloned(),
                    instance_label: instance_label(&mine),
                    direct: mine.iter().all(|p| p.depth == 0),
                },
            );
        }
        seen
    }
}

fn group_of(o: &Value) -> &str {
    let av = o["apiVersion"].as_str().unwrap_or_default();
    av.rsplit_once('/').map_or("", |(g, _)| g)
}

fn controller_of<'a>(o: &Value, by_uid: &BTreeMap<&str, &'a Value>) -> Option<&'a Value> {
    let refs = o.pointer("/metadata/ownerReferences")?.as_array()?;
    let r = refs.iter().find(|r| r["controller"] == true)?;
    by_uid.get(r["uid"].as_str()?).copied()
}

/// The workload a pod belongs to (up its controllers), and the template whose containers it
/// has (by container names, then the first image when names are not enough).
fn place<'a>(
    pod: &'a Value,
    workloads: &[&'a Value],
    by_uid: &BTreeMap<&str, &'a Value>,
    templates: &[Template],
) -> Option<Placed<'a>> {
    let mut cur = pod;
    let mut between = Vec::new();
    let workload = loop {
        let owner = controller_of(cur, by_uid)?;
        if workloads.iter().any(|w| std::ptr::eq(*w, owner)) {
            break owner;
        }
        if between.len() >= 6 {
            return None;
        }
        between.push(owner);
        cur = owner;
    };
    let names = |spec: &Value| -> Vec<String> {
        let mut n: Vec<String> = spec["containers"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|c| c["name"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        n.sort();
        n
    };
    // When several templates have the same containers, the first container's image, then its
    // resources, tell them apart (a Ray head without GPUs, workers with them).
    let image = |spec: &Value| spec.pointer("/containers/0/image").cloned();
    let resources = |spec: &Value| spec.pointer("/containers/0/resources").cloned();
    let pod_spec = &pod["spec"];
    let mut matches = Vec::new();
    for t in templates {
        for (instance, tv) in values_at(workload, &t.steps) {
            let spec = if t.pod_spec { tv } else { &tv["spec"] };
            if names(spec) == names(pod_spec) {
                let alike = [
                    image(spec) == image(pod_spec),
                    resources(spec) == resources(pod_spec),
                ];
                matches.push((t, instance, alike));
            }
        }
    }
    let templates_of = |m: &[(&Template, Option<String>, [bool; 2])]| -> BTreeSet<String> {
        m.iter().map(|(t, _, _)| text(&t.steps)).collect()
    };
    for tie in 0..2 {
        if templates_of(&matches).len() > 1 {
            matches.retain(|m| m.2[tie]);
        }
    }
    let distinct = templates_of(&matches);
    if distinct.len() != 1 {
        return None;
    }
    let instances: BTreeSet<String> = matches.iter().filter_map(|m| m.1.clone()).collect();
    Some(Placed {
        pod,
        template: distinct.into_iter().next()?,
        instances,
        owner: between.first().copied(),
        depth: between.len(),
    })
}

/// The values at a template path in an object, each with the instance it belongs to (the
/// element's name, or the map key, at the first list or map).
fn values_at<'a>(o: &'a Value, steps: &[Step]) -> Vec<(Option<String>, &'a Value)> {
    let mut at: Vec<(Option<String>, &Value)> = vec![(None, o)];
    for st in steps {
        let mut next = Vec::new();
        for (inst, v) in at {
            match st {
                Step::Key(k) => {
                    if let Some(x) = v.get(k) {
                        next.push((inst, x));
                    }
                }
                Step::Iter => match v {
                    Value::Array(a) => {
                        for (i, x) in a.iter().enumerate() {
                            let id = ["name", "groupName", "role", "id"]
                                .iter()
                                .find_map(|k| x[*k].as_str().map(String::from))
                                .unwrap_or_else(|| i.to_string());
                            next.push((inst.clone().or(Some(id)), x));
                        }
                    }
                    Value::Object(m) => {
                        for (k, x) in m {
                            next.push((inst.clone().or(Some(k.clone())), x));
                        }
                    }
                    _ => {}
                },
            }
        }
        at = next;
    }
    at
}

fn condition_types(workloads: &[&Value]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in workloads {
        for c in w
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if c["status"] == "True"
                && let Some(t) = c["type"].as_str()
                && !out.iter().any(|x| x == t)
            {
                out.push(t.to_string());
            }
        }
    }
    out
}

fn phases(workloads: &[&Value]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in workloads {
        for k in ["phase", "state"] {
            if let Some(p) = w["status"][k].as_str()
                && !out.iter().any(|x| x == p)
            {
                out.push(p.to_string());
            }
        }
    }
    out
}

/// The kind between the workload and every pod of a template, when there is exactly one
/// object between and all are of one kind.
fn owner_kind(pods: &[&Placed]) -> Option<(String, String, String)> {
    let kinds: BTreeSet<(String, String, String)> = pods
        .iter()
        .map(|p| {
            let o = p.owner.filter(|_| p.depth == 1)?;
            let av = o["apiVersion"].as_str()?;
            let (g, v) = av.rsplit_once('/').unwrap_or(("", av));
            Some((
                g.to_string(),
                v.to_string(),
                o["kind"].as_str()?.to_string(),
            ))
        })
        .collect::<Option<_>>()?;
    (kinds.len() == 1).then(|| kinds.into_iter().next())?
}

/// Labels whose values say nothing about a component: hashes, revisions, names of one pod.
fn uninformative(key: &str) -> bool {
    [
        "hash",
        "revision",
        "uid",
        "pod-name",
        "pod-index",
        "job-name",
        "controller-uid",
    ]
    .iter()
    .any(|w| key.contains(w))
}

fn labels(pod: &Value) -> BTreeMap<String, String> {
    pod.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// One label key that tells every template's pods apart (constant within a template,
/// different between them), with each template's value; keys naming a role preferred.
fn type_labels(placed: &[Placed]) -> BTreeMap<String, (String, String)> {
    let templates: BTreeSet<&str> = placed.iter().map(|p| p.template.as_str()).collect();
    if templates.len() < 2 {
        return BTreeMap::new();
    }
    let mut keys: Option<BTreeSet<String>> = None;
    for p in placed {
        let k: BTreeSet<String> = labels(p.pod).into_keys().collect();
        keys = Some(match keys {
            None => k,
            Some(prev) => prev.intersection(&k).cloned().collect(),
        });
    }
    let mut good: Vec<(String, BTreeMap<String, String>)> = Vec::new();
    for key in keys
        .unwrap_or_default()
        .into_iter()
        .filter(|k| !uninformative(k))
    {
        let mut value_of: BTreeMap<String, String> = BTreeMap::new();
        let consistent = placed.iter().all(|p| {
            let v = labels(p.pod).remove(&key).unwrap_or_default();
            value_of
                .entry(p.template.clone())
                .or_insert_with(|| v.clone())
                == &v
        });
        let distinct: BTreeSet<&String> = value_of.values().collect();
        if consistent && distinct.len() == value_of.len() {
            good.push((key, value_of));
        }
    }
    let role = |k: &str| ["type", "role", "component"].iter().any(|w| k.contains(w));
    good.sort_by_key(|(k, _)| (!role(k), k.len()));
    let Some((key, value_of)) = good.into_iter().next() else {
        return BTreeMap::new();
    };
    value_of
        .into_iter()
        .map(|(t, v)| (t, (key.clone(), v)))
        .collect()
}

/// A label key whose value is, on every pod, one of the instances the pod's template matches
/// (instances whose templates look alike are told apart by the label itself), as it is or in
/// lower case.
fn instance_label(pods: &[&Placed]) -> Option<(String, bool)> {
    let with: Vec<&&Placed> = pods.iter().filter(|p| !p.instances.is_empty()).collect();
    let first = labels(with.first()?.pod);
    for lower in [false, true] {
        let holds = |p: &Placed, k: &str| {
            labels(p.pod).get(k).is_some_and(|v| {
                p.instances.iter().any(|i| {
                    if lower {
                        i.to_ascii_lowercase() == *v
                    } else {
                        i == v
                    }
                })
            })
        };
        let mut keys: Vec<&String> = first
            .keys()
            .filter(|k| !uninformative(k) && with.iter().all(|p| holds(p, k)))
            .collect();
        keys.sort_by_key(|k| k.len());
        if let Some(k) = keys.first() {
            return Some(((*k).clone(), lower));
        }
    }
    None
}
