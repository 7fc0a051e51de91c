//! The core apiserver's view, for an aggregated server started with `--kubeconfig`:
//! k8s.io/apiserver's servers take namespaces and admission configuration from the
//! kube-apiserver in front (its informers), not from their own storage. Here the
//! core's namespaces, ValidatingAdmissionPolicies and bindings, and webhook
//! configurations are mirrored, by list and watch, into a private embedded store laid
//! out as this server's own, so that namespace lifecycle, the policy cache and the
//! webhook source read it exactly as they read local storage. Params (`paramKind`)
//! are read from the core on use ([`CoreParams`]).
//!
//! Objects of those kinds written to this server itself stay in its storage and are
//! listed as ever, but do not take part in admission while the core is followed.

use crate::admission::policy::ParamReader;
use crate::admission::AdmissionError;
use crate::remote::{Client, RemoteError};
use crate::storage::memory::MemoryStorage;
use crate::storage::{Storage, StorageError};
use futures::future::BoxFuture;
use futures::StreamExt;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The mirror of the core and the client that fills it.
pub struct CoreView {
    /// The core apiserver.
    pub client: Client,
    /// The mirrored objects, under this server's key layout.
    pub storage: Arc<MemoryStorage>,
    /// Params of policies, read from the core.
    pub params: Arc<CoreParams>,
}

/// One collection of the core mirrored under a key root.
#[derive(Clone, Debug)]
pub struct Mirrored {
    /// The collection's path on the core (`/api/v1/namespaces`).
    pub path: String,
    /// Where its objects go (`/registry/namespaces`): `<root>/<name>` or
    /// `<root>/<namespace>/<name>`.
    pub key_root: String,
}

/// How long to wait before listing again after the core failed or ended a watch.
const RETRY: Duration = Duration::from_secs(1);

impl CoreView {
    /// A view of the core behind `client`, empty until [`CoreView::follow`] fills it.
    pub fn new(client: Client) -> CoreView {
        CoreView {
            params: Arc::new(CoreParams::new(client.clone())),
            client,
            storage: Arc::new(MemoryStorage::new()),
        }
    }

    /// Keep each of `collections` in step with the core, in the background (list, then
    /// watch from the list's resourceVersion; list again when the watch ends).
    pub fn follow(self: &Arc<Self>, collections: Vec<Mirrored>) {
        for c in collections {
            tokio::spawn(mirror(Arc::downgrade(self), c));
        }
    }

    /// The namespace `name` as the core has it: from the mirror, else asked of the core
    /// at once (a namespace created a moment ago may not have been watched yet, as kube's
    /// lifecycle plugin asks the live API on a cache miss).
    pub async fn namespace(
        &self,
        namespaces_root: &str,
        name: &str,
    ) -> Result<Option<Value>, RemoteError> {
        let key = format!("{namespaces_root}/{name}");
        if let Ok(Some(kv)) = self.storage.get(&key).await {
            if let Ok(v) = crate::codec::decode_stored_json::<Value>(&kv.value) {
                return Ok(Some(v));
            }
        }
        match self.client.get(&format!("/api/v1/namespaces/{name}")).await {
            Ok(ns) => {
                let _ = put(self.storage.as_ref(), &key, &ns).await;
                Ok(Some(ns))
            }
            Err(e) if e.code() == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// The key of `obj` under `root`.
fn key_of(root: &str, obj: &Value) -> String {
    let ns = crate::object::namespace(obj);
    let name = crate::object::name(obj);
    if ns.is_empty() {
        format!("{root}/{name}")
    } else {
        format!("{root}/{ns}/{name}")
    }
}

/// Mirror `obj` at `key`; a policy's `paramKind` is resolved first (the policy cache
/// asks for its scope without waiting).
async fn mirror_object(v: &CoreView, key: &str, obj: &Value) {
    if let Some(pk) = obj.pointer("/spec/paramKind").filter(|p| p.is_object()) {
        let field = |k: &str| pk.get(k).and_then(Value::as_str).unwrap_or("");
        let _ = v.params.target(field("apiVersion"), field("kind")).await;
    }
    let _ = put(v.storage.as_ref(), key, obj).await;
}

/// Store `obj` at `key`, whatever is there.
async fn put(storage: &dyn Storage, key: &str, obj: &Value) -> Result<(), StorageError> {
    let value = crate::rest::store::encode_for_storage(obj);
    for _ in 0..3 {
        let result = match storage.get(key).await? {
            Some(kv) if kv.value == value => return Ok(()),
            Some(kv) => storage.update(key, value.clone(), kv.mod_revision).await,
            None => storage.create(key, value.clone()).await,
        };
        match result {
            Ok(_) => return Ok(()),
            Err(StorageError::Conflict { .. } | StorageError::AlreadyExists(_)) => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Mirror one collection until the view is dropped.
async fn mirror(view: std::sync::Weak<CoreView>, c: Mirrored) {
    loop {
        let Some(v) = view.upgrade() else { return };
        let rv = match relist(&v, &c).await {
            Ok(rv) => rv,
            Err(e) => {
                tracing::warn!(collection = %c.path, error = %e, "listing from the core apiserver failed; retrying");
                drop(v);
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        let events = match v.client.watch(&c.path, &rv).await {
            Ok(events) => events,
            Err(e) => {
                tracing::warn!(collection = %c.path, error = %e, "watching the core apiserver failed; listing again");
                drop(v);
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        drop(v);
        let mut events = std::pin::pin!(events);
        while let Some(event) = events.next().await {
            let Some(v) = view.upgrade() else { return };
            let object = event.get("object").cloned().unwrap_or(Value::Null);
            let key = key_of(&c.key_root, &object);
            match event.get("type").and_then(Value::as_str) {
                Some("ADDED" | "MODIFIED") => mirror_object(&v, &key, &object).await,
                Some("DELETED") => {
                    let _ = v.storage.delete(&key, None).await;
                }
                // 410 and other errors: list again.
                Some("ERROR") => break,
                _ => {}
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// List the collection from the core into the mirror (removing what the core no
/// longer has); the list's resourceVersion.
async fn relist(v: &CoreView, c: &Mirrored) -> Result<String, RemoteError> {
    let list = v.client.get(&c.path).await?;
    let mut keep = BTreeSet::new();
    for item in list
        .get("items")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = key_of(&c.key_root, item);
        mirror_object(v, &key, item).await;
        keep.insert(key);
    }
    if let Ok(existing) = v
        .storage
        .list(&format!("{}/", c.key_root), &Default::default())
        .await
    {
        for kv in existing.items {
            if !keep.contains(&kv.key) {
                let _ = v.storage.delete(&kv.key, None).await;
            }
        }
    }
    Ok(list
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("0")
        .to_string())
}

/// A kind's resource and whether it is namespaced (`None` in a cache: the core has no
/// such kind).
type Target = (String, bool);

/// Params of admission policies read from the core (`paramKind` resolved by kube's
/// built-in table, else by the core's discovery).
pub struct CoreParams {
    /// The core.
    pub client: Client,
    /// `(apiVersion, kind)` → (resource, namespaced), from the core's discovery.
    discovered: Mutex<HashMap<(String, String), Option<Target>>>,
}

impl CoreParams {
    /// Params from the core behind `client`.
    pub fn new(client: Client) -> CoreParams {
        CoreParams {
            client,
            discovered: Mutex::new(HashMap::new()),
        }
    }

    fn known(&self, api_version: &str, kind: &str) -> Option<Option<(String, bool)>> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        if let Some(r) = crate::registry::builtin::resources()
            .iter()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
        {
            return Some(Some((r.resource.to_string(), r.namespaced)));
        }
        let cache = self.discovered.lock().ok()?;
        cache
            .get(&(api_version.to_string(), kind.to_string()))
            .cloned()
    }

    /// The resource and scope of a kind, asking the core's discovery when not known.
    async fn target(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<(String, bool), AdmissionError> {
        let not_found = || AdmissionError::ParamKindNotFound {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
        };
        if let Some(known) = self.known(api_version, kind) {
            return known.ok_or_else(not_found);
        }
        let path = if api_version.contains('/') {
            format!("/apis/{api_version}")
        } else {
            format!("/api/{api_version}")
        };
        let found = match self.client.get(&path).await {
            Ok(list) => list
                .get("resources")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|r| {
                    r.get("kind").and_then(Value::as_str) == Some(kind)
                        && !r
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("/")
                            .contains('/')
                })
                .map(|r| {
                    (
                        r.get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        r.get("namespaced")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                    )
                }),
            Err(e) if e.code() == Some(404) => None,
            Err(e) => return Err(AdmissionError::Params(Box::new(remote_status(e)))),
        };
        if let Ok(mut cache) = self.discovered.lock() {
            if cache.len() > 1000 {
                cache.clear();
            }
            cache.insert((api_version.to_string(), kind.to_string()), found.clone());
        }
        found.ok_or_else(not_found)
    }

    fn collection(api_version: &str, resource: &str, namespace: &str) -> String {
        let base = if api_version.contains('/') {
            format!("/apis/{api_version}")
        } else {
            format!("/api/{api_version}")
        };
        if namespace.is_empty() {
            format!("{base}/{resource}")
        } else {
            format!("{base}/namespaces/{namespace}/{resource}")
        }
    }
}

/// A failure reading the core as the `Status` admission quotes.
fn remote_status(e: RemoteError) -> crate::status::Status {
    crate::status::Status::internal(e.to_string())
}

impl ParamReader for CoreParams {
    fn scope(&self, api_version: &str, kind: &str) -> Option<bool> {
        // Resolved when the policy naming the kind was mirrored.
        self.known(api_version, kind)?
            .map(|(_, namespaced)| namespaced)
    }

    fn get<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>, AdmissionError>> {
        Box::pin(async move {
            let (resource, namespaced) = self.target(api_version, kind).await?;
            let ns = if namespaced { namespace } else { "" };
            let path = format!("{}/{name}", Self::collection(api_version, &resource, ns));
            match self.client.get(&path).await {
                Ok(v) => Ok(Some(v)),
                Err(e) if e.code() == Some(404) => Ok(None),
                Err(e) => Err(AdmissionError::Params(Box::new(remote_status(e)))),
            }
        })
    }

    fn list<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
        namespace: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Value>, AdmissionError>> {
        Box::pin(async move {
            let (resource, namespaced) = self.target(api_version, kind).await?;
            let ns = if namespaced { namespace } else { "" };
            let list = self
                .client
                .get(&Self::collection(api_version, &resource, ns))
                .await
                .map_err(|e| AdmissionError::Params(Box::new(remote_status(e))))?;
            Ok(list
                .get("items")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default())
        })
    }
}
