//! `application/vnd.kubernetes.protobuf` end to end: the real kubectl (a Go protobuf
//! client), an independent protobuf codec (prost-reflect, over descriptors built from
//! the recorded field table) encoding requests and decoding our answers and watch
//! frames, and hostile protobuf bodies.

mod common;

use common::TestServer;
use prost_reflect::{
    DescriptorPool, DynamicMessage, MessageDescriptor, ReflectMessage, Value as PValue,
};
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto, FileDescriptorSet};
use serde_json::{json, Value};
use std::collections::BTreeMap;

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const TABLE: &str = include_str!("../crates/apimachinery/data/kube-v1.36/protobuf.json");

/// Descriptors of every kube message, from the recorded table, in one file: a
/// package path is a chain of nested container messages, so full names are kube's.
/// Maps become repeated key/value messages (the same wire form).
fn pool() -> DescriptorPool {
    let doc: Value = serde_json::from_str(TABLE).unwrap();
    let scalar = |t: &str| match t {
        "string" => Some(Type::String),
        "bytes" => Some(Type::Bytes),
        "bool" => Some(Type::Bool),
        "int32" => Some(Type::Int32),
        "int64" => Some(Type::Int64),
        "double" => Some(Type::Double),
        _ => None,
    };
    let field = |num: i32, ty: &str, repeated: bool| {
        let mut f = FieldDescriptorProto {
            name: Some(format!("f{num}")),
            number: Some(num),
            label: Some(if repeated {
                Label::Repeated
            } else {
                Label::Optional
            } as i32),
            ..Default::default()
        };
        match scalar(ty) {
            Some(t) => f.r#type = Some(t as i32),
            None => {
                f.r#type = Some(Type::Message as i32);
                f.type_name = Some(format!(".{ty}"));
            }
        }
        f
    };
    let mut root = DescriptorProto::default();
    fn place<'a>(root: &'a mut DescriptorProto, path: &str) -> &'a mut DescriptorProto {
        let mut node = root;
        for part in path.split('.') {
            let i = match node.nested_type.iter().position(|m| m.name() == part) {
                Some(i) => i,
                None => {
                    node.nested_type.push(DescriptorProto {
                        name: Some(part.into()),
                        ..Default::default()
                    });
                    node.nested_type.len() - 1
                }
            };
            node = &mut node.nested_type[i];
        }
        node
    }
    for (name, rows) in doc["messages"].as_object().unwrap() {
        let (package, _) = name.rsplit_once('.').unwrap();
        let mut fields = Vec::new();
        for row in rows.as_array().unwrap() {
            let num = row[0].as_i64().unwrap() as i32;
            let ty = row[2].as_str().unwrap();
            let flags = row[3].as_str().unwrap();
            if let Some(value) = ty.strip_prefix("map:") {
                let entry = format!("{package}.E{}", value.replace('.', "_"));
                let e = place(&mut root, &entry);
                if e.field.is_empty() {
                    e.field = vec![field(1, "string", false), field(2, value, false)];
                }
                fields.push(field(num, &entry, true));
            } else {
                fields.push(field(num, ty, flags.contains('r')));
            }
        }
        place(&mut root, name).field = fields;
    }
    let file = FileDescriptorProto {
        name: Some("kube.proto".into()),
        message_type: root.nested_type,
        ..Default::default()
    };
    let mut pool = DescriptorPool::new();
    pool.add_file_descriptor_set(FileDescriptorSet { file: vec![file] })
        .unwrap();
    pool
}

fn desc(pool: &DescriptorPool, name: &str) -> MessageDescriptor {
    pool.get_message_by_name(name)
        .unwrap_or_else(|| panic!("no message {name}"))
}

/// Set field `num` of `m`.
fn set(m: &mut DynamicMessage, num: u32, v: PValue) {
    m.set_field_by_number(num, v);
}

fn msg(pool: &DescriptorPool, name: &str, fields: Vec<(u32, PValue)>) -> PValue {
    let mut m = DynamicMessage::new(desc(pool, name));
    for (n, v) in fields {
        set(&mut m, n, v);
    }
    PValue::Message(m)
}

fn s(v: &str) -> PValue {
    PValue::String(v.into())
}

/// A `map<string, string>` entry of a meta/v1 message (labels, matchLabels).
fn entry(pool: &DescriptorPool, k: &str, v: &str) -> PValue {
    let name = "k8s.io.apimachinery.pkg.apis.meta.v1.Estring";
    msg(pool, name, vec![(1, s(k)), (2, s(v))])
}

/// The `k8s\0` envelope around `runtime.Unknown`.
fn envelope(
    pool: &DescriptorPool,
    api_version: &str,
    kind: &str,
    object: &DynamicMessage,
) -> Vec<u8> {
    let unknown = msg(
        pool,
        "k8s.io.apimachinery.pkg.runtime.Unknown",
        vec![
            (
                1,
                msg(
                    pool,
                    "k8s.io.apimachinery.pkg.runtime.TypeMeta",
                    vec![(1, s(api_version)), (2, s(kind))],
                ),
            ),
            (
                2,
                PValue::Bytes(prost::bytes::Bytes::from(prost::Message::encode_to_vec(
                    object,
                ))),
            ),
        ],
    );
    let PValue::Message(u) = unknown else {
        unreachable!()
    };
    let mut out = b"k8s\x00".to_vec();
    out.extend(prost::Message::encode_to_vec(&u));
    out
}

/// Open the envelope with the independent decoder: (apiVersion, kind, object).
fn open(pool: &DescriptorPool, body: &[u8], message: &str) -> (String, String, DynamicMessage) {
    assert!(
        body.starts_with(b"k8s\x00"),
        "not enveloped: {:?}",
        String::from_utf8_lossy(body)
    );
    let u = DynamicMessage::decode(
        desc(pool, "k8s.io.apimachinery.pkg.runtime.Unknown"),
        &body[4..],
    )
    .unwrap();
    let tm = get(&u, 1);
    let raw = match u.get_field_by_number(2).unwrap().into_owned() {
        PValue::Bytes(b) => b,
        other => panic!("raw: {other:?}"),
    };
    let obj = DynamicMessage::decode(desc(pool, message), raw).unwrap();
    (string(&tm, 1), string(&tm, 2), obj)
}

fn get(m: &DynamicMessage, num: u32) -> DynamicMessage {
    match m.get_field_by_number(num).unwrap().into_owned() {
        PValue::Message(m) => m,
        other => panic!("field {num} of {}: {other:?}", m.descriptor().full_name()),
    }
}

fn string(m: &DynamicMessage, num: u32) -> String {
    m.get_field_by_number(num)
        .unwrap()
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn int(m: &DynamicMessage, num: u32) -> i64 {
    let v = m.get_field_by_number(num).unwrap();
    v.as_i64().or(v.as_i32().map(i64::from)).unwrap()
}

fn list(m: &DynamicMessage, num: u32) -> Vec<PValue> {
    m.get_field_by_number(num)
        .unwrap()
        .as_list()
        .unwrap_or_default()
        .to_vec()
}

fn map(m: &DynamicMessage, num: u32) -> BTreeMap<String, String> {
    list(m, num)
        .into_iter()
        .map(|e| {
            let e = e.as_message().unwrap().clone();
            (string(&e, 1), string(&e, 2))
        })
        .collect()
}

fn pb_headers(content: bool) -> Vec<(String, String)> {
    let mut h = vec![(
        "Accept".to_string(),
        format!("{PROTOBUF}, application/json"),
    )];
    if content {
        h.push(("Content-Type".to_string(), PROTOBUF.to_string()));
    }
    h
}

fn unix(ts: &Value) -> i64 {
    chrono::DateTime::parse_from_rfc3339(ts.as_str().unwrap())
        .unwrap()
        .timestamp()
}

const DEPLOYMENT: &str = "k8s.io.api.apps.v1.Deployment";
const META: &str = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta";

fn deployment(pool: &DescriptorPool, name: &str) -> DynamicMessage {
    let labels = |p: &DescriptorPool| vec![entry(p, "app", name)];
    let container = msg(
        pool,
        "k8s.io.api.core.v1.Container",
        vec![(1, s("web")), (2, s("nginx:1.27"))],
    );
    let d = msg(
        pool,
        DEPLOYMENT,
        vec![
            (
                1,
                msg(
                    pool,
                    META,
                    vec![(1, s(name)), (11, PValue::List(labels(pool)))],
                ),
            ),
            (
                2,
                msg(
                    pool,
                    "k8s.io.api.apps.v1.DeploymentSpec",
                    vec![
                        (1, PValue::I32(0)),
                        (
                            2,
                            msg(
                                pool,
                                "k8s.io.apimachinery.pkg.apis.meta.v1.LabelSelector",
                                vec![(1, PValue::List(labels(pool)))],
                            ),
                        ),
                        (
                            3,
                            msg(
                                pool,
                                "k8s.io.api.core.v1.PodTemplateSpec",
                                vec![
                                    (1, msg(pool, META, vec![(11, PValue::List(labels(pool)))])),
                                    (
                                        2,
                                        msg(
                                            pool,
                                            "k8s.io.api.core.v1.PodSpec",
                                            vec![(2, PValue::List(vec![container]))],
                                        ),
                                    ),
                                ],
                            ),
                        ),
                    ],
                ),
            ),
        ],
    );
    let PValue::Message(d) = d else {
        unreachable!()
    };
    d
}

#[test]
fn independent_encoder_creates_and_independent_decoder_reads_back() {
    let server = TestServer::start();
    let http = server.http();
    let pool = pool();
    let body = envelope(&pool, "apps/v1", "Deployment", &deployment(&pool, "pb"));
    let path = "/apis/apps/v1/namespaces/default/deployments";
    let created = http
        .request("POST", path, &[], &pb_headers(true), Some(body))
        .unwrap();
    assert_eq!(created.status, 201, "{}", created.text());
    assert_eq!(created.header("content-type").as_deref(), Some(PROTOBUF));
    let (api_version, kind, obj) = open(&pool, &created.body, DEPLOYMENT);
    assert_eq!(
        (api_version.as_str(), kind.as_str()),
        ("apps/v1", "Deployment")
    );

    let json = http.get(&format!("{path}/pb")).json().unwrap();
    // What JSON says, the independent decoder reads from our protobuf answer.
    let got = http
        .request("GET", &format!("{path}/pb"), &[], &pb_headers(false), None)
        .unwrap();
    assert_eq!(got.status, 200);
    let (_, _, obj2) = open(&pool, &got.body, DEPLOYMENT);
    for o in [&obj, &obj2] {
        let meta = get(o, 1);
        assert_eq!(string(&meta, 1), "pb");
        assert_eq!(string(&meta, 3), "default");
        assert_eq!(string(&meta, 5), json["metadata"]["uid"].as_str().unwrap());
        assert_eq!(
            string(&meta, 6),
            json["metadata"]["resourceVersion"].as_str().unwrap()
        );
        assert_eq!(
            int(&get(&meta, 8), 1),
            unix(&json["metadata"]["creationTimestamp"])
        );
        assert_eq!(
            map(&meta, 11),
            BTreeMap::from([("app".to_string(), "pb".to_string())])
        );
        let spec = get(o, 2);
        assert_eq!(int(&spec, 1), 0, "replicas 0 (a pointer) survives");
        assert_eq!(json["spec"]["replicas"], 0);
        let strategy = get(&spec, 4);
        assert_eq!(
            string(&strategy, 1),
            json["spec"]["strategy"]["type"].as_str().unwrap()
        );
        let max_surge = get(&get(&strategy, 2), 2);
        assert_eq!(json["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        assert_eq!(
            (int(&max_surge, 1), string(&max_surge, 3)),
            (1, "25%".to_string())
        );
        let pod = get(&get(&spec, 3), 2);
        let c = list(&pod, 2)[0].as_message().unwrap().clone();
        assert_eq!(string(&c, 2), "nginx:1.27");
        assert_eq!(
            string(&c, 2),
            json["spec"]["template"]["spec"]["containers"][0]["image"]
                .as_str()
                .unwrap()
        );
        assert_eq!(
            string(&c, 14),
            json["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"]
                .as_str()
                .unwrap()
        );
        assert_eq!(
            string(&pod, 3),
            json["spec"]["template"]["spec"]["restartPolicy"]
                .as_str()
                .unwrap()
        );
        assert_eq!(
            int(&spec, 9),
            json["spec"]["progressDeadlineSeconds"].as_i64().unwrap()
        );
    }

    // A list, and a Status error, are protobuf too.
    let l = http
        .request("GET", path, &[], &pb_headers(false), None)
        .unwrap();
    let (_, kind, items) = open(&pool, &l.body, "k8s.io.api.apps.v1.DeploymentList");
    assert_eq!(kind, "DeploymentList");
    assert_eq!(list(&items, 2).len(), 1);
    let missing = http
        .request(
            "GET",
            &format!("{path}/nope"),
            &[],
            &pb_headers(false),
            None,
        )
        .unwrap();
    assert_eq!(missing.status, 404);
    let (_, kind, st) = open(
        &pool,
        &missing.body,
        "k8s.io.apimachinery.pkg.apis.meta.v1.Status",
    );
    assert_eq!(kind, "Status");
    assert_eq!(string(&st, 3), "deployments.apps \"nope\" not found");
    assert_eq!(string(&st, 4), "NotFound");
    assert_eq!(int(&st, 6), 404);
}

#[test]
fn a_beta_version_turned_on_speaks_protobuf_in_its_own_messages() {
    let server = TestServer::start_with(&["--runtime-config=networking.k8s.io/v1beta1=true"]);
    let http = server.http();
    let pool = pool();
    const IP: &str = "k8s.io.api.networking.v1beta1.IPAddress";
    let parent = msg(
        &pool,
        "k8s.io.api.networking.v1beta1.ParentReference",
        vec![(2, s("services")), (3, s("default")), (4, s("web"))],
    );
    let spec = msg(
        &pool,
        "k8s.io.api.networking.v1beta1.IPAddressSpec",
        vec![(1, parent)],
    );
    let meta = msg(
        &pool,
        "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        vec![(1, s("10.0.0.77"))],
    );
    let PValue::Message(ip) = msg(&pool, IP, vec![(1, meta), (2, spec)]) else {
        unreachable!()
    };
    let body = envelope(&pool, "networking.k8s.io/v1beta1", "IPAddress", &ip);
    let path = "/apis/networking.k8s.io/v1beta1/ipaddresses";
    let created = http
        .request("POST", path, &[], &pb_headers(true), Some(body))
        .unwrap();
    assert_eq!(created.status, 201, "{}", created.text());
    let (api_version, kind, obj) = open(&pool, &created.body, IP);
    assert_eq!(
        (api_version.as_str(), kind.as_str()),
        ("networking.k8s.io/v1beta1", "IPAddress")
    );
    assert_eq!(string(&get(&obj, 1), 1), "10.0.0.77");
    assert_eq!(string(&get(&get(&obj, 2), 1), 4), "web");
    // Stored in v1: read through v1 in JSON.
    let v1 = http
        .get("/apis/networking.k8s.io/v1/ipaddresses/10.0.0.77")
        .json()
        .unwrap();
    assert_eq!(v1["apiVersion"], "networking.k8s.io/v1");
    assert_eq!(
        v1["spec"]["parentRef"],
        json!({"resource": "services", "namespace": "default", "name": "web"})
    );
}

#[test]
fn protobuf_watch_frames_decode_frame_by_frame() {
    let server = TestServer::start();
    let http = server.http();
    let pool = pool();
    let path = "/api/v1/namespaces/default/configmaps";
    for name in ["a", "b"] {
        let r = http.send_json("POST", path, &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": name}}));
        assert_eq!(r.status, 201);
    }
    let q = [
        ("watch".to_string(), "true".to_string()),
        ("timeoutSeconds".to_string(), "1".to_string()),
    ];
    let w = http
        .request("GET", path, &q, &pb_headers(false), None)
        .unwrap();
    assert_eq!(
        w.header("content-type").as_deref(),
        Some("application/vnd.kubernetes.protobuf;stream=watch")
    );
    let seen: Vec<_> = configmap_events(&pool, &w.body)
        .into_iter()
        .map(|(ty, cm)| (ty, string(&get(&cm, 1), 1), map(&cm, 2)))
        .collect();
    assert_eq!(
        seen,
        vec![
            (
                "ADDED".to_string(),
                "a".to_string(),
                BTreeMap::from([("k".to_string(), "a".to_string())])
            ),
            (
                "ADDED".to_string(),
                "b".to_string(),
                BTreeMap::from([("k".to_string(), "b".to_string())])
            ),
        ]
    );
}

/// The events of a protobuf ConfigMap watch body: each frame's type and ConfigMap.
fn configmap_events(pool: &DescriptorPool, body: &[u8]) -> Vec<(String, DynamicMessage)> {
    let mut rest = body;
    let mut events = Vec::new();
    while !rest.is_empty() {
        let n = u32::from_be_bytes(rest[..4].try_into().unwrap()) as usize;
        let ev = DynamicMessage::decode(
            desc(pool, "k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent"),
            &rest[4..4 + n],
        )
        .unwrap();
        rest = &rest[4 + n..];
        let raw = match get(&ev, 2).get_field_by_number(1).unwrap().into_owned() {
            PValue::Bytes(b) => b,
            other => panic!("{other:?}"),
        };
        let (_, kind, cm) = open(pool, &raw, "k8s.io.api.core.v1.ConfigMap");
        assert_eq!(kind, "ConfigMap");
        events.push((string(&ev, 1), cm));
    }
    events
}

/// `obj` without what differs between two creates of the same object.
fn comparable(mut obj: Value) -> Value {
    let m = obj["metadata"].as_object_mut().unwrap();
    for k in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "managedFields",
        "namespace",
    ] {
        m.remove(k);
    }
    obj
}

#[test]
fn kubectl_creates_built_ins_in_protobuf_as_json_would_store_them() {
    let server = TestServer::start();
    let ok = |args: &[&str]| {
        let out = server.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?}: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            server.stderr_tail(20)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    ok(&["create", "namespace", "json"]);
    let cases: &[(&str, &[&str])] = &[
        (
            "deployment",
            &[
                "create",
                "deployment",
                "web",
                "--image=nginx",
                "--replicas=2",
            ],
        ),
        (
            "service",
            &["create", "service", "clusterip", "web", "--tcp=80:8080"],
        ),
        (
            "job",
            &["create", "job", "once", "--image=busybox", "--", "true"],
        ),
        (
            "configmap",
            &[
                "create",
                "configmap",
                "cfg",
                "--from-literal=a=1",
                "--from-literal=b=2",
            ],
        ),
        (
            "secret",
            &[
                "create",
                "secret",
                "generic",
                "pw",
                "--from-literal=password=s3cret",
            ],
        ),
        (
            "role",
            &[
                "create",
                "role",
                "reader",
                "--verb=get,list",
                "--resource=pods",
            ],
        ),
        (
            "rolebinding",
            &[
                "create",
                "rolebinding",
                "readers",
                "--role=reader",
                "--user=alice",
            ],
        ),
    ];
    for (resource, args) in cases {
        let name = args[if matches!(*resource, "service" | "secret") {
            3
        } else {
            2
        }];
        // kubectl's typed client sends protobuf; `create -f` sends the same object as JSON.
        ok(args);
        let mut dry = args.to_vec();
        let at = dry.iter().position(|a| *a == "--").unwrap_or(dry.len());
        dry.splice(at..at, ["--dry-run=client", "-o", "json"]);
        let file = server.write_file(&format!("{resource}.json"), &ok(&dry));
        ok(&["create", "-n", "json", "-f", file.to_str().unwrap()]);
        let via_pb: Value =
            serde_json::from_str(&ok(&["get", resource, name, "-o", "json"])).unwrap();
        let via_json: Value =
            serde_json::from_str(&ok(&["get", "-n", "json", resource, name, "-o", "json"]))
                .unwrap();
        let (mut a, mut b) = (comparable(via_pb), comparable(via_json));
        // kubectl 1.32's JSON carries `creationTimestamp: null` in pod templates, which
        // the JSON path keeps; kube 1.36's types (omitzero) and the protobuf path drop it.
        for o in [&mut a, &mut b] {
            for p in [
                "/spec/template/metadata",
                "/spec/jobTemplate/spec/template/metadata",
            ] {
                if let Some(Value::Object(m)) = o.pointer_mut(p) {
                    m.remove("creationTimestamp");
                }
            }
        }
        if *resource == "service" {
            // Allocated per create.
            for o in [&mut a, &mut b] {
                o["spec"]
                    .as_object_mut()
                    .unwrap()
                    .retain(|k, _| k != "clusterIP" && k != "clusterIPs");
            }
        }
        if *resource == "job" {
            // The controller-uid selector and labels are per object.
            for o in [&mut a, &mut b] {
                for p in [
                    "/spec/selector",
                    "/spec/template/metadata/labels",
                    "/metadata/labels",
                ] {
                    if let Some(v) = o.pointer_mut(p) {
                        *v = Value::Null;
                    }
                }
            }
        }
        assert_eq!(a, b, "{resource}: stored from protobuf vs from JSON");
    }
    let yaml = ok(&["get", "deploy", "web", "-o", "yaml"]);
    assert!(
        yaml.contains("replicas: 2") && yaml.contains("image: nginx"),
        "{yaml}"
    );
    let secret: Value = serde_json::from_str(&ok(&["get", "secret", "pw", "-o", "json"])).unwrap();
    assert_eq!(secret["data"]["password"], "czNjcmV0");
    // kubectl get/describe/delete speak protobuf too.
    ok(&["get", "deployments", "web"]);
    ok(&["delete", "deployment", "web"]);
}

#[test]
fn custom_resources_stay_json() {
    let server = TestServer::start();
    let http = server.http();
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "foos.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "foos", "singular": "foo", "kind": "Foo", "listKind": "FooList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    // The CRD itself goes in as protobuf (client-go's apiextensions clientset does).
    let body = apimachinery::codec::protobuf::encode(&crd).unwrap();
    let pool = pool();
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let r = http
        .request("POST", crds, &[], &pb_headers(true), Some(body))
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.text());
    let (_, kind, obj) = open(
        &pool,
        &r.body,
        "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
    );
    assert_eq!(kind, "CustomResourceDefinition");
    assert_eq!(string(&get(&obj, 1), 1), "foos.example.com");
    let stored = http
        .get(&format!("{crds}/foos.example.com"))
        .json()
        .unwrap();
    assert_eq!(
        stored["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
            ["x-kubernetes-preserve-unknown-fields"],
        true
    );
    common::poll(std::time::Duration::from_secs(10), || {
        (http
            .get("/apis/example.com/v1/namespaces/default/foos")
            .status
            == 200)
            .then_some(())
    })
    .expect("the CRD is served");
    let foos = "/apis/example.com/v1/namespaces/default/foos";
    let r = http.send_json(
        "POST",
        foos,
        &json!({"apiVersion": "example.com/v1", "kind": "Foo", "metadata": {"name": "f"}}),
    );
    assert_eq!(r.status, 201);
    // Asked for protobuf first, a custom resource answers JSON; protobuf only is a 406.
    let r = http
        .request("GET", &format!("{foos}/f"), &[], &pb_headers(false), None)
        .unwrap();
    assert_eq!(
        r.header("content-type").as_deref(),
        Some("application/json")
    );
    assert_eq!(r.json().unwrap()["metadata"]["name"], "f");
    let only = vec![("Accept".to_string(), PROTOBUF.to_string())];
    let r = http
        .request("GET", &format!("{foos}/f"), &[], &only, None)
        .unwrap();
    assert_eq!(r.status, 406);
    // A protobuf body for a custom resource: kube's decoder has no message for it.
    let mut tm = Vec::new();
    tm.extend([0x0a, 14]);
    tm.extend(b"example.com/v1");
    tm.extend([0x12, 3]);
    tm.extend(b"Foo");
    let mut body = b"k8s\x00\x0a".to_vec();
    body.push(tm.len() as u8);
    body.extend(tm);
    let h = vec![
        ("Content-Type".to_string(), PROTOBUF.to_string()),
        ("Accept".to_string(), "application/json".to_string()),
    ];
    let r = http.request("POST", foos, &[], &h, Some(body)).unwrap();
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json().unwrap()["message"],
        "Foo in version \"v1\" cannot be handled as a Foo: object *unstructured.Unstructured does not implement the protobuf marshalling interface and cannot be encoded to a protobuf message"
    );
}

#[test]
fn hostile_protobuf_bodies_get_400s_and_the_server_stays_up() {
    let server = TestServer::start();
    let http = server.http();
    let path = "/api/v1/namespaces/default/configmaps";
    let post = |body: Vec<u8>| {
        let h = vec![("Content-Type".to_string(), PROTOBUF.to_string())];
        http.request("POST", path, &[], &h, Some(body)).unwrap()
    };
    let type_meta = |kind: &str| {
        let mut tm = vec![0x0a, 2, b'v', b'1', 0x12, kind.len() as u8];
        tm.extend(kind.as_bytes());
        let mut out = b"k8s\x00\x0a".to_vec();
        out.push(tm.len() as u8);
        out.extend(tm);
        out
    };
    let with_raw = |raw: &[u8]| {
        let mut b = type_meta("ConfigMap");
        b.push(0x12);
        let mut n = raw.len();
        while n >= 0x80 {
            b.push((n as u8) | 0x80);
            n >>= 7;
        }
        b.push(n as u8);
        b.extend(raw);
        b
    };
    let unrecognized = |reason: &str, body: &[u8]| {
        let r = post(body.to_vec());
        assert_eq!(r.status, 400, "{}", r.text());
        let msg = r.json().unwrap()["message"].as_str().unwrap().to_string();
        assert!(msg.contains(reason), "{msg}");
        msg
    };
    // Truncated envelope, and a length declared far past the end.
    unrecognized(
        "the object provided is unrecognized (must be of type ConfigMap): unexpected EOF",
        &type_meta("ConfigMap")[..8],
    );
    unrecognized("unexpected EOF", b"k8s\x00\x12\xff\xff\xff\xff\x0f");
    unrecognized(
        "proto: negative length found during unmarshaling",
        b"k8s\x00\x12\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
    );
    unrecognized(
        "proto: integer overflow",
        b"k8s\x00\x12\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
    );
    unrecognized(
        "provided data does not appear to be a protobuf message",
        b"{\"kind\":\"ConfigMap\"}",
    );
    // Inside the object: a huge length, a wrong wire type, an illegal one.
    unrecognized(
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: unexpected EOF",
        &with_raw(&[0x0a, 0xff, 0xff, 0xff, 0xff, 0x07]),
    );
    unrecognized(
        "cannot be handled as a ConfigMap: proto: wrong wireType = 0 for field Metadata",
        &with_raw(&[0x08, 0x01]),
    );
    unrecognized("proto: illegal wireType 7", &with_raw(&[0x0f]));
    unrecognized("no kind \"Nope\" is registered", &type_meta("Nope"));
    // Deep nesting: ObjectMeta.ownerReferences can't nest, but a CRD schema can.
    let mut deep: Vec<u8> = Vec::new();
    for _ in 0..12_000 {
        let mut next = vec![0xe2, 0x01];
        let mut n = deep.len();
        while n >= 0x80 {
            next.push((n as u8) | 0x80);
            n >>= 7;
        }
        next.push(n as u8);
        next.extend(&deep);
        deep = next;
    }
    let mut body =
        b"k8s\x00\x0a\x33\x0a\x17apiextensions.k8s.io/v1\x12\x18CustomResourceDefinition\x12"
            .to_vec();
    // CRD.spec (2) . versions (7) . schema (4) . openAPIV3Schema (1) = deep JSONSchemaProps.
    let wrap = |field: u8, inner: Vec<u8>| {
        let mut out = vec![field];
        let mut n = inner.len();
        while n >= 0x80 {
            out.push((n as u8) | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
        out.extend(inner);
        out
    };
    let object = wrap(0x12, wrap(0x3a, wrap(0x22, wrap(0x0a, deep))));
    let mut n = object.len();
    while n >= 0x80 {
        body.push((n as u8) | 0x80);
        n >>= 7;
    }
    body.push(n as u8);
    body.extend(object);
    let h = vec![("Content-Type".to_string(), PROTOBUF.to_string())];
    let r = http
        .request(
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &[],
            &h,
            Some(body),
        )
        .unwrap();
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        r.text().contains("proto: exceeded maximum nesting depth"),
        "{}",
        r.text()
    );
    assert_eq!(http.get("/healthz").status, 200);
    assert!(server.exited().is_none());
}

/// Watchers of a built-in kind in protobuf get each change as the same frame bytes
/// (made once for all of them, as JSON lines are), and the frames decode to the
/// changes.
#[test]
fn protobuf_watchers_of_a_kind_get_the_same_frames() {
    let server = TestServer::start();
    let http = server.http();
    let pool = pool();
    let path = "/api/v1/namespaces/default/configmaps";
    let rv = http.get(path).json().unwrap()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let watchers: Vec<_> = (0..3)
        .map(|_| {
            let (http, rv) = (server.http(), rv.clone());
            std::thread::spawn(move || {
                let q = [
                    ("watch".to_string(), "true".to_string()),
                    ("timeoutSeconds".to_string(), "3".to_string()),
                    ("resourceVersion".to_string(), rv),
                ];
                let w = http
                    .request("GET", path, &q, &pb_headers(false), None)
                    .unwrap();
                assert_eq!(w.status, 200, "{}", w.text());
                w.body
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "1"}});
    assert_eq!(http.send_json("POST", path, &cm).status, 201);
    let patched = http.merge_patch(&format!("{path}/c"), &json!({"data": {"k": "2"}}));
    assert_eq!(patched.status, 200, "{}", patched.text());
    let deleted = http
        .request("DELETE", &format!("{path}/c"), &[], &[], None)
        .unwrap();
    assert_eq!(deleted.status, 200, "{}", deleted.text());
    let bodies: Vec<Vec<u8>> = watchers.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(
        bodies.iter().all(|b| *b == bodies[0]),
        "watchers got different bytes"
    );
    let seen: Vec<(String, String)> = configmap_events(&pool, &bodies[0])
        .into_iter()
        .map(|(ty, cm)| (ty, map(&cm, 2).get("k").cloned().unwrap_or_default()))
        .collect();
    let want: Vec<(String, String)> = [("ADDED", "1"), ("MODIFIED", "2"), ("DELETED", "2")]
        .iter()
        .map(|(t, k)| (t.to_string(), k.to_string()))
        .collect();
    assert_eq!(seen, want);
}
