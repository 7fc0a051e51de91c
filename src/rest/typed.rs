//! Built-in kinds with a typed schema (ConfigMaps, Secrets, ServiceAccounts, Events,
//! Leases, RBAC): one generic [`TypedKind`], the [`Strategy`] of them all, over a
//! per-kind [`TypedStrategy`] (kube's registry strategy, defaults and validation of the
//! kind) and a structural schema derived once from the kind's OpenAPI definition in
//! `registry/openapi_builtin.json`.
//!
//! Their decoding: Go type errors (400) → kube's typed round trip → prune unknown
//! fields (warnings or a 400 per `fieldValidation`, as kube's strict decoder) → the
//! kind's own decoding checks; the rest of a write is `pipeline::order`'s.

use super::{
    object, Conversion, Descriptor, FieldValidation, ResourceKind, Strategy, WriteOptions,
};
use crate::apply;
use crate::field::{self, ErrorList, Path};
use crate::pipeline::subresource::Part;
use crate::pipeline::trace::Trace;
use crate::schema::prune;
use crate::schema::structural::Structural;
use crate::status::Status;
use crate::table::BuiltinPrinter;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

pub use apimachinery::typed::{
    check_base64, default_field_value, go_round_trip, go_type_error, meta_field_value, str_at,
    structural_from_definition, Base64Error,
};

/// What differs between typed built-in kinds: kube's strategy, defaults and validation
/// (the rest of their [`Strategy`] is [`TypedKind`]'s, shared).
pub trait TypedStrategy: Send + Sync {
    /// What kube's decoder rejects beyond the schema's types (a 400 `... cannot be
    /// handled as a X: <message>`), e.g. Secret data that is not base64.
    fn check_decodable(&self, obj: &Value) -> Result<(), Base64Error> {
        let _ = obj;
        Ok(())
    }

    /// The kind's decoding conversions and defaults (`pkg/apis/*/v1/{conversion,defaults}.go`),
    /// on the object as the endpoint serves it.
    fn default(&self, obj: &mut Value) {
        let _ = obj;
    }

    /// kube's `PrepareForCreate`.
    fn prepare_for_create(&self, obj: &mut Value) {
        let _ = obj;
    }

    /// kube's `PrepareForUpdate`.
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        let _ = (new, old);
    }

    /// Whether a create keeps the status it was sent though the kind has a status
    /// subresource (kube's Node strategy: kubelets register nodes with their status).
    fn keeps_status_on_create(&self) -> bool {
        false
    }

    /// kube's `Validate` (the kind's `ValidateX`, object metadata included).
    fn validate(&self, obj: &Value) -> ErrorList;

    /// kube's `ValidateUpdate` (the kind's `ValidateXUpdate`).
    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList;

    /// kube's Table printer of the kind.
    fn printer(&self) -> BuiltinPrinter;

    /// kube's `AllowCreateOnUpdate`: a PUT of a missing object creates it.
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// The value of a field-selector label (`metadata.name`, `metadata.namespace` and
    /// the kind's own labels); `Err` is kube's for a label the kind does not have
    /// (without labels of its own: `"x" is not a known field selector: ...`).
    fn field_value(
        &self,
        obj: &Value,
        field: &str,
    ) -> Result<Option<String>, crate::selector::SelectorError> {
        default_field_value(obj, field)
    }

    /// Convert an admitted object (as served) to the stored form.
    fn to_storage(&self, obj: &mut Value) {
        let _ = obj;
    }

    /// Convert a stored object to the form this endpoint serves.
    fn on_read(&self, obj: &mut Value) {
        let _ = obj;
    }

    /// Whether the OpenAPI `default`s of the kind's schema apply (kube's generated
    /// defaulters of `+default` markers, and the zero values Go writes for fields
    /// without `omitempty`); kinds with hand defaults write their own.
    fn schema_defaults(&self) -> bool {
        false
    }
}

/// The structural schema of OpenAPI definition `definition`, derived once per process
/// and shared by every server in it.
/// The managedFields `Update` entry of a write that is not an apply (kube's
/// FieldManager on every create, update and patch of a built-in kind).
pub fn record_update_entry(
    d: &Descriptor,
    schema: &Structural,
    old: Option<&Value>,
    obj: &mut Value,
    opts: &WriteOptions,
) {
    if opts.is_apply {
        return;
    }
    let (now, api_version) = (object::now(), d.api_version());
    let scope = apply::Scope {
        schema,
        api_version: &api_version,
        kind: &d.kind,
        subresource: &opts.subresource,
        status_subresource: d.status_subresource,
        versions: &[],
        now: &now,
    };
    apply::record_update(old, obj, &opts.field_manager, &scope);
}

/// The structural schema of an OpenAPI definition, built once.
pub fn schema_of(definition: &str) -> Arc<Structural> {
    static SCHEMAS: LazyLock<Mutex<HashMap<String, Arc<Structural>>>> =
        LazyLock::new(Default::default);
    let build = || {
        let defs = crate::registry::openapi::builtin_definitions();
        Arc::new(
            defs.get(definition)
                .map(|d| structural_from_definition(d, defs, 0))
                .unwrap_or_else(|| Structural {
                    type_: "object".into(),
                    x_preserve_unknown_fields: true,
                    ..Default::default()
                }),
        )
    };
    let Ok(mut cache) = SCHEMAS.lock() else {
        return build();
    };
    cache
        .entry(definition.to_string())
        .or_insert_with(build)
        .clone()
}

/// One typed built-in resource.
pub struct TypedKind {
    descriptor: Descriptor,
    definition: String,
    /// Built at the kind's first write or apply, not at start: most kinds of a server
    /// are never written, and building them all was most of the start-up time.
    schema: std::sync::OnceLock<Arc<Structural>>,
    strategy: Box<dyn TypedStrategy>,
    printer: BuiltinPrinter,
    /// The served form (see [`ResourceKind::served_form`]): reading is a pure function
    /// of the stored object and this endpoint (kube's conversion to the served version).
    form: (i64, usize),
}

/// A built-in endpoint's served form: negative, so it never equals a custom resource's
/// (its CRD's storage revision), and distinct per group, version and resource (one
/// storage key may be served by several, e.g. core/v1 and events.k8s.io/v1 Events).
fn builtin_form(descriptor: &Descriptor) -> (i64, usize) {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (
        &descriptor.gr.group,
        &descriptor.gr.resource,
        &descriptor.version,
        &descriptor.kind,
    )
        .hash(&mut hasher);
    (-1 - (hasher.finish() >> 2) as i64, 0)
}

impl TypedKind {
    /// The kind served at `descriptor`, its schema derived from the OpenAPI definition
    /// `definition` (e.g. `io.k8s.api.core.v1.ConfigMap`).
    pub fn new(descriptor: Descriptor, definition: &str, strategy: Box<dyn TypedStrategy>) -> Self {
        let printer = strategy.printer();
        TypedKind {
            form: builtin_form(&descriptor),
            descriptor,
            definition: definition.to_string(),
            schema: std::sync::OnceLock::new(),
            strategy,
            printer,
        }
    }

    /// The structural schema writes are pruned by and server-side apply merges by.
    pub fn schema(&self) -> &Structural {
        self.schema.get_or_init(|| schema_of(&self.definition))
    }

    /// Prune by the schema and apply `fieldValidation` to what was dropped.
    fn decode_stage(
        &self,
        obj: &mut Value,
        opts: &WriteOptions,
        patched: Option<&str>,
    ) -> Result<Vec<String>, Status> {
        let d = &self.descriptor;
        let cannot_decode = |e: String| {
            Status::bad_request(crate::codec::cannot_be_handled_message(
                &d.kind, &d.version, &d.kind, &e,
            ))
        };
        // kube decodes into typed structs first: type errors win over unknown fields.
        if let Some(e) = go_type_error(obj, &self.definition) {
            return Err(cannot_decode(e));
        }
        go_round_trip(obj, &self.definition);
        let report = prune::prune(obj, self.schema(), true, &prune::PruneOptions::default());
        self.strategy
            .check_decodable(obj)
            .map_err(|e| cannot_decode(e.to_string()))?;
        crate::pipeline::decode::unknown_field_policy(
            obj,
            (&self.descriptor.kind, &self.descriptor.version),
            opts,
            &report.unknown_fields,
            patched,
        )
    }

    fn set_type_meta(&self, obj: &mut Value) {
        let d = &self.descriptor;
        if let Some(m) = obj.as_object_mut() {
            for (key, want) in [("apiVersion", d.api_version()), ("kind", d.kind.clone())] {
                if m.get(key).and_then(Value::as_str).unwrap_or("").is_empty() {
                    m.insert(key.into(), json!(want));
                }
            }
        }
    }

    fn type_meta_errors(&self, obj: &Value) -> ErrorList {
        let d = &self.descriptor;
        crate::pipeline::decode::type_meta_errors(obj, &d.api_version(), &d.kind, true)
    }
}

impl ResourceKind for TypedKind {
    fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    fn strategy(&self) -> &dyn Strategy {
        self
    }

    fn to_storage<'a>(&'a self, obj: &'a mut Value) -> Conversion<'a> {
        self.strategy.to_storage(obj);
        Conversion::done(Ok(()))
    }

    fn on_read<'a>(&'a self, obj: &'a mut Value) -> Conversion<'a> {
        self.strategy.on_read(obj);
        Conversion::done(Ok(()))
    }

    fn on_read_all<'a>(&'a self, objs: &'a mut [Value]) -> Conversion<'a> {
        for obj in objs.iter_mut() {
            self.strategy.on_read(obj);
        }
        Conversion::done(Ok(()))
    }

    fn served_form(&self) -> Option<(i64, usize)> {
        Some(self.form)
    }
}

impl Strategy for TypedKind {
    fn decode(
        &self,
        obj: &mut Value,
        old: Option<&Value>,
        opts: &WriteOptions,
        _t: &mut Trace,
    ) -> Result<Vec<String>, Status> {
        let patched =
            (old.is_some() && opts.is_patch && opts.field_validation == FieldValidation::Strict)
                .then(|| serde_json::to_string(obj).unwrap_or_default());
        let warnings = self.decode_stage(obj, opts, patched.as_deref())?;
        self.set_type_meta(obj);
        Ok(warnings)
    }

    fn decode_admitted(&self, obj: &mut Value, _t: &mut Trace) {
        // Mutating webhooks may add unknown fields: kube's decoder drops them silently.
        prune::prune(obj, self.schema(), true, &prune::PruneOptions::default());
        go_round_trip(obj, &self.definition);
    }

    fn default(&self, obj: &mut Value, _t: &mut Trace) {
        if self.strategy.schema_defaults() {
            crate::schema::default::apply_defaults(obj, self.schema());
        }
        self.strategy.default(obj);
    }

    fn record_managed_fields(&self, old: Option<&Value>, obj: &mut Value, opts: &WriteOptions) {
        record_update_entry(&self.descriptor, self.schema(), old, obj, opts);
    }

    fn has_generation(&self) -> bool {
        self.descriptor.has_generation
    }

    fn status_subresource(&self) -> bool {
        self.descriptor.status_subresource
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        // With a status subresource, kube's strategies start every object without status.
        if self.descriptor.status_subresource && !self.strategy.keeps_status_on_create() {
            object::keep_status(obj, None);
            if self.strategy.schema_defaults() {
                crate::schema::default::apply_defaults(obj, self.schema());
            }
            // The empty status as Go writes it (fields without `omitempty`).
            go_round_trip(obj, &self.definition);
        }
        self.strategy.prepare_for_create(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value, opts: &WriteOptions) {
        if opts.subresource == "status" {
            *new = object::status_only(new, old);
            return;
        }
        let d = &self.descriptor;
        if let Some(part) = Part::of(&d.gr.group, &d.gr.resource, &opts.subresource) {
            *new = part.merge(new, old);
            return;
        }
        if self.descriptor.status_subresource {
            object::keep_status(new, Some(old));
        }
        self.strategy.prepare_for_update(new, old);
    }

    fn validate(&self, obj: &Value, _warnings: &mut Vec<String>, _t: &mut Trace) -> ErrorList {
        let mut errs = self.type_meta_errors(obj);
        errs.extend(self.strategy.validate(obj));
        errs
    }

    fn validate_update(
        &self,
        new: &Value,
        old: &Value,
        opts: &WriteOptions,
        _warnings: &mut Vec<String>,
        _t: &mut Trace,
    ) -> Result<ErrorList, Status> {
        // kube's generic registry checks metadata before the strategy's own checks.
        let meta_path = Path::new("metadata");
        let meta = new.get("metadata").cloned().unwrap_or(Value::Null);
        let old_meta = old.get("metadata").cloned().unwrap_or(Value::Null);
        let mut errs = self.type_meta_errors(new);
        errs.extend(
            crate::schema::objectmeta::validate_object_meta_path_segment(
                &meta,
                self.descriptor.namespaced,
                &meta_path,
            ),
        );
        errs.extend(crate::schema::objectmeta::validate_object_meta_update(
            &meta, &old_meta, &meta_path,
        ));
        // A part-writing subresource changes only its part: the kind's update rules
        // (a pod's "may not change fields other than ...") are for the object's own
        // endpoint.
        let d = &self.descriptor;
        if Part::of(&d.gr.group, &d.gr.resource, &opts.subresource).is_none() {
            errs.extend(self.strategy.validate_update(new, old));
        }
        Ok(errs)
    }

    fn invalid(&self, obj: &Value, errs: &[field::Error]) -> Status {
        let d = &self.descriptor;
        Status::invalid(&d.kind, &d.gr.group, object::name(obj), errs)
    }

    fn allow_create_on_update(&self) -> bool {
        self.strategy.allow_create_on_update()
    }

    fn merge_schema(&self) -> &Structural {
        self.schema()
    }

    fn builtin_printer(&self) -> Option<&BuiltinPrinter> {
        Some(&self.printer)
    }

    fn field_value(
        &self,
        obj: &Value,
        field: &str,
    ) -> Result<Option<String>, crate::selector::SelectorError> {
        self.strategy.field_value(obj, field)
    }
}
