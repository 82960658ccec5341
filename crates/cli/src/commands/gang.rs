//! `wlmap gang`: gang-scheduling groups, in each scheduler's language.

use crate::args::{GangArgs, GangFormat, Output};
use crate::context::{Context, print_data};
use crate::exit::Result;
use serde_json::json;
use wlmap_engine::SchedulerFormat;

/// Run.
pub fn run(ctx: &Context, a: &GangArgs) -> Result {
    let loaded = crate::commands::describe::load(ctx, a.file.as_deref(), &a.targets)?;
    let (def, obj) = (&loaded.entry.definition, &loaded.entry.object);
    let w = loaded.entry.result?;
    let has_pods = w.observed_pods() > 0;
    let groups = wlmap_engine::gangs(def, &w, has_pods.then_some(loaded.objects.as_slice()))?;
    match a.format {
        None => {
            let out = if ctx.output() == Output::Yaml {
                Output::Yaml
            } else {
                Output::Json
            };
            print_data(
                out,
                &json!({"podGroups": groups, "mode": if has_pods { "observed" } else { "predicted" }}),
            )
        }
        Some(f) => {
            let format = match f {
                GangFormat::Kai => SchedulerFormat::Kai,
                GangFormat::Coscheduling => SchedulerFormat::Coscheduling,
                GangFormat::Volcano => SchedulerFormat::Volcano,
                GangFormat::Kueue => SchedulerFormat::Kueue,
                GangFormat::Workload => SchedulerFormat::Workload,
            };
            let docs = wlmap_engine::render_gangs(format, &groups, &w, obj);
            if ctx.output() == Output::Json {
                return print_data(Output::Json, &json!({"items": docs}));
            }
            let mut s = String::new();
            for d in docs {
                s.push_str("---\n");
                s.push_str(&serde_saphyr::to_string(&d).map_err(|e| anyhow::anyhow!("yaml: {e}"))?);
            }
            crate::write_stdout(&s);
            Ok(())
        }
    }
}
