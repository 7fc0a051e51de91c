//! kube's Table printers of built-in kinds and the kubectl flows on built-ins, driven
//! through HTTP and the real kubectl (1.32). Expected columns, cells and texts are
//! kube-apiserver v1.36's and kubectl's own (printers.go, kubectl's messages).

mod common;

use std::collections::BTreeMap;
use std::process::Output;

use common::{describe_output, TestServer};
use serde_json::{json, Value};

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// Runs kubectl, asserts it succeeded, returns stdout.
fn ok(server: &TestServer, args: &[&str]) -> String {
    let out = server.kubectl(args);
    assert_ok(server, args, &out);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn assert_ok(server: &TestServer, args: &[&str], out: &Output) {
    assert!(
        out.status.success(),
        "kubectl {args:?} failed\n{}\n--- server stderr (tail) ---\n{}",
        describe_output(out),
        server.stderr_tail(20)
    );
}

/// POSTs an object and asserts it was created.
fn create(server: &TestServer, path: &str, obj: Value) -> Value {
    let resp = server.http().send_json("POST", path, &obj);
    assert_eq!(resp.status, 201, "POST {path}: {}", resp.text());
    resp.json().expect("json")
}

/// The namespace's `default` ServiceAccount, which the ServiceAccount admission plugin
/// (on, as in kube-apiserver) needs before pods; nothing else creates it here.
fn default_service_account(server: &TestServer, namespace: &str) {
    create(
        server,
        &format!("/api/v1/namespaces/{namespace}/serviceaccounts"),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}),
    );
}

/// GETs a Table.
fn table(server: &TestServer, path: &str) -> Value {
    let headers = [("Accept".to_string(), TABLE.to_string())];
    let resp = server
        .http()
        .request("GET", path, &[], &headers, None)
        .expect("request");
    assert_eq!(resp.status, 200, "GET {path}: {}", resp.text());
    let t: Value = resp.json().expect("json");
    assert_eq!(t["kind"], "Table", "{t}");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1", "{t}");
    t
}

/// `(name, type, priority)` of each column definition.
fn columns(t: &Value) -> Vec<(String, String, i64)> {
    t["columnDefinitions"]
        .as_array()
        .expect("columnDefinitions")
        .iter()
        .map(|c| {
            (
                c["name"].as_str().expect("name").to_string(),
                c["type"].as_str().expect("type").to_string(),
                c["priority"].as_i64().expect("priority"),
            )
        })
        .collect()
}

fn cols(spec: &[(&str, &str, i64)]) -> Vec<(String, String, i64)> {
    spec.iter()
        .map(|(n, t, p)| (n.to_string(), t.to_string(), *p))
        .collect()
}

/// The cells of the one row of a Table, with the Age cell checked and replaced by "AGE".
fn only_row(t: &Value, age_column: Option<usize>) -> Vec<Value> {
    let rows = t["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 1, "{t}");
    let mut cells = rows[0]["cells"].as_array().expect("cells").clone();
    assert_eq!(
        cells.len(),
        t["columnDefinitions"].as_array().unwrap().len()
    );
    if let Some(i) = age_column {
        let age = cells[i].as_str().expect("age").to_string();
        assert!(is_age(&age), "age cell {age:?}");
        cells[i] = json!("AGE");
    }
    cells
}

/// Whether `s` is kube's human duration of a young object ("0s", "12s", "2m3s").
fn is_age(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_digit())
        && s.ends_with(|c: char| "smhdy".contains(c))
        && s.chars().all(|c| c.is_ascii_digit() || "smhdy".contains(c))
}

/// The description of the column named `name`.
fn description(t: &Value, name: &str) -> String {
    t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .and_then(|c| c["description"].as_str())
        .unwrap_or_else(|| panic!("no column {name}"))
        .to_string()
}

fn pod(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {"containers": [
            {"name": "nginx", "image": "nginx:1.27"},
            {"name": "sidecar", "image": "busybox:1.36"}
        ]}
    })
}

fn deployment(name: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}
            }
        }
    })
}

fn job(name: &str) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name},
        "spec": {"template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "pi", "image": "perl:5.34"}]
        }}}
    })
}

fn node(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"node-role.kubernetes.io/control-plane": ""}},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "ready", "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "addresses": [{"type": "InternalIP", "address": "192.168.1.10"}],
            "nodeInfo": {"kubeletVersion": "v1.36.0", "osImage": "Debian GNU/Linux 12",
                         "kernelVersion": "6.1.0", "architecture": "amd64",
                         "containerRuntimeVersion": "containerd://2.0.0",
                         "machineID": "", "systemUUID": "", "bootID": "",
                         "kubeProxyVersion": "", "operatingSystem": "linux"}
        }
    })
}

#[test]
fn tables_of_workloads_show_kubes_columns_and_cells() {
    let server = TestServer::start();
    let ns = "/api/v1/namespaces/default";
    default_service_account(&server, "default");
    create(&server, &format!("{ns}/pods"), pod("web-1"));
    let t = table(&server, &format!("{ns}/pods"));
    assert_eq!(
        columns(&t),
        cols(&[
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Status", "string", 0),
            ("Restarts", "string", 0),
            ("Age", "string", 0),
            ("IP", "string", 1),
            ("Node", "string", 1),
            ("Nominated Node", "string", 1),
            ("Readiness Gates", "string", 1),
        ])
    );
    assert_eq!(t["columnDefinitions"][0]["format"], "name");
    assert_eq!(
        description(&t, "Ready"),
        "The aggregate readiness state of this pod for accepting traffic."
    );
    assert!(
        description(&t, "Node")
            .starts_with("NodeName indicates in which node this pod is scheduled."),
        "{}",
        description(&t, "Node")
    );
    assert_eq!(
        only_row(&t, Some(4)),
        [
            json!("web-1"),
            json!("0/2"),
            json!("Pending"),
            json!("0"),
            json!("AGE"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>"),
        ]
    );

    create(
        &server,
        "/apis/apps/v1/namespaces/default/deployments",
        deployment("web", 3),
    );
    let t = table(&server, "/apis/apps/v1/namespaces/default/deployments");
    assert_eq!(
        columns(&t),
        cols(&[
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Up-to-date", "string", 0),
            ("Available", "string", 0),
            ("Age", "string", 0),
            ("Containers", "string", 1),
            ("Images", "string", 1),
            ("Selector", "string", 1),
        ])
    );
    assert_eq!(
        description(&t, "Up-to-date"),
        "Total number of non-terminating pods targeted by this deployment that have the desired template spec."
    );
    assert_eq!(
        only_row(&t, Some(4)),
        [
            json!("web"),
            json!("0/3"),
            json!(0),
            json!(0),
            json!("AGE"),
            json!("nginx"),
            json!("nginx:1.27"),
            json!("app=web"),
        ]
    );

    // A status write shows in the cells: READY is ready/desired.
    let http = server.http();
    let path = "/apis/apps/v1/namespaces/default/deployments/web/status";
    let mut d: Value = http.get(path).json().expect("json");
    d["status"] =
        json!({"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2});
    let resp = http.send_json("PUT", path, &d);
    assert_eq!(resp.status, 200, "{}", resp.text());
    let t = table(&server, "/apis/apps/v1/namespaces/default/deployments/web");
    assert_eq!(
        only_row(&t, Some(4))[..4],
        [json!("web"), json!("2/3"), json!(3), json!(2)]
    );

    create(&server, "/apis/batch/v1/namespaces/default/jobs", job("pi"));
    let t = table(&server, "/apis/batch/v1/namespaces/default/jobs");
    assert_eq!(
        columns(&t),
        cols(&[
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Completions", "string", 0),
            ("Duration", "string", 0),
            ("Age", "string", 0),
            ("Containers", "string", 1),
            ("Images", "string", 1),
            ("Selector", "string", 1),
        ])
    );
    let row = only_row(&t, Some(4));
    assert_eq!(
        row[..6],
        [
            json!("pi"),
            json!("Running"),
            json!("0/1"),
            json!(""),
            json!("AGE"),
            json!("pi")
        ]
    );
    let selector = row[7].as_str().expect("selector");
    assert!(
        selector.starts_with("batch.kubernetes.io/controller-uid="),
        "{selector}"
    );

    create(
        &server,
        "/apis/apps/v1/namespaces/default/statefulsets",
        json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db"},
            "spec": {"replicas": 2, "serviceName": "db",
                     "selector": {"matchLabels": {"app": "db"}},
                     "template": {"metadata": {"labels": {"app": "db"}},
                                  "spec": {"containers": [{"name": "pg", "image": "postgres:17"}]}}}
        }),
    );
    let t = table(&server, "/apis/apps/v1/namespaces/default/statefulsets");
    assert_eq!(
        columns(&t),
        cols(&[
            ("Name", "string", 0),
            ("Ready", "string", 0),
            ("Age", "string", 0),
            ("Containers", "string", 1),
            ("Images", "string", 1),
        ])
    );
    assert_eq!(
        only_row(&t, Some(2)),
        [
            json!("db"),
            json!("0/2"),
            json!("AGE"),
            json!("pg"),
            json!("postgres:17")
        ]
    );
}

#[test]
fn tables_of_cluster_kinds_show_kubes_columns_and_cells() {
    let server = TestServer::start();
    create(&server, "/api/v1/nodes", node("node-1"));
    let t = table(&server, "/api/v1/nodes");
    assert_eq!(
        columns(&t),
        cols(&[
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Roles", "string", 0),
            ("Age", "string", 0),
            ("Version", "string", 0),
            ("Internal-IP", "string", 1),
            ("External-IP", "string", 1),
            ("OS-Image", "string", 1),
            ("Kernel-Version", "string", 1),
            ("Container-Runtime", "string", 1),
        ])
    );
    assert_eq!(
        only_row(&t, Some(3)),
        [
            json!("node-1"),
            json!("Ready"),
            json!("control-plane"),
            json!("AGE"),
            json!("v1.36.0"),
            json!("192.168.1.10"),
            json!("<none>"),
            json!("Debian GNU/Linux 12"),
            json!("6.1.0 (amd64)"),
            json!("containerd://2.0.0"),
        ]
    );

    create(
        &server,
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
               "metadata": {"name": "high"}, "value": 1000}),
    );
    let t = table(&server, "/apis/scheduling.k8s.io/v1/priorityclasses/high");
    assert_eq!(
        columns(&t),
        cols(&[
            ("Name", "string", 0),
            ("Value", "integer", 0),
            ("Global-Default", "boolean", 0),
            ("Age", "string", 0),
            ("PreemptionPolicy", "string", 0),
        ])
    );
    assert_eq!(
        only_row(&t, Some(3)),
        [
            json!("high"),
            json!(1000),
            json!(false),
            json!("AGE"),
            json!("PreemptLowerPriority")
        ]
    );

    create(
        &server,
        "/apis/storage.k8s.io/v1/storageclasses",
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
               "metadata": {"name": "standard",
                            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
               "provisioner": "example.com/nfs"}),
    );
    let t = table(&server, "/apis/storage.k8s.io/v1/storageclasses");
    assert_eq!(
        only_row(&t, Some(5)),
        [
            json!("standard (default)"),
            json!("example.com/nfs"),
            json!("Delete"),
            json!("Immediate"),
            json!(false),
            json!("AGE")
        ]
    );

    create(
        &server,
        "/api/v1/namespaces/default/persistentvolumeclaims",
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": "data"},
               "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard",
                        "resources": {"requests": {"storage": "1Gi"}}}}),
    );
    let t = table(&server, "/api/v1/namespaces/default/persistentvolumeclaims");
    assert_eq!(
        columns(&t),
        cols(&[
            ("Name", "string", 0),
            ("Status", "string", 0),
            ("Volume", "string", 0),
            ("Capacity", "string", 0),
            ("Access Modes", "string", 0),
            ("StorageClass", "string", 0),
            ("VolumeAttributesClass", "string", 0),
            ("Age", "string", 0),
            ("VolumeMode", "string", 1),
        ])
    );
    assert_eq!(
        only_row(&t, Some(7)),
        [
            json!("data"),
            json!("Pending"),
            json!(""),
            json!(""),
            json!(""),
            json!("standard"),
            json!("<unset>"),
            json!("AGE"),
            json!("Filesystem")
        ]
    );

    create(
        &server,
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
               "metadata": {"name": "web"},
               "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}}),
    );
    let t = table(
        &server,
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
    );
    assert_eq!(
        only_row(&t, Some(4)),
        [
            json!("web"),
            json!("2"),
            json!("N/A"),
            json!(0),
            json!("AGE")
        ]
    );

    create(
        &server,
        "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies",
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
               "metadata": {"name": "deny"}, "spec": {"podSelector": {}}}),
    );
    let t = table(
        &server,
        "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies",
    );
    assert_eq!(
        columns(&t),
        cols(&[
            ("Name", "string", 0),
            ("Pod-Selector", "string", 0),
            ("Age", "string", 0)
        ])
    );
    assert_eq!(
        only_row(&t, Some(2)),
        [json!("deny"), json!("<none>"), json!("AGE")]
    );
}

#[test]
fn tables_of_autoscalers_show_their_targets() {
    let server = TestServer::start();
    create(
        &server,
        "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers",
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
               "metadata": {"name": "web"},
               "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                        "minReplicas": 2, "maxReplicas": 5,
                        "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                                     "target": {"type": "Utilization", "averageUtilization": 80}}}]}}),
    );
    let want_columns = cols(&[
        ("Name", "string", 0),
        ("Reference", "string", 0),
        ("Targets", "string", 0),
        ("MinPods", "string", 0),
        ("MaxPods", "string", 0),
        ("Replicas", "string", 0),
        ("Age", "string", 0),
    ]);
    let want_row = [
        json!("web"),
        json!("Deployment/web"),
        json!("cpu: <unknown>/80%"),
        json!("2"),
        json!(5),
        json!(0),
        json!("AGE"),
    ];
    // The same object through both served versions: autoscaling/v1 has its CPU target.
    for version in ["v2", "v1"] {
        let t = table(
            &server,
            &format!("/apis/autoscaling/{version}/namespaces/default/horizontalpodautoscalers"),
        );
        assert_eq!(columns(&t), want_columns, "{version}");
        assert_eq!(only_row(&t, Some(6)), want_row, "{version}");
    }
}

/// kubectl's aligned output split into its header names and rows keyed by header (a
/// cell starts where its header starts; headers are split at two or more spaces).
fn parse_table(text: &str) -> (Vec<String>, Vec<BTreeMap<String, String>>) {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let Some(header) = lines.next() else {
        return (Vec::new(), Vec::new());
    };
    let mut starts: Vec<(usize, String)> = Vec::new();
    let b = header.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b' ' {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !(b[i] == b' ' && b.get(i + 1) == Some(&b' ')) {
            i += 1;
        }
        starts.push((start, header[start..i].trim().to_string()));
    }
    let rows = lines
        .map(|line| {
            let mut row = BTreeMap::new();
            for (idx, (start, name)) in starts.iter().enumerate() {
                let end = starts
                    .get(idx + 1)
                    .map_or(line.len(), |(s, _)| *s)
                    .min(line.len());
                let cell = line.get((*start).min(line.len())..end).unwrap_or("");
                row.insert(name.clone(), cell.trim().to_string());
            }
            row
        })
        .collect();
    (starts.into_iter().map(|(_, n)| n).collect(), rows)
}

fn row(text: &str) -> (Vec<String>, BTreeMap<String, String>) {
    let (names, rows) = parse_table(text);
    assert_eq!(rows.len(), 1, "{text}");
    (names, rows.into_iter().next().expect("row"))
}

fn cells_of(row: &BTreeMap<String, String>, names: &[&str]) -> Vec<String> {
    names.iter().map(|n| row[*n].clone()).collect()
}

#[test]
fn kubectl_get_wide_prints_kubes_columns() {
    let server = TestServer::start();
    default_service_account(&server, "default");
    create(&server, "/api/v1/namespaces/default/pods", pod("web-1"));
    create(
        &server,
        "/apis/apps/v1/namespaces/default/deployments",
        deployment("web", 2),
    );
    create(&server, "/apis/batch/v1/namespaces/default/jobs", job("pi"));
    create(&server, "/api/v1/nodes", node("node-1"));
    create(
        &server,
        "/api/v1/namespaces/default/services",
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
               "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}}),
    );

    let (names, r) = row(&ok(&server, &["get", "pods"]));
    assert_eq!(names, ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
    assert_eq!(
        cells_of(&r, &["NAME", "READY", "STATUS", "RESTARTS"]),
        ["web-1", "0/2", "Pending", "0"]
    );
    assert!(is_age(&r["AGE"]), "{r:?}");
    let (names, r) = row(&ok(&server, &["get", "pods", "-o", "wide"]));
    assert_eq!(
        names,
        [
            "NAME",
            "READY",
            "STATUS",
            "RESTARTS",
            "AGE",
            "IP",
            "NODE",
            "NOMINATED NODE",
            "READINESS GATES"
        ]
    );
    assert_eq!(
        cells_of(&r, &["IP", "NODE", "NOMINATED NODE", "READINESS GATES"]),
        ["<none>", "<none>", "<none>", "<none>"]
    );

    let (names, r) = row(&ok(&server, &["get", "deploy", "-o", "wide"]));
    assert_eq!(
        names,
        [
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ]
    );
    assert_eq!(
        cells_of(
            &r,
            &[
                "NAME",
                "READY",
                "UP-TO-DATE",
                "AVAILABLE",
                "CONTAINERS",
                "IMAGES",
                "SELECTOR"
            ]
        ),
        ["web", "0/2", "0", "0", "nginx", "nginx:1.27", "app=web"]
    );

    let (names, r) = row(&ok(&server, &["get", "jobs", "-o", "wide"]));
    assert_eq!(
        names,
        [
            "NAME",
            "STATUS",
            "COMPLETIONS",
            "DURATION",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ]
    );
    assert_eq!(
        cells_of(
            &r,
            &[
                "NAME",
                "STATUS",
                "COMPLETIONS",
                "DURATION",
                "CONTAINERS",
                "IMAGES"
            ]
        ),
        ["pi", "Running", "0/1", "", "pi", "perl:5.34"]
    );

    let (names, r) = row(&ok(&server, &["get", "nodes", "-o", "wide"]));
    assert_eq!(
        names,
        [
            "NAME",
            "STATUS",
            "ROLES",
            "AGE",
            "VERSION",
            "INTERNAL-IP",
            "EXTERNAL-IP",
            "OS-IMAGE",
            "KERNEL-VERSION",
            "CONTAINER-RUNTIME"
        ]
    );
    assert_eq!(
        cells_of(
            &r,
            &[
                "NAME",
                "STATUS",
                "ROLES",
                "VERSION",
                "INTERNAL-IP",
                "EXTERNAL-IP",
                "OS-IMAGE",
                "KERNEL-VERSION",
                "CONTAINER-RUNTIME"
            ]
        ),
        [
            "node-1",
            "Ready",
            "control-plane",
            "v1.36.0",
            "192.168.1.10",
            "<none>",
            "Debian GNU/Linux 12",
            "6.1.0 (amd64)",
            "containerd://2.0.0"
        ]
    );

    let (names, rows) = parse_table(&ok(&server, &["get", "svc", "-o", "wide"]));
    assert_eq!(
        names,
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE",
            "SELECTOR"
        ]
    );
    let web = rows.iter().find(|r| r["NAME"] == "web").expect("web row");
    assert_eq!(
        cells_of(web, &["TYPE", "EXTERNAL-IP", "PORT(S)", "SELECTOR"]),
        ["ClusterIP", "<none>", "80/TCP", "app=web"]
    );
    assert!(web["CLUSTER-IP"].starts_with("10.0.0."), "{web:?}");
}

// ---------------------------------------------------------------------------
// kubectl flows on built-ins (issue 16).

const WEB_DEPLOYMENT: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        ports:
        - containerPort: 80
";

/// A Deployment, a Service, a ConfigMap and a Widget (custom resource) in one file.
const BUNDLE: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: shop
  labels: {app: shop}
spec:
  replicas: 2
  selector:
    matchLabels: {app: shop}
  template:
    metadata:
      labels: {app: shop}
    spec:
      containers:
      - name: shop
        image: nginx:1.27
---
apiVersion: v1
kind: Service
metadata:
  name: shop
spec:
  selector: {app: shop}
  ports:
  - port: 80
    targetPort: 8080
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: shop-config
data:
  mode: production
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: shop-widget
spec:
  color: blue
";

fn get_json(server: &TestServer, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json"]);
    serde_json::from_str(&ok(server, &all)).expect("kubectl -o json")
}

/// Whether `ip` is in the default `--service-cluster-ip-range` 10.0.0.0/24.
fn in_service_range(ip: &str) -> bool {
    ip.strip_prefix("10.0.0.")
        .and_then(|last| last.parse::<u8>().ok())
        .is_some()
}

#[test]
fn create_generators_of_built_ins() {
    let server = TestServer::start();
    assert_eq!(
        ok(
            &server,
            &[
                "create",
                "deployment",
                "web",
                "--image=nginx:1.27",
                "--replicas=2"
            ]
        ),
        "deployment.apps/web created\n"
    );
    let d = get_json(&server, &["deployment", "web"]);
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(
        d["spec"]["selector"],
        json!({"matchLabels": {"app": "web"}})
    );
    assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.27"
    );
    assert_eq!(
        ok(
            &server,
            &["create", "service", "clusterip", "web", "--tcp=80:8080"]
        ),
        "service/web created\n"
    );
    let s = get_json(&server, &["service", "web"]);
    assert!(
        in_service_range(s["spec"]["clusterIP"].as_str().expect("clusterIP")),
        "{s}"
    );
    assert_eq!(
        ok(&server, &["create", "job", "pi", "--image=perl:5.34"]),
        "job.batch/pi created\n"
    );
    assert_eq!(
        ok(
            &server,
            &[
                "create",
                "cronjob",
                "tick",
                "--image=busybox",
                "--schedule=*/5 * * * *"
            ]
        ),
        "cronjob.batch/tick created\n"
    );
    assert_eq!(
        ok(&server, &["autoscale", "deployment", "web", "--max=5"]),
        "horizontalpodautoscaler.autoscaling/web autoscaled\n"
    );
}

#[test]
fn expose_scale_set_image_and_rollout_history_of_a_deployment() {
    let server = TestServer::start();
    let file = server.write_file("web.yaml", WEB_DEPLOYMENT);
    let file = file.to_string_lossy();
    assert_eq!(
        ok(&server, &["create", "-f", &file]),
        "deployment.apps/web created\n"
    );

    assert_eq!(
        ok(
            &server,
            &[
                "expose",
                "deployment",
                "web",
                "--port=80",
                "--target-port=8080"
            ]
        ),
        "service/web exposed\n"
    );
    let s = get_json(&server, &["service", "web"]);
    assert_eq!(s["spec"]["selector"], json!({"app": "web"}));
    assert_eq!(
        s["spec"]["ports"],
        json!([{"port": 80, "protocol": "TCP", "targetPort": 8080}])
    );
    assert_eq!(s["spec"]["type"], "ClusterIP");
    assert!(
        in_service_range(s["spec"]["clusterIP"].as_str().expect("clusterIP")),
        "{s}"
    );

    assert_eq!(
        ok(&server, &["scale", "deployment", "web", "--replicas=4"]),
        "deployment.apps/web scaled\n"
    );
    let (_, r) = row(&ok(&server, &["get", "deployment", "web"]));
    assert_eq!(r["READY"], "0/4");

    assert_eq!(
        ok(
            &server,
            &["set", "image", "deployment/web", "nginx=nginx:1.28"]
        ),
        "deployment.apps/web image updated\n"
    );
    let d = get_json(&server, &["deployment", "web"]);
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.28"
    );
    // Every spec change bumps the generation: create 1, scale 2, set image 3.
    assert_eq!(d["metadata"]["generation"], 3, "{d}");
    // kubectl's strategic merge patch kept the other fields of the container.
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["ports"],
        json!([{"containerPort": 80, "protocol": "TCP"}])
    );

    // No controller makes ReplicaSets: kubectl finds no revisions, as against a
    // kube-apiserver without kube-controller-manager.
    assert_eq!(
        ok(&server, &["rollout", "history", "deployment/web"]),
        "deployment.apps/web \nNo rollout history found.\n"
    );

    assert_eq!(
        ok(&server, &["rollout", "restart", "deployment/web"]),
        "deployment.apps/web restarted\n"
    );
    let d = get_json(&server, &["deployment", "web"]);
    assert!(
        d["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"]
            .is_string(),
        "{d}"
    );
}

/// An editor for `kubectl edit`: a script that edits the file in place with sed.
fn editor_script(server: &TestServer, name: &str, sed: &str) -> String {
    let path = server.write_file(name, &format!("#!/bin/sh\nsed -i '{sed}' \"$1\"\n"));
    let status = std::process::Command::new("chmod")
        .arg("+x")
        .arg(&path)
        .status()
        .expect("chmod");
    assert!(status.success());
    path.to_string_lossy().into_owned()
}

#[test]
fn apply_client_and_server_side_of_a_manifest_then_diff_and_edit() {
    let server = TestServer::start();
    let crd = common::testdata_dir().join("crds/widgets.yaml");
    assert_eq!(
        ok(&server, &["apply", "-f", &crd.to_string_lossy()]),
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created\n"
    );
    assert_eq!(
        ok(
            &server,
            &[
                "wait",
                "--for",
                "condition=Established",
                "--timeout=20s",
                "crd/widgets.example.com"
            ]
        ),
        "customresourcedefinition.apiextensions.k8s.io/widgets.example.com condition met\n"
    );

    let bundle = server.write_file("bundle.yaml", BUNDLE);
    let bundle = bundle.to_string_lossy();
    assert_eq!(
        ok(&server, &["apply", "-f", &bundle]),
        "deployment.apps/shop created\nservice/shop created\nconfigmap/shop-config created\n\
         widget.example.com/shop-widget created\n"
    );
    assert_eq!(
        ok(&server, &["apply", "-f", &bundle]),
        "deployment.apps/shop unchanged\nservice/shop unchanged\nconfigmap/shop-config unchanged\n\
         widget.example.com/shop-widget unchanged\n"
    );
    let d = get_json(&server, &["deployment", "shop"]);
    assert!(
        d["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .is_string(),
        "{d}"
    );
    let w = get_json(&server, &["widget", "shop-widget"]);
    assert_eq!(w["spec"]["color"], "blue");

    // diff shows what an apply would change and exits 1.
    let changed = BUNDLE
        .replace("nginx:1.27", "nginx:1.28")
        .replace("production", "staging");
    let changed_file = server.write_file("bundle2.yaml", &changed);
    let changed_file = changed_file.to_string_lossy();
    let out = server.kubectl(&["diff", "-f", &changed_file]);
    assert_eq!(out.status.code(), Some(1), "{}", describe_output(&out));
    let diff = String::from_utf8_lossy(&out.stdout);
    for line in [
        "-      - image: nginx:1.27",
        "+      - image: nginx:1.28",
        "-  generation: 1",
        "+  generation: 2",
        "-  mode: production",
        "+  mode: staging",
    ] {
        assert!(diff.lines().any(|l| l == line), "{line:?} not in\n{diff}");
    }
    assert!(
        !diff.contains("Widget") && !diff.contains("v1.Service."),
        "unchanged objects are not diffed:\n{diff}"
    );

    // Server-side apply takes over the fields client-side apply set (kubectl's
    // manager may: they are in the last-applied annotation).
    assert_eq!(
        ok(&server, &["apply", "--server-side", "-f", &changed_file]),
        "deployment.apps/shop serverside-applied\nservice/shop serverside-applied\n\
         configmap/shop-config serverside-applied\nwidget.example.com/shop-widget serverside-applied\n"
    );
    let cm = get_json(
        &server,
        &["configmap", "shop-config", "--show-managed-fields"],
    );
    assert_eq!(cm["data"], json!({"mode": "staging"}));
    let managers: Vec<&str> = cm["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert!(managers.contains(&"kubectl"), "{managers:?}");
    let out = server.kubectl(&["diff", "--server-side", "-f", &changed_file]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "nothing left to change\n{}",
        describe_output(&out)
    );

    // kubectl edit with an editor script.
    let editor = editor_script(&server, "edit.sh", "s/replicas: 2/replicas: 5/");
    let out = server
        .kubectl_command(&["edit", "deployment", "shop"])
        .env("KUBE_EDITOR", &editor)
        .output()
        .expect("kubectl edit");
    assert_ok(&server, &["edit"], &out);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "deployment.apps/shop edited\n"
    );
    assert_eq!(
        get_json(&server, &["deployment", "shop"])["spec"]["replicas"],
        5
    );
    let out = server
        .kubectl_command(&["edit", "configmap", "shop-config"])
        .env("KUBE_EDITOR", &editor)
        .output()
        .expect("kubectl edit");
    assert_ok(&server, &["edit"], &out);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Edit cancelled, no changes made.\n"
    );
}

/// The lines of `text` without their trailing spaces.
fn trimmed_lines(text: &str) -> Vec<String> {
    text.lines().map(|l| l.trim_end().to_string()).collect()
}

fn assert_has_lines(text: &str, expected: &[&str]) {
    let lines = trimmed_lines(text);
    for l in expected {
        assert!(lines.iter().any(|x| x == l), "{l:?} not in\n{text}");
    }
}

#[test]
fn describe_deployment_pod_and_service() {
    let server = TestServer::start();
    let file = server.write_file("web.yaml", WEB_DEPLOYMENT);
    ok(&server, &["create", "-f", &file.to_string_lossy()]);
    ok(
        &server,
        &[
            "expose",
            "deployment",
            "web",
            "--port=80",
            "--target-port=8080",
        ],
    );
    default_service_account(&server, "default");
    create(&server, "/api/v1/namespaces/default/pods", pod("web-1"));

    let text = ok(&server, &["describe", "deployment", "web"]);
    assert_has_lines(
        &text,
        &[
            "Name:                   web",
            "Namespace:              default",
            "Selector:               app=web",
            "Replicas:               2 desired | 0 updated | 0 total | 0 available | 0 unavailable",
            "StrategyType:           RollingUpdate",
            "MinReadySeconds:        0",
            "RollingUpdateStrategy:  25% max unavailable, 25% max surge",
            "    Image:         nginx:1.27",
            "    Port:          80/TCP",
            "Events:            <none>",
        ],
    );

    let text = ok(&server, &["describe", "pod", "web-1"]);
    assert_has_lines(
        &text,
        &[
            "Name:             web-1",
            "Priority:         0",
            "Service Account:  default",
            "Node:             <none>",
            "Labels:           app=web",
            "Status:           Pending",
            "  nginx:",
            "    Image:        nginx:1.27",
            "  sidecar:",
            "    Image:        busybox:1.36",
            // The admission plugins' default tolerations (the token volume below).
            "QoS Class:                   BestEffort",
            "Tolerations:                 node.kubernetes.io/not-ready:NoExecute op=Exists for 300s",
            "                             node.kubernetes.io/unreachable:NoExecute op=Exists for 300s",
            "Events:                      <none>",
        ],
    );
    let mount = "      /var/run/secrets/kubernetes.io/serviceaccount from kube-api-access-";
    assert!(
        trimmed_lines(&text)
            .iter()
            .any(|l| l.starts_with(mount) && l.ends_with(" (ro)")),
        "no token volume mount in\n{text}"
    );

    // describe lists the object's events by `involvedObject.*` field selectors.
    let svc = get_json(&server, &["service", "web"]);
    let uid = svc["metadata"]["uid"].as_str().expect("uid");
    create(
        &server,
        "/api/v1/namespaces/default/events",
        json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "web.1"},
            "involvedObject": {"apiVersion": "v1", "kind": "Service", "name": "web",
                               "namespace": "default", "uid": uid},
            "reason": "Synced", "message": "service synced", "type": "Normal",
            "source": {"component": "test"}, "count": 1,
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z"
        }),
    );
    let ip = svc["spec"]["clusterIP"].as_str().expect("clusterIP");
    let text = ok(&server, &["describe", "service", "web"]);
    assert_has_lines(
        &text,
        &[
            "Name:                     web",
            "Selector:                 app=web",
            "Type:                     ClusterIP",
            "IP Family Policy:         SingleStack",
            "IP Families:              IPv4",
            &format!("IP:                       {ip}"),
            "Port:                     <unset>  80/TCP",
            "TargetPort:               8080/TCP",
            "Session Affinity:         None",
            "Events:",
        ],
    );
    let events = text.split("Events:").nth(1).expect("events");
    assert!(
        events.contains("Normal  Synced") && events.contains("service synced"),
        "{text}"
    );
}

#[test]
fn explain_deployment_spec_strategy() {
    let server = TestServer::start();
    let text = ok(&server, &["explain", "deployment.spec.strategy"]);
    assert_has_lines(
        &text,
        &[
            "GROUP:      apps",
            "KIND:       Deployment",
            "VERSION:    v1",
            "FIELD: strategy <DeploymentStrategy>",
            "    The deployment strategy to use to replace existing pods with new ones.",
            "  rollingUpdate\t<RollingUpdateDeployment>",
            "  type\t<string>",
            "  enum: Recreate, RollingUpdate",
        ],
    );
}

#[test]
fn api_resources_match_kubes_discovery() {
    let server = TestServer::start();
    for (group, file) in [
        ("", "api_v1.json"),
        ("apps", "apis_apps_v1.json"),
        ("batch", "apis_batch_v1.json"),
    ] {
        let recorded = common::testdata_json(&format!("kube-v1.36/discovery/{file}"));
        let gv = recorded["groupVersion"].as_str().expect("groupVersion");
        let mut expected: Vec<Vec<String>> = recorded["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .filter(|r| !r["name"].as_str().unwrap_or("/").contains('/'))
            .map(|r| {
                let short: Vec<&str> = r["shortNames"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                vec![
                    r["name"].as_str().unwrap_or("").to_string(),
                    short.join(","),
                    gv.to_string(),
                    r["namespaced"].to_string(),
                    r["kind"].as_str().unwrap_or("").to_string(),
                ]
            })
            .collect();
        expected.sort();
        let text = ok(&server, &["api-resources", &format!("--api-group={group}")]);
        let (names, rows) = parse_table(&text);
        assert_eq!(
            names,
            ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
        );
        let got: Vec<Vec<String>> = rows
            .iter()
            .map(|r| {
                cells_of(
                    r,
                    &["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"],
                )
            })
            .collect();
        assert_eq!(got, expected, "api-resources --api-group={group}");
    }
}
