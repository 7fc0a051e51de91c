//! Admission policies' params (`paramKind`), read through this server's store: the
//! `ParamReader` the admission layer asks, over any built-in kind or served CRD.

use super::{ApiServer, Resolved};
use crate::admission::policy::ParamReader;
use crate::admission::AdmissionError;
use futures::future::BoxFuture;
use serde_json::Value;
use std::sync::{Arc, Weak};

/// Params of admission policies, read through the REST store of an [`ApiServer`].
pub struct StoreParams {
    /// The server (weak: the reader lives inside it).
    pub api: Weak<ApiServer>,
}

impl StoreParams {
    /// `(group, version, plural, namespaced)` of a kind.
    fn target(&self, api_version: &str, kind: &str) -> Option<(String, String, String, bool)> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        if let Some(r) = crate::registry::builtin::resources()
            .iter()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
        {
            return Some((
                group.into(),
                version.into(),
                r.resource.into(),
                r.namespaced,
            ));
        }
        let api = self.api.upgrade()?;
        let crd = api.catalog.lookup_kind(group, kind)?;
        crd.served_version(version)?;
        Some((
            group.into(),
            version.into(),
            crd.info.plural.clone(),
            crd.info.namespaced,
        ))
    }

    fn resolve(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<(Arc<ApiServer>, Resolved), AdmissionError> {
        let (g, v, r, _) =
            self.target(api_version, kind)
                .ok_or_else(|| AdmissionError::ParamKindNotFound {
                    api_version: api_version.to_string(),
                    kind: kind.to_string(),
                })?;
        let api = self.api.upgrade().ok_or(AdmissionError::ShuttingDown)?;
        let resolved = api.resolve(&g, &v, &r).map_err(params_error)?;
        Ok((api, resolved))
    }
}

impl ParamReader for StoreParams {
    fn scope(&self, api_version: &str, kind: &str) -> Option<bool> {
        self.target(api_version, kind).map(|t| t.3)
    }

    fn get<'a>(
        &'a self,
        api_version: &'a str,
        kind: &'a str,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>, AdmissionError>> {
        Box::pin(async move {
            let (api, resolved) = self.resolve(api_version, kind)?;
            match api.store.get(resolved.kind(), namespace, name).await {
                Ok(v) => Ok(Some(v)),
                Err(s) if s.code == 404 => Ok(None),
                Err(s) => Err(params_error(s)),
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
            let (api, resolved) = self.resolve(api_version, kind)?;
            let page = api
                .store
                .list(resolved.kind(), namespace, &Default::default())
                .await
                .map_err(params_error)?;
            Ok(page.items)
        })
    }
}

/// A store error reading params, as admission reports it (its message).
fn params_error(status: crate::status::Status) -> AdmissionError {
    AdmissionError::Params(Box::new(status))
}
