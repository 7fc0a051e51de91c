//! The generic object store (kube's `genericregistry.Store`): get, list, create,
//! guaranteed update, delete with finalizers, over any `Storage` backend.

use super::{
    object, Admitted, DeleteOptions, Descriptor, Operation, Reservation, ResourceKind, WriteOptions,
};
use crate::admission::{Admission, Attributes, SubresourceView};
use crate::codec;
use crate::pipeline::order::{self, IoFuture, Mutated};
use crate::selector::{fields::FieldSelector, labels::LabelSelector};
use crate::status::{self, Details, GroupResource, Status};
use crate::storage::{
    KeyValue, ListOptions as StorageListOptions, Revision, Storage, StorageError,
};
use serde_json::{json, Value};
use std::sync::Arc;

/// How many times a write is retried when another writer won the race.
const MAX_RETRIES: usize = 64;

pub use crate::storage::storage_status;

pub use super::stored::{decode_stored, encode_for_storage};
use super::stored::{encode_stored, Place};

/// The reply's JSON of an object `kind` just wrote as `kv`, made from the stored
/// bytes when what is stored is what is served.
fn reply_json(kind: &dyn ResourceKind, place: Place, kv: &KeyValue) -> Option<bytes::Bytes> {
    if !kind.stored_is_served() {
        return None;
    }
    place.served(&kv.value, kv.mod_revision)
}

/// A value as a JSON reply holds it (`http::response::encode_value`): serde_json's
/// bytes and a newline.
fn json_bytes(obj: &Value) -> bytes::Bytes {
    let mut bytes = serde_json::to_vec(obj).unwrap_or_default();
    bytes.push(b'\n');
    bytes::Bytes::from(bytes)
}

/// List request options.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// `labelSelector`.
    pub labels: Option<LabelSelector>,
    /// `fieldSelector`.
    pub fields: Option<FieldSelector>,
    /// `limit` (0 = none).
    pub limit: i64,
    /// `continue`.
    pub continue_token: Option<String>,
    /// `resourceVersion` (`None` = most recent).
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<String>,
    /// Hand the items out as served JSON ([`ListPage::encoded`]) when the kind keeps
    /// served bytes and nothing filters the page.
    pub encoded: bool,
}

/// One page of a list.
#[derive(Clone, Debug, Default)]
pub struct ListPage {
    /// Matching objects, decorated for reading.
    pub items: Vec<Value>,
    /// The list `resourceVersion`.
    pub resource_version: Revision,
    /// `continue` for the next page.
    pub continue_token: Option<String>,
    /// `remainingItemCount` (only without selectors, as kube).
    pub remaining: Option<i64>,
    /// The items as served JSON (each `serde_json` bytes and a newline) instead of
    /// `items`, when [`ListOptions::encoded`] asked for it and the kind allows.
    pub encoded: Option<Vec<bytes::Bytes>>,
}

/// What a delete did.
#[derive(Clone, Debug)]
pub enum Deleted {
    /// The object is gone: kube answers a `Success` Status (or the object for kinds that return it).
    Gone(Value),
    /// The object has finalizers and is now terminating.
    Terminating(Value),
}

/// The result of a successful write.
#[derive(Clone, Debug)]
pub struct Written {
    /// The object as stored, with its `resourceVersion` (shared with the served
    /// cache after an update).
    pub object: Arc<Value>,
    /// Warnings for the client.
    pub warnings: Vec<String>,
    /// Pipeline trace.
    pub trace: Vec<String>,
    /// True when an update removed the last finalizer of a terminating object and
    /// the object was deleted.
    pub deleted: bool,
    /// `object` as a JSON reply holds it (`serde_json` bytes and a newline), when the
    /// write made it from the stored bytes ([`ResourceKind::stored_is_served`]).
    pub json: Option<bytes::Bytes>,
}

/// `metav1.Status` with `status: Success` for a delete.
pub fn delete_success(gr: &GroupResource, obj: &Value) -> Value {
    status::success(Details {
        name: object::name(obj).to_string(),
        group: gr.group.clone(),
        kind: gr.resource.clone(),
        uid: object::meta_str(obj, "uid").to_string(),
        ..Default::default()
    })
}

/// kube's 410 for a continue token whose revision was compacted: it offers a token
/// to go on at the latest revision (`metadata.continue`), which lists inconsistently.
const CONTINUE_EXPIRED: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// kube's 410 when no token could be offered.
const CONTINUE_EXPIRED_NO_TOKEN: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.";

/// The IO of one write between its pure stages: the store's admission for the
/// request, and the kind's own checks.
struct KindAdmission<'a> {
    admission: &'a Admission,
    attrs: Attributes<'a>,
    kind: &'a dyn ResourceKind,
    /// What hooks see instead of the object (`/scale`: a Scale).
    view: Option<&'a dyn SubresourceView>,
    /// What the write took from the kind's allocators.
    taken: std::sync::Mutex<Option<Reservation>>,
}

impl<'a> KindAdmission<'a> {
    fn new(admission: &'a Admission, attrs: Attributes<'a>, kind: &'a dyn ResourceKind) -> Self {
        KindAdmission {
            admission,
            attrs,
            kind,
            view: None,
            taken: std::sync::Mutex::new(None),
        }
    }

    /// Hooks see `view` of the objects (and its kind) instead of the objects.
    fn viewed(mut self, view: Option<&'a dyn SubresourceView>) -> Self {
        self.attrs.object_kind = view.map(|v| v.kind());
        self.view = view;
        self
    }

    /// `obj` and `old` as hooks see them.
    fn views(&self, obj: &Value, old: Option<&Value>) -> Result<(Value, Option<Value>), Status> {
        let Some(view) = self.view else {
            return Ok((obj.clone(), old.cloned()));
        };
        let old = old.map(|o| view.view(o)).transpose()?;
        Ok((view.view(obj)?, old))
    }

    /// What the write took (to commit once stored).
    fn into_taken(self) -> Option<Reservation> {
        self.taken.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

impl order::Admit for KindAdmission<'_> {
    fn mutate<'a>(
        &'a self,
        obj: Value,
        old: Option<&'a Value>,
        warnings: &'a mut Vec<String>,
    ) -> IoFuture<'a, Result<Mutated, Status>> {
        let Some(view) = self.view else {
            return Box::pin(self.admission.mutate(&self.attrs, obj, old, warnings));
        };
        Box::pin(async move {
            let (seen, seen_old) = self.views(&obj, old)?;
            let mutated = self
                .admission
                .mutate(&self.attrs, seen.clone(), seen_old.as_ref(), warnings)
                .await?;
            if mutated.object == seen {
                return Ok(Mutated::unchanged(obj));
            }
            Ok(Mutated {
                object: view.merge(&obj, &mutated.object)?,
                changed: true,
            })
        })
    }

    fn check<'a>(
        &'a self,
        obj: &'a Value,
        old: Option<&'a Value>,
    ) -> IoFuture<'a, Result<(), Status>> {
        match self.kind.write_check(obj, old, self.attrs.opts) {
            Some(check) => check,
            None => Box::pin(std::future::ready(Ok(()))),
        }
    }

    fn allocate<'a>(
        &'a self,
        obj: &'a mut Value,
        old: Option<&'a Value>,
    ) -> IoFuture<'a, Result<(), Status>> {
        Box::pin(async move {
            // Subresources (`/status`) allocate nothing: kube's status store has no BeginUpdate.
            if !self.attrs.opts.subresource.is_empty() {
                return Ok(());
            }
            let taken = self
                .kind
                .begin_write(obj, old, self.attrs.opts.dry_run)
                .await?;
            if let Some(taken) = taken {
                *self.taken.lock().unwrap_or_else(|e| e.into_inner()) = Some(taken);
            }
            Ok(())
        })
    }

    fn validate<'a>(
        &'a self,
        obj: &'a Value,
        old: Option<&'a Value>,
        warnings: &'a mut Vec<String>,
    ) -> IoFuture<'a, Result<(), Status>> {
        if self.view.is_none() {
            return Box::pin(self.admission.validate(&self.attrs, obj, old, warnings));
        }
        Box::pin(async move {
            let (seen, seen_old) = self.views(obj, old)?;
            self.admission
                .validate(&self.attrs, &seen, seen_old.as_ref(), warnings)
                .await
        })
    }

    fn delete<'a>(
        &'a self,
        old: &'a Value,
        warnings: &'a mut Vec<String>,
    ) -> IoFuture<'a, Result<(), Status>> {
        Box::pin(self.admission.admit_delete(&self.attrs, old, warnings))
    }
}

/// An admitted write with what it took; a refused one gives back what it took.
async fn settle_admitted(
    admitted: Result<Admitted, Status>,
    taken: Option<Reservation>,
) -> Result<(Admitted, Option<Reservation>), Status> {
    match admitted {
        Ok(admitted) => Ok((admitted, taken)),
        Err(e) => {
            give_back(&mut Some(taken).flatten()).await;
            Err(e)
        }
    }
}

/// The write was stored: keep what it took (once).
async fn keep(taken: &mut Option<Reservation>) {
    if let Some(taken) = taken.take() {
        taken.commit().await;
    }
}

/// The write was not stored: give back what it took (unless kept already).
async fn give_back(taken: &mut Option<Reservation>) {
    if let Some(taken) = taken.take() {
        taken.revert().await;
    }
}

/// The write options admission sees on a delete.
fn delete_write_options(opts: &DeleteOptions) -> WriteOptions {
    WriteOptions {
        dry_run: opts.dry_run,
        user: opts.user.clone(),
        ..Default::default()
    }
}

/// The generic store.
#[derive(Clone)]
pub struct Store {
    /// The backend.
    pub storage: Arc<dyn Storage>,
    /// Admission hooks run on every create and update.
    pub admission: Admission,
    /// The served JSON of objects read lately (kinds with a [`ResourceKind::served_form`]).
    pub served: Arc<super::served_cache::ServedCache>,
    /// The objects of recent watch events, made once for all watchers.
    pub watched: Arc<super::watch_objects::SharedObjects>,
}

impl Store {
    /// Wrap a backend.
    pub fn new(storage: Arc<dyn Storage>) -> Self {
        Store {
            storage,
            admission: Admission::default(),
            served: Default::default(),
            watched: Default::default(),
        }
    }

    /// A create's stages, with this store's admission (order: `pipeline::order`), and
    /// what it took from the kind's allocators (committed once stored).
    async fn admit_create(
        &self,
        kind: &dyn ResourceKind,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<(Admitted, Option<Reservation>), Status> {
        let io = KindAdmission::new(
            &self.admission,
            Attributes::new(kind.descriptor(), Operation::Create, opts),
            kind,
        );
        let admitted = order::create(kind.strategy(), &io, body, opts).await;
        settle_admitted(admitted, io.into_taken()).await
    }

    /// An update's stages, with this store's admission (as `admit_create`).
    async fn admit_update(
        &self,
        kind: &dyn ResourceKind,
        desired: Value,
        old: &Value,
        opts: &WriteOptions,
        view: Option<&dyn SubresourceView>,
    ) -> Result<(Admitted, Option<Reservation>), Status> {
        let io = KindAdmission::new(
            &self.admission,
            Attributes::new(kind.descriptor(), Operation::Update, opts),
            kind,
        )
        .viewed(view);
        let admitted = order::update(kind.strategy(), &io, desired, old, opts).await;
        settle_admitted(admitted, io.into_taken()).await
    }

    /// Read one object, decorated for reading.
    pub async fn get(
        &self,
        kind: &dyn ResourceKind,
        namespace: &str,
        name: &str,
    ) -> Result<Value, Status> {
        let d = kind.descriptor();
        let (_, obj) = self.read(kind, &d.key(namespace, name), name).await?;
        Ok(obj)
    }

    /// One object as JSON (`serde_json` bytes and a newline, what a JSON reply of
    /// [`Store::get`]'s object holds), from the served-bytes cache when the object and
    /// its kind's form have not changed since it was last made.
    pub async fn get_json(
        &self,
        kind: &dyn ResourceKind,
        namespace: &str,
        name: &str,
    ) -> Result<bytes::Bytes, Status> {
        let d = kind.descriptor();
        let key = d.key(namespace, name);
        let Some(form) = kind.served_form() else {
            let (_, obj) = self.read(kind, &key, name).await?;
            return Ok(json_bytes(&obj));
        };
        let kv = self
            .storage
            .get(&key)
            .await
            .map_err(|e| storage_status(e, &d.gr, name))?
            .ok_or_else(|| Status::not_found(&d.gr, name))?;
        self.served_json(kind, form, &kv).await
    }

    /// The served JSON of a stored entry of a kind with `form`, cached.
    async fn served_json(
        &self,
        kind: &dyn ResourceKind,
        form: (i64, usize),
        kv: &KeyValue,
    ) -> Result<bytes::Bytes, Status> {
        let id = super::served_cache::FormId {
            form,
            revision: kv.mod_revision,
        };
        if let Some(bytes) = self.served.get(&kv.key, id) {
            return Ok(bytes);
        }
        let mut obj = decode_stored(kv)?;
        kind.on_read(&mut obj).await?;
        let bytes = json_bytes(&obj);
        self.served.put(&kv.key, id, bytes.clone());
        Ok(bytes)
    }

    /// Whether the stored object `namespace/name` of `kind` is being deleted (has a
    /// `deletionTimestamp`); 404 when absent. Reads only the stored metadata's one
    /// field, not the whole object (namespace lifecycle asks this on every create).
    pub async fn terminating(
        &self,
        kind: &dyn ResourceKind,
        namespace: &str,
        name: &str,
    ) -> Result<bool, Status> {
        #[derive(serde::Deserialize)]
        struct Meta {
            #[serde(rename = "deletionTimestamp")]
            deletion_timestamp: Option<serde::de::IgnoredAny>,
        }
        #[derive(serde::Deserialize)]
        struct Head {
            metadata: Option<Meta>,
        }
        let d = kind.descriptor();
        let kv = self
            .storage
            .get(&d.key(namespace, name))
            .await
            .map_err(|e| storage_status(e, &d.gr, name))?
            .ok_or_else(|| Status::not_found(&d.gr, name))?;
        let head: Head = crate::codec::decode_stored_json(&kv.value)
            .map_err(|e| Status::internal(format!("decoding stored object {}: {e}", kv.key)))?;
        Ok(head
            .metadata
            .is_some_and(|m| m.deletion_timestamp.is_some()))
    }

    /// The stored entry at `key` and its object decorated for reading; 404 when absent.
    async fn read(
        &self,
        kind: &dyn ResourceKind,
        key: &str,
        name: &str,
    ) -> Result<(KeyValue, Value), Status> {
        let (kv, obj) = self.read_shared(kind, key, name).await?;
        Ok((kv, Arc::unwrap_or_clone(obj)))
    }

    /// [`Store::read`], sharing the object with the served cache (an update only
    /// reads the object it replaces: no copy of it).
    async fn read_shared(
        &self,
        kind: &dyn ResourceKind,
        key: &str,
        name: &str,
    ) -> Result<(KeyValue, Arc<Value>), Status> {
        let gr = &kind.descriptor().gr;
        let kv = self
            .storage
            .get(key)
            .await
            .map_err(|e| storage_status(e, gr, name))?
            .ok_or_else(|| Status::not_found(gr, name))?;
        if let Some(form) = kind.served_form() {
            let id = super::served_cache::FormId {
                form,
                revision: kv.mod_revision,
            };
            if let Some(obj) = self.served.get_object(&kv.key, id) {
                return Ok((kv, obj));
            }
        }
        let mut obj = decode_stored(&kv)?;
        kind.on_read(&mut obj).await?;
        Ok((kv, Arc::new(obj)))
    }

    /// Keep the object an update wrote, as the next read of it would serve it, for
    /// the next update (the stored form holds no `selfLink`), and its JSON when the
    /// write made it.
    fn remember_written(
        &self,
        kind: &dyn ResourceKind,
        kv: &KeyValue,
        obj: &Arc<Value>,
        json: Option<bytes::Bytes>,
    ) {
        let Some(form) = kind.served_form() else {
            return;
        };
        // Not `Value::pointer`: it allocates and searches for escapes per token (about
        // 2,800 instructions of an update).
        let has_self_link = obj
            .get("metadata")
            .and_then(|m| m.get("selfLink"))
            .is_some();
        let served = if has_self_link {
            let mut served = Value::clone(obj);
            if let Some(meta) = served.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("selfLink");
            }
            Arc::new(served)
        } else {
            obj.clone()
        };
        let id = super::served_cache::FormId {
            form,
            revision: kv.mod_revision,
        };
        self.served
            .put_object(&kv.key, id, served, kv.value.len(), json);
    }

    /// Whether storage answers (`/readyz`).
    pub async fn ready(&self) -> bool {
        self.storage.ready().await.is_ok()
    }

    /// Whether storage answers, and why not (the `etcd-0` ComponentStatus).
    pub async fn storage_health(&self) -> Result<(), StorageError> {
        self.storage.ready().await
    }

    /// The newest revision in storage.
    pub async fn current_revision(&self) -> Result<Revision, Status> {
        self.storage
            .current_revision()
            .await
            .map_err(|e| storage_status(e, &GroupResource::default(), ""))
    }

    /// List objects with selectors and pagination.
    pub async fn list(
        &self,
        kind: &dyn ResourceKind,
        namespace: &str,
        opts: &ListOptions,
    ) -> Result<ListPage, Status> {
        let d = kind.descriptor();
        let mut prefix = d.list_prefix(namespace);
        // A list pinned to one name (`fieldSelector=metadata.name=N`, as `kubectl wait`
        // and single-object informers send) reads only the keys that start with that
        // object's (kube's registry narrows it to the key too), not the resource.
        let pinned = opts
            .fields
            .as_ref()
            .and_then(|f| f.requires_exact_match("metadata.name"));
        if let Some(name) = pinned.filter(|_| !d.namespaced || !namespace.is_empty()) {
            prefix = d.key(namespace, name);
        }
        let root = format!("{}/", d.key_root);
        // kube's tokens name the first key of the next page: the last one sent plus
        // "\0" (the storage range starts strictly after the last one sent).
        let mut continue_from = None;
        let mut min_revision = None;
        let (mut revision, mut start_after) = match &opts.continue_token {
            Some(t) if !t.is_empty() => {
                if opts
                    .resource_version
                    .as_deref()
                    .is_some_and(|rv| !rv.is_empty() && rv != "0")
                {
                    return Err(Status::bad_request(
                        "specifying resource version is not allowed when using continue",
                    ));
                }
                let (from, rv) = codec::decode_continue(t, &root).map_err(|e| {
                    Status::bad_request(codec::invalid_continue_token_message(&e.to_string()))
                })?;
                let after = from.strip_suffix('\0').unwrap_or(&from).to_string();
                continue_from = Some(from);
                // A negative revision (a token offered with a 410) lists the latest.
                (rv.max(0), Some(after))
            }
            _ => {
                let (exact, at_least) = list_revision(opts)?;
                min_revision = at_least;
                (exact, None)
            }
        };
        let filtering = opts.labels.as_ref().is_some_and(|l| !l.is_empty())
            || opts.fields.as_ref().is_some_and(|f| !f.is_empty());
        // Served bytes need no decoding when nothing filters: the fast path of JSON lists.
        let served_form = kind.served_form().filter(|_| opts.encoded && !filtering);
        let mut encoded = served_form.map(|_| Vec::new());
        let mut items = Vec::new();
        let mut continue_token = None;
        let mut remaining = None;
        loop {
            let want = if opts.limit > 0 {
                opts.limit - items.len() as i64
            } else {
                0
            };
            let res = self
                .storage
                .list(
                    &prefix,
                    &StorageListOptions {
                        start_after: start_after.clone(),
                        limit: want,
                        revision,
                        min_revision,
                    },
                )
                .await
                .map_err(|e| match (e, &continue_from) {
                    (StorageError::Compacted { .. }, Some(from)) => {
                        match codec::encode_continue(from, &root, -1) {
                            Ok(token) => Status {
                                metadata_continue: Some(token),
                                ..Status::expired(CONTINUE_EXPIRED)
                            },
                            Err(_) => Status::expired(CONTINUE_EXPIRED_NO_TOKEN),
                        }
                    }
                    (other, _) => storage_status(other, &d.gr, ""),
                })?;
            // Later pages (filtering fills the limit) read where the first one did.
            revision = res.revision;
            min_revision = None;
            let last_key = res.items.last().map(|kv| kv.key.clone());
            if let (Some(form), Some(out)) = (served_form, encoded.as_mut()) {
                for kv in &res.items {
                    out.push(self.served_json(kind, form, kv).await?);
                }
                if res.remaining == 0 || opts.limit <= 0 {
                    break;
                }
                let Some(last) = last_key else { break };
                if out.len() as i64 >= opts.limit {
                    continue_token =
                        codec::encode_continue(&format!("{last}\0"), &root, revision).ok();
                    remaining = Some(res.remaining);
                    break;
                }
                start_after = Some(last);
                continue;
            }
            // The page is converted at once (one conversion webhook call), then filtered.
            let start = items.len();
            for kv in &res.items {
                items.push(decode_stored(kv)?);
            }
            kind.on_read_all(&mut items[start..]).await?;
            let mut kept = start;
            for i in start..items.len() {
                if self.matches(kind, &items[i], opts)? {
                    items.swap(kept, i);
                    kept += 1;
                }
            }
            items.truncate(kept);
            if res.remaining == 0 || opts.limit <= 0 {
                break;
            }
            let Some(last) = last_key else { break };
            if items.len() as i64 >= opts.limit {
                continue_token = codec::encode_continue(&format!("{last}\0"), &root, revision).ok();
                if !filtering {
                    remaining = Some(res.remaining);
                }
                break;
            }
            start_after = Some(last);
        }
        Ok(ListPage {
            items,
            resource_version: revision,
            continue_token,
            remaining,
            encoded,
        })
    }

    /// Whether an object passes the list's selectors.
    pub fn matches(
        &self,
        kind: &dyn ResourceKind,
        obj: &Value,
        opts: &ListOptions,
    ) -> Result<bool, Status> {
        if let Some(l) = &opts.labels {
            if !l.matches(&object::labels(obj)) {
                return Ok(false);
            }
        }
        if let Some(f) = &opts.fields {
            let err = std::cell::RefCell::new(None);
            let ok = f.matches(|field| match kind.strategy().field_value(obj, field) {
                Ok(v) => v,
                Err(e) => {
                    *err.borrow_mut() = Some(e);
                    None
                }
            });
            if let Some(e) = err.into_inner() {
                return Err(Status::bad_request(e.to_string()));
            }
            return Ok(ok);
        }
        Ok(true)
    }

    /// Create an object (the body already has its namespace agreed with the request).
    pub async fn create(
        &self,
        kind: &dyn ResourceKind,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Written, Status> {
        let d = kind.descriptor();
        if object::resource_version(&body)?.is_some() {
            return Err(Status::bad_request(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        let generated =
            object::name(&body).is_empty() && !object::meta_str(&body, "generateName").is_empty();
        // Only a generated name is tried again (with a new one): the body is kept for that.
        let retry_body = generated.then(|| body.clone());
        let mut body = Some(body);
        let mut attempts = 0;
        loop {
            let Some(attempt) = body.take().or_else(|| retry_body.clone()) else {
                return Err(Status::internal("create: no body to try again"));
            };
            let (
                Admitted {
                    object: obj,
                    warnings,
                    trace,
                },
                mut taken,
            ) = self.admit_create(kind, attempt, opts).await?;
            let name = object::name(&obj).to_string();
            let key = d.key(object::namespace(&obj), &name);
            let written = async {
                let mut stored = obj;
                kind.to_storage(&mut stored).await?;
                if opts.dry_run {
                    // kube's dry run still round-trips the object through the storage form.
                    kind.on_written(&mut stored).await?;
                    return Ok(Some((stored, None)));
                }
                let (bytes, mut place) = encode_stored(&stored);
                let mut created = self.storage.create(&key, bytes).await;
                if matches!(created, Err(StorageError::TooLarge(_)))
                    && !opts.is_apply
                    && object::remove_managed_fields(&mut stored)
                {
                    // kube: managedFields can be large, and are safe to drop to fit.
                    let (bytes, smaller) = encode_stored(&stored);
                    place = smaller;
                    created = self.storage.create(&key, bytes).await;
                }
                match created {
                    Ok(kv) => {
                        keep(&mut taken).await;
                        object::set_resource_version(&mut stored, kv.mod_revision);
                        kind.on_written(&mut stored).await?;
                        let json = reply_json(kind, place, &kv);
                        Ok(Some((stored, json)))
                    }
                    // A generated name may collide: kube tries again with a new one.
                    Err(StorageError::AlreadyExists(_)) if generated && attempts < 8 => Ok(None),
                    Err(e) => Err(storage_status(e, &d.gr, &name)),
                }
            }
            .await;
            give_back(&mut taken).await;
            match written? {
                Some((object, json)) => {
                    return Ok(Written {
                        object: Arc::new(object),
                        warnings,
                        trace,
                        deleted: false,
                        json,
                    })
                }
                None => attempts += 1,
            }
        }
    }

    /// Update with retries (kube's `GuaranteedUpdate`): `build` turns the current
    /// object into the desired one (PUT: the body; patches: the patched object).
    /// `require_rv`: the desired object must carry a `resourceVersion` (PUT of a custom resource).
    pub async fn update<F>(
        &self,
        kind: &dyn ResourceKind,
        namespace: &str,
        name: &str,
        opts: &WriteOptions,
        require_rv: bool,
        build: F,
    ) -> Result<Written, Status>
    where
        F: FnMut(&Value) -> Result<Value, Status>,
    {
        self.update_viewed(kind, namespace, name, opts, require_rv, None, build)
            .await
    }

    /// [`Store::update`] of a subresource whose hooks see `view` of the object
    /// (`/scale`: kube admits a Scale).
    #[allow(clippy::too_many_arguments)]
    pub async fn update_viewed<F>(
        &self,
        kind: &dyn ResourceKind,
        namespace: &str,
        name: &str,
        opts: &WriteOptions,
        require_rv: bool,
        view: Option<&dyn SubresourceView>,
        mut build: F,
    ) -> Result<Written, Status>
    where
        F: FnMut(&Value) -> Result<Value, Status>,
    {
        let d: &Descriptor = kind.descriptor();
        let key = d.key(namespace, name);
        for _ in 0..MAX_RETRIES {
            let (kv, old) = self.read_shared(kind, &key, name).await?;
            let mut desired = build(&old)?;
            if !desired.is_object() {
                return Err(Status::bad_request(
                    "the object provided is not a JSON object",
                ));
            }
            let body_name = object::name(&desired).to_string();
            if body_name.is_empty() {
                object::meta_mut(&mut desired).insert("name".into(), json!(name));
            } else if body_name != name {
                return Err(Status::bad_request(format!(
                    "the name of the object ({body_name}) does not match the name on the URL ({name})"
                )));
            }
            object::ensure_namespace(&mut desired, namespace, d.namespaced)?;
            match object::resource_version(&desired)? {
                None if require_rv => {
                    let qualified = GroupResource::new(&d.gr.group, &d.gr.resource);
                    let err = crate::field::Error::invalid(
                        &crate::field::Path::new("metadata").child("resourceVersion"),
                        json!(0),
                        "must be specified for an update",
                    );
                    return Err(Status::invalid(
                        &qualified.resource,
                        &qualified.group,
                        name,
                        &[err],
                    ));
                }
                Some(rv) if rv != kv.mod_revision => return Err(Status::stale(&d.gr, name)),
                _ => {}
            }
            let (
                Admitted {
                    object: mut obj,
                    warnings,
                    trace,
                },
                mut taken,
            ) = self.admit_update(kind, desired, &old, opts, view).await?;
            object::set_resource_version(&mut obj, kv.mod_revision);
            let remove = object::is_terminating(&obj) && !kind.strategy().finalizers_pending(&obj);
            // `Ok(None)`: a conflict, tried again.
            let written = async {
                if obj == *old && !remove {
                    // kube skips writes that change nothing: no new resourceVersion.
                    keep(&mut taken).await;
                    return Ok(Some((old, false, None)));
                }
                if opts.dry_run {
                    if !remove {
                        // kube's dry run still round-trips the object through the storage form.
                        kind.to_storage(&mut obj).await?;
                        kind.on_written(&mut obj).await?;
                    }
                    return Ok(Some((Arc::new(obj), remove, None)));
                }
                if remove {
                    return match self.storage.delete(&key, Some(kv.mod_revision)).await {
                        Ok(deleted) => {
                            keep(&mut taken).await;
                            kind.after_delete(&obj).await;
                            object::set_resource_version(&mut obj, deleted.mod_revision);
                            Ok(Some((Arc::new(obj), true, None)))
                        }
                        Err(StorageError::Conflict { .. }) => Ok(None),
                        Err(e) => Err(storage_status(e, &d.gr, name)),
                    };
                }
                kind.to_storage(&mut obj).await?;
                let (bytes, mut place) = encode_stored(&obj);
                let mut updated = self.storage.update(&key, bytes, kv.mod_revision).await;
                if matches!(updated, Err(StorageError::TooLarge(_)))
                    && !opts.is_apply
                    && object::remove_managed_fields(&mut obj)
                {
                    // kube: managedFields can be large, and are safe to drop to fit.
                    let (bytes, smaller) = encode_stored(&obj);
                    place = smaller;
                    updated = self.storage.update(&key, bytes, kv.mod_revision).await;
                }
                match updated {
                    Ok(new_kv) => {
                        keep(&mut taken).await;
                        object::set_resource_version(&mut obj, new_kv.mod_revision);
                        kind.on_written(&mut obj).await?;
                        let json = reply_json(kind, place, &new_kv);
                        let obj = Arc::new(obj);
                        self.remember_written(kind, &new_kv, &obj, json.clone());
                        Ok(Some((obj, false, json)))
                    }
                    Err(StorageError::Conflict { .. }) => Ok(None),
                    Err(e) => Err(storage_status(e, &d.gr, name)),
                }
            }
            .await;
            give_back(&mut taken).await;
            if let Some((object, deleted, json)) = written? {
                return Ok(Written {
                    object,
                    warnings,
                    trace,
                    deleted,
                    json,
                });
            }
        }
        Err(Status::stale(&d.gr, name))
    }

    /// Write an object (as served) over the stored revision `expected`, in its storage
    /// form (the outer error: converting it failed).
    async fn replace(
        &self,
        kind: &dyn ResourceKind,
        key: &str,
        obj: &Value,
        expected: Revision,
    ) -> Result<Result<KeyValue, StorageError>, Status> {
        let mut stored = obj.clone();
        kind.to_storage(&mut stored).await?;
        Ok(self
            .storage
            .update(key, encode_for_storage(&stored), expected)
            .await)
    }

    /// Mark an object terminating (`deletionTimestamp`), applying `mutate` too; an
    /// object already terminating is returned as it is.
    pub async fn mark_terminating(
        &self,
        kind: &dyn ResourceKind,
        namespace: &str,
        name: &str,
        opts: &DeleteOptions,
        warnings: &mut Vec<String>,
        mutate: impl Fn(&mut Value),
    ) -> Result<Value, Status> {
        let d = kind.descriptor();
        let key = d.key(namespace, name);
        let write_opts = delete_write_options(opts);
        for _ in 0..MAX_RETRIES {
            let (kv, mut obj) = self.read(kind, &key, name).await?;
            warnings.clear();
            let io = KindAdmission::new(
                &self.admission,
                Attributes::for_delete(d, &write_opts, opts),
                kind,
            );
            order::admit_delete(&io, d, &obj, kv.mod_revision, opts, warnings).await?;
            if object::is_terminating(&obj) {
                return Ok(obj);
            }
            object::meta_mut(&mut obj).insert("deletionTimestamp".into(), json!(object::now()));
            mutate(&mut obj);
            if opts.dry_run {
                return Ok(obj);
            }
            match self.replace(kind, &key, &obj, kv.mod_revision).await? {
                Ok(new_kv) => {
                    object::set_resource_version(&mut obj, new_kv.mod_revision);
                    return Ok(obj);
                }
                Err(StorageError::Conflict { .. }) => continue,
                Err(e) => return Err(storage_status(e, &d.gr, name)),
            }
        }
        Err(Status::stale(&d.gr, name))
    }

    /// Delete an object: objects with finalizers are marked terminating instead.
    /// `finalizers_on_delete` are added before marking (CRD and namespace cleanup).
    pub async fn delete(
        &self,
        kind: &dyn ResourceKind,
        namespace: &str,
        name: &str,
        opts: &DeleteOptions,
        finalizers_on_delete: &[&str],
        warnings: &mut Vec<String>,
    ) -> Result<Deleted, Status> {
        let d = kind.descriptor();
        let key = d.key(namespace, name);
        let write_opts = delete_write_options(opts);
        for _ in 0..MAX_RETRIES {
            let (kv, obj) = self.read(kind, &key, name).await?;
            // Warnings of an attempt lost to a concurrent writer are not repeated.
            warnings.clear();
            let io = KindAdmission::new(
                &self.admission,
                Attributes::for_delete(d, &write_opts, opts),
                kind,
            );
            let deletion = order::delete(
                &io,
                d,
                obj,
                kv.mod_revision,
                opts,
                finalizers_on_delete,
                warnings,
            );
            let written = match deletion.await? {
                order::Deletion::Terminating(obj) => return Ok(Deleted::Terminating(obj)),
                order::Deletion::Finalize(obj) if opts.dry_run => {
                    return Ok(Deleted::Terminating(obj))
                }
                order::Deletion::Remove(obj) | order::Deletion::MarkThenRemove(obj)
                    if opts.dry_run =>
                {
                    return Ok(Deleted::Gone(obj))
                }
                order::Deletion::MarkThenRemove(mut obj) => {
                    match self.replace(kind, &key, &obj, kv.mod_revision).await? {
                        Ok(new_kv) => {
                            object::set_resource_version(&mut obj, new_kv.mod_revision);
                            match self.storage.delete(&key, Some(new_kv.mod_revision)).await {
                                Ok(_) => {
                                    kind.after_delete(&obj).await;
                                    Ok(Deleted::Gone(obj))
                                }
                                Err(e) => Err(e),
                            }
                        }
                        Err(e) => Err(e),
                    }
                }
                order::Deletion::Finalize(mut obj) => {
                    match self.replace(kind, &key, &obj, kv.mod_revision).await? {
                        Ok(new_kv) => {
                            object::set_resource_version(&mut obj, new_kv.mod_revision);
                            Ok(Deleted::Terminating(obj))
                        }
                        Err(e) => Err(e),
                    }
                }
                order::Deletion::Remove(obj) => {
                    match self.storage.delete(&key, Some(kv.mod_revision)).await {
                        Ok(_) => {
                            kind.after_delete(&obj).await;
                            Ok(Deleted::Gone(obj))
                        }
                        Err(e) => Err(e),
                    }
                }
            };
            match written {
                Ok(deleted) => return Ok(deleted),
                Err(StorageError::Conflict { .. }) => continue,
                Err(e) => return Err(storage_status(e, &d.gr, name)),
            }
        }
        Err(Status::stale(&d.gr, name))
    }
}

/// The revision a list reads at (0: the current one) and, for a read that any revision
/// from some point on satisfies, that point (kube's `ValidateListOptions` and its
/// watch-cache delegation):
/// - `resourceVersion` with `Exact`, or (legacy) with a `limit` and no match: that
///   revision exactly;
/// - `resourceVersion=0`: any revision; `resourceVersion=N` otherwise: N or later
///   (`handlers::read::not_older_than` has refused one past the store's);
/// - none: the current revision (a consistent read).
fn list_revision(opts: &ListOptions) -> Result<(Revision, Option<Revision>), Status> {
    let rv = opts.resource_version.as_deref().unwrap_or("");
    match opts.resource_version_match.as_deref() {
        Some("Exact") if !rv.is_empty() => Ok((object::parse_resource_version(rv)?, None)),
        Some(m) if m != "Exact" && m != "NotOlderThan" => Err(Status::bad_request(format!(
            "resourceVersionMatch: Unsupported value: \"{m}\": supported values: \"Exact\", \"NotOlderThan\""
        ))),
        _ if rv.is_empty() => Ok((0, None)),
        _ if rv == "0" => Ok((0, Some(0))),
        None if opts.limit > 0 => Ok((object::parse_resource_version(rv)?, None)),
        _ => Ok((0, Some(object::parse_resource_version(rv)?))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_bytes_carry_no_resource_version() {
        let obj = json!({"metadata": {"name": "a", "resourceVersion": "7"}});
        let bytes = encode_for_storage(&obj);
        let back: Value = serde_json::from_slice(&bytes).unwrap();
        assert!(back["metadata"].get("resourceVersion").is_none());
        let kv = KeyValue {
            key: "k".into(),
            value: bytes.into(),
            create_revision: 3,
            mod_revision: 9,
        };
        assert_eq!(
            decode_stored(&kv).unwrap()["metadata"]["resourceVersion"],
            "9"
        );
    }
}
