//! Recorded states of real operators (`../shared/conformance/recorded`, beside the
//! repository, or `WLMAP_CONFORMANCE_DIR`): every definite state must agree. Skipped (with a
//! note) when the recordings are absent, so the project's own tests never depend on them.

use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "yaml") {
            out.push(p);
        }
    }
}

#[test]
fn every_definite_recorded_state_agrees() {
    let dir = std::env::var_os("WLMAP_CONFORMANCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance/recorded")
        });
    if !dir.is_dir() {
        eprintln!(
            "conformance recordings not found at {}; skipped",
            dir.display()
        );
        return;
    }
    let reg = wlmap_catalog::registry().expect("catalog");
    let mut all = Vec::new();
    files(&dir, &mut all);
    assert!(!all.is_empty(), "no recordings in {}", dir.display());
    let mut bad = Vec::new();
    let (mut definite, mut undefined) = (0, 0);
    for f in all {
        let text = std::fs::read_to_string(&f).expect("read");
        let doc: serde_json::Value =
            serde_saphyr::from_str_with_options(&text, wlmap_schema::yaml_options())
                .expect("recording parses");
        for r in wlmap_catalog::conformance::check_recording(&reg, &doc) {
            if r.definite() {
                definite += 1;
                if !r.agrees() {
                    bad.push(format!(
                        "{} event {}: recorded {}, computed {}",
                        f.display(),
                        r.index,
                        r.recorded,
                        r.computed
                    ));
                }
            } else {
                undefined += 1;
            }
        }
    }
    eprintln!("conformance: {definite} definite events, {undefined} undefined");
    assert!(definite > 0);
    assert!(
        bad.is_empty(),
        "{} disagreements:\n{}",
        bad.len(),
        bad.join("\n")
    );
}
