//! `rbac.authorization.k8s.io/v1` Roles, ClusterRoles, RoleBindings and
//! ClusterRoleBindings (`pkg/registry/rbac/*`, `pkg/apis/rbac/validation`): typed kinds
//! served by [`TypedKind`], with kube's defaults, validation and printers. The
//! authorizer reading them is `auth::rbac`.
//!
//! Not done: kube's escalation check (a user may grant only what they hold unless they
//! may `escalate`/`bind`), and `PUT` creating a missing object (`AllowCreateOnUpdate`).

use super::builtin::{age_cell, at};
use super::typed::{str_at, Strategy, TypedKind};
use super::Descriptor;
use crate::field::{BadValue, Error, ErrorList, ErrorType, Path};
use crate::goformat::go_json_string;
use crate::schema::objectmeta;
use crate::table::{BuiltinColumn, BuiltinPrinter};
use serde_json::{json, Value};

/// The API group of RBAC objects.
pub const GROUP: &str = "rbac.authorization.k8s.io";

/// The typed kind for an RBAC resource, if `descriptor` addresses one.
pub fn kind_for(descriptor: Descriptor, definition: &str) -> Option<TypedKind> {
    if descriptor.gr.group != GROUP {
        return None;
    }
    let strategy: Box<dyn Strategy> = match descriptor.gr.resource.as_str() {
        "roles" => Box::new(RoleStrategy { cluster: false }),
        "clusterroles" => Box::new(RoleStrategy { cluster: true }),
        "rolebindings" => Box::new(BindingStrategy { cluster: false }),
        "clusterrolebindings" => Box::new(BindingStrategy { cluster: true }),
        _ => return None,
    };
    Some(TypedKind::new(descriptor, definition, strategy))
}

/// The `roles` (`cluster: false`) or `clusterroles` strategy.
pub struct RoleStrategy {
    cluster: bool,
}

/// The `rolebindings` (`cluster: false`) or `clusterrolebindings` strategy.
pub struct BindingStrategy {
    cluster: bool,
}

/// The strings of a list field (`[]` when absent or null).
fn strings<'a>(v: &'a Value, field: &str) -> Vec<&'a str> {
    v.get(field)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn invalid_raw(path: &Path, raw: String, detail: &str) -> Error {
    Error {
        kind: ErrorType::Invalid,
        field: path.clone(),
        bad_value: BadValue::Raw(raw),
        detail: detail.to_string(),
    }
}

/// kube's `ValidateRBACName` applied to `metadata` (names are path segments).
fn meta_errors(obj: &Value, namespaced: bool) -> ErrorList {
    let meta = obj.get("metadata").cloned().unwrap_or(Value::Null);
    objectmeta::validate_object_meta_path_segment(&meta, namespaced, &Path::new("metadata"))
}

fn meta_update_errors(new: &Value, old: &Value) -> ErrorList {
    let meta = new.get("metadata").cloned().unwrap_or(Value::Null);
    let old_meta = old.get("metadata").cloned().unwrap_or(Value::Null);
    objectmeta::validate_object_meta_update(&meta, &old_meta, &Path::new("metadata"))
}

/// kube's `ValidatePolicyRule`.
pub fn rule_errors(rule: &Value, namespaced: bool, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    if strings(rule, "verbs").is_empty() {
        errs.push(Error::required(
            &path.child("verbs"),
            "verbs must contain at least one value",
        ));
    }
    let urls = strings(rule, "nonResourceURLs");
    if !urls.is_empty() {
        let urls_path = path.child("nonResourceURLs");
        if namespaced {
            errs.push(Error::invalid(
                &urls_path,
                json!(urls),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        let resourceful = ["apiGroups", "resources", "resourceNames"]
            .iter()
            .any(|f| !strings(rule, f).is_empty());
        if resourceful {
            errs.push(Error::invalid(
                &urls_path,
                json!(urls),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return errs;
    }
    if strings(rule, "apiGroups").is_empty() {
        errs.push(Error::required(
            &path.child("apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if strings(rule, "resources").is_empty() {
        errs.push(Error::required(
            &path.child("resources"),
            "resource rules must supply at least one resource",
        ));
    }
    errs
}

/// kube's `ValidateRoleBindingSubject`.
pub fn subject_errors(subject: &Value, namespaced: bool, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let name = str_at(subject, "/name");
    let api_group = str_at(subject, "/apiGroup");
    if name.is_empty() {
        errs.push(Error::required(&path.child("name"), ""));
    }
    match str_at(subject, "/kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                for msg in objectmeta::validate_name(name) {
                    errs.push(Error::invalid(&path.child("name"), json!(name), msg));
                }
            }
            if !api_group.is_empty() {
                errs.push(Error::not_supported(
                    &path.child("apiGroup"),
                    json!(api_group),
                    &[""],
                ));
            }
            if !namespaced && str_at(subject, "/namespace").is_empty() {
                errs.push(Error::required(&path.child("namespace"), ""));
            }
        }
        "User" | "Group" => {
            if api_group != GROUP {
                errs.push(Error::not_supported(
                    &path.child("apiGroup"),
                    json!(api_group),
                    &[GROUP],
                ));
            }
        }
        other => errs.push(Error::not_supported(
            &path.child("kind"),
            json!(other),
            &["ServiceAccount", "User", "Group"],
        )),
    }
    errs
}

/// kube's internal `rbac.RoleRef` as its field errors print it: Go's JSON of a struct
/// without JSON tags (the value of `cannot change roleRef`).
fn go_role_ref(obj: &Value) -> String {
    let s = |p: &str| go_json_string(str_at(obj, p));
    format!(
        "{{\"APIGroup\":{},\"Kind\":{},\"Name\":{}}}",
        s("/roleRef/apiGroup"),
        s("/roleRef/kind"),
        s("/roleRef/name")
    )
}

/// Fields kube's types serialize even when empty (no `omitempty`): `null` for slices,
/// `""` for strings.
fn set_missing(obj: &mut Value, field: &str, zero: Value) {
    if let Some(m) = obj.as_object_mut() {
        m.entry(field).or_insert(zero);
    }
}

impl RoleStrategy {
    fn validate_role(&self, obj: &Value) -> ErrorList {
        let mut errs = meta_errors(obj, !self.cluster);
        let rules = obj.get("rules").and_then(Value::as_array);
        for (i, rule) in rules.into_iter().flatten().enumerate() {
            errs.extend(rule_errors(
                rule,
                !self.cluster,
                &Path::new("rules").index(i),
            ));
        }
        if self.cluster && !at(obj, "/aggregationRule").is_null() {
            errs.extend(aggregation_rule_errors(at(obj, "/aggregationRule")));
        }
        errs
    }
}

/// kube's checks of a ClusterRole's `aggregationRule`.
fn aggregation_rule_errors(rule: &Value) -> ErrorList {
    let path = Path::new("aggregationRule").child("clusterRoleSelectors");
    let selectors = rule
        .get("clusterRoleSelectors")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut errs = Vec::new();
    if selectors.is_empty() {
        errs.push(Error::required(
            &path,
            "at least one clusterRoleSelector required if aggregationRule is non-nil",
        ));
    }
    for (i, selector) in selectors.iter().enumerate() {
        let p = path.index(i);
        errs.extend(super::admission_policy::validate_label_selector(
            selector, &p,
        ));
        if crate::selector::labels::from_label_selector_json(selector).is_err() {
            errs.push(Error::invalid(
                &p,
                selector.clone(),
                "invalid label selector.",
            ));
        }
    }
    errs
}

impl Strategy for RoleStrategy {
    fn default(&self, obj: &mut Value) {
        set_missing(obj, "rules", Value::Null);
        if let Some(rules) = obj.get_mut("rules").and_then(Value::as_array_mut) {
            for rule in rules.iter_mut() {
                set_missing(rule, "verbs", Value::Null);
            }
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        self.validate_role(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = self.validate_role(new);
        errs.extend(meta_update_errors(new, old));
        errs
    }

    fn printer(&self) -> BuiltinPrinter {
        // kube has no printer for roles: its default convertor's Name and Created At.
        BuiltinPrinter {
            columns: vec![
                BuiltinColumn::name(0),
                BuiltinColumn::new(
                    "Created At",
                    "date",
                    0,
                    crate::table::AGE_COLUMN_DESCRIPTION,
                ),
            ],
            cells: |obj, _| {
                let created = at(obj, "/metadata/creationTimestamp")
                    .as_str()
                    .unwrap_or("0001-01-01T00:00:00Z");
                vec![json!(super::object::name(obj)), json!(created)]
            },
        }
    }
}

impl BindingStrategy {
    fn validate_binding(&self, obj: &Value) -> ErrorList {
        let mut errs = meta_errors(obj, !self.cluster);
        let role_ref = Path::new("roleRef");
        let api_group = str_at(obj, "/roleRef/apiGroup");
        if api_group != GROUP {
            errs.push(Error::not_supported(
                &role_ref.child("apiGroup"),
                json!(api_group),
                &[GROUP],
            ));
        }
        let kind = str_at(obj, "/roleRef/kind");
        let kinds: &[&str] = if self.cluster {
            &["ClusterRole"]
        } else {
            &["Role", "ClusterRole"]
        };
        if !kinds.contains(&kind) {
            errs.push(Error::not_supported(
                &role_ref.child("kind"),
                json!(kind),
                kinds,
            ));
        }
        let name = str_at(obj, "/roleRef/name");
        if name.is_empty() {
            errs.push(Error::required(&role_ref.child("name"), ""));
        } else {
            for msg in objectmeta::validate_path_segment_name(name, false) {
                errs.push(Error::invalid(&role_ref.child("name"), json!(name), msg));
            }
        }
        let subjects = obj.get("subjects").and_then(Value::as_array);
        for (i, s) in subjects.into_iter().flatten().enumerate() {
            errs.extend(subject_errors(
                s,
                !self.cluster,
                &Path::new("subjects").index(i),
            ));
        }
        errs
    }
}

impl Strategy for BindingStrategy {
    fn default(&self, obj: &mut Value) {
        set_missing(obj, "roleRef", json!({}));
        if let Some(role_ref) = obj.get_mut("roleRef") {
            for f in ["apiGroup", "kind", "name"] {
                set_missing(role_ref, f, json!(""));
            }
            if str_at(role_ref, "/apiGroup").is_empty() {
                role_ref["apiGroup"] = json!(GROUP);
            }
        }
        if let Some(subjects) = obj.get_mut("subjects").and_then(Value::as_array_mut) {
            for s in subjects.iter_mut() {
                set_missing(s, "kind", json!(""));
                set_missing(s, "name", json!(""));
                let kind = str_at(s, "/kind");
                if str_at(s, "/apiGroup").is_empty() && (kind == "User" || kind == "Group") {
                    s["apiGroup"] = json!(GROUP);
                }
            }
        }
    }

    fn validate(&self, obj: &Value) -> ErrorList {
        self.validate_binding(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = self.validate_binding(new);
        errs.extend(meta_update_errors(new, old));
        if at(new, "/roleRef") != at(old, "/roleRef") {
            errs.push(invalid_raw(
                &Path::new("roleRef"),
                go_role_ref(new),
                "cannot change roleRef",
            ));
        }
        errs
    }

    fn printer(&self) -> BuiltinPrinter {
        let (doc, noun) = if self.cluster {
            (
                "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
                "clusterRoleBinding",
            )
        } else {
            (
                "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
                "roleBinding",
            )
        };
        BuiltinPrinter {
            columns: vec![
                BuiltinColumn::name(0),
                BuiltinColumn::new("Role", "string", 0, doc),
                BuiltinColumn::age(),
                BuiltinColumn::new("Users", "string", 1, &format!("Users in the {noun}")),
                BuiltinColumn::new("Groups", "string", 1, &format!("Groups in the {noun}")),
                BuiltinColumn::new(
                    "ServiceAccounts",
                    "string",
                    1,
                    &format!("ServiceAccounts in the {noun}"),
                ),
            ],
            cells: |obj, now| {
                let role = format!(
                    "{}/{}",
                    str_at(obj, "/roleRef/kind"),
                    str_at(obj, "/roleRef/name")
                );
                let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
                let subjects = obj.get("subjects").and_then(Value::as_array);
                for s in subjects.into_iter().flatten() {
                    let name = str_at(s, "/name").to_string();
                    match str_at(s, "/kind") {
                        "ServiceAccount" => sas.push(format!("{}/{name}", str_at(s, "/namespace"))),
                        "User" => users.push(name),
                        "Group" => groups.push(name),
                        _ => {}
                    }
                }
                vec![
                    json!(super::object::name(obj)),
                    json!(role),
                    age_cell(obj, now),
                    json!(users.join(", ")),
                    json!(groups.join(", ")),
                    json!(sas.join(", ")),
                ]
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errs: &ErrorList) -> Vec<String> {
        errs.iter().map(|e| e.to_string()).collect()
    }

    fn binding(cluster: bool, role_ref: Value, subjects: Value) -> Value {
        let mut meta = json!({"name": "b", "resourceVersion": "1"});
        if !cluster {
            meta["namespace"] = json!("default");
        }
        let mut obj = json!({"metadata": meta, "roleRef": role_ref, "subjects": subjects});
        BindingStrategy { cluster }.default(&mut obj);
        obj
    }

    #[test]
    fn rules_need_verbs_groups_and_resources() {
        let role = RoleStrategy { cluster: false };
        let obj = json!({"metadata": {"name": "r", "namespace": "default"}, "rules": [{}]});
        assert_eq!(
            messages(&role.validate(&obj)),
            [
                "rules[0].verbs: Required value: verbs must contain at least one value",
                "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
                "rules[0].resources: Required value: resource rules must supply at least one resource",
            ]
        );
    }

    #[test]
    fn non_resource_urls_only_in_cluster_roles_and_alone() {
        let rule =
            json!({"verbs": ["get"], "nonResourceURLs": ["/healthz"], "resources": ["pods"]});
        assert_eq!(
            messages(&rule_errors(&rule, true, &Path::new("rules").index(0))),
            [
                "rules[0].nonResourceURLs: Invalid value: [\"/healthz\"]: namespaced rules cannot apply to non-resource URLs",
                "rules[0].nonResourceURLs: Invalid value: [\"/healthz\"]: rules cannot apply to both regular resources and non-resource URLs",
            ]
        );
        let ok = json!({"verbs": ["get"], "nonResourceURLs": ["/healthz"]});
        assert!(rule_errors(&ok, false, &Path::new("rules").index(0)).is_empty());
    }

    #[test]
    fn role_names_may_contain_colons_but_not_slashes() {
        let role = RoleStrategy { cluster: true };
        let ok = json!({"metadata": {"name": "system:controller:x"}, "rules": []});
        assert!(role.validate(&ok).is_empty());
        let bad = json!({"metadata": {"name": "a/b"}});
        assert_eq!(
            messages(&role.validate(&bad)),
            ["metadata.name: Invalid value: \"a/b\": may not contain '/'"]
        );
    }

    #[test]
    fn aggregation_rule_needs_a_selector() {
        let role = RoleStrategy { cluster: true };
        let obj = json!({"metadata": {"name": "agg"}, "aggregationRule": {}});
        assert_eq!(
            messages(&role.validate(&obj)),
            ["aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"]
        );
    }

    #[test]
    fn binding_defaults_api_groups_of_role_ref_and_user_subjects() {
        let b = binding(
            false,
            json!({"kind": "Role", "name": "r"}),
            json!([{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "sa"}]),
        );
        assert_eq!(b["roleRef"]["apiGroup"], GROUP);
        assert_eq!(b["subjects"][0]["apiGroup"], GROUP);
        assert!(b["subjects"][1].get("apiGroup").is_none());
        assert!(BindingStrategy { cluster: false }.validate(&b).is_empty());
    }

    #[test]
    fn cluster_role_bindings_reference_cluster_roles_and_namespaced_service_accounts() {
        let b = binding(
            true,
            json!({"kind": "Role", "name": "r"}),
            json!([{"kind": "ServiceAccount", "name": "sa"}, {"kind": "Robot", "name": "x"}]),
        );
        assert_eq!(
            messages(&BindingStrategy { cluster: true }.validate(&b)),
            [
                "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
                "subjects[0].namespace: Required value",
                "subjects[1].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
            ]
        );
    }

    #[test]
    fn missing_role_ref_is_kind_unsupported_and_name_required() {
        let b = binding(false, Value::Null, json!(null));
        let mut obj = b.clone();
        obj.as_object_mut().map(|m| m.remove("roleRef"));
        BindingStrategy { cluster: false }.default(&mut obj);
        assert_eq!(
            messages(&BindingStrategy { cluster: false }.validate(&obj)),
            [
                "roleRef.kind: Unsupported value: \"\": supported values: \"Role\", \"ClusterRole\"",
                "roleRef.name: Required value",
            ]
        );
    }

    #[test]
    fn role_ref_cannot_change() {
        let old = binding(
            false,
            json!({"kind": "ClusterRole", "name": "view"}),
            json!([]),
        );
        let new = binding(
            false,
            json!({"kind": "ClusterRole", "name": "edit"}),
            json!([]),
        );
        assert_eq!(
            messages(&BindingStrategy { cluster: false }.validate_update(&new, &old)),
            ["roleRef: Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"ClusterRole\",\"Name\":\"edit\"}: cannot change roleRef"]
        );
    }

    #[test]
    fn role_binding_cells_list_subjects_by_kind() {
        let b = binding(
            false,
            json!({"kind": "ClusterRole", "name": "view"}),
            json!([{"kind": "User", "name": "a"}, {"kind": "Group", "name": "g"},
                   {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}, {"kind": "User", "name": "b"}]),
        );
        let printer = BindingStrategy { cluster: false }.printer();
        let cells = (printer.cells)(&b, chrono::Utc::now());
        assert_eq!(cells[1], "ClusterRole/view");
        assert_eq!(cells[3], "a, b");
        assert_eq!(cells[4], "g");
        assert_eq!(cells[5], "ns/sa");
    }
}
