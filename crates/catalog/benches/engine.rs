//! Library benchmarks (`cargo bench -p wlmap-catalog`): compile each catalog definition,
//! resolve and read status for each catalog kind on its fixture, attribute 10,000 pods,
//! compute gangs for a 1,000-pod workload, update every instance. Method and figures are in
//! BENCHMARKS.md.

use serde_json::{Value, json};
use std::sync::Arc;
use wlmap_engine::{Definition, Object, Origin, OwnerIndex, PodUpdate, Target};

#[path = "../tests/common/mod.rs"]
mod common;

fn main() {
    divan::main();
}

fn slugs() -> Vec<String> {
    let mut v: Vec<String> = wlmap_catalog::kartas()
        .expect("catalog")
        .into_iter()
        .map(|(_, k)| k.name())
        .collect();
    v.sort();
    v
}

fn fixture_objects(slug: &str) -> Vec<Object> {
    common::objects(&common::representative(slug))
}

fn def(slug: &str) -> Arc<Definition> {
    wlmap_catalog::registry()
        .expect("catalog")
        .by_name(slug)
        .expect("definition")
        .clone()
}

#[divan::bench(args = slugs())]
fn compile_definition(bencher: divan::Bencher, slug: &str) {
    let k = wlmap_catalog::kartas()
        .expect("catalog")
        .into_iter()
        .find(|(_, k)| k.name() == slug)
        .expect("def")
        .1;
    bencher.bench_local(|| {
        Definition::compile(divan::black_box(k.clone()), Origin::Catalog).expect("compiles")
    });
}

/// `op` on a fresh Object of the kind's first fixture object per iteration: reading the
/// object (its conversion, where an expression needs jaq) is part of the cost.
fn on_fresh<R>(bencher: divan::Bencher, slug: &str, op: impl Fn(&Definition, &Object) -> R) {
    let d = def(slug);
    let objs = fixture_objects(slug);
    bencher
        .with_inputs(|| Object::new(objs[0].json().clone()))
        .bench_local_values(|o| op(&d, &o));
}

#[divan::bench(args = slugs())]
fn resolve_workload(bencher: divan::Bencher, slug: &str) {
    on_fresh(bencher, slug, |d, o| {
        wlmap_engine::resolve(d, o).expect("resolves")
    });
}

#[divan::bench(args = slugs())]
fn status_only(bencher: divan::Bencher, slug: &str) {
    on_fresh(bencher, slug, |d, o| {
        wlmap_engine::status(d, o).expect("status")
    });
}

/// A JobSet with one replicated job of `n` Jobs, each with one pod.
fn big_jobset(n: usize) -> (Object, Vec<Object>) {
    let root = Object::new(
        json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "big", "namespace": "ml", "uid": "js"},
        "spec": {"replicatedJobs": [{"name": "workers", "replicas": n, "template": {"spec": {"parallelism": 1, "completions": 1, "template": {"spec": {"containers": [{"name": "w", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}}}]},
        "status": {"replicatedJobsStatus": [{"name": "workers", "active": n, "ready": n, "failed": 0, "succeeded": 0, "suspended": 0}]}}),
    );
    let mut objs = Vec::with_capacity(2 * n);
    for i in 0..n {
        let job = format!("big-workers-{i}");
        objs.push(Object::new(json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": job, "namespace": "ml", "uid": format!("job-{i}"),
            "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "name": "big", "uid": "js", "controller": true}]}})));
        objs.push(Object::new(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": format!("{job}-0-abcde"), "namespace": "ml", "uid": format!("pod-{i}"),
            "labels": {"jobset.sigs.k8s.io/replicatedjob-name": "workers", "jobset.sigs.k8s.io/jobset-name": "big", "batch.kubernetes.io/job-name": job},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job, "uid": format!("job-{i}"), "controller": true}]},
            "spec": {"nodeName": "n", "containers": [{"name": "w", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})));
    }
    (root, objs)
}

#[divan::bench(sample_count = 20)]
fn attribute_10k_pods(bencher: divan::Bencher) {
    let d = def("jobset-x-k8s-io-jobset-v1alpha2");
    let (root, objs) = big_jobset(10_000);
    let index = OwnerIndex::new(&objs);
    let w = wlmap_engine::resolve(&d, &root).expect("resolves");
    bencher
        .with_inputs(|| w.clone())
        .bench_local_values(|mut w| {
            wlmap_engine::attribute_indexed(&d, &mut w, &root, objs.iter(), &index)
                .expect("attributes");
            assert_eq!(w.observed_pods(), 10_000);
            w
        });
}

#[divan::bench(sample_count = 20)]
fn gangs_1000_pods(bencher: divan::Bencher) {
    let d = def("jobset-x-k8s-io-jobset-v1alpha2");
    let (root, objs) = big_jobset(1_000);
    let mut w = wlmap_engine::resolve(&d, &root).expect("resolves");
    wlmap_engine::attribute(&d, &mut w, &root, &objs).expect("attributes");
    bencher.bench_local(|| wlmap_engine::gangs(&d, &w, Some(&objs)).expect("gangs"));
}

#[divan::bench(sample_count = 50)]
fn update_every_instance(bencher: divan::Bencher) {
    let d = def("jobset-x-k8s-io-jobset-v1alpha2");
    let rjs: Vec<Value> = (0..64).map(|i| json!({"name": format!("rj{i}"), "replicas": 1, "template": {"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}}})).collect();
    let doc = json!({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "x"}, "spec": {"replicatedJobs": rjs}});
    let u = PodUpdate {
        scheduler_name: Some("kai-scheduler".into()),
        labels: [("team".to_string(), "ml".to_string())].into(),
        ..Default::default()
    };
    bencher
        .with_inputs(|| doc.clone())
        .bench_local_values(|mut doc| {
            wlmap_engine::update(&d, &mut doc, &Target::all(), &u).expect("updates");
            doc
        });
}

#[divan::bench]
fn expression_compile(bencher: divan::Bencher) {
    bencher.bench_local(|| {
        wlmap_expr::Expr::compile(divan::black_box(
            ".spec.replicatedJobs[] | .replicas * (.template.spec.parallelism // 1)",
        ))
        .expect("compiles")
    });
}
