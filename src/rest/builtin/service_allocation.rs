//! Where Services' cluster IPs and node ports are kept, so that every server on one
//! storage hands each out once, as kube v1.36 does:
//!
//! - a cluster IP is taken by creating the `IPAddress` object named by it
//!   (`service_alloc::ip_address`: kube's labels, the Service as `parentRef`); an
//!   `AlreadyExists` means someone holds it. Deleting the object gives it back.
//! - node ports are kube's `RangeAllocation` bitmap at `<prefix>/ranges/servicenodeports`,
//!   read and written back with compare-and-swap on its revision.
//!
//! What a write takes is planned by `service_alloc` (pure) on a view: the node port
//! bitmap as just read, and the cluster IPs this server knows are taken (kube's
//! informer cache of IPAddresses; refreshed from storage when a plan fails, and
//! corrected by every `AlreadyExists`). A dry run plans and takes nothing; whatever a
//! failed attempt took is given back before the next.

use crate::rest::store::{decode_stored, encode_for_storage, Store};
use crate::rest::{DeleteOptions, Reservation, ResourceKind, WriteOptions};
use crate::service_alloc::{self, Allocators, PortRange};
use crate::status::{GroupResource, Status};
use crate::storage::{ListOptions, Revision, Storage, StorageError};
use serde_json::Value;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// How often a write plans again after losing a race (another server's write of the
/// node port range, or of an IPAddress it chose).
const MAX_ATTEMPTS: usize = 200;

/// The field manager of the objects the allocator writes (kube's loopback client).
const FIELD_MANAGER: &str = "kube-apiserver";

/// The cluster IP and node port allocators of one server, kept in storage.
#[derive(Clone)]
pub struct ServiceAllocators(Arc<Inner>);

struct Inner {
    /// The ranges, and the cluster IPs this server knows are taken.
    view: Mutex<Allocators>,
    /// One node port read-modify-write at a time in this server (other servers
    /// serialize with it through the revision).
    port_writes: tokio::sync::Mutex<()>,
    store: Store,
    storage: Arc<dyn Storage>,
    /// The key of the node port `RangeAllocation`.
    range_key: String,
    /// The `ipaddresses` kind (set when it is registered).
    ip_kind: OnceLock<Arc<dyn ResourceKind>>,
}

fn range_resource() -> GroupResource {
    GroupResource::new("", "rangeallocations")
}

impl ServiceAllocators {
    /// Allocators over `--service-cluster-ip-range` and `--service-node-port-range`,
    /// kept in `store` under the storage `prefix`.
    pub fn new(allocators: Allocators, store: Store, prefix: &str) -> Self {
        ServiceAllocators(Arc::new(Inner {
            view: Mutex::new(allocators),
            port_writes: tokio::sync::Mutex::new(()),
            storage: store.storage.clone(),
            store,
            range_key: format!("{prefix}/{}", service_alloc::NODE_PORT_RANGE_KEY),
            ip_kind: OnceLock::new(),
        }))
    }

    /// The `ipaddresses` kind the cluster IPs are written through.
    pub fn serve_ip_addresses(&self, kind: Arc<dyn ResourceKind>) {
        let _ = self.0.ip_kind.set(kind);
    }

    fn view(&self) -> MutexGuard<'_, Allocators> {
        self.0.view.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The first address of the range: the `kubernetes` Service's.
    pub fn first_ip(&self) -> String {
        self.view().ips.first().to_string()
    }

    /// `--service-cluster-ip-range`, as kube prints it.
    pub fn cidr(&self) -> String {
        self.view().ips.cidr().to_string()
    }

    fn ip_kind(&self) -> Result<&dyn ResourceKind, Status> {
        self.0
            .ip_kind
            .get()
            .map(|k| k.as_ref())
            .ok_or_else(|| Status::internal("the ipaddresses resource is not served"))
    }

    /// At start-up: learn the taken cluster IPs from the stored IPAddresses, give the
    /// stored Services' IPs their IPAddress when missing (kube's repair loop), and
    /// store the node port range when none is stored yet (from the stored Services).
    pub async fn restore(&self, services: &[Value]) -> Result<(), Status> {
        self.refresh_ips().await?;
        for svc in services {
            let held = Allocators::release_of(svc);
            for ip in held.release_ips {
                let known = {
                    let view = self.view();
                    !view.ips.contains(ip) || view.ips.has(ip)
                };
                if known {
                    continue;
                }
                match self.create_ip(ip, svc).await {
                    Ok(()) => {}
                    Err(s) if s.reason == "AlreadyExists" => {}
                    Err(s) => return Err(s),
                }
                let _ = self.view().ips.allocate(ip);
            }
        }
        if self.read_ports().await?.1.is_none() {
            let mut ports = self.view().ports.clone();
            for svc in services {
                for port in Allocators::release_of(svc).release_ports {
                    let _ = ports.allocate(port);
                }
            }
            self.write_ports(&ports, None).await?;
        }
        Ok(())
    }

    /// Marks taken exactly the range's addresses that have an IPAddress in storage.
    async fn refresh_ips(&self) -> Result<(), Status> {
        let kind = self.ip_kind()?;
        let d = kind.descriptor();
        let res = self
            .0
            .storage
            .list(&d.list_prefix(""), &ListOptions::default())
            .await
            .map_err(|e| crate::storage::storage_status(e, &d.gr, ""))?;
        let taken: Vec<Ipv4Addr> = res
            .items
            .iter()
            .filter_map(|kv| kv.key.rsplit('/').next()?.parse().ok())
            .collect();
        let mut view = self.view();
        view.ips.clear();
        for ip in taken {
            let _ = view.ips.allocate(ip);
        }
        Ok(())
    }

    /// The stored node port range and its revision (`None`: not stored yet, all free).
    async fn read_ports(&self) -> Result<(PortRange, Option<Revision>), Status> {
        let range = self.view().ports.range();
        let mut ports = PortRange::parse(&range).map_err(|e| Status::internal(e.to_string()))?;
        let stored = self
            .0
            .storage
            .get(&self.0.range_key)
            .await
            .map_err(|e| crate::storage::storage_status(e, &range_resource(), ""))?;
        let Some(kv) = stored else {
            return Ok((ports, None));
        };
        let obj = decode_stored(&kv)?;
        ports.restore(&obj).map_err(|e| {
            Status::internal(format!("unable to refresh the port allocations: {e}"))
        })?;
        Ok((ports, Some(kv.mod_revision)))
    }

    /// Stores the node port range over `revision`; `false` when someone wrote it first.
    async fn write_ports(
        &self,
        ports: &PortRange,
        revision: Option<Revision>,
    ) -> Result<bool, Status> {
        let bytes = encode_for_storage(&service_alloc::node_port_range(ports));
        let written = match revision {
            None => self.0.storage.create(&self.0.range_key, bytes).await,
            Some(rev) => self.0.storage.update(&self.0.range_key, bytes, rev).await,
        };
        match written {
            Ok(_) => Ok(true),
            Err(StorageError::Conflict { .. } | StorageError::AlreadyExists(_)) => Ok(false),
            Err(e) => Err(crate::storage::storage_status(e, &range_resource(), "")),
        }
    }

    /// Takes `ip` for `svc`: creates its IPAddress.
    async fn create_ip(&self, ip: Ipv4Addr, svc: &Value) -> Result<(), Status> {
        let opts = WriteOptions {
            field_manager: FIELD_MANAGER.into(),
            ..Default::default()
        };
        self.0
            .store
            .create(self.ip_kind()?, service_alloc::ip_address(ip, svc), &opts)
            .await
            .map(|_| ())
    }

    /// Fills and takes what a create (`old`: `None`) or an update of `obj` needs;
    /// `None`: it took nothing (a dry run, or nothing to take).
    pub async fn take(
        &self,
        obj: &mut Value,
        old: Option<&Value>,
        dry_run: bool,
    ) -> Result<Option<service_alloc::Reservation>, Status> {
        let mut refreshed = false;
        for _ in 0..MAX_ATTEMPTS {
            let mut candidate = obj.clone();
            let port_writes = self.0.port_writes.lock().await;
            let (ports, revision) = self.read_ports().await?;
            let mut plan = self.view().clone();
            plan.reseed(rand::random());
            plan.ports = ports;
            let planned = match old {
                None => plan.allocate_create(&mut candidate),
                Some(old) => plan.allocate_update(&mut candidate, old),
            };
            let r = match planned {
                Ok(r) => r,
                // The view of taken IPs may be stale (another server gave one back).
                Err(_) if !refreshed => {
                    drop(port_writes);
                    self.refresh_ips().await?;
                    refreshed = true;
                    continue;
                }
                Err(e) => return Err(e),
            };
            if dry_run || r.is_empty() {
                *obj = candidate;
                return Ok(None);
            }
            if !r.ports.is_empty() && !self.write_ports(&plan.ports, revision).await? {
                drop(port_writes);
                lost_race().await;
                continue;
            }
            drop(port_writes);
            let mut created = Vec::new();
            let mut clash = false;
            for &ip in &r.ips {
                match self.create_ip(ip, &candidate).await {
                    Ok(()) => created.push(ip),
                    Err(s) => {
                        self.release(&created, &r.ports).await;
                        if s.reason != "AlreadyExists" {
                            return Err(s);
                        }
                        // Taken meanwhile by another server: plan again, knowing it.
                        let _ = self.view().ips.allocate(ip);
                        clash = true;
                        break;
                    }
                }
            }
            if clash {
                continue;
            }
            let mut view = self.view();
            for &ip in &r.ips {
                let _ = view.ips.allocate(ip);
            }
            drop(view);
            *obj = candidate;
            return Ok(Some(r));
        }
        Err(Status::internal(
            "failed to allocate the Service's cluster IPs and node ports: too many concurrent allocations",
        ))
    }

    /// Ends a write: once stored, gives back what the old object held and the new one
    /// does not; when it failed, gives back what it took.
    pub async fn finish(&self, r: service_alloc::Reservation, stored: bool) {
        if stored {
            self.release(&r.release_ips, &r.release_ports).await;
        } else {
            self.release(&r.ips, &r.ports).await;
        }
    }

    /// Deletes the IPAddresses of `ips` and clears `ports` in the stored range.
    async fn release(&self, ips: &[Ipv4Addr], ports: &[i64]) {
        if let Ok(kind) = self.ip_kind() {
            for ip in ips {
                let mut warnings = Vec::new();
                let deleted = self
                    .0
                    .store
                    .delete(
                        kind,
                        "",
                        &ip.to_string(),
                        &DeleteOptions::default(),
                        &[],
                        &mut warnings,
                    )
                    .await;
                match deleted {
                    Ok(_) => {}
                    Err(s) if s.code == 404 => {}
                    Err(s) => tracing::warn!(%ip, error = %s.message, "releasing a cluster IP"),
                }
                self.view().ips.release(*ip);
            }
        }
        if ports.is_empty() {
            return;
        }
        for _ in 0..MAX_ATTEMPTS {
            let port_writes = self.0.port_writes.lock().await;
            let (mut stored, revision) = match self.read_ports().await {
                Ok(read) => read,
                Err(s) => {
                    tracing::warn!(error = %s.message, "releasing node ports");
                    return;
                }
            };
            if revision.is_none() || ports.iter().all(|p| !stored.has(*p)) {
                return;
            }
            for port in ports {
                stored.release(*port);
            }
            match self.write_ports(&stored, revision).await {
                Ok(true) => return,
                Ok(false) => {
                    drop(port_writes);
                    lost_race().await;
                }
                Err(s) => {
                    tracing::warn!(error = %s.message, "releasing node ports");
                    return;
                }
            }
        }
    }

    /// The reservation a write holds until it is stored (or fails).
    pub fn reservation(&self, r: service_alloc::Reservation) -> Reservation {
        let allocators = self.clone();
        Reservation::new(move |stored| Box::pin(async move { allocators.finish(r, stored).await }))
    }
}

/// A short random pause after losing a compare-and-swap to another server.
async fn lost_race() {
    let pause = rand::random::<u64>() % 5 + 1;
    tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
}
