//! Dynamic resource allocation (`resource.k8s.io`) between v1beta1 and v1, as kube's
//! conversion (`pkg/apis/resource/v1beta1/conversion.go`) through its internal version,
//! which has v1's shape.
//!
//! The two versions name the same things for `DeviceClass`, `ResourceClaim`,
//! `ResourceClaimTemplate` and `ResourceSlice`, except in three places:
//!
//! - **A claim's request** (`spec.devices.requests[]` of a claim, `spec.spec.devices.
//!   requests[]` of a template). v1beta1 writes the fields of a single request
//!   (`deviceClassName`, `selectors`, `allocationMode`, `count`, `adminAccess`,
//!   `tolerations`, `capacity`) on the request itself; v1 nests them in `exactly`.
//!   To v1: `exactly` is made when any of them is set (a non-empty string, a non-zero
//!   count, or a list or pointer field that is not null, even an empty list), and
//!   they leave the request either way. To v1beta1: `exactly`'s fields come up onto the
//!   request; `deviceClassName` has no `omitempty` in v1beta1, so a request without
//!   `exactly` (one of `firstAvailable` subrequests) shows `"deviceClassName": ""`.
//!   `name` and `firstAvailable` are the same in both.
//! - **A slice's device** (`spec.devices[]`). v1beta1 keeps everything but `name` in
//!   `basic`; v1 has it on the device. To v1: `basic`'s fields move up and `basic`
//!   goes. To v1beta1: every field but `name` moves into `basic`, which kube always
//!   writes, `{}` for a device with nothing but a name.
//! - **A slice's `spec.nodeName` and `spec.allNodes`**: plain values with `omitempty`
//!   in v1beta1, pointers in v1. Either way an empty name or a `false` is dropped (a
//!   v1 `"nodeName": ""` or `"allNodes": false` does not survive v1beta1).
//!
//! Capacities (`{value, requestPolicy}`), attributes, counters, taints, tolerations,
//! selectors, subrequests and the whole claim status have one shape in both versions
//! and pass through as they are.
//!
//! A field that moves is written as Go's `encoding/json` writes it after the
//! conversion: a null is dropped, and so are the empty lists, maps, strings and zero
//! counts `omitempty` drops; a null or absent `deviceClassName` is written `""`.
//! Fields the source version does not have are left where they are unless the
//! conversion writes the same name; a part that is not the JSON type its version
//! names (a request that is not an object, `exactly` or `basic` that is neither an
//! object nor null, ...) is left as it is. A kind other than those four and their
//! lists is left untouched, `apiVersion` included.

use serde_json::{Map, Value};

/// `apiVersion` of the stored version.
pub const V1: &str = "resource.k8s.io/v1";
/// `apiVersion` of the beta version served on request (`--runtime-config`).
pub const V1BETA1: &str = "resource.k8s.io/v1beta1";

/// The kinds that convert (and, with `List` appended, their lists).
const KINDS: [&str; 4] = [
    "DeviceClass",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceSlice",
];

/// The fields of a single request: on a v1beta1 `DeviceRequest`, in v1's `exactly`.
const EXACT_FIELDS: [(&str, Shape); 7] = [
    ("deviceClassName", Shape::RequiredText),
    ("selectors", Shape::Collection),
    ("allocationMode", Shape::Text),
    ("count", Shape::Number),
    ("adminAccess", Shape::Pointer),
    ("tolerations", Shape::Collection),
    ("capacity", Shape::Pointer),
];

/// Convert a resource.k8s.io/v1beta1 object of `kind` to v1 (sets apiVersion to
/// resource.k8s.io/v1). A list converts each item, and sets an item's `apiVersion`
/// only when the item has one.
pub fn v1beta1_to_v1(kind: &str, obj: &mut Value) {
    convert(kind, obj, Direction::ToV1);
}

/// Convert a resource.k8s.io/v1 object of `kind` to v1beta1 (sets apiVersion to
/// resource.k8s.io/v1beta1). A list converts each item, and sets an item's
/// `apiVersion` only when the item has one.
pub fn v1_to_v1beta1(kind: &str, obj: &mut Value) {
    convert(kind, obj, Direction::ToV1beta1);
}

/// Which way a conversion goes.
#[derive(Clone, Copy)]
enum Direction {
    ToV1,
    ToV1beta1,
}

impl Direction {
    fn api_version(self) -> &'static str {
        match self {
            Direction::ToV1 => V1,
            Direction::ToV1beta1 => V1BETA1,
        }
    }
}

/// How Go writes a field after decoding it: what `omitempty` leaves out.
#[derive(Clone, Copy)]
enum Shape {
    /// A string without `omitempty`: always written, `""` for null.
    RequiredText,
    /// A string with `omitempty`: null and `""` are left out.
    Text,
    /// An integer with `omitempty`: null and 0 are left out.
    Number,
    /// A pointer with `omitempty`: only null is left out (`false`, `{}` stay).
    Pointer,
    /// A slice or map with `omitempty`: null, `[]` and `{}` are left out.
    Collection,
}

impl Shape {
    /// `v` as Go writes it back, `None` when it is left out.
    fn written(self, v: Value) -> Option<Value> {
        match (self, &v) {
            (Shape::RequiredText, Value::Null) => Some(Value::String(String::new())),
            (_, Value::Null) => None,
            (Shape::Text, Value::String(s)) if s.is_empty() => None,
            (Shape::Number, n) if is_zero(n) => None,
            (Shape::Collection, Value::Array(a)) if a.is_empty() => None,
            (Shape::Collection, Value::Object(o)) if o.is_empty() => None,
            _ => Some(v),
        }
    }

    /// Whether `v` counts as set for v1beta1's "any single-request field set" test: a
    /// non-nil slice or pointer, a non-empty string, a non-zero count.
    fn is_set(self, v: &Value) -> bool {
        match (self, v) {
            (_, Value::Null) => false,
            (Shape::RequiredText | Shape::Text, Value::String(s)) => !s.is_empty(),
            (Shape::Number, n) => !is_zero(n),
            _ => true,
        }
    }
}

/// Whether `v` is a JSON number equal to zero.
fn is_zero(v: &Value) -> bool {
    v.as_f64() == Some(0.0)
}

/// The shape of a field of a v1 `Device` (v1beta1 `BasicDevice`).
fn device_field_shape(name: &str) -> Shape {
    match name {
        "attributes"
        | "capacity"
        | "consumesCounters"
        | "taints"
        | "bindingConditions"
        | "bindingFailureConditions"
        | "nodeAllocatableResourceMappings" => Shape::Collection,
        _ => Shape::Pointer,
    }
}

fn convert(kind: &str, obj: &mut Value, dir: Direction) {
    let (item_kind, is_list) = match kind.strip_suffix("List") {
        Some(item) => (item, true),
        None => (kind, false),
    };
    if !KINDS.contains(&item_kind) {
        return;
    }
    let Some(m) = obj.as_object_mut() else {
        return;
    };
    m.insert("apiVersion".into(), Value::String(dir.api_version().into()));
    if !is_list {
        convert_body(item_kind, obj, dir);
        return;
    }
    let Some(items) = m.get_mut("items").and_then(Value::as_array_mut) else {
        return;
    };
    for item in items {
        convert_body(item_kind, item, dir);
        if let Some(version) = item.get_mut("apiVersion") {
            if version.is_string() {
                *version = Value::String(dir.api_version().into());
            }
        }
    }
}

/// Convert what differs in an object of `kind` (one of [`KINDS`]), `apiVersion` aside.
fn convert_body(kind: &str, obj: &mut Value, dir: Direction) {
    match kind {
        "ResourceClaim" => {
            if let Some(spec) = obj.get_mut("spec") {
                claim_spec(spec, dir);
            }
        }
        "ResourceClaimTemplate" => {
            if let Some(spec) = obj.pointer_mut("/spec/spec") {
                claim_spec(spec, dir);
            }
        }
        "ResourceSlice" => {
            if let Some(spec) = obj.get_mut("spec") {
                slice_spec(spec, dir);
            }
        }
        _ => {}
    }
}

/// A `ResourceClaimSpec`: its requests.
fn claim_spec(spec: &mut Value, dir: Direction) {
    let Some(requests) = spec
        .pointer_mut("/devices/requests")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for request in requests {
        match dir {
            Direction::ToV1 => request_to_v1(request),
            Direction::ToV1beta1 => request_to_v1beta1(request),
        }
    }
}

/// A v1beta1 `DeviceRequest` as v1 writes it: its single-request fields in `exactly`.
fn request_to_v1(request: &mut Value) {
    let Some(r) = request.as_object_mut() else {
        return;
    };
    let any_set = EXACT_FIELDS
        .iter()
        .any(|(name, shape)| r.get(*name).is_some_and(|v| shape.is_set(v)));
    let mut exactly = Map::new();
    for (name, shape) in EXACT_FIELDS {
        if let Some(v) = r.remove(name).and_then(|v| shape.written(v)) {
            exactly.insert(name.into(), v);
        }
    }
    if any_set {
        exactly
            .entry("deviceClassName")
            .or_insert_with(|| Value::String(String::new()));
        r.insert("exactly".into(), Value::Object(exactly));
    }
}

/// A v1 `DeviceRequest` as v1beta1 writes it: `exactly`'s fields on the request.
fn request_to_v1beta1(request: &mut Value) {
    let Some(r) = request.as_object_mut() else {
        return;
    };
    let mut exactly = match r.remove("exactly") {
        Some(Value::Object(exactly)) => exactly,
        None | Some(Value::Null) => Map::new(),
        Some(other) => {
            r.insert("exactly".into(), other);
            return;
        }
    };
    for (name, shape) in EXACT_FIELDS {
        let v = exactly.remove(name).unwrap_or(Value::Null);
        if let Some(v) = shape.written(v) {
            r.insert(name.into(), v);
        }
    }
}

/// A `ResourceSliceSpec`: `nodeName` and `allNodes`, and the devices.
fn slice_spec(spec: &mut Value, dir: Direction) {
    let Some(s) = spec.as_object_mut() else {
        return;
    };
    if s.get("nodeName")
        .is_some_and(|v| v.is_null() || v.as_str() == Some(""))
    {
        s.remove("nodeName");
    }
    if s.get("allNodes")
        .is_some_and(|v| v.is_null() || v.as_bool() == Some(false))
    {
        s.remove("allNodes");
    }
    let Some(devices) = s.get_mut("devices").and_then(Value::as_array_mut) else {
        return;
    };
    for device in devices {
        match dir {
            Direction::ToV1 => device_to_v1(device),
            Direction::ToV1beta1 => device_to_v1beta1(device),
        }
    }
}

/// A v1beta1 `Device` as v1 writes it: `basic`'s fields on the device.
fn device_to_v1(device: &mut Value) {
    let Some(d) = device.as_object_mut() else {
        return;
    };
    match d.remove("basic") {
        Some(Value::Object(basic)) => {
            for (name, v) in basic {
                if let Some(v) = device_field_shape(&name).written(v) {
                    d.insert(name, v);
                }
            }
        }
        None | Some(Value::Null) => {}
        Some(other) => {
            d.insert("basic".into(), other);
        }
    }
}

/// A v1 `Device` as v1beta1 writes it: all but `name` in `basic`, always there.
fn device_to_v1beta1(device: &mut Value) {
    let Some(d) = device.as_object_mut() else {
        return;
    };
    let moving: Vec<String> = d
        .keys()
        .filter(|k| *k != "name" && *k != "basic")
        .cloned()
        .collect();
    let mut basic = Map::new();
    for name in moving {
        let written = d
            .remove(&name)
            .and_then(|v| device_field_shape(&name).written(v));
        if let Some(v) = written {
            basic.insert(name, v);
        }
    }
    d.insert("basic".into(), Value::Object(basic));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `v1` converts to `beta` and back to itself.
    fn assert_pair(kind: &str, v1: Value, beta: Value) {
        let mut down = v1.clone();
        v1_to_v1beta1(kind, &mut down);
        assert_eq!(down, beta, "v1 -> v1beta1");
        let mut up = beta;
        v1beta1_to_v1(kind, &mut up);
        assert_eq!(up, v1, "v1beta1 -> v1");
    }

    fn exactly_claim_v1() -> Value {
        json!({
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "gpu-claim", "namespace": "ml", "uid": "5c1f0c1e-1111-4a4a-9b9b-0123456789ab"},
            "spec": {"devices": {
                "requests": [{
                    "name": "gpu",
                    "exactly": {
                        "deviceClassName": "gpu.example.com",
                        "selectors": [{"cel": {
                            "expression": "device.attributes[\"gpu.example.com\"].model == \"a100\""
                        }}],
                        "allocationMode": "ExactCount",
                        "count": 2,
                        "adminAccess": true,
                        "tolerations": [
                            {"key": "gpu.example.com/unhealthy", "operator": "Exists", "effect": "NoSchedule"},
                            {"key": "maintenance", "operator": "Equal", "value": "planned",
                             "effect": "NoExecute", "tolerationSeconds": 300}
                        ],
                        "capacity": {"requests": {"memory": "10Gi"}}
                    }
                }],
                "constraints": [{"requests": ["gpu"], "matchAttribute": "gpu.example.com/model"}],
                "config": [{"requests": ["gpu"], "opaque": {
                    "driver": "gpu.example.com",
                    "parameters": {"apiVersion": "gpu.example.com/v1", "kind": "Config", "sharing": "TimeSlicing"}
                }}]
            }}
        })
    }

    fn exactly_claim_v1beta1() -> Value {
        json!({
            "apiVersion": "resource.k8s.io/v1beta1",
            "kind": "ResourceClaim",
            "metadata": {"name": "gpu-claim", "namespace": "ml", "uid": "5c1f0c1e-1111-4a4a-9b9b-0123456789ab"},
            "spec": {"devices": {
                "requests": [{
                    "name": "gpu",
                    "deviceClassName": "gpu.example.com",
                    "selectors": [{"cel": {
                        "expression": "device.attributes[\"gpu.example.com\"].model == \"a100\""
                    }}],
                    "allocationMode": "ExactCount",
                    "count": 2,
                    "adminAccess": true,
                    "tolerations": [
                        {"key": "gpu.example.com/unhealthy", "operator": "Exists", "effect": "NoSchedule"},
                        {"key": "maintenance", "operator": "Equal", "value": "planned",
                         "effect": "NoExecute", "tolerationSeconds": 300}
                    ],
                    "capacity": {"requests": {"memory": "10Gi"}}
                }],
                "constraints": [{"requests": ["gpu"], "matchAttribute": "gpu.example.com/model"}],
                "config": [{"requests": ["gpu"], "opaque": {
                    "driver": "gpu.example.com",
                    "parameters": {"apiVersion": "gpu.example.com/v1", "kind": "Config", "sharing": "TimeSlicing"}
                }}]
            }}
        })
    }

    #[test]
    fn exactly_request_flattens_onto_the_v1beta1_request() {
        assert_pair("ResourceClaim", exactly_claim_v1(), exactly_claim_v1beta1());
    }

    fn first_available_v1() -> Value {
        json!({
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "nic-claim", "namespace": "default"},
            "spec": {"devices": {"requests": [{
                "name": "nic",
                "firstAvailable": [
                    {
                        "name": "fast",
                        "deviceClassName": "nic.example.com",
                        "selectors": [{"cel": {"expression": "device.attributes[\"nic.example.com\"].speed >= 100"}}],
                        "allocationMode": "ExactCount",
                        "count": 1,
                        "tolerations": [{"key": "flaky", "operator": "Exists"}],
                        "capacity": {"requests": {"bandwidth": "10G"}}
                    },
                    {"name": "any", "deviceClassName": "nic.example.com", "allocationMode": "All"}
                ]
            }]}}
        })
    }

    #[test]
    fn first_available_request_has_an_empty_class_name_in_v1beta1() {
        let beta = json!({
            "apiVersion": "resource.k8s.io/v1beta1",
            "kind": "ResourceClaim",
            "metadata": {"name": "nic-claim", "namespace": "default"},
            "spec": {"devices": {"requests": [{
                "name": "nic",
                "deviceClassName": "",
                "firstAvailable": [
                    {
                        "name": "fast",
                        "deviceClassName": "nic.example.com",
                        "selectors": [{"cel": {"expression": "device.attributes[\"nic.example.com\"].speed >= 100"}}],
                        "allocationMode": "ExactCount",
                        "count": 1,
                        "tolerations": [{"key": "flaky", "operator": "Exists"}],
                        "capacity": {"requests": {"bandwidth": "10G"}}
                    },
                    {"name": "any", "deviceClassName": "nic.example.com", "allocationMode": "All"}
                ]
            }]}}
        });
        assert_pair("ResourceClaim", first_available_v1(), beta);
    }

    #[test]
    fn v1beta1_request_without_a_class_name_field_gets_no_exactly() {
        // What a client posting v1beta1 writes for subrequests: no deviceClassName at all.
        let mut obj = json!({
            "apiVersion": "resource.k8s.io/v1beta1",
            "kind": "ResourceClaim",
            "spec": {"devices": {"requests": [{
                "name": "nic",
                "firstAvailable": [{"name": "any", "deviceClassName": "nic.example.com"}]
            }]}}
        });
        v1beta1_to_v1("ResourceClaim", &mut obj);
        assert_eq!(
            obj,
            json!({
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaim",
                "spec": {"devices": {"requests": [{
                    "name": "nic",
                    "firstAvailable": [{"name": "any", "deviceClassName": "nic.example.com"}]
                }]}}
            })
        );
    }

    #[test]
    fn zero_single_request_fields_make_no_exactly_and_leave() {
        let mut obj = json!({
            "apiVersion": "resource.k8s.io/v1beta1",
            "kind": "ResourceClaim",
            "spec": {"devices": {"requests": [{
                "name": "r",
                "deviceClassName": "",
                "allocationMode": "",
                "count": 0,
                "selectors": null,
                "adminAccess": null,
                "tolerations": null,
                "capacity": null,
                "firstAvailable": [{"name": "a", "deviceClassName": "c"}]
            }]}}
        });
        v1beta1_to_v1("ResourceClaim", &mut obj);
        assert_eq!(
            obj["spec"]["devices"]["requests"][0],
            json!({"name": "r", "firstAvailable": [{"name": "a", "deviceClassName": "c"}]})
        );
    }

    #[test]
    fn a_non_nil_empty_list_or_false_pointer_counts_as_set() {
        // Go decodes `[]` to a non-nil slice, so kube makes `exactly`; the empty list
        // itself is then left out by omitempty, the `false` pointer is kept.
        let mut obj = json!({
            "apiVersion": "resource.k8s.io/v1beta1",
            "kind": "ResourceClaim",
            "spec": {"devices": {"requests": [
                {"name": "a", "selectors": []},
                {"name": "b", "adminAccess": false, "tolerations": [], "count": 0}
            ]}}
        });
        v1beta1_to_v1("ResourceClaim", &mut obj);
        assert_eq!(
            obj["spec"]["devices"]["requests"],
            json!([
                {"name": "a", "exactly": {"deviceClassName": ""}},
                {"name": "b", "exactly": {"deviceClassName": "", "adminAccess": false}}
            ])
        );
    }

    #[test]
    fn v1beta1_defaults_travel_into_exactly() {
        // A count alone (as defaulting leaves it) is enough for `exactly`.
        let mut obj = json!({
            "apiVersion": "resource.k8s.io/v1beta1",
            "kind": "ResourceClaim",
            "spec": {"devices": {"requests": [
                {"name": "a", "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1},
                {"name": "b", "count": 3}
            ]}}
        });
        v1beta1_to_v1("ResourceClaim", &mut obj);
        assert_eq!(
            obj["spec"]["devices"]["requests"],
            json!([
                {"name": "a", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}},
                {"name": "b", "exactly": {"deviceClassName": "", "count": 3}}
            ])
        );
    }

    #[test]
    fn claim_status_passes_through() {
        let status = json!({
            "allocation": {
                "devices": {
                    "results": [{
                        "request": "gpu",
                        "driver": "gpu.example.com",
                        "pool": "node-1",
                        "device": "gpu-0",
                        "adminAccess": true,
                        "tolerations": [{"key": "maintenance", "operator": "Exists", "effect": "NoSchedule"}],
                        "bindingConditions": ["Attached"],
                        "bindingFailureConditions": ["AttachFailed"],
                        "shareID": "7d9b4a2e-5c3f-4e1a-8b6d-2f0e9c1a3b5d",
                        "consumedCapacity": {"memory": "10Gi"}
                    }],
                    "config": [{
                        "source": "FromClaim",
                        "requests": ["gpu"],
                        "opaque": {"driver": "gpu.example.com", "parameters": {"sharing": "TimeSlicing"}}
                    }]
                },
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": ["node-1"]}
                ]}]},
                "allocationTimestamp": "2026-01-02T03:04:05Z"
            },
            "reservedFor": [{"resource": "pods", "name": "trainer", "uid": "0a1b2c3d-0000-4000-8000-000000000001"}],
            "devices": [{
                "driver": "gpu.example.com",
                "pool": "node-1",
                "device": "gpu-0",
                "shareID": "7d9b4a2e-5c3f-4e1a-8b6d-2f0e9c1a3b5d",
                "conditions": [{
                    "type": "Ready", "status": "True", "lastTransitionTime": "2026-01-02T03:04:06Z",
                    "reason": "Configured", "message": "", "observedGeneration": 1
                }],
                "data": {"health": "ok"},
                "networkData": {"interfaceName": "eth1", "ips": ["10.9.8.7/24"], "hardwareAddress": "ea:9f:1c:00:00:01"}
            }]
        });
        let mut v1 = exactly_claim_v1();
        v1["status"] = status.clone();
        let mut beta = exactly_claim_v1beta1();
        beta["status"] = status;
        assert_pair("ResourceClaim", v1, beta);
    }

    #[test]
    fn claim_template_converts_its_claim_spec() {
        let mut v1 = json!({
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "gpu-template", "namespace": "ml"},
            "spec": {"metadata": {"labels": {"app": "trainer"}}}
        });
        v1["spec"]["spec"] = exactly_claim_v1()["spec"].clone();
        let mut beta = v1.clone();
        beta["apiVersion"] = json!("resource.k8s.io/v1beta1");
        beta["spec"]["spec"] = exactly_claim_v1beta1()["spec"].clone();
        assert_pair("ResourceClaimTemplate", v1, beta);
    }

    fn slice_v1() -> Value {
        json!({
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "node-1-gpu.example.com-x7k2p"},
            "spec": {
                "driver": "gpu.example.com",
                "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
                "nodeName": "node-1",
                "sharedCounters": [{"name": "gpu-0-counters", "counters": {
                    "memory": {"value": "80Gi"},
                    "multiprocessors": {"value": "108"}
                }}],
                "devices": [
                    {
                        "name": "gpu-0",
                        "attributes": {
                            "model": {"string": "a100"},
                            "index": {"int": 0},
                            "driverVersion": {"version": "1.2.3"},
                            "mig": {"bool": false}
                        },
                        "capacity": {
                            "memory": {"value": "80Gi"},
                            "bandwidth": {"value": "100G", "requestPolicy": {
                                "default": "10G",
                                "validRange": {"min": "1G", "max": "100G", "step": "1G"}
                            }}
                        },
                        "allowMultipleAllocations": true,
                        "taints": [{"key": "gpu.example.com/unhealthy", "value": "ecc", "effect": "NoSchedule",
                                    "timeAdded": "2026-01-02T03:04:05Z"}],
                        "bindsToNode": true,
                        "bindingConditions": ["Attached"],
                        "bindingFailureConditions": ["AttachFailed"],
                        "nodeAllocatableResourceMappings": {"memory": {"capacityKey": "memory", "allocationMultiplier": "1"}}
                    },
                    {
                        "name": "gpu-0-mig-1",
                        "attributes": {"model": {"string": "a100-1g.10gb"}},
                        "consumesCounters": [{"counterSet": "gpu-0-counters", "counters": {
                            "memory": {"value": "10Gi"},
                            "multiprocessors": {"value": "14"}
                        }}]
                    },
                    {"name": "spare"}
                ]
            }
        })
    }

    #[test]
    fn slice_devices_keep_everything_but_the_name_in_basic() {
        let beta = json!({
            "apiVersion": "resource.k8s.io/v1beta1",
            "kind": "ResourceSlice",
            "metadata": {"name": "node-1-gpu.example.com-x7k2p"},
            "spec": {
                "driver": "gpu.example.com",
                "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
                "nodeName": "node-1",
                "sharedCounters": [{"name": "gpu-0-counters", "counters": {
                    "memory": {"value": "80Gi"},
                    "multiprocessors": {"value": "108"}
                }}],
                "devices": [
                    {
                        "name": "gpu-0",
                        "basic": {
                            "attributes": {
                                "model": {"string": "a100"},
                                "index": {"int": 0},
                                "driverVersion": {"version": "1.2.3"},
                                "mig": {"bool": false}
                            },
                            "capacity": {
                                "memory": {"value": "80Gi"},
                                "bandwidth": {"value": "100G", "requestPolicy": {
                                    "default": "10G",
                                    "validRange": {"min": "1G", "max": "100G", "step": "1G"}
                                }}
                            },
                            "allowMultipleAllocations": true,
                            "taints": [{"key": "gpu.example.com/unhealthy", "value": "ecc", "effect": "NoSchedule",
                                        "timeAdded": "2026-01-02T03:04:05Z"}],
                            "bindsToNode": true,
                            "bindingConditions": ["Attached"],
                            "bindingFailureConditions": ["AttachFailed"],
                            "nodeAllocatableResourceMappings": {"memory": {"capacityKey": "memory", "allocationMultiplier": "1"}}
                        }
                    },
                    {
                        "name": "gpu-0-mig-1",
                        "basic": {
                            "attributes": {"model": {"string": "a100-1g.10gb"}},
                            "consumesCounters": [{"counterSet": "gpu-0-counters", "counters": {
                                "memory": {"value": "10Gi"},
                                "multiprocessors": {"value": "14"}
                            }}]
                        }
                    },
                    {"name": "spare", "basic": {}}
                ]
            }
        });
        assert_pair("ResourceSlice", slice_v1(), beta);
    }

    #[test]
    fn per_device_node_selection_round_trips() {
        let v1 = json!({
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "fabric"},
            "spec": {
                "driver": "fabric.example.com",
                "pool": {"name": "fabric", "generation": 3, "resourceSliceCount": 2},
                "perDeviceNodeSelection": true,
                "devices": [
                    {"name": "a", "nodeName": "node-1"},
                    {"name": "b", "allNodes": true},
                    {"name": "c", "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "rack", "operator": "In", "values": ["r1"]}
                    ]}]}}
                ]
            }
        });
        let beta = json!({
            "apiVersion": "resource.k8s.io/v1beta1",
            "kind": "ResourceSlice",
            "metadata": {"name": "fabric"},
            "spec": {
                "driver": "fabric.example.com",
                "pool": {"name": "fabric", "generation": 3, "resourceSliceCount": 2},
                "perDeviceNodeSelection": true,
                "devices": [
                    {"name": "a", "basic": {"nodeName": "node-1"}},
                    {"name": "b", "basic": {"allNodes": true}},
                    {"name": "c", "basic": {"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "rack", "operator": "In", "values": ["r1"]}
                    ]}]}}}
                ]
            }
        });
        assert_pair("ResourceSlice", v1, beta);
    }

    #[test]
    fn all_nodes_slice_round_trips() {
        let v1 = json!({
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": "net"},
            "spec": {"driver": "net.example.com", "pool": {"name": "net", "generation": 0, "resourceSliceCount": 1},
                     "allNodes": true, "devices": [{"name": "vlan-10"}]}
        });
        let beta = json!({
            "apiVersion": "resource.k8s.io/v1beta1",
            "kind": "ResourceSlice",
            "metadata": {"name": "net"},
            "spec": {"driver": "net.example.com", "pool": {"name": "net", "generation": 0, "resourceSliceCount": 1},
                     "allNodes": true, "devices": [{"name": "vlan-10", "basic": {}}]}
        });
        assert_pair("ResourceSlice", v1, beta);
    }

    #[test]
    fn empty_node_name_and_false_all_nodes_are_dropped_both_ways() {
        let mut v1 = json!({
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "spec": {"driver": "d", "nodeName": "", "allNodes": false,
                     "nodeSelector": {"nodeSelectorTerms": []}}
        });
        v1_to_v1beta1("ResourceSlice", &mut v1);
        assert_eq!(
            v1,
            json!({
                "apiVersion": "resource.k8s.io/v1beta1",
                "kind": "ResourceSlice",
                "spec": {"driver": "d", "nodeSelector": {"nodeSelectorTerms": []}}
            })
        );
        let mut beta = json!({
            "apiVersion": "resource.k8s.io/v1beta1",
            "kind": "ResourceSlice",
            "spec": {"driver": "d", "nodeName": null, "allNodes": false}
        });
        v1beta1_to_v1("ResourceSlice", &mut beta);
        assert_eq!(
            beta,
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "spec": {"driver": "d"}})
        );
    }

    #[test]
    fn basic_nulls_and_empties_are_left_out_in_v1() {
        let mut beta = json!({
            "apiVersion": "resource.k8s.io/v1beta1",
            "kind": "ResourceSlice",
            "spec": {"driver": "d", "devices": [
                {"name": "a", "basic": {
                    "attributes": {}, "capacity": null, "consumesCounters": [], "taints": [],
                    "nodeName": null, "bindsToNode": false, "bindingConditions": [],
                    "nodeAllocatableResourceMappings": {}
                }},
                {"name": "b", "basic": null},
                {"name": "c"}
            ]}
        });
        v1beta1_to_v1("ResourceSlice", &mut beta);
        assert_eq!(
            beta["spec"]["devices"],
            json!([{"name": "a", "bindsToNode": false}, {"name": "b"}, {"name": "c"}])
        );
    }

    #[test]
    fn device_class_changes_only_its_api_version() {
        let v1 = json!({
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": "gpu.example.com"},
            "spec": {
                "selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}],
                "config": [{"opaque": {"driver": "gpu.example.com", "parameters": {"mode": "exclusive"}}}],
                "extendedResourceName": "example.com/gpu"
            }
        });
        let mut beta = v1.clone();
        beta["apiVersion"] = json!("resource.k8s.io/v1beta1");
        assert_pair("DeviceClass", v1, beta);
    }

    #[test]
    fn list_converts_each_item() {
        let strip = |mut item: Value| {
            if let Some(m) = item.as_object_mut() {
                m.remove("apiVersion");
                m.remove("kind");
            }
            item
        };
        let v1 = json!({
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimList",
            "metadata": {"resourceVersion": "42"},
            "items": [strip(exactly_claim_v1()), strip(first_available_v1())]
        });
        let beta = json!({
            "apiVersion": "resource.k8s.io/v1beta1",
            "kind": "ResourceClaimList",
            "metadata": {"resourceVersion": "42"},
            "items": [
                strip(exactly_claim_v1beta1()),
                {
                    "metadata": {"name": "nic-claim", "namespace": "default"},
                    "spec": {"devices": {"requests": [{
                        "name": "nic",
                        "deviceClassName": "",
                        "firstAvailable": first_available_v1()["spec"]["devices"]["requests"][0]["firstAvailable"].clone()
                    }]}}
                }
            ]
        });
        assert_pair("ResourceClaimList", v1, beta);

        // An item that names its version gets the new one.
        let mut slices = json!({
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSliceList",
            "items": [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                       "spec": {"driver": "d", "devices": [{"name": "x"}]}}]
        });
        v1_to_v1beta1("ResourceSliceList", &mut slices);
        assert_eq!(
            slices,
            json!({
                "apiVersion": "resource.k8s.io/v1beta1",
                "kind": "ResourceSliceList",
                "items": [{"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice",
                           "spec": {"driver": "d", "devices": [{"name": "x", "basic": {}}]}}]
            })
        );
    }

    #[test]
    fn other_kinds_are_untouched() {
        let original =
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule", "spec": {}});
        let mut obj = original.clone();
        v1_to_v1beta1("DeviceTaintRule", &mut obj);
        assert_eq!(obj, original);
        v1beta1_to_v1("List", &mut obj);
        assert_eq!(obj, original);
    }

    #[test]
    fn malformed_parts_are_left_as_they_are() {
        let kinds = [
            "ResourceClaim",
            "ResourceClaimTemplate",
            "ResourceSlice",
            "DeviceClass",
            "ResourceClaimList",
            "ResourceSliceList",
        ];
        let odd = [
            json!({"spec": "x", "items": {"a": 1}}),
            json!({"spec": {"spec": 7, "devices": {"requests": {"a": 1}}}}),
            json!({"spec": {"devices": [1, "x", null]}}),
            json!({"spec": {"spec": {"devices": {"requests": [1, "x", null]}}}}),
            json!({"items": [null, 1, "x"]}),
        ];
        for kind in kinds {
            for (i, original) in odd.iter().enumerate() {
                for convert in [v1beta1_to_v1, v1_to_v1beta1] {
                    let mut obj = original.clone();
                    convert(kind, &mut obj);
                    if let Some(m) = obj.as_object_mut() {
                        m.remove("apiVersion");
                    }
                    assert_eq!(&obj, original, "{kind} #{i}");
                }
            }
            for original in [json!(null), json!("x"), json!([1, 2]), json!(3)] {
                let mut obj = original.clone();
                v1beta1_to_v1(kind, &mut obj);
                v1_to_v1beta1(kind, &mut obj);
                assert_eq!(obj, original, "{kind}");
            }
        }
        let mut request =
            json!({"spec": {"devices": {"requests": [{"name": "r", "exactly": "y"}]}}});
        v1_to_v1beta1("ResourceClaim", &mut request);
        assert_eq!(
            request["spec"]["devices"]["requests"][0],
            json!({"name": "r", "exactly": "y"})
        );
        let mut device = json!({"spec": {"devices": [{"name": "d", "basic": [1]}, 5]}});
        v1beta1_to_v1("ResourceSlice", &mut device);
        assert_eq!(
            device["spec"]["devices"],
            json!([{"name": "d", "basic": [1]}, 5])
        );
        // A stray `exactly` on a v1beta1 request gives way to the one the conversion
        // writes; a count of the wrong type counts as set and moves as it is.
        let mut odd = json!({"spec": {"devices": {"requests": [
            {"name": "r", "count": "many", "exactly": {"deviceClassName": 5}}
        ]}}});
        v1beta1_to_v1("ResourceClaim", &mut odd);
        assert_eq!(
            odd["spec"]["devices"]["requests"][0],
            json!({"name": "r", "exactly": {"deviceClassName": "", "count": "many"}})
        );
    }

    fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-2i64..3).prop_map(|n| json!(n)),
            prop::sample::select(vec!["", "x", "resource.k8s.io/v1"]).prop_map(|s| json!(s)),
        ];
        leaf.prop_recursive(5, 64, 6, |inner| {
            let key = prop::sample::select(vec![
                "spec",
                "devices",
                "requests",
                "exactly",
                "basic",
                "items",
                "name",
                "deviceClassName",
                "count",
                "selectors",
                "nodeName",
                "allNodes",
                "attributes",
                "apiVersion",
                "firstAvailable",
            ]);
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((key, inner), 0..5).prop_map(|kv| {
                    Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
                }),
            ]
        })
    }

    proptest::proptest! {
        #[test]
        fn never_panics(mut obj in any_json(), kind in proptest::sample::select(vec![
            "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice", "DeviceClass",
            "ResourceClaimList", "ResourceClaimTemplateList", "ResourceSliceList",
        ])) {
            v1beta1_to_v1(kind, &mut obj);
            v1_to_v1beta1(kind, &mut obj);
            v1beta1_to_v1(kind, &mut obj);
        }
    }
}
