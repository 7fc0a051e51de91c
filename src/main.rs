//! The `crd-apiserver` command: flags → `Config` → `Server`.

use clap::{CommandFactory, Parser};
use crd_apiserver::{Config, Server};
use std::io::{IsTerminal, Write};
use std::net::IpAddr;
use std::path::PathBuf;

/// mimalloc: requests allocate many small values, and it frees them faster than
/// glibc's malloc (`benches/wire.rs`, which uses it too, measures the difference).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How log lines are written to stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// A kube-apiserver for CustomResourceDefinitions and custom resources.
#[derive(Parser, Debug)]
#[command(name = "crd-apiserver", about)]
struct Flags {
    /// Log line format (the level comes from CRD_APISERVER_LOG or RUST_LOG).
    #[arg(long = "log-format", value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Address to listen on.
    #[arg(long = "bind-address", default_value = "127.0.0.1")]
    bind_address: IpAddr,
    /// Plain-HTTP port (0 picks a free port); 8080 unless --secure-port is given.
    /// Plain HTTP is refused on non-loopback addresses (see --insecure-allow-remote-http).
    #[arg(long)]
    port: Option<u16>,
    /// Serve plain HTTP on a non-loopback --bind-address too (unencrypted, and requests
    /// without credentials act as a superuser there).
    #[arg(long = "insecure-allow-remote-http")]
    insecure_allow_remote_http: bool,
    /// Serve HTTPS on this port (0 picks a free port).
    #[arg(long = "secure-port", value_name = "PORT")]
    secure_port: Option<u16>,
    /// PEM serving certificate (chain, leaf first); without it a self-signed CA and
    /// serving certificate are generated.
    #[arg(long = "tls-cert-file", value_name = "PATH")]
    tls_cert_file: Option<PathBuf>,
    /// PEM key of --tls-cert-file.
    #[arg(long = "tls-private-key-file", value_name = "PATH")]
    tls_private_key_file: Option<PathBuf>,
    /// Keep a generated serving pair here (apiserver.crt, apiserver.key) and reuse it.
    #[arg(long = "cert-dir", value_name = "DIR")]
    cert_dir: Option<PathBuf>,
    /// Static bearer tokens: CSV of token,user,uid,"group1,group2".
    #[arg(long = "token-auth-file", value_name = "PATH")]
    token_auth_file: Option<PathBuf>,
    /// CA bundle for client certificates (CN = user name, O = groups).
    #[arg(long = "client-ca-file", value_name = "PATH")]
    client_ca_file: Option<PathBuf>,
    /// CA bundle of front-proxy client certificates that vouch for --requestheader-username-headers.
    #[arg(long = "requestheader-client-ca-file", value_name = "PATH")]
    requestheader_client_ca_file: Option<PathBuf>,
    /// Common names allowed on front-proxy certificates (comma-separated; empty: any).
    #[arg(long = "requestheader-allowed-names", value_delimiter = ',')]
    requestheader_allowed_names: Vec<String>,
    /// Headers naming the user (comma-separated; the first non-empty wins).
    #[arg(
        long = "requestheader-username-headers",
        value_delimiter = ',',
        default_value = "X-Remote-User"
    )]
    requestheader_username_headers: Vec<String>,
    /// Headers listing the user's groups (comma-separated).
    #[arg(
        long = "requestheader-group-headers",
        value_delimiter = ',',
        default_value = "X-Remote-Group"
    )]
    requestheader_group_headers: Vec<String>,
    /// Headers naming the user's uid (comma-separated; kube's `X-Remote-Uid`): none by
    /// default, as kube-apiserver.
    #[arg(long = "requestheader-uid-headers", value_delimiter = ',')]
    requestheader_uid_headers: Vec<String>,
    /// Prefixes of headers carrying extra user attributes (comma-separated).
    #[arg(
        long = "requestheader-extra-headers-prefix",
        value_delimiter = ',',
        default_value = "X-Remote-Extra-"
    )]
    requestheader_extra_headers_prefix: Vec<String>,
    /// Let requests without credentials in as system:anonymous (HTTPS).
    #[arg(long = "anonymous-auth", num_args = 0..=1, default_value_t = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    anonymous_auth: bool,
    /// Authorizers, comma-separated, asked in order: AlwaysAllow, AlwaysDeny, RBAC.
    /// (Default AlwaysAllow; refused beside --requestheader-client-ca-file unless given.)
    #[arg(long = "authorization-mode", value_delimiter = ',')]
    authorization_mode: Option<Vec<String>>,
    /// The core apiserver (an aggregated server's: kubeconfig of the kube-apiserver in
    /// front): bearer tokens go to its TokenReview, and the client CA and front-proxy
    /// settings come from its kube-system/extension-apiserver-authentication ConfigMap.
    #[arg(long = "authentication-kubeconfig", value_name = "PATH")]
    authentication_kubeconfig: Option<PathBuf>,
    /// How long the core's TokenReview answers are kept (a Go duration).
    #[arg(long = "authentication-token-webhook-cache-ttl", default_value = "10s", value_parser = parse_duration)]
    authentication_token_webhook_cache_ttl: std::time::Duration,
    /// Do not read the core's extension-apiserver-authentication ConfigMap.
    #[arg(long = "authentication-skip-lookup", num_args = 0..=1, default_value_t = false, default_missing_value = "true", action = clap::ArgAction::Set)]
    authentication_skip_lookup: bool,
    /// The core apiserver authorizes every request (SubjectAccessReview), instead of
    /// --authorization-mode.
    #[arg(long = "authorization-kubeconfig", value_name = "PATH")]
    authorization_kubeconfig: Option<PathBuf>,
    /// How long the core's "allowed" answers are kept (a Go duration).
    #[arg(long = "authorization-webhook-cache-authorized-ttl", default_value = "10s", value_parser = parse_duration)]
    authorization_webhook_cache_authorized_ttl: std::time::Duration,
    /// How long the core's other answers are kept (a Go duration).
    #[arg(long = "authorization-webhook-cache-unauthorized-ttl", default_value = "10s", value_parser = parse_duration)]
    authorization_webhook_cache_unauthorized_ttl: std::time::Duration,
    /// Paths allowed without asking the core (a trailing * matches a prefix).
    #[arg(
        long = "authorization-always-allow-paths",
        value_delimiter = ',',
        default_value = "/healthz,/readyz,/livez"
    )]
    authorization_always_allow_paths: Vec<String>,
    /// The core apiserver whose namespaces (watched) and admission configuration
    /// (ValidatingAdmissionPolicies, bindings, their params, webhook configurations)
    /// this server follows, as an aggregated server behind it.
    #[arg(long = "kubeconfig", value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Time limit of non-long-running requests (a Go duration, e.g. 60s, 1m30s).
    #[arg(long = "request-timeout", default_value = "1m0s", value_parser = parse_duration)]
    request_timeout: std::time::Duration,
    /// Issuer of service account tokens (repeatable: the first is the `iss` of new
    /// tokens, each is accepted; default https://kubernetes.default.svc.cluster.local).
    #[arg(long = "service-account-issuer", action = clap::ArgAction::Append)]
    service_account_issuer: Vec<String>,
    /// Audiences service account tokens must carry to authenticate (comma-separated;
    /// default: the issuer).
    #[arg(long = "api-audiences", value_delimiter = ',')]
    api_audiences: Vec<String>,
    /// PEM RSA or ECDSA (P-256, P-384) private key signing service account tokens
    /// (default: a P-256 key generated at start).
    #[arg(long = "service-account-signing-key-file", value_name = "PATH")]
    service_account_signing_key_file: Option<PathBuf>,
    /// PEM public keys, certificates or private keys verifying service account tokens
    /// (repeatable; default: the signing key).
    #[arg(long = "service-account-key-file", value_name = "PATH", action = clap::ArgAction::Append)]
    service_account_key_file: Vec<PathBuf>,
    /// How long Events are kept after their last write (a Go duration; 0 keeps them).
    #[arg(long = "event-ttl", default_value = "1h0m0s", value_parser = parse_duration)]
    event_ttl: std::time::Duration,
    /// Service cluster IPs are allocated from this CIDR (one IPv4 range).
    #[arg(long = "service-cluster-ip-range", value_name = "CIDR", default_value = crd_apiserver::service_alloc::DEFAULT_SERVICE_CIDR)]
    service_cluster_ip_range: String,
    /// Service node ports are allocated from this range (`min-max` or `min+offset`).
    #[arg(long = "service-node-port-range", value_name = "RANGE", default_value = crd_apiserver::service_alloc::DEFAULT_NODE_PORT_RANGE)]
    service_node_port_range: String,
    /// How many revisions the embedded store keeps for watches to resume from (kube's
    /// watch cache window); older resourceVersions get 410 Expired. etcd keeps its own.
    #[arg(long = "watch-history", value_name = "REVISIONS", default_value_t = crd_apiserver::storage::memory::DEFAULT_HISTORY)]
    watch_history: usize,
    /// Bytes of CRD schema JSON whose compiled schemas (validators, CEL programs) are
    /// kept; past it the least recently used are dropped and compiled again on use.
    #[arg(long = "compiled-schemas-budget", value_name = "BYTES", default_value_t = crd_apiserver::registry::catalog::on_demand::DEFAULT_BUDGET)]
    compiled_schemas_budget: usize,
    /// kube's admission plugins to run besides the default ones (comma-separated
    /// names, as kube-apiserver's flag).
    #[arg(long = "enable-admission-plugins", value_delimiter = ',')]
    enable_admission_plugins: Vec<String>,
    /// Default admission plugins to turn off (comma-separated names, as
    /// kube-apiserver's flag; envtest passes `ServiceAccount`).
    #[arg(long = "disable-admission-plugins", value_delimiter = ',')]
    disable_admission_plugins: Vec<String>,
    /// The address discovery and the `kubernetes` Service's endpoints advertise
    /// (default: the address served on).
    #[arg(long = "advertise-address", value_name = "IP")]
    advertise_address: Option<IpAddr>,
    /// If true, allow privileged containers.
    #[arg(long = "allow-privileged", num_args = 0..=1, default_value_t = false, default_missing_value = "true", action = clap::ArgAction::Set)]
    allow_privileged: bool,
    /// Read-only requests in flight at most (0: no limit); one more gets kube's 429.
    #[arg(
        long = "max-requests-inflight",
        default_value_t = 400,
        allow_negative_numbers = true
    )]
    max_requests_inflight: i64,
    /// Mutating requests in flight at most (0: no limit); one more gets kube's 429.
    #[arg(
        long = "max-mutating-requests-inflight",
        default_value_t = 200,
        allow_negative_numbers = true
    )]
    max_mutating_requests_inflight: i64,
    /// kube's feature gates (`[kube:]Name=bool,...`, repeatable): checked as kube does.
    #[arg(long = "feature-gates", action = clap::ArgAction::Append)]
    feature_gates: Vec<String>,
    /// Group/versions to switch (`api/all=true`, `GROUP/VERSION=false`, ...; repeatable):
    /// checked as kube does.
    #[arg(long = "runtime-config", action = clap::ArgAction::Append)]
    runtime_config: Vec<String>,
    /// The opt-in cluster: kube-controller-manager's controllers to run over this
    /// server's API (`*` for all, `NAME` or `-NAME`; kube's names or aliases, e.g.
    /// `deployment`, `replicaset`; repeatable). Default: none, as kube-apiserver alone.
    #[arg(long = "controllers", value_name = "LIST", action = clap::ArgAction::Append)]
    controllers: Vec<String>,
    /// Keep N simulated Ready Nodes, with a scheduler binding pods to them and kubelets
    /// that run pods without containers.
    #[arg(long = "simulate-nodes", value_name = "N", default_value_t = 0)]
    simulate_nodes: u32,
    /// Write a kubeconfig for this server to PATH.
    #[arg(long = "kubeconfig-out", value_name = "PATH")]
    kubeconfig_out: Option<PathBuf>,
    /// Apply every YAML/JSON manifest in DIR at start-up (repeatable; CRDs first).
    #[arg(long = "load", value_name = "DIR")]
    load: Vec<PathBuf>,
    /// Start from a snapshot file written by --snapshot-out (embedded store only); it
    /// is kept as the snapshot `initial` (POST /admin/snapshots/initial/restore).
    #[arg(long = "snapshot-in", value_name = "FILE")]
    snapshot_in: Option<PathBuf>,
    /// Once started and --load applied, write a snapshot of the store to FILE and exit
    /// (load a suite's fixtures once; start every server from them with --snapshot-in).
    #[arg(long = "snapshot-out", value_name = "FILE")]
    snapshot_out: Option<PathBuf>,
    /// Comma-separated etcd endpoints; without it objects live in the embedded store.
    #[arg(long = "etcd-servers", value_delimiter = ',')]
    etcd_servers: Vec<String>,
    /// Key prefix in etcd.
    #[arg(long = "etcd-prefix", default_value = "/registry")]
    etcd_prefix: String,
    /// Log what each pipeline stage changed on every write.
    #[arg(long = "log-pipeline")]
    log_pipeline: bool,
    /// SSL Certificate Authority file used to secure etcd communication.
    #[arg(long = "etcd-cafile", value_name = "PATH")]
    etcd_cafile: Option<PathBuf>,
    /// SSL certification file used to secure etcd communication.
    #[arg(long = "etcd-certfile", value_name = "PATH")]
    etcd_certfile: Option<PathBuf>,
    /// SSL key file used to secure etcd communication.
    #[arg(long = "etcd-keyfile", value_name = "PATH")]
    etcd_keyfile: Option<PathBuf>,
    /// Interval of compaction requests to etcd (a Go duration; 0 disables compaction).
    #[arg(long = "etcd-compaction-interval", default_value = "5m0s", value_parser = parse_duration)]
    etcd_compaction_interval: std::time::Duration,
    /// Inject a fault, e.g. 'verb=update,resource=widgets,error=409,rate=0.5' (repeatable;
    /// grammar in docs/testing-your-controller.md).
    #[arg(long = "fault", value_name = "SPEC", value_parser = crd_apiserver::fault::FaultRule::parse)]
    fault: Vec<crd_apiserver::fault::FaultRule>,
    /// Reach the webhook or APIService backend Service NAMESPACE/NAME (port PORT,
    /// default 443) at HOST:PORT (repeatable); TLS still verifies NAME.NAMESPACE.svc.
    #[arg(
        long = "webhook-service",
        value_name = "NAMESPACE/NAME[:PORT]=HOST:PORT",
        value_parser = crd_apiserver::webhook::client::ServiceMapping::parse
    )]
    webhook_service: Vec<crd_apiserver::webhook::client::ServiceMapping>,
    /// Client certificate the aggregator presents to APIService backends (PEM).
    #[arg(long = "proxy-client-cert-file", value_name = "PATH")]
    proxy_client_cert_file: Option<PathBuf>,
    /// Key of --proxy-client-cert-file (PEM).
    #[arg(long = "proxy-client-key-file", value_name = "PATH")]
    proxy_client_key_file: Option<PathBuf>,
    /// Reach APIService backends at an endpoint of their Service's EndpointSlices
    /// (loopback addresses included) instead of its cluster IP.
    #[arg(long = "enable-aggregator-routing", num_args = 0..=1, default_value_t = false, default_missing_value = "true", action = clap::ArgAction::Set)]
    enable_aggregator_routing: bool,
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let (flags, ignored) = command_line();
    // CRD_APISERVER_LOG, else RUST_LOG, else info (a line per request at debug, as
    // kube-apiserver from -v=3: `crd_apiserver::request=debug`).
    let filter = tracing_subscriber::EnvFilter::try_from_env("CRD_APISERVER_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter);
    match flags.log_format {
        LogFormat::Text => logs.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => logs.json().with_ansi(false).init(),
    }
    if !ignored.is_empty() {
        let names: Vec<String> = ignored.iter().map(|n| format!("--{n}")).collect();
        tracing::warn!(
            "kube-apiserver flags accepted but ignored (they do not apply here): {}",
            names.join(" ")
        );
    }
    let secure = flags
        .secure_port
        .map(|port| crd_apiserver::tls::SecureServing {
            port,
            cert_file: flags.tls_cert_file,
            key_file: flags.tls_private_key_file,
            cert_dir: flags.cert_dir,
        });
    let auth = crd_apiserver::auth::AuthConfig {
        token_auth_file: flags.token_auth_file,
        client_ca_file: flags.client_ca_file,
        requestheader_client_ca_file: flags.requestheader_client_ca_file,
        requestheader_allowed_names: non_empty(flags.requestheader_allowed_names),
        requestheader_username_headers: non_empty(flags.requestheader_username_headers),
        requestheader_group_headers: non_empty(flags.requestheader_group_headers),
        requestheader_uid_headers: non_empty(flags.requestheader_uid_headers),
        requestheader_extra_headers_prefix: non_empty(flags.requestheader_extra_headers_prefix),
        anonymous_auth: flags.anonymous_auth,
        authorization_mode_given: flags.authorization_mode.is_some(),
        authentication_kubeconfig: flags.authentication_kubeconfig,
        authentication_token_cache_ttl: flags.authentication_token_webhook_cache_ttl,
        authentication_skip_lookup: flags.authentication_skip_lookup,
        authorization_kubeconfig: flags.authorization_kubeconfig,
        authorization_allowed_ttl: flags.authorization_webhook_cache_authorized_ttl,
        authorization_denied_ttl: flags.authorization_webhook_cache_unauthorized_ttl,
        authorization_always_allow_paths: non_empty(flags.authorization_always_allow_paths),
        authorization_modes: match crd_apiserver::auth::authz::Mode::parse(
            &flags
                .authorization_mode
                .unwrap_or_else(|| vec!["AlwaysAllow".into()])
                .join(","),
        ) {
            Ok(modes) => modes,
            Err(e) => {
                eprintln!("crd-apiserver: {e}");
                std::process::exit(1);
            }
        },
        service_account_issuers: flags.service_account_issuer,
        api_audiences: non_empty(flags.api_audiences),
        service_account_signing_key_file: flags.service_account_signing_key_file,
        service_account_key_files: flags.service_account_key_file,
    };
    let admission_plugins = match apimachinery::admission_plugins::Enabled::from_flags(
        &non_empty(flags.enable_admission_plugins),
        &non_empty(flags.disable_admission_plugins),
    ) {
        Ok(on) => on,
        Err(errs) => {
            for e in errs {
                eprintln!("crd-apiserver: {e}");
            }
            std::process::exit(1);
        }
    };
    let (_feature_gates, unrecognized) =
        match apimachinery::feature_gates::FeatureGates::from_flags(&flags.feature_gates) {
            Ok(parsed) => parsed,
            Err(e) => fail(&e.to_string()),
        };
    for name in unrecognized {
        tracing::warn!("unrecognized feature gate: {name}");
    }
    let runtime_config =
        match apimachinery::runtime_config::RuntimeConfig::from_flags(&flags.runtime_config) {
            Ok(config) => config,
            Err(e) => fail(&e.to_string()),
        };
    let controllers =
        match apimachinery::controller_names::Controllers::from_flags(&flags.controllers) {
            Ok(c) => c,
            Err(e) => fail(&e.to_string()),
        };
    let flags_snapshot_out = flags.snapshot_out.clone();
    let config = Config {
        cluster: crd_apiserver::cluster::ClusterOptions {
            controllers,
            simulated_nodes: flags.simulate_nodes,
        },
        allow_privileged: flags.allow_privileged,
        runtime_config,
        advertise_address: flags.advertise_address,
        max_requests_inflight: usize::try_from(flags.max_requests_inflight)
            .unwrap_or_else(|_| fail("--max-requests-inflight can not be negative value")),
        max_mutating_requests_inflight: usize::try_from(flags.max_mutating_requests_inflight)
            .unwrap_or_else(|_| fail("--max-mutating-requests-inflight can not be negative value")),
        admission_plugins,
        bind_address: flags.bind_address,
        port: flags.port.unwrap_or(8080),
        serve_http: flags.port.is_some() || secure.is_none(),
        insecure_allow_remote_http: flags.insecure_allow_remote_http,
        secure,
        auth,
        request_timeout: flags.request_timeout,
        event_ttl: flags.event_ttl,
        watch_history: flags.watch_history,
        compiled_schemas_budget: flags.compiled_schemas_budget,
        service_cluster_ip_range: flags.service_cluster_ip_range,
        service_node_port_range: flags.service_node_port_range,
        kubeconfig_out: flags.kubeconfig_out,
        load: flags.load,
        snapshot_in: flags.snapshot_in,
        snapshot_out: flags.snapshot_out.clone(),
        etcd_servers: flags
            .etcd_servers
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect(),
        etcd_prefix: flags.etcd_prefix,
        log_pipeline: flags.log_pipeline,
        etcd_cafile: flags.etcd_cafile,
        etcd_certfile: flags.etcd_certfile,
        etcd_keyfile: flags.etcd_keyfile,
        etcd_compaction_interval: flags.etcd_compaction_interval,
        faults: flags.fault,
        webhook_services: flags.webhook_service,
        core_kubeconfig: flags.kubeconfig,
        proxy_client_cert_file: flags.proxy_client_cert_file,
        proxy_client_key_file: flags.proxy_client_key_file,
        enable_aggregator_routing: flags.enable_aggregator_routing,
    };
    let server = match Server::start(config).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("crd-apiserver: {e}");
            std::process::exit(1);
        }
    };
    if let Some(path) = &flags_snapshot_out {
        println!("crd-apiserver: snapshot written to {}", path.display());
        server.shutdown().await;
        return;
    }
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "crd-apiserver ready at {}", server.url());
        let _ = out.flush();
    }
    let plain = match server.http_url() {
        Some(http) => Some(http),
        None if server.url().starts_with("http://") => Some(server.url()),
        None => None,
    };
    if let Some(http) = plain {
        tracing::warn!(
            "serving plain HTTP at {http}: it is unauthenticated (requests without credentials act as system:unsecured, in system:masters); any local process can use it as an administrator"
        );
    }
    wait_for_signal().await;
    tracing::info!("shutting down");
    server.shutdown().await;
}

/// Reads the command line as kube-apiserver does (its help, version, errors and every
/// flag it accepts); the flags implemented here go to clap. Returns them and the kube
/// flags given that do not apply here.
fn command_line() -> (Flags, Vec<String>) {
    use apimachinery::command_line::{classify, FlagTable, Invocation, OwnFlag};
    let table = FlagTable::kube_apiserver();
    let command = Flags::command();
    let own: Vec<OwnFlag> = command
        .get_arguments()
        .filter_map(|a| {
            Some(OwnFlag {
                name: a.get_long()?.to_string(),
                takes_value: a.get_action().takes_values(),
            })
        })
        .collect();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let run = match classify(&args, &table, &own) {
        Ok(Invocation::Run(run)) => run,
        Ok(Invocation::Help) => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(apimachinery::command_line::KUBE_APISERVER_HELP.as_bytes());
            let _ = out.write_all(own_flags_help(&command, &table).as_bytes());
            let _ = out.flush();
            std::process::exit(0);
        }
        Ok(Invocation::Version) => {
            println!("Kubernetes {}", apimachinery::command_line::KUBE_VERSION);
            std::process::exit(0);
        }
        Ok(Invocation::VersionRaw) => {
            println!("{}", apimachinery::command_line::version_raw());
            std::process::exit(0);
        }
        Err(e) => {
            eprintln!("Error: {e}");
            std::process::exit(1);
        }
    };
    let flags =
        Flags::parse_from(std::iter::once("crd-apiserver".to_string()).chain(run.forwarded));
    (flags, run.ignored)
}

/// The `--help` section of the flags that are ours, not kube-apiserver's, after kube's.
fn own_flags_help(
    command: &clap::Command,
    table: &apimachinery::command_line::FlagTable,
) -> String {
    let rows: Vec<(String, String)> = command
        .get_arguments()
        .filter_map(|a| {
            let name = a.get_long()?;
            if table.get(name).is_some() || name == "help" {
                return None;
            }
            let value = match (a.get_action().takes_values(), a.get_value_names()) {
                (false, _) => String::new(),
                (true, Some([v, ..])) => format!(" {v}"),
                (true, _) => " string".to_string(),
            };
            let help = a.get_help().map(|h| h.to_string()).unwrap_or_default();
            Some((format!("      --{name}{value}"), help.replace('\n', " ")))
        })
        .collect();
    let width = rows.iter().map(|(f, _)| f.len()).max().unwrap_or(0);
    let mut out = String::from("\ncrd-apiserver flags (not kube-apiserver's):\n\n");
    for (flag, help) in rows {
        out.push_str(&format!("{flag:width$}   {help}\n"));
    }
    out
}

/// A Go duration flag (`time.ParseDuration`).
fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    crd_apiserver::duration::go_parse_duration(s)
        .filter(|n| *n >= 0)
        .map(|n| std::time::Duration::from_nanos(n as u64))
        .ok_or_else(|| format!("time: invalid duration \"{s}\""))
}

/// Stop the start with `message`, as kube-apiserver stops on a flag it refuses.
fn fail(message: &str) -> ! {
    eprintln!("crd-apiserver: {message}");
    std::process::exit(1);
}

fn non_empty(v: Vec<String>) -> Vec<String> {
    v.into_iter().filter(|s| !s.is_empty()).collect()
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                return;
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
