//! kube's ClusterRole aggregation controller (`pkg/controller/clusterroleaggregation`):
//! whenever a ClusterRole changes, aggregated ClusterRoles get the union of the rules
//! their `aggregationRule` selectors match. Runs with `--authorization-mode=RBAC`.

use crate::apiserver::ApiServer;
use crate::auth::rbac::{RbacRules, AGGREGATION_MANAGER, GROUP};
use crate::rest::WriteOptions;
use std::sync::{Arc, Weak};

/// Start kube's ClusterRole aggregation controller: whenever a ClusterRole changes,
/// aggregated ClusterRoles get the union of the rules their selectors match, written
/// through the store (the RBAC cache, hence authorization, follows).
pub fn start(api: &Arc<ApiServer>) {
    tokio::spawn(run(Arc::downgrade(api), api.rbac.clone()));
}

async fn run(api: Weak<ApiServer>, cache: Arc<RbacRules>) {
    loop {
        // Wake now and then to notice the server is gone.
        let woken = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            cache.cluster_roles_changed(),
        )
        .await;
        let Some(api) = api.upgrade() else { return };
        if woken.is_err() {
            continue;
        }
        let Some(kind) = api.builtin(GROUP, "v1", "clusterroles") else {
            continue;
        };
        for (name, rules) in cache.aggregation_updates() {
            // Writes by the server itself carry no user: no escalation check applies.
            let opts = WriteOptions {
                field_manager: AGGREGATION_MANAGER.into(),
                ..Default::default()
            };
            let res = api
                .store
                .update(kind.as_ref(), "", &name, &opts, false, |cur| {
                    let mut desired = cur.clone();
                    desired["rules"] = rules.clone();
                    Ok(desired)
                })
                .await;
            match res {
                Ok(w) => api.after_write(kind.descriptor(), &w.object, w.deleted),
                Err(e) if e.code == 404 => {}
                Err(e) => {
                    tracing::warn!(clusterrole = %name, error = %e.message, "aggregation failed; retrying");
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    cache.retry_aggregation();
                }
            }
        }
    }
}
