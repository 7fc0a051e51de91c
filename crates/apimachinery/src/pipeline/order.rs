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
//! - update (PUT; `/status`, `/scale`, `/finalize`): [`update`] with the stored object;
//!   a PUT of a missing object is a [`create`] when the kind allows create on update
//!   (`Strategy::allow_create_on_update`: leases, events, RBAC), authorized as a create
//! - patch (JSON, merge, strategic merge): the patch is applied to the stored object,
//!   then [`update`] runs on the result (`opts.is_patch`)
//! - apply: the applied configuration is merged into the stored object with its
//!   managedFields (`apply`), then [`update`] (or [`create`]) runs (`opts.is_apply`)
//! - delete, deletecollection: [`delete`] on the stored object (per item for a
//!   deletecollection); a namespace is marked terminating after [`admit_delete`]
//!
//! Before any of these, the handler checks the namespace lifecycle (a create in a
//! missing or terminating namespace is refused) and the store reads the stored object.
//!
//! Patches and applies build their desired object from the stored one inside the
//! store's retry loop (kube's `GuaranteedUpdate` calls its `tryUpdate` the same way),
//! so a conflict re-applies the patch to the newer object.

use super::deletion;
use super::strategy::Strategy;
use super::trace::Trace;
use crate::apply;
use crate::object;
use crate::status::Status;
use crate::write::{Admitted, DeleteOptions, Descriptor, WriteOptions};
use serde_json::{json, Value};
use std::future::Future;
use std::pin::Pin;

/// A future the caller's IO returns.
pub type IoFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What mutating admission made of an object.
pub struct Mutated {
    /// The object as admitted.
    pub object: Value,
    /// Whether a plugin or webhook may have changed it. When none did, decoding and
    /// defaulting it again would change nothing, and the write skips that stage (kube
    /// decodes only a webhook's patched object).
    pub changed: bool,
}

impl Mutated {
    /// The object as it came: nothing admitted changes it.
    pub fn unchanged(object: Value) -> Mutated {
        Mutated {
            object,
            changed: false,
        }
    }
}

/// The IO a write waits on between its pure stages.
pub trait Admit: Send + Sync {
    /// Mutating admission (webhooks, then in-process hooks): the object as admitted.
    /// Warnings are appended to `warnings`.
    fn mutate<'a>(
        &'a self,
        obj: Value,
        old: Option<&'a Value>,
        warnings: &'a mut Vec<String>,
    ) -> IoFuture<'a, Result<Mutated, Status>>;

    /// Checks of the kind that need IO (RBAC's escalation check).
    fn check<'a>(
        &'a self,
        obj: &'a Value,
        old: Option<&'a Value>,
    ) -> IoFuture<'a, Result<(), Status>>;

    /// What the object takes from the kind's allocators (kube's `BeginCreate` and
    /// `BeginUpdate`: a Service's cluster IPs and node ports), written into it. The
    /// caller holds what was taken until the write is stored (kept) or fails (given
    /// back). Taking may be IO (a Service's cluster IPs are objects in storage); a
    /// dry run takes nothing. Default: nothing.
    fn allocate<'a>(
        &'a self,
        obj: &'a mut Value,
        old: Option<&'a Value>,
    ) -> IoFuture<'a, Result<(), Status>> {
        let _ = (obj, old);
        Box::pin(std::future::ready(Ok(())))
    }

    /// Validating admission (webhooks, hooks and policies, in parallel).
    fn validate<'a>(
        &'a self,
        obj: &'a Value,
        old: Option<&'a Value>,
        warnings: &'a mut Vec<String>,
    ) -> IoFuture<'a, Result<(), Status>>;

    /// Admission of a delete: mutating (which may change nothing) then validating
    /// hooks, with the stored object as `oldObject`.
    fn delete<'a>(
        &'a self,
        old: &'a Value,
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
    ) -> IoFuture<'a, Result<Mutated, Status>> {
        Box::pin(std::future::ready(Ok(Mutated::unchanged(obj))))
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

    fn delete<'a>(
        &'a self,
        _: &'a Value,
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
    let mutated = io
        .mutate(obj, None, &mut warnings)
        .await
        .map_err(|e| e.with_warnings_before(&warnings))?;
    obj = mutated.object;
    // 5. the kind's checks that need IO
    io.check(&obj, None)
        .await
        .map_err(|e| e.with_warnings_before(&warnings))?;
    // 6. decode and default what admission changed
    if mutated.changed {
        kind.decode_admitted(&mut obj, &mut t);
        kind.default(&mut obj, &mut t);
    }
    // 7. the kind's allocations (a Service's cluster IPs and node ports)
    io.allocate(&mut obj, None)
        .await
        .map_err(|e| e.with_warnings_before(&warnings))?;
    // 8. prepare: system metadata, then the kind's
    object::prepare_for_create(&mut obj, kind.has_generation());
    kind.prepare_for_create(&mut obj);
    t.note("prepare", "system metadata set");
    // 9. validate (schema, metadata, CEL rules); then the fields the server computes
    let mut rule_warnings = Vec::new();
    let errs = kind.validate(&obj, &mut rule_warnings, &mut t);
    if !errs.is_empty() {
        return Err(kind.invalid(&obj, &errs).with_warnings_before(&warnings));
    }
    warnings.extend(rule_warnings);
    kind.canonicalize(&mut obj, None, opts);
    // 10. validating admission
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
    // 4. managedFields (a `/scale` write brings its own: `apply::scale`)
    if opts.subresource != "scale" {
        kind.record_managed_fields(Some(old), &mut new, opts);
    }
    // 5. mutating admission
    let mutated = io
        .mutate(new, Some(old), &mut warnings)
        .await
        .map_err(|e| e.with_warnings_before(&warnings))?;
    new = mutated.object;
    // 6. the kind's checks that need IO
    io.check(&new, Some(old))
        .await
        .map_err(|e| e.with_warnings_before(&warnings))?;
    // 7. decode and default what admission changed
    if mutated.changed {
        kind.decode_admitted(&mut new, &mut t);
        kind.default(&mut new, &mut t);
    }
    // 8. the kind's allocations: kept, taken or given back by the update
    io.allocate(&mut new, Some(old))
        .await
        .map_err(|e| e.with_warnings_before(&warnings))?;
    // 9. prepare: the kind's (which half this write changes), system metadata carried
    //    over, generation, and no managedFields change that moves only timestamps
    kind.prepare_for_update(&mut new, old, opts);
    object::prepare_for_update(&mut new, old);
    if kind.has_generation() && opts.subresource != "status" {
        object::bump_generation_if_changed(&mut new, old, kind.status_subresource());
    }
    apply::revert_time_only_change(&mut new, old);
    t.note("prepare", "system metadata carried over");
    // 10. validate: immutability first (its own 400), then schema, metadata, CEL rules
    let mut rule_warnings = Vec::new();
    let errs = kind
        .validate_update(&new, old, opts, &mut rule_warnings, &mut t)
        .map_err(|e| e.with_warnings_before(&warnings))?;
    if !errs.is_empty() {
        return Err(kind.invalid(&new, &errs).with_warnings_before(&warnings));
    }
    warnings.extend(rule_warnings);
    kind.canonicalize(&mut new, Some(old), opts);
    // 11. validating admission
    io.validate(&new, Some(old), &mut warnings)
        .await
        .map_err(|e| e.with_warnings_before(&warnings))?;
    Ok(Admitted {
        object: new,
        warnings,
        trace: t.into_lines(),
    })
}

/// What a delete does to the stored object.
#[derive(Debug)]
pub enum Deletion {
    /// Already terminating (or its graceful deletion pending): nothing changes, the
    /// object is answered as it is.
    Terminating(Value),
    /// Finalizers or a grace period hold it: write it back marked terminating
    /// (`deletionTimestamp`).
    Finalize(Value),
    /// Nothing holds it: remove it from storage.
    Remove(Value),
    /// A graceful deletion with no time left (an unscheduled pod): write it marked,
    /// then remove it (watchers see both).
    MarkThenRemove(Value),
}

/// The first stages of a delete: `DeleteOptions.preconditions`, then admission.
/// `revision` is the stored object's.
pub async fn admit_delete(
    io: &dyn Admit,
    d: &Descriptor,
    old: &Value,
    revision: i64,
    opts: &DeleteOptions,
    warnings: &mut Vec<String>,
) -> Result<(), Status> {
    // 1. preconditions (uid, resourceVersion): kube's 409s
    check_preconditions(d, old, revision, opts)?;
    // 2. mutating, then validating admission on the stored object
    io.delete(old, warnings)
        .await
        .map_err(|e| e.with_warnings_before(warnings))
}

/// Delete of one object: [`admit_delete`], then graceful deletion (pods), then
/// finalizers (the object's, the garbage collector's from the delete's policy, and
/// those the kind adds on delete: `finalizers_on_delete`) decide.
pub async fn delete(
    io: &dyn Admit,
    d: &Descriptor,
    mut obj: Value,
    revision: i64,
    opts: &DeleteOptions,
    finalizers_on_delete: &[&str],
    warnings: &mut Vec<String>,
) -> Result<Deletion, Status> {
    admit_delete(io, d, &obj, revision, opts, warnings).await?;
    let terminating = object::is_terminating(&obj);
    // 3. graceful deletion: a period starts, is shortened, or is pending already
    let graceful = match deletion::grace_period(d, &obj, opts.grace_period_seconds) {
        None => None,
        Some(period) if !terminating => {
            deletion::mark_deleting(&mut obj, period);
            Some(period)
        }
        Some(_) => {
            let current = object::meta(&obj)
                .get("deletionGracePeriodSeconds")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            match opts.grace_period_seconds.map(|p| if p < 0 { 1 } else { p }) {
                _ if current == 0 => None,
                Some(p) if p < current => {
                    deletion::shorten_grace(&mut obj, current, p);
                    object::meta(&obj)
                        .get("deletionGracePeriodSeconds")
                        .and_then(Value::as_i64)
                }
                _ => return Ok(Deletion::Terminating(obj)),
            }
        }
    };
    // 4. finalizers: the kind's on delete, then the garbage collector's
    let mut finalizers = object::finalizers(&obj);
    for f in finalizers_on_delete {
        if !finalizers.iter().any(|x| x == f) && !terminating {
            finalizers.push((*f).to_string());
        }
    }
    let mut changed = finalizers != object::finalizers(&obj);
    if changed {
        object::meta_mut(&mut obj).insert("finalizers".into(), json!(finalizers));
    }
    if let Some(next) = deletion::gc_finalizers(d, &obj, opts) {
        object::meta_mut(&mut obj).insert("finalizers".into(), json!(next));
        finalizers = next;
        changed = true;
    }
    match graceful {
        Some(period) if finalizers.is_empty() && period == 0 => Ok(Deletion::MarkThenRemove(obj)),
        Some(_) => Ok(Deletion::Finalize(obj)),
        None if finalizers.is_empty() => Ok(Deletion::Remove(obj)),
        None if terminating && !changed => Ok(Deletion::Terminating(obj)),
        None => {
            deletion::mark_deleting(&mut obj, 0);
            Ok(Deletion::Finalize(obj))
        }
    }
}

/// `DeleteOptions.preconditions` against the stored object (kube's 409 texts).
fn check_preconditions(
    d: &Descriptor,
    obj: &Value,
    revision: i64,
    opts: &DeleteOptions,
) -> Result<(), Status> {
    let name = object::name(obj);
    if let Some(uid) = &opts.uid {
        let actual = object::meta_str(obj, "uid");
        if uid != actual {
            return Err(Status::conflict(
                &d.gr,
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
                ),
            ));
        }
    }
    if let Some(rv) = &opts.resource_version {
        let actual = revision.to_string();
        if rv != &actual {
            return Err(Status::conflict(
                &d.gr,
                name,
                &format!("Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {actual}"),
            ));
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::{self, ErrorList};
    use std::sync::Mutex;

    /// A kind and an admission that write down each stage as it runs.
    struct Recorder {
        log: Mutex<Vec<&'static str>>,
        reject: bool,
        /// What its mutating admission reports.
        admission_changes: bool,
    }

    impl Recorder {
        fn new(reject: bool) -> Self {
            Recorder {
                log: Mutex::new(Vec::new()),
                reject,
                admission_changes: true,
            }
        }

        fn note(&self, stage: &'static str) {
            self.log.lock().unwrap().push(stage);
        }

        fn stages(&self) -> Vec<&'static str> {
            self.log.lock().unwrap().clone()
        }
    }

    impl Strategy for Recorder {
        fn decode(
            &self,
            _: &mut Value,
            _: Option<&Value>,
            _: &WriteOptions,
            _: &mut Trace,
        ) -> Result<Vec<String>, Status> {
            self.note("decode");
            Ok(vec!["decoded".into()])
        }
        fn decode_admitted(&self, _: &mut Value, _: &mut Trace) {
            self.note("decode admitted");
        }
        fn default(&self, _: &mut Value, _: &mut Trace) {
            self.note("default");
        }
        fn record_managed_fields(&self, _: Option<&Value>, _: &mut Value, _: &WriteOptions) {
            self.note("managedFields");
        }
        fn has_generation(&self) -> bool {
            true
        }
        fn prepare_for_create(&self, _: &mut Value) {
            self.note("prepare");
        }
        fn prepare_for_update(&self, _: &mut Value, _: &Value, _: &WriteOptions) {
            self.note("prepare");
        }
        fn validate(&self, _: &Value, w: &mut Vec<String>, _: &mut Trace) -> ErrorList {
            self.note("validate");
            w.push("rule warning".into());
            if self.reject {
                vec![field::Error::required(&field::Path::new("spec"), "")]
            } else {
                Vec::new()
            }
        }
        fn validate_update(
            &self,
            obj: &Value,
            _: &Value,
            _: &WriteOptions,
            w: &mut Vec<String>,
            t: &mut Trace,
        ) -> Result<ErrorList, Status> {
            Ok(Strategy::validate(self, obj, w, t))
        }
        fn invalid(&self, obj: &Value, errs: &[field::Error]) -> Status {
            Status::invalid("Thing", "example.com", object::name(obj), errs)
        }
        fn canonicalize(&self, _: &mut Value, _: Option<&Value>, _: &WriteOptions) {
            self.note("canonicalize");
        }
    }

    impl Admit for Recorder {
        fn mutate<'a>(
            &'a self,
            obj: Value,
            _: Option<&'a Value>,
            w: &'a mut Vec<String>,
        ) -> IoFuture<'a, Result<Mutated, Status>> {
            self.note("mutating admission");
            w.push("mutated".into());
            Box::pin(std::future::ready(Ok(Mutated {
                object: obj,
                changed: self.admission_changes,
            })))
        }
        fn check<'a>(
            &'a self,
            _: &'a Value,
            _: Option<&'a Value>,
        ) -> IoFuture<'a, Result<(), Status>> {
            self.note("check");
            Box::pin(std::future::ready(Ok(())))
        }
        fn allocate<'a>(
            &'a self,
            _: &'a mut Value,
            _: Option<&'a Value>,
        ) -> IoFuture<'a, Result<(), Status>> {
            self.note("allocate");
            Box::pin(std::future::ready(Ok(())))
        }
        fn validate<'a>(
            &'a self,
            _: &'a Value,
            _: Option<&'a Value>,
            _: &'a mut Vec<String>,
        ) -> IoFuture<'a, Result<(), Status>> {
            self.note("validating admission");
            Box::pin(std::future::ready(Ok(())))
        }
        fn delete<'a>(
            &'a self,
            _: &'a Value,
            _: &'a mut Vec<String>,
        ) -> IoFuture<'a, Result<(), Status>> {
            self.note("delete admission");
            Box::pin(std::future::ready(Ok(())))
        }
    }

    fn run<T>(f: impl Future<Output = T>) -> T {
        let mut f = std::pin::pin!(f);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(out) => out,
            std::task::Poll::Pending => panic!("the test's IO is ready at once"),
        }
    }

    fn thing() -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "a"}})
    }

    #[test]
    fn a_create_runs_every_stage_in_kubes_order() {
        let r = Recorder::new(false);
        let out = run(create(&r, &r, thing(), &WriteOptions::default())).unwrap();
        assert_eq!(
            r.stages(),
            [
                "decode",
                "default",
                "managedFields",
                "mutating admission",
                "check",
                "decode admitted",
                "default",
                "allocate",
                "prepare",
                "validate",
                "canonicalize",
                "validating admission",
            ]
        );
        assert_eq!(out.warnings, ["decoded", "mutated", "rule warning"]);
        assert_eq!(out.object["metadata"]["generation"], json!(1));
    }

    #[test]
    fn an_update_runs_every_stage_in_kubes_order() {
        let r = Recorder::new(false);
        let mut old = thing();
        old["metadata"]["resourceVersion"] = json!("7");
        old["metadata"]["generation"] = json!(3);
        let mut new = thing();
        new["spec"] = json!({"x": 1});
        let out = run(update(&r, &r, new, &old, &WriteOptions::default())).unwrap();
        assert_eq!(
            r.stages(),
            [
                "decode",
                "default",
                "managedFields",
                "mutating admission",
                "check",
                "decode admitted",
                "default",
                "allocate",
                "prepare",
                "validate",
                "canonicalize",
                "validating admission",
            ]
        );
        // An unconditional update carries the stored revision; the spec change moves
        // the generation.
        assert_eq!(out.object["metadata"]["resourceVersion"], json!("7"));
        assert_eq!(out.object["metadata"]["generation"], json!(4));
    }

    #[test]
    fn what_admission_left_unchanged_is_not_decoded_again() {
        let r = Recorder {
            admission_changes: false,
            ..Recorder::new(false)
        };
        let out = run(create(&r, &r, thing(), &WriteOptions::default())).unwrap();
        let mut old = out.object.clone();
        old["metadata"]["resourceVersion"] = json!("7");
        run(update(&r, &r, thing(), &old, &WriteOptions::default())).unwrap();
        let once = [
            "decode",
            "default",
            "managedFields",
            "mutating admission",
            "check",
            "allocate",
            "prepare",
            "validate",
            "canonicalize",
            "validating admission",
        ];
        assert_eq!(r.stages(), [once, once].concat());
    }

    #[test]
    fn an_invalid_object_stops_before_validating_admission_with_earlier_warnings() {
        let r = Recorder::new(true);
        let err = run(create(&r, &r, thing(), &WriteOptions::default())).unwrap_err();
        assert_eq!(err.code, 422);
        // Warnings of the stages before validation go out with the error; the rules'
        // own warnings do not (their object was rejected).
        assert_eq!(err.warnings, ["decoded", "mutated"]);
        assert_eq!(r.stages().last(), Some(&"validate"));
    }

    #[test]
    fn a_delete_checks_preconditions_before_admission_then_finalizers_decide() {
        let d = Descriptor {
            gr: crate::status::GroupResource::new("example.com", "things"),
            version: "v1".into(),
            kind: "Thing".into(),
            list_kind: "ThingList".into(),
            singular: "thing".into(),
            namespaced: false,
            key_root: "/registry/example.com/things".into(),
            status_subresource: false,
            has_generation: true,
        };
        let r = Recorder::new(false);
        let mut obj = thing();
        obj["metadata"]["uid"] = json!("u1");
        let stale = DeleteOptions {
            uid: Some("u2".into()),
            ..Default::default()
        };
        let err = run(delete(&r, &d, obj.clone(), 5, &stale, &[], &mut Vec::new())).unwrap_err();
        assert_eq!(err.code, 409);
        assert!(
            r.stages().is_empty(),
            "admission ran before the preconditions"
        );

        let opts = DeleteOptions::default();
        let gone = run(delete(&r, &d, obj.clone(), 5, &opts, &[], &mut Vec::new())).unwrap();
        assert!(matches!(gone, Deletion::Remove(_)));
        assert_eq!(r.stages(), ["delete admission"]);

        let held = run(delete(&r, &d, obj, 5, &opts, &["f/x"], &mut Vec::new())).unwrap();
        let Deletion::Finalize(held) = held else {
            panic!("a finalizer holds the object: {held:?}")
        };
        assert_eq!(held["metadata"]["finalizers"], json!(["f/x"]));
        assert!(object::is_terminating(&held));
    }
}
