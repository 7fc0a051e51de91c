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

use crate::registry::crd::{compare_kube_aware_versions, CrdInfo, APIEXTENSIONS_GROUP};
use base64::Engine;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The version of the `apiextensions.k8s.io` group this server serves.
const APIEXTENSIONS_VERSION: &str = "v1";

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

/// Kube's `storageVersionHash`: base64 of the first 8 bytes of
/// `sha256("<group>/<version>/<kind>")`.
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    let digest = Sha256::digest(format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

/// `GET /api`: the legacy core group's versions. `server_address` is `host:port` as
/// clients reach this server.
pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

/// A built-in resource this server serves, described once for both discovery formats.
struct BuiltinResource {
    group: &'static str,
    version: &'static str,
    name: &'static str,
    singular: &'static str,
    kind: &'static str,
    verbs: &'static [&'static str],
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    /// `(subresource, verbs)`.
    subresources: &'static [(&'static str, &'static [&'static str])],
}

const NAMESPACES: BuiltinResource = BuiltinResource {
    group: "",
    version: "v1",
    name: "namespaces",
    singular: "namespace",
    kind: "Namespace",
    verbs: &[
        "create", "delete", "get", "list", "patch", "update", "watch",
    ],
    short_names: &["ns"],
    categories: &[],
    subresources: &[
        ("finalize", &["update"]),
        ("status", &["get", "patch", "update"]),
    ],
};

const CUSTOM_RESOURCE_DEFINITIONS: BuiltinResource = BuiltinResource {
    group: APIEXTENSIONS_GROUP,
    version: APIEXTENSIONS_VERSION,
    name: "customresourcedefinitions",
    singular: "customresourcedefinition",
    kind: "CustomResourceDefinition",
    verbs: &[
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ],
    short_names: &["crd", "crds"],
    categories: &["api-extensions"],
    subresources: &[("status", &["get", "patch", "update"])],
};

/// The group and version of the webhook configurations.
const ADMISSIONREGISTRATION_GROUP: &str = "admissionregistration.k8s.io";
const ADMISSIONREGISTRATION_VERSION: &str = "v1";

const WEBHOOK_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

const MUTATING_WEBHOOK_CONFIGURATIONS: BuiltinResource = BuiltinResource {
    group: ADMISSIONREGISTRATION_GROUP,
    version: ADMISSIONREGISTRATION_VERSION,
    name: "mutatingwebhookconfigurations",
    singular: "mutatingwebhookconfiguration",
    kind: "MutatingWebhookConfiguration",
    verbs: WEBHOOK_VERBS,
    short_names: &[],
    categories: &["api-extensions"],
    subresources: &[],
};

const VALIDATING_WEBHOOK_CONFIGURATIONS: BuiltinResource = BuiltinResource {
    group: ADMISSIONREGISTRATION_GROUP,
    version: ADMISSIONREGISTRATION_VERSION,
    name: "validatingwebhookconfigurations",
    singular: "validatingwebhookconfiguration",
    kind: "ValidatingWebhookConfiguration",
    verbs: WEBHOOK_VERBS,
    short_names: &[],
    categories: &["api-extensions"],
    subresources: &[],
};

impl BuiltinResource {
    fn legacy(&self) -> Vec<Value> {
        let mut main = json!({
            "name": self.name,
            "singularName": self.singular,
            "namespaced": false,
            "kind": self.kind,
            "verbs": self.verbs,
            "storageVersionHash": storage_version_hash(self.group, self.version, self.kind),
        });
        if !self.short_names.is_empty() {
            main["shortNames"] = json!(self.short_names);
        }
        if !self.categories.is_empty() {
            main["categories"] = json!(self.categories);
        }
        let mut out = vec![main];
        for (sub, verbs) in self.subresources {
            out.push(json!({
                "name": format!("{}/{sub}", self.name),
                "singularName": "",
                "namespaced": false,
                "kind": self.kind,
                "verbs": verbs,
            }));
        }
        out
    }

    fn aggregated(&self) -> Value {
        let gvk = json!({"group": self.group, "version": self.version, "kind": self.kind});
        let subresources: Vec<Value> = self
            .subresources
            .iter()
            .map(|(sub, verbs)| json!({"subresource": sub, "responseKind": gvk, "verbs": verbs}))
            .collect();
        let mut r = json!({
            "resource": self.name,
            "responseKind": gvk,
            "scope": "Cluster",
            "singularResource": self.singular,
            "verbs": self.verbs,
        });
        if !self.short_names.is_empty() {
            r["shortNames"] = json!(self.short_names);
        }
        if !self.categories.is_empty() {
            r["categories"] = json!(self.categories);
        }
        if !subresources.is_empty() {
            r["subresources"] = json!(subresources);
        }
        r
    }
}

/// `GET /api/v1`: the core resources this server serves (namespaces).
pub fn core_v1_resources() -> Value {
    json!({
        "kind": "APIResourceList",
        "groupVersion": "v1",
        "resources": NAMESPACES.legacy(),
    })
}

fn group_version(group: &str, version: &str) -> Value {
    json!({"groupVersion": format!("{group}/{version}"), "version": version})
}

/// The served versions of each CRD group, highest priority first (kube's
/// `CompareKubeAwareVersionStrings`: GA > beta > alpha, higher numbers first, then
/// other names alphabetically).
fn crd_groups(crds: &[CrdInfo]) -> BTreeMap<String, Vec<String>> {
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

fn apiextensions_group() -> Value {
    api_group_json(APIEXTENSIONS_GROUP, &[APIEXTENSIONS_VERSION.to_string()])
}

fn admissionregistration_group() -> Value {
    api_group_json(
        ADMISSIONREGISTRATION_GROUP,
        &[ADMISSIONREGISTRATION_VERSION.to_string()],
    )
}

/// Groups served by this server itself, in kube's order (no CRD may take them over).
fn is_builtin_group(group: &str) -> bool {
    group == APIEXTENSIONS_GROUP || group == ADMISSIONREGISTRATION_GROUP
}

/// `GET /apis`: `admissionregistration.k8s.io` and `apiextensions.k8s.io` first, then the CRD groups in the order kube's
/// aggregator lists equal-priority groups (by the name `<version>.<group>` of their
/// APIServices).
pub fn api_group_list(crds: &[CrdInfo]) -> Value {
    let mut groups: Vec<(String, Vec<String>)> = crd_groups(crds)
        .into_iter()
        .filter(|(g, _)| !is_builtin_group(g))
        .collect();
    let service_name = |(g, vs): &(String, Vec<String>)| {
        vs.iter()
            .map(|v| format!("{v}.{g}"))
            .min()
            .unwrap_or_default()
    };
    groups.sort_by_key(service_name);
    let mut items = vec![admissionregistration_group(), apiextensions_group()];
    items.extend(groups.iter().map(|(g, vs)| api_group_json(g, vs)));
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": items})
}

/// `GET /apis/{group}`; `None` (404) for an unknown group.
pub fn api_group(group: &str, crds: &[CrdInfo]) -> Option<Value> {
    let mut doc = if group == APIEXTENSIONS_GROUP {
        apiextensions_group()
    } else if group == ADMISSIONREGISTRATION_GROUP {
        admissionregistration_group()
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
fn served_in<'a>(group: &str, version: &str, crds: &'a [CrdInfo]) -> Vec<&'a CrdInfo> {
    let mut out: Vec<&CrdInfo> = crds
        .iter()
        .filter(|c| c.group == group && c.served_version(version).is_some())
        .collect();
    out.sort_by(|a, b| a.plural.cmp(&b.plural));
    out
}

/// `GET /apis/{group}/{version}`; `None` (404) when nothing is served there.
pub fn api_resource_list(group: &str, version: &str, crds: &[CrdInfo]) -> Option<Value> {
    let resources = if group == APIEXTENSIONS_GROUP {
        if version != APIEXTENSIONS_VERSION {
            return None;
        }
        CUSTOM_RESOURCE_DEFINITIONS.legacy()
    } else if group == ADMISSIONREGISTRATION_GROUP {
        if version != ADMISSIONREGISTRATION_VERSION {
            return None;
        }
        let mut resources = MUTATING_WEBHOOK_CONFIGURATIONS.legacy();
        resources.extend(VALIDATING_WEBHOOK_CONFIGURATIONS.legacy());
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
pub fn aggregated_core() -> Value {
    discovery_list(vec![group_discovery(
        "",
        vec![version_discovery("v1", vec![NAMESPACES.aggregated()])],
    )])
}

/// Aggregated discovery for `GET /apis`: `admissionregistration.k8s.io` and
/// `apiextensions.k8s.io` (the higher group priorities), then the CRD groups alphabetically, versions by kube's version priority.
pub fn aggregated_apis(crds: &[CrdInfo]) -> Value {
    let mut items = vec![
        group_discovery(
            ADMISSIONREGISTRATION_GROUP,
            vec![version_discovery(
                ADMISSIONREGISTRATION_VERSION,
                vec![
                    MUTATING_WEBHOOK_CONFIGURATIONS.aggregated(),
                    VALIDATING_WEBHOOK_CONFIGURATIONS.aggregated(),
                ],
            )],
        ),
        group_discovery(
            APIEXTENSIONS_GROUP,
            vec![version_discovery(
                APIEXTENSIONS_VERSION,
                vec![CUSTOM_RESOURCE_DEFINITIONS.aggregated()],
            )],
        ),
    ];
    for (group, versions) in crd_groups(crds) {
        if is_builtin_group(&group) {
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

fn aggregated_resources(group: &str, version: &str, crds: &[CrdInfo]) -> Vec<Value> {
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
    use crate::registry::crd::{default_crd, CrdInfo};

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
        assert_eq!(
            core_v1_resources()["resources"][0]["storageVersionHash"],
            "Q3oi5N2YM8M="
        );
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
        let doc = core_v1_resources();
        assert_eq!(doc["kind"], "APIResourceList");
        assert_eq!(doc["groupVersion"], "v1");
        let names: Vec<&str> = doc["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            vec!["namespaces", "namespaces/finalize", "namespaces/status"]
        );
        assert_eq!(doc["resources"][0]["shortNames"], json!(["ns"]));
        assert_eq!(doc["resources"][0]["namespaced"], false);
        assert_eq!(doc["resources"][1]["verbs"], json!(["update"]));
        assert_eq!(doc["resources"][2]["singularName"], "");
    }

    #[test]
    fn crd_resource_list_matches_kube_shape() {
        let doc = api_resource_list("crud.example.com", "v1", &[widgets()]).expect("served");
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
        assert!(api_resource_list("crud.example.com", "v2", &[widgets()]).is_none());
        assert!(api_resource_list("nope.example.com", "v1", &[widgets()]).is_none());
    }

    #[test]
    fn apiextensions_resource_list() {
        let doc = api_resource_list(APIEXTENSIONS_GROUP, "v1", &[]).expect("built in");
        assert_eq!(doc["resources"][0]["name"], "customresourcedefinitions");
        assert_eq!(doc["resources"][0]["shortNames"], json!(["crd", "crds"]));
        assert_eq!(doc["resources"][0]["categories"], json!(["api-extensions"]));
        assert_eq!(
            doc["resources"][1]["name"],
            "customresourcedefinitions/status"
        );
        assert!(api_resource_list(APIEXTENSIONS_GROUP, "v1beta1", &[]).is_none());
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
        let group = api_group("multi.example.com", &[crd]).expect("group");
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
        ];
        let doc = api_group_list(&crds);
        let names: Vec<&str> = doc["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].as_str().unwrap())
            .collect();
        // APIService names: v1.b.example.com < v1.crud.example.com < v1beta1.a.example.com.
        assert_eq!(
            names,
            vec![
                ADMISSIONREGISTRATION_GROUP,
                APIEXTENSIONS_GROUP,
                "b.example.com",
                "crud.example.com",
                "a.example.com"
            ]
        );
        assert_eq!(doc["kind"], "APIGroupList");
        assert_eq!(
            doc["groups"][1]["preferredVersion"]["groupVersion"],
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
        )];
        assert!(api_group("hidden.example.com", &crds).is_none());
        assert_eq!(api_group_list(&crds)["groups"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn aggregated_discovery_shapes() {
        let core = aggregated_core();
        assert_eq!(core["kind"], "APIGroupDiscoveryList");
        assert_eq!(core["apiVersion"], "apidiscovery.k8s.io/v2");
        let ns = &core["items"][0]["versions"][0]["resources"][0];
        assert_eq!(ns["resource"], "namespaces");
        assert_eq!(ns["scope"], "Cluster");
        assert_eq!(
            ns["responseKind"],
            json!({"group": "", "version": "v1", "kind": "Namespace"})
        );
        assert_eq!(core["items"][0]["versions"][0]["freshness"], "Current");

        let apis = aggregated_apis(&[widgets()]);
        assert_eq!(
            apis["items"][0]["metadata"]["name"],
            ADMISSIONREGISTRATION_GROUP
        );
        assert_eq!(apis["items"][1]["metadata"]["name"], APIEXTENSIONS_GROUP);
        let group = &apis["items"][2];
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
        let doc = api_resource_list("crud.example.com", "v1", &[w]).expect("served");
        assert_eq!(
            doc["resources"][0]["verbs"],
            json!(["delete", "deletecollection", "get", "list", "watch"])
        );
    }
}
