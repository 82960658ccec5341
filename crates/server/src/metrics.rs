//! Workload metrics in the Prometheus text format, named as kube-state-metrics names its
//! families: one family per fact, `wlmap_<object>_<fact>`, every workload family labelled
//! `namespace`, `group`, `kind`, `name`, the status as a state-set (one series per phase, 1 for
//! the current one), and no unbounded label values (no pod names) on workload families.
//!
//! | family | labels | value |
//! |---|---|---|
//! | `wlmap_workload_info` | + `version`, `uid`, `definition`, `origin` | 1 |
//! | `wlmap_workload_created` | | creation time, Unix seconds |
//! | `wlmap_workload_status_phase` | + `phase` | 1 for the primary status, else 0 |
//! | `wlmap_workload_evaluation_error` | | 1 when the definition could not evaluate it |
//! | `wlmap_workload_status_rule_failures` | | status rules that could not be evaluated (the status may be wrong) |
//! | `wlmap_workload_unschedulable` | | 1 when the scheduler cannot place pods of it (`PodScheduled=False`, reason `Unschedulable`; the words are `describe`'s) |
//! | `wlmap_workload_gpus_requested` | | GPUs the spec asks for |
//! | `wlmap_workload_gpus_held` | | GPUs its pods hold: DRA devices allocated to their claims, device-plugin GPUs of Running pods |
//! | `wlmap_workload_pods_desired` / `_observed` / `_ready` | | pods |
//! | `wlmap_pod_workload_info` | `namespace`, `pod`, `workload_group`, `workload_kind`, `workload`, `component`, `component_instance` | 1 |
//! | `wlmap_kind_workloads` | `namespace`, `group`, `kind` | workloads |
//! | `wlmap_kind_gpus_requested` / `_held` | `namespace`, `group`, `kind` | GPU totals |
//!
//! `wlmap_pod_workload_info` joins with kube-state-metrics (`kube_pod_info`) and with GPU
//! exporters (DCGM's `namespace`/`pod` labels) on `namespace` and `pod`, so a dashboard can
//! attribute GPU utilisation to workloads. Every family is a gauge, so the text is also valid
//! OpenMetrics (the controller appends it to its own OpenMetrics exposition).

use std::collections::BTreeMap;
use std::fmt::Write;
use wlmap_engine::{GpuPolicy, Node, Phase, PodInfo, Workload};
use wlmap_inventory::{Entry, Inventory};

/// Content type of [`render`]'s text.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Render every family for the inventory's top-level workloads into `out`.
///
/// ```
/// let job = wlmap_engine::Object::new(serde_json::json!({"apiVersion": "batch/v1", "kind": "Job",
///     "metadata": {"name": "train", "namespace": "ml", "uid": "j1"},
///     "spec": {"parallelism": 2, "template": {"spec": {"containers": [
///         {"name": "t", "resources": {"limits": {"nvidia.com/gpu": 4}}}]}}}}));
/// let inv = wlmap_inventory::Inventory::from_objects(wlmap_catalog::registry().unwrap(), [job]);
/// let mut text = String::new();
/// wlmap_server::metrics::render(&inv, &mut text);
/// assert!(text.contains(r#"wlmap_workload_gpus_requested{namespace="ml",group="batch",kind="Job",name="train"} 8"#));
/// assert!(text.contains(r#"wlmap_kind_gpus_requested{namespace="ml",group="batch",kind="Job"} 8"#));
/// ```
pub fn render(inv: &Inventory, out: &mut String) {
    let facts: Vec<Facts> = inv.workloads().map(Facts::of).collect();
    for family in FAMILIES {
        family.header(out);
        for f in &facts {
            (family.samples)(f, family.name, out);
        }
    }
    render_totals(&facts, out);
}

/// What the families say of one workload.
struct Facts<'a> {
    entry: &'a Entry,
    /// `namespace="..",group="..",kind="..",name=".."`, escaped once.
    labels: String,
    gpus_requested: f64,
    gpus_held: f64,
}

impl<'a> Facts<'a> {
    fn of(entry: &'a Entry) -> Facts<'a> {
        let k = &entry.key;
        let labels = label_set(&[
            ("namespace", &k.namespace),
            ("group", &k.kind.group),
            ("kind", &k.kind.kind),
            ("name", &k.name),
        ]);
        let (gpus_requested, gpus_held) = match &entry.result {
            Ok(w) => (w.gpus(&GpuPolicy::default()), crate::api::gpus_held(w)),
            Err(_) => (0.0, 0.0),
        };
        Facts {
            entry,
            labels,
            gpus_requested,
            gpus_held,
        }
    }

    fn workload(&self) -> Option<&'a Workload> {
        self.entry.result.as_ref().ok()
    }

    /// One sample of a count read from the resolved workload (none when it did not resolve,
    /// or the count is unknown).
    fn gauge(&self, out: &mut String, name: &str, value: impl Fn(&Workload) -> Option<u64>) {
        if let Some(v) = self.workload().and_then(value) {
            sample(out, name, &self.labels, None, v as f64);
        }
    }
}

/// Every pod of a workload with the node of the tree that claims it (None when none does).
fn pods(w: &Workload) -> impl Iterator<Item = (Option<&Node>, &PodInfo)> {
    w.root
        .walk()
        .flat_map(|n| n.pods.iter().map(move |p| (Some(n), p)))
        .chain(w.unattributed.iter().map(|p| (None, p)))
}

struct Family {
    name: &'static str,
    help: &'static str,
    /// The family's samples of one workload, given the family's name.
    samples: fn(&Facts, &str, &mut String),
}

impl Family {
    fn header(&self, out: &mut String) {
        let _ = writeln!(out, "# HELP {} {}", self.name, self.help);
        let _ = writeln!(out, "# TYPE {} gauge", self.name);
    }
}

const FAMILIES: &[Family] = &[
    Family {
        name: "wlmap_workload_info",
        help: "Information about a top-level workload: its version, uid and the definition that reads it.",
        samples: |f, name, out| {
            let d = &f.entry.definition;
            let extra = label_set(&[
                ("version", &f.entry.object.gvk().version),
                ("uid", f.entry.object.uid()),
                ("definition", &d.name()),
                ("origin", &d.origin().to_string()),
            ]);
            sample(out, name, &f.labels, Some(&extra), 1.0);
        },
    },
    Family {
        name: "wlmap_workload_created",
        help: "Unix creation timestamp of a top-level workload.",
        samples: |f, name, out| {
            if let Some(t) = f
                .entry
                .object
                .creation_timestamp()
                .and_then(wlmap_engine::unix_seconds)
            {
                sample(out, name, &f.labels, None, t as f64);
            }
        },
    },
    Family {
        name: "wlmap_workload_status_phase",
        help: "The workload's primary status as its definition reads it (1 for the current phase).",
        samples: |f, name, out| {
            let current = f.workload().map_or(Phase::Undefined, |w| w.status.phase);
            for phase in Phase::PRECEDENCE {
                let extra = label_set(&[("phase", &format!("{phase:?}"))]);
                let v = if phase == current { 1.0 } else { 0.0 };
                sample(out, name, &f.labels, Some(&extra), v);
            }
        },
    },
    Family {
        name: "wlmap_workload_evaluation_error",
        help: "1 when the workload's definition could not evaluate it (its status then reads Undefined).",
        samples: |f, name, out| {
            let v = if f.entry.result.is_err() { 1.0 } else { 0.0 };
            sample(out, name, &f.labels, None, v);
        },
    },
    Family {
        name: "wlmap_workload_status_rule_failures",
        help: "Status rules of the workload's definition that could not be evaluated on it (its status may be wrong).",
        samples: |f, name, out| {
            let n = f.workload().map_or(0, |w| w.status.failures.len());
            sample(out, name, &f.labels, None, n as f64);
        },
    },
    Family {
        name: "wlmap_workload_unschedulable",
        help: "1 when the scheduler cannot place pods of the workload (their PodScheduled condition is False with reason Unschedulable).",
        samples: |f, name, out| {
            let held = f
                .workload()
                .is_some_and(|w| w.waiting().iter().any(|x| x.why.reason == "Unschedulable"));
            sample(out, name, &f.labels, None, if held { 1.0 } else { 0.0 });
        },
    },
    Family {
        name: "wlmap_workload_gpus_requested",
        help: "GPUs the workload's spec asks for, over every component and replica.",
        samples: |f, name, out| sample(out, name, &f.labels, None, f.gpus_requested),
    },
    Family {
        name: "wlmap_workload_gpus_held",
        help: "GPUs the workload's pods hold: DRA devices allocated to their claims, device-plugin GPUs of Running pods.",
        samples: |f, name, out| sample(out, name, &f.labels, None, f.gpus_held),
    },
    Family {
        name: "wlmap_workload_pods_desired",
        help: "Pods the workload's spec asks for.",
        samples: |f, name, out| f.gauge(out, name, |w| Some(w.root.desired_pods)),
    },
    Family {
        name: "wlmap_workload_pods_observed",
        help: "Pods of the workload that exist.",
        samples: |f, name, out| {
            f.gauge(out, name, |w| w.pods_observed().then(|| w.observed_pods()))
        },
    },
    Family {
        name: "wlmap_workload_pods_ready",
        help: "Pods of the workload that are ready.",
        samples: |f, name, out| f.gauge(out, name, |w| w.pods_observed().then(|| w.ready_pods())),
    },
    Family {
        name: "wlmap_pod_workload_info",
        help: "The top-level workload and component a pod belongs to (join on namespace and pod).",
        samples: |f, name, out| {
            let Some(w) = f.workload() else { return };
            let k = &f.entry.key;
            for (node, p) in pods(w) {
                let labels = label_set(&[
                    ("namespace", &k.namespace),
                    ("pod", &p.name),
                    ("workload_group", &k.kind.group),
                    ("workload_kind", &k.kind.kind),
                    ("workload", &k.name),
                    ("component", node.map_or("", |n| n.component.as_str())),
                    // Not `instance`: Prometheus sets that label on every scraped series.
                    (
                        "component_instance",
                        node.and_then(|n| n.instance.as_deref()).unwrap_or(""),
                    ),
                ]);
                sample(out, name, &labels, None, 1.0);
            }
        },
    },
];

/// What one namespace and kind add up to.
#[derive(Default)]
struct Totals {
    workloads: f64,
    gpus_requested: f64,
    gpus_held: f64,
}

/// The per namespace and kind totals.
fn render_totals(facts: &[Facts], out: &mut String) {
    let mut totals: BTreeMap<(&str, &str, &str), Totals> = BTreeMap::new();
    for f in facts {
        let k = &f.entry.key;
        let t = totals
            .entry((&k.namespace, &k.kind.group, &k.kind.kind))
            .or_default();
        t.workloads += 1.0;
        t.gpus_requested += f.gpus_requested;
        t.gpus_held += f.gpus_held;
    }
    type Value = fn(&Totals) -> f64;
    let families: [(&str, &str, Value); 3] = [
        (
            "wlmap_kind_workloads",
            "Top-level workloads per namespace and kind.",
            |t| t.workloads,
        ),
        (
            "wlmap_kind_gpus_requested",
            "GPUs requested by the top-level workloads of a namespace and kind.",
            |t| t.gpus_requested,
        ),
        (
            "wlmap_kind_gpus_held",
            "GPUs held by the pods of the top-level workloads of a namespace and kind (DRA devices allocated, device-plugin GPUs of Running pods).",
            |t| t.gpus_held,
        ),
    ];
    for (name, help, value) in families {
        Family {
            name,
            help,
            samples: |_, _, _| {},
        }
        .header(out);
        for ((ns, group, kind), t) in &totals {
            let labels = label_set(&[("namespace", ns), ("group", group), ("kind", kind)]);
            sample(out, name, &labels, None, value(t));
        }
    }
}

/// `k1="v1",k2="v2"` with values escaped as the text format requires.
fn label_set(pairs: &[(&str, &str)]) -> String {
    let mut s = String::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(k);
        s.push_str("=\"");
        escape_into(&mut s, v);
        s.push('"');
    }
    s
}

/// A label value as the text format writes it: backslash, double quote and line feed escaped.
fn escape_into(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

fn sample(out: &mut String, name: &str, labels: &str, extra: Option<&str>, v: f64) {
    out.push_str(name);
    out.push('{');
    out.push_str(labels);
    if let Some(e) = extra {
        out.push(',');
        out.push_str(e);
    }
    out.push_str("} ");
    if v.fract() == 0.0 && v.abs() < 1e15 {
        let _ = writeln!(out, "{}", v as i64);
    } else {
        let _ = writeln!(out, "{v}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The demo's TFJob waits for GPUs (its pods `PodScheduled=False`, `Unschedulable`); its
    /// running JobSet does not.
    #[test]
    fn a_workload_the_scheduler_cannot_place_is_flagged() {
        let reg = wlmap_catalog::registry().expect("catalog");
        let objects = wlmap_catalog::DEMO.iter().flat_map(|(name, text)| {
            wlmap_schema::decode_objects(text, name)
                .expect("demo")
                .into_iter()
                .map(wlmap_engine::Object::new)
        });
        let inv = Inventory::from_objects(reg, objects);
        let mut text = String::new();
        render(&inv, &mut text);
        let value = |name: &str| {
            text.lines()
                .find(|l| {
                    l.starts_with("wlmap_workload_unschedulable{")
                        && l.contains(&format!("name=\"{name}\""))
                })
                .and_then(|l| l.rsplit(' ').next())
                .map(str::to_string)
        };
        assert_eq!(value("tf-workers-only").as_deref(), Some("1"), "{text}");
        assert_eq!(value("llm-train").as_deref(), Some("0"));
    }

    #[test]
    fn label_values_are_escaped() {
        let s = label_set(&[("name", "a\"b\\c\nd")]);
        assert_eq!(s, r#"name="a\"b\\c\nd""#);
    }

    #[test]
    fn whole_values_print_without_a_fraction() {
        let mut s = String::new();
        sample(&mut s, "m", "a=\"1\"", None, 12.0);
        sample(&mut s, "m", "a=\"1\"", None, 0.5);
        assert_eq!(s, "m{a=\"1\"} 12\nm{a=\"1\"} 0.5\n");
    }
}
