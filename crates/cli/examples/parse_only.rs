//! Dev tool: the parse-only baseline for the scale benchmark: read a snapshot and parse every
//! object into a JSON value on one thread, nothing else. JSON with serde_json; YAML with the
//! same reader and options as `wlmap`, its node and event budget lifted (the whole List is one
//! document here, where `wlmap` reads a kubectl List item by item).
//!
//! `cargo run --release -p wlmap-cli --example parse_only -- /tmp/big.json`

// Same allocator as the wlmap binary, so the comparison is fair.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use serde_json::Value;

fn main() {
    let path = std::env::args().nth(1).expect("snapshot path");
    let text = std::fs::read_to_string(&path).expect("read");
    let docs: Vec<Value> = if text.trim_start().starts_with(['{', '[']) {
        serde_json::Deserializer::from_str(&text)
            .into_iter()
            .map(|d| d.expect("json"))
            .collect()
    } else {
        let mut o = wlmap_schema::yaml_options();
        let mut budget = o.budget.take().unwrap_or_default();
        (budget.max_nodes, budget.max_events) = (usize::MAX, usize::MAX);
        budget.max_total_scalar_bytes = usize::MAX;
        o.budget = Some(budget);
        serde_saphyr::from_multiple_with_options(&text, o).expect("yaml")
    };
    let objects: usize = docs
        .iter()
        .map(|d| d.get("items").and_then(Value::as_array).map_or(1, Vec::len))
        .sum();
    eprintln!("{objects} objects");
}
