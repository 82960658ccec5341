//! Seed the cargo-fuzz corpora (`fuzz/corpus/<target>/`) from the catalog and its fixtures:
//! `cargo run -p wlmap-catalog --example fuzz_seed -- fuzz/corpus`. See fuzz/README.md.

use serde_json::Value;
use std::path::{Path, PathBuf};

#[path = "../tests/common/mod.rs"]
mod common;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "fuzz/corpus".into()),
    );
    let mut kartas = wlmap_catalog::kartas()?;
    // The `resolve` target's first byte indexes the catalog sorted by name.
    kartas.sort_by_key(|(_, k)| k.name());
    let mut written = [0usize; 4];
    for (i, (file, karta)) in kartas.iter().enumerate() {
        let slug = karta.name();
        let text = wlmap_catalog::FILES
            .iter()
            .find(|(f, _)| f == file)
            .map(|(_, t)| *t)
            .ok_or("definition text")?;
        write(
            &out.join("definition"),
            &slug,
            text.as_bytes(),
            &mut written[0],
        )?;
        let fixtures = common::fixtures_dir().join(&slug);
        if !fixtures.is_dir() {
            continue;
        }
        let root = common::objects(&common::representative(&slug))
            .first()
            .map(|o| o.json().clone())
            .unwrap_or(Value::Null);
        let mut exprs = Vec::new();
        common::collect_expressions(&serde_json::to_value(karta)?, &mut exprs);
        exprs.sort();
        exprs.dedup();
        for (j, e) in exprs.iter().enumerate() {
            let seed = format!("{e}\n{root}");
            write(
                &out.join("expression"),
                &format!("{slug}-{j}"),
                seed.as_bytes(),
                &mut written[1],
            )?;
        }
        for state in common::sorted_dirs(&fixtures) {
            let objects = std::fs::read(state.join("objects.yaml"))?;
            let name = format!("{slug}-{}", common::name(&state));
            // `resolve` reads JSON (YAML is the `snapshot` target's): one object per line.
            let mut seed = vec![u8::try_from(i)?];
            for o in wlmap_schema::decode_objects(std::str::from_utf8(&objects)?, "seed")? {
                serde_json::to_writer(&mut seed, &o)?;
                seed.push(b'\n');
            }
            write(&out.join("resolve"), &name, &seed, &mut written[2])?;
            write(&out.join("snapshot"), &name, &objects, &mut written[3])?;
        }
    }
    println!(
        "seeded {}: definition {}, expression {}, resolve {}, snapshot {}",
        out.display(),
        written[0],
        written[1],
        written[2],
        written[3]
    );
    Ok(())
}

fn write(dir: &Path, name: &str, data: &[u8], count: &mut usize) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join(name), data)?;
    *count += 1;
    Ok(())
}
