//! Embeds every `definitions/*.yaml` file into the library.

use std::fmt::Write;

fn main() {
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
    let mut out = String::from(
        "/// Embedded definition files: (file name, text).\npub static FILES: &[(&str, &str)] = &[\n",
    );
    for f in files {
        println!("cargo:rerun-if-changed={}", f.display());
        let name = f
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let _ = writeln!(
            out,
            "    ({name:?}, include_str!({:?})),",
            f.display().to_string()
        );
    }
    out.push_str("];\n");
    let dest = std::path::Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR is set by cargo"))
        .join("definitions.rs");
    std::fs::write(dest, out).expect("write generated file");
}
