//! `wlmap gang`: gang-scheduling groups, in each scheduler's language.

use crate::args::{GangArgs, Output};
use crate::context::{Context, print_data};
use crate::exit::Result;
use serde_json::json;

/// `wlmap gang`: print the gang-scheduling groups of the named workloads in a scheduler's
/// format.
pub fn run(ctx: &Context, a: &GangArgs) -> Result {
    let loaded = crate::commands::describe::load(ctx, a.file.as_deref(), &a.targets)?;
    let (def, obj) = (&loaded.entry.definition, &loaded.entry.object);
    let w = loaded.entry.result?;
    let has_pods = w.observed_pods() > 0;
    let groups = wlmap_engine::gangs(def, &w, has_pods.then_some(loaded.objects.as_slice()))?;
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
            let r = wlmap_engine::render_gangs(f, &groups, &w, obj);
            for warning in &r.warnings {
                eprintln!("wlmap: warning: {warning}");
            }
            print_rendered(ctx.output(), &r)
        }
    }
}

/// The objects as a `List` (JSON) or YAML documents, both ready for `kubectl apply`; in YAML,
/// what ties each known pod to its group follows as comments. Kueue has no objects: its
/// documents are the labels and annotations of each group's pod templates.
fn print_rendered(out: Output, r: &wlmap_engine::Rendered) -> Result {
    let docs = if r.objects.is_empty() {
        &r.templates
    } else {
        &r.objects
    };
    if out == Output::Json {
        return print_data(
            Output::Json,
            &json!({"apiVersion": "v1", "kind": "List", "items": docs}),
        );
    }
    let mut s = String::new();
    for d in docs {
        s.push_str("---\n");
        s.push_str(&serde_saphyr::to_string(d).map_err(|e| anyhow::anyhow!("yaml: {e}"))?);
    }
    if !r.pod_tags.is_empty() {
        s.push_str("# What ties each pod to its group (set when the pod is created):\n");
        for t in &r.pod_tags {
            s.push_str(&format!("# {}\n", pod_tag(t)));
        }
    }
    crate::write_stdout(&s);
    Ok(())
}

/// `pod NAME: labels k=v; annotations k=v; spec.schedulingGroup.podGroupName=G`.
fn pod_tag(t: &serde_json::Value) -> String {
    let pairs = |what: &str| -> Option<String> {
        let m = t.get(what)?.as_object()?;
        let kv: Vec<String> = m
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
            .collect();
        Some(format!("{what} {}", kv.join(",")))
    };
    let mut parts: Vec<String> = ["labels", "annotations"]
        .into_iter()
        .filter_map(pairs)
        .collect();
    if let Some(g) = t
        .pointer("/spec/schedulingGroup/podGroupName")
        .and_then(|v| v.as_str())
    {
        parts.push(format!("spec.schedulingGroup.podGroupName={g}"));
    }
    format!(
        "pod {}: {}",
        t["pod"].as_str().unwrap_or_default(),
        parts.join("; ")
    )
}
