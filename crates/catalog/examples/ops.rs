//! Time the library's operations on any definition (Karta or the older ResourceInterface) and a
//! fixture, and print one JSON line per operation: the same method and line format as the Go
//! reference harness described in BENCHMARKS.md, so both can be compared side by side.
//!
//! ```text
//! cargo run --release -p wlmap-catalog --example ops -- KIND DEFINITION.yaml FIXTURE_STATE_DIR [--pods]
//! ```
//!
//! Operations: `compile` (decode + validate + compile every expression), `resolve` (tree,
//! templates, replicas, resources, status of the root object), `status`, `update` (scheduler
//! name and one label on every instance, on a copy of the object). With `--pods` (JobSet
//! definitions): `attribute_10k`, `attribute_10k_warm`, `gang_1k`, `gang_1k_full`.
//!
//! Method: warm-up (at least 3 iterations and 100 ms), K iterations per sample so that a sample
//! takes at least 20 ms, 31 samples (at least 10 when an iteration is slow), per-iteration
//! min/median/max. One thread. `WLMAP_OPS=op,...` runs only those operations;
//! `WLMAP_OPS_ITERS=N` runs exactly N untimed iterations of each (for instruction counts).

use serde_json::{Value, json};
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};
use wlmap_engine::{Definition, Object, Origin, OwnerIndex, PodUpdate, Target};

// The allocator the `wlmap` binary ships with.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const WARMUP: Duration = Duration::from_millis(100);
const MIN_SAMPLE: Duration = Duration::from_millis(20);
const SAMPLES: usize = 31;
const MIN_SAMPLES: usize = 10;
/// Per-operation time budget; `WLMAP_OPS_BUDGET_MS` raises it (to profile one operation).
fn budget() -> Duration {
    std::env::var("WLMAP_OPS_BUDGET_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_secs(2), Duration::from_millis)
}

fn measure(mut f: impl FnMut()) -> (Vec<f64>, usize) {
    measure_batched(|| (), |()| f())
}

/// [`measure`] for an operation that consumes its input: `setup` makes each iteration's input
/// outside the timed region (criterion's `iter_batched`), so a clone that only repeating the
/// measurement needs is not counted; dropping what the operation returns is.
fn measure_batched<I>(mut setup: impl FnMut() -> I, mut f: impl FnMut(I)) -> (Vec<f64>, usize) {
    // Time of k iterations, their inputs made beforehand.
    let mut timed = |k: usize| {
        let inputs: Vec<I> = (0..k).map(|_| setup()).collect();
        let t = Instant::now();
        for i in inputs {
            f(i);
        }
        t.elapsed().as_nanos() as f64
    };
    // `WLMAP_OPS_ITERS=N`: exactly N iterations, untimed, so that instruction counts
    // (callgrind) of two builds can be compared per iteration.
    if let Some(n) = std::env::var("WLMAP_OPS_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return (vec![timed(n) / n.max(1) as f64], n);
    }
    let start = Instant::now();
    let (mut n, mut spent) = (0usize, 0f64);
    while n < 3 || start.elapsed() < WARMUP {
        spent += timed(1);
        n += 1;
        if start.elapsed() > budget() {
            break;
        }
    }
    let mut est = spent / n as f64;
    let min = MIN_SAMPLE.as_nanos() as f64;
    let mut k = 1usize;
    if est < 4.0 * min {
        k = (min / est).ceil().max(1.0) as usize;
        loop {
            let el = (0..3).map(|_| timed(k)).fold(f64::INFINITY, f64::min);
            est = el / k as f64;
            if el >= min {
                break;
            }
            k = (k as f64 * 1.1 * min / el).ceil() as usize;
        }
    }
    let mut samples_n = SAMPLES;
    let total = est * k as f64 * SAMPLES as f64;
    if total > budget().as_nanos() as f64 {
        samples_n = ((budget().as_nanos() as f64 / (est * k as f64)) as usize).max(MIN_SAMPLES);
    }
    let samples = (0..samples_n).map(|_| timed(k) / k as f64).collect();
    (samples, k)
}

/// [`measure`] an operation on an object made from the root's JSON in each iteration (its
/// conversion is timed too: a workload is read once per object).
fn on_fresh<R>(root: &Value, op: impl Fn(&Object) -> R) -> (Vec<f64>, usize) {
    measure(|| {
        let o = Object::new(black_box(root.clone()));
        black_box(op(&o));
    })
}

/// `WLMAP_OPS=resolve,gang_1k` runs only those operations (for profiling one at a time).
fn wanted(op: &str) -> bool {
    std::env::var("WLMAP_OPS").map_or(true, |v| v.split(',').any(|o| o == op))
}

fn emit(op: &str, kind: &str, run: impl FnOnce() -> (Vec<f64>, usize), note: &str) {
    if !wanted(op) {
        return;
    }
    let (mut s, k) = run();
    s.sort_by(f64::total_cmp);
    let mut line = json!({"impl": "rust", "op": op, "kind": kind, "samples": s.len(),
        "iters_per_sample": k, "min_ns": s[0] as u64, "median_ns": s[s.len() / 2] as u64,
        "max_ns": s[s.len() - 1] as u64});
    if !note.is_empty() {
        line["note"] = json!(note);
    }
    println!("{line}");
}

fn load(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("objects.yaml")).expect("objects.yaml");
    wlmap_schema::decode_objects(&text, "objects.yaml").expect("objects")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [kind, def_path, state, rest @ ..] = args.as_slice() else {
        eprintln!("usage: ops KIND DEFINITION.yaml FIXTURE_STATE_DIR [--pods]");
        std::process::exit(2);
    };
    let text = std::fs::read_to_string(def_path).expect("definition");
    let objects = load(Path::new(state));
    let def = match wlmap_schema::decode_one(&text, def_path)
        .map_err(|e| e.to_string())
        .and_then(|k| Definition::compile(k, Origin::File).map_err(|e| e.to_string()))
    {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{kind}: {e}");
            std::process::exit(1);
        }
    };
    let gvk = def.root_gvk();
    let Some(root) = objects
        .iter()
        .find(|o| Object::new((*o).clone()).gvk() == gvk)
        .cloned()
    else {
        eprintln!("{kind}: no {gvk:?} in the fixture; skipped");
        return;
    };

    emit(
        "compile",
        kind,
        || {
            measure(|| {
                let k = wlmap_schema::decode_one(black_box(&text), "d.yaml").expect("decodes");
                black_box(Definition::compile(k, Origin::File).expect("compiles"));
            })
        },
        "",
    );
    let resolved = wlmap_engine::resolve(&def, &Object::new(root.clone()));
    let note = resolved
        .as_ref()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    let resolve = |o: &Object| wlmap_engine::resolve(&def, o);
    emit("resolve", kind, || on_fresh(&root, resolve), &note);
    let status = |o: &Object| wlmap_engine::status(&def, o);
    emit("status", kind, || on_fresh(&root, status), "");
    let u = PodUpdate {
        scheduler_name: Some("wlmap-bench".into()),
        labels: [("bench".to_string(), "true".to_string())].into(),
        ..Default::default()
    };
    let mut probe = root.clone();
    let note = match wlmap_engine::update(&def, &mut probe, &Target::all(), &u) {
        Ok(r) => format!("{} templates, copy of the object included", r.templates),
        Err(e) => e.to_string(),
    };
    emit(
        "update",
        kind,
        || {
            measure(|| {
                let mut doc = black_box(root.clone());
                let _ = black_box(wlmap_engine::update(&def, &mut doc, &Target::all(), &u));
            })
        },
        &note,
    );
    if rest.iter().any(|a| a == "--pods") {
        pods(kind, &def, &root, &objects);
    }
}

fn set_label(p: &mut Value, k: &str, v: &str) {
    p["metadata"]["labels"][k] = json!(v);
}

/// The same inputs as the Go harness: copies of the fixture's first `workers` pod.
fn pods(kind: &str, def: &Definition, root: &Value, objects: &[Value]) {
    let tmpl = objects
        .iter()
        .find(|o| {
            o["kind"] == "Pod"
                && o["metadata"]["labels"]["jobset.sigs.k8s.io/replicatedjob-name"] == "workers"
        })
        .expect("a workers pod")
        .clone();
    attribute_10k(kind, def, root, objects, &tmpl);
    gang_1k(kind, def, root, &tmpl);
}

/// 10,000 copies of the pod: even ones owned by the workload's worker Job, odd ones by
/// another JobSet's Job.
fn pods_10k(tmpl: &Value) -> Vec<Value> {
    (0..10_000)
        .map(|i| {
            let mut p = tmpl.clone();
            p["metadata"]["name"] = json!(format!("bench-pod-{i:05}"));
            p["metadata"]["uid"] = json!(format!("00000000-0000-4000-8000-{i:012}"));
            if i % 2 == 1 {
                set_label(&mut p, "jobset.sigs.k8s.io/jobset-name", "other-jobset");
                set_label(
                    &mut p,
                    "jobset.sigs.k8s.io/replicatedjob-name",
                    "other-workers",
                );
                set_label(
                    &mut p,
                    "batch.kubernetes.io/job-name",
                    "other-jobset-other-workers-0",
                );
                p["metadata"]["ownerReferences"][0]["name"] = json!("other-jobset-other-workers-0");
                p["metadata"]["ownerReferences"][0]["uid"] =
                    json!("99999999-1111-4000-8000-000000000000");
            }
            p
        })
        .collect()
}

/// `attribute_10k` (objects built inside the timing) and `attribute_10k_warm`. wlmap
/// attributes by owner chain, so the fixture's Jobs are inputs too.
fn attribute_10k(kind: &str, def: &Definition, root: &Value, objects: &[Value], tmpl: &Value) {
    let jobs: Vec<Value> = objects
        .iter()
        .filter(|o| o["kind"] == "Job")
        .cloned()
        .collect();
    let pods = pods_10k(tmpl);
    let root_obj = Object::new(root.clone());
    let w0 = wlmap_engine::resolve(def, &root_obj).expect("resolves");
    let attribute = |objs: &[Object]| {
        let index = OwnerIndex::new(objs);
        let mut w = w0.clone();
        wlmap_engine::attribute_indexed(
            def,
            &mut w,
            &root_obj,
            objs.iter().filter(|o| o.is_pod()),
            &index,
        )
        .expect("attributes");
        w
    };
    let warm: Vec<Object> = jobs.iter().chain(&pods).cloned().map(Object::new).collect();
    let w = attribute(&warm);
    let note = format!(
        "{} pods attributed, {} unattributed",
        w.observed_pods(),
        w.unattributed.len()
    );
    emit(
        "attribute_10k",
        kind,
        || {
            measure_batched(
                || jobs.iter().chain(&pods).cloned().collect::<Vec<Value>>(),
                |values| {
                    let objs: Vec<Object> = values.into_iter().map(Object::new).collect();
                    black_box(attribute(&objs));
                },
            )
        },
        &format!("{note}; objects built from parsed JSON values inside the timing"),
    );
    emit(
        "attribute_10k_warm",
        kind,
        || {
            measure(|| {
                black_box(attribute(&warm));
            })
        },
        &note,
    );
}

/// The fixture JobSet with one replicated job `workers` of `n` Jobs x 1 pod, all running.
fn big_jobset(root: &Value, n: usize) -> Value {
    let mut big = root.clone();
    let mut workers = big["spec"]["replicatedJobs"]
        .as_array()
        .and_then(|a| a.iter().find(|r| r["name"] == "workers"))
        .expect("workers")
        .clone();
    workers["replicas"] = json!(n);
    workers["template"]["spec"]["parallelism"] = json!(1);
    workers["template"]["spec"]["completions"] = json!(1);
    big["spec"]["replicatedJobs"] = json!([workers]);
    big["status"]["replicatedJobsStatus"] = json!([{"name": "workers", "active": n, "ready": n,
        "failed": 0, "succeeded": 0, "suspended": 0}]);
    big
}

/// The `n` Jobs of [`big_jobset`] and their pods, as the Job controller labels them.
fn big_jobset_children(root: &Value, tmpl: &Value, n: usize) -> Vec<Value> {
    let root_uid = root["metadata"]["uid"].clone();
    let mut inputs = Vec::new();
    for i in 0..n {
        let job = format!("pretrain-workers-{i}");
        let job_uid = format!("11111111-0000-4000-8000-{i:012}");
        inputs.push(json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": job, "namespace": root["metadata"]["namespace"], "uid": job_uid,
            "ownerReferences": [{"apiVersion": root["apiVersion"], "kind": root["kind"],
                "name": root["metadata"]["name"], "uid": root_uid, "controller": true}]}}));
        let mut p = tmpl.clone();
        p["metadata"]["name"] = json!(format!("{job}-0-b{i:04}"));
        p["metadata"]["uid"] = json!(format!("00000000-0000-4000-8000-{i:012}"));
        for (k, v) in [
            ("jobset.sigs.k8s.io/job-index", i.to_string()),
            ("jobset.sigs.k8s.io/job-global-index", i.to_string()),
            ("jobset.sigs.k8s.io/replicatedjob-replicas", n.to_string()),
            ("batch.kubernetes.io/job-name", job.clone()),
            ("job-name", job.clone()),
            ("batch.kubernetes.io/job-completion-index", "0".to_string()),
        ] {
            set_label(&mut p, k, &v);
        }
        p["metadata"]["ownerReferences"][0]["name"] = json!(job);
        p["metadata"]["ownerReferences"][0]["uid"] = json!(job_uid);
        inputs.push(p);
    }
    inputs
}

/// `gang_1k` (pods attributed beforehand) and `gang_1k_full` (resolve + attribute + gangs).
fn gang_1k(kind: &str, def: &Definition, root: &Value, tmpl: &Value) {
    let n = 1_000;
    let big = big_jobset(root, n);
    let inputs = big_jobset_children(root, tmpl, n);
    let big_obj = Object::new(big.clone());
    let objs: Vec<Object> = inputs.iter().cloned().map(Object::new).collect();
    let pods_only: Vec<Object> = objs.iter().filter(|o| o.is_pod()).cloned().collect();
    let mut w = wlmap_engine::resolve(def, &big_obj).expect("resolves");
    wlmap_engine::attribute(def, &mut w, &big_obj, &objs).expect("attributes");
    let groups = wlmap_engine::gangs(def, &w, Some(&pods_only)).expect("gangs");
    let note = groups
        .iter()
        .map(|g| format!("{} minMember {}", g.name, g.min_member))
        .collect::<Vec<_>>()
        .join(", ");
    emit(
        "gang_1k",
        kind,
        || {
            measure(|| {
                black_box(wlmap_engine::gangs(def, &w, Some(&pods_only)).expect("gangs"));
            })
        },
        &format!("{note}; pods attributed beforehand"),
    );
    emit(
        "gang_1k_full",
        kind,
        || {
            measure_batched(
                || (big.clone(), inputs.clone()),
                |(big, inputs)| {
                    let o = Object::new(big);
                    let objs: Vec<Object> = inputs.into_iter().map(Object::new).collect();
                    let mut w = wlmap_engine::resolve(def, &o).expect("resolves");
                    wlmap_engine::attribute(def, &mut w, &o, &objs).expect("attributes");
                    let pods: Vec<Object> = objs.iter().filter(|o| o.is_pod()).cloned().collect();
                    black_box(wlmap_engine::gangs(def, &w, Some(&pods)).expect("gangs"));
                },
            )
        },
        "resolve + attribute + gangs from parsed JSON values",
    );
}
