//! The order of a write, for every kind, in one place.
//!
//! Each function below lists every stage of one verb in the order kube-apiserver runs
//! them; what differs between kinds is the kind's [`Strategy`], and the IO in between
//! (admission webhooks and hooks, RBAC's escalation check) comes through [`Admit`],
//! given by the caller: this module does no IO itself. The REST store
//! (`rest::Store` in the server crate) calls these, then converts the admitted
//! object to its storage form and writes it (retrying updates on conflicts, as kube's
//! `GuaranteedUpdate`).
//!
//! - create (POST; server-side apply of a missing object): [`create`]
//! - update (PUT; `/status`, `/scale`, `/finalize`): [`update`] with the stored object
//! - patch (JSON, merge, strategic merge): the patch is applied to the stored object,
//!   then [`update`] runs on the result (`opts.is_patch`)
//! - apply: the applied configuration is merged into the stored object with its
//!   managedFields (`apply`), then [`update`] (or [`create`]) runs (`opts.is_apply`)
//! - delete, deletecollection: preconditions, then mutating and validating admission
//!   on the stored object ([`Admit::delete`]), then finalizers decide between marking
//!   the object terminating and removing it (per item for a deletecollection)

use super::strategy::Strategy;
use super::trace::Trace;
use crate::apply;
use crate::object;
use crate::status::Status;
use crate::write::{Admitted, WriteOptions};
use serde_json::{json, Value};
use std::future::Future;
use std::pin::Pin;

/// A future the caller's IO returns.
pub type IoFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The IO a write waits on between its pure stages.
pub trait Admit: Send + Sync {
    /// Mutating admission (webhooks, then in-process hooks): the object as admitted.
    /// Warnings are appended to `warnings`.
    fn mutate<'a>(
        &'a self,
        obj: Value,
        old: Option<&'a Value>,
        warnings: &'a mut Vec<String>,
    ) -> IoFuture<'a, Result<Value, Status>>;

    /// Checks of the kind that need IO (RBAC's escalation check).
    fn check<'a>(
        &'a self,
        obj: &'a Value,
        old: Option<&'a Value>,
    ) -> IoFuture<'a, Result<(), Status>>;

    /// Validating admission (webhooks, hooks and policies, in parallel).
    fn validate<'a>(
        &'a self,
        obj: &'a Value,
        old: Option<&'a Value>,
        warnings: &'a mut Vec<String>,
    ) -> IoFuture<'a, Result<(), Status>>;
}

/// No admission at all: the pure path (benchmarks, unit tests).
pub struct NoAdmission;

impl Admit for NoAdmission {
    fn mutate<'a>(
        &'a self,
        obj: Value,
        _: Option<&'a Value>,
        _: &'a mut Vec<String>,
    ) -> IoFuture<'a, Result<Value, Status>> {
        Box::pin(std::future::ready(Ok(obj)))
    }

    fn check<'a>(&'a self, _: &'a Value, _: Option<&'a Value>) -> IoFuture<'a, Result<(), Status>> {
        Box::pin(std::future::ready(Ok(())))
    }

    fn validate<'a>(
        &'a self,
        _: &'a Value,
        _: Option<&'a Value>,
        _: &'a mut Vec<String>,
    ) -> IoFuture<'a, Result<(), Status>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// Create: the decoded request body in, the object to store out.
pub async fn create(
    kind: &dyn Strategy,
    io: &dyn Admit,
    mut obj: Value,
    opts: &WriteOptions,
) -> Result<Admitted, Status> {
    let mut t = Trace::new(opts.trace);
    // 1. decode: type errors, unknown fields (fieldValidation), the kind's conversions
    let mut warnings = kind.decode(&mut obj, None, opts, &mut t)?;
    // 2. default
    kind.default(&mut obj, &mut t);
    // 3. managedFields: the write's Update entry
    kind.record_managed_fields(None, &mut obj, opts);
    // 4. mutating admission (warnings so far go out with any failure from here on)
    obj = io
        .mutate(obj, None, &mut warnings)
        .await
        .map_err(|e| e.with_warnings_before(&warnings))?;
    // 5. the kind's checks that need IO
    io.check(&obj, None)
        .await
        .map_err(|e| e.with_warnings_before(&warnings))?;
    // 6. decode and default what admission returned
    kind.decode_admitted(&mut obj, &mut t);
    kind.default(&mut obj, &mut t);
    // 7. prepare: system metadata, then the kind's
    object::prepare_for_create(&mut obj, kind.has_generation());
    kind.prepare_for_create(&mut obj);
    t.note("prepare", "system metadata set");
    // 8. validate (schema, metadata, CEL rules); then the fields the server computes
    let mut rule_warnings = Vec::new();
    let errs = kind.validate(&obj, &mut rule_warnings, &mut t);
    if !errs.is_empty() {
        return Err(kind.invalid(&obj, &errs).with_warnings_before(&warnings));
    }
    warnings.extend(rule_warnings);
    kind.canonicalize(&mut obj, None, opts);
    // 9. validating admission
    io.validate(&obj, None, &mut warnings)
        .await
        .map_err(|e| e.with_warnings_before(&warnings))?;
    Ok(Admitted {
        object: obj,
        warnings,
        trace: t.into_lines(),
    })
}

/// Update of the main resource or a subresource (`opts.subresource`): `new` is the
/// desired object (PUT body, patched or applied object), `old` the stored one,
/// converted to the version the request addresses.
pub async fn update(
    kind: &dyn Strategy,
    io: &dyn Admit,
    mut new: Value,
    old: &Value,
    opts: &WriteOptions,
) -> Result<Admitted, Status> {
    let mut t = Trace::new(opts.trace);
    // 1. decode
    let mut warnings = kind.decode(&mut new, Some(old), opts, &mut t)?;
    // 2. an unconditional update (no resourceVersion) writes over the stored revision
    if kind.allow_unconditional_update() && object::meta_str(&new, "resourceVersion").is_empty() {
        let rv = object::meta_str(old, "resourceVersion").to_string();
        object::meta_mut(&mut new).insert("resourceVersion".into(), json!(rv));
    }
    // 3. default
    kind.default(&mut new, &mut t);
    // 4. managedFields
    kind.record_managed_fields(Some(old), &mut new, opts);
    // 5. mutating admission
    new = io
        .mutate(new, Some(old), &mut warnings)
        .await
        .map_err(|e| e.with_warnings_before(&warnings))?;
    // 6. the kind's checks that need IO
    io.check(&new, Some(old))
        .await
        .map_err(|e| e.with_warnings_before(&warnings))?;
    // 7. decode and default what admission returned
    kind.decode_admitted(&mut new, &mut t);
    kind.default(&mut new, &mut t);
    // 8. prepare: the kind's (which half this write changes), system metadata carried
    //    over, generation, and no managedFields change that moves only timestamps
    kind.prepare_for_update(&mut new, old, opts);
    object::prepare_for_update(&mut new, old);
    if kind.has_generation() && opts.subresource != "status" {
        object::bump_generation_if_changed(&mut new, old, kind.status_subresource());
    }
    apply::revert_time_only_change(&mut new, old);
    t.note("prepare", "system metadata carried over");
    // 9. validate: immutability first (its own 400), then schema, metadata, CEL rules
    let mut rule_warnings = Vec::new();
    let errs = kind
        .validate_update(&new, old, opts, &mut rule_warnings, &mut t)
        .map_err(|e| e.with_warnings_before(&warnings))?;
    if !errs.is_empty() {
        return Err(kind.invalid(&new, &errs).with_warnings_before(&warnings));
    }
    warnings.extend(rule_warnings);
    kind.canonicalize(&mut new, Some(old), opts);
    // 10. validating admission
    io.validate(&new, Some(old), &mut warnings)
        .await
        .map_err(|e| e.with_warnings_before(&warnings))?;
    Ok(Admitted {
        object: new,
        warnings,
        trace: t.into_lines(),
    })
}

/// [`create`] without admission, synchronously (the pure path: benchmarks, tests).
pub fn create_without_admission(
    kind: &dyn Strategy,
    obj: Value,
    opts: &WriteOptions,
) -> Result<Admitted, Status> {
    now(create(kind, &NoAdmission, obj, opts))
}

/// [`update`] without admission, synchronously.
pub fn update_without_admission(
    kind: &dyn Strategy,
    new: Value,
    old: &Value,
    opts: &WriteOptions,
) -> Result<Admitted, Status> {
    now(update(kind, &NoAdmission, new, old, opts))
}

/// The outcome of a write that never waits: its stages are pure and
/// [`NoAdmission`]'s futures are ready at once, so one poll finishes it.
fn now(write: impl Future<Output = Result<Admitted, Status>>) -> Result<Admitted, Status> {
    let mut write = std::pin::pin!(write);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match write.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(out) => out,
        std::task::Poll::Pending => Err(Status::internal("a write without admission waited")),
    }
}
