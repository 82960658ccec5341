//! `scaffold` and `check` on hand-written CRDs (crates/author/testdata/crds/, written from
//! the upstream Go types) and the catalog's fixtures (what the real controllers write): a draft
//! finds the pod templates and replica fields the catalog's hand-written definitions use,
//! validates, and with live objects finds their pod labels and owners; `check` passes the
//! catalog and reports a renamed status field, a version no longer served, and a condition
//! type the schema does not allow.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use wlmap_author::{Crd, Observed, Step, check, plain_prefix, scaffold, walk};
use wlmap_schema::{ComponentDefinition, Karta};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Hand-written structural CRDs, with the catalog definition of each kind (the operators'
/// own CRDs are in the testbed only, built from their modules).
const CRDS: [(&str, &str); 4] = [
    (
        "jobset.x-k8s.io_jobsets.yaml",
        "jobset-x-k8s-io-jobset-v1alpha2",
    ),
    (
        "kubeflow.org_pytorchjobs.yaml",
        "kubeflow-org-pytorchjob-v1",
    ),
    (
        "leaderworkerset.x-k8s.io_leaderworkersets.yaml",
        "leaderworkerset-x-k8s-io-leaderworkerset-v1",
    ),
    ("ray.io_rayclusters.yaml", "ray-io-raycluster-v1"),
];

fn crd(file: &str) -> (Crd, Value) {
    let path = repo().join("crates/author/testdata/crds").join(file);
    let text = std::fs::read_to_string(path).expect("CRD");
    let docs = wlmap_schema::decode_objects(&text, file).expect("YAML");
    let v = docs
        .into_iter()
        .find(|d| d["kind"] == "CustomResourceDefinition")
        .expect("a CRD");
    (Crd::from_value(&v).expect("CRD"), v)
}

fn catalog(name: &str) -> Karta {
    let reg = wlmap_catalog::registry().expect("catalog");
    reg.iter()
        .find(|d| d.name() == name)
        .unwrap_or_else(|| panic!("{name} in the catalog"))
        .karta()
        .clone()
}

fn fixture(def: &str, state: &str) -> Vec<Value> {
    let path = repo()
        .join("crates/catalog/fixtures")
        .join(def)
        .join(state)
        .join("objects.yaml");
    let text = std::fs::read_to_string(&path).expect("fixture");
    wlmap_schema::decode_objects(&text, "objects.yaml").expect("objects")
}

/// A path with every step that the schema reaches through a map written as `[]` (the schema
/// cannot name a map's keys: the catalog's `.pytorchReplicaSpecs.Master` is the draft's
/// `.pytorchReplicaSpecs[]`).
fn schema_shape(schema: &Value, expr: &str) -> Vec<Step> {
    let steps = plain_prefix(expr);
    let mut out: Vec<Step> = Vec::new();
    for st in steps {
        let at = walk(schema, &out).ok();
        let is_map = at.is_some_and(|n| {
            n.get("properties").is_none()
                && n.get("additionalProperties").is_some_and(Value::is_object)
        });
        out.push(if is_map { Step::Iter } else { st });
    }
    out
}

/// The count fields a replicas expression reads (by name).
fn count_fields(expr: &str) -> BTreeSet<String> {
    [
        "replicas",
        "size",
        "parallelism",
        "completions",
        "numOfHosts",
        "minReplicas",
        "maxReplicas",
    ]
    .iter()
    .filter(|f| {
        expr.match_indices(*f).any(|(i, _)| {
            let before = expr[..i].chars().last();
            let after = expr[i + f.len()..].chars().next();
            before == Some('.') && after.is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_')
        })
    })
    .map(|f| f.to_string())
    .collect()
}

fn template_path(c: &ComponentDefinition) -> Option<&String> {
    let s = c.spec_definition.as_ref()?;
    s.pod_template_spec_path
        .as_ref()
        .or(s.pod_spec_path.as_ref())
}

fn replicas(c: &ComponentDefinition) -> String {
    c.scale_definition
        .as_ref()
        .and_then(|s| s.replicas_path.clone())
        .unwrap_or_default()
}

/// The fields read by a component's replicas and by those of the components above it.
fn fields_up(k: &Karta, c: &ComponentDefinition) -> BTreeSet<String> {
    let mut out = count_fields(&replicas(c));
    let mut owner = c.owner_ref.clone();
    while let Some(o) = owner {
        let Some(p) = k.components().find(|x| x.name == o) else {
            break;
        };
        out.extend(count_fields(&replicas(p)));
        owner = p.owner_ref.clone();
    }
    out
}

/// The name of another drafted component with a template.
fn other(k: &Karta, not: &ComponentDefinition) -> String {
    k.spec
        .structure_definition
        .child_components
        .iter()
        .find(|c| c.name != not.name && template_path(c).is_some())
        .map(|c| c.name.clone())
        .unwrap_or_default()
}

#[test]
fn drafts_find_the_catalogs_pod_templates_and_replica_fields_and_validate() {
    for (file, name) in CRDS {
        let (crd, _) = crd(file);
        let draft = scaffold(&crd, None).expect("draft");
        let karta = wlmap_schema::decode_one(&draft.yaml, "draft.yaml")
            .unwrap_or_else(|e| panic!("{file}: the draft does not decode: {e}\n{}", draft.yaml));
        let errors: Vec<String> = wlmap_engine::Definition::check(&karta, None)
            .into_iter()
            .filter(|(f, _)| f.severity == wlmap_schema::Severity::Error)
            .map(|(f, _)| f.message)
            .collect();
        assert!(errors.is_empty(), "{file}: {errors:?}\n{}", draft.yaml);
        assert!(
            check(&karta, &crd).is_empty(),
            "{file}: the draft fits its own CRD: {:?}",
            check(&karta, &crd)
        );
        let schema = crd
            .storage()
            .and_then(|v| v.schema.clone())
            .expect("schema");
        let theirs = catalog(name);
        for c in theirs.spec.structure_definition.child_components.iter() {
            let Some(path) = template_path(c) else {
                continue;
            };
            let want = schema_shape(&schema, path);
            let mine = karta
                .spec
                .structure_definition
                .child_components
                .iter()
                .find(|d| template_path(d).is_some_and(|p| plain_prefix(p) == want))
                .unwrap_or_else(|| {
                    panic!(
                        "{file}: no drafted component has {name}'s template {path}:\n{}",
                        draft.yaml
                    )
                });
            let drafted = count_fields(&replicas(mine));
            let hand = fields_up(&theirs, c);
            if count_fields(&replicas(c)).is_empty() && !drafted.is_empty() {
                // A template that shares its count with another (a LeaderWorkerSet's leader:
                // one per group of `size`): the draft must say so for the reader to settle.
                assert!(
                    draft.yaml.contains(&format!(
                        "counts the {} template's pods too",
                        other(&karta, mine)
                    )),
                    "{file} {}: a shared count not flagged:\n{}",
                    c.name,
                    draft.yaml
                );
                continue;
            }
            assert_eq!(
                drafted.is_empty(),
                count_fields(&replicas(c)).is_empty(),
                "{file} {}: drafted {:?}, catalog {:?}",
                c.name,
                replicas(mine),
                replicas(c)
            );
            assert!(
                drafted.is_subset(&hand),
                "{file} {}: the draft counts with {drafted:?}, the catalog with {hand:?}",
                c.name
            );
        }
        assert!(
            draft.todos > 0,
            "{file}: a draft from a schema alone has guesses to review"
        );
        // The CRD's short names carry over, so `wlmap get lws` works with the draft.
        assert_eq!(
            karta.spec.short_names, crd.short_names,
            "{file}: the draft's shortNames"
        );
        if file.starts_with("leaderworkerset") {
            assert_eq!(karta.spec.short_names, ["lws"]);
        }
    }
}

#[test]
fn live_objects_give_the_pod_labels_owners_and_condition_types() {
    let (crd_ray, _) = crd("ray.io_rayclusters.yaml");
    let objects = fixture("ray-io-raycluster-v1", "two-worker-groups");
    let draft = scaffold(&crd_ray, Some(&Observed::new(&objects))).expect("draft");
    for want in [
        r#"keyPath: .metadata.labels["ray.io/node-type"]"#,
        "value: head",
        "value: worker",
        r#"idPath: .metadata.labels["ray.io/group"]"#,
        "- type: HeadPodReady",
    ] {
        assert!(draft.yaml.contains(want), "{want} not in:\n{}", draft.yaml);
    }
    assert!(!draft.yaml.contains("TODO/component"), "{}", draft.yaml);
    let karta = wlmap_schema::decode_one(&draft.yaml, "draft.yaml").expect("decodes");
    // The draft, evaluated on the same objects, puts every pod in a component.
    let def =
        wlmap_engine::Definition::compile(karta, wlmap_engine::Origin::File).expect("compiles");
    let root = objects
        .iter()
        .find(|o| o["kind"] == "RayCluster")
        .expect("RayCluster");
    let objs: Vec<wlmap_engine::Object> = objects
        .iter()
        .cloned()
        .map(wlmap_engine::Object::new)
        .collect();
    let root = wlmap_engine::Object::new(root.clone());
    let mut w = wlmap_engine::resolve(&def, &root).expect("resolves");
    wlmap_engine::attribute(&def, &mut w, &root, &objs).expect("attributes");
    let pods = objects.iter().filter(|o| o["kind"] == "Pod").count() as u64;
    assert_eq!(w.observed_pods(), pods);
    assert!(w.unattributed.is_empty(), "{:?}", w.unattributed);

    let (crd_jobset, _) = crd("jobset.x-k8s.io_jobsets.yaml");
    let objects = fixture("jobset-x-k8s-io-jobset-v1alpha2", "leader-workers");
    let draft = scaffold(&crd_jobset, Some(&Observed::new(&objects))).expect("draft");
    assert!(draft.yaml.contains("kind: Job"), "{}", draft.yaml);
    assert!(draft.yaml.contains("group: batch"), "{}", draft.yaml);
}

#[test]
fn the_catalog_fits_the_testbeds_crds() {
    for (file, name) in CRDS {
        let (crd, _) = crd(file);
        let found = check(&catalog(name), &crd);
        assert!(found.is_empty(), "{file}: {found:#?}");
    }
}

/// The CRD with a change made to its storage version's schema.
fn edited(file: &str, edit: impl FnOnce(&mut Value)) -> Crd {
    let (_, mut v) = crd(file);
    let versions = v["spec"]["versions"].as_array_mut().expect("versions");
    let storage = versions
        .iter_mut()
        .find(|x| x["storage"] == true)
        .expect("storage version");
    edit(storage);
    Crd::from_value(&v).expect("CRD")
}

#[test]
fn a_renamed_status_field_is_reported_where_the_definition_reads_it() {
    let crd = edited("ray.io_rayclusters.yaml", |ver| {
        let status = ver
            .pointer_mut("/schema/openAPIV3Schema/properties/status/properties")
            .and_then(Value::as_object_mut)
            .expect("status");
        let field = status
            .remove("readyWorkerReplicas")
            .expect("readyWorkerReplicas");
        status.insert("readyWorkers".into(), field);
    });
    let found = check(&catalog("ray-io-raycluster-v1"), &crd);
    assert!(!found.is_empty());
    assert!(
        found.iter().all(|f| f
            .problem
            .contains(".status.readyWorkerReplicas is not in the schema")),
        "{found:#?}"
    );
    assert!(
        found
            .iter()
            .any(|f| f.field == "statusMappings.running: byExpression"),
        "{found:#?}"
    );
    assert!(found[0].to_string().starts_with("ray-io-raycluster-v1: "));
}

#[test]
fn a_version_no_longer_served_and_a_moved_template_are_reported() {
    let crd = edited("leaderworkerset.x-k8s.io_leaderworkersets.yaml", |ver| {
        ver["served"] = Value::Bool(false);
        let lwt = ver
            .pointer_mut("/schema/openAPIV3Schema/properties/spec/properties/leaderWorkerTemplate/properties")
            .and_then(Value::as_object_mut)
            .expect("leaderWorkerTemplate");
        let t = lwt.remove("workerTemplate").expect("workerTemplate");
        lwt.insert("podTemplate".into(), t);
    });
    let found = check(
        &catalog("leaderworkerset-x-k8s-io-leaderworkerset-v1"),
        &crd,
    );
    let text: Vec<String> = found.iter().map(|f| f.to_string()).collect();
    assert!(
        text.iter().any(|f| f.contains("version v1 is not served")),
        "{text:#?}"
    );
    assert!(
        text.iter()
            .any(|f| f.contains("component worker: podTemplateSpecPath")
                && f.contains(".spec.leaderWorkerTemplate.workerTemplate is not in the schema")),
        "{text:#?}"
    );
}

#[test]
fn a_condition_type_the_schema_does_not_allow_is_reported() {
    let crd = edited("jobset.x-k8s.io_jobsets.yaml", |ver| {
        let t = ver
            .pointer_mut("/schema/openAPIV3Schema/properties/status/properties/conditions/items/properties/type")
            .expect("conditions[].type");
        t["enum"] = serde_json::json!(["Completed", "Failed"]);
    });
    let found = check(&catalog("jobset-x-k8s-io-jobset-v1alpha2"), &crd);
    assert!(
        found.iter().any(|f| f.problem.starts_with(
            "condition type \"Suspended\" is not one of the schema's values (Completed, Failed)"
        )),
        "{found:#?}"
    );
    assert!(
        !found.iter().any(|f| f.problem.contains("\"Completed\"")),
        "{found:#?}"
    );
}

#[test]
fn the_scale_subresource_names_a_count_field_of_any_name() {
    let crd = serde_json::json!({"kind": "CustomResourceDefinition", "spec": {"group": "example.io",
        "names": {"kind": "Sim", "plural": "sims"}, "versions": [{"name": "v1", "served": true, "storage": true,
        "subresources": {"scale": {"specReplicasPath": ".spec.numNodes", "statusReplicasPath": ".status.nodes"}},
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "numNodes": {"type": "integer"},
            "template": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "containers": {"type": "array", "items": {"type": "object"}}}}}}}}}}}}]}});
    let crd = Crd::from_value(&crd).expect("CRD");
    let draft = scaffold(&crd, None).expect("draft");
    assert!(
        draft.yaml.contains("replicasPath: .spec.numNodes // 1"),
        "{}",
        draft.yaml
    );
    assert!(!draft.yaml.contains("one pod assumed"), "{}", draft.yaml);
}
