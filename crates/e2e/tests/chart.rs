//! The Helm chart (`charts/wlmap`): `helm lint` and `helm template` (helm v4 built by
//! testbed/build.sh), its CRD equal to the generated one, its values schema enforced, and the
//! controller run outside the testbed with exactly the ServiceAccount and RBAC the chart
//! renders, so a missing permission fails the test. Run through
//! `WLMAP_TESTBED_SCHEDULING=1 testbed/with-testbed.sh cargo test -p wlmap-e2e --test chart -- --include-ignored`
//! (scripts/test.sh does).

use serde_json::{Value, json};
use std::path::PathBuf;
use wlmap_e2e::{Testbed, gpu_container};

fn chart() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../charts/wlmap")
}

fn helm(args: &[&str]) -> std::process::Output {
    let bin =
        std::env::var("WLMAP_TESTBED_BIN").expect("WLMAP_TESTBED_BIN (testbed/with-testbed.sh)");
    wlmap_e2e::run(&format!("{bin}/helm"), args, None)
}

/// `helm template` of the chart with these `--set` values: the documents, parsed.
fn render(release_ns: &str, set: &[&str]) -> Vec<Value> {
    let path = chart();
    let mut args = vec![
        "template",
        "wlmap",
        path.to_str().expect("utf8"),
        "-n",
        release_ns,
        "--include-crds",
    ];
    for s in set {
        args.extend(["--set", s]);
    }
    let o = helm(&args);
    assert!(
        o.status.success(),
        "helm template: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    wlmap_schema::decode_objects(&text, "rendered").expect("rendered YAML")
}

/// The resource name of a kind as Kubernetes' code generators make it (k8s.io/gengo's
/// pluralizer: a kind ending in s, x, z, ch or sh takes -es; a consonant and y, -ies).
fn plural(kind: &str) -> String {
    let k = kind.to_lowercase();
    if ["s", "x", "z", "ch", "sh"].iter().any(|e| k.ends_with(e)) {
        return format!("{k}es");
    }
    let before_y = k.strip_suffix('y');
    match before_y {
        Some(stem) if !stem.ends_with(['a', 'e', 'i', 'o', 'u']) => format!("{stem}ies"),
        _ => format!("{k}s"),
    }
}

/// The chart's read role lets the controller list and watch every kind the catalog's
/// definitions need (their roots, the kinds they create that may own pods, the kinds they read
/// as references): one kind it may not list keeps the live inventory from being listed at
/// all, and no gang object is written.
#[test]
#[ignore = "needs the testbed's helm (see the file's doc)"]
fn the_read_role_covers_every_kind_the_catalog_watches() {
    let docs = render("wlmap-system", &[]);
    let role = docs
        .iter()
        .find(|d| {
            d["kind"] == "ClusterRole"
                && d["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.ends_with("-read"))
        })
        .expect("the read ClusterRole");
    let mut granted = std::collections::BTreeSet::new();
    for rule in role["rules"].as_array().into_iter().flatten() {
        let verbs: Vec<&str> = rule["verbs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if !(verbs.contains(&"list") && verbs.contains(&"watch")) {
            continue;
        }
        for g in rule["apiGroups"].as_array().into_iter().flatten() {
            for r in rule["resources"].as_array().into_iter().flatten() {
                granted.insert((
                    g.as_str().unwrap_or("").to_string(),
                    r.as_str().unwrap_or("").to_string(),
                ));
            }
        }
    }
    let reg = wlmap_catalog::registry().expect("catalog");
    let roots: Vec<_> = reg.iter().map(|d| d.root_gvk()).collect();
    let mut kinds = wlmap_inventory::kinds_to_watch(&reg, &roots);
    kinds.extend(wlmap_inventory::referenced_kinds(&reg, &roots));
    let missing: Vec<String> = kinds
        .into_iter()
        .map(|k| (k.group.clone(), plural(&k.kind)))
        .filter(|gr| !granted.contains(gr))
        .map(|(g, r)| format!("{r}.{g}"))
        .collect();
    assert!(missing.is_empty(), "not granted: {missing:?}");
    assert_eq!(plural("Milvus"), "milvuses");
    assert_eq!(plural("Sandbox"), "sandboxes");
    assert_eq!(plural("Policy"), "policies");
    assert_eq!(plural("Gateway"), "gateways");
}

#[test]
#[ignore = "needs the testbed's helm (see the file's doc)"]
fn the_chart_lints_renders_and_refuses_bad_values() {
    let path = chart();
    let path = path.to_str().expect("utf8");
    for set in [
        &[][..],
        &[
            "webhook.certManager.enabled=true",
            "serviceMonitor.enabled=true",
        ],
    ] {
        let mut args = vec!["lint", path, "--strict"];
        for s in set {
            args.extend(["--set", s]);
        }
        let o = helm(&args);
        wlmap_e2e::stdout_of(&format!("helm lint {set:?}"), &o, 0);
    }
    // The CRD the chart installs is the one generated from the types.
    let docs = render("wlmap-system", &[]);
    let crd = docs
        .iter()
        .find(|d| d["kind"] == "CustomResourceDefinition")
        .expect("the CRD");
    let generated = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../schema/crd/kartas.run.ai.yaml"),
    )
    .expect("CRD");
    let generated = &wlmap_schema::decode_objects(&generated, "crd").expect("CRD")[0];
    assert_eq!(crd, generated, "charts/wlmap/crds is the generated CRD");
    // The controller runs non-root, read-only, with probes.
    let deploy = docs
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("Deployment");
    let pod = &deploy["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true, "{pod}");
    let c = &pod["containers"][0];
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true, "{c}");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz", "{c}");
    assert!(docs.iter().any(|d| d["kind"] == "PodDisruptionBudget"));
    // Without cert-manager the controller writes its webhook configurations; with it, the
    // chart does, with the CA injector's annotation.
    assert!(
        !docs
            .iter()
            .any(|d| d["kind"] == "MutatingWebhookConfiguration")
    );
    let cm = render("wlmap-system", &["webhook.certManager.enabled=true"]);
    let mwc = cm
        .iter()
        .find(|d| d["kind"] == "MutatingWebhookConfiguration")
        .expect("MWC");
    assert_eq!(
        mwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
        "wlmap-system/wlmap-webhook"
    );
    assert!(cm.iter().any(|d| d["kind"] == "Certificate"));
    // The chart's webhooks are those the controller keeps itself, but for how they are
    // reached: the same rules, selectors, match conditions and failure policy.
    let endpoint = wlmap_controller::Endpoint::Service {
        namespace: "wlmap-system".into(),
        name: "wlmap-webhook".into(),
        port: 443,
    };
    use wlmap_controller::registration::{karta_webhook_config, webhook_config};
    use wlmap_engine::SchedulerFormat;
    let without_client = |c: &Value| -> Vec<Value> {
        let hooks = c["webhooks"].as_array().expect("webhooks");
        hooks
            .iter()
            .map(|h| {
                let mut h = h.clone();
                h.as_object_mut().expect("a webhook").remove("clientConfig");
                h
            })
            .collect()
    };
    let kind_in = |docs: &[Value], kind: &Value| -> Value {
        docs.iter()
            .find(|d| &d["kind"] == kind)
            .unwrap_or_else(|| panic!("the chart's {kind}"))
            .clone()
    };
    let own = karta_webhook_config("wlmap", &endpoint, "PEM");
    assert_eq!(
        without_client(&kind_in(&cm, &own["kind"])),
        without_client(&own)
    );
    // The pod webhooks, for each scheduler the chart takes: the second one's match condition
    // is the scheduler's own test of a grouped pod.
    for format in [
        SchedulerFormat::Native,
        SchedulerFormat::NativeComposite,
        SchedulerFormat::Coscheduling,
        SchedulerFormat::Volcano,
        SchedulerFormat::Kueue,
    ] {
        let name = format.format().name();
        let chart = render(
            "wlmap-system",
            &[
                "webhook.certManager.enabled=true",
                &format!("scheduler={name}"),
            ],
        );
        let own = webhook_config("wlmap", &endpoint, "wlmap-system", "PEM", format);
        let hooks = without_client(&kind_in(&chart, &own["kind"]));
        assert_eq!(hooks.len(), 2, "{name}");
        assert_eq!(hooks, without_client(&own), "{name}");
    }
    // The values schema refuses what the controller would not accept.
    // The hierarchical form writes three kinds, and may write no more.
    let composite = render("wlmap-system", &["scheduler=native-composite"]);
    let write = composite
        .iter()
        .find(|d| d["kind"] == "ClusterRole" && d["metadata"]["name"] == "wlmap-write")
        .expect("the write ClusterRole");
    assert_eq!(
        write["rules"][0]["apiGroups"],
        serde_json::json!(["scheduling.k8s.io"])
    );
    assert_eq!(
        write["rules"][0]["resources"],
        serde_json::json!(["podgroups", "compositepodgroups", "workloads"])
    );
    let o = helm(&["template", "wlmap", path, "--set", "scheduler=kai"]);
    assert!(!o.status.success(), "an unknown scheduler is refused");
    let o = helm(&["template", "wlmap", path, "--set", "replicas=3"]);
    assert!(!o.status.success(), "an unknown value is refused");
}

/// The controller as the chart's ServiceAccount, with the chart's RBAC and nothing more: it
/// lists and watches, leads, writes a PodGroup, puts pods in their group, labels Kartas, and
/// never meets a refusal; with `scheduler=native-composite`, it writes the hierarchical form's
/// Workload, CompositePodGroup and PodGroups as well.
#[test]
#[ignore = "needs the scheduling testbed (see the file's doc)"]
fn the_controller_needs_no_more_than_the_chart_grants() {
    let tb = Testbed::from_env();
    tb.apply_file(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../schema/crd/kartas.run.ai.yaml"),
    );
    wlmap_e2e::require_operator("jobset");
    tb.wait_established(&["crd/kartas.run.ai"]);
    let ctl = controller_as_the_chart(&tb, "wlmap-rbac", "native");
    jobset_grouped(&tb, "ctl-rbac", "r-gang");
    let karta = json!({"apiVersion": "run.ai/v1alpha1", "kind": "Karta", "metadata": {"name": "rbac-check"},
        "spec": {"structureDefinition": {"rootComponent": {"name": "w",
            "kind": {"group": "example.io", "version": "v1", "kind": "Thing"},
            "specDefinition": {"podTemplateSpecPath": ".spec.template"},
            "statusDefinition": {"phaseDefinition": {"path": ".status.phase"},
                "statusMappings": {"running": [{"byPhase": "Running"}]}}}}}});
    tb.kubectl(&["apply", "-f", "-"], Some(&karta.to_string()));
    tb.wait_for("the Karta labelled and judged", 60, || {
        let k = tb.get_json(&["get", "karta", "rbac-check"]);
        k["metadata"]["labels"]["run.ai/karta-kind"] == "Thing"
            && !k["status"]["conditions"].is_null()
    });
    tb.kubectl(&["delete", "karta", "rbac-check"], None);
    let log = ctl.log();
    assert!(
        !log.to_lowercase().contains("forbidden"),
        "a permission the chart does not grant:\n{log}"
    );
    drop(ctl);

    let ctl = controller_as_the_chart(&tb, "wlmap-rbac-composite", "native-composite");
    jobset_grouped(&tb, "ctl-rbac-composite", "r-gang-replicatedjob-w");
    let parent = tb.get_json(&[
        "get",
        "compositepodgroups.scheduling.k8s.io/r-gang",
        "-n",
        "ctl-rbac-composite",
    ]);
    assert_eq!(
        parent["spec"]["schedulingPolicy"]["gang"]["minGroupCount"],
        1
    );
    let log = ctl.log();
    assert!(
        !log.to_lowercase().contains("forbidden"),
        "a permission the chart does not grant:\n{log}"
    );
}

/// The chart's ServiceAccount and RBAC for this scheduler, applied in `ns`, and a controller
/// running as that ServiceAccount, leading.
fn controller_as_the_chart(tb: &Testbed, ns: &str, scheduler: &str) -> wlmap_e2e::Controller {
    tb.namespace(ns);
    const RBAC: [&str; 5] = [
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
    ];
    for d in render(ns, &[&format!("scheduler={scheduler}")])
        .into_iter()
        .filter(|d| RBAC.contains(&d["kind"].as_str().unwrap_or("")))
    {
        tb.kubectl(&["apply", "-f", "-"], Some(&d.to_string()));
    }
    let token = tb.kubectl(
        &["create", "token", "wlmap", "-n", ns, "--duration=1h"],
        None,
    );
    let kubeconfig = tb.kubeconfig_with_token(token.trim(), &format!("{ns}.kubeconfig"));
    let ctl = wlmap_e2e::Controller::start_as(
        tb,
        &kubeconfig,
        ns,
        ns,
        "wlmap",
        &["--lease-name", "wlmap", "--scheduler", scheduler],
    );
    tb.wait_for("the ServiceAccount's controller leads", 60, || {
        ctl.metric("wlmap_controller_leader") == 1.0
    });
    ctl
}

/// A JobSet of two workers in `wns`, its Jobs made by the real JobSet controller: each pod is
/// put in the group `group`, which the controller wrote.
fn jobset_grouped(tb: &Testbed, wns: &str, group: &str) {
    tb.namespace(wns);
    let jobset = json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": "r", "namespace": wns},
        "spec": {"replicatedJobs": [{"name": "w", "replicas": 2, "template": {"spec": {
            "parallelism": 1, "completions": 1, "template": {"spec": {"restartPolicy": "OnFailure",
                "nodeSelector": {"wlmap.test/pool": "ctlrbac"}, "containers": [gpu_container(1)]}}}}}]}});
    tb.kubectl(&["create", "-f", "-"], Some(&jobset.to_string()));
    tb.wait_for("its PodGroup", 60, || {
        tb.names("podgroups.scheduling.k8s.io", wns).contains(group)
    });
    tb.wait_for("the pods, in their group", 60, || {
        let ps = tb.pods(wns);
        ps.len() == 2
            && ps
                .iter()
                .all(|p| p["spec"]["schedulingGroup"]["podGroupName"] == group)
    });
}

fn promtool(args: &[&str], stdin: Option<&str>) -> std::process::Output {
    let bin =
        std::env::var("WLMAP_TESTBED_BIN").expect("WLMAP_TESTBED_BIN (testbed/with-testbed.sh)");
    wlmap_e2e::run(&format!("{bin}/promtool"), args, stdin)
}

fn ok(o: &std::process::Output, what: &str) {
    wlmap_e2e::stdout_of(what, o, 0);
}

/// The metric names an expression reads (`wlmap_...` families, recorded `a:b:c` names, DCGM's).
fn metric_names(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in expr.chars().chain([' ']) {
        if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
            word.push(c);
            continue;
        }
        let w = std::mem::take(&mut word);
        let is_metric = w.starts_with("wlmap_") || w.contains(":wlmap_") || w.starts_with("DCGM_");
        if is_metric && !out.contains(&w) {
            out.push(w);
        }
    }
    out
}

#[test]
#[ignore = "needs the testbed's promtool and helm (see the file's doc)"]
fn the_rules_dashboard_and_metrics_hold_under_promtool() {
    let rules = chart().join("rules");
    let rules_file = rules.join("wlmap.rules.yaml");
    let rules_path = rules_file.to_str().expect("utf8");
    ok(
        &promtool(&["check", "rules", rules_path], None),
        "promtool check rules",
    );
    // The recording rules compute what their unit test expects (run from the rules' folder,
    // where the test file names them).
    let test = std::process::Command::new(format!(
        "{}/promtool",
        std::env::var("WLMAP_TESTBED_BIN").expect("WLMAP_TESTBED_BIN")
    ))
    .args(["test", "rules", "wlmap.rules.test.yaml"])
    .current_dir(&rules)
    .output()
    .expect("promtool test rules");
    ok(&test, "promtool test rules");

    // What `wlmap --demo serve` exports passes promtool's exposition lint.
    let served = wlmap_e2e::served::Served::start(&wlmap_e2e::wlmap_bin(), &["--demo"], &[]);
    let exposition = served.get("/metrics").body;
    ok(
        &promtool(&["check", "metrics"], Some(&exposition)),
        "promtool check metrics",
    );

    // Every expression of the dashboard parses, and reads only families that exist: exported
    // by wlmap, recorded by the rules, or DCGM's.
    let recorded: Vec<String> = std::fs::read_to_string(&rules_file)
        .expect("rules")
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- record: ").map(String::from))
        .collect();
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(chart().join("dashboards/wlmap-workloads.json"))
            .expect("dashboard"),
    )
    .expect("dashboard JSON");
    let mut exprs: Vec<String> = dashboard["panels"]
        .as_array()
        .expect("panels")
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| t["expr"].as_str().map(String::from))
        .collect();
    assert!(exprs.len() >= 8, "{exprs:?}");
    let mut as_rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, e) in exprs.iter().enumerate() {
        // Grafana's variables are not PromQL: give them a value as Grafana would.
        let e = e.replace("$namespace", ".*");
        as_rules.push_str(&format!(
            "      - record: dashboard_expr_{i}\n        expr: {}\n",
            serde_json::to_string(&e).expect("json string")
        ));
    }
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("dashboard.rules.yaml");
    std::fs::write(&file, as_rules).expect("write");
    ok(
        &promtool(&["check", "rules", file.to_str().expect("utf8")], None),
        "the dashboard's expressions",
    );
    exprs.push(
        dashboard["templating"]["list"][1]["definition"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    );
    for e in &exprs {
        for m in metric_names(e) {
            let exported = exposition.contains(&format!("# TYPE {m} gauge"));
            assert!(
                exported || recorded.contains(&m) || m.starts_with("DCGM_"),
                "{m} (in {e}) is neither exported nor recorded"
            );
        }
    }

    // The chart ships both: the PrometheusRule is the rules file, the ConfigMap the dashboard.
    let docs = render(
        "wlmap-system",
        &[
            "prometheusRule.enabled=true",
            "grafanaDashboard.enabled=true",
        ],
    );
    let rule = docs
        .iter()
        .find(|d| d["kind"] == "PrometheusRule")
        .expect("PrometheusRule");
    let file: Value = serde_saphyr::from_str(&std::fs::read_to_string(&rules_file).expect("rules"))
        .expect("rules YAML");
    assert_eq!(rule["spec"]["groups"], file["groups"]);
    let cm = docs
        .iter()
        .find(|d| d["kind"] == "ConfigMap" && d["metadata"]["labels"]["grafana_dashboard"] == "1")
        .expect("dashboard ConfigMap");
    let shipped: Value = serde_json::from_str(
        cm["data"]["wlmap-workloads.json"]
            .as_str()
            .expect("dashboard data"),
    )
    .expect("JSON");
    assert_eq!(shipped, dashboard);
}
