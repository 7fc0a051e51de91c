//! The request pipeline for custom resources: the order of stages in one place.
//!
//! Writes (create, update, patch, apply):
//!
//! ```text
//! decode → prune → default → [mutating admission] → prune + default again
//!        → prepare (system metadata, status/spec separation, generation)
//!        → [immutability check, updates] → schema validation → [CEL]
//!        → [validating admission] → storage
//! ```
//! Reads from storage: decode → prune → default.
//!
//! Stages in brackets arrive with later issues and slot in where they are named.
//! Every stage is a pure function over `serde_json::Value` and the compiled schema
//! of one CRD version (`VersionSchema`); nothing here does IO.

pub mod decode;
pub mod trace;

use crate::field;
use crate::rest::{object, Admitted, FieldValidation, WriteOptions};
use crate::schema::objectmeta;
use crate::schema::{default, prune, structural::Structural, validate::Validator};
use crate::status::Status;
use serde_json::Value;
use trace::Trace;

/// Everything the stages need about one served version of a CRD, compiled once when
/// the CRD is created or updated (never per request).
pub struct VersionSchema {
    /// Group of the CRD.
    pub group: String,
    /// This version's name.
    pub version: String,
    /// `Kind`.
    pub kind: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// The structural schema (pruning, defaulting).
    pub structural: Structural,
    /// The OpenAPI validator for the whole object.
    pub validator: Validator,
    /// The OpenAPI validator for `status` alone (status subresource writes).
    pub status_validator: Option<Validator>,
    /// Whether the status subresource is on.
    pub status_subresource: bool,
    /// The scale subresource, if on.
    pub scale: Option<crate::registry::crd::ScaleSpec>,
}

impl VersionSchema {
    /// `group/version`.
    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }
}

/// Create: the decoded request body in, the object to store out.
pub fn create(mut obj: Value, s: &VersionSchema, opts: &WriteOptions) -> Result<Admitted, Status> {
    let mut t = Trace::new(opts.trace);
    // decode → prune → default
    let unknown = prune_stage(&mut obj, s, &mut t);
    let warnings = decode::unknown_field_policy(&obj, s, opts, unknown, None)?;
    default_stage(&mut obj, s, &mut t);
    // [mutating admission: admission issue], then prune + default again
    prune_stage(&mut obj, s, &mut t);
    default_stage(&mut obj, s, &mut t);
    // prepare
    object::prepare_for_create(&mut obj, true);
    if s.status_subresource {
        object::keep_status(&mut obj, None);
    }
    t.note("prepare", "system metadata set");
    // validate
    let errs = validate_stage(&obj, None, s, &mut t);
    reject_invalid(&obj, errs)?;
    // [CEL, validating admission: later issues]
    Ok(Admitted {
        object: obj,
        warnings,
        trace: t.into_lines(),
    })
}

/// Update of the main resource or a subresource (`opts.subresource`): `new` is the
/// desired object (PUT body or patched object), `old` the stored one (already read
/// through `read`).
pub fn update(
    mut new: Value,
    old: &Value,
    s: &VersionSchema,
    opts: &WriteOptions,
) -> Result<Admitted, Status> {
    let mut t = Trace::new(opts.trace);
    // kube quotes the whole patched object when a patch fails strict decoding.
    let patched =
        (opts.is_patch && is_strict(opts)).then(|| serde_json::to_string(&new).unwrap_or_default());
    let unknown = prune_stage(&mut new, s, &mut t);
    let warnings = decode::unknown_field_policy(&new, s, opts, unknown, patched.as_deref())?;
    default_stage(&mut new, s, &mut t);
    // [mutating admission], then prune + default again
    prune_stage(&mut new, s, &mut t);
    default_stage(&mut new, s, &mut t);
    // prepare
    let status_write = opts.subresource == "status";
    if status_write {
        new = object::status_only(&new, old);
    } else if s.status_subresource {
        object::keep_status(&mut new, Some(old));
    }
    object::prepare_for_update(&mut new, old);
    if !status_write {
        object::bump_generation_if_changed(&mut new, old, s.status_subresource);
    }
    t.note("prepare", "system metadata carried over");
    // [immutability check: immutability issue]
    let errs = validate_stage(&new, Some(old), s, &mut t);
    reject_invalid(&new, errs)?;
    Ok(Admitted {
        object: new,
        warnings,
        trace: t.into_lines(),
    })
}

/// Read from storage: prune and default, so schema changes show on old objects.
pub fn read(obj: &mut Value, s: &VersionSchema) {
    let mut t = Trace::new(false);
    prune_stage(obj, s, &mut t);
    default_stage(obj, s, &mut t);
}

/// Prune unknown fields; returns their paths (for unknown-field warnings/errors).
fn prune_stage(obj: &mut Value, s: &VersionSchema, t: &mut Trace) -> Vec<String> {
    let report = prune::prune(obj, &s.structural, true, &prune::PruneOptions::default());
    for p in &report.unknown_fields {
        t.note("prune", &format!("removed {p}"));
    }
    report.unknown_fields
}

/// Apply defaults (after dropping non-nullable nulls, as kube).
fn default_stage(obj: &mut Value, s: &VersionSchema, t: &mut Trace) {
    default::prune_nulls(obj, &s.structural);
    let report = default::apply_defaults(obj, &s.structural);
    for p in &report.defaulted {
        t.note("default", &format!("set {p}"));
    }
}

/// Schema and metadata validation (`old` for updates).
fn validate_stage(
    obj: &Value,
    old: Option<&Value>,
    s: &VersionSchema,
    t: &mut Trace,
) -> field::ErrorList {
    // A wrong apiVersion/kind is reported alone, as kube's ValidateTypeMeta.
    let type_errs = decode::type_meta_errors(obj, s);
    if !type_errs.is_empty() {
        return type_errs;
    }
    let meta_path = field::Path::new("metadata");
    let meta = obj.get("metadata").cloned().unwrap_or(Value::Null);
    let mut errs = match old {
        None => objectmeta::validate_object_meta(&meta, s.namespaced, &meta_path),
        Some(old) => {
            let old_meta = old.get("metadata").cloned().unwrap_or(Value::Null);
            let mut e = objectmeta::validate_object_meta(&meta, s.namespaced, &meta_path);
            e.extend(objectmeta::validate_object_meta_update(
                &meta, &old_meta, &meta_path,
            ));
            e
        }
    };
    errs.extend(s.validator.validate(obj, &field::Path::root()));
    if let Some(scale) = &s.scale {
        errs.extend(decode::validate_scale(obj, scale));
    }
    t.note("validate", &format!("{} error(s)", errs.len()));
    errs
}

fn reject_invalid(obj: &Value, errs: field::ErrorList) -> Result<(), Status> {
    if errs.is_empty() {
        return Ok(());
    }
    let (kind, group) = decode::body_group_kind(obj);
    Err(Status::invalid(&kind, &group, object::name(obj), &errs))
}

/// Whether strict field validation applies.
pub fn is_strict(opts: &WriteOptions) -> bool {
    opts.field_validation == FieldValidation::Strict
}
