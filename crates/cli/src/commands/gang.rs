//! `wlmap gang`: gang-scheduling groups, in each scheduler's language.

use crate::args::{GangArgs, GangFormat, Output};
use crate::context::{Context, print_data, resolve_all};
use crate::exit::Result;
use crate::source::ObjectSet;
use serde_json::json;
use wlmap_engine::SchedulerFormat;

/// Run.
pub fn run(ctx: &Context, a: &GangArgs) -> Result {
    let (holder, def, idx, file_mode);
    if let Some(f) = &a.file {
        let (s, d, i) = crate::commands::describe::from_file(ctx, f)?;
        holder = s;
        def = d;
        idx = i;
        file_mode = true;
    } else {
        let (d, i) = crate::commands::describe::find(ctx, &a.targets)?;
        holder = ObjectSet::default();
        def = d;
        idx = i;
        file_mode = false;
    }
    let set = if file_mode { &holder } else { &ctx.set };
    let obj = &set.objects[idx];
    let w = resolve_all(set, &[(def.clone(), idx)], ctx.references(set).as_ref())
        .pop()
        .expect("one in, one out")?;
    let has_pods = w.observed_pods() > 0;
    let groups = wlmap_engine::gangs(&def, &w, has_pods.then_some(set.objects.as_slice()))?;
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
