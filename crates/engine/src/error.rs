//! Errors of the engine.

use wlmap_schema::Finding;

/// Which expression of which definition failed.
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
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The definition has errors (an unknown ownerRef, a jq syntax error...).
    #[error("invalid definition: {}", findings.iter().map(|f| f.message.clone()).collect::<Vec<_>>().join("; "))]
    InvalidDefinition {
        /// The error findings.
        findings: Vec<Finding>,
    },
    /// An expression failed on this object (`.spec.x * 2` on a string; a budget ran out).
    #[error("definition {}, component {}, field {} (`{}`): {source}", at.definition, at.component, at.field, at.expression)]
    Evaluation {
        /// Which expression.
        at: Box<ExprField>,
        /// Why.
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
        /// Why.
        message: String,
    },
}

/// Result with the engine's error.
pub type Result<T, E = Error> = std::result::Result<T, E>;
