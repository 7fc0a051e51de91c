//! Discovery documents, in the JSON shapes kube-apiserver serves: `/api`, `/api/v1`,
//! `/apis`, `/apis/{group}`, `/apis/{group}/{version}`, and aggregated discovery
//! (`apidiscovery.k8s.io/v2`) for `/api` and `/apis`.
//!
//! The HTTP layer picks the document; these functions only build it. Notes for it:
//! - Aggregated discovery is chosen by `Accept:
//!   application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList` (kubectl
//!   sends that first, then `v2beta1`, then plain `application/json`), and the response
//!   must carry that same media type as `Content-Type`, or client-go falls back to the
//!   legacy documents.
//! - Only CRDs that are `Established` belong in the `crds` slices.

pub use crate::registry::builtin::storage_version_hash;
use crate::registry::builtin::{self, BuiltinResource, Served};
use crate::registry::crd::{compare_kube_aware_versions, CrdInfo};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Verbs of a custom resource, in the order kube lists them.
const CR_VERBS: &[&str] = &[
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];
/// Verbs of a custom resource whose CRD is being deleted.
const CR_TERMINATING_VERBS: &[&str] = &["delete", "deletecollection", "get", "list", "watch"];
/// Verbs of the `status` and `scale` subresources.
const SUBRESOURCE_VERBS: &[&str] = &["get", "patch", "update"];

/// `GET /api`: the legacy core group's versions. `server_address` is `host:port` as
/// clients reach this server.
pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

/// A built-in resource's entries in a legacy `APIResourceList`.
fn legacy(r: &BuiltinResource) -> Vec<Value> {
    let mut main = json!({
        "name": r.resource,
        "singularName": r.singular,
        "namespaced": r.namespaced,
        "kind": r.kind,
        "verbs": r.verbs,
    });
    if !r.short_names.is_empty() {
        main["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        main["categories"] = json!(r.categories);
    }
    if let Some(hash) = r.storage_version_hash {
        main["storageVersionHash"] = json!(hash);
    }
    let mut out = vec![main];
    for sub in &r.subresources {
        let mut entry = json!({
            "name": format!("{}/{}", r.resource, sub.name),
            "singularName": "",
            "namespaced": r.namespaced,
            "kind": sub.kind,
            "verbs": sub.verbs,
        });
        // kube names the group and version of a subresource of another group's kind.
        if sub.foreign {
            entry["group"] = json!(sub.group);
            entry["version"] = json!(sub.version);
        }
        out.push(entry);
    }
    out
}

/// A kind in aggregated discovery: kube leaves group and version empty for a kind of
/// the group-version listed.
fn response_kind(group: &str, version: &str, kind: &str, foreign: bool) -> Value {
    if foreign {
        json!({"group": group, "version": version, "kind": kind})
    } else {
        json!({"group": "", "version": "", "kind": kind})
    }
}

/// A built-in resource in aggregated discovery.
fn aggregated(r: &BuiltinResource) -> Value {
    let subresources: Vec<Value> = r
        .subresources
        .iter()
        .map(|sub| {
            let kind = response_kind(sub.group, sub.version, sub.kind, sub.foreign);
            json!({"subresource": sub.name, "responseKind": kind, "verbs": sub.verbs})
        })
        .collect();
    let mut out = json!({
        "resource": r.resource,
        "responseKind": response_kind(r.group, r.version, r.kind, false),
        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": r.singular,
        "verbs": r.verbs,
    });
    if !r.short_names.is_empty() {
        out["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        out["categories"] = json!(r.categories);
    }
    if !subresources.is_empty() {
        out["subresources"] = json!(subresources);
    }
    out
}

/// The legacy resource list entries of a built-in group-version.
fn builtin_legacy(served: &Served, group: &str, version: &str) -> Vec<Value> {
    served
        .resources_of(group, version)
        .into_iter()
        .flat_map(legacy)
        .collect()
}

/// The aggregated discovery of a built-in group-version.
fn builtin_version_discovery(served: &Served, group: &str, version: &str) -> Value {
    let resources = served
        .resources_of(group, version)
        .into_iter()
        .map(aggregated)
        .collect();
    version_discovery(version, resources)
}

/// `GET /api/v1`: the core resources this server serves.
pub fn core_v1_resources(served: &Served) -> Value {
    json!({
        "kind": "APIResourceList",
        "groupVersion": "v1",
        "resources": builtin_legacy(served, "", "v1"),
    })
}

fn group_version(group: &str, version: &str) -> Value {
    json!({"groupVersion": format!("{group}/{version}"), "version": version})
}

/// The served versions of each CRD group, highest priority first (kube's
/// `CompareKubeAwareVersionStrings`: GA > beta > alpha, higher numbers first, then
/// other names alphabetically).
fn crd_groups(crds: &[Arc<CrdInfo>]) -> BTreeMap<String, Vec<String>> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for crd in crds {
        let versions = groups.entry(crd.group.clone()).or_default();
        for v in crd.versions.iter().filter(|v| v.served) {
            if !versions.contains(&v.name) {
                versions.push(v.name.clone());
            }
        }
    }
    groups.retain(|_, versions| !versions.is_empty());
    for versions in groups.values_mut() {
        versions.sort_by(|a, b| compare_kube_aware_versions(b, a));
    }
    groups
}

fn api_group_json(name: &str, versions: &[String]) -> Value {
    let gvs: Vec<Value> = versions.iter().map(|v| group_version(name, v)).collect();
    json!({
        "name": name,
        "versions": gvs,
        "preferredVersion": group_version(name, &versions[0]),
    })
}

/// The built-in groups with the versions they serve (preferred first), in `/apis` order.
fn builtin_group_versions(served: &Served) -> Vec<(&'static str, Vec<String>)> {
    served
        .groups()
        .into_iter()
        .map(|(g, vs)| (g, vs.iter().map(|v| v.to_string()).collect()))
        .collect()
}

/// The built-in groups' `APIGroup` entries, in `/apis` order.
fn builtin_groups(served: &Served) -> Vec<Value> {
    builtin_group_versions(served)
        .into_iter()
        .map(|(g, vs)| api_group_json(g, &vs))
        .collect()
}

/// `GET /apis`: `admissionregistration.k8s.io` and `apiextensions.k8s.io` first, then the CRD groups in the order kube's
/// aggregator lists equal-priority groups (by the name `<version>.<group>` of their
/// APIServices).
pub fn api_group_list(served: &Served, crds: &[Arc<CrdInfo>]) -> Value {
    let mut groups: Vec<(String, Vec<String>)> = crd_groups(crds)
        .into_iter()
        .filter(|(g, _)| !builtin::is_builtin_group(g))
        .collect();
    let service_name = |(g, vs): &(String, Vec<String>)| {
        vs.iter()
            .map(|v| format!("{v}.{g}"))
            .min()
            .unwrap_or_default()
    };
    groups.sort_by_key(service_name);
    let mut items = builtin_groups(served);
    items.extend(groups.iter().map(|(g, vs)| api_group_json(g, vs)));
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": items})
}

/// `GET /apis/{group}`; `None` (404) for an unknown group.
pub fn api_group(served: &Served, group: &str, crds: &[Arc<CrdInfo>]) -> Option<Value> {
    let builtin_versions = builtin_group_versions(served)
        .into_iter()
        .find(|(g, _)| *g == group);
    let mut doc = if let Some((g, vs)) = builtin_versions {
        api_group_json(g, &vs)
    } else {
        let groups = crd_groups(crds);
        api_group_json(group, groups.get(group)?)
    };
    let obj = doc.as_object_mut()?;
    let mut out = Map::new();
    out.insert("kind".into(), json!("APIGroup"));
    out.insert("apiVersion".into(), json!("v1"));
    out.append(obj);
    Some(Value::Object(out))
}

fn verbs(crd: &CrdInfo) -> &'static [&'static str] {
    if crd.terminating {
        CR_TERMINATING_VERBS
    } else {
        CR_VERBS
    }
}

/// The CRDs serving `group/version`, by resource name.
fn served_in<'a>(group: &str, version: &str, crds: &'a [Arc<CrdInfo>]) -> Vec<&'a CrdInfo> {
    let mut out: Vec<&CrdInfo> = crds
        .iter()
        .filter(|c| c.group == group && c.served_version(version).is_some())
        .map(|c| &**c)
        .collect();
    out.sort_by(|a, b| a.plural.cmp(&b.plural));
    out
}

/// `GET /apis/{group}/{version}`; `None` (404) when nothing is served there.
pub fn api_resource_list(
    served: &Served,
    group: &str,
    version: &str,
    crds: &[Arc<CrdInfo>],
) -> Option<Value> {
    let resources = if builtin::is_builtin_group(group) {
        let resources = builtin_legacy(served, group, version);
        if resources.is_empty() {
            return None;
        }
        resources
    } else {
        let served = served_in(group, version, crds);
        if served.is_empty() {
            return None;
        }
        let mut resources = Vec::new();
        for crd in served {
            let Some(v) = crd.served_version(version) else {
                continue;
            };
            let mut main = json!({
                "name": crd.plural,
                "singularName": crd.singular,
                "namespaced": crd.namespaced,
                "kind": crd.kind,
                "verbs": verbs(crd),
            });
            if !crd.short_names.is_empty() {
                main["shortNames"] = json!(crd.short_names);
            }
            if !crd.categories.is_empty() {
                main["categories"] = json!(crd.categories);
            }
            // Kube only hashes a storage version that is also served.
            if let Some(storage) = crd.storage_version().filter(|s| s.served) {
                main["storageVersionHash"] =
                    json!(storage_version_hash(&crd.group, &storage.name, &crd.kind));
            }
            resources.push(main);
            if v.status_subresource {
                resources.push(json!({
                    "name": format!("{}/status", crd.plural),
                    "singularName": "",
                    "namespaced": crd.namespaced,
                    "kind": crd.kind,
                    "verbs": SUBRESOURCE_VERBS,
                }));
            }
            if v.scale.is_some() {
                resources.push(json!({
                    "name": format!("{}/scale", crd.plural),
                    "singularName": "",
                    "namespaced": crd.namespaced,
                    "group": "autoscaling",
                    "version": "v1",
                    "kind": "Scale",
                    "verbs": SUBRESOURCE_VERBS,
                }));
            }
        }
        resources
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": format!("{group}/{version}"),
        "resources": resources,
    }))
}

fn discovery_list(items: Vec<Value>) -> Value {
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

fn group_discovery(name: &str, versions: Vec<Value>) -> Value {
    let metadata = if name.is_empty() {
        json!({})
    } else {
        json!({"name": name})
    };
    json!({"metadata": metadata, "versions": versions})
}

fn version_discovery(version: &str, resources: Vec<Value>) -> Value {
    json!({"version": version, "resources": resources, "freshness": "Current"})
}

/// Aggregated discovery for `GET /api`.
pub fn aggregated_core(served: &Served) -> Value {
    discovery_list(vec![group_discovery(
        "",
        vec![builtin_version_discovery(served, "", "v1")],
    )])
}

/// Aggregated discovery for `GET /apis`: `admissionregistration.k8s.io` and
/// `apiextensions.k8s.io` (the higher group priorities), then the CRD groups alphabetically, versions by kube's version priority.
pub fn aggregated_apis(served: &Served, crds: &[Arc<CrdInfo>]) -> Value {
    let mut items: Vec<Value> = builtin_group_versions(served)
        .into_iter()
        .map(|(g, vs)| {
            let versions = vs
                .iter()
                .map(|v| builtin_version_discovery(served, g, v))
                .collect();
            group_discovery(g, versions)
        })
        .collect();
    for (group, versions) in crd_groups(crds) {
        if builtin::is_builtin_group(&group) {
            continue;
        }
        let versions: Vec<Value> = versions
            .iter()
            .map(|v| version_discovery(v, aggregated_resources(&group, v, crds)))
            .collect();
        items.push(group_discovery(&group, versions));
    }
    discovery_list(items)
}

fn aggregated_resources(group: &str, version: &str, crds: &[Arc<CrdInfo>]) -> Vec<Value> {
    let mut out = Vec::new();
    for crd in served_in(group, version, crds) {
        let Some(v) = crd.served_version(version) else {
            continue;
        };
        let gvk = json!({"group": group, "version": version, "kind": crd.kind});
        let mut subresources = Vec::new();
        if v.status_subresource {
            subresources.push(
                json!({"subresource": "status", "responseKind": gvk, "verbs": SUBRESOURCE_VERBS}),
            );
        }
        if v.scale.is_some() {
            subresources.push(json!({
                "subresource": "scale",
                "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                "verbs": SUBRESOURCE_VERBS,
            }));
        }
        let mut r = json!({
            "resource": crd.plural,
            "responseKind": gvk,
            "scope": if crd.namespaced { "Namespaced" } else { "Cluster" },
            "singularResource": crd.singular,
            "verbs": verbs(crd),
        });
        if !crd.short_names.is_empty() {
            r["shortNames"] = json!(crd.short_names);
        }
        if !crd.categories.is_empty() {
            r["categories"] = json!(crd.categories);
        }
        if !subresources.is_empty() {
            r["subresources"] = json!(subresources);
        }
        out.push(r);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::crd::{default_crd, CrdInfo, APIEXTENSIONS_GROUP};

    /// The built-in groups, which `/apis` lists before any CRD group.
    fn builtin_group_names() -> Vec<&'static str> {
        builtin_group_versions(&Served::kube_default())
            .iter()
            .map(|(g, _)| *g)
            .collect()
    }

    fn info(group: &str, plural: &str, kind: &str, versions: &[(&str, bool, bool)]) -> CrdInfo {
        let vs: Vec<Value> = versions
            .iter()
            .map(|(n, served, storage)| {
                json!({"name": n, "served": served, "storage": storage,
                "schema": {"openAPIV3Schema": {"type": "object"}}})
            })
            .collect();
        let mut crd = json!({
            "metadata": {"name": format!("{plural}.{group}")},
            "spec": {"group": group, "scope": "Namespaced", "names": {"plural": plural, "kind": kind}, "versions": vs}
        });
        default_crd(&mut crd);
        CrdInfo::from_crd(&crd).expect("valid")
    }

    fn widgets() -> CrdInfo {
        let mut crd = json!({
            "metadata": {"name": "widgets.crud.example.com"},
            "spec": {"group": "crud.example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"], "categories": ["all"]},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                    "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}}}]}
        });
        default_crd(&mut crd);
        CrdInfo::from_crd(&crd).expect("valid")
    }

    #[test]
    fn storage_version_hash_matches_kube() {
        // The value every kube-apiserver publishes for namespaces.
        assert_eq!(storage_version_hash("", "v1", "Namespace"), "Q3oi5N2YM8M=");
        let core = core_v1_resources(&Served::kube_default());
        let ns = core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "namespaces")
            .expect("namespaces listed");
        assert_eq!(ns["storageVersionHash"], "Q3oi5N2YM8M=");
    }

    #[test]
    fn api_versions_shape() {
        assert_eq!(
            api_versions("127.0.0.1:6443"),
            json!({"kind": "APIVersions", "versions": ["v1"],
                   "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}]})
        );
    }

    #[test]
    fn core_v1_lists_namespaces_and_subresources() {
        let doc = core_v1_resources(&Served::kube_default());
        assert_eq!(doc["kind"], "APIResourceList");
        assert_eq!(doc["groupVersion"], "v1");
        let names: Vec<&str> = doc["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        // Sorted by name as kube lists them, each resource followed by its subresources.
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(names, sorted);
        let at = names
            .iter()
            .position(|n| *n == "namespaces")
            .expect("listed");
        assert_eq!(
            names[at..at + 3],
            ["namespaces", "namespaces/finalize", "namespaces/status"]
        );
        assert_eq!(doc["resources"][at]["shortNames"], json!(["ns"]));
        assert_eq!(doc["resources"][at]["namespaced"], false);
        assert_eq!(doc["resources"][at + 1]["verbs"], json!(["update"]));
        assert_eq!(doc["resources"][at + 2]["singularName"], "");
    }

    #[test]
    fn crd_resource_list_matches_kube_shape() {
        let doc = api_resource_list(
            &Served::kube_default(),
            "crud.example.com",
            "v1",
            &[Arc::new(widgets())],
        )
        .expect("served");
        assert_eq!(
            doc,
            json!({
                "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "crud.example.com/v1",
                "resources": [
                    {"name": "widgets", "singularName": "widget", "namespaced": true, "kind": "Widget",
                     "verbs": ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"],
                     "shortNames": ["wd"], "categories": ["all"],
                     "storageVersionHash": storage_version_hash("crud.example.com", "v1", "Widget")},
                    {"name": "widgets/status", "singularName": "", "namespaced": true, "kind": "Widget", "verbs": ["get", "patch", "update"]},
                    {"name": "widgets/scale", "singularName": "", "namespaced": true, "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}
                ]
            })
        );
        assert!(api_resource_list(
            &Served::kube_default(),
            "crud.example.com",
            "v2",
            &[Arc::new(widgets())]
        )
        .is_none());
        assert!(api_resource_list(
            &Served::kube_default(),
            "nope.example.com",
            "v1",
            &[Arc::new(widgets())]
        )
        .is_none());
    }

    #[test]
    fn apiextensions_resource_list() {
        let doc = api_resource_list(&Served::kube_default(), APIEXTENSIONS_GROUP, "v1", &[])
            .expect("built in");
        assert_eq!(doc["resources"][0]["name"], "customresourcedefinitions");
        assert_eq!(doc["resources"][0]["shortNames"], json!(["crd", "crds"]));
        assert_eq!(doc["resources"][0]["categories"], json!(["api-extensions"]));
        assert_eq!(
            doc["resources"][1]["name"],
            "customresourcedefinitions/status"
        );
        assert!(
            api_resource_list(&Served::kube_default(), APIEXTENSIONS_GROUP, "v1beta1", &[])
                .is_none()
        );
    }

    #[test]
    fn versions_ordered_by_kube_priority() {
        let crd = info(
            "multi.example.com",
            "things",
            "Thing",
            &[
                ("foo10", true, false),
                ("v1alpha1", true, false),
                ("v2beta1", true, false),
                ("v1", true, true),
                ("v10", true, false),
                ("foo1", true, false),
                ("v11alpha2", true, false),
                ("v3beta1", true, false),
                ("v0", false, false),
            ],
        );
        let group = api_group(
            &Served::kube_default(),
            "multi.example.com",
            &[Arc::new(crd)],
        )
        .expect("group");
        let versions: Vec<&str> = group["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["version"].as_str().unwrap())
            .collect();
        // The order kube documents: v10, v2, v1, v11beta2, v10beta3, v3beta1, v12alpha1, v11alpha2, foo1, foo10.
        assert_eq!(
            versions,
            vec![
                "v10",
                "v1",
                "v3beta1",
                "v2beta1",
                "v11alpha2",
                "v1alpha1",
                "foo1",
                "foo10"
            ]
        );
        assert_eq!(
            group["preferredVersion"],
            json!({"groupVersion": "multi.example.com/v10", "version": "v10"})
        );
        assert_eq!(group["kind"], "APIGroup");
    }

    #[test]
    fn group_list_puts_apiextensions_first() {
        let crds = [
            info("b.example.com", "bs", "B", &[("v1", true, true)]),
            info("a.example.com", "as", "A", &[("v1beta1", true, true)]),
            widgets(),
        ]
        .map(Arc::new);
        let doc = api_group_list(&Served::kube_default(), &crds);
        let names: Vec<&str> = doc["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].as_str().unwrap())
            .collect();
        // APIService names: v1.b.example.com < v1.crud.example.com < v1beta1.a.example.com.
        let mut expected = builtin_group_names();
        expected.extend(["b.example.com", "crud.example.com", "a.example.com"]);
        assert_eq!(names, expected);
        assert_eq!(doc["kind"], "APIGroupList");
        let ext = names
            .iter()
            .position(|n| *n == APIEXTENSIONS_GROUP)
            .expect("listed");
        assert_eq!(
            doc["groups"][ext]["preferredVersion"]["groupVersion"],
            "apiextensions.k8s.io/v1"
        );
    }

    #[test]
    fn unserved_groups_are_hidden() {
        let crds = [info(
            "hidden.example.com",
            "hs",
            "H",
            &[("v1", false, true)],
        )]
        .map(Arc::new);
        assert!(api_group(&Served::kube_default(), "hidden.example.com", &crds).is_none());
        assert_eq!(
            api_group_list(&Served::kube_default(), &crds)["groups"]
                .as_array()
                .unwrap()
                .len(),
            builtin_group_names().len()
        );
    }

    #[test]
    fn aggregated_discovery_shapes() {
        let core = aggregated_core(&Served::kube_default());
        assert_eq!(core["kind"], "APIGroupDiscoveryList");
        assert_eq!(core["apiVersion"], "apidiscovery.k8s.io/v2");
        let ns = core["items"][0]["versions"][0]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["resource"] == "namespaces")
            .expect("namespaces listed");
        assert_eq!(ns["scope"], "Cluster");
        assert_eq!(
            ns["responseKind"],
            json!({"group": "", "version": "", "kind": "Namespace"})
        );
        assert_eq!(core["items"][0]["versions"][0]["freshness"], "Current");

        let apis = aggregated_apis(&Served::kube_default(), &[Arc::new(widgets())]);
        let builtins = builtin_group_names();
        for (i, name) in builtins.iter().enumerate() {
            assert_eq!(apis["items"][i]["metadata"]["name"], *name);
        }
        let group = &apis["items"][builtins.len()];
        assert_eq!(group["metadata"]["name"], "crud.example.com");
        let widget = &group["versions"][0]["resources"][0];
        assert_eq!(
            *widget,
            json!({
                "resource": "widgets", "singularResource": "widget", "scope": "Namespaced",
                "responseKind": {"group": "crud.example.com", "version": "v1", "kind": "Widget"},
                "verbs": ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"],
                "shortNames": ["wd"], "categories": ["all"],
                "subresources": [
                    {"subresource": "status", "responseKind": {"group": "crud.example.com", "version": "v1", "kind": "Widget"}, "verbs": ["get", "patch", "update"]},
                    {"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"}, "verbs": ["get", "patch", "update"]}
                ]
            })
        );
    }

    #[test]
    fn terminating_crds_lose_write_verbs() {
        let mut w = widgets();
        w.terminating = true;
        let doc = api_resource_list(
            &Served::kube_default(),
            "crud.example.com",
            "v1",
            &[Arc::new(w)],
        )
        .expect("served");
        assert_eq!(
            doc["resources"][0]["verbs"],
            json!(["delete", "deletecollection", "get", "list", "watch"])
        );
    }
}
