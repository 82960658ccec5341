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
    /// Experimental definitions kept aside (not used) until [`Registry::use_experimental`].
    aside: Vec<Arc<Definition>>,
    experimental: bool,
}

impl Registry {
    /// Insert (or replace the definition of the same group, version and kind). A definition
    /// marked experimental is kept aside, unused, unless [`Registry::use_experimental`] was
    /// called.
    ///
    /// ```
    /// let mut reg = wlmap_engine::Registry::default();
    /// reg.insert(wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::Catalog).unwrap());
    /// assert_eq!(reg.len(), 1);
    /// ```
    pub fn insert(&mut self, def: Definition) {
        let gvk = def.root_gvk();
        let list = if def.experimental() && !self.experimental {
            &mut self.aside
        } else {
            &mut self.defs
        };
        list.retain(|d| d.root_gvk() != gvk);
        list.push(Arc::new(def));
    }

    /// Use experimental definitions too: those kept aside, and those inserted from now on.
    ///
    /// ```
    /// use wlmap_engine::{Definition, Origin, Registry};
    /// let mut k = wlmap_schema::Karta::example();
    /// k.spec.experimental = true;
    /// let mut reg = Registry::default();
    /// reg.insert(Definition::compile(k, Origin::File).unwrap());
    /// assert_eq!((reg.len(), reg.kept_aside().count()), (0, 1));
    /// reg.use_experimental();
    /// assert_eq!((reg.len(), reg.kept_aside().count()), (1, 0));
    /// ```
    pub fn use_experimental(&mut self) {
        self.experimental = true;
        for d in std::mem::take(&mut self.aside) {
            let gvk = d.root_gvk();
            self.defs.retain(|x| x.root_gvk() != gvk);
            self.defs.push(d);
        }
    }

    /// The experimental definitions kept aside (not used).
    pub fn kept_aside(&self) -> impl Iterator<Item = &Arc<Definition>> {
        self.aside.iter()
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

    /// The definitions a TYPE names, as kubectl reads a resource type: a kind, its plural or
    /// a definition's short name, optionally with `.group` or `.version.group`
    /// (case-insensitive). Several may match (versions, groups); the caller picks per object.
    /// A short name names its definition alone; without a group, a name shared by a
    /// built-in kind and custom kinds is the built-in one (a bare `job` is `batch/v1` Job, not
    /// a Volcano Job). Empty when nothing matches.
    ///
    /// ```
    /// use wlmap_engine::{Definition, Origin, Registry};
    /// let mut reg = Registry::default();
    /// reg.insert(Definition::compile(wlmap_schema::Karta::example(), Origin::Catalog).unwrap());
    /// for t in ["pods", "Pod", "pod.v1."] {
    ///     assert_eq!(reg.resolve_type(t).len(), 1, "{t}");
    /// }
    /// assert!(reg.resolve_type("pod.batch").is_empty());
    /// assert!(reg.resolve_type("gadget").is_empty());
    /// ```
    pub fn resolve_type(&self, ty: &str) -> Vec<Arc<Definition>> {
        let t = ty.to_lowercase();
        let (name, group) = match t.split_once('.') {
            Some((n, g)) => (n.to_string(), Some(g.to_string())),
            None => (t.clone(), None),
        };
        let in_group = |d: &Definition| match &group {
            Some(gr) => {
                let g = d.root_gvk();
                g.group == *gr || format!("{}.{}", g.version, g.group) == *gr
            }
            None => true,
        };
        let matching = |by: &dyn Fn(&Definition) -> bool| -> Vec<Arc<Definition>> {
            self.iter()
                .filter(|d| by(d) && in_group(d))
                .cloned()
                .collect()
        };
        let by_short = matching(&|d| d.karta().spec.short_names.contains(&name));
        if !by_short.is_empty() {
            return by_short;
        }
        let hits = matching(&|d| {
            let kind = &d.root_gvk().kind;
            kind.to_lowercase() == name || plural(kind) == name
        });
        if group.is_none() {
            let builtin: Vec<_> = hits
                .iter()
                .filter(|d| matches!(d.root_gvk().group.as_str(), "" | "apps" | "batch"))
                .cloned()
                .collect();
            if !builtin.is_empty() && builtin.len() < hits.len() {
                return builtin;
            }
        }
        hits
    }
}

/// A kind's plural as the API's conventions make it (`Policy` → `policies`, `Ingress` →
/// `ingresses`).
fn plural(kind: &str) -> String {
    let k = kind.to_lowercase();
    if k.ends_with('s') || k.ends_with('x') {
        format!("{k}es")
    } else if let Some(stem) = k.strip_suffix('y') {
        format!("{stem}ies")
    } else {
        format!("{k}s")
    }
}
