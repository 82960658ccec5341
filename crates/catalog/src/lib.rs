//! # wlmap-catalog
//!
//! The built-in, tested definitions: one Karta file per workload kind under
//! `crates/catalog/definitions/`, embedded at build time. Every file loads through the strict
//! decoder and the validator (a test checks it), and every kind has fixtures under
//! `crates/catalog/fixtures/<slug>/<state>/` with the objects a real controller writes and the
//! expected reading (see `FIXTURES.md`).
//!
//! ```
//! let reg = wlmap_catalog::registry().unwrap();
//! let jobset = wlmap_schema::GroupVersionKind::new("jobset.x-k8s.io", "v1alpha2", "JobSet");
//! assert!(reg.for_kind(&jobset).is_some());
//! ```

mod generated {
    include!(concat!(env!("OUT_DIR"), "/definitions.rs"));
}

mod demo {
    include!(concat!(env!("OUT_DIR"), "/demo.rs"));
}

pub mod conformance;
pub mod synth;

/// The catalog's version: it ships with wlmap, and moves with it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub use demo::DEMO;
pub use generated::FILES;
use wlmap_engine::{Definition, Origin, Registry};
use wlmap_schema::Karta;

/// Errors of the catalog (only possible if a built-in definition is broken; a test guards it).
///
/// ```
/// let source = wlmap_schema::decode("kind: [", "bad.yaml").unwrap_err();
/// let e = wlmap_catalog::Error::Decode { file: "bad.yaml".into(), source };
/// assert!(e.to_string().starts_with("catalog file bad.yaml: "));
/// assert!(wlmap_catalog::registry().is_ok()); // the built-in files never fail
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file does not decode.
    #[error("catalog file {file}: {source}")]
    Decode {
        /// File name.
        file: String,
        /// The decoding error, with its place in the file.
        #[source]
        source: wlmap_schema::Error,
    },
    /// A definition does not compile.
    #[error("catalog file {file}: {source}")]
    Compile {
        /// File name.
        file: String,
        /// The compile error: the first finding that refused the definition.
        #[source]
        source: wlmap_engine::Error,
    },
}

/// Every built-in definition, decoded.
///
/// ```
/// let all = wlmap_catalog::kartas().unwrap();
/// assert!(all.iter().any(|(_, k)| k.name() == "batch-job-v1"));
/// ```
pub fn kartas() -> Result<Vec<(&'static str, Karta)>, Error> {
    let mut out = Vec::new();
    for (file, text) in FILES {
        let ks = wlmap_schema::decode(text, file).map_err(|source| Error::Decode {
            file: file.to_string(),
            source,
        })?;
        out.extend(ks.into_iter().map(|k| (*file, k)));
    }
    Ok(out)
}

/// Every built-in definition, compiled, in a registry.
///
/// ```
/// assert!(wlmap_catalog::registry().unwrap().len() >= 20);
/// ```
pub fn registry() -> Result<Registry, Error> {
    let mut reg = Registry::default();
    for (file, k) in kartas()? {
        reg.insert(
            Definition::compile(k, Origin::Catalog).map_err(|source| Error::Compile {
                file: file.to_string(),
                source,
            })?,
        );
    }
    Ok(reg)
}

/// The definitions in force in a cluster: the catalog, overridden by its `kartas.run.ai`
/// objects (as the API server returns them) for their kinds. Each object is decoded as the
/// format's Go implementation decodes it (an unknown field dropped, legacy ResourceInterface
/// converted); one that does not decode or compile is skipped. The warnings say what was
/// skipped or dropped, naming the object. The CLI and the controller both read a cluster's
/// definitions through this.
///
/// ```
/// let bad = serde_json::json!({"kind": "Karta", "metadata": {"name": "broken"}});
/// let (reg, warnings) = wlmap_catalog::with_cluster_kartas(&[bad]).unwrap();
/// assert_eq!(reg.len(), wlmap_catalog::registry().unwrap().len());
/// assert!(warnings[0].starts_with("cluster definition broken skipped: "), "{warnings:?}");
/// ```
pub fn with_cluster_kartas(
    objects: &[serde_json::Value],
) -> Result<(Registry, Vec<String>), Error> {
    let mut reg = registry()?;
    let mut warnings = Vec::new();
    for it in objects {
        let name = it["metadata"]["name"].as_str().unwrap_or("?");
        let decoded =
            wlmap_schema::decode_compatible(&it.to_string(), &format!("kartas.run.ai/{name}"));
        let skipped = |e: &dyn std::fmt::Display| format!("cluster definition {name} skipped: {e}");
        match decoded {
            Ok(d) => {
                warnings.extend(d.ignored.iter().map(|i| i.to_string()));
                for k in d.kartas {
                    match Definition::compile(k, Origin::Cluster) {
                        Ok(d) => reg.insert(d),
                        Err(e) => warnings.push(skipped(&e)),
                    }
                }
            }
            Err(e) => warnings.push(skipped(&e)),
        }
    }
    Ok((reg, warnings))
}

/// The README's library example runs as a doc-test.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
