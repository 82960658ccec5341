//! `wlmap describe`: one workload as a tree.

use crate::args::{DescribeArgs, Output};
use crate::context::{Context, print_data};
use crate::defs::{resolve_type, targets};
use crate::exit::{Result, invalid, no_definition, not_found, usage};
use crate::render;
use crate::source::{parse_documents, read_input};
use wlmap_engine::Object;
use wlmap_inventory::view;
use wlmap_inventory::{Entry, Index, ObjectKey};
use wlmap_schema::GroupKind;

/// Find one workload by TYPE/NAME in the context.
pub fn find(ctx: &Context, args: &[String]) -> Result<ObjectKey> {
    let ts = targets(args)?;
    let [(t, Some(name))] = ts.as_slice() else {
        return Err(usage("expected one TYPE/NAME (or TYPE NAME), or -f FILE"));
    };
    let kinds: Vec<GroupKind> = resolve_type(ctx.reg(), t)?
        .iter()
        .map(|d| d.root_gvk().group_kind())
        .collect();
    let ns = ctx.namespace();
    let found = ctx
        .index
        .objects()
        .filter(|o| {
            o.name() == name
                && ns
                    .as_deref()
                    .is_none_or(|n| n == o.namespace() || o.namespace().is_empty())
                && kinds.contains(&o.gvk().group_kind())
        })
        .map(ObjectKey::of)
        .min();
    if let Some(key) = found {
        return Ok(key);
    }
    let kind = kinds.first().map_or(t.clone(), |k| k.kind.clone());
    Err(not_found(format!(
        "{kind} {name:?} not found{}",
        ctx.where_()
    )))
}

/// One workload, resolved: from the context by TYPE/NAME, or from a manifest file (`-f`),
/// whose first object with a definition is the workload and whose other objects are its
/// pods and owners. Returns the workload and every object it was resolved among.
pub fn load(ctx: &Context, file: Option<&std::path::Path>, args: &[String]) -> Result<Loaded> {
    match file {
        None => {
            let key = find(ctx, args)?;
            let entry = ctx.evaluate(std::slice::from_ref(&key)).pop();
            let entry = entry.ok_or_else(|| no_definition(format!("no definition for {key}")))?;
            Ok(Loaded {
                entry,
                objects: ctx.index.objects().cloned().collect(),
                file_mode: false,
            })
        }
        Some(path) => from_file(ctx, path),
    }
}

/// A workload resolved for `describe` or `gang`.
pub struct Loaded {
    /// The workload.
    pub entry: Entry,
    /// The objects it was resolved among (pods and owners).
    pub objects: Vec<Object>,
    /// From a manifest file.
    pub file_mode: bool,
}

/// A manifest file's objects and its workload: the first object with a definition.
pub fn file_root(ctx: &Context, path: &std::path::Path) -> Result<(Index, ObjectKey)> {
    let text = read_input(path)?;
    let docs = parse_documents(&text, &path.display().to_string())?;
    let objects: Vec<Object> = docs.into_iter().map(Object::new).collect();
    let Some(first) = objects.first() else {
        return Err(invalid(format!("{}: no objects", path.display())));
    };
    let index = Index::new(ctx.reg().clone(), objects.iter().cloned());
    match objects.iter().find(|o| index.definition_for(o).is_some()) {
        Some(root) => Ok((index, ObjectKey::of(root))),
        None => Err(no_definition(format!(
            "{}: no definition for kind {}",
            path.display(),
            first.gvk()
        ))),
    }
}

fn from_file(ctx: &Context, path: &std::path::Path) -> Result<Loaded> {
    let (index, key) = file_root(ctx, path)?;
    let entry = index
        .evaluate(&key, None)
        .ok_or_else(|| no_definition(format!("{}: no definition", path.display())))?;
    Ok(Loaded {
        entry,
        objects: index.objects().cloned().collect(),
        file_mode: true,
    })
}

/// `wlmap describe`: print each named workload as a tree (or JSON/YAML), with its status,
/// pods and GPUs.
pub fn run(ctx: &Context, a: &DescribeArgs) -> Result {
    if a.watch {
        return crate::commands::watch::describe(ctx, a);
    }
    let loaded = load(ctx, a.file.as_deref(), &a.targets)?;
    let (def, obj) = (&loaded.entry.definition, &loaded.entry.object);
    let mut w = loaded.entry.result?;
    // A manifest with no pod but the workload's own: the spec alone, nothing observed.
    if loaded.file_mode
        && !obj.is_pod()
        && !loaded
            .objects
            .iter()
            .any(|o| o.is_pod() && o.uid() != obj.uid())
    {
        w.spec_only();
    }
    // The gang objects it owns, and those its pods own (Kueue's Workload for a pod group).
    let pods: std::collections::BTreeSet<&str> =
        w.root.all_pods().map(|p| p.name.as_str()).collect();
    let owners: Vec<&str> = std::iter::once(obj.uid())
        .chain(
            (loaded.objects.iter())
                .filter(|o| o.is_pod() && o.namespace() == obj.namespace())
                .filter(|o| pods.contains(o.name()))
                .map(|o| o.uid()),
        )
        .collect();
    let mut gangs = view::gang_objects(&loaded.objects, &owners);
    let own_pods: Vec<&wlmap_engine::Object> = (loaded.objects.iter())
        .filter(|o| o.is_pod() && o.namespace() == obj.namespace() && pods.contains(o.name()))
        .collect();
    gangs.extend(view::missing_gang_objects(&own_pods, &gangs));
    match ctx.output() {
        Output::Json | Output::Yaml => {
            let mut v = view::describe(def, &w, a.explain);
            v.gangs = gangs;
            print_data(ctx.output(), &v)?
        }
        Output::Wide => {
            return Err(usage(
                "describe has no wide output; use -o table, json or yaml",
            ));
        }
        Output::Table => {
            let text = render::tree::text(def, &w, obj, a.explain, loaded.file_mode);
            crate::write_stdout(&render::tree::with_gangs(text, &gangs))
        }
    }
    let failures = rule_failures(&def.name(), &w.status.failures);
    let unreadable = w.unreadable();
    for (n, e) in &unreadable {
        eprintln!(
            "wlmap: warning: component {} could not be read: {e}",
            n.component
        );
    }
    if !unreadable.is_empty() {
        // A partial answer: everything else was shown; the exit code says it is partial.
        return Err(crate::exit::invalid(format!(
            "{} component(s) could not be read (marked UNREADABLE): a partial answer",
            unreadable.len()
        )));
    }
    failures
}

/// A status rule that failed: each said on stderr, and exit 5 (the status shown may be
/// wrong), after the whole answer was printed.
fn rule_failures(definition: &str, failures: &[wlmap_engine::RuleFailure]) -> Result {
    for f in failures {
        eprintln!("wlmap: warning: definition {definition}: status rule {f}");
    }
    if failures.is_empty() {
        return Ok(());
    }
    Err(crate::exit::invalid(format!(
        "{} status rule(s) could not be evaluated: the status may be wrong",
        failures.len()
    )))
}
