//! The REST layer, as kube's generic registry: one generic object store over the
//! `Storage` trait, and one `ResourceKind` per kind of object (custom resources,
//! CRDs, namespaces) that says how writes are admitted and reads decorated.
//!
//! Handlers call this layer; it never sees HTTP.

pub mod access_review;
pub mod admission_policy;
pub mod answered;
pub mod builtin;
pub mod crd;
pub mod custom_resource;
pub mod namespace;
pub use apimachinery::object;
pub mod rbac;
pub mod served_cache;
pub mod store;
pub mod stored;
pub mod strategic;
pub mod typed;
pub mod watch;
pub mod watch_objects;
pub mod webhook_configuration;

use crate::status::Status;
use serde_json::Value;

pub use apimachinery::pipeline::strategy::Strategy;
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

/// What a write took from a kind's allocators (kube's `FinishFunc` of `BeginCreate`
/// and `BeginUpdate`): [`Reservation::commit`] once the object is stored keeps it,
/// [`Reservation::revert`] when the write fails gives it back (so does dropping it
/// unfinished, in the background).
#[must_use = "a reservation not committed is given back"]
pub struct Reservation {
    finish: Option<Finish>,
}

/// How a [`Reservation`] ends: `true` once the write is stored, `false` when it failed.
type Finish = Box<dyn FnOnce(bool) -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

impl Reservation {
    /// A reservation finished by `finish(stored)`.
    pub fn new(
        finish: impl FnOnce(bool) -> futures::future::BoxFuture<'static, ()> + Send + Sync + 'static,
    ) -> Self {
        Reservation {
            finish: Some(Box::new(finish)),
        }
    }

    /// The write was stored: keep what was taken, give back what the old object held.
    pub async fn commit(mut self) {
        if let Some(finish) = self.finish.take() {
            // Its own task: a request dropped half-way cannot cut it short.
            let _ = tokio::spawn(finish(true)).await;
        }
    }

    /// The write failed: give back what was taken.
    pub async fn revert(mut self) {
        if let Some(finish) = self.finish.take() {
            let _ = tokio::spawn(finish(false)).await;
        }
    }
}

impl Drop for Reservation {
    /// Neither committed nor reverted (a request dropped mid-write): given back in the
    /// background.
    fn drop(&mut self) {
        if let Some(finish) = self.finish.take() {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(finish(false));
            }
        }
    }
}

/// One kind of object as the store serves it: its [`Strategy`] (every rule of its
/// writes, pure, run by `pipeline::order`) and the IO around it.
pub trait ResourceKind: Send + Sync {
    /// Static facts.
    fn descriptor(&self) -> &Descriptor;

    /// How the kind's objects are written (and printed, and selected).
    fn strategy(&self) -> &dyn Strategy;

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

    /// What a create (`old`: `None`) or an update of the main resource takes from the
    /// kind's allocators, written into the object (kube's `BeginCreate`/`BeginUpdate`:
    /// a Service's cluster IPs and node ports); `None` (the default): nothing. A dry
    /// run fills the fields and takes nothing.
    fn begin_write<'a>(
        &'a self,
        obj: &'a mut Value,
        old: Option<&'a Value>,
        dry_run: bool,
    ) -> futures::future::BoxFuture<'a, Result<Option<Reservation>, Status>> {
        let _ = (obj, old, dry_run);
        Box::pin(std::future::ready(Ok(None)))
    }

    /// The object was removed from storage (kube's `AfterDelete`: a Service gives
    /// back its cluster IPs and node ports).
    fn after_delete<'a>(&'a self, obj: &'a Value) -> futures::future::BoxFuture<'a, ()> {
        let _ = obj;
        Box::pin(std::future::ready(()))
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

    /// An object this kind just wrote (what [`ResourceKind::to_storage`] made of it) as
    /// the write returns it: by default decorated as a read would be.
    fn on_written<'a>(&'a self, obj: &'a mut Value) -> Conversion<'a> {
        self.on_read(obj)
    }

    /// Whether [`ResourceKind::on_written`] leaves every object as it was stored (with
    /// its `resourceVersion`): a write then replies with its stored bytes (and the
    /// `resourceVersion` put in) instead of encoding the object again.
    fn stored_is_served(&self) -> bool {
        false
    }

    /// What the served form of this kind's objects depends on besides their storage
    /// revision, when [`ResourceKind::on_read`] is a pure function of the two (no
    /// webhook): the store then keeps the served bytes (`served_cache`). `None`: always
    /// decorate anew.
    fn served_form(&self) -> Option<(i64, usize)> {
        None
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
}
