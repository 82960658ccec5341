//! `wlmap conformance DIR`: the catalog against recorded states of real operators.

use crate::args::{ConformanceArgs, Output};
use crate::context::{Context, print_data};
use crate::exit::{Code, Failure, Result, invalid};
use crate::render;

/// `wlmap conformance`: read each recorded state of a real operator with the catalog and print
/// where the reading differs from the recorded expectation.
pub fn run(ctx: &Context, a: &ConformanceArgs) -> Result {
    if !a.dir.is_dir() {
        return Err(invalid(format!("{}: not a directory", a.dir.display())));
    }
    let tally = wlmap_catalog::conformance::Tally::of_dir(ctx.reg(), &a.dir).map_err(invalid)?;
    let table = &tally.per_definition;
    let disagreements = tally.disagreements();
    match ctx.output() {
        Output::Json | Output::Yaml => {
            let items: Vec<_> = table.iter().map(|(d, e)| serde_json::json!({"definition": d, "events": e.events, "definite": e.definite, "agree": e.agree, "undefined": e.undefined, "disagreements": e.disagreements})).collect();
            print_data(ctx.output(), &serde_json::json!({"items": items}))?;
        }
        _ => {
            let rows: Vec<Vec<String>> = table
                .iter()
                .map(|(d, e)| {
                    vec![
                        d.clone(),
                        e.events.to_string(),
                        e.definite.to_string(),
                        e.agree.to_string(),
                        e.disagreements.len().to_string(),
                        e.undefined.to_string(),
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
                for d in &e.disagreements {
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
