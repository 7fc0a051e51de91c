//! Deletion cleanup, as kube's CRD finalizer and namespace controllers: objects of a
//! deleted CRD or namespace are deleted (or marked, when they have finalizers), then
//! the CRD or namespace itself goes.

use crate::apiserver::ApiServer;
use crate::rest::crd::CLEANUP_FINALIZER;
use crate::rest::store::{decode_stored, encode_for_storage};
use crate::rest::{object, WriteOptions};
use crate::storage::{ListOptions, StorageError};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const RETRY: Duration = Duration::from_millis(200);

/// Delete every object under `prefix`; objects with finalizers are marked terminating.
/// Returns how many objects are still there.
async fn drain(api: &ApiServer, prefix: &str) -> Result<usize, StorageError> {
    let storage = &api.store.storage;
    let res = storage.list(prefix, &ListOptions::default()).await?;
    let mut left = 0;
    for kv in res.items {
        let Ok(mut obj) = decode_stored(&kv) else {
            continue;
        };
        if object::finalizers(&obj).is_empty() {
            match storage.delete(&kv.key, Some(kv.mod_revision)).await {
                Ok(_) | Err(StorageError::NotFound(_)) => {}
                Err(StorageError::Conflict { .. }) => left += 1,
                Err(e) => return Err(e),
            }
            continue;
        }
        left += 1;
        if !object::is_terminating(&obj) {
            let m = object::meta_mut(&mut obj);
            m.insert("deletionTimestamp".into(), json!(object::now()));
            m.insert("deletionGracePeriodSeconds".into(), json!(0));
            match storage
                .update(&kv.key, encode_for_storage(&obj), kv.mod_revision)
                .await
            {
                Ok(_) | Err(StorageError::Conflict { .. }) | Err(StorageError::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(left)
}

fn without_finalizer(obj: &Value, finalizer: &str) -> Value {
    let mut out = obj.clone();
    let fins: Vec<String> = object::finalizers(obj)
        .into_iter()
        .filter(|f| f != finalizer)
        .collect();
    let m = object::meta_mut(&mut out);
    if fins.is_empty() {
        m.remove("finalizers");
    } else {
        m.insert("finalizers".into(), json!(fins));
    }
    out
}

/// Finish deleting CRD `name`: its objects first, then the CRD.
pub async fn crd(api: Arc<ApiServer>, name: String) {
    loop {
        let Some(compiled) = api.catalog.get(&name) else {
            return;
        };
        if !compiled.terminating {
            return;
        }
        let prefix = format!(
            "{}/{}/{}/",
            api.options.prefix, compiled.info.group, compiled.info.plural
        );
        if let Ok(0) = drain(&api, &prefix).await {
            let kind = api.crds.clone();
            let res = api
                .store
                .update(
                    kind.as_ref(),
                    "",
                    &name,
                    &WriteOptions::default(),
                    false,
                    |cur| Ok(without_finalizer(cur, CLEANUP_FINALIZER)),
                )
                .await;
            match res {
                Ok(w) => {
                    api.crd_written(&w.object, w.deleted);
                    if w.deleted {
                        return;
                    }
                }
                Err(s) if s.code == 404 => return,
                Err(_) => {}
            }
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// Finish deleting namespace `name`: every namespaced object in it, then the namespace.
pub async fn namespace(api: Arc<ApiServer>, name: String) {
    let kind = api.namespaces.clone();
    loop {
        let mut left = 0;
        for crd in api.catalog.all() {
            if !crd.info.namespaced {
                continue;
            }
            let prefix = format!(
                "{}/{}/{}/{}/",
                api.options.prefix, crd.info.group, crd.info.plural, name
            );
            match drain(&api, &prefix).await {
                Ok(n) => left += n,
                Err(_) => left += 1,
            }
        }
        if left == 0 {
            let opts = WriteOptions {
                subresource: "finalize".into(),
                ..Default::default()
            };
            let res = api
                .store
                .update(kind.as_ref(), "", &name, &opts, false, |cur| {
                    let mut out = cur.clone();
                    if let Some(m) = out.as_object_mut() {
                        m.insert("spec".into(), json!({}));
                    }
                    Ok(out)
                })
                .await;
            match res {
                // The update deletes the namespace once no finalizer holds it.
                Ok(w) if w.deleted => return,
                Ok(_) => {}
                Err(s) if s.code == 404 => return,
                Err(_) => {}
            }
        }
        tokio::time::sleep(RETRY).await;
    }
}
