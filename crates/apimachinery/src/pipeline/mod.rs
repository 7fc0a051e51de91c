//! The request pipeline for custom resources: the order of stages in one place.
//!
//! Writes (create, update, patch, apply):
//!
//! ```text
//! decode → prune → default → managedFields                 (`*_mutating_input`)
//!        → mutating admission (webhooks, in-process hooks)   (async: `rest::store`)
//!        → prune + default again
//!        → prepare (system metadata, status/spec separation, generation)
//!        → immutability check (updates) → schema validation → CEL rules
//!                                                            (`*_after_admission`)
//!        → validating admission, all hooks in parallel      (async: `rest::store`)
//!        → storage (via `crate::crd::conversion::to_storage`: storage version, pruned)
//! ```
//! All of it runs in the version the request addresses. Reads from storage
//! (`crate::crd::conversion::to_served`): prune → default by the stored version's schema,
//! convert to the addressed version, prune by its schema.
//!
//! Admission is IO (webhooks, in-process hooks: the server's `admission`), so the write
//! stages are split where it runs: `create`/`update` are the two halves back to back.
//! Every stage is a pure function over `serde_json::Value` and the compiled schema
//! of one CRD version (`VersionSchema`); nothing here does IO.

pub mod decode;
pub mod trace;

use crate::apply;
use crate::field;
use crate::object;
use crate::schema::{default, prune, structural::Structural, validate::Validator};
use crate::schema::{immutable, objectmeta};
use crate::status::Status;
use crate::write::{Admitted, FieldValidation, WriteOptions};
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
    pub scale: Option<crate::crd::ScaleSpec>,
    /// Immutability rules; `None` when the schema marks nothing immutable.
    pub immutability: Option<immutable::ImmutabilityPlan>,
    /// Compiled `x-kubernetes-validations`; `None` when the schema has no rules.
    pub cel: Option<std::sync::Arc<crate::cel::CompiledRules>>,
}

impl VersionSchema {
    /// `group/version`.
    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }
}

/// Create: the decoded request body in, the object to store out (both stages, with no
/// admission hooks in between).
pub fn create(obj: Value, s: &VersionSchema, opts: &WriteOptions) -> Result<Admitted, Status> {
    let input = create_mutating_input(obj, s, opts)?;
    create_after_admission(input, s, opts)
}

/// Create, up to mutating admission: decode → prune → default → managedFields.
pub fn create_mutating_input(
    mut obj: Value,
    s: &VersionSchema,
    opts: &WriteOptions,
) -> Result<Admitted, Status> {
    let mut t = Trace::new(opts.trace);
    let unknown = prune_stage(&mut obj, s, &mut t);
    let warnings = decode::unknown_field_policy(&obj, (&s.kind, &s.version), opts, &unknown, None)?;
    default_stage(&mut obj, s, &mut t);
    managed_fields_stage(None, &mut obj, s, opts);
    Ok(Admitted {
        object: obj,
        warnings,
        trace: t.into_lines(),
    })
}

/// Create, after mutating admission: prune + default again → prepare → validation →
/// CEL. `input` carries the warnings and trace of the earlier stages.
pub fn create_after_admission(
    input: Admitted,
    s: &VersionSchema,
    opts: &WriteOptions,
) -> Result<Admitted, Status> {
    let Admitted {
        object: mut obj,
        mut warnings,
        trace,
    } = input;
    let mut t = Trace::resume(opts.trace, trace);
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
    let errs = cel_stage(&obj, None, s, errs, &mut warnings, &mut t);
    reject_invalid(&obj, errs)?;
    Ok(Admitted {
        object: obj,
        warnings,
        trace: t.into_lines(),
    })
}

/// Update of the main resource or a subresource (`opts.subresource`): `new` is the
/// desired object (PUT body or patched object), `old` the stored one (already read
/// through `read`). Both stages, with no admission hooks in between.
pub fn update(
    new: Value,
    old: &Value,
    s: &VersionSchema,
    opts: &WriteOptions,
) -> Result<Admitted, Status> {
    let input = update_mutating_input(new, old, s, opts)?;
    update_after_admission(input, old, s, opts)
}

/// Update, up to mutating admission: decode → prune → default → managedFields.
pub fn update_mutating_input(
    mut new: Value,
    old: &Value,
    s: &VersionSchema,
    opts: &WriteOptions,
) -> Result<Admitted, Status> {
    let mut t = Trace::new(opts.trace);
    // kube quotes the whole patched object when a patch fails strict decoding.
    let patched =
        (opts.is_patch && is_strict(opts)).then(|| serde_json::to_string(&new).unwrap_or_default());
    // A create or update body was checked as it was decoded; a patch's result here.
    if opts.is_patch {
        decode::metadata_type_check(&new, (&s.kind, &s.version), true)?;
    }
    let unknown = prune_stage(&mut new, s, &mut t);
    let warnings = decode::unknown_field_policy(
        &new,
        (&s.kind, &s.version),
        opts,
        &unknown,
        patched.as_deref(),
    )?;
    default_stage(&mut new, s, &mut t);
    managed_fields_stage(Some(old), &mut new, s, opts);
    Ok(Admitted {
        object: new,
        warnings,
        trace: t.into_lines(),
    })
}

/// Update, after mutating admission: prune + default again → prepare → immutability →
/// validation → CEL.
pub fn update_after_admission(
    input: Admitted,
    old: &Value,
    s: &VersionSchema,
    opts: &WriteOptions,
) -> Result<Admitted, Status> {
    let Admitted {
        object: mut new,
        mut warnings,
        trace,
    } = input;
    let mut t = Trace::resume(opts.trace, trace);
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
    // A write that changes nothing must not move managedFields timestamps either.
    apply::revert_time_only_change(&mut new, old);
    t.note("prepare", "system metadata carried over");
    immutability_stage(&new, old, s, &mut t)?;
    let errs = validate_stage(&new, Some(old), s, &mut t);
    let errs = cel_stage(&new, Some(old), s, errs, &mut warnings, &mut t);
    reject_invalid(&new, errs)?;
    Ok(Admitted {
        object: new,
        warnings,
        trace: t.into_lines(),
    })
}

/// What the managedFields of a write describe (server-side apply needs the same).
pub fn apply_scope<'a>(
    s: &'a VersionSchema,
    subresource: &'a str,
    api_version: &'a str,
    now: &'a str,
) -> apply::Scope<'a> {
    apply::Scope {
        schema: &s.structural,
        api_version,
        kind: &s.kind,
        subresource,
        status_subresource: s.status_subresource,
        versions: &[],
        now,
    }
}

/// managedFields: every non-apply write records an `Update` entry for its manager
/// (an apply already merged its own).
fn managed_fields_stage(
    old: Option<&Value>,
    obj: &mut Value,
    s: &VersionSchema,
    opts: &WriteOptions,
) {
    if opts.is_apply || decode::is_foreign_kind(obj, s) {
        return;
    }
    let (now, api_version) = (object::now(), s.api_version());
    let scope = apply_scope(s, &opts.subresource, &api_version, &now);
    apply::record_update(old, obj, &opts.field_manager, &scope);
}

/// Read from storage: prune and default, so schema changes show on old objects.
pub fn read(obj: &mut Value, s: &VersionSchema) {
    let mut t = Trace::new(false);
    prune_stage(obj, s, &mut t);
    default_stage(obj, s, &mut t);
}

/// Prune unknown fields; returns their paths (for unknown-field warnings/errors).
fn prune_stage(obj: &mut Value, s: &VersionSchema, t: &mut Trace) -> Vec<String> {
    // kube's decoder leaves an object of another group or kind alone; validation rejects it.
    if decode::is_foreign_kind(obj, s) {
        return Vec::new();
    }
    let report = prune::prune(obj, &s.structural, true, &prune::PruneOptions::default());
    for p in &report.unknown_fields {
        t.note("prune", &format!("removed {p}"));
    }
    report.unknown_fields
}

/// Apply defaults (after dropping non-nullable nulls, as kube).
fn default_stage(obj: &mut Value, s: &VersionSchema, t: &mut Trace) {
    if decode::is_foreign_kind(obj, s) {
        return;
    }
    default::prune_nulls(obj, &s.structural);
    let report = default::apply_defaults(obj, &s.structural);
    for p in &report.defaulted {
        t.note("default", &format!("set {p}"));
    }
}

/// Immutability (updates only): 400 naming every immutable field the update changes.
fn immutability_stage(
    new: &Value,
    old: &Value,
    s: &VersionSchema,
    t: &mut Trace,
) -> Result<(), Status> {
    let Some(plan) = &s.immutability else {
        return Ok(());
    };
    let errs = plan.check(old, new);
    t.note("immutable", &format!("{} violation(s)", errs.len()));
    if errs.is_empty() {
        return Ok(());
    }
    let (kind, group) = decode::body_group_kind(new);
    Err(immutable::rejection(
        &kind,
        &group,
        object::name(new),
        &errs,
    ))
}

/// Schema and metadata validation (`old` for updates).
fn validate_stage(
    obj: &Value,
    old: Option<&Value>,
    s: &VersionSchema,
    t: &mut Trace,
) -> field::ErrorList {
    let type_errs = decode::type_meta_errors(obj, s);
    let meta_path = field::Path::new("metadata");
    let meta = obj.get("metadata").cloned().unwrap_or(Value::Null);
    let mut errs = match old {
        // A wrong apiVersion/kind is reported alone, as kube's ValidateTypeMeta.
        None if !type_errs.is_empty() => return type_errs,
        None => objectmeta::validate_object_meta(&meta, s.namespaced, &meta_path),
        Some(old) => {
            // kube's generic registry validates the metadata of an update (create- and
            // update-style) before the strategy, which validates it again: kube lists
            // such errors three times in `details.causes` (once in the message).
            let old_meta = old.get("metadata").cloned().unwrap_or(Value::Null);
            let update_errs = objectmeta::validate_object_meta_update(&meta, &old_meta, &meta_path);
            let mut e = objectmeta::validate_object_meta(&meta, s.namespaced, &meta_path);
            e.extend(update_errs.iter().cloned());
            if !type_errs.is_empty() {
                e.extend(type_errs);
                return e;
            }
            e.extend(update_errs);
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

/// `x-kubernetes-validations` rules, after schema validation: their errors join the
/// same 422; ratcheted ones become warnings. Blocking schema errors skip them (kube).
fn cel_stage(
    obj: &Value,
    old: Option<&Value>,
    s: &VersionSchema,
    mut errs: field::ErrorList,
    warnings: &mut Vec<String>,
    t: &mut Trace,
) -> field::ErrorList {
    let Some(rules) = &s.cel else {
        return errs;
    };
    if let Some(blocked) = crate::cel::blocking_error(&errs) {
        errs.push(blocked);
        t.note("cel", "skipped: blocking schema errors");
        return errs;
    }
    let report = crate::cel::validate(rules, obj, old);
    t.note("cel", &format!("{} error(s)", report.errors.len()));
    errs.extend(report.errors);
    warnings.extend(report.warnings);
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
