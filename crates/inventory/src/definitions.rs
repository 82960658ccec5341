//! The definitions in force, looked up the ways the inventory asks: by an object's kind, which
//! kinds are known (a definition's root or a kind it creates), and which kinds are read as
//! references.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use wlmap_engine::{Definition, Object, Registry};
use wlmap_schema::GroupKind;

/// A registry with its lookups precomputed.
#[derive(Default)]
pub(crate) struct Definitions {
    registry: Registry,
    by_kind: HashMap<GroupKind, Vec<Arc<Definition>>>,
    known: HashSet<GroupKind>,
    referenced: HashSet<GroupKind>,
}

impl Definitions {
    pub(crate) fn new(registry: Registry) -> Definitions {
        let mut by_kind: HashMap<GroupKind, Vec<Arc<Definition>>> = HashMap::new();
        let mut known = HashSet::new();
        let mut referenced = HashSet::new();
        for d in registry.iter() {
            let root = d.root_gvk().group_kind();
            by_kind.entry(root.clone()).or_default().push(d.clone());
            known.insert(root);
            known.extend(d.child_kinds().iter().map(|g| g.group_kind()));
            referenced.extend(
                d.karta()
                    .spec
                    .references
                    .iter()
                    .map(|r| r.kind.group_kind()),
            );
        }
        Definitions {
            registry,
            by_kind,
            known,
            referenced,
        }
    }

    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The definition for an object: its exact version first, else the same kind at another
    /// version (as [`Registry::for_kind`]).
    pub(crate) fn for_object(&self, o: &Object) -> Option<&Arc<Definition>> {
        let gvk = o.gvk();
        let defs = self.by_kind.get(&gvk.group_kind())?;
        defs.iter()
            .find(|d| d.root_gvk().version == gvk.version)
            .or_else(|| defs.first())
    }

    pub(crate) fn is_known(&self, gk: &GroupKind) -> bool {
        self.known.contains(gk)
    }

    pub(crate) fn is_referenced(&self, gk: &GroupKind) -> bool {
        self.referenced.contains(gk)
    }

    pub(crate) fn references(def: &Definition) -> bool {
        !def.karta().spec.references.is_empty()
    }

    /// True when `other` knows the same kinds (so no object's place in a workload changes).
    pub(crate) fn same_kinds(&self, other: &Definitions) -> bool {
        self.known == other.known
    }
}
