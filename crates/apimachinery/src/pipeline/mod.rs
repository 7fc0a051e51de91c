//! The write pipeline: its order for every kind (`order.rs`), what a kind decides in
//! it (`strategy.rs`), and the strategy of custom resources (here), whose stages are
//! pure functions over `serde_json::Value` and the compiled schema of one CRD version
//! ([`VersionSchema`]).
//!
//! Writes (create, update, patch, apply), as [`order`] runs them:
//!
//! ```text
//! decode → prune → default → managedFields
//!        → mutating admission (webhooks, in-process hooks)   (IO: `order::Admit`)
//!        → prune + default again
//!        → prepare (system metadata, status/spec separation, generation)
//!        → immutability check (updates) → schema validation → CEL rules
//!        → validating admission, all hooks in parallel      (IO: `order::Admit`)
//!        → storage (via `crate::crd::conversion::to_storage`: storage version, pruned)
//! ```
//! All of it runs in the version the request addresses. Reads from storage
//! (`crate::crd::conversion::to_served`): prune → default by the stored version's schema,
//! convert to the addressed version, prune by its schema.

pub mod decode;
pub mod deletion;
pub mod order;
pub mod strategy;
pub mod subresource;
pub mod trace;

use crate::apply;
use crate::field;
use crate::object;
use crate::schema::{default, prune, structural::Structural, validate::Validator};
use crate::schema::{immutable, objectmeta};
use crate::status::Status;
use crate::table::PrinterColumn;
use crate::write::{Admitted, FieldValidation, WriteOptions};
use serde_json::Value;
use strategy::Strategy;
use trace::Trace;

/// Everything the stages need about one served version of a CRD, compiled on the
/// version's first request (never per request; see [`crate::crd::on_demand`]).
pub struct VersionSchema {
    /// Group of the CRD.
    pub group: String,
    /// This version's name.
    pub version: String,
    /// `Kind`.
    pub kind: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// The structural schema (pruning, defaulting), shared with `validator`.
    pub structural: std::sync::Arc<Structural>,
    /// The OpenAPI validator for the whole object, and for `status` alone on status
    /// subresource writes ([`Validator::validate_property_update`]).
    pub validator: Validator,
    /// Whether the status subresource is on.
    pub status_subresource: bool,
    /// The scale subresource, if on.
    pub scale: Option<crate::crd::scale::ScaleSpec>,
    /// Immutability rules; `None` when the schema marks nothing immutable.
    pub immutability: Option<immutable::ImmutabilityPlan>,
    /// Compiled `x-kubernetes-validations`; `None` when the schema has no rules.
    pub cel: Option<std::sync::Arc<crate::cel::CompiledRules>>,
    /// `additionalPrinterColumns`.
    pub printer_columns: Vec<PrinterColumn>,
    /// `selectableFields` JSONPaths.
    pub selectable_fields: Vec<String>,
}

impl VersionSchema {
    /// `group/version`.
    pub fn api_version(&self) -> String {
        field::concat(&[&self.group, "/", &self.version])
    }
}

/// Create without admission: the decoded request body in, the object to store out.
pub fn create(obj: Value, s: &VersionSchema, opts: &WriteOptions) -> Result<Admitted, Status> {
    order::create_without_admission(s, obj, opts)
}

/// Update of the main resource or a subresource (`opts.subresource`) without
/// admission: `new` is the desired object (PUT body or patched object), `old` the
/// stored one (already read through `read`).
pub fn update(
    new: Value,
    old: &Value,
    s: &VersionSchema,
    opts: &WriteOptions,
) -> Result<Admitted, Status> {
    order::update_without_admission(s, new, old, opts)
}

/// Custom resources: the stages of one CRD version.
impl Strategy for VersionSchema {
    fn decode(
        &self,
        obj: &mut Value,
        old: Option<&Value>,
        opts: &WriteOptions,
        t: &mut Trace,
    ) -> Result<Vec<String>, Status> {
        let patch = old.is_some() && opts.is_patch;
        // kube quotes the whole patched object when a patch fails strict decoding.
        let patched =
            (patch && is_strict(opts)).then(|| serde_json::to_string(obj).unwrap_or_default());
        // A create or update body was checked as it was decoded; a patch's result here.
        if patch {
            decode::metadata_type_check(obj, (&self.kind, &self.version), true)?;
        }
        let unknown = prune_stage(obj, self, t);
        decode::unknown_field_policy(
            obj,
            (&self.kind, &self.version),
            opts,
            &unknown,
            patched.as_deref(),
        )
    }

    fn decode_admitted(&self, obj: &mut Value, t: &mut Trace) {
        prune_stage(obj, self, t);
    }

    fn default(&self, obj: &mut Value, t: &mut Trace) {
        default_stage(obj, self, t);
    }

    fn record_managed_fields(&self, old: Option<&Value>, obj: &mut Value, opts: &WriteOptions) {
        managed_fields_stage(old, obj, self, opts);
    }

    fn has_generation(&self) -> bool {
        true
    }

    fn status_subresource(&self) -> bool {
        self.status_subresource
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if self.status_subresource {
            object::keep_status(obj, None);
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value, opts: &WriteOptions) {
        if opts.subresource == "status" {
            *new = object::status_only(new, old);
        } else if self.status_subresource {
            object::keep_status(new, Some(old));
        }
    }

    fn validate(&self, obj: &Value, warnings: &mut Vec<String>, t: &mut Trace) -> field::ErrorList {
        let errs = validate_stage(obj, None, self, t);
        let errs = cel_stage(obj, None, self, errs, warnings, t);
        warnings.extend(objectmeta::finalizer_warnings(
            &object::finalizers(obj),
            None,
        ));
        errs
    }

    fn validate_update(
        &self,
        new: &Value,
        old: &Value,
        opts: &WriteOptions,
        warnings: &mut Vec<String>,
        t: &mut Trace,
    ) -> Result<field::ErrorList, Status> {
        immutability_stage(new, old, self, t)?;
        let status_write = opts.subresource == "status";
        let errs = if status_write {
            validate_status_stage(new, old, self, t)
        } else {
            validate_stage(new, Some(old), self, t)
        };
        let errs = cel_stage(new, Some(old), self, errs, warnings, t);
        // kube's `WarningsOnUpdate` (none for status writes): finalizers added now.
        if !status_write {
            let before = object::finalizers(old);
            warnings.extend(objectmeta::finalizer_warnings(
                &object::finalizers(new),
                Some(&before),
            ));
        }
        Ok(errs)
    }

    fn invalid(&self, obj: &Value, errs: &[field::Error]) -> Status {
        // The kind and group the body names, as kube reports them.
        let (kind, group) = decode::body_group_kind(obj);
        Status::invalid(&kind, &group, object::name(obj), errs)
    }

    fn allow_unconditional_update(&self) -> bool {
        false
    }

    fn merge_schema(&self) -> &Structural {
        &self.structural
    }

    fn printer_columns(&self) -> Vec<PrinterColumn> {
        self.printer_columns.clone()
    }

    fn field_value(
        &self,
        obj: &Value,
        field: &str,
    ) -> Result<Option<String>, crate::selector::SelectorError> {
        crate::selector::fields::cr_field_value(obj, field, &self.selectable_fields)
    }

    fn check_field_labels(
        &self,
        selector: &crate::selector::FieldSelector,
        namespaced: bool,
    ) -> Result<(), crate::selector::SelectorError> {
        // kube's custom resource label conversion: no `metadata.namespace` on a
        // cluster-scoped kind.
        selector.check_custom_resource_labels(namespaced, &self.selectable_fields)
    }
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
        t.note("prune", format_args!("removed {p}"));
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
        t.note("default", format_args!("set {p}"));
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
    t.note("immutable", format_args!("{} violation(s)", errs.len()));
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
    let type_errs = decode::type_meta_errors(obj, &s.api_version(), &s.kind, false);
    let meta_path = field::Path::new("metadata");
    let meta = obj.get("metadata").unwrap_or(&Value::Null);
    let mut errs = match old {
        // A wrong apiVersion/kind is reported alone, as kube's ValidateTypeMeta.
        None if !type_errs.is_empty() => return type_errs,
        None => objectmeta::validate_object_meta(meta, s.namespaced, &meta_path),
        Some(old) => {
            // kube's generic registry validates the metadata of an update (create- and
            // update-style) before the strategy, which validates it again: kube lists
            // such errors three times in `details.causes` (once in the message).
            let old_meta = old.get("metadata").unwrap_or(&Value::Null);
            let update_errs = objectmeta::validate_object_meta_update(meta, old_meta, &meta_path);
            let mut e = objectmeta::validate_object_meta(meta, s.namespaced, &meta_path);
            e.extend(update_errs.iter().cloned());
            if !type_errs.is_empty() {
                e.extend(type_errs);
                return e;
            }
            e.extend(update_errs);
            e
        }
    };
    // Updates ratchet (KEP-4008, on in kube since 1.30): schema errors inside values
    // the update leaves unchanged are dropped, list-type errors count only when the
    // stored object had none.
    errs.extend(match old {
        Some(old) => s.validator.validate_update(obj, old, &field::Path::root()),
        None => s.validator.validate(obj, &field::Path::root()),
    });
    if let Some(scale) = &s.scale {
        errs.extend(decode::validate_scale_spec(obj, scale));
        errs.extend(decode::validate_scale_status(obj, scale));
    }
    t.note("validate", format_args!("{} error(s)", errs.len()));
    errs
}

/// Validation of a `/status` write (kube's status strategy): the metadata as on any
/// update, then only `status`, by the status schema and ratcheted against the stored
/// status (what else the object holds is the stored object's, not this write's), the
/// list types of the whole object as on any update, and the scale's status replicas.
fn validate_status_stage(
    obj: &Value,
    old: &Value,
    s: &VersionSchema,
    t: &mut Trace,
) -> field::ErrorList {
    let type_errs = decode::type_meta_errors(obj, &s.api_version(), &s.kind, false);
    let meta_path = field::Path::new("metadata");
    let meta = obj.get("metadata").unwrap_or(&Value::Null);
    let old_meta = old.get("metadata").unwrap_or(&Value::Null);
    // As on any update (`validate_stage`): kube's registry and the strategy both
    // validate the metadata.
    let update_errs = objectmeta::validate_object_meta_update(meta, old_meta, &meta_path);
    let mut errs = objectmeta::validate_object_meta(meta, s.namespaced, &meta_path);
    errs.extend(update_errs.iter().cloned());
    if !type_errs.is_empty() {
        errs.extend(type_errs);
        return errs;
    }
    errs.extend(update_errs);
    if let Some(status) = obj.get("status") {
        let old_status = old.get("status").unwrap_or(&Value::Null);
        errs.extend(s.validator.validate_property_update(
            "status",
            status,
            old_status,
            &field::Path::new("status"),
        ));
    }
    errs.extend(
        s.validator
            .validate_list_types_update(obj, old, &field::Path::root()),
    );
    if let Some(scale) = &s.scale {
        errs.extend(decode::validate_scale_status(obj, scale));
    }
    t.note("validate", format_args!("{} error(s)", errs.len()));
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
    t.note("cel", format_args!("{} error(s)", report.errors.len()));
    errs.extend(report.errors);
    warnings.extend(report.warnings);
    errs
}

/// Whether strict field validation applies.
pub fn is_strict(opts: &WriteOptions) -> bool {
    opts.field_validation == FieldValidation::Strict
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::compiled::CompiledCrd;
    use serde_json::json;

    /// A CRD with the status subresource whose schema requires `spec` at the root and
    /// allows only `notfoo` in `status.field` and `field`.
    fn tightened() -> CompiledCrd {
        let field = json!({"type": "string", "enum": ["notfoo"]});
        let schema = json!({"type": "object", "required": ["spec"], "properties": {
            "field": field,
            "spec": {"type": "object"},
            "status": {"type": "object", "properties": {"field": field, "count": {"type": "integer"}}}
        }});
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "ratchets.stable.example.com"},
            "spec": {
                "group": "stable.example.com",
                "scope": "Namespaced",
                "names": {"plural": "ratchets", "singular": "ratchet", "kind": "Ratchet", "listKind": "RatchetList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                              "subresources": {"status": {}},
                              "schema": {"openAPIV3Schema": schema}}]
            }
        });
        CompiledCrd::compile(crd, 1).expect("CRD compiles")
    }

    /// What was stored before the schema was tightened: invalid under it everywhere.
    fn stored() -> Value {
        json!({"apiVersion": "stable.example.com/v1", "kind": "Ratchet",
               "metadata": {"name": "old", "namespace": "default", "resourceVersion": "1",
                            "uid": "u", "generation": 1,
                            "creationTimestamp": "2024-01-01T00:00:00Z"},
               "field": "foo",
               "status": {"field": "foo", "count": 0}})
    }

    fn causes(r: Result<Admitted, Status>) -> Vec<String> {
        match r {
            Ok(a) => panic!("expected a 422, got {}", a.object),
            Err(st) => {
                assert_eq!(st.code, 422, "{}", st.message);
                st.details
                    .map(|d| {
                        d.causes
                            .iter()
                            .map(|c| format!("{}: {}", c.field, c.message))
                            .collect()
                    })
                    .unwrap_or_default()
            }
        }
    }

    #[test]
    fn updates_ratchet_unchanged_values_but_not_the_changed_root() {
        let c = tightened();
        let s = &c.versions[0].schema();
        let old = stored();
        // A label changes the root: its `required` stands; `field` is unchanged.
        let mut labelled = old.clone();
        labelled["metadata"]["labels"] = json!({"a": "1"});
        assert_eq!(
            causes(update(labelled, &old, s, &WriteOptions::default())),
            ["spec: Required value"]
        );
        let mut fixed = old.clone();
        fixed["spec"] = json!({});
        assert!(update(fixed.clone(), &old, s, &WriteOptions::default()).is_ok());
        fixed["field"] = json!("bar");
        assert_eq!(
            causes(update(fixed, &old, s, &WriteOptions::default())),
            ["field: Unsupported value: \"bar\": supported values: \"notfoo\""]
        );
    }

    #[test]
    fn status_writes_validate_only_the_status_ratcheted() {
        let c = tightened();
        let s = &c.versions[0].schema();
        let old = stored();
        let opts = WriteOptions {
            subresource: "status".into(),
            ..WriteOptions::default()
        };
        // The root lacks `spec` and `field` is invalid: not this write's business.
        let mut counted = old.clone();
        counted["status"]["count"] = json!(1);
        let written = update(counted, &old, s, &opts).expect("status write passes");
        assert_eq!(written.object["status"]["count"], 1);
        let mut changed = old.clone();
        changed["status"]["field"] = json!("bar");
        assert_eq!(
            causes(update(changed, &old, s, &opts)),
            ["status.field: Unsupported value: \"bar\": supported values: \"notfoo\""]
        );
    }
}
