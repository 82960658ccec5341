//! A snapshot read on every core, trimmed as read and scoped to a namespace
//! (`Index::read`) gives what reading it whole gives: the same `get` items, byte for byte, on
//! the demo, every catalog fixture and generated snapshots in each layout a user makes them
//! (`kubectl get -o json`, `-o yaml`, one object per line); the same objects for a workload's
//! own commands; the same errors and warnings when the text is not what it should be.

use wlmap_catalog::synth::{Format, write};
use wlmap_engine::{Object, Registry};
use wlmap_inventory::{Index, Scope, view};

/// The catalog's definitions, compiled once.
fn registry() -> Registry {
    static REGISTRY: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    REGISTRY
        .get_or_init(|| wlmap_catalog::registry().expect("catalog"))
        .clone()
}

/// The text read whole, as before: every object, untrimmed.
fn whole(text: &str) -> Index {
    let (values, _) = wlmap_schema::decode_objects_warned(text, "t").expect("decodes");
    Index::new(registry(), values.into_iter().map(Object::new))
}

fn read(text: &str, scope: Scope) -> Index {
    let mut index = Index::new(registry(), []);
    index.read(text, "t", scope).expect("reads");
    index
}

/// `get`'s items of the workloads in `ns` (every one with `None`), as JSON.
fn items(index: &Index, ns: Option<&str>) -> String {
    let keys: Vec<_> = index
        .top_level_keys()
        .into_iter()
        .filter(|k| ns.is_none_or(|n| k.namespace == n))
        .collect();
    let items: Vec<view::GetItem> = index
        .evaluate_all(&keys)
        .iter()
        .flatten()
        .map(view::item)
        .collect();
    serde_json::to_string_pretty(&items).expect("serialises")
}

/// The objects held, as JSON, in a stable order.
fn objects(index: &Index) -> Vec<String> {
    let mut all: Vec<String> = index.objects().map(|o| o.json().to_string()).collect();
    all.sort();
    all
}

/// Every way of reading `text` agrees with reading it whole; returns how many workloads it has.
fn agrees(text: &str, what: &str) -> usize {
    let old = whole(text);
    let all = items(&old, None);
    assert_eq!(
        items(
            &read(
                text,
                Scope {
                    namespace: None,
                    trim: true
                }
            ),
            None
        ),
        all,
        "{what}: get -A"
    );
    let namespaces: std::collections::BTreeSet<String> = old
        .top_level_keys()
        .into_iter()
        .map(|k| k.namespace)
        .collect();
    for ns in namespaces.iter().take(4) {
        let scoped = Scope {
            namespace: Some(ns),
            trim: true,
        };
        assert_eq!(
            items(&read(text, scoped), Some(ns)),
            items(&old, Some(ns)),
            "{what}: get -n {ns}"
        );
        // A workload's own commands read its namespace and the cluster-scoped objects, whole.
        let own = read(
            text,
            Scope {
                namespace: Some(ns),
                trim: false,
            },
        );
        let expected: Vec<String> = {
            let mut v: Vec<String> = old
                .objects()
                .filter(|o| o.namespace().is_empty() || o.namespace() == ns)
                .map(|o| o.json().to_string())
                .collect();
            v.sort();
            v
        };
        assert_eq!(objects(&own), expected, "{what}: objects of {ns}");
    }
    old.top_level_keys().len()
}

#[test]
fn every_fixture_and_the_demo_read_as_whole() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalog/fixtures");
    let mut files = 0;
    for def in std::fs::read_dir(&root).expect("fixtures").flatten() {
        for state in std::fs::read_dir(def.path()).expect("states").flatten() {
            let path = state.path().join("objects.yaml");
            if let Ok(text) = std::fs::read_to_string(&path) {
                agrees(&text, &path.display().to_string());
                files += 1;
            }
        }
    }
    assert!(files > 100, "{files} fixture files");
    for (name, text) in wlmap_catalog::DEMO {
        agrees(text, name);
    }
}

#[test]
fn generated_snapshots_read_as_whole_in_every_layout() {
    for format in [Format::JsonList, Format::YamlList, Format::JsonLines] {
        let mut out = Vec::new();
        let made = write(40, format, &mut out).expect("writes");
        let text = String::from_utf8(out).expect("utf-8");
        let workloads = agrees(&text, &format!("{format:?}"));
        assert_eq!(workloads, made.workloads, "{format:?}");
    }
}

#[test]
fn a_list_split_into_items_is_read_on_every_core() {
    // Enough items for the parallel path, and the trimmed pods are smaller than whole ones.
    let mut out = Vec::new();
    write(40, Format::YamlList, &mut out).expect("writes");
    let text = String::from_utf8(out).expect("utf-8");
    let trimmed = read(
        &text,
        Scope {
            namespace: None,
            trim: true,
        },
    );
    let full = whole(&text);
    assert_eq!(trimmed.len(), full.len());
    let size = |i: &Index| {
        i.objects()
            .map(|o| o.json().to_string().len())
            .sum::<usize>()
    };
    assert!(
        size(&trimmed) * 2 < size(&full),
        "{} against {}",
        size(&trimmed),
        size(&full)
    );
}

#[test]
fn what_is_not_split_is_read_whole_with_its_errors_and_warnings() {
    // A repeated key inside one item: the whole read's warning, with its line.
    let text = "apiVersion: v1\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n    name: b\nkind: List\n";
    let mut index = Index::new(registry(), []);
    let repeated = index.read(text, "t.yaml", Scope::default()).expect("reads");
    let (_, expected) = wlmap_schema::decode_objects_warned(text, "t.yaml").unwrap();
    assert_eq!(repeated, expected);
    assert_eq!(repeated.len(), 1);
    assert_eq!(
        index.objects().next().map(|o| o.name().to_string()),
        Some("b".into())
    );
    // Invalid text, an item without a kind (even in another namespace), a scalar document.
    for (text, file) in [
        (
            "{\"kind\": \"List\", \"items\": [{\"kind\": \"Pod\"}, {]}",
            "t.json",
        ),
        (
            "{\"kind\": \"List\", \"items\": [{\"metadata\": {\"namespace\": \"web\"}}]}",
            "t.json",
        ),
        (
            "kind: List\nitems:\n- metadata:\n    namespace: web\n",
            "t.yaml",
        ),
        ("kind: Pod\n---\n42\n", "t.yaml"),
        // Found by the `snapshot` fuzz target: a line that ends a List's items early, with
        // items after it; read only up to it, the rest was lost.
        (
            include_str!("../testdata/list-items-cut-short.yaml"),
            "t.yaml",
        ),
    ] {
        let expected = wlmap_schema::decode_objects_warned(text, file)
            .unwrap_err()
            .to_string();
        let got = Index::new(registry(), [])
            .read(
                text,
                file,
                Scope {
                    namespace: Some("ml"),
                    trim: true,
                },
            )
            .unwrap_err()
            .to_string();
        assert_eq!(got, expected, "{text}");
    }
}
