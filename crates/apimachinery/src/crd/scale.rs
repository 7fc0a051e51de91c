//! A CRD version's scale subresource, as the pipeline reads it (a leaf: the pipeline
//! takes it from here without depending on the rest of `crd`).

/// The scale subresource of a version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleSpec {
    /// `specReplicasPath`, e.g. `.spec.replicas`.
    pub spec_replicas_path: String,
    /// `statusReplicasPath`, e.g. `.status.replicas`.
    pub status_replicas_path: String,
    /// `labelSelectorPath`, if set.
    pub label_selector_path: Option<String>,
}
