//! kube's built-in admission plugins, as kube-apiserver runs them before the webhooks:
//! ServiceAccount, Priority, DefaultTolerationSeconds, DefaultStorageClass,
//! StorageObjectInUseProtection and DefaultIngressClass mutate; Priority validates
//! PriorityClasses. What each does is in `apimachinery::admission_plugins`; this
//! module reads what they need from storage (ServiceAccounts, PriorityClasses,
//! StorageClasses, IngressClasses) and turns their denials into kube's 403s.

use super::Attributes;
use crate::status::Status;
use crate::storage::{ListOptions, Storage};
use crate::write::Operation;
use apimachinery::admission_plugins::{self as plugin, Enabled, PriorityClass};
use serde_json::Value;
use std::sync::Arc;

/// Where the kinds the plugins read are stored (their descriptors' key roots).
#[derive(Clone, Debug, Default)]
pub struct Keys {
    /// `serviceaccounts` (namespaced).
    pub service_accounts: String,
    /// `priorityclasses`.
    pub priority_classes: String,
    /// `storageclasses`.
    pub storage_classes: String,
    /// `ingressclasses`.
    pub ingress_classes: String,
}

/// The built-in plugins of one server: which run, and the storage they read.
pub struct Builtin {
    /// Plugins on (`--enable-admission-plugins`, `--disable-admission-plugins`).
    pub enabled: Enabled,
    /// The store they read.
    pub storage: Arc<dyn Storage>,
    /// Where.
    pub keys: Keys,
}

impl Builtin {
    async fn get(&self, key: &str) -> Result<Option<Value>, Status> {
        match self.storage.get(key).await {
            Ok(Some(kv)) => Ok(crate::codec::decode_stored_json::<Value>(&kv.value).ok()),
            Ok(None) => Ok(None),
            Err(e) => Err(Status::internal(e.to_string())),
        }
    }

    async fn list(&self, key_root: &str) -> Result<Vec<Value>, Status> {
        if key_root.is_empty() {
            return Ok(Vec::new());
        }
        let res = self
            .storage
            .list(&format!("{key_root}/"), &ListOptions::default())
            .await
            .map_err(|e| Status::internal(e.to_string()))?;
        Ok(res
            .items
            .iter()
            .filter_map(|kv| crate::codec::decode_stored_json::<Value>(&kv.value).ok())
            .collect())
    }

    /// The mutating plugins, in kube's order, on a create or update of `obj`.
    pub async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        obj: &mut Value,
        old: Option<&Value>,
    ) -> Result<(), Status> {
        if obj.is_null() || !attrs.opts.subresource.is_empty() {
            return Ok(());
        }
        let d = attrs.descriptor;
        let name = crate::object::name(obj).to_string();
        let forbidden = |msg: String| Status::forbidden(&d.gr, &name, &msg);
        let create = attrs.operation == Operation::Create;
        match (d.gr.group.as_str(), d.gr.resource.as_str()) {
            ("", "pods") => {
                if create && self.enabled.has("ServiceAccount") {
                    if let Some(sa_name) = plugin::pod_service_account(obj) {
                        let ns = crate::object::namespace(obj).to_string();
                        let key = format!("{}/{ns}/{sa_name}", self.keys.service_accounts);
                        match self.get(&key).await? {
                            Some(sa) => plugin::pod_service_account_admit(
                                obj,
                                &sa,
                                &crate::object::generate_name(""),
                            ),
                            None => {
                                return Err(forbidden(plugin::service_account_missing(
                                    &ns, &sa_name,
                                )))
                            }
                        }
                    }
                }
                if self.enabled.has("Priority") {
                    match (create, old) {
                        (true, _) => {
                            let class = match plugin::pod_priority_class_name(obj) {
                                Some(class) => {
                                    let key = format!("{}/{class}", self.keys.priority_classes);
                                    match self.get(&key).await? {
                                        Some(pc) => Some(PriorityClass::of(&pc)),
                                        None => {
                                            return Err(forbidden(plugin::priority_class_missing(
                                                &class,
                                            )))
                                        }
                                    }
                                }
                                None => plugin::default_priority_class(
                                    &self.list(&self.keys.priority_classes).await?,
                                ),
                            };
                            plugin::pod_priority_admit_create(obj, class.as_ref())
                                .map_err(|e| forbidden(e.to_string()))?;
                        }
                        (false, Some(old)) => plugin::pod_priority_admit_update(obj, old),
                        (false, None) => {}
                    }
                }
                if self.enabled.has("DefaultTolerationSeconds") {
                    plugin::pod_default_tolerations(obj);
                }
            }
            ("", "persistentvolumeclaims")
                if create
                    && self.enabled.has("DefaultStorageClass")
                    && plugin::claim_without_class(obj) =>
            {
                let classes = self.list(&self.keys.storage_classes).await?;
                plugin::claim_default_class(obj, &classes);
            }
            ("networking.k8s.io", "ingresses")
                if create && self.enabled.has("DefaultIngressClass") =>
            {
                let classes = self.list(&self.keys.ingress_classes).await?;
                plugin::ingress_default_class(obj, &classes);
            }
            _ => {}
        }
        if create && self.enabled.has("StorageObjectInUseProtection") {
            if let Some(f) = plugin::protection_finalizer(&d.gr.group, &d.gr.resource) {
                plugin::add_finalizer(obj, f);
            }
        }
        Ok(())
    }

    /// The validating plugins: Priority allows one global default PriorityClass.
    pub async fn validate(&self, attrs: &Attributes<'_>, obj: &Value) -> Result<(), Status> {
        let d = attrs.descriptor;
        if obj.is_null()
            || !attrs.opts.subresource.is_empty()
            || (d.gr.group.as_str(), d.gr.resource.as_str())
                != ("scheduling.k8s.io", "priorityclasses")
            || !self.enabled.has("Priority")
            || obj.get("globalDefault").and_then(Value::as_bool) != Some(true)
        {
            return Ok(());
        }
        let name = crate::object::name(obj);
        let classes = self.list(&self.keys.priority_classes).await?;
        if let Some(existing) = plugin::default_priority_class(&classes) {
            if attrs.operation == Operation::Create || existing.name != name {
                return Err(Status::forbidden(
                    &d.gr,
                    name,
                    &plugin::priority_class_second_default(&existing.name),
                ));
            }
        }
        Ok(())
    }
}
