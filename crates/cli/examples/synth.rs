//! Dev tool: write a large synthetic cluster snapshot (`wlmap_catalog::synth`): the demo's
//! fixtures copied N times, each object as the API server returns it, written as
//! `kubectl get -A -o json` (`json`, the default) or `-o yaml` (`yaml`) writes a List, or one
//! object per line (`lines`).
//!
//! `cargo run --release -p wlmap-cli --example synth -- 10000 /tmp/big.json [json|yaml|lines]`

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(1000);
    let out = args.get(2).cloned().unwrap_or_else(|| "synth.json".into());
    let format = match args
        .get(3)
        .map_or(Ok(wlmap_catalog::synth::Format::JsonList), |f| f.parse())
    {
        Ok(f) => f,
        Err(e) => {
            eprintln!("synth: {e}");
            std::process::exit(2);
        }
    };
    let mut w = std::io::BufWriter::new(std::fs::File::create(&out).expect("create"));
    let made = wlmap_catalog::synth::write(n, format, &mut w).expect("write");
    let size =
        std::io::Write::flush(&mut w).map(|_| std::fs::metadata(&out).map_or(0, |m| m.len()));
    eprintln!(
        "{out}: {} workloads, {} objects, {} pods, {} MB",
        made.workloads,
        made.objects,
        made.pods,
        size.unwrap_or(0) / 1_000_000
    );
}
