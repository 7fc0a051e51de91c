//! `matchPolicy: Equivalent` for webhooks and policies: a rule written for one version
//! of a custom resource also matches requests to its other served versions (kube's
//! equivalent resource mapping: same group and plural), and the hook then sees the
//! object converted to the version its rule matched (kube's versioned attributes),
//! with `kind`/`resource` of that version and `requestKind`/`requestResource` of the
//! request. Built-in kinds are served in one version: they have no equivalents.

use super::Attributes;
use crate::registry::catalog::Catalog;
use crate::status::Status;
use crate::webhook::client::ServiceResolver;
use crate::write::Descriptor;
use serde_json::Value;
use std::sync::{Arc, RwLock};

/// The served versions of custom resources and conversion between them.
#[derive(Clone, Default)]
pub struct Versions {
    catalog: Arc<RwLock<Option<Arc<Catalog>>>>,
}

impl Versions {
    /// Read CRDs from `catalog`.
    pub fn set_catalog(&self, catalog: Arc<Catalog>) {
        if let Ok(mut c) = self.catalog.write() {
            *c = Some(catalog);
        }
    }

    fn crd(&self, attrs: &Attributes<'_>) -> Option<Arc<crate::registry::catalog::CompiledCrd>> {
        let d = attrs.requested();
        let catalog = self.catalog.read().ok()?.clone()?;
        catalog.lookup(&d.gr.group, &d.gr.resource)
    }

    /// The other served versions of the requested resource, in the CRD's order.
    pub fn equivalents(&self, attrs: &Attributes<'_>) -> Vec<String> {
        let requested = &attrs.requested().version;
        match self.crd(attrs) {
            Some(crd) => crd
                .versions
                .iter()
                .filter(|v| v.served && &v.name != requested)
                .map(|v| v.name.clone())
                .collect(),
            None => Vec::new(),
        }
    }

    /// The requested endpoint's descriptor in `version`.
    pub fn descriptor(attrs: &Attributes<'_>, version: &str) -> Descriptor {
        Descriptor {
            version: version.to_string(),
            ..attrs.requested().clone()
        }
    }

    /// `obj` (in any version of the requested resource; `null` passes as is) converted
    /// to `version`, with the CRD's strategy (`None`, or its conversion webhook).
    pub async fn convert(
        &self,
        attrs: &Attributes<'_>,
        obj: &Value,
        version: &str,
        services: &ServiceResolver,
    ) -> Result<Value, Status> {
        if obj.is_null() {
            return Ok(Value::Null);
        }
        // A subresource's own kind (a Scale) is the same in every version of its parent.
        if attrs.object_kind.is_some() {
            return Ok(obj.clone());
        }
        let Some(crd) = self.crd(attrs) else {
            return Ok(obj.clone());
        };
        let Some(target) = crd
            .versions
            .iter()
            .find(|v| v.name == version)
            .map(|v| v.schema())
        else {
            return Ok(obj.clone());
        };
        let mut out = obj.clone();
        if crd.conversion_webhook {
            crate::conversion::to_served_by_webhook(
                &crd,
                Some(services),
                &target,
                std::slice::from_mut(&mut out),
            )
            .await?;
        } else {
            crate::conversion::to_served(&crd, &target, &mut out);
        }
        Ok(out)
    }
}
