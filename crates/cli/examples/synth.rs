//! Dev tool: write a large synthetic cluster snapshot (JSON, one object per line) made of the
//! demo's catalog fixtures, each copy in its own namespace with fresh uids, so owner chains,
//! labels and statuses stay exactly what the controllers write.
//!
//! `cargo run --release -p wlmap-cli --example synth -- 10000 /tmp/big.json`

use serde_json::Value;
use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let out = args.get(2).cloned().unwrap_or_else(|| "synth.json".into());
    let fixtures: Vec<Vec<Value>> = wlmap_catalog::DEMO
        .iter()
        .map(|(name, text)| {
            wlmap_schema::decode_objects(text, name)
                .expect("a demo fixture decodes")
                .into_iter()
                .filter(Value::is_object)
                .collect()
        })
        .collect();
    let mut w = std::io::BufWriter::new(std::fs::File::create(&out).expect("create"));
    let (mut objects, mut pods) = (0usize, 0usize);
    for i in 0..n {
        let fx = &fixtures[i % fixtures.len()];
        let uids: Vec<String> = fx
            .iter()
            .filter_map(|o| {
                o.pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .map(String::from)
            })
            .collect();
        for o in fx {
            let mut text = o.to_string();
            for u in &uids {
                // Same length, unique per copy: the last 12 hex digits become the copy number.
                let fresh = format!("{}{:012x}", &u[..u.len().saturating_sub(12)], i);
                text = text.replace(u.as_str(), &fresh);
            }
            let mut v: Value = serde_json::from_str(&text).expect("json");
            if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                m.insert("namespace".into(), Value::from(format!("synth-{i}")));
            }
            if v["kind"] == "Pod" {
                pods += 1;
            }
            objects += 1;
            writeln!(w, "{v}").expect("write");
        }
    }
    eprintln!("{out}: {n} workloads, {objects} objects, {pods} pods");
}
