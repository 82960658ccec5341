//! What every command works with: the objects (from a snapshot, the demo or a cluster), the
//! definitions in use, and the output settings.

use crate::args::{Global, Output};
use crate::exit::Result;
use crate::source::ObjectSet;
use std::collections::HashMap;
use std::sync::Arc;
use wlmap_engine::{Definition, Object, OwnerIndex, Registry, Workload};

/// Objects plus definitions.
pub struct Context {
    /// Global flags.
    pub global: Global,
    /// Objects.
    pub set: ObjectSet,
    /// Definitions.
    pub reg: Registry,
    /// True when objects come from a snapshot or the demo (read-only).
    pub offline: bool,
    /// The cluster, in live mode.
    pub cluster: Option<crate::cluster::Connection>,
}

impl Context {
    /// Where references (`spec.references` of a definition) are read: the cluster (GET, cached)
    /// in live mode, else the objects at hand.
    pub fn references<'a>(
        &'a self,
        set: &'a ObjectSet,
    ) -> Box<dyn wlmap_engine::ReferenceProvider + 'a> {
        match &self.cluster {
            Some(c) => Box::new(crate::cluster::References::new(c)),
            None => Box::new(wlmap_engine::ObjectsProvider(&set.objects)),
        }
    }

    /// Output format (default table).
    pub fn output(&self) -> Output {
        self.global.output.unwrap_or(Output::Table)
    }

    /// Namespace filter: None = all namespaces.
    pub fn namespace(&self) -> Option<String> {
        if self.global.all_namespaces {
            None
        } else {
            Some(
                self.global
                    .namespace
                    .clone()
                    .unwrap_or_else(|| "default".into()),
            )
        }
    }
}

/// Resolve workloads and attribute their pods, building the owner index once.
pub fn resolve_all(
    set: &ObjectSet,
    items: &[(Arc<Definition>, usize)],
    refs: &dyn wlmap_engine::ReferenceProvider,
) -> Vec<Result<Workload, wlmap_engine::Error>> {
    let index = OwnerIndex::new(&set.objects);
    let by_owner: HashMap<String, Vec<usize>> = set.pods_by_owner(&index);
    items
        .iter()
        .map(|(def, i)| {
            let obj: &Object = &set.objects[*i];
            let mut w = wlmap_engine::resolve_with(def, obj, refs)?;
            let pods = by_owner.get(obj.uid()).map(|v| v.as_slice()).unwrap_or(&[]);
            wlmap_engine::attribute_indexed(
                def,
                &mut w,
                obj,
                pods.iter().map(|&p| &set.objects[p]),
                &index,
            )?;
            Ok(w)
        })
        .collect()
}

/// Print data as JSON or YAML.
pub fn print_data<T: serde::Serialize>(out: Output, data: &T) -> Result {
    let text = match out {
        Output::Yaml => serde_saphyr::to_string(data).map_err(|e| anyhow::anyhow!("yaml: {e}"))?,
        _ => {
            let mut s =
                serde_json::to_string_pretty(data).map_err(|e| anyhow::anyhow!("json: {e}"))?;
            s.push('\n');
            s
        }
    };
    crate::write_stdout(&text);
    Ok(())
}
