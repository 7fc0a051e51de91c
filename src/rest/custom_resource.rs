//! Custom resources: every write runs the pipeline of the CRD version it addresses.

use super::{Admitted, Conversion, Descriptor, ResourceKind, WriteOptions};
use crate::conversion;
use crate::pipeline::{self, VersionSchema};
use crate::registry::catalog::CompiledCrd;
use crate::status::Status;
use crate::webhook::client::ServiceResolver;
use serde_json::Value;
use std::sync::Arc;

/// One served version of one CRD, as a resource kind.
pub struct CustomResourceKind {
    crd: Arc<CompiledCrd>,
    version: usize,
    descriptor: Descriptor,
    /// Strategy `Webhook` (else `None`: conversion without IO).
    webhook: bool,
    /// Where a conversion webhook's Service is reached (set for strategy `Webhook`).
    services: Option<ServiceResolver>,
}

impl CustomResourceKind {
    /// The kind for `crd`'s version at index `version`.
    pub fn new(crd: Arc<CompiledCrd>, version: usize, prefix: &str) -> Self {
        let info = &crd.info;
        let v = &crd.versions[version];
        let descriptor = Descriptor {
            gr: crate::status::GroupResource::new(&info.group, &info.plural),
            version: v.schema.version.clone(),
            kind: info.kind.clone(),
            list_kind: info.list_kind.clone(),
            singular: info.singular.clone(),
            namespaced: info.namespaced,
            key_root: format!("{prefix}/{}/{}", info.group, info.plural),
            status_subresource: v.schema.status_subresource,
            has_generation: true,
        };
        CustomResourceKind {
            webhook: crd.conversion_webhook,
            services: None,
            crd,
            version,
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
        &self.crd.versions[self.version].schema
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

    fn allow_unconditional_update(&self) -> bool {
        false
    }

    fn admit_create(&self, obj: Value, opts: &WriteOptions) -> Result<Admitted, Status> {
        pipeline::create(obj, self.schema(), opts)
    }

    fn admit_update(
        &self,
        new: Value,
        old: &Value,
        opts: &WriteOptions,
    ) -> Result<Admitted, Status> {
        pipeline::update(new, old, self.schema(), opts)
    }

    fn create_mutating_input(&self, obj: Value, opts: &WriteOptions) -> Result<Admitted, Status> {
        pipeline::create_mutating_input(obj, self.schema(), opts)
    }

    fn create_after_admission(
        &self,
        input: Admitted,
        opts: &WriteOptions,
    ) -> Result<Admitted, Status> {
        pipeline::create_after_admission(input, self.schema(), opts)
    }

    fn update_mutating_input(
        &self,
        new: Value,
        old: &Value,
        opts: &WriteOptions,
    ) -> Result<Admitted, Status> {
        pipeline::update_mutating_input(new, old, self.schema(), opts)
    }

    fn update_after_admission(
        &self,
        input: Admitted,
        old: &Value,
        opts: &WriteOptions,
    ) -> Result<Admitted, Status> {
        pipeline::update_after_admission(input, old, self.schema(), opts)
    }

    fn merge_schema(&self) -> &crate::schema::structural::Structural {
        &self.schema().structural
    }

    fn to_storage<'a>(&'a self, obj: &'a mut Value) -> Conversion<'a> {
        if self.webhook {
            return Conversion::Pending(Box::pin(conversion::to_storage_by_webhook(
                &self.crd,
                self.services.as_ref(),
                obj,
            )));
        }
        conversion::to_storage(&self.crd, obj);
        Conversion::done(Ok(()))
    }

    fn on_read<'a>(&'a self, obj: &'a mut Value) -> Conversion<'a> {
        self.on_read_all(std::slice::from_mut(obj))
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

    fn printer_columns(&self) -> Vec<crate::table::PrinterColumn> {
        self.crd.versions[self.version].printer_columns.clone()
    }

    fn field_value(&self, obj: &Value, field: &str) -> Result<Option<String>, String> {
        crate::selector::fields::cr_field_value(
            obj,
            field,
            &self.crd.versions[self.version].selectable_fields,
        )
    }
}
