//! The `crd-apiserver` command: flags → `Config` → `Server`.

use clap::Parser;
use crd_apiserver::{Config, Server};
use std::io::{IsTerminal, Write};
use std::net::IpAddr;
use std::path::PathBuf;

/// A kube-apiserver for CustomResourceDefinitions and custom resources.
#[derive(Parser, Debug)]
#[command(name = "crd-apiserver", version, about)]
struct Flags {
    /// Address to listen on.
    #[arg(long = "bind-address", default_value = "127.0.0.1")]
    bind_address: IpAddr,
    /// Port to listen on (0 picks a free port).
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Write a kubeconfig for this server to PATH.
    #[arg(long = "kubeconfig-out", value_name = "PATH")]
    kubeconfig_out: Option<PathBuf>,
    /// Apply every YAML/JSON manifest in DIR at start-up (repeatable; CRDs first).
    #[arg(long = "load", value_name = "DIR")]
    load: Vec<PathBuf>,
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
    /// Interval of compaction requests to etcd, in seconds (0 disables compaction).
    #[arg(
        long = "etcd-compaction-interval",
        value_name = "SECONDS",
        default_value_t = 300
    )]
    etcd_compaction_interval: u64,
}

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CRD_APISERVER_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let flags = Flags::parse();
    let config = Config {
        bind_address: flags.bind_address,
        port: flags.port,
        kubeconfig_out: flags.kubeconfig_out,
        load: flags.load,
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
        etcd_compaction_interval: std::time::Duration::from_secs(flags.etcd_compaction_interval),
    };
    let server = match Server::start(config).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("crd-apiserver: {e}");
            std::process::exit(1);
        }
    };
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "crd-apiserver ready at {}", server.url());
        let _ = out.flush();
    }
    wait_for_signal().await;
    tracing::info!("shutting down");
    server.shutdown().await;
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
