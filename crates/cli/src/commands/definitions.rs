//! `wlmap definitions`: list the definitions in use, or register them in the cluster
//! (`apply`) and remove them (`delete`).

use crate::args::{
    DefinitionsAction, DefinitionsApplyArgs, DefinitionsArgs, DefinitionsDeleteArgs, Output,
};
use crate::context::{Context, print_data};
use crate::exit::{Result, no_definition};
use crate::render;
use serde_json::Value;
use std::sync::Arc;
use wlmap_engine::Definition;

/// `wlmap definitions`: list the definitions in force (catalog, cluster, files), or print one.
pub fn run(ctx: &Context, a: &DefinitionsArgs) -> Result {
    match &a.action {
        Some(DefinitionsAction::Apply(x)) => return apply(ctx, x),
        Some(DefinitionsAction::Delete(x)) => return delete(ctx, x),
        None => {}
    }
    // Experimental definitions kept aside are listed too, marked as not used.
    let all = || ctx.reg().iter().chain(ctx.reg().kept_aside());
    let defs: Vec<_> = match &a.name {
        Some(n) => vec![all().find(|d| d.name() == *n).cloned().ok_or_else(|| {
            no_definition(format!(
                "no definition named {n:?}; `wlmap definitions` lists them"
            ))
        })?],
        None => {
            let mut v: Vec<_> = all().cloned().collect();
            v.sort_by_key(|d| d.name());
            v
        }
    };
    match ctx.output() {
        Output::Json | Output::Yaml => {
            if a.name.is_some() {
                print_data(ctx.output(), defs[0].karta())
            } else {
                print_data(
                    ctx.output(),
                    &serde_json::json!({"items": defs.iter().map(|d| d.karta()).collect::<Vec<_>>()}),
                )
            }
        }
        _ => {
            let rows: Vec<Vec<String>> = defs
                .iter()
                .map(|d| row(d, ctx.reg().by_name(&d.name()).is_some()))
                .collect();
            let mut s = String::new();
            render::table(
                &mut s,
                &["NAME", "KIND", "VERSION", "ORIGIN", "COMPONENTS"],
                &rows,
            );
            crate::write_stdout(&s);
            Ok(())
        }
    }
}

/// A definition's row: name, kind (`Kind.group`), version, origin (and whether an experimental
/// one is `used`), its first components.
fn row(d: &Definition, used: bool) -> Vec<String> {
    let g = d.root_gvk();
    let comps = d.component_names();
    let shown = if comps.len() > 4 {
        format!("{}, +{} more", comps[..4].join(", "), comps.len() - 4)
    } else {
        comps.join(", ")
    };
    let kind = if g.group.is_empty() {
        g.kind.clone()
    } else {
        format!("{}.{}", g.kind, g.group)
    };
    let origin = match (d.experimental(), used) {
        (false, _) => d.origin().to_string(),
        (true, true) => format!("{} (experimental)", d.origin()),
        (true, false) => format!(
            "{} (experimental, unused without --experimental)",
            d.origin()
        ),
    };
    vec![d.name(), kind, g.version.clone(), origin, shown]
}

/// The field manager of `definitions apply`, and the label value of what it applied.
const MANAGER: &str = "wlmap";

fn cluster(ctx: &Context) -> Result<&wlmap_kube::Cluster> {
    ctx.cluster
        .as_ref()
        .map(|c| &c.cluster)
        .ok_or_else(|| crate::exit::usage("this needs a cluster (--kubeconfig or --context)"))
}

/// A definition as the Karta object to apply: its spec, its name, and the labels that find it.
fn karta_object(k: &wlmap_schema::Karta) -> serde_json::Value {
    let mut labels: serde_json::Map<String, serde_json::Value> = k
        .lookup_labels()
        .into_iter()
        .map(|(k, v)| (k, v.into()))
        .collect();
    labels.insert("app.kubernetes.io/managed-by".into(), MANAGER.into());
    serde_json::json!({"apiVersion": "run.ai/v1alpha1", "kind": "Karta",
        "metadata": {"name": k.name(), "labels": labels}, "spec": k.spec})
}

/// The paths (jq style) where `new` says something `old` does not.
fn changed_paths(
    old: &serde_json::Value,
    new: &serde_json::Value,
    at: &str,
    out: &mut Vec<String>,
) {
    use serde_json::Value;
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                changed_paths(
                    a.get(k).unwrap_or(&Value::Null),
                    v,
                    &format!("{at}.{k}"),
                    out,
                );
            }
            for k in a.keys().filter(|k| !b.contains_key(*k)) {
                out.push(format!("{at}.{k} (removed)"));
            }
        }
        (a, b) if a == b => {}
        _ => out.push(if at.is_empty() {
            ".".into()
        } else {
            at.to_string()
        }),
    }
}

fn apply(ctx: &Context, a: &DefinitionsApplyArgs) -> Result {
    let cluster = cluster(ctx)?;
    let mode = match a.dry_run.as_deref() {
        None => None,
        Some(m @ ("client" | "server")) => Some(m),
        Some(other) => {
            return Err(crate::exit::usage(format!(
                "--dry-run must be client or server, not {other:?}"
            )));
        }
    };
    let kind = wlmap_kube::Cluster::karta_kind();
    let mut out = String::new();
    for d in chosen(ctx, a)? {
        let obj = karta_object(d.karta());
        let name = d.name();
        let existing = match cluster.get(&kind, None, &name) {
            Ok(v) => Some(v),
            Err(wlmap_kube::Error::NotFound(_)) => None,
            Err(e) => return Err(crate::cluster::failure(e)),
        };
        let changes = existing.as_ref().map(|old| changes(old, &obj));
        let verb = match &changes {
            None => "created",
            Some(c) if c.is_empty() => "unchanged",
            Some(_) => "configured",
        };
        if verb != "unchanged" && mode != Some("client") {
            cluster
                .apply(&kind, None, &name, &obj, MANAGER, mode == Some("server"))
                .map_err(|e| match e {
                    wlmap_kube::Error::NotFound(m) => crate::exit::not_found(format!(
                        "{m} (is the kartas.run.ai CRD installed? crates/schema/crd/kartas.run.ai.yaml)"
                    )),
                    e => crate::cluster::failure(e),
                })?;
        }
        let dry = mode.map(|m| format!(" ({m} dry run)")).unwrap_or_default();
        out.push_str(&format!("karta.run.ai/{name} {verb}{dry}\n"));
        report_changes(&mut out, &changes.unwrap_or_default());
    }
    crate::write_stdout(&out);
    Ok(())
}

/// The definitions to apply, in name order: what this wlmap holds (catalog and files), never
/// what the cluster already has.
fn chosen(ctx: &Context, a: &DefinitionsApplyArgs) -> Result<Vec<Arc<Definition>>> {
    let reg = crate::defs::registry(&ctx.global.definitions, &[], ctx.global.experimental)?;
    let mut defs: Vec<_> = if a.all {
        reg.iter().cloned().collect()
    } else {
        a.names
            .iter()
            .map(|n| {
                reg.by_name(n).cloned().ok_or_else(|| {
                    no_definition(format!(
                        "no definition named {n:?}; `wlmap definitions` lists them"
                    ))
                })
            })
            .collect::<Result<_>>()?
    };
    defs.sort_by_key(|d| d.name());
    Ok(defs)
}

/// What applying `new` over the Karta the cluster holds changes: its spec's paths and the
/// lookup labels.
fn changes(old: &Value, new: &Value) -> Vec<String> {
    let mut out = Vec::new();
    changed_paths(&old["spec"], &new["spec"], ".spec", &mut out);
    for (k, v) in new["metadata"]["labels"].as_object().into_iter().flatten() {
        if old["metadata"]["labels"][k] != *v {
            out.push(format!(".metadata.labels[{k:?}]"));
        }
    }
    out
}

/// The changed paths under a Karta's line, the first 20 of them.
fn report_changes(out: &mut String, changes: &[String]) {
    for c in changes.iter().take(20) {
        out.push_str(&format!("  ~ {c}\n"));
    }
    if changes.len() > 20 {
        out.push_str(&format!("  ~ ... {} more\n", changes.len() - 20));
    }
}

fn delete(ctx: &Context, a: &DefinitionsDeleteArgs) -> Result {
    let cluster = cluster(ctx)?;
    let kind = wlmap_kube::Cluster::karta_kind();
    let names: Vec<String> = if a.all {
        // Only what wlmap applied: never a Karta someone else wrote.
        cluster
            .list(&kind, None)
            .map_err(crate::cluster::failure)?
            .iter()
            .filter(|k| k["metadata"]["labels"]["app.kubernetes.io/managed-by"] == MANAGER)
            .filter_map(|k| k["metadata"]["name"].as_str().map(String::from))
            .collect()
    } else {
        a.names.clone()
    };
    let mut out = String::new();
    for n in names {
        let verb = if cluster
            .delete(&kind, None, &n)
            .map_err(crate::cluster::failure)?
        {
            "deleted"
        } else {
            "not found"
        };
        out.push_str(&format!("karta.run.ai/{n} {verb}\n"));
    }
    crate::write_stdout(&out);
    Ok(())
}
