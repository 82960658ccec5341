//! The definitions in force: the catalog, overridden by `kartas.run.ai` objects of the same
//! kind (decoded strictly, legacy ResourceInterface converted; a bad one is skipped and said).

use serde_json::Value;
use wlmap_engine::{Definition, Origin, Registry};

/// The catalog plus these Karta objects; the warnings say what was skipped and why.
///
/// ```
/// let (reg, warnings) = wlmap_controller::definitions::registry(&[serde_json::json!({"kind": "Karta"})]);
/// assert_eq!(reg.len(), wlmap_catalog::registry().unwrap().len());
/// assert_eq!(warnings.len(), 1);
/// ```
pub fn registry(kartas: &[Value]) -> (Registry, Vec<String>) {
    let mut warnings = Vec::new();
    let mut reg = match wlmap_catalog::registry() {
        Ok(r) => r,
        Err(e) => {
            warnings.push(format!("built-in catalog: {e}"));
            Registry::default()
        }
    };
    for it in kartas {
        let name = it["metadata"]["name"].as_str().unwrap_or("?");
        let decoded = wlmap_schema::decode(&it.to_string(), &format!("kartas.run.ai/{name}"));
        match decoded {
            Ok(ks) => {
                for k in ks {
                    match Definition::compile(k, Origin::Cluster) {
                        Ok(d) => reg.insert(d),
                        Err(e) => warnings.push(format!("definition {name} skipped: {e}")),
                    }
                }
            }
            Err(e) => warnings.push(format!("definition {name} skipped: {e}")),
        }
    }
    (reg, warnings)
}
