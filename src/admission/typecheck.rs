//! `status.typeChecking` of ValidatingAdmissionPolicies (kube's policy type checker):
//! each validation's `expression` and `messageExpression` is compiled once per kind
//! its `matchConstraints.resourceRules` name exactly (no wildcards), with `object` and
//! `oldObject` typed by that kind's schema and `params` by the paramKind's; each
//! failure becomes an `expressionWarnings` entry.
//!
//! Schemas come from served CRDs ([`Schemas`] over the catalog); built-in kinds are
//! not resolved (kube resolves them from its OpenAPI), so they are never checked.

use crate::cel::admission::{compile, AdmissionEnv, ReturnType, Variables};
use crate::cel::types::{schema_decl, Decl};
use crate::registry::catalog::Catalog;
use serde_json::{json, Value};
use std::sync::Arc;

/// kube's `maxTypesToCheck`.
const MAX_TYPES_TO_CHECK: usize = 10;

/// Where kinds and their schemas are looked up.
pub trait Schemas {
    /// The kind served at `group/version/resource` and its root declaration.
    fn for_resource(
        &self,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Option<(String, Arc<Decl>)>;
    /// The root declaration of `group/version`, `kind`.
    fn for_kind(&self, group: &str, version: &str, kind: &str) -> Option<Arc<Decl>>;
}

fn version_decl(crd: &crate::registry::catalog::CompiledCrd, version: &str) -> Option<Arc<Decl>> {
    let v = crd
        .versions
        .iter()
        .find(|v| v.name == version && v.served)?;
    schema_decl(&v.schema().structural, true)
}

impl Schemas for Catalog {
    fn for_resource(
        &self,
        group: &str,
        version: &str,
        resource: &str,
    ) -> Option<(String, Arc<Decl>)> {
        let crd = self.lookup(group, resource)?;
        Some((crd.info.kind.clone(), version_decl(&crd, version)?))
    }

    fn for_kind(&self, group: &str, version: &str, kind: &str) -> Option<Arc<Decl>> {
        let crd = self.lookup_kind(group, kind)?;
        version_decl(&crd, version)
    }
}

fn strings<'v>(v: &'v Value, key: &str) -> Vec<&'v str> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Go's `GroupVersionKind` `%v`: `group/version, Kind=kind`.
fn gvk_string(group: &str, version: &str, kind: &str) -> String {
    format!("{group}/{version}, Kind={kind}")
}

/// kube's `typesToCheck`: the kinds named by rules without wildcards, sorted, at most
/// [`MAX_TYPES_TO_CHECK`]; with their declarations.
fn types_to_check(spec: &Value, schemas: &dyn Schemas) -> Vec<(String, Arc<Decl>)> {
    let mut found: Vec<((String, String, String), Arc<Decl>)> = Vec::new();
    let rules = spec
        .pointer("/matchConstraints/resourceRules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut count = 0;
    'rules: for rule in &rules {
        let mut lists = Vec::new();
        for key in ["apiGroups", "apiVersions", "resources"] {
            let mut l = strings(rule, key);
            if l.is_empty() || l.iter().any(|x| x.contains('*')) {
                continue 'rules;
            }
            l.sort();
            lists.push(l);
        }
        for g in &lists[0] {
            for v in &lists[1] {
                for r in &lists[2] {
                    let Some((kind, decl)) = schemas.for_resource(g, v, r) else {
                        continue;
                    };
                    let key = (g.to_string(), v.to_string(), kind);
                    if !found.iter().any(|(k, _)| *k == key) {
                        found.push((key, decl));
                    }
                    count += 1;
                    if count == MAX_TYPES_TO_CHECK {
                        break 'rules;
                    }
                }
            }
        }
    }
    // kube's `sortGVKList`: by group, version, kind.
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
        .into_iter()
        .map(|((g, v, k), d)| (gvk_string(&g, &v, &k), d))
        .collect()
}

/// The `status.typeChecking.expressionWarnings` of a policy `spec`.
pub fn expression_warnings(spec: &Value, schemas: &dyn Schemas) -> Vec<Value> {
    let types = types_to_check(spec, schemas);
    if types.is_empty() {
        return Vec::new();
    }
    let param_kind = spec.get("paramKind").filter(|p| !p.is_null());
    let params = param_kind.and_then(|pk| {
        let api_version = pk.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = pk.get("kind").and_then(Value::as_str).unwrap_or("");
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        schemas.for_kind(group, version, kind)
    });
    let variables: Vec<(String, String)> = spec
        .get("variables")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|v| {
                    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                    (s("name"), s("expression"))
                })
                .collect()
        })
        .unwrap_or_default();
    // One environment per kind, with the policy's variables compiled into it.
    let envs: Vec<(&str, AdmissionEnv)> = types
        .iter()
        .map(|(gvk, decl)| {
            let mut env = AdmissionEnv::with_variables(param_kind.is_some())
                .authorizer(true)
                .typed(Some(decl.clone()), params.clone());
            let _ = Variables::compile(&mut env, &variables);
            (gvk.as_str(), env)
        })
        .collect();
    let check = |expr: &str| -> String {
        envs.iter()
            .filter_map(|(gvk, env)| {
                compile(expr, env, ReturnType::Any)
                    .err()
                    .map(|e| format!("{gvk}: {e}\n"))
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut out = Vec::new();
    let validations = spec
        .get("validations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, v) in validations.iter().enumerate() {
        for key in ["expression", "messageExpression"] {
            let expr = v.get(key).and_then(Value::as_str).unwrap_or("");
            if key == "messageExpression" && expr.is_empty() {
                continue;
            }
            let warning = check(expr);
            if !warning.is_empty() {
                out.push(json!({
                    "fieldRef": format!("spec.validations[{i}].{key}"),
                    "warning": warning,
                }));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::props::JSONSchemaProps;
    use crate::schema::structural::Structural;

    /// `example.com/v1` widgets with `spec.replicas` (integer).
    struct Widgets;

    impl Schemas for Widgets {
        fn for_resource(&self, g: &str, v: &str, r: &str) -> Option<(String, Arc<Decl>)> {
            ((g, v, r) == ("example.com", "v1", "widgets"))
                .then(|| ("Widget".to_string(), widget_decl()))
        }
        fn for_kind(&self, g: &str, v: &str, k: &str) -> Option<Arc<Decl>> {
            ((g, v, k) == ("example.com", "v1", "Widget")).then(widget_decl)
        }
    }

    fn widget_decl() -> Arc<Decl> {
        let props = JSONSchemaProps::from_value(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
        }}))
        .expect("schema");
        schema_decl(&Structural::from_props(&props), true).expect("decl")
    }

    #[test]
    fn validations_are_checked_against_the_matched_kinds_schema() {
        let spec = json!({
            "matchConstraints": {"resourceRules": [
                {"apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["widgets"], "operations": ["CREATE"]},
                {"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "operations": ["CREATE"]}
            ]},
            "validations": [
                {"expression": "object.spec.replicas <= 5"},
                {"expression": "object.spec.size == 'L'", "messageExpression": "'replicas: ' + object.spec.replicas"},
                {"expression": "object.metadata.name != ''"}
            ]
        });
        let warnings = expression_warnings(&spec, &Widgets);
        assert_eq!(
            warnings,
            vec![
                json!({
                    "fieldRef": "spec.validations[1].expression",
                    "warning": "example.com/v1, Kind=Widget: compilation failed: ERROR: <input>:1:12: undefined field 'size'\n | object.spec.size == 'L'\n | ...........^\n"
                }),
                json!({
                    "fieldRef": "spec.validations[1].messageExpression",
                    "warning": "example.com/v1, Kind=Widget: compilation failed: ERROR: <input>:1:14: found no matching overload for '_+_' applied to '(string, int)'\n | 'replicas: ' + object.spec.replicas\n | .............^\n"
                }),
            ]
        );
        // Only wildcard rules: nothing is checked.
        let wild = json!({"matchConstraints": {"resourceRules": [
            {"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "operations": ["*"]}]},
            "validations": [{"expression": "object.nope"}]});
        assert!(expression_warnings(&wild, &Widgets).is_empty());
    }
}
