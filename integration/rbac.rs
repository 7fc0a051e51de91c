//! RBAC end to end against the real binary (`--authorization-mode=RBAC`, users from a
//! `--token-auth-file`): kube's 403 bodies, Roles and bindings taking effect at once,
//! kube's bootstrap roles (`view`, `edit`, discovery), ServiceAccount subjects,
//! resourceNames, access reviews and `kubectl auth can-i`, kubectl's 403 message.

mod common;

use common::{describe_output, json_accept, poll, Http, HttpResponse, TestServer};
use serde_json::{json, Value};
use std::time::Duration;

/// Users of the token file: an admin (`system:masters`), two plain users, a service
/// account with the groups kube's service account authenticator gives it.
const TOKENS: &str = "admin-token,admin,uid-admin,system:masters
alice-token,alice,uid-alice
bob-token,bob,uid-bob,devs
robot-token,system:serviceaccount:team:robot,uid-robot,\"system:serviceaccounts,system:serviceaccounts:team\"
";

const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

/// A server with RBAC on, the widgets CRD and a `team` namespace.
struct Cluster {
    server: TestServer,
    http: Http,
}

impl Cluster {
    fn start() -> Cluster {
        let dir = std::env::temp_dir().join(format!(
            "crd-apiserver-rbac-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let tokens = dir.join("tokens.csv");
        std::fs::write(&tokens, TOKENS).expect("token file");
        let server = TestServer::start_secure(&[
            "--token-auth-file",
            tokens.to_str().unwrap_or_default(),
            "--authorization-mode",
            "RBAC",
        ]);
        let _ = std::fs::remove_dir_all(&dir);
        let ca = common::kubeconfig_ca(&server).expect("certificate-authority-data");
        let http = Http::new_tls(server.url(), "rbac-test", &ca, None);
        let cluster = Cluster { server, http };
        let crd: Value =
            serde_norway::from_str(&common::testdata("crds/widgets.yaml")).expect("CRD YAML");
        let r = cluster.send(
            "admin",
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd,
        );
        assert_eq!(r.status, 201, "{}", r.text());
        let r = cluster.send(
            "admin",
            "POST",
            "/api/v1/namespaces",
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}),
        );
        assert_eq!(r.status, 201, "{}", r.text());
        let served = poll(Duration::from_secs(30), || {
            (cluster.get("admin", WIDGETS).status == 200).then_some(())
        });
        assert!(served.is_some(), "widgets never served");
        cluster
    }

    fn headers(user: &str) -> Vec<(String, String)> {
        let mut h = json_accept();
        if !user.is_empty() {
            h.push(("Authorization".into(), format!("Bearer {user}-token")));
        }
        h
    }

    /// GET as `user` (`""`: anonymous).
    fn get(&self, user: &str, path: &str) -> HttpResponse {
        self.http
            .request("GET", path, &[], &Cluster::headers(user), None)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn send(&self, user: &str, method: &str, path: &str, body: &Value) -> HttpResponse {
        let mut h = Cluster::headers(user);
        h.push(("Content-Type".into(), "application/json".into()));
        let bytes = serde_json::to_vec(body).expect("JSON");
        self.http
            .request(method, path, &[], &h, Some(bytes))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Create `obj` at `path` as the admin.
    fn admin_create(&self, path: &str, obj: Value) -> Value {
        let r = self.send("admin", "POST", path, &obj);
        assert_eq!(r.status, 201, "POST {path}: {}", r.text());
        r.json().expect("JSON")
    }

    /// A kubeconfig for `user` (the server's, with the user's token).
    fn kubeconfig_for(&self, user: &str) -> std::path::PathBuf {
        let text = std::fs::read_to_string(self.server.kubeconfig()).expect("kubeconfig");
        let mut config: Value = serde_norway::from_str(&text).expect("kubeconfig YAML");
        config["users"][0]["user"] = json!({"token": format!("{user}-token")});
        let yaml = serde_norway::to_string(&config).expect("YAML");
        self.server.write_file(&format!("kubeconfig-{user}"), &yaml)
    }

    fn kubectl_as(&self, user: &str, args: &[&str]) -> std::process::Output {
        let config = self.kubeconfig_for(user);
        let mut all = vec!["--kubeconfig", config.to_str().unwrap_or_default()];
        all.extend_from_slice(args);
        self.server
            .kubectl_command(&[])
            .args(&all)
            .output()
            .expect("kubectl")
    }
}

/// kube's 403 `Status` body.
fn forbidden(message: &str, name: &str, group: &str, kind: &str) -> Value {
    let mut details = json!({"group": group, "kind": kind});
    if !name.is_empty() {
        details["name"] = json!(name);
    }
    if group.is_empty() {
        details.as_object_mut().map(|d| d.remove("group"));
    }
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": "Forbidden", "details": details, "code": 403})
}

fn role_binding(ns: &str, name: &str, role_kind: &str, role: &str, subjects: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": subjects})
}

fn user(name: &str) -> Value {
    json!({"kind": "User", "name": name, "apiGroup": "rbac.authorization.k8s.io"})
}

#[test]
fn unprivileged_user_gets_kubes_403_for_custom_resources() {
    let c = Cluster::start();
    let r = c.get("alice", WIDGETS);
    assert_eq!(
        r.json(),
        Some(forbidden(
            "widgets.example.com is forbidden: User \"alice\" cannot list resource \"widgets\" in API group \"example.com\" in the namespace \"default\"",
            "",
            "example.com",
            "widgets"
        ))
    );
    let widget =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}});
    let r = c.send("alice", "POST", WIDGETS, &widget);
    assert_eq!(r.status, 403);
    assert_eq!(
        r.json().expect("Status")["message"],
        "widgets.example.com is forbidden: User \"alice\" cannot create resource \"widgets\" in API group \"example.com\" in the namespace \"default\""
    );
    let r = c.get("alice", &format!("{WIDGETS}/w1"));
    assert_eq!(
        r.json().expect("Status")["message"],
        "widgets.example.com \"w1\" is forbidden: User \"alice\" cannot get resource \"widgets\" in API group \"example.com\" in the namespace \"default\""
    );
    // kube's bootstrap bindings: discovery for authenticated users, health for everyone.
    assert_eq!(c.get("alice", "/apis").status, 200);
    assert_eq!(c.get("alice", "/version").status, 200);
    assert_eq!(c.get("", "/healthz").status, 200);
    let r = c.get("", "/apis");
    assert_eq!(
        r.json(),
        Some(
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "forbidden: User \"system:anonymous\" cannot get path \"/apis\"",
            "reason": "Forbidden", "details": {}, "code": 403})
        )
    );
    // system:masters may do anything without a binding of its own.
    assert_eq!(c.send("admin", "POST", WIDGETS, &widget).status, 201);
}

#[test]
fn role_and_role_binding_grant_list_in_one_namespace_at_once() {
    let c = Cluster::start();
    c.admin_create(
        &format!("{RBAC}/namespaces/default/roles"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "widget-reader"},
            "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list"]}]}),
    );
    // No poll: a binding created through the server applies to the next request.
    c.admin_create(
        &format!("{RBAC}/namespaces/default/rolebindings"),
        role_binding(
            "default",
            "alice-reads",
            "Role",
            "widget-reader",
            json!([user("alice")]),
        ),
    );
    let r = c.get("alice", WIDGETS);
    assert_eq!(r.status, 200, "{}", r.text());
    let r = c.get("alice", "/apis/example.com/v1/namespaces/team/widgets");
    assert_eq!(r.status, 403);
    assert_eq!(c.get("alice", "/apis/example.com/v1/widgets").status, 403);
    let r = c.send(
        "alice",
        "POST",
        WIDGETS,
        &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
    );
    assert_eq!(r.status, 403);
    // Deleting the binding takes the grant away at once too.
    let r = c.send(
        "admin",
        "DELETE",
        &format!("{RBAC}/namespaces/default/rolebindings/alice-reads"),
        &json!({}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(c.get("alice", WIDGETS).status, 403);
}

#[test]
fn cluster_role_binding_to_view_grants_reads_everywhere_but_not_secrets() {
    let c = Cluster::start();
    c.admin_create(
        &format!("{RBAC}/clusterrolebindings"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "devs-view"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"}]}),
    );
    assert_eq!(
        c.get("bob", "/api/v1/namespaces/team/configmaps").status,
        200
    );
    assert_eq!(c.get("bob", "/api/v1/configmaps").status, 200);
    let r = c.get("bob", "/api/v1/namespaces/team/secrets");
    assert_eq!(
        r.json(),
        Some(forbidden(
            "secrets is forbidden: User \"bob\" cannot list resource \"secrets\" in API group \"\" in the namespace \"team\"",
            "",
            "",
            "secrets"
        ))
    );
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    assert_eq!(
        c.send("bob", "POST", "/api/v1/namespaces/team/configmaps", &cm)
            .status,
        403
    );
    // The bootstrap roles are served like any others.
    let view = c.get("admin", &format!("{RBAC}/clusterroles/view"));
    assert_eq!(view.status, 200);
    let view = view.json().expect("JSON");
    assert_eq!(
        view["aggregationRule"]["clusterRoleSelectors"][0]["matchLabels"]
            ["rbac.authorization.k8s.io/aggregate-to-view"],
        "true"
    );
    assert!(!view["rules"].as_array().expect("rules").is_empty());
}

#[test]
fn service_account_subject_defaults_to_the_binding_namespace() {
    let c = Cluster::start();
    c.admin_create(
        &format!("{RBAC}/namespaces/team/rolebindings"),
        role_binding(
            "team",
            "robot-edits",
            "ClusterRole",
            "edit",
            json!([{"kind": "ServiceAccount", "name": "robot"}]),
        ),
    );
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    let r = c.send("robot", "POST", "/api/v1/namespaces/team/configmaps", &cm);
    assert_eq!(r.status, 201, "{}", r.text());
    let r = c.send(
        "robot",
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &cm,
    );
    assert_eq!(
        r.json().expect("Status")["message"],
        "configmaps is forbidden: User \"system:serviceaccount:team:robot\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"default\""
    );
}

#[test]
fn resource_names_allow_only_the_named_objects() {
    let c = Cluster::start();
    for name in ["cm1", "cm2"] {
        c.admin_create(
            "/api/v1/namespaces/default/configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}),
        );
    }
    c.admin_create(
        &format!("{RBAC}/namespaces/default/roles"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "cm1-reader"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cm1"], "verbs": ["get", "list"]}]}),
    );
    c.admin_create(
        &format!("{RBAC}/namespaces/default/rolebindings"),
        role_binding(
            "default",
            "alice-cm1",
            "Role",
            "cm1-reader",
            json!([user("alice")]),
        ),
    );
    assert_eq!(
        c.get("alice", "/api/v1/namespaces/default/configmaps/cm1")
            .status,
        200
    );
    let r = c.get("alice", "/api/v1/namespaces/default/configmaps/cm2");
    assert_eq!(
        r.json(),
        Some(forbidden(
            "configmaps \"cm2\" is forbidden: User \"alice\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"default\"",
            "cm2",
            "",
            "configmaps"
        ))
    );
    assert_eq!(
        c.get("alice", "/api/v1/namespaces/default/configmaps")
            .status,
        403
    );
}

#[test]
fn binding_to_a_missing_role_names_it_in_the_denial() {
    let c = Cluster::start();
    c.admin_create(
        &format!("{RBAC}/namespaces/default/rolebindings"),
        role_binding(
            "default",
            "dangling",
            "Role",
            "gone",
            json!([user("alice")]),
        ),
    );
    let r = c.get("alice", WIDGETS);
    assert_eq!(
        r.json().expect("Status")["message"],
        "widgets.example.com is forbidden: User \"alice\" cannot list resource \"widgets\" in API group \"example.com\" in the namespace \"default\": RBAC: role.rbac.authorization.k8s.io \"gone\" not found"
    );
}

#[test]
fn role_ref_is_immutable_and_validated_as_kube() {
    let c = Cluster::start();
    let path = format!("{RBAC}/namespaces/default/rolebindings");
    let mut rb = c.admin_create(
        &path,
        role_binding(
            "default",
            "rb",
            "ClusterRole",
            "view",
            json!([user("alice")]),
        ),
    );
    rb["roleRef"]["name"] = json!("edit");
    let r = c.send("admin", "PUT", &format!("{path}/rb"), &rb);
    assert_eq!(r.status, 422, "{}", r.text());
    assert_eq!(
        r.json().expect("Status")["message"],
        "RoleBinding.rbac.authorization.k8s.io \"rb\" is invalid: roleRef: Invalid value: {\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"ClusterRole\",\"Name\":\"edit\"}: cannot change roleRef"
    );
    let r = c.send(
        "admin",
        "POST",
        &format!("{RBAC}/clusterroles"),
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "system:bad"}, "rules": [{"apiGroups": [""], "resources": ["pods"]}]}),
    );
    assert_eq!(
        r.json().expect("Status")["message"],
        "ClusterRole.rbac.authorization.k8s.io \"system:bad\" is invalid: rules[0].verbs: Required value: verbs must contain at least one value"
    );
    // Names with colons (as kube's own roles) can be updated.
    let mut role = c.admin_create(
        &format!("{RBAC}/clusterroles"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "example:reader"}, "rules": []}),
    );
    role["metadata"]["labels"] = json!({"a": "b"});
    let r = c.send(
        "admin",
        "PUT",
        &format!("{RBAC}/clusterroles/example:reader"),
        &role,
    );
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn access_reviews_and_kubectl_auth_can_i_answer_as_the_authorizer() {
    let c = Cluster::start();
    c.admin_create(
        &format!("{RBAC}/namespaces/default/rolebindings"),
        role_binding(
            "default",
            "alice-view",
            "ClusterRole",
            "view",
            json!([user("alice")]),
        ),
    );
    let ssar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"namespace": "default", "verb": "list", "resource": "configmaps"}}});
    let r = c.send(
        "alice",
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        &ssar,
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.json().expect("JSON")["status"],
        json!({"allowed": true,
            "reason": "RBAC: allowed by RoleBinding \"alice-view/default\" of ClusterRole \"view\" to User \"alice\""})
    );
    let sar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"resourceAttributes": {"namespace": "default", "verb": "delete", "resource": "configmaps"},
                 "user": "alice"}});
    let r = c.send(
        "admin",
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        &sar,
    );
    assert_eq!(r.json().expect("JSON")["status"], json!({"allowed": false}));
    // Reviews are not stored: create is their only verb.
    let r = c.get(
        "admin",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
    );
    assert_eq!(r.status, 405, "{}", r.text());

    let yes = c.kubectl_as(
        "alice",
        &["auth", "can-i", "list", "configmaps", "-n", "default"],
    );
    assert!(yes.status.success(), "{}", describe_output(&yes));
    assert_eq!(String::from_utf8_lossy(&yes.stdout).trim(), "yes");
    let no = c.kubectl_as(
        "alice",
        &["auth", "can-i", "list", "configmaps", "-n", "team"],
    );
    assert!(!no.status.success(), "{}", describe_output(&no));
    assert_eq!(String::from_utf8_lossy(&no.stdout).trim(), "no");
    let no = c.kubectl_as("alice", &["auth", "can-i", "create", "widgets.example.com"]);
    assert_eq!(
        String::from_utf8_lossy(&no.stdout).trim(),
        "no",
        "{}",
        describe_output(&no)
    );
}

#[test]
fn kubectl_with_a_user_token_shows_kubes_403_message() {
    let c = Cluster::start();
    let out = c.kubectl_as("alice", &["get", "widgets", "-n", "default"]);
    assert!(!out.status.success(), "{}", describe_output(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "Error from server (Forbidden): widgets.example.com is forbidden: User \"alice\" cannot list resource \"widgets\" in API group \"example.com\" in the namespace \"default\""
    );
    // The admin kubeconfig lists RBAC objects with kube's columns.
    let out = c
        .server
        .kubectl(&["get", "clusterrolebindings", "cluster-admin", "-o", "wide"]);
    assert!(out.status.success(), "{}", describe_output(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let header: Vec<&str> = text
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    );
    assert!(text.contains("ClusterRole/cluster-admin"), "{text}");
    assert!(text.contains("system:masters"), "{text}");
    let out = c.server.kubectl(&["get", "clusterroles", "view"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let header: Vec<&str> = text
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["NAME", "CREATED", "AT"],
        "{}",
        describe_output(&out)
    );
}

const TEAM_ROLES: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles";
const TEAM_BINDINGS: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings";

fn role(name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": name}, "rules": rules})
}

fn cluster_role(name: &str, labels: Value, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name, "labels": labels}, "rules": rules})
}

/// The rows of `kubectl auth can-i --list` as whitespace-separated cells.
fn can_i_rows(out: &std::process::Output) -> Vec<Vec<String>> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

#[test]
fn kubectl_auth_can_i_list_shows_the_rules_bound_in_the_namespace() {
    let c = Cluster::start();
    c.admin_create(
        TEAM_ROLES,
        role(
            "widget-reader",
            json!([{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list"]}]),
        ),
    );
    c.admin_create(
        TEAM_BINDINGS,
        role_binding(
            "team",
            "alice-reads",
            "Role",
            "widget-reader",
            json!([user("alice")]),
        ),
    );
    // kube's answer: no metadata or spec, the rules of the cluster-wide bindings
    // (system:basic-user, discovery, ...) and of the namespace's.
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": "team"}});
    let path = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews";
    let r = c.send("alice", "POST", path, &review);
    assert_eq!(r.status, 201, "{}", r.text());
    let body = r.json().expect("JSON");
    assert_eq!(body["metadata"], json!({}));
    assert_eq!(body["spec"], json!({}));
    assert_eq!(body["status"]["incomplete"], json!(false));
    assert!(body["status"].get("evaluationError").is_none(), "{body}");
    let rules = body["status"]["resourceRules"].as_array().expect("rules");
    assert!(rules.contains(
        &json!({"verbs": ["get", "list"], "apiGroups": ["example.com"], "resources": ["widgets"]})
    ));
    assert!(rules.contains(
        &json!({"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
        "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]})
    ));
    assert!(body["status"]["nonResourceRules"]
        .as_array()
        .expect("non-resource rules")
        .iter()
        .any(|r| r["nonResourceURLs"]
            .as_array()
            .is_some_and(|u| u.contains(&json!("/version")))));
    let r = c.send("alice", "POST", path, &json!({"spec": {}}));
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.json().expect("Status")["message"],
        "no namespace on request"
    );

    let out = c.kubectl_as("alice", &["auth", "can-i", "--list", "-n", "team"]);
    assert!(out.status.success(), "{}", describe_output(&out));
    let rows = can_i_rows(&out);
    assert_eq!(
        rows.first().map(Vec::as_slice),
        Some(
            &[
                "Resources",
                "Non-Resource",
                "URLs",
                "Resource",
                "Names",
                "Verbs"
            ]
            .map(String::from)[..]
        ),
        "{}",
        describe_output(&out)
    );
    let widgets = ["widgets.example.com", "[]", "[]", "[get", "list]"].map(String::from);
    assert!(
        rows.contains(&widgets.to_vec()),
        "{}",
        describe_output(&out)
    );
    let rules_review = [
        "selfsubjectrulesreviews.authorization.k8s.io",
        "[]",
        "[]",
        "[create]",
    ]
    .map(String::from);
    assert!(
        rows.contains(&rules_review.to_vec()),
        "{}",
        describe_output(&out)
    );
    // In another namespace the Role's rules do not apply.
    let out = c.kubectl_as("alice", &["auth", "can-i", "--list", "-n", "default"]);
    assert!(out.status.success(), "{}", describe_output(&out));
    let rows = can_i_rows(&out);
    assert!(
        !rows.contains(&widgets.to_vec()),
        "{}",
        describe_output(&out)
    );
    assert!(
        rows.contains(&rules_review.to_vec()),
        "{}",
        describe_output(&out)
    );
}

#[test]
fn escalation_is_forbidden_unless_held_or_escalate_or_bind_is_granted() {
    let c = Cluster::start();
    // Alice manages roles and bindings in `team` and may get widgets there.
    c.admin_create(
        TEAM_ROLES,
        role(
            "rbac-manager",
            json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"],
                    "verbs": ["create", "get", "update", "patch"]},
                   {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]}]),
        ),
    );
    c.admin_create(
        TEAM_BINDINGS,
        role_binding(
            "team",
            "alice-manages",
            "Role",
            "rbac-manager",
            json!([user("alice")]),
        ),
    );
    c.admin_create(
        &format!("{RBAC}/clusterroles"),
        cluster_role(
            "widget-deleter",
            json!({}),
            json!([{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "delete"]}]),
        ),
    );
    // Rules she holds she may grant.
    let getter = role(
        "getter",
        json!([{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]}]),
    );
    let r = c.send("alice", "POST", TEAM_ROLES, &getter);
    assert_eq!(r.status, 201, "{}", r.text());
    // Others not: kube's message lists the missing rules.
    let deleter = role(
        "deleter",
        json!([{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "delete", "patch"]}]),
    );
    let r = c.send("alice", "POST", TEAM_ROLES, &deleter);
    assert_eq!(
        r.json(),
        Some(forbidden(
            "roles.rbac.authorization.k8s.io \"deleter\" is forbidden: user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"example.com\"], Resources:[\"widgets\"], Verbs:[\"delete\" \"patch\"]}",
            "deleter",
            "rbac.authorization.k8s.io",
            "roles"
        )),
        "{}",
        r.text()
    );
    // Widening a role by an update is an escalation too.
    let mut widened = getter.clone();
    widened["rules"][0]["verbs"] = json!(["get", "delete"]);
    let r = c.send("alice", "PUT", &format!("{TEAM_ROLES}/getter"), &widened);
    assert_eq!(r.status, 403, "{}", r.text());
    let binding = role_binding(
        "team",
        "bob-deletes",
        "ClusterRole",
        "widget-deleter",
        json!([user("bob")]),
    );
    let r = c.send("alice", "POST", TEAM_BINDINGS, &binding);
    assert_eq!(
        r.json(),
        Some(forbidden(
            "rolebindings.rbac.authorization.k8s.io \"bob-deletes\" is forbidden: user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"example.com\"], Resources:[\"widgets\"], Verbs:[\"delete\"]}",
            "bob-deletes",
            "rbac.authorization.k8s.io",
            "rolebindings"
        )),
        "{}",
        r.text()
    );
    // A binding to a role that does not exist: the registry's 404.
    let r = c.send(
        "alice",
        "POST",
        TEAM_BINDINGS,
        &role_binding("team", "dangling", "Role", "nope", json!([user("bob")])),
    );
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(
        r.json().expect("Status")["message"],
        "roles.rbac.authorization.k8s.io \"nope\" not found"
    );
    // `escalate` on roles and `bind` on the one ClusterRole lift both checks.
    c.admin_create(
        TEAM_ROLES,
        role(
            "delegate",
            json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"]},
                   {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
                    "verbs": ["bind"], "resourceNames": ["widget-deleter"]}]),
        ),
    );
    c.admin_create(
        TEAM_BINDINGS,
        role_binding(
            "team",
            "alice-delegates",
            "Role",
            "delegate",
            json!([user("alice")]),
        ),
    );
    let r = c.send("alice", "POST", TEAM_ROLES, &deleter);
    assert_eq!(r.status, 201, "{}", r.text());
    let r = c.send("alice", "POST", TEAM_BINDINGS, &binding);
    assert_eq!(r.status, 201, "{}", r.text());
    // Bob's new binding takes effect at once.
    let r = c.send(
        "bob",
        "DELETE",
        "/apis/example.com/v1/namespaces/team/widgets/none",
        &json!({}),
    );
    assert_eq!(r.status, 404, "{}", r.text());
}

#[test]
fn aggregated_cluster_role_picks_up_a_cluster_role_labelled_later() {
    let c = Cluster::start();
    let label = "example.com/aggregate-to-widgets";
    c.admin_create(
        &format!("{RBAC}/clusterroles"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "widgets-aggregate"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]}}),
    );
    c.admin_create(
        &format!("{RBAC}/clusterrolebindings"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "alice-widgets"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "widgets-aggregate"},
            "subjects": [user("alice")]}),
    );
    let rule = json!({"verbs": ["list"], "apiGroups": ["example.com"], "resources": ["widgets"]});
    c.admin_create(
        &format!("{RBAC}/clusterroles"),
        cluster_role("widget-lister", json!({}), json!([rule])),
    );
    assert_eq!(c.get("alice", WIDGETS).status, 403);
    let mut h = Cluster::headers("admin");
    h.push(("Content-Type".into(), "application/merge-patch+json".into()));
    let patch = json!({"metadata": {"labels": {label: "true"}}});
    let r = c
        .http
        .request(
            "PATCH",
            &format!("{RBAC}/clusterroles/widget-lister"),
            &[],
            &h,
            Some(serde_json::to_vec(&patch).expect("JSON")),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.status, 200, "{}", r.text());
    let aggregated = poll(Duration::from_secs(30), || {
        let r = c.get("admin", &format!("{RBAC}/clusterroles/widgets-aggregate"));
        let obj = r.json()?;
        (obj["rules"] == json!([rule])).then_some(obj)
    });
    assert!(aggregated.is_some(), "widgets-aggregate never aggregated");
    let allowed = poll(Duration::from_secs(30), || {
        (c.get("alice", WIDGETS).status == 200).then_some(())
    });
    assert!(allowed.is_some(), "aggregated rules never took effect");
    // Deleting the source takes its rules out of the aggregate again.
    let r = c.send(
        "admin",
        "DELETE",
        &format!("{RBAC}/clusterroles/widget-lister"),
        &json!({}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let denied = poll(Duration::from_secs(30), || {
        (c.get("alice", WIDGETS).status == 403).then_some(())
    });
    assert!(
        denied.is_some(),
        "rules of a deleted role stayed aggregated"
    );
}

#[test]
fn impersonation_is_authorized_for_the_requester_then_runs_as_the_impersonated_user() {
    let c = Cluster::start();
    // The admin (system:masters) may impersonate anyone: `--as bob` runs as bob.
    let out = c.kubectl_as("admin", &["--as", "bob", "get", "secrets", "-n", "default"]);
    assert!(!out.status.success(), "{}", describe_output(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "Error from server (Forbidden): secrets is forbidden: User \"bob\" cannot list resource \"secrets\" in API group \"\" in the namespace \"default\""
    );
    let no = c.kubectl_as(
        "admin",
        &[
            "auth", "can-i", "get", "secrets", "-n", "default", "--as", "bob",
        ],
    );
    assert_eq!(String::from_utf8_lossy(&no.stdout).trim(), "no");
    let whoami = c.kubectl_as(
        "admin",
        &[
            "auth",
            "whoami",
            "-o",
            "json",
            "--as",
            "bob",
            "--as-group",
            "devs",
        ],
    );
    assert!(whoami.status.success(), "{}", describe_output(&whoami));
    let review: Value = serde_json::from_slice(&whoami.stdout).expect("JSON");
    assert_eq!(review["status"]["userInfo"]["username"], "bob");
    assert_eq!(
        review["status"]["userInfo"]["groups"],
        json!(["devs", "system:authenticated"])
    );
    c.admin_create(
        &format!("{RBAC}/namespaces/default/rolebindings"),
        role_binding(
            "default",
            "bob-view",
            "ClusterRole",
            "admin",
            json!([user("bob")]),
        ),
    );
    let yes = c.kubectl_as(
        "admin",
        &[
            "auth", "can-i", "get", "secrets", "-n", "default", "--as", "bob",
        ],
    );
    assert_eq!(String::from_utf8_lossy(&yes.stdout).trim(), "yes");

    // alice may not impersonate: kube's 403 names the identity she asked for.
    let secrets_with = |headers: &[(String, String)]| {
        c.http
            .request(
                "GET",
                "/api/v1/namespaces/default/secrets",
                &[],
                headers,
                None,
            )
            .unwrap()
    };
    let mut headers = Cluster::headers("alice");
    headers.push(("Impersonate-User".into(), "bob".into()));
    let r = secrets_with(&headers);
    assert_eq!(r.status, 403);
    assert_eq!(
        r.json().expect("JSON")["message"],
        "users \"bob\" is forbidden: User \"alice\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
    // Granted `impersonate` on users/bob (and nothing else), she may.
    c.admin_create(
        &format!("{RBAC}/clusterroles"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "impersonate-bob"},
               "rules": [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"], "resourceNames": ["bob"]}]}),
    );
    c.admin_create(
        &format!("{RBAC}/clusterrolebindings"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "alice-impersonates-bob"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "impersonate-bob"},
               "subjects": [user("alice")]}),
    );
    let r = poll(Duration::from_secs(10), || {
        let r = secrets_with(&headers);
        (r.status == 200).then_some(r)
    });
    assert!(r.is_some(), "alice could not impersonate bob once allowed");
    // A group she may not impersonate is refused; groups without a user are a 400.
    let mut with_group = headers.clone();
    with_group.push(("Impersonate-Group".into(), "system:masters".into()));
    let r = secrets_with(&with_group);
    assert_eq!(r.status, 403);
    assert_eq!(
        r.json().expect("JSON")["message"],
        "groups \"system:masters\" is forbidden: User \"alice\" cannot impersonate resource \"groups\" in API group \"\" at the cluster scope"
    );
    let mut no_user = Cluster::headers("admin");
    no_user.push(("Impersonate-Group".into(), "devs".into()));
    let r = c
        .http
        .request("GET", "/api/v1/namespaces", &[], &no_user, None)
        .unwrap();
    assert_eq!(r.status, 400);
    assert_eq!(
        r.json().expect("JSON")["message"],
        "requested [{Group  devs    }] without impersonating a user"
    );
}

/// kube's `AllowCreateOnUpdate`: a PUT of a missing Lease, Event or Role creates it
/// (201; a resourceVersion sent along is ignored), but only for a user who may also
/// `create` it; kinds without it (ConfigMaps) answer 404.
#[test]
fn put_creates_leases_events_and_roles_for_users_allowed_to_create() {
    let c = Cluster::start();
    let leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let lease = |name: &str| {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "resourceVersion": "12345"},
            "spec": {"holderIdentity": "me"}})
    };
    c.admin_create(
        &format!("{RBAC}/namespaces/default/roles"),
        role(
            "lease-updater",
            json!([{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "update"]}]),
        ),
    );
    c.admin_create(
        &format!("{RBAC}/namespaces/default/rolebindings"),
        role_binding(
            "default",
            "alice-leases",
            "Role",
            "lease-updater",
            json!([user("alice")]),
        ),
    );
    // Allowed to update but not to create: kube's 403 names the create.
    let r = c.send("alice", "PUT", &format!("{leases}/l1"), &lease("l1"));
    assert_eq!(
        r.json(),
        Some(forbidden(
            "leases.coordination.k8s.io \"l1\" is forbidden: User \"alice\" cannot create resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"default\"",
            "l1",
            "coordination.k8s.io",
            "leases"
        ))
    );
    assert_eq!(c.get("admin", &format!("{leases}/l1")).status, 404);
    let r = c.send("admin", "PUT", &format!("{leases}/l1"), &lease("l1"));
    assert_eq!(r.status, 201, "{}", r.text());
    let created = r.json().expect("JSON");
    assert_eq!(created["spec"]["holderIdentity"], "me");
    assert_ne!(created["metadata"]["resourceVersion"], "12345");
    assert!(created["metadata"]["uid"]
        .as_str()
        .is_some_and(|u| !u.is_empty()));
    // Now it exists: alice may update it (200), with no resourceVersion at all.
    let mut update = lease("l1");
    update["metadata"]
        .as_object_mut()
        .map(|m| m.remove("resourceVersion"));
    update["spec"]["holderIdentity"] = json!("alice");
    let r = c.send("alice", "PUT", &format!("{leases}/l1"), &update);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json().expect("JSON")["spec"]["holderIdentity"], "alice");

    let r = c.send(
        "admin",
        "PUT",
        "/api/v1/namespaces/default/events/e1",
        &json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "reason": "Tested", "message": "m"}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = c.send(
        "admin",
        "PUT",
        &format!("{RBAC}/clusterroles/put-made"),
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "put-made"}, "rules": []}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        c.get("admin", &format!("{RBAC}/clusterroles/put-made"))
            .status,
        200
    );

    let r = c.send(
        "admin",
        "PUT",
        "/api/v1/namespaces/default/configmaps/nope",
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nope"}}),
    );
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(
        r.json().expect("JSON")["message"],
        "configmaps \"nope\" not found"
    );
}
