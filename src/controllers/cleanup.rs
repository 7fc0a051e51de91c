//! Deletion cleanup, as kube's CRD finalizer and namespace controllers: objects of a
//! deleted CRD or namespace are deleted (or marked, when they have finalizers), then
//! the CRD or namespace itself goes.
//!
//! CRD cleanup works on storage directly (kube's CRD finalizer deletes through the
//! storage too, without admission). Namespace cleanup is a client of the API, as kube's
//! namespace controller: each object of each namespaced kind is deleted through
//! `rest::Store` with the controller's user, so admission (webhooks, in-process hooks,
//! policies) runs and may deny; the namespace then stays `Terminating` with kube's
//! `NamespaceDeletionContentFailure` condition and the deletion is retried.

use crate::apiserver::{wait_bootstrapped, ApiServer, Cleanup};
use crate::rest::crd::CLEANUP_FINALIZER;
use crate::rest::store::{decode_stored, encode_for_storage, Deleted};
use crate::rest::{object, ResourceKind, WriteOptions};
use crate::storage::{ListOptions, StorageError};
use crate::write::DeleteOptions;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;

const RETRY: Duration = Duration::from_millis(200);

/// After a restart, once start-up is done: queue the deletions that were under way.
pub async fn resume(api: Weak<ApiServer>) {
    let Some(progress) = api.upgrade().map(|a| a.bootstrap_progress()) else {
        return;
    };
    if wait_bootstrapped(progress).await.is_none() {
        return;
    }
    let Some(api) = api.upgrade() else { return };
    for crd in api.catalog.all() {
        if crd.terminating {
            api.cleanup(Cleanup::Crd(crd.name.clone()));
        }
    }
    let prefix = api.namespaces.descriptor().list_prefix("");
    if let Ok(res) = api
        .store
        .storage
        .list(&prefix, &ListOptions::default())
        .await
    {
        for kv in res.items {
            if let Ok(ns) = decode_stored(&kv) {
                if object::is_terminating(&ns) {
                    api.namespace_terminating(object::name(&ns));
                }
            }
        }
    }
}

/// Work the cleanup queue until the server is gone: one task per deletion, a deletion
/// already under way is not started twice.
pub async fn work(api: Weak<ApiServer>, mut queue: UnboundedReceiver<Cleanup>) {
    let running: Arc<Mutex<HashSet<Cleanup>>> = Default::default();
    while let Some(job) = queue.recv().await {
        let Some(api) = api.upgrade() else { return };
        if !running.lock().is_ok_and(|mut r| r.insert(job.clone())) {
            continue;
        }
        let running = running.clone();
        tokio::spawn(async move {
            match &job {
                Cleanup::Namespace(name) => namespace(api, name.clone()).await,
                Cleanup::Crd(name) => crd(api, name.clone()).await,
            }
            if let Ok(mut r) = running.lock() {
                r.remove(&job);
            }
        });
    }
}

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

/// The user kube's namespace controller deletes a namespace's content as.
pub const NAMESPACE_CONTROLLER_USER: &str =
    "system:serviceaccount:kube-system:namespace-controller";

/// The longest wait between two passes over a namespace whose content could not all be
/// deleted (kube's controller backs off too).
const MAX_RETRY: Duration = Duration::from_secs(5);

/// kube's namespace condition types, in the order it writes them.
const NAMESPACE_CONDITIONS: [(&str, &str, &str); 5] = [
    (
        "NamespaceDeletionDiscoveryFailure",
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    (
        "NamespaceDeletionGroupVersionParsingFailure",
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    (
        "NamespaceDeletionContentFailure",
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    (
        "NamespaceContentRemaining",
        "ContentRemoved",
        "All content successfully removed",
    ),
    (
        "NamespaceFinalizersRemaining",
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
    ),
];

/// The service account user of kube's namespace controller.
fn namespace_controller() -> crate::auth::UserInfo {
    crate::auth::UserInfo {
        username: NAMESPACE_CONTROLLER_USER.into(),
        groups: vec![
            "system:serviceaccounts".into(),
            "system:serviceaccounts:kube-system".into(),
            crate::auth::AUTHENTICATED_GROUP.into(),
        ],
        ..Default::default()
    }
}

/// Every namespaced kind the namespace controller empties, as discovery shows them:
/// built-in kinds that can be deleted, and each namespaced CRD in its preferred version.
fn namespaced_kinds(api: &ApiServer) -> Vec<(String, Arc<dyn ResourceKind>)> {
    let mut out: Vec<(String, Arc<dyn ResourceKind>)> = Vec::new();
    for r in crate::registry::builtin::resources() {
        if !r.namespaced || !r.verbs.contains(&"delete") || r.storage.is_empty() {
            continue;
        }
        if let Some(kind) = api.builtin(r.group, r.version, r.resource) {
            out.push((gvr_string(r.group, r.version, r.resource), kind));
        }
    }
    for crd in api.catalog.all() {
        if !crd.info.namespaced {
            continue;
        }
        let mut served: Vec<&str> = crd
            .versions
            .iter()
            .filter(|v| v.served)
            .map(|v| v.name.as_str())
            .collect();
        served.sort_by(|a, b| crate::registry::crd::compare_kube_aware_versions(b, a));
        let Some(version) = served.first() else {
            continue;
        };
        if let Ok(resolved) = api.resolve(&crd.info.group, version, &crd.info.plural) {
            let kind: Arc<dyn ResourceKind> = match resolved {
                crate::apiserver::Resolved::Custom(k) => k,
                crate::apiserver::Resolved::Builtin(k) => k,
            };
            out.push((gvr_string(&crd.info.group, version, &crd.info.plural), kind));
        }
    }
    out
}

/// Go's `GroupVersionResource.String()`.
fn gvr_string(group: &str, version: &str, resource: &str) -> String {
    format!("{group}/{version}, Resource={resource}")
}

/// What one pass over a namespace's content found.
#[derive(Debug, Default, PartialEq)]
struct ContentTotals {
    /// `<resource>.<group>` → objects left (terminating ones with finalizers, or ones a
    /// delete could not remove).
    remaining: std::collections::BTreeMap<String, usize>,
    /// Finalizer → objects left holding it.
    finalizers: std::collections::BTreeMap<String, usize>,
    /// The error of each kind whose content could not be deleted.
    errors: Vec<String>,
}

/// Delete everything of `kind` in `namespace` as the namespace controller: one delete
/// per object, each admitted (webhooks, hooks, policies), then count what is left.
async fn empty_kind(
    api: &Arc<ApiServer>,
    namespace: &str,
    gvr: &str,
    kind: &dyn ResourceKind,
    totals: &mut ContentTotals,
) {
    let opts = DeleteOptions {
        propagation_policy: Some("Background".into()),
        collection: Some(namespace.to_string()),
        user: namespace_controller().into(),
        ..Default::default()
    };
    let d = kind.descriptor().clone();
    let list = |api: &Arc<ApiServer>| {
        let api = api.clone();
        async move {
            api.store
                .list(kind, namespace, &crate::rest::store::ListOptions::default())
                .await
        }
    };
    let items = match list(api).await {
        Ok(page) => page.items,
        Err(s) => {
            totals.errors.push(s.message);
            return;
        }
    };
    let mut first_error: Option<String> = None;
    for obj in items {
        if object::is_terminating(&obj) {
            continue;
        }
        let name = object::name(&obj).to_string();
        let mut warnings = Vec::new();
        match api
            .store
            .delete(kind, namespace, &name, &opts, &[], &mut warnings)
            .await
        {
            Ok(Deleted::Gone(o)) => api.after_write(&d, &o, true),
            Ok(Deleted::Terminating(o)) => api.after_write(&d, &o, false),
            Err(s) if s.code == 404 => {}
            Err(s) => {
                first_error.get_or_insert(s.message);
            }
        }
    }
    // kube's deletecollection fails as a whole: the kind's remaining items are not
    // counted then.
    if let Some(e) = first_error {
        totals.errors.push(e);
        return;
    }
    let left = match list(api).await {
        Ok(page) => page.items,
        Err(s) => {
            totals.errors.push(s.message);
            return;
        }
    };
    if left.is_empty() {
        return;
    }
    let mut with_finalizers = false;
    for item in &left {
        for f in object::finalizers(item) {
            with_finalizers = true;
            *totals.finalizers.entry(f).or_default() += 1;
        }
    }
    let key = format!("{}.{}", d.gr.resource, d.gr.group);
    totals.remaining.insert(key, left.len());
    if !with_finalizers {
        totals.errors.push(format!(
            "unexpected items still remain in namespace: {namespace} for gvr: {gvr}"
        ));
    }
}

/// kube's namespace conditions for one pass (`status_condition_utils`): every type,
/// failed ones with their reason and message, the others with kube's success texts.
fn namespace_conditions(totals: &ContentTotals) -> Vec<(&'static str, bool, String, String)> {
    NAMESPACE_CONDITIONS
        .iter()
        .map(|(ty, ok_reason, ok_message)| {
            let failed = match *ty {
                "NamespaceDeletionContentFailure" if !totals.errors.is_empty() => {
                    let mut msgs = totals.errors.clone();
                    msgs.sort();
                    Some((
                        "ContentDeletionFailed",
                        format!(
                            "Failed to delete all resource types, {} remaining: {}",
                            msgs.len(),
                            msgs.join(", ")
                        ),
                    ))
                }
                "NamespaceContentRemaining" if !totals.remaining.is_empty() => {
                    let mut each: Vec<String> = totals
                        .remaining
                        .iter()
                        .map(|(r, n)| format!("{r} has {n} resource instances"))
                        .collect();
                    each.sort();
                    Some((
                        "SomeResourcesRemain",
                        format!("Some resources are remaining: {}", each.join(", ")),
                    ))
                }
                "NamespaceFinalizersRemaining" if !totals.finalizers.is_empty() => {
                    let mut each: Vec<String> = totals
                        .finalizers
                        .iter()
                        .map(|(f, n)| format!("{f} in {n} resource instances"))
                        .collect();
                    each.sort();
                    Some((
                        "SomeFinalizersRemain",
                        format!(
                            "Some content in the namespace has finalizers remaining: {}",
                            each.join(", ")
                        ),
                    ))
                }
                _ => None,
            };
            match failed {
                Some((reason, message)) => (*ty, true, reason.to_string(), message),
                None => (*ty, false, ok_reason.to_string(), ok_message.to_string()),
            }
        })
        .collect()
}

/// Merge `conditions` into a namespace's `status.conditions` as kube's `updateConditions`:
/// `lastTransitionTime` changes only with the status. `None` when nothing changed.
fn merge_conditions(
    ns: &Value,
    conditions: &[(&'static str, bool, String, String)],
) -> Option<Value> {
    let mut list: Vec<Value> = ns
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut changed = false;
    for (ty, failed, reason, message) in conditions {
        let status = if *failed { "True" } else { "False" };
        let fresh = json!({
            "type": ty, "status": status, "lastTransitionTime": object::now(),
            "reason": reason, "message": message,
        });
        match list
            .iter_mut()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
        {
            None => {
                list.push(fresh);
                changed = true;
            }
            Some(old) => {
                let same = |k: &str, v: &str| old.get(k).and_then(Value::as_str) == Some(v);
                if same("status", status) && same("reason", reason) && same("message", message) {
                    continue;
                }
                if !same("status", status) {
                    old["lastTransitionTime"] = json!(object::now());
                }
                old["status"] = json!(status);
                old["reason"] = json!(reason);
                old["message"] = json!(message);
                changed = true;
            }
        }
    }
    if !changed {
        return None;
    }
    let mut out = ns.clone();
    if let Some(m) = out.as_object_mut() {
        let status = m.entry("status").or_insert_with(|| json!({}));
        if let Some(st) = status.as_object_mut() {
            st.insert("conditions".into(), Value::Array(list));
        }
    }
    Some(out)
}

/// Finish deleting namespace `name` as kube's namespace controller: delete its content
/// through the API (each delete admitted as the controller's user), record the
/// outcome in the namespace's conditions, and remove the namespace once nothing is
/// left; retried (with backoff) until then.
pub async fn namespace(api: Arc<ApiServer>, name: String) {
    let kind = api.namespaces.clone();
    let mut delay = RETRY;
    loop {
        let ns = match api.store.get(kind.as_ref(), "", &name).await {
            Ok(ns) => ns,
            Err(s) if s.code == 404 => return,
            Err(_) => {
                tokio::time::sleep(delay).await;
                continue;
            }
        };
        if !object::is_terminating(&ns) {
            return;
        }
        let mut totals = ContentTotals::default();
        for (gvr, k) in namespaced_kinds(&api) {
            empty_kind(&api, &name, &gvr, k.as_ref(), &mut totals).await;
        }
        let conditions = namespace_conditions(&totals);
        let status_opts = WriteOptions {
            subresource: "status".into(),
            user: namespace_controller().into(),
            ..Default::default()
        };
        if merge_conditions(&ns, &conditions).is_some() {
            let _ = api
                .store
                .update(kind.as_ref(), "", &name, &status_opts, false, |cur| {
                    Ok(merge_conditions(cur, &conditions).unwrap_or_else(|| cur.clone()))
                })
                .await;
        }
        let done = totals.errors.is_empty() && totals.remaining.is_empty();
        if done {
            let opts = WriteOptions {
                subresource: "finalize".into(),
                user: namespace_controller().into(),
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
                Ok(w) if w.deleted => {
                    api.after_write(kind.descriptor(), &w.object, true);
                    return;
                }
                Ok(w) => api.after_write(kind.descriptor(), &w.object, false),
                Err(s) if s.code == 404 => return,
                Err(_) => {}
            }
        }
        // Content that could not be deleted (a webhook denies, ...) is retried with
        // backoff; content waiting on finalizers is looked at again soon.
        delay = if totals.errors.is_empty() {
            RETRY
        } else {
            (delay * 2).min(MAX_RETRY)
        };
        tokio::time::sleep(delay).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_conditions_word_failures_and_successes_as_kube() {
        let mut totals = ContentTotals::default();
        totals
            .errors
            .push("admission webhook \"deletes.example.com\" denied the request: protected".into());
        totals.errors.push("a later error".into());
        totals.remaining.insert("widgets.example.com".into(), 2);
        totals.finalizers.insert("example.com/keep".into(), 1);
        let c = namespace_conditions(&totals);
        let types: Vec<&str> = c.iter().map(|c| c.0).collect();
        assert_eq!(
            types,
            [
                "NamespaceDeletionDiscoveryFailure",
                "NamespaceDeletionGroupVersionParsingFailure",
                "NamespaceDeletionContentFailure",
                "NamespaceContentRemaining",
                "NamespaceFinalizersRemaining"
            ]
        );
        assert_eq!(
            c[0],
            (
                "NamespaceDeletionDiscoveryFailure",
                false,
                "ResourcesDiscovered".into(),
                "All resources successfully discovered".into()
            )
        );
        // Messages sorted, as kube's.
        assert_eq!(
            c[2].3,
            "Failed to delete all resource types, 2 remaining: a later error, admission webhook \"deletes.example.com\" denied the request: protected"
        );
        assert_eq!(c[2].2, "ContentDeletionFailed");
        assert_eq!(
            c[3].3,
            "Some resources are remaining: widgets.example.com has 2 resource instances"
        );
        assert_eq!(
            c[4].3,
            "Some content in the namespace has finalizers remaining: example.com/keep in 1 resource instances"
        );
        let ok = namespace_conditions(&ContentTotals::default());
        assert!(ok.iter().all(|c| !c.1));
        assert_eq!(
            ok[2].3,
            "All content successfully deleted, may be waiting on finalization"
        );
    }

    #[test]
    fn merged_conditions_keep_transition_times_unless_the_status_changes() {
        let ns = json!({"metadata": {"name": "doomed"}, "status": {"phase": "Terminating"}});
        let ok = namespace_conditions(&ContentTotals::default());
        let first = merge_conditions(&ns, &ok).expect("conditions added");
        assert_eq!(
            first["status"]["conditions"].as_array().map(Vec::len),
            Some(5)
        );
        assert_eq!(first["status"]["phase"], "Terminating");
        // The same conditions again: nothing to write.
        assert!(merge_conditions(&first, &ok).is_none());
        let mut old = first.clone();
        old["status"]["conditions"][2]["lastTransitionTime"] = json!("2020-01-01T00:00:00Z");
        let failing = namespace_conditions(&ContentTotals {
            errors: vec!["denied".into()],
            ..Default::default()
        });
        let next = merge_conditions(&old, &failing).expect("changed");
        let c = &next["status"]["conditions"][2];
        assert_eq!(c["status"], "True");
        assert_ne!(c["lastTransitionTime"], "2020-01-01T00:00:00Z");
        // A changed message with the same status keeps the transition time.
        let mut again = next.clone();
        again["status"]["conditions"][2]["lastTransitionTime"] = json!("2020-01-01T00:00:00Z");
        let other = namespace_conditions(&ContentTotals {
            errors: vec!["denied again".into()],
            ..Default::default()
        });
        let merged = merge_conditions(&again, &other).expect("changed");
        assert_eq!(
            merged["status"]["conditions"][2]["lastTransitionTime"],
            "2020-01-01T00:00:00Z"
        );
    }
}
