//! `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicy and
//! ValidatingAdmissionPolicyBinding: built-in kinds kept as written (no typed schema),
//! with kube's defaults (`admissionregistration/v1/defaults.go`), kube's validation and
//! texts (`pkg/apis/admissionregistration/validation`), and the policy's `status`
//! subresource. Enforcement is in `admission::policy`; [`StoreParams`] reads params
//! (any kind, custom resources included) for it through the REST store.

use super::typed::go_round_trip;
use super::{object, Descriptor, ResourceKind, Strategy, WriteOptions};
use crate::admission::policy::PolicyObject;
use crate::cel::admission::{self as cel_admission, AdmissionEnv, ReturnType};
use crate::field::{Error, ErrorList, Path};
use crate::pipeline::decode::type_meta_errors;
use crate::pipeline::trace::Trace;
use crate::rest::object::{list_field, str_field};
use crate::schema::objectmeta;
use crate::status::Status;
use crate::table::{BuiltinColumn, BuiltinPrinter};
use apimachinery::builtin_validation::label_selector;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::Arc;

/// The API group of the policy kinds.
pub const GROUP: &str = "admissionregistration.k8s.io";

impl PolicyObject {
    /// `Kind`.
    pub fn kind(self) -> &'static str {
        match self {
            PolicyObject::Policy => "ValidatingAdmissionPolicy",
            PolicyObject::Binding => "ValidatingAdmissionPolicyBinding",
        }
    }

    /// The kind's OpenAPI definition.
    pub fn definition(self) -> String {
        format!("io.k8s.api.admissionregistration.v1.{}", self.kind())
    }

    /// Plural resource name.
    pub fn resource(self) -> &'static str {
        match self {
            PolicyObject::Policy => "validatingadmissionpolicies",
            PolicyObject::Binding => "validatingadmissionpolicybindings",
        }
    }
}

/// One of the two policy resources.
pub struct AdmissionPolicyKind {
    which: PolicyObject,
    descriptor: Descriptor,
    printer: BuiltinPrinter,
    /// Served CRDs, for `status.typeChecking` (none: never type checked).
    schemas: Option<Arc<crate::registry::catalog::Catalog>>,
}

impl AdmissionPolicyKind {
    /// The kind `which`, storing under `prefix`.
    pub fn new(which: PolicyObject, prefix: &str) -> Self {
        AdmissionPolicyKind {
            which,
            descriptor: crate::registry::builtin::descriptor(GROUP, which.resource(), prefix),
            printer: printer(which),
            schemas: None,
        }
    }

    /// Type check policies against the schemas of the CRDs in `catalog`
    /// (`status.typeChecking`).
    pub fn with_schemas(mut self, catalog: Arc<crate::registry::catalog::Catalog>) -> Self {
        self.schemas = Some(catalog);
        self
    }

    /// Which of the two kinds.
    pub fn which(&self) -> PolicyObject {
        self.which
    }

    /// A write of a policy's `/status` (bindings have no status).
    fn is_status_write(&self, opts: &WriteOptions) -> bool {
        opts.subresource == "status" && self.which == PolicyObject::Policy
    }

    fn set_type_meta(&self, obj: &mut Value) {
        if let Some(m) = obj.as_object_mut() {
            m.insert("apiVersion".into(), json!(format!("{GROUP}/v1")));
            m.insert("kind".into(), json!(self.which.kind()));
        }
    }

    fn validate_policy(&self, obj: &Value, old: Option<&Value>) -> ErrorList {
        let meta_path = Path::new("metadata");
        let meta = obj.get("metadata").cloned().unwrap_or(Value::Null);
        let mut errs = type_meta_errors(obj, &format!("{GROUP}/v1"), self.which.kind(), true);
        errs.extend(objectmeta::validate_object_meta(&meta, false, &meta_path));
        if let Some(old) = old {
            let old_meta = old.get("metadata").cloned().unwrap_or(Value::Null);
            errs.extend(objectmeta::validate_object_meta_update(
                &meta, &old_meta, &meta_path,
            ));
        }
        let spec = obj.get("spec").unwrap_or(&Value::Null);
        match self.which {
            PolicyObject::Policy => errs.extend(validate_policy_spec(
                object::name(obj),
                spec,
                &Path::new("spec"),
            )),
            PolicyObject::Binding => errs.extend(validate_binding_spec(spec, &Path::new("spec"))),
        }
        errs
    }

    /// kube's status: `observedGeneration` follows the spec and `typeChecking` holds the
    /// type checker's warnings (both set here, at write time, where kube's status
    /// controller sets them shortly after).
    fn set_status(&self, obj: &mut Value) {
        if self.which != PolicyObject::Policy {
            return;
        }
        let type_checking = self.schemas.as_ref().map(|catalog| {
            let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
            let warnings =
                crate::admission::typecheck::expression_warnings(&spec, catalog.as_ref());
            if warnings.is_empty() {
                json!({})
            } else {
                json!({"expressionWarnings": warnings})
            }
        });
        let generation = obj
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        if let Some(m) = obj.as_object_mut() {
            let status = m.entry("status").or_insert_with(|| json!({}));
            if !status.is_object() {
                *status = json!({});
            }
            if let Some(s) = status.as_object_mut() {
                s.insert("observedGeneration".into(), json!(generation));
                match type_checking {
                    Some(t) => {
                        s.insert("typeChecking".into(), t);
                    }
                    None => {
                        s.entry("typeChecking").or_insert_with(|| json!({}));
                    }
                }
            }
        }
    }
}

impl ResourceKind for AdmissionPolicyKind {
    fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    fn strategy(&self) -> &dyn Strategy {
        self
    }
}

impl Strategy for AdmissionPolicyKind {
    fn decode(
        &self,
        obj: &mut Value,
        _old: Option<&Value>,
        _opts: &WriteOptions,
        _t: &mut Trace,
    ) -> Result<Vec<String>, Status> {
        go_round_trip(obj, &self.which.definition());
        self.set_type_meta(obj);
        Ok(Vec::new())
    }

    fn decode_admitted(&self, obj: &mut Value, _t: &mut Trace) {
        go_round_trip(obj, &self.which.definition());
    }

    fn default(&self, obj: &mut Value, _t: &mut Trace) {
        default_spec(obj, self.which);
    }

    fn has_generation(&self) -> bool {
        true
    }

    fn status_subresource(&self) -> bool {
        self.which == PolicyObject::Policy
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        object::keep_status(obj, None);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value, opts: &WriteOptions) {
        if self.is_status_write(opts) {
            *new = object::status_only(new, old);
        } else if self.which == PolicyObject::Policy {
            object::keep_status(new, Some(old));
        }
    }

    fn validate(&self, obj: &Value, _warnings: &mut Vec<String>, _t: &mut Trace) -> ErrorList {
        self.validate_policy(obj, None)
    }

    fn validate_update(
        &self,
        new: &Value,
        old: &Value,
        opts: &WriteOptions,
        _warnings: &mut Vec<String>,
        _t: &mut Trace,
    ) -> Result<ErrorList, Status> {
        if self.is_status_write(opts) {
            let status = new.get("status").cloned().unwrap_or(Value::Null);
            return Ok(validate_status(&status, &Path::new("status")));
        }
        Ok(self.validate_policy(new, Some(old)))
    }

    fn invalid(&self, obj: &Value, errs: &[Error]) -> Status {
        Status::invalid(self.which.kind(), GROUP, object::name(obj), errs)
    }

    fn canonicalize(&self, obj: &mut Value, _old: Option<&Value>, opts: &WriteOptions) {
        if !self.is_status_write(opts) {
            self.set_status(obj);
        }
    }

    fn builtin_printer(&self) -> Option<&BuiltinPrinter> {
        Some(&self.printer)
    }
}

/// kube's Table printers (`printValidatingAdmissionPolicy`, `...Binding`).
fn printer(which: PolicyObject) -> BuiltinPrinter {
    use crate::rest::builtin::age_cell;
    match which {
        PolicyObject::Policy => BuiltinPrinter {
            columns: vec![
                BuiltinColumn::name(0),
                BuiltinColumn::new(
                    "Validations",
                    "integer",
                    0,
                    "Validations indicates the number of validation rules defined in this configuration",
                ),
                BuiltinColumn::new(
                    "ParamKind",
                    "string",
                    0,
                    "ParamKind specifies the kind of resources used to parameterize this policy",
                ),
                BuiltinColumn::age(),
            ],
            cells: |obj, now| {
                let spec = obj.get("spec").unwrap_or(&Value::Null);
                let param_kind = match spec.get("paramKind").filter(|p| !p.is_null()) {
                    Some(pk) => format!("{}/{}", str_field(pk, "apiVersion"), str_field(pk, "kind")),
                    None => "<unset>".into(),
                };
                vec![
                    json!(object::name(obj)),
                    json!(list_field(spec, "validations").len()),
                    json!(param_kind),
                    age_cell(obj, now),
                ]
            },
        },
        PolicyObject::Binding => BuiltinPrinter {
            columns: vec![
                BuiltinColumn::name(0),
                BuiltinColumn::new(
                    "PolicyName",
                    "string",
                    0,
                    "PolicyName indicates the policy definition which the policy binding binded to",
                ),
                BuiltinColumn::new(
                    "ParamRef",
                    "string",
                    0,
                    "ParamRef indicates the param resource which sets the configuration param",
                ),
                BuiltinColumn::age(),
            ],
            cells: |obj, now| {
                let spec = obj.get("spec").unwrap_or(&Value::Null);
                let param = match spec.get("paramRef").filter(|p| !p.is_null()) {
                    None => "<unset>".to_string(),
                    Some(pr) if !str_field(pr, "name").is_empty() => {
                        match str_field(pr, "namespace") {
                            "" => format!("*/{}", str_field(pr, "name")),
                            ns => format!("{ns}/{}", str_field(pr, "name")),
                        }
                    }
                    Some(pr) => match pr.get("selector").filter(|s| !s.is_null()) {
                        Some(sel) => go_label_selector_string(sel),
                        None => "<unset>".to_string(),
                    },
                };
                vec![
                    json!(object::name(obj)),
                    json!(str_field(spec, "policyName")),
                    json!(param),
                    age_cell(obj, now),
                ]
            },
        },
    }
}

/// The generated Go `String()` of a `metav1.LabelSelector`, which kube prints as a
/// binding's ParamRef column.
fn go_label_selector_string(sel: &Value) -> String {
    let mut labels: Vec<(&String, &str)> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k, v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    labels.sort();
    let labels: String = labels.iter().map(|(k, v)| format!("{k}: {v},")).collect();
    let exprs: String = list_field(sel, "matchExpressions")
        .iter()
        .map(|e| {
            format!(
                "{{{} {} [{}]}},",
                str_field(e, "key"),
                str_field(e, "operator"),
                strings(e, "values").join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}"
    )
}

/// kube's defaults: `failurePolicy: Fail` on policies; `matchPolicy: Equivalent` and
/// empty selectors on `matchConstraints` / `matchResources`; rule `scope: "*"`.
fn default_spec(obj: &mut Value, which: PolicyObject) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if which == PolicyObject::Policy {
        spec.entry("failurePolicy").or_insert(json!("Fail"));
    }
    for key in ["matchConstraints", "matchResources"] {
        if let Some(mr) = spec.get_mut(key).and_then(Value::as_object_mut) {
            mr.entry("matchPolicy").or_insert(json!("Equivalent"));
            mr.entry("namespaceSelector").or_insert(json!({}));
            mr.entry("objectSelector").or_insert(json!({}));
            for rules in ["resourceRules", "excludeResourceRules"] {
                if let Some(list) = mr.get_mut(rules).and_then(Value::as_array_mut) {
                    for rule in list.iter_mut().filter_map(Value::as_object_mut) {
                        rule.entry("scope").or_insert(json!("*"));
                    }
                }
            }
        }
    }
}

fn strings(v: &Value, k: &str) -> Vec<String> {
    list_field(v, k)
        .iter()
        .map(|s| s.as_str().unwrap_or("").to_string())
        .collect()
}

fn present(v: &Value, k: &str) -> bool {
    v.get(k).is_some_and(|x| !x.is_null())
}

fn has_newlines(s: &str) -> bool {
    s.contains('\n') || s.contains('\r')
}

const MAX_AUDIT_ANNOTATIONS: usize = 20;
const MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_LENGTH: usize = 5 * 1024;

/// kube's `validateValidatingAdmissionPolicySpec`.
pub fn validate_policy_spec(name: &str, spec: &Value, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    match spec.get("failurePolicy").and_then(Value::as_str) {
        None => errs.push(Error::required(&path.child("failurePolicy"), "")),
        Some(p) if p != "Fail" && p != "Ignore" => errs.push(Error::not_supported(
            &path.child("failurePolicy"),
            json!(p),
            &["Fail", "Ignore"],
        )),
        Some(_) => {}
    }
    let has_params = present(spec, "paramKind");
    if let Some(pk) = spec.get("paramKind").filter(|p| !p.is_null()) {
        errs.extend(validate_param_kind(pk, &path.child("paramKind")));
    }
    match spec.get("matchConstraints").filter(|m| !m.is_null()) {
        None => errs.push(Error::required(&path.child("matchConstraints"), "")),
        Some(mc) => {
            errs.extend(validate_match_resources(
                mc,
                &path.child("matchConstraints"),
            ));
            if list_field(mc, "resourceRules").is_empty() {
                errs.push(Error::required(
                    &path.child("matchConstraints").child("resourceRules"),
                    "",
                ));
            }
        }
    }
    errs.extend(validate_match_conditions(
        list_field(spec, "matchConditions"),
        has_params,
        &path.child("matchConditions"),
    ));
    let variables = list_field(spec, "variables");
    let mut env = if variables.is_empty() {
        AdmissionEnv::new(has_params)
    } else {
        AdmissionEnv::with_variables(has_params)
    }
    .authorizer(true);
    for (i, v) in variables.iter().enumerate() {
        let p = path.child("variables").index(i);
        let vname = str_field(v, "name");
        if vname.trim().is_empty() {
            errs.push(Error::required(&p.child("name"), "name is not specified"));
        } else if !is_cel_identifier(vname) {
            errs.push(Error::invalid(
                &p.child("name"),
                json!(vname),
                "must be a valid CEL identifier",
            ));
        }
        let expr = str_field(v, "expression");
        if expr.trim().is_empty() {
            errs.push(Error::required(
                &p.child("expression"),
                "expression is not specified",
            ));
        } else if let Err(e) = env.compile_variable(vname, expr) {
            errs.push(Error::invalid(
                &p.child("expression"),
                json!(expr),
                e.to_string(),
            ));
        }
    }
    let validations = list_field(spec, "validations");
    let audits = list_field(spec, "auditAnnotations");
    if validations.is_empty() && audits.is_empty() {
        let msg = "validations or auditAnnotations must contain at least one item";
        errs.push(Error::required(&path.child("validations"), msg));
        errs.push(Error::required(&path.child("auditAnnotations"), msg));
        return errs;
    }
    for (i, v) in validations.iter().enumerate() {
        errs.extend(validate_validation(
            v,
            &env,
            has_params,
            &path.child("validations").index(i),
        ));
    }
    if present(spec, "auditAnnotations") {
        if audits.len() > MAX_AUDIT_ANNOTATIONS {
            errs.push(Error::invalid(
                &path.child("auditAnnotations"),
                spec.get("auditAnnotations").cloned().unwrap_or(Value::Null),
                format!("must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations"),
            ));
        }
        let mut keys = HashSet::new();
        for (i, a) in audits.iter().enumerate() {
            let p = path.child("auditAnnotations").index(i);
            errs.extend(validate_audit_annotation(name, a, &env, &p));
            let key = str_field(a, "key");
            if !keys.insert(key.to_string()) {
                errs.push(Error::duplicate(&p.child("key"), json!(key)));
            }
        }
    }
    errs
}

fn validate_validation(v: &Value, env: &AdmissionEnv, has_params: bool, p: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let expr = str_field(v, "expression");
    let msg = str_field(v, "message");
    let msg_expr = str_field(v, "messageExpression");
    if expr.trim().is_empty() {
        errs.push(Error::required(
            &p.child("expression"),
            "expression is not specified",
        ));
    } else if let Err(e) = cel_admission::compile(expr, env, ReturnType::Bool) {
        errs.push(Error::invalid(
            &p.child("expression"),
            json!(expr),
            e.to_string(),
        ));
    }
    if !msg_expr.is_empty() && msg_expr.trim().is_empty() {
        errs.push(Error::invalid(
            &p.child("messageExpression"),
            json!(msg_expr),
            "must be non-empty if specified",
        ));
    } else if !msg_expr.trim().is_empty() {
        // kube compiles messageExpression without the authorizer.
        let _ = has_params;
        let env = env.clone().authorizer(false);
        if let Err(e) = cel_admission::compile(msg_expr, &env, ReturnType::String) {
            errs.push(Error::invalid(
                &p.child("messageExpression"),
                json!(msg_expr),
                e.to_string(),
            ));
        }
    }
    if !msg.is_empty() && msg.trim().is_empty() {
        errs.push(Error::invalid(
            &p.child("message"),
            json!(msg),
            "must be non-empty if specified",
        ));
    } else if has_newlines(msg.trim()) {
        errs.push(Error::invalid(
            &p.child("message"),
            json!(msg),
            "must not contain line breaks",
        ));
    }
    if let Some(r) = v.get("reason").and_then(Value::as_str) {
        if !["Forbidden", "Invalid", "RequestEntityTooLarge"].contains(&r) {
            errs.push(Error::not_supported(
                &p.child("reason"),
                json!(r),
                &["Forbidden", "Invalid", "RequestEntityTooLarge"],
            ));
        }
    }
    errs
}

fn validate_audit_annotation(name: &str, a: &Value, env: &AdmissionEnv, p: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let key = str_field(a, "key");
    if !name.is_empty() {
        for m in objectmeta::is_qualified_name(&format!("{name}/{key}")) {
            errs.push(Error::invalid(
                &p.child("key"),
                json!(format!("{name}/{key}")),
                m,
            ));
        }
    } else {
        errs.push(Error::invalid(
            &p.child("key"),
            json!(key),
            "requires metadata.name be non-empty",
        ));
    }
    let value_expr = str_field(a, "valueExpression");
    let trimmed = value_expr.trim();
    if trimmed.is_empty() {
        errs.push(Error::required(
            &p.child("valueExpression"),
            "valueExpression is not specified",
        ));
    } else if trimmed.len() > MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_LENGTH {
        errs.push(Error::required(
            &p.child("valueExpression"),
            format!(
                "must not exceed {MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_LENGTH} bytes in length"
            ),
        ));
    } else if let Err(e) = cel_admission::compile(trimmed, env, ReturnType::StringOrNull) {
        errs.push(Error::invalid(
            &p.child("valueExpression"),
            json!(value_expr),
            e.to_string(),
        ));
    }
    errs
}

fn validate_match_conditions(conds: &[Value], has_params: bool, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    if conds.len() > 64 {
        errs.push(Error::too_many(path, conds.len() as i64, 64));
    }
    let env = AdmissionEnv::new(has_params).authorizer(true);
    let mut names = HashSet::new();
    for (i, c) in conds.iter().enumerate() {
        let p = path.index(i);
        let expr = str_field(c, "expression").trim();
        if expr.is_empty() {
            errs.push(Error::required(&p.child("expression"), ""));
        } else if let Err(e) = cel_admission::compile(expr, &env, ReturnType::Bool) {
            errs.push(Error::invalid(
                &p.child("expression"),
                json!(expr),
                e.to_string(),
            ));
        }
        let name = str_field(c, "name");
        if name.is_empty() {
            errs.push(Error::required(&p.child("name"), ""));
        } else {
            for m in objectmeta::is_qualified_name(name) {
                errs.push(Error::invalid(&p.child("name"), json!(name), m));
            }
        }
        if !name.is_empty() && !names.insert(name.to_string()) {
            errs.push(Error::duplicate(&p.child("name"), json!(name)));
        }
    }
    errs
}

fn validate_param_kind(pk: &Value, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let api_version = str_field(pk, "apiVersion");
    let p = path.child("apiVersion");
    if api_version.is_empty() {
        errs.push(Error::required(&p, ""));
    } else if api_version.matches('/').count() > 1 {
        errs.push(Error::invalid(
            &p,
            json!(api_version),
            format!("unexpected GroupVersion string: {api_version}"),
        ));
    } else {
        let (group, version) = match api_version {
            "/" => ("", ""),
            gv => gv.split_once('/').unwrap_or(("", gv)),
        };
        if !group.is_empty() {
            let msgs = objectmeta::is_dns1123_subdomain(group);
            if !msgs.is_empty() {
                errs.push(Error::invalid(&p, json!(group), msgs.join(",")));
            }
        }
        if version.is_empty() {
            errs.push(Error::invalid(
                &p,
                json!(api_version),
                "version must be specified",
            ));
        } else {
            let msgs = objectmeta::is_dns1035_label(version);
            if !msgs.is_empty() {
                errs.push(Error::invalid(&p, json!(version), msgs.join(",")));
            }
        }
    }
    let kind = str_field(pk, "kind");
    if kind.is_empty() {
        errs.push(Error::required(&path.child("kind"), ""));
    } else {
        let msgs = objectmeta::is_dns1035_label(&kind.to_lowercase());
        if !msgs.is_empty() {
            errs.push(Error::invalid(
                &path.child("kind"),
                json!(kind),
                format!(
                    "may have mixed case, but should otherwise match: {}",
                    msgs.join(",")
                ),
            ));
        }
    }
    errs
}

/// kube's `validateMatchResources`.
fn validate_match_resources(mr: &Value, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    match mr.get("matchPolicy").and_then(Value::as_str) {
        None => errs.push(Error::required(&path.child("matchPolicy"), "")),
        Some(p) if p != "Equivalent" && p != "Exact" => errs.push(Error::not_supported(
            &path.child("matchPolicy"),
            json!(p),
            &["Equivalent", "Exact"],
        )),
        Some(_) => {}
    }
    for key in ["namespaceSelector", "objectSelector"] {
        match mr.get(key).filter(|s| !s.is_null()) {
            None => errs.push(Error::required(&path.child(key), "")),
            Some(s) => errs.extend(label_selector(s, &path.child(key))),
        }
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in list_field(mr, key).iter().enumerate() {
            errs.extend(validate_named_rule(rule, &path.child(key).index(i)));
        }
    }
    errs
}

fn validate_named_rule(rule: &Value, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let mut seen = HashSet::new();
    for (i, n) in strings(rule, "resourceNames").iter().enumerate() {
        let p = path.child("resourceNames").index(i);
        for m in objectmeta::validate_path_segment_name(n, false) {
            errs.push(Error::invalid(&p, json!(n), m));
        }
        if !seen.insert(n.clone()) {
            errs.push(Error::duplicate(&p, json!(n)));
        }
    }
    errs.extend(validate_rule_with_operations(rule, path));
    errs
}

/// kube's `validateRuleWithOperations` (subresources allowed).
pub fn validate_rule_with_operations(rule: &Value, path: &Path) -> ErrorList {
    const OPERATIONS: [&str; 5] = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
    let mut errs = Vec::new();
    let ops = strings(rule, "operations");
    if ops.is_empty() {
        errs.push(Error::required(&path.child("operations"), ""));
    }
    if ops.len() > 1 && ops.iter().any(|o| o == "*") {
        errs.push(Error::invalid(
            &path.child("operations"),
            json!(ops),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in ops.iter().enumerate() {
        if !OPERATIONS.contains(&op.as_str()) {
            errs.push(Error::not_supported(
                &path.child("operations").index(i),
                json!(op),
                &OPERATIONS,
            ));
        }
    }
    let groups = strings(rule, "apiGroups");
    if groups.is_empty() {
        errs.push(Error::required(&path.child("apiGroups"), ""));
    }
    if groups.len() > 1 && groups.iter().any(|g| g == "*") {
        errs.push(Error::invalid(
            &path.child("apiGroups"),
            json!(groups),
            "if '*' is present, must not specify other API groups",
        ));
    }
    let versions = strings(rule, "apiVersions");
    if versions.is_empty() {
        errs.push(Error::required(&path.child("apiVersions"), ""));
    }
    if versions.len() > 1 && versions.iter().any(|v| v == "*") {
        errs.push(Error::invalid(
            &path.child("apiVersions"),
            json!(versions),
            "if '*' is present, must not specify other API versions",
        ));
    }
    for (i, v) in versions.iter().enumerate() {
        if v.is_empty() {
            errs.push(Error::required(&path.child("apiVersions").index(i), ""));
        }
    }
    errs.extend(validate_resources(
        &strings(rule, "resources"),
        &path.child("resources"),
    ));
    if let Some(scope) = rule.get("scope").and_then(Value::as_str) {
        if !["*", "Cluster", "Namespaced"].contains(&scope) {
            errs.push(Error::not_supported(
                &path.child("scope"),
                json!(scope),
                &["*", "Cluster", "Namespaced"],
            ));
        }
    }
    errs
}

/// kube's `validateResources`.
fn validate_resources(resources: &[String], path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    if resources.is_empty() {
        errs.push(Error::required(path, ""));
    }
    let mut wildcard_sub: HashSet<&str> = HashSet::new();
    let mut wildcard_res: HashSet<&str> = HashSet::new();
    let (mut double, mut single, mut plain) = (false, false, false);
    for (i, rs) in resources.iter().enumerate() {
        if rs.is_empty() {
            errs.push(Error::required(&path.index(i), ""));
            continue;
        }
        if rs == "*/*" {
            double = true;
        }
        if rs == "*" {
            single = true;
        }
        let Some((res, sub)) = rs.split_once('/') else {
            plain = rs != "*";
            continue;
        };
        if wildcard_sub.contains(res) {
            errs.push(Error::invalid(
                &path.index(i),
                json!(rs),
                format!("if '{res}/*' is present, must not specify {rs}"),
            ));
        }
        if wildcard_res.contains(sub) {
            errs.push(Error::invalid(
                &path.index(i),
                json!(rs),
                format!("if '*/{sub}' is present, must not specify {rs}"),
            ));
        }
        if sub == "*" {
            wildcard_sub.insert(res);
        }
        if res == "*" {
            wildcard_res.insert(sub);
        }
    }
    if resources.len() > 1 && double {
        errs.push(Error::invalid(
            path,
            json!(resources),
            "if '*/*' is present, must not specify other resources",
        ));
    }
    if single && plain {
        errs.push(Error::invalid(
            path,
            json!(resources),
            "if '*' is present, must not specify other resources without subresources",
        ));
    }
    errs
}

/// kube's `validateValidatingAdmissionPolicyBindingSpec`.
pub fn validate_binding_spec(spec: &Value, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let policy_name = str_field(spec, "policyName");
    if policy_name.is_empty() {
        errs.push(Error::required(&path.child("policyName"), ""));
    } else {
        for m in objectmeta::is_dns1123_subdomain(policy_name) {
            errs.push(Error::invalid(
                &path.child("policyName"),
                json!(policy_name),
                m,
            ));
        }
    }
    if let Some(pr) = spec.get("paramRef").filter(|p| !p.is_null()) {
        errs.extend(validate_param_ref(pr, &path.child("paramRef")));
    }
    if let Some(mr) = spec.get("matchResources").filter(|m| !m.is_null()) {
        errs.extend(validate_match_resources(mr, &path.child("matchResources")));
    }
    errs.extend(validate_validation_actions(
        &strings(spec, "validationActions"),
        &path.child("validationActions"),
    ));
    errs
}

fn validate_param_ref(pr: &Value, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let name = str_field(pr, "name");
    let selector = pr.get("selector").filter(|s| !s.is_null());
    if !name.is_empty() {
        for m in objectmeta::validate_path_segment_name(name, false) {
            errs.push(Error::invalid(&path.child("name"), json!(name), m));
        }
        if selector.is_some() {
            errs.push(Error::forbidden(
                &path.child("name"),
                "name and selector are mutually exclusive",
            ));
        }
    }
    if let Some(s) = selector {
        errs.extend(label_selector(s, &path.child("selector")));
        if !name.is_empty() {
            errs.push(Error::forbidden(
                &path.child("selector"),
                "name and selector are mutually exclusive",
            ));
        }
    }
    if name.is_empty() && selector.is_none() {
        errs.push(Error::required(
            path,
            "one of name or selector must be specified",
        ));
    }
    match str_field(pr, "parameterNotFoundAction") {
        "" => errs.push(Error::required(&path.child("parameterNotFoundAction"), "")),
        "Deny" | "Allow" => {}
        other => errs.push(Error::not_supported(
            &path.child("parameterNotFoundAction"),
            json!(other),
            &["Deny", "Allow"],
        )),
    }
    errs
}

fn validate_validation_actions(actions: &[String], path: &Path) -> ErrorList {
    const VALID: [&str; 3] = ["Audit", "Deny", "Warn"];
    let mut errs = Vec::new();
    let mut seen = HashSet::new();
    for (i, a) in actions.iter().enumerate() {
        if !VALID.contains(&a.as_str()) {
            errs.push(Error::not_supported(&path.index(i), json!(a), &VALID));
        }
        if !seen.insert(a.as_str()) {
            errs.push(Error::duplicate(&path.index(i), json!(a)));
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        errs.push(Error::invalid(
            path,
            json!(actions),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if seen.is_empty() {
        errs.push(Error::required(
            path,
            "at least one validation action is required",
        ));
    }
    errs
}

fn validate_status(status: &Value, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let p = path.child("typeChecking").child("expressionWarnings");
    let warnings = status
        .get("typeChecking")
        .map(|t| list_field(t, "expressionWarnings"))
        .unwrap_or(&[]);
    for (i, w) in warnings.iter().enumerate() {
        if str_field(w, "warning").is_empty() {
            errs.push(Error::required(&p.index(i).child("warning"), ""));
        }
        if str_field(w, "fieldRef").trim().is_empty() {
            errs.push(Error::required(&p.index(i).child("fieldRef"), ""));
        }
    }
    errs
}

/// CEL identifiers (kube's `isCELIdentifier`): `[_a-zA-Z][_a-zA-Z0-9]*`, not reserved.
fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic());
    first_ok
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !crate::cel::value::RESERVED.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(errs: &ErrorList) -> Vec<String> {
        errs.iter().map(|e| e.to_string()).collect()
    }

    fn policy(spec: Value) -> Value {
        let mut obj = json!({"metadata": {"name": "p"}, "spec": spec});
        default_spec(&mut obj, PolicyObject::Policy);
        obj
    }

    fn rules() -> Value {
        json!({"resourceRules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["widgets"]}]})
    }

    #[test]
    fn policy_defaults_are_kubes() {
        let obj =
            policy(json!({"matchConstraints": rules(), "validations": [{"expression": "true"}]}));
        assert_eq!(obj["spec"]["failurePolicy"], "Fail");
        let mc = &obj["spec"]["matchConstraints"];
        assert_eq!(mc["matchPolicy"], "Equivalent");
        assert_eq!(mc["namespaceSelector"], json!({}));
        assert_eq!(mc["objectSelector"], json!({}));
        assert_eq!(mc["resourceRules"][0]["scope"], "*");
    }

    #[test]
    fn policy_without_validations_or_rules_is_invalid_as_kube() {
        let obj = policy(json!({"matchConstraints": {}}));
        let errs = validate_policy_spec("p", &obj["spec"], &Path::new("spec"));
        assert_eq!(
            messages(&errs),
            vec![
                "spec.matchConstraints.resourceRules: Required value",
                "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
                "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item",
            ]
        );
    }

    #[test]
    fn expression_compile_errors_are_at_the_expression() {
        let obj = policy(json!({"matchConstraints": rules(), "validations": [
            {"expression": "object.x +"},
            {"expression": "6"},
            {"expression": "true", "messageExpression": "0 == 0"},
        ]}));
        let errs = validate_policy_spec("p", &obj["spec"], &Path::new("spec"));
        let m = messages(&errs);
        assert_eq!(m.len(), 3, "{m:?}");
        assert!(m[0].starts_with("spec.validations[0].expression: Invalid value: \"object.x +\": compilation failed: ERROR: <input>:1:11: Syntax error"), "{}", m[0]);
        assert_eq!(
            m[1],
            "spec.validations[1].expression: Invalid value: \"6\": must evaluate to bool but got int"
        );
        assert_eq!(
            m[2],
            "spec.validations[2].messageExpression: Invalid value: \"0 == 0\": must evaluate to string but got bool"
        );
    }

    #[test]
    fn audit_annotation_value_must_be_string_or_null() {
        let obj = policy(json!({"matchConstraints": rules(), "auditAnnotations": [
            {"key": "k", "valueExpression": "true"},
        ]}));
        let errs = validate_policy_spec("p", &obj["spec"], &Path::new("spec"));
        assert_eq!(
            messages(&errs),
            vec!["spec.auditAnnotations[0].valueExpression: Invalid value: \"true\": must evaluate to one of [string null_type] but got bool"]
        );
    }

    #[test]
    fn binding_requires_policy_name_and_actions() {
        let errs = validate_binding_spec(&json!({}), &Path::new("spec"));
        assert_eq!(
            messages(&errs),
            vec![
                "spec.policyName: Required value",
                "spec.validationActions: Required value: at least one validation action is required",
            ]
        );
        let errs = validate_binding_spec(
            &json!({"policyName": "p", "validationActions": ["Deny", "Warn", "Deny", "Block"]}),
            &Path::new("spec"),
        );
        assert_eq!(
            messages(&errs),
            vec![
                "spec.validationActions[2]: Duplicate value: \"Deny\"",
                "spec.validationActions[3]: Unsupported value: \"Block\": supported values: \"Audit\", \"Deny\", \"Warn\"",
                "spec.validationActions: Invalid value: [\"Deny\",\"Warn\",\"Deny\",\"Block\"]: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
            ]
        );
    }

    #[test]
    fn param_ref_needs_name_or_selector_and_an_action() {
        let errs = validate_binding_spec(
            &json!({"policyName": "p", "validationActions": ["Deny"], "paramRef": {}}),
            &Path::new("spec"),
        );
        assert_eq!(
            messages(&errs),
            vec![
                "spec.paramRef: Required value: one of name or selector must be specified",
                "spec.paramRef.parameterNotFoundAction: Required value",
            ]
        );
    }

    #[test]
    fn binding_param_ref_column_prints_gos_selector_string() {
        let sel = json!({"matchLabels": {"b": "2", "a": "1"},
            "matchExpressions": [{"key": "k", "operator": "In", "values": ["x", "y"]}]});
        assert_eq!(
            go_label_selector_string(&sel),
            "&LabelSelector{MatchLabels:map[string]string{a: 1,b: 2,},MatchExpressions:[]LabelSelectorRequirement{{k In [x y]},},}"
        );
    }

    #[test]
    fn variables_must_be_cel_identifiers() {
        assert!(is_cel_identifier("foo_1"));
        assert!(!is_cel_identifier("1foo"));
        assert!(!is_cel_identifier("in"));
        assert!(!is_cel_identifier("foo-bar"));
    }
}
