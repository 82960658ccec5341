//! Engine behaviour on in-memory objects: tree shapes, spec shapes, status, references,
//! attribution, updates (with round-trip property tests) and bounded evaluation.

use proptest::prelude::*;
use serde_json::{Value, json};
use wlmap_engine::*;

fn def(yaml: &str) -> Definition {
    let k = wlmap_schema::decode_one(yaml, "test.yaml").expect("decodes");
    Definition::compile(k, Origin::File).expect("compiles")
}

/// The error of the one component that could not be read (the rest of the workload is).
fn unreadable(d: &Definition, o: &Object) -> String {
    let w = resolve(d, o).expect("a partial answer");
    let bad = w.unreadable();
    assert_eq!(bad.len(), 1, "{bad:?}");
    bad[0].1.to_string()
}

const LWS: &str = r#"
apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: lws}
spec:
  structureDefinition:
    rootComponent:
      name: lws
      kind: {group: leaderworkerset.x-k8s.io, version: v1, kind: LeaderWorkerSet}
      statusDefinition:
        conditionsDefinition: {path: .status.conditions}
        statusMappings:
          running: [{byConditions: [{type: Available, status: "True"}]}]
          initializing: [{byConditions: [{type: Available, status: Absent}]}]
          failed: [{byConditions: [{type: Failed, status: "True"}]}]
    childComponents:
    - name: group
      ownerRef: lws
      scaleDefinition: {replicasPath: .spec.replicas // 1}
      podSelector: {replicaSelector: {keyPath: '.metadata.labels["leaderworkerset.sigs.k8s.io/group-index"]'}}
    - name: leader
      ownerRef: group
      kind: {group: apps, version: v1, kind: StatefulSet}
      specDefinition: {podTemplateSpecPath: '.spec.leaderWorkerTemplate.leaderTemplate // .spec.leaderWorkerTemplate.workerTemplate'}
      scaleDefinition: {replicasPath: '1'}
      podSelector: {componentTypeSelector: {keyPath: '.metadata.labels["leaderworkerset.sigs.k8s.io/worker-index"]', value: "0"}}
    - name: worker
      ownerRef: group
      kind: {group: apps, version: v1, kind: StatefulSet}
      specDefinition: {podTemplateSpecPath: .spec.leaderWorkerTemplate.workerTemplate}
      scaleDefinition: {replicasPath: '(.spec.leaderWorkerTemplate.size // 1) - 1'}
      podSelector: {componentTypeSelector: {keyPath: '.metadata.labels["leaderworkerset.sigs.k8s.io/worker-index"] != "0"', value: "true"}}
"#;

fn lws(replicas: u64, size: u64) -> Object {
    Object::new(json!({
        "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
        "metadata": {"name": "vllm", "namespace": "s", "uid": "lws-uid"},
        "spec": {"replicas": replicas, "leaderWorkerTemplate": {"size": size, "workerTemplate": {"spec": {"containers": [
            {"name": "w", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}},
        "status": {"conditions": [{"type": "Available", "status": "True", "reason": "AllGroupsReady", "message": "All replicas are ready"}]}}))
}

fn pod(name: &str, owner: &str, labels: Value) -> Object {
    Object::new(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "s", "uid": format!("uid-{name}"), "labels": labels,
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": owner, "uid": owner, "controller": true}]},
        "spec": {"nodeName": "n1", "containers": [{"name": "w", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}))
}

fn sts(name: &str, owner_uid: &str) -> Object {
    Object::new(
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": "s", "uid": name,
        "ownerReferences": [{"apiVersion": "x", "kind": "LeaderWorkerSet", "name": "vllm", "uid": owner_uid, "controller": true}]}}),
    )
}

#[test]
fn every_group_is_a_subtree_and_size_includes_the_leader() {
    let d = def(LWS);
    let w = resolve(&d, &lws(3, 4)).unwrap();
    let groups: Vec<&Node> = w.root.children.iter().collect();
    assert_eq!(groups.len(), 3);
    assert_eq!(groups[1].path, "group#1");
    assert_eq!(groups[1].children[0].path, "group#1/leader");
    assert_eq!(groups[1].children[1].replicas, 3);
    assert_eq!(groups[1].desired_pods, 4);
    assert_eq!(w.root.desired_pods, 12);
    assert_eq!(w.gpus(&GpuPolicy::default()), 96.0);
    assert_eq!(w.status.phase, Phase::Running);
    assert_eq!(w.status.reason.as_deref(), Some("AllGroupsReady"));
}

#[test]
fn a_missing_condition_can_be_matched_with_absent() {
    let mut o = lws(1, 2).json().clone();
    o["status"] = json!({"conditions": [{"type": "Progressing", "status": "True"}]});
    let w = resolve(&def(LWS), &Object::new(o)).unwrap();
    assert_eq!(w.status.phase, Phase::Initializing);
    let t = w
        .status
        .trace
        .iter()
        .find(|t| t.status == Phase::Initializing)
        .unwrap();
    assert!(t.matched && t.parts[0].contains("found absent"), "{t:?}");
    // With the condition present (any status), Absent no longer matches.
    let w = resolve(&def(LWS), &lws(1, 2)).unwrap();
    assert!(!w.status.phases.contains(&Phase::Initializing));
}

#[test]
fn a_workload_scaled_to_zero_desires_nothing() {
    let w = resolve(&def(LWS), &lws(0, 4)).unwrap();
    assert_eq!(w.root.children.len(), 0);
    assert_eq!(w.root.desired_pods, 0);
}

#[test]
fn pods_land_in_their_group_and_strays_are_reported() {
    let d = def(LWS);
    let root = lws(2, 2);
    let objects = vec![
        sts("vllm", "lws-uid"),
        pod(
            "vllm-0",
            "vllm",
            json!({"leaderworkerset.sigs.k8s.io/group-index": "0", "leaderworkerset.sigs.k8s.io/worker-index": "0"}),
        ),
        pod(
            "vllm-1-1",
            "vllm",
            json!({"leaderworkerset.sigs.k8s.io/group-index": "1", "leaderworkerset.sigs.k8s.io/worker-index": "1"}),
        ),
        // Group 7 does not exist in the spec (scaled down, still terminating).
        pod(
            "vllm-7",
            "vllm",
            json!({"leaderworkerset.sigs.k8s.io/group-index": "7", "leaderworkerset.sigs.k8s.io/worker-index": "0"}),
        ),
        // Not ours.
        Object::new(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "other", "uid": "o"}}),
        ),
    ];
    let mut w = resolve(&d, &root).unwrap();
    attribute(&d, &mut w, &root, &objects).unwrap();
    let place = |name: &str| {
        w.root
            .walk()
            .find(|n| n.pods.iter().any(|p| p.name == name))
            .map(|n| n.path.clone())
    };
    assert_eq!(place("vllm-0").as_deref(), Some("group#0/leader"));
    assert_eq!(place("vllm-1-1").as_deref(), Some("group#1/worker"));
    assert_eq!(
        w.unattributed
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>(),
        vec!["vllm-7"]
    );
    assert_eq!(w.observed_pods(), 3);
    assert_eq!(w.root.ready_pods(), 2);
}

#[test]
fn gangs_per_group_predicted_and_observed() {
    let yaml = format!(
        "{LWS}  optimizationInstructions:\n    gangScheduling:\n      podGroups:\n      - name: group\n        members:\n        - componentName: group\n          groupByKeyPaths: ['.metadata.labels[\"leaderworkerset.sigs.k8s.io/group-index\"]']\n"
    );
    let d = def(&yaml);
    let root = lws(2, 2);
    let w = resolve(&d, &root).unwrap();
    let g = gangs(&d, &w, None).unwrap();
    assert_eq!(
        g.iter()
            .map(|g| (g.name.as_str(), g.min_member))
            .collect::<Vec<_>>(),
        vec![("vllm-group-group-0", 2), ("vllm-group-group-1", 2)]
    );
    let objects = vec![
        sts("vllm", "lws-uid"),
        pod(
            "vllm-0",
            "vllm",
            json!({"leaderworkerset.sigs.k8s.io/group-index": "0", "leaderworkerset.sigs.k8s.io/worker-index": "0"}),
        ),
    ];
    let mut w = resolve(&d, &root).unwrap();
    attribute(&d, &mut w, &root, &objects).unwrap();
    let g = gangs(&d, &w, Some(&objects)).unwrap();
    assert_eq!(g.len(), 1);
    assert_eq!(g[0].members, vec!["vllm-0"]);
    assert!(g[0].incomplete, "1 of 2 pods");
}

#[test]
fn gang_keys_must_yield_one_value() {
    let yaml = format!(
        "{LWS}  optimizationInstructions:\n    gangScheduling:\n      podGroups:\n      - name: group\n        members:\n        - componentName: group\n          groupByKeyPaths: ['.metadata.labels.missing']\n"
    );
    let d = def(&yaml);
    let root = lws(1, 1);
    let objects = vec![
        sts("vllm", "lws-uid"),
        pod(
            "vllm-0",
            "vllm",
            json!({"leaderworkerset.sigs.k8s.io/group-index": "0", "leaderworkerset.sigs.k8s.io/worker-index": "0"}),
        ),
    ];
    let mut w = resolve(&d, &root).unwrap();
    attribute(&d, &mut w, &root, &objects).unwrap();
    let e = gangs(&d, &w, Some(&objects)).unwrap_err().to_string();
    assert!(e.contains("exactly one non-empty value"), "{e}");
}

#[test]
fn long_gang_names_are_cut_with_a_stable_distinct_hash() {
    let a = gang_name(&[&"a".repeat(80), "x"]);
    let b = gang_name(&[&"a".repeat(80), "y"]);
    assert!(a.len() <= 63 && b.len() <= 63);
    assert_ne!(a, b);
    assert_eq!(a, gang_name(&[&"a".repeat(80), "x"]));
}

const MULTI: &str = r#"
apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: multi}
spec:
  structureDefinition:
    rootComponent:
      name: root
      kind: {group: example.io, version: v1, kind: Multi}
      statusDefinition:
        phaseDefinition: {path: .status.phase}
        statusMappings:
          running: [{byPhase: Running}]
          degraded: [{byPhase: Running, byExpression: {expression: '.status.ready < .status.want', expectedResult: "true"}}]
    childComponents:
    - name: role
      ownerRef: root
      instanceIdPath: .spec.roles[].name
      specDefinition: {podSpecPath: '.spec.roles[].pod', metadataPath: '.spec.roles[].meta'}
      scaleDefinition: {replicasPath: '.spec.roles[].count'}
      podSelector: {componentInstanceSelector: {idPath: '.metadata.labels.role'}}
"#;

#[test]
fn instances_zip_with_their_paths_and_a_mismatch_is_an_error() {
    let d = def(MULTI);
    let o = Object::new(
        json!({"apiVersion": "example.io/v1", "kind": "Multi", "metadata": {"name": "m"},
        "spec": {"roles": [{"name": "a", "count": 2, "pod": {"containers": []}, "meta": {"labels": {"x": "1"}}},
                           {"name": "b", "count": 3, "pod": {"containers": []}, "meta": {}}]},
        "status": {"phase": "Running", "ready": 1, "want": 5}}),
    );
    let w = resolve(&d, &o).unwrap();
    assert_eq!(
        w.root
            .children
            .iter()
            .map(|n| (n.instance.clone().unwrap(), n.replicas))
            .collect::<Vec<_>>(),
        vec![("a".into(), 2), ("b".into(), 3)]
    );
    assert_eq!(
        w.root.children[0].template.as_ref().unwrap()["metadata"]["labels"]["x"],
        "1"
    );
    assert_eq!(w.status.phases, vec![Phase::Degraded, Phase::Running]);
    assert_eq!(w.status.phase, Phase::Degraded);
    // One role has no count: replicas path yields null at its position, not a shorter list.
    let o2 = Object::new(
        json!({"apiVersion": "example.io/v1", "kind": "Multi", "metadata": {"name": "m"},
        "spec": {"roles": [{"name": "a", "pod": {}}, {"name": "b", "count": 3, "pod": {}}]}}),
    );
    let w2 = resolve(&d, &o2).unwrap();
    assert_eq!(w2.root.children[0].replicas, 1);
    // A path that yields a different number of values than there are ids is an error.
    let bad = def(&MULTI.replace(
        "replicasPath: '.spec.roles[].count'",
        "replicasPath: '.spec.roles[0].count'",
    ));
    let e = unreadable(&bad, &o);
    assert!(
        e.contains("instanceIdPath yields 2 ids but replicasPath yields 1"),
        "{e}"
    );
}

const FRAG: &str = r#"
apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: frag}
spec:
  structureDefinition:
    rootComponent:
      name: svc
      kind: {group: apps.nvidia.com, version: v1alpha1, kind: NIMService}
      specDefinition:
        fragmentedPodSpecDefinition:
          schedulerNamePath: .spec.schedulerName
          labelsPath: .spec.labels
          resourcesPath: .spec.resources
          imagePath: .spec.image.repository
      scaleDefinition: {replicasPath: .spec.replicas}
      statusDefinition: {phaseDefinition: {path: .status.state}, statusMappings: {running: [{byPhase: Ready}]}}
"#;

#[test]
fn fragmented_fields_assemble_one_template() {
    let d = def(FRAG);
    let mut o = json!({"apiVersion": "apps.nvidia.com/v1alpha1", "kind": "NIMService", "metadata": {"name": "n"},
        "spec": {"replicas": 2, "labels": {"a": "b"}, "image": {"repository": "nvcr.io/nim"}, "resources": {"limits": {"nvidia.com/gpu": 2}}}});
    let w = resolve(&d, &Object::new(o.clone())).unwrap();
    let t = w.root.template.as_ref().unwrap();
    assert_eq!(t["metadata"]["labels"]["a"], "b");
    assert_eq!(t["spec"]["containers"][0]["image"], "nvcr.io/nim");
    assert_eq!(w.gpus(&GpuPolicy::default()), 4.0);
    // Updates go to the fragment paths; a field without a path is a clear error.
    let u = PodUpdate {
        scheduler_name: Some("kai".into()),
        labels: [("team".to_string(), "x".to_string())].into(),
        ..Default::default()
    };
    let r = update(&d, &mut o, &Target::all(), &u).unwrap();
    assert_eq!(o["spec"]["schedulerName"], "kai");
    assert_eq!(o["spec"]["labels"]["team"], "x");
    assert_eq!(r.changed.len(), 2);
    let ns = PodUpdate {
        node_selector: [("k".to_string(), "v".to_string())].into(),
        ..Default::default()
    };
    assert!(
        update(&d, &mut o, &Target::all(), &ns)
            .unwrap_err()
            .to_string()
            .contains("nodeSelector")
    );
}

#[test]
fn references_are_read_through_the_provider() {
    struct Runtimes;
    impl ReferenceProvider for Runtimes {
        fn get(
            &self,
            kind: &wlmap_schema::GroupVersionKind,
            ns: Option<&str>,
            name: &str,
        ) -> Option<Value> {
            (kind.kind == "ClusterTrainingRuntime" && ns.is_none() && name == "torch").then(|| json!({"spec": {"template": {"spec": {"replicatedJobs": [{"name": "node", "template": {"spec": {"parallelism": 1, "template": {"spec": {"containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": 8}}}]}}}}}]}}}}))
        }
    }
    let yaml = r#"
apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: trainjob}
spec:
  references:
  - name: runtime
    kind: {group: trainer.kubeflow.org, version: v1alpha1, kind: ClusterTrainingRuntime}
    namePath: .spec.runtimeRef.name
    clusterScoped: true
  structureDefinition:
    rootComponent:
      name: trainjob
      kind: {group: trainer.kubeflow.org, version: v1alpha1, kind: TrainJob}
      statusDefinition: {conditionsDefinition: {path: .status.conditions}, statusMappings: {completed: [{byConditions: [{type: Complete, status: "True"}]}]}}
    childComponents:
    - name: node
      ownerRef: trainjob
      specDefinition: {podTemplateSpecPath: '$runtime.spec.template.spec.replicatedJobs[]? | select(.name == "node") | .template.spec.template'}
      scaleDefinition: {replicasPath: '.spec.trainer.numNodes // 1'}
"#;
    let d = def(yaml);
    let o = Object::new(
        json!({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "t", "namespace": "ml"},
        "spec": {"runtimeRef": {"name": "torch"}, "trainer": {"numNodes": 4}}}),
    );
    let w = resolve_with(&d, &o, &Runtimes).unwrap();
    assert_eq!(w.gpus(&GpuPolicy::default()), 32.0);
    // Without the referenced object the variable is null and the component has no template.
    let w = resolve(&d, &o).unwrap();
    assert_eq!(w.gpus(&GpuPolicy::default()), 0.0);
}

#[test]
fn a_status_rule_that_spends_its_budget_is_reported_not_read_as_unmatched() {
    let d = def(r#"
apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: spin}
spec:
  structureDefinition:
    rootComponent:
      name: spin
      kind: {group: example.io, version: v1, kind: Spin}
      statusDefinition:
        phaseDefinition: {path: .status.phase}
        statusMappings:
          failed:
          - byExpression: {expression: 'last(repeat(.)) | length > 0', expectedResult: "true"}
          running:
          - byPhase: Running
"#);
    let o = Object::new(json!({"apiVersion": "example.io/v1", "kind": "Spin",
        "metadata": {"name": "s"}, "status": {"phase": "Running"}}));
    let s = status(&d, &o).expect("the status is still given");
    assert_eq!(s.phase, Phase::Running, "the other rules still decide");
    assert_eq!(s.failures.len(), 1);
    assert_eq!(
        (s.failures[0].status, s.failures[0].index),
        (Phase::Failed, 0)
    );
    assert!(
        s.failures[0].error.contains("budget"),
        "{}",
        s.failures[0].error
    );
    assert_eq!(s.reason.as_deref(), Some(RULE_FAILED));
    assert!(
        s.message
            .as_deref()
            .is_some_and(|m| m.starts_with("statusMappings.failed[0].byExpression: ")),
        "{:?}",
        s.message
    );
    // Without the failing rule, nothing is said.
    let fine = Object::new(json!({"apiVersion": "example.io/v1", "kind": "Spin",
        "metadata": {"name": "s"}, "status": {"phase": "Pending"}}));
    let d2 = def(r#"
apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: calm}
spec:
  structureDefinition:
    rootComponent:
      name: calm
      kind: {group: example.io, version: v1, kind: Spin}
      statusDefinition:
        phaseDefinition: {path: .status.phase}
        statusMappings:
          running:
          - byPhase: Running
"#);
    let s = status(&d2, &fine).expect("status");
    assert!(s.failures.is_empty() && s.reason.is_none(), "{s:?}");
}

#[test]
fn a_hostile_expression_ends_with_an_error_naming_definition_component_and_field() {
    let d = def(&MULTI.replace(
        "replicasPath: '.spec.roles[].count'",
        "replicasPath: '[.spec.roles[] | last(repeat(.count))]'",
    ));
    let o = Object::new(
        json!({"apiVersion": "example.io/v1", "kind": "Multi", "metadata": {"name": "m"}, "spec": {"roles": [{"name": "a", "count": 1}]}}),
    );
    let e = unreadable(&d, &o);
    assert!(
        e.contains("definition multi")
            && e.contains("component role")
            && e.contains("replicasPath")
            && e.contains("budget"),
        "{e}"
    );
}

#[test]
fn suspend_and_resume_use_the_definition_actions() {
    let yaml = r#"
apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: js}
spec:
  structureDefinition:
    rootComponent:
      name: js
      kind: {group: jobset.x-k8s.io, version: v1alpha2, kind: JobSet}
      statusDefinition: {conditionsDefinition: {path: .status.conditions}, statusMappings: {suspended: [{byConditions: [{type: Suspended, status: "True"}]}]}}
      suspendDefinition:
        suspendActions: [{path: .spec.suspend, value: "true"}]
        resumeActions: [{path: .spec.suspend, value: "false"}]
"#;
    let d = def(yaml);
    let mut o = json!({"spec": {"replicatedJobs": []}});
    suspend(&d, &mut o, true).unwrap();
    assert_eq!(o["spec"]["suspend"], true);
    suspend(&d, &mut o, false).unwrap();
    assert_eq!(o["spec"]["suspend"], false);
}

// ---- Round-trip properties of updates -----------------------------------------------------

const JOBSET: &str = r#"
apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: js}
spec:
  structureDefinition:
    rootComponent:
      name: js
      kind: {group: jobset.x-k8s.io, version: v1alpha2, kind: JobSet}
      statusDefinition: {phaseDefinition: {path: .status.phase}, statusMappings: {running: [{byPhase: Running}]}}
    childComponents:
    - name: rj
      ownerRef: js
      instanceIdPath: .spec.replicatedJobs[].name
      specDefinition: {podTemplateSpecPath: '.spec.replicatedJobs[].template.spec.template'}
      podSelector: {componentInstanceSelector: {idPath: '.metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"]'}}
"#;

fn arb_template() -> impl Strategy<Value = Value> {
    (
        proptest::option::of("[a-z-]{1,12}"),
        proptest::collection::btree_map("[a-z]{1,6}", "[a-z0-9]{0,6}", 0..3),
        proptest::option::of(proptest::collection::btree_map(
            "[a-z]{1,6}",
            "[a-z]{1,4}",
            0..2,
        )),
        any::<bool>(),
    )
        .prop_map(|(sched, labels, node_sel, with_meta)| {
            let mut spec = json!({"containers": [{"name": "c", "image": "img"}]});
            if let Some(s) = sched {
                spec["schedulerName"] = json!(s);
            }
            if let Some(ns) = node_sel {
                spec["nodeSelector"] = json!(ns);
            }
            let mut t = json!({"spec": spec});
            if with_meta {
                t["metadata"] = json!({"labels": labels});
            }
            t
        })
}

fn arb_jobset() -> impl Strategy<Value = Value> {
    proptest::collection::vec(arb_template(), 1..4).prop_map(|ts| {
        let rjs: Vec<Value> = ts.into_iter().enumerate().map(|(i, t)| json!({"name": format!("rj{i}"), "replicas": 1, "template": {"spec": {"parallelism": 1, "template": t}}})).collect();
        json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "x"}, "spec": {"replicatedJobs": rjs}, "status": {"phase": "Running"}})
    })
}

fn arb_update() -> impl Strategy<Value = PodUpdate> {
    (
        proptest::option::of("[a-z]{1,8}"),
        proptest::collection::btree_map("[a-z]{1,6}", "[a-z0-9]{0,6}", 0..3),
        proptest::collection::btree_map("[a-z]{1,6}", "[a-z]{1,4}", 0..2),
        proptest::option::of("[a-z]{1,8}"),
    )
        .prop_map(|(s, l, n, p)| PodUpdate {
            scheduler_name: s,
            labels: l,
            node_selector: n,
            priority_class_name: p,
            ..Default::default()
        })
}

/// Remove what an update may set, so the rest can be compared.
fn strip(mut v: Value, u: &PodUpdate, original: &Value) -> Value {
    let n = v["spec"]["replicatedJobs"]
        .as_array()
        .map(Vec::len)
        .unwrap_or(0);
    for i in 0..n {
        let t = &mut v["spec"]["replicatedJobs"][i]["template"]["spec"]["template"];
        let o = &original["spec"]["replicatedJobs"][i]["template"]["spec"]["template"];
        if u.scheduler_name.is_some() {
            restore(t, o, &["spec", "schedulerName"]);
        }
        if u.priority_class_name.is_some() {
            restore(t, o, &["spec", "priorityClassName"]);
        }
        for k in u.labels.keys() {
            restore(t, o, &["metadata", "labels", k]);
        }
        for k in u.node_selector.keys() {
            restore(t, o, &["spec", "nodeSelector", k]);
        }
        // Parents the update had to create are removed when they were absent before.
        for (parent, key) in [("metadata", "labels"), ("spec", "nodeSelector")] {
            if o.get(parent).and_then(|p| p.get(key)).is_none()
                && let Some(p) = t.get_mut(parent).and_then(Value::as_object_mut)
            {
                p.remove(key);
            }
        }
        if o.get("metadata").is_none()
            && let Some(m) = t.as_object_mut()
        {
            m.remove("metadata");
        }
    }
    v
}

/// A JSON null anywhere in the value (not the text `null`, which a label may spell).
fn has_null(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.iter().any(has_null),
        Value::Object(m) => m.values().any(has_null),
        _ => false,
    }
}

fn restore(t: &mut Value, o: &Value, path: &[&str]) {
    let (last, parents) = path.split_last().expect("non-empty");
    let mut at = t;
    for p in parents {
        match at.get_mut(*p) {
            Some(x) => at = x,
            None => return,
        }
    }
    let mut orig = o;
    for p in parents {
        orig = orig.get(*p).unwrap_or(&Value::Null);
    }
    match (at.as_object_mut(), orig.get(*last)) {
        (Some(m), Some(v)) => {
            m.insert((*last).to_string(), v.clone());
        }
        (Some(m), None) => {
            m.remove(*last);
        }
        _ => {}
    }
}

proptest! {
    #[test]
    fn an_update_changes_only_what_it_asks_and_is_idempotent(obj in arb_jobset(), u in arb_update()) {
        let d = def(JOBSET);
        let mut once = obj.clone();
        update(&d, &mut once, &Target::all(), &u).unwrap();
        let mut twice = once.clone();
        let r2 = update(&d, &mut twice, &Target::all(), &u).unwrap();
        prop_assert_eq!(&twice, &once);
        prop_assert!(r2.changed.is_empty());
        // The asked values are there.
        for rj in once["spec"]["replicatedJobs"].as_array().unwrap() {
            let t = &rj["template"]["spec"]["template"];
            if let Some(s) = &u.scheduler_name { prop_assert_eq!(&t["spec"]["schedulerName"], &json!(s)); }
            for (k, v) in &u.labels { prop_assert_eq!(&t["metadata"]["labels"][k], &json!(v)); }
        }
        // Nothing else changed and nothing was nulled.
        prop_assert_eq!(strip(once.clone(), &u, &obj), obj.clone());
        prop_assert!(!has_null(&once), "a null was written: {}", once);
    }

    #[test]
    fn an_update_with_the_current_values_is_a_byte_for_byte_no_op(obj in arb_jobset()) {
        let d = def(JOBSET);
        let t = &obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"];
        let u = PodUpdate {
            scheduler_name: t["spec"]["schedulerName"].as_str().map(String::from),
            labels: t["metadata"]["labels"].as_object().map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string())).collect()).unwrap_or_default(),
            ..Default::default()
        };
        let mut after = obj.clone();
        update(&d, &mut after, &Target { component: Some("rj".into()), instance: Some("rj0".into()) }, &u).unwrap();
        prop_assert_eq!(serde_json::to_string(&after).unwrap(), serde_json::to_string(&obj).unwrap());
    }
}

#[test]
fn an_update_can_target_one_instance() {
    let d = def(JOBSET);
    let mut o = json!({"spec": {"replicatedJobs": [{"name": "a", "template": {"spec": {"template": {"spec": {}}}}}, {"name": "b", "template": {"spec": {"template": {"spec": {}}}}}]}});
    let u = PodUpdate {
        scheduler_name: Some("kai".into()),
        ..Default::default()
    };
    update(
        &d,
        &mut o,
        &Target {
            component: Some("rj".into()),
            instance: Some("b".into()),
        },
        &u,
    )
    .unwrap();
    assert!(
        o["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
            .get("schedulerName")
            .is_none()
    );
    assert_eq!(
        o["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]["schedulerName"],
        "kai"
    );
    let e = update(&d, &mut o, &Target::component("nope"), &u)
        .unwrap_err()
        .to_string();
    assert!(e.contains("rj"), "{e}");
}

#[test]
fn updates_through_a_pod_spec_and_metadata_path() {
    let d = def(MULTI);
    let mut o = json!({"apiVersion": "example.io/v1", "kind": "Multi", "metadata": {"name": "m"},
        "spec": {"roles": [{"name": "a", "count": 1, "pod": {"containers": [{"name": "main", "image": "x"}, {"name": "side", "image": "y"}]}, "meta": {"labels": {"keep": "1"}}},
                           {"name": "b", "count": 1, "pod": {"containers": [{"name": "main", "image": "x"}]}, "meta": {}}]}});
    let u = PodUpdate {
        scheduler_name: Some("kai".into()),
        labels: [("team".to_string(), "ml".to_string())].into(),
        node_selector: [("gpu".to_string(), "h100".to_string())].into(),
        tolerations: vec![
            json!({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}),
        ],
        affinity: Some(
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}),
        ),
        resources: Some((
            Some("main".into()),
            json!({"limits": {"nvidia.com/gpu": "2"}}),
        )),
        ..Default::default()
    };
    update(&d, &mut o, &Target::all(), &u).unwrap();
    for role in o["spec"]["roles"].as_array().unwrap() {
        assert_eq!(role["pod"]["schedulerName"], "kai");
        assert_eq!(role["meta"]["labels"]["team"], "ml");
        assert_eq!(role["pod"]["nodeSelector"]["gpu"], "h100");
        assert_eq!(role["pod"]["tolerations"].as_array().unwrap().len(), 1);
        assert!(role["pod"]["affinity"]["nodeAffinity"].is_object());
        assert_eq!(
            role["pod"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
            "2"
        );
    }
    assert_eq!(
        o["spec"]["roles"][0]["meta"]["labels"]["keep"], "1",
        "existing labels are merged, not replaced"
    );
    assert!(
        o["spec"]["roles"][0]["pod"]["containers"][1]
            .get("resources")
            .is_none(),
        "only the named container"
    );
    // The tree now reads the new GPUs.
    let w = resolve(&d, &Object::new(o.clone())).unwrap();
    assert_eq!(w.gpus(&GpuPolicy::default()), 4.0);
    // Tolerations are added once.
    let before = o.clone();
    update(&d, &mut o, &Target::all(), &u).unwrap();
    assert_eq!(o, before);
    // A whole template replaces the one at the path (template shape).
    let js = def(JOBSET);
    let mut doc = json!({"spec": {"replicatedJobs": [{"name": "a", "template": {"spec": {"template": {"spec": {"containers": []}}}}}]}});
    let t = json!({"metadata": {"labels": {"x": "y"}}, "spec": {"containers": [{"name": "n", "image": "i"}]}});
    update(
        &js,
        &mut doc,
        &Target::all(),
        &PodUpdate {
            template: Some(t.clone()),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        doc["spec"]["replicatedJobs"][0]["template"]["spec"]["template"],
        t
    );
}

/// Found by the `definition` fuzz target (`testdata/scheduler-name-at-the-root.fuzz`, the
/// catalog's NIMService definition mutated): `schedulerNamePath: . // empty` designates the
/// whole object, and the update replaced the NIMService with the string "fuzz-scheduler".
/// A write never changes the kind of a value now, so it is an error that names the field and
/// the place, and the object is left as it was.
#[test]
fn fuzz_found_a_scheduler_name_path_at_the_whole_object_is_refused() {
    let text = include_str!("../testdata/scheduler-name-at-the-root.fuzz");
    let k = wlmap_schema::decode_one(text, "fuzz.yaml").expect("decodes");
    let d = Definition::compile(k, Origin::File).expect("compiles");
    let before = json!({"apiVersion": "apps.nvidia.com/v2alpha1", "kind": "NIMService",
        "metadata": {"name": "w", "namespace": "ns", "uid": "u"}});
    let mut o = before.clone();
    let u = PodUpdate {
        scheduler_name: Some("kai".into()),
        labels: [("team".to_string(), "x".to_string())].into(),
        ..Default::default()
    };
    let e = update(&d, &mut o, &Target::all(), &u)
        .unwrap_err()
        .to_string();
    assert!(e.contains("schedulerNamePath `. // empty`"), "{e}");
    assert!(
        e.contains("would replace an object at the whole object with a string"),
        "{e}"
    );
    assert_eq!(o, before, "nothing written, not even the labels before it");
}

/// Found by the `definition` fuzz target (`testdata/template-index-past-the-end.fuzz`, a seed
/// made of an `expression` corpus input): jq's `path(.ss[2][2]?[2]?)` on an object without
/// `ss` is `["ss", 2, 2, 2]`, an index past the end of lists that do not exist yet. The update
/// appended each entry instead, so it wrote at index 0, reported `/ss/2/2/2`, and appended
/// again on the next run: not idempotent. Padding with nulls would write nulls; so it is an
/// error that names the field, the place and the list, and nothing is written.
#[test]
fn fuzz_found_a_template_path_past_the_end_of_a_list_is_refused() {
    let e = refused_update(include_str!("../testdata/template-index-past-the-end.fuzz"));
    assert!(
        e.contains("index 2 is past the end of the list at /ss (0 entries)"),
        "{e}"
    );
    assert!(e.contains("component w"), "{e}");
}

/// The error of setting a scheduler name through a fuzz-found definition (root kind `g/v1`
/// `W`) on an object of its kind, which must write nothing.
fn refused_update(definition: &str) -> String {
    let k = wlmap_schema::decode_one(definition, "fuzz.yaml").expect("decodes");
    let d = Definition::compile(k, Origin::File).expect("compiles");
    let before = json!({"apiVersion": "g/v1", "kind": "W",
        "metadata": {"name": "w", "namespace": "ns", "uid": "u"}});
    let mut o = before.clone();
    let u = PodUpdate {
        scheduler_name: Some("kai".into()),
        ..Default::default()
    };
    let Err(e) = update(&d, &mut o, &Target::all(), &u) else {
        panic!("the update applied");
    };
    assert_eq!(o, before, "nothing written");
    e.to_string()
}

/// An index equal to a list's length appends the entry, and the next update finds it there
/// (idempotent); an index past the end, in an existing list or one the write would create,
/// is refused and writes nothing.
#[test]
fn a_write_may_append_to_a_list_but_never_pads_it() {
    let d = def(&ONE_ROOT.replace("SELECT", ".spec.roles[1].template"));
    let u = PodUpdate {
        scheduler_name: Some("kai".into()),
        ..Default::default()
    };
    let mut o = json!({"apiVersion": "example.io/v1", "kind": "W", "metadata": {"name": "w"},
        "spec": {"roles": [{"name": "a"}]}});
    let r = update(&d, &mut o, &Target::all(), &u).expect("appends");
    assert_eq!(r.changed, ["/spec/roles/1/template/spec/schedulerName"]);
    assert_eq!(
        o["spec"]["roles"],
        json!([{"name": "a"}, {"template": {"spec": {"schedulerName": "kai"}}}])
    );
    let again = update(&d, &mut o.clone(), &Target::all(), &u).expect("applies again");
    assert!(again.changed.is_empty(), "{:?}", again.changed);

    for before in [
        json!({"apiVersion": "example.io/v1", "kind": "W", "metadata": {"name": "w"}, "spec": {"roles": []}}),
        json!({"apiVersion": "example.io/v1", "kind": "W", "metadata": {"name": "w"}, "spec": {}}),
    ] {
        let mut o = before.clone();
        let e = update(&d, &mut o, &Target::all(), &u)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cannot write at /spec/roles/1/template/spec/schedulerName: index 1 is past the end of the list at /spec/roles (0 entries)"),
            "{e}"
        );
        assert_eq!(o, before, "nothing written");
    }
}

/// Found by the `definition` fuzz target (`testdata/template-path-made-of-the-document.fuzz`):
/// `podTemplateSpecPath: ."\(.):"` names a key made of the whole document, so each update
/// wrote under a new key, and the next update under another. An update whose paths are not
/// plain is applied a second time to check that it holds; this one does not, so it is an error
/// naming the component and what the second pass would write, and nothing is written.
#[test]
fn fuzz_found_a_template_path_that_reads_what_the_update_writes_is_refused() {
    let e = refused_update(include_str!(
        "../testdata/template-path-made-of-the-document.fuzz"
    ));
    assert!(e.starts_with("cannot update component w: its paths read what the update writes: applied again, the update would write /"), "{e}");
    assert!(
        e.ends_with("/spec/schedulerName again; nothing was written"),
        "{e}"
    );
}

/// A root component whose pod template is at `SELECT`.
const ONE_ROOT: &str = r#"
apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: one-root}
spec:
  structureDefinition:
    rootComponent:
      name: w
      kind: {group: example.io, version: v1, kind: W}
      specDefinition: {podTemplateSpecPath: 'SELECT'}
      statusDefinition: {phaseDefinition: {path: .status.phase}, statusMappings: {running: [{byPhase: Running}]}}
"#;

/// Computed paths that hold: a role chosen by its name, and roles chosen by the very field
/// the update writes (the second pass finds none left to write). Both apply, and again is a
/// no-op.
#[test]
fn computed_paths_that_hold_are_applied() {
    let u = PodUpdate {
        scheduler_name: Some("kai".into()),
        ..Default::default()
    };
    for select in [
        r#".spec.roles[] | select(.name == "b") | .template"#,
        r#".spec.roles[] | select(.template.spec.schedulerName != "kai") | .template"#,
    ] {
        let d = def(&ONE_ROOT.replace("SELECT", select));
        let e = wlmap_expr::Expr::compile(select).unwrap();
        assert_ne!(
            e.evaluator(),
            wlmap_expr::Evaluator::Plain,
            "{select} is checked by a second pass"
        );
        let mut o = json!({"apiVersion": "example.io/v1", "kind": "W", "metadata": {"name": "w"},
            "spec": {"roles": [{"name": "a", "template": {"spec": {"schedulerName": "kai"}}},
                               {"name": "b", "template": {"spec": {}}}]}});
        let r = update(&d, &mut o, &Target::all(), &u).expect(select);
        assert_eq!(
            r.changed,
            ["/spec/roles/1/template/spec/schedulerName"],
            "{select}"
        );
        assert_eq!(r.templates, 1, "{select}");
        let again = update(&d, &mut o, &Target::all(), &u).expect(select);
        assert!(again.changed.is_empty(), "{select}: {:?}", again.changed);
    }
}

/// Found by replaying the `definition` corpus under AddressSanitizer (
/// `testdata/status-path-421-factors.fuzz`): a conditions path that multiplies 421 numbers
/// overflowed the stack while it was evaluated, which aborts the process. Syntax nested past
/// `wlmap_expr::MAX_SYNTAX_DEPTH` is refused when the definition compiles, naming the field.
#[test]
fn fuzz_found_an_expression_nested_too_deeply_is_refused_when_compiled() {
    let text = include_str!("../testdata/status-path-421-factors.fuzz");
    let k = wlmap_schema::decode_one(text, "fuzz.yaml").expect("decodes");
    let e = Definition::compile(k, Origin::File)
        .unwrap_err()
        .to_string();
    assert!(e.contains("nests too deeply"), "{e}");
    assert!(e.contains("path: the expression nests too deeply"), "{e}");
}

/// A path through a value of another kind (labels that are a string) is an error, not a
/// replacement of that value with an object; and an update that fails writes nothing, though
/// the first role's labels were written before the second role's failed.
#[test]
fn an_update_never_changes_a_values_kind_and_a_failed_one_writes_nothing() {
    let d = def(MULTI);
    let before = json!({"apiVersion": "example.io/v1", "kind": "Multi", "metadata": {"name": "m"},
        "spec": {"roles": [{"name": "a", "count": 1, "pod": {"containers": [{"name": "main"}]}, "meta": {}},
                           {"name": "b", "count": 1, "pod": {"containers": [{"name": "main"}]}, "meta": {"labels": "team=x"}}]}});
    let mut o = before.clone();
    let u = PodUpdate {
        labels: [("team".to_string(), "ml".to_string())].into(),
        ..Default::default()
    };
    let e = update(&d, &mut o, &Target::all(), &u)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(
            "writing /spec/roles/1/meta/labels/team would replace a string at /spec/roles/1/meta/labels with an object"
        ),
        "{e}"
    );
    assert_eq!(o, before);
    // The same at the leaf: a scheduler name where the pod spec has a number.
    let mut o =
        json!({"spec": {"roles": [{"name": "a", "pod": {"schedulerName": 7}, "meta": {}}]}});
    let sched = PodUpdate {
        scheduler_name: Some("kai".into()),
        ..Default::default()
    };
    let e = update(&d, &mut o, &Target::all(), &sched)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("would replace a number at /spec/roles/0/pod/schedulerName with a string"),
        "{e}"
    );
    // A later error (no container named "side" in role b) undoes role a's write too.
    let mut o = before.clone();
    o["spec"]["roles"][1]["meta"] = json!({});
    o["spec"]["roles"][0]["pod"]["containers"][0]["name"] = json!("side");
    let start = o.clone();
    let res = PodUpdate {
        resources: Some((
            Some("side".into()),
            json!({"limits": {"nvidia.com/gpu": "1"}}),
        )),
        ..Default::default()
    };
    let e = update(&d, &mut o, &Target::all(), &res)
        .unwrap_err()
        .to_string();
    assert!(e.contains("no container named \"side\""), "{e}");
    assert_eq!(o, start);
    // Null and missing parents are still created.
    let mut o = json!({"spec": {"roles": [{"name": "a", "pod": null, "meta": {"labels": null}}]}});
    update(&d, &mut o, &Target::all(), &sched).unwrap();
    update(&d, &mut o, &Target::all(), &u).unwrap();
    assert_eq!(o["spec"]["roles"][0]["pod"]["schedulerName"], "kai");
    assert_eq!(o["spec"]["roles"][0]["meta"]["labels"]["team"], "ml");
}

#[test]
fn no_gang_groups_come_from_a_partial_tree() {
    let d = def(r#"
apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: pair}
spec:
  structureDefinition:
    rootComponent:
      name: pair
      kind: {group: example.io, version: v1, kind: Pair}
      statusDefinition: {phaseDefinition: {path: .status.phase}, statusMappings: {running: [{byPhase: Running}]}}
    childComponents:
    - name: worker
      kind: {group: "", version: v1, kind: Pod}
      ownerRef: pair
      specDefinition: {podTemplateSpecPath: .spec.template}
      scaleDefinition: {replicasPath: '.spec.replicas * .spec.parallelism'}
  optimizationInstructions:
    gangScheduling:
      podGroup: {name: gang}
"#);
    let o = Object::new(
        json!({"apiVersion": "example.io/v1", "kind": "Pair", "metadata": {"name": "p"},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c"}]}}}}),
    );
    let w = resolve(&d, &o).expect("a partial answer");
    assert_eq!(w.unreadable().len(), 1);
    let e = gangs(&d, &w, None).unwrap_err().to_string();
    assert!(
        e.contains("no gang groups from a partial tree") && e.contains("worker"),
        "{e}"
    );
    // With the field set, the same definition groups the pods.
    let fine = Object::new(
        json!({"apiVersion": "example.io/v1", "kind": "Pair", "metadata": {"name": "p"},
        "spec": {"replicas": 2, "parallelism": 1, "template": {"spec": {"containers": [{"name": "c"}]}}}}),
    );
    let w = resolve(&d, &fine).expect("resolves");
    assert_eq!(gangs(&d, &w, None).expect("groups")[0].min_member, 2);
}

/// `instancesPath` (wlmap extension): the sub-group covers the instances it names; the pods
/// of the others are in no group; an expression that fails gives no groups, and says why.
#[test]
fn a_sub_group_covers_the_instances_its_instances_path_names() {
    let d = def(r#"
apiVersion: run.ai/v1alpha1
kind: Karta
metadata: {name: steps}
spec:
  structureDefinition:
    rootComponent:
      name: flow
      kind: {group: example.io, version: v1, kind: Flow}
      statusDefinition: {phaseDefinition: {path: .status.phase}, statusMappings: {running: [{byPhase: Running}]}}
    childComponents:
    - name: step
      kind: {group: "", version: v1, kind: Pod}
      ownerRef: flow
      instanceIdPath: .spec.steps[].name
      specDefinition: {podTemplateSpecPath: '.spec.steps[].template'}
      scaleDefinition: {replicasPath: '.spec.steps[].pods'}
      podSelector: {componentInstanceSelector: {idPath: .metadata.labels.step}}
  optimizationInstructions:
    gangScheduling:
      podGroup:
        name: gang
        subGroups:
        - componentName: step
          instancesPath: .spec.gang.steps[]
"#);
    let step = |name: &str, pods: u64| json!({"name": name, "pods": pods, "template": {"spec": {"containers": [{"name": "c"}]}}});
    let flow = |gang: Value| {
        Object::new(json!({"apiVersion": "example.io/v1", "kind": "Flow",
            "metadata": {"name": "f", "namespace": "ml", "uid": "f1"},
            "spec": {"gang": gang, "steps": [step("prepare", 1), step("train", 4)]}}))
    };
    let pod = |name: &str, step: &str| {
        Object::new(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml", "labels": {"step": step},
                "ownerReferences": [{"apiVersion": "example.io/v1", "kind": "Flow", "name": "f", "uid": "f1", "controller": true}]},
            "spec": {"containers": [{"name": "c"}]}}))
    };
    let o = flow(json!({"steps": ["train"]}));
    let pods = [
        pod("prep-0", "prepare"),
        pod("train-0", "train"),
        pod("train-1", "train"),
    ];
    let mut w = resolve(&d, &o).expect("resolves");
    attribute(&d, &mut w, &o, &pods).expect("attributes");
    let g = &gangs(&d, &w, Some(&pods)).expect("groups")[0];
    assert_eq!(g.min_member, 4);
    assert_eq!(g.sub_groups.len(), 1, "{g:?}");
    assert_eq!(g.sub_groups[0].component, "step[train]");
    assert_eq!(
        g.members,
        ["train-0", "train-1"],
        "the step left out is in no group"
    );
    // Selecting no instance gives a group of none, not one of the whole workload.
    let w = resolve(&d, &flow(json!({"steps": []}))).expect("resolves");
    assert_eq!(gangs(&d, &w, None).expect("groups")[0].min_member, 0);
    // An expression that fails leaves the workload readable, and gives no groups.
    let w = resolve(&d, &flow(json!(5))).expect("resolves");
    assert_eq!(w.root.desired_pods, 5);
    let e = gangs(&d, &w, None).unwrap_err().to_string();
    assert!(
        e.contains("instancesPath failed") && e.contains("step"),
        "{e}"
    );
}

/// A broken expression is named by its place and located inside itself, wherever the
/// definition came from (a file gives the expression's own line too; a Karta sent to the
/// webhook gives only this).
#[test]
fn a_broken_expression_is_named_by_its_place_and_located_inside_it() {
    let yaml = "apiVersion: run.ai/v1alpha1\nkind: Karta\nmetadata: {name: x}\nspec:\n  structureDefinition:\n    rootComponent:\n      name: w\n      kind: {group: a.io, version: v1, kind: X}\n      statusDefinition:\n        statusMappings:\n          running:\n          - byExpression: {expression: 'true', expectedResult: 'true'}\n          - byExpression:\n              expression: |-\n                .status.ready > 0\n                and (.status.x +)\n              expectedResult: 'true'\n";
    let karta = wlmap_schema::decode(yaml, "x.yaml")
        .expect("decodes")
        .remove(0);
    let err = Definition::compile(karta, wlmap_engine::Origin::Catalog)
        .expect_err("the second expression does not parse")
        .to_string();
    assert!(
        err.contains("component w: statusMappings.running[1].byExpression.expression: "),
        "{err}"
    );
    assert!(err.contains("at line 2, column "), "{err}");
}

/// What grouping reads of a pod: the placement's places and the `podGroups` keys' and
/// filters' (a filter on the pod's phase makes the phase a place that matters); a filter that
/// may read any part of the pod leaves nothing to compare (`None`).
#[test]
fn pod_gang_reads_name_what_the_keys_and_filters_read() {
    let member = |extra: &str| {
        format!(
            "{LWS}  optimizationInstructions:\n    gangScheduling:\n      podGroups:\n      - name: group\n        members:\n        - componentName: group\n          groupByKeyPaths: ['.metadata.labels[\"leaderworkerset.sigs.k8s.io/group-index\"]']\n{extra}"
        )
    };
    let keyed = def(&member(""));
    let placement = keyed.pod_placement_reads().expect("named places").to_vec();
    let reads = keyed.pod_gang_reads().expect("named places");
    let group_index: Vec<String> = [
        "metadata",
        "labels",
        "leaderworkerset.sigs.k8s.io/group-index",
    ]
    .map(String::from)
    .to_vec();
    assert!(reads.contains(&group_index), "{reads:?}");
    assert!(placement.iter().all(|p| reads.contains(p)), "{reads:?}");
    let on_phase = def(&member(
        "          filters: ['.status.phase == \"Running\"']\n",
    ));
    let phase: Vec<String> = ["status", "phase"].map(String::from).to_vec();
    assert!(on_phase.pod_gang_reads().expect("named").contains(&phase));
    assert!(!reads.contains(&phase));
    let anything = def(&member("          filters: ['tostring | test(\"gpu\")']\n"));
    assert_eq!(anything.pod_gang_reads(), None);
}
