//! End to end against a real kube-apiserver (testbed/). Run through
//! `testbed/with-testbed.sh cargo test -p wlmap-e2e -- --include-ignored` (scripts/test.sh does).
//! One ordered scenario, because the phases share one API server (the kartas CRD is absent at
//! first, then installed).

use serde_json::Value;
use std::collections::BTreeMap;
use wlmap_e2e::{Testbed, fixtures, json, operator_crds, testbed_crds};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Node paths of every pod in a describe view (`name[instance]#replica`, root = "").
fn placements(v: &Value) -> BTreeMap<String, String> {
    fn walk(n: &Value, prefix: Option<String>, out: &mut BTreeMap<String, String>) {
        let mut seg = n["name"].as_str().unwrap_or("").to_string();
        if let Some(i) = n["instance"].as_str() {
            seg.push_str(&format!("[{i}]"));
        }
        if let Some(r) = n["replica"].as_str() {
            seg.push_str(&format!("#{r}"));
        }
        let path = match &prefix {
            None => String::new(),
            Some(p) if p.is_empty() => seg,
            Some(p) => format!("{p}/{seg}"),
        };
        for p in n["pods"].as_array().into_iter().flatten() {
            out.insert(p["name"].as_str().unwrap_or("").to_string(), path.clone());
        }
        for c in n["components"].as_array().into_iter().flatten() {
            walk(c, Some(path.clone()), out);
        }
    }
    let mut out = BTreeMap::new();
    walk(&v["components"][0], None, &mut out);
    out
}

fn expected(rel: &str) -> Value {
    let text =
        std::fs::read_to_string(fixtures().join(rel).join("expected.yaml")).expect("expected.yaml");
    serde_saphyr::from_str(&text).expect("yaml")
}

#[test]
#[ignore = "needs the testbed: testbed/with-testbed.sh cargo test -p wlmap-e2e -- --include-ignored"]
fn against_a_real_api_server() {
    let tb = Testbed::from_env();

    // Phase 1: framework CRDs (so pruning and validation are real): the operators' own, from
    // their modules (scheduler-plugins' PodGroup among them), and the KAI and Volcano
    // PodGroups from testbed/crds (their modules are not served: written from their types).
    for e in std::fs::read_dir(testbed_crds())
        .expect("crds")
        .filter_map(|e| e.ok())
    {
        tb.apply_file(&e.path());
    }
    let operators = [
        "jobset",
        "lws",
        "kuberay",
        "training-operator",
        "trainer",
        "scheduler-plugins",
    ];
    for crd in operators.into_iter().flat_map(operator_crds) {
        tb.apply_server_side(&crd);
    }
    tb.wait_established(&["crd", "--all"]);

    // Phase 2: no kartas.run.ai CRD yet: one warning, then the catalog.
    let o = tb.wlmap(&["get", "jobsets", "-A"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stderr(&o)
            .matches("kartas.run.ai CRD is not installed")
            .count(),
        1,
        "{}",
        stderr(&o)
    );

    // Phase 3: workloads as their controllers leave them.
    let cases = [
        (
            "jobset-x-k8s-io-jobset-v1alpha2/leader-workers",
            "jobset/llm-train",
            "ml",
        ),
        (
            "leaderworkerset-x-k8s-io-leaderworkerset-v1/two-groups",
            "leaderworkerset/qwen-72b",
            "serving",
        ),
        (
            "ray-io-raycluster-v1/two-worker-groups",
            "raycluster/raycluster-multi",
            "ml",
        ),
        (
            "kubeflow-org-pytorchjob-v1/running",
            "pytorchjob/bert-finetune",
            "kubeflow",
        ),
        (
            "apps-deployment-v1/running",
            "deployment/qwen-chat",
            "serving",
        ),
    ];
    for (rel, _, _) in &cases {
        tb.load_fixture(rel);
    }

    // Phase 4: the story. The API server shows a JobSet, three Jobs and three Pods, no total...
    let raw: Value = serde_json::from_str(&tb.kubectl(
        &["get", "jobsets,jobs,pods", "-n", "ml", "-o", "json"],
        None,
    ))
    .expect("json");
    let count = |kind: &str| {
        raw["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter(|i| {
                i["kind"] == kind
                    && i["metadata"]["name"]
                        .as_str()
                        .unwrap_or("")
                        .starts_with("llm-train")
            })
            .count()
    };
    assert_eq!((count("JobSet"), count("Job"), count("Pod")), (1, 3, 3));
    // ...wlmap shows one workload asking for 12 GPUs.
    let v = json(&tb.wlmap(&["get", "--all-types", "-n", "ml", "-o", "json"]));
    let items = v["items"].as_array().expect("items");
    let mine: Vec<&Value> = items
        .iter()
        .filter(|i| i["name"].as_str().unwrap_or("").starts_with("llm-train"))
        .collect();
    assert_eq!(mine.len(), 1, "{items:?}");
    assert_eq!(mine[0]["kind"], "JobSet");
    assert_eq!(mine[0]["resources"]["gpus"], 12.0);
    assert_eq!(mine[0]["pods"]["ready"], 3);
    assert!(
        items
            .iter()
            .all(|i| i["kind"] != "Job" && i["kind"] != "Pod"),
        "{items:?}"
    );

    // Phase 5: every covered framework reads as its fixture says, pods placed.
    for (rel, target, ns) in &cases {
        let want = expected(rel);
        let v = json(&tb.wlmap(&["describe", target, "-n", ns, "-o", "json"]));
        assert_eq!(
            v["pods"]["desired"].as_f64(),
            want["desiredPods"].as_f64(),
            "{rel} desired"
        );
        assert_eq!(
            v["resources"]["gpus"].as_f64(),
            want["gpus"].as_f64(),
            "{rel} gpus"
        );
        assert_eq!(
            v["pods"]["observed"].as_f64(),
            want["observedPods"].as_f64(),
            "{rel} observed"
        );
        assert_eq!(
            v["status"]["phase"], want["status"]["phase"],
            "{rel} status"
        );
        let want_pods: BTreeMap<String, String> = want["pods"]
            .as_object()
            .expect("pods")
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
            .collect();
        assert_eq!(placements(&v), want_pods, "{rel} placement");
        assert_eq!(
            v["unattributedPods"], want["unattributed"],
            "{rel} unattributed"
        );
    }

    // Phase 6: definitions in the cluster. Our CRD installs, every catalog definition loads
    // into it without losing a field, a new kind is one Karta away, and a cluster definition
    // overrides the built-in one.
    tb.apply_file(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../schema/crd/kartas.run.ai.yaml"),
    );
    tb.wait_established(&["crd/kartas.run.ai"]);
    let defs_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../catalog/definitions");
    for e in std::fs::read_dir(&defs_dir)
        .expect("defs")
        .filter_map(|e| e.ok())
    {
        let text = std::fs::read_to_string(e.path()).expect("read");
        let local: Value = serde_saphyr::from_str(&text).expect("yaml");
        let name = local["metadata"]["name"]
            .as_str()
            .expect("name")
            .to_string();
        tb.kubectl(&["apply", "-f", "-"], Some(&local.to_string()));
        let back: Value =
            serde_json::from_str(&tb.kubectl(&["get", "karta", &name, "-o", "json"], None))
                .expect("json");
        assert_eq!(
            back["spec"], local["spec"],
            "{name}: the API server pruned or changed the definition"
        );
    }
    tb.kubectl(&["delete", "kartas", "--all"], None);
    let widget_crd = r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.io"},"spec":{"group":"example.io","names":{"kind":"Widget","plural":"widgets","singular":"widget"},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}"#;
    tb.kubectl(&["apply", "-f", "-"], Some(widget_crd));
    tb.wait_established(&["crd/widgets.example.io"]);
    let o = tb.wlmap(&["get", "widgets", "-n", "ml"]);
    assert_eq!(
        o.status.code(),
        Some(4),
        "no definition yet: {}",
        stderr(&o)
    );
    let widget_karta = r#"{"apiVersion":"run.ai/v1alpha1","kind":"Karta","metadata":{"name":"example-io-widget-v1"},"spec":{"structureDefinition":{"rootComponent":{"name":"widget","kind":{"group":"example.io","version":"v1","kind":"Widget"},"specDefinition":{"podTemplateSpecPath":".spec.template"},"scaleDefinition":{"replicasPath":".spec.count"},"statusDefinition":{"phaseDefinition":{"path":".status.phase"},"statusMappings":{"running":[{"byPhase":"Up"}]}}}}}}"#;
    tb.kubectl(&["apply", "-f", "-"], Some(widget_karta));
    tb.kubectl(&["apply", "-f", "-"], Some(r#"{"apiVersion":"example.io/v1","kind":"Widget","metadata":{"name":"w1","namespace":"ml"},"spec":{"count":2,"template":{"spec":{"containers":[{"name":"c","image":"x","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}}}"#));
    tb.kubectl(
        &[
            "patch",
            "widget.example.io/w1",
            "-n",
            "ml",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Up"}}"#,
        ],
        None,
    );
    let v = json(&tb.wlmap(&["get", "widgets", "-n", "ml", "-o", "json"]));
    assert_eq!(v["items"][0]["status"]["phase"], "Running");
    assert_eq!(v["items"][0]["resources"]["gpus"], 2.0);
    assert_eq!(v["items"][0]["definition"]["origin"], "cluster");
    let override_job = r#"{"apiVersion":"run.ai/v1alpha1","kind":"Karta","metadata":{"name":"my-deployments"},"spec":{"structureDefinition":{"rootComponent":{"name":"deployment","kind":{"group":"apps","version":"v1","kind":"Deployment"},"specDefinition":{"podTemplateSpecPath":".spec.template"},"scaleDefinition":{"replicasPath":".spec.replicas"},"statusDefinition":{"statusMappings":{"degraded":[{"byExpression":{"expression":"true","expectedResult":"true"}}]}}}}}}"#;
    tb.kubectl(&["apply", "-f", "-"], Some(override_job));
    let v = json(&tb.wlmap(&["get", "deployment/qwen-chat", "-n", "serving", "-o", "json"]));
    assert_eq!(v["items"][0]["definition"]["name"], "my-deployments");
    assert_eq!(v["items"][0]["definition"]["origin"], "cluster");
    assert_eq!(v["items"][0]["status"]["phase"], "Degraded");
    let d = json(&tb.wlmap(&["definitions", "-o", "json"]));
    assert!(
        d["items"]
            .as_array()
            .expect("items")
            .iter()
            .any(|k| k["metadata"]["name"] == "example-io-widget-v1")
    );

    // Phase 7: set updates every pod template; a concurrent writer's change survives. (That
    // the two writes overlap for certain, and the stale one is refused and redone, is shown in
    // faults.rs, where the proxy holds set's write while the other client writes.)
    let writer = {
        let kubectl = tb.kubectl.clone();
        let kc = tb.kubeconfig.clone();
        std::thread::spawn(move || {
            for i in 0..8 {
                let _ = wlmap_e2e::run(
                    &kubectl,
                    &[
                        "--kubeconfig",
                        &kc,
                        "label",
                        "jobset/llm-train",
                        "-n",
                        "ml",
                        &format!("writer-{i}=yes"),
                    ],
                    None,
                );
            }
        })
    };
    let set = |flags: &[&str]| {
        let mut args = vec!["set", "jobset/llm-train", "-n", "ml"];
        args.extend_from_slice(flags);
        let o = tb.wlmap(&args);
        assert!(o.status.success(), "{}", stderr(&o));
    };
    for i in 0..4 {
        set(&[
            "--scheduler-name",
            "kai-scheduler",
            "--annotation",
            &format!("round={i}"),
        ]);
    }
    writer.join().expect("writer");
    let js: Value = serde_json::from_str(
        &tb.kubectl(&["get", "jobset/llm-train", "-n", "ml", "-o", "json"], None),
    )
    .expect("json");
    for rj in js["spec"]["replicatedJobs"].as_array().expect("rjs") {
        assert_eq!(
            rj["template"]["spec"]["template"]["spec"]["schedulerName"],
            "kai-scheduler"
        );
        assert_eq!(
            rj["template"]["spec"]["template"]["metadata"]["annotations"]["round"],
            "3"
        );
    }
    for i in 0..8 {
        assert_eq!(
            js["metadata"]["labels"][format!("writer-{i}")],
            "yes",
            "the other writer's label {i} was lost"
        );
    }
    let resource_version = || {
        tb.kubectl(
            &[
                "get",
                "jobset/llm-train",
                "-n",
                "ml",
                "-o",
                "jsonpath={.metadata.resourceVersion}",
            ],
            None,
        )
    };
    let before = resource_version();
    set(&["--scheduler-name", "other", "--dry-run=server"]);
    let after = resource_version();
    assert_eq!(before, after, "a server dry run must not change the object");

    // Phase 8: what `wlmap gang --format F` prints is applied as it is, JSON (a List) and
    // YAML (documents, pod tags in comments), with the schedulers' CRDs (installed with the
    // framework CRDs from testbed/crds/schedulers) and, for `native`, the v1.37 PodGroup the
    // testbed serves. The `workload` format writes the v1.35 alpha Workload
    // (scheduling.k8s.io/v1alpha1), which v1.37 no longer serves: golden files only.
    for (format, resource) in [
        ("kai", "podgroups.scheduling.run.ai"),
        ("coscheduling", "podgroups.scheduling.x-k8s.io"),
        ("volcano", "podgroups.scheduling.volcano.sh"),
        ("native", "podgroups.scheduling.k8s.io"),
    ] {
        let args = [
            "gang",
            "leaderworkerset/qwen-72b",
            "-n",
            "serving",
            "--format",
            format,
        ];
        let o = tb.wlmap(&[&args[..], &["-o", "json"]].concat());
        let list = json(&o);
        assert_eq!(list["kind"], "List", "{format}");
        let count = list["items"].as_array().map_or(0, Vec::len);
        assert!(count > 0, "{format}: no objects");
        tb.kubectl(
            &["apply", "-f", "-"],
            Some(&String::from_utf8_lossy(&o.stdout)),
        );
        let yaml = tb.wlmap(&args);
        assert!(yaml.status.success(), "{}", stderr(&yaml));
        let yaml = String::from_utf8_lossy(&yaml.stdout).into_owned();
        assert!(
            yaml.contains("# pod "),
            "{format}: pod tags in comments:\n{yaml}"
        );
        tb.kubectl(&["apply", "-f", "-"], Some(&yaml));
        let listed: Value = serde_json::from_str(
            &tb.kubectl(&["get", resource, "-n", "serving", "-o", "json"], None),
        )
        .expect("json");
        assert_eq!(
            listed["items"].as_array().map(Vec::len),
            Some(count),
            "{format}: applied twice, held once"
        );
        let owner = &listed["items"][0]["metadata"]["ownerReferences"][0];
        assert_eq!(
            owner["kind"], "LeaderWorkerSet",
            "{format}: groups are owned by the workload"
        );
    }

    // The hierarchical form of the JobSet's gang (leader and workers): the Workload, the
    // CompositePodGroup and a PodGroup per role, applied as printed, the roles under the parent.
    let args = [
        "gang",
        "jobset/llm-train",
        "-n",
        "ml",
        "--format",
        "native-composite",
    ];
    let o = tb.wlmap(&[&args[..], &["-o", "json"]].concat());
    let kinds: Vec<String> = json(&o)["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["kind"].as_str().map(String::from))
        .collect();
    assert_eq!(
        kinds,
        ["Workload", "CompositePodGroup", "PodGroup", "PodGroup"]
    );
    tb.kubectl(
        &["apply", "-f", "-"],
        Some(&String::from_utf8_lossy(&o.stdout)),
    );
    let yaml = tb.wlmap(&args);
    assert!(yaml.status.success(), "{}", stderr(&yaml));
    tb.kubectl(
        &["apply", "-f", "-"],
        Some(&String::from_utf8_lossy(&yaml.stdout)),
    );
    let parent = tb.get_json(&[
        "get",
        "compositepodgroups.scheduling.k8s.io/llm-train-gang",
        "-n",
        "ml",
    ]);
    assert_eq!(
        parent["spec"]["schedulingPolicy"]["gang"]["minGroupCount"], 2,
        "{parent}"
    );
    let roles = tb.get_json(&["get", "podgroups.scheduling.k8s.io", "-n", "ml"]);
    let under: Vec<&Value> = roles["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|g| g["spec"]["parentCompositePodGroupName"] == "llm-train-gang")
        .collect();
    assert_eq!(under.len(), 2, "{roles}");

    // Phase 9: requests stay few: a cluster-wide view is discovery + definitions + one
    // (paginated) LIST per kind, whatever the number of workloads; a describe is one GET plus
    // a constant number of LISTs (the kinds its definition creates, pods, DRA claims, and the
    // gang objects' kinds the server serves).
    let requests = |args: &[&str]| -> u64 {
        let o = tb.wlmap(&[&["-v"], args].concat());
        assert!(o.status.success(), "{}", stderr(&o));
        let err = stderr(&o);
        let line = err
            .lines()
            .find(|l| l.contains("API request(s)"))
            .unwrap_or_else(|| panic!("no request count: {err}"));
        line.split_whitespace()
            .nth(1)
            .and_then(|n| n.parse().ok())
            .expect("count")
    };
    let before = requests(&["get", "-A", "--all-types", "-o", "json"]);
    tb.load_fixture("batch-job-v1/completed");
    let after = requests(&["get", "-A", "--all-types", "-o", "json"]);
    assert_eq!(
        before, after,
        "one more workload must not mean more requests"
    );
    let describe = requests(&["describe", "jobset/llm-train", "-n", "ml", "-o", "json"]);
    assert!(describe <= 16, "describe used {describe} requests");

    // Phase 10: failure paths.
    let o = tb.wlmap_restricted(&["get", "jobsets", "-n", "team-a"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stderr(&o)
            .matches("not allowed to list kartas.run.ai")
            .count(),
        1,
        "{}",
        stderr(&o)
    );
    let o = tb.wlmap_restricted(&["get", "jobsets", "-n", "ml"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("forbidden"), "{}", stderr(&o));
    let o = tb.wlmap(&["describe", "jobset/nope", "-n", "ml"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let o = tb.wlmap(&["get", "frobnicators", "-n", "ml"]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    // Errors, verbose ones included, never carry credentials: no part of the kubeconfigs'
    // client keys or certificates appears in what wlmap prints when a request fails.
    let secrets: Vec<String> = [&tb.kubeconfig, &tb.restricted]
        .iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).expect("kubeconfig");
            text.lines()
                .filter_map(|l| l.trim().split_once(": "))
                .filter(|(k, _)| *k == "client-key-data" || *k == "client-certificate-data")
                .map(|(_, v)| v.trim().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(
        secrets.len(),
        4,
        "both kubeconfigs carry a client key and certificate"
    );
    for args in [
        &["-v", "get", "jobsets", "-n", "ml"][..],
        &["-v", "describe", "jobset/nope", "-n", "ml"][..],
    ] {
        for o in [tb.wlmap_restricted(args), tb.wlmap(args)] {
            let printed = format!("{}{}", stderr(&o), String::from_utf8_lossy(&o.stdout));
            for s in &secrets {
                assert!(
                    !printed.contains(&s[..40.min(s.len())]) && !printed.contains("PRIVATE KEY"),
                    "credentials in the output of {args:?}"
                );
            }
        }
    }
}
