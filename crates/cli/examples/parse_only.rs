//! Dev tool: the parse-only baseline for the scale benchmark: read a JSON snapshot and parse
//! every document into a JSON value, nothing else.
//!
//! `cargo run --release -p wlmap-cli --example parse_only -- /tmp/big.json`

// Same allocator as the wlmap binary, so the comparison is fair.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let path = std::env::args().nth(1).expect("snapshot path");
    let text = std::fs::read_to_string(&path).expect("read");
    let docs: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&text)
        .into_iter()
        .map(|d| d.expect("json"))
        .collect();
    eprintln!("{} documents", docs.len());
}
