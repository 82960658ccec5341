//! Which definitions are in use (catalog, cluster, files) and how a TYPE argument resolves.

use crate::exit::{Result, invalid, no_definition, usage};
use std::sync::Arc;
use wlmap_engine::{Definition, Origin, Registry};
use wlmap_schema::GroupVersionKind;

/// Built-in catalog, then cluster definitions (`kartas.run.ai` objects), then `--definitions`
/// files (later wins). Definitions marked experimental are used only with `experimental`.
pub fn registry(
    files: &[std::path::PathBuf],
    cluster: &[serde_json::Value],
    experimental: bool,
) -> Result<Registry> {
    let (mut reg, warnings) = wlmap_catalog::with_cluster_kartas(cluster)
        .map_err(|e| invalid(format!("built-in catalog: {e}")))?;
    if experimental {
        reg.use_experimental();
    }
    for w in warnings {
        eprintln!("wlmap: warning: {w}");
    }
    for f in files {
        let paths: Vec<std::path::PathBuf> = if f.is_dir() {
            let mut v: Vec<_> = std::fs::read_dir(f)
                .map_err(|e| invalid(format!("{}: {e}", f.display())))?
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| {
                    p.extension()
                        .is_some_and(|x| x == "yaml" || x == "yml" || x == "json")
                })
                .collect();
            v.sort();
            v
        } else {
            vec![f.clone()]
        };
        for p in paths {
            let text = crate::source::read_input(&p)?;
            let name = p.display().to_string();
            let decoded = wlmap_schema::decode_compatible(&text, &name)?;
            for ignored in &decoded.ignored {
                eprintln!("wlmap: warning: {ignored}");
            }
            for k in decoded.kartas {
                let gangs = k.spec.optimization_instructions.as_ref();
                if gangs
                    .and_then(|o| o.gang_scheduling.as_ref())
                    .is_some_and(|g| !g.pod_groups.is_empty())
                {
                    eprintln!(
                        "wlmap: warning: {name}: definition {}: gangScheduling.podGroups is deprecated since Workload Map v0.2; use podGroup (`wlmap validate` says more)",
                        k.name()
                    );
                }
                let d = Definition::compile(k, Origin::File)
                    .map_err(|e| invalid(format!("{name}: {e}")))?;
                reg.insert(d);
            }
        }
    }
    Ok(reg)
}

/// Definitions a TYPE names ([`Registry::resolve_type`]), or the error that says none does.
pub fn resolve_type(reg: &Registry, ty: &str) -> Result<Vec<Arc<Definition>>> {
    let hits = reg.resolve_type(ty);
    if hits.is_empty() {
        return Err(no_definition(format!(
            "no definition for type {ty:?}; `wlmap definitions` lists the known kinds, and a Karta definition adds one"
        )));
    }
    Ok(hits)
}

/// Split `TYPE/NAME`, `TYPE NAME` or `TYPE` arguments into (type, name) pairs.
pub fn targets(args: &[String]) -> Result<Vec<(String, Option<String>)>> {
    let mut out = Vec::new();
    if args.len() == 2 && !args[0].contains('/') && !args[1].contains('/') {
        return Ok(vec![(args[0].clone(), Some(args[1].clone()))]);
    }
    for a in args {
        for part in a.split(',').filter(|p| !p.is_empty()) {
            match part.split_once('/') {
                Some((t, n)) if !t.is_empty() && !n.is_empty() => {
                    out.push((t.to_string(), Some(n.to_string())))
                }
                Some(_) => return Err(crate::exit::usage(format!("{part:?}: expected TYPE/NAME"))),
                None => out.push((part.to_string(), None)),
            }
        }
    }
    Ok(out)
}

/// The one TYPE/NAME of a command's arguments, as the first definition's kind and the name.
pub fn single(reg: &Registry, args: &[String]) -> Result<(GroupVersionKind, String)> {
    let ts = targets(args)?;
    let [(t, Some(name))] = ts.as_slice() else {
        return Err(usage("expected one TYPE/NAME (or TYPE NAME), or -f FILE"));
    };
    let d = resolve_type(reg, t)?;
    Ok((d[0].root_gvk(), name.clone()))
}
