//! kube-apiserver's `--runtime-config`: `key[=value]` pairs, comma-separated, the flag
//! repeatable; keys `api/all`, `api/ga`, `api/beta`, `api/alpha` (`true`/`false`),
//! `GROUP/VERSION` or `GROUP/VERSION/RESOURCE` (a Go bool, empty meaning true; the core
//! group as `v1`, `/v1` or `api/v1`, and `api/legacy` dropped, as kube completes them).
//! Checked as kube v1.36 checks them against the group/versions its scheme registers,
//! with kube's messages; then asked which group/versions and resources are on.

use crate::command_line::{parse_bool, strconv_error};
use std::collections::BTreeMap;

/// The group/versions kube v1.36's scheme registers (its `install` packages, the
/// apiextensions and aggregator ones included): what `--runtime-config` may name.
const REGISTERED: &[(&str, &[&str])] = &[
    ("", &["v1"]),
    ("admission.k8s.io", &["v1", "v1beta1"]),
    (
        "admissionregistration.k8s.io",
        &["v1", "v1beta1", "v1alpha1"],
    ),
    ("apiextensions.k8s.io", &["v1", "v1beta1"]),
    ("apiregistration.k8s.io", &["v1", "v1beta1"]),
    ("apps", &["v1", "v1beta2", "v1beta1"]),
    ("authentication.k8s.io", &["v1", "v1beta1", "v1alpha1"]),
    ("authorization.k8s.io", &["v1", "v1beta1"]),
    ("autoscaling", &["v2", "v1"]),
    ("batch", &["v1", "v1beta1"]),
    ("certificates.k8s.io", &["v1", "v1beta1", "v1alpha1"]),
    ("coordination.k8s.io", &["v1", "v1beta1", "v1alpha2"]),
    ("discovery.k8s.io", &["v1", "v1beta1"]),
    ("events.k8s.io", &["v1", "v1beta1"]),
    ("extensions", &["v1beta1"]),
    (
        "flowcontrol.apiserver.k8s.io",
        &["v1", "v1beta3", "v1beta2", "v1beta1"],
    ),
    ("imagepolicy.k8s.io", &["v1alpha1"]),
    ("internal.apiserver.k8s.io", &["v1alpha1"]),
    ("networking.k8s.io", &["v1", "v1beta1"]),
    ("node.k8s.io", &["v1", "v1beta1", "v1alpha1"]),
    ("policy", &["v1", "v1beta1"]),
    ("rbac.authorization.k8s.io", &["v1", "v1beta1", "v1alpha1"]),
    ("resource.k8s.io", &["v1", "v1beta2", "v1beta1", "v1alpha3"]),
    ("scheduling.k8s.io", &["v1", "v1beta1", "v1alpha2"]),
    ("storage.k8s.io", &["v1", "v1beta1", "v1alpha1"]),
    ("storagemigration.k8s.io", &["v1beta1"]),
];

/// The keys that switch versions by their form, in the order kube applies them.
const MATCHERS: [&str; 4] = ["api/all", "api/ga", "api/beta", "api/alpha"];

/// Why `--runtime-config` stops the start, in kube's words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeConfigError {
    /// `api/all=false` and nothing else.
    #[error("invalid runtime-config with only api/all=false")]
    OnlyAllFalse,
    /// A key of neither two nor three `/`-separated parts.
    #[error("runtime-config invalid key {0}")]
    InvalidKey(String),
    /// Groups kube does not register.
    #[error("unknown api groups {}", .0.join(","))]
    UnknownGroups(Vec<String>),
    /// A matcher whose value is neither `true` nor `false`.
    #[error("invalid value {key}={value}")]
    MatcherValue {
        /// `api/all`, ...
        key: String,
        /// What was given.
        value: String,
    },
    /// A version kube does not register in a group it does.
    #[error("group version {0} that has not been registered")]
    UnregisteredVersion(String),
    /// A group/version's value that is no Go bool.
    #[error("invalid value of {key}: {value}, err: {}", strconv_error("ParseBool", .value, "invalid syntax"))]
    Value {
        /// The key.
        key: String,
        /// What was given.
        value: String,
    },
    /// A resource that is not lower case.
    #[error("invalid key {key}: group/version/resource and resource is always lowercase plural, not \"{resource}\"")]
    ResourceCase {
        /// The key.
        key: String,
        /// The resource as given.
        resource: String,
    },
}

/// Whether a version is GA, beta or alpha (`v1`, `v1beta2`, `v1alpha1`).
fn stage(version: &str) -> Option<&'static str> {
    let rest = version.strip_prefix('v')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = &rest[digits..];
    let numbered = |tail: &str| !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit());
    if rest.is_empty() {
        Some("api/ga")
    } else if rest.strip_prefix("beta").is_some_and(numbered) {
        Some("api/beta")
    } else if rest.strip_prefix("alpha").is_some_and(numbered) {
        Some("api/alpha")
    } else {
        None
    }
}

/// `--runtime-config` once checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// The matchers given, in kube's order of application.
    matchers: Vec<(&'static str, bool)>,
    /// `(group, version)` switched on or off.
    versions: BTreeMap<(String, String), bool>,
    /// `(group, version, resource)` switched on or off.
    resources: BTreeMap<(String, String, String), bool>,
}

/// Go's `GroupVersion.String()`: `group/version`, the core group's as `version`.
fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// kube's `schema.ParseGroupVersion` of `GROUP/VERSION` or `VERSION`.
fn parse_group_version(s: &str) -> Option<(String, String)> {
    if s.is_empty() || s == "/" {
        return Some((String::new(), String::new()));
    }
    match s.matches('/').count() {
        0 => Some((String::new(), s.to_string())),
        1 => s
            .split_once('/')
            .map(|(g, v)| (g.to_string(), v.to_string())),
        _ => None,
    }
}

impl RuntimeConfig {
    /// Read and check the values of every `--runtime-config` given.
    pub fn from_flags(values: &[String]) -> Result<RuntimeConfig, RuntimeConfigError> {
        // cliflag.ConfigurationMap: a later key wins.
        let mut map: BTreeMap<String, String> = BTreeMap::new();
        for pair in values.iter().flat_map(|v| v.split(',')) {
            if pair.is_empty() {
                continue;
            }
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            map.insert(key.trim().to_string(), value.trim().to_string());
        }
        // kube-apiserver's completion: the core group's spellings become `/v1`.
        let keys: Vec<String> = map.keys().cloned().collect();
        for key in keys {
            if key == "v1"
                || key.starts_with("v1/")
                || key == "api/v1"
                || key.starts_with("api/v1/")
            {
                let value = map.remove(&key).unwrap_or_default();
                map.insert("/v1".to_string(), value);
            }
            if key == "api/legacy" {
                map.remove(&key);
            }
        }
        if map.len() == 1 && map.get("api/all").map(String::as_str) == Some("false") {
            return Err(RuntimeConfigError::OnlyAllFalse);
        }
        let registered = |group: &str| REGISTERED.iter().find(|(g, _)| *g == group);
        let mut unknown = Vec::new();
        for key in map.keys().filter(|k| !MATCHERS.contains(&k.as_str())) {
            let tokens: Vec<&str> = key.split('/').collect();
            if tokens.len() != 2 && tokens.len() != 3 {
                return Err(RuntimeConfigError::InvalidKey(key.clone()));
            }
            let (group, version) = parse_group_version(&format!("{}/{}", tokens[0], tokens[1]))
                .ok_or_else(|| RuntimeConfigError::InvalidKey(key.clone()))?;
            if registered(&group).is_none() {
                let gv = group_version(&group, &version);
                if !unknown.contains(&gv) {
                    unknown.push(gv);
                }
            }
        }
        if !unknown.is_empty() {
            unknown.sort();
            return Err(RuntimeConfigError::UnknownGroups(unknown));
        }
        let mut config = RuntimeConfig::default();
        for matcher in MATCHERS {
            if let Some(value) = map.get(matcher) {
                let on = match value.as_str() {
                    "true" => true,
                    "false" => false,
                    _ => {
                        return Err(RuntimeConfigError::MatcherValue {
                            key: matcher.to_string(),
                            value: value.clone(),
                        })
                    }
                };
                config.matchers.push((matcher, on));
            }
        }
        for (key, value) in map.iter().filter(|(k, _)| !MATCHERS.contains(&k.as_str())) {
            let tokens: Vec<&str> = key.split('/').collect();
            let Some((group, version)) =
                parse_group_version(&format!("{}/{}", tokens[0], tokens[1]))
            else {
                continue;
            };
            let Some((_, versions)) = registered(&group) else {
                continue;
            };
            if !versions.contains(&version.as_str()) {
                return Err(RuntimeConfigError::UnregisteredVersion(group_version(
                    &group, &version,
                )));
            }
            let on = if value.is_empty() {
                true
            } else {
                parse_bool(value).ok_or_else(|| RuntimeConfigError::Value {
                    key: key.clone(),
                    value: value.clone(),
                })?
            };
            match tokens.get(2) {
                None => {
                    config.versions.insert((group, version), on);
                }
                Some(resource) => {
                    if resource.to_lowercase() != *resource {
                        return Err(RuntimeConfigError::ResourceCase {
                            key: key.clone(),
                            resource: resource.to_string(),
                        });
                    }
                    config
                        .resources
                        .insert((group, version, resource.to_string()), on);
                }
            }
        }
        Ok(config)
    }

    /// Whether `group/version` is on: explicitly, else by the last matcher of its
    /// form, else `by_default` (kube's default: GA versions on, the rest off).
    pub fn version_enabled(&self, group: &str, version: &str, by_default: bool) -> bool {
        if let Some(on) = self.versions.get(&(group.to_string(), version.to_string())) {
            return *on;
        }
        let form = stage(version);
        self.matchers
            .iter()
            .rev()
            .find(|(m, _)| *m == "api/all" || Some(*m) == form)
            .map(|(_, on)| *on)
            .unwrap_or(by_default)
    }

    /// Whether `resource` of `group/version` is on: explicitly, else as its version.
    pub fn resource_enabled(
        &self,
        group: &str,
        version: &str,
        resource: &str,
        by_default: bool,
    ) -> bool {
        let key = (group.to_string(), version.to_string(), resource.to_string());
        match self.resources.get(&key) {
            Some(on) => *on,
            None => self.version_enabled(group, version, by_default),
        }
    }

    /// The group/versions and resources switched explicitly, as `KEY=bool`.
    pub fn explicit(&self) -> Vec<String> {
        let gv = |g: &str, v: &str| {
            if g.is_empty() {
                format!("/{v}")
            } else {
                format!("{g}/{v}")
            }
        };
        self.matchers
            .iter()
            .map(|(m, on)| format!("{m}={on}"))
            .chain(
                self.versions
                    .iter()
                    .map(|((g, v), on)| format!("{}={on}", gv(g, v))),
            )
            .chain(
                self.resources
                    .iter()
                    .map(|((g, v, r), on)| format!("{}/{r}={on}", gv(g, v))),
            )
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(values: &[&str]) -> Result<RuntimeConfig, String> {
        let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        RuntimeConfig::from_flags(&values).map_err(|e| e.to_string())
    }

    #[test]
    fn refusals_read_as_kubes() {
        // Each text observed from kube-apiserver v1.36 (`"command failed" err=...`).
        let cases = [
            ("foo/v1=true", "unknown api groups foo/v1"),
            ("foo/v1=true,bar/v2=false", "unknown api groups bar/v2,foo/v1"),
            ("core/v1=true", "unknown api groups core/v1"),
            ("apps/v2=true", "group version apps/v2 that has not been registered"),
            ("autoscaling/v2beta2=true", "group version autoscaling/v2beta2 that has not been registered"),
            ("api/all=maybe", "invalid value api/all=maybe"),
            (
                "apps/v1=maybe",
                "invalid value of apps/v1: maybe, err: strconv.ParseBool: parsing \"maybe\": invalid syntax",
            ),
            (
                "apps/v1/Deployments=false",
                "invalid key apps/v1/Deployments: group/version/resource and resource is always lowercase plural, not \"Deployments\"",
            ),
            ("a/b/c/d=true", "runtime-config invalid key a/b/c/d"),
            ("api/all=false", "invalid runtime-config with only api/all=false"),
        ];
        for (value, want) in cases {
            assert_eq!(parse(&[value]).unwrap_err(), want, "{value}");
        }
    }

    #[test]
    fn accepted_as_kube_accepts_them() {
        for value in [
            "v1=true",
            "/v1",
            "api/v1=true",
            "api/legacy=false",
            "extensions/v1beta1=true",
            "apps/v1beta1=true",
            "storagemigration.k8s.io/v1beta1=true",
            "api/all=true",
            "batch/v1/jobs=false",
            "api/all=false,v1=true",
        ] {
            assert!(parse(&[value]).is_ok(), "{value}");
        }
    }

    #[test]
    fn matchers_then_explicit_versions_and_resources() {
        let config = parse(&[
            "api/beta=true",
            "admissionregistration.k8s.io/v1beta1=false",
        ])
        .unwrap();
        assert!(config.version_enabled("networking.k8s.io", "v1beta1", false));
        assert!(!config.version_enabled("admissionregistration.k8s.io", "v1beta1", false));
        assert!(!config.version_enabled("resource.k8s.io", "v1alpha3", false));
        assert!(config.version_enabled("apps", "v1", true));
        let config = parse(&["api/all=false,api/ga=true", "batch/v1/cronjobs=false"]).unwrap();
        assert!(config.version_enabled("apps", "v1", true));
        assert!(!config.version_enabled("storage.k8s.io", "v1beta1", false));
        assert!(!config.resource_enabled("batch", "v1", "cronjobs", true));
        assert!(config.resource_enabled("batch", "v1", "jobs", true));
        let config = parse(&["networking.k8s.io/v1beta1=true,apps/v1=true,batch/v1=0"]).unwrap();
        assert!(config.version_enabled("networking.k8s.io", "v1beta1", false));
        assert!(!config.resource_enabled("batch", "v1", "jobs", true));
        let config = parse(&["api/v1=false"]).unwrap();
        assert!(!config.version_enabled("", "v1", true));
        assert_eq!(config.explicit(), ["/v1=false"]);
    }
}
