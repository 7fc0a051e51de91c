//! Discovery with the backends' group-versions merged in, as kube-aggregator serves
//! it: `/apis` (APIGroupList) and aggregated discovery list every APIService's group,
//! groups ordered by kube's `SortedByGroupAndVersion` (higher `groupPriorityMinimum`
//! first, then APIService name) and versions by `versionPriority`, then kube's version
//! order. A remote version's aggregated entry is the one fetched from its backend
//! (`Stale` with no resources when there is none). Nothing changes without backends.

use super::Backend;
use apimachinery::apiservice;
use apimachinery::crd::compare_kube_aware_versions;
use serde_json::{json, Value};
use std::sync::Arc;

/// The shape of one discovery document's groups.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `APIGroupList`'s `APIGroup`s.
    Legacy,
    /// `APIGroupDiscoveryList`'s items.
    Aggregated,
}

impl Shape {
    fn group_name(self, g: &Value) -> &str {
        let name = match self {
            Shape::Legacy => g.get("name"),
            Shape::Aggregated => g.pointer("/metadata/name"),
        };
        name.and_then(Value::as_str).unwrap_or("")
    }

    fn new_group(self, name: &str) -> Value {
        match self {
            Shape::Legacy => json!({"name": name, "versions": []}),
            Shape::Aggregated => json!({"metadata": {"name": name}, "versions": []}),
        }
    }

    fn version_entry(self, b: &Backend) -> Value {
        match self {
            Shape::Legacy => json!({
                "groupVersion": format!("{}/{}", b.group, b.version),
                "version": b.version,
            }),
            Shape::Aggregated => match (&b.discovery, b.available) {
                (Some(entry), true) => entry.clone(),
                _ => json!({"version": b.version, "resources": [], "freshness": "Stale"}),
            },
        }
    }
}

/// `(groupPriorityMinimum, versionPriority)` of a group-version: the backend's, a
/// built-in's, or a CRD version's.
fn priority(group: &str, version: &str, backends: &[Arc<Backend>]) -> (i64, i64) {
    if let Some(b) = backends
        .iter()
        .find(|b| b.group == group && b.version == version)
    {
        return (b.group_priority_minimum, b.version_priority);
    }
    apiservice::priority(group, version).unwrap_or((
        apiservice::CRD_GROUP_PRIORITY_MINIMUM,
        apiservice::CRD_VERSION_PRIORITY,
    ))
}

/// Merge `backends` into the groups of a discovery document.
fn merge(groups: &mut Vec<Value>, shape: Shape, backends: &[Arc<Backend>]) {
    if backends.is_empty() {
        return;
    }
    for b in backends.iter().filter(|b| !b.group.is_empty()) {
        let at = match groups.iter().position(|g| shape.group_name(g) == b.group) {
            Some(i) => i,
            None => {
                groups.push(shape.new_group(&b.group));
                groups.len() - 1
            }
        };
        let entry = shape.version_entry(b);
        let Some(versions) = groups[at].get_mut("versions").and_then(Value::as_array_mut) else {
            continue;
        };
        versions.retain(|v| v["version"].as_str() != Some(&b.version));
        versions.push(entry);
    }
    for g in groups.iter_mut() {
        let name = shape.group_name(g).to_string();
        let Some(versions) = g.get_mut("versions").and_then(Value::as_array_mut) else {
            continue;
        };
        versions.sort_by(|a, b| {
            let (va, vb) = (
                a["version"].as_str().unwrap_or(""),
                b["version"].as_str().unwrap_or(""),
            );
            let (pa, pb) = (
                priority(&name, va, backends).1,
                priority(&name, vb, backends).1,
            );
            pb.cmp(&pa)
                .then_with(|| compare_kube_aware_versions(vb, va))
        });
        if shape == Shape::Legacy {
            if let Some(first) = versions.first().cloned() {
                g["preferredVersion"] = first;
            }
        }
    }
    // A group sorts where its first APIService does.
    let key = |g: &Value| -> (i64, String) {
        let name = shape.group_name(g);
        g["versions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v["version"].as_str())
            .map(|v| (-priority(name, v, backends).0, apiservice::name(name, v)))
            .min()
            .unwrap_or((0, String::new()))
    };
    groups.sort_by_cached_key(key);
}

/// `GET /apis` (`APIGroupList`) with the backends' groups.
pub fn merge_group_list(mut doc: Value, backends: &[Arc<Backend>]) -> Value {
    if let Some(groups) = doc.get_mut("groups").and_then(Value::as_array_mut) {
        merge(groups, Shape::Legacy, backends);
    }
    doc
}

/// Aggregated discovery of `/apis` with the backends' versions.
pub fn merge_aggregated(mut doc: Value, backends: &[Arc<Backend>]) -> Value {
    if let Some(items) = doc.get_mut("items").and_then(Value::as_array_mut) {
        merge(items, Shape::Aggregated, backends);
    }
    doc
}

/// `GET /apis/<group>` (`APIGroup`): the local document (`None`: no local versions)
/// with the group's remote versions; `None` when neither serves the group.
pub fn merge_group(local: Option<Value>, group: &str, backends: &[Arc<Backend>]) -> Option<Value> {
    let mine: Vec<Arc<Backend>> = backends
        .iter()
        .filter(|b| b.group == group)
        .cloned()
        .collect();
    if mine.is_empty() {
        return local;
    }
    let mut groups = vec![local.unwrap_or_else(
        || json!({"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": []}),
    )];
    merge(&mut groups, Shape::Legacy, &mine);
    groups.pop()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backend(group: &str, version: &str, gpm: i64, vp: i64) -> Arc<Backend> {
        Arc::new(Backend {
            name: apiservice::name(group, version),
            group: group.into(),
            version: version.into(),
            group_priority_minimum: gpm,
            version_priority: vp,
            namespace: "ns".into(),
            service: "svc".into(),
            port: 443,
            ca_bundle: None,
            insecure: false,
            available: true,
            targets: Ok(vec![]),
            discovery: None,
            openapi_url: None,
        })
    }

    #[test]
    fn remote_groups_sort_by_priority_then_name() {
        let doc = json!({"kind": "APIGroupList", "groups": [
            {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
             "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}},
            {"name": "b.example", "versions": [{"groupVersion": "b.example/v1", "version": "v1"}],
             "preferredVersion": {"groupVersion": "b.example/v1", "version": "v1"}},
        ]});
        let merged = merge_group_list(
            doc,
            &[
                backend("a.example", "v1", 1000, 15),
                backend("z.example", "v1beta1", 20000, 15),
                backend("b.example", "v2", 1000, 200),
            ],
        );
        let names: Vec<&str> = merged["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["z.example", "apps", "a.example", "b.example"]);
        let b = &merged["groups"][3];
        assert_eq!(b["preferredVersion"]["version"], "v2");
        assert_eq!(b["versions"][1]["version"], "v1");
    }
}
