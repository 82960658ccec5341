//! `wlmap version`: which wlmap this is, built from which commit, with which catalog, reading
//! which definition formats.

use crate::args::Output;
use crate::exit::{Result, invalid};
use serde::Serialize;

/// What `wlmap version` says.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Version {
    /// wlmap's version.
    pub version: &'static str,
    /// The git commit it was built from.
    pub revision: &'static str,
    /// The built-in catalog.
    pub catalog: Catalog,
    /// The definition formats it reads (`apiVersion`, `kind`).
    pub formats: Vec<Format>,
}

/// The built-in catalog.
#[derive(Debug, Serialize)]
pub struct Catalog {
    /// Its version (it ships with wlmap).
    pub version: &'static str,
    /// How many definitions it holds.
    pub definitions: usize,
}

/// A definition format.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Format {
    /// `apiVersion`.
    pub api_version: &'static str,
    /// `kind`.
    pub kind: &'static str,
}

/// This build.
pub fn this() -> Result<Version> {
    let catalog =
        wlmap_catalog::registry().map_err(|e| invalid(format!("built-in catalog: {e}")))?;
    Ok(Version {
        version: env!("CARGO_PKG_VERSION"),
        revision: env!("WLMAP_REVISION"),
        catalog: Catalog {
            version: wlmap_catalog::VERSION,
            definitions: catalog.len(),
        },
        formats: vec![
            Format {
                api_version: wlmap_schema::API_VERSION,
                kind: wlmap_schema::KIND,
            },
            Format {
                api_version: wlmap_schema::LEGACY_API_VERSION,
                kind: wlmap_schema::LEGACY_KIND,
            },
        ],
    })
}

/// Print the version as asked.
pub fn run(output: Option<Output>) -> Result {
    let v = this()?;
    match output {
        Some(Output::Json) => crate::context::print_data(Output::Json, &v),
        Some(Output::Yaml) => crate::context::print_data(Output::Yaml, &v),
        _ => {
            let formats: Vec<String> = v
                .formats
                .iter()
                .map(|f| format!("{} {}", f.api_version, f.kind))
                .collect();
            crate::write_stdout(&format!(
                "wlmap {}\nrevision: {}\ncatalog: {} ({} definitions)\nformats: {}\n",
                v.version,
                v.revision,
                v.catalog.version,
                v.catalog.definitions,
                formats.join(", ")
            ));
            Ok(())
        }
    }
}

/// Write the manual pages: `wlmap.1` and `wlmap-COMMAND.1` for each command (hidden ones
/// aside), from the same definitions `--help` prints (clap's own generator).
pub fn man(dir: &std::path::Path) -> Result {
    use clap::CommandFactory;
    let io = |e: std::io::Error| invalid(format!("{}: {e}", dir.display()));
    std::fs::create_dir_all(dir).map_err(io)?;
    // Each command's page is `wlmap-COMMAND.1`, titled as `man` lists it.
    clap_mangen::generate_to(crate::args::Cli::command(), dir).map_err(io)?;
    Ok(())
}
