//! `wlmap definitions`.

use crate::args::{DefinitionsArgs, Output};
use crate::context::{Context, print_data};
use crate::exit::{Result, no_definition};
use crate::render;

/// Run.
pub fn run(ctx: &Context, a: &DefinitionsArgs) -> Result {
    let defs: Vec<_> = match &a.name {
        Some(n) => vec![ctx.reg().by_name(n).cloned().ok_or_else(|| {
            no_definition(format!(
                "no definition named {n:?}; `wlmap definitions` lists them"
            ))
        })?],
        None => {
            let mut v: Vec<_> = ctx.reg().iter().cloned().collect();
            v.sort_by_key(|d| d.name());
            v
        }
    };
    match ctx.output() {
        Output::Json | Output::Yaml => {
            if a.name.is_some() {
                print_data(ctx.output(), defs[0].karta())
            } else {
                print_data(
                    ctx.output(),
                    &serde_json::json!({"items": defs.iter().map(|d| d.karta()).collect::<Vec<_>>()}),
                )
            }
        }
        _ => {
            let rows: Vec<Vec<String>> = defs
                .iter()
                .map(|d| {
                    let g = d.root_gvk();
                    let comps = d.component_names();
                    let shown = if comps.len() > 4 {
                        format!("{}, +{} more", comps[..4].join(", "), comps.len() - 4)
                    } else {
                        comps.join(", ")
                    };
                    vec![
                        d.name(),
                        if g.group.is_empty() {
                            g.kind.clone()
                        } else {
                            format!("{}.{}", g.kind, g.group)
                        },
                        g.version.clone(),
                        d.origin().to_string(),
                        shown,
                    ]
                })
                .collect();
            let mut s = String::new();
            render::table(
                &mut s,
                &["NAME", "KIND", "VERSION", "ORIGIN", "COMPONENTS"],
                &rows,
            );
            crate::write_stdout(&s);
            Ok(())
        }
    }
}
