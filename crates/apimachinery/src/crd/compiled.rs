//! A CRD compiled for serving: per version the structural schema, validators,
//! immutability plan, CEL rules, printer columns and selectable fields, built once
//! when the CRD is written or seen, never per request.

use super::{CrdError, CrdInfo};
use crate::pipeline::VersionSchema;
use crate::schema::immutable::ImmutabilityPlan;
use crate::schema::props::JSONSchemaProps;
use crate::schema::structural::Structural;
use crate::schema::validate::Validator;
use serde_json::Value;

/// One version of a compiled CRD.
pub struct CompiledVersion {
    /// Stage inputs for the pipeline.
    pub schema: VersionSchema,
    /// Served on the API.
    pub served: bool,
    /// The storage version.
    pub storage: bool,
    /// `deprecated`.
    pub deprecated: bool,
    /// `deprecationWarning` (or kube's default text when deprecated).
    pub deprecation_warning: Option<String>,
}

/// A CRD ready to serve.
pub struct CompiledCrd {
    /// `metadata.name`.
    pub name: String,
    /// Names, scope and versions.
    pub info: CrdInfo,
    /// Compiled versions, in the CRD's order.
    pub versions: Vec<CompiledVersion>,
    /// The CRD object as stored.
    pub object: Value,
    /// Storage revision of `object`.
    pub revision: i64,
    /// Being deleted (no new objects may be created).
    pub terminating: bool,
    /// `spec.conversion.strategy: Webhook` (else `None`: conversion without IO).
    pub conversion_webhook: bool,
}

impl CompiledCrd {
    /// Compile a (validated) CRD object.
    pub fn compile(object: Value, revision: i64) -> Result<CompiledCrd, CrdError> {
        let info = CrdInfo::from_crd(&object)?;
        let mut versions = Vec::new();
        for v in &info.versions {
            let props = match &v.schema {
                Some(s) => JSONSchemaProps::from_value(s).map_err(|error| CrdError::Schema {
                    version: v.name.clone(),
                    error,
                })?,
                None => JSONSchemaProps {
                    type_: Some("object".into()),
                    x_preserve_unknown_fields: Some(true),
                    ..Default::default()
                },
            };
            let structural = Structural::from_props(&props);
            let status_validator = props
                .properties
                .as_ref()
                .and_then(|p| p.get("status"))
                .map(Validator::new);
            let schema = VersionSchema {
                group: info.group.clone(),
                version: v.name.clone(),
                kind: info.kind.clone(),
                namespaced: info.namespaced,
                validator: Validator::new(&props),
                status_validator,
                immutability: ImmutabilityPlan::compile(&structural),
                cel: crate::cel::CompiledRules::compile(&structural).map(std::sync::Arc::new),
                structural,
                status_subresource: v.status_subresource,
                scale: v.scale.clone(),
                printer_columns: v.printer_columns.clone(),
                selectable_fields: v.selectable_fields.clone(),
            };
            let deprecation_warning = if v.deprecated {
                Some(v.deprecation_warning.clone().unwrap_or_else(|| {
                    crate::crd::default_deprecation_warning(
                        &info.group,
                        &info.kind,
                        &v.name,
                        &info.versions,
                    )
                }))
            } else {
                None
            };
            versions.push(CompiledVersion {
                schema,
                served: v.served,
                storage: v.storage,
                deprecated: v.deprecated,
                deprecation_warning,
            });
        }
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let terminating = object
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|v| !v.is_null());
        let conversion_webhook = object
            .pointer("/spec/conversion/strategy")
            .and_then(Value::as_str)
            == Some("Webhook");
        Ok(CompiledCrd {
            name,
            info,
            versions,
            object,
            revision,
            terminating,
            conversion_webhook,
        })
    }

    /// Index of a served version by name.
    pub fn served_version(&self, version: &str) -> Option<usize> {
        self.versions
            .iter()
            .position(|v| v.served && v.schema.version == version)
    }
}
