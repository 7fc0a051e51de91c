//! kube v1.36's discovery documents, as recorded from a real kube-apiserver (no
//! controller-manager) and copied by `scripts/kube-api-data.py` into
//! `data/kube-v1.36/discovery/`: what the built-in resource table is read from.

/// `GET /api/v1`: the core group's legacy `APIResourceList`.
pub const CORE_V1: &str = include_str!("../data/kube-v1.36/discovery/api_v1.json");

/// `GET /api` as aggregated discovery (`APIGroupDiscoveryList`).
pub const AGGREGATED_CORE: &str = include_str!("../data/kube-v1.36/discovery/aggregated-api.json");

/// `GET /apis` as aggregated discovery: the built-in groups in kube's order.
pub const AGGREGATED_APIS: &str = include_str!("../data/kube-v1.36/discovery/aggregated-apis.json");

/// `GET /apis/<group>/<version>` of every built-in group-version: `(group, version,
/// APIResourceList)`.
pub const GROUP_VERSIONS: &[(&str, &str, &str)] = &[
    (
        "admissionregistration.k8s.io",
        "v1",
        include_str!("../data/kube-v1.36/discovery/apis_admissionregistration.k8s.io_v1.json"),
    ),
    (
        "apiextensions.k8s.io",
        "v1",
        include_str!("../data/kube-v1.36/discovery/apis_apiextensions.k8s.io_v1.json"),
    ),
    (
        "apiregistration.k8s.io",
        "v1",
        include_str!("../data/kube-v1.36/discovery/apis_apiregistration.k8s.io_v1.json"),
    ),
    (
        "apps",
        "v1",
        include_str!("../data/kube-v1.36/discovery/apis_apps_v1.json"),
    ),
    (
        "authentication.k8s.io",
        "v1",
        include_str!("../data/kube-v1.36/discovery/apis_authentication.k8s.io_v1.json"),
    ),
    (
        "authorization.k8s.io",
        "v1",
        include_str!("../data/kube-v1.36/discovery/apis_authorization.k8s.io_v1.json"),
    ),
    (
        "autoscaling",
        "v1",
        include_str!("../data/kube-v1.36/discovery/apis_autoscaling_v1.json"),
    ),
    (
        "autoscaling",
        "v2",
        include_str!("../data/kube-v1.36/discovery/apis_autoscaling_v2.json"),
    ),
    (
        "batch",
        "v1",
        include_str!("../data/kube-v1.36/discovery/apis_batch_v1.json"),
    ),
    (
        "certificates.k8s.io",
        "v1",
        include_str!("../data/kube-v1.36/discovery/apis_certificates.k8s.io_v1.json"),
    ),
    (
        "coordination.k8s.io",
        "v1",
        include_str!("../data/kube-v1.36/discovery/apis_coordination.k8s.io_v1.json"),
    ),
    (
        "discovery.k8s.io",
        "v1",
        include_str!("../data/kube-v1.36/discovery/apis_discovery.k8s.io_v1.json"),
    ),
    (
        "events.k8s.io",
        "v1",
        include_str!("../data/kube-v1.36/discovery/apis_events.k8s.io_v1.json"),
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        "v1",
        include_str!("../data/kube-v1.36/discovery/apis_flowcontrol.apiserver.k8s.io_v1.json"),
    ),
    (
        "networking.k8s.io",
        "v1",
        include_str!("../data/kube-v1.36/discovery/apis_networking.k8s.io_v1.json"),
    ),
    (
        "node.k8s.io",
        "v1",
        include_str!("../data/kube-v1.36/discovery/apis_node.k8s.io_v1.json"),
    ),
    (
        "policy",
        "v1",
        include_str!("../data/kube-v1.36/discovery/apis_policy_v1.json"),
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        include_str!("../data/kube-v1.36/discovery/apis_rbac.authorization.k8s.io_v1.json"),
    ),
    (
        "resource.k8s.io",
        "v1",
        include_str!("../data/kube-v1.36/discovery/apis_resource.k8s.io_v1.json"),
    ),
    (
        "scheduling.k8s.io",
        "v1",
        include_str!("../data/kube-v1.36/discovery/apis_scheduling.k8s.io_v1.json"),
    ),
    (
        "storage.k8s.io",
        "v1",
        include_str!("../data/kube-v1.36/discovery/apis_storage.k8s.io_v1.json"),
    ),
];

/// `GET /apis/<group>/<version>` of every group-version kube v1.36 serves only when
/// `--runtime-config` turns it on (recorded with `api/all=true`, copied into
/// `data/kube-v1.36/runtime-config/`): `(group, version, APIResourceList)`.
pub const RUNTIME_CONFIG_VERSIONS: &[(&str, &str, &str)] = &[
    (
        "admissionregistration.k8s.io",
        "v1alpha1",
        include_str!(
            "../data/kube-v1.36/runtime-config/apis_admissionregistration.k8s.io_v1alpha1.json"
        ),
    ),
    (
        "admissionregistration.k8s.io",
        "v1beta1",
        include_str!(
            "../data/kube-v1.36/runtime-config/apis_admissionregistration.k8s.io_v1beta1.json"
        ),
    ),
    (
        "coordination.k8s.io",
        "v1alpha2",
        include_str!("../data/kube-v1.36/runtime-config/apis_coordination.k8s.io_v1alpha2.json"),
    ),
    (
        "coordination.k8s.io",
        "v1beta1",
        include_str!("../data/kube-v1.36/runtime-config/apis_coordination.k8s.io_v1beta1.json"),
    ),
    (
        "internal.apiserver.k8s.io",
        "v1alpha1",
        include_str!(
            "../data/kube-v1.36/runtime-config/apis_internal.apiserver.k8s.io_v1alpha1.json"
        ),
    ),
    (
        "networking.k8s.io",
        "v1beta1",
        include_str!("../data/kube-v1.36/runtime-config/apis_networking.k8s.io_v1beta1.json"),
    ),
    (
        "resource.k8s.io",
        "v1alpha3",
        include_str!("../data/kube-v1.36/runtime-config/apis_resource.k8s.io_v1alpha3.json"),
    ),
    (
        "resource.k8s.io",
        "v1beta1",
        include_str!("../data/kube-v1.36/runtime-config/apis_resource.k8s.io_v1beta1.json"),
    ),
    (
        "resource.k8s.io",
        "v1beta2",
        include_str!("../data/kube-v1.36/runtime-config/apis_resource.k8s.io_v1beta2.json"),
    ),
    (
        "storage.k8s.io",
        "v1beta1",
        include_str!("../data/kube-v1.36/runtime-config/apis_storage.k8s.io_v1beta1.json"),
    ),
];
