//! Updates lose nothing, on every catalog kind: random scheduler names and labels applied to
//! the root object of every fixture. Only the asked fields change, applying twice equals
//! applying once, no null is written, a workload with pod templates gets them written (or the
//! update is refused with its reason), and each resolved template then carries the new values
//! or is one the definition leaves alone (a template made up when its field is absent: RayJob's
//! default submitter, KServe's absent transformer), unchanged.

use proptest::prelude::*;
use serde_json::Value;
use wlmap_engine::{Object, ObjectsProvider, PodUpdate, Target};

mod common;
use common::{fixtures_dir, name, objects, sorted_dirs};

fn roots() -> Vec<(String, Vec<Object>)> {
    sorted_dirs(&fixtures_dir())
        .iter()
        .map(|s| (name(s), objects(&sorted_dirs(s)[0])))
        .collect()
}

/// Every JSON pointer whose value differs between two documents (leaves and added/removed keys).
fn changed(a: &Value, b: &Value, at: String, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                changed(
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                    format!("{at}/{k}"),
                    out,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                changed(p, q, format!("{at}/{i}"), out);
            }
        }
        _ if a != b => out.push(at),
        _ => {}
    }
}

fn has_null_where_absent(before: &Value, after: &Value) -> bool {
    match (before, after) {
        (Value::Object(x), Value::Object(y)) => y.iter().any(|(k, v)| match x.get(k) {
            None => v.is_null(),
            Some(b) => has_null_where_absent(b, v),
        }),
        (Value::Array(x), Value::Array(y)) => {
            x.iter().zip(y).any(|(p, q)| has_null_where_absent(p, q))
        }
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]
    #[test]
    fn updates_on_every_catalog_kind_change_only_what_they_ask(sched in "[a-z][a-z0-9-]{0,10}", key in "[a-z]{1,8}", val in "[a-z0-9]{0,8}") {
        let reg = wlmap_catalog::registry().expect("catalog");
        let mut touched_kinds = 0;
        for (slug, objs) in roots() {
            let def = reg.by_name(&slug).expect("definition");
            let before = objs[0].json().clone();
            let u = PodUpdate { scheduler_name: Some(sched.clone()), labels: [(key.clone(), val.clone())].into(), ..Default::default() };
            let mut once = before.clone();
            let report = match wlmap_engine::update(def, &mut once, &Target::all(), &u) {
                Ok(r) => r,
                // A definition without a path for a field says so; nothing was written.
                Err(e) => {
                    prop_assert!(e.to_string().contains("has no") || e.to_string().contains("not a writable path"), "{slug}: {e}");
                    continue;
                }
            };
            touched_kinds += 1;
            let mut diff = Vec::new();
            changed(&before, &once, String::new(), &mut diff);
            prop_assert_eq!(diff.len(), report.changed.len(), "{}: reported {:?}, found {:?}", slug, report.changed, diff);
            for d in &diff {
                // Where the kind keeps pod labels: a template's metadata, or its own field (Milvus'
                // podLabels, Dynamo's extraPodMetadata), made when absent.
                prop_assert!(d.ends_with("/schedulerName") || d.ends_with(&format!("/{key}")) || d.ends_with("/labels") || d.ends_with("/podLabels") || d.ends_with("/extraPodMetadata") || d.ends_with("/metadata") || d.ends_with("/spec"), "{}: unexpected change at {}", slug, d);
            }
            prop_assert!(!has_null_where_absent(&before, &once), "{}: a null was written", slug);
            let mut twice = once.clone();
            let again = wlmap_engine::update(def, &mut twice, &Target::all(), &u).expect("second update");
            prop_assert!(again.changed.is_empty());
            prop_assert_eq!(&twice, &once);
            // The resolved pod templates now carry the values, or are ones the definition leaves
            // alone, unchanged; a workload with templates has some written.
            let template_list = |root: Value| -> Vec<Value> {
                let mut all = objs.clone();
                all[0] = Object::new(root);
                let w = wlmap_engine::resolve_with(def, &all[0], &ObjectsProvider(&all)).expect("resolves");
                w.root.walk().filter_map(|n| n.template.as_deref().cloned()).collect()
            };
            let (old_templates, new_templates) = (template_list(before.clone()), template_list(once.clone()));
            prop_assert_eq!(old_templates.len(), new_templates.len(), "{}", slug);
            if !new_templates.is_empty() {
                prop_assert!(report.templates > 0, "{}: {} templates, none written", slug, new_templates.len());
            }
            let mut carrying = 0;
            for (old, t) in old_templates.iter().zip(&new_templates) {
                let label = t.pointer("/metadata/labels").and_then(|l| l.get(&key)).and_then(Value::as_str);
                let carries = t.pointer("/spec/schedulerName").and_then(Value::as_str) == Some(sched.as_str())
                    && label == Some(val.as_str());
                prop_assert!(carries || old == t, "{}: a template half written: {}", slug, t);
                carrying += usize::from(carries);
            }
            prop_assert!(carrying >= report.templates.min(new_templates.len()), "{}: {} templates written, {} carry the values", slug, report.templates, carrying);
        }
        prop_assert!(touched_kinds >= 30, "only {touched_kinds} kinds accepted the update");
    }
}
