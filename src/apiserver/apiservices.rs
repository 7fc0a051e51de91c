//! Local APIServices, as kube's autoregistration controller keeps them: one stored
//! `apiregistration.k8s.io/v1` APIService per built-in group-version (`onstart`: made,
//! corrected or removed once per start, then the user's to edit or delete) and per
//! served version of each CRD (`true`: follows the CRDs always), and every local one
//! Available (kube's local availability controller). A pass lists the APIServices and
//! asks `apimachinery::apiservice::sync` what to do about each name;
//! start-up runs the first (so they exist once the server is ready), the
//! autoregistration controller the others, whenever CRDs or APIServices change.

use super::ApiServer;
use crate::rest::store::ListOptions;
use crate::rest::{object, DeleteOptions, ResourceKind, WriteOptions};
use crate::status::Status;
use apimachinery::apiservice::{self, Sync};
use futures::StreamExt;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// The API group of APIServices.
pub const GROUP: &str = "apiregistration.k8s.io";

/// The field manager of the server's own APIService writes (kube's loopback client).
const FIELD_MANAGER: &str = "kube-apiserver";

/// How many APIService writes of a pass are in flight at once.
const CONCURRENT_WRITES: usize = 32;

/// What the autoregistration passes remember across runs within one process.
#[derive(Debug, Default)]
pub struct Autoregistration {
    /// The APIServices that existed when the first pass ran (`None` before it).
    present_at_start: Option<HashSet<String>>,
    /// The names a pass has synced successfully.
    synced: HashSet<String>,
}

impl ApiServer {
    /// The APIServices this server wants by name: its built-in group-versions', then
    /// (taking precedence, as kube's controllers add them later) its CRDs' served versions'.
    fn desired_api_services(&self) -> BTreeMap<String, Value> {
        let served = std::iter::once(("", "v1")).chain(self.options.served.group_versions());
        let mut desired: BTreeMap<String, Value> = apiservice::built_in(served)
            .into_iter()
            .map(|s| (object::name(&s).to_string(), s))
            .collect();
        for crd in self.catalog.all() {
            for v in crd.info.versions.iter().filter(|v| v.served) {
                let s = apiservice::for_crd_version(&crd.info.group, &v.name);
                desired.insert(object::name(&s).to_string(), s);
            }
        }
        desired
    }

    /// One pass of kube's autoregistration controller over every APIService name (those
    /// wanted and those stored). Every name is attempted; the first failure is returned
    /// (the caller tries again later).
    pub async fn autoregister_api_services(&self) -> Result<(), Status> {
        let _pass = self.autoregistration_pass.lock().await;
        self.autoregistration_pass_locked().await
    }

    /// [`ApiServer::autoregister_api_services`], the pass lock held.
    async fn autoregistration_pass_locked(&self) -> Result<(), Status> {
        let Some(kind) = self.builtin(GROUP, "v1", "apiservices") else {
            return Ok(());
        };
        let kind = kind.as_ref();
        let listed = self
            .store
            .list(kind, "", &ListOptions::default())
            .await?
            .items;
        let current: BTreeMap<String, Value> = listed
            .into_iter()
            .map(|s| (object::name(&s).to_string(), s))
            .collect();
        let desired = self.desired_api_services();
        let (present_at_start, synced) = {
            let mut state = self
                .autoregistration
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let present = state
                .present_at_start
                .get_or_insert_with(|| current.keys().cloned().collect())
                .clone();
            (present, state.synced.clone())
        };
        let names: BTreeSet<&String> = desired.keys().chain(current.keys()).collect();
        let actions: Vec<(String, Sync)> = names
            .into_iter()
            .map(|name| {
                let action = apiservice::sync(
                    desired.get(name),
                    current.get(name),
                    synced.contains(name),
                    present_at_start.contains(name),
                );
                (name.clone(), action)
            })
            .collect();
        // The writes go out together: on etcd, start-up waits for one round trip, not 20.
        let writes: Vec<_> = actions
            .into_iter()
            .map(|(name, action)| self.apply_api_service_sync(kind, name, action))
            .collect();
        let results: Vec<(String, Result<(), Status>)> = futures::stream::iter(writes)
            .buffer_unordered(CONCURRENT_WRITES)
            .collect()
            .await;
        let mut first_error = None;
        {
            let mut state = self
                .autoregistration
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            for (name, result) in results {
                match result {
                    Ok(()) => {
                        state.synced.insert(name);
                    }
                    Err(s) => {
                        tracing::warn!(apiservice = %name, error = %s.message, "APIService autoregistration failed; retrying");
                        first_error.get_or_insert(s);
                    }
                }
            }
        }
        // kube's local availability controller: local APIServices are Available.
        let now = object::now();
        for (name, service) in &current {
            let Some(status) = apiservice::local_available_status(service, &now) else {
                continue;
            };
            if let Err(s) = self.set_api_service_status(kind, name, status).await {
                tracing::warn!(apiservice = %name, error = %s.message, "APIService availability not recorded; retrying");
                first_error.get_or_insert(s);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Write the status of local APIService `name` through `/status`, unless it is gone,
    /// changed meanwhile or no longer local (the next pass looks again).
    async fn set_api_service_status(
        &self,
        kind: &dyn ResourceKind,
        name: &str,
        status: Value,
    ) -> Result<(), Status> {
        let opts = WriteOptions {
            field_manager: FIELD_MANAGER.into(),
            subresource: "status".into(),
            ..Default::default()
        };
        let gr = kind.descriptor().gr.clone();
        let written = self
            .store
            .update(kind, "", name, &opts, false, |current| {
                if !apiservice::is_local(current) {
                    return Err(Status::stale(&gr, name));
                }
                let mut updated = current.clone();
                updated["status"] = status.clone();
                Ok(updated)
            })
            .await;
        match written {
            Err(s) if s.code == 404 || s.code == 409 => Ok(()),
            other => other.map(|_| ()),
        }
    }

    /// Autoregister as at a new start (every built-in APIService synced once more),
    /// after storage was emptied under the running server.
    pub async fn restart_api_service_autoregistration(&self) -> Result<(), Status> {
        let _pass = self.autoregistration_pass.lock().await;
        *self
            .autoregistration
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Autoregistration::default();
        self.autoregistration_pass_locked().await
    }

    /// [`ApiServer::write_api_service`], the outcome paired with the name.
    async fn apply_api_service_sync(
        &self,
        kind: &dyn ResourceKind,
        name: String,
        action: Sync,
    ) -> (String, Result<(), Status>) {
        let result = self.write_api_service(kind, &name, action).await;
        (name, result)
    }

    /// Do what a pass decided about APIService `name`. Losing a race (created, changed or
    /// deleted meanwhile, by another server on the same storage or a user) is no
    /// failure: the change brings the name up again.
    async fn write_api_service(
        &self,
        kind: &dyn ResourceKind,
        name: &str,
        action: Sync,
    ) -> Result<(), Status> {
        let opts = WriteOptions {
            field_manager: FIELD_MANAGER.into(),
            ..Default::default()
        };
        let lost_race = |s: &Status| s.code == 404 || s.code == 409;
        let result = match action {
            Sync::Nothing => return Ok(()),
            Sync::Create(obj) => self.store.create(kind, obj, &opts).await.map(|_| ()),
            Sync::Update(desired) => {
                let spec = desired.get("spec").cloned().unwrap_or(Value::Null);
                let uid = object::meta_str(&desired, "uid").to_string();
                let gr = kind.descriptor().gr.clone();
                self.store
                    .update(kind, "", name, &opts, false, |current| {
                        // Replaced meanwhile: the new object comes up on its own.
                        if object::meta_str(current, "uid") != uid {
                            return Err(Status::stale(&gr, name));
                        }
                        let mut updated = current.clone();
                        updated["spec"] = spec.clone();
                        Ok(updated)
                    })
                    .await
                    .map(|_| ())
            }
            Sync::Delete { uid } => {
                let opts = DeleteOptions {
                    uid: Some(uid),
                    ..Default::default()
                };
                self.store
                    .delete(kind, "", name, &opts, &[], &mut Vec::new())
                    .await
                    .map(|_| ())
            }
        };
        match result {
            Err(s) if lost_race(&s) => Ok(()),
            other => other,
        }
    }
}
