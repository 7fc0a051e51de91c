//! Server-side apply and `metadata.managedFields`, merged by the schema (kube's
//! structured-merge-diff plus apimachinery's field manager). Pure functions over
//! `serde_json::Value`; no IO.
//!
//! Two entry points, one per kind of write:
//!
//! - [`apply`]: a `PATCH` with `application/apply-patch+yaml`: merges the applied
//!   configuration into the live object (or into nothing, to create it) for one field
//!   manager, fails on conflicts with other managers unless forced, removes fields the
//!   manager stopped applying, and records an `Apply` entry.
//! - [`record_update`]: every other write (POST, PUT, merge and JSON patches, on the
//!   main resource or `/status`): records an `Update` entry for the fields the write
//!   changed.
//! - [`scale::record_scale_update`]: a write of `/scale`, which moves only the
//!   ownership of the replicas field.
//!
//! Module map: `fieldpath` (path elements, field sets, `FieldsV1`), `schema` (the
//! structural schema as merge types), `fieldset` (fields of an object, comparisons),
//! `merge` (merging, removal, ownership bookkeeping), `managed` (entries, identities,
//! kube's field manager layers), `scale` (the scale handler).

pub mod fieldpath;
pub mod fieldset;
pub mod managed;
pub mod merge;
pub mod scale;
pub mod schema;

use crate::schema::structural::Structural;
use crate::status::{Cause, Status};
use fieldpath::{FieldSet, PathElement};
use managed::{Managed, ManagerId, APPLY, BEFORE_FIRST_APPLY, MAX_UPDATE_MANAGERS, UPDATE};
use merge::{Conflict, Managers, Updater, VersionedSet};
use schema::TypeRef;
use serde_json::{Map, Value};
use std::sync::LazyLock;

/// The annotation client-side `kubectl apply` keeps, which kube keeps in step for
/// server-side applies by the `kubectl` manager.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// kube's limit on the total size of an object's annotations.
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// The temporary manager an update's fields are computed for before they join the
/// updater's entry.
const CURRENT_OPERATION: &str = "current-operation";

/// What a write addresses: one served version of a custom resource kind.
#[derive(Clone, Copy, Debug)]
pub struct Scope<'a> {
    /// The version's structural schema.
    pub schema: &'a Structural,
    /// `group/version` of the request.
    pub api_version: &'a str,
    /// `Kind`.
    pub kind: &'a str,
    /// `""` for the main resource, `"status"` for `/status`.
    pub subresource: &'a str,
    /// Whether the status subresource is on (then the main resource never owns
    /// `status`, and `/status` owns only `status`).
    pub status_subresource: bool,
    /// `group/version` of every version the CRD defines; entries at other versions are
    /// dropped, as kube drops managers it cannot convert to. Empty: keep all.
    pub versions: &'a [String],
    /// The request time, RFC 3339 UTC seconds (`2024-01-02T03:04:05Z`).
    pub now: &'a str,
}

impl Scope<'_> {
    fn root(&self) -> TypeRef<'_> {
        TypeRef::root(self.schema)
    }

    /// The fields the strategy resets on this endpoint (kube's reset fields): one of
    /// three sets, made once.
    pub fn reset_fields(&self) -> &'static FieldSet {
        fn of(fields: &[&str]) -> FieldSet {
            let mut s = FieldSet::new();
            for f in fields {
                s.insert(&[PathElement::field(f)]);
            }
            s
        }
        static STATUS_ENDPOINT: LazyLock<FieldSet> = LazyLock::new(|| of(&["metadata", "spec"]));
        static MAIN_WITH_STATUS: LazyLock<FieldSet> = LazyLock::new(|| of(&["status"]));
        static NONE: LazyLock<FieldSet> = LazyLock::new(FieldSet::new);
        if self.subresource == "status" {
            &STATUS_ENDPOINT
        } else if self.status_subresource {
            &MAIN_WITH_STATUS
        } else {
            &NONE
        }
    }

    /// The object kube starts from when there is none yet.
    fn empty_object(&self) -> Value {
        let mut m = Map::new();
        m.insert("apiVersion".into(), Value::String(self.api_version.into()));
        m.insert("kind".into(), Value::String(self.kind.into()));
        Value::Object(m)
    }

    /// kube drops managers at versions it can no longer convert to.
    fn reconcile(&self, mut fields: Managers) -> Managers {
        if !self.versions.is_empty() {
            fields.retain(|_, vs| self.versions.contains(&vs.api_version));
        }
        fields
    }
}

/// Why a field set, a list item's identity or a `managedFields` entry could not be
/// read; the texts are kube's (structured-merge-diff's and the field manager's).
#[derive(Debug, thiserror::Error)]
pub enum FieldSetError {
    /// A `FieldsV1` key shorter than `x:`.
    #[error("key must be 2 characters long:")]
    KeyTooShort,
    /// A `FieldsV1` key without `:` after its type.
    #[error("missing colon: {0}")]
    MissingColon(String),
    /// A `v:` or `k:` key whose JSON does not decode.
    #[error("{0}")]
    ElementJson(#[source] serde_json::Error),
    /// An `i:` key that is no integer.
    #[error("{0}")]
    ElementIndex(#[source] std::num::ParseIntError),
    /// A `FieldsV1` level that is neither an object nor null.
    #[error("ReadMapCB: expect {{ or n, but found {0}")]
    FieldsV1NotAnObject(char),
    /// A `FieldsV1` key that is no path element.
    #[error("parsing key as path element: {0}")]
    PathElement(#[source] Box<FieldSetError>),
    /// An item of an atomic list has no identity.
    #[error("invalid indexing of non-associative list")]
    NonAssociativeList,
    /// A set item that is an object.
    #[error("associative list without keys has an element that's a map type")]
    SetItemMap,
    /// A set item that is a list.
    #[error("not supported: associative list with lists as elements")]
    SetItemList,
    /// A set item that is null.
    #[error("associative list without keys has an element that's an explicit null")]
    SetItemNull,
    /// A list-map item that is null.
    #[error("associative list with keys may not have a null element")]
    MapItemNull,
    /// A list-map item that is no object.
    #[error("associative list with keys may not have non-map elements")]
    MapItemNotMap,
    /// A list-map key missing from an item whose type is no map.
    #[error("couldn't find default value for {0}: associative list may not have non-map types")]
    KeyDefault(String),
    /// A list-map item without any key field (the keys quoted, space separated).
    #[error("associative list with keys has an element that omits all key fields [{0}] (and doesn't have default values for any key fields)")]
    MissingKeys(String),
    /// A `managedFields` entry whose operation is neither `Apply` nor `Update`.
    #[error("operation must be `Apply` or `Update`")]
    Operation,
    /// A `managedFields` entry without apiVersion.
    #[error("apiVersion must not be empty")]
    EmptyApiVersion,
    /// A `managedFields` entry without fieldsType.
    #[error("missing fieldsType in managed fields entry {0}")]
    MissingFieldsType(usize),
    /// A `managedFields` entry whose fieldsType is not `FieldsV1`.
    #[error("invalid fieldsType {} in managed fields entry {entry}", crate::field::go_quote(.fields_type))]
    InvalidFieldsType {
        /// The fieldsType.
        fields_type: String,
        /// The entry's index.
        entry: usize,
    },
    /// A `managedFields` entry whose `fieldsV1` does not decode.
    #[error("error decoding versioned set: {0}")]
    VersionedSet(#[source] Box<FieldSetError>),
}

/// Why an apply failed.
#[derive(Clone, Debug, PartialEq)]
pub enum ApplyError {
    /// Fields other managers own would change (409 `Conflict`).
    Conflicts(Vec<Conflict>),
    /// A malformed request (400 `BadRequest`).
    BadRequest(String),
    /// An error kube returns as a bare 500 without a reason (e.g. a field the schema
    /// does not declare: `failed to create typed patch object (...)`).
    Failed(String),
}

impl ApplyError {
    /// The kube `Status` for this error.
    pub fn to_status(&self) -> Status {
        match self {
            ApplyError::Conflicts(c) => conflict_status(c),
            ApplyError::BadRequest(m) => Status::bad_request(m.clone()),
            ApplyError::Failed(m) => Status {
                code: 500,
                reason: String::new(),
                message: m.clone(),
                details: None,
                metadata_continue: None,
                warnings: Vec::new(),
            },
        }
    }
}

impl std::fmt::Display for ApplyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_status().message)
    }
}

impl std::error::Error for ApplyError {}

/// kube's 409 for apply conflicts: one cause per field, the message grouped by manager.
fn conflict_status(conflicts: &[Conflict]) -> Status {
    let causes = conflicts
        .iter()
        .map(|c| Cause {
            reason: "FieldManagerConflict".into(),
            message: format!("conflict with {}", managed::print_manager(&c.manager)),
            field: c.path.to_string(),
        })
        .collect();
    let message = match conflicts {
        [one] => format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            managed::print_manager(&one.manager),
            one.path
        ),
        _ => {
            let mut by_manager: std::collections::BTreeMap<&str, Vec<String>> =
                std::collections::BTreeMap::new();
            for c in conflicts {
                by_manager
                    .entry(c.manager.as_str())
                    .or_default()
                    .push(c.path.to_string());
            }
            let mut lines = Vec::new();
            for (manager, paths) in by_manager {
                lines.push(format!(
                    "conflicts with {}:",
                    managed::print_manager(manager)
                ));
                lines.extend(paths.into_iter().map(|p| format!("- {p}")));
            }
            format!(
                "Apply failed with {} conflicts: {}",
                conflicts.len(),
                lines.join("\n")
            )
        }
    };
    Status::conflict_with_causes(message, causes)
}

/// The manager name of a write: `fieldManager`, else kube's prefix of the user agent.
pub fn manager_name(field_manager: &str, user_agent: &str) -> String {
    if field_manager.is_empty() {
        managed::manager_from_user_agent(user_agent)
    } else {
        field_manager.to_string()
    }
}

/// kube's checks of `fieldManager` and `force` on a PATCH (`PatchOptions`), as a 422.
/// `force` is `Some` when the query has a `force` parameter.
pub fn validate_patch_options(
    field_manager: &str,
    force: Option<bool>,
    is_apply: bool,
) -> Result<(), Status> {
    let path = crate::field::Path::new("fieldManager");
    let mut errs = Vec::new();
    if is_apply {
        if field_manager.is_empty() {
            errs.push(crate::field::Error::required(
                &path,
                "is required for apply patch",
            ));
        }
    } else if force.is_some() {
        errs.push(crate::field::Error::forbidden(
            &crate::field::Path::new("force"),
            "may not be specified for non-apply patch",
        ));
    }
    errs.extend(validate_field_manager(field_manager));
    if errs.is_empty() {
        Ok(())
    } else {
        Err(Status::invalid("PatchOptions", "meta.k8s.io", "", &errs))
    }
}

/// kube's `ValidateFieldManager` (also used for create and update options).
pub fn validate_field_manager(field_manager: &str) -> Vec<crate::field::Error> {
    let path = crate::field::Path::new("fieldManager");
    let mut errs = Vec::new();
    if field_manager.len() > managed::FIELD_MANAGER_MAX_LENGTH {
        errs.push(crate::field::Error::too_long(
            &path,
            managed::FIELD_MANAGER_MAX_LENGTH as i64,
        ));
    }
    for (i, c) in field_manager.char_indices() {
        if !managed::is_print(c) {
            errs.push(crate::field::Error::invalid(
                &path,
                Value::String(field_manager.to_string()),
                format!("invalid character {} (at position {i})", go_unicode_u(c)),
            ));
        }
    }
    errs
}

/// Go's `%#U`: `U+0007` followed by the quoted character when printable.
fn go_unicode_u(c: char) -> String {
    let code = format!("U+{:04X}", c as u32);
    if managed::is_print(c) {
        format!("{code} '{c}'")
    } else {
        code
    }
}

fn managed_fields_of(obj: &Value) -> Option<&Value> {
    obj.get("metadata")?.get("managedFields")
}

fn set_managed_fields(obj: &mut Value, fields: Option<Value>) {
    let Some(obj) = obj.as_object_mut() else {
        return;
    };
    match fields {
        Some(f) => {
            let meta = obj
                .entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(m) = meta.as_object_mut() {
                m.insert("managedFields".into(), f);
            }
        }
        None => {
            if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("managedFields");
            }
        }
    }
}

fn has_uid(obj: &Value) -> bool {
    obj.get("metadata")
        .and_then(|m| m.get("uid"))
        .and_then(Value::as_str)
        .is_some_and(|u| !u.is_empty())
}

/// kube's `decodeLiveOrNew`: a subresource write keeps the stored entries; otherwise
/// the request's entries win when they decode to something, `[]` resets them.
fn decode_live_or_new(live: &Value, new: &Value, subresource: bool) -> Managed {
    let decode_live = || {
        managed::parse_entries(managed_fields_of(live))
            .and_then(|e| Managed::decode(&e).ok())
            .unwrap_or_default()
    };
    if subresource {
        return decode_live();
    }
    let requested = managed::parse_entries(managed_fields_of(new));
    if managed::is_reset(requested.as_deref()) {
        return Managed::default();
    }
    match requested.map(|e| Managed::decode(&e)) {
        Some(Ok(m)) if !m.fields.is_empty() => m,
        _ => decode_live(),
    }
}

/// Record a non-apply write by `manager` (see [`manager_name`]) in `new`'s
/// `metadata.managedFields` (kube's `FieldManager.UpdateNoErrors`).
///
/// `old` is the stored object (`None` on create); `new` the object about to be
/// stored, after decoding, pruning and defaulting. Objects whose entries were reset
/// (or never tracked) stay untracked; when `new` cannot be walked by the schema its
/// managedFields are dropped, as kube does.
pub fn record_update(old: Option<&Value>, new: &mut Value, manager: &str, scope: &Scope) {
    if old.is_none() && scope.subresource.is_empty() && managed_fields_of(new).is_none() {
        return record_create(new, manager, scope);
    }
    record_update_by_sets(old, new, manager, scope);
}

/// [`record_update`] through decoded entries and field sets: the general path.
fn record_update_by_sets(old: Option<&Value>, new: &mut Value, manager: &str, scope: &Scope) {
    let empty;
    let live = match old {
        Some(o) => o,
        None => {
            empty = scope.empty_object();
            &empty
        }
    };
    let managed = decode_live_or_new(live, new, !scope.subresource.is_empty());
    set_managed_fields(new, None);
    // Untracked objects stay untracked until the next apply.
    if managed.fields.is_empty() && has_uid(live) {
        return;
    }
    if let Some(m) = update_managed(live, new, managed, manager, scope) {
        set_managed_fields(new, m.encode());
    }
}

/// [`record_update`] of a create that brings no entries of its own (nearly every
/// create): nobody else owns anything, so the updater owns every field the object
/// sets but the system's and the reset ones, written as `FieldsV1` without
/// building a [`FieldSet`]. Gives what [`record_update_by_sets`] gives.
fn record_create(new: &mut Value, manager: &str, scope: &Scope) {
    let root = scope.root();
    // The empty object the update starts from always converts.
    if !fieldset::validate(new, root, true).is_empty() {
        return;
    }
    // kube's order: the reset fields (with all below them), then the system fields.
    let fields = fieldset::added_fields_v1_without(
        new,
        root,
        [
            Some((scope.reset_fields(), true)),
            Some((managed::strip_set(), false)),
        ],
    );
    if fields.is_empty() {
        return;
    }
    let id = ManagerId::new(manager, UPDATE, scope.api_version, scope.subresource);
    let entry = managed::entry_value(id, Some(scope.now), Value::Object(fields));
    set_managed_fields(new, Some(Value::Array(vec![entry])));
}

/// kube's update chain below the untracked check: the fields that changed become the
/// updater's, joined with its previous entry, stamped with the request time.
fn update_managed(
    live: &Value,
    new: &Value,
    mut managed: Managed,
    manager: &str,
    scope: &Scope,
) -> Option<Managed> {
    let root = scope.root();
    if !fieldset::validate(new, root, true).is_empty()
        || !fieldset::validate(live, root, true).is_empty()
    {
        return None;
    }
    let key = ManagerId::new(manager, UPDATE, scope.api_version, scope.subresource).key();
    let updater = Updater {
        root,
        ignored: scope.reset_fields(),
    };
    let mut fields = updater.update(
        live,
        new,
        scope.api_version,
        scope.reconcile(managed.fields),
        CURRENT_OPERATION,
    );
    managed::strip_manager(&mut fields, CURRENT_OPERATION);
    if let Some(vs) = fields.remove(CURRENT_OPERATION) {
        let mut set = vs.set;
        if let Some(previous) = fields.remove(&key) {
            set.absorb(previous.set);
        }
        fields.insert(
            key.clone(),
            VersionedSet {
                set,
                api_version: vs.api_version,
                applied: vs.applied,
            },
        );
        managed.times.insert(key, Some(scope.now.to_string()));
    }
    managed.fields = fields;
    managed.cap_update_managers(MAX_UPDATE_MANAGERS);
    Some(managed)
}

/// `apiVersion` split as kube's `ParseGroupVersion` (more than one `/` is no version).
fn group_version(api_version: &str) -> Option<(&str, &str)> {
    match api_version.split_once('/') {
        None => Some(("", api_version)),
        Some((g, v)) if !v.contains('/') => Some((g, v)),
        _ => None,
    }
}

/// `group/version, Kind=kind` of an object, as kube prints a GroupVersionKind.
fn gvk_string(obj: &Value) -> String {
    let s = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or("");
    match group_version(s("apiVersion")) {
        Some((g, v)) => format!("{g}/{v}, Kind={}", s("kind")),
        None => "/, Kind=".to_string(),
    }
}

/// `namespace/name; gvk` of an object (kube's `objectGVKNN`).
fn gvknn(obj: &Value) -> String {
    let meta = |k: &str| {
        obj.get("metadata")
            .and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    format!(
        "{}/{}; {}",
        meta("namespace"),
        meta("name"),
        gvk_string(obj)
    )
}

/// kube's aggregate of typed errors.
fn typed_errors(errs: &[String]) -> String {
    match errs {
        [one] => one.clone(),
        _ => {
            let mut lines = vec!["errors:".to_string()];
            lines.extend(errs.iter().map(|e| format!("  {e}")));
            lines.join("\n")
        }
    }
}

/// Server-side apply of `config` by `manager` (kube's `FieldManager.Apply`).
///
/// `live` is the stored object, `None` to create on apply. Returns the object to run
/// through the rest of the update (or create) pipeline, with its managedFields set;
/// it equals `live` (entries aside) when the apply changes nothing.
pub fn apply(
    live: Option<&Value>,
    config: &Value,
    manager: &str,
    force: bool,
    scope: &Scope,
) -> Result<Value, ApplyError> {
    let empty;
    let live = match live {
        Some(l) => l,
        None => {
            empty = scope.empty_object();
            &empty
        }
    };
    let managed = match managed::parse_entries(managed_fields_of(live)) {
        Some(entries) => Managed::decode(&entries)
            .map_err(|e| ApplyError::Failed(format!("failed to decode managed fields: {e}")))?,
        None => Managed::default(),
    };
    if gvk_string(config) != gvk_string(&scope.empty_object()) {
        return Err(ApplyError::BadRequest(format!(
            "invalid object type: {}",
            gvk_string(config)
        )));
    }
    let result = match apply_managed(live, config, managed.clone(), manager, force, scope) {
        // kubectl may take over what its client-side apply annotation says it set.
        Err(ApplyError::Conflicts(conflicts)) if manager == "kubectl" => {
            match allowed_conflicts_from_last_applied(live, scope) {
                None => Err(ApplyError::Conflicts(conflicts)),
                Some(allowed) => {
                    let remaining: Vec<Conflict> = conflicts
                        .into_iter()
                        .filter(|c| !allowed.has(&c.path.0))
                        .collect();
                    if remaining.is_empty() {
                        apply_managed(live, config, managed, manager, true, scope)
                    } else {
                        Err(ApplyError::Conflicts(remaining))
                    }
                }
            }
        }
        other => other,
    };
    let mut new = result?;
    if manager == "kubectl"
        && annotation(&new, LAST_APPLIED_ANNOTATION).is_some_and(|a| !a.is_empty())
    {
        set_last_applied(&mut new, &build_last_applied(config));
    }
    Ok(new)
}

/// kube's apply chain below the version check.
fn apply_managed(
    live: &Value,
    config: &Value,
    mut managed: Managed,
    manager: &str,
    force: bool,
    scope: &Scope,
) -> Result<Value, ApplyError> {
    let root = scope.root();
    if managed.fields.is_empty() {
        // Fields of an untracked object go to before-first-apply.
        managed = update_managed(
            &scope.empty_object(),
            live,
            managed,
            BEFORE_FIRST_APPLY,
            scope,
        )
        .ok_or_else(|| {
            ApplyError::Failed(format!(
                "failed to create manager for existing fields: failed to convert new object ({}) to smd typed: {}",
                gvknn(live),
                typed_errors(&fieldset::validate(live, root, true))
            ))
        })?;
    }
    let config_version = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if config_version != scope.api_version {
        return Err(ApplyError::BadRequest(format!(
            "Incorrect version specified in apply patch. Specified patch version: {config_version}, expected: {}",
            scope.api_version
        )));
    }
    if managed::parse_entries(managed_fields_of(config)).is_some() {
        return Err(ApplyError::BadRequest(
            "metadata.managedFields must be nil".into(),
        ));
    }
    let errs = fieldset::validate(config, root, false);
    if !errs.is_empty() {
        return Err(ApplyError::Failed(format!(
            "failed to create typed patch object ({}): {}",
            gvknn(config),
            typed_errors(&errs)
        )));
    }
    let errs = fieldset::validate(live, root, true);
    if !errs.is_empty() {
        return Err(ApplyError::Failed(format!(
            "failed to create typed live object ({}): {}",
            gvknn(live),
            typed_errors(&errs)
        )));
    }
    let key = ManagerId::new(manager, APPLY, "", scope.subresource).key();
    let updater = Updater {
        root,
        ignored: scope.reset_fields(),
    };
    let (new, mut fields) = updater
        .apply(
            live,
            config,
            scope.api_version,
            scope.reconcile(managed.fields),
            &key,
            force,
        )
        .map_err(ApplyError::Conflicts)?;
    managed::strip_manager(&mut fields, &key);
    managed.fields = fields;
    let mut new = match new {
        Some(n) => {
            managed.times.insert(key, Some(scope.now.to_string()));
            n
        }
        // Nothing changed: the entry is updated, its time is not.
        None => live.clone(),
    };
    set_managed_fields(&mut new, managed.encode());
    Ok(new)
}

/// Undo a change of managedFields times when nothing else changed (kube's
/// `IgnoreManagedFieldsTimestampsTransformer`, run by the store after the strategy's
/// preparation): a write that changes nothing then stores nothing new.
pub fn revert_time_only_change(new: &mut Value, old: &Value) {
    let (Some(new_mf), Some(old_mf)) = (
        managed_fields_of(new).and_then(Value::as_array),
        managed_fields_of(old).and_then(Value::as_array),
    ) else {
        return;
    };
    if new_mf.len() != old_mf.len() || new_mf.is_empty() {
        return;
    }
    if new_mf
        .iter()
        .zip(old_mf)
        .all(|(n, o)| n.get("time") == o.get("time"))
    {
        return;
    }
    // Compared in place: the entries but their times, the objects but their
    // managedFields.
    let entries_equal = new_mf.iter().zip(old_mf).all(|(n, o)| match (n, o) {
        (Value::Object(n), Value::Object(o)) => maps_equal_but(n, o, "time"),
        _ => n == o,
    });
    let rest_equal = match (&*new, old) {
        (Value::Object(n), Value::Object(o)) => {
            maps_equal_but(n, o, "metadata")
                && match (n.get("metadata"), o.get("metadata")) {
                    (Some(Value::Object(nm)), Some(Value::Object(om))) => {
                        maps_equal_but(nm, om, "managedFields")
                    }
                    _ => false,
                }
        }
        _ => false,
    };
    if entries_equal && rest_equal {
        let kept = old_mf.clone();
        set_managed_fields(new, Some(Value::Array(kept)));
    }
}

/// Whether two maps are equal but for their entries named `skip`.
fn maps_equal_but(a: &Map<String, Value>, b: &Map<String, Value>, skip: &str) -> bool {
    a.iter()
        .filter(|(k, _)| *k != skip)
        .eq(b.iter().filter(|(k, _)| *k != skip))
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.get("metadata")?.get("annotations")?.get(key)?.as_str()
}

/// The fields kubectl's client-side apply annotation claims and the live object still
/// has as written: conflicts on them are forgiven (kube's `lastAppliedManager`).
fn allowed_conflicts_from_last_applied(live: &Value, scope: &Scope) -> Option<FieldSet> {
    let text = annotation(live, LAST_APPLIED_ANNOTATION).filter(|a| !a.is_empty())?;
    let last: Value = serde_json::from_str(text).ok()?;
    if !last.is_object()
        || last.get("apiVersion").and_then(Value::as_str) != Some(scope.api_version)
    {
        return None;
    }
    let root = scope.root();
    if !fieldset::validate(live, root, false).is_empty()
        || !fieldset::validate(&last, root, false).is_empty()
    {
        return None;
    }
    let cmp = fieldset::compare(&last, live, root);
    Some(
        fieldset::to_field_set(&last, root)
            .difference(&cmp.modified)
            .difference(&cmp.added)
            .difference(&cmp.removed),
    )
}

/// The applied configuration without the annotation itself, as Go's JSON encoder
/// writes it (sorted keys, trailing newline).
fn build_last_applied(config: &Value) -> String {
    let mut c = config.clone();
    if let Some(a) = c
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    {
        a.remove(LAST_APPLIED_ANNOTATION);
    }
    format!("{}\n", crate::goformat::go_json(&c))
}

/// Set the annotation, unless that would make the annotations too large.
fn set_last_applied(obj: &mut Value, text: &str) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(a) = annotations.as_object_mut() else {
        return;
    };
    a.insert(
        LAST_APPLIED_ANNOTATION.to_string(),
        Value::String(text.to_string()),
    );
    let size: usize = a
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    if size > TOTAL_ANNOTATION_SIZE_LIMIT {
        a.remove(LAST_APPLIED_ANNOTATION);
    }
}

#[cfg(test)]
mod tests;
