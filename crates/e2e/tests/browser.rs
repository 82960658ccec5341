//! The web page of `wlmap serve` in a real headless Chromium (Debian's `chromium` and
//! `chromium-driver`, driven over WebDriver): the table, filters, a workload's tree, live
//! updates without a reload, hostile names rendered as text, a phone-sized screen. Run by
//! scripts/test.sh's browser tier:
//! `cargo build -p wlmap-cli && cargo test -p wlmap-e2e --test browser -- --include-ignored`.
//! With `WLMAP_SCREENSHOTS=docs/screenshots` the tests also write the README's screenshots.

use serde_json::Value;
use wlmap_e2e::browser::Browser;
use wlmap_e2e::served::Served;
use wlmap_e2e::wlmap_bin;

const NEEDS: &str = "needs Debian's chromium and chromium-driver (scripts/test.sh's browser tier)";

/// Save a screenshot for the README when asked to.
fn keep(b: &Browser, name: &str) {
    if let Ok(dir) = std::env::var("WLMAP_SCREENSHOTS") {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(dir);
        std::fs::create_dir_all(&dir).expect("screenshot dir");
        std::fs::write(dir.join(format!("{name}.png")), b.screenshot()).expect("screenshot");
    }
}

/// Wait until the page has rendered the rows of `version` (or any, with None).
fn rendered(b: &Browser, version: Option<u64>) {
    let check = match version {
        Some(v) => format!("return document.body.dataset.version === '{v}'"),
        None => "return document.body.dataset.version !== undefined".into(),
    };
    b.wait("the rows", &check);
}

fn rows(b: &Browser) -> Vec<Value> {
    b.eval(
        "return [...document.querySelectorAll('#rows tr')].map(tr => ({key: tr.dataset.key, \
         cells: [...tr.cells].map(td => td.textContent)}))",
    )
    .as_array()
    .cloned()
    .unwrap_or_default()
}

fn api_rows(s: &Served) -> Vec<Value> {
    let v: Value = serde_json::from_str(&s.get("/api/workloads").body).expect("JSON");
    v["items"].as_array().cloned().unwrap_or_default()
}

#[test]
#[ignore = "needs Debian's chromium and chromium-driver (scripts/test.sh's browser tier)"]
fn the_table_lists_the_demo_filters_by_kind_and_opens_a_workload() {
    let _ = NEEDS;
    let s = Served::start(&wlmap_bin(), &["--demo"], &[]);
    let all = api_rows(&s);
    let b = Browser::start(1280, 1000);
    b.goto(&s.url());
    rendered(&b, None);
    let shown = rows(&b);
    assert_eq!(
        shown.len(),
        all.len().min(50),
        "one row per workload, 50 a page"
    );
    let caption = b.eval("return document.getElementById('count').textContent");
    assert_eq!(caption, format!("{} workloads", all.len()));
    let jobset = shown
        .iter()
        .find(|r| r["key"] == "ml/jobset.x-k8s.io/JobSet/llm-train")
        .expect("the JobSet's row");
    assert_eq!(jobset["cells"][5], "12", "GPUs: {jobset}");
    assert_eq!(jobset["cells"][4], "3/3", "pods: {jobset}");
    keep(&b, "workloads");

    // Filter by kind, as a user picks it from the list.
    b.click("#f-kind option[value='JobSet']");
    let jobsets = all.iter().filter(|r| r["kind"] == "JobSet").count();
    let shown = rows(&b);
    assert_eq!(shown.len(), jobsets);
    assert!(shown.iter().all(|r| r["cells"][2] == "JobSet"));

    // Open the JobSet: one workload of 12 GPUs, its leader and its workers.
    b.click("tr[data-key='ml/jobset.x-k8s.io/JobSet/llm-train'] a");
    b.wait(
        "the workload's page",
        "const d = document.getElementById('detail-view'); return !d.hidden && d.dataset.version",
    );
    let text = b.eval("return document.getElementById('detail-view').innerText");
    let text = text.as_str().unwrap_or_default();
    for want in [
        "JobSet/llm-train",
        "replicatedjob[leader]",
        "replicatedjob[workers]",
        "12 requested, 12 in use",
        "yes — decided",
        "llm-train-workers-1-0-b9n5w",
    ] {
        assert!(text.contains(want), "{want:?} not in:\n{text}");
    }
    keep(&b, "workload");
    // Escape goes back to the table, filters kept.
    b.eval("document.dispatchEvent(new KeyboardEvent('keydown', {key: 'Escape'}))");
    b.wait(
        "the table again",
        "return !document.getElementById('list-view').hidden",
    );
    assert_eq!(rows(&b).len(), jobsets);

    // A workload the scheduler cannot place says why, in the scheduler's words.
    b.goto(&format!(
        "{}/#/w/kubeflow/kubeflow.org/TFJob/tf-workers-only",
        s.url()
    ));
    b.wait(
        "the waiting workload's page",
        "const d = document.getElementById('detail-view'); return !d.hidden && d.dataset.version",
    );
    let text = b.eval("return document.getElementById('detail-view').innerText");
    let text = text.as_str().unwrap_or_default();
    assert!(
        text.contains(
            "3 pod(s) Unschedulable: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
        ),
        "{text}"
    );
}

#[test]
#[ignore = "needs Debian's chromium and chromium-driver (scripts/test.sh's browser tier)"]
fn a_change_in_the_source_appears_without_a_reload() {
    let (_dir, snap, _s, b) = serve_snapshot(&job("ml", "first", 2));
    assert_eq!(rows(&b).len(), 1);
    b.eval("window.stillTheSamePage = true");
    let both = format!("{}---\n{}", job("ml", "first", 2), job("ml", "second", 8));
    std::fs::write(&snap, both).expect("write");
    b.wait(
        "the new Job's row",
        "return document.querySelectorAll('#rows tr').length === 2",
    );
    assert_eq!(
        b.eval("return window.stillTheSamePage === true"),
        true,
        "the page reloaded"
    );
    let totals = b.eval("return document.getElementById('totals').innerText");
    assert!(
        totals
            .as_str()
            .is_some_and(|t| t.contains("ml · Job") && t.contains("10")),
        "{totals}"
    );
}

#[test]
#[ignore = "needs Debian's chromium and chromium-driver (scripts/test.sh's browser tier)"]
fn names_that_look_like_html_render_as_text() {
    let hostile = "<script>alert(1)</script>";
    let img = "<img src=x onerror=alert(2)>";
    let text = format!(
        "{}---\n{}",
        job("x", &format!("'{hostile}'"), 1),
        job(&format!("'{img}'"), "ok", 1)
    );
    let (_dir, _snap, _s, b) = serve_snapshot(&text);
    let cells: Vec<String> = rows(&b)
        .iter()
        .flat_map(|r| r["cells"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c.as_str().map(String::from))
        .collect();
    assert!(cells.iter().any(|c| c == hostile), "{cells:?}");
    assert!(cells.iter().any(|c| c == img), "{cells:?}");
    assert_eq!(b.eval("return document.scripts.length"), 1, "only app.js");
    assert_eq!(b.eval("return document.querySelectorAll('img').length"), 0);
    b.click_link(hostile);
    b.wait(
        "the workload's page",
        "return document.getElementById('detail-view').dataset.version",
    );
    let h2 = b.eval("return document.querySelector('#detail-view h2').textContent");
    assert_eq!(h2, format!("Job/{hostile}"));
    assert_eq!(b.alert(), None, "no script ran");
}

#[test]
#[ignore = "needs Debian's chromium and chromium-driver (scripts/test.sh's browser tier)"]
fn the_page_fits_a_phone() {
    let s = Served::start(&wlmap_bin(), &["--demo"], &[]);
    let b = Browser::phone();
    b.goto(&s.url());
    rendered(&b, None);
    assert_eq!(b.eval("return window.innerWidth"), 390, "a phone's width");
    let sideways = "return document.documentElement.scrollWidth - window.innerWidth";
    let overflow = b.eval(sideways);
    assert!(
        overflow.as_i64().is_some_and(|o| o <= 0),
        "the table page scrolls sideways by {overflow}"
    );
    keep(&b, "phone");
    b.goto(&format!(
        "{}/#/w/ml/jobset.x-k8s.io/JobSet/llm-train",
        s.url()
    ));
    b.wait(
        "the workload's page",
        "return document.getElementById('detail-view').dataset.version",
    );
    let overflow = b.eval(sideways);
    assert!(
        overflow.as_i64().is_some_and(|o| o <= 0),
        "the workload page scrolls sideways by {overflow}"
    );
    // The scheduler's long message wraps too.
    b.goto(&format!(
        "{}/#/w/kubeflow/kubeflow.org/TFJob/tf-workers-only",
        s.url()
    ));
    b.wait(
        "the waiting workload's page",
        "const d = document.getElementById('detail-view'); return d.dataset.version && d.innerText.includes('Unschedulable')",
    );
    let overflow = b.eval(sideways);
    assert!(
        overflow.as_i64().is_some_and(|o| o <= 0),
        "the waiting workload's page scrolls sideways by {overflow}"
    );
}

/// `wlmap serve` over a snapshot file holding `text`, and a browser on its page once the
/// rows are drawn (the directory keeps the file for the test to change).
fn serve_snapshot(text: &str) -> (tempfile::TempDir, std::path::PathBuf, Served, Browser) {
    let dir = tempfile::tempdir().expect("tmp");
    let snap = dir.path().join("cluster.yaml");
    std::fs::write(&snap, text).expect("write");
    let s = Served::start(
        &wlmap_bin(),
        &["--snapshot", snap.to_str().expect("utf8")],
        &[],
    );
    let b = Browser::start(1280, 900);
    b.goto(&s.url());
    rendered(&b, None);
    (dir, snap, s, b)
}

/// A Job of `gpus` GPUs (names quoted by the caller when they need it in YAML).
fn job(namespace: &str, name: &str, gpus: u32) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: {name}, namespace: {namespace}, \
         uid: u-{gpus}-{}, creationTimestamp: '2026-11-30T10:00:00Z'}}\n\
         spec:\n  parallelism: 1\n  template:\n    spec:\n      containers:\n      - name: t\n        \
         resources: {{limits: {{nvidia.com/gpu: {gpus}}}}}\n",
        name.len()
    )
}

#[test]
#[ignore = "needs Debian's chromium and chromium-driver (scripts/test.sh's browser tier)"]
fn the_page_works_from_the_keyboard() {
    let s = Served::start(&wlmap_bin(), &["--demo"], &[]);
    let b = Browser::start(1280, 900);
    b.goto(&s.url());
    rendered(&b, None);
    // `/` goes to the search box, as on GitHub or k9s.
    b.press("/");
    assert_eq!(b.eval("return document.activeElement.id"), "q");
    b.press("qwen-72b");
    b.wait(
        "one row",
        "return document.querySelectorAll('#rows tr').length === 1",
    );
    // Enter on the row's link opens the workload; Escape goes back.
    b.eval("document.querySelector('#rows a').focus()");
    b.press("\u{E007}");
    b.wait(
        "the workload's page",
        "const d = document.getElementById('detail-view'); return !d.hidden && d.dataset.version",
    );
    let h2 = b.eval("return document.querySelector('#detail-view h2').textContent");
    assert_eq!(h2, "LeaderWorkerSet/qwen-72b");
    b.press("\u{E00C}");
    b.wait(
        "the table again",
        "return !document.getElementById('list-view').hidden",
    );
    // Sorting is a button in each column head: reachable and pressable from the keyboard.
    b.eval("document.querySelector(\"th button[data-sort='gpus']\").focus()");
    b.press("\u{E007}");
    let sorted = b.eval("return document.querySelector('th[aria-sort]').textContent");
    assert_eq!(sorted, "GPUs");
}
