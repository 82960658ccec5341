//! Embeds the demo cluster: the catalog fixtures listed in `demo/fixtures.txt`, concatenated.
//! The demo is made of tested fixtures, so what `--demo` shows is what the tests check.

fn main() {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let list = manifest.join("demo/fixtures.txt");
    println!("cargo:rerun-if-changed={}", list.display());
    let fixtures = manifest.join("../catalog/fixtures");
    let text = std::fs::read_to_string(&list).unwrap_or_default();
    let mut out = String::from(
        "/// The demo cluster's documents: (fixture, YAML text).\npub static DEMO: &[(&str, &str)] = &[\n",
    );
    for line in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let path = fixtures.join(line).join("objects.yaml");
        println!("cargo:rerun-if-changed={}", path.display());
        out.push_str(&format!(
            "    ({line:?}, include_str!({:?})),\n",
            path.display().to_string()
        ));
    }
    out.push_str("];\n");
    let dest = std::path::Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR is set by cargo"))
        .join("demo.rs");
    std::fs::write(dest, out).expect("write generated file");
}
