//! `wlmap validate`: decoding (unknown fields as warnings), structure and expressions, as
//! `file:line:col:` findings.

use crate::args::ValidateArgs;
use crate::exit::{Code, Failure, Result};
use crate::source::read_input;
use wlmap_schema::{Severity, Source};

/// `wlmap validate`: decode and check definition files (and fit them to CRDs with `--crd`);
/// exit 5 when one has an error (or, with `--strict`, a warning).
pub fn run(a: &ValidateArgs) -> Result {
    let mut tally = Tally::default();
    let mut out = String::new();
    for f in &a.files {
        let name = f.display().to_string();
        let text = read_input(f)?;
        out.push_str(&validate_file(a, &name, &text, &mut tally)?);
    }
    crate::write_stdout(&out);
    let failing = tally.errors + if a.strict { tally.warnings } else { 0 };
    if failing > 0 {
        return Err(Failure::new(
            Code::Invalid,
            anyhow::anyhow!("{} error(s), {} warning(s)", tally.errors, tally.warnings),
        ));
    }
    Ok(())
}

/// Errors and warnings found so far.
#[derive(Default)]
struct Tally {
    errors: usize,
    warnings: usize,
}

/// The findings of one file, one line each, ending with `ok` when it has no error.
fn validate_file(a: &ValidateArgs, name: &str, text: &str, tally: &mut Tally) -> Result<String> {
    let mut out = String::new();
    // Read as the format's Go implementation reads it: an unknown field is a warning.
    let decoded = match wlmap_schema::decode_compatible(text, name) {
        Ok(d) => d,
        Err(e) => {
            tally.errors += 1;
            return Ok(format!("{e}\n"));
        }
    };
    for ignored in &decoded.ignored {
        out.push_str(&format!(
            "{}: warning: unknown field `{}` (hint: the format has no such field and its Go implementation ignores it; check the spelling)\n",
            ignored.location, ignored.path
        ));
        tally.warnings += 1;
    }
    let kartas = decoded.kartas;
    let src = Source { file: name, text };
    let mut file_errors = 0;
    for k in &kartas {
        for (f, loc) in wlmap_engine::Definition::check(k, Some(&src)) {
            // Without a place in the file (a JSON input), the component says where.
            let at = match (loc, &f.field.component) {
                (Some(l), _) => l.to_string(),
                (None, Some(c)) => format!("{name}: component {c}"),
                (None, None) => name.to_string(),
            };
            out.push_str(&format!(
                "{at}: {}: {} (hint: {})\n",
                f.severity, f.message, f.hint
            ));
            match f.severity {
                Severity::Error => file_errors += 1,
                Severity::Warning => tally.warnings += 1,
            }
        }
    }
    if let Some(crd) = &a.crd {
        for w in crd_warnings(&kartas, crd)? {
            out.push_str(&format!("{name}: warning: {w}\n"));
            tally.warnings += 1;
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
    tally.errors += file_errors;
    Ok(out)
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
