//! Printers of `apps` kinds: Deployments, ReplicaSets, StatefulSets, DaemonSets and
//! ControllerRevisions.

use super::{
    age, array_at, at, col, containers_and_images, format_label_selector, format_labels, int_at,
    name, str_at, wide, Doc, KindPrinter, AGE, CONTAINERS, IMAGES, NAME,
};
use serde_json::{json, Value};

fn template_containers(obj: &Value) -> (Value, Value) {
    containers_and_images(array_at(obj, "/spec/template/spec/containers"))
}

pub(super) const DEPLOYMENT: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Ready",
            "string",
            Doc::Text("Number of the pod with ready state"),
        ),
        col(
            "Up-to-date",
            "string",
            Doc::Field("apps.v1.DeploymentStatus", "updatedReplicas"),
        ),
        col(
            "Available",
            "string",
            Doc::Field("apps.v1.DeploymentStatus", "availableReplicas"),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        wide(
            "Selector",
            "string",
            Doc::Field("apps.v1.DeploymentSpec", "selector"),
        ),
    ],
    cells: |obj, now| {
        let (names, images) = template_containers(obj);
        // A Deployment's selector string is the selector's own: "" when empty.
        let selector =
            match crate::selector::labels::from_label_selector_json(at(obj, "/spec/selector")) {
                Ok(s) => s.to_string(),
                Err(_) => "<invalid>".to_string(),
            };
        vec![
            name(obj),
            json!(format!(
                "{}/{}",
                int_at(obj, "/status/readyReplicas"),
                int_at(obj, "/spec/replicas")
            )),
            json!(int_at(obj, "/status/updatedReplicas")),
            json!(int_at(obj, "/status/availableReplicas")),
            age(obj, now),
            names,
            images,
            json!(selector),
        ]
    },
};

pub(super) const REPLICA_SET: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Desired",
            "integer",
            Doc::Field("apps.v1.ReplicaSetSpec", "replicas"),
        ),
        col(
            "Current",
            "integer",
            Doc::Field("apps.v1.ReplicaSetStatus", "replicas"),
        ),
        col(
            "Ready",
            "integer",
            Doc::Field("apps.v1.ReplicaSetStatus", "readyReplicas"),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        wide(
            "Selector",
            "string",
            Doc::Field("apps.v1.ReplicaSetSpec", "selector"),
        ),
    ],
    cells: |obj, now| {
        let (names, images) = template_containers(obj);
        vec![
            name(obj),
            json!(int_at(obj, "/spec/replicas")),
            json!(int_at(obj, "/status/replicas")),
            json!(int_at(obj, "/status/readyReplicas")),
            age(obj, now),
            names,
            images,
            json!(format_label_selector(at(obj, "/spec/selector"))),
        ]
    },
};

pub(super) const STATEFUL_SET: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Ready",
            "string",
            Doc::Text("Number of the pod with ready state"),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
    ],
    cells: |obj, now| {
        let (names, images) = template_containers(obj);
        vec![
            name(obj),
            json!(format!(
                "{}/{}",
                int_at(obj, "/status/readyReplicas"),
                int_at(obj, "/spec/replicas")
            )),
            age(obj, now),
            names,
            images,
        ]
    },
};

pub(super) const DAEMON_SET: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Desired",
            "integer",
            Doc::Field("apps.v1.DaemonSetStatus", "desiredNumberScheduled"),
        ),
        col(
            "Current",
            "integer",
            Doc::Field("apps.v1.DaemonSetStatus", "currentNumberScheduled"),
        ),
        col(
            "Ready",
            "integer",
            Doc::Field("apps.v1.DaemonSetStatus", "numberReady"),
        ),
        col(
            "Up-to-date",
            "integer",
            Doc::Field("apps.v1.DaemonSetStatus", "updatedNumberScheduled"),
        ),
        col(
            "Available",
            "integer",
            Doc::Field("apps.v1.DaemonSetStatus", "numberAvailable"),
        ),
        col(
            "Node Selector",
            "string",
            Doc::Field("core.v1.PodSpec", "nodeSelector"),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        wide(
            "Selector",
            "string",
            Doc::Field("apps.v1.DaemonSetSpec", "selector"),
        ),
    ],
    cells: |obj, now| {
        let (names, images) = template_containers(obj);
        vec![
            name(obj),
            json!(int_at(obj, "/status/desiredNumberScheduled")),
            json!(int_at(obj, "/status/currentNumberScheduled")),
            json!(int_at(obj, "/status/numberReady")),
            json!(int_at(obj, "/status/updatedNumberScheduled")),
            json!(int_at(obj, "/status/numberAvailable")),
            json!(format_labels(at(obj, "/spec/template/spec/nodeSelector"))),
            age(obj, now),
            names,
            images,
            json!(format_label_selector(at(obj, "/spec/selector"))),
        ]
    },
};

pub(super) const CONTROLLER_REVISION: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Controller",
            "string",
            Doc::Text("Controller of the object"),
        ),
        col(
            "Revision",
            "string",
            Doc::Field("apps.v1.ControllerRevision", "revision"),
        ),
        AGE,
    ],
    cells: |obj, now| {
        vec![
            name(obj),
            json!(controller_name(obj)),
            json!(int_at(obj, "/revision")),
            age(obj, now),
        ]
    },
};

/// kube's controller column: `<kind>.<group>/<name>` of the controlling owner
/// (`<kind>/<name>` for core), `<none>` without one.
fn controller_name(obj: &Value) -> String {
    let Some(owner) = array_at(obj, "/metadata/ownerReferences")
        .iter()
        .find(|o| at(o, "/controller").as_bool() == Some(true))
    else {
        return "<none>".to_string();
    };
    let api_version = str_at(owner, "/apiVersion");
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let kind = str_at(owner, "/kind").to_lowercase();
    let kind = if group.is_empty() {
        kind
    } else {
        format!("{kind}.{group}")
    };
    format!("{kind}/{}", str_at(owner, "/name"))
}
