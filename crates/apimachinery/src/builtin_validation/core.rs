//! The core group: the pod spec (shared by every kind with a pod template), Pod,
//! PodTemplate, ReplicationController, Service and PersistentVolumeClaim.

use super::*;
use crate::cel::kubelib::Quantity;
use crate::schema::objectmeta::is_dns1123_subdomain;
use std::collections::BTreeSet;

/// Validate a new core object.
pub fn validate(kind: &str, obj: &Value) -> ErrorList {
    match kind {
        "Pod" => pod_create(obj),
        "PodTemplate" => pod_template_spec(value_at(obj, "template"), &Path::new("template")),
        "ReplicationController" => {
            replication_controller_spec(value_at(obj, "spec"), &Path::new("spec"))
        }
        "Service" => service(obj, None),
        "PersistentVolumeClaim" => {
            persistent_volume_claim_spec(value_at(obj, "spec"), &Path::new("spec"))
        }
        _ => ErrorList::new(),
    }
}

/// Validate an update of a core object.
pub fn validate_update(kind: &str, new: &Value, old: &Value) -> ErrorList {
    match kind {
        "Pod" => pod_update(new, old),
        "Service" => service_update(new, old),
        "PersistentVolumeClaim" => persistent_volume_claim_update(new, old),
        _ => validate(kind, new),
    }
}

// ---------------------------------------------------------------------------------------
// Pod

/// `ValidatePodCreate` without `ObjectMeta`.
pub fn pod_create(pod: &Value) -> ErrorList {
    let mut errs = pod_metadata_and_spec(pod);
    let spec = value_at(pod, "spec");
    let spec_path = Path::new("spec");
    if !list_at(spec, "ephemeralContainers").is_empty() {
        errs.push(Error::forbidden(
            &spec_path.child("ephemeralContainers"),
            "cannot be set on create",
        ));
    }
    if !str_at(spec, "nodeName").is_empty() && !list_at(spec, "schedulingGates").is_empty() {
        errs.push(Error::forbidden(
            &spec_path.child("nodeName"),
            "cannot be set until all schedulingGates have been cleared",
        ));
    }
    errs
}

/// `validatePodMetadataAndSpec` without `ObjectMeta`: the spec and the pod-only rules.
fn pod_metadata_and_spec(pod: &Value) -> ErrorList {
    let spec = value_at(pod, "spec");
    let spec_path = Path::new("spec");
    let mut errs = pod_spec(
        spec,
        Some(str_at(value_at(pod, "metadata"), "name")),
        &spec_path,
    );
    if str_at(spec, "serviceAccountName").is_empty() {
        for (vi, volume) in list_at(spec, "volumes").iter().enumerate() {
            let Some(projected) = volume.get("projected") else {
                continue;
            };
            for (si, source) in list_at(projected, "sources").iter().enumerate() {
                if is_set(source, "serviceAccountToken") {
                    errs.push(Error::forbidden(
                        &spec_path
                            .child("volumes")
                            .index(vi)
                            .child("projected")
                            .child("sources")
                            .index(si)
                            .child("serviceAccountToken"),
                        "must not be specified when serviceAccountName is not set",
                    ));
                }
            }
        }
    }
    for key in ["containers", "initContainers"] {
        for (i, c) in list_at(spec, key).iter().enumerate() {
            let image = str_at(c, "image");
            if image.len() != image.trim().len() {
                errs.push(Error::invalid(
                    &spec_path.child(key).index(i).child("image"),
                    Value::from(image),
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    errs
}

const UPDATABLE_POD_SPEC_FIELDS: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// `ValidatePodUpdate` without `ObjectMeta`. The `Forbidden` error on `spec` carries
/// kube's fixed text followed by a diff of our own (kube prints its internal Go structs).
pub fn pod_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = pod_metadata_and_spec(new);
    let spec_path = Path::new("spec");
    let new_spec = value_at(new, "spec");
    let old_spec = value_at(old, "spec");
    for key in ["containers", "initContainers"] {
        let (n, o) = (list_at(new_spec, key), list_at(old_spec, key));
        let path = spec_path.child(key);
        if n.len() != o.len() {
            errs.push(Error::forbidden(
                &path,
                "pod updates may not add or remove containers",
            ));
            return errs;
        }
        for (i, c) in n.iter().enumerate() {
            let image = str_at(c, "image");
            if image.is_empty() {
                errs.push(Error::required(&path.index(i).child("image"), ""));
            }
            if image.trim().len() != image.len() {
                errs.push(Error::invalid(
                    &path.index(i).child("image"),
                    Value::from(image),
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    let deadline_path = spec_path.child("activeDeadlineSeconds");
    match (
        opt_int(new_spec, "activeDeadlineSeconds"),
        opt_int(old_spec, "activeDeadlineSeconds"),
    ) {
        (Some(n), old_deadline) => {
            if !(0..=i64::from(i32::MAX)).contains(&n) {
                errs.push(Error::invalid(
                    &deadline_path,
                    Value::from(n),
                    inclusive_range(0, i64::from(i32::MAX)),
                ));
                return errs;
            }
            if old_deadline.is_some_and(|o| o < n) {
                errs.push(Error::invalid(
                    &deadline_path,
                    Value::from(n),
                    "must be less than or equal to previous value",
                ));
                return errs;
            }
        }
        (None, Some(_)) => errs.push(Error::invalid(
            &deadline_path,
            Value::Null,
            "must not update from a positive integer to nil value",
        )),
        (None, None) => {}
    }
    errs.extend(only_added_tolerations(
        list_at(new_spec, "tolerations"),
        list_at(old_spec, "tolerations"),
        &spec_path.child("tolerations"),
    ));
    errs.extend(only_deleted_scheduling_gates(
        list_at(new_spec, "schedulingGates"),
        list_at(old_spec, "schedulingGates"),
        &spec_path.child("schedulingGates"),
    ));

    // What may change is copied from the old spec; anything else left is forbidden.
    let mut munged = new_spec.clone();
    for key in ["containers", "initContainers"] {
        if let Some(list) = munged.get_mut(key).and_then(Value::as_array_mut) {
            for (c, o) in list.iter_mut().zip(list_at(old_spec, key)) {
                if let Some(c) = c.as_object_mut() {
                    c.insert("image".into(), value_at(o, "image").clone());
                }
            }
        }
    }
    if let Some(m) = munged.as_object_mut() {
        for key in ["activeDeadlineSeconds", "schedulingGates", "tolerations"] {
            match old_spec.get(key) {
                Some(v) => m.insert(key.to_string(), v.clone()),
                None => m.remove(key),
            };
        }
        let old_grace = opt_int(old_spec, "terminationGracePeriodSeconds");
        if old_grace.is_some_and(|g| g < 0)
            && opt_int(new_spec, "terminationGracePeriodSeconds") == Some(1)
        {
            m.insert(
                "terminationGracePeriodSeconds".into(),
                value_at(old_spec, "terminationGracePeriodSeconds").clone(),
            );
        }
        if !list_at(old_spec, "schedulingGates").is_empty() {
            // Gated pods may gain node selectors and node affinity.
            for key in ["nodeSelector", "affinity"] {
                match old_spec.get(key) {
                    Some(v) => m.insert(key.to_string(), v.clone()),
                    None => m.remove(key),
                };
            }
        }
    }
    if !semantic_eq(Some(&munged), Some(old_spec)) {
        errs.push(Error::forbidden(
            &spec_path,
            format!(
                "pod updates may not change fields other than {UPDATABLE_POD_SPEC_FIELDS}\n{}",
                spec_diff(old_spec, &munged)
            ),
        ));
    }
    errs
}

/// A line per changed top-level spec field: `- field: old` and `+ field: new`.
fn spec_diff(old: &Value, new: &Value) -> String {
    let keys: BTreeSet<&String> = old
        .as_object()
        .into_iter()
        .chain(new.as_object())
        .flat_map(|m| m.keys())
        .collect();
    let mut out = String::new();
    for key in keys {
        if !semantic_eq(old.get(key), new.get(key)) {
            let show = |v: &Value| crate::goformat::go_json(value_at(v, key));
            out.push_str(&format!("- {key}: {}\n+ {key}: {}\n", show(old), show(new)));
        }
    }
    out
}

/// `validateOnlyAddedTolerations`: every old toleration is still there (its
/// `tolerationSeconds` may change).
fn only_added_tolerations(new: &[Value], old: &[Value], path: &Path) -> ErrorList {
    let without_seconds = |t: &Value| {
        let mut t = t.clone();
        if let Some(m) = t.as_object_mut() {
            m.remove("tolerationSeconds");
        }
        t
    };
    for o in old {
        let o = without_seconds(o);
        if !new
            .iter()
            .any(|n| semantic_eq(Some(&without_seconds(n)), Some(&o)))
        {
            return vec![Error::forbidden(
                path,
                "existing toleration can not be modified except its tolerationSeconds",
            )];
        }
    }
    tolerations(new, path)
}

/// `validateOnlyDeletedSchedulingGates`.
fn only_deleted_scheduling_gates(new: &[Value], old: &[Value], path: &Path) -> ErrorList {
    if new.is_empty() {
        return ErrorList::new();
    }
    let old_names: BTreeSet<&str> = old.iter().map(|g| str_at(g, "name")).collect();
    if new.iter().all(|g| old_names.contains(str_at(g, "name"))) {
        ErrorList::new()
    } else {
        vec![Error::forbidden(
            path,
            "only deletion is allowed, but found new scheduling gate",
        )]
    }
}

// ---------------------------------------------------------------------------------------
// Pod spec

/// `ValidatePodTemplateSpec`: the template's labels and annotations' pod rules, and its
/// spec.
pub fn pod_template_spec(template: &Value, path: &Path) -> ErrorList {
    let meta = value_at(template, "metadata");
    let mut errs = labels(meta, "labels", &path.child("labels"));
    let spec = value_at(template, "spec");
    errs.extend(pod_spec(spec, None, &path.child("spec")));
    if !list_at(spec, "ephemeralContainers").is_empty() {
        errs.push(Error::forbidden(
            &path.child("spec").child("ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    errs
}

/// `ValidatePodSpec` (the rules operators meet; see the module's report for what is
/// left out). `pod_name` is the pod's name, `None` in templates.
pub fn pod_spec(spec: &Value, pod_name: Option<&str>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if !is_set(spec, "terminationGracePeriodSeconds") {
        errs.push(Error::required(
            &path.child("terminationGracePeriodSeconds"),
            "",
        ));
    }
    let (volumes, volume_errs) =
        validate_volumes(list_at(spec, "volumes"), pod_name, &path.child("volumes"));
    errs.extend(volume_errs);
    let containers = list_at(spec, "containers");
    errs.extend(validate_containers(
        containers,
        &volumes,
        &path.child("containers"),
    ));
    errs.extend(init_containers(
        list_at(spec, "initContainers"),
        containers,
        &volumes,
        &path.child("initContainers"),
    ));
    if spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
        errs.extend(host_network_ports(spec, path));
    }
    errs.extend(restart_policy(
        str_at(spec, "restartPolicy"),
        &path.child("restartPolicy"),
    ));
    errs.extend(one_of(
        str_at(spec, "dnsPolicy"),
        &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        &path.child("dnsPolicy"),
    ));
    errs.extend(labels(spec, "nodeSelector", &path.child("nodeSelector")));
    for (i, secret) in list_at(spec, "imagePullSecrets").iter().enumerate() {
        if str_at(secret, "name").is_empty() {
            errs.push(Error::required(
                &path.child("imagePullSecrets").index(i).child("name"),
                "",
            ));
        }
    }
    if str_at(spec, "dnsPolicy") == "None" && !is_set(spec, "dnsConfig") {
        errs.push(Error::required(
            &path.child("dnsConfig"),
            "must provide `dnsConfig` when `dnsPolicy` is None",
        ));
    }
    for key in ["serviceAccountName", "nodeName"] {
        let name = str_at(spec, key);
        if !name.is_empty() {
            for msg in is_dns1123_subdomain(name) {
                errs.push(Error::invalid(&path.child(key), Value::from(name), msg));
            }
        }
    }
    if let Some(deadline) = opt_int(spec, "activeDeadlineSeconds") {
        if !(1..=i64::from(i32::MAX)).contains(&deadline) {
            errs.push(Error::invalid(
                &path.child("activeDeadlineSeconds"),
                Value::from(deadline),
                inclusive_range(1, i64::from(i32::MAX)),
            ));
        }
    }
    for key in ["hostname", "subdomain"] {
        let name = str_at(spec, key);
        if !name.is_empty() {
            errs.extend(dns1123_label(name, &path.child(key)));
        }
    }
    errs.extend(tolerations(
        list_at(spec, "tolerations"),
        &path.child("tolerations"),
    ));
    let priority_class = str_at(spec, "priorityClassName");
    if !priority_class.is_empty() {
        for msg in is_dns1123_subdomain(priority_class) {
            errs.push(Error::invalid(
                &path.child("priorityClassName"),
                Value::from(priority_class),
                msg,
            ));
        }
    }
    if let Some(policy) = opt_str(spec, "preemptionPolicy") {
        errs.extend(one_of(
            policy,
            &["PreemptLowerPriority", "Never"],
            &path.child("preemptionPolicy"),
        ));
    }
    errs
}

/// A string enum kube checks with a `switch`: `""` is `Required`, an unknown value
/// `NotSupported` listing `valid` in kube's order.
pub(crate) fn one_of(value: &str, valid: &[&str], path: &Path) -> ErrorList {
    if value.is_empty() {
        vec![Error::required(path, "")]
    } else if valid.contains(&value) {
        ErrorList::new()
    } else {
        vec![Error::not_supported(path, Value::from(value), valid)]
    }
}

/// `validateRestartPolicy`.
fn restart_policy(policy: &str, path: &Path) -> ErrorList {
    one_of(policy, &["Always", "OnFailure", "Never"], path)
}

/// The volume sources of `core.VolumeSource`, in kube's order of checking.
const VOLUME_SOURCES: &[&str] = &[
    "emptyDir",
    "hostPath",
    "gitRepo",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "flocker",
    "persistentVolumeClaim",
    "rbd",
    "cinder",
    "cephfs",
    "quobyte",
    "downwardAPI",
    "fc",
    "flexVolume",
    "configMap",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "storageos",
    "projected",
    "scaleIO",
    "csi",
    "ephemeral",
    "image",
];

/// kube's path names for the sources whose error path differs from the JSON name.
fn volume_source_path(source: &str) -> &str {
    match source {
        "cephfs" => "cephFS",
        "downwardAPI" => "downwarAPI",
        other => other,
    }
}

/// `ValidateVolumes`: the names of the valid volumes and the errors.
fn validate_volumes(
    volumes: &[Value],
    pod_name: Option<&str>,
    path: &Path,
) -> (BTreeSet<String>, ErrorList) {
    let mut errs = ErrorList::new();
    let mut names = BTreeSet::new();
    let created_claims: BTreeSet<String> = match pod_name {
        Some(pod) if !pod.is_empty() => volumes
            .iter()
            .filter(|v| is_set(v, "ephemeral"))
            .map(|v| format!("{pod}-{}", str_at(v, "name")))
            .collect(),
        _ => BTreeSet::new(),
    };
    for (i, volume) in volumes.iter().enumerate() {
        let idx = path.index(i);
        let name = str_at(volume, "name");
        let mut el = volume_source(volume, &idx);
        if name.is_empty() {
            el.push(Error::required(&idx.child("name"), ""));
        } else {
            el.extend(dns1123_label(name, &idx.child("name")));
        }
        if names.contains(name) {
            el.push(Error::duplicate(&idx.child("name"), Value::from(name)));
        }
        if el.is_empty() {
            names.insert(name.to_string());
        } else {
            errs.extend(el);
        }
        if let Some(claim) = volume.get("persistentVolumeClaim") {
            let claim_name = str_at(claim, "claimName");
            if created_claims.contains(claim_name) {
                errs.push(Error::invalid(
                    &idx.child("persistentVolumeClaim").child("claimName"),
                    Value::from(claim_name),
                    "must not reference a PVC that gets created for an ephemeral volume",
                ));
            }
        }
    }
    (names, errs)
}

/// `validateVolumeSource`: exactly one source, and the checks of the common ones.
fn volume_source(volume: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut count = 0;
    for source in VOLUME_SOURCES {
        let Some(value) = volume.get(*source).filter(|v| !v.is_null()) else {
            continue;
        };
        if count > 0 {
            errs.push(Error::forbidden(
                &path.child(volume_source_path(source)),
                "may not specify more than 1 volume type",
            ));
            continue;
        }
        count += 1;
        let p = path.child(source);
        match *source {
            "hostPath" if str_at(value, "path").is_empty() => {
                errs.push(Error::required(&p.child("path"), ""));
            }
            "secret" if str_at(value, "secretName").is_empty() => {
                errs.push(Error::required(&p.child("secretName"), ""));
            }
            "configMap" if str_at(value, "name").is_empty() => {
                errs.push(Error::required(&p.child("name"), ""));
            }
            "persistentVolumeClaim" if str_at(value, "claimName").is_empty() => {
                errs.push(Error::required(&p.child("claimName"), ""));
            }
            "nfs" => {
                if str_at(value, "server").is_empty() {
                    errs.push(Error::required(&p.child("server"), ""));
                }
                let nfs_path = str_at(value, "path");
                if nfs_path.is_empty() {
                    errs.push(Error::required(&p.child("path"), ""));
                } else if !nfs_path.starts_with('/') {
                    errs.push(Error::invalid(
                        &p.child("path"),
                        Value::from(nfs_path),
                        "must be an absolute path",
                    ));
                }
            }
            "emptyDir" => {
                if let Some(limit) = opt_str(value, "sizeLimit") {
                    if Quantity::parse(limit).is_ok_and(|q| q.compare(&zero()).is_lt()) {
                        errs.push(Error::forbidden(
                            &p.child("sizeLimit"),
                            "SizeLimit field must be a valid resource quantity",
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    if count == 0 {
        errs.push(Error::required(path, "must specify a volume type"));
    }
    errs
}

fn zero() -> Quantity {
    Quantity::parse("0").unwrap_or_else(|_| unreachable!("0 is a quantity"))
}

/// `validateContainers`.
fn validate_containers(containers: &[Value], volumes: &BTreeSet<String>, path: &Path) -> ErrorList {
    if containers.is_empty() {
        return vec![Error::required(path, "")];
    }
    let mut errs = ErrorList::new();
    let mut names = BTreeSet::new();
    for (i, c) in containers.iter().enumerate() {
        let p = path.index(i);
        errs.extend(container_common(c, volumes, &p));
        let name = str_at(c, "name");
        if !names.insert(name) {
            errs.push(Error::duplicate(&p.child("name"), Value::from(name)));
        }
        errs.extend(probe(c, "livenessProbe", &p, true));
        errs.extend(probe(c, "readinessProbe", &p, false));
        errs.extend(probe(c, "startupProbe", &p, true));
    }
    errs.extend(host_port_conflicts(containers, path));
    errs
}

/// `validateInitContainers` (regular and sidecar init containers).
fn init_containers(
    containers: &[Value],
    regular: &[Value],
    volumes: &BTreeSet<String>,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut names: BTreeSet<&str> = regular.iter().map(|c| str_at(c, "name")).collect();
    for (i, c) in containers.iter().enumerate() {
        let p = path.index(i);
        errs.extend(container_common(c, volumes, &p));
        let restart = opt_str(c, "restartPolicy");
        if let Some(policy) = restart {
            if policy != "Always" {
                errs.push(Error::not_supported(
                    &p.child("restartPolicy"),
                    Value::from(policy),
                    &["Always"],
                ));
            }
        }
        let name = str_at(c, "name");
        if names.contains(name) {
            errs.push(Error::duplicate(&p.child("name"), Value::from(name)));
        } else if !name.is_empty() {
            names.insert(name);
        }
        errs.extend(host_port_conflicts(std::slice::from_ref(c), path));
        if restart == Some("Always") {
            errs.extend(probe(c, "livenessProbe", &p, true));
            errs.extend(probe(c, "readinessProbe", &p, false));
            errs.extend(probe(c, "startupProbe", &p, true));
        } else {
            for key in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if is_set(c, key) {
                    errs.push(Error::forbidden(
                        &p.child(key),
                        "may not be set for init containers without restartPolicy=Always",
                    ));
                }
            }
        }
    }
    errs
}

/// `validateContainerCommon`.
fn container_common(c: &Value, volumes: &BTreeSet<String>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let name = str_at(c, "name");
    if name.is_empty() {
        errs.push(Error::required(&path.child("name"), ""));
    } else {
        errs.extend(dns1123_label(name, &path.child("name")));
    }
    if str_at(c, "image").is_empty() {
        errs.push(Error::required(&path.child("image"), ""));
    }
    errs.extend(one_of(
        str_at(c, "terminationMessagePolicy"),
        &["File", "FallbackToLogsOnError"],
        &path.child("terminationMessagePolicy"),
    ));
    errs.extend(container_ports(list_at(c, "ports"), &path.child("ports")));
    errs.extend(env(list_at(c, "env"), &path.child("env")));
    errs.extend(volume_mounts(c, volumes, &path.child("volumeMounts")));
    let pull = str_at(c, "imagePullPolicy");
    if pull.is_empty() {
        errs.push(Error::required(&path.child("imagePullPolicy"), ""));
    } else if !["Always", "IfNotPresent", "Never"].contains(&pull) {
        errs.push(Error::not_supported(
            &path.child("imagePullPolicy"),
            Value::from(pull),
            &["Always", "IfNotPresent", "Never"],
        ));
    }
    errs.extend(resource_requirements(
        value_at(c, "resources"),
        &path.child("resources"),
    ));
    errs
}

/// `validateContainerPorts`.
fn container_ports(ports: &[Value], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut names = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let p = path.index(i);
        let name = str_at(port, "name");
        if !name.is_empty() {
            let msgs = port_name(name);
            if !msgs.is_empty() {
                for msg in msgs {
                    errs.push(Error::invalid(&p.child("name"), Value::from(name), msg));
                }
            } else if !names.insert(name) {
                errs.push(Error::duplicate(&p.child("name"), Value::from(name)));
            }
        }
        let container_port = int_at(port, "containerPort");
        if container_port == 0 {
            errs.push(Error::required(&p.child("containerPort"), ""));
        } else {
            for msg in port_num(container_port) {
                errs.push(Error::invalid(
                    &p.child("containerPort"),
                    Value::from(container_port),
                    msg,
                ));
            }
        }
        let host_port = int_at(port, "hostPort");
        if host_port != 0 {
            for msg in port_num(host_port) {
                errs.push(Error::invalid(
                    &p.child("hostPort"),
                    Value::from(host_port),
                    msg,
                ));
            }
        }
        errs.extend(protocol(str_at(port, "protocol"), &p.child("protocol")));
    }
    errs
}

/// A port's protocol: kube lists the supported ones sorted.
fn protocol(value: &str, path: &Path) -> ErrorList {
    if value.is_empty() {
        vec![Error::required(path, "")]
    } else if ["TCP", "UDP", "SCTP"].contains(&value) {
        ErrorList::new()
    } else {
        vec![Error::not_supported(
            path,
            Value::from(value),
            &["SCTP", "TCP", "UDP"],
        )]
    }
}

/// `AccumulateUniqueHostPorts`: a host port is used once per protocol and host IP.
fn host_port_conflicts(containers: &[Value], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut seen = BTreeSet::new();
    for (ci, c) in containers.iter().enumerate() {
        for (pi, port) in list_at(c, "ports").iter().enumerate() {
            let host_port = int_at(port, "hostPort");
            if host_port == 0 {
                continue;
            }
            let key = format!(
                "{}/{}/{host_port}",
                str_at(port, "hostIP"),
                str_at(port, "protocol")
            );
            if !seen.insert(key.clone()) {
                errs.push(Error::duplicate(
                    &path.index(ci).child("ports").index(pi).child("hostPort"),
                    Value::from(key),
                ));
            }
        }
    }
    errs
}

/// `validatePodHostNetworkDeps`: with the host's network a host port is the container
/// port.
fn host_network_ports(spec: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for key in ["containers", "initContainers"] {
        for (ci, c) in list_at(spec, key).iter().enumerate() {
            for (pi, port) in list_at(c, "ports").iter().enumerate() {
                let host_port = int_at(port, "hostPort");
                if host_port != 0 && host_port != int_at(port, "containerPort") {
                    errs.push(Error::invalid(
                        &path
                            .child(key)
                            .index(ci)
                            .child("ports")
                            .index(pi)
                            .child("hostPort"),
                        Value::from(host_port),
                        "must match `containerPort` when `hostNetwork` is true",
                    ));
                }
            }
        }
    }
    errs
}

/// `ValidateEnv` with kube v1.36's relaxed names (printable ASCII but `=`).
fn env(vars: &[Value], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, var) in vars.iter().enumerate() {
        let p = path.index(i);
        let name = str_at(var, "name");
        if name.is_empty() {
            errs.push(Error::required(&p.child("name"), ""));
        } else if name.chars().any(|c| !(' '..='~').contains(&c) || c == '=') {
            errs.push(Error::invalid(
                &p.child("name"),
                Value::from(name),
                "a valid environment variable name must consist only of printable ASCII characters other than '='",
            ));
        }
        if let Some(from) = obj_at(var, "valueFrom") {
            let sources = [
                "fieldRef",
                "resourceFieldRef",
                "configMapKeyRef",
                "secretKeyRef",
                "fileKeyRef",
            ]
            .iter()
            .filter(|k| from.get(**k).is_some_and(|v| !v.is_null()))
            .count();
            let from_path = p.child("valueFrom");
            if !str_at(var, "value").is_empty() && sources != 0 {
                errs.push(Error::invalid(
                    &from_path,
                    Value::from(""),
                    "may not be specified when `value` is not empty",
                ));
            }
            if sources == 0 {
                errs.push(Error::invalid(
                    &from_path,
                    Value::from(""),
                    "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
                ));
            } else if sources > 1 {
                errs.push(Error::invalid(
                    &from_path,
                    Value::from(""),
                    "may not have more than one field specified at a time",
                ));
            }
        }
    }
    errs
}

/// `ValidateVolumeMounts` (mounts name a valid volume, paths unique).
fn volume_mounts(c: &Value, volumes: &BTreeSet<String>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let mut mount_points = BTreeSet::new();
    let devices: Vec<(&str, &str)> = list_at(c, "volumeDevices")
        .iter()
        .map(|d| (str_at(d, "name"), str_at(d, "devicePath")))
        .collect();
    for (i, mount) in list_at(c, "volumeMounts").iter().enumerate() {
        let p = path.index(i);
        let name = str_at(mount, "name");
        if name.is_empty() {
            errs.push(Error::required(&p.child("name"), ""));
        }
        if !volumes.contains(name) {
            errs.push(Error::not_found(&p.child("name"), Value::from(name)));
        }
        let mount_path = str_at(mount, "mountPath");
        if mount_path.is_empty() {
            errs.push(Error::required(&p.child("mountPath"), ""));
        }
        if !mount_points.insert(mount_path) {
            errs.push(Error::invalid(
                &p.child("mountPath"),
                Value::from(mount_path),
                "must be unique",
            ));
        }
        if devices.iter().any(|(n, _)| *n == name) {
            errs.push(Error::invalid(
                &p.child("name"),
                Value::from(name),
                "must not already exist in volumeDevices",
            ));
        }
        if devices.iter().any(|(_, d)| *d == mount_path) {
            errs.push(Error::invalid(
                &p.child("mountPath"),
                Value::from(mount_path),
                "must not already exist as a path in volumeDevices",
            ));
        }
        let sub_path = str_at(mount, "subPath");
        let sub_path_expr = str_at(mount, "subPathExpr");
        if !sub_path.is_empty() {
            errs.extend(local_descending_path(sub_path, &path.child("subPath")));
        }
        if !sub_path_expr.is_empty() {
            if !sub_path.is_empty() {
                errs.push(Error::invalid(
                    &p.child("subPathExpr"),
                    Value::from(sub_path_expr),
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            errs.extend(local_descending_path(
                sub_path_expr,
                &path.child("subPathExpr"),
            ));
        }
    }
    errs
}

/// `validateLocalDescendingPath`: relative, without `..`.
fn local_descending_path(target: &str, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    if target.starts_with('/') {
        errs.push(Error::invalid(
            path,
            Value::from(target),
            "must be a relative path",
        ));
    }
    if target.split(['/', '\\']).any(|part| part == "..") {
        errs.push(Error::invalid(
            path,
            Value::from(target),
            "must not contain '..'",
        ));
    }
    errs
}

/// `validateProbe` of the probe at `key` of container `c`.
fn probe(c: &Value, key: &str, container_path: &Path, success_must_be_one: bool) -> ErrorList {
    let Some(probe) = c.get(key).filter(|p| p.is_object()) else {
        return ErrorList::new();
    };
    let path = container_path.child(key);
    let mut errs = ErrorList::new();
    let mut handlers = 0;
    for handler in ["exec", "httpGet", "tcpSocket", "grpc"] {
        let Some(action) = probe.get(handler).filter(|v| !v.is_null()) else {
            continue;
        };
        let p = path.child(handler);
        if handlers > 0 {
            errs.push(Error::forbidden(
                &p,
                "may not specify more than 1 handler type",
            ));
            continue;
        }
        handlers += 1;
        match handler {
            "exec" if list_at(action, "command").is_empty() => {
                errs.push(Error::required(&p.child("command"), ""));
            }
            "httpGet" => {
                if str_at(action, "path").is_empty() {
                    errs.push(Error::required(&p.child("path"), ""));
                }
                errs.extend(port_num_or_name(action.get("port"), &p.child("port")));
                let scheme = str_at(action, "scheme");
                if scheme != "HTTP" && scheme != "HTTPS" {
                    errs.push(Error::not_supported(
                        &p.child("scheme"),
                        Value::from(scheme),
                        &["HTTP", "HTTPS"],
                    ));
                }
            }
            "tcpSocket" => errs.extend(port_num_or_name(action.get("port"), &p.child("port"))),
            "grpc" => errs.extend(port_num_or_name(
                Some(&Value::from(int_at(action, "port"))),
                &p.child("port"),
            )),
            _ => {}
        }
    }
    if handlers == 0 {
        errs.push(Error::required(&path, "must specify a handler type"));
    }
    for field in [
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ] {
        errs.extend(nonnegative(int_at(probe, field), &path.child(field)));
    }
    if let Some(grace) = opt_int(probe, "terminationGracePeriodSeconds") {
        if grace <= 0 {
            errs.push(Error::invalid(
                &path.child("terminationGracePeriodSeconds"),
                Value::from(grace),
                "must be greater than 0",
            ));
        }
    }
    if success_must_be_one && int_at(probe, "successThreshold") != 1 {
        errs.push(Error::invalid(
            &path.child("successThreshold"),
            Value::from(int_at(probe, "successThreshold")),
            "must be 1",
        ));
    }
    if !success_must_be_one && is_set(probe, "terminationGracePeriodSeconds") {
        errs.push(Error::invalid(
            &path.child("terminationGracePeriodSeconds"),
            value_at(probe, "terminationGracePeriodSeconds").clone(),
            "must not be set for readinessProbes",
        ));
    }
    errs
}

/// `IsNativeResource`: no domain, or a `kubernetes.io` one.
fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// `IsOvercommitAllowed`: native resources but huge pages.
fn overcommit_allowed(name: &str) -> bool {
    is_native_resource(name) && !name.starts_with("hugepages-")
}

/// `validateResourceRequirements` for a container: quantities non-negative, requests at
/// most their limits, extended resources equal. Resources are visited in name order
/// (kube walks a Go map).
fn resource_requirements(req: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let limits_path = path.child("limits");
    let requests_path = path.child("requests");
    let parse = |key: &str| -> Vec<(String, String, Option<Quantity>)> {
        let mut v: Vec<_> = obj_at(req, key)
            .into_iter()
            .flatten()
            .map(|(name, q)| {
                let text = match q {
                    Value::String(s) => s.clone(),
                    other => crate::goformat::go_json(other),
                };
                let parsed = Quantity::parse(&text).ok();
                (name.clone(), text, parsed)
            })
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    let limits = parse("limits");
    let requests = parse("requests");
    for (name, text, q) in &limits {
        let p = limits_path.key(name);
        errs.extend(container_resource_name(name, &p));
        errs.extend(quantity_value(name, text, q.as_ref(), &p));
    }
    for (name, text, q) in &requests {
        let p = requests_path.key(name);
        errs.extend(container_resource_name(name, &p));
        errs.extend(quantity_value(name, text, q.as_ref(), &p));
        let limit = limits.iter().find(|(n, _, _)| n == name);
        match (limit, q) {
            (Some((_, limit_text, Some(limit))), Some(q)) => {
                let ord = q.compare(limit);
                if ord.is_ne() && !overcommit_allowed(name) {
                    errs.push(Error::invalid(
                        &requests_path,
                        Value::from(text.as_str()),
                        format!("must be equal to {name} limit of {limit_text}"),
                    ));
                } else if ord.is_gt() {
                    errs.push(Error::invalid(
                        &requests_path,
                        Value::from(text.as_str()),
                        format!("must be less than or equal to {name} limit of {limit_text}"),
                    ));
                }
            }
            (None, _) if !overcommit_allowed(name) => errs.push(Error::required(
                &limits_path,
                "Limit must be set for non overcommitable resources",
            )),
            _ => {}
        }
    }
    let compute = |v: &[(String, String, Option<Quantity>)]| {
        v.iter().any(|(n, _, _)| n == "cpu" || n == "memory")
    };
    let huge = |v: &[(String, String, Option<Quantity>)]| {
        v.iter().any(|(n, _, _)| n.starts_with("hugepages-"))
    };
    if !compute(&limits) && !compute(&requests) && (huge(&limits) || huge(&requests)) {
        errs.push(Error::forbidden(path, "HugePages require cpu or memory"));
    }
    errs
}

/// `ValidateResourceQuantityValue`: not negative; whole for integer resources.
fn quantity_value(name: &str, text: &str, q: Option<&Quantity>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(q) = q else {
        return errs;
    };
    if q.compare(&zero()).is_lt() {
        errs.push(Error::invalid(
            path,
            Value::from(text),
            "must be greater than or equal to 0",
        ));
    }
    let extended = !is_native_resource(name) && !name.starts_with("requests.");
    if (extended || INTEGER_RESOURCES.contains(&name)) && !is_whole_quantity(text) {
        errs.push(Error::invalid(
            path,
            Value::from(text),
            "must be an integer",
        ));
    }
    errs
}

/// kube's standard resources counted in whole units.
const INTEGER_RESOURCES: &[&str] = &[
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

/// Whether a quantity as written is a whole number: no fraction and no sub-unit
/// suffix (`1.5k` is read as not whole: a known approximation).
fn is_whole_quantity(text: &str) -> bool {
    let digits = text.trim_start_matches(['+', '-']);
    let num_len = digits.bytes().take_while(u8::is_ascii_digit).count();
    let suffix = &digits[num_len..];
    num_len > 0
        && !suffix.starts_with('.')
        && !matches!(suffix, "m" | "u" | "n")
        && !suffix.trim_start_matches(['e', 'E']).starts_with('-')
}

/// kube's `standardResources`: what a resource name without a domain may be.
const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "persistentvolumeclaims",
    "storage",
    "ephemeral-storage",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

/// `validateContainerResourceName`.
fn container_resource_name(name: &str, path: &Path) -> ErrorList {
    let mut errs = label_name(name, path);
    if !errs.is_empty() {
        return errs;
    }
    let huge = name.starts_with("hugepages-");
    if !name.contains('/') {
        if !STANDARD_RESOURCES.contains(&name) && !huge {
            errs.push(Error::invalid(
                path,
                Value::from(name),
                "must be a standard resource type or fully qualified",
            ));
        }
        if !["cpu", "memory", "ephemeral-storage"].contains(&name) && !huge {
            errs.push(Error::invalid(
                path,
                Value::from(name),
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native_resource(name) && name.starts_with("requests.") {
        errs.push(Error::invalid(
            path,
            Value::from(name),
            "doesn't follow extended resource name standard",
        ));
    }
    errs
}

/// `ValidateTolerations`.
fn tolerations(tolerations: &[Value], path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    for (i, t) in tolerations.iter().enumerate() {
        let p = path.index(i);
        let key = str_at(t, "key");
        if !key.is_empty() {
            errs.extend(label_name(key, &p.child("key")));
        }
        let operator = str_at(t, "operator");
        if key.is_empty() && operator != "Exists" {
            errs.push(Error::invalid(
                &p.child("operator"),
                Value::from(operator),
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if is_set(t, "tolerationSeconds") && str_at(t, "effect") != "NoExecute" {
            errs.push(Error::invalid(
                &p.child("effect"),
                Value::from(str_at(t, "effect")),
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        let value = str_at(t, "value");
        match operator {
            "" | "Equal" => {
                for msg in crate::schema::objectmeta::is_label_value(value) {
                    errs.push(Error::invalid(
                        &p.child("operator"),
                        Value::from(value),
                        msg,
                    ));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.push(Error::invalid(
                        &p.child("operator"),
                        t.clone(),
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            other => errs.push(Error::not_supported(
                &p.child("operator"),
                Value::from(other),
                &["Equal", "Exists"],
            )),
        }
        let effect = str_at(t, "effect");
        if !effect.is_empty() && !["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&effect)
        {
            errs.push(Error::not_supported(
                &p.child("effect"),
                Value::from(effect),
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            ));
        }
    }
    errs
}

// ---------------------------------------------------------------------------------------
// ReplicationController

/// `ValidateReplicationControllerSpec`.
pub fn replication_controller_spec(spec: &Value, path: &Path) -> ErrorList {
    let mut errs = nonnegative(
        int_at(spec, "minReadySeconds"),
        &path.child("minReadySeconds"),
    );
    let selector = value_at(spec, "selector");
    if string_map(spec, "selector").is_empty() {
        errs.push(Error::required(&path.child("selector"), ""));
    }
    match opt_int(spec, "replicas") {
        None => errs.push(Error::required(&path.child("replicas"), "")),
        Some(r) => errs.extend(nonnegative(r, &path.child("replicas"))),
    }
    let template_path = path.child("template");
    let Some(template) = spec.get("template").filter(|t| t.is_object()) else {
        errs.push(Error::required(&template_path, ""));
        return errs;
    };
    let meta = value_at(template, "metadata");
    let wanted = string_map(spec, "selector");
    if !wanted.is_empty() {
        let have = string_map(meta, "labels");
        if !wanted.iter().all(|w| have.contains(w)) {
            errs.push(Error::invalid(
                &template_path.child("metadata").child("labels"),
                value_at(meta, "labels").clone(),
                "`selector` does not match template `labels`",
            ));
        }
    }
    let _ = selector;
    errs.extend(pod_template_spec(template, &template_path));
    errs.extend(template_restart_always(
        template,
        &template_path,
        "ReplicationController",
    ));
    errs
}

/// The rules of controllers whose pods run forever: `restartPolicy` is `Always` and
/// `activeDeadlineSeconds` is unset.
pub(crate) fn template_restart_always(template: &Value, path: &Path, kind: &str) -> ErrorList {
    let mut errs = ErrorList::new();
    let spec = value_at(template, "spec");
    let policy = str_at(spec, "restartPolicy");
    if policy != "Always" {
        errs.push(Error::not_supported(
            &path.child("spec").child("restartPolicy"),
            Value::from(policy),
            &["Always"],
        ));
    }
    if is_set(spec, "activeDeadlineSeconds") {
        errs.push(Error::forbidden(
            &path.child("spec").child("activeDeadlineSeconds"),
            format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
    errs
}

// ---------------------------------------------------------------------------------------
// Service

/// The service's cluster IPs as kube validates them: the REST layer has copied
/// `clusterIP` into an empty `clusterIPs`.
fn cluster_ips(spec: &Value) -> Vec<String> {
    let ips: Vec<String> = list_at(spec, "clusterIPs")
        .iter()
        .map(|v| v.as_str().unwrap_or("").to_string())
        .collect();
    let ip = str_at(spec, "clusterIP");
    if ips.is_empty() && !ip.is_empty() {
        vec![ip.to_string()]
    } else {
        ips
    }
}

fn is_headless(spec: &Value) -> bool {
    let ips = cluster_ips(spec);
    ips.len() == 1 && ips[0] == "None"
}

/// kube's internal `core.ServicePort` holding only a protocol and a port (the key of
/// its duplicate check), as it prints.
fn service_port_key(protocol: &str, port: i64) -> crate::field::BadValue {
    go_struct(&[
        ("Name", &Value::from("")),
        ("Protocol", &Value::from(protocol)),
        ("AppProtocol", &Value::Null),
        ("Port", &Value::from(port)),
        ("TargetPort", &Value::from(0)),
        ("NodePort", &Value::from(0)),
    ])
}

/// `validateService` (node ports' range is the allocator's, not here).
pub fn service(svc: &Value, old: Option<&Value>) -> ErrorList {
    let mut errs = ErrorList::new();
    let spec = value_at(svc, "spec");
    let spec_path = Path::new("spec");
    let ports = list_at(spec, "ports");
    let service_type = str_at(spec, "type");
    let headless = is_headless(spec);
    let ips = cluster_ips(spec);
    if ports.is_empty() && !headless && service_type != "ExternalName" {
        errs.push(Error::required(&spec_path.child("ports"), ""));
    }
    match service_type {
        "LoadBalancer" | "NodePort" if headless => errs.push(Error::invalid(
            &spec_path.child("clusterIPs").index(0),
            Value::from("None"),
            format!("may not be set to 'None' for {service_type} services"),
        )),
        "ExternalName" => {
            if !ips.is_empty() {
                errs.push(Error::forbidden(
                    &spec_path.child("clusterIPs"),
                    "may not be set for ExternalName services",
                ));
            }
            if !list_at(spec, "ipFamilies").is_empty() {
                errs.push(Error::forbidden(
                    &spec_path.child("ipFamilies"),
                    "may not be set for ExternalName services",
                ));
            }
            if is_set(spec, "ipFamilyPolicy") {
                errs.push(Error::forbidden(
                    &spec_path.child("ipFamilyPolicy"),
                    "may not be set for ExternalName services",
                ));
            }
            let cname = str_at(spec, "externalName");
            let cname = cname.strip_suffix('.').unwrap_or(cname);
            if cname.is_empty() {
                errs.push(Error::required(&spec_path.child("externalName"), ""));
            } else {
                for msg in is_dns1123_subdomain(cname) {
                    errs.push(Error::invalid(
                        &spec_path.child("externalName"),
                        Value::from(cname),
                        msg,
                    ));
                }
            }
        }
        _ => {}
    }
    let mut names = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        errs.extend(service_port(
            port,
            ports.len() > 1,
            &mut names,
            &spec_path.child("ports").index(i),
        ));
    }
    errs.extend(labels(spec, "selector", &spec_path.child("selector")));
    let affinity = str_at(spec, "sessionAffinity");
    if affinity.is_empty() {
        errs.push(Error::required(&spec_path.child("sessionAffinity"), ""));
    } else if affinity != "ClientIP" && affinity != "None" {
        errs.push(Error::not_supported(
            &spec_path.child("sessionAffinity"),
            Value::from(affinity),
            &["ClientIP", "None"],
        ));
    }
    if affinity == "None" && is_set(spec, "sessionAffinityConfig") {
        errs.push(Error::forbidden(
            &spec_path.child("sessionAffinityConfig"),
            "must not be set when session affinity is None",
        ));
    }
    if service_type != "ExternalName" {
        errs.extend(service_cluster_ip_fields(
            spec,
            old.map(|o| value_at(o, "spec")),
        ));
    }
    for (i, ip) in list_at(spec, "externalIPs").iter().enumerate() {
        let ip = ip.as_str().unwrap_or("");
        errs.extend(legacy_ip(ip, &spec_path.child("externalIPs").index(i)));
    }
    let types = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
    if service_type.is_empty() {
        errs.push(Error::required(&spec_path.child("type"), ""));
    } else if !types.contains(&service_type) {
        errs.push(Error::not_supported(
            &spec_path.child("type"),
            Value::from(service_type),
            &types,
        ));
    }
    if service_type == "ClusterIP" {
        for (i, port) in ports.iter().enumerate() {
            if int_at(port, "nodePort") != 0 {
                errs.push(Error::forbidden(
                    &spec_path.child("ports").index(i).child("nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    let mut node_ports = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let node_port = int_at(port, "nodePort");
        if node_port != 0 && !node_ports.insert((str_at(port, "protocol"), node_port)) {
            errs.push(Error::duplicate(
                &spec_path.child("ports").index(i).child("nodePort"),
                Value::from(node_port),
            ));
        }
    }
    let mut seen = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let key = (str_at(port, "protocol"), int_at(port, "port"));
        if !seen.insert(key) {
            errs.push(with_value(
                Error::duplicate(&spec_path.child("ports").index(i), Value::Null),
                service_port_key(key.0, key.1),
            ));
        }
    }
    if !list_at(spec, "loadBalancerSourceRanges").is_empty() && service_type != "LoadBalancer" {
        errs.push(Error::forbidden(
            &spec_path.child("LoadBalancerSourceRanges"),
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
    if is_set(spec, "allocateLoadBalancerNodePorts") && service_type != "LoadBalancer" {
        errs.push(Error::forbidden(
            &spec_path.child("allocateLoadBalancerNodePorts"),
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
    if service_type == "LoadBalancer" && !is_set(spec, "allocateLoadBalancerNodePorts") {
        errs.push(Error::required(
            &Path::new("allocateLoadBalancerNodePorts"),
            "",
        ));
    }
    errs
}

/// `validateServicePort`.
fn service_port<'a>(
    port: &'a Value,
    require_name: bool,
    names: &mut BTreeSet<&'a str>,
    path: &Path,
) -> ErrorList {
    let mut errs = ErrorList::new();
    let name = str_at(port, "name");
    if require_name && name.is_empty() {
        errs.push(Error::required(&path.child("name"), ""));
    } else if !name.is_empty() {
        errs.extend(dns1123_label(name, &path.child("name")));
        if !names.insert(name) {
            errs.push(Error::duplicate(&path.child("name"), Value::from(name)));
        }
    }
    let number = int_at(port, "port");
    for msg in port_num(number) {
        errs.push(Error::invalid(
            &path.child("port"),
            Value::from(number),
            msg,
        ));
    }
    errs.extend(protocol(str_at(port, "protocol"), &path.child("protocol")));
    errs.extend(port_num_or_name(
        port.get("targetPort"),
        &path.child("targetPort"),
    ));
    if let Some(app) = opt_str(port, "appProtocol") {
        errs.extend(label_name(app, &path.child("appProtocol")));
    }
    errs
}

/// `IsValidIPForLegacyField` without strict validation.
fn legacy_ip(ip: &str, path: &Path) -> ErrorList {
    if ip.parse::<std::net::IpAddr>().is_ok() || sloppy_ipv4(ip) {
        ErrorList::new()
    } else {
        vec![Error::invalid(
            path,
            Value::from(ip),
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        )]
    }
}

/// Go's legacy parser also reads IPv4 octets with leading zeros as decimal.
fn sloppy_ipv4(ip: &str) -> bool {
    let parts: Vec<&str> = ip.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.bytes().all(|b| b.is_ascii_digit())
                && p.parse::<u16>().is_ok_and(|n| n <= 255)
        })
}

/// `ValidateServiceClusterIPsRelatedFields` (dual-stack families checked by count and
/// kind only).
/// kube's `ValidateServiceClusterIPsRelatedFields` over a Service's `spec` (the
/// service allocator runs it before allocating, as kube's registry does).
pub fn service_cluster_ip_fields(spec: &Value, old: Option<&Value>) -> ErrorList {
    let mut errs = ErrorList::new();
    let path = Path::new("spec").child("clusterIPs");
    let ips = cluster_ips(spec);
    let ips_value = Value::from(ips.clone());
    if !str_at(spec, "clusterIP").is_empty() && ips[0] != str_at(spec, "clusterIP") {
        errs.push(Error::invalid(
            &path,
            ips_value.clone(),
            "first value must match `clusterIP`",
        ));
    }
    let families = list_at(spec, "ipFamilies");
    let mut seen = BTreeSet::new();
    for (i, f) in families.iter().enumerate() {
        let f = f.as_str().unwrap_or("");
        let p = Path::new("spec").child("ipFamilies").index(i);
        if f != "IPv4" && f != "IPv6" {
            errs.push(Error::not_supported(&p, Value::from(f), &["IPv4", "IPv6"]));
        }
        if !seen.insert(f) {
            errs.push(Error::duplicate(&p, Value::from(f)));
        }
    }
    if let Some(policy) = opt_str(spec, "ipFamilyPolicy") {
        let valid = ["PreferDualStack", "RequireDualStack", "SingleStack"];
        if !valid.contains(&policy) {
            errs.push(Error::not_supported(
                &Path::new("spec").child("ipFamilyPolicy"),
                Value::from(policy),
                &valid,
            ));
        }
    }
    let existing: Vec<String> = old.map(cluster_ips).unwrap_or_default();
    let mut invalid = false;
    for (i, ip) in ips.iter().enumerate() {
        if i == 0 && ip == "None" {
            if ips.len() > 1 {
                invalid = true;
                errs.push(Error::invalid(
                    &path,
                    ips_value.clone(),
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        if existing.contains(ip) {
            continue;
        }
        let e = legacy_ip(ip, &path.index(i));
        invalid |= !e.is_empty();
        errs.extend(e);
    }
    if ips.len() > 2 {
        errs.push(Error::invalid(
            &path,
            ips_value.clone(),
            "may only hold up to 2 values",
        ));
    }
    if invalid {
        return errs;
    }
    if ips.len() > 1 {
        let v6 = ips.iter().filter(|ip| ip.contains(':')).count();
        if v6 != 1 || ips.len() != 2 {
            errs.push(Error::invalid(
                &path,
                ips_value,
                "may specify no more than one IP for each IP family",
            ));
        }
    }
    if !is_headless(spec) {
        for (i, (ip, f)) in ips.iter().zip(families).enumerate() {
            match f.as_str() {
                Some("IPv4") if ip.contains(':') => errs.push(Error::invalid(
                    &path.index(i),
                    Value::from(ip.as_str()),
                    format!("expected an IPv4 value as indicated by `ipFamilies[{i}]`"),
                )),
                Some("IPv6") if !ip.contains(':') => errs.push(Error::invalid(
                    &path.index(i),
                    Value::from(ip.as_str()),
                    format!("expected an IPv6 value as indicated by `ipFamilies[{i}]`"),
                )),
                _ => {}
            }
        }
    }
    errs
}

/// `ValidateServiceUpdate` without `ObjectMeta`: cluster IPs and families keep their
/// primary value unless the service is or becomes ExternalName.
pub fn service_update(new: &Value, old: &Value) -> ErrorList {
    let mut errs = ErrorList::new();
    let (ns, os) = (value_at(new, "spec"), value_at(old, "spec"));
    let external = str_at(ns, "type") == "ExternalName" || str_at(os, "type") == "ExternalName";
    let both_headless = is_headless(ns) && is_headless(os);
    if !external && !both_headless {
        let (n, o) = (cluster_ips(ns), cluster_ips(os));
        let path = Path::new("spec").child("clusterIPs");
        let n_value = Value::from(n.clone());
        if n.len() == o.len() {
            for (i, ip) in o.iter().enumerate() {
                if *ip != n[i] {
                    errs.push(Error::invalid(
                        &path.index(i),
                        n_value.clone(),
                        "may not change once set",
                    ));
                }
            }
        } else if o.len() > n.len() {
            if n.is_empty() {
                errs.push(Error::invalid(
                    &path.index(0),
                    n_value.clone(),
                    "primary clusterIP can not be unset",
                ));
            } else if n[0] != o[0] {
                errs.push(Error::invalid(
                    &path.index(0),
                    n_value.clone(),
                    "may not change once set",
                ));
            }
            if n.len() == 1 && opt_str(ns, "ipFamilyPolicy") != Some("SingleStack") {
                errs.push(Error::invalid(
                    &Path::new("spec").child("ipFamilyPolicy"),
                    value_at(ns, "ipFamilyPolicy").clone(),
                    "must be set to 'SingleStack' when releasing the secondary clusterIP",
                ));
            }
        } else if !o.is_empty() && n[0] != o[0] {
            errs.push(Error::invalid(
                &path.index(0),
                n_value,
                "may not change once set",
            ));
        }
    }
    errs.extend(service(new, Some(old)));
    errs
}

// ---------------------------------------------------------------------------------------
// PersistentVolumeClaim

/// `ValidatePersistentVolumeClaimSpec`.
pub fn persistent_volume_claim_spec(spec: &Value, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let modes = list_at(spec, "accessModes");
    if modes.is_empty() {
        errs.push(Error::required(
            &path.child("accessModes"),
            "at least 1 access mode is required",
        ));
    }
    if let Some(selector) = spec.get("selector").filter(|s| s.is_object()) {
        errs.extend(label_selector(selector, &path.child("selector")));
    }
    let supported = [
        "ReadOnlyMany",
        "ReadWriteMany",
        "ReadWriteOnce",
        "ReadWriteOncePod",
    ];
    let (mut once_pod, mut other) = (false, false);
    for mode in modes {
        let mode = mode.as_str().unwrap_or("");
        if !supported.contains(&mode) {
            errs.push(Error::not_supported(
                &path.child("accessModes"),
                Value::from(mode),
                &supported,
            ));
        }
        if mode == "ReadWriteOncePod" {
            once_pod = true;
        } else if supported.contains(&mode) {
            other = true;
        }
    }
    if once_pod && other {
        errs.push(Error::forbidden(
            &path.child("accessModes"),
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    let storage_path = path.child("resources").key("storage");
    let resources = value_at(spec, "resources");
    match obj_at(resources, "requests").and_then(|r| r.get("storage")) {
        None => errs.push(Error::required(&storage_path, "")),
        Some(v) => {
            let text = v
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string());
            if let Ok(q) = Quantity::parse(&text) {
                if !q.compare(&zero()).is_gt() {
                    errs.push(Error::invalid(
                        &storage_path,
                        Value::from(text),
                        "must be greater than zero",
                    ));
                }
            }
        }
    }
    if let Some(class) = opt_str(spec, "storageClassName").filter(|c| !c.is_empty()) {
        for msg in is_dns1123_subdomain(class) {
            errs.push(Error::invalid(
                &path.child("storageClassName"),
                Value::from(class),
                msg,
            ));
        }
    }
    if let Some(mode) = opt_str(spec, "volumeMode") {
        if mode != "Block" && mode != "Filesystem" {
            errs.push(Error::not_supported(
                &path.child("volumeMode"),
                Value::from(mode),
                &["Block", "Filesystem"],
            ));
        }
    }
    if let Some(class) = opt_str(spec, "volumeAttributesClassName").filter(|c| !c.is_empty()) {
        for msg in is_dns1123_subdomain(class) {
            errs.push(Error::invalid(
                &path.child("volumeAttributesClassName"),
                Value::from(class),
                msg,
            ));
        }
    }
    errs
}

/// `ValidatePersistentVolumeClaimUpdate` without `ObjectMeta`: the spec is immutable
/// but for a volume name set once, the storage request of a bound claim and its
/// volume attributes class. The `Forbidden` error on `spec` carries kube's fixed text
/// followed by a diff of our own.
pub fn persistent_volume_claim_update(new: &Value, old: &Value) -> ErrorList {
    let (ns, os) = (value_at(new, "spec"), value_at(old, "spec"));
    let mut errs = persistent_volume_claim_spec(ns, &Path::new("spec"));
    let mut new_clone = ns.clone();
    let mut old_clone = os.clone();
    if str_at(os, "volumeName").is_empty() {
        if let Some(m) = old_clone.as_object_mut() {
            match ns.get("volumeName") {
                Some(v) => m.insert("volumeName".into(), v.clone()),
                None => m.remove("volumeName"),
            };
        }
    }
    // A class set where there was none takes over the beta annotation's value.
    let old_annotation = value_at(old, "metadata")
        .get("annotations")
        .and_then(|a| a.get("volume.beta.kubernetes.io/storage-class"))
        .and_then(Value::as_str)
        .map(str::to_string);
    if !is_set(os, "storageClassName") {
        if let Some(class) = opt_str(ns, "storageClassName") {
            if old_annotation.as_deref().is_none_or(|a| a == class) {
                if let Some(m) = new_clone.as_object_mut() {
                    m.remove("storageClassName");
                }
            }
        }
    }
    let bound = value_at(new, "status").get("phase").and_then(Value::as_str) == Some("Bound");
    if bound {
        if let Some(requests) = new_clone
            .pointer_mut("/resources/requests")
            .and_then(Value::as_object_mut)
        {
            match os.pointer("/resources/requests/storage") {
                Some(v) => requests.insert("storage".into(), v.clone()),
                None => requests.remove("storage"),
            };
        }
        if let Some(m) = new_clone.as_object_mut() {
            match os.get("volumeAttributesClassName") {
                Some(v) => m.insert("volumeAttributesClassName".into(), v.clone()),
                None => m.remove("volumeAttributesClassName"),
            };
        }
    }
    if !semantic_eq(Some(&new_clone), Some(&old_clone)) {
        errs.push(Error::forbidden(
            &Path::new("spec"),
            format!(
                "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n{}",
                spec_diff(&old_clone, &new_clone)
            ),
        ));
    }
    let size = |spec: &Value| {
        spec.pointer("/resources/requests/storage")
            .and_then(Value::as_str)
            .and_then(|s| Quantity::parse(s).ok())
            .unwrap_or_else(zero)
    };
    if size(ns).compare(&size(os)).is_lt() {
        let status_size = value_at(old, "status")
            .pointer("/capacity/storage")
            .and_then(Value::as_str)
            .and_then(|s| Quantity::parse(s).ok())
            .unwrap_or_else(zero);
        if !size(ns).compare(&status_size).is_gt() {
            errs.push(Error::forbidden(
                &Path::new("spec")
                    .child("resources")
                    .child("requests")
                    .child("storage"),
                "field can not be less than status.capacity",
            ));
        }
    }
    errs.extend(immutable(ns, os, "volumeMode", &Path::new("volumeMode")));
    errs
}
