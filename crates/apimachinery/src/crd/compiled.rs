//! A CRD compiled for serving: its names and versions, read when the CRD is written
//! or seen; per version the structural schema, validators, immutability plan, CEL
//! rules, printer columns and selectable fields, compiled on the version's first
//! request and kept within the process's budget ([`super::on_demand`]).

use super::on_demand::Slot;
use super::{CrdError, CrdInfo, SchemaText};
use crate::pipeline::VersionSchema;
use crate::schema::immutable::ImmutabilityPlan;
use crate::schema::props::JSONSchemaProps;
use crate::schema::structural::Structural;
use crate::schema::validate::Validator;
use crate::status::GroupResource;
use crate::write::Descriptor;
use serde_json::Value;
use std::sync::Arc;

/// One version of a compiled CRD. Its schema is compiled when first asked for
/// ([`CompiledVersion::schema`]) and may be dropped and compiled again later
/// ([`super::on_demand`]).
pub struct CompiledVersion {
    /// The version's name.
    pub name: String,
    /// Served on the API.
    pub served: bool,
    /// The storage version.
    pub storage: bool,
    /// `deprecated`.
    pub deprecated: bool,
    /// `deprecationWarning` (or kube's default text when deprecated).
    pub deprecation_warning: Option<String>,
    /// `subresources.status` is enabled.
    pub status_subresource: bool,
    /// The CRD's view, this version at `index`: what the schema is compiled from.
    info: Arc<CrdInfo>,
    index: usize,
    slot: Arc<Slot>,
}

impl CompiledVersion {
    /// Stage inputs for the pipeline: kept, or compiled now.
    pub fn schema(&self) -> Arc<VersionSchema> {
        self.slot.get(|| compile_version(&self.info, self.index))
    }
}

/// The stage inputs of `info`'s version at `index`.
fn compile_version(info: &CrdInfo, index: usize) -> VersionSchema {
    let v = &info.versions[index];
    // The text was checked to decode when the CRD was compiled ([`check_schema`]).
    let props = v
        .schema
        .as_ref()
        .and_then(|s| s.decode::<JSONSchemaProps>().ok())
        .unwrap_or_else(|| JSONSchemaProps {
            type_: Some("object".into()),
            x_preserve_unknown_fields: Some(true),
            ..Default::default()
        });
    let structural = Arc::new(Structural::from_props(&props));
    VersionSchema {
        group: info.group.clone(),
        version: v.name.clone(),
        kind: info.kind.clone(),
        namespaced: info.namespaced,
        validator: Validator::with_structural(&props, structural.clone()),
        immutability: ImmutabilityPlan::compile(&structural),
        cel: crate::cel::CompiledRules::compile(&structural).map(Arc::new),
        structural,
        status_subresource: v.status_subresource,
        scale: v.scale.clone(),
        printer_columns: v.printer_columns.clone(),
        selectable_fields: v.selectable_fields.clone(),
    }
}

/// A version's `schema.openAPIV3Schema` in `spec` decodes as a JSONSchemaProps (or is
/// absent).
fn check_schema(spec: Option<&Value>, index: usize, name: &str) -> Result<(), CrdError> {
    let schema = spec
        .and_then(|s| s.get("versions"))
        .and_then(|vs| vs.get(index))
        .and_then(|v| v.pointer("/schema/openAPIV3Schema"));
    match schema {
        Some(schema) => JSONSchemaProps::from_value(schema)
            .map(drop)
            .map_err(|error| CrdError::Schema {
                version: name.to_string(),
                error,
            }),
        None => Ok(()),
    }
}

/// What compiling a CRD reads of it, and nothing else: its name, its spec and whether
/// it is terminating. Two CRDs with equal inputs compile to equal [`CompiledSpec`]s
/// (status, the rest of the metadata and the storage revision play no part), so a
/// cache of compiled CRDs keys on exactly these.
#[derive(Clone, Copy, Debug)]
pub struct CompileInput<'a> {
    /// `metadata.name` (empty when missing).
    pub name: &'a str,
    /// Being deleted: a `deletionTimestamp`, or the `Terminating` condition.
    pub terminating: bool,
    /// `spec` as stored (`None` when missing).
    pub spec: Option<&'a Value>,
}

impl<'a> CompileInput<'a> {
    /// The inputs of a CRD object.
    pub fn of(crd: &'a Value) -> CompileInput<'a> {
        CompileInput {
            name: crd
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            terminating: crd
                .pointer("/metadata/deletionTimestamp")
                .is_some_and(|t| !t.is_null())
                || super::condition_is_true(crd, super::CONDITION_TERMINATING),
            spec: crd.get("spec"),
        }
    }
}

/// The compiled part of a CRD: a function of its [`CompileInput`] only, so one can
/// serve many catalogs. Immutable once built but for its versions' compiled schemas,
/// made on first use and dropped past the budget (always remade the same).
pub struct CompiledSpec {
    /// Names, scope and versions.
    pub info: Arc<CrdInfo>,
    /// Compiled versions, in the CRD's order.
    pub versions: Arc<[CompiledVersion]>,
    /// `spec.conversion.strategy: Webhook` (else conversion without IO).
    pub conversion_webhook: bool,
}

impl CompiledSpec {
    /// Read a CRD's versions, checking that each schema decodes; the schemas
    /// themselves are compiled on first use ([`CompiledVersion::schema`]).
    pub fn compile(input: &CompileInput<'_>) -> Result<CompiledSpec, CrdError> {
        let info = Arc::new(CrdInfo::from_input(input)?);
        let mut versions = Vec::new();
        for (index, v) in info.versions.iter().enumerate() {
            check_schema(input.spec, index, &v.name)?;
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
            let weight = v.schema.as_ref().map_or(0, SchemaText::len);
            versions.push(CompiledVersion {
                name: v.name.clone(),
                served: v.served,
                storage: v.storage,
                deprecated: v.deprecated,
                deprecation_warning,
                status_subresource: v.status_subresource,
                info: info.clone(),
                index,
                slot: Slot::new(weight),
            });
        }
        let conversion_webhook = input
            .spec
            .and_then(|s| s.pointer("/conversion/strategy"))
            .and_then(Value::as_str)
            == Some("Webhook");
        Ok(CompiledSpec {
            info,
            versions: versions.into(),
            conversion_webhook,
        })
    }
}

/// A version's REST descriptor and the storage prefix it was made for.
type DescriptorCell = std::sync::OnceLock<(String, Arc<Descriptor>)>;

/// A CRD ready to serve: its [`CompiledSpec`] (shared) and the object it was built from.
pub struct CompiledCrd {
    /// `metadata.name`.
    pub name: String,
    /// Names, scope and versions (shared with every catalog holding the same spec).
    pub info: Arc<CrdInfo>,
    /// Compiled versions, in the CRD's order (shared likewise).
    pub versions: Arc<[CompiledVersion]>,
    /// The CRD object as stored, less what is kept compiled or is not read from the
    /// catalog: its versions' schemas and its managed fields (a large CRD's schema
    /// would otherwise be held once more, parsed, per CRD).
    pub object: Value,
    /// Storage revision of `object`.
    pub revision: i64,
    /// Being deleted (no new objects may be created).
    pub terminating: bool,
    /// `spec.conversion.strategy: Webhook` (else `None`: conversion without IO).
    pub conversion_webhook: bool,
    /// Each version's REST descriptor, made on its first request ([`Self::descriptor`]).
    descriptors: Box<[DescriptorCell]>,
}

impl CompiledCrd {
    /// Compile a (validated) CRD object.
    pub fn compile(object: Value, revision: i64) -> Result<CompiledCrd, CrdError> {
        let spec = CompiledSpec::compile(&CompileInput::of(&object))?;
        Ok(Self::with_spec(object, revision, &spec))
    }

    /// A CRD object with its spec compiled already (`spec` must be the compilation of
    /// `CompileInput::of(&object)`, e.g. from a cache keyed on it).
    pub fn with_spec(mut object: Value, revision: i64, spec: &CompiledSpec) -> CompiledCrd {
        trim(&mut object);
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let terminating = object
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|v| !v.is_null());
        CompiledCrd {
            name,
            info: spec.info.clone(),
            versions: spec.versions.clone(),
            object,
            revision,
            terminating,
            conversion_webhook: spec.conversion_webhook,
            descriptors: spec.versions.iter().map(|_| Default::default()).collect(),
        }
    }

    /// The REST descriptor of version `index` under the storage prefix `prefix`: made
    /// once per CRD revision (every request to the version asks), for the first prefix
    /// asked (a server's; another prefix gets a new one each time).
    pub fn descriptor(&self, index: usize, prefix: &str) -> Arc<Descriptor> {
        let make = || {
            let info = &self.info;
            let v = &self.versions[index];
            Arc::new(Descriptor {
                gr: GroupResource::new(&info.group, &info.plural),
                version: v.name.clone(),
                kind: info.kind.clone(),
                list_kind: info.list_kind.clone(),
                singular: info.singular.clone(),
                namespaced: info.namespaced,
                key_root: format!("{prefix}/{}/{}", info.group, info.plural),
                status_subresource: v.status_subresource,
                has_generation: true,
            })
        };
        let Some(cell) = self.descriptors.get(index) else {
            return make();
        };
        let (first, descriptor) = cell.get_or_init(|| (prefix.to_string(), make()));
        if first == prefix {
            descriptor.clone()
        } else {
            make()
        }
    }

    /// Index of a served version by name.
    pub fn served_version(&self, version: &str) -> Option<usize> {
        self.versions
            .iter()
            .position(|v| v.served && v.name == version)
    }
}

/// What [`CompiledCrd::object`] keeps of a CRD: all but `metadata.managedFields` and
/// `spec.versions[*].schema`.
fn trim(object: &mut Value) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    let versions = object
        .pointer_mut("/spec/versions")
        .and_then(Value::as_array_mut);
    for version in versions.into_iter().flatten() {
        if let Some(v) = version.as_object_mut() {
            v.remove("schema");
        }
    }
}
