//! kube's Table printers of built-in kinds (`pkg/printers/internalversion`), keyed by
//! group and kind: each kind's columns as data (header, type, priority and where the
//! description comes from) and one function computing a row's cells. The server fills
//! the `-o wide` cells too, as kube's table convertor does (kubectl hides them).

mod apps;
mod batch;
mod cluster;
mod core;
mod networking;

use crate::table::{timestamp_since, BuiltinColumn, BuiltinPrinter};
use chrono::{DateTime, Utc};
use serde_json::Value;

/// Where a column's description comes from.
#[derive(Clone, Copy, Debug)]
pub enum Doc {
    /// ObjectMeta's `name` (the `Name` column).
    Name,
    /// ObjectMeta's `creationTimestamp` (the `Age` column).
    Age,
    /// The documentation of a property of an OpenAPI definition (`core.v1.PodStatus`,
    /// `podIP`: the definition is named after `io.k8s.api.`).
    Field(&'static str, &'static str),
    /// A text of kube's printer.
    Text(&'static str),
}

/// One column of a kind's Table.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    /// Header.
    pub name: &'static str,
    /// `string`, `integer` or `boolean`.
    pub type_: &'static str,
    /// 0 for the default view, 1 for `-o wide`.
    pub priority: i64,
    /// `name` for a column of names, else empty.
    pub format: &'static str,
    /// The description's source.
    pub doc: Doc,
}

/// A column shown by default.
const fn col(name: &'static str, type_: &'static str, doc: Doc) -> Column {
    Column {
        name,
        type_,
        priority: 0,
        format: "",
        doc,
    }
}

/// A column shown with `-o wide`.
const fn wide(name: &'static str, type_: &'static str, doc: Doc) -> Column {
    Column {
        name,
        type_,
        priority: 1,
        format: "",
        doc,
    }
}

/// The `Name` column.
const NAME: Column = col("Name", "string", Doc::Name);
/// The `Age` column.
const AGE: Column = col("Age", "string", Doc::Age);
/// kube's `Containers` column of kinds with a pod template (`-o wide`).
const CONTAINERS: Column = wide(
    "Containers",
    "string",
    Doc::Text("Names of each container in the template."),
);
/// kube's `Images` column of kinds with a pod template (`-o wide`).
const IMAGES: Column = wide(
    "Images",
    "string",
    Doc::Text("Images referenced by each container in the template."),
);

/// A kind's printer as data.
struct KindPrinter {
    columns: &'static [Column],
    cells: fn(&Value, DateTime<Utc>) -> Vec<Value>,
}

/// kube's printer of the built-in kind `group`/`kind`, when it has one beyond NAME/AGE
/// (Services, ConfigMaps, Secrets, Events, Leases, RBAC and admission kinds are
/// printed next to their hand strategies).
pub fn for_kind(group: &str, kind: &str) -> Option<BuiltinPrinter> {
    let p = match (group, kind) {
        ("", "Pod") => core::POD,
        ("", "PodTemplate") => core::POD_TEMPLATE,
        ("", "ReplicationController") => core::REPLICATION_CONTROLLER,
        ("", "Node") => core::NODE,
        ("", "PersistentVolume") => core::PERSISTENT_VOLUME,
        ("", "PersistentVolumeClaim") => core::PERSISTENT_VOLUME_CLAIM,
        ("", "Endpoints") => core::ENDPOINTS,
        ("", "ResourceQuota") => core::RESOURCE_QUOTA,
        ("", "ComponentStatus") => core::COMPONENT_STATUS,
        ("apps", "Deployment") => apps::DEPLOYMENT,
        ("apps", "ReplicaSet") => apps::REPLICA_SET,
        ("apps", "StatefulSet") => apps::STATEFUL_SET,
        ("apps", "DaemonSet") => apps::DAEMON_SET,
        ("apps", "ControllerRevision") => apps::CONTROLLER_REVISION,
        ("batch", "Job") => batch::JOB,
        ("batch", "CronJob") => batch::CRON_JOB,
        ("networking.k8s.io", "Ingress") => networking::INGRESS,
        ("networking.k8s.io", "IngressClass") => networking::INGRESS_CLASS,
        ("networking.k8s.io", "NetworkPolicy") => networking::NETWORK_POLICY,
        ("networking.k8s.io", "ServiceCIDR") => networking::SERVICE_CIDR,
        ("networking.k8s.io", "IPAddress") => networking::IP_ADDRESS,
        ("discovery.k8s.io", "EndpointSlice") => networking::ENDPOINT_SLICE,
        ("policy", "PodDisruptionBudget") => cluster::POD_DISRUPTION_BUDGET,
        ("storage.k8s.io", "StorageClass") => cluster::STORAGE_CLASS,
        ("scheduling.k8s.io", "PriorityClass") => cluster::PRIORITY_CLASS,
        ("node.k8s.io", "RuntimeClass") => cluster::RUNTIME_CLASS,
        ("storage.k8s.io", "CSIDriver") => cluster::CSI_DRIVER,
        ("storage.k8s.io", "CSINode") => cluster::CSI_NODE,
        ("storage.k8s.io", "CSIStorageCapacity") => cluster::CSI_STORAGE_CAPACITY,
        ("storage.k8s.io", "VolumeAttachment") => cluster::VOLUME_ATTACHMENT,
        ("storage.k8s.io", "VolumeAttributesClass") => cluster::VOLUME_ATTRIBUTES_CLASS,
        ("certificates.k8s.io", "CertificateSigningRequest") => {
            cluster::CERTIFICATE_SIGNING_REQUEST
        }
        ("autoscaling", "HorizontalPodAutoscaler") => cluster::HORIZONTAL_POD_AUTOSCALER,
        ("flowcontrol.apiserver.k8s.io", "FlowSchema") => cluster::FLOW_SCHEMA,
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration") => {
            cluster::PRIORITY_LEVEL_CONFIGURATION
        }
        ("resource.k8s.io", "ResourceSlice") => cluster::RESOURCE_SLICE,
        ("resource.k8s.io", "ResourceClaim") => cluster::RESOURCE_CLAIM,
        ("apiregistration.k8s.io", "APIService") => cluster::API_SERVICE,
        _ => return None,
    };
    Some(BuiltinPrinter {
        columns: p.columns.iter().map(builtin_column).collect(),
        cells: p.cells,
    })
}

fn builtin_column(c: &Column) -> BuiltinColumn {
    let column = match c.doc {
        Doc::Name => BuiltinColumn::name(c.priority),
        Doc::Age => BuiltinColumn::age(),
        Doc::Field(definition, property) => BuiltinColumn::new(
            c.name,
            c.type_,
            c.priority,
            &field_doc(definition, property),
        ),
        Doc::Text(text) => BuiltinColumn::new(c.name, c.type_, c.priority, text),
    };
    BuiltinColumn {
        format: if c.format.is_empty() {
            column.format
        } else {
            c.format
        },
        ..column
    }
}

/// The documentation of `property` of the built-in definition `io.k8s.api.<definition>`.
pub fn field_doc(definition: &str, property: &str) -> String {
    crate::typed::builtin_definitions()
        .get(&format!("io.k8s.api.{definition}"))
        .and_then(|d| d.pointer(&format!("/properties/{property}/description")))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

// Cell helpers shared by the kinds' printers.

/// The value at a JSON pointer, `null` when absent.
fn at<'a>(obj: &'a Value, pointer: &str) -> &'a Value {
    obj.pointer(pointer).unwrap_or(&Value::Null)
}

/// The string at a JSON pointer, `""` when absent.
fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    at(obj, pointer).as_str().unwrap_or("")
}

/// The integer at a JSON pointer, 0 when absent (Go's zero value).
fn int_at(obj: &Value, pointer: &str) -> i64 {
    at(obj, pointer).as_i64().unwrap_or(0)
}

/// The array at a JSON pointer, empty when absent.
fn array_at<'a>(obj: &'a Value, pointer: &str) -> &'a [Value] {
    at(obj, pointer).as_array().map_or(&[], Vec::as_slice)
}

/// The object's name.
fn name(obj: &Value) -> Value {
    Value::String(str_at(obj, "/metadata/name").to_string())
}

/// kube's `translateTimestampSince` of the creation timestamp.
fn age(obj: &Value, now: DateTime<Utc>) -> Value {
    Value::String(since(obj, "/metadata/creationTimestamp", now))
}

/// kube's `translateTimestampSince` of the timestamp at a JSON pointer.
fn since(obj: &Value, pointer: &str, now: DateTime<Utc>) -> String {
    timestamp_since(at(obj, pointer).as_str(), now)
}

/// kube's `layoutContainerCells`: container names and images, comma-separated.
fn containers_and_images(containers: &[Value]) -> (Value, Value) {
    let join = |field: &str| {
        containers
            .iter()
            .map(|c| str_at(c, field))
            .collect::<Vec<_>>()
            .join(",")
    };
    (Value::String(join("/name")), Value::String(join("/image")))
}

/// kube's `labels.FormatLabels`: `k=v` sorted by key, `<none>` when empty.
fn format_labels(labels: &Value) -> String {
    let mut pairs: Vec<String> = labels
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    if pairs.is_empty() {
        return "<none>".to_string();
    }
    pairs.sort();
    pairs.join(",")
}

/// kube's `metav1.FormatLabelSelector`: the selector's string, `<none>` when it is
/// empty or selects nothing, `<error>` when it does not convert.
fn format_label_selector(selector: &Value) -> String {
    match crate::selector::labels::from_label_selector_json(selector) {
        Err(_) => "<error>".to_string(),
        Ok(s) => match s.to_string() {
            s if s.is_empty() => "<none>".to_string(),
            s => s,
        },
    }
}

/// kube's `printBoolPtr`: `True`/`False`, `<unset>` when absent.
fn bool_ptr(v: &Value) -> String {
    match v.as_bool() {
        Some(true) => "True".to_string(),
        Some(false) => "False".to_string(),
        None => "<unset>".to_string(),
    }
}

/// kube's `listWithMoreString`: the first items, `+ N more...` past them, `<unset>`
/// for none.
fn list_with_more(list: &[String], total: usize, max: usize) -> String {
    let joined = list.join(",");
    if total > max {
        return format!("{joined} + {} more...", total - max);
    }
    if joined.is_empty() {
        return "<unset>".to_string();
    }
    joined
}

#[cfg(test)]
mod tests;
