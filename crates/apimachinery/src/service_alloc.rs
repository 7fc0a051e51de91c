//! What kube's service REST storage allocates around a Service write, without IO:
//! cluster IPs from `--service-cluster-ip-range` and node ports from
//! `--service-node-port-range`, each a set over its range, and the rules of
//! `allocateCreate`/`allocateUpdate`: which fields a create or update fills, takes and
//! gives back, with kube's error texts.
//!
//! The sets here are views: the server keeps every taken cluster IP as an `IPAddress`
//! object named by the address ([`ip_address`]; creating it is the allocation) and the
//! node ports as kube's `RangeAllocation` bitmap ([`node_port_range`]), written with
//! compare-and-swap. A write plans on a view ([`Allocators::allocate_create`],
//! [`Allocators::allocate_update`]) and gets a [`Reservation`] naming what it takes and
//! what it gives back once stored; the server does the IO. Single stack: one IPv4 range.

use crate::builtin_validation::core::service_cluster_ip_fields;
use crate::field::{Error, ErrorList, Path};
use crate::status::Status;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::net::Ipv4Addr;

/// kube's `--service-cluster-ip-range` default (envtest's too).
pub const DEFAULT_SERVICE_CIDR: &str = "10.0.0.0/24";

/// kube's `--service-node-port-range` default.
pub const DEFAULT_NODE_PORT_RANGE: &str = "30000-32767";

/// Why a single allocation failed (kube's allocator errors, worded as kube's).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AllocError {
    /// Nothing left to hand out.
    #[error("range is full")]
    Full,
    /// A cluster IP someone holds.
    #[error("provided IP is already allocated")]
    IpAllocated,
    /// A node port someone holds.
    #[error("provided port is already allocated")]
    PortAllocated,
    /// A cluster IP outside every served range.
    #[error("the provided network does not match the current range")]
    MismatchedNetwork,
    /// A cluster IP inside the range that is never handed out (network, broadcast).
    #[error("the provided IP ({ip}) is not in the valid range. The range of valid IPs is {range}")]
    IpNotInRange {
        /// The address asked for.
        ip: Ipv4Addr,
        /// The CIDR.
        range: String,
    },
    /// A node port outside the range.
    #[error("provided port is not in the valid range. The range of valid ports is {range}")]
    PortNotInRange {
        /// `base-last`.
        range: String,
    },
}

/// kube's label naming an `IPAddress`'s family.
pub const LABEL_IP_FAMILY: &str = "ipaddress.kubernetes.io/ip-family";

/// kube's label naming who manages an `IPAddress`.
pub const LABEL_MANAGED_BY: &str = "ipaddress.kubernetes.io/managed-by";

/// kube's cluster IP allocator (`ipallocator.ControllerName`).
pub const IP_ALLOCATOR: &str = "ipallocator.k8s.io";

/// Where kube keeps the node port bitmap, under the storage prefix.
pub const NODE_PORT_RANGE_KEY: &str = "ranges/servicenodeports";

/// The name of the default `ServiceCIDR` (kube's `DefaultServiceCIDRName`).
pub const DEFAULT_SERVICE_CIDR_NAME: &str = "kubernetes";

/// The `IPAddress` kube's allocator creates to take `ip` for `svc`.
pub fn ip_address(ip: Ipv4Addr, svc: &Value) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IPAddress",
        "metadata": {
            "name": ip.to_string(),
            "labels": {LABEL_IP_FAMILY: "IPv4", LABEL_MANAGED_BY: IP_ALLOCATOR}
        },
        "spec": {"parentRef": {
            "resource": "services",
            "namespace": crate::object::namespace(svc),
            "name": crate::object::name(svc)
        }}
    })
}

/// The default `ServiceCIDR` kube's controller creates for `--service-cluster-ip-range`.
pub fn default_service_cidr(cidr: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "ServiceCIDR",
        "metadata": {"name": DEFAULT_SERVICE_CIDR_NAME},
        "spec": {"cidrs": [cidr]}
    })
}

/// The Ready condition kube's controller sets on the default `ServiceCIDR`.
pub fn default_service_cidr_ready(now: &str) -> Value {
    json!({
        "type": "Ready",
        "status": "True",
        "lastTransitionTime": now,
        "reason": "",
        "message": "Kubernetes default Service CIDR is ready"
    })
}

/// The node ports as kube stores them: a `RangeAllocation` whose `data` is the bitmap
/// as a big-endian integer (bit `i`: port `base + i`).
pub fn node_port_range(ports: &PortRange) -> Value {
    use base64::Engine;
    json!({
        "kind": "RangeAllocation",
        "apiVersion": "v1",
        "metadata": {"creationTimestamp": null},
        "range": ports.range(),
        "data": base64::engine::general_purpose::STANDARD.encode(ports.used.snapshot()),
    })
}

/// A range flag that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RangeError(String);

/// A set of offsets `0..max`: kube's allocation bitmap with its random scan, which
/// hands out from above `offset` first (the block below is left to explicit requests).
#[derive(Clone, Debug)]
struct Bitmap {
    words: Vec<u64>,
    max: usize,
    offset: usize,
    count: usize,
}

impl Bitmap {
    fn new(max: usize, offset: usize) -> Self {
        Bitmap {
            words: vec![0; max.div_ceil(64)],
            max,
            offset: offset.min(max),
            count: 0,
        }
    }

    fn has(&self, i: usize) -> bool {
        i < self.max && self.words[i / 64] & (1 << (i % 64)) != 0
    }

    /// Takes `i`; false when it was taken already.
    fn set(&mut self, i: usize) -> bool {
        if i >= self.max || self.has(i) {
            return false;
        }
        self.words[i / 64] |= 1 << (i % 64);
        self.count += 1;
        true
    }

    fn clear(&mut self, i: usize) {
        if self.has(i) {
            self.words[i / 64] &= !(1 << (i % 64));
            self.count -= 1;
        }
    }

    /// The set as a big-endian integer, without leading zero bytes (kube's `big.Int.Bytes`).
    fn snapshot(&self) -> Vec<u8> {
        let mut bytes: Vec<u8> = self
            .words
            .iter()
            .rev()
            .flat_map(|w| w.to_be_bytes())
            .skip_while(|b| *b == 0)
            .collect();
        bytes.shrink_to_fit();
        bytes
    }

    /// Replaces the set with a snapshot's (bits beyond the range are ignored).
    fn restore(&mut self, bytes: &[u8]) {
        self.words.iter_mut().for_each(|w| *w = 0);
        self.count = 0;
        for (i, byte) in bytes.iter().rev().enumerate() {
            for bit in 0..8 {
                if byte & (1 << bit) != 0 {
                    self.set(i * 8 + bit);
                }
            }
        }
    }

    /// A free offset, taken: random in the upper block, then in the lower one.
    fn take_next(&mut self, rng: &mut StdRng) -> Option<usize> {
        if self.count >= self.max {
            return None;
        }
        let blocks = [(self.offset, self.max), (0, self.offset)];
        for (lo, hi) in blocks {
            let size = hi - lo;
            if size == 0 {
                continue;
            }
            let start = rng.random_range(0..size);
            for i in 0..size {
                let at = lo + (start + i) % size;
                if self.set(at) {
                    return Some(at);
                }
            }
        }
        None
    }
}

/// kube's static-allocation block size: `min(max(min, size/step), max)`, none for tiny ranges.
fn reserved_block(size: usize, min: usize, max: usize, step: usize) -> usize {
    if size <= min {
        0
    } else {
        (size / step).clamp(min, max)
    }
}

/// An IPv4 service CIDR: the addresses between its network and broadcast addresses.
#[derive(Clone, Debug)]
pub struct IpRange {
    cidr: String,
    network: u32,
    prefix: u8,
    /// Offsets from the first usable address (network + 1).
    used: Bitmap,
}

impl IpRange {
    /// Parses one IPv4 CIDR (`10.0.0.0/24`).
    pub fn parse(text: &str) -> Result<Self, RangeError> {
        let bad = || RangeError(format!("service IP range {text:?} is not a valid CIDR"));
        let (addr, prefix) = text.trim().split_once('/').ok_or_else(bad)?;
        let addr: Ipv4Addr = addr.parse().map_err(|_| bad())?;
        let prefix: u8 = prefix.parse().map_err(|_| bad())?;
        if prefix > 32 {
            return Err(bad());
        }
        let mask = if prefix == 0 {
            0
        } else {
            u32::MAX << (32 - prefix)
        };
        let network = u32::from(addr) & mask;
        let size = 1u64 << (32 - prefix);
        if size > 1 << 20 {
            // kube caps its bitmaps too; beyond this a bitmap would be large.
            return Err(RangeError(format!(
                "service IP range {text:?} is too large: the prefix must be /12 or longer"
            )));
        }
        let usable = size.saturating_sub(2) as usize;
        Ok(IpRange {
            cidr: format!("{}/{prefix}", Ipv4Addr::from(network)),
            network,
            prefix,
            used: Bitmap::new(usable, reserved_block(size as usize, 16, 256, 16)),
        })
    }

    /// The CIDR as kube prints it.
    pub fn cidr(&self) -> &str {
        &self.cidr
    }

    /// The first address handed out: the `kubernetes` Service's.
    pub fn first(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.network.wrapping_add(1))
    }

    fn contains_network(&self, ip: Ipv4Addr) -> bool {
        let mask = if self.prefix == 0 {
            0
        } else {
            u32::MAX << (32 - self.prefix)
        };
        u32::from(ip) & mask == self.network
    }

    fn offset(&self, ip: Ipv4Addr) -> Result<usize, AllocError> {
        if !self.contains_network(ip) {
            return Err(AllocError::MismatchedNetwork);
        }
        let offset = (u32::from(ip) - self.network) as usize;
        if offset == 0 || offset > self.used.max {
            return Err(AllocError::IpNotInRange {
                ip,
                range: self.cidr.clone(),
            });
        }
        Ok(offset - 1)
    }

    /// Takes `ip`.
    pub fn allocate(&mut self, ip: Ipv4Addr) -> Result<(), AllocError> {
        let offset = self.offset(ip)?;
        if self.used.set(offset) {
            Ok(())
        } else {
            Err(AllocError::IpAllocated)
        }
    }

    fn allocate_next(&mut self, rng: &mut StdRng) -> Result<Ipv4Addr, AllocError> {
        let offset = self.used.take_next(rng).ok_or(AllocError::Full)?;
        Ok(Ipv4Addr::from(self.network + 1 + offset as u32))
    }

    /// Gives `ip` back (nothing when it is not in the range).
    pub fn release(&mut self, ip: Ipv4Addr) {
        if let Ok(offset) = self.offset(ip) {
            self.used.clear(offset);
        }
    }

    /// Forgets every taken address (before marking a fresh view of them).
    pub fn clear(&mut self) {
        self.used.restore(&[]);
    }

    /// Whether `ip` is an address of the range that can be handed out.
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        self.offset(ip).is_ok()
    }

    /// Whether `ip` is taken.
    pub fn has(&self, ip: Ipv4Addr) -> bool {
        self.offset(ip).is_ok_and(|o| self.used.has(o))
    }
}

/// A node port range (`30000-32767`).
#[derive(Clone, Debug)]
pub struct PortRange {
    base: i64,
    used: Bitmap,
}

impl PortRange {
    /// Parses kube's `value`, `min-max` or `min+offset` notations.
    pub fn parse(text: &str) -> Result<Self, RangeError> {
        let value = text.trim();
        let bad = |why: &str| RangeError(format!("invalid port range {value:?}: {why}"));
        let num = |s: &str| -> Result<i64, RangeError> {
            s.trim().parse::<i64>().map_err(|_| bad("not a number"))
        };
        let (low, high) = match (value.find('-'), value.find('+')) {
            (Some(_), Some(_)) => return Err(bad("both '-' and '+'")),
            (Some(i), None) => (num(&value[..i])?, num(&value[i + 1..])?),
            (None, Some(i)) => {
                let low = num(&value[..i])?;
                (low, low + num(&value[i + 1..])?)
            }
            (None, None) => {
                let p = num(value)?;
                (p, p)
            }
        };
        if !(0..=65535).contains(&low) || !(0..=65535).contains(&high) || high < low {
            return Err(bad(
                "ports must be 0-65535 and the end not before the start",
            ));
        }
        let size = (high - low + 1) as usize;
        Ok(PortRange {
            base: low,
            used: Bitmap::new(size, reserved_block(size, 16, 128, 32)),
        })
    }

    /// `base-last`, as kube prints it.
    pub fn range(&self) -> String {
        format!("{}-{}", self.base, self.base + self.used.max as i64 - 1)
    }

    fn offset(&self, port: i64) -> Result<usize, AllocError> {
        let offset = port - self.base;
        if offset < 0 || offset >= self.used.max as i64 {
            return Err(AllocError::PortNotInRange {
                range: self.range(),
            });
        }
        Ok(offset as usize)
    }

    /// Takes `port`.
    pub fn allocate(&mut self, port: i64) -> Result<(), AllocError> {
        let offset = self.offset(port)?;
        if self.used.set(offset) {
            Ok(())
        } else {
            Err(AllocError::PortAllocated)
        }
    }

    fn allocate_next(&mut self, rng: &mut StdRng) -> Result<i64, AllocError> {
        let offset = self.used.take_next(rng).ok_or(AllocError::Full)?;
        Ok(self.base + offset as i64)
    }

    /// Gives `port` back.
    pub fn release(&mut self, port: i64) {
        if let Ok(offset) = self.offset(port) {
            self.used.clear(offset);
        }
    }

    /// Takes the ports a stored `RangeAllocation` ([`node_port_range`]) marks, in
    /// place of the ones held; kube's error when it is of another range.
    pub fn restore(&mut self, stored: &Value) -> Result<(), RangeError> {
        use base64::Engine;
        let range = stored.get("range").and_then(Value::as_str).unwrap_or("");
        if range != self.range() {
            return Err(RangeError(format!(
                "the provided range does not match the current range: {range} != {}",
                self.range()
            )));
        }
        let data = stored.get("data").and_then(Value::as_str).unwrap_or("");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| RangeError(format!("the stored node port range does not decode: {e}")))?;
        self.used.restore(&bytes);
        Ok(())
    }

    /// How many ports are taken.
    pub fn used(&self) -> usize {
        self.used.count
    }

    /// Whether `port` is taken.
    pub fn has(&self, port: i64) -> bool {
        self.offset(port).is_ok_and(|o| self.used.has(o))
    }
}

/// What one write took, and what it gives back once it is stored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[must_use = "a reservation is committed or reverted"]
pub struct Reservation {
    /// Cluster IPs taken.
    pub ips: Vec<Ipv4Addr>,
    /// Node ports taken.
    pub ports: Vec<i64>,
    /// Cluster IPs the old object held, given back on commit.
    pub release_ips: Vec<Ipv4Addr>,
    /// Node ports the old object held, given back on commit.
    pub release_ports: Vec<i64>,
}

impl Reservation {
    /// Whether the write took and gives back nothing.
    pub fn is_empty(&self) -> bool {
        *self == Reservation::default()
    }
}

/// The cluster IP and node port allocators of one server.
#[derive(Clone, Debug)]
pub struct Allocators {
    /// Cluster IPs.
    pub ips: IpRange,
    /// Node ports.
    pub ports: PortRange,
    rng: StdRng,
}

/// The `Status` of an invalid Service.
fn invalid(svc: &Value, errs: &[Error]) -> Status {
    Status::invalid("Service", "", crate::object::name(svc), errs)
}

fn spec(svc: &Value) -> &Value {
    svc.get("spec").unwrap_or(&Value::Null)
}

fn spec_str<'a>(svc: &'a Value, field: &str) -> &'a str {
    spec(svc).get(field).and_then(Value::as_str).unwrap_or("")
}

fn spec_mut(svc: &mut Value) -> &mut serde_json::Map<String, Value> {
    if !svc.get("spec").is_some_and(Value::is_object) {
        svc["spec"] = json!({});
    }
    match svc.get_mut("spec") {
        Some(Value::Object(m)) => m,
        _ => unreachable!("spec was just made an object"),
    }
}

fn strings(svc: &Value, field: &str) -> Vec<String> {
    spec(svc)
        .get(field)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|v| v.as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn service_type(svc: &Value) -> &str {
    spec_str(svc, "type")
}

fn has_selector(svc: &Value) -> bool {
    spec(svc)
        .get("selector")
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty())
}

/// kube's `needsClusterIP`.
fn needs_cluster_ip(svc: &Value) -> bool {
    service_type(svc) != "ExternalName"
}

/// Node port types (kube allocates for NodePort and LoadBalancer).
fn node_port_type(svc: &Value) -> bool {
    matches!(service_type(svc), "NodePort" | "LoadBalancer")
}

/// kube's `shouldAllocateNodePorts`.
fn should_allocate_node_ports(svc: &Value) -> bool {
    match service_type(svc) {
        "NodePort" => true,
        "LoadBalancer" => spec(svc)
            .get("allocateLoadBalancerNodePorts")
            .and_then(Value::as_bool)
            .unwrap_or(true),
        _ => false,
    }
}

/// kube's `needsNodePort` (for carrying ports over an update).
fn needs_node_port(svc: &Value) -> bool {
    node_port_type(svc) && should_allocate_node_ports(svc)
}

/// kube's `NeedsHealthCheck`: a LoadBalancer keeping traffic on the local node.
fn needs_health_check(svc: &Value) -> bool {
    service_type(svc) == "LoadBalancer" && spec_str(svc, "externalTrafficPolicy") == "Local"
}

fn int(v: Option<&Value>) -> i64 {
    v.and_then(Value::as_i64).unwrap_or(0)
}

fn ports(svc: &Value) -> Vec<Value> {
    spec(svc)
        .get("ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// kube's `collectServiceNodePorts`: the ports' node ports (each once).
fn port_node_ports(svc: &Value) -> Vec<i64> {
    let mut held: Vec<i64> = ports(svc)
        .iter()
        .map(|p| int(p.get("nodePort")))
        .filter(|n| *n != 0)
        .collect();
    held.sort_unstable();
    held.dedup();
    held
}

/// The node ports and the health check node port a Service holds.
fn held_node_ports(svc: &Value) -> Vec<i64> {
    let mut held = port_node_ports(svc);
    let hc = int(spec(svc).get("healthCheckNodePort"));
    if hc != 0 && !held.contains(&hc) {
        held.push(hc);
    }
    held
}

/// The cluster IPs a stored object holds (not `None`, IPv4 ones).
fn held_ips(svc: &Value) -> Vec<Ipv4Addr> {
    if !needs_cluster_ip(svc) {
        return Vec::new();
    }
    let mut ips = strings(svc, "clusterIPs");
    if ips.is_empty() {
        ips.push(spec_str(svc, "clusterIP").to_string());
    }
    ips.iter().filter_map(|ip| ip.parse().ok()).collect()
}

impl Allocators {
    /// Allocators over a cluster IP range and a node port range (kube's flag syntax);
    /// `seed` drives the random scan.
    pub fn new(cidr: &str, node_ports: &str, seed: u64) -> Result<Self, RangeError> {
        Ok(Allocators {
            ips: IpRange::parse(cidr)?,
            ports: PortRange::parse(node_ports)?,
            rng: StdRng::seed_from_u64(seed),
        })
    }

    /// Seeds the random scan anew (a plan on a copy of the view draws its own).
    pub fn reseed(&mut self, seed: u64) {
        self.rng = StdRng::seed_from_u64(seed);
    }

    /// Marks what a stored Service holds as taken (rebuilding the sets at start-up).
    pub fn restore(&mut self, svc: &Value) {
        for ip in held_ips(svc) {
            let _ = self.ips.allocate(ip);
        }
        if node_port_type(svc) || needs_health_check(svc) {
            for port in held_node_ports(svc) {
                let _ = self.ports.allocate(port);
            }
        }
    }

    /// What a deleted Service gives back (kube's `releaseAllocatedResources`), as a
    /// reservation that takes nothing.
    pub fn release_of(svc: &Value) -> Reservation {
        Reservation {
            release_ips: held_ips(svc),
            release_ports: held_node_ports(svc),
            ..Reservation::default()
        }
    }

    /// Gives back what a deleted Service held (kube's `releaseAllocatedResources`).
    pub fn release_service(&mut self, svc: &Value) {
        for ip in held_ips(svc) {
            self.ips.release(ip);
        }
        for port in held_node_ports(svc) {
            self.ports.release(port);
        }
    }

    /// A write was stored: give back what the old object held and the new one does not.
    pub fn commit(&mut self, r: Reservation) {
        for ip in r.release_ips {
            self.ips.release(ip);
        }
        for port in r.release_ports {
            self.ports.release(port);
        }
    }

    /// A write failed: give back what it took.
    pub fn revert(&mut self, r: Reservation) {
        for ip in r.ips {
            self.ips.release(ip);
        }
        for port in r.ports {
            self.ports.release(port);
        }
    }

    /// kube's `allocateCreate`: fills `clusterIP`, `clusterIPs`, `ipFamilies`,
    /// `ipFamilyPolicy` and the node ports of a new Service, taking them.
    pub fn allocate_create(&mut self, svc: &mut Value) -> Result<Reservation, Status> {
        normalize_cluster_ips(svc, None);
        let mut r = Reservation::default();
        let result = self
            .init_ip_families(svc, None)
            .and_then(|()| self.alloc_cluster_ips(svc, &mut r))
            .and_then(|()| self.alloc_node_ports(svc, None, &mut r));
        match result {
            Ok(()) => Ok(r),
            Err(s) => {
                self.revert(r);
                Err(s)
            }
        }
    }

    /// kube's `allocateUpdate`: carries the old object's IPs and node ports over to
    /// fields the update left empty, takes new ones for a type that needs them and
    /// marks those the Service no longer needs for release on commit.
    pub fn allocate_update(&mut self, svc: &mut Value, old: &Value) -> Result<Reservation, Status> {
        patch_allocated_values(svc, old);
        normalize_cluster_ips(svc, Some(old));
        let mut r = Reservation::default();
        let result = self
            .init_ip_families(svc, Some(old))
            .and_then(|()| self.update_cluster_ips(svc, old, &mut r))
            .and_then(|()| self.alloc_node_ports(svc, Some(old), &mut r));
        match result {
            Ok(()) => Ok(r),
            Err(s) => {
                self.revert(r);
                Err(s)
            }
        }
    }

    /// kube's `initIPFamilyFields` on a single-stack IPv4 server.
    fn init_ip_families(&self, svc: &mut Value, old: Option<&Value>) -> Result<(), Status> {
        if service_type(svc) == "ExternalName" {
            return Ok(());
        }
        let headless_selectorless = spec_str(svc, "clusterIP") == "None" && !has_selector(svc);
        if spec(svc).get("ipFamilyPolicy").is_none_or(Value::is_null) {
            let policy = match old.map(|o| spec_str(o, "ipFamilyPolicy")) {
                Some(p) if !p.is_empty() => p.to_string(),
                _ if headless_selectorless => "RequireDualStack".to_string(),
                _ => "SingleStack".to_string(),
            };
            spec_mut(svc).insert("ipFamilyPolicy".into(), json!(policy));
        }
        let errs = service_cluster_ip_fields(spec(svc), old.map(spec));
        if !errs.is_empty() {
            return Err(invalid(svc, &errs));
        }
        let policy = spec_str(svc, "ipFamilyPolicy").to_string();
        let policy_path = Path::new("spec").child("ipFamilyPolicy");
        let ips = strings(svc, "clusterIPs");
        let mut families = strings(svc, "ipFamilies");
        let mut errs = ErrorList::new();
        if policy == "SingleStack" {
            if ips.len() == 2 {
                errs.push(Error::invalid(
                    &policy_path,
                    json!(policy),
                    "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified",
                ));
            }
            if families.len() == 2 {
                errs.push(Error::invalid(
                    &policy_path,
                    json!(policy),
                    "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
                ));
            }
        }
        for (i, ip) in ips.iter().enumerate() {
            if ip == "None" {
                break;
            }
            let family = if ip.contains(':') { "IPv6" } else { "IPv4" };
            if i >= families.len() {
                if family == "IPv4" {
                    families.push(family.to_string());
                } else {
                    errs.push(Error::invalid(
                        &Path::new("spec").child("clusterIPs").index(i),
                        json!(ips),
                        format!("{family} is not configured on this cluster"),
                    ));
                }
            }
        }
        if !errs.is_empty() {
            return Err(invalid(svc, &errs));
        }
        if headless_selectorless {
            if families.is_empty() {
                families.push("IPv4".into());
            }
            if families.len() < 2 && policy != "SingleStack" {
                let other = if families[0] == "IPv4" {
                    "IPv6"
                } else {
                    "IPv4"
                };
                families.push(other.into());
            }
            spec_mut(svc).insert("ipFamilies".into(), json!(families));
            return Ok(());
        }
        if policy == "RequireDualStack" {
            errs.push(Error::invalid(
                &policy_path,
                json!(policy),
                "this cluster is not configured for dual-stack services",
            ));
        }
        for (i, family) in families.iter().enumerate() {
            if family != "IPv4" {
                errs.push(Error::invalid(
                    &Path::new("spec").child("ipFamilies").index(i),
                    json!(family),
                    "not configured on this cluster",
                ));
            }
        }
        if !errs.is_empty() {
            return Err(invalid(svc, &errs));
        }
        if families.is_empty() {
            families.push("IPv4".into());
        }
        spec_mut(svc).insert("ipFamilies".into(), json!(families));
        Ok(())
    }

    /// kube's `allocClusterIPs`: the requested IP, or the next free one.
    fn alloc_cluster_ips(&mut self, svc: &mut Value, r: &mut Reservation) -> Result<(), Status> {
        if service_type(svc) == "ExternalName" {
            return Ok(());
        }
        let mut ips = strings(svc, "clusterIPs");
        if ips.first().is_some_and(|ip| ip == "None") {
            return Ok(());
        }
        let requested = ips.first().cloned().unwrap_or_default();
        let ip = if requested.is_empty() {
            self.ips.allocate_next(&mut self.rng).map_err(|e| {
                Status::internal(format!(
                    "failed to allocate a serviceIP for Service {:?}: {e}",
                    crate::object::name(svc)
                ))
            })?
        } else {
            let parsed = parse_ip(&requested).ok_or_else(|| {
                Status::internal(format!("failed to parse service IP {requested:?}"))
            })?;
            self.ips.allocate(parsed).map_err(|e| {
                let err = Error::invalid(
                    &Path::new("spec").child("clusterIPs"),
                    json!(ips),
                    format!("failed to allocate IP {requested}: {e}"),
                );
                invalid(svc, &[err])
            })?;
            parsed
        };
        r.ips.push(ip);
        if ips.is_empty() {
            ips.push(String::new());
        }
        ips[0] = ip.to_string();
        let spec = spec_mut(svc);
        spec.insert("clusterIP".into(), json!(ip.to_string()));
        spec.insert("clusterIPs".into(), json!(ips));
        Ok(())
    }

    /// kube's `updateClusterIPs` on a single-stack server: only a change to or from
    /// ExternalName takes or gives back an IP.
    fn update_cluster_ips(
        &mut self,
        svc: &mut Value,
        old: &Value,
        r: &mut Reservation,
    ) -> Result<(), Status> {
        let was_external = service_type(old) == "ExternalName";
        let is_external = service_type(svc) == "ExternalName";
        if was_external && !is_external {
            return self.alloc_cluster_ips(svc, r);
        }
        if !was_external && is_external {
            r.release_ips.extend(held_ips(old));
        }
        Ok(())
    }

    /// kube's `initNodePorts` (create) and `updateNodePorts` (update), then the
    /// health check node port.
    fn alloc_node_ports(
        &mut self,
        svc: &mut Value,
        old: Option<&Value>,
        r: &mut Reservation,
    ) -> Result<(), Status> {
        if let Some(old) = old.filter(|o| node_port_type(o)) {
            if matches!(service_type(svc), "ClusterIP" | "ExternalName") {
                r.release_ports.extend(port_node_ports(old));
            }
        }
        if node_port_type(svc) {
            let mut list = ports(svc);
            match old {
                None => self.init_node_ports(svc, &mut list, r)?,
                Some(old) => self.update_node_ports(svc, old, &mut list, r)?,
            }
            if spec(svc).get("ports").is_some() {
                spec_mut(svc).insert("ports".into(), Value::Array(list));
            }
        }
        self.health_check_node_port(svc, old, r)
    }

    /// Takes a requested node port, as kube's 422 on `spec.ports[i].nodePort`.
    fn take_port(&mut self, svc: &Value, i: usize, port: i64) -> Result<(), Status> {
        self.ports.allocate(port).map_err(|e| {
            let path = Path::new("spec").child("ports").index(i).child("nodePort");
            invalid(svc, &[Error::invalid(&path, json!(port), e.to_string())])
        })
    }

    /// The next free node port, as kube's 500 when none is left.
    fn next_port(&mut self) -> Result<i64, Status> {
        self.ports
            .allocate_next(&mut self.rng)
            .map_err(|e| Status::internal(format!("failed to allocate a nodePort: {e}")))
    }

    /// kube's `initNodePorts`: ports sharing a port number (TCP and UDP) share a node port.
    fn init_node_ports(
        &mut self,
        svc: &Value,
        list: &mut [Value],
        r: &mut Reservation,
    ) -> Result<(), Status> {
        let allocate_all = should_allocate_node_ports(svc);
        let mut by_port: Vec<(i64, i64)> = Vec::new();
        for i in 0..list.len() {
            let port = int(list[i].get("port"));
            let node_port = int(list[i].get("nodePort"));
            if node_port == 0 && !allocate_all {
                continue;
            }
            match by_port.iter().find(|(p, _)| *p == port).map(|(_, n)| *n) {
                None => {
                    let requested = list
                        .iter()
                        .filter(|p| int(p.get("port")) == port)
                        .map(|p| int(p.get("nodePort")))
                        .find(|n| *n != 0);
                    let n = match requested {
                        Some(n) => {
                            self.take_port(svc, i, n)?;
                            n
                        }
                        None => self.next_port()?,
                    };
                    r.ports.push(n);
                    list[i]["nodePort"] = json!(n);
                    by_port.push((port, n));
                }
                Some(shared) if node_port == 0 => list[i]["nodePort"] = json!(shared),
                Some(shared) if node_port != shared => {
                    self.take_port(svc, i, node_port)?;
                    r.ports.push(node_port);
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// kube's `updateNodePorts`: ports the old object held stay held; new ones are
    /// taken; old ones no port keeps are given back on commit.
    fn update_node_ports(
        &mut self,
        svc: &Value,
        old: &Value,
        list: &mut [Value],
        r: &mut Reservation,
    ) -> Result<(), Status> {
        let allocate_all = should_allocate_node_ports(svc);
        let old_held = port_node_ports(old);
        for (i, port) in list.iter_mut().enumerate() {
            let node_port = int(port.get("nodePort"));
            if node_port == 0 && !allocate_all {
                continue;
            }
            if node_port != 0 {
                if !old_held.contains(&node_port) && !r.ports.contains(&node_port) {
                    self.take_port(svc, i, node_port)?;
                    r.ports.push(node_port);
                }
            } else {
                let n = self.next_port()?;
                r.ports.push(n);
                port["nodePort"] = json!(n);
            }
        }
        let new_held: Vec<i64> = list.iter().map(|p| int(p.get("nodePort"))).collect();
        r.release_ports
            .extend(old_held.into_iter().filter(|p| !new_held.contains(p)));
        Ok(())
    }

    /// kube's `allocHealthCheckNodePort`/`updateHealthCheckNodePort`.
    fn health_check_node_port(
        &mut self,
        svc: &mut Value,
        old: Option<&Value>,
        r: &mut Reservation,
    ) -> Result<(), Status> {
        let needed = old.is_some_and(needs_health_check);
        let needs = needs_health_check(svc);
        if needed && !needs {
            if let Some(old) = old {
                let port = int(spec(old).get("healthCheckNodePort"));
                if port != 0 {
                    r.release_ports.push(port);
                }
            }
            return Ok(());
        }
        if needed || !needs {
            return Ok(());
        }
        let requested = int(spec(svc).get("healthCheckNodePort"));
        if requested != 0 {
            self.ports.allocate(requested).map_err(|e| {
                Status::internal(format!(
                    "failed to allocate requested HealthCheck NodePort {requested}: {e}"
                ))
            })?;
            r.ports.push(requested);
        } else {
            let n = self.ports.allocate_next(&mut self.rng).map_err(|e| {
                Status::internal(format!("failed to allocate a HealthCheck NodePort 0: {e}"))
            })?;
            r.ports.push(n);
            spec_mut(svc).insert("healthCheckNodePort".into(), json!(n));
        }
        Ok(())
    }
}

/// An IPv4 address in kube's sloppy form (leading zeros allowed).
fn parse_ip(text: &str) -> Option<Ipv4Addr> {
    let parts: Vec<&str> = text.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (o, p) in octets.iter_mut().zip(parts) {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *o = p.parse().ok()?;
    }
    Some(Ipv4Addr::from(octets))
}

/// kube's `normalizeClusterIPs`: keeps `clusterIPs` in step with `clusterIP`.
fn normalize_cluster_ips(svc: &mut Value, old: Option<&Value>) {
    let ip = spec_str(svc, "clusterIP").to_string();
    let ips = strings(svc, "clusterIPs");
    let Some(old) = old else {
        if !ip.is_empty() && ips.is_empty() {
            spec_mut(svc).insert("clusterIPs".into(), json!([ip]));
        }
        return;
    };
    let old_ip = spec_str(old, "clusterIP").to_string();
    let old_ips = strings(old, "clusterIPs");
    let mut ips = ips;
    if !old_ips.is_empty() && ips.is_empty() && old_ip == ip {
        ips = old_ips.clone();
        spec_mut(svc).insert("clusterIPs".into(), json!(ips));
    }
    if old_ip != ip {
        let same = old_ips == ips;
        if !old_ip.is_empty() && ip.is_empty() {
            if same {
                spec_mut(svc).remove("clusterIPs");
            }
        } else if same {
            spec_mut(svc).insert("clusterIPs".into(), json!([ip]));
        }
    }
}

/// kube's `patchAllocatedValues`: an update that leaves allocated fields empty keeps
/// the old object's values.
fn patch_allocated_values(svc: &mut Value, old: &Value) {
    if needs_cluster_ip(old) && needs_cluster_ip(svc) {
        if spec_str(svc, "clusterIP").is_empty() && !spec_str(old, "clusterIP").is_empty() {
            let ip = spec_str(old, "clusterIP").to_string();
            spec_mut(svc).insert("clusterIP".into(), json!(ip));
        }
        let old_ips = strings(old, "clusterIPs");
        if strings(svc, "clusterIPs").is_empty() && !old_ips.is_empty() {
            spec_mut(svc).insert("clusterIPs".into(), json!(old_ips));
        }
    }
    if needs_node_port(old) && needs_node_port(svc) {
        let old_ports = ports(old);
        let mut list = ports(svc);
        let new_used: Vec<i64> = list.iter().map(|p| int(p.get("nodePort"))).collect();
        let used: Vec<i64> = old_ports
            .iter()
            .map(|p| int(p.get("nodePort")))
            .filter(|n| *n != 0 && new_used.contains(n))
            .collect();
        let by_name = |name: &str| {
            old_ports
                .iter()
                .rev()
                .find(|p| p.get("name").and_then(Value::as_str).unwrap_or("") == name)
                .map(|p| int(p.get("nodePort")))
                .unwrap_or(0)
        };
        let mut changed = false;
        for p in list.iter_mut() {
            if int(p.get("nodePort")) == 0 {
                let name = p.get("name").and_then(Value::as_str).unwrap_or("");
                let old_value = by_name(name);
                if old_value != 0 && !used.contains(&old_value) {
                    p["nodePort"] = json!(old_value);
                    changed = true;
                }
            }
        }
        if changed {
            spec_mut(svc).insert("ports".into(), Value::Array(list));
        }
    }
    if needs_health_check(old) && needs_health_check(svc) {
        let hc = int(spec(old).get("healthCheckNodePort"));
        if int(spec(svc).get("healthCheckNodePort")) == 0 && hc != 0 {
            spec_mut(svc).insert("healthCheckNodePort".into(), json!(hc));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allocators(cidr: &str) -> Allocators {
        Allocators::new(cidr, DEFAULT_NODE_PORT_RANGE, 7).unwrap()
    }

    fn svc(spec: Value) -> Value {
        json!({"metadata": {"name": "s", "namespace": "ns"}, "spec": spec})
    }

    #[test]
    fn a_create_gets_an_ip_of_the_range_and_single_stack_ipv4() {
        let mut a = allocators("10.96.0.0/24");
        let mut s = svc(json!({"type": "ClusterIP", "ports": [{"port": 80}]}));
        let r = a.allocate_create(&mut s).unwrap();
        let ip: Ipv4Addr = s["spec"]["clusterIP"].as_str().unwrap().parse().unwrap();
        assert_eq!(r.ips, vec![ip]);
        assert_eq!(s["spec"]["clusterIPs"], json!([ip.to_string()]));
        assert_eq!(s["spec"]["ipFamilies"], json!(["IPv4"]));
        assert_eq!(s["spec"]["ipFamilyPolicy"], "SingleStack");
        // Random allocation keeps to the upper block first (above .16 in a /24).
        assert!(ip.octets()[3] > 16, "{ip}");
        assert!(a.ips.has(ip));
    }

    #[test]
    fn an_explicit_ip_taken_twice_is_kubes_422() {
        let mut a = allocators("10.96.0.0/24");
        let mut first = svc(json!({"type": "ClusterIP", "clusterIP": "10.96.0.12"}));
        let _ = a.allocate_create(&mut first).unwrap();
        let mut clash = svc(json!({"type": "ClusterIP", "clusterIP": "10.96.0.12"}));
        let err = a.allocate_create(&mut clash).unwrap_err();
        assert_eq!(err.code, 422);
        assert_eq!(
            err.message,
            "Service \"s\" is invalid: spec.clusterIPs: Invalid value: [\"10.96.0.12\"]: failed to allocate IP 10.96.0.12: provided IP is already allocated"
        );
    }

    #[test]
    fn an_ip_outside_the_range_does_not_match_the_network() {
        let mut a = allocators("10.96.0.0/24");
        let mut s = svc(json!({"type": "ClusterIP", "clusterIP": "10.97.0.1"}));
        let err = a.allocate_create(&mut s).unwrap_err();
        assert!(err
            .message
            .ends_with("failed to allocate IP 10.97.0.1: the provided network does not match the current range"));
        let mut s = svc(json!({"type": "ClusterIP", "clusterIP": "10.96.0.255"}));
        let err = a.allocate_create(&mut s).unwrap_err();
        assert!(err.message.ends_with("the provided IP (10.96.0.255) is not in the valid range. The range of valid IPs is 10.96.0.0/24"), "{}", err.message);
    }

    #[test]
    fn headless_and_external_name_take_no_ip() {
        let mut a = allocators("10.96.0.0/24");
        let mut s = svc(json!({"type": "ClusterIP", "clusterIP": "None", "selector": {"a": "b"}}));
        let r = a.allocate_create(&mut s).unwrap();
        assert!(r.is_empty());
        assert_eq!(s["spec"]["clusterIPs"], json!(["None"]));
        assert_eq!(s["spec"]["ipFamilies"], json!(["IPv4"]));
        // Without a selector kube asks for both families.
        let mut s = svc(json!({"type": "ClusterIP", "clusterIP": "None"}));
        let _ = a.allocate_create(&mut s).unwrap();
        assert_eq!(s["spec"]["ipFamilyPolicy"], "RequireDualStack");
        assert_eq!(s["spec"]["ipFamilies"], json!(["IPv4", "IPv6"]));
        let mut s = svc(json!({"type": "ExternalName", "externalName": "x.example"}));
        let r = a.allocate_create(&mut s).unwrap();
        assert!(r.is_empty());
        assert!(s["spec"].get("clusterIP").is_none());
        assert!(s["spec"].get("ipFamilies").is_none());
    }

    #[test]
    fn a_small_range_fills_up_and_frees_on_release() {
        let mut a = allocators("10.1.0.0/29");
        let mut held = Vec::new();
        for _ in 0..6 {
            let mut s = svc(json!({"type": "ClusterIP"}));
            let _ = a.allocate_create(&mut s).unwrap();
            held.push(s);
        }
        let mut s = svc(json!({"type": "ClusterIP"}));
        let err = a.allocate_create(&mut s).unwrap_err();
        assert_eq!(err.code, 500);
        assert_eq!(
            err.message,
            "Internal error occurred: failed to allocate a serviceIP for Service \"s\": range is full"
        );
        a.release_service(&held[2]);
        let _ = a.allocate_create(&mut s).unwrap();
        assert_eq!(s["spec"]["clusterIP"], held[2]["spec"]["clusterIP"]);
    }

    #[test]
    fn node_ports_explicit_allocated_and_out_of_range() {
        let mut a = allocators("10.96.0.0/24");
        let mut s = svc(
            json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}, {"port": 81}]}),
        );
        let r = a.allocate_create(&mut s).unwrap();
        assert_eq!(r.ports[0], 30080);
        let auto = s["spec"]["ports"][1]["nodePort"].as_i64().unwrap();
        assert!((30000..=32767).contains(&auto) && auto != 30080);
        let mut s = svc(json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}));
        let err = a.allocate_create(&mut s).unwrap_err();
        assert_eq!(err.message, "Service \"s\" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated");
        let mut s = svc(json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 29999}]}));
        let err = a.allocate_create(&mut s).unwrap_err();
        assert_eq!(err.message, "Service \"s\" is invalid: spec.ports[0].nodePort: Invalid value: 29999: provided port is not in the valid range. The range of valid ports is 30000-32767");
        // The failed create gave back its cluster IP.
        assert_eq!(a.ips.used.count, 1);
    }

    #[test]
    fn tcp_and_udp_on_one_port_share_a_node_port() {
        let mut a = allocators("10.96.0.0/24");
        let mut s = svc(json!({"type": "NodePort", "ports": [
            {"port": 53, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}));
        let r = a.allocate_create(&mut s).unwrap();
        assert_eq!(r.ports.len(), 1);
        assert_eq!(
            s["spec"]["ports"][0]["nodePort"],
            s["spec"]["ports"][1]["nodePort"]
        );
    }

    #[test]
    fn updates_keep_allocations_and_type_changes_take_or_give_back_ports() {
        let mut a = allocators("10.96.0.0/24");
        let mut old = svc(json!({"type": "ClusterIP", "ports": [{"port": 80}]}));
        let r = a.allocate_create(&mut old).unwrap();
        a.commit(r);
        // An update that leaves the IP out keeps it.
        let mut new = svc(json!({"type": "NodePort", "ports": [{"port": 80}]}));
        let r = a.allocate_update(&mut new, &old).unwrap();
        assert_eq!(new["spec"]["clusterIP"], old["spec"]["clusterIP"]);
        assert_eq!(r.ports.len(), 1);
        let port = r.ports[0];
        a.commit(r);
        assert!(a.ports.has(port));
        // Back to ClusterIP: the port is given back on commit (validation wants it cleared).
        let old = new;
        let mut new = svc(json!({"type": "ClusterIP", "ports": [{"port": 80}]}));
        let r = a.allocate_update(&mut new, &old).unwrap();
        assert_eq!(r.release_ports, vec![port]);
        a.commit(r);
        assert!(!a.ports.has(port));
    }

    #[test]
    fn a_reverted_update_gives_back_only_what_it_took() {
        let mut a = allocators("10.96.0.0/24");
        let mut old = svc(json!({"type": "NodePort", "ports": [{"name": "a", "port": 80}]}));
        let r = a.allocate_create(&mut old).unwrap();
        a.commit(r);
        let held = old["spec"]["ports"][0]["nodePort"].as_i64().unwrap();
        let mut new = svc(
            json!({"type": "NodePort", "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81}]}),
        );
        let r = a.allocate_update(&mut new, &old).unwrap();
        assert_eq!(new["spec"]["ports"][0]["nodePort"], json!(held));
        assert_eq!(r.ports.len(), 1);
        a.revert(r);
        assert!(a.ports.has(held));
        assert_eq!(a.ports.used.count, 1);
    }

    #[test]
    fn restore_marks_stored_services_taken() {
        let mut a = allocators("10.96.0.0/24");
        a.restore(&svc(json!({"type": "NodePort", "clusterIP": "10.96.0.40", "clusterIPs": ["10.96.0.40"], "ports": [{"port": 1, "nodePort": 31000}]})));
        assert!(a.ips.has("10.96.0.40".parse().unwrap()));
        assert!(a.ports.has(31000));
    }

    #[test]
    fn the_node_port_bitmap_round_trips_as_kubes_range_allocation() {
        let mut a = allocators("10.96.0.0/24");
        for port in [30000, 30007, 30008, 32767] {
            a.ports.allocate(port).unwrap();
        }
        let stored = node_port_range(&a.ports);
        assert_eq!(stored["kind"], "RangeAllocation");
        assert_eq!(stored["range"], "30000-32767");
        let mut view = PortRange::parse(DEFAULT_NODE_PORT_RANGE).unwrap();
        view.allocate(31000).unwrap();
        view.restore(&stored).unwrap();
        assert_eq!(view.used(), 4);
        assert!(view.has(30007) && view.has(32767) && !view.has(31000));
        // Bit 0 is the lowest bit of the last byte (kube's big.Int bytes).
        let mut one = PortRange::parse("30000-30015").unwrap();
        one.allocate(30000).unwrap();
        one.allocate(30009).unwrap();
        assert_eq!(one.used.snapshot(), vec![0x02, 0x01]);
        let other = node_port_range(&PortRange::parse("1-10").unwrap());
        assert!(view.restore(&other).is_err());
    }

    #[test]
    fn an_ip_address_names_its_service_as_kube_does() {
        let s = svc(json!({}));
        let ip = ip_address(Ipv4Addr::new(10, 0, 0, 12), &s);
        assert_eq!(ip["metadata"]["name"], "10.0.0.12");
        assert_eq!(
            ip["metadata"]["labels"],
            json!({"ipaddress.kubernetes.io/ip-family": "IPv4",
                   "ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io"})
        );
        assert_eq!(
            ip["spec"]["parentRef"],
            json!({"resource": "services", "namespace": "ns", "name": "s"})
        );
        let gone = svc(json!({"type": "NodePort", "clusterIPs": ["10.0.0.3"],
            "ports": [{"port": 1, "nodePort": 30001}]}));
        let r = Allocators::release_of(&gone);
        assert!(r.ips.is_empty() && r.ports.is_empty());
        assert_eq!(r.release_ips, vec![Ipv4Addr::new(10, 0, 0, 3)]);
        assert_eq!(r.release_ports, vec![30001]);
    }

    #[test]
    fn ranges_parse_as_kubes_flags() {
        assert_eq!(
            IpRange::parse("10.0.0.0/24").unwrap().first(),
            Ipv4Addr::new(10, 0, 0, 1)
        );
        assert_eq!(IpRange::parse("10.0.0.7/24").unwrap().cidr(), "10.0.0.0/24");
        assert!(IpRange::parse("10.0.0.0").is_err());
        assert_eq!(
            PortRange::parse("30000-32767").unwrap().range(),
            "30000-32767"
        );
        assert_eq!(PortRange::parse("30000+10").unwrap().range(), "30000-30010");
        assert!(PortRange::parse("5-1").is_err());
    }
}
