//! `wlmap set`: change pod templates through the definition.

use crate::args::{Output, SetArgs};
use crate::context::{Context, print_data};
use crate::exit::{Result, usage};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use wlmap_engine::{PodUpdate, Target};

fn pairs(items: &[String], what: &str) -> Result<BTreeMap<String, String>> {
    items
        .iter()
        .map(|s| {
            s.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .filter(|(k, _)| !k.is_empty())
                .ok_or_else(|| usage(format!("--{what} {s:?}: expected KEY=VALUE")))
        })
        .collect()
}

/// Parse `key[=value]:Effect`.
pub fn toleration(s: &str) -> Result<Value> {
    let (kv, effect) = s
        .rsplit_once(':')
        .ok_or_else(|| usage(format!("--toleration {s:?}: expected KEY[=VALUE]:EFFECT")))?;
    if !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
        return Err(usage(format!(
            "--toleration {s:?}: effect must be NoSchedule, PreferNoSchedule or NoExecute"
        )));
    }
    Ok(match kv.split_once('=') {
        Some((k, v)) => json!({"key": k, "operator": "Equal", "value": v, "effect": effect}),
        None => json!({"key": kv, "operator": "Exists", "effect": effect}),
    })
}

/// The update and target the flags ask for.
pub fn update_of(a: &SetArgs) -> Result<(PodUpdate, Target)> {
    let u = PodUpdate {
        scheduler_name: a.scheduler_name.clone(),
        priority_class_name: a.priority_class_name.clone(),
        labels: pairs(&a.label, "label")?,
        annotations: pairs(&a.annotation, "annotation")?,
        node_selector: pairs(&a.node_selector, "node-selector")?,
        tolerations: a
            .toleration
            .iter()
            .map(|t| toleration(t))
            .collect::<Result<Vec<_>>>()?,
        ..Default::default()
    };
    if u.is_empty() && !a.suspend && !a.resume {
        return Err(usage(
            "nothing to set: give --scheduler-name, --label, --annotation, --priority-class-name, --node-selector, --toleration, --suspend or --resume",
        ));
    }
    let target = match a.component.as_deref() {
        None => Target::all(),
        Some(c) => match c.split_once('/') {
            Some((c, i)) => Target {
                component: Some(c.into()),
                instance: Some(i.into()),
            },
            None => Target::component(c),
        },
    };
    Ok((u, target))
}

/// Apply to one JSON object through its definition.
pub fn apply(
    def: &wlmap_engine::Definition,
    doc: &mut Value,
    a: &SetArgs,
    u: &PodUpdate,
    t: &Target,
) -> Result<wlmap_engine::UpdateReport> {
    let mut report = wlmap_engine::UpdateReport::default();
    if !u.is_empty() {
        report = wlmap_engine::update(def, doc, t, u)?;
    }
    if a.suspend || a.resume {
        let r = wlmap_engine::suspend(def, doc, a.suspend)?;
        report.changed.extend(r.changed);
    }
    Ok(report)
}

/// Run in file mode (`-f`); cluster mode lives in `cluster.rs`.
pub fn run(ctx: &Context, a: &SetArgs) -> Result {
    let (u, t) = update_of(a)?;
    let Some(f) = &a.file else {
        if ctx.offline {
            return Err(usage(
                "a snapshot or the demo is read-only: use -f FILE to print an updated manifest",
            ));
        }
        return crate::cluster::set(ctx, a, &u, &t);
    };
    let (index, key) = crate::commands::describe::file_root(ctx, f)?;
    let root = index
        .object(&key)
        .expect("the key names an object of the index");
    let def = index
        .definition_for(root)
        .expect("the root has a definition");
    let mut doc = root.json().clone();
    let report = apply(def, &mut doc, a, &u, &t)?;
    eprintln!(
        "wlmap: {} value(s) changed in {} pod template(s)",
        report.changed.len(),
        report.templates
    );
    let out = match ctx.output() {
        Output::Json => Output::Json,
        _ => Output::Yaml,
    };
    print_data(out, &doc)
}
