//! `wlmap get`: workloads with status, pods and GPUs.

use crate::args::{GetArgs, Output};
use crate::context::{Context, print_data, resolve_all, resolve_all_parallel};
use crate::defs::{resolve_type, targets};
use crate::exit::{Result, not_found, usage};
use crate::render;
use crate::source::Selector;
use crate::view;
use std::collections::BTreeSet;
use std::sync::Arc;
use wlmap_engine::{Definition, GpuPolicy, Object, OwnerIndex};

/// Is the object part of a bigger workload? True when a controller owner up its chain is of
/// a kind wlmap knows (a definition's root or one of the kinds definitions create), so a Job
/// of a JobSet or a Pod of a PodClique is not listed as a workload of its own.
pub fn owned_by_defined_kind(
    ctx: &Context,
    index: &OwnerIndex<'_>,
    known: &BTreeSet<(String, String)>,
    o: &Object,
) -> bool {
    let mut at = o;
    for _ in 0..wlmap_engine::MAX_OWNER_DEPTH {
        let refs = at
            .json()
            .pointer("/metadata/ownerReferences")
            .and_then(|v| v.as_array());
        let Some(r) = refs.and_then(|refs| {
            refs.iter()
                .find(|r| r.get("controller").and_then(|c| c.as_bool()) == Some(true))
                .or_else(|| (refs.len() == 1).then(|| &refs[0]))
        }) else {
            return false;
        };
        let av = r.get("apiVersion").and_then(|v| v.as_str()).unwrap_or("");
        let k = r.get("kind").and_then(|v| v.as_str()).unwrap_or("");
        let g = wlmap_schema::GroupVersionKind::from_api_version(av, k);
        if known.contains(&(g.group.clone(), g.kind.clone())) || ctx.reg.for_kind(&g).is_some() {
            return true;
        }
        match r
            .get("uid")
            .and_then(|u| u.as_str())
            .and_then(|u| index.get(u))
        {
            Some(next) => at = next,
            None => return false,
        }
    }
    false
}

/// Run.
pub fn run(ctx: &Context, a: &GetArgs) -> Result {
    let ts = targets(&a.targets)?;
    if ts.is_empty() && !a.all_types {
        return Err(usage(
            "name a TYPE (e.g. `wlmap get jobsets`) or use --all-types",
        ));
    }
    let mut kinds: BTreeSet<(String, String)> = BTreeSet::new();
    let mut names: Vec<(String, String, String)> = Vec::new(); // (group, kind, name)
    if a.all_types {
        for d in ctx.reg.iter() {
            let g = d.root_gvk();
            kinds.insert((g.group, g.kind));
        }
    }
    for (t, n) in &ts {
        for d in resolve_type(&ctx.reg, t)? {
            let g = d.root_gvk();
            match n {
                Some(n) => names.push((g.group.clone(), g.kind.clone(), n.clone())),
                None => {
                    kinds.insert((g.group, g.kind));
                }
            }
        }
    }
    let selector = a.selector.as_deref().map(Selector::parse).transpose()?;
    let index = OwnerIndex::new(&ctx.set.objects);
    let known: BTreeSet<(String, String)> = ctx
        .reg
        .iter()
        .flat_map(|d| d.child_kinds().into_iter().chain([d.root_gvk()]))
        .map(|g| (g.group, g.kind))
        .collect();
    let ns = ctx.namespace();
    let mut items: Vec<(Arc<Definition>, usize)> = Vec::new();
    for (i, o) in ctx.set.objects.iter().enumerate() {
        if ns
            .as_deref()
            .is_some_and(|n| n != o.namespace() && !o.namespace().is_empty())
        {
            continue;
        }
        let g = o.gvk();
        let key = (g.group.clone(), g.kind.clone());
        let by_kind = kinds.contains(&key);
        let by_name = names
            .iter()
            .any(|(gr, k, n)| *gr == g.group && *k == g.kind && n == o.name());
        if !by_kind && !by_name {
            continue;
        }
        if selector.as_ref().is_some_and(|s| !s.matches(o)) {
            continue;
        }
        if a.all_types && !by_name && owned_by_defined_kind(ctx, &index, &known, o) {
            continue;
        }
        if let Some(d) = ctx.reg.for_kind(&g) {
            items.push((d.clone(), i));
        }
    }
    for (g, k, n) in &names {
        if !items.iter().any(|(_, i)| {
            let o = &ctx.set.objects[*i];
            o.name() == n && o.kind() == k && o.gvk().group == *g
        }) {
            let where_ = ns
                .as_deref()
                .map(|n| format!(" in namespace {n}"))
                .unwrap_or_default();
            return Err(not_found(format!("{k} {n:?} not found{where_}")));
        }
    }
    items.sort_by(|(_, a), (_, b)| {
        let (oa, ob) = (&ctx.set.objects[*a], &ctx.set.objects[*b]);
        (oa.namespace(), oa.kind(), oa.name()).cmp(&(ob.namespace(), ob.kind(), ob.name()))
    });
    // Offline, references come from the objects at hand: resolve on every core. Against a
    // cluster, references are GETs on one connection: one thread.
    let results = match &ctx.cluster {
        None => resolve_all_parallel(
            &ctx.set,
            &items,
            &wlmap_engine::ObjectsProvider(&ctx.set.objects),
        ),
        Some(_) => resolve_all(&ctx.set, &items, ctx.references(&ctx.set).as_ref()),
    };
    let gpu = GpuPolicy::default();
    let mut failed = 0;
    let mut list = Vec::new();
    for ((d, i), r) in items.iter().zip(results) {
        let o = &ctx.set.objects[*i];
        let item = match r {
            Ok(w) => view::GetItem {
                api_version: w.api_version.clone(),
                kind: w.kind.clone(),
                name: w.name.clone(),
                namespace: w.namespace.clone(),
                status: view::status(&w),
                resources: view::GpuOnly { gpus: w.gpus(&gpu) },
                pods: view::pods(&w),
                definition: view::definition(d),
                components: d.component_names().into_iter().map(String::from).collect(),
                created: o.creation_timestamp().map(String::from),
                error: None,
            },
            Err(e) => {
                failed += 1;
                eprintln!(
                    "wlmap: error: {}/{} in {}: {e}",
                    o.kind(),
                    o.name(),
                    o.namespace()
                );
                view::GetItem {
                    api_version: o.api_version().into(),
                    kind: o.kind().into(),
                    name: o.name().into(),
                    namespace: o.namespace().into(),
                    status: view::StatusView {
                        phase: wlmap_engine::Phase::Undefined,
                        phases: vec![],
                        reason: None,
                        message: None,
                    },
                    resources: view::GpuOnly { gpus: 0.0 },
                    pods: view::PodsView {
                        desired: 0,
                        observed: None,
                        ready: None,
                    },
                    definition: view::definition(d),
                    components: vec![],
                    created: o.creation_timestamp().map(String::from),
                    error: Some(e.to_string()),
                }
            }
        };
        list.push(item);
    }
    match ctx.output() {
        Output::Json | Output::Yaml => {
            print_data(ctx.output(), &serde_json::json!({"items": list}))?
        }
        out => {
            if list.is_empty() {
                let where_ = ns
                    .as_deref()
                    .map(|n| format!(" in namespace {n}"))
                    .unwrap_or_default();
                eprintln!("No workloads found{where_}.");
                return Ok(());
            }
            let colour = render::colour_enabled();
            let wide = out == Output::Wide;
            let mut header = vec![];
            if ns.is_none() {
                header.push("NAMESPACE");
            }
            header.extend(["NAME", "KIND", "STATUS", "PODS", "GPUS", "AGE"]);
            if wide {
                header.extend(["COMPONENTS", "DEFINITION"]);
            }
            let rows: Vec<Vec<String>> = list
                .iter()
                .map(|it| {
                    let mut r = vec![];
                    if ns.is_none() {
                        r.push(it.namespace.clone());
                    }
                    let status = if it.error.is_some() {
                        "Error".to_string()
                    } else {
                        render::phase(it.status.phase, colour)
                    };
                    r.extend([
                        it.name.clone(),
                        it.kind.clone(),
                        status,
                        format!(
                            "{}/{}",
                            it.pods.ready.map(|r| r.to_string()).unwrap_or("-".into()),
                            it.pods.desired
                        ),
                        render::num(it.resources.gpus),
                        render::age(it.created.as_deref()),
                    ]);
                    if wide {
                        r.push(it.components.join(","));
                        r.push(format!("{} ({})", it.definition.name, it.definition.origin));
                    }
                    r
                })
                .collect();
            let mut s = String::new();
            render::table(&mut s, &header, &rows);
            crate::write_stdout(&s);
        }
    }
    if failed > 0 {
        return Err(crate::exit::Failure::new(
            crate::exit::Code::Invalid,
            anyhow::anyhow!("{failed} workload(s) could not be evaluated"),
        ));
    }
    Ok(())
}
