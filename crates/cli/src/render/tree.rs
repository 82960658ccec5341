//! One workload as a tree (`describe`, `describe --watch`): its header, components,
//! instances, replicas and pods, unattributed pods, totals, and the status rules.

use super::{age, bytes, colour_enabled, cpu, num, phase};
use wlmap_engine::{Definition, GpuPolicy, Node, Object, Workload};

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

/// `describe`'s text with the gang objects' lines after its header (the status lines): what
/// the schedulers say of the workload's groups, beside what they say of its pods.
pub fn with_gangs(text: String, gangs: &[wlmap_inventory::view::GangView]) -> String {
    if gangs.is_empty() {
        return text;
    }
    let mut lines = String::new();
    for g in gangs {
        if g.missing_for_pods > 0 {
            lines.push_str(&format!(
                "Gang: {}/{} ({}): not found, and {} pending pod(s) name it: the scheduler holds them until it exists\n",
                g.kind, g.name, g.api_version, g.missing_for_pods
            ));
            continue;
        }
        let phase = g
            .phase
            .as_deref()
            .map(|p| format!(": phase {p}"))
            .unwrap_or_default();
        lines.push_str(&format!(
            "Gang: {}/{} ({}){phase}\n",
            g.kind, g.name, g.api_version
        ));
        for c in &g.conditions {
            let reason = c
                .reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            let message = c
                .message
                .as_deref()
                .filter(|m| !m.is_empty())
                .map(|m| format!(": {m}"))
                .unwrap_or_default();
            lines.push_str(&format!("  {}={}{reason}{message}\n", c.kind, c.status));
        }
    }
    match text.split_once("\n\n") {
        Some((head, rest)) => format!("{head}\n{lines}\n{rest}"),
        None => format!("{text}{lines}"),
    }
}

/// The workload, its definition and age, then its status (with a `!` when a rule failed) and
/// every status matched.
fn header(def: &Definition, w: &Workload, obj: &Object, file_mode: bool) -> String {
    let colour = colour_enabled();
    let ns = if w.namespace.is_empty() {
        String::new()
    } else {
        format!("   namespace: {}", w.namespace)
    };
    let age = if file_mode {
        String::new()
    } else {
        format!("   age: {}", age(obj.creation_timestamp()))
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
        phase(w.status.phase, colour),
        reason,
        all.join(",")
    ));
    if let Some(m) = &w.managed_by {
        s.push_str(&format!(
            "Managed by: {m} (it runs the workload elsewhere, as MultiKueue runs it on a worker cluster; its pods are not here, the status is what that controller reports)\n"
        ));
    } else if !w.pods_observed() {
        s.push_str("(file mode: spec only, no live pods)\n");
    }
    for wait in w.waiting() {
        s.push_str(&format!(
            "Waiting: {} pod(s) {}: {}\n",
            wait.pods, wait.why.reason, wait.why.message
        ));
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
            num(p.gpus),
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
    let held = if w.pods_observed() {
        format!(" (held: {})", num(w.gpus_held()))
    } else {
        String::new()
    };
    s.push_str(&format!(
        "\n  GPUs: {}{held}   CPU: {}   memory: {}\n",
        num(r.gpus(gpu)),
        cpu(r.cpu_millis()),
        bytes(r.memory_bytes())
    ));
    for note in &w.notes {
        s.push_str(&format!("  note: {note}\n"));
    }
    let ext: Vec<String> = r
        .extended()
        .into_iter()
        .filter(|(k, _)| !gpu.is_gpu(k))
        .map(|(k, v)| format!("{k}: {}", num(v)))
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
    parts.push(format!("gpu: {}", num(n.resources.gpus(gpu))));
    let devices: usize = n.all_pods().map(|p| p.held.len()).sum();
    if observed && devices > 0 {
        let held = wlmap_engine::PodInfo::gpus_held_together(n.all_pods());
        parts.push(format!("held: {}", num(held)));
    }
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
        // DRA devices by name, with the MIG profile where its ResourceSlice says.
        let devices: Vec<String> = p
            .held
            .iter()
            .map(|d| match &d.profile {
                Some(profile) => format!("{} ({profile})", d.device),
                None => d.device.clone(),
            })
            .collect();
        let held = if devices.is_empty() {
            String::new()
        } else {
            format!("   held: {}", devices.join(","))
        };
        rows.push((
            format!("{prefix}{branch}{}", p.name),
            format!(
                "{state}   gpu: {}   {}{held}",
                num(p.gpus.max(p.held.len() as f64)),
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
