//! kube's built-in admission plugins, as kube-apiserver runs them around the webhooks:
//! LimitRanger, ServiceAccount, Priority, DefaultTolerationSeconds,
//! DefaultStorageClass, StorageObjectInUseProtection and DefaultIngressClass mutate
//! before them; LimitRanger and Priority validate before them, ResourceQuota after
//! them (writing the quotas' new usage). What each does is in
//! `apimachinery::admission_plugins`; this module reads what they need from storage
//! (ServiceAccounts, PriorityClasses, Storage- and IngressClasses, LimitRanges,
//! ResourceQuotas) and turns their denials into kube's 403s.

use super::followed::Followed;
use super::Attributes;
use crate::status::Status;
use crate::storage::Storage;
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
    /// `namespaces`, for NamespaceLifecycle (empty when they are a core's).
    pub namespaces: String,
    /// `limitranges` (namespaced).
    pub limit_ranges: String,
    /// `resourcequotas` (namespaced).
    pub resource_quotas: String,
}

/// The built-in plugins of one server: which run, and the collections they read
/// (followed in memory, as kube's plugins read informers).
pub struct Builtin {
    /// Plugins on (`--enable-admission-plugins`, `--disable-admission-plugins`).
    pub enabled: Enabled,
    storage: Arc<dyn Storage>,
    service_accounts: Arc<Followed>,
    priority_classes: Arc<Followed>,
    storage_classes: Arc<Followed>,
    ingress_classes: Arc<Followed>,
    limit_ranges: Arc<Followed>,
    resource_quotas: Arc<Followed>,
    namespaces: Arc<Followed>,
}

impl Builtin {
    /// The plugins `enabled`, reading `storage` where `keys` say (a collection no
    /// plugin on reads is not followed).
    pub fn new(enabled: Enabled, storage: Arc<dyn Storage>, keys: &Keys) -> Builtin {
        let follow = |plugin: &str, root: &str| {
            let root = if enabled.has(plugin) { root } else { "" };
            Followed::start(storage.clone(), root)
        };
        Builtin {
            service_accounts: follow("ServiceAccount", &keys.service_accounts),
            priority_classes: follow("Priority", &keys.priority_classes),
            storage_classes: follow("DefaultStorageClass", &keys.storage_classes),
            ingress_classes: follow("DefaultIngressClass", &keys.ingress_classes),
            limit_ranges: follow("LimitRanger", &keys.limit_ranges),
            resource_quotas: follow("ResourceQuota", &keys.resource_quotas),
            namespaces: follow("NamespaceLifecycle", &keys.namespaces),
            enabled,
            storage,
        }
    }

    /// An object was written through this server (`None`: deleted).
    pub fn written(&self, key: &str, revision: i64, object: Option<&Value>) {
        for f in self.followed() {
            f.written(key, revision, object);
        }
    }

    /// Whether any plugin follows the objects of the kind stored under `key_root`.
    pub fn follows(&self, key_root: &str) -> bool {
        self.followed().iter().any(|f| f.may_hold(key_root))
    }

    fn followed(&self) -> [&Followed; 7] {
        [
            &self.service_accounts,
            &self.priority_classes,
            &self.storage_classes,
            &self.ingress_classes,
            &self.limit_ranges,
            &self.resource_quotas,
            &self.namespaces,
        ]
    }

    /// The namespace stored at `key` as NamespaceLifecycle last saw it; `None` when
    /// only storage can tell (kube's plugin looks a namespace missing from its
    /// informer up live too).
    pub fn cached_namespace(&self, key: &str) -> Option<Arc<Value>> {
        self.namespaces.cached(key)
    }

    /// The object named `name` under `sub`: the cache, else storage (kube's plugins
    /// look a missing one up live too).
    async fn named(f: &Followed, sub: &str, name: &str) -> Result<Option<Arc<Value>>, Status> {
        for fresh in [false, true] {
            let found = f
                .under(sub, fresh)
                .await?
                .into_iter()
                .find(|e| crate::object::name(&e.object) == name);
            if let Some(e) = found {
                return Ok(Some(e.object));
            }
        }
        Ok(None)
    }

    async fn objects(f: &Followed, sub: &str) -> Result<Vec<Value>, Status> {
        Ok(f.under(sub, false)
            .await?
            .into_iter()
            .map(|e| (*e.object).clone())
            .collect())
    }

    /// The mutating plugins, in kube's order, on a create or update of `obj`; whether
    /// any ran (and may have changed it).
    pub async fn mutate(
        &self,
        attrs: &Attributes<'_>,
        obj: &mut Value,
        old: Option<&Value>,
    ) -> Result<bool, Status> {
        if obj.is_null() || !attrs.opts.subresource.is_empty() {
            return Ok(false);
        }
        let mut ran = true;
        let d = attrs.descriptor;
        let name = crate::object::name(obj).to_string();
        let forbidden = |msg: String| Status::forbidden(&d.gr, &name, &msg);
        let create = attrs.operation == Operation::Create;
        match (d.gr.group.as_str(), d.gr.resource.as_str()) {
            ("", "pods") => {
                if create && self.enabled.has("LimitRanger") {
                    let ns = crate::object::namespace(obj).to_string();
                    let ranges = Self::objects(&self.limit_ranges, &format!("{ns}/")).await?;
                    plugin::limits::mutate_pod(obj, &ranges);
                }
                if create && self.enabled.has("ServiceAccount") {
                    if let Some(sa_name) = plugin::pod_service_account(obj) {
                        let ns = crate::object::namespace(obj).to_string();
                        let sub = format!("{ns}/{sa_name}");
                        match Self::named(&self.service_accounts, &sub, &sa_name).await? {
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
                                    match Self::named(&self.priority_classes, &class, &class)
                                        .await?
                                    {
                                        Some(pc) => Some(PriorityClass::of(&pc)),
                                        None => {
                                            return Err(forbidden(plugin::priority_class_missing(
                                                &class,
                                            )))
                                        }
                                    }
                                }
                                None => plugin::default_priority_class(
                                    &Self::objects(&self.priority_classes, "").await?,
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
                let classes = Self::objects(&self.storage_classes, "").await?;
                plugin::claim_default_class(obj, &classes);
            }
            ("networking.k8s.io", "ingresses")
                if create && self.enabled.has("DefaultIngressClass") =>
            {
                let classes = Self::objects(&self.ingress_classes, "").await?;
                plugin::ingress_default_class(obj, &classes);
            }
            _ => ran = false,
        }
        if create && self.enabled.has("StorageObjectInUseProtection") {
            if let Some(f) = plugin::protection_finalizer(&d.gr.group, &d.gr.resource) {
                plugin::add_finalizer(obj, f);
                ran = true;
            }
        }
        Ok(ran)
    }

    /// The validating plugins before the webhooks: LimitRanger bounds pods and claims,
    /// Priority allows one global default PriorityClass.
    pub async fn validate(
        &self,
        attrs: &Attributes<'_>,
        obj: &Value,
        old: Option<&Value>,
    ) -> Result<(), Status> {
        let d = attrs.descriptor;
        let (group, resource) = (d.gr.group.as_str(), d.gr.resource.as_str());
        let limited = group.is_empty()
            && ((resource == "pods"
                && (attrs.operation == Operation::Create || attrs.opts.subresource == "resize"))
                || (resource == "persistentvolumeclaims" && attrs.opts.subresource.is_empty()));
        let old_terminating = old.is_some_and(crate::object::is_terminating);
        if limited && !obj.is_null() && !old_terminating && self.enabled.has("LimitRanger") {
            let ns = crate::object::namespace(obj).to_string();
            let ranges = Self::objects(&self.limit_ranges, &format!("{ns}/")).await?;
            plugin::limits::validate(resource, obj, &ranges)
                .map_err(|e| Status::forbidden(&d.gr, crate::object::name(obj), &e.to_string()))?;
        }
        self.validate_priority_class(attrs, obj).await
    }

    /// ResourceQuota, after the webhooks: each quota of the namespace that tracks
    /// what the write uses must allow it; their usage is then written.
    pub async fn quota(
        &self,
        attrs: &Attributes<'_>,
        obj: &Value,
        old: Option<&Value>,
    ) -> Result<(), Status> {
        let d = attrs.descriptor;
        let sub = attrs.opts.subresource.as_str();
        if obj.is_null()
            || !self.enabled.has("ResourceQuota")
            || !d.namespaced
            || !(sub.is_empty() || sub == "status" || sub == "resize")
        {
            return Ok(());
        }
        let ns = crate::field::concat(&[crate::object::namespace(obj), "/"]);
        let name = crate::object::name(obj).to_string();
        for attempt in 0..8 {
            // The cache first; after a conflict, storage itself.
            let quotas = self.resource_quotas.under(&ns, attempt > 0).await?;
            let mut writes = Vec::new();
            for entry in quotas {
                let decision = plugin::quota::admit(
                    &entry.object,
                    &d.gr.group,
                    &d.gr.resource,
                    obj,
                    old,
                    sub == "status",
                )
                .map_err(|e| Status::forbidden(&d.gr, &name, &e.to_string()))?;
                if let Some(used) = decision {
                    writes.push((entry, used));
                }
            }
            if attrs.opts.dry_run {
                return Ok(());
            }
            let mut conflicted = false;
            for (entry, used) in writes {
                let mut q = (*entry.object).clone();
                if let Some(status) = q.get_mut("status").and_then(Value::as_object_mut) {
                    status.insert("used".into(), plugin::resources::to_json(&used));
                }
                crate::object::meta_mut(&mut q).remove("resourceVersion");
                let bytes = serde_json::to_vec(&q).map_err(|e| Status::internal(e.to_string()))?;
                match self.storage.update(&entry.key, bytes, entry.revision).await {
                    Ok(kv) => {
                        self.resource_quotas
                            .written(&entry.key, kv.mod_revision, Some(&q));
                    }
                    Err(crate::storage::StorageError::Conflict { .. }) => {
                        conflicted = true;
                        break;
                    }
                    Err(e) => return Err(Status::internal(e.to_string())),
                }
            }
            if !conflicted {
                return Ok(());
            }
        }
        Err(Status::internal(format!(
            "resource quota evaluation timed out for {}",
            d.gr.resource
        )))
    }

    /// Priority allows one global default PriorityClass.
    async fn validate_priority_class(
        &self,
        attrs: &Attributes<'_>,
        obj: &Value,
    ) -> Result<(), Status> {
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
        let classes = Self::objects(&self.priority_classes, "").await?;
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
