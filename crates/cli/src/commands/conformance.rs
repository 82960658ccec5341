//! `wlmap conformance DIR`: the catalog against recorded states of real operators.

use crate::args::{ConformanceArgs, Output};
use crate::context::{Context, print_data};
use crate::exit::{Code, Failure, Result, invalid};
use crate::render;
use std::collections::BTreeMap;

/// `wlmap conformance`: read each recorded state of a real operator with the catalog and print
/// where the reading differs from the recorded expectation.
pub fn run(ctx: &Context, a: &ConformanceArgs) -> Result {
    if !a.dir.is_dir() {
        return Err(invalid(format!("{}: not a directory", a.dir.display())));
    }
    let paths = wlmap_catalog::conformance::recordings(&a.dir);
    // definition -> (events, definite, agree, undefined, disagreements)
    let mut table: BTreeMap<String, (usize, usize, usize, usize, Vec<String>)> = BTreeMap::new();
    for p in paths {
        let text = crate::source::read_input(&p)?;
        let doc: serde_json::Value =
            serde_saphyr::from_str_with_options(&text, wlmap_schema::yaml_options())
                .map_err(|e| invalid(format!("{}: {e}", p.display())))?;
        for r in wlmap_catalog::conformance::check_recording(ctx.reg(), &doc) {
            let e = table.entry(r.definition.clone()).or_default();
            e.0 += 1;
            if r.definite() {
                e.1 += 1;
                if r.agrees() {
                    e.2 += 1;
                } else {
                    e.4.push(format!(
                        "{} #{}: recorded {}, computed {}",
                        p.display(),
                        r.index,
                        r.recorded,
                        r.computed
                    ));
                }
            } else {
                e.3 += 1;
            }
        }
    }
    let disagreements: usize = table.values().map(|e| e.4.len()).sum();
    match ctx.output() {
        Output::Json | Output::Yaml => {
            let items: Vec<_> = table.iter().map(|(d, e)| serde_json::json!({"definition": d, "events": e.0, "definite": e.1, "agree": e.2, "undefined": e.3, "disagreements": e.4})).collect();
            print_data(ctx.output(), &serde_json::json!({"items": items}))?;
        }
        _ => {
            let rows: Vec<Vec<String>> = table
                .iter()
                .map(|(d, e)| {
                    vec![
                        d.clone(),
                        e.0.to_string(),
                        e.1.to_string(),
                        e.2.to_string(),
                        e.4.len().to_string(),
                        e.3.to_string(),
                    ]
                })
                .collect();
            let mut s = String::new();
            render::table(
                &mut s,
                &[
                    "DEFINITION",
                    "EVENTS",
                    "DEFINITE",
                    "AGREE",
                    "DISAGREE",
                    "UNDEFINED",
                ],
                &rows,
            );
            for e in table.values() {
                for d in &e.4 {
                    s.push_str(&format!("disagreement: {d}\n"));
                }
            }
            crate::write_stdout(&s);
        }
    }
    if disagreements > 0 {
        return Err(Failure::new(
            Code::Runtime,
            anyhow::anyhow!("{disagreements} recorded state(s) disagree"),
        ));
    }
    Ok(())
}
