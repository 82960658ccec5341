//! What every command works with: the objects (from a snapshot, the demo or a cluster) and the
//! definitions in use, indexed by the inventory library, plus the output settings.

use crate::args::{Global, Output};
use crate::exit::Result;
use wlmap_engine::{ReferenceProvider, Registry};
use wlmap_inventory::{Entry, Index, ObjectKey};

/// Objects plus definitions.
pub struct Context {
    /// Global flags.
    pub global: Global,
    /// The objects and the definitions in use.
    pub index: Index,
    /// True when objects come from a snapshot or the demo (read-only).
    pub offline: bool,
    /// The cluster, in live mode.
    pub cluster: Option<crate::cluster::Connection>,
}

impl Context {
    /// The definitions in use.
    pub fn reg(&self) -> &Registry {
        self.index.registry()
    }

    /// Resolve workloads with their pods attributed, in the order of `keys`. Offline,
    /// references come from the objects at hand and the work runs on every core; against a
    /// cluster, references are GETs on one connection, on one thread.
    pub fn evaluate(&self, keys: &[ObjectKey]) -> Vec<Entry> {
        let entries = match &self.cluster {
            None => self.index.evaluate_all(keys),
            Some(c) => {
                let refs = crate::cluster::References::new(c);
                keys.iter()
                    .map(|k| {
                        self.index
                            .evaluate(k, Some(&refs as &dyn ReferenceProvider))
                    })
                    .collect()
            }
        };
        entries.into_iter().flatten().collect()
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

    /// `" in namespace NS"`, or nothing with `-A`: the tail of "not found" messages.
    pub fn where_(&self) -> String {
        self.namespace()
            .map(|n| format!(" in namespace {n}"))
            .unwrap_or_default()
    }
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
