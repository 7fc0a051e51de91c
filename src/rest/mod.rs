//! The REST layer, as kube's generic registry: one generic object store over the
//! `Storage` trait, and one `ResourceKind` per kind of object (custom resources,
//! CRDs, namespaces) that says how writes are admitted and reads decorated.
//!
//! Handlers call this layer; it never sees HTTP.

pub mod access_review;
pub mod admission_policy;
pub mod builtin;
pub mod crd;
pub mod custom_resource;
pub mod namespace;
pub use apimachinery::object;
pub mod rbac;
pub mod store;
pub mod strategic;
pub mod typed;
pub mod watch;
pub mod webhook_configuration;

use crate::status::Status;
use serde_json::Value;

pub use apimachinery::write::{
    Admitted, DeleteOptions, Descriptor, FieldValidation, Operation, WriteOptions,
};

/// The conversion of objects between storage and a request: finished at once when no IO
/// is needed (built-in kinds, strategy `None`: no allocation), or waiting on a CRD's
/// conversion webhook. Awaiting it gives the outcome.
pub enum Conversion<'a> {
    /// Finished (`None` once the outcome has been taken).
    Done(Option<Result<(), Status>>),
    /// Waiting on IO.
    Pending(futures::future::BoxFuture<'a, Result<(), Status>>),
}

impl Conversion<'_> {
    /// A conversion finished with `result`.
    pub fn done(result: Result<(), Status>) -> Self {
        Conversion::Done(Some(result))
    }
}

impl std::future::Future for Conversion<'_> {
    type Output = Result<(), Status>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        match self.get_mut() {
            Conversion::Done(outcome) => std::task::Poll::Ready(outcome.take().unwrap_or(Ok(()))),
            Conversion::Pending(future) => future.as_mut().poll(cx),
        }
    }
}

/// How one kind of object is admitted on write and decorated on read.
pub trait ResourceKind: Send + Sync {
    /// Static facts.
    fn descriptor(&self) -> &Descriptor;

    /// Admit a create: the decoded body in, the object to store out (pipeline for
    /// custom resources; validation and defaulting for CRDs and namespaces).
    fn admit_create(&self, obj: Value, opts: &WriteOptions) -> Result<Admitted, Status>;

    /// Admit an update of `old` to `new` (PUT, patches; `opts.subresource` tells which).
    fn admit_update(
        &self,
        new: Value,
        old: &Value,
        opts: &WriteOptions,
    ) -> Result<Admitted, Status>;

    /// The stages of a create before mutating admission (custom resources: decode →
    /// prune → default); built-in kinds hand the body to admission as received.
    fn create_mutating_input(&self, obj: Value, opts: &WriteOptions) -> Result<Admitted, Status> {
        let _ = opts;
        Ok(Admitted {
            object: obj,
            ..Default::default()
        })
    }

    /// The stages of a create after mutating admission; `input` carries the object
    /// and the warnings and trace so far.
    fn create_after_admission(
        &self,
        input: Admitted,
        opts: &WriteOptions,
    ) -> Result<Admitted, Status> {
        let mut out = self.admit_create(input.object, opts)?;
        out.warnings.splice(0..0, input.warnings);
        out.trace.splice(0..0, input.trace);
        Ok(out)
    }

    /// The stages of an update before mutating admission.
    fn update_mutating_input(
        &self,
        new: Value,
        old: &Value,
        opts: &WriteOptions,
    ) -> Result<Admitted, Status> {
        let _ = (old, opts);
        Ok(Admitted {
            object: new,
            ..Default::default()
        })
    }

    /// The stages of an update after mutating admission.
    fn update_after_admission(
        &self,
        input: Admitted,
        old: &Value,
        opts: &WriteOptions,
    ) -> Result<Admitted, Status> {
        let mut out = self.admit_update(input.object, old, opts)?;
        out.warnings.splice(0..0, input.warnings);
        out.trace.splice(0..0, input.trace);
        Ok(out)
    }

    /// Checks of a create (`old`: `None`) or an update that need the requesting user
    /// and IO, run on the object after mutating admission (kube's RBAC escalation
    /// check); `None` (the default): nothing to check.
    fn write_check<'a>(
        &'a self,
        obj: &'a Value,
        old: Option<&'a Value>,
        opts: &'a WriteOptions,
    ) -> Option<futures::future::BoxFuture<'a, Result<(), Status>>> {
        let _ = (obj, old, opts);
        None
    }

    /// Convert an admitted object to the form kept in storage (custom resources: the
    /// storage version, which may take a call to the CRD's conversion webhook).
    fn to_storage<'a>(&'a self, obj: &'a mut Value) -> Conversion<'a> {
        let _ = obj;
        Conversion::done(Ok(()))
    }

    /// Decorate an object read from storage (custom resources: prune + default, then
    /// convert to the addressed version).
    fn on_read<'a>(&'a self, obj: &'a mut Value) -> Conversion<'a> {
        let _ = obj;
        Conversion::done(Ok(()))
    }

    /// [`ResourceKind::on_read`] for the objects of one list page (custom resources
    /// convert them in one webhook call).
    fn on_read_all<'a>(&'a self, objs: &'a mut [Value]) -> Conversion<'a> {
        Conversion::Pending(Box::pin(async move {
            for obj in objs.iter_mut() {
                self.on_read(obj).await?;
            }
            Ok(())
        }))
    }

    /// The schema server-side apply merges by. Built-in kinds here carry no typed
    /// schema: their fields merge as kube merges unknown fields (maps granular, lists atomic).
    fn merge_schema(&self) -> &crate::schema::structural::Structural {
        static SCHEMALESS: std::sync::OnceLock<crate::schema::structural::Structural> =
            std::sync::OnceLock::new();
        SCHEMALESS.get_or_init(|| crate::schema::structural::Structural {
            type_: "object".into(),
            x_preserve_unknown_fields: true,
            ..Default::default()
        })
    }

    /// Whether a PUT without `metadata.resourceVersion` is allowed (not for custom
    /// resources and CRDs).
    fn allow_unconditional_update(&self) -> bool {
        true
    }

    /// Whether finalizers still hold the object (namespaces also wait on `spec.finalizers`).
    fn finalizers_pending(&self, obj: &Value) -> bool {
        !object::finalizers(obj).is_empty()
    }

    /// Printer columns for Table output (empty = kube's NAME/AGE default).
    fn printer_columns(&self) -> Vec<crate::table::PrinterColumn> {
        Vec::new()
    }

    /// kube's own Table printer, for built-in kinds whose cells are computed in code
    /// (when set, it replaces `printer_columns`).
    fn builtin_printer(&self) -> Option<&crate::table::BuiltinPrinter> {
        None
    }

    /// Extra field-selector labels this kind supports besides name/namespace.
    fn field_value(&self, obj: &Value, field: &str) -> Result<Option<String>, String> {
        crate::selector::fields::cr_field_value(obj, field, &[])
    }
}
