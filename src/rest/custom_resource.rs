//! Custom resources: every write runs the pipeline of the CRD version it addresses.

use super::{Conversion, Descriptor, ResourceKind, Strategy};
use crate::conversion;
use crate::pipeline::VersionSchema;
use crate::registry::catalog::CompiledCrd;
use crate::webhook::client::ServiceResolver;
use serde_json::Value;
use std::sync::Arc;

/// One served version of one CRD, as a resource kind.
pub struct CustomResourceKind {
    crd: Arc<CompiledCrd>,
    version: usize,
    /// The version's compiled schema, taken from the CRD when a stage first needs it.
    schema: std::sync::OnceLock<Arc<VersionSchema>>,
    descriptor: Arc<Descriptor>,
    /// Strategy `Webhook` (else `None`: conversion without IO).
    webhook: bool,
    /// Where a conversion webhook's Service is reached (set for strategy `Webhook`).
    services: Option<ServiceResolver>,
}

impl CustomResourceKind {
    /// The kind for `crd`'s version at index `version`.
    pub fn new(crd: Arc<CompiledCrd>, version: usize, prefix: &str) -> Self {
        let descriptor = crd.descriptor(version, prefix);
        CustomResourceKind {
            webhook: crd.conversion_webhook,
            services: None,
            crd,
            version,
            schema: std::sync::OnceLock::new(),
            descriptor,
        }
    }

    /// Reach a conversion webhook's `clientConfig.service` through `services` (only
    /// kept when the CRD converts by webhook).
    pub fn with_services(mut self, services: &ServiceResolver) -> Self {
        if self.webhook {
            self.services = Some(services.clone());
        }
        self
    }

    /// The compiled schema of the addressed version.
    pub fn schema(&self) -> &VersionSchema {
        self.schema
            .get_or_init(|| self.crd.versions[self.version].schema())
    }

    /// Whether the addressed version is the one objects are stored in.
    fn addresses_storage_version(&self) -> bool {
        self.crd.versions[self.version].storage
    }

    /// The addressed version's deprecation warning, when it is deprecated.
    pub fn deprecation_warning(&self) -> Option<&str> {
        self.crd.versions[self.version]
            .deprecation_warning
            .as_deref()
    }

    /// The CRD this kind belongs to.
    pub fn crd(&self) -> &Arc<CompiledCrd> {
        &self.crd
    }
}

impl ResourceKind for CustomResourceKind {
    fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    fn strategy(&self) -> &dyn Strategy {
        self.schema()
    }

    fn to_storage<'a>(&'a self, obj: &'a mut Value) -> Conversion<'a> {
        if self.webhook {
            return Conversion::Pending(Box::pin(conversion::to_storage_by_webhook(
                &self.crd,
                self.services.as_ref(),
                obj,
            )));
        }
        // What is stored was decoded (a write's pipeline) or served (a read) under the
        // addressed version's schema: when that is the storage version, it is already
        // the storage form, and pruning it again would change nothing.
        if !self.addresses_storage_version() {
            conversion::to_storage(&self.crd, obj);
        }
        Conversion::done(Ok(()))
    }

    fn on_read<'a>(&'a self, obj: &'a mut Value) -> Conversion<'a> {
        self.on_read_all(std::slice::from_mut(obj))
    }

    fn on_written<'a>(&'a self, obj: &'a mut Value) -> Conversion<'a> {
        if self.stored_is_served() {
            return Conversion::done(Ok(()));
        }
        self.on_read(obj)
    }

    fn stored_is_served(&self) -> bool {
        // Written in the addressed version, pruned and defaulted by its schema: a read
        // would serve it unchanged.
        !self.webhook && self.addresses_storage_version()
    }

    fn served_form(&self) -> Option<(i64, usize)> {
        // The CRD's revision changes with any change of its schemas or versions.
        (!self.webhook).then_some((self.crd.revision, self.version))
    }

    fn on_read_all<'a>(&'a self, objs: &'a mut [Value]) -> Conversion<'a> {
        if self.webhook {
            return Conversion::Pending(Box::pin(conversion::to_served_by_webhook(
                &self.crd,
                self.services.as_ref(),
                self.schema(),
                objs,
            )));
        }
        for obj in objs {
            conversion::to_served(&self.crd, self.schema(), obj);
        }
        Conversion::done(Ok(()))
    }
}
