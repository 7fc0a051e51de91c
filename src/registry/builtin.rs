//! The built-in resources this server serves, described once: discovery (legacy and
//! aggregated), the OpenAPI documents and `ApiServer::resolve` are all derived from
//! [`resources`], so a built-in resource exists everywhere or nowhere.
//!
//! The table is read from kube v1.36's recorded discovery documents
//! (`apimachinery::kube_discovery`): names, kinds, scope, verbs, short names,
//! categories, subresources and storage version hashes are kube's. What discovery does
//! not carry is the small hand table [`KUBE_STORAGE`] (kube's etcd keys where they are
//! not the resource name) and [`GENERATION`] (the kinds whose strategy keeps
//! `metadata.generation`). Each resource's `ResourceKind` is registered in
//! `ApiServer::start`: a hand strategy where one exists, else the schema strategy.
//!
//! The table also holds the group/versions kube serves only when `--runtime-config`
//! turns them on (`kube_discovery::RUNTIME_CONFIG_VERSIONS`); which entries one server
//! serves is its [`Served`] set, and everything a client sees (routes, discovery,
//! OpenAPI, APIServices) asks that set. A resource served in several versions is
//! stored in one, its `storage_version` (the version its `storageVersionHash` names),
//! and converted on the way in and out.

use crate::status::GroupResource;
use crate::write::Descriptor;
use apimachinery::kube_discovery;
use apimachinery::runtime_config::RuntimeConfig;
use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

/// One subresource of a built-in resource.
#[derive(Debug)]
pub struct Subresource {
    /// Its name (`status`, `scale`, `eviction`, ...).
    pub name: &'static str,
    /// Its verbs, in kube's discovery order.
    pub verbs: Vec<&'static str>,
    /// The group of the kind it answers with (the resource's own unless discovery
    /// names another, as `autoscaling` for `scale`).
    pub group: &'static str,
    /// The version of that kind.
    pub version: &'static str,
    /// That kind (`Scale`, `Eviction`, `PodExecOptions`, ...).
    pub kind: &'static str,
    /// Whether discovery names the group and version (a kind of another group-version).
    pub foreign: bool,
}

/// One built-in resource.
#[derive(Debug)]
pub struct BuiltinResource {
    /// API group (`""` is core).
    pub group: &'static str,
    /// The version this entry serves (a group may serve several: `autoscaling`).
    pub version: &'static str,
    /// Plural resource name.
    pub resource: &'static str,
    /// Singular name.
    pub singular: &'static str,
    /// `Kind` (the list kind is `Kind` + `List`).
    pub kind: &'static str,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Verbs, in kube's discovery order.
    pub verbs: Vec<&'static str>,
    /// `kubectl` short names.
    pub short_names: Vec<&'static str>,
    /// Categories (`kubectl get all`, ...).
    pub categories: Vec<&'static str>,
    /// Subresources, in kube's discovery order.
    pub subresources: Vec<Subresource>,
    /// kube's `storageVersionHash` (absent for kinds never stored).
    pub storage_version_hash: Option<&'static str>,
    /// Storage path under the prefix, as kube-apiserver keys it (`configmaps`,
    /// `services/specs`, `apiextensions.k8s.io/customresourcedefinitions`); empty for
    /// kinds never stored.
    pub storage: &'static str,
    /// OpenAPI definition name of the kind (`io.k8s.api.core.v1.ConfigMap`).
    pub definition: String,
    /// Whether kube maintains `metadata.generation` for this kind.
    pub generation: bool,
    /// Whether kube serves it without `--runtime-config` saying so.
    pub by_default: bool,
    /// The version its objects are stored in (its own unless another version of the
    /// same resource is kube's storage version).
    pub storage_version: &'static str,
}

impl BuiltinResource {
    /// Group and resource.
    pub fn gr(&self) -> GroupResource {
        GroupResource::new(self.group, self.resource)
    }

    /// `group/version`, or `v1` for core.
    pub fn group_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `Kind` + `List`.
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// A subresource by name.
    pub fn subresource(&self, name: &str) -> Option<&Subresource> {
        self.subresources.iter().find(|s| s.name == name)
    }

    /// Whether a subresource is listed.
    pub fn has_subresource(&self, name: &str) -> bool {
        self.subresource(name).is_some()
    }

    /// The `(group, version, kind)` a subresource answers with.
    pub fn subresource_kind(&self, sub: &str) -> (&'static str, &'static str, &'static str) {
        match self.subresource(sub) {
            Some(s) => (s.group, s.version, s.kind),
            None => (self.group, self.version, self.kind),
        }
    }

    /// Whether a verb is served on the main resource.
    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.contains(&verb)
    }

    /// Whether objects of this resource are stored (reviews, bindings and component
    /// statuses are not).
    pub fn is_stored(&self) -> bool {
        !self.storage.is_empty()
    }

    /// The REST descriptor of this resource under the storage key `prefix`.
    pub fn descriptor(&self, prefix: &str) -> Descriptor {
        Descriptor {
            gr: self.gr(),
            version: self.version.to_string(),
            kind: self.kind.to_string(),
            list_kind: self.list_kind(),
            singular: self.singular.to_string(),
            namespaced: self.namespaced,
            key_root: format!("{prefix}/{}", self.storage),
            status_subresource: self.has_subresource("status"),
            has_generation: self.generation,
        }
    }
}

/// kube-apiserver's etcd keys that are not the resource's name (its special resource
/// prefixes, and the keys of the apiextensions and aggregator servers).
pub const KUBE_STORAGE: &[(&str, &str, &str)] = &[
    ("", "replicationcontrollers", "controllers"),
    ("", "endpoints", "services/endpoints"),
    ("", "nodes", "minions"),
    ("", "services", "services/specs"),
    ("networking.k8s.io", "ingresses", "ingress"),
    (
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "apiextensions.k8s.io/customresourcedefinitions",
    ),
    (
        "apiregistration.k8s.io",
        "apiservices",
        "apiregistration.k8s.io/apiservices",
    ),
];

/// The resources whose kube strategy sets `metadata.generation` on create (and moves
/// it when the content changes).
pub const GENERATION: &[(&str, &str)] = &[
    ("", "pods"),
    ("", "podtemplates"),
    ("", "replicationcontrollers"),
    ("admissionregistration.k8s.io", "mutatingadmissionpolicies"),
    (
        "admissionregistration.k8s.io",
        "mutatingadmissionpolicybindings",
    ),
    (
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
    ),
    (
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
    ),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
    ("apps", "daemonsets"),
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
    ("batch", "cronjobs"),
    ("batch", "jobs"),
    ("discovery.k8s.io", "endpointslices"),
    ("flowcontrol.apiserver.k8s.io", "flowschemas"),
    (
        "flowcontrol.apiserver.k8s.io",
        "prioritylevelconfigurations",
    ),
    ("networking.k8s.io", "ingresses"),
    ("networking.k8s.io", "ingressclasses"),
    ("networking.k8s.io", "networkpolicies"),
    ("policy", "poddisruptionbudgets"),
    ("resource.k8s.io", "deviceclasses"),
    ("resource.k8s.io", "resourceslices"),
    ("scheduling.k8s.io", "priorityclasses"),
];

/// Resources listed in discovery that are never stored: answered (reviews, component
/// statuses) or handled by another resource's store (bindings).
const NOT_STORED: &[(&str, &str)] = &[
    ("", "bindings"),
    ("", "componentstatuses"),
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authentication.k8s.io", "tokenreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
];

/// An entry of a recorded legacy `APIResourceList` (borrowed from the embedded document).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RecordedResource<'a> {
    name: &'a str,
    #[serde(default)]
    singular_name: &'a str,
    namespaced: bool,
    #[serde(default)]
    group: Option<&'a str>,
    #[serde(default)]
    version: Option<&'a str>,
    kind: &'a str,
    #[serde(borrow)]
    verbs: Vec<&'a str>,
    #[serde(default, borrow)]
    short_names: Vec<&'a str>,
    #[serde(default, borrow)]
    categories: Vec<&'a str>,
    #[serde(default)]
    storage_version_hash: Option<&'a str>,
}

#[derive(Deserialize)]
struct RecordedList<'a> {
    #[serde(borrow)]
    resources: Vec<RecordedResource<'a>>,
}

/// The built-in groups and their versions (preferred first), in `/apis` order: kube's
/// recorded order, the group/versions `--runtime-config` may add placed by kube's
/// APIService priorities (a group by its `groupPriorityMinimum`, a version by its
/// `versionPriority`).
static GROUP_TABLE: LazyLock<Vec<(&'static str, Vec<&'static str>)>> = LazyLock::new(|| {
    let doc: Value = serde_json::from_str(kube_discovery::AGGREGATED_APIS).unwrap_or(Value::Null);
    let items = doc.get("items").and_then(Value::as_array);
    let mut out: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
    for item in items.into_iter().flatten() {
        let Some(name) = item.pointer("/metadata/name").and_then(Value::as_str) else {
            continue;
        };
        let versions: Vec<&'static str> = item
            .get("versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.get("version").and_then(Value::as_str))
            .filter_map(|v| recorded_version(name, v))
            .collect();
        if let Some((group, _, _)) = kube_discovery::GROUP_VERSIONS
            .iter()
            .find(|(g, _, _)| *g == name)
        {
            out.push((*group, versions));
        }
    }
    let priority = |g: &str, v: &str| apimachinery::apiservice::priority(g, v).unwrap_or((0, 0));
    for (group, version, _) in kube_discovery::RUNTIME_CONFIG_VERSIONS {
        match out.iter_mut().find(|(g, _)| g == group) {
            Some((_, versions)) => {
                versions.push(version);
                versions.sort_by_key(|v| std::cmp::Reverse(priority(group, v).1));
            }
            None => {
                let at = out
                    .iter()
                    .position(|(g, vs)| {
                        let first = vs.first().copied().unwrap_or_default();
                        apimachinery::apiservice::priority(g, first)
                            .is_some_and(|p| p.0 < priority(group, version).0)
                    })
                    .unwrap_or(out.len());
                out.insert(at, (group, vec![version]));
            }
        }
    }
    out
});

/// The recorded `(group, version)` as `'static` strings, if there is a document for it.
fn recorded_version(group: &str, version: &str) -> Option<&'static str> {
    kube_discovery::GROUP_VERSIONS
        .iter()
        .chain(kube_discovery::RUNTIME_CONFIG_VERSIONS)
        .find(|(g, v, _)| *g == group && *v == version)
        .map(|(_, v, _)| *v)
}

/// OpenAPI definition names by `(group, version, kind)`.
fn definitions_by_gvk() -> HashMap<(String, String, String), String> {
    let mut out = HashMap::new();
    for (name, def) in apimachinery::typed::builtin_definitions() {
        let gvks = def
            .get("x-kubernetes-group-version-kind")
            .and_then(Value::as_array);
        let Some([gvk]) = gvks.map(Vec::as_slice) else {
            continue;
        };
        let field = |k: &str| gvk.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        out.insert(
            (field("group"), field("version"), field("kind")),
            name.clone(),
        );
    }
    out
}

/// The resources of one recorded `APIResourceList`.
fn read_list(
    (group, version, json): (&'static str, &'static str, &'static str),
    by_default: bool,
    defs: &HashMap<(String, String, String), String>,
    out: &mut Vec<BuiltinResource>,
) {
    let list: RecordedList<'static> = match serde_json::from_str(json) {
        Ok(l) => l,
        Err(e) => unreachable!("recorded discovery of {group}/{version} is invalid: {e}"),
    };
    for r in list.resources {
        if let Some((parent, sub)) = r.name.split_once('/') {
            let Some(owner) = out
                .iter_mut()
                .rev()
                .find(|o| o.group == group && o.version == version && o.resource == parent)
            else {
                continue;
            };
            let foreign = r.group.is_some() || r.version.is_some();
            owner.subresources.push(Subresource {
                name: sub,
                verbs: r.verbs,
                group: r.group.unwrap_or(group),
                version: r.version.unwrap_or(version),
                kind: r.kind,
                foreign,
            });
            continue;
        }
        let gr = (group, r.name);
        let storage = if NOT_STORED.contains(&gr) {
            ""
        } else {
            KUBE_STORAGE
                .iter()
                .find(|(g, res, _)| (*g, *res) == gr)
                .map_or(r.name, |(_, _, key)| *key)
        };
        out.push(BuiltinResource {
            group,
            version,
            resource: r.name,
            singular: r.singular_name,
            kind: r.kind,
            namespaced: r.namespaced,
            verbs: r.verbs,
            short_names: r.short_names,
            categories: r.categories,
            subresources: Vec::new(),
            storage_version_hash: r.storage_version_hash,
            storage,
            definition: defs
                .get(&(group.to_string(), version.to_string(), r.kind.to_string()))
                .cloned()
                .unwrap_or_default(),
            generation: GENERATION.contains(&gr),
            by_default,
            storage_version: version,
        });
    }
}

/// Kube's `storageVersionHash`: base64 of the first 8 bytes of
/// `sha256("<group>/<version>/<kind>")`.
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    use base64::Engine;
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

/// Point every resource served in several versions at the one kube stores it in: the
/// version whose `storageVersionHash` its discovery entries carry.
fn set_storage_versions(table: &mut [BuiltinResource]) {
    let mut stored: HashMap<(&str, &str), &'static str> = HashMap::new();
    for r in table.iter() {
        let hash = storage_version_hash(r.group, r.version, r.kind);
        if r.storage_version_hash == Some(hash.as_str()) {
            stored.insert((r.group, r.resource), r.version);
        }
    }
    for r in table.iter_mut() {
        if let Some(version) = stored.get(&(r.group, r.resource)) {
            r.storage_version = version;
        }
    }
}

static TABLE: LazyLock<Vec<BuiltinResource>> = LazyLock::new(|| {
    let defs = definitions_by_gvk();
    let mut out = Vec::new();
    read_list(("", "v1", kube_discovery::CORE_V1), true, &defs, &mut out);
    for gv in kube_discovery::GROUP_VERSIONS {
        read_list(*gv, true, &defs, &mut out);
    }
    for gv in kube_discovery::RUNTIME_CONFIG_VERSIONS {
        read_list(*gv, false, &defs, &mut out);
    }
    set_storage_versions(&mut out);
    out
});

/// Every built-in resource, core first, then by group and version.
pub fn resources() -> &'static [BuiltinResource] {
    &TABLE
}

/// The non-core groups served with their versions (preferred first), in the order
/// kube-apiserver lists them in `/apis` (the aggregator's group priorities). Custom
/// resource groups come after all of these.
pub fn groups() -> &'static [(&'static str, Vec<&'static str>)] {
    &GROUP_TABLE
}

/// Whether a request may ask for a Table: kube converts only what a table convertor
/// serves, which every lister has and create-only kinds (access and token reviews)
/// and create-only subresources (`serviceaccounts/token`) do not: a 406 for them.
pub fn serves_tables(group: &str, version: &str, resource: &str, subresource: &str) -> bool {
    let Some(r) = lookup(group, version, resource) else {
        // Custom resources and unknown paths: tables (or a 404 later).
        return true;
    };
    let verbs = if subresource.is_empty() {
        &r.verbs
    } else {
        match r.subresource(subresource) {
            Some(s) => &s.verbs,
            None => return true,
        }
    };
    verbs.iter().any(|v| *v == "get" || *v == "list")
}

/// The entry for `group/version/resource`.
pub fn lookup(group: &str, version: &str, resource: &str) -> Option<&'static BuiltinResource> {
    index_of(group, version, resource).map(|i| &resources()[i])
}

/// Where `group/version/resource` sits in [`resources`]: every request asks (routing,
/// metrics, tables), so by a map, not a scan.
fn index_of(group: &str, version: &str, resource: &str) -> Option<usize> {
    type Index =
        HashMap<(&'static str, &'static str, &'static str), usize, foldhash::fast::FixedState>;
    static INDEX: LazyLock<Index> = LazyLock::new(|| {
        let mut index = Index::default();
        for (i, r) in resources().iter().enumerate() {
            index.entry((r.group, r.version, r.resource)).or_insert(i);
        }
        index
    });
    // The map's keys are `'static`; looked up with shorter-lived ones (covariance).
    let index: &HashMap<(&str, &str, &str), usize, foldhash::fast::FixedState> = &INDEX;
    index.get(&(group, version, resource)).copied()
}

/// The REST descriptor of the built-in `group`/`resource` (its preferred version: the
/// first listed) under the storage key `prefix`, for the kinds' constructors. A kind
/// missing from the table is a programming error that every server start (so every
/// integration test) reveals.
pub fn descriptor(group: &str, resource: &str, prefix: &str) -> Descriptor {
    let entry = resources()
        .iter()
        .find(|r| r.group == group && r.resource == resource);
    match entry {
        Some(r) => r.descriptor(prefix),
        None => unreachable!("{group}/{resource} is not in registry::builtin::resources()"),
    }
}

/// Whether `group` is served by this server itself (no CRD may take it over).
pub fn is_builtin_group(group: &str) -> bool {
    group.is_empty() || groups().iter().any(|(g, _)| *g == group)
}

/// Which entries of [`resources`] one server serves: kube's defaults, changed by its
/// `--runtime-config` (group/versions and single resources switched on or off).
#[derive(Clone, Debug)]
pub struct Served(Arc<Vec<bool>>);

impl Default for Served {
    fn default() -> Served {
        Served::kube_default()
    }
}

impl Served {
    /// What kube-apiserver serves with no `--runtime-config`.
    pub fn kube_default() -> Served {
        Served::new(&RuntimeConfig::default())
    }

    /// What kube-apiserver serves with `config`.
    pub fn new(config: &RuntimeConfig) -> Served {
        let on = resources()
            .iter()
            .map(|r| config.resource_enabled(r.group, r.version, r.resource, r.by_default))
            .collect();
        Served(Arc::new(on))
    }

    /// Every built-in resource served, in [`resources`] order.
    pub fn resources(&self) -> impl Iterator<Item = &'static BuiltinResource> + '_ {
        resources()
            .iter()
            .zip(self.0.iter())
            .filter(|(_, on)| **on)
            .map(|(r, _)| r)
    }

    /// Whether `group/version/resource` is served.
    pub fn serves(&self, group: &str, version: &str, resource: &str) -> bool {
        index_of(group, version, resource).is_some_and(|i| self.0.get(i) == Some(&true))
    }

    /// The resources served of one group-version, sorted by name as kube's discovery
    /// lists them.
    pub fn resources_of(&self, group: &str, version: &str) -> Vec<&'static BuiltinResource> {
        let mut out: Vec<&BuiltinResource> = self
            .resources()
            .filter(|r| r.group == group && r.version == version)
            .collect();
        out.sort_by_key(|r| r.resource);
        out
    }

    /// The non-core groups served with the versions served of each (preferred first),
    /// in `/apis` order.
    pub fn groups(&self) -> Vec<(&'static str, Vec<&'static str>)> {
        groups()
            .iter()
            .map(|(g, vs)| {
                let versions: Vec<&'static str> = vs
                    .iter()
                    .copied()
                    .filter(|v| self.resources().any(|r| r.group == *g && r.version == *v))
                    .collect();
                (*g, versions)
            })
            .filter(|(_, vs)| !vs.is_empty())
            .collect()
    }

    /// The non-core group-versions served, in `/apis` order (within a group, the
    /// preferred version first).
    pub fn group_versions(&self) -> Vec<(&'static str, &'static str)> {
        self.groups()
            .into_iter()
            .flat_map(|(g, vs)| vs.into_iter().map(move |v| (g, v)))
            .collect()
    }

    /// Whether `group/version` serves a resource (the core `v1` included).
    pub fn serves_version(&self, group: &str, version: &str) -> bool {
        self.resources()
            .any(|r| r.group == group && r.version == version)
    }
}

/// kube's deprecation warning of a built-in resource version still served (its
/// `rest.Storage` says `Deprecated`), sent on every request to it.
pub fn deprecation_warning(group: &str, version: &str, resource: &str) -> Option<&'static str> {
    match (group, version, resource) {
        ("", "v1", "componentstatuses") => Some("v1 ComponentStatus is deprecated in v1.19+"),
        ("", "v1", "endpoints") => {
            Some("v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_resource_belongs_to_a_listed_group() {
        for r in resources() {
            assert!(
                r.group.is_empty()
                    || groups()
                        .iter()
                        .any(|(g, vs)| *g == r.group && vs.contains(&r.version)),
                "{} has an unlisted group {}",
                r.resource,
                r.group
            );
        }
    }

    #[test]
    fn runtime_config_switches_versions_and_resources() {
        let served = |flags: &[&str]| {
            let flags: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
            Served::new(&RuntimeConfig::from_flags(&flags).expect("valid"))
        };
        let default = Served::kube_default();
        assert!(default.serves("networking.k8s.io", "v1", "ipaddresses"));
        assert!(!default.serves("networking.k8s.io", "v1beta1", "ipaddresses"));
        assert!(!default
            .group_versions()
            .contains(&("resource.k8s.io", "v1beta2")));
        let beta = served(&["networking.k8s.io/v1beta1=true"]);
        assert!(beta.serves("networking.k8s.io", "v1beta1", "servicecidrs"));
        assert!(!beta.serves("storage.k8s.io", "v1beta1", "volumeattributesclasses"));
        let all = served(&["api/all=true"]);
        let resource = all
            .groups()
            .into_iter()
            .find(|(g, _)| *g == "resource.k8s.io")
            .map(|(_, vs)| vs);
        assert_eq!(resource, Some(vec!["v1", "v1beta2", "v1beta1", "v1alpha3"]));
        let names: Vec<&str> = all.groups().iter().map(|(g, _)| *g).collect();
        let pos = |g: &str| names.iter().position(|n| *n == g).expect("listed");
        assert!(pos("flowcontrol.apiserver.k8s.io") < pos("internal.apiserver.k8s.io"));
        let no_deploy = served(&["apps/v1/deployments=false"]);
        assert!(!no_deploy.serves("apps", "v1", "deployments"));
        assert!(no_deploy.serves("apps", "v1", "replicasets"));
    }

    #[test]
    fn a_resource_in_several_versions_is_stored_in_kubes_storage_version() {
        let version = |g: &str, v: &str, r: &str| lookup(g, v, r).map(|r| r.storage_version);
        assert_eq!(
            version("autoscaling", "v1", "horizontalpodautoscalers"),
            Some("v2")
        );
        assert_eq!(
            version("networking.k8s.io", "v1beta1", "ipaddresses"),
            Some("v1")
        );
        assert_eq!(
            version("resource.k8s.io", "v1beta1", "resourceclaims"),
            Some("v1")
        );
        assert_eq!(
            version("coordination.k8s.io", "v1alpha2", "leasecandidates"),
            Some("v1beta1")
        );
        assert_eq!(
            version("resource.k8s.io", "v1beta2", "devicetaintrules"),
            Some("v1alpha3")
        );
        assert_eq!(version("apps", "v1", "deployments"), Some("v1"));
    }

    #[test]
    fn resources_are_unique() {
        let all = resources();
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert!(
                    (a.group, a.version, a.resource) != (b.group, b.version, b.resource),
                    "{} twice",
                    a.resource
                );
            }
        }
    }

    #[test]
    fn every_stored_resource_has_an_openapi_definition() {
        for r in resources().iter().filter(|r| r.is_stored()) {
            assert!(!r.definition.is_empty(), "{}/{}", r.group, r.resource);
        }
    }

    #[test]
    fn the_table_carries_kubes_discovery() {
        let deploy = lookup("apps", "v1", "deployments").expect("deployments");
        assert_eq!(deploy.short_names, ["deploy"]);
        assert_eq!(deploy.categories, ["all"]);
        assert_eq!(deploy.storage_version_hash, Some("8aSe+NMegvE="));
        assert_eq!(
            deploy.subresource_kind("scale"),
            ("autoscaling", "v1", "Scale")
        );
        assert_eq!(
            deploy.subresource_kind("status"),
            ("apps", "v1", "Deployment")
        );
        assert!(deploy.generation);
        assert_eq!(deploy.definition, "io.k8s.api.apps.v1.Deployment");
        let sa = lookup("", "v1", "serviceaccounts").expect("serviceaccounts");
        assert_eq!(
            sa.subresource_kind("token"),
            ("authentication.k8s.io", "v1", "TokenRequest")
        );
        assert_eq!(
            groups()
                .iter()
                .find(|(g, _)| *g == "autoscaling")
                .map(|(_, v)| v.clone()),
            Some(vec!["v2", "v1"])
        );
        assert!(!lookup("", "v1", "services").expect("services").generation);
    }

    #[test]
    fn descriptors_key_objects_as_kube() {
        let ns = lookup("", "v1", "namespaces").expect("namespaces");
        assert_eq!(
            ns.descriptor("/registry").key("", "default"),
            "/registry/namespaces/default"
        );
        let crd = lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions").expect("crds");
        assert_eq!(
            crd.descriptor("/registry").key("", "a.b"),
            "/registry/apiextensions.k8s.io/customresourcedefinitions/a.b"
        );
        let svc = lookup("", "v1", "services").expect("services");
        assert_eq!(
            svc.descriptor("/registry").key("default", "s"),
            "/registry/services/specs/default/s"
        );
        let deploy = lookup("apps", "v1", "deployments").expect("deployments");
        assert_eq!(
            deploy.descriptor("/registry").key("default", "d"),
            "/registry/deployments/default/d"
        );
    }

    #[test]
    fn groups_are_listed_in_kubes_priority_order() {
        let names: Vec<&str> = Served::kube_default()
            .groups()
            .iter()
            .map(|(g, _)| *g)
            .collect();
        assert_eq!(names.first(), Some(&"apiregistration.k8s.io"));
        assert_eq!(names.last(), Some(&"flowcontrol.apiserver.k8s.io"));
        let pos = |g: &str| names.iter().position(|n| *n == g).expect("listed");
        assert!(pos("apps") < pos("events.k8s.io"));
        assert!(pos("events.k8s.io") < pos("authorization.k8s.io"));
        assert!(pos("rbac.authorization.k8s.io") < pos("admissionregistration.k8s.io"));
        assert!(pos("admissionregistration.k8s.io") < pos("apiextensions.k8s.io"));
        assert!(pos("apiextensions.k8s.io") < pos("coordination.k8s.io"));
    }
}
