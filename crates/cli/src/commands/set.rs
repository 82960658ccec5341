//! `wlmap set`: change pod templates through the definition.

use crate::args::{Output, SetArgs};
use crate::cluster::Connection;
use crate::context::{Context, print_data};
use crate::defs::single;
use crate::exit::{Code, Failure, Result, no_definition, not_found, usage};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use wlmap_engine::{Definition, PodUpdate, Target};
use wlmap_kube::{Error, Kind};
use wlmap_schema::GroupVersionKind;

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

/// Run: print the updated manifest of `-f FILE`, or change the object in the cluster.
pub fn run(ctx: &Context, a: &SetArgs) -> Result {
    let (u, t) = update_of(a)?;
    let Some(f) = &a.file else {
        if ctx.offline {
            return Err(usage(
                "a snapshot or the demo is read-only: use -f FILE to print an updated manifest",
            ));
        }
        return in_cluster(ctx, a, &u, &t);
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

/// `set` against the cluster: read, change, write with the read's resourceVersion; on a
/// conflict, read the fresh object and apply again (the other writer's change survives).
fn in_cluster(ctx: &Context, a: &SetArgs, u: &PodUpdate, t: &Target) -> Result {
    let Some(conn) = &ctx.cluster else {
        return Err(usage("no cluster connection"));
    };
    let (gvk, name) = single(ctx.reg(), &a.targets)?;
    let (def, kind) = definition_and_kind(ctx, conn, &gvk)?;
    let ns = ctx.namespace();
    let dry = match a.dry_run.as_deref() {
        None => None,
        Some(d @ ("client" | "server")) => Some(d),
        Some(_) => return Err(usage("--dry-run must be client or server")),
    };
    for attempt in 0..5 {
        let mut doc = conn
            .cluster
            .get(&kind, ns.as_deref(), &name)
            .map_err(crate::cluster::failure)?;
        let report = apply(&def, &mut doc, a, u, t)?;
        if report.changed.is_empty() {
            eprintln!("wlmap: {} {name}: nothing to change", gvk.kind);
            return Ok(());
        }
        if dry == Some("client") {
            return print_data(Output::Yaml, &doc);
        }
        match conn
            .cluster
            .replace(&kind, ns.as_deref(), &name, &doc, dry == Some("server"))
        {
            Ok(_) => {
                let note = if dry.is_some() {
                    " (server dry run)"
                } else {
                    ""
                };
                let (values, templates) = (report.changed.len(), report.templates);
                eprintln!(
                    "wlmap: {} {name} updated: {values} value(s) in {templates} pod template(s){note}",
                    gvk.kind
                );
                return Ok(());
            }
            Err(Error::Conflict(_)) => {
                eprintln!(
                    "wlmap: {} {name} changed while updating; retrying on the fresh object ({})",
                    gvk.kind,
                    attempt + 1
                );
            }
            Err(e) => return Err(crate::cluster::failure(e)),
        }
    }
    Err(Failure::new(
        Code::Runtime,
        anyhow::anyhow!(
            "{} {name} kept changing; gave up after 5 attempts without overwriting",
            gvk.kind
        ),
    ))
}

/// The definition of a kind, and the kind as the server serves it.
fn definition_and_kind(
    ctx: &Context,
    conn: &Connection,
    gvk: &GroupVersionKind,
) -> Result<(Arc<Definition>, Kind)> {
    let def = ctx
        .reg()
        .for_kind(gvk)
        .cloned()
        .ok_or_else(|| no_definition(format!("no definition for {gvk}")))?;
    let kind = conn
        .kind(gvk)?
        .ok_or_else(|| not_found(format!("the server does not serve {gvk}")))?;
    Ok((def, kind))
}
