//! The codec's special cases, against bytes written by hand from kube's wire format.

use super::*;
use serde_json::json;

const DEPLOYMENT: &str = "k8s.io.api.apps.v1.Deployment";
const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// `key` for field `num` with wire type `w`.
fn key(num: u8, w: u8) -> u8 {
    (num << 3) | w
}

fn ld(num: u8, b: &[u8]) -> Vec<u8> {
    let mut out = vec![key(num, 2), b.len() as u8];
    out.extend_from_slice(b);
    out
}

#[test]
fn time_is_rfc3339_seconds_and_empty_bytes_are_the_zero_time() {
    // ObjectMeta{creationTimestamp: {seconds: 1700000000}}: 1700000000 = 0x6553F100.
    let ts = [0x08, 0x80, 0xe2, 0xcf, 0xaa, 0x06];
    let v = decode_message(META, &ld(8, &ts)).unwrap();
    assert_eq!(v["creationTimestamp"], "2023-11-14T22:13:20Z");
    // An empty Time is Go's zero time: `omitzero` drops it.
    let v = decode_message(META, &ld(8, &[])).unwrap();
    assert!(v.get("creationTimestamp").is_none());
    // Encoding writes seconds only; the zero time is written as no bytes.
    let b = encode_message(META, &json!({"creationTimestamp": "2023-11-14T22:13:20Z"})).unwrap();
    assert!(b
        .windows(8)
        .any(|w| w == [key(8, 2), 6, 0x08, 0x80, 0xe2, 0xcf, 0xaa, 0x06]));
    let b = encode_message(META, &json!({})).unwrap();
    assert!(b.windows(2).any(|w| w == [key(8, 2), 0]));
}

#[test]
fn micro_time_keeps_microseconds() {
    // Lease spec renewTime (field 4): {seconds: 1, nanos: 1_234_567}.
    let t = [0x08, 0x01, 0x10, 0x87, 0xad, 0x4b];
    let v = decode_message("k8s.io.api.coordination.v1.LeaseSpec", &ld(4, &t)).unwrap();
    assert_eq!(v["renewTime"], "1970-01-01T00:00:01.001234Z");
    let b = encode_message("k8s.io.api.coordination.v1.LeaseSpec", &v).unwrap();
    let back = decode_message("k8s.io.api.coordination.v1.LeaseSpec", &b).unwrap();
    assert_eq!(back["renewTime"], "1970-01-01T00:00:01.001234Z");
}

#[test]
fn int_or_string_is_a_number_or_a_string() {
    const PORT: &str = "k8s.io.api.core.v1.ServicePort";
    // targetPort (4) = {type: 1, strVal: "http"}; port (3) = 80.
    let mut b = vec![key(3, 0), 80];
    b.extend(ld(
        4,
        &[0x08, 0x01, 0x10, 0x00, 0x1a, 0x04, b'h', b't', b't', b'p'],
    ));
    let v = decode_message(PORT, &b).unwrap();
    assert_eq!(v["targetPort"], "http");
    assert_eq!(v["port"], 80);
    let v = decode_message(PORT, &[key(4, 2), 4, 0x08, 0x00, 0x10, 0x50]).unwrap();
    assert_eq!(v["targetPort"], 80);
    let enc = encode_message(PORT, &json!({"port": 80, "targetPort": 8080})).unwrap();
    assert_eq!(decode_message(PORT, &enc).unwrap()["targetPort"], 8080);
}

#[test]
fn quantities_are_strings_in_maps() {
    const REQ: &str = "k8s.io.api.core.v1.ResourceRequirements";
    // limits (1): {"cpu": Quantity{string: "500m"}}.
    let entry = [ld(1, b"cpu"), ld(2, &ld(1, b"500m"))].concat();
    let v = decode_message(REQ, &ld(1, &entry)).unwrap();
    assert_eq!(v, json!({"limits": {"cpu": "500m"}}));
    assert_eq!(encode_message(REQ, &v).unwrap(), ld(1, &entry));
}

#[test]
fn maps_are_sorted_entries_and_strings_always_written() {
    let v = json!({"name": "x", "labels": {"b": "2", "a": "1"}});
    let b = encode_message(META, &v).unwrap();
    let a_at = b
        .windows(3)
        .position(|w| w == [key(1, 2), 1, b'a'])
        .unwrap();
    let b_at = b
        .windows(3)
        .position(|w| w == [key(1, 2), 1, b'b'])
        .unwrap();
    assert!(a_at < b_at, "entries sorted by key");
    // Non-pointer strings are written even when empty (generateName, field 2).
    assert!(b.windows(2).any(|w| w == [key(2, 2), 0]));
    // ... and `omitempty` drops them again on the way back.
    assert_eq!(decode_message(META, &b).unwrap(), v);
}

#[test]
fn bytes_are_base64_and_raw_extensions_json() {
    const CM: &str = "k8s.io.api.core.v1.ConfigMap";
    let entry = [ld(1, b"k"), ld(2, &[0xff, 0x00])].concat();
    let v = decode_message(CM, &ld(3, &entry)).unwrap();
    assert_eq!(v["binaryData"], json!({"k": "/wA="}));
    const REV: &str = "k8s.io.api.apps.v1.ControllerRevision";
    let v = decode_message(REV, &ld(2, &ld(1, br#"{"a":[1]}"#))).unwrap();
    assert_eq!(v["data"], json!({"a": [1]}));
    assert_eq!(
        decode_message(REV, &encode_message(REV, &v).unwrap()).unwrap(),
        v
    );
}

#[test]
fn pointers_keep_zero_values_and_non_pointers_drop_them() {
    // spec.replicas (pointer) = 0 stays; spec.minReadySeconds (int32 omitempty) = 0 goes.
    let spec = [key(1, 0), 0, key(5, 0), 0];
    let v = decode_message(DEPLOYMENT, &ld(2, &spec)).unwrap();
    assert_eq!(v["spec"]["replicas"], 0);
    assert!(v["spec"].get("minReadySeconds").is_none());
    // Non-pointer structs are always there: metadata, status, spec.template, strategy.
    assert_eq!(v["status"], json!({}));
    assert_eq!(v["spec"]["strategy"], json!({}));
    assert_eq!(v["metadata"], json!({}));
}

#[test]
fn inline_fields_merge_into_their_parent() {
    // Volume{name: "v", volumeSource: {emptyDir: {}}}.
    const VOLUME: &str = "k8s.io.api.core.v1.Volume";
    let b = [ld(1, b"v"), ld(2, &ld(2, &[]))].concat();
    let v = decode_message(VOLUME, &b).unwrap();
    assert_eq!(v, json!({"name": "v", "emptyDir": {}}));
    assert_eq!(
        decode_message(VOLUME, &encode_message(VOLUME, &v).unwrap()).unwrap(),
        v
    );
}

#[test]
fn crd_schemas_round_trip() {
    const CRD: &str =
        "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition";
    let crd = json!({
        "metadata": {"name": "foos.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "foos", "kind": "Foo"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {"n": {"type": "integer", "default": 3, "enum": [3, 4]},
                        "l": {"type": "array", "items": {"type": "string"}},
                        "m": {"type": "object", "additionalProperties": false},
                        "d": {"type": "object", "additionalProperties": {"type": "string"}}}}}}]},
        "status": {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]}
    });
    let back = decode_message(CRD, &encode_message(CRD, &crd).unwrap()).unwrap();
    let schema = &back["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    assert_eq!(schema["properties"]["n"]["default"], 3);
    assert_eq!(schema["properties"]["n"]["enum"], json!([3, 4]));
    assert_eq!(
        schema["properties"]["l"]["items"],
        json!({"type": "string"})
    );
    assert_eq!(schema["properties"]["m"]["additionalProperties"], false);
    assert_eq!(
        schema["properties"]["d"]["additionalProperties"],
        json!({"type": "string"})
    );
    assert_eq!(schema["x-kubernetes-preserve-unknown-fields"], true);
    assert_eq!(back["spec"]["versions"][0]["served"], true);
}

#[test]
fn durations_format_as_go() {
    assert_eq!(duration::format(0), "0s");
    assert_eq!(duration::format(1_500_000_000), "1.5s");
    assert_eq!(duration::format(3_600_000_000_000), "1h0m0s");
    assert_eq!(duration::format(300_000_000), "300ms");
    assert_eq!(duration::parse("1h0m0s"), Some(3_600_000_000_000));
    assert_eq!(duration::parse("1.5s"), Some(1_500_000_000));
}

#[test]
fn envelope_round_trip_and_kube_errors() {
    let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "foo"},
        "spec": {}, "status": {}});
    let b = encode(&obj).unwrap();
    assert!(b.starts_with(b"k8s\x00"));
    assert_eq!(decode(&b).unwrap(), obj);
    // The body kubectl 1.32 sends for `kubectl create namespace foo`.
    let body: &[u8] = b"k8s\x00\n\x0f\n\x02v1\x12\tNamespace\x12\x1b\n\x13\n\x03foo\x12\x00\x1a\x00\"\x00*\x002\x008\x00B\x00\x12\x00\x1a\x02\n\x00\x1a\x00\"\x00";
    assert_eq!(decode(body).unwrap(), obj);
    let err = |b: &[u8]| decode(b).unwrap_err().to_string();
    assert_eq!(
        err(b"{}"),
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
    );
    assert_eq!(err(b"k8s\x00\n\x0f\n\x02v1"), "unexpected EOF");
    assert_eq!(
        err(b"k8s\x00\n\x06\x12\x04Node"),
        "no kind \"Node\" is registered for the protobuf encoding"
    );
    assert_eq!(
        err(b"k8s\x00\x12\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"),
        "proto: negative length found during unmarshaling"
    );
    assert_eq!(err(b"k8s\x00\x12\xff\xff\xff\xff\x0f"), "unexpected EOF");
    assert_eq!(err(b"k8s\x00\x0f"), "proto: illegal wireType 7");
    // metadata (1) of a Namespace sent as a varint.
    assert_eq!(
        err(b"k8s\x00\n\x0f\n\x02v1\x12\tNamespace\x12\x02\x08\x01"),
        "proto: wrong wireType = 0 for field Metadata"
    );
}

#[test]
fn nesting_is_capped() {
    // JSONSchemaProps.not (field 28) nested far deeper than MAX_DEPTH.
    const PROPS: &str = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps";
    let mut b: Vec<u8> = Vec::new();
    for _ in 0..(MAX_DEPTH + 10) {
        let mut next = Vec::with_capacity(b.len() + 8);
        wire::put_bytes(&mut next, 28, &b);
        b = next;
        if b.len() > 200_000 {
            break;
        }
    }
    assert_eq!(decode_message(PROPS, &b), Err(ProtobufError::TooDeep));
}

#[test]
fn watch_frames_are_length_prefixed_events() {
    let f = watch_frame("ADDED", b"k8s\x00obj");
    let len = u32::from_be_bytes(f[..4].try_into().unwrap()) as usize;
    assert_eq!(len, f.len() - 4);
    let ev = decode_message("k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent", &f[4..]);
    // The object is not JSON, so only the frame's shape is checked here.
    assert!(ev.is_err() || ev.unwrap()["type"] == "ADDED");
    assert_eq!(&f[4..11], [key(1, 2), 5, b'A', b'D', b'D', b'E', b'D']);
}
