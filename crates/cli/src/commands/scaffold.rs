//! `wlmap scaffold`: a draft definition for a CRD (a file, or the cluster's by name), checked
//! against live objects of the kind with `--from-objects`.

use crate::args::ScaffoldArgs;
use crate::context::Context;
use crate::exit::{Result, invalid, usage};
use serde_json::Value;
use wlmap_author::{Crd, Observed};
use wlmap_schema::GroupVersionKind;

/// `wlmap scaffold`: print a draft definition for a CRD (from a file or the cluster), confirmed
/// with live objects when asked.
pub fn run(ctx: &Context, a: &ScaffoldArgs) -> Result {
    let crd = match (&a.file, &a.crd) {
        (Some(f), None) => from_file(f, a.kind.as_deref())?,
        (None, Some(name)) => from_cluster(ctx, name)?,
        _ => return Err(usage("give a CRD file or --crd NAME")),
    };
    let objects = if a.from_objects {
        objects(ctx, &crd)?
    } else {
        Vec::new()
    };
    let observed = Observed::new(&objects);
    let draft = wlmap_author::scaffold(&crd, a.from_objects.then_some(&observed))
        .map_err(|e| invalid(e.to_string()))?;
    crate::write_stdout(&draft.yaml);
    eprintln!(
        "wlmap: drafted {} ({} TODO to review){}",
        draft.name,
        draft.todos,
        if a.from_objects {
            format!(
                "; learned from {} object(s) of the kind",
                objects
                    .iter()
                    .filter(|o| o["kind"] == crd.kind.as_str())
                    .count()
            )
        } else {
            String::new()
        }
    );
    Ok(())
}

/// The CRD of a file (the one of `--kind` when it holds several).
fn from_file(path: &std::path::Path, kind: Option<&str>) -> Result<Crd> {
    let text = crate::source::read_input(path)?;
    let docs = crate::source::parse_documents(&text, &path.display().to_string())?;
    let mut crds = Crd::all_in(&docs);
    if let Some(k) = kind {
        crds.retain(|c| c.kind.eq_ignore_ascii_case(k));
    }
    match crds.len() {
        1 => Ok(crds.remove(0)),
        0 => Err(invalid(format!(
            "{}: no CustomResourceDefinition{}",
            path.display(),
            kind.map(|k| format!(" of kind {k}")).unwrap_or_default()
        ))),
        _ => Err(usage(format!(
            "{} holds several CRDs ({}): choose one with --kind",
            path.display(),
            crds.iter()
                .map(|c| c.kind.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// A served CRD by name (`rayclusters.ray.io`).
fn from_cluster(ctx: &Context, name: &str) -> Result<Crd> {
    let Some(conn) = &ctx.cluster else {
        return Err(usage(
            "--crd NAME reads the cluster's CRD: give a kubeconfig, or a CRD file",
        ));
    };
    crd_by_name(conn, name)?.ok_or_else(|| {
        crate::exit::not_found(format!("customresourcedefinition {name:?} not found"))
    })
}

/// A CRD from the cluster by name; None when there is none.
pub fn crd_by_name(conn: &crate::cluster::Connection, name: &str) -> Result<Option<Crd>> {
    let gvk = GroupVersionKind::new("apiextensions.k8s.io", "v1", "CustomResourceDefinition");
    let kind = conn
        .cluster
        .resource(&gvk)
        .map_err(crate::cluster::failure)?
        .ok_or_else(|| invalid("the cluster serves no CustomResourceDefinitions"))?;
    match conn.cluster.get(&kind, None, name) {
        Ok(v) => Ok(Some(
            Crd::from_value(&v).map_err(|e| invalid(e.to_string()))?,
        )),
        Err(wlmap_kube::Error::NotFound(_)) => Ok(None),
        Err(e) => Err(crate::cluster::failure(e)),
    }
}

/// Objects of the CRD's kind, pods, and the kinds frameworks put between them (Jobs,
/// StatefulSets, ReplicaSets, Deployments): from the snapshot, or listed in every namespace.
fn objects(ctx: &Context, crd: &Crd) -> Result<Vec<Value>> {
    let Some(conn) = &ctx.cluster else {
        return Ok(ctx.index.objects().map(|o| o.json().clone()).collect());
    };
    let version = crd.storage().map(|v| v.name.clone()).unwrap_or_default();
    let kinds = [
        GroupVersionKind::new(&crd.group, &version, &crd.kind),
        GroupVersionKind::new("", "v1", "Pod"),
        GroupVersionKind::new("batch", "v1", "Job"),
        GroupVersionKind::new("apps", "v1", "StatefulSet"),
        GroupVersionKind::new("apps", "v1", "ReplicaSet"),
        GroupVersionKind::new("apps", "v1", "Deployment"),
    ];
    let mut out = Vec::new();
    for gvk in &kinds {
        if let Some(k) = conn
            .cluster
            .resource(gvk)
            .map_err(crate::cluster::failure)?
        {
            out.extend(
                conn.cluster
                    .list(&k, None)
                    .map_err(crate::cluster::failure)?,
            );
        }
    }
    Ok(out)
}
