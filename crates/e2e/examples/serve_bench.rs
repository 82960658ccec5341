//! Dev tool: the figures of BENCHMARKS.md's "The platform view": `wlmap serve` over a
//! synthetic snapshot of N workloads (the demo's fixtures in turn): `/metrics` and
//! `/api/workloads` time and size, and the page's first render and a search in headless
//! Chromium.
//!
//! `cargo build --release -p wlmap-cli && cargo run --release -p wlmap-cli --example synth -- 10000 /tmp/synth.json`
//! `WLMAP_BIN=target/release/wlmap cargo run --release -p wlmap-e2e --example serve_bench -- /tmp/synth.json`

use std::time::Instant;
use wlmap_e2e::browser::Browser;
use wlmap_e2e::served::Served;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Median and range of `runs` GETs, in ms, and the body's size.
fn time_get(s: &Served, path: &str, runs: usize) -> (f64, f64, f64, usize) {
    let mut times = Vec::new();
    let mut size = 0;
    for _ in 0..runs {
        let t = Instant::now();
        let r = s.get(path);
        times.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(r.status, 200);
        size = r.body.len();
    }
    let (lo, hi) = (
        times.iter().copied().fold(f64::MAX, f64::min),
        times.iter().copied().fold(0.0, f64::max),
    );
    (median(times), lo, hi, size)
}

fn main() {
    let file = std::env::args()
        .nth(1)
        .expect("a snapshot file (see the doc)");
    let s = Served::start(&wlmap_e2e::wlmap_bin(), &["--snapshot", &file], &[]);
    let rows: serde_json::Value =
        serde_json::from_str(&s.get("/api/workloads").body).expect("JSON");
    let workloads = rows["items"].as_array().map_or(0, |a| a.len());
    let metrics = s.get("/metrics").body;
    let series = metrics.lines().filter(|l| !l.starts_with('#')).count();
    println!("workloads: {workloads}, series: {series}");
    for path in ["/metrics", "/api/workloads"] {
        let (med, lo, hi, size) = time_get(&s, path, 11);
        println!(
            "{path}: median {med:.1} ms (range {lo:.1}-{hi:.1}), {:.1} MB",
            size as f64 / 1e6
        );
    }
    let mut first = Vec::new();
    let mut search = Vec::new();
    for _ in 0..5 {
        let b = Browser::start(1280, 900);
        b.goto(&s.url());
        b.wait(
            "the rows",
            "return document.body.dataset.version !== undefined",
        );
        let at = b.eval("return performance.getEntriesByName('wlmap-rendered')[0].startTime");
        first.push(at.as_f64().expect("mark"));
        let took = b.eval(
            "const q = document.getElementById('q'); q.value = 'llm-train'; \
             const t = performance.now(); q.dispatchEvent(new Event('input')); \
             return performance.now() - t",
        );
        search.push(took.as_f64().expect("ms"));
        let shown = b.eval("return document.querySelectorAll('#rows tr').length");
        assert!(shown.as_u64().is_some_and(|n| n > 0 && n <= 50), "{shown}");
    }
    println!(
        "page: first render median {:.0} ms after navigation start (5 loads: {first:.0?})",
        median(first.clone())
    );
    println!(
        "page: search over every row, median {:.1} ms ({search:.1?})",
        median(search.clone())
    );
}
