//! A set of compiled definitions indexed by the kind they describe.

use crate::definition::Definition;
use std::sync::Arc;
use wlmap_schema::GroupVersionKind;

/// Definitions by kind. Later insertions for the same group and kind replace earlier ones, so
/// the catalog is inserted first, then cluster definitions, then files.
///
/// ```
/// let mut reg = wlmap_engine::Registry::default();
/// let def = wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap();
/// reg.insert(def);
/// assert!(reg.for_kind(&wlmap_schema::GroupVersionKind::new("", "v1", "Pod")).is_some());
/// ```
#[derive(Default, Clone)]
pub struct Registry {
    defs: Vec<Arc<Definition>>,
}

impl Registry {
    /// Insert (or replace the definition of the same group, version and kind).
    ///
    /// ```
    /// let mut reg = wlmap_engine::Registry::default();
    /// reg.insert(wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap());
    /// assert_eq!(reg.len(), 1);
    /// ```
    pub fn insert(&mut self, def: Definition) {
        let gvk = def.root_gvk();
        self.defs.retain(|d| d.root_gvk() != gvk);
        self.defs.push(Arc::new(def));
    }

    /// The definition for an object's kind: exact version first, else the same group and kind
    /// at another version (a definition written for v1 reads a v1beta1 object's shape at the
    /// caller's risk; the exact match always wins).
    ///
    /// ```
    /// # let mut reg = wlmap_engine::Registry::default();
    /// # reg.insert(wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap());
    /// assert!(reg.for_kind(&wlmap_schema::GroupVersionKind::new("", "v2", "Pod")).is_some());
    /// ```
    pub fn for_kind(&self, gvk: &GroupVersionKind) -> Option<&Arc<Definition>> {
        self.defs.iter().find(|d| d.root_gvk() == *gvk).or_else(|| {
            self.defs.iter().find(|d| {
                let g = d.root_gvk();
                g.group == gvk.group && g.kind == gvk.kind
            })
        })
    }

    /// A definition by name.
    ///
    /// ```
    /// # let mut reg = wlmap_engine::Registry::default();
    /// # reg.insert(wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap());
    /// assert!(reg.by_name("core-pod-v1").is_some());
    /// ```
    pub fn by_name(&self, name: &str) -> Option<&Arc<Definition>> {
        self.defs.iter().find(|d| d.name() == name)
    }

    /// Every definition, in insertion order.
    ///
    /// ```
    /// assert_eq!(wlmap_engine::Registry::default().iter().count(), 0);
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Definition>> {
        self.defs.iter()
    }

    /// Number of definitions.
    ///
    /// ```
    /// assert_eq!(wlmap_engine::Registry::default().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.defs.len()
    }

    /// True when empty.
    ///
    /// ```
    /// assert!(wlmap_engine::Registry::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.defs.is_empty()
    }
}
