//! Errors of the engine.

use wlmap_schema::Finding;

/// Which expression of which definition failed.
///
/// ```
/// use wlmap_engine::{Definition, Error, Object, Origin};
/// let mut k = wlmap_schema::Karta::example();
/// k.spec.structure_definition.root_component.status_definition.as_mut().unwrap().phase_definition.as_mut().unwrap().path = ".status.phase - 1".into();
/// let def = Definition::compile(k, Origin::File).unwrap();
/// let Err(Error::Evaluation { at, .. }) = wlmap_engine::resolve(&def, &Object::new(serde_json::json!({"status": {"phase": "Running"}}))) else { panic!() };
/// assert_eq!((at.component.as_str(), at.expression.as_str()), ("pod", ".status.phase - 1"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExprField {
    /// Definition name.
    pub definition: String,
    /// Component name.
    pub component: String,
    /// Field name (`replicasPath`, `expression`, ...).
    pub field: String,
    /// The expression text.
    pub expression: String,
}

/// Engine errors.
///
/// ```
/// let mut k = wlmap_schema::Karta::example();
/// k.spec.structure_definition.root_component.owner_ref = Some("nowhere".into());
/// let err = wlmap_engine::Definition::compile(k, wlmap_engine::Origin::File).unwrap_err();
/// assert!(matches!(err, wlmap_engine::Error::InvalidDefinition { .. }));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The definition has errors (an unknown ownerRef, a jq syntax error...).
    #[error("invalid definition: {}", findings.iter().map(located).collect::<Vec<_>>().join("; "))]
    InvalidDefinition {
        /// The error findings.
        findings: Vec<Finding>,
    },
    /// An expression failed on this object (`.spec.x * 2` on a string; a budget ran out).
    #[error("definition {}, component {}, field {} (`{}`): {source}", at.definition, at.component, at.field, at.expression)]
    Evaluation {
        /// Which expression.
        at: Box<ExprField>,
        /// The evaluation error (a runtime error of jq, or a spent limit).
        #[source]
        source: wlmap_expr::EvalError,
    },
    /// The object's shape does not fit the definition (instance count mismatch, a template
    /// that is not an object).
    #[error("definition {definition}, component {component}: {message}")]
    Shape {
        /// Definition name.
        definition: String,
        /// Component name.
        component: String,
        /// What does not fit.
        message: String,
    },
    /// An update cannot be applied (no path for the field in this definition).
    #[error("cannot update component {component}: {message}")]
    Update {
        /// Component name.
        component: String,
        /// What is missing or refused (the field has no path; the definition refuses it).
        message: String,
    },
}

/// Result with the engine's error.
///
/// ```
/// let r: wlmap_engine::Result<wlmap_engine::Definition> =
///     wlmap_engine::Definition::compile(wlmap_schema::Karta::example(), wlmap_engine::Origin::File);
/// assert!(r.is_ok());
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A finding with the component it is in: `component w: specDefinition.podTemplateSpecPath: ...`.
fn located(f: &Finding) -> String {
    match &f.field.component {
        Some(c) => format!("component {c}: {}", f.message),
        None => f.message.clone(),
    }
}
