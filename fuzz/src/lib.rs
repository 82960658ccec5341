//! What the fuzz targets share: the catalog compiled once, the input layouts, and the checks
//! that turn a wrong answer (not only a panic) into a crash.

use std::sync::{Arc, OnceLock};
use std::time::Duration;
use wlmap_engine::{Definition, Object, PodUpdate, Target};
use wlmap_expr::Limits;

/// Small budgets so that a hostile expression costs milliseconds, not the default second:
/// the fuzzer must see many inputs, and the budgets themselves are what is under test.
pub fn limits() -> Limits {
    Limits {
        max_steps: 5_000,
        max_outputs: 1_000,
        timeout: Duration::from_millis(200),
        max_len: 1 << 20,
    }
}

/// Every catalog definition, compiled once, sorted by name (the `resolve` target's first
/// byte indexes this list; the seeds use the same order).
pub fn catalog() -> &'static [Arc<Definition>] {
    static CATALOG: OnceLock<Vec<Arc<Definition>>> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let mut defs: Vec<Arc<Definition>> = wlmap_catalog::kartas()
            .expect("the catalog decodes")
            .into_iter()
            .map(|(_, k)| {
                let mut d = Definition::compile(k, wlmap_engine::Origin::Catalog)
                    .expect("the catalog compiles");
                d.set_limits(limits());
                Arc::new(d)
            })
            .collect();
        defs.sort_by_key(|d| d.name());
        defs
    })
}

/// `expression` target layout: the expression, a newline, then the JSON input.
pub fn split_expression(data: &[u8]) -> Option<(&str, &str)> {
    let text = std::str::from_utf8(data).ok()?;
    Some(text.split_once('\n').unwrap_or((text, "null")))
}

/// Resolve, read status, attribute, compute gangs and update one workload; every step may
/// fail with an error, none may panic, and an update must be idempotent, must not write
/// nulls, and must write nothing when it fails.
pub fn exercise(def: &Definition, root: Object, others: &[Object]) {
    let refs = wlmap_engine::ObjectsProvider(others);
    let Ok(mut w) = wlmap_engine::resolve_with(def, &root, &refs) else {
        return;
    };
    let _ = wlmap_engine::status(def, &root);
    let _ = wlmap_engine::gangs(def, &w, None);
    if wlmap_engine::attribute(def, &mut w, &root, others).is_ok() {
        let pods: Vec<Object> = others.iter().filter(|o| o.is_pod()).cloned().collect();
        let _ = wlmap_engine::gangs(def, &w, Some(&pods));
    }
    let mut u = PodUpdate::default();
    u.scheduler_name = Some("fuzz-scheduler".into());
    u.labels.insert("fuzz".into(), "yes".into());
    let mut once = root.json().clone();
    if wlmap_engine::update(def, &mut once, &Target::all(), &u).is_err() {
        assert_eq!(&once, root.json(), "an update that failed wrote something");
    } else {
        let mut twice = once.clone();
        let again = wlmap_engine::update(def, &mut twice, &Target::all(), &u)
            .expect("an update that applied once applies again");
        assert!(
            again.changed.is_empty(),
            "update not idempotent: {:?}",
            again.changed
        );
        assert_eq!(once, twice);
        assert_no_new_nulls(root.json(), &once);
    }
}

/// Held packed and released (as a live inventory holds objects between updates), every
/// object reads back the same JSON and the same identity (read without parsing), and the
/// workload resolves and attributes its pods as from the whole objects.
pub fn check_packed(def: &Definition, root: &Object, others: &[Object]) {
    let packing = wlmap_engine::Packing::default();
    let released = |o: &Object| {
        let p = o.clone().packed(&packing);
        p.released().unwrap_or(p)
    };
    let ids = |o: &Object| {
        let (a, b, c, d, e) = (o.name(), o.namespace(), o.uid(), o.kind(), o.api_version());
        let (f, g) = (o.creation_timestamp(), o.controller_uid());
        let h = o.controller_type();
        format!("{a}\n{b}\n{c}\n{d}\n{e}\n{f:?}\n{g:?}\n{h:?}\n{}", o.is_pod())
    };
    let (p_root, p_others) = (released(root), others.iter().map(released).collect::<Vec<_>>());
    for (o, p) in std::iter::once((root, &p_root)).chain(others.iter().zip(&p_others)) {
        assert_eq!(ids(o), ids(p), "a packed object's identity differs");
        assert_eq!(o.json(), p.json(), "a packed object reads back other JSON");
    }
    let shown = |root: &Object, others: &[Object]| {
        let refs = wlmap_engine::ObjectsProvider(others);
        let mut w = match wlmap_engine::resolve_with(def, root, &refs) {
            Ok(w) => w,
            Err(e) => return format!("error: {e}"),
        };
        let attributed = wlmap_engine::attribute(def, &mut w, root, others);
        format!("{:?} {}", attributed.err().map(|e| e.to_string()),
            serde_json::to_string(&w).unwrap_or_default())
    };
    let (p_root, p_others) = (released(root), others.iter().map(released).collect::<Vec<_>>());
    let (whole, packed) = (shown(root, others), shown(&p_root, &p_others));
    // The deadline depends on the machine: compare only answers it ended neither of.
    let timed_out = |s: &str| s.contains("exceeded its time budget");
    if !timed_out(&whole) && !timed_out(&packed) {
        assert_eq!(whole, packed, "packed objects resolve otherwise");
    }
}

/// Every null in `after` was already at the same place in `before`.
fn assert_no_new_nulls(before: &serde_json::Value, after: &serde_json::Value) {
    use serde_json::Value;
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            for (k, av) in a {
                match b.get(k) {
                    Some(bv) => assert_no_new_nulls(bv, av),
                    None => assert!(!contains_null(av), "update wrote a null under {k}"),
                }
            }
        }
        (Value::Array(b), Value::Array(a)) => {
            for (i, av) in a.iter().enumerate() {
                match b.get(i) {
                    Some(bv) => assert_no_new_nulls(bv, av),
                    None => assert!(!contains_null(av), "update wrote a null at [{i}]"),
                }
            }
        }
        (Value::Null, _) => {}
        (_, a) => assert!(!a.is_null(), "update replaced a value with null"),
    }
}

fn contains_null(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Null => true,
        serde_json::Value::Array(a) => a.iter().any(contains_null),
        serde_json::Value::Object(m) => m.values().any(contains_null),
        _ => false,
    }
}
