//! `wlmap describe`: one workload as a tree.

use crate::args::{DescribeArgs, Output};
use crate::context::{Context, print_data};
use crate::defs::{resolve_type, targets};
use crate::exit::{Result, invalid, no_definition, not_found, usage};
use crate::render;
use crate::source::{parse_documents, read_input};
use wlmap_engine::{Definition, GpuPolicy, Node, Object, Workload};
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
    match ctx.output() {
        Output::Json | Output::Yaml => {
            print_data(ctx.output(), &view::describe(def, &w, a.explain))?
        }
        Output::Wide => {
            return Err(usage(
                "describe has no wide output; use -o table, json or yaml",
            ));
        }
        Output::Table => crate::write_stdout(&text(def, &w, obj, a.explain, loaded.file_mode)),
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

/// The tree as text.
pub fn text(
    def: &Definition,
    w: &Workload,
    obj: &Object,
    explain: bool,
    file_mode: bool,
) -> String {
    let gpu = GpuPolicy::default();
    let mut s = header(def, w, obj, file_mode);
    s.push('\n');
    s.push_str(&tree_text(w, &gpu));
    s.push_str(&unattributed_text(w));
    s.push_str(&totals_text(w, &gpu));
    if explain {
        s.push_str(&rules_text(w));
    }
    s
}

/// The workload, its definition and age, then its status (with a `!` when a rule failed) and
/// every status matched.
fn header(def: &Definition, w: &Workload, obj: &Object, file_mode: bool) -> String {
    let colour = render::colour_enabled();
    let ns = if w.namespace.is_empty() {
        String::new()
    } else {
        format!("   namespace: {}", w.namespace)
    };
    let age = if file_mode {
        String::new()
    } else {
        format!("   age: {}", render::age(obj.creation_timestamp()))
    };
    let mut s = format!(
        "{}/{}{}   definition: {} ({}){}\n",
        w.kind,
        w.name,
        ns,
        def.name(),
        def.origin(),
        age
    );
    // An empty reason or message (KubeRay writes `message: ""`) says nothing.
    let said = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
    let reason = match (said(&w.status.reason), said(&w.status.message)) {
        (Some(r), Some(m)) => format!(" ({r}: {m})"),
        (Some(r), None) => format!(" ({r})"),
        (None, Some(m)) => format!(" ({m})"),
        _ => String::new(),
    };
    let all: Vec<String> = w.status.phases.iter().map(|p| p.to_string()).collect();
    let doubt = if w.status.failures.is_empty() {
        ""
    } else {
        "!"
    };
    s.push_str(&format!(
        "Status: {}{doubt}{}   matched: {}\n",
        render::phase(w.status.phase, colour),
        reason,
        all.join(",")
    ));
    if !w.pods_observed() {
        s.push_str("(file mode: spec only, no live pods)\n");
    }
    s
}

/// The component tree, one aligned line per node and pod.
fn tree_text(w: &Workload, gpu: &GpuPolicy) -> String {
    let mut rows: Vec<(String, String)> = Vec::new();
    rows.push((
        w.root.segment(),
        node_summary(&w.root, w.pods_observed(), gpu),
    ));
    tree(&w.root, "", w.pods_observed(), gpu, &mut rows);
    let width = rows
        .iter()
        .map(|(a, _)| a.chars().count())
        .max()
        .unwrap_or(0);
    rows.into_iter()
        .map(|(a, b)| format!("{a}{}   {b}\n", " ".repeat(width - a.chars().count())))
        .collect()
}

/// Pods the workload owns that no component claims (reported, never dropped).
fn unattributed_text(w: &Workload) -> String {
    if w.unattributed.is_empty() {
        return String::new();
    }
    let mut s =
        String::from("\nUnattributed pods (owned by the workload, claimed by no component):\n");
    for p in &w.unattributed {
        s.push_str(&format!(
            "  {}   {}   gpu: {}   {}\n",
            p.name,
            p.phase,
            render::num(p.gpus),
            p.node.as_deref().unwrap_or("<none>")
        ));
    }
    s
}

/// Desired pods and resources from the spec, with the observed and ready pods when known.
fn totals_text(w: &Workload, gpu: &GpuPolicy) -> String {
    let r = &w.root.resources;
    let mut s = String::from("\nTotals (desired, from the spec):\n");
    s.push_str(&format!("  pods: {}", w.root.desired_pods));
    if w.pods_observed() {
        s.push_str(&format!(
            "   observed: {}   ready: {}",
            w.observed_pods(),
            w.ready_pods()
        ));
    }
    s.push_str(&format!(
        "\n  GPUs: {}   CPU: {}   memory: {}\n",
        render::num(r.gpus(gpu)),
        render::cpu(r.cpu_millis()),
        render::bytes(r.memory_bytes())
    ));
    let ext: Vec<String> = r
        .extended()
        .into_iter()
        .filter(|(k, _)| !gpu.is_gpu(k))
        .map(|(k, v)| format!("{k}: {}", render::num(v)))
        .collect();
    if !ext.is_empty() {
        s.push_str(&format!("  other: {}\n", ext.join(", ")));
    }
    s
}

/// `--explain`: every status rule, whether it matched, and why.
fn rules_text(w: &Workload) -> String {
    let mut s = String::from("\nStatus rules:\n");
    for t in &w.status.trace {
        s.push_str(&format!(
            "  {} #{} -> {}\n",
            t.status,
            t.index,
            if t.matched { "matched" } else { "no" }
        ));
        for p in &t.parts {
            s.push_str(&format!("      {p}\n"));
        }
    }
    if w.status.trace.is_empty() {
        s.push_str("  (the definition has no status mappings)\n");
    }
    s
}

fn node_summary(n: &Node, observed: bool, gpu: &GpuPolicy) -> String {
    if let Some(e) = &n.error {
        return format!("UNREADABLE: {e}");
    }
    let mut parts = Vec::new();
    if observed {
        parts.push(format!("{}/{} ready", n.ready_pods(), n.desired_pods));
    } else {
        parts.push(format!("pods: {}", n.desired_pods));
    }
    if n.has_pod_spec || n.replica.is_none() {
        parts.push(format!("replicas: {}", n.replicas));
    }
    parts.push(format!("gpu: {}", render::num(n.resources.gpus(gpu))));
    let claims = wlmap_inventory::view::resource_claims(n);
    if !claims.is_empty() {
        parts.push(format!("claims: {}", claims.join(",")));
    }
    let mut nodes: Vec<&str> = n.all_pods().filter_map(|p| p.node.as_deref()).collect();
    nodes.sort();
    nodes.dedup();
    if !nodes.is_empty() {
        parts.push(nodes.join(","));
    }
    parts.join("   ")
}

fn tree(n: &Node, prefix: &str, observed: bool, gpu: &GpuPolicy, rows: &mut Vec<(String, String)>) {
    let total = n.pods.len() + n.children.len();
    let mut k = 0;
    for p in &n.pods {
        k += 1;
        let last = k == total;
        let branch = if last { "`-- " } else { "|-- " };
        let state = match (&p.reason, p.ready) {
            (Some(r), false) => format!("{} ({r})", p.phase),
            (_, true) => format!("{} ready", p.phase),
            _ => p.phase.clone(),
        };
        rows.push((
            format!("{prefix}{branch}{}", p.name),
            format!(
                "{state}   gpu: {}   {}",
                render::num(p.gpus),
                p.node.as_deref().unwrap_or("<none>")
            ),
        ));
    }
    for c in &n.children {
        k += 1;
        let last = k == total;
        let branch = if last { "`-- " } else { "|-- " };
        rows.push((
            format!("{prefix}{branch}{}", c.segment()),
            node_summary(c, observed, gpu),
        ));
        let ext = if last { "    " } else { "|   " };
        tree(c, &format!("{prefix}{ext}"), observed, gpu, rows);
    }
}
