//! Label and field selectors with kube's syntax, validation messages and matching.
//!
//! Mirrors `k8s.io/apimachinery/pkg/labels` and `k8s.io/apimachinery/pkg/fields`:
//! `?labelSelector=` / `?fieldSelector=` parse errors here are the exact texts kube
//! puts in the 400 `BadRequest` Status. Pure functions: no IO, no HTTP.

pub mod fields;
pub mod labels;

pub use fields::FieldSelector;
pub use labels::LabelSelector;

use crate::field::go_quote;
use crate::table::TableError;

/// A selector that does not parse or cannot be evaluated; the texts are kube's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// A field selector term without operator.
    #[error("invalid selector: '{selector}'; can't understand '{term}'")]
    FieldTerm {
        /// The whole selector.
        selector: String,
        /// The term.
        term: String,
    },
    /// A backslash before something else than `\`, `,` or `=` (or at the end: `""`).
    #[error("invalid field selector: invalid escape sequence: \\{0}")]
    FieldEscape(String),
    /// An unescaped `,` or `=` in a field selector value (printed as its code point).
    #[error("invalid field selector: unescaped character in value: {}", u32::from(*.0))]
    FieldUnescaped(char),
    /// A field the kind cannot be selected by (a kind with field labels of its own).
    #[error("field label not supported: {0}")]
    FieldLabelNotSupported(String),
    /// A field the kind cannot be selected by (a kind with only kube's default labels,
    /// `DefaultMetaV1FieldSelectorConversion`).
    #[error("{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"", go_quote(.0))]
    FieldLabelUnknown(String),
    /// A selectable field's JSON path that does not parse.
    #[error("unexpected error parsing jsonPath: {0}")]
    FieldJsonPathParse(#[source] TableError),
    /// A selectable field's JSON path that cannot be evaluated.
    #[error("unexpected error finding value with jsonPath: {0}")]
    FieldJsonPathFind(#[source] TableError),
    /// A selectable field's JSON path with several results.
    #[error("unexpectedly received more than one JSON path result")]
    FieldJsonPathResults,
    /// A label requirement kube's `NewRequirement` refuses (its aggregated field errors).
    #[error("{0}")]
    Requirement(String),
    /// A label selector requirement that does not parse.
    #[error("unable to parse requirement: {0}")]
    LabelRequirement(String),
    /// A label selector that does not parse between requirements (`found ',', expected: ...`).
    #[error("{0}")]
    LabelSyntax(String),
    /// A `metav1.LabelSelector` that is no object.
    #[error("label selector must be an object, not {0}")]
    NotAnObject(&'static str),
    /// `matchLabels` that is no object.
    #[error("matchLabels must be an object, not {0}")]
    MatchLabelsNotAnObject(&'static str),
    /// A `matchLabels` value that is no string.
    #[error("matchLabels[{0}] must be a string")]
    MatchLabelNotAString(String),
    /// `matchExpressions` that is no array.
    #[error("matchExpressions must be an array, not {0}")]
    MatchExpressionsNotAnArray(&'static str),
    /// A `matchExpressions[].operator` that is none of kube's.
    #[error("{} is not a valid label selector operator", go_quote(.0))]
    Operator(String),
    /// `matchExpressions[].values` that is no array.
    #[error("matchExpressions values must be an array")]
    ValuesNotAnArray,
    /// `matchExpressions[].values` with an item that is no string.
    #[error("matchExpressions values must be strings")]
    ValuesNotStrings,
}
