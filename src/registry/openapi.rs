//! OpenAPI documents: `/openapi/v2` (Swagger 2.0, everything in one document), the
//! `/openapi/v3` index, and one OpenAPI 3.0 document per group-version
//! (`/openapi/v3/api/v1`, `/openapi/v3/apis/{group}/{version}`).
//!
//! A built-in group-version's v3 document is kube's own, as recorded from kube-apiserver
//! v1.36 ([`apimachinery::kube_openapi`]), served as its bytes; the CRD groups' documents
//! and `/openapi/v2` are derived from the CRDs (and the built-in definitions) as kube's
//! apiextensions-apiserver builds them.
//!
//! A CR kind is published as `<reversed group>.<version>.<Kind>` (e.g.
//! `com.example.crud.v1.Widget`) with the schema as written (every `x-kubernetes-*`
//! extension kept), `metadata` replaced by a reference to `ObjectMeta`, `apiVersion` and
//! `kind` described as in `TypeMeta`, and `x-kubernetes-group-version-kind` on the kind
//! and its list. Every operation carries `x-kubernetes-action` and
//! `x-kubernetes-group-version-kind`; PATCH/POST/PUT list the `fieldValidation` query
//! parameter, which is how kubectl decides to leave validation to the server.
//!
//! Notes for the HTTP layer:
//! - Serve the bytes of [`encode`] and set `ETag: <etag>` (a quoted, upper-case hex
//!   SHA-512 of those bytes, as kube-openapi does); answer `If-None-Match` with that
//!   value by `304 Not Modified`.
//! - `/openapi/v3/…?hash=H`: when `H` equals [`hash`] of the document, add
//!   `Cache-Control: public, immutable`, `Vary: Accept` and an `Expires` one year ahead;
//!   when it differs, answer `301` to the URL with the current hash.
//! - `/openapi/v2` is also served in gnostic's protobuf form (`openapi_v2_proto`), which
//!   kubectl asks for to validate what `/openapi/v3` leaves to it (lists, kinds not yet
//!   in v3); its ETag is the JSON document's.

use crate::registry::builtin::{self, BuiltinResource};
use crate::registry::crd::{CrdInfo, VersionInfo};
use apimachinery::codec::Packed;
use bytes::Bytes;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha512};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

/// The `info.version()` of `/openapi/v2`: kube's emulation version, `<major>.<minor>`.
const INFO_VERSION: &str = "1.36";

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";
/// The verbs of a custom resource's main resource.
const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
const CRD_DEF: &str =
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition";

const OBJECT_META_DESCRIPTION: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const LIST_META_DESCRIPTION: &str = "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
const EMBEDDED_API_VERSION_DESCRIPTION: &str = "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const EMBEDDED_KIND_DESCRIPTION: &str = "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

pub use apimachinery::typed::builtin_definitions;

/// Which OpenAPI a document is for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Flavor {
    V2,
    V3,
}

impl Flavor {
    fn reference(self, name: &str) -> String {
        match self {
            Flavor::V2 => format!("#/definitions/{name}"),
            Flavor::V3 => format!("#/components/schemas/{name}"),
        }
    }
}

/// `"<hex>"`: the strong ETag kube-openapi sets for a document whose bytes have
/// [`hash`] `hash`.
pub fn etag(hash: &str) -> String {
    format!("\"{hash}\"")
}

/// Upper-case hex SHA-512 of a document's bytes: the `?hash=` of `/openapi/v3` URLs.
pub fn hash(doc_bytes: &[u8]) -> String {
    Sha512::digest(doc_bytes)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect()
}

/// The definition name kube gives a CR kind: the group reversed, then version and kind.
pub fn definition_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

// ---------------------------------------------------------------------------------------
// Resources and operations
// ---------------------------------------------------------------------------------------

/// A REST resource to publish paths for.
struct Resource {
    group: String,
    version: String,
    kind: String,
    plural: String,
    namespaced: bool,
    kind_def: String,
    list_def: String,
    status: bool,
    scale: bool,
    deletecollection: bool,
    finalize: bool,
    /// Built-in resources say "list or watch" and accept strategic merge patches.
    builtin: bool,
    /// Only `create` is served (access reviews): one POST, no list kind.
    create_only: bool,
    /// The verbs of the main resource (a built-in may serve fewer than all).
    verbs: Vec<&'static str>,
}

impl Resource {
    fn custom(crd: &CrdInfo, v: &VersionInfo) -> Resource {
        Resource {
            group: crd.group.clone(),
            version: v.name.clone(),
            kind: crd.kind.clone(),
            plural: crd.plural.clone(),
            namespaced: crd.namespaced,
            kind_def: definition_name(&crd.group, &v.name, &crd.kind),
            list_def: definition_name(&crd.group, &v.name, &crd.list_kind),
            status: v.status_subresource,
            scale: v.scale.is_some(),
            deletecollection: true,
            finalize: false,
            builtin: false,
            create_only: false,
            verbs: ALL_VERBS.to_vec(),
        }
    }

    fn builtin(r: &BuiltinResource) -> Resource {
        Resource {
            group: r.group.into(),
            version: r.version.into(),
            kind: r.kind.into(),
            plural: r.resource.into(),
            namespaced: r.namespaced,
            kind_def: r.definition.clone(),
            list_def: format!("{}List", r.definition),
            status: r.has_subresource("status"),
            scale: r.has_subresource("scale"),
            deletecollection: r.has_verb("deletecollection"),
            finalize: r.has_subresource("finalize"),
            builtin: true,
            create_only: r.verbs == ["create"],
            verbs: r.verbs.clone(),
        }
    }

    /// Whether an operation of `action` (`post`, `put`, ...) is one of its verbs.
    fn serves(&self, action: &str) -> bool {
        let verb = match action {
            "post" => "create",
            "put" => "update",
            other => other,
        };
        self.verbs.contains(&verb)
    }

    fn prefix(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }

    fn gvk(&self) -> Value {
        json!({"group": self.group, "version": self.version, "kind": self.kind})
    }
}

#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Param {
    name: &'static str,
    location: &'static str,
    type_: &'static str,
    description: String,
    required: bool,
}

fn query(name: &'static str, type_: &'static str, description: &str) -> Param {
    Param {
        name,
        location: "query",
        type_,
        description: description.to_string(),
        required: false,
    }
}

const PRETTY: &str = "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget).";
const DRY_RUN: &str = "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed";
const FIELD_MANAGER: &str = "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.";
const FIELD_MANAGER_PATCH: &str = "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint. This field is required for apply requests (application/apply-patch) but optional for non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch).";
const FIELD_VALIDATION: &str = "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.";
const FORCE: &str = "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.";
const RESOURCE_VERSION: &str = "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset";
const RESOURCE_VERSION_MATCH: &str = "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset";
const ALLOW_WATCH_BOOKMARKS: &str = "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored.";
const CONTINUE: &str = "The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize. If the specified continue value is no longer valid whether due to expiration (generally five to fifteen minutes) or a configuration change on the server, the server will respond with a 410 ResourceExpired error together with a continue token. If the client needs a consistent list, it must restart their list without the continue field. Otherwise, the client may send another list request with the token received with the 410 error, the server will respond with a list starting from the next key, but from the latest snapshot, which is inconsistent from the previous list results - objects that are created, modified, or deleted after the first list request will be included in the response, as long as their keys are after the \"next key\".\n\nThis field is not supported when watch is true. Clients may start a watch from the last resourceVersion value returned by the server and not miss any modifications.";
const FIELD_SELECTOR: &str =
    "A selector to restrict the list of returned objects by their fields. Defaults to everything.";
const LABEL_SELECTOR: &str =
    "A selector to restrict the list of returned objects by their labels. Defaults to everything.";
const LIMIT: &str = "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results. Setting a limit may return fewer than the requested amount of items (up to zero items) in the event all requested objects are filtered out and clients should only use the presence of the continue field to determine whether more results are available. Servers may choose not to support the limit argument and will return all of the available results. If limit is specified and the continue field is empty, clients may assume that no more results are available. This field is not supported if watch is true.\n\nThe server guarantees that the objects returned when using continue will be identical to issuing a single list call without a limit - that is, no objects created, modified, or deleted after the first request is issued will be included in any subsequent continued requests. This is sometimes referred to as a consistent snapshot, and ensures that a client that is using limit to receive smaller chunks of a very large result can ensure they see all possible objects. If objects are updated during a chunked list the version of the object that was present at the time the first list result was calculated is returned.";
const SEND_INITIAL_EVENTS: &str = "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic \"Bookmark\" event  will be sent. The bookmark will report the ResourceVersion (RV) corresponding to the set of objects, and be marked with `\"k8s.io/initial-events-end\": \"true\"` annotation. Afterwards, the watch stream will proceed as usual, sending watch events corresponding to changes (subsequent to the RV) to objects watched.\n\nWhen `sendInitialEvents` option is set, we require `resourceVersionMatch` option to also be set. The semantic of the watch request is as following: - `resourceVersionMatch` = NotOlderThan\n  is interpreted as \"data at least as new as the provided `resourceVersion`\"\n  and the bookmark event is send when the state is synced\n  to a `resourceVersion` at least as fresh as the one provided by the ListOptions.\n  If `resourceVersion` is unset, this is interpreted as \"consistent read\" and the\n  bookmark event is send when the state is synced at least to the moment\n  when request started being processed.\n- `resourceVersionMatch` set to any other value or unset\n  Invalid error is returned.\n\nDefaults to true if `resourceVersion=\"\"` or `resourceVersion=\"0\"` (for backward compatibility reasons) and to false otherwise.";
const TIMEOUT_SECONDS: &str = "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity.";
const WATCH: &str = "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion.";
const GRACE_PERIOD_SECONDS: &str = "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately.";
const IGNORE_STORE_READ_ERROR: &str = "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error. A resource is considered corrupt if it can not be retrieved from the underlying storage successfully because of a) its data can not be transformed e.g. decryption failure, or b) it fails to decode into an object. NOTE: unsafe deletion ignores finalizer constraints, skips precondition checks, and removes the object from the storage. WARNING: This may potentially break the cluster if the workload associated with the resource being unsafe-deleted relies on normal deletion flow. Use only if you REALLY know what you are doing. The default value is false, and the user must opt in to enable it";
const ORPHAN_DEPENDENTS: &str = "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both.";
const PROPAGATION_POLICY: &str = "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground.";

fn list_options() -> Vec<Param> {
    vec![
        query("allowWatchBookmarks", "boolean", ALLOW_WATCH_BOOKMARKS),
        query("continue", "string", CONTINUE),
        query("fieldSelector", "string", FIELD_SELECTOR),
        query("labelSelector", "string", LABEL_SELECTOR),
        query("limit", "integer", LIMIT),
        query("resourceVersion", "string", RESOURCE_VERSION),
        query("resourceVersionMatch", "string", RESOURCE_VERSION_MATCH),
        query("sendInitialEvents", "boolean", SEND_INITIAL_EVENTS),
        query("timeoutSeconds", "integer", TIMEOUT_SECONDS),
        query("watch", "boolean", WATCH),
    ]
}

fn write_options(field_manager: &str) -> Vec<Param> {
    vec![
        query("dryRun", "string", DRY_RUN),
        query("fieldManager", "string", field_manager),
        query("fieldValidation", "string", FIELD_VALIDATION),
    ]
}

fn delete_options() -> Vec<Param> {
    vec![
        query("dryRun", "string", DRY_RUN),
        query("gracePeriodSeconds", "integer", GRACE_PERIOD_SECONDS),
        query(
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            "boolean",
            IGNORE_STORE_READ_ERROR,
        ),
        query("orphanDependents", "boolean", ORPHAN_DEPENDENTS),
        query("propagationPolicy", "string", PROPAGATION_POLICY),
    ]
}

/// The request body of an operation.
enum Body {
    /// The object itself (POST, PUT).
    Object(String),
    /// A patch document.
    Patch,
    /// Optional `DeleteOptions`.
    DeleteOptions,
}

struct Operation {
    method: &'static str,
    action: &'static str,
    /// Kube's route operation name before it is qualified by group and version.
    name: String,
    description: String,
    params: Vec<Param>,
    body: Option<Body>,
    /// `(code, description, definition)`.
    responses: Vec<(u16, &'static str, String)>,
}

/// `"a "`/`"an "` as kube's `GetArticleForNoun` picks it (none for plural-looking nouns).
fn article(noun: &str) -> &'static str {
    if !noun.ends_with("ss") && noun.ends_with('s') {
        return " ";
    }
    match noun.chars().next().map(|c| c.to_ascii_lowercase()) {
        Some('a' | 'e' | 'i' | 'o' | 'u') => " an ",
        _ => " a ",
    }
}

/// The operations of one resource, grouped by path, in kube's CRD builder order.
fn operations(r: &Resource) -> Vec<(String, Vec<Operation>)> {
    let namespaced = if r.namespaced { "Namespaced" } else { "" };
    let kind = &r.kind;
    let list_word = if r.builtin { "list or watch" } else { "list" };
    let patch_manager = FIELD_MANAGER_PATCH;
    let mut out: Vec<(String, Vec<Operation>)> = Vec::new();
    let collection = if r.namespaced {
        format!("{}/namespaces/{{namespace}}/{}", r.prefix(), r.plural)
    } else {
        format!("{}/{}", r.prefix(), r.plural)
    };
    let list = |name: String| Operation {
        method: "get",
        action: "list",
        name,
        description: format!("{list_word} objects of kind {kind}"),
        params: list_options(),
        body: None,
        responses: vec![(200, "OK", r.list_def.clone())],
    };
    let create = Operation {
        method: "post",
        action: "post",
        name: format!("create{namespaced}{kind}"),
        description: format!("create{}{kind}", article(kind)),
        params: write_options(FIELD_MANAGER),
        body: Some(Body::Object(r.kind_def.clone())),
        responses: vec![
            (200, "OK", r.kind_def.clone()),
            (201, "Created", r.kind_def.clone()),
            (202, "Accepted", r.kind_def.clone()),
        ],
    };
    if r.create_only {
        out.push((collection, vec![create]));
        return out;
    }
    if r.namespaced {
        out.push((
            format!("{}/{}", r.prefix(), r.plural),
            vec![list(format!("list{kind}ForAllNamespaces"))],
        ));
    }
    let mut collection_ops = vec![list(format!("list{namespaced}{kind}")), create];
    if r.deletecollection {
        let mut params = list_options();
        params.extend(delete_options());
        collection_ops.push(Operation {
            method: "delete",
            action: "deletecollection",
            name: format!("deletecollection{namespaced}{kind}"),
            description: format!("delete collection of {kind}"),
            params,
            body: Some(Body::DeleteOptions),
            responses: vec![(200, "OK", STATUS.to_string())],
        });
    }
    out.push((collection.clone(), collection_ops));

    let item = format!("{collection}/{{name}}");
    let mut patch_params = write_options(patch_manager);
    patch_params.push(query("force", "boolean", FORCE));
    out.push((
        item.clone(),
        vec![
            Operation {
                method: "get",
                action: "get",
                name: format!("read{namespaced}{kind}"),
                description: format!("read the specified {kind}"),
                params: vec![],
                body: None,
                responses: vec![(200, "OK", r.kind_def.clone())],
            },
            Operation {
                method: "put",
                action: "put",
                name: format!("replace{namespaced}{kind}"),
                description: format!("replace the specified {kind}"),
                params: write_options(FIELD_MANAGER),
                body: Some(Body::Object(r.kind_def.clone())),
                responses: vec![
                    (200, "OK", r.kind_def.clone()),
                    (201, "Created", r.kind_def.clone()),
                ],
            },
            Operation {
                method: "delete",
                action: "delete",
                name: format!("delete{namespaced}{kind}"),
                description: format!("delete{}{kind}", article(kind)),
                params: delete_options(),
                body: Some(Body::DeleteOptions),
                responses: vec![
                    (200, "OK", STATUS.to_string()),
                    (202, "Accepted", STATUS.to_string()),
                ],
            },
            Operation {
                method: "patch",
                action: "patch",
                name: format!("patch{namespaced}{kind}"),
                description: format!("partially update the specified {kind}"),
                params: patch_params.clone(),
                body: Some(Body::Patch),
                responses: vec![
                    (200, "OK", r.kind_def.clone()),
                    (201, "Created", r.kind_def.clone()),
                ],
            },
        ],
    ));
    // Only the verbs the resource serves (component statuses: get and list).
    for (_, ops) in out.iter_mut() {
        ops.retain(|op| r.serves(op.action));
    }
    out.retain(|(_, ops)| !ops.is_empty());
    let subresource = |sub: &str, def: &str, sub_title: &str| -> Vec<Operation> {
        vec![
            Operation {
                method: "get",
                action: "get",
                name: format!("read{namespaced}{kind}{sub_title}"),
                description: format!("read {sub} of the specified {kind}"),
                params: vec![],
                body: None,
                responses: vec![(200, "OK", def.to_string())],
            },
            Operation {
                method: "put",
                action: "put",
                name: format!("replace{namespaced}{kind}{sub_title}"),
                description: format!("replace {sub} of the specified {kind}"),
                params: write_options(FIELD_MANAGER),
                body: Some(Body::Object(def.to_string())),
                responses: vec![
                    (200, "OK", def.to_string()),
                    (201, "Created", def.to_string()),
                ],
            },
            Operation {
                method: "patch",
                action: "patch",
                name: format!("patch{namespaced}{kind}{sub_title}"),
                description: format!("partially update {sub} of the specified {kind}"),
                params: patch_params.clone(),
                body: Some(Body::Patch),
                responses: vec![
                    (200, "OK", def.to_string()),
                    (201, "Created", def.to_string()),
                ],
            },
        ]
    };
    if r.finalize {
        out.push((
            format!("{item}/finalize"),
            vec![Operation {
                method: "put",
                action: "put",
                name: format!("replace{namespaced}{kind}Finalize"),
                description: format!("replace finalize of the specified {kind}"),
                params: write_options(FIELD_MANAGER),
                body: Some(Body::Object(r.kind_def.clone())),
                responses: vec![
                    (200, "OK", r.kind_def.clone()),
                    (201, "Created", r.kind_def.clone()),
                ],
            }],
        ));
    }
    if r.scale {
        out.push((
            format!("{item}/scale"),
            subresource("scale", SCALE, "Scale"),
        ));
    }
    if r.status {
        out.push((
            format!("{item}/status"),
            subresource("status", &r.kind_def, "Status"),
        ));
    }
    out
}

/// Kube's `ToValidOperationID`: letters, `_` and (not first) digits, each run after a
/// dropped character starting upper-case.
fn valid_operation_id(s: &str, capitalize_first: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut capitalize = capitalize_first;
    for (i, c) in s.char_indices() {
        if c.is_alphabetic() || c == '_' || (i != 0 && c.is_ascii_digit()) {
            if capitalize {
                out.extend(c.to_uppercase());
                capitalize = false;
            } else {
                out.push(c);
            }
        } else {
            capitalize = true;
        }
    }
    out
}

const OPERATION_VERBS: &[&str] = &[
    "deletecollection",
    "replace",
    "connect",
    "create",
    "delete",
    "patch",
    "proxy",
    "watch",
    "list",
    "read",
    "get",
    "log",
];

/// Kube's `GetOperationIDAndTags`: qualify the route operation with group and version.
fn operation_id_and_tag(name: &str, path: &str) -> (String, String) {
    let prefix = OPERATION_VERBS
        .iter()
        .find(|v| name.starts_with(**v))
        .copied()
        .unwrap_or("");
    let rest = &name[prefix.len()..];
    let mut parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    if parts.first() == Some(&"api") {
        parts.splice(0..1, ["apis", "core"]);
    }
    let mut id = prefix.to_string();
    let mut tag = String::new();
    if parts.len() >= 2 && parts[0] == "apis" {
        let trimmed = parts[1].strip_suffix(".k8s.io").unwrap_or(parts[1]);
        id.push_str(&valid_operation_id(trimmed, !id.is_empty()));
        tag = valid_operation_id(trimmed, false);
        if parts.len() > 2 {
            id.push_str(&valid_operation_id(parts[2], !id.is_empty()));
            tag = format!("{tag}_{}", valid_operation_id(parts[2], false));
        }
    }
    id.push_str(&valid_operation_id(rest, !id.is_empty()));
    (id, tag)
}

fn param_json(p: &Param, flavor: Flavor) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(p.name));
    m.insert("in".into(), json!(p.location));
    m.insert("description".into(), json!(p.description));
    if p.required {
        m.insert("required".into(), json!(true));
    }
    match flavor {
        Flavor::V2 => {
            m.insert("type".into(), json!(p.type_));
            m.insert("uniqueItems".into(), json!(true));
        }
        Flavor::V3 => {
            m.insert(
                "schema".into(),
                json!({"type": p.type_, "uniqueItems": true}),
            );
        }
    }
    Value::Object(m)
}

const PRODUCES: &[&str] = &["application/json", "application/yaml"];
const CUSTOM_PATCH_TYPES: &[&str] = &[
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
];
const BUILTIN_PATCH_TYPES: &[&str] = &[
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
];

fn operation_json(
    r: &Resource,
    path: &str,
    op: &Operation,
    params: &[Param],
    flavor: Flavor,
) -> Value {
    let (id, tag) = operation_id_and_tag(&op.name, path);
    // Every built-in kind takes strategic merge patches (kubectl prefers them when an
    // operation lists them); custom resources never do.
    let patch_types = if r.builtin {
        BUILTIN_PATCH_TYPES
    } else {
        CUSTOM_PATCH_TYPES
    };
    let mut m = Map::new();
    m.insert("description".into(), json!(op.description));
    m.insert("operationId".into(), json!(id));
    m.insert("tags".into(), json!([tag]));
    let mut params: Vec<Value> = params.iter().map(|p| param_json(p, flavor)).collect();
    let mut responses = Map::new();
    for (code, description, def) in &op.responses {
        let schema = json!({"$ref": flavor.reference(def)});
        let response = match flavor {
            Flavor::V2 => json!({"description": description, "schema": schema}),
            Flavor::V3 => {
                let content: Map<String, Value> = PRODUCES
                    .iter()
                    .map(|t| (t.to_string(), json!({"schema": schema})))
                    .collect();
                json!({"description": description, "content": content})
            }
        };
        responses.insert(code.to_string(), response);
    }
    responses.insert("401".into(), json!({"description": "Unauthorized"}));
    m.insert("responses".into(), Value::Object(responses));
    let (consumes, body_def, required): (&[&str], Option<String>, bool) = match &op.body {
        None => (&[], None, false),
        Some(Body::Object(def)) => (&["*/*"], Some(def.clone()), true),
        Some(Body::Patch) => (patch_types, Some(PATCH.to_string()), true),
        Some(Body::DeleteOptions) => (&["*/*"], Some(DELETE_OPTIONS.to_string()), false),
    };
    match flavor {
        Flavor::V2 => {
            if let Some(def) = &body_def {
                let mut body = json!({"name": "body", "in": "body", "schema": {"$ref": flavor.reference(def)}});
                if required {
                    body["required"] = json!(true);
                }
                params.insert(0, body);
            }
            if !consumes.is_empty() {
                m.insert("consumes".into(), json!(consumes));
            }
            m.insert("produces".into(), json!(PRODUCES));
            m.insert("schemes".into(), json!(["https"]));
        }
        Flavor::V3 => {
            if let Some(def) = &body_def {
                let content: Map<String, Value> = consumes
                    .iter()
                    .map(|t| {
                        (
                            t.to_string(),
                            json!({"schema": {"$ref": flavor.reference(def)}}),
                        )
                    })
                    .collect();
                let mut body = json!({"content": content});
                if required {
                    body["required"] = json!(true);
                }
                m.insert("requestBody".into(), body);
            }
        }
    }
    if !params.is_empty() {
        m.insert("parameters".into(), Value::Array(params));
    }
    m.insert("x-kubernetes-action".into(), json!(op.action));
    m.insert("x-kubernetes-group-version-kind".into(), r.gvk());
    Value::Object(m)
}

/// The path items of a resource: parameters shared by every operation of a path move to
/// the path level, as kube-openapi does.
fn path_items(r: &Resource, flavor: Flavor) -> Map<String, Value> {
    let mut out = Map::new();
    for (path, ops) in operations(r) {
        let mut common: Vec<Param> = vec![query("pretty", "string", PRETTY)];
        if path.contains("{name}") {
            common.push(Param {
                name: "name",
                location: "path",
                type_: "string",
                description: format!("name of the {}", r.kind),
                required: true,
            });
        }
        if path.contains("{namespace}") {
            common.push(Param {
                name: "namespace",
                location: "path",
                type_: "string",
                description: "object name and auth scope, such as for teams and projects".into(),
                required: true,
            });
        }
        let mut shared: BTreeSet<&'static str> = ops
            .first()
            .map(|o| o.params.iter().map(|p| p.name).collect())
            .unwrap_or_default();
        for op in &ops {
            let names: BTreeSet<&str> = op.params.iter().map(|p| p.name).collect();
            shared.retain(|n| names.contains(n));
        }
        let mut item = Map::new();
        for op in &ops {
            let mut own: Vec<Param> = op
                .params
                .iter()
                .filter(|p| !shared.contains(p.name))
                .cloned()
                .collect();
            own.sort();
            item.insert(op.method.into(), operation_json(r, &path, op, &own, flavor));
        }
        if let Some(first) = ops.first() {
            common.extend(
                first
                    .params
                    .iter()
                    .filter(|p| shared.contains(p.name))
                    .cloned(),
            );
        }
        common.sort();
        let params: Vec<Value> = common.iter().map(|p| param_json(p, flavor)).collect();
        item.insert("parameters".into(), Value::Array(params));
        out.insert(path, Value::Object(item));
    }
    out
}

// ---------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------

/// Keys kube's structural schema does not carry, so never published.
const UNPUBLISHED_KEYS: &[&str] = &[
    "example",
    "externalDocs",
    "id",
    "$schema",
    "$ref",
    "definitions",
    "dependencies",
    "patternProperties",
    "additionalItems",
];

fn type_meta_property(name: &str) -> Value {
    builtin_definitions()
        .get(CRD_DEF)
        .and_then(|d| d.pointer(&format!("/properties/{name}")))
        .cloned()
        .unwrap_or_else(|| json!({"type": "string"}))
}

fn is_true(m: &Map<String, Value>, key: &str) -> bool {
    m.get(key).and_then(Value::as_bool) == Some(true)
}

fn int_or_string_any_of() -> Value {
    json!([{"type": "integer"}, {"type": "string"}])
}

/// Kube's `Unfold` for `x-kubernetes-int-or-string`: spell the two types out as `anyOf`.
fn unfold_int_or_string(m: &mut Map<String, Value>) {
    if !is_true(m, "x-kubernetes-int-or-string") {
        return;
    }
    let pattern = int_or_string_any_of();
    if m.get("anyOf") == Some(&pattern) {
        return;
    }
    let first_all_of = m
        .get("allOf")
        .and_then(Value::as_array)
        .and_then(|a| a.first());
    if first_all_of.is_some_and(|f| {
        f.get("anyOf") == Some(&pattern) && f.as_object().is_some_and(|o| o.len() == 1)
    }) {
        return;
    }
    if m.contains_key("anyOf") {
        let mut all_of = vec![json!({"anyOf": pattern})];
        all_of.extend(
            m.get("allOf")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        );
        m.insert("allOf".into(), Value::Array(all_of));
    } else {
        m.insert("anyOf".into(), pattern);
    }
}

/// One node of a CR schema as published. `v2` applies kube's `ToStructuralOpenAPIV2`
/// (no junctors, no nullable, nothing under preserve-unknown-fields).
fn publish_node(node: &Value, flavor: Flavor) -> Value {
    let Some(src) = node.as_object() else {
        return node.clone();
    };
    let mut m: Map<String, Value> = src
        .iter()
        .filter(|(k, _)| !UNPUBLISHED_KEYS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    unfold_int_or_string(&mut m);
    if flavor == Flavor::V2 {
        for key in ["allOf", "oneOf", "anyOf", "not"] {
            m.remove(key);
        }
        if is_true(&m, "nullable") {
            for key in ["type", "items", "properties"] {
                m.remove(key);
            }
        }
        m.remove("nullable");
        if is_true(&m, "x-kubernetes-preserve-unknown-fields") {
            m.remove("items");
            m.remove("properties");
        }
        if !m.contains_key("items") && m.get("type").and_then(Value::as_str) == Some("array") {
            m.remove("type");
        }
        let nullable_props: Vec<String> = m
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| {
                p.iter()
                    .filter(|(_, s)| s.get("nullable").and_then(Value::as_bool) == Some(true))
                    .map(|(k, _)| k.clone())
                    .collect()
            })
            .unwrap_or_default();
        if let Some(required) = m.get_mut("required").and_then(Value::as_array_mut) {
            required.retain(|r| {
                r.as_str()
                    .is_none_or(|r| !nullable_props.iter().any(|n| n == r))
            });
        }
        let nullable_values = m
            .get("additionalProperties")
            .and_then(|a| a.get("nullable"))
            .and_then(Value::as_bool)
            == Some(true);
        if nullable_values {
            m.remove("required");
        }
    }
    if let Some(props) = m.get_mut("properties").and_then(Value::as_object_mut) {
        for v in props.values_mut() {
            *v = publish_node(v, flavor);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = m.get_mut(key) {
            if child.is_object() {
                *child = publish_node(child, flavor);
            }
        }
    }
    add_embedded_properties(&mut m, flavor);
    Value::Object(m)
}

/// Kube's `addEmbeddedProperties` for one node (children were handled on the way down).
fn add_embedded_properties(m: &mut Map<String, Value>, flavor: Flavor) {
    if flavor == Flavor::V2 && is_true(m, "x-kubernetes-preserve-unknown-fields") {
        // kubectl's v2 validation would refuse unknown fields next to these properties.
        return;
    }
    if !is_true(m, "x-kubernetes-embedded-resource") {
        return;
    }
    let mut api_version = type_meta_property("apiVersion");
    api_version["description"] = json!(EMBEDDED_API_VERSION_DESCRIPTION);
    let mut kind = type_meta_property("kind");
    kind["description"] = json!(EMBEDDED_KIND_DESCRIPTION);
    let props = m.entry("properties").or_insert_with(|| json!({}));
    if let Some(props) = props.as_object_mut() {
        props.insert("apiVersion".into(), api_version);
        props.insert("kind".into(), kind);
        props.insert(
            "metadata".into(),
            json!({"$ref": flavor.reference(OBJECT_META), "description": OBJECT_META_DESCRIPTION}),
        );
    }
    let required = m.entry("required").or_insert_with(|| json!([]));
    if let Some(required) = required.as_array_mut() {
        for key in ["kind", "apiVersion"] {
            if !required.iter().any(|r| r == key) {
                required.push(json!(key));
            }
        }
    }
}

fn gvk_extension(group: &str, version: &str, kind: &str) -> Value {
    json!([{"group": group, "version": version, "kind": kind}])
}

/// The published schema of a CR kind (kube's `buildKubeNative`).
fn kind_schema(crd: &CrdInfo, v: &VersionInfo, flavor: Flavor) -> Value {
    let schema = v.schema.as_ref().map(|s| s.value());
    let preserve_root = schema
        .as_ref()
        .and_then(|s| s.get("x-kubernetes-preserve-unknown-fields"))
        .and_then(Value::as_bool)
        == Some(true);
    let mut schema = match &schema {
        Some(s) if s.is_object() && !(flavor == Flavor::V2 && preserve_root) => {
            let mut published = publish_node(s, flavor);
            if let Some(m) = published.as_object_mut() {
                let props = m.entry("properties").or_insert_with(|| json!({}));
                if let Some(props) = props.as_object_mut() {
                    props.insert(
                        "metadata".into(),
                        json!({"$ref": flavor.reference(OBJECT_META), "description": OBJECT_META_DESCRIPTION}),
                    );
                    props.insert("apiVersion".into(), type_meta_property("apiVersion"));
                    props.insert("kind".into(), type_meta_property("kind"));
                }
            }
            published
        }
        // Without properties kubectl would forbid every field but apiVersion/kind/metadata.
        _ => json!({"type": "object"}),
    };
    schema["x-kubernetes-group-version-kind"] = gvk_extension(&crd.group, &v.name, &crd.kind);
    schema
}

/// The published schema of a CR list kind (kube's `buildListSchema`).
fn list_schema(crd: &CrdInfo, v: &VersionInfo, flavor: Flavor) -> Value {
    json!({
        "description": format!("{} is a list of {}", crd.list_kind, crd.kind),
        "required": ["items"],
        "properties": {
            "apiVersion": type_meta_property("apiVersion"),
            "items": {
                "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", crd.plural),
                "type": "array",
                "items": {"$ref": flavor.reference(&definition_name(&crd.group, &v.name, &crd.kind))},
            },
            "kind": type_meta_property("kind"),
            "metadata": {"$ref": flavor.reference(LIST_META), "description": LIST_META_DESCRIPTION},
        },
        "x-kubernetes-group-version-kind": gvk_extension(&crd.group, &v.name, &crd.list_kind),
    })
}

/// A built-in definition in the given flavor: v3 references live under
/// `#/components/schemas/`, and a reference with siblings is wrapped in `allOf`.
fn builtin_in_flavor(def: &Value, flavor: Flavor) -> Value {
    match def {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                out.insert(k.clone(), builtin_in_flavor(v, flavor));
            }
            // v2 has no `oneOf`: kube writes IntOrString and Quantity there as strings.
            if flavor == Flavor::V2 && out.contains_key("oneOf") && !out.contains_key("type") {
                out.remove("oneOf");
                out.insert("type".into(), json!("string"));
            }
            if flavor == Flavor::V3 {
                if let Some(Value::String(r)) = out.get("$ref").cloned() {
                    let v3 = r.replacen("#/definitions/", "#/components/schemas/", 1);
                    if out.len() == 1 {
                        out.insert("$ref".into(), json!(v3));
                    } else {
                        out.remove("$ref");
                        out.insert("allOf".into(), json!([{"$ref": v3}]));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|v| builtin_in_flavor(v, flavor)).collect()),
        other => other.clone(),
    }
}

/// Add the built-in definitions `paths` and `schemas` refer to, transitively.
fn add_referenced_builtins(
    paths: &Map<String, Value>,
    schemas: &mut Map<String, Value>,
    flavor: Flavor,
) {
    let builtins = builtin_definitions();
    let mut pending: Vec<String> = Vec::new();
    for s in schemas.values().chain(paths.values()) {
        collect_refs(s, &mut pending);
    }
    while let Some(name) = pending.pop() {
        if schemas.contains_key(&name) {
            continue;
        }
        if let Some(def) = builtins.get(&name) {
            let def = builtin_in_flavor(def, flavor);
            collect_refs(&def, &mut pending);
            schemas.insert(name, def);
        }
    }
}

fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("$ref", Value::String(r)) => {
                        if let Some(name) = r.rsplit('/').next() {
                            out.push(name.to_string());
                        }
                    }
                    _ => collect_refs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_refs(x, out)),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------
// Documents
// ---------------------------------------------------------------------------------------

/// The paths and definitions of everything published for one group-version.
struct Published {
    paths: Map<String, Value>,
    schemas: Map<String, Value>,
}

fn publish_builtin(r: &Resource, flavor: Flavor) -> Published {
    let mut schemas = Map::new();
    for def in [&r.kind_def, &r.list_def] {
        if let Some(d) = builtin_definitions().get(def.as_str()) {
            schemas.insert(def.clone(), builtin_in_flavor(d, flavor));
        }
    }
    let mut p = Published {
        paths: path_items(r, flavor),
        schemas,
    };
    add_referenced_builtins(&p.paths, &mut p.schemas, flavor);
    p
}

fn publish_custom(
    group: &str,
    version: &str,
    crds: &[Arc<CrdInfo>],
    flavor: Flavor,
) -> Option<Published> {
    let mut p = Published {
        paths: Map::new(),
        schemas: Map::new(),
    };
    for crd in crds.iter().filter(|c| c.group == group) {
        let Some(v) = crd.served_version(version) else {
            continue;
        };
        p.paths
            .extend(path_items(&Resource::custom(crd, v), flavor));
        p.schemas.insert(
            definition_name(group, version, &crd.kind),
            kind_schema(crd, v, flavor),
        );
        p.schemas.insert(
            definition_name(group, version, &crd.list_kind),
            list_schema(crd, v, flavor),
        );
    }
    if p.paths.is_empty() {
        return None;
    }
    if flavor == Flavor::V3 {
        p.schemas.values_mut().for_each(wrap_refs);
    }
    add_referenced_builtins(&p.paths, &mut p.schemas, flavor);
    Some(p)
}

/// kube-openapi's `WrapRefs` for v3 schemas: OpenAPI 3.0 ignores what sits beside a
/// `$ref`, so a reference with any sibling keyword (`description`, `default`, an
/// extension, ...) keeps the siblings and moves the reference into `allOf: [{$ref}]`.
/// Walks schema positions only (never `default`, `enum` or `example` values).
fn wrap_refs(schema: &mut Value) {
    let Some(m) = schema.as_object_mut() else {
        return;
    };
    if m.len() > 1 {
        if let Some(reference) = m.remove("$ref") {
            m.insert("allOf".into(), json!([{"$ref": reference}]));
        }
    }
    for key in ["properties", "patternProperties", "definitions"] {
        if let Some(children) = m.get_mut(key).and_then(Value::as_object_mut) {
            children.values_mut().for_each(wrap_refs);
        }
    }
    for key in ["allOf", "anyOf", "oneOf", "items"] {
        match m.get_mut(key) {
            Some(Value::Array(children)) => children.iter_mut().for_each(wrap_refs),
            Some(child @ Value::Object(_)) => wrap_refs(child),
            _ => {}
        }
    }
    for key in ["additionalProperties", "not"] {
        if let Some(child) = m.get_mut(key) {
            wrap_refs(child);
        }
    }
}

/// The served group-versions of the CRDs, sorted.
fn custom_group_versions(crds: &[Arc<CrdInfo>]) -> BTreeMap<(String, String), ()> {
    let mut out = BTreeMap::new();
    for crd in crds.iter().filter(|c| !builtin::is_builtin_group(&c.group)) {
        for v in crd.versions.iter().filter(|v| v.served) {
            out.insert((crd.group.clone(), v.name.clone()), ());
        }
    }
    out
}

fn security_definitions() -> Value {
    json!({"BearerToken": {"description": "Bearer Token authentication", "type": "apiKey", "name": "authorization", "in": "header"}})
}

/// `GET /openapi/v2`: one Swagger 2.0 document with namespaces, CRDs and every served
/// CR version.
pub fn openapi_v2(served: &builtin::Served, crds: &[Arc<CrdInfo>]) -> Value {
    let mut paths = Map::new();
    let mut definitions = Map::new();
    let mut add = |p: Published| {
        paths.extend(p.paths);
        definitions.extend(p.schemas);
    };
    for r in served.resources() {
        add(publish_builtin(&Resource::builtin(r), Flavor::V2));
    }
    for (group, version) in custom_group_versions(crds).into_keys() {
        if let Some(p) = publish_custom(&group, &version, crds, Flavor::V2) {
            add(p);
        }
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": INFO_VERSION},
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": security_definitions(),
        "security": [{"BearerToken": []}],
    })
}

fn v3_document(p: Published) -> Value {
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
        "paths": p.paths,
        "components": {"schemas": p.schemas},
    })
}

/// A document as served: its bytes and their [`hash`].
#[derive(Clone, Debug)]
pub struct Served {
    pub bytes: Bytes,
    pub hash: String,
}

impl Served {
    /// `doc` encoded to serve.
    fn of(doc: &Value) -> Served {
        let bytes = Bytes::from(serde_json::to_vec(doc).unwrap_or_default());
        let hash = hash(&bytes);
        Served { bytes, hash }
    }
}

/// The built-in group-versions' documents: kube's, as recorded
/// ([`apimachinery::kube_openapi`]), hashed once.
fn builtin_v3() -> &'static BTreeMap<String, Kept> {
    static DOCS: OnceLock<BTreeMap<String, Kept>> = OnceLock::new();
    DOCS.get_or_init(|| {
        apimachinery::kube_openapi::builtin_openapi_v3()
            .iter()
            .map(|(gv, packed)| {
                let kept = Kept {
                    hash: hash(&packed.unpack()),
                    packed: packed.clone(),
                };
                (gv.clone(), kept)
            })
            .collect()
    })
}

/// The documents made from the CRD catalog, kept between changes as kube-openapi keeps
/// them between changes of the specs: `/openapi/v2` and the v3 index once per catalog
/// generation; each CRD group-version's v3 document until a CRD of that group changes
/// (so a change rebuilds its own group's document, not every group's). Only documents
/// that exist are kept, so what clients ask for cannot grow it.
#[derive(Default)]
pub struct Documents {
    made: std::sync::Mutex<Made>,
    groups: std::sync::Mutex<std::collections::HashMap<String, GroupDocument>>,
}

#[derive(Default)]
struct Made {
    /// The catalog generation the documents below were made at.
    generation: u64,
    v2: Option<Kept>,
    v3_index: Option<Arc<Value>>,
}

/// A CRD group-version's v3 document and the CRDs of the group it was made from
/// (compared by identity: a CRD compiles to a new `CrdInfo` whenever its spec
/// changes).
struct GroupDocument {
    from: Vec<Arc<CrdInfo>>,
    kept: Kept,
}

/// A document kept between requests: its hash, and its bytes compressed (documents
/// are mostly descriptions: inflating one per request costs a few milliseconds,
/// keeping kube's built-in ones whole about 20 MB, and those of hundreds of large
/// CRDs more than the CRDs themselves).
#[derive(Clone)]
struct Kept {
    hash: String,
    packed: Packed,
}

impl Kept {
    fn of(served: &Served) -> Kept {
        Kept {
            hash: served.hash.clone(),
            packed: Packed::pack(&served.bytes),
        }
    }

    fn served(&self) -> Served {
        Served {
            bytes: Bytes::from(self.packed.unpack()),
            hash: self.hash.clone(),
        }
    }
}

impl Documents {
    /// What was made at `generation` (a newer generation empties it first). Readers
    /// take the generation before the CRDs they make from, so a document kept under a
    /// generation is at least that new.
    fn at(&self, generation: u64) -> std::sync::MutexGuard<'_, Made> {
        let mut made = self.made.lock().unwrap_or_else(|e| e.into_inner());
        if made.generation != generation {
            *made = Made {
                generation,
                ..Made::default()
            };
        }
        made
    }

    /// `/openapi/v2` as JSON, made by `make` once per generation.
    pub fn v2(&self, generation: u64, make: impl FnOnce() -> Value) -> Served {
        let mut made = self.at(generation);
        made.v2
            .get_or_insert_with(|| Kept::of(&Served::of(&make())))
            .served()
    }

    /// `/openapi/v3` over `crds` (the catalog at `generation`), made once per
    /// generation from the group-versions' documents (kept across generations).
    pub fn v3_index(
        &self,
        generation: u64,
        served: &builtin::Served,
        crds: &[Arc<CrdInfo>],
    ) -> Arc<Value> {
        let mut made = self.at(generation);
        if let Some(index) = &made.v3_index {
            return index.clone();
        }
        let by_group = by_group(crds);
        let index = openapi_v3_index_with(served, crds, |group, version| {
            let gv = format!("apis/{group}/{version}");
            let of_group = by_group.get(group).map_or(&[][..], Vec::as_slice);
            self.v3_custom(&gv, group, version, of_group)
                .map(|kept| kept.hash)
        });
        // Documents of group-versions no longer served go.
        let paths = index.get("paths").and_then(Value::as_object);
        self.groups
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|gv, _| paths.is_some_and(|p| p.contains_key(gv)));
        let index = Arc::new(index);
        made.v3_index = Some(index.clone());
        index
    }

    /// `/openapi/v3/{gv}` over `crds` (the catalog); `None` (404) when nothing is
    /// served there.
    pub fn v3_path(
        &self,
        served: &builtin::Served,
        gv: &str,
        crds: &[Arc<CrdInfo>],
    ) -> Option<Served> {
        match custom_gv(gv) {
            Some((group, version)) => {
                let of_group: Vec<Arc<CrdInfo>> =
                    crds.iter().filter(|c| c.group == group).cloned().collect();
                self.v3_custom(gv, group, version, &of_group)
                    .map(|kept| kept.served())
            }
            None => openapi_v3_path(served, gv, crds),
        }
    }

    /// The document of a CRD group-version from the CRDs of its group: the one kept
    /// when made from the same CRDs, else made now and kept.
    fn v3_custom(
        &self,
        gv: &str,
        group: &str,
        version: &str,
        of_group: &[Arc<CrdInfo>],
    ) -> Option<Kept> {
        let mut groups = self.groups.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(kept) = groups.get(gv) {
            let same = kept.from.len() == of_group.len()
                && kept
                    .from
                    .iter()
                    .zip(of_group)
                    .all(|(a, b)| Arc::ptr_eq(a, b));
            if same {
                return Some(kept.kept.clone());
            }
        }
        let Some(served) = custom_document(group, version, of_group) else {
            groups.remove(gv);
            return None;
        };
        let kept = Kept::of(&served);
        groups.insert(
            gv.to_owned(),
            GroupDocument {
                from: of_group.to_vec(),
                kept: kept.clone(),
            },
        );
        Some(kept)
    }
}

/// `apis/{group}/{version}` of a group that is not built in: its group and version.
fn custom_gv(gv: &str) -> Option<(&str, &str)> {
    let (group, version) = gv.strip_prefix("apis/")?.split_once('/')?;
    (!version.contains('/') && !builtin::is_builtin_group(group)).then_some((group, version))
}

/// The CRDs by group, each group's in the catalog's order.
fn by_group(crds: &[Arc<CrdInfo>]) -> BTreeMap<&str, Vec<Arc<CrdInfo>>> {
    let mut out: BTreeMap<&str, Vec<Arc<CrdInfo>>> = BTreeMap::new();
    for crd in crds {
        out.entry(crd.group.as_str()).or_default().push(crd.clone());
    }
    out
}

/// `GET /openapi/v3/{gv}` where `gv` is `api/v1` or `apis/{group}/{version}`; `None`
/// (404) when nothing is served there.
pub fn openapi_v3_path(
    served: &builtin::Served,
    gv: &str,
    crds: &[Arc<CrdInfo>],
) -> Option<Served> {
    if gv == "api/v1" {
        return builtin_v3().get(gv).map(Kept::served);
    }
    let rest = gv.strip_prefix("apis/")?;
    let (group, version) = rest.split_once('/')?;
    if version.contains('/') {
        return None;
    }
    if builtin::is_builtin_group(group) {
        if !served.serves_version(group, version) {
            return None;
        }
        return builtin_v3().get(gv).map(Kept::served);
    }
    custom_document(group, version, crds)
}

/// A CRD group-version's v3 document as served; `None` when no CRD serves it.
fn custom_document(group: &str, version: &str, crds: &[Arc<CrdInfo>]) -> Option<Served> {
    Some(Served::of(&openapi_v3_custom(group, version, crds)?))
}

/// The document of a CRD group-version; `None` when no CRD serves it.
pub fn openapi_v3_custom(group: &str, version: &str, crds: &[Arc<CrdInfo>]) -> Option<Value> {
    publish_custom(group, version, crds, Flavor::V3).map(v3_document)
}

/// `GET /openapi/v3`: each group-version with the URL of its document, whose `hash`
/// is the [`hash`] of the bytes served.
pub fn openapi_v3_index(served: &builtin::Served, crds: &[Arc<CrdInfo>]) -> Value {
    openapi_v3_index_with(served, crds, |group, version| {
        openapi_v3_path(served, &format!("apis/{group}/{version}"), crds).map(|doc| doc.hash)
    })
}

/// [`openapi_v3_index`] with the hash of each CRD group-version's document given by
/// `custom_hash(group, version)` (`None`: not served).
fn openapi_v3_index_with(
    served: &builtin::Served,
    crds: &[Arc<CrdInfo>],
    mut custom_hash: impl FnMut(&str, &str) -> Option<String>,
) -> Value {
    let mut paths = Map::new();
    let mut add = |gv: &str, hash: &str| {
        paths.insert(
            gv.to_string(),
            json!({"serverRelativeURL": format!("/openapi/v3/{gv}?hash={hash}")}),
        );
    };
    for (gv, doc) in builtin_v3() {
        let (group, version) = match gv.strip_prefix("apis/").and_then(|r| r.split_once('/')) {
            Some((g, v)) => (g, v),
            None => ("", "v1"),
        };
        if served.serves_version(group, version) {
            add(gv, &doc.hash);
        }
    }
    for (group, version) in custom_group_versions(crds).into_keys() {
        if let Some(hash) = custom_hash(&group, &version) {
            add(&format!("apis/{group}/{version}"), &hash);
        }
    }
    json!({"paths": paths})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::crd::default_crd;

    fn widget_crd(extra_version: bool) -> CrdInfo {
        let mut versions = vec![json!({
            "name": "v1", "served": true, "storage": true,
            "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
            "schema": {"openAPIV3Schema": {"type": "object", "description": "A widget.", "example": {"x": 1}, "properties": {
                "spec": {"type": "object", "externalDocs": {"url": "https://example.com"}, "properties": {
                    "replicas": {"type": "integer", "x-kubernetes-immutable": true, "default": 1},
                    "port": {"x-kubernetes-int-or-string": true},
                    "note": {"type": "string", "nullable": true},
                    "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                    "byName": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                        "x-kubernetes-immutable-keys": true,
                        "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"},
                        "x-kubernetes-property-names": {"type": "string", "maxLength": 5}},
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}},
                    "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"a": {"type": "string"}}},
                    "choice": {"type": "string", "oneOf": [{"enum": ["a"]}, {"enum": ["b"]}]}
                }, "required": ["replicas", "note"],
                "x-kubernetes-validations": [{"rule": "self.replicas >= 0", "message": "non-negative"}]},
                "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
            }}}
        })];
        if extra_version {
            versions.push(json!({"name": "v2", "served": true, "storage": false,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}));
        }
        let mut crd = json!({
            "metadata": {"name": "widgets.crud.example.com"},
            "spec": {"group": "crud.example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]}, "versions": versions}
        });
        default_crd(&mut crd);
        CrdInfo::from_crd(&crd).expect("valid CRD")
    }

    fn dangling_refs(doc: &Value, prefix: &str, defs: &Map<String, Value>) -> Vec<String> {
        let mut refs = Vec::new();
        collect_full_refs(doc, &mut refs);
        refs.into_iter()
            .filter(|r| !r.strip_prefix(prefix).is_some_and(|n| defs.contains_key(n)))
            .collect()
    }

    fn collect_full_refs(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    if let ("$ref", Value::String(r)) = (k.as_str(), x) {
                        out.push(r.clone());
                    } else {
                        collect_full_refs(x, out);
                    }
                }
            }
            Value::Array(a) => a.iter().for_each(|x| collect_full_refs(x, out)),
            _ => {}
        }
    }

    #[test]
    fn definition_names_reverse_the_group() {
        assert_eq!(
            definition_name("crud.example.com", "v1", "Widget"),
            "com.example.crud.v1.Widget"
        );
        assert_eq!(
            definition_name("stable.example.com", "v1beta1", "CronTabList"),
            "com.example.stable.v1beta1.CronTabList"
        );
    }

    #[test]
    fn builtin_definitions_load() {
        let defs = builtin_definitions();
        for name in [OBJECT_META, LIST_META, STATUS, DELETE_OPTIONS, PATCH, SCALE] {
            assert!(defs.contains_key(name), "{name}");
        }
        for r in builtin::resources() {
            assert!(defs.contains_key(&r.definition), "{}", r.definition);
            if r.verbs == ["create"] {
                continue;
            }
            let list = format!("{}List", r.definition);
            assert!(defs.contains_key(&list), "{list}");
        }
        assert_eq!(
            defs[OBJECT_META]["properties"]["ownerReferences"]["x-kubernetes-list-map-keys"],
            json!(["uid"])
        );
    }

    #[test]
    fn v3_document_for_custom_resources() {
        let crds = [Arc::new(widget_crd(false))];
        let doc = openapi_v3_custom("crud.example.com", "v1", &crds).expect("served");
        assert_eq!(doc["openapi"], "3.0.0");
        let schemas = doc["components"]["schemas"].as_object().expect("schemas");
        assert_eq!(
            dangling_refs(&doc, "#/components/schemas/", schemas),
            Vec::<String>::new()
        );
        for name in [
            OBJECT_META,
            LIST_META,
            STATUS,
            DELETE_OPTIONS,
            PATCH,
            SCALE,
            "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
        ] {
            assert!(schemas.contains_key(name), "{name}");
        }
        let widget = &schemas["com.example.crud.v1.Widget"];
        assert_eq!(
            widget["x-kubernetes-group-version-kind"],
            json!([{"group": "crud.example.com", "version": "v1", "kind": "Widget"}])
        );
        assert_eq!(widget["description"], "A widget.");
        // A `$ref` with siblings is wrapped in `allOf`, as kube-openapi's `WrapRefs`.
        let object_meta = json!({
            "description": OBJECT_META_DESCRIPTION,
            "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
        });
        assert_eq!(widget["properties"]["metadata"], object_meta);
        assert!(widget["properties"]["apiVersion"]["description"]
            .as_str()
            .unwrap()
            .starts_with("APIVersion defines"));
        assert!(widget.get("example").is_none());
        let spec = &widget["properties"]["spec"];
        assert!(spec.get("externalDocs").is_none());
        // Extensions are carried unchanged.
        assert_eq!(
            spec["properties"]["replicas"]["x-kubernetes-immutable"],
            true
        );
        assert_eq!(spec["properties"]["replicas"]["default"], 1);
        assert_eq!(
            spec["properties"]["byName"]["x-kubernetes-immutable-keys"],
            true
        );
        assert_eq!(
            spec["properties"]["byName"]["x-kubernetes-list-map-keys"],
            json!(["name"])
        );
        assert_eq!(
            spec["properties"]["labels"]["x-kubernetes-property-names"],
            json!({"type": "string", "maxLength": 5})
        );
        assert_eq!(
            spec["x-kubernetes-validations"],
            json!([{"rule": "self.replicas >= 0", "message": "non-negative"}])
        );
        assert_eq!(spec["properties"]["tags"]["x-kubernetes-list-type"], "set");
        assert_eq!(
            spec["properties"]["raw"]["properties"]["a"]["type"],
            "string"
        );
        assert_eq!(spec["properties"]["note"]["nullable"], true);
        assert_eq!(
            spec["properties"]["choice"]["oneOf"],
            json!([{"enum": ["a"]}, {"enum": ["b"]}])
        );
        // Kube's Unfold spells int-or-string out.
        assert_eq!(
            spec["properties"]["port"]["anyOf"],
            json!([{"type": "integer"}, {"type": "string"}])
        );
        // Embedded resources get TypeMeta and ObjectMeta.
        let template = &spec["properties"]["template"];
        assert_eq!(template["required"], json!(["kind", "apiVersion"]));
        assert!(template["properties"]["kind"]["description"]
            .as_str()
            .unwrap()
            .starts_with("kind is a string value"));
        assert_eq!(template["properties"]["spec"]["type"], "object");
        assert_eq!(template["properties"]["metadata"], object_meta);
        let list = &schemas["com.example.crud.v1.WidgetList"];
        assert_eq!(
            list["x-kubernetes-group-version-kind"][0]["kind"],
            "WidgetList"
        );
        assert_eq!(
            list["properties"]["items"]["items"]["$ref"],
            "#/components/schemas/com.example.crud.v1.Widget"
        );
        assert_eq!(list["required"], json!(["items"]));
        assert_eq!(
            list["properties"]["metadata"],
            json!({
                "description": LIST_META_DESCRIPTION,
                "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"}],
            })
        );
        // No `$ref` keeps a sibling anywhere in the document.
        fn no_siblings(v: &Value) -> bool {
            match v {
                Value::Object(m) => {
                    (m.len() == 1 || !m.contains_key("$ref")) && m.values().all(no_siblings)
                }
                Value::Array(a) => a.iter().all(no_siblings),
                _ => true,
            }
        }
        assert!(no_siblings(&doc));
    }

    #[test]
    fn v3_operations_carry_actions_gvk_and_field_validation() {
        let crds = [Arc::new(widget_crd(false))];
        let doc = openapi_v3_custom("crud.example.com", "v1", &crds).expect("served");
        let paths = doc["paths"].as_object().expect("paths");
        let mut keys: Vec<&str> = paths.keys().map(String::as_str).collect();
        keys.sort();
        assert_eq!(
            keys,
            vec![
                "/apis/crud.example.com/v1/namespaces/{namespace}/widgets",
                "/apis/crud.example.com/v1/namespaces/{namespace}/widgets/{name}",
                "/apis/crud.example.com/v1/namespaces/{namespace}/widgets/{name}/scale",
                "/apis/crud.example.com/v1/namespaces/{namespace}/widgets/{name}/status",
                "/apis/crud.example.com/v1/widgets",
            ]
        );
        let item = &paths["/apis/crud.example.com/v1/namespaces/{namespace}/widgets/{name}"];
        let patch = &item["patch"];
        assert_eq!(
            patch["operationId"],
            "patchCrudExampleComV1NamespacedWidget"
        );
        assert_eq!(patch["tags"], json!(["crudExampleCom_v1"]));
        assert_eq!(
            patch["description"],
            "partially update the specified Widget"
        );
        assert_eq!(patch["x-kubernetes-action"], "patch");
        assert_eq!(
            patch["x-kubernetes-group-version-kind"],
            json!({"group": "crud.example.com", "version": "v1", "kind": "Widget"})
        );
        let names: Vec<&str> = patch["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            vec!["dryRun", "fieldManager", "fieldValidation", "force"]
        );
        assert_eq!(patch["parameters"][2]["in"], "query");
        let content: Vec<&String> = patch["requestBody"]["content"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(
            content,
            vec![
                "application/apply-patch+yaml",
                "application/json-patch+json",
                "application/merge-patch+json"
            ]
        );
        assert_eq!(item["delete"]["description"], "delete a Widget");
        assert_eq!(
            item["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/com.example.crud.v1.Widget"
        );
        let path_params: Vec<&str> = item["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(path_params, vec!["name", "namespace", "pretty"]);
        let all = &paths["/apis/crud.example.com/v1/widgets"];
        assert_eq!(
            all["get"]["operationId"],
            "listCrudExampleComV1WidgetForAllNamespaces"
        );
        assert!(
            all["get"].get("parameters").is_none(),
            "shared parameters move to the path"
        );
        let coll = &paths["/apis/crud.example.com/v1/namespaces/{namespace}/widgets"];
        assert_eq!(
            coll["post"]["operationId"],
            "createCrudExampleComV1NamespacedWidget"
        );
        assert_eq!(coll["post"]["requestBody"]["required"], true);
        assert_eq!(coll["delete"]["x-kubernetes-action"], "deletecollection");
        let scale = &paths["/apis/crud.example.com/v1/namespaces/{namespace}/widgets/{name}/scale"];
        assert_eq!(
            scale["get"]["operationId"],
            "readCrudExampleComV1NamespacedWidgetScale"
        );
        assert_eq!(
            scale["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/io.k8s.api.autoscaling.v1.Scale"
        );
        assert_eq!(
            paths["/apis/crud.example.com/v1/namespaces/{namespace}/widgets/{name}/status"]["put"]
                ["description"],
            "replace status of the specified Widget"
        );
    }

    #[test]
    fn v2_document_applies_kube_v2_rules() {
        let crds = [Arc::new(widget_crd(true))];
        let doc = openapi_v2(&builtin::Served::kube_default(), &crds);
        assert_eq!(doc["swagger"], "2.0");
        let defs = doc["definitions"].as_object().expect("definitions");
        assert_eq!(
            dangling_refs(&doc, "#/definitions/", defs),
            Vec::<String>::new()
        );
        let spec = &defs["com.example.crud.v1.Widget"]["properties"]["spec"];
        // No junctors, no nullable (and nullable properties are not required), nothing
        // under preserve-unknown-fields in v2.
        assert!(spec["properties"]["port"].get("anyOf").is_none());
        assert!(spec["properties"]["choice"].get("oneOf").is_none());
        assert_eq!(spec["properties"]["note"], json!({}));
        assert_eq!(spec["required"], json!(["replicas"]));
        assert!(spec["properties"]["raw"].get("properties").is_none());
        assert_eq!(
            spec["properties"]["replicas"]["x-kubernetes-immutable"],
            true
        );
        // A preserve-unknown-fields root publishes as a bare object.
        assert_eq!(
            defs["com.example.crud.v2.Widget"],
            json!({"type": "object", "x-kubernetes-group-version-kind": [{"group": "crud.example.com", "version": "v2", "kind": "Widget"}]})
        );
        let patch = &doc["paths"]
            ["/apis/crud.example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"];
        assert_eq!(
            patch["parameters"][0],
            json!({"name": "body", "in": "body", "required": true, "schema": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"}})
        );
        assert!(doc["paths"].get("/api/v1/namespaces").is_some());
        assert!(doc["paths"]
            .get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
            .is_some());
    }

    #[test]
    fn builtin_documents_are_kubes() {
        let ext = openapi_v3_path(
            &builtin::Served::kube_default(),
            "apis/apiextensions.k8s.io/v1",
            &[],
        )
        .expect("apiextensions");
        assert_eq!(ext.hash, hash(&ext.bytes));
        let doc: Value = serde_json::from_slice(&ext.bytes).expect("JSON");
        assert_eq!(
            doc["components"]["schemas"][CRD_DEF]["x-kubernetes-group-version-kind"][0]["kind"],
            "CustomResourceDefinition"
        );
        assert!(openapi_v3_path(&builtin::Served::kube_default(), "api/v1", &[]).is_some());
        assert!(openapi_v3_path(
            &builtin::Served::kube_default(),
            "apis/apiextensions.k8s.io/v1beta1",
            &[]
        )
        .is_none());
        assert!(openapi_v3_path(
            &builtin::Served::kube_default(),
            "apis/crud.example.com/v1",
            &[]
        )
        .is_none());
        assert!(
            openapi_v3_path(&builtin::Served::kube_default(), "apis/apps/v1/extra", &[]).is_none()
        );
    }

    #[test]
    fn index_links_each_group_version_with_its_hash() {
        let crds = [Arc::new(widget_crd(true))];
        let index = openapi_v3_index(&builtin::Served::kube_default(), &crds);
        let paths = index["paths"].as_object().expect("paths");
        let keys: Vec<&str> = paths.keys().map(String::as_str).collect();
        let mut expected = vec!["api/v1".to_string()];
        for (g, v) in builtin::Served::kube_default().group_versions() {
            expected.push(format!("apis/{g}/{v}"));
        }
        expected.extend([
            "apis/crud.example.com/v1".into(),
            "apis/crud.example.com/v2".into(),
        ]);
        expected.sort();
        assert_eq!(keys, expected);
        let doc = openapi_v3_custom("crud.example.com", "v2", &crds).expect("served");
        let h = Served::of(&doc).hash;
        let tag = etag(&h);
        assert_eq!(
            openapi_v3_path(
                &builtin::Served::kube_default(),
                "apis/crud.example.com/v2",
                &crds
            )
            .map(|d| d.hash),
            Some(h.clone())
        );
        assert_eq!(h.len(), 128);
        assert!(h
            .chars()
            .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase()));
        assert_eq!(tag, format!("\"{h}\""));
        assert_eq!(
            paths["apis/crud.example.com/v2"]["serverRelativeURL"],
            format!("/openapi/v3/apis/crud.example.com/v2?hash={h}")
        );
    }

    #[test]
    fn operation_ids_follow_kube() {
        assert_eq!(
            valid_operation_id("crud.example.com", true),
            "CrudExampleCom"
        );
        assert_eq!(
            valid_operation_id("crud.example.com", false),
            "crudExampleCom"
        );
        // Only a leading digit is dropped, as in kube.
        assert_eq!(
            valid_operation_id("2048.k8s.example", false),
            "048K8sExample"
        );
        assert_eq!(
            operation_id_and_tag(
                "deletecollectionNamespacedWidget",
                "/apis/crud.example.com/v1/namespaces/{namespace}/widgets"
            ),
            (
                "deletecollectionCrudExampleComV1NamespacedWidget".to_string(),
                "crudExampleCom_v1".to_string()
            )
        );
        assert_eq!(article("Widget"), " a ");
        assert_eq!(article("Apple"), " an ");
        assert_eq!(article("Stats"), " ");
        assert_eq!(article("Class"), " a ");
    }
}
