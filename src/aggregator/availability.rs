//! kube's remote availability controller, one pass at a time: every APIService with a
//! `spec.service` is checked (its Service, port and EndpointSlices, then up to five
//! concurrent GETs of `/apis/<group>/<version>` as `system:kube-aggregator` in
//! `system:masters`, each answered 2xx within 5 s or failed), its `Available` condition
//! written through `/status` with kube's reasons and messages when it changes, and what
//! discovery and OpenAPI merge is fetched from the available ones. The pass then
//! replaces the aggregator's snapshot, which the proxy and discovery read.

use super::endpoints::{self, Checked, Lookup};
use super::{Aggregator, AggregatorError, Backend};
use crate::rest::{object, ResourceKind, WriteOptions};
use crate::status::Status;
use apimachinery::apiservice;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// The user kube's aggregator probes and discovers as, and its group.
pub const AGGREGATOR_USER: (&str, &str) = ("system:kube-aggregator", "system:masters");

/// kube's discovery client timeout in the availability check.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// How many probes run at once; one success is enough.
const PROBE_ATTEMPTS: usize = 5;

/// The field manager of the status writes (kube's loopback client).
const FIELD_MANAGER: &str = "kube-apiserver";

/// The largest discovery or OpenAPI index read from a backend.
const MAX_DOCUMENT: usize = 64 << 20;

/// The media type of aggregated discovery v2.
pub const AGGREGATED_V2: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

impl Aggregator {
    /// One pass over every APIService (see the module docs); the first failure to
    /// list or write is returned (the caller tries again later).
    pub async fn sync(
        &self,
        lookup: &Lookup<'_>,
        apiservices: &dyn ResourceKind,
    ) -> Result<(), Status> {
        let listed = lookup
            .store
            .list(apiservices, "", &Default::default())
            .await?
            .items;
        let checks = listed.iter().filter_map(|obj| {
            let backend = Backend::from_api_service(obj)?;
            Some(self.check(lookup, backend))
        });
        let checked = futures::future::join_all(checks).await;
        // What the conditions will say is served before they say it: a client seeing
        // `Available` finds the group-version proxied and discovered.
        self.replace(
            checked
                .iter()
                .map(|(b, _)| (b.name.clone(), Arc::new(b.clone())))
                .collect::<HashMap<_, _>>(),
        );
        let writes = listed.iter().filter_map(|obj| {
            let (_, condition) = checked.iter().find(|(b, _)| b.name == object::name(obj))?;
            apiservice::set_available_condition(obj, condition.clone())?;
            let name = object::name(obj);
            Some(async move {
                let written = write_status(lookup, apiservices, obj, condition.clone()).await;
                (name, written)
            })
        });
        let mut first_error = None;
        for (name, written) in futures::future::join_all(writes).await {
            if let Err(s) = written {
                tracing::warn!(apiservice = %name, error = %s.message, "APIService availability not recorded; retrying");
                first_error.get_or_insert(s);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Check one remote APIService and fetch its documents: the backend as the pass
    /// found it and its `Available` condition.
    async fn check(&self, lookup: &Lookup<'_>, mut backend: Backend) -> (Backend, Value) {
        let (status, reason, message) = match endpoints::check(lookup, &backend).await {
            Checked::Unavailable {
                status,
                reason,
                message,
            } => {
                backend.targets = Err(message.clone());
                (status, reason, message)
            }
            Checked::Resolved(targets) => {
                backend.targets = targets;
                match self.probe(&backend).await {
                    Ok(()) => ("True", "Passed", "all checks passed".to_string()),
                    Err(message) => ("False", "FailedDiscoveryCheck", message),
                }
            }
        };
        let condition = apiservice::available_condition(status, reason, &message, &object::now());
        backend.available = status == "True";
        if backend.available {
            self.fetch_documents(&mut backend).await;
        }
        (backend, condition)
    }

    /// kube's discovery check: [`PROBE_ATTEMPTS`] GETs at once, one 2xx enough; else
    /// the last failure, in kube's words.
    async fn probe(&self, backend: &Backend) -> Result<(), String> {
        let path = format!("/apis/{}/{}", backend.group, backend.version);
        let attempts = (0..PROBE_ATTEMPTS).map(|_| async {
            let address = pick(&backend.targets).map_err(|e| e.to_string())?;
            let url = format!("https://{address}{path}");
            match self.get(backend, &address, &path, "*/*").await {
                Ok((code, _)) if (200..300).contains(&code) => Ok(()),
                Ok((code, _)) => Err(format!(
                    "failing or missing response from {url}: bad status from {url}: {code}"
                )),
                Err(e) => Err(format!("failing or missing response from {url}: {e}")),
            }
        });
        let results = futures::future::join_all(attempts).await;
        let mut last = Ok(());
        for r in results {
            if r.is_ok() {
                return Ok(());
            }
            last = r;
        }
        last
    }

    /// What discovery and OpenAPI merge from an available backend: its version's entry
    /// of aggregated discovery and its `/openapi/v3` entry (each `None` when the backend
    /// does not say).
    async fn fetch_documents(&self, backend: &mut Backend) {
        let Ok(address) = pick(&backend.targets) else {
            return;
        };
        let doc = |r: Result<(u16, Bytes), AggregatorError>| match r {
            Ok((200, body)) => serde_json::from_slice::<Value>(&body).ok(),
            _ => None,
        };
        let discovery = doc(self.get(backend, &address, "/apis", AGGREGATED_V2).await);
        backend.discovery = discovery.and_then(|d| {
            let group = d.get("items")?.as_array()?.iter().find(|g| {
                g.pointer("/metadata/name").and_then(Value::as_str) == Some(&backend.group)
            })?;
            group
                .get("versions")?
                .as_array()?
                .iter()
                .find(|v| v["version"].as_str() == Some(&backend.version))
                .cloned()
        });
        let index = doc(self
            .get(backend, &address, "/openapi/v3", "application/json")
            .await);
        let key = format!("apis/{}/{}", backend.group, backend.version);
        backend.openapi_url = index.and_then(|i| {
            i.pointer(&format!(
                "/paths/{}",
                key.replace('~', "~0").replace('/', "~1")
            ))?
            .get("serverRelativeURL")?
            .as_str()
            .map(String::from)
        });
    }

    /// `GET https://<address><path>` to `backend` as the aggregator itself within 5 s:
    /// the status code and body, or Go's `Get "<url>": <cause>`.
    pub async fn get(
        &self,
        backend: &Backend,
        address: &str,
        path: &str,
        accept: &str,
    ) -> Result<(u16, Bytes), AggregatorError> {
        let url = format!("https://{address}{path}");
        let failed = |cause: String| AggregatorError::Get {
            url: url.clone(),
            cause,
        };
        let client = self.client(backend).map_err(|e| failed(e.to_string()))?;
        let request = http::Request::get(&url)
            .header("Accept", accept)
            .header("User-Agent", "kube-apiserver")
            .header("X-Remote-User", AGGREGATOR_USER.0)
            .header("X-Remote-Group", AGGREGATOR_USER.1)
            .body(Full::new(Bytes::new()))
            .map_err(|e| failed(e.to_string()))?;
        let exchange = async {
            let response = client
                .request(request)
                .await
                .map_err(|e| failed(super::transport::go_error(e, address)))?;
            let code = response.status().as_u16();
            let body = Limited::new(response.into_body(), MAX_DOCUMENT)
                .collect()
                .await
                .map_err(|e| failed(e.to_string()))?
                .to_bytes();
            Ok((code, body))
        };
        match tokio::time::timeout(PROBE_TIMEOUT, exchange).await {
            Ok(r) => r,
            Err(_) => Err(failed(
                "context deadline exceeded (Client.Timeout exceeded while awaiting headers)".into(),
            )),
        }
    }
}

/// One of the resolved addresses, at random (kube starts at a random endpoint), or the
/// resolver's error.
pub fn pick(targets: &Result<Vec<String>, String>) -> Result<String, AggregatorError> {
    match targets {
        Ok(t) if !t.is_empty() => Ok(t[rand::random_range(0..t.len())].clone()),
        Ok(_) => Err(AggregatorError::Unresolved("service unavailable".into())),
        Err(e) => Err(AggregatorError::Unresolved(e.clone())),
    }
}

/// Write `condition` into APIService `obj`'s status through `/status`, unless it was
/// deleted, replaced or made local meanwhile (the next pass looks again).
async fn write_status(
    lookup: &Lookup<'_>,
    apiservices: &dyn ResourceKind,
    obj: &Value,
    condition: Value,
) -> Result<(), Status> {
    let name = object::name(obj).to_string();
    let uid = object::meta_str(obj, "uid").to_string();
    let opts = WriteOptions {
        field_manager: FIELD_MANAGER.into(),
        subresource: "status".into(),
        ..Default::default()
    };
    let gr = apiservices.descriptor().gr.clone();
    let written = lookup
        .store
        .update(apiservices, "", &name, &opts, false, |current| {
            if apiservice::is_local(current) || object::meta_str(current, "uid") != uid {
                return Err(Status::stale(&gr, &name));
            }
            let mut updated = current.clone();
            if let Some(status) = apiservice::set_available_condition(current, condition.clone()) {
                updated["status"] = status;
            }
            Ok(updated)
        })
        .await;
    match written {
        Err(s) if s.code == 404 || s.code == 409 => Ok(()),
        other => other.map(|_| ()),
    }
}
