//! The server's shared state: storage, the CRD catalog, the built-in kinds, and
//! start-up (retried while storage is down). The loops that keep the state in step run
//! in `controllers/`: they wait on [`ApiServer::bootstrap_progress`], and deletions
//! that need cleanup (a terminating namespace or CRD) are queued here for them.

mod apiservices;
pub mod clock;
pub mod core_view;
mod params;

pub use apiservices::GROUP as APIREGISTRATION_GROUP;

use crate::admission::policy::{ParamReader, PolicyObject};
use crate::registry::catalog::Catalog;
use crate::rest::admission_policy::{AdmissionPolicyKind, GROUP};
use crate::rest::builtin::component_status::ComponentStatusKind;
use crate::rest::crd::CrdKind;
use crate::rest::custom_resource::CustomResourceKind;
use crate::rest::namespace::{NamespaceKind, SYSTEM_NAMESPACES};
use crate::rest::store::{decode_stored, Store};
use crate::rest::webhook_configuration::{WebhookConfigurationKind, WebhookPhase};
use crate::rest::{object, ResourceKind, WriteOptions};
use crate::status::{GroupResource, Status};
use crate::storage::{ListOptions, Storage};
use params::StoreParams;
use serde_json::{json, Value};
use std::sync::Arc;

/// Settings of a running API server that handlers consult.
#[derive(Clone, Debug, Default)]
pub struct ApiOptions {
    /// Storage key prefix (kube's `--etcd-prefix`, default `/registry`).
    pub prefix: String,
    /// Log each write's pipeline trace.
    pub log_pipeline: bool,
    /// `host:port` advertised in `/api` discovery.
    pub advertise_address: String,
    /// `--authorization-mode`, in order (empty: `AlwaysAllow`).
    pub authorization_modes: Vec<crate::auth::authz::Mode>,
    /// The issuer of service account tokens (the `serviceaccounts/token` subresource).
    pub service_account_tokens: Option<Arc<crate::auth::service_account::ServiceAccountTokens>>,
    /// `--service-cluster-ip-range` (empty: kube's default).
    pub service_cluster_ip_range: String,
    /// `--service-node-port-range` (empty: kube's default).
    pub service_node_port_range: String,
    /// The address and secure port the `kubernetes` Service's endpoints name (`None`:
    /// no `kubernetes` Service).
    pub kubernetes_endpoint: Option<std::net::SocketAddr>,
    /// kube's admission plugins on (`--enable-admission-plugins`,
    /// `--disable-admission-plugins`).
    pub admission_plugins: apimachinery::admission_plugins::Enabled,
    /// `--allow-privileged`: whether pod specs may ask for privileged containers.
    pub allow_privileged: bool,
    /// The built-in resources served (kube's defaults changed by `--runtime-config`).
    pub served: crate::registry::builtin::Served,
    /// `--authorization-kubeconfig`'s authorizer, used instead of the modes' (see
    /// `auth::delegated`).
    pub delegated_authorizer: Option<crate::auth::authz::Delegated>,
    /// What this server publishes in `kube-system/extension-apiserver-authentication`
    /// for aggregated servers behind it (its client CA and front-proxy settings).
    pub published_trust: Option<crate::auth::delegated::TrustedClients>,
    /// `--kubeconfig`: the core apiserver whose namespaces and admission configuration
    /// this server follows ([`core_view`]).
    pub core: Option<crate::remote::Client>,
    /// `--token-auth-file`'s tokens, which TokenReview knows too.
    pub token_file: Option<Arc<crate::auth::token::TokenFile>>,
    /// The aggregator's settings (`--proxy-client-cert-file`, `--enable-aggregator-routing`).
    pub aggregator: crate::aggregator::AggregatorOptions,
}

/// Shared state of one API server.
pub struct ApiServer {
    /// The generic object store.
    pub store: Store,
    /// Admission hooks (the same registry the store runs: register hooks here).
    pub admission: crate::admission::Admission,
    /// Served CRDs.
    pub catalog: Arc<Catalog>,
    /// The `customresourcedefinitions` kind.
    pub crds: Arc<CrdKind>,
    /// The `namespaces` kind.
    pub namespaces: Arc<NamespaceKind>,
    /// The `mutatingwebhookconfigurations` kind.
    pub mutating_webhooks: Arc<WebhookConfigurationKind>,
    /// The `validatingwebhookconfigurations` kind.
    pub validating_webhooks: Arc<WebhookConfigurationKind>,
    /// The `componentstatuses` kind (answered by probes, never stored).
    pub component_statuses: Arc<ComponentStatusKind>,
    /// Settings.
    pub options: ApiOptions,
    /// Roles and bindings, cached for the RBAC authorizer (filled in `RBAC` mode only).
    pub rbac: Arc<crate::auth::rbac::RbacRules>,
    /// The authorizer of `--authorization-mode` (the HTTP gate and access reviews ask it).
    pub authorizer: Arc<dyn crate::auth::authz::Authorizer>,
    /// Services' cluster IP and node port allocators.
    pub service_allocators: crate::rest::builtin::service::ServiceAllocators,
    /// The OpenAPI documents made from the catalog, kept until it changes.
    pub openapi: crate::registry::openapi::Documents,
    /// Snapshots of this server's store, when it can take them (set once at start).
    pub snapshots: std::sync::OnceLock<Arc<crate::snapshots::Snapshots>>,
    /// Every built-in kind by `(group, version, resource)` (`registry::builtin::resources()`).
    builtins: std::sync::RwLock<std::collections::HashMap<BuiltinKey, Arc<dyn ResourceKind>>>,
    /// The storage revision at which CRDs were loaded and system namespaces ensured
    /// (`None` until then: storage may be down at start-up). Controllers wait on it.
    bootstrapped: tokio::sync::watch::Sender<Option<i64>>,
    /// Stored CRDs that could not be decoded at start-up, by key, with the error:
    /// skipped (start-up goes on) and reported by `/readyz?verbose`.
    undecodable: std::sync::Mutex<std::collections::BTreeMap<String, String>>,
    /// Deletions waiting for the cleanup controller, and its end of the queue (taken
    /// once, when the controllers start; requests made earlier wait in the queue).
    cleanups: tokio::sync::mpsc::UnboundedSender<Cleanup>,
    cleanup_queue: std::sync::Mutex<Option<tokio::sync::mpsc::UnboundedReceiver<Cleanup>>>,
    /// What the autoregistration of local APIServices remembers between its passes.
    autoregistration: std::sync::Mutex<apiservices::Autoregistration>,
    /// Held for a whole autoregistration pass: passes never interleave (a pass that
    /// listed before a reset must not record what it saw as synced after it).
    autoregistration_pass: tokio::sync::Mutex<()>,
    /// The clock the opt-in cluster's timers read (advanced by tests).
    pub clock: clock::Clock,
    /// The core's namespaces and admission configuration (`--kubeconfig`).
    pub core_view: Option<Arc<core_view::CoreView>>,
    /// The APIServices served by backends, and how to reach them.
    pub aggregator: crate::aggregator::Aggregator,
}

/// A deletion the cleanup controller finishes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Cleanup {
    /// A terminating namespace: its objects go, then the namespace.
    Namespace(String),
    /// A terminating CRD: its custom resources go, then the CRD.
    Crd(String),
}

/// `(group, version, resource)` of a built-in kind.
type BuiltinKey = (&'static str, &'static str, &'static str);

/// What a resource request resolved to.
pub enum Resolved {
    /// A custom resource of a CRD version.
    Custom(Arc<CustomResourceKind>),
    /// A built-in kind.
    Builtin(Arc<dyn ResourceKind>),
}

impl Resolved {
    /// The kind as a trait object.
    pub fn kind(&self) -> &dyn ResourceKind {
        match self {
            Resolved::Custom(k) => k.as_ref(),
            Resolved::Builtin(k) => k.as_ref(),
        }
    }
}

impl ApiServer {
    /// Build the state over `storage`, load CRDs, create the system namespaces and
    /// start following CRD changes made by other servers on the same storage.
    pub async fn start(
        storage: Arc<dyn Storage>,
        options: ApiOptions,
    ) -> Result<Arc<ApiServer>, Status> {
        let catalog = Arc::new(Catalog::new());
        let store = Store::new(storage);
        let rbac = Arc::new(crate::auth::rbac::RbacRules::new(&options.prefix));
        let modes = match options.authorization_modes.as_slice() {
            [] => &[crate::auth::authz::Mode::AlwaysAllow][..],
            modes => modes,
        };
        let authorizer = match &options.delegated_authorizer {
            Some(delegated) => delegated.0.clone(),
            None => crate::auth::authz::build(
                modes,
                Arc::new(crate::auth::rbac::RbacAuthorizer::new(rbac.clone())),
            ),
        };
        let (cleanups, cleanup_queue) = tokio::sync::mpsc::unbounded_channel();
        let core_view = options
            .core
            .clone()
            .map(|client| Arc::new(core_view::CoreView::new(client)));
        let or_default = |flag: &str, default: &'static str| {
            if flag.is_empty() {
                default.to_string()
            } else {
                flag.to_string()
            }
        };
        let allocators = crate::service_alloc::Allocators::new(
            &or_default(
                &options.service_cluster_ip_range,
                crate::service_alloc::DEFAULT_SERVICE_CIDR,
            ),
            &or_default(
                &options.service_node_port_range,
                crate::service_alloc::DEFAULT_NODE_PORT_RANGE,
            ),
            rand::random(),
        )
        .map_err(|e| Status::bad_request(e.to_string()))?;
        let service_allocators = crate::rest::builtin::service::ServiceAllocators::new(
            allocators,
            store.clone(),
            &options.prefix,
        );
        let aggregator = crate::aggregator::Aggregator::new(options.aggregator.clone());
        let api = Arc::new(ApiServer {
            admission: store.admission.clone(),
            store,
            crds: Arc::new(CrdKind::new(&options.prefix, catalog.clone())),
            namespaces: Arc::new(NamespaceKind::new(&options.prefix)),
            mutating_webhooks: Arc::new(WebhookConfigurationKind::new(
                WebhookPhase::Mutating,
                &options.prefix,
            )),
            validating_webhooks: Arc::new(WebhookConfigurationKind::new(
                WebhookPhase::Validating,
                &options.prefix,
            )),
            component_statuses: Arc::new(ComponentStatusKind::new(&options.prefix)),
            catalog,
            options,
            rbac,
            authorizer,
            service_allocators,
            snapshots: Default::default(),
            openapi: Default::default(),
            builtins: Default::default(),
            bootstrapped: tokio::sync::watch::Sender::new(None),
            undecodable: Default::default(),
            cleanups,
            cleanup_queue: std::sync::Mutex::new(Some(cleanup_queue)),
            autoregistration: Default::default(),
            autoregistration_pass: tokio::sync::Mutex::new(()),
            clock: clock::Clock::default(),
            core_view,
            aggregator,
        });
        api.admission.set_authorizer(api.authorizer.clone());
        api.admission.set_catalog(api.catalog.clone());
        api.register_builtin(api.namespaces.clone());
        api.register_builtin(api.crds.clone());
        api.register_builtin(api.mutating_webhooks.clone());
        api.register_builtin(api.validating_webhooks.clone());
        api.register_builtin(api.component_statuses.clone());
        for which in [PolicyObject::Policy, PolicyObject::Binding] {
            let kind = AdmissionPolicyKind::new(which, &api.options.prefix)
                .with_schemas(api.catalog.clone());
            api.register_builtin(Arc::new(kind));
        }
        let policy_root = |which: PolicyObject| {
            crate::registry::builtin::descriptor(GROUP, which.resource(), &api.options.prefix)
                .key_root
        };
        // Admission configuration and namespaces: this server's own, or the core's
        // mirrored under the same keys.
        let (admission_storage, params): (Arc<dyn Storage>, Arc<dyn ParamReader>) =
            match &api.core_view {
                Some(view) => (view.storage.clone(), view.params.clone()),
                None => (
                    api.store.storage.clone(),
                    Arc::new(StoreParams {
                        api: Arc::downgrade(&api),
                    }),
                ),
            };
        if let Some(view) = &api.core_view {
            let mirrored = |path: &str, key_root: String| core_view::Mirrored {
                path: path.to_string(),
                key_root,
            };
            let admission = "/apis/admissionregistration.k8s.io/v1";
            view.follow(vec![
                mirrored(
                    "/api/v1/namespaces",
                    api.namespaces.descriptor().key_root.clone(),
                ),
                mirrored(
                    &format!("{admission}/validatingadmissionpolicies"),
                    policy_root(PolicyObject::Policy),
                ),
                mirrored(
                    &format!("{admission}/validatingadmissionpolicybindings"),
                    policy_root(PolicyObject::Binding),
                ),
                mirrored(
                    &format!("{admission}/mutatingwebhookconfigurations"),
                    api.mutating_webhooks.descriptor().key_root.clone(),
                ),
                mirrored(
                    &format!("{admission}/validatingwebhookconfigurations"),
                    api.validating_webhooks.descriptor().key_root.clone(),
                ),
            ]);
        }
        api.admission
            .policies
            .serve(crate::admission::policy::PolicyStorage {
                storage: admission_storage.clone(),
                policies_root: policy_root(PolicyObject::Policy),
                bindings_root: policy_root(PolicyObject::Binding),
                namespaces_root: api.namespaces.descriptor().key_root.clone(),
                params,
            });
        // Access, rules, token and self-subject reviews: served, never stored.
        let reviews = crate::rest::access_review::Review::ALL
            .iter()
            .map(|r| (crate::rest::access_review::GROUP, r.resource()))
            .chain(
                crate::rest::builtin::token_review::Review::ALL
                    .iter()
                    .map(|r| (crate::rest::builtin::token_review::GROUP, r.resource())),
            );
        for (group, resource) in reviews {
            let kind =
                crate::rest::answered::AnsweredKind::new(group, resource, &api.options.prefix);
            api.register_builtin(Arc::new(kind));
        }
        // The typed kinds controllers touch (ConfigMaps, Secrets, Events, Leases, ...).
        // RBAC kinds check escalation in `RBAC` mode; aggregated ClusterRoles follow.
        let escalation = api.rbac_enabled().then(|| {
            crate::rest::rbac::EscalationCheck::new(api.authorizer.clone(), api.rbac.clone())
        });
        // Every other stored kind is served from its schema.
        let served = api.options.served.clone();
        for r in served.resources() {
            if !r.is_stored() || api.builtin(r.group, r.version, r.resource).is_some() {
                continue;
            }
            let d = r.descriptor(&api.options.prefix);
            if let Some(kind) = crate::rest::builtin::kind_for(d.clone(), &r.definition) {
                api.register_builtin(Arc::new(kind));
            } else if let Some(kind) =
                crate::rest::rbac::kind_for(d.clone(), &r.definition, escalation.clone())
            {
                api.register_builtin(Arc::new(kind));
            } else if r.group.is_empty() && r.resource == "services" {
                let kind = crate::rest::builtin::service::ServiceKind::new(
                    crate::rest::builtin::schema_kind(
                        d,
                        &r.definition,
                        api.options.allow_privileged,
                    ),
                    api.service_allocators.clone(),
                );
                api.register_builtin(Arc::new(kind));
            } else {
                let kind = crate::rest::builtin::schema_kind(
                    d,
                    &r.definition,
                    api.options.allow_privileged,
                );
                api.register_builtin(Arc::new(kind));
            }
        }
        // Cluster IPs are taken as IPAddress objects.
        if let Some(kind) = api.builtin("networking.k8s.io", "v1", "ipaddresses") {
            api.service_allocators.serve_ip_addresses(kind);
        }
        api.admission
            .serve_builtin_plugins(crate::admission::plugins::Builtin::new(
                api.options.admission_plugins.clone(),
                api.store.storage.clone(),
                &api.plugin_keys(),
            ));
        api.admission
            .serve_webhooks(crate::admission::webhook::WebhookSource::new(
                admission_storage,
                &api.mutating_webhooks.descriptor().key_root,
                &api.validating_webhooks.descriptor().key_root,
                &api.namespaces.descriptor().key_root,
            ));
        match api.bootstrap().await {
            Ok(revision) => api.bootstrapped(revision),
            // Storage down at start-up: serve anyway (503s, /readyz failing) and keep trying.
            Err(s) if s.code == 503 || s.code == 504 => {
                tracing::warn!(error = %s.message, "storage unavailable at start-up; retrying");
                tokio::spawn(bootstrap_until_done(Arc::downgrade(&api)));
            }
            Err(s) => return Err(s),
        }
        Ok(api)
    }

    async fn bootstrap(&self) -> Result<i64, Status> {
        let revision = self.load_crds().await?;
        self.ensure_system_namespaces().await?;
        self.restore_service_allocations().await?;
        self.ensure_default_service_cidr().await?;
        self.ensure_kubernetes_service().await?;
        self.ensure_system_priority_classes().await?;
        self.publish_authentication_trust().await?;
        // kube's readiness waits for the built-in APIServices (`autoregister-completion`);
        // anything but storage being down is left to the autoregistration controller.
        match self.autoregister_api_services().await {
            Err(s) if s.code == 503 || s.code == 504 => return Err(s),
            _ => {}
        }
        if self.rbac_enabled() {
            self.serve_rbac().await?;
        }
        Ok(revision)
    }

    /// The authenticator of service account tokens (when tokens are issued here).
    pub fn token_authenticator(&self) -> Option<crate::auth::service_account::TokenAuthenticator> {
        Some(crate::auth::service_account::TokenAuthenticator {
            tokens: self.options.service_account_tokens.clone()?,
            storage: self.store.storage.clone(),
            prefix: self.options.prefix.clone(),
        })
    }

    /// Whether `--authorization-mode` includes `RBAC`.
    pub fn rbac_enabled(&self) -> bool {
        self.options
            .authorization_modes
            .contains(&crate::auth::authz::Mode::Rbac)
    }

    /// Create kube's bootstrap roles and bindings (those missing), then load every role
    /// and binding into the RBAC cache and follow their changes.
    async fn serve_rbac(&self) -> Result<(), Status> {
        self.create_bootstrap_rbac().await?;
        let storage = self.store.storage.clone();
        let revision = self.rbac.load(storage.as_ref()).await.map_err(|e| {
            crate::storage::storage_status(
                e,
                &GroupResource::new(crate::auth::rbac::GROUP, "clusterroles"),
                "",
            )
        })?;
        self.rbac.follow(storage, revision);
        Ok(())
    }

    /// Create kube's bootstrap roles and bindings that are missing.
    async fn create_bootstrap_rbac(&self) -> Result<(), Status> {
        for obj in crate::auth::rbac::bootstrap_policy() {
            let resource = match obj.get("kind").and_then(Value::as_str) {
                Some("ClusterRole") => "clusterroles",
                Some("ClusterRoleBinding") => "clusterrolebindings",
                Some("Role") => "roles",
                _ => continue,
            };
            let Some(kind) = self.builtin(crate::auth::rbac::GROUP, "v1", resource) else {
                continue;
            };
            self.create_missing(kind.as_ref(), obj).await?;
        }
        Ok(())
    }

    /// Put back what start-up creates, once storage was emptied under a running server
    /// (the harness's `reset()`): system namespaces, the service allocators' state, the
    /// default ServiceCIDR and `kubernetes` Service, the system PriorityClasses, the
    /// local APIServices (as at a new start) and, in RBAC mode, kube's bootstrap roles
    /// and bindings.
    pub async fn restore_bootstrap_objects(&self) -> Result<(), Status> {
        self.ensure_system_namespaces().await?;
        self.restore_service_allocations().await?;
        self.ensure_default_service_cidr().await?;
        self.ensure_kubernetes_service().await?;
        self.ensure_system_priority_classes().await?;
        self.publish_authentication_trust().await?;
        self.restart_api_service_autoregistration().await?;
        if self.rbac_enabled() {
            self.create_bootstrap_rbac().await?;
        }
        Ok(())
    }

    fn bootstrapped(&self, revision: i64) {
        self.bootstrapped.send_replace(Some(revision));
    }

    /// Start-up's progress: `Some(revision)` once CRDs are loaded (see
    /// [`wait_bootstrapped`]). The receiver does not keep the server alive.
    pub fn bootstrap_progress(&self) -> tokio::sync::watch::Receiver<Option<i64>> {
        self.bootstrapped.subscribe()
    }

    /// Stored objects start-up skipped because they could not be decoded (key, error).
    pub fn undecodable(&self) -> Vec<(String, String)> {
        self.undecodable
            .lock()
            .map(|u| u.iter().map(|(k, e)| (k.clone(), e.clone())).collect())
            .unwrap_or_default()
    }

    /// Whether start-up work against storage has completed (part of `/readyz`).
    pub fn is_bootstrapped(&self) -> bool {
        self.bootstrapped.borrow().is_some()
    }

    pub fn crd_prefix(&self) -> String {
        self.crds.descriptor().list_prefix("")
    }

    /// Load every stored CRD into the catalog; the revision they were read at.
    pub async fn load_crds(&self) -> Result<i64, Status> {
        let res = self
            .store
            .storage
            .list(&self.crd_prefix(), &ListOptions::default())
            .await
            .map_err(|e| crate::storage::storage_status(e, &self.crds.descriptor().gr, ""))?;
        let mut undecodable = std::collections::BTreeMap::new();
        for kv in &res.items {
            // One corrupt object must not keep the server from starting: skip it.
            let obj = match decode_stored(kv) {
                Ok(obj) => obj,
                Err(s) => {
                    tracing::error!(key = %kv.key, error = %s.message, "stored CRD cannot be decoded; skipped");
                    undecodable.insert(kv.key.clone(), s.message);
                    continue;
                }
            };
            if let Err(e) = self.catalog.upsert(obj, kv.mod_revision) {
                tracing::warn!(key = %kv.key, error = %e, "stored CRD cannot be served");
            }
        }
        if let Ok(mut u) = self.undecodable.lock() {
            *u = undecodable;
        }
        // A reload after missed (compacted) history must also drop CRDs deleted meanwhile.
        let stored: std::collections::HashSet<&str> = res
            .items
            .iter()
            .filter_map(|kv| kv.key.rsplit('/').next())
            .collect();
        for crd in self.catalog.all() {
            if !stored.contains(crd.name.as_str()) {
                self.catalog.remove(&crd.name, res.revision);
            }
        }
        Ok(res.revision)
    }

    /// Learn the taken cluster IPs and node ports from storage (IPAddresses, the node
    /// port range), filling in what stored Services hold and storage lacks.
    async fn restore_service_allocations(&self) -> Result<(), Status> {
        let Some(kind) = self.builtin("", "v1", "services") else {
            return Ok(());
        };
        let d = kind.descriptor();
        let res = self
            .store
            .storage
            .list(&d.list_prefix(""), &ListOptions::default())
            .await
            .map_err(|e| crate::storage::storage_status(e, &d.gr, ""))?;
        let services: Vec<Value> = res
            .items
            .iter()
            .filter_map(|kv| decode_stored(kv).ok())
            .collect();
        self.service_allocators.restore(&services).await
    }

    /// Create the default ServiceCIDR `kubernetes` (the `--service-cluster-ip-range`)
    /// when missing and mark it Ready when it has no Ready condition and matches the
    /// flag, as kube's default ServiceCIDR controller does.
    async fn ensure_default_service_cidr(&self) -> Result<(), Status> {
        use crate::service_alloc::{default_service_cidr, default_service_cidr_ready};
        let Some(kind) = self.builtin("networking.k8s.io", "v1", "servicecidrs") else {
            return Ok(());
        };
        let cidr = self.service_allocators.cidr();
        self.create_missing(kind.as_ref(), default_service_cidr(&cidr))
            .await?;
        let name = crate::service_alloc::DEFAULT_SERVICE_CIDR_NAME;
        let current = self.store.get(kind.as_ref(), "", name).await?;
        let has_ready = current
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Ready" && c["status"] != "Unknown")
            });
        let same = current.pointer("/spec/cidrs") == Some(&json!([cidr]));
        if has_ready || !same || crate::rest::object::is_terminating(&current) {
            return Ok(());
        }
        let opts = WriteOptions {
            subresource: "status".into(),
            field_manager: "kubernetes-service-cidr-controller".into(),
            ..Default::default()
        };
        let ready = default_service_cidr_ready(&crate::rest::object::now());
        let written = self
            .store
            .update(kind.as_ref(), "", name, &opts, false, |current| {
                let mut desired = current.clone();
                let mut conditions: Vec<Value> = current
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|c| c["type"] != "Ready")
                    .cloned()
                    .collect();
                conditions.push(ready.clone());
                desired["status"] = json!({"conditions": conditions});
                Ok(desired)
            })
            .await;
        if let Err(s) = written {
            tracing::warn!(error = %s.message, "the default ServiceCIDR Status can not be set to Ready=True");
        }
        Ok(())
    }

    /// Create kube's two system PriorityClasses when missing, as kube-apiserver's
    /// `scheduling/bootstrap-system-priority-classes` hook does.
    async fn ensure_system_priority_classes(&self) -> Result<(), Status> {
        let Some(kind) = self.builtin("scheduling.k8s.io", "v1", "priorityclasses") else {
            return Ok(());
        };
        let classes = [
            ("system-node-critical", 2_000_001_000_i64, "Used for system critical pods that must not be moved from their current node."),
            ("system-cluster-critical", 2_000_000_000, "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary."),
        ];
        for (name, value, description) in classes {
            let obj = serde_json::json!({
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
                "description": description,
            });
            self.create_missing(kind.as_ref(), obj).await?;
        }
        Ok(())
    }

    /// Create a bootstrap object unless it exists already.
    /// Write `kube-system/extension-apiserver-authentication` as kube-apiserver does
    /// at start: the client CA and front-proxy settings aggregated servers read.
    async fn publish_authentication_trust(&self) -> Result<(), Status> {
        let Some(trust) = &self.options.published_trust else {
            return Ok(());
        };
        let Some(kind) = self.builtin("", "v1", "configmaps") else {
            return Ok(());
        };
        let (namespace, name) = crate::auth::delegated::TRUST_CONFIG_MAP;
        let wanted = serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace},
            "data": trust.to_data(),
        });
        match self.store.get(kind.as_ref(), namespace, name).await {
            Ok(current) => {
                if current.get("data") == wanted.get("data") {
                    return Ok(());
                }
                self.store
                    .update(
                        kind.as_ref(),
                        namespace,
                        name,
                        &WriteOptions::default(),
                        false,
                        |old| {
                            let mut next = old.clone();
                            next["data"] = wanted["data"].clone();
                            Ok(next)
                        },
                    )
                    .await
                    .map(|_| ())
            }
            Err(s) if s.code == 404 => self.create_missing(kind.as_ref(), wanted).await,
            Err(s) => Err(s),
        }
    }

    async fn create_missing(&self, kind: &dyn ResourceKind, obj: Value) -> Result<(), Status> {
        match self.store.create(kind, obj, &WriteOptions::default()).await {
            Ok(_) => Ok(()),
            Err(s) if s.reason == "AlreadyExists" => Ok(()),
            Err(s) => Err(s),
        }
    }

    /// Create the `kubernetes` Service, its Endpoints and EndpointSlice in `default`
    /// when missing, as kube's bootstrap controller does.
    async fn ensure_kubernetes_service(&self) -> Result<(), Status> {
        use crate::rest::builtin::service;
        let Some(endpoint) = self.options.kubernetes_endpoint else {
            return Ok(());
        };
        let objects = [
            (
                "",
                "services",
                service::kubernetes_service(&self.service_allocators.first_ip(), endpoint.port()),
            ),
            ("", "endpoints", service::kubernetes_endpoints(endpoint)),
            (
                service::DISCOVERY_GROUP,
                "endpointslices",
                service::kubernetes_endpoint_slice(endpoint),
            ),
        ];
        for (group, resource, obj) in objects {
            let Some(kind) = self.builtin(group, "v1", resource) else {
                continue;
            };
            // An existing one is kept (its IP is taken already: a create would say so).
            match self
                .store
                .get(kind.as_ref(), service::KUBERNETES_NAMESPACE, "kubernetes")
                .await
            {
                Ok(_) => continue,
                Err(s) if s.code == 404 => {}
                Err(s) => return Err(s),
            }
            match self
                .store
                .create(kind.as_ref(), obj, &WriteOptions::default())
                .await
            {
                Ok(_) => {}
                Err(s) if s.reason == "AlreadyExists" => {}
                Err(s) if s.code == 422 => {
                    tracing::warn!(resource, error = %s.message, "the kubernetes Service's objects cannot be created");
                }
                Err(s) => return Err(s),
            }
        }
        Ok(())
    }

    async fn ensure_system_namespaces(&self) -> Result<(), Status> {
        for ns in SYSTEM_NAMESPACES {
            let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            match self
                .store
                .create(self.namespaces.as_ref(), body, &WriteOptions::default())
                .await
            {
                Ok(_) => {}
                Err(s) if s.reason == "AlreadyExists" => {}
                Err(s) => return Err(s),
            }
        }
        Ok(())
    }

    /// Serve a built-in kind; its resource must be in `registry::builtin::resources()`
    /// (where discovery and OpenAPI come from), else it is not served and a warning logged.
    /// A resource `--runtime-config` turned off is not served.
    pub fn register_builtin(&self, kind: Arc<dyn ResourceKind>) {
        let d = kind.descriptor();
        let Some(entry) = crate::registry::builtin::lookup(&d.gr.group, &d.version, &d.gr.resource)
        else {
            tracing::warn!(resource = %d.gr, "built-in kind missing from registry::builtin::resources(); not served");
            return;
        };
        if !self
            .options
            .served
            .serves(entry.group, entry.version, entry.resource)
        {
            return;
        }
        if let Ok(mut map) = self.builtins.write() {
            map.insert((entry.group, entry.version, entry.resource), kind);
        }
    }

    /// The built-in kind serving `group/version/resource`.
    pub fn builtin(
        &self,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Option<Arc<dyn ResourceKind>> {
        let entry = crate::registry::builtin::lookup(group, version, resource)?;
        let map = self.builtins.read().ok()?;
        map.get(&(entry.group, entry.version, entry.resource))
            .cloned()
    }

    /// Resolve the kind a resource request addresses, or kube's 404: go-restful's below
    /// a built-in group, the NotFound handler's plain text anywhere else.
    pub fn resolve(&self, group: &str, version: &str, resource: &str) -> Result<Resolved, Status> {
        if let Some(kind) = self.builtin(group, version, resource) {
            return Ok(Resolved::Builtin(kind));
        }
        if crate::registry::builtin::is_builtin_group(group) {
            return Err(Status::route_not_found());
        }
        let crd = self
            .catalog
            .lookup(group, resource)
            .ok_or_else(Status::page_not_found)?;
        let idx = crd
            .served_version(version)
            .ok_or_else(Status::page_not_found)?;
        Ok(Resolved::Custom(Arc::new(
            CustomResourceKind::new(crd, idx, &self.options.prefix)
                .with_services(self.admission.service_resolver()),
        )))
    }

    /// Where the kinds kube's admission plugins read are stored.
    fn plugin_keys(&self) -> crate::admission::plugins::Keys {
        let root = |group: &str, resource: &str| {
            self.builtin(group, "v1", resource)
                .map(|k| k.descriptor().key_root.clone())
                .unwrap_or_default()
        };
        crate::admission::plugins::Keys {
            service_accounts: root("", "serviceaccounts"),
            priority_classes: root("scheduling.k8s.io", "priorityclasses"),
            storage_classes: root("storage.k8s.io", "storageclasses"),
            ingress_classes: root("networking.k8s.io", "ingressclasses"),
            limit_ranges: root("", "limitranges"),
            resource_quotas: root("", "resourcequotas"),
            // Followed from the core when there is one (`core_view`).
            namespaces: if self.core_view.is_some() {
                String::new()
            } else {
                self.namespaces.descriptor().key_root.clone()
            },
        }
    }

    /// kube's NamespaceLifecycle admission: the namespace must exist and not be
    /// terminating (nothing is checked with the plugin off).
    pub async fn check_namespace(
        &self,
        namespace: &str,
        gr: &GroupResource,
        name: &str,
    ) -> Result<(), Status> {
        if !self.admission.plugin_enabled("NamespaceLifecycle") {
            return Ok(());
        }
        let not_found = || Status::not_found(&GroupResource::new("", "namespaces"), namespace);
        let terminating = if let Some(view) = &self.core_view {
            match view
                .namespace(&self.namespaces.descriptor().key_root, namespace)
                .await
            {
                Ok(Some(ns)) => object::is_terminating(&ns),
                Ok(None) => return Err(not_found()),
                Err(e) => return Err(Status::internal(e.to_string())),
            }
        } else if let Some(ns) = self
            .admission
            .cached_namespace(&self.namespaces.descriptor().key("", namespace))
        {
            // As kube's plugin: its informer's copy, looked up live only when missing.
            object::is_terminating(&ns)
        } else {
            match self
                .store
                .terminating(self.namespaces.as_ref(), "", namespace)
                .await
            {
                Ok(t) => t,
                Err(s) if s.code == 404 => return Err(not_found()),
                Err(s) => return Err(s),
            }
        };
        if terminating {
            let mut s = Status::forbidden(
                gr,
                name,
                &format!("unable to create new content in namespace {namespace} because it is being terminated"),
            );
            if let Some(d) = s.details.as_mut() {
                d.causes.push(crate::status::Cause {
                    reason: "NamespaceTerminating".into(),
                    message: format!("namespace {namespace} is being terminated"),
                    field: "metadata.namespace".into(),
                });
            }
            return Err(s);
        }
        Ok(())
    }

    /// Hooks after a successful write through this server (CRDs update the catalog).
    pub fn after_write(self: &Arc<Self>, d: &crate::rest::Descriptor, obj: &Value, deleted: bool) {
        // Most writes are of kinds no plugin follows (custom resources): no key made.
        if self.admission.builtin_follows(&d.key_root) {
            self.admission.builtin_written(
                &d.key(object::namespace(obj), object::name(obj)),
                obj,
                deleted,
            );
        }
        if d.gr == self.crds.descriptor().gr {
            self.crd_written(obj, deleted);
        }
        // Following the core, admission reads the core's configuration only.
        let own_admission = self.core_view.is_none();
        if own_admission && d.gr.group == crate::rest::webhook_configuration::GROUP {
            self.admission
                .webhook_configuration_written(&d.key_root, obj, deleted);
        }
        if d.gr.group == crate::auth::rbac::GROUP {
            let key = d.key(object::namespace(obj), object::name(obj));
            self.rbac.written(&key, obj, deleted);
        }
        for which in [PolicyObject::Policy, PolicyObject::Binding] {
            if own_admission && d.gr.group == GROUP && d.gr.resource == which.resource() {
                self.admission.policies.written(which, obj, deleted);
            }
        }
    }

    /// A change written to storage behind the REST layer's back (a snapshot restore):
    /// what follows storage (the CRD catalog, admission's caches, RBAC, policies)
    /// takes it in now, as after a write through this server, not when its watch
    /// would have told it.
    pub fn written_behind(self: &Arc<Self>, change: &crate::storage::Event) {
        let key = change.kv.key.as_str();
        let kinds: Vec<Arc<dyn ResourceKind>> = match self.builtins.read() {
            Ok(map) => map.values().cloned().collect(),
            Err(_) => return,
        };
        let own: [Arc<dyn ResourceKind>; 4] = [
            self.crds.clone(),
            self.namespaces.clone(),
            self.mutating_webhooks.clone(),
            self.validating_webhooks.clone(),
        ];
        let Some(kind) = own.into_iter().chain(kinds).find(|k| {
            key.strip_prefix(k.descriptor().key_root.as_str())
                .is_some_and(|rest| rest.starts_with('/'))
        }) else {
            // A custom resource: nothing follows those.
            return;
        };
        let Ok(mut obj) = decode_stored(&change.kv) else {
            return;
        };
        object::set_resource_version(&mut obj, change.kv.mod_revision);
        let deleted = change.kind == crate::storage::EventKind::Delete;
        self.after_write(kind.descriptor(), &obj, deleted);
    }

    /// Keep the catalog in step with a CRD write made through this server.
    pub fn crd_written(self: &Arc<Self>, crd: &Value, deleted: bool) {
        let rev = object::resource_version(crd).ok().flatten().unwrap_or(0);
        if deleted {
            self.catalog.remove(object::name(crd), rev);
            return;
        }
        if let Err(e) = self.catalog.upsert(crd.clone(), rev) {
            tracing::warn!(crd = object::name(crd), error = %e, "CRD cannot be served");
        }
        if object::is_terminating(crd) {
            self.cleanup(Cleanup::Crd(object::name(crd).to_string()));
        }
    }

    /// Queue the namespace cleanup after a namespace was marked terminating.
    pub fn namespace_terminating(&self, name: &str) {
        self.cleanup(Cleanup::Namespace(name.to_string()));
    }

    /// Queue a deletion for the cleanup controller.
    pub fn cleanup(&self, work: Cleanup) {
        // The queue outlives every sender's use: the receiver is dropped only when the
        // controller stops with the server.
        let _ = self.cleanups.send(work);
    }

    /// The cleanup queue, for the controller that works it (once).
    pub fn take_cleanup_queue(&self) -> Option<tokio::sync::mpsc::UnboundedReceiver<Cleanup>> {
        self.cleanup_queue.lock().ok()?.take()
    }
}

/// Wait until start-up is done: the storage revision CRDs were loaded at, or `None`
/// when the server went away first.
pub async fn wait_bootstrapped(
    mut progress: tokio::sync::watch::Receiver<Option<i64>>,
) -> Option<i64> {
    loop {
        if let Some(revision) = *progress.borrow_and_update() {
            return Some(revision);
        }
        progress.changed().await.ok()?;
    }
}

/// Retry the start-up work until storage answers.
async fn bootstrap_until_done(api: std::sync::Weak<ApiServer>) {
    loop {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let Some(api) = api.upgrade() else { return };
        if let Ok(revision) = api.bootstrap().await {
            tracing::info!("storage reachable; start-up completed");
            api.bootstrapped(revision);
            return;
        }
    }
}
