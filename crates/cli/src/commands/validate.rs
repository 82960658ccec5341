//! `wlmap validate`: strict decoding, structure and expressions, as `file:line:col:` findings.

use crate::args::ValidateArgs;
use crate::exit::{Code, Failure, Result};
use crate::source::read_input;
use wlmap_schema::{Severity, Source};

/// `wlmap validate`: decode and check definition files (and fit them to CRDs with `--crd`);
/// exit 5 when one has an error.
pub fn run(a: &ValidateArgs) -> Result {
    let mut errors = 0;
    let mut warnings = 0;
    let mut out = String::new();
    for f in &a.files {
        let name = f.display().to_string();
        let text = read_input(f)?;
        let kartas = match wlmap_schema::decode(&text, &name) {
            Ok(k) => k,
            Err(e) => {
                errors += 1;
                out.push_str(&format!("{e}\n"));
                continue;
            }
        };
        let src = Source {
            file: &name,
            text: &text,
        };
        let mut file_errors = 0;
        for k in &kartas {
            for (f, loc) in wlmap_engine::Definition::check(k, Some(&src)) {
                // Without a place in the file (a JSON input), the component says where.
                let at = match (loc, &f.field.component) {
                    (Some(l), _) => l.to_string(),
                    (None, Some(c)) => format!("{name}: component {c}"),
                    (None, None) => name.clone(),
                };
                out.push_str(&format!(
                    "{at}: {}: {} (hint: {})\n",
                    f.severity, f.message, f.hint
                ));
                match f.severity {
                    Severity::Error => file_errors += 1,
                    Severity::Warning => warnings += 1,
                }
            }
        }
        if let Some(crd) = &a.crd {
            for w in crd_warnings(&kartas, crd)? {
                out.push_str(&format!("{name}: warning: {w}\n"));
                warnings += 1;
            }
        }
        if file_errors == 0 {
            let names: Vec<String> = kartas.iter().map(|k| k.name()).collect();
            out.push_str(&format!(
                "{name}: ok: {} definition(s): {}\n",
                kartas.len(),
                names.join(", ")
            ));
        }
        errors += file_errors;
    }
    crate::write_stdout(&out);
    if errors > 0 {
        return Err(Failure::new(
            Code::Invalid,
            anyhow::anyhow!("{errors} error(s), {warnings} warning(s)"),
        ));
    }
    Ok(())
}

/// Where the definitions do not fit the CRD of their kind in a file (`wlmap check`'s findings).
fn crd_warnings(kartas: &[wlmap_schema::Karta], crd: &std::path::Path) -> Result<Vec<String>> {
    let text = read_input(crd)?;
    let docs = crate::source::parse_documents(&text, &crd.display().to_string())?;
    let crds = wlmap_author::Crd::all_in(&docs);
    if crds.is_empty() {
        return Err(crate::exit::invalid(format!(
            "{}: no CustomResourceDefinition",
            crd.display()
        )));
    }
    let mut out = Vec::new();
    for k in kartas {
        let root = k.root().kind.clone().unwrap_or_default();
        let Some(c) = crds
            .iter()
            .find(|c| c.group == root.group && c.kind == root.kind)
        else {
            out.push(format!(
                "{}: no CRD for {}.{} in {}",
                k.name(),
                root.kind,
                root.group,
                crd.display()
            ));
            continue;
        };
        out.extend(
            wlmap_author::check(k, c)
                .into_iter()
                .map(|f| format!("{}: {}", f.field, f.problem)),
        );
    }
    Ok(out)
}
