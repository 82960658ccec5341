//! The workload listing (`get`, `get --watch`): its columns and rows.

use super::{age, colour_enabled, num, phase};
use wlmap_inventory::view;

/// The table: NAMESPACE (with `-A`), NAME, KIND, STATUS, PODS, GPUS, AGE; `-o wide` adds
/// HELD (GPUs its pods hold), COMPONENTS, DEFINITION and REASON.
pub fn table(items: &[view::GetItem], all_namespaces: bool, wide: bool) -> String {
    let header = header(all_namespaces, wide);
    let colour = colour_enabled();
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|it| row(it, all_namespaces, wide, colour))
        .collect();
    let mut s = String::new();
    super::table(&mut s, &header, &rows);
    s
}

/// The table's columns.
pub fn header(all_namespaces: bool, wide: bool) -> Vec<&'static str> {
    let mut header = vec![];
    if all_namespaces {
        header.push("NAMESPACE");
    }
    header.extend(["NAME", "KIND", "STATUS", "PODS", "GPUS", "AGE"]);
    if wide {
        header.extend(["HELD", "COMPONENTS", "DEFINITION", "REASON"]);
    }
    header
}

/// One row of the table.
pub fn row(it: &view::GetItem, all_namespaces: bool, wide: bool, colour: bool) -> Vec<String> {
    let mut r = vec![];
    if all_namespaces {
        r.push(it.namespace.clone());
    }
    let status = if it.error.is_some() {
        "Error".to_string()
    } else if !it.status.failures.is_empty() {
        // A rule could not be evaluated: the status may be wrong (stderr says which rule).
        format!("{}!", phase(it.status.phase, colour))
    } else {
        phase(it.status.phase, colour)
    };
    let ready = it.pods.ready.map_or("-".into(), |r| r.to_string());
    r.extend([
        it.name.clone(),
        it.kind.clone(),
        status,
        format!("{ready}/{}", it.pods.desired),
        num(it.resources.gpus),
        age(it.created.as_deref()),
    ]);
    if wide {
        r.push(it.resources.gpus_held.map_or("-".into(), num));
        r.push(it.components.join(","));
        r.push(format!("{} ({})", it.definition.name, it.definition.origin));
        r.push(reason(it));
    }
    r
}

/// Why a workload waits, in a cell: the scheduler's reason for most of its pods held back and
/// how many (the message is `describe`'s); for a workload another controller runs elsewhere
/// (`spec.managedBy`), that controller; else `-`.
fn reason(it: &view::GetItem) -> String {
    let held: usize = it.waiting.iter().map(|w| w.pods).sum();
    match (it.waiting.first(), &it.managed_by) {
        (Some(w), _) => format!("{} ({held} pod(s))", w.why.reason),
        (None, Some(m)) => format!("ManagedElsewhere ({m})"),
        (None, None) => "-".into(),
    }
}
