//! `wlmap check`: does every definition in force still fit its kind? Served, its paths in the
//! served schema, its condition types and phases allowed, and live objects of the kind
//! evaluated without error and without `Undefined`. One line per finding; exit 5 when any.

use crate::args::{CheckArgs, Output};
use crate::context::{Context, print_data};
use crate::exit::{Code, Failure, Result};
use wlmap_author::{Crd, Finding};
use wlmap_engine::{Definition, Object, Phase};

/// `wlmap check`: check every definition in force against its kind's CRD and live objects;
/// exit 5 on findings.
pub fn run(ctx: &Context, a: &CheckArgs) -> Result {
    let crds = crds_from_files(&a.crd)?;
    let mut findings = Vec::new();
    let mut checked = Vec::new();
    let mut all_crds = None;
    for def in ctx.reg().iter() {
        let found = match (&ctx.cluster, crds.is_empty()) {
            (_, false) => {
                let Some(crd) = crds.iter().find(|c| fits(c, def)) else {
                    continue;
                };
                wlmap_author::check(def.karta(), crd)
            }
            (Some(conn), true) => against_cluster(conn, def, &mut all_crds)?,
            (None, true) => {
                return Err(crate::exit::usage(
                    "check reads the cluster's CRDs and objects: give a kubeconfig, or --crd FILE",
                ));
            }
        };
        checked.push(def.name());
        findings.extend(found);
    }
    findings.sort();
    report(ctx.output(), &checked, &findings)
}

fn fits(c: &Crd, def: &Definition) -> bool {
    let gvk = def.root_gvk();
    c.group == gvk.group && c.kind == gvk.kind
}

fn crds_from_files(files: &[std::path::PathBuf]) -> Result<Vec<Crd>> {
    let mut out = Vec::new();
    for f in files {
        let text = crate::source::read_input(f)?;
        let docs = crate::source::parse_documents(&text, &f.display().to_string())?;
        let crds = Crd::all_in(&docs);
        if crds.is_empty() {
            return Err(crate::exit::invalid(format!(
                "{}: no CustomResourceDefinition",
                f.display()
            )));
        }
        out.extend(crds);
    }
    Ok(out)
}

/// The findings for one definition against the cluster: its kind served, its CRD's schema
/// (kinds without a CRD, the built-in ones, have no schema check), its live objects.
fn against_cluster(
    conn: &crate::cluster::Connection,
    def: &Definition,
    all_crds: &mut Option<Vec<Crd>>,
) -> Result<Vec<Finding>> {
    let gvk = def.root_gvk();
    let finding = |field: &str, problem: String| Finding {
        definition: def.name(),
        field: field.into(),
        problem,
    };
    let Some(kind) = conn
        .cluster
        .resource(&gvk)
        .map_err(crate::cluster::failure)?
    else {
        // Not served: a CRD of the kind may still say which versions are.
        if let Some(crd) = crds(conn, all_crds)?
            .iter()
            .find(|c| c.group == gvk.group && c.kind == gvk.kind)
        {
            return Ok(wlmap_author::check(def.karta(), crd));
        }
        return Ok(vec![finding(
            "rootComponent.kind",
            format!("{gvk} is not served by the cluster (no CRD for it)"),
        )]);
    };
    let mut out = Vec::new();
    if !gvk.group.is_empty()
        && let Some(crd) =
            crate::commands::scaffold::crd_by_name(conn, &format!("{}.{}", kind.plural, gvk.group))?
    {
        out.extend(wlmap_author::check(def.karta(), &crd));
    }
    let objects = conn
        .cluster
        .list(&kind, None)
        .map_err(crate::cluster::failure)?;
    out.extend(live(def, objects, finding));
    Ok(out)
}

/// Every CRD the cluster has, listed once.
fn crds<'a>(
    conn: &crate::cluster::Connection,
    cache: &'a mut Option<Vec<Crd>>,
) -> Result<&'a Vec<Crd>> {
    if cache.is_none() {
        let gvk = wlmap_schema::GroupVersionKind::new(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
        );
        let listed = match conn
            .cluster
            .resource(&gvk)
            .map_err(crate::cluster::failure)?
        {
            Some(k) => conn
                .cluster
                .list(&k, None)
                .map_err(crate::cluster::failure)?,
            None => Vec::new(),
        };
        *cache = Some(Crd::all_in(&listed));
    }
    Ok(cache.get_or_insert_with(Vec::new))
}

/// Live objects that do not evaluate, or read `Undefined` (a status no rule matches).
fn live(
    def: &Definition,
    objects: Vec<serde_json::Value>,
    finding: impl Fn(&str, String) -> Finding,
) -> Vec<Finding> {
    let total = objects.len();
    let mut failed = Vec::new();
    let mut undefined = Vec::new();
    for v in objects {
        let o = Object::new(v);
        let at = format!("{}/{}", o.namespace(), o.name());
        match wlmap_engine::resolve(def, &o) {
            Err(e) => failed.push(format!("{at} ({e})")),
            Ok(w) if w.status.phase == Phase::Undefined => undefined.push(at),
            Ok(_) => {}
        }
    }
    let mut out = Vec::new();
    let list = |v: &[String]| {
        let mut s = v.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
        if v.len() > 5 {
            s.push_str(&format!(" and {} more", v.len() - 5));
        }
        s
    };
    if !failed.is_empty() {
        out.push(finding(
            "objects",
            format!(
                "{} of {total} do not evaluate: {}",
                failed.len(),
                list(&failed)
            ),
        ));
    }
    if !undefined.is_empty() {
        out.push(finding(
            "statusMappings",
            format!(
                "{} of {total} match no status rule (Undefined): {}",
                undefined.len(),
                list(&undefined)
            ),
        ));
    }
    out
}

fn report(output: Output, checked: &[String], findings: &[Finding]) -> Result {
    match output {
        Output::Json | Output::Yaml => print_data(
            output,
            &serde_json::json!({"checked": checked, "findings": findings}),
        )?,
        _ => {
            let text: String = findings.iter().map(|f| format!("{f}\n")).collect();
            crate::write_stdout(&text);
        }
    }
    eprintln!(
        "wlmap: checked {} definition(s): {} finding(s)",
        checked.len(),
        findings.len()
    );
    if findings.is_empty() {
        Ok(())
    } else {
        Err(Failure::new(
            Code::Invalid,
            anyhow::anyhow!("{} finding(s)", findings.len()),
        ))
    }
}
