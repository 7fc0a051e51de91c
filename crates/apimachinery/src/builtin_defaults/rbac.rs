//! rbac.authorization.k8s.io/v1 defaults (`pkg/apis/rbac/v1/defaults.go`): a binding's
//! `roleRef.apiGroup`, and its subjects' `apiGroup` by kind.

use super::{field, items_mut, set_defaults, str_of, FieldDefault, Lit::*};
use serde_json::{json, Value};

/// The RBAC API group.
const GROUP: &str = "rbac.authorization.k8s.io";

/// rbac.authorization.k8s.io/v1 defaults of `kind`.
pub fn apply(kind: &str, obj: &mut Value) {
    if !matches!(kind, "RoleBinding" | "ClusterRoleBinding") {
        return;
    }
    set_defaults(obj, BINDING);
    for subject in items_mut(obj, "subjects") {
        if !str_of(subject, "apiGroup").is_empty() {
            continue;
        }
        let group = match str_of(subject, "kind") {
            "ServiceAccount" => "",
            "User" | "Group" => GROUP,
            _ => continue,
        };
        subject["apiGroup"] = json!(group);
    }
}

const BINDING: &[FieldDefault] = &[field("/roleRef/apiGroup", Str(GROUP))];
