//! kube's local APIServices without IO: the `apiregistration.k8s.io/v1` APIService
//! kube-apiserver registers for each group-version it serves itself (`v1.` for the
//! core group, `v1.apps`, ...) and for each served version of each CRD, with kube's
//! priorities, the automanaged label, the Available condition of local APIServices (set
//! on create, kept by kube's local availability controller), and the decision kube's
//! autoregistration controller takes for one name.
//!
//! Built-in group-versions get kube-apiserver's `apiVersionPriorities` and the label
//! `onstart` (synced once when the server starts); CRD versions get the
//! `crdregistration` controller's 1000/100 and the label `true` (synced continuously).
//! APIServices without the label (an aggregated server's, made by a user) are never
//! touched. The server does the IO: it lists, creates, updates and deletes through its
//! store and asks [`sync`] what to do.

use serde_json::{json, Value};

/// The label kube's autoregistration controller marks the APIServices it manages with.
pub const AUTOMANAGED_LABEL: &str = "kube-aggregator.kubernetes.io/automanaged";

/// [`AUTOMANAGED_LABEL`]'s value for APIServices synced once, at start (built-ins).
pub const ON_START: &str = "onstart";

/// [`AUTOMANAGED_LABEL`]'s value for APIServices synced continuously (CRD versions).
pub const CONTINUOUSLY: &str = "true";

/// The group priority of every CRD group (kube's `crdregistration` controller).
pub const CRD_GROUP_PRIORITY_MINIMUM: i64 = 1000;

/// The version priority of every CRD version: versions of a group then sort by kube's
/// version order, as for any APIServices of equal priority.
pub const CRD_VERSION_PRIORITY: i64 = 100;

/// `(group, version)`; the core group is `""`.
pub type GroupVersion = (&'static str, &'static str);

/// `(groupPriorityMinimum, versionPriority)`.
pub type Priority = (i64, i64);

/// kube-apiserver's `apiVersionPriorities` (`cmd/kube-apiserver/app/aggregator.go`
/// merged over `DefaultGenericAPIServicePriorities`): `(group, version)` →
/// `(groupPriorityMinimum, versionPriority)`. A served group-version missing here gets
/// no APIService, as in kube.
pub const PRIORITIES: &[(GroupVersion, Priority)] = &[
    (("", "v1"), (18000, 1)),
    (("apps", "v1"), (17800, 15)),
    (("events.k8s.io", "v1"), (17750, 15)),
    (("events.k8s.io", "v1beta1"), (17750, 5)),
    (("authentication.k8s.io", "v1"), (17700, 15)),
    (("authentication.k8s.io", "v1beta1"), (17700, 9)),
    (("authentication.k8s.io", "v1alpha1"), (17700, 1)),
    (("authorization.k8s.io", "v1"), (17600, 15)),
    (("autoscaling", "v1"), (17500, 15)),
    (("autoscaling", "v2"), (17500, 30)),
    (("autoscaling", "v2beta1"), (17500, 9)),
    (("autoscaling", "v2beta2"), (17500, 1)),
    (("batch", "v1"), (17400, 15)),
    (("batch", "v1beta1"), (17400, 9)),
    (("batch", "v2alpha1"), (17400, 9)),
    (("certificates.k8s.io", "v1"), (17300, 15)),
    (("certificates.k8s.io", "v1beta1"), (17300, 9)),
    (("certificates.k8s.io", "v1alpha1"), (17300, 1)),
    (("networking.k8s.io", "v1"), (17200, 15)),
    (("networking.k8s.io", "v1beta1"), (17200, 9)),
    (("policy", "v1"), (17100, 15)),
    (("policy", "v1beta1"), (17100, 9)),
    (("rbac.authorization.k8s.io", "v1"), (17000, 15)),
    (("storage.k8s.io", "v1"), (16800, 15)),
    (("storage.k8s.io", "v1beta1"), (16800, 9)),
    (("storage.k8s.io", "v1alpha1"), (16800, 1)),
    (("apiextensions.k8s.io", "v1"), (16700, 15)),
    (("admissionregistration.k8s.io", "v1"), (16700, 15)),
    (("admissionregistration.k8s.io", "v1beta1"), (16700, 12)),
    (("admissionregistration.k8s.io", "v1alpha1"), (16700, 9)),
    (("scheduling.k8s.io", "v1"), (16600, 15)),
    (("scheduling.k8s.io", "v1alpha2"), (16600, 2)),
    (("coordination.k8s.io", "v1"), (16500, 15)),
    (("coordination.k8s.io", "v1beta1"), (16500, 13)),
    (("coordination.k8s.io", "v1alpha2"), (16500, 12)),
    (("node.k8s.io", "v1"), (16300, 15)),
    (("node.k8s.io", "v1beta1"), (16300, 9)),
    (("node.k8s.io", "v1alpha1"), (16300, 1)),
    (("discovery.k8s.io", "v1"), (16200, 15)),
    (("discovery.k8s.io", "v1beta1"), (16200, 12)),
    (("resource.k8s.io", "v1"), (16200, 21)),
    (("resource.k8s.io", "v1beta2"), (16200, 15)),
    (("resource.k8s.io", "v1beta1"), (16200, 9)),
    (("resource.k8s.io", "v1alpha3"), (16200, 1)),
    (("flowcontrol.apiserver.k8s.io", "v1"), (16100, 21)),
    (("flowcontrol.apiserver.k8s.io", "v1beta3"), (16100, 18)),
    (("flowcontrol.apiserver.k8s.io", "v1beta2"), (16100, 15)),
    (("flowcontrol.apiserver.k8s.io", "v1beta1"), (16100, 12)),
    (("flowcontrol.apiserver.k8s.io", "v1alpha1"), (16100, 9)),
    (("internal.apiserver.k8s.io", "v1alpha1"), (16000, 9)),
    (("storagemigration.k8s.io", "v1beta1"), (15800, 9)),
];

/// kube's priorities of a built-in group-version.
pub fn priority(group: &str, version: &str) -> Option<Priority> {
    PRIORITIES
        .iter()
        .find(|((g, v), _)| *g == group && *v == version)
        .map(|(_, p)| *p)
}

/// The APIService name of a group-version: `<version>.<group>` (`v1.` for the core group).
pub fn name(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

/// A local APIService (no `spec.service`) as kube's controllers send it, labelled `how`
/// ([`ON_START`] or [`CONTINUOUSLY`]).
fn local(group: &str, version: &str, priorities: Priority, how: &str) -> Value {
    json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {
            "name": name(group, version),
            "labels": {AUTOMANAGED_LABEL: how},
        },
        "spec": {
            "group": group,
            "version": version,
            "groupPriorityMinimum": priorities.0,
            "versionPriority": priorities.1,
        },
    })
}

/// The APIServices kube registers at start for the built-in group-versions `served`
/// (core first, as `("", "v1")`): those with a priority, labelled [`ON_START`].
pub fn built_in<'a>(served: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<Value> {
    served
        .into_iter()
        .filter_map(|(g, v)| priority(g, v).map(|p| local(g, v, p, ON_START)))
        .collect()
}

/// The APIService kube keeps for a served version of a CRD group, labelled
/// [`CONTINUOUSLY`].
pub fn for_crd_version(group: &str, version: &str) -> Value {
    local(
        group,
        version,
        (CRD_GROUP_PRIORITY_MINIMUM, CRD_VERSION_PRIORITY),
        CONTINUOUSLY,
    )
}

/// kube's condition of a local APIService: always available.
pub fn local_available_condition(now: &str) -> Value {
    json!({
        "type": "Available",
        "status": "True",
        "lastTransitionTime": now,
        "reason": "Local",
        "message": "Local APIServices are always available",
    })
}

/// Whether an APIService is local (served by this server, no `spec.service`).
pub fn is_local(obj: &Value) -> bool {
    obj.pointer("/spec/service").is_none_or(Value::is_null)
}

/// kube's `PrepareForCreate` of APIServices: the status starts empty, and a local
/// APIService is available at once.
pub fn prepare_for_create(obj: &mut Value, now: &str) {
    let status = if is_local(obj) {
        json!({"conditions": [local_available_condition(now)]})
    } else {
        json!({})
    };
    if let Some(m) = obj.as_object_mut() {
        m.insert("status".into(), status);
    }
}

/// kube's local availability controller for one APIService: the status of a local
/// APIService with its `Available` condition set (see [`set_available_condition`]),
/// or `None` when nothing changes or the APIService is not local.
pub fn local_available_status(obj: &Value, now: &str) -> Option<Value> {
    if !is_local(obj) {
        return None;
    }
    set_available_condition(obj, local_available_condition(now))
}

/// The `Available` condition of a remote APIService (kube's remote availability
/// controller): `status` (`True`, `False`, `Unknown`), kube's reason and message.
pub fn available_condition(status: &str, reason: &str, message: &str, now: &str) -> Value {
    json!({
        "type": "Available",
        "status": status,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    })
}

/// The status of `obj` with `wanted` set as kube's `SetAPIServiceCondition` sets a
/// condition (a new status moves `lastTransitionTime`; reason and message are
/// rewritten), or `None` when nothing changes.
pub fn set_available_condition(obj: &Value, wanted: Value) -> Option<Value> {
    let status = match obj.get("status") {
        Some(s) if s.is_object() => s.clone(),
        _ => json!({}),
    };
    let mut conditions: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    match conditions
        .iter_mut()
        .find(|c| c.get("type") == wanted.get("type"))
    {
        None => conditions.push(wanted),
        Some(c) => {
            if c.get("status") != wanted.get("status") {
                c["status"] = wanted["status"].clone();
                c["lastTransitionTime"] = wanted["lastTransitionTime"].clone();
            }
            c["reason"] = wanted["reason"].clone();
            c["message"] = wanted["message"].clone();
        }
    }
    let mut updated = status.clone();
    updated["conditions"] = Value::Array(conditions);
    (updated != status).then_some(updated)
}

/// How an APIService is managed: its [`AUTOMANAGED_LABEL`] (`""` when unmanaged).
pub fn managed_as(obj: &Value) -> &str {
    obj.pointer("/metadata/labels")
        .and_then(|l| l.get(AUTOMANAGED_LABEL))
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn is_managed(obj: &Value) -> bool {
    matches!(managed_as(obj), ON_START | CONTINUOUSLY)
}

/// What the autoregistration controller does about one APIService name.
#[derive(Clone, Debug, PartialEq)]
pub enum Sync {
    /// Leave it as it is.
    Nothing,
    /// Create this object.
    Create(Value),
    /// Write this object (the current one with the desired `spec`).
    Update(Value),
    /// Delete it, if its uid is still this one.
    Delete {
        /// `metadata.uid` of the object to delete (a precondition).
        uid: String,
    },
}

/// kube's `checkAPIService` for one name: `desired` (labelled as it is managed, `None`
/// when nothing serves its group-version), `current` (stored, `None` when absent),
/// whether the name was synced successfully before in this process, and whether it
/// existed when the controller started.
///
/// An `onstart` APIService is created, corrected or deleted once per start and left
/// alone afterwards (a user may delete or edit it); a `true` one follows the CRDs
/// always; an unlabelled one is the user's.
pub fn sync(
    desired: Option<&Value>,
    current: Option<&Value>,
    synced_before: bool,
    present_at_start: bool,
) -> Sync {
    let on_start = |o: Option<&Value>| o.is_some_and(|o| managed_as(o) == ON_START);
    match (desired, current) {
        (None, None) => Sync::Nothing,
        (Some(_), _) if on_start(desired) && synced_before => Sync::Nothing,
        (Some(d), None) => Sync::Create(d.clone()),
        (_, Some(c)) if !is_managed(c) => Sync::Nothing,
        (_, Some(_)) if on_start(current) && (!present_at_start || synced_before) => Sync::Nothing,
        (None, Some(c)) => Sync::Delete {
            uid: c
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        },
        (Some(d), Some(c)) => {
            if d.get("spec") == c.get("spec") {
                return Sync::Nothing;
            }
            let mut updated = c.clone();
            updated["spec"] = d.get("spec").cloned().unwrap_or_else(|| json!({}));
            Sync::Update(updated)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn current(how: &str, spec: Value) -> Value {
        let mut o = json!({"metadata": {"name": "v1.apps", "uid": "u-1"}, "spec": spec});
        if !how.is_empty() {
            o["metadata"]["labels"] = json!({AUTOMANAGED_LABEL: how});
        }
        o
    }

    #[test]
    fn built_in_apiservices_carry_kubes_priorities_and_the_onstart_label() {
        let all = built_in([
            ("", "v1"),
            ("apps", "v1"),
            ("autoscaling", "v2"),
            ("x.io", "v1"),
        ]);
        assert_eq!(all.len(), 3, "a group-version without priority gets none");
        assert_eq!(
            all[0],
            json!({
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": "v1.",
                    "labels": {"kube-aggregator.kubernetes.io/automanaged": "onstart"}},
                "spec": {"group": "", "version": "v1", "groupPriorityMinimum": 18000,
                    "versionPriority": 1},
            })
        );
        assert_eq!(all[1]["metadata"]["name"], "v1.apps");
        assert_eq!(all[2]["spec"]["groupPriorityMinimum"], 17500);
        assert_eq!(all[2]["spec"]["versionPriority"], 30);
    }

    #[test]
    fn the_priorities_order_groups_as_kubes_recorded_discovery_does() {
        // kube-aggregator lists groups by their APIServices sorted by group priority
        // (highest first), then name; its own group comes first.
        let doc: Value = serde_json::from_str(crate::kube_discovery::AGGREGATED_APIS).unwrap();
        let mut recorded = Vec::new();
        let mut served = Vec::new();
        for item in doc["items"].as_array().unwrap() {
            let group = item["metadata"]["name"].as_str().unwrap();
            recorded.push(group);
            for v in item["versions"].as_array().unwrap() {
                let version = v["version"].as_str().unwrap();
                if group != "apiregistration.k8s.io" {
                    assert!(priority(group, version).is_some(), "{group}/{version}");
                }
                served.push((group, version));
            }
        }
        let mut services = built_in(served);
        services.sort_by_key(|s| {
            let prio = s["spec"]["groupPriorityMinimum"].as_i64().unwrap();
            (-prio, s["metadata"]["name"].as_str().unwrap().to_string())
        });
        let mut ordered = vec!["apiregistration.k8s.io"];
        for s in &services {
            let group = s["spec"]["group"].as_str().unwrap();
            if !ordered.contains(&group) {
                ordered.push(group);
            }
        }
        let ordered: Vec<String> = ordered.iter().map(|g| g.to_string()).collect();
        assert_eq!(ordered, recorded);
    }

    #[test]
    fn crd_versions_get_1000_and_100_and_the_true_label() {
        let o = for_crd_version("example.com", "v1beta1");
        assert_eq!(o["metadata"]["name"], "v1beta1.example.com");
        assert_eq!(o["metadata"]["labels"][AUTOMANAGED_LABEL], "true");
        assert_eq!(o["spec"]["groupPriorityMinimum"], 1000);
        assert_eq!(o["spec"]["versionPriority"], 100);
    }

    #[test]
    fn local_apiservices_are_available_on_create_and_remote_ones_start_empty() {
        let mut local = json!({"spec": {"group": "a.io", "version": "v1"},
            "status": {"conditions": [{"type": "X", "status": "False"}]}});
        prepare_for_create(&mut local, "2026-01-01T00:00:00Z");
        assert_eq!(
            local["status"],
            json!({"conditions": [{"type": "Available", "status": "True",
                "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "Local",
                "message": "Local APIServices are always available"}]})
        );
        let mut remote = json!({"spec": {"service": {"namespace": "n", "name": "s"}},
            "status": {"conditions": []}});
        prepare_for_create(&mut remote, "2026-01-01T00:00:00Z");
        assert_eq!(remote["status"], json!({}));
    }

    #[test]
    fn local_apiservices_are_kept_available_as_kubes_local_controller_keeps_them() {
        let now = "2026-02-02T00:00:00Z";
        let mut available = json!({"spec": {"group": "a.io"}, "status": {}});
        prepare_for_create(&mut available, "2026-01-01T00:00:00Z");
        assert_eq!(local_available_status(&available, now), None);
        // Turned False by someone: True again, with a new transition time.
        let mut turned = available.clone();
        turned["status"]["conditions"][0]["status"] = json!("False");
        turned["status"]["conditions"][0]["reason"] = json!("Nope");
        let fixed = local_available_status(&turned, now).expect("fixed");
        assert_eq!(
            fixed,
            json!({"conditions": [local_available_condition(now)]})
        );
        // Same status, other words: the words only.
        let mut reworded = available.clone();
        reworded["status"]["conditions"][0]["message"] = json!("hm");
        let fixed = local_available_status(&reworded, now).expect("fixed");
        assert_eq!(fixed, available["status"]);
        // Other conditions stay; a missing Available is added after them.
        let other =
            json!({"spec": {}, "status": {"conditions": [{"type": "X", "status": "True"}]}});
        let fixed = local_available_status(&other, now).expect("fixed");
        assert_eq!(fixed["conditions"][0]["type"], "X");
        assert_eq!(fixed["conditions"][1], local_available_condition(now));
        // Remote ones are not this controller's.
        let remote = json!({"spec": {"service": {"name": "s"}}, "status": {}});
        assert_eq!(local_available_status(&remote, now), None);
    }

    #[test]
    fn kubes_table_missing_entries_are_created_once_for_onstart_always_for_crds() {
        let d = for_crd_version("example.com", "v1");
        assert_eq!(sync(Some(&d), None, false, false), Sync::Create(d.clone()));
        assert_eq!(sync(Some(&d), None, true, false), Sync::Create(d.clone()));
        let b = built_in([("apps", "v1")]).remove(0);
        assert_eq!(sync(Some(&b), None, false, false), Sync::Create(b.clone()));
        // Deleted by a user after the first sync: stays deleted until a restart.
        assert_eq!(sync(Some(&b), None, true, false), Sync::Nothing);
        assert_eq!(sync(None, None, false, false), Sync::Nothing);
    }

    #[test]
    fn kubes_table_unlabelled_apiservices_are_the_users() {
        let d = for_crd_version("example.com", "v1");
        let users = current("", json!({"service": {"name": "s"}}));
        assert_eq!(sync(Some(&d), Some(&users), false, true), Sync::Nothing);
        assert_eq!(sync(None, Some(&users), false, true), Sync::Nothing);
    }

    #[test]
    fn kubes_table_onstart_entries_are_corrected_or_deleted_once_if_present_at_start() {
        let b = built_in([("apps", "v1")]).remove(0);
        let stale = current(ON_START, json!({"group": "apps", "version": "v1"}));
        match sync(Some(&b), Some(&stale), false, true) {
            Sync::Update(o) => {
                assert_eq!(o["spec"], b["spec"]);
                assert_eq!(o["metadata"]["uid"], "u-1");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(sync(Some(&b), Some(&stale), true, true), Sync::Nothing);
        assert_eq!(
            sync(None, Some(&stale), false, true),
            Sync::Delete { uid: "u-1".into() }
        );
        assert_eq!(sync(None, Some(&stale), true, true), Sync::Nothing);
        // Created by another server after this one started: not ours to fix.
        assert_eq!(sync(None, Some(&stale), false, false), Sync::Nothing);
    }

    #[test]
    fn kubes_table_crd_entries_follow_the_crds() {
        let d = for_crd_version("example.com", "v1");
        let mut same = d.clone();
        same["metadata"]["uid"] = json!("u-2");
        assert_eq!(sync(Some(&d), Some(&same), true, false), Sync::Nothing);
        let edited = current(
            CONTINUOUSLY,
            json!({"group": "example.com", "version": "v1",
            "groupPriorityMinimum": 5, "versionPriority": 5}),
        );
        match sync(Some(&d), Some(&edited), true, true) {
            Sync::Update(o) => assert_eq!(o["spec"]["groupPriorityMinimum"], 1000),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            sync(None, Some(&edited), true, true),
            Sync::Delete { uid: "u-1".into() }
        );
    }
}
