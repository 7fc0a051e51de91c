//! What differs between kinds on the write path, in kube's vocabulary (the
//! `RESTCreateStrategy`/`RESTUpdateStrategy` of its generic registry, with the codec's
//! decoding and defaulting): every kind implements [`Strategy`] once, and
//! [`super::order`] runs the stages in the same order for all of them.
//!
//! Every method is pure: a kind's IO (conversion webhooks, RBAC's escalation check)
//! lives beside it in the server crate's `rest::ResourceKind`.

use super::trace::Trace;
use crate::field::{self, ErrorList};
use crate::object;
use crate::schema::structural::Structural;
use crate::status::Status;
use crate::table::{BuiltinPrinter, PrinterColumn};
use crate::write::WriteOptions;
use serde_json::Value;

/// One kind's rules for writing its objects (and the few that shape reads).
pub trait Strategy: Send + Sync {
    // -- decoding ------------------------------------------------------------------

    /// Decode a request body (or a patched object) as kube's decoder does for this
    /// kind: type errors (400), unknown fields dropped, warned about or rejected as
    /// `fieldValidation` says, the kind's decoding conversions. `old`: the stored
    /// object, on updates. Returns the warnings.
    fn decode(
        &self,
        obj: &mut Value,
        old: Option<&Value>,
        opts: &WriteOptions,
        t: &mut Trace,
    ) -> Result<Vec<String>, Status>;

    /// Decode what mutating admission returned (kube decodes the patched object
    /// again: unknown fields go silently).
    fn decode_admitted(&self, obj: &mut Value, t: &mut Trace) {
        let _ = (obj, t);
    }

    /// Apply defaults (the structural schema's, or the kind's defaulting functions).
    fn default(&self, obj: &mut Value, t: &mut Trace) {
        let _ = (obj, t);
    }

    /// Record the write's Update entry in `managedFields` (every write but an apply,
    /// which merged its own). Kinds that keep no managedFields here do nothing.
    fn record_managed_fields(&self, old: Option<&Value>, obj: &mut Value, opts: &WriteOptions) {
        let _ = (old, obj, opts);
    }

    // -- preparing -----------------------------------------------------------------

    /// Whether the kind keeps `metadata.generation` (1 on create, +1 when content
    /// other than metadata changes).
    fn has_generation(&self) -> bool;

    /// Whether `status` is a subresource: the main resource does not write it, and
    /// changes to it do not move the generation.
    fn status_subresource(&self) -> bool {
        false
    }

    /// kube's `PrepareForCreate`, after the system metadata is set: status reset,
    /// the kind's own fields.
    fn prepare_for_create(&self, obj: &mut Value) {
        let _ = obj;
    }

    /// kube's `PrepareForUpdate`, before the system metadata is carried over: which
    /// half of the object this write may change (`opts.subresource`), the rest taken
    /// from `old`.
    fn prepare_for_update(&self, new: &mut Value, old: &Value, opts: &WriteOptions) {
        let _ = (new, old, opts);
    }

    // -- validating ----------------------------------------------------------------

    /// kube's `Validate` (object metadata included); validation rules may warn.
    fn validate(&self, obj: &Value, warnings: &mut Vec<String>, t: &mut Trace) -> ErrorList;

    /// kube's `ValidateUpdate`. `Err`: a rejection before validation proper (the
    /// immutability check's 400).
    fn validate_update(
        &self,
        new: &Value,
        old: &Value,
        opts: &WriteOptions,
        warnings: &mut Vec<String>,
        t: &mut Trace,
    ) -> Result<ErrorList, Status>;

    /// The 422 for validation errors of `obj`.
    fn invalid(&self, obj: &Value, errs: &[field::Error]) -> Status;

    /// kube's `Canonicalize`, on a valid object: fields the server computes (a CRD's
    /// conditions, a policy's status) and the type metadata.
    fn canonicalize(&self, obj: &mut Value, old: Option<&Value>, opts: &WriteOptions) {
        let _ = (obj, old, opts);
    }

    // -- update rules --------------------------------------------------------------

    /// Whether a PUT without `metadata.resourceVersion` is allowed (it then writes
    /// over the stored revision).
    fn allow_unconditional_update(&self) -> bool {
        true
    }

    /// Whether a PUT of an object that does not exist creates it (kube's
    /// `AllowCreateOnUpdate`: leases, events, RBAC roles and bindings). The create is
    /// authorized and admitted as a create.
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// Whether finalizers still hold the object (namespaces also wait on
    /// `spec.finalizers`).
    fn finalizers_pending(&self, obj: &Value) -> bool {
        !object::finalizers(obj).is_empty()
    }

    // -- reading -------------------------------------------------------------------

    /// The schema server-side apply merges by. Without one, fields merge as kube
    /// merges unknown fields (maps granular, lists atomic).
    fn merge_schema(&self) -> &Structural {
        schemaless()
    }

    /// Printer columns for Table output (empty: kube's NAME/AGE default).
    fn printer_columns(&self) -> Vec<PrinterColumn> {
        Vec::new()
    }

    /// kube's own Table printer, for kinds whose cells are computed in code (when
    /// set, it replaces `printer_columns`).
    fn builtin_printer(&self) -> Option<&BuiltinPrinter> {
        None
    }

    /// The value of a field-selector label (`metadata.name`, `metadata.namespace` and
    /// the kind's own); `Err` is kube's `field label not supported: x`.
    fn field_value(
        &self,
        obj: &Value,
        field: &str,
    ) -> Result<Option<String>, crate::selector::SelectorError> {
        crate::selector::fields::cr_field_value(obj, field, &[])
    }

    /// Whether every label of `selector` is one the kind supports, as kube converts them
    /// when it decodes a list or watch request (before any object is looked at);
    /// `namespaced` is the kind's scope. A label's support depends on its name only, so
    /// by default [`Strategy::field_value`] is asked on an empty object.
    fn check_field_labels(
        &self,
        selector: &crate::selector::FieldSelector,
        namespaced: bool,
    ) -> Result<(), crate::selector::SelectorError> {
        let _ = namespaced;
        let empty = Value::Object(Default::default());
        for r in selector.requirements() {
            self.field_value(&empty, &r.field)?;
        }
        Ok(())
    }
}

/// The schema of objects without one: anything goes, as unknown fields.
pub fn schemaless() -> &'static Structural {
    static SCHEMALESS: std::sync::OnceLock<Structural> = std::sync::OnceLock::new();
    SCHEMALESS.get_or_init(|| Structural {
        type_: "object".into(),
        x_preserve_unknown_fields: true,
        ..Default::default()
    })
}
