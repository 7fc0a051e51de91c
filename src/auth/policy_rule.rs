//! One rule of an RBAC role (kube's `PolicyRule`): read from a role, matched against a
//! request's attributes (`RuleAllows`), and printed as kube prints it. The RBAC
//! authorizer (`rbac`) matches with it; an authorizer's rules of a user (`authz`'s
//! `RulesInfo`, a SelfSubjectRulesReview's status) are lists of it.

use apimachinery::access::Attributes;
use apimachinery::object::strings;
use serde_json::Value;

/// One rule of a role (kube's `PolicyRule`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyRule {
    /// Verbs (`*` for all).
    pub verbs: Vec<String>,
    /// API groups (`*` for all, `""` for core).
    pub api_groups: Vec<String>,
    /// Resources (`*`, `pods`, `pods/status`, `*/scale`).
    pub resources: Vec<String>,
    /// Object names (empty: any).
    pub resource_names: Vec<String>,
    /// Non-resource paths (`/healthz`, `/apis/*`, `*`).
    pub non_resource_urls: Vec<String>,
}

/// The strings of a list field (empty when absent or null).
impl PolicyRule {
    /// A rule as written in a role.
    pub fn from_json(v: &Value) -> PolicyRule {
        PolicyRule {
            verbs: strings(v.get("verbs")),
            api_groups: strings(v.get("apiGroups")),
            resources: strings(v.get("resources")),
            resource_names: strings(v.get("resourceNames")),
            non_resource_urls: strings(v.get("nonResourceURLs")),
        }
    }

    /// The rules of a role object (`rules`).
    pub fn list_from(role: &Value) -> Vec<PolicyRule> {
        role.get("rules")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(PolicyRule::from_json).collect())
            .unwrap_or_default()
    }

    fn verb_matches(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == "*" || v == verb)
    }

    fn api_group_matches(&self, group: &str) -> bool {
        self.api_groups.iter().any(|g| g == "*" || g == group)
    }

    fn resource_matches(&self, combined: &str, subresource: &str) -> bool {
        self.resources.iter().any(|r| {
            r == "*"
                || r == combined
                || (!subresource.is_empty() && r.strip_prefix("*/") == Some(subresource))
        })
    }

    fn resource_name_matches(&self, name: &str) -> bool {
        self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == name)
    }

    fn non_resource_url_matches(&self, path: &str) -> bool {
        self.non_resource_urls.iter().any(|u| {
            u == "*" || u == path || (u.ends_with('*') && path.starts_with(u.trim_end_matches('*')))
        })
    }

    /// Whether this rule allows the request (kube's `RuleAllows`).
    pub fn allows(&self, attrs: &Attributes) -> bool {
        if !self.verb_matches(&attrs.verb) {
            return false;
        }
        if !attrs.resource_request {
            return self.non_resource_url_matches(&attrs.path);
        }
        let combined = if attrs.subresource.is_empty() {
            attrs.resource.clone()
        } else {
            format!("{}/{}", attrs.resource, attrs.subresource)
        };
        self.api_group_matches(&attrs.api_group)
            && self.resource_matches(&combined, &attrs.subresource)
            && self.resource_name_matches(&attrs.name)
    }
}

impl PolicyRule {
    /// The rule as kube encodes it (`verbs` always, other lists when not empty).
    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("verbs".into(), serde_json::json!(self.verbs));
        for (field, list) in [
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ] {
            if !list.is_empty() {
                m.insert(field.into(), serde_json::json!(list));
            }
        }
        Value::Object(m)
    }

    /// kube's `CompactString`, the form escalation errors list missing rules in:
    /// `{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}`.
    pub fn compact_string(&self) -> String {
        let parts: Vec<String> = [
            ("APIGroups", &self.api_groups),
            ("Resources", &self.resources),
            ("NonResourceURLs", &self.non_resource_urls),
            ("ResourceNames", &self.resource_names),
            ("Verbs", &self.verbs),
        ]
        .iter()
        .filter(|(_, list)| !list.is_empty())
        .map(|(name, list)| format!("{name}:{}", go_quoted_list(list)))
        .collect();
        format!("{{{}}}", parts.join(", "))
    }
}

/// Go's `%q` of a `[]string`: `["a" "b"]`.
pub(crate) fn go_quoted_list(list: &[String]) -> String {
    let quoted: Vec<String> = list.iter().map(|s| crate::field::go_quote(s)).collect();
    format!("[{}]", quoted.join(" "))
}
