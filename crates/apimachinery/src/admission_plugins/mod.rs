//! kube-apiserver's built-in admission plugins: their names, order and defaults
//! (`--enable-admission-plugins`, `--disable-admission-plugins`), and what the ones
//! that shape built-in objects do, given what the server looked up for them
//! (ServiceAccounts, PriorityClasses, StorageClasses, IngressClasses). No IO here:
//! `admission::plugins` in the server reads the store and calls these.
//!
//! Every plugin name kube v1.36 registers is accepted; those this server does not
//! model (`PodSecurity`, `NodeRestriction`, ...) are switched on and off without
//! effect. LimitRanger is in `limits`, ResourceQuota in `quota`.

use serde_json::{json, Value};
use std::collections::{BTreeSet, HashSet};

pub mod limits;
pub mod quota;
pub mod resources;

/// Every plugin kube-apiserver v1.36 registers, in the order kube runs them.
pub const ALL_ORDERED: &[&str] = &[
    "AlwaysAdmit",
    "NamespaceAutoProvision",
    "NamespaceLifecycle",
    "NamespaceExists",
    "LimitPodHardAntiAffinityTopology",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "TaintNodesByCondition",
    "AlwaysPullImages",
    "ImagePolicyWebhook",
    "PodSecurity",
    "PodNodeSelector",
    "Priority",
    "DefaultTolerationSeconds",
    "PodTolerationRestriction",
    "EventRateLimit",
    "ExtendedResourceToleration",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "PodGroupProtection",
    "OwnerReferencesPermissionEnforcement",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "DenyServiceExternalIPs",
    "PodTopologyLabels",
    "PodGroupWorkloadExists",
    "NodeDeclaredFeatureValidator",
    "JobValidation",
    "PodResizeValidator",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "AlwaysDeny",
];

/// The plugins kube-apiserver runs when no flag says otherwise.
pub const DEFAULT_ON: &[&str] = &[
    "NamespaceLifecycle",
    "LimitRanger",
    "ServiceAccount",
    "DefaultStorageClass",
    "PersistentVolumeClaimResize",
    "DefaultTolerationSeconds",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "StorageObjectInUseProtection",
    "PodGroupProtection",
    "Priority",
    "TaintNodesByCondition",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "PodSecurity",
    "PodTopologyLabels",
    "MutatingAdmissionPolicy",
    "ValidatingAdmissionPolicy",
    "PodGroupWorkloadExists",
    "NodeDeclaredFeatureValidator",
    "JobValidation",
    "PodResizeValidator",
];

/// Why a plugin refuses a write (kube answers it as a 403 `Forbidden`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Denied(pub String);

/// Which plugins run (looked up by name several times per write: hashed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enabled(HashSet<&'static str, foldhash::fast::FixedState>);

impl Default for Enabled {
    fn default() -> Self {
        Enabled(DEFAULT_ON.iter().copied().collect())
    }
}

impl Enabled {
    /// kube's reading of the two flags: the defaults, plus those enabled, minus those
    /// disabled; unknown names and names in both lists are errors in kube's words.
    pub fn from_flags(enable: &[String], disable: &[String]) -> Result<Self, Vec<String>> {
        let mut errs = Vec::new();
        for (flag, names) in [
            ("enable-admission-plugins", enable),
            ("disable-admission-plugins", disable),
        ] {
            for n in names {
                if !ALL_ORDERED.contains(&n.as_str()) {
                    errs.push(format!("{flag} plugin {n:?} is unknown"));
                }
            }
        }
        let both: BTreeSet<&String> = enable.iter().filter(|n| disable.contains(n)).collect();
        if !both.is_empty() {
            let list: Vec<&str> = both.iter().map(|s| s.as_str()).collect();
            errs.push(format!(
                "[{}] in enable-admission-plugins and disable-admission-plugins overlapped",
                list.join(" ")
            ));
        }
        if !errs.is_empty() {
            return Err(errs);
        }
        let mut on = Enabled::default().0;
        for n in enable {
            if let Some(name) = ALL_ORDERED.iter().find(|a| **a == n.as_str()) {
                on.insert(name);
            }
        }
        for n in disable {
            on.remove(n.as_str());
        }
        Ok(Enabled(on))
    }

    /// Whether `plugin` runs.
    pub fn has(&self, plugin: &str) -> bool {
        self.0.contains(plugin)
    }

    /// The plugins that run, in kube's order.
    pub fn ordered(&self) -> Vec<&'static str> {
        ALL_ORDERED
            .iter()
            .copied()
            .filter(|p| self.0.contains(*p))
            .collect()
    }
}

fn spec_mut(obj: &mut Value) -> Option<&mut serde_json::Map<String, Value>> {
    let o = obj.as_object_mut()?;
    o.entry("spec").or_insert_with(|| json!({})).as_object_mut()
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/annotations")?.get(key)?.as_str()
}

/// Mirror pods (created by a kubelet from a static manifest) are left alone.
const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// ServiceAccount: the ServiceAccount a pod being created runs as, set to `default`
/// when it names none. `None`: the plugin does nothing to this pod (a mirror pod).
pub fn pod_service_account(pod: &mut Value) -> Option<String> {
    if annotation(pod, MIRROR_POD_ANNOTATION).is_some() {
        return None;
    }
    let spec = spec_mut(pod)?;
    let name = spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("default")
        .to_string();
    spec.insert("serviceAccountName".into(), json!(name));
    Some(name)
}

/// What the ServiceAccount plugin denies when the ServiceAccount is missing.
pub fn service_account_missing(namespace: &str, name: &str) -> String {
    format!(
        "error looking up service account {namespace}/{name}: serviceaccount {name:?} not found"
    )
}

/// Where the token volume is mounted in every container.
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The token volume's name prefix (`kube-api-access-xxxxx`).
pub const TOKEN_VOLUME_PREFIX: &str = "kube-api-access-";

/// ServiceAccount, once the pod's ServiceAccount `sa` was found: the projected token
/// volume mounted in every container (unless the pod or the ServiceAccount opts out),
/// and the ServiceAccount's image pull secrets when the pod has none. `suffix` ends
/// the volume's name (kube's name generator: `object::generate_name("")`).
pub fn pod_service_account_admit(pod: &mut Value, sa: &Value, suffix: &str) {
    let automount = pod
        .pointer("/spec/automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| {
            sa.get("automountServiceAccountToken")
                .and_then(Value::as_bool)
        })
        .unwrap_or(true);
    let Some(spec) = spec_mut(pod) else { return };
    if automount {
        mount_token(spec, suffix);
    }
    let has_pull_secrets = spec
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if !has_pull_secrets {
        let secrets: Vec<Value> = sa
            .get("imagePullSecrets")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|s| json!({"name": s.get("name").cloned().unwrap_or(json!(""))}))
                    .collect()
            })
            .unwrap_or_default();
        if !secrets.is_empty() {
            spec.insert("imagePullSecrets".into(), json!(secrets));
        }
    }
}

fn mount_token(spec: &mut serde_json::Map<String, Value>, suffix: &str) {
    let existing = spec
        .get("volumes")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .filter_map(|v| v.get("name").and_then(Value::as_str))
                .find(|n| n.starts_with(TOKEN_VOLUME_PREFIX))
                .map(String::from)
        });
    let has_volume = existing.is_some();
    let volume = existing.unwrap_or_else(|| format!("{TOKEN_VOLUME_PREFIX}{suffix}"));
    let mount = json!({"name": volume, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
    let mut needed = false;
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in containers.iter_mut().filter_map(Value::as_object_mut) {
            let mounts = c.entry("volumeMounts").or_insert_with(|| json!([]));
            let Some(mounts) = mounts.as_array_mut() else {
                continue;
            };
            let mounted = mounts
                .iter()
                .any(|m| m.get("mountPath").and_then(Value::as_str) == Some(TOKEN_MOUNT_PATH));
            if !mounted {
                mounts.push(mount.clone());
                needed = true;
            }
        }
    }
    if needed && !has_volume {
        let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
        if let Some(volumes) = volumes.as_array_mut() {
            volumes.push(json!({
                "name": volume,
                "projected": {
                    "defaultMode": 420,
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
                    ],
                },
            }));
        }
    }
}

/// A PriorityClass as the Priority plugin reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct PriorityClass {
    /// Its name.
    pub name: String,
    /// `value`.
    pub value: i64,
    /// `preemptionPolicy`.
    pub preemption_policy: Option<String>,
}

impl PriorityClass {
    /// Read from a stored PriorityClass.
    pub fn of(obj: &Value) -> Self {
        PriorityClass {
            name: crate::object::name(obj).to_string(),
            value: obj.get("value").and_then(Value::as_i64).unwrap_or(0),
            preemption_policy: obj
                .get("preemptionPolicy")
                .and_then(Value::as_str)
                .map(String::from),
        }
    }
}

/// Priority: the class a pod names (`None`: the global default applies).
pub fn pod_priority_class_name(pod: &Value) -> Option<String> {
    pod.pointer("/spec/priorityClassName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(String::from)
}

/// The global default among `classes` (the lowest value when several claim it).
pub fn default_priority_class(classes: &[Value]) -> Option<PriorityClass> {
    classes
        .iter()
        .filter(|c| c.get("globalDefault").and_then(Value::as_bool) == Some(true))
        .map(PriorityClass::of)
        .min_by_key(|c| c.value)
}

/// What Priority denies when the class named is missing.
pub fn priority_class_missing(name: &str) -> String {
    format!("no PriorityClass with name {name} was found")
}

/// Priority on create: the pod's `priority`, `preemptionPolicy` and class name from
/// `class` (the named class, or the global default; `None`: priority 0 and
/// `PreemptLowerPriority`). A pod that sets other values is denied (the message).
pub fn pod_priority_admit_create(
    pod: &mut Value,
    class: Option<&PriorityClass>,
) -> Result<(), Denied> {
    let (name, value, policy) = match class {
        Some(c) => (c.name.clone(), c.value, c.preemption_policy.clone()),
        None => (String::new(), 0, Some("PreemptLowerPriority".to_string())),
    };
    let Some(spec) = spec_mut(pod) else {
        return Ok(());
    };
    if !name.is_empty() {
        spec.insert("priorityClassName".into(), json!(name));
    }
    if let Some(given) = spec.get("priority").and_then(Value::as_i64) {
        if given != value {
            return Err(Denied(format!("the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name")));
        }
    }
    spec.insert("priority".into(), json!(value));
    if let Some(policy) = policy {
        if let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str) {
            if given != policy {
                return Err(Denied(format!("the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name")));
            }
        }
        spec.insert("preemptionPolicy".into(), json!(policy));
    }
    Ok(())
}

/// Priority on update: a pod that drops `priority` or `preemptionPolicy` keeps the
/// stored ones.
pub fn pod_priority_admit_update(pod: &mut Value, old: &Value) {
    let Some(spec) = spec_mut(pod) else { return };
    for field in ["priority", "preemptionPolicy"] {
        if spec.get(field).is_none_or(Value::is_null) {
            if let Some(v) = old.pointer(&format!("/spec/{field}")) {
                spec.insert(field.into(), v.clone());
            }
        }
    }
}

/// What Priority denies of a PriorityClass: a second global default.
pub fn priority_class_second_default(existing: &str) -> String {
    format!("PriorityClass {existing} is already marked as default. Only one default can exist")
}

/// DefaultTolerationSeconds: pods that tolerate neither `not-ready` nor `unreachable`
/// nodes (NoExecute) get kube's 300-second tolerations of them.
pub fn pod_default_tolerations(pod: &mut Value) {
    let Some(spec) = spec_mut(pod) else { return };
    let tolerations = spec.entry("tolerations").or_insert_with(|| json!([]));
    if tolerations.is_null() {
        *tolerations = json!([]);
    }
    let Some(list) = tolerations.as_array_mut() else {
        return;
    };
    let tolerates = |key: &str| {
        list.iter().any(|t| {
            let k = t.get("key").and_then(Value::as_str).unwrap_or("");
            let e = t.get("effect").and_then(Value::as_str).unwrap_or("");
            (k == key || k.is_empty()) && (e == "NoExecute" || e.is_empty())
        })
    };
    let missing: Vec<&str> = [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]
    .into_iter()
    .filter(|k| !tolerates(k))
    .collect();
    for key in missing {
        list.push(json!({
            "key": key,
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        }));
    }
    if list.is_empty() {
        spec.remove("tolerations");
    }
}

/// The class marked default by `annotation` (`"true"`), newest first, then by name
/// (kube's choice among several defaults).
fn default_class<'a>(classes: &'a [Value], annotations: &[&str]) -> Option<&'a str> {
    let mut defaults: Vec<&Value> = classes
        .iter()
        .filter(|c| annotations.iter().any(|a| annotation(c, a) == Some("true")))
        .collect();
    defaults.sort_by(|a, b| {
        let ta = crate::object::meta_str(a, "creationTimestamp");
        let tb = crate::object::meta_str(b, "creationTimestamp");
        tb.cmp(ta)
            .then_with(|| crate::object::name(a).cmp(crate::object::name(b)))
    });
    defaults.first().map(|c| crate::object::name(c))
}

/// DefaultStorageClass: whether a claim names no class (and so gets the default).
pub fn claim_without_class(pvc: &Value) -> bool {
    pvc.pointer("/spec/storageClassName")
        .is_none_or(Value::is_null)
        && annotation(pvc, "volume.beta.kubernetes.io/storage-class").is_none()
}

/// DefaultStorageClass: the default among `classes`, set on the claim.
pub fn claim_default_class(pvc: &mut Value, classes: &[Value]) {
    let Some(name) = default_class(
        classes,
        &[
            "storageclass.kubernetes.io/is-default-class",
            "storageclass.beta.kubernetes.io/is-default-class",
        ],
    ) else {
        return;
    };
    let name = name.to_string();
    if let Some(spec) = spec_mut(pvc) {
        spec.insert("storageClassName".into(), json!(name));
    }
}

/// DefaultIngressClass: an Ingress naming no class (by field or the legacy
/// annotation) gets the default IngressClass.
pub fn ingress_default_class(ingress: &mut Value, classes: &[Value]) {
    let named = ingress
        .pointer("/spec/ingressClassName")
        .is_some_and(|v| !v.is_null())
        || annotation(ingress, "kubernetes.io/ingress.class").is_some();
    if named {
        return;
    }
    let Some(name) = default_class(classes, &["ingressclass.kubernetes.io/is-default-class"])
    else {
        return;
    };
    let name = name.to_string();
    if let Some(spec) = spec_mut(ingress) {
        spec.insert("ingressClassName".into(), json!(name));
    }
}

/// StorageObjectInUseProtection: the finalizer a new object of `group`/`resource`
/// gets.
pub fn protection_finalizer(group: &str, resource: &str) -> Option<&'static str> {
    match (group, resource) {
        ("", "persistentvolumeclaims") => Some("kubernetes.io/pvc-protection"),
        ("", "persistentvolumes") => Some("kubernetes.io/pv-protection"),
        ("storage.k8s.io", "volumeattributesclasses") => Some("kubernetes.io/vac-protection"),
        _ => None,
    }
}

/// Append `finalizer` to the object's finalizers when missing.
pub fn add_finalizer(obj: &mut Value, finalizer: &str) {
    let meta = crate::object::meta_mut(obj);
    let list = meta.entry("finalizers").or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    if let Some(list) = list.as_array_mut() {
        if !list.iter().any(|f| f.as_str() == Some(finalizer)) {
            list.push(json!(finalizer));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_add_to_and_take_from_kubes_defaults() {
        let on =
            Enabled::from_flags(&["AlwaysPullImages".into()], &["ServiceAccount".into()]).unwrap();
        assert!(on.has("AlwaysPullImages") && on.has("Priority") && !on.has("ServiceAccount"));
        let errs = Enabled::from_flags(&["Nope".into(), "Priority".into()], &["Priority".into()])
            .unwrap_err();
        assert_eq!(
            errs,
            vec![
                "enable-admission-plugins plugin \"Nope\" is unknown".to_string(),
                "[Priority] in enable-admission-plugins and disable-admission-plugins overlapped"
                    .to_string(),
            ]
        );
        assert!(DEFAULT_ON.iter().all(|p| ALL_ORDERED.contains(p)));
    }

    #[test]
    fn the_token_volume_is_mounted_once_in_every_container() {
        let mut pod = json!({"spec": {"containers": [{"name": "a"}, {"name": "b", "volumeMounts": [{"name": "x", "mountPath": TOKEN_MOUNT_PATH}]}]}});
        assert_eq!(pod_service_account(&mut pod).as_deref(), Some("default"));
        pod_service_account_admit(
            &mut pod,
            &json!({"imagePullSecrets": [{"name": "r"}]}),
            "abcde",
        );
        assert_eq!(
            pod["spec"]["containers"][0]["volumeMounts"][0]["name"],
            "kube-api-access-abcde"
        );
        assert_eq!(
            pod["spec"]["containers"][1]["volumeMounts"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            pod["spec"]["volumes"][0]["projected"]["sources"][0]["serviceAccountToken"]
                ["expirationSeconds"],
            3607
        );
        assert_eq!(pod["spec"]["imagePullSecrets"], json!([{"name": "r"}]));
        let mut opted_out =
            json!({"spec": {"automountServiceAccountToken": false, "containers": [{"name": "a"}]}});
        pod_service_account_admit(&mut opted_out, &json!({}), "abcde");
        assert!(opted_out["spec"].get("volumes").is_none());
    }

    #[test]
    fn tolerations_are_added_unless_tolerated_already() {
        let mut pod = json!({"spec": {"tolerations": [{"operator": "Exists"}]}});
        pod_default_tolerations(&mut pod);
        assert_eq!(pod["spec"]["tolerations"].as_array().unwrap().len(), 1);
        let mut pod = json!({"spec": {"tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"}]}});
        pod_default_tolerations(&mut pod);
        assert_eq!(
            pod["spec"]["tolerations"][1]["key"],
            "node.kubernetes.io/not-ready"
        );
    }

    #[test]
    fn priority_denies_values_that_disagree_with_the_class() {
        let class = PriorityClass {
            name: "high".into(),
            value: 1000,
            preemption_policy: None,
        };
        let mut pod = json!({"spec": {"priority": 5}});
        assert!(pod_priority_admit_create(&mut pod, Some(&class))
            .unwrap_err()
            .0
            .contains("(5)"));
        let mut pod = json!({"spec": {}});
        pod_priority_admit_create(&mut pod, None).unwrap();
        assert_eq!(
            pod["spec"],
            json!({"priority": 0, "preemptionPolicy": "PreemptLowerPriority"})
        );
    }

    #[test]
    fn the_newest_default_class_wins() {
        let classes = [
            json!({"metadata": {"name": "old", "creationTimestamp": "2024-01-01T00:00:00Z", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}}),
            json!({"metadata": {"name": "new", "creationTimestamp": "2025-01-01T00:00:00Z", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}}),
            json!({"metadata": {"name": "newest", "creationTimestamp": "2026-01-01T00:00:00Z"}}),
        ];
        let mut pvc = json!({"spec": {}});
        assert!(claim_without_class(&pvc));
        claim_default_class(&mut pvc, &classes);
        assert_eq!(pvc["spec"]["storageClassName"], "new");
    }
}
