//! The controller's decisions without a cluster: what to write for a workload, how a pod is
//! tagged, and a webhook certificate a client verifies against the controller's own CA.

use base64::Engine;
use serde_json::{Value, json};
use wlmap_controller::admission::{answer, patch};
use wlmap_controller::gangs::{Action, desired, plan};
use wlmap_engine::{Object, SchedulerFormat};

fn ours(name: &str, owner_uid: &str, spec: Value) -> Value {
    json!({"metadata": {"name": name, "uid": format!("uid-{name}"),
        "labels": {"app.kubernetes.io/managed-by": "wlmap"},
        "ownerReferences": [{"uid": owner_uid}]}, "spec": spec})
}

fn want(name: &str, owner_uid: &str, spec: Value) -> Value {
    json!({"metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "wlmap"},
        "ownerReferences": [{"uid": owner_uid, "controller": true}]}, "spec": spec})
}

#[test]
fn plan_writes_only_what_differs_and_deletes_only_its_own() {
    let gang = |n: u64| json!({"schedulingPolicy": {"gang": {"minCount": n}}});
    let a = want("w-a", "w1", gang(3));
    let one = std::slice::from_ref(&a);
    // Missing: applied.
    assert_eq!(plan(one, &[], "w1"), vec![Action::Apply(a.clone())]);
    // There, with a field the server defaulted: nothing to do.
    let mut defaulted = ours("w-a", "w1", gang(3));
    defaulted["spec"]["priorityClassName"] = json!("default");
    assert_eq!(plan(one, &[defaulted], "w1"), vec![]);
    // There with another count (the workload scaled): applied again.
    assert_eq!(
        plan(one, &[ours("w-a", "w1", gang(2))], "w1"),
        vec![Action::Apply(a.clone())]
    );
    // Someone else's object of that name: left alone.
    let mut theirs = ours("w-a", "other", gang(3));
    theirs["metadata"]["labels"] = json!({});
    assert_eq!(
        plan(one, &[theirs], "w1"),
        vec![Action::Conflict { name: "w-a".into() }]
    );
    // Ours and this workload's but no longer wanted: deleted by uid; another workload's and
    // one already being deleted are kept.
    let mut going = ours("w-c", "w1", gang(1));
    going["metadata"]["deletionTimestamp"] = json!("2026-12-02T00:00:00Z");
    let existing = [
        ours("w-a", "w1", gang(3)),
        ours("w-b", "w1", gang(1)),
        ours("x-b", "w2", gang(1)),
        going,
    ];
    assert_eq!(
        plan(&[a], &existing, "w1"),
        vec![Action::Delete {
            name: "w-b".into(),
            uid: "uid-w-b".into()
        }]
    );
}

/// The objects of the hierarchical form as the API server returns them (its unset optional
/// fields as `null`, defaults filled in) already hold what is wanted: nothing is written again
/// at every reconcile; a role scaled is.
#[test]
fn objects_as_the_server_returns_them_are_not_written_again() {
    let workload = json!({"kind": "Workload", "metadata": {"name": "t-gang",
        "labels": {"app.kubernetes.io/managed-by": "wlmap"}, "ownerReferences": [{"uid": "w1"}]},
        "spec": {"controllerRef": {"apiGroup": "jobset.x-k8s.io", "kind": "JobSet", "name": "t"},
            "compositePodGroupTemplates": [{"name": "t-gang",
                "schedulingPolicy": {"gang": {"minGroupCount": 2}},
                "podGroupTemplates": [
                    {"name": "t-gang-a", "schedulingPolicy": {"gang": {"minCount": 1}}},
                    {"name": "t-gang-b", "schedulingPolicy": {"gang": {"minCount": 2}}}]}]}});
    let mut served = workload.clone();
    served["metadata"]["uid"] = json!("u1");
    served["spec"]["podGroupTemplates"] = Value::Null;
    for t in served["spec"]["compositePodGroupTemplates"][0]["podGroupTemplates"]
        .as_array_mut()
        .expect("templates")
    {
        t["schedulingConstraints"] = Value::Null;
    }
    assert_eq!(
        plan(
            std::slice::from_ref(&workload),
            std::slice::from_ref(&served),
            "w1"
        ),
        vec![]
    );
    let mut scaled = workload;
    scaled["spec"]["compositePodGroupTemplates"][0]["podGroupTemplates"][1]["schedulingPolicy"]["gang"]
        ["minCount"] = json!(3);
    assert_eq!(
        plan(&[scaled.clone()], &[served], "w1"),
        vec![Action::Apply(scaled)]
    );
}

/// The catalog's JobSet fixture of a leader and two workers: one group of 3 in each format,
/// owned by the JobSet, marked as wlmap's.
#[test]
fn desired_objects_of_a_jobset_in_each_format() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../catalog/fixtures/jobset-x-k8s-io-jobset-v1alpha2/leader-workers/objects.yaml");
    let text = std::fs::read_to_string(path).expect("fixture");
    let objects: Vec<Object> = wlmap_schema::decode_objects(&text, "ml")
        .expect("decodes")
        .into_iter()
        .map(Object::new)
        .collect();
    let root = objects
        .iter()
        .find(|o| o.kind() == "JobSet")
        .expect("JobSet");
    let pods: Vec<Object> = objects.iter().filter(|o| o.is_pod()).cloned().collect();
    let reg = wlmap_catalog::registry().expect("catalog");
    let def = reg.for_kind(&root.gvk()).expect("definition");
    // Resolved with its Jobs and pods held, as the controller's inventory has it.
    let index = wlmap_inventory::Index::new(reg.clone(), objects.clone());
    let w = index
        .evaluate(&wlmap_inventory::ObjectKey::of(root), None)
        .expect("held")
        .result
        .expect("resolves");
    let count = |o: &Value| {
        o["spec"]["schedulingPolicy"]["gang"]["minCount"]
            .as_u64()
            .or(o["spec"]["minMember"].as_u64())
    };
    // Kueue manages the pods of a workload that names a queue: its pods carry the queue.
    let mut queued = root.json().clone();
    queued["metadata"]["labels"][wlmap_engine::KUEUE_QUEUE_LABEL] = json!("team");
    let queued = Object::new(queued);
    for format in SchedulerFormat::controller_formats() {
        // With or without its pods, the same single group: the spec predicts it.
        for with in [&pods[..], &[]] {
            if format == SchedulerFormat::Kueue {
                // No objects: each pod is tied to its group by labels only, once it names a queue.
                let want = desired(def, &w, &queued, with, format).expect("renders");
                assert_eq!((want.objects.len(), want.members.len()), (0, with.len()));
                let unqueued = desired(def, &w, root, with, format).expect("renders");
                assert!(unqueued.members.is_empty(), "no queue, no pod group");
                continue;
            }
            let want = desired(def, &w, root, with, format).expect("renders");
            // With the pods: each is held by a group (none is left to be scheduled alone).
            assert_eq!(want.members.len(), with.len(), "{format:?}");
            let objs = want.objects;
            if format == SchedulerFormat::NativeComposite {
                hierarchical_jobset(&objs, root, !with.is_empty());
                continue;
            }
            assert_eq!(objs.len(), 1, "{format:?}: {objs:#?}");
            let o = &objs[0];
            assert_eq!(o["metadata"]["name"], "llm-train-gang", "{format:?}");
            // The recorded pods were created without wlmap: none names the group, and none
            // ever can, so the group does not wait for them (its minimum of 3 is lowered by
            // the three, to no less than 1).
            let min = if with.is_empty() { 3 } else { 1 };
            assert_eq!(count(o), Some(min), "{format:?}: {o}");
            assert_eq!(o["metadata"]["ownerReferences"][0]["uid"], root.uid());
            assert!(wlmap_controller::gangs::is_ours(o), "{format:?}");
        }
    }
}

/// The hierarchical form of the leader-and-workers JobSet: its Workload and CompositePodGroup
/// needing both roles, and a PodGroup per role (1 leader, 2 workers) under it. With the
/// recorded pods, created without wlmap, each role's minimum is lowered by its pods outside
/// it (workers 2 - 2, to no less than 1), in the PodGroup and in the Workload's template.
fn hierarchical_jobset(objs: &[Value], root: &Object, lowered: bool) {
    let kinds: Vec<&str> = objs.iter().filter_map(|o| o["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        ["Workload", "CompositePodGroup", "PodGroup", "PodGroup"]
    );
    assert_eq!(objs[1]["metadata"]["name"], "llm-train-gang");
    assert_eq!(
        objs[1]["spec"]["schedulingPolicy"]["gang"]["minGroupCount"],
        2
    );
    let leaves: Vec<(&str, u64)> = objs[2..]
        .iter()
        .map(|o| {
            assert_eq!(o["spec"]["parentCompositePodGroupName"], "llm-train-gang");
            (
                o["metadata"]["name"].as_str().unwrap_or(""),
                o["spec"]["schedulingPolicy"]["gang"]["minCount"]
                    .as_u64()
                    .unwrap_or(0),
            )
        })
        .collect();
    let workers = if lowered { 1 } else { 2 };
    assert_eq!(
        leaves,
        [
            ("llm-train-gang-replicatedjob-leader", 1),
            ("llm-train-gang-replicatedjob-workers", workers)
        ]
    );
    let templates: Vec<u64> = objs[0]["spec"]["compositePodGroupTemplates"][0]["podGroupTemplates"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["schedulingPolicy"]["gang"]["minCount"].as_u64())
        .collect();
    assert_eq!(templates, [1, workers], "{}", objs[0]);
    for o in objs {
        assert_eq!(o["metadata"]["ownerReferences"][0]["uid"], root.uid());
        assert!(wlmap_controller::gangs::is_ours(o));
    }
}

#[test]
fn patch_adds_to_what_the_pod_has() {
    let pod = json!({"metadata": {"labels": {"app": "x"}}, "spec": {"containers": []}});
    let tags = json!({"labels": {"scheduling.x-k8s.io/pod-group": "g"},
        "spec": {"schedulingGroup": {"podGroupName": "g"}}});
    assert_eq!(
        patch(&pod, &tags),
        json!([
            {"op": "add", "path": "/metadata/labels/scheduling.x-k8s.io~1pod-group", "value": "g"},
            {"op": "add", "path": "/spec/schedulingGroup", "value": {"podGroupName": "g"}}
        ])
    );
    // The answer carries it base64-encoded, as the API server reads it.
    let review = json!({"request": {"uid": "r1"}});
    let a = answer(&review, Some(&patch(&pod, &tags)), None);
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(a["response"]["patch"].as_str().expect("patch"))
        .expect("base64");
    let back: Value = serde_json::from_slice(&bytes).expect("JSON");
    assert_eq!(back, patch(&pod, &tags));
    assert_eq!(a["response"]["patchType"], "JSONPatch");
    assert_eq!(a["response"]["uid"], "r1");
}

/// The serving certificate is signed by the CA the webhook configuration carries: a TLS
/// client trusting only that CA completes a handshake with the server for the IP it names,
/// and one trusting another CA does not.
#[tokio::test]
async fn a_client_trusting_the_ca_bundle_accepts_the_serving_certificate() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::rustls;
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    let ca = wlmap_controller::tls::Authority::generate().expect("CA");
    let serving = ca.serving(&["127.0.0.1".into()]).expect("serving");
    let server = wlmap_controller::tls::server_config(&serving.cert_pem, &serving.key_pem)
        .expect("server config");
    let handshake = |trusted: &str| {
        let mut roots = rustls::RootCertStore::empty();
        for c in rustls::pki_types::CertificateDer::pem_slice_iter(trusted.as_bytes()) {
            roots.add(c.expect("pem")).expect("root");
        }
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        let (a, b) = tokio::io::duplex(1 << 16);
        let acceptor = tokio_rustls::TlsAcceptor::from(server.clone());
        let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(client));
        async move {
            let srv = tokio::spawn(async move {
                let mut s = acceptor.accept(b).await.ok()?;
                s.write_all(b"ok").await.ok()?;
                s.flush().await.ok()
            });
            let name = rustls::pki_types::ServerName::try_from("127.0.0.1").expect("name");
            let result = match connector.connect(name, a).await {
                Ok(mut c) => {
                    let mut buf = [0u8; 2];
                    c.read_exact(&mut buf)
                        .await
                        .map(|_| buf == *b"ok")
                        .unwrap_or(false)
                }
                Err(_) => false,
            };
            let _ = srv.await;
            result
        }
    };
    assert!(
        handshake(&ca.cert_pem).await,
        "the CA bundle verifies the serving certificate"
    );
    let other = wlmap_controller::tls::Authority::generate().expect("another CA");
    assert!(!handshake(&other.cert_pem).await, "another CA does not");
}
