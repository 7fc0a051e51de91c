//! The built-in resources this server serves, described once: discovery (legacy and
//! aggregated), the OpenAPI documents and `ApiServer::resolve` are all derived from
//! [`RESOURCES`], so a built-in resource exists everywhere or nowhere.
//!
//! Adding a built-in resource:
//! 1. an entry in [`RESOURCES`] (its group must be in [`GROUPS`]; its OpenAPI
//!    definitions `definition` and `definition + "List"` in `openapi_builtin.json`);
//! 2. its `ResourceKind`, whose `Descriptor` comes from [`BuiltinResource::descriptor`],
//!    registered in `ApiServer::start` with `ApiServer::register_builtin`.

use crate::status::GroupResource;
use crate::write::Descriptor;

/// Every verb of a plain collection resource, in kube's discovery order.
pub const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// Verbs of a `status` subresource.
pub const STATUS_VERBS: &[&str] = &["get", "patch", "update"];

/// One built-in resource.
#[derive(Debug)]
pub struct BuiltinResource {
    /// API group (`""` is core).
    pub group: &'static str,
    /// The one version served.
    pub version: &'static str,
    /// Plural resource name.
    pub resource: &'static str,
    /// Singular name.
    pub singular: &'static str,
    /// `Kind` (the list kind is `Kind` + `List`).
    pub kind: &'static str,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Verbs, in kube's discovery order.
    pub verbs: &'static [&'static str],
    /// `kubectl` short names.
    pub short_names: &'static [&'static str],
    /// Categories (`kubectl get all`, ...).
    pub categories: &'static [&'static str],
    /// `(subresource, verbs)`.
    pub subresources: &'static [(&'static str, &'static [&'static str])],
    /// Storage path under the prefix, as kube-apiserver keys it (`configmaps`,
    /// `apiextensions.k8s.io/customresourcedefinitions`); empty for kinds never stored.
    pub storage: &'static str,
    /// OpenAPI definition name of the kind (`io.k8s.api.core.v1.ConfigMap`).
    pub definition: &'static str,
    /// Whether kube maintains `metadata.generation` for this kind.
    pub generation: bool,
}

impl BuiltinResource {
    /// Group and resource.
    pub fn gr(&self) -> GroupResource {
        GroupResource::new(self.group, self.resource)
    }

    /// `group/version`, or `v1` for core.
    pub fn group_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `Kind` + `List`.
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// Whether a subresource is served.
    pub fn has_subresource(&self, name: &str) -> bool {
        self.subresources.iter().any(|(s, _)| *s == name)
    }

    /// The `(group, version, kind)` a subresource answers with: the resource's own,
    /// except kube's TokenRequest for `serviceaccounts/token`.
    pub fn subresource_kind(&self, sub: &str) -> (&'static str, &'static str, &'static str) {
        match (self.group, self.resource, sub) {
            ("", "serviceaccounts", "token") => ("authentication.k8s.io", "v1", "TokenRequest"),
            _ => (self.group, self.version, self.kind),
        }
    }

    /// Whether a verb is served on the main resource.
    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.contains(&verb)
    }

    /// The REST descriptor of this resource under the storage key `prefix`.
    pub fn descriptor(&self, prefix: &str) -> Descriptor {
        Descriptor {
            gr: self.gr(),
            version: self.version.to_string(),
            kind: self.kind.to_string(),
            list_kind: self.list_kind(),
            singular: self.singular.to_string(),
            namespaced: self.namespaced,
            key_root: format!("{prefix}/{}", self.storage),
            status_subresource: self.has_subresource("status"),
            has_generation: self.generation,
        }
    }
}

/// The non-core groups served, in the order kube-apiserver lists them in `/apis`
/// (the aggregator's group priorities, equal priorities by APIService name
/// `<version>.<group>`). Custom resource groups come after all of these.
pub const GROUPS: &[(&str, &str)] = &[
    ("events.k8s.io", "v1"),
    ("authentication.k8s.io", "v1"),
    ("authorization.k8s.io", "v1"),
    ("rbac.authorization.k8s.io", "v1"),
    ("admissionregistration.k8s.io", "v1"),
    ("apiextensions.k8s.io", "v1"),
    ("coordination.k8s.io", "v1"),
];

/// Every built-in resource.
pub const RESOURCES: &[BuiltinResource] = &[
    BuiltinResource {
        group: "",
        version: "v1",
        resource: "namespaces",
        singular: "namespace",
        kind: "Namespace",
        namespaced: false,
        verbs: &[
            "create", "delete", "get", "list", "patch", "update", "watch",
        ],
        short_names: &["ns"],
        categories: &[],
        subresources: &[("finalize", &["update"]), ("status", STATUS_VERBS)],
        storage: "namespaces",
        definition: "io.k8s.api.core.v1.Namespace",
        generation: false,
    },
    BuiltinResource {
        group: "apiextensions.k8s.io",
        version: "v1",
        resource: "customresourcedefinitions",
        singular: "customresourcedefinition",
        kind: "CustomResourceDefinition",
        namespaced: false,
        verbs: ALL_VERBS,
        short_names: &["crd", "crds"],
        categories: &["api-extensions"],
        subresources: &[("status", STATUS_VERBS)],
        storage: "apiextensions.k8s.io/customresourcedefinitions",
        definition:
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
        generation: true,
    },
    BuiltinResource {
        group: "admissionregistration.k8s.io",
        version: "v1",
        resource: "mutatingwebhookconfigurations",
        singular: "mutatingwebhookconfiguration",
        kind: "MutatingWebhookConfiguration",
        namespaced: false,
        verbs: ALL_VERBS,
        short_names: &[],
        categories: &["api-extensions"],
        subresources: &[],
        storage: "mutatingwebhookconfigurations",
        definition: "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
        generation: true,
    },
    BuiltinResource {
        group: "admissionregistration.k8s.io",
        version: "v1",
        resource: "validatingwebhookconfigurations",
        singular: "validatingwebhookconfiguration",
        kind: "ValidatingWebhookConfiguration",
        namespaced: false,
        verbs: ALL_VERBS,
        short_names: &[],
        categories: &["api-extensions"],
        subresources: &[],
        storage: "validatingwebhookconfigurations",
        definition: "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
        generation: true,
    },
    BuiltinResource {
        group: "admissionregistration.k8s.io",
        version: "v1",
        resource: "validatingadmissionpolicies",
        singular: "validatingadmissionpolicy",
        kind: "ValidatingAdmissionPolicy",
        namespaced: false,
        verbs: ALL_VERBS,
        short_names: &[],
        categories: &["api-extensions"],
        subresources: &[("status", STATUS_VERBS)],
        storage: "validatingadmissionpolicies",
        definition: "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy",
        generation: true,
    },
    BuiltinResource {
        group: "admissionregistration.k8s.io",
        version: "v1",
        resource: "validatingadmissionpolicybindings",
        singular: "validatingadmissionpolicybinding",
        kind: "ValidatingAdmissionPolicyBinding",
        namespaced: false,
        verbs: ALL_VERBS,
        short_names: &[],
        categories: &["api-extensions"],
        subresources: &[],
        storage: "validatingadmissionpolicybindings",
        definition: "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding",
        generation: true,
    },
    BuiltinResource {
        group: "",
        version: "v1",
        resource: "configmaps",
        singular: "configmap",
        kind: "ConfigMap",
        namespaced: true,
        verbs: ALL_VERBS,
        short_names: &["cm"],
        categories: &[],
        subresources: &[],
        storage: "configmaps",
        definition: "io.k8s.api.core.v1.ConfigMap",
        generation: false,
    },
    BuiltinResource {
        group: "",
        version: "v1",
        resource: "events",
        singular: "event",
        kind: "Event",
        namespaced: true,
        verbs: ALL_VERBS,
        short_names: &["ev"],
        categories: &[],
        subresources: &[],
        storage: "events",
        definition: "io.k8s.api.core.v1.Event",
        generation: false,
    },
    BuiltinResource {
        group: "",
        version: "v1",
        resource: "secrets",
        singular: "secret",
        kind: "Secret",
        namespaced: true,
        verbs: ALL_VERBS,
        short_names: &[],
        categories: &[],
        subresources: &[],
        storage: "secrets",
        definition: "io.k8s.api.core.v1.Secret",
        generation: false,
    },
    BuiltinResource {
        group: "",
        version: "v1",
        resource: "serviceaccounts",
        singular: "serviceaccount",
        kind: "ServiceAccount",
        namespaced: true,
        verbs: ALL_VERBS,
        short_names: &["sa"],
        categories: &[],
        subresources: &[("token", &["create"])],
        storage: "serviceaccounts",
        definition: "io.k8s.api.core.v1.ServiceAccount",
        generation: false,
    },
    BuiltinResource {
        group: "events.k8s.io",
        version: "v1",
        resource: "events",
        singular: "event",
        kind: "Event",
        namespaced: true,
        verbs: ALL_VERBS,
        short_names: &["ev"],
        categories: &[],
        subresources: &[],
        storage: "events",
        definition: "io.k8s.api.events.v1.Event",
        generation: false,
    },
    BuiltinResource {
        group: "coordination.k8s.io",
        version: "v1",
        resource: "leases",
        singular: "lease",
        kind: "Lease",
        namespaced: true,
        verbs: ALL_VERBS,
        short_names: &[],
        categories: &[],
        subresources: &[],
        storage: "leases",
        definition: "io.k8s.api.coordination.v1.Lease",
        generation: false,
    },
    BuiltinResource {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        resource: "roles",
        singular: "role",
        kind: "Role",
        namespaced: true,
        verbs: ALL_VERBS,
        short_names: &[],
        categories: &[],
        subresources: &[],
        storage: "roles",
        definition: "io.k8s.api.rbac.v1.Role",
        generation: false,
    },
    BuiltinResource {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        resource: "clusterroles",
        singular: "clusterrole",
        kind: "ClusterRole",
        namespaced: false,
        verbs: ALL_VERBS,
        short_names: &[],
        categories: &[],
        subresources: &[],
        storage: "clusterroles",
        definition: "io.k8s.api.rbac.v1.ClusterRole",
        generation: false,
    },
    BuiltinResource {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        resource: "rolebindings",
        singular: "rolebinding",
        kind: "RoleBinding",
        namespaced: true,
        verbs: ALL_VERBS,
        short_names: &[],
        categories: &[],
        subresources: &[],
        storage: "rolebindings",
        definition: "io.k8s.api.rbac.v1.RoleBinding",
        generation: false,
    },
    BuiltinResource {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        resource: "clusterrolebindings",
        singular: "clusterrolebinding",
        kind: "ClusterRoleBinding",
        namespaced: false,
        verbs: ALL_VERBS,
        short_names: &[],
        categories: &[],
        subresources: &[],
        storage: "clusterrolebindings",
        definition: "io.k8s.api.rbac.v1.ClusterRoleBinding",
        generation: false,
    },
    BuiltinResource {
        group: "authentication.k8s.io",
        version: "v1",
        resource: "selfsubjectreviews",
        singular: "selfsubjectreview",
        kind: "SelfSubjectReview",
        namespaced: false,
        verbs: &["create"],
        short_names: &[],
        categories: &[],
        subresources: &[],
        storage: "",
        definition: "io.k8s.api.authentication.v1.SelfSubjectReview",
        generation: false,
    },
    BuiltinResource {
        group: "authentication.k8s.io",
        version: "v1",
        resource: "tokenreviews",
        singular: "tokenreview",
        kind: "TokenReview",
        namespaced: false,
        verbs: &["create"],
        short_names: &[],
        categories: &[],
        subresources: &[],
        storage: "",
        definition: "io.k8s.api.authentication.v1.TokenReview",
        generation: false,
    },
    BuiltinResource {
        group: "authorization.k8s.io",
        version: "v1",
        resource: "localsubjectaccessreviews",
        singular: "localsubjectaccessreview",
        kind: "LocalSubjectAccessReview",
        namespaced: true,
        verbs: &["create"],
        short_names: &[],
        categories: &[],
        subresources: &[],
        storage: "",
        definition: "io.k8s.api.authorization.v1.LocalSubjectAccessReview",
        generation: false,
    },
    BuiltinResource {
        group: "authorization.k8s.io",
        version: "v1",
        resource: "selfsubjectaccessreviews",
        singular: "selfsubjectaccessreview",
        kind: "SelfSubjectAccessReview",
        namespaced: false,
        verbs: &["create"],
        short_names: &[],
        categories: &[],
        subresources: &[],
        storage: "",
        definition: "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
        generation: false,
    },
    BuiltinResource {
        group: "authorization.k8s.io",
        version: "v1",
        resource: "selfsubjectrulesreviews",
        singular: "selfsubjectrulesreview",
        kind: "SelfSubjectRulesReview",
        namespaced: false,
        verbs: &["create"],
        short_names: &[],
        categories: &[],
        subresources: &[],
        storage: "",
        definition: "io.k8s.api.authorization.v1.SelfSubjectRulesReview",
        generation: false,
    },
    BuiltinResource {
        group: "authorization.k8s.io",
        version: "v1",
        resource: "subjectaccessreviews",
        singular: "subjectaccessreview",
        kind: "SubjectAccessReview",
        namespaced: false,
        verbs: &["create"],
        short_names: &[],
        categories: &[],
        subresources: &[],
        storage: "",
        definition: "io.k8s.api.authorization.v1.SubjectAccessReview",
        generation: false,
    },
];

/// Whether a request may ask for a Table: kube converts only what a table convertor
/// serves, which every lister has and create-only kinds (access and token reviews)
/// and create-only subresources (`serviceaccounts/token`) do not: a 406 for them.
pub fn serves_tables(group: &str, version: &str, resource: &str, subresource: &str) -> bool {
    let Some(r) = lookup(group, version, resource) else {
        // Custom resources and unknown paths: tables (or a 404 later).
        return true;
    };
    let verbs = if subresource.is_empty() {
        r.verbs
    } else {
        match r.subresources.iter().find(|(s, _)| *s == subresource) {
            Some((_, verbs)) => verbs,
            None => return true,
        }
    };
    verbs.iter().any(|v| *v == "get" || *v == "list")
}

/// The entry for `group/version/resource`.
pub fn lookup(group: &str, version: &str, resource: &str) -> Option<&'static BuiltinResource> {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.resource == resource)
}

/// The REST descriptor of the built-in `group`/`resource` under the storage key
/// `prefix`, for the kinds' constructors. A kind missing from [`RESOURCES`] is a
/// programming error that every server start (so every integration test) reveals.
pub fn descriptor(group: &str, resource: &str, prefix: &str) -> Descriptor {
    let entry = RESOURCES
        .iter()
        .find(|r| r.group == group && r.resource == resource);
    match entry {
        Some(r) => r.descriptor(prefix),
        None => unreachable!("{group}/{resource} is not in registry::builtin::RESOURCES"),
    }
}

/// Whether `group` is served by this server itself (no CRD may take it over).
pub fn is_builtin_group(group: &str) -> bool {
    group.is_empty() || GROUPS.iter().any(|(g, _)| *g == group)
}

/// The resources of one group-version, sorted by name as kube's discovery lists them.
pub fn resources_of(group: &str, version: &str) -> Vec<&'static BuiltinResource> {
    let mut out: Vec<&BuiltinResource> = RESOURCES
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    out.sort_by_key(|r| r.resource);
    out
}

/// The non-core group-versions that serve at least one resource, in `/apis` order.
pub fn served_groups() -> Vec<(&'static str, &'static str)> {
    GROUPS
        .iter()
        .copied()
        .filter(|(g, v)| !resources_of(g, v).is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_resource_belongs_to_a_listed_group() {
        for r in RESOURCES {
            assert!(
                r.group.is_empty() || GROUPS.contains(&(r.group, r.version)),
                "{} has an unlisted group {}",
                r.resource,
                r.group
            );
        }
    }

    #[test]
    fn resources_are_unique() {
        for (i, a) in RESOURCES.iter().enumerate() {
            for b in &RESOURCES[i + 1..] {
                assert!(
                    (a.group, a.resource) != (b.group, b.resource),
                    "{} twice",
                    a.resource
                );
            }
        }
    }

    #[test]
    fn descriptors_key_objects_as_kube() {
        let ns = lookup("", "v1", "namespaces").expect("namespaces");
        assert_eq!(
            ns.descriptor("/registry").key("", "default"),
            "/registry/namespaces/default"
        );
        let crd = lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions").expect("crds");
        assert_eq!(
            crd.descriptor("/registry").key("", "a.b"),
            "/registry/apiextensions.k8s.io/customresourcedefinitions/a.b"
        );
    }

    #[test]
    fn groups_are_listed_in_kubes_priority_order() {
        let names: Vec<&str> = GROUPS.iter().map(|(g, _)| *g).collect();
        let pos = |g: &str| names.iter().position(|n| *n == g).expect("listed");
        assert!(pos("events.k8s.io") < pos("authorization.k8s.io"));
        assert!(pos("authorization.k8s.io") < pos("rbac.authorization.k8s.io"));
        assert!(pos("rbac.authorization.k8s.io") < pos("admissionregistration.k8s.io"));
        assert!(pos("admissionregistration.k8s.io") < pos("apiextensions.k8s.io"));
        assert!(pos("apiextensions.k8s.io") < pos("coordination.k8s.io"));
    }
}
