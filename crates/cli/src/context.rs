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
        .map(|(def, i)| resolve_one(set, &index, &by_owner, def, *i, refs))
        .collect()
}

/// [`resolve_all`] on every core: workloads are independent once the owner index is built.
/// For offline objects (references are read from the objects at hand, never the network).
/// Results keep the order of `items`.
pub fn resolve_all_parallel(
    set: &ObjectSet,
    items: &[(Arc<Definition>, usize)],
    refs: &(dyn wlmap_engine::ReferenceProvider + Sync),
) -> Vec<Result<Workload, wlmap_engine::Error>> {
    let index = OwnerIndex::new(&set.objects);
    let by_owner: HashMap<String, Vec<usize>> = set.pods_by_owner(&index);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Small inputs are not worth a thread.
    if threads < 2 || items.len() < 64 {
        return items
            .iter()
            .map(|(def, i)| resolve_one(set, &index, &by_owner, def, *i, refs))
            .collect();
    }
    let chunk = items.len().div_ceil(threads);
    let (index, by_owner) = (&index, &by_owner);
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|(def, i)| resolve_one(set, index, by_owner, def, *i, refs))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

fn resolve_one(
    set: &ObjectSet,
    index: &OwnerIndex,
    by_owner: &HashMap<String, Vec<usize>>,
    def: &Definition,
    i: usize,
    refs: &dyn wlmap_engine::ReferenceProvider,
) -> Result<Workload, wlmap_engine::Error> {
    let obj: &Object = &set.objects[i];
    let mut w = wlmap_engine::resolve_with(def, obj, refs)?;
    let pods = by_owner.get(obj.uid()).map(|v| v.as_slice()).unwrap_or(&[]);
    wlmap_engine::attribute_indexed(
        def,
        &mut w,
        obj,
        pods.iter().map(|&p| &set.objects[p]),
        index,
    )?;
    Ok(w)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The demo cluster copied `n` times into namespaces `copy-0..n` with fresh uids (owner
    /// references follow), as the `synth` example does.
    fn copies(n: usize) -> ObjectSet {
        let demo = ObjectSet::demo().unwrap();
        let uids: Vec<String> = demo.objects.iter().map(|o| o.uid().to_string()).collect();
        let mut objects = Vec::new();
        for i in 0..n {
            for o in &demo.objects {
                let mut text = o.json().to_string();
                for u in uids.iter().filter(|u| u.len() > 12) {
                    let fresh = format!("{}{:012x}", &u[..u.len() - 12], i);
                    text = text.replace(u.as_str(), &fresh);
                }
                let mut v: Value = serde_json::from_str(&text).unwrap();
                v["metadata"]["namespace"] = Value::from(format!("copy-{i}"));
                objects.push(Object::new(v));
            }
        }
        ObjectSet { objects }
    }

    #[test]
    fn resolving_on_every_core_gives_the_same_results_in_the_same_order() {
        let set = copies(8);
        let reg = wlmap_catalog::registry().unwrap();
        let items: Vec<(Arc<Definition>, usize)> = set
            .objects
            .iter()
            .enumerate()
            .filter_map(|(i, o)| reg.for_kind(&o.gvk()).map(|d| (d.clone(), i)))
            .collect();
        assert!(
            items.len() >= 64,
            "the parallel path needs 64 items: {}",
            items.len()
        );
        let refs = wlmap_engine::ObjectsProvider(&set.objects);
        let one = resolve_all(&set, &items, &refs);
        let all = resolve_all_parallel(&set, &items, &refs);
        let show = |r: &Vec<Result<Workload, wlmap_engine::Error>>| -> Vec<String> {
            r.iter()
                .map(|w| match w {
                    Ok(w) => serde_json::to_string(w).unwrap(),
                    Err(e) => e.to_string(),
                })
                .collect()
        };
        let (one, all) = (show(&one), show(&all));
        assert_eq!(one, all);
        // Most of them resolve (a few demo states are deliberately broken objects).
        let resolved = one.iter().filter(|s| s.starts_with('{')).count();
        assert!(
            resolved * 10 >= one.len() * 9,
            "{resolved} of {}",
            one.len()
        );
    }
}
