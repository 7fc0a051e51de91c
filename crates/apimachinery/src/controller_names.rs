//! kube-controller-manager's `--controllers`: a list of controller names, `*` for every
//! controller on by default, `NAME` to turn one on and `-NAME` to turn one off; a name
//! is kube v1.36's canonical one (`deployment-controller`) or its alias
//! (`deployment`). Checked with kube's message, then asked which controllers are on.

/// kube v1.36's controllers: `(canonical name, alias)` (`""`: none).
const KNOWN: &[(&str, &str)] = &[
    ("bootstrap-signer-controller", "bootstrapsigner"),
    (
        "certificatesigningrequest-approving-controller",
        "csrapproving",
    ),
    ("certificatesigningrequest-cleaner-controller", "csrcleaner"),
    ("certificatesigningrequest-signing-controller", "csrsigning"),
    ("cloud-node-lifecycle-controller", "cloud-node-lifecycle"),
    (
        "clusterrole-aggregation-controller",
        "clusterrole-aggregation",
    ),
    ("cronjob-controller", "cronjob"),
    ("daemonset-controller", "daemonset"),
    ("deployment-controller", "deployment"),
    ("device-taint-eviction-controller", ""),
    ("disruption-controller", "disruption"),
    ("endpoints-controller", "endpoint"),
    ("endpointslice-controller", "endpointslice"),
    (
        "endpointslice-mirroring-controller",
        "endpointslicemirroring",
    ),
    ("ephemeral-volume-controller", "ephemeral-volume"),
    ("garbage-collector-controller", "garbagecollector"),
    (
        "horizontal-pod-autoscaler-controller",
        "horizontalpodautoscaling",
    ),
    ("job-controller", "job"),
    (
        "kube-apiserver-serving-clustertrustbundle-publisher-controller",
        "",
    ),
    (
        "legacy-serviceaccount-token-cleaner-controller",
        "legacy-service-account-token-cleaner",
    ),
    ("namespace-controller", "namespace"),
    ("node-ipam-controller", "nodeipam"),
    ("node-lifecycle-controller", "nodelifecycle"),
    ("node-route-controller", "route"),
    ("persistentvolume-attach-detach-controller", "attachdetach"),
    (
        "persistentvolume-binder-controller",
        "persistentvolume-binder",
    ),
    (
        "persistentvolume-expander-controller",
        "persistentvolume-expander",
    ),
    ("persistentvolume-protection-controller", "pv-protection"),
    (
        "persistentvolumeclaim-protection-controller",
        "pvc-protection",
    ),
    ("pod-garbage-collector-controller", "podgc"),
    ("podcertificaterequest-cleaner-controller", ""),
    ("podgroup-protection-controller", ""),
    ("replicaset-controller", "replicaset"),
    ("replicationcontroller-controller", "replicationcontroller"),
    ("resourceclaim-controller", "resource-claim-controller"),
    ("resourcepoolstatusrequest-controller", ""),
    ("resourcequota-controller", "resourcequota"),
    (
        "root-ca-certificate-publisher-controller",
        "root-ca-cert-publisher",
    ),
    ("selinux-warning-controller", ""),
    (
        "service-ca-certificate-publisher-controller",
        "service-ca-cert-publisher",
    ),
    ("service-cidr-controller", ""),
    ("service-lb-controller", "service"),
    ("serviceaccount-controller", "serviceaccount"),
    ("serviceaccount-token-controller", "serviceaccount-token"),
    ("statefulset-controller", "statefulset"),
    ("storage-version-migrator-controller", "svm"),
    (
        "storageversion-garbage-collector-controller",
        "storage-version-gc",
    ),
    ("taint-eviction-controller", ""),
    ("token-cleaner-controller", "tokencleaner"),
    ("ttl-after-finished-controller", "ttl-after-finished"),
    ("ttl-controller", "ttl"),
    ("validatingadmissionpolicy-status-controller", ""),
    ("volumeattributesclass-protection-controller", ""),
];

/// The controllers `*` leaves off, as kube's.
const DISABLED_BY_DEFAULT: &[&str] = &[
    "bootstrap-signer-controller",
    "selinux-warning-controller",
    "token-cleaner-controller",
];

/// The canonical name of `name` (itself or an alias), if kube knows it.
pub fn canonical(name: &str) -> Option<&'static str> {
    KNOWN
        .iter()
        .find(|(c, alias)| *c == name || (!alias.is_empty() && *alias == name))
        .map(|(c, _)| *c)
}

/// The names of `--controllers` kube does not know, each in kube's words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.join(", "))]
pub struct UnknownControllers(pub Vec<String>);

/// `--controllers` once checked: the entries as given, names made canonical.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Controllers {
    entries: Vec<String>,
}

impl Controllers {
    /// Read and check the values of every `--controllers` given (comma-separated
    /// lists): every name unknown to kube is refused, in kube's words.
    pub fn from_flags(values: &[String]) -> Result<Controllers, UnknownControllers> {
        let mut entries = Vec::new();
        let mut errors = Vec::new();
        for entry in values.iter().flat_map(|v| v.split(',')) {
            let entry = entry.trim();
            if entry.is_empty() {
                continue;
            }
            if entry == "*" {
                entries.push(entry.to_string());
                continue;
            }
            let (prefix, name) = match entry.strip_prefix('-') {
                Some(name) => ("-", name),
                None => ("", entry),
            };
            match canonical(name) {
                Some(c) => entries.push(format!("{prefix}{c}")),
                None => errors.push(format!("{name:?} is not in the list of known controllers")),
            }
        }
        if errors.is_empty() {
            Ok(Controllers { entries })
        } else {
            Err(UnknownControllers(errors))
        }
    }

    /// Whether the controller `name` (canonical or alias) is on: the first entry that
    /// names it decides; else `*` turns on what kube turns on by default; else off.
    pub fn enabled(&self, name: &str) -> bool {
        let Some(name) = canonical(name) else {
            return false;
        };
        let mut star = false;
        for entry in &self.entries {
            if entry == name {
                return true;
            }
            if entry.strip_prefix('-') == Some(name) {
                return false;
            }
            star |= entry == "*";
        }
        star && !DISABLED_BY_DEFAULT.contains(&name)
    }

    /// Whether no controller is on.
    pub fn is_empty(&self) -> bool {
        KNOWN.iter().all(|(c, _)| !self.enabled(c))
    }

    /// The canonical names turned on, in kube's order of [`KNOWN`].
    pub fn on(&self) -> Vec<&'static str> {
        KNOWN
            .iter()
            .map(|(c, _)| *c)
            .filter(|c| self.enabled(c))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(values: &[&str]) -> Result<Controllers, UnknownControllers> {
        let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        Controllers::from_flags(&values)
    }

    #[test]
    fn unknown_names_are_refused_in_kubes_words() {
        assert_eq!(
            parse(&["deployment,red-controller", "-grey"])
                .unwrap_err()
                .to_string(),
            "\"red-controller\" is not in the list of known controllers, \"grey\" is not in the list of known controllers"
        );
    }

    #[test]
    fn the_first_entry_naming_a_controller_decides_then_the_star() {
        let c = parse(&["*,-job"]).unwrap();
        assert!(c.enabled("deployment"));
        assert!(c.enabled("garbage-collector-controller"));
        assert!(!c.enabled("job-controller"));
        assert!(!c.enabled("tokencleaner"));
        let c = parse(&["deployment-controller", "replicaset"]).unwrap();
        assert!(c.enabled("deployment"));
        assert!(c.enabled("replicaset-controller"));
        assert!(!c.enabled("job"));
        assert!(parse(&[]).unwrap().is_empty());
        assert_eq!(
            parse(&["garbagecollector,job"]).unwrap().on(),
            ["garbage-collector-controller", "job-controller"]
        );
    }
}
