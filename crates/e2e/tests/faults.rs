//! Cluster faults against the real API server, through `testbed/faultproxy`: throttling (429),
//! server errors, an expired continue token (410), slow answers, a dropped connection, and the
//! API server restarted in the middle of a paginated listing. wlmap retries with backoff and a
//! bound, says plainly when the bound is hit, never prints a partial list as complete, and never
//! prints credentials.
//!
//! Runs after `e2e.rs` (test binaries run one at a time) in its own namespace.

use serde_json::Value;
use std::collections::BTreeSet;
use wlmap_e2e::{FaultProxy, Testbed};

const PODS: usize = 1_050; // three pages of 500

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The stderr of a run that had to fail (exit 1) without printing a partial answer.
fn failed(o: &std::process::Output) -> String {
    assert_eq!(o.status.code(), Some(1), "{}", stderr(o));
    assert!(o.stdout.is_empty(), "no partial output");
    stderr(o)
}

/// The pod names of a successful `get pods -o json`, checking there are no duplicates.
fn names(o: &std::process::Output) -> BTreeSet<String> {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        stderr(o)
    );
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    let items = v["items"].as_array().expect("items");
    let names: BTreeSet<String> = items
        .iter()
        .map(|i| i["name"].as_str().expect("name").to_string())
        .collect();
    assert_eq!(names.len(), items.len(), "duplicates in the listing");
    names
}

#[test]
#[ignore = "needs the testbed: testbed/with-testbed.sh cargo test -p wlmap-e2e --test faults -- --include-ignored"]
fn cluster_faults_are_retried_bounded_and_never_partial() {
    let tb = Testbed::from_env();
    let Some(proxy) = FaultProxy::start(&tb) else {
        panic!("the testbed did not build testbed/faultproxy (see its logs)");
    };
    // 1,050 bare pods (Pending: no scheduler runs), so a LIST takes three pages.
    tb.kubectl(&["create", "namespace", "faults"], None);
    let items: Vec<Value> = (0..PODS)
        .map(|i| {
            serde_json::json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("p-{i:04}"), "namespace": "faults"},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}})
        })
        .collect();
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
    tb.kubectl(&["create", "-f", "-"], Some(&list.to_string()));
    let get = ["get", "pods", "-n", "faults", "-o", "json"];
    let all = names(&proxy.wlmap(&get));
    assert_eq!(all.len(), PODS);
    let pages = |log: &[String]| {
        log.iter()
            .filter(|l| l.contains("/namespaces/faults/pods?") && l.ends_with("-> 200"))
            .count()
    };
    let log = proxy.log();
    assert_eq!(pages(&log), 3, "paginated by 500: {log:#?}");

    // Brief throttling and server errors: retried, complete.
    for kind in ["429", "503"] {
        proxy.reset();
        proxy.arm(kind, 3, false, 0);
        assert_eq!(names(&proxy.wlmap(&get)), all, "{kind}");
        let log = proxy.log();
        assert_eq!(
            log.iter().filter(|l| l.contains("(injected)")).count(),
            3,
            "{log:#?}"
        );
    }

    // Persistent throttling: a bounded number of attempts, a plain error, nothing on stdout.
    proxy.reset();
    proxy.arm("429", -1, false, 0);
    let err = failed(&proxy.wlmap(&get));
    assert!(err.contains("429"), "{err}");
    assert!(err.contains("gave up after 8 attempts"), "{err}");
    let attempts = proxy.log().len();
    // Discovery is two requests per attempt (/api, /apis); eight attempts at most.
    assert!(attempts <= 16, "{attempts} requests for one failing call");

    // A continue token that expired mid-listing: the listing restarts once, complete.
    proxy.reset();
    proxy.arm("410", 1, true, 0);
    assert_eq!(names(&proxy.wlmap(&get)), all);
    let log = proxy.log();
    let restarted = log
        .iter()
        .skip_while(|l| !l.contains("-> 410"))
        .any(|l| l.contains("/pods?limit=500 ") || l.ends_with("/pods?limit=500 -> 200"));
    assert!(
        restarted,
        "the listing starts again from the first page: {log:#?}"
    );
    // Always expired: an error, not the first page shown as everything.
    proxy.reset();
    proxy.arm("410", -1, true, 0);
    let err = failed(&proxy.wlmap(&get));
    assert!(err.contains("410"), "{err}");

    // Slow answers: a request that outlives --request-timeout is retried; always slow gives up.
    proxy.reset();
    proxy.arm("delay", 1, true, 4_000);
    let slow = [&["--request-timeout", "2"], &get[..]].concat();
    assert_eq!(names(&proxy.wlmap(&slow)), all);
    proxy.reset();
    proxy.arm("delay", -1, false, 4_000);
    let err = failed(&proxy.wlmap(&slow));
    assert!(err.contains("no answer within 2s"), "{err}");
    assert!(err.contains("gave up after"), "{err}");

    // A connection dropped in the middle of the listing: retried, complete.
    proxy.reset();
    proxy.arm("drop", 1, true, 0);
    assert_eq!(names(&proxy.wlmap(&get)), all);

    // The API server restarted while a listing is between pages: the proxy holds the request
    // for the second page; the test stops the server, lets the request go on (it meets a
    // server that is down: 502 from the proxy), and starts the server again, which still
    // honours the continue token (same etcd). The listing completes. Each step waits for the
    // one before it, so no timing decides the outcome.
    proxy.reset();
    proxy.arm("hold", 1, true, 0);
    let child = proxy.spawn_wlmap(&get);
    proxy.wait_for_log(&["continue=", "-> held"]);
    tb.stop_api_server();
    proxy.release();
    proxy.wait_for_log(&["continue=", "-> 502"]);
    tb.start_api_server();
    let o = child.wait_with_output().expect("wlmap");
    assert_eq!(names(&o), all, "complete after the restart");
    let log = proxy.log();
    let held = log.iter().position(|l| l.ends_with("-> held"));
    let down = log
        .iter()
        .position(|l| l.contains("continue=") && l.ends_with("-> 502"));
    assert!(
        held.is_some_and(|h| log[h].contains("continue=")) && held < down,
        "the page after the first was held, then met the server down: {log:#?}"
    );

    // Two writers, overlapping for certain: `wlmap set` has read the Deployment and its write
    // is held at the proxy while another client labels the Deployment. The held write carries
    // the resourceVersion it read, so the API server refuses it (409); wlmap reads the fresh
    // object and writes again. Both changes are kept.
    let deploy = serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "serve", "namespace": "faults"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "serve"}},
            "template": {"metadata": {"labels": {"app": "serve"}},
                "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}});
    tb.kubectl(&["create", "-f", "-"], Some(&deploy.to_string()));
    proxy.reset();
    proxy.arm_method("hold", 1, "PUT");
    let set = [
        "set",
        "deployment/serve",
        "-n",
        "faults",
        "--scheduler-name",
        "kai-scheduler",
    ];
    let child = proxy.spawn_wlmap(&set);
    proxy.wait_for_log(&["PUT ", "-> held"]);
    tb.kubectl(
        &[
            "label",
            "deployment/serve",
            "-n",
            "faults",
            "other-writer=yes",
        ],
        None,
    );
    proxy.release();
    let o = child.wait_with_output().expect("wlmap");
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("changed while updating; retrying"),
        "{}",
        stderr(&o)
    );
    let puts: Vec<String> = proxy
        .log()
        .into_iter()
        .filter(|l| l.starts_with("PUT "))
        .map(|l| l.rsplit(" -> ").next().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        puts,
        ["held", "409", "200"],
        "held, refused as stale, written again"
    );
    let d: Value = serde_json::from_str(&tb.kubectl(
        &["get", "deployment/serve", "-n", "faults", "-o", "json"],
        None,
    ))
    .expect("json");
    assert_eq!(d["metadata"]["labels"]["other-writer"], "yes", "{d}");
    assert_eq!(
        d["spec"]["template"]["spec"]["schedulerName"], "kai-scheduler",
        "{d}"
    );

    // Credentials never appear, not even with -v, not even in errors.
    proxy.reset();
    proxy.arm("429", -1, false, 0);
    let o = proxy.wlmap(&[&["-v"], &get[..]].concat());
    assert!(!stderr(&o).contains(&proxy.token), "{}", stderr(&o));
    assert!(!String::from_utf8_lossy(&o.stdout).contains(&proxy.token));
    proxy.reset();
}
