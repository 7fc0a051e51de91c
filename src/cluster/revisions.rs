//! ControllerRevisions, as kube's StatefulSet and DaemonSet controllers keep them
//! (`pkg/controller/history`): one per pod template, named `<owner>-<hash>`, owned by
//! the workload, numbered in the order templates were rolled out; the hash is also the
//! pods' `controller-revision-hash` label.

use super::client::{ApiError, Client};
use super::informer::Informer;
use super::objects::{controller_ref, int_at, name, namespace, owned_by, path_of};
use serde_json::{json, Value};

/// The pods' label naming their revision.
pub const REVISION_HASH: &str = "controller-revision-hash";

/// The hash of `template` (the Deployment controller's, with no collisions counted).
pub fn hash(template: &Value) -> String {
    super::deployment::template_hash(template, 0)
}

/// The ControllerRevision of `owner` for its current template (created, or renumbered
/// as the newest when an old template comes back); its name is the revision label.
pub async fn current(
    client: &Client,
    revisions: &Informer,
    owner: &Value,
) -> Result<String, ApiError> {
    let template = owner
        .pointer("/spec/template")
        .cloned()
        .unwrap_or(json!({}));
    let rev_name = format!("{}-{}", name(owner), hash(&template));
    let all = revisions.list();
    let owned = owned_by(owner, &all);
    let newest = owned
        .iter()
        .map(|r| int_at(r, "/revision", 0))
        .max()
        .unwrap_or(0);
    match owned.iter().find(|r| name(r) == rev_name) {
        Some(existing) if int_at(existing, "/revision", 0) == newest => {}
        Some(existing) => {
            let mut updated = (*existing).clone();
            updated["revision"] = json!(newest + 1);
            let path = path_of("apps/v1", "controllerrevisions", existing);
            let written = client.update(&path, &updated).await?;
            revisions.observe(&written);
        }
        None => {
            let revision = json!({
                "apiVersion": "apps/v1", "kind": "ControllerRevision",
                "metadata": {
                    "name": rev_name, "namespace": namespace(owner),
                    "labels": template.pointer("/metadata/labels").cloned().unwrap_or(json!({})),
                    "ownerReferences": [controller_ref(owner)],
                },
                "data": {"spec": {"template": template}},
                "revision": newest + 1,
            });
            let path = format!(
                "/apis/apps/v1/namespaces/{}/controllerrevisions",
                namespace(owner)
            );
            match client.create(&path, &revision).await {
                Ok(created) => revisions.observe(&created),
                Err(e) if e.reason == "AlreadyExists" => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(rev_name)
}

/// The revision label of a pod.
pub fn of_pod(pod: &Value) -> &str {
    pod.pointer("/metadata/labels")
        .and_then(|l| l.get(REVISION_HASH))
        .and_then(Value::as_str)
        .unwrap_or("")
}
