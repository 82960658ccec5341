//! Embeds every `definitions/*.yaml` file into the library, and the demo cluster: the fixtures
//! listed in `demo.txt` (the demo is made of tested fixtures, so what `--demo` shows is what the
//! tests check).

use std::fmt::Write;

fn main() {
    definitions();
    demo();
}

fn definitions() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("definitions");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let entries = files
        .into_iter()
        .map(|f| {
            let name = f
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string();
            (name, f)
        })
        .collect();
    embed(
        "FILES",
        "Embedded definition files: (file name, text).",
        entries,
        "definitions.rs",
    );
}

fn demo() {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let list = manifest.join("demo.txt");
    println!("cargo:rerun-if-changed={}", list.display());
    let text = std::fs::read_to_string(&list).unwrap_or_default();
    let entries = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|line| {
            let path = manifest.join("fixtures").join(line).join("objects.yaml");
            (line.to_string(), path)
        })
        .collect();
    embed(
        "DEMO",
        "The demo cluster's documents: (fixture, YAML text).",
        entries,
        "demo.rs",
    );
}

/// Write `OUT_DIR/file`: a static `name` of (label, `include_str!` of each path), so cargo
/// rebuilds when one of them changes.
fn embed(name: &str, doc: &str, entries: Vec<(String, std::path::PathBuf)>, file: &str) {
    let mut out = format!("/// {doc}\npub static {name}: &[(&str, &str)] = &[\n");
    for (label, path) in entries {
        println!("cargo:rerun-if-changed={}", path.display());
        let _ = writeln!(
            out,
            "    ({label:?}, include_str!({:?})),",
            path.display().to_string()
        );
    }
    out.push_str("];\n");
    let dest = std::path::Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR is set by cargo"))
        .join(file);
    std::fs::write(dest, out).expect("write generated file");
}
