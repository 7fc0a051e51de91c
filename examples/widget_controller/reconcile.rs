//! The example Widget controller's reconciler: `status.replicas` follows
//! `spec.replicas`, with `status.observedGeneration` and `status.phase: Ready`.
//!
//! A kube-rs `Controller` over a custom resource typed with `kube::core::object::Object`
//! (no derive macros needed). `integration/harness.rs` runs it against the harness,
//! faults included.

use futures::StreamExt;
use kube::api::{Api, ApiResource, Patch, PatchParams};
use kube::core::object::Object;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The Widget CRD (`examples/widget_controller/crd.yaml`).
pub const CRD: &str = include_str!("crd.yaml");

/// The field manager the controller writes status with.
pub const MANAGER: &str = "widget-controller";

/// What the user asks for.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct WidgetSpec {
    /// Colour of the widget.
    pub color: String,
    /// Copies wanted (the CRD defaults it to 1).
    #[serde(default)]
    pub replicas: i64,
}

/// What the controller reports.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    /// Copies that exist.
    #[serde(default)]
    pub replicas: i64,
    /// The `metadata.generation` this status describes.
    #[serde(default)]
    pub observed_generation: i64,
    /// `Ready` once reconciled.
    #[serde(default)]
    pub phase: String,
}

/// A Widget, typed.
pub type Widget = Object<WidgetSpec, WidgetStatus>;

/// `widgets.example.com/v1`.
pub fn widget_resource() -> ApiResource {
    ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    }
}

/// What every reconcile shares.
pub struct Context {
    /// The API client.
    pub client: Client,
    /// The Widget resource.
    pub resource: ApiResource,
}

/// Why a reconcile failed (the controller retries it).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// Writing the status failed (a conflict, an unavailable server, ...).
    #[error("updating the status of {name}: {source}")]
    Status {
        /// The widget.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Widgets are namespaced; one without a namespace cannot be written.
    #[error("widget {0} has no namespace")]
    NoNamespace(String),
}

/// Bring one widget's status in line with its spec.
pub async fn reconcile(widget: Arc<Widget>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let name = widget.name_any();
    let namespace = widget
        .namespace()
        .ok_or_else(|| ReconcileError::NoNamespace(name.clone()))?;
    let desired = WidgetStatus {
        replicas: widget.spec.replicas,
        observed_generation: widget.metadata.generation.unwrap_or_default(),
        phase: "Ready".into(),
    };
    if widget.status.as_ref() == Some(&desired) {
        return Ok(Action::await_change());
    }
    let api: Api<Widget> = Api::namespaced_with(ctx.client.clone(), &namespace, &ctx.resource);
    api.patch_status(
        &name,
        &PatchParams {
            field_manager: Some(MANAGER.into()),
            ..PatchParams::default()
        },
        &Patch::Merge(json!({"status": desired})),
    )
    .await
    .map_err(|source| ReconcileError::Status { name, source })?;
    Ok(Action::await_change())
}

/// Retry a failed reconcile soon (a real controller would back off further).
pub fn error_policy(_widget: Arc<Widget>, error: &ReconcileError, _ctx: Arc<Context>) -> Action {
    tracing::debug!(%error, "reconcile failed; retrying");
    Action::requeue(Duration::from_millis(100))
}

/// Run the controller over widgets in every namespace until `shutdown` completes.
pub async fn run(client: Client, shutdown: impl Future<Output = ()> + Send + Sync + 'static) {
    let resource = widget_resource();
    let api: Api<Widget> = Api::all_with(client.clone(), &resource);
    let ctx = Arc::new(Context {
        client,
        resource: resource.clone(),
    });
    Controller::new_with(api, watcher::Config::default(), resource)
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            match result {
                Ok((widget, _)) => tracing::debug!(widget = %widget, "reconciled"),
                Err(error) => tracing::debug!(%error, "reconcile error"),
            }
        })
        .await;
}
