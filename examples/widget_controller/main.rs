//! An example controller: Widgets (`examples/widget_controller/crd.yaml`) whose
//! `status.replicas` follows `spec.replicas`.
//!
//! Against crd-apiserver:
//!
//! ```sh
//! cargo run -- --port 8080 --kubeconfig-out /tmp/kubeconfig &
//! KUBECONFIG=/tmp/kubeconfig cargo run --example widget_controller
//! ```
//!
//! It installs its CRD (server-side apply) and reconciles widgets until Ctrl-C. Its
//! test, against the in-process harness, is in `integration/harness.rs`.

mod reconcile;

use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};

/// Create or update the Widget CRD.
async fn install_crd(client: &kube::Client) -> Result<(), Box<dyn std::error::Error>> {
    let crd: DynamicObject = serde_norway::from_str(reconcile::CRD)?;
    let resource = ApiResource {
        group: "apiextensions.k8s.io".into(),
        version: "v1".into(),
        api_version: "apiextensions.k8s.io/v1".into(),
        kind: "CustomResourceDefinition".into(),
        plural: "customresourcedefinitions".into(),
    };
    let crds: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    let name = crd.metadata.name.clone().unwrap_or_default();
    crds.patch(
        &name,
        &PatchParams::apply(reconcile::MANAGER),
        &Patch::Apply(&crd),
    )
    .await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let client = kube::Client::try_default().await?;
    install_crd(&client).await?;
    tracing::info!("widget controller running; Ctrl-C stops it");
    reconcile::run(client, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await;
    Ok(())
}
