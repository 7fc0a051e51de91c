//! kube-apiserver's `--feature-gates`, read as kube reads them: `[component:]Name=bool`
//! pairs, comma-separated, the flag repeatable; the component `kube` or none; a gate kube
//! does not know is accepted with a warning, a value that is no Go bool or that a gate
//! locked to its default refuses stops the start, in kube's words. The gates and their
//! defaults are kube v1.36's (`data/kube-v1.36/feature-gates.txt`); `AllAlpha` /
//! `AllBeta` turn on every alpha / beta gate not set explicitly, as kube.

use crate::command_line::{parse_bool, strconv_error};
use std::collections::BTreeMap;
use std::sync::LazyLock;

const GATES: &str = include_str!("../data/kube-v1.36/feature-gates.txt");

/// One of kube's feature gates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gate {
    /// Its name (`APIResponseCompression`).
    pub name: &'static str,
    /// Whether it is on when not set.
    pub default: bool,
    /// `ALPHA`, `BETA`, `GA` or `DEPRECATED`.
    pub stage: &'static str,
    /// Whether kube refuses any value but the default.
    pub locked: bool,
}

/// kube v1.36's feature gates, by name.
pub fn known() -> &'static BTreeMap<&'static str, Gate> {
    static KNOWN: LazyLock<BTreeMap<&'static str, Gate>> = LazyLock::new(|| {
        GATES
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .filter_map(|l| {
                let mut words = l.split_whitespace();
                let (name, default, stage) = (words.next()?, words.next()?, words.next()?);
                let gate = Gate {
                    name,
                    default: default == "true",
                    stage,
                    locked: words.next() == Some("locked"),
                };
                Some((name, gate))
            })
            .collect()
    });
    &KNOWN
}

/// Why `--feature-gates` stops the start, in kube's words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FeatureGateError {
    /// A component other than `kube`.
    #[error("component not registered: {0}")]
    Component(String),
    /// `Name` without `=bool`.
    #[error("missing bool value for {0}")]
    MissingBool(String),
    /// A value that is no Go bool.
    #[error("invalid value of {name}={value}, err: {}", strconv_error("ParseBool", .value, "invalid syntax"))]
    InvalidValue {
        /// The gate.
        name: String,
        /// What was given.
        value: String,
    },
    /// A locked gate set to what it is not locked to.
    #[error("cannot set feature gate {name} to {value}, feature is locked to {}", !.value)]
    Locked {
        /// The gate.
        name: String,
        /// What was asked.
        value: bool,
    },
}

/// The gates as the command line sets them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FeatureGates {
    set: BTreeMap<String, bool>,
}

impl FeatureGates {
    /// Read the values of every `--feature-gates` given, in order (a later value of a
    /// gate wins). Returns the gates and the names kube does not know (kube warns
    /// `unrecognized feature gate: NAME` and goes on).
    pub fn from_flags(values: &[String]) -> Result<(FeatureGates, Vec<String>), FeatureGateError> {
        let mut gates = FeatureGates::default();
        let mut unknown = Vec::new();
        for pair in values.iter().flat_map(|v| v.split(',')) {
            if pair.is_empty() {
                continue;
            }
            let pair = match pair.split_once(':') {
                Some((component, rest)) => {
                    let component = component.trim();
                    if component != "kube" && !component.is_empty() {
                        return Err(FeatureGateError::Component(component.to_string()));
                    }
                    rest.trim()
                }
                None => pair.trim(),
            };
            let Some((name, value)) = pair.split_once('=') else {
                return Err(FeatureGateError::MissingBool(pair.trim().to_string()));
            };
            let (name, value) = (name.trim(), value.trim());
            let Some(on) = parse_bool(value) else {
                return Err(FeatureGateError::InvalidValue {
                    name: name.to_string(),
                    value: value.to_string(),
                });
            };
            match known().get(name) {
                None => {
                    if !unknown.iter().any(|u| u == name) {
                        unknown.push(name.to_string());
                    }
                    continue;
                }
                Some(gate) if gate.locked && gate.default != on => {
                    return Err(FeatureGateError::Locked {
                        name: name.to_string(),
                        value: on,
                    });
                }
                Some(_) => {}
            }
            gates.set.insert(name.to_string(), on);
        }
        Ok((gates, unknown))
    }

    /// Whether `name` is on: as set, else on when `AllAlpha`/`AllBeta` covers its
    /// stage, else its default (a gate kube does not know is off).
    pub fn enabled(&self, name: &str) -> bool {
        if let Some(on) = self.set.get(name) {
            return *on;
        }
        let Some(gate) = known().get(name) else {
            return false;
        };
        let all = |key: &str| self.set.get(key).copied().unwrap_or(false);
        match gate.stage {
            "ALPHA" if all("AllAlpha") => true,
            "BETA" if all("AllBeta") => true,
            _ => gate.default,
        }
    }

    /// The gates set on the command line, by name.
    pub fn explicit(&self) -> &BTreeMap<String, bool> {
        &self.set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(values: &[&str]) -> Result<(FeatureGates, Vec<String>), String> {
        let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        FeatureGates::from_flags(&values).map_err(|e| e.to_string())
    }

    #[test]
    fn kube_v1_36_gates_with_their_defaults_and_locks() {
        let gate = &known()["CRDValidationRatcheting"];
        assert!(gate.default && gate.locked && gate.stage == "GA");
        let gate = &known()["APIResponseCompression"];
        assert!(gate.default && !gate.locked && gate.stage == "BETA");
        assert!(known().len() > 200);
    }

    #[test]
    fn errors_read_as_kubes() {
        // Each text observed from kube-apiserver v1.36 (`"command failed" err=...`).
        assert_eq!(
            parse(&["AllAlpha=maybe"]).unwrap_err(),
            "invalid value of AllAlpha=maybe, err: strconv.ParseBool: parsing \"maybe\": invalid syntax"
        );
        assert_eq!(
            parse(&["wardle:X=true"]).unwrap_err(),
            "component not registered: wardle"
        );
        assert_eq!(
            parse(&["CRDValidationRatcheting=false"]).unwrap_err(),
            "cannot set feature gate CRDValidationRatcheting to false, feature is locked to true"
        );
        assert_eq!(
            parse(&["APIResponseCompression"]).unwrap_err(),
            "missing bool value for APIResponseCompression"
        );
    }

    #[test]
    fn unknown_gates_are_warned_about_and_later_values_win() {
        let (gates, unknown) = parse(&[
            "Foo=true,kube:APIResponseCompression=false",
            "Foo=1,WatchList=F",
        ])
        .unwrap();
        assert_eq!(unknown, ["Foo"]);
        assert!(!gates.enabled("APIResponseCompression"));
        assert!(!gates.enabled("WatchList"));
        assert!(gates.enabled("SizeBasedListCostEstimate"));
        assert!(!gates.enabled("Foo"));
        let (gates, _) = parse(&["AllAlpha=true", "CBORServingAndStorage=false"]).unwrap();
        assert!(gates.enabled("DRAListTypeAttributes"));
        assert!(!gates.enabled("CBORServingAndStorage"));
        assert!(
            !gates.enabled("DRADeviceTaintRules"),
            "a beta gate stays at its default"
        );
    }
}
