//! The live-cluster source: which kinds to LIST for a command (a constant number of paginated
//! LISTs per kind, never one request per pod), definitions from `kartas.run.ai`, and
//! references read on demand.

use crate::args::{GetArgs, Global};
use crate::defs::{resolve_type, single, targets};
use crate::exit::{Code, Failure, Result, not_found};
use crate::source::ObjectSet;
use std::io::IsTerminal;
use wlmap_engine::{Object, Registry};
use wlmap_kube::{Cluster, ConnectOptions, Error, Kind};
use wlmap_schema::GroupVersionKind;

/// Map cluster errors to exit codes.
pub fn failure(e: Error) -> Failure {
    let code = match &e {
        Error::NotFound(_) => Code::NotFound,
        Error::Refused(_) => Code::Invalid,
        _ => Code::Runtime,
    };
    Failure::new(code, anyhow::anyhow!("{e}"))
}

/// A connected cluster.
pub struct Connection {
    /// The client.
    pub cluster: Cluster,
}

impl Connection {
    /// Connect (no request yet).
    pub fn new(g: &Global) -> Result<Connection> {
        let opts = ConnectOptions {
            kubeconfig: g.kubeconfig.clone(),
            context: g.context.clone(),
            timeout: Some(std::time::Duration::from_secs(g.request_timeout.max(1))),
            page_size: None,
        };
        Ok(Connection {
            cluster: Cluster::connect(&opts).map_err(failure)?,
        })
    }

    /// The `kartas.run.ai` objects of the cluster; when they cannot be read, one warning and
    /// none (the catalog only).
    pub fn kartas(&self) -> Result<Vec<serde_json::Value>> {
        match self.cluster.kartas() {
            Ok(items) => Ok(items),
            Err(Error::NotFound(_)) => {
                eprintln!(
                    "wlmap: warning: the kartas.run.ai CRD is not installed; using built-in definitions only"
                );
                Ok(vec![])
            }
            Err(Error::Forbidden(_)) => {
                eprintln!(
                    "wlmap: warning: not allowed to list kartas.run.ai; using built-in definitions only"
                );
                Ok(vec![])
            }
            Err(e @ (Error::Unreachable { .. } | Error::Config(_))) => Err(failure(e)),
            Err(e) => {
                eprintln!(
                    "wlmap: warning: cannot read cluster definitions ({e}); using built-in definitions only"
                );
                Ok(vec![])
            }
        }
    }

    /// The kind as the server serves it, if it does.
    pub fn kind(&self, gvk: &GroupVersionKind) -> Result<Option<Kind>> {
        self.cluster.resource(gvk).map_err(failure)
    }

    fn list_into(&self, set: &mut ObjectSet, kinds: &[Kind], ns: Option<&str>) -> Result {
        let progress = std::io::stderr().is_terminal() && kinds.len() > 2;
        for (i, k) in kinds.iter().enumerate() {
            if progress {
                eprint!(
                    "\r\u{1b}[2Klisting {} ({}/{})",
                    k.plural,
                    i + 1,
                    kinds.len()
                );
            }
            let items = match self.cluster.list(k, if k.namespaced { ns } else { None }) {
                Ok(items) => items,
                // What completes a view (DRA claims, gang objects) is shown when allowed.
                Err(Error::Forbidden(e)) if optional(&k.gvk()) => {
                    eprintln!("wlmap: warning: not allowed to list {}: {e}", k.plural);
                    continue;
                }
                Err(e) => return Err(failure(e)),
            };
            set.objects.extend(items.into_iter().map(Object::new));
        }
        if progress {
            eprint!("\r\u{1b}[2K");
        }
        Ok(())
    }

    /// LIST the workloads `get` asks for, and what they are made of.
    pub fn workloads(&self, a: &GetArgs, ns: Option<&str>, reg: &Registry) -> Result<ObjectSet> {
        let mut set = ObjectSet::default();
        let kinds = self.kinds_for_get(a, reg)?;
        self.list_into(&mut set, &kinds, ns)?;
        Ok(set)
    }

    /// GET one workload (`TYPE/NAME`), and LIST the kinds it is made of in its namespace.
    pub fn one_workload(
        &self,
        targets: &[String],
        ns: Option<&str>,
        reg: &Registry,
    ) -> Result<ObjectSet> {
        let mut set = ObjectSet::default();
        let (gvk, name) = single(reg, targets)?;
        let (gvk, name) = (&gvk, &name);
        let kind = self
            .kind(gvk)?
            .ok_or_else(|| not_found(format!("the server does not serve {gvk}")))?;
        let obj = self.cluster.get(&kind, ns, name).map_err(|e| match e {
            Error::NotFound(_) => not_found(format!(
                "{} {name:?} not found{}",
                gvk.kind,
                ns.map(|n| format!(" in namespace {n}")).unwrap_or_default()
            )),
            other => failure(other),
        })?;
        let mut obj = obj;
        if let Some(m) = obj.as_object_mut() {
            m.insert("apiVersion".into(), kind.api_version().into());
            m.insert("kind".into(), kind.kind.clone().into());
        }
        set.objects.push(Object::new(obj));
        let kinds = self.kinds_below(gvk, reg)?;
        let ns_of = set.objects[0].namespace().to_string();
        self.list_into(
            &mut set,
            &kinds,
            if ns_of.is_empty() { ns } else { Some(&ns_of) },
        )?;
        Ok(set)
    }

    /// The kinds below one workload of this kind: those its definition creates (Secrets
    /// excepted), pods, the DRA claims pods hold devices through, and the gang objects
    /// schedulers read (`describe` shows what they say); only those the server serves.
    pub fn kinds_below(&self, gvk: &GroupVersionKind, reg: &Registry) -> Result<Vec<Kind>> {
        let def = reg.for_kind(gvk).cloned();
        let mut kinds = Vec::new();
        for child in def
            .map(|d| d.child_kinds())
            .unwrap_or_default()
            .into_iter()
            .filter(|g| !(g.group.is_empty() && g.kind == "Secret"))
            .chain([
                GroupVersionKind::new("", "v1", "Pod"),
                wlmap_engine::dra::kind("ResourceClaim"),
            ])
            .chain(wlmap_engine::gang_object_kinds())
        {
            if let Some(k) = self.kind(&child)?
                && !kinds
                    .iter()
                    .any(|x: &Kind| x.group_kind() == k.group_kind())
            {
                kinds.push(k);
            }
        }
        Ok(kinds)
    }

    /// The kinds `get` reads: the roots asked for, the kinds their definitions create that
    /// may own pods (for owner chains), the kinds their definitions read as references, and
    /// pods; only those the server serves.
    pub fn kinds_for_get(&self, a: &GetArgs, reg: &Registry) -> Result<Vec<Kind>> {
        let mut roots: Vec<GroupVersionKind> = Vec::new();
        if a.all_types {
            roots.extend(reg.iter().map(|d| d.root_gvk()));
        }
        for (t, _) in targets(&a.targets)? {
            roots.extend(resolve_type(reg, &t)?.iter().map(|d| d.root_gvk()));
        }
        self.kinds_of_workloads(&roots, reg, a.watch)
    }

    /// The kinds served by the cluster that workloads of these root kinds are made of (and,
    /// for a watch, the kinds their definitions read as references), each once.
    pub fn kinds_of_workloads(
        &self,
        roots: &[GroupVersionKind],
        reg: &Registry,
        references: bool,
    ) -> Result<Vec<Kind>> {
        let want = if references {
            wlmap_inventory::kinds_to_follow(reg, roots)
        } else {
            wlmap_inventory::kinds_to_watch(reg, roots)
        };
        let mut kinds: Vec<Kind> = Vec::new();
        for g in &want {
            if let Some(k) = self.kind(g)?
                && !kinds.iter().any(|x| x.gvk() == k.gvk())
            {
                kinds.push(k);
            }
        }
        Ok(kinds)
    }
}

/// Kinds a view is completed with but can do without: DRA claims and gang objects. Not
/// being allowed to list them is a warning, not a failure.
fn optional(g: &GroupVersionKind) -> bool {
    g.group == "resource.k8s.io"
        || wlmap_engine::gang_object_kinds().any(|k| k.group == g.group && k.kind == g.kind)
}

/// (kind, namespace, name) of a referenced object.
type RefKey = (GroupVersionKind, Option<String>, String);

/// References read from the cluster: one GET per referenced object, and one LIST per
/// cluster-wide DRA kind (DeviceClasses, ResourceSlices), cached for the command.
pub struct References<'a> {
    conn: &'a Connection,
    cache: std::cell::RefCell<std::collections::HashMap<RefKey, Option<serde_json::Value>>>,
    lists: std::cell::RefCell<
        std::collections::HashMap<GroupVersionKind, Option<Vec<serde_json::Value>>>,
    >,
}

impl<'a> References<'a> {
    /// A provider over a connection.
    pub fn new(conn: &'a Connection) -> Self {
        References {
            conn,
            cache: Default::default(),
            lists: Default::default(),
        }
    }
}

impl wlmap_engine::ReferenceProvider for References<'_> {
    fn get(
        &self,
        kind: &GroupVersionKind,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<serde_json::Value> {
        let key = (kind.clone(), namespace.map(String::from), name.to_string());
        if let Some(v) = self.cache.borrow().get(&key) {
            return v.clone();
        }
        let v = match self.conn.cluster.resource(kind) {
            Ok(Some(k)) => match self.conn.cluster.get(&k, namespace, name) {
                Ok(v) => Some(v),
                Err(Error::NotFound(_)) => None,
                Err(e) => {
                    eprintln!("wlmap: warning: cannot read {} {name}: {e}", kind.kind);
                    None
                }
            },
            _ => None,
        };
        self.cache.borrow_mut().insert(key, v.clone());
        v
    }

    fn list(&self, kind: &GroupVersionKind) -> Option<Vec<serde_json::Value>> {
        let dra = kind.group == "resource.k8s.io"
            && (kind.kind == "DeviceClass" || kind.kind == "ResourceSlice");
        if !dra {
            return None;
        }
        if let Some(v) = self.lists.borrow().get(kind) {
            return v.clone();
        }
        let v = match self.conn.cluster.resource(kind) {
            Ok(Some(k)) => match self.conn.cluster.list(&k, None) {
                Ok(items) => Some(items),
                Err(e) => {
                    eprintln!("wlmap: warning: cannot list {}: {e}", k.plural);
                    None
                }
            },
            _ => None,
        };
        self.lists.borrow_mut().insert(kind.clone(), v.clone());
        v
    }
}
