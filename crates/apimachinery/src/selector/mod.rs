//! Label and field selectors with kube's syntax, validation messages and matching.
//!
//! Mirrors `k8s.io/apimachinery/pkg/labels` and `k8s.io/apimachinery/pkg/fields`:
//! `?labelSelector=` / `?fieldSelector=` parse errors here are the exact texts kube
//! puts in the 400 `BadRequest` Status. Pure functions: no IO, no HTTP.

pub mod fields;
pub mod labels;

pub use fields::FieldSelector;
pub use labels::LabelSelector;
