//! Non-resource endpoints: version, health checks, discovery (legacy and aggregated).

use crate::aggregator::discovery::{merge_aggregated, merge_group, merge_group_list};
use crate::aggregator::Backend;
use crate::apiserver::ApiServer;
use crate::http::negotiate::{DiscoveryVersion, Output};
use crate::http::response::{self, Body, Reply};
use crate::http::ApiRequest;
use crate::registry::discovery;
use crate::status::Status;
use http::{header, Response, StatusCode};
use serde_json::{json, Value};
use std::sync::Arc;

/// The Kubernetes version whose behaviour this server follows.
pub const KUBE_VERSION: (&str, &str) = ("1", "36");

/// `/version`.
pub fn version() -> Value {
    json!({
        "major": KUBE_VERSION.0,
        "minor": KUBE_VERSION.1,
        "emulationMajor": KUBE_VERSION.0,
        "emulationMinor": KUBE_VERSION.1,
        "minCompatibilityMajor": KUBE_VERSION.0,
        "minCompatibilityMinor": "35",
        "gitVersion": format!("v{}.{}.0-crd-apiserver.{}", KUBE_VERSION.0, KUBE_VERSION.1, env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, go_arch()),
    })
}

fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

async fn health(api: &ApiServer, req: &ApiRequest, which: &str) -> Response<Body> {
    let storage_ok = which == "livez" || (api.is_bootstrapped() && api.store.ready().await);
    let verbose = req.query.contains_key("verbose");
    let checks: Vec<(&str, bool)> = match which {
        "livez" => vec![("ping", true), ("log", true)],
        _ => vec![
            ("ping", true),
            ("log", true),
            ("etcd", storage_ok),
            ("informer-sync", true),
        ],
    };
    let ok = checks.iter().all(|(_, ok)| *ok);
    let code = if ok {
        StatusCode::OK
    } else {
        StatusCode::INTERNAL_SERVER_ERROR
    };
    if !verbose && ok {
        return response::text(code, "ok");
    }
    let mut body = String::new();
    for (name, ok) in &checks {
        if *ok {
            body.push_str(&format!("[+]{name} ok\n"));
        } else {
            body.push_str(&format!("[-]{name} failed: reason withheld\n"));
        }
    }
    // Not a failure (the server serves everything else), but said where operators look.
    if which == "readyz" {
        for (key, error) in api.undecodable() {
            body.push_str(&format!(
                "[+]undecodable-object ok: skipped at start-up: {key}: {error}\n"
            ));
        }
    }
    if ok {
        body.push_str(&format!("{which} check passed\n"));
    } else {
        body.push_str(&format!("{which} check failed\n"));
    }
    response::text(code, body)
}

/// Serve a non-resource path.
pub async fn non_resource(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
) -> Result<Response<Body>, Status> {
    let parts: Vec<&str> = req.info.segments().collect();
    let crds = api.catalog.infos();
    let served = &api.options.served;
    let backends = backends(api);
    // go-restful's 404 below `/api` and the built-in groups, the NotFound handler's
    // plain text elsewhere (CRD groups have no web service of their own).
    let not_found = || match parts.as_slice() {
        ["api", ..] => Status::route_not_found(),
        ["apis", group, _, ..] if crate::registry::builtin::is_builtin_group(group) => {
            Status::route_not_found()
        }
        _ => Status::page_not_found(),
    };
    let body = match parts.as_slice() {
        ["version"] => version(),
        ["healthz"] | ["livez"] | ["readyz"] => return Ok(health(api, req, parts[0]).await),
        ["healthz", _] | ["livez", _] | ["readyz", _] => {
            return Ok(health(api, req, parts[0]).await)
        }
        ["openapi", "v3", "apis", group, version] => match api.aggregator.claims(group, version) {
            Some(backend) => return Ok(super::openapi::from_backend(api, req, &backend).await),
            None => return super::openapi::serve(api, req, &parts[1..]),
        },
        ["openapi", ..] => return super::openapi::serve(api, req, &parts[1..]),
        ["debug", "crd-apiserver", "clock"] => clock(api, req)?,
        ["admin", "snapshots", rest @ ..] => return super::admin::snapshots(api, req, rest).await,
        ["api"] => match req.output {
            Output::AggregatedDiscovery(v) => {
                return Ok(aggregated(discovery::aggregated_core(served), v))
            }
            _ => discovery::api_versions(&api.options.advertise_address),
        },
        ["api", "v1"] => discovery::core_v1_resources(served),
        ["apis"] => match req.output {
            Output::AggregatedDiscovery(v) => {
                let doc = discovery::aggregated_apis(served, &crds);
                return Ok(aggregated(merge_aggregated(doc, &backends), v));
            }
            _ => merge_group_list(discovery::api_group_list(served, &crds), &backends),
        },
        ["apis", group] => {
            merge_group(discovery::api_group(served, group, &crds), group, &backends)
                .ok_or_else(not_found)?
        }
        ["apis", group, version] => {
            discovery::api_resource_list(served, group, version, &crds).ok_or_else(not_found)?
        }
        [] => json!({"paths": root_paths(served, &crds, &backends)}),
        _ => return Err(not_found()),
    };
    let output = match req.output {
        Output::Yaml => Output::Yaml,
        _ => Output::Json,
    };
    Ok(response::reply(Reply::ok(body), output))
}

/// `/debug/crd-apiserver/clock`: the clock the opt-in cluster's timers read; `POST`
/// with `?advance=<Go duration>` moves it forward.
fn clock(api: &ApiServer, req: &ApiRequest) -> Result<Value, Status> {
    if req.method == http::Method::POST {
        let advance = req.param("advance").unwrap_or("");
        let nanos = crate::duration::go_parse_duration(advance)
            .filter(|n| *n >= 0)
            .ok_or_else(|| {
                Status::bad_request(format!(
                    "advance: time: invalid duration {}",
                    crate::field::go_quote(advance)
                ))
            })?;
        api.clock
            .advance(std::time::Duration::from_nanos(nanos.unsigned_abs()));
    } else if req.method != http::Method::GET {
        return Err(Status::method_not_allowed(format!(
            "{} is not supported on the clock",
            req.method
        )));
    }
    Ok(json!({
        "now": api.clock.now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        "offsetSeconds": api.clock.offset().num_seconds(),
    }))
}

fn aggregated(mut doc: Value, v: DiscoveryVersion) -> Response<Body> {
    let (api_version, ct) = match v {
        DiscoveryVersion::V2 => (
            "apidiscovery.k8s.io/v2",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        ),
        DiscoveryVersion::V2Beta1 => (
            "apidiscovery.k8s.io/v2beta1",
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList",
        ),
    };
    if let Some(m) = doc.as_object_mut() {
        m.insert("apiVersion".into(), json!(api_version));
    }
    let mut resp = response::reply(Reply::ok(doc), Output::Json);
    if let Ok(v) = header::HeaderValue::from_str(ct) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    resp
}

/// The remote APIServices of the aggregator's last pass, by name.
fn backends(api: &ApiServer) -> Vec<Arc<Backend>> {
    let mut all: Vec<Arc<Backend>> = api.aggregator.backends().values().cloned().collect();
    all.sort_by(|a, b| a.name.cmp(&b.name));
    all
}

fn root_paths(
    served: &crate::registry::builtin::Served,
    crds: &[Arc<crate::registry::crd::CrdInfo>],
    backends: &[Arc<Backend>],
) -> Vec<String> {
    let mut paths = vec![
        "/api".to_string(),
        "/api/v1".to_string(),
        "/apis".to_string(),
        "/healthz".to_string(),
        "/livez".to_string(),
        "/openapi/v2".to_string(),
        "/openapi/v3".to_string(),
        "/readyz".to_string(),
        "/version".to_string(),
    ];
    for (group, version) in served.group_versions() {
        paths.push(format!("/apis/{group}"));
        paths.push(format!("/apis/{group}/{version}"));
    }
    for c in crds {
        paths.push(format!("/apis/{}", c.group));
        for v in &c.versions {
            if v.served {
                paths.push(format!("/apis/{}/{}", c.group, v.name));
            }
        }
    }
    for b in backends {
        paths.push(format!("/apis/{}", b.group));
        paths.push(format!("/apis/{}/{}", b.group, b.version));
    }
    paths.sort();
    paths.dedup();
    paths
}
