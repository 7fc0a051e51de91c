//! The admission CEL environment: the expressions of ValidatingAdmissionPolicies
//! (`validations`, `messageExpression`, `auditAnnotations`, `variables`,
//! `matchConditions`) and of webhook `matchConditions`, as kube's
//! `admission/plugin/cel` compiles and runs them.
//!
//! Declared variables (kube's `createEnvForOpts` and composition):
//! - `object`, `oldObject`: `dyn` (the JSON of the object; `null` when absent, e.g.
//!   `oldObject` on create);
//! - `request`: `kubernetes.AdmissionRequest` — `kind`/`requestKind`
//!   `{group,version,kind}`, `resource`/`requestResource` `{group,version,resource}`,
//!   `subResource`, `requestSubResource`, `name`, `namespace`, `operation`,
//!   `userInfo{username,uid,groups,extra}`, `dryRun`, `options` (dyn);
//! - `namespaceObject`: `kubernetes.Namespace` (metadata, spec, status);
//! - `params`: `dyn`, only when the environment says so (a policy with `paramKind`);
//! - `variables`: `kubernetes.variables`, only in an environment made with
//!   [`AdmissionEnv::with_variables`]; each variable's field has the type of its
//!   expression (object types become `dyn`, as kube's `convertCelTypeToDeclType`).
//!
//! - `authorizer` (`kubernetes.authorization.Authorizer`) and
//!   `authorizer.requestResource` (`kubernetes.authorization.ResourceCheck`), only in an
//!   environment made with [`AdmissionEnv::authorizer`]: kube's authz library
//!   ([`AuthzVal`]); `check(verb)` asks the server's authorizer ([`AuthzContext`]) and
//!   costs kube's fixed 350000.
//!
//! At run time every variable is untyped JSON (kube converts `request` and
//! `namespaceObject` to unstructured maps too), so a missing field is
//! `no such key: <field>`. Each evaluation is limited to kube's per-call cost
//! ([`PER_CALL_LIMIT`]); callers charge [`Evaluation::cost`] against the per-policy
//! budget ([`RUNTIME_COST_BUDGET`]). `variables` are evaluated lazily, once per
//! [`Activation`], when an expression first refers to them (kube's lazy map).
//!
//! ```text
//! let env = AdmissionEnv::new(false);
//! let program = compile("object.spec.replicas <= 5", &env, ReturnType::Bool)?;
//! let act = Activation::new(&request).object(Some(&obj));
//! let allowed = program.eval_bool(&act).result?;
//! ```

use super::check::{self, Checked, CompileError, RuleEnv, Want};
use super::decls;
use super::interp;
use super::types::{Decl, ObjectType, Type};
use super::value::{self, EvalError, Extension, Val};
use crate::access::{AccessCheck, Attributes, Decision};
use crate::schema::objectmeta;
use crate::user::UserInfo;
use ::cel::common::ast::{Expr, IdedExpr};
use serde_json::Value;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::{Arc, LazyLock};

pub use super::eval::{PER_CALL_LIMIT, RUNTIME_COST_BUDGET};

/// kube's `MaxEvaluatedMessageExpressionSizeBytes`.
pub const MAX_MESSAGE_EXPRESSION_SIZE: usize = 5 * 1024;

/// The result type an expression must have (kube's `ReturnTypes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReturnType {
    /// `validations[].expression`, `matchConditions[].expression`.
    Bool,
    /// `messageExpression`.
    String,
    /// `auditAnnotations[].valueExpression`: `string` or `null_type`.
    StringOrNull,
    /// `variables[].expression`: anything.
    Any,
}

/// The declarations an admission expression compiles against.
#[derive(Clone, Debug)]
pub struct AdmissionEnv {
    has_params: bool,
    has_authorizer: bool,
    /// Type checking (`status.typeChecking`): `object`/`oldObject` typed by a schema.
    object_decl: Option<Arc<Decl>>,
    /// Type checking: `params` typed by the paramKind's schema.
    params_decl: Option<Arc<Decl>>,
    /// `Some` when `variables` is declared: its fields in declaration order.
    variables: Option<Vec<(String, Type)>>,
}

impl AdmissionEnv {
    /// The environment without `variables` (`params` declared when `has_params`).
    pub fn new(has_params: bool) -> Self {
        AdmissionEnv {
            has_params,
            has_authorizer: false,
            object_decl: None,
            params_decl: None,
            variables: None,
        }
    }

    /// The environment of a policy with `spec.variables` (kube's composited compiler):
    /// `variables` is declared, with no fields until [`Self::compile_variable`] adds them.
    pub fn with_variables(has_params: bool) -> Self {
        AdmissionEnv {
            has_params,
            has_authorizer: false,
            object_decl: None,
            params_decl: None,
            variables: Some(Vec::new()),
        }
    }

    /// Declare (or not) `authorizer` and `authorizer.requestResource` (kube's
    /// `HasAuthorizer`: policies' validations, variables, matchConditions and
    /// auditAnnotations, webhook matchConditions; not `messageExpression`).
    pub fn authorizer(mut self, declared: bool) -> Self {
        self.has_authorizer = declared;
        self
    }

    /// Type `object` and `oldObject` by `object`, and `params` (when declared) by
    /// `params`, as kube's type checking of policies does (`None` keeps `dyn`).
    pub fn typed(mut self, object: Option<Arc<Decl>>, params: Option<Arc<Decl>>) -> Self {
        self.object_decl = object;
        self.params_decl = params;
        self
    }

    /// Whether `params` is declared.
    pub fn has_params(&self) -> bool {
        self.has_params
    }

    /// Compile variable `name` against the variables declared so far, then declare it
    /// (with the expression's type, or `dyn` when it fails to compile, as kube does).
    /// Call only on an environment made with [`Self::with_variables`].
    pub fn compile_variable(&mut self, name: &str, expr: &str) -> Result<Program, CompileError> {
        let result = compile(expr, self, ReturnType::Any);
        let ty = match &result {
            Ok(p) => variable_type(&p.output),
            Err(_) => Type::Dyn,
        };
        if let Some(vars) = self.variables.as_mut() {
            vars.retain(|(n, _)| n != name);
            vars.push((name.to_string(), ty));
        }
        result
    }

    fn rule_env(&self) -> RuleEnv {
        let mut decls: BTreeMap<String, Arc<Decl>> = BTreeMap::new();
        let object = self.object_decl.clone().unwrap_or_else(|| decl(Type::Dyn));
        decls.insert("object".into(), object.clone());
        decls.insert("oldObject".into(), object);
        decls.insert("request".into(), REQUEST_DECL.clone());
        decls.insert("namespaceObject".into(), NAMESPACE_DECL.clone());
        if self.has_params {
            let params = self.params_decl.clone().unwrap_or_else(|| decl(Type::Dyn));
            decls.insert("params".into(), params);
        }
        if self.has_authorizer {
            decls.insert("authorizer".into(), decl(Type::Opaque(decls::AUTHORIZER)));
            decls.insert(
                "authorizer.requestResource".into(),
                decl(Type::Opaque(decls::RESOURCE_CHECK)),
            );
        }
        if let Some(vars) = &self.variables {
            let fields = vars
                .iter()
                .map(|(n, t)| (n.clone(), decl(t.clone())))
                .collect();
            decls.insert(
                "variables".into(),
                object_decl("kubernetes.variables", fields),
            );
        }
        RuleEnv::with_variables(decls)
    }
}

/// A compiled admission expression.
#[derive(Debug)]
pub struct Program {
    /// The expression as written.
    pub source: String,
    checked: Checked,
    /// The checked result type.
    output: Type,
    /// Names of `variables.<name>` the expression reads.
    referenced_variables: Vec<String>,
}

impl Program {
    /// The expression's checked result type, as cel-go prints it.
    pub fn output_type(&self) -> String {
        cel_type_string(&self.output)
    }

    /// Evaluate within kube's per-call cost limit. Variables the expression reads are
    /// evaluated first (once per activation); their cost is part of [`Evaluation::cost`].
    pub fn eval<'a>(&self, act: &Activation<'a>) -> Evaluation<'a> {
        let mut cost = 0u64;
        for name in &self.referenced_variables {
            match act.variable(name, &mut cost) {
                Some(Ok(())) | None => {}
                Some(Err(e)) => {
                    return Evaluation {
                        result: Err(e),
                        cost,
                    }
                }
            }
        }
        let vars = act.interp_vars();
        let iact = interp::Activation {
            self_val: Val::Null,
            old_self: None,
            vars,
        };
        let out = interp::evaluate(self.checked.program.expression(), &iact, PER_CALL_LIMIT);
        Evaluation {
            result: out.result,
            cost: cost.saturating_add(out.cost),
        }
    }

    /// Evaluate an expression checked to be `bool`.
    pub fn eval_bool(&self, act: &Activation<'_>) -> BoolEvaluation {
        let e = self.eval(act);
        let result = match e.result {
            Ok(Val::Bool(b)) => Ok(b),
            Ok(other) => Err(EvalError::new(format!(
                "no such overload: expected bool, got {}",
                other.type_name()
            ))),
            Err(e) => Err(e),
        };
        BoolEvaluation {
            result,
            cost: e.cost,
        }
    }

    /// Evaluate and convert the result to JSON (`string`, `null`, lists, maps, ...).
    pub fn eval_json(&self, act: &Activation<'_>) -> (Result<Value, EvalError>, u64) {
        let e = self.eval(act);
        let r = match e.result {
            Ok(v) => value::to_json(&v).ok_or_else(|| {
                EvalError::new(format!("unsupported result type {}", v.type_name()))
            }),
            Err(e) => Err(e),
        };
        (r, e.cost)
    }
}

/// The outcome of one evaluation.
pub struct Evaluation<'a> {
    /// The value, or cel-go's error (`no such key: spec`,
    /// `operation cancelled: actual cost limit exceeded`, ...).
    pub result: Result<Val<'a>, EvalError>,
    /// cel-go's runtime cost, including variables first evaluated here.
    pub cost: u64,
}

/// The outcome of a boolean evaluation.
#[derive(Clone, Debug, PartialEq)]
pub struct BoolEvaluation {
    /// The value, or the error.
    pub result: Result<bool, EvalError>,
    /// cel-go's runtime cost.
    pub cost: u64,
}

/// The compiled `spec.variables` of a policy, in order.
#[derive(Debug, Default)]
pub struct Variables {
    entries: Vec<(String, Result<Program, CompileError>)>,
}

impl Variables {
    /// Compile `(name, expression)` pairs in order into `env` (which must have been
    /// made with [`AdmissionEnv::with_variables`]); compile errors are kept and
    /// reported when an expression reads the variable.
    pub fn compile(env: &mut AdmissionEnv, vars: &[(String, String)]) -> Variables {
        let entries = vars
            .iter()
            .map(|(n, e)| (n.clone(), env.compile_variable(n, e)))
            .collect();
        Variables { entries }
    }

    /// The compile error of each variable that failed, by index.
    pub fn errors(&self) -> impl Iterator<Item = (usize, &CompileError)> {
        self.entries
            .iter()
            .enumerate()
            .filter_map(|(i, (_, r))| r.as_ref().err().map(|e| (i, e)))
    }
}

type Memo<'a> = RefCell<BTreeMap<String, Result<Val<'a>, EvalError>>>;

/// The values an expression runs against.
pub struct Activation<'a> {
    object: Option<&'a Value>,
    old_object: Option<&'a Value>,
    params: Option<&'a Value>,
    request: &'a Value,
    namespace_object: Option<&'a Value>,
    authz: Option<&'a AuthzContext>,
    variables: Option<&'a Variables>,
    memo: Memo<'a>,
}

impl<'a> Activation<'a> {
    /// An activation with `request` (kube's AdmissionRequest as JSON) and every other
    /// variable `null`.
    pub fn new(request: &'a Value) -> Self {
        Activation {
            object: None,
            old_object: None,
            params: None,
            request,
            namespace_object: None,
            authz: None,
            variables: None,
            memo: RefCell::new(BTreeMap::new()),
        }
    }

    /// Set `object`.
    pub fn object(mut self, v: Option<&'a Value>) -> Self {
        self.object = v;
        self
    }

    /// Set `oldObject`.
    pub fn old_object(mut self, v: Option<&'a Value>) -> Self {
        self.old_object = v;
        self
    }

    /// Set `params`.
    pub fn params(mut self, v: Option<&'a Value>) -> Self {
        self.params = v;
        self
    }

    /// Set `namespaceObject`.
    pub fn namespace_object(mut self, v: Option<&'a Value>) -> Self {
        self.namespace_object = v;
        self
    }

    /// Bind `authorizer` and `authorizer.requestResource`.
    pub fn authorizer(mut self, ctx: Option<&'a AuthzContext>) -> Self {
        self.authz = ctx;
        self
    }

    /// Bind the policy's compiled `variables`.
    pub fn variables(mut self, v: &'a Variables) -> Self {
        self.variables = Some(v);
        self
    }

    /// Evaluate variable `name` if not done yet; `None` when no such variable is bound.
    fn variable(&self, name: &str, cost: &mut u64) -> Option<Result<(), EvalError>> {
        if let Some(r) = self.memo.borrow().get(name) {
            return Some(r.as_ref().map(|_| ()).map_err(Clone::clone));
        }
        let vars = self.variables?;
        let (_, compiled) = vars.entries.iter().rev().find(|(n, _)| n == name)?;
        let result = match compiled {
            Err(e) => Err(EvalError::new(format!(
                "composited variable {name:?} fails to compile: {e}"
            ))),
            Ok(p) => {
                let e = p.eval(self);
                *cost = cost.saturating_add(e.cost);
                e.result.map_err(|m| {
                    EvalError::new(format!(
                        "composited variable {name:?} fails to evaluate: {m}"
                    ))
                })
            }
        };
        let out = result.as_ref().map(|_| ()).map_err(Clone::clone);
        self.memo.borrow_mut().insert(name.to_string(), result);
        Some(out)
    }

    fn interp_vars(&self) -> Vec<(&'static str, Val<'a>)> {
        let json = |v: Option<&'a Value>| match v {
            Some(v) => value::to_val(v, &value::DYN).unwrap_or(Val::Null),
            None => Val::Null,
        };
        let mut out = vec![
            ("object", json(self.object)),
            ("oldObject", json(self.old_object)),
            ("params", json(self.params)),
            ("request", json(Some(self.request))),
            ("namespaceObject", json(self.namespace_object)),
        ];
        if let Some(ctx) = self.authz {
            let (authorizer, request_resource) = authz_values(ctx);
            out.push(("authorizer", authorizer));
            out.push(("authorizer.requestResource", request_resource));
        }
        let memo = self.memo.borrow();
        let evaluated: Vec<(Val<'a>, Val<'a>)> = memo
            .iter()
            .filter_map(|(k, v)| v.as_ref().ok().map(|v| (Val::str(k), v.clone())))
            .collect();
        out.push(("variables", Val::Map(value::Map::Owned(Rc::new(evaluated)))));
        out
    }
}

/// Parse and check `expr` in `env`; the error is kube's detail (cel-go's
/// `compilation failed: ERROR: <input>:1:1: ...` or `must evaluate to bool but got int`).
pub fn compile(expr: &str, env: &AdmissionEnv, ret: ReturnType) -> Result<Program, CompileError> {
    let checked = check::compile(expr, &env.rule_env(), Want::Any)?;
    let output = checked
        .types
        .get(&checked.program.expression().id)
        .cloned()
        .unwrap_or(Type::Dyn);
    let ok = match ret {
        ReturnType::Any => true,
        ReturnType::Bool => matches!(output, Type::Bool),
        ReturnType::String => matches!(output, Type::String),
        ReturnType::StringOrNull => matches!(output, Type::String | Type::Null),
    };
    if !ok {
        let want = match ret {
            ReturnType::Bool => "bool",
            ReturnType::String => "string",
            _ => "one of [string null_type]",
        };
        return Err(CompileError::ResultType {
            want,
            got: cel_type_string(&output),
        });
    }
    let mut referenced_variables = Vec::new();
    referenced(checked.program.expression(), &mut referenced_variables);
    Ok(Program {
        source: expr.to_string(),
        checked,
        output,
        referenced_variables,
    })
}

/// cel-go's `Type.String()` (the checker's names, but `null_type`).
fn cel_type_string(t: &Type) -> String {
    match t {
        Type::Null => "null_type".into(),
        Type::List(e) => format!("list({})", cel_type_string(e)),
        Type::Map(k, v) => format!("map({}, {})", cel_type_string(k), cel_type_string(v)),
        other => other.to_string(),
    }
}

/// kube's `convertCelTypeToDeclType`: primitive types, lists and maps keep their type;
/// everything else is `dyn`.
fn variable_type(t: &Type) -> Type {
    match t {
        Type::Bool
        | Type::Bytes
        | Type::Double
        | Type::Duration
        | Type::Int
        | Type::Null
        | Type::String
        | Type::Timestamp
        | Type::Uint => t.clone(),
        Type::List(e) => Type::list(variable_type(e)),
        Type::Map(k, v) => Type::map(variable_type(k), variable_type(v)),
        _ => Type::Dyn,
    }
}

/// The `variables.<name>` selections in an expression, in order of first appearance.
fn referenced(e: &IdedExpr, out: &mut Vec<String>) {
    super::with_stack(|| referenced_level(e, out))
}

fn referenced_level(e: &IdedExpr, out: &mut Vec<String>) {
    match &e.expr {
        Expr::Select(sel) => {
            if let Expr::Ident(root) = &sel.operand.expr {
                if root == "variables" && !out.contains(&sel.field) {
                    out.push(sel.field.clone());
                }
            }
            referenced(&sel.operand, out);
        }
        Expr::Call(call) => {
            if let Some(t) = &call.target {
                referenced(t, out);
            }
            // `variables.?x` is the `_?._` call with a string literal field.
            if call.func_name == ::cel::common::ast::operators::OPT_SELECT {
                if let (
                    Some(Expr::Ident(root)),
                    Some(Expr::Literal(::cel::common::ast::LiteralValue::String(s))),
                ) = (
                    call.args.first().map(|a| &a.expr),
                    call.args.get(1).map(|a| &a.expr),
                ) {
                    let f = s.inner().to_string();
                    if root == "variables" && !out.contains(&f) {
                        out.push(f);
                    }
                }
            }
            for a in &call.args {
                referenced(a, out);
            }
        }
        Expr::List(l) => l.elements.iter().for_each(|x| referenced(x, out)),
        Expr::Map(m) => {
            for entry in &m.entries {
                if let ::cel::common::ast::EntryExpr::MapEntry(me) = &entry.expr {
                    referenced(&me.key, out);
                    referenced(&me.value, out);
                }
            }
        }
        Expr::Comprehension(c) => {
            for x in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                referenced(x, out);
            }
        }
        _ => {}
    }
}

fn decl(ty: Type) -> Arc<Decl> {
    Arc::new(Decl {
        ty,
        elem: None,
        key: None,
        max_elements: 0,
        min_serialized_size: 0,
    })
}

fn object_decl(name: &str, fields: BTreeMap<String, Arc<Decl>>) -> Arc<Decl> {
    decl(Type::Object(Arc::new(ObjectType {
        name: name.to_string(),
        fields: fields.into_iter().collect(),
    })))
}

fn fields(list: &[(&str, Type)]) -> BTreeMap<String, Arc<Decl>> {
    list.iter()
        .map(|(n, t)| (n.to_string(), decl(t.clone())))
        .collect()
}

fn object_type(name: &str, list: &[(&str, Type)]) -> Type {
    Type::Object(Arc::new(ObjectType {
        name: name.to_string(),
        fields: fields(list).into_iter().collect(),
    }))
}

/// kube's `BuildRequestType`.
static REQUEST_DECL: LazyLock<Arc<Decl>> = LazyLock::new(|| {
    let gvk = object_type(
        "kubernetes.GroupVersionKind",
        &[
            ("group", Type::String),
            ("version", Type::String),
            ("kind", Type::String),
        ],
    );
    let gvr = object_type(
        "kubernetes.GroupVersionResource",
        &[
            ("group", Type::String),
            ("version", Type::String),
            ("resource", Type::String),
        ],
    );
    let user = object_type(
        "kubernetes.UserInfo",
        &[
            ("username", Type::String),
            ("uid", Type::String),
            ("groups", Type::list(Type::String)),
            ("extra", Type::map(Type::String, Type::list(Type::String))),
        ],
    );
    object_decl(
        "kubernetes.AdmissionRequest",
        fields(&[
            ("kind", gvk.clone()),
            ("resource", gvr.clone()),
            ("subResource", Type::String),
            ("requestKind", gvk),
            ("requestResource", gvr),
            ("requestSubResource", Type::String),
            ("name", Type::String),
            ("namespace", Type::String),
            ("operation", Type::String),
            ("userInfo", user),
            ("dryRun", Type::Bool),
            ("options", Type::Dyn),
        ]),
    )
});

/// kube's `BuildNamespaceType`.
static NAMESPACE_DECL: LazyLock<Arc<Decl>> = LazyLock::new(|| {
    let strings = || Type::list(Type::String);
    let string_map = || Type::map(Type::String, Type::String);
    let spec = object_type("kubernetes.NamespaceSpec", &[("finalizers", strings())]);
    let condition = object_type(
        "kubernetes.NamespaceCondition",
        &[
            ("status", Type::String),
            ("type", Type::String),
            ("lastTransitionTime", Type::Timestamp),
            ("message", Type::String),
            ("reason", Type::String),
        ],
    );
    let status = object_type(
        "kubernetes.NamespaceStatus",
        &[
            ("conditions", Type::list(condition)),
            ("phase", Type::String),
        ],
    );
    let metadata = object_type(
        "kubernetes.NamespaceMetadata",
        &[
            ("name", Type::String),
            ("generateName", Type::String),
            ("namespace", Type::String),
            ("labels", string_map()),
            ("annotations", string_map()),
            ("UID", Type::String),
            ("creationTimestamp", Type::Timestamp),
            ("deletionGracePeriodSeconds", Type::Int),
            ("deletionTimestamp", Type::Timestamp),
            ("generation", Type::Int),
            ("resourceVersion", Type::String),
            ("finalizers", strings()),
        ],
    );
    object_decl(
        "kubernetes.Namespace",
        fields(&[("metadata", metadata), ("spec", spec), ("status", status)]),
    )
});

/// The request an `authorizer` checks on behalf of: the server's authorizer, the
/// requesting user and the request's resource (for `authorizer.requestResource`).
#[derive(Clone)]
pub struct AuthzContext {
    /// The server's authorizer (`--authorization-mode`).
    pub authorizer: Arc<dyn AccessCheck>,
    /// The user of the request being admitted.
    pub user: UserInfo,
    /// API group of the request's resource.
    pub group: String,
    /// Plural resource.
    pub resource: String,
    /// Subresource (`""` for the main resource).
    pub subresource: String,
    /// Namespace of the request (`""` when cluster-scoped).
    pub namespace: String,
    /// Object name of the request.
    pub name: String,
}

/// A value of kube's authz library (`kubernetes.authz`): the `authorizer` variable,
/// the checks built from it and their decisions. Builders copy; `check` asks the
/// authorizer.
#[derive(Clone)]
pub enum AuthzVal {
    /// `kubernetes.authorization.Authorizer`.
    Authorizer(AuthzBase),
    /// `kubernetes.authorization.PathCheck`: a non-resource path.
    PathCheck(AuthzBase, String),
    /// `kubernetes.authorization.GroupCheck`: an API group.
    GroupCheck(AuthzBase, String),
    /// `kubernetes.authorization.ResourceCheck`.
    ResourceCheck(AuthzBase, Box<ResourceCheck>),
    /// `kubernetes.authorization.Decision`.
    Decision(AuthzDecision),
}

/// The authorizer and the user an authz value checks for.
#[derive(Clone)]
pub struct AuthzBase {
    authorizer: Arc<dyn AccessCheck>,
    user: UserInfo,
}

/// The attributes a resource check builds up.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResourceCheck {
    group: String,
    resource: String,
    subresource: String,
    namespace: String,
    name: String,
    field_selector: String,
    label_selector: String,
}

/// What `check(verb)` answered.
#[derive(Clone, Debug, PartialEq)]
pub struct AuthzDecision {
    allowed: bool,
    reason: String,
    error: Option<String>,
}

impl std::fmt::Debug for AuthzVal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthzVal::Decision(d) => d.fmt(f),
            AuthzVal::ResourceCheck(_, r) => r.fmt(f),
            other => f.write_str(other.type_name()),
        }
    }
}

impl PartialEq for AuthzVal {
    fn eq(&self, other: &Self) -> bool {
        let same = |a: &AuthzBase, b: &AuthzBase| {
            std::ptr::addr_eq(Arc::as_ptr(&a.authorizer), Arc::as_ptr(&b.authorizer))
                && a.user == b.user
        };
        match (self, other) {
            (AuthzVal::Authorizer(a), AuthzVal::Authorizer(b)) => same(a, b),
            (AuthzVal::PathCheck(a, x), AuthzVal::PathCheck(b, y))
            | (AuthzVal::GroupCheck(a, x), AuthzVal::GroupCheck(b, y)) => same(a, b) && x == y,
            (AuthzVal::ResourceCheck(a, x), AuthzVal::ResourceCheck(b, y)) => same(a, b) && x == y,
            (AuthzVal::Decision(x), AuthzVal::Decision(y)) => x == y,
            _ => false,
        }
    }
}

impl Extension for AuthzVal {
    fn type_name(&self) -> &'static str {
        match self {
            AuthzVal::Authorizer(_) => decls::AUTHORIZER,
            AuthzVal::PathCheck(..) => decls::PATH_CHECK,
            AuthzVal::GroupCheck(..) => decls::GROUP_CHECK,
            AuthzVal::ResourceCheck(..) => decls::RESOURCE_CHECK,
            AuthzVal::Decision(_) => decls::DECISION,
        }
    }

    fn equals(&self, other: &dyn Extension) -> bool {
        other
            .as_any()
            .downcast_ref::<AuthzVal>()
            .is_some_and(|other| self == other)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn call<'a>(&self, name: &str, args: &[Val<'a>]) -> Option<Result<Val<'a>, EvalError>> {
        let wrap = |v: AuthzVal| Ok(Val::Ext(Rc::new(v)));
        Some(match (self, name, args) {
            (AuthzVal::Authorizer(base), "path", [Val::Str(p)]) => {
                if p.trim().is_empty() {
                    Err(EvalError::new("path must not be empty"))
                } else {
                    wrap(AuthzVal::PathCheck(base.clone(), p.to_string()))
                }
            }
            (AuthzVal::Authorizer(base), "group", [Val::Str(g)]) => {
                wrap(AuthzVal::GroupCheck(base.clone(), g.to_string()))
            }
            (AuthzVal::Authorizer(base), "serviceAccount", [Val::Str(ns), Val::Str(n)]) => {
                if !objectmeta::is_dns1123_subdomain(n).is_empty() {
                    Err(EvalError::new("Invalid service account name"))
                } else if !objectmeta::validate_namespace_name(ns).is_empty() {
                    Err(EvalError::new("Invalid service account namespace"))
                } else {
                    wrap(AuthzVal::Authorizer(AuthzBase {
                        authorizer: base.authorizer.clone(),
                        user: service_account_user(ns, n),
                    }))
                }
            }
            (AuthzVal::GroupCheck(base, g), "resource", [Val::Str(r)]) => {
                if r.trim().is_empty() {
                    Err(EvalError::new("resource must not be empty"))
                } else {
                    wrap(AuthzVal::ResourceCheck(
                        base.clone(),
                        Box::new(ResourceCheck {
                            group: g.clone(),
                            resource: r.to_string(),
                            ..Default::default()
                        }),
                    ))
                }
            }
            (AuthzVal::ResourceCheck(base, rc), _, [Val::Str(v)]) if name != "check" => {
                let mut rc = rc.clone();
                let slot = match name {
                    "subresource" => &mut rc.subresource,
                    "namespace" => &mut rc.namespace,
                    "name" => &mut rc.name,
                    "fieldSelector" => &mut rc.field_selector,
                    "labelSelector" => &mut rc.label_selector,
                    _ => return None,
                };
                *slot = v.to_string();
                wrap(AuthzVal::ResourceCheck(base.clone(), rc))
            }
            (AuthzVal::ResourceCheck(base, rc), "check", [Val::Str(verb)]) => {
                let attrs = Attributes {
                    user: base.user.clone(),
                    verb: verb.to_string(),
                    resource_request: true,
                    api_group: rc.group.clone(),
                    api_version: "*".into(),
                    resource: rc.resource.clone(),
                    subresource: rc.subresource.clone(),
                    namespace: rc.namespace.clone(),
                    name: rc.name.clone(),
                    path: String::new(),
                };
                wrap(AuthzVal::Decision(authorize_now(
                    base.authorizer.as_ref(),
                    &attrs,
                )))
            }
            (AuthzVal::PathCheck(base, path), "check", [Val::Str(verb)]) => {
                let attrs = Attributes {
                    user: base.user.clone(),
                    verb: verb.to_string(),
                    path: path.clone(),
                    ..Default::default()
                };
                wrap(AuthzVal::Decision(authorize_now(
                    base.authorizer.as_ref(),
                    &attrs,
                )))
            }
            (AuthzVal::Decision(d), "allowed", []) => Ok(Val::Bool(d.allowed)),
            (AuthzVal::Decision(d), "reason", []) => Ok(Val::str(&d.reason)),
            (AuthzVal::Decision(d), "errored", []) => Ok(Val::Bool(d.error.is_some())),
            (AuthzVal::Decision(d), "error", []) => {
                Ok(Val::str(d.error.as_deref().unwrap_or_default()))
            }
            _ => return None,
        })
    }
}

/// kube's user of a service account (`serviceaccount.ServiceAccountInfo.UserInfo`).
fn service_account_user(namespace: &str, name: &str) -> UserInfo {
    UserInfo {
        username: format!("system:serviceaccount:{namespace}:{name}"),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{namespace}"),
        ],
        ..Default::default()
    }
}

/// Ask the authorizer while evaluating. CEL evaluation is synchronous (kube's check
/// blocks too); the server's authorizers answer from memory, so their future is ready
/// on its first poll. One that is not is reported as an errored decision.
fn authorize_now(authorizer: &dyn AccessCheck, attrs: &Attributes) -> AuthzDecision {
    match authorizer.check(attrs) {
        Ok((decision, reason)) => AuthzDecision {
            allowed: decision == Decision::Allow,
            reason,
            error: None,
        },
        Err(e) => AuthzDecision {
            allowed: false,
            reason: String::new(),
            error: Some(e.to_string()),
        },
    }
}

/// The values of `authorizer` and `authorizer.requestResource` for a request.
fn authz_values<'a>(ctx: &AuthzContext) -> (Val<'a>, Val<'a>) {
    let base = AuthzBase {
        authorizer: ctx.authorizer.clone(),
        user: ctx.user.clone(),
    };
    let request_resource = AuthzVal::ResourceCheck(
        base.clone(),
        Box::new(ResourceCheck {
            group: ctx.group.clone(),
            resource: ctx.resource.clone(),
            subresource: ctx.subresource.clone(),
            namespace: ctx.namespace.clone(),
            name: ctx.name.clone(),
            ..Default::default()
        }),
    );
    (
        Val::Ext(Rc::new(AuthzVal::Authorizer(base))),
        Val::Ext(Rc::new(request_resource)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request() -> Value {
        json!({
            "uid": "u",
            "kind": {"group": "example.com", "version": "v1", "kind": "Widget"},
            "resource": {"group": "example.com", "version": "v1", "resource": "widgets"},
            "requestKind": {"group": "example.com", "version": "v1", "kind": "Widget"},
            "requestResource": {"group": "example.com", "version": "v1", "resource": "widgets"},
            "name": "w1",
            "namespace": "default",
            "operation": "CREATE",
            "userInfo": {"username": "system:anonymous", "groups": ["system:unauthenticated"]},
            "dryRun": false,
            "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
        })
    }

    fn eval_bool(expr: &str, obj: &Value) -> Result<bool, String> {
        let p = compile(expr, &AdmissionEnv::new(false), ReturnType::Bool)
            .map_err(|e| e.to_string())?;
        let req = request();
        let act = Activation::new(&req).object(Some(obj));
        p.eval_bool(&act).result.map_err(|e| e.to_string())
    }

    #[test]
    fn object_replicas_rule_admits_and_denies() {
        let ok = json!({"spec": {"replicas": 3}});
        let bad = json!({"spec": {"replicas": 7}});
        assert_eq!(eval_bool("object.spec.replicas <= 5", &ok), Ok(true));
        assert_eq!(eval_bool("object.spec.replicas <= 5", &bad), Ok(false));
        assert_eq!(
            eval_bool("object.spec.size <= 5", &ok),
            Err("no such key: size".into())
        );
        assert_eq!(
            eval_bool("has(object.spec.size) && object.spec.size <= 5", &ok),
            Ok(false)
        );
    }

    #[test]
    fn request_is_typed_as_kubes_admission_request() {
        let obj = json!({});
        assert_eq!(
            eval_bool(
                "request.operation == 'CREATE' && request.kind.kind == 'Widget' && request.userInfo.username == 'system:anonymous'",
                &obj
            ),
            Ok(true)
        );
        let err = compile(
            "request.foo == 1",
            &AdmissionEnv::new(false),
            ReturnType::Bool,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "compilation failed: ERROR: <input>:1:8: undefined field 'foo'\n | request.foo == 1\n | .......^"
        );
    }

    #[test]
    fn params_only_when_declared_and_authorizer_when_asked() {
        let err = compile(
            "params.max > 1",
            &AdmissionEnv::new(false),
            ReturnType::Bool,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("undeclared reference to 'params' (in container '')"),
            "{err}"
        );
        assert!(compile("params.max > 1", &AdmissionEnv::new(true), ReturnType::Bool).is_ok());
        let expr = "authorizer.group('').resource('pods').check('get').allowed()";
        let err = compile(expr, &AdmissionEnv::new(true), ReturnType::Bool)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("undeclared reference to 'authorizer' (in container '')"),
            "{err}"
        );
        let env = AdmissionEnv::new(true).authorizer(true);
        assert!(compile(expr, &env, ReturnType::Bool).is_ok());
    }

    /// Grants `get` on `pods` in namespace `ns1` to user `alice` and to the
    /// `system:serviceaccount:ns1:builder` service account, nothing else.
    struct PodReader;

    impl AccessCheck for PodReader {
        fn check(&self, a: &Attributes) -> Result<(Decision, String), crate::access::AccessError> {
            let who = a.user.username == "alice"
                || (a.user.username == "system:serviceaccount:ns1:builder"
                    && a.user
                        .groups
                        .iter()
                        .any(|g| g == "system:serviceaccounts:ns1"));
            if a.resource_request
                && who
                && a.verb == "get"
                && a.api_group.is_empty()
                && a.api_version == "*"
                && a.resource == "pods"
                && a.namespace == "ns1"
            {
                return Ok((Decision::Allow, "pod reader".into()));
            }
            if !a.resource_request && a.path == "/healthz" && a.verb == "get" {
                return Ok((Decision::Allow, String::new()));
            }
            Ok((Decision::NoOpinion, format!("no rule for {}", a.resource)))
        }
    }

    fn authz_eval(expr: &str, user: &str) -> Result<Value, String> {
        let env = AdmissionEnv::new(false).authorizer(true);
        let p = compile(expr, &env, ReturnType::Any).map_err(|e| e.to_string())?;
        let req = request();
        let ctx = AuthzContext {
            authorizer: Arc::new(PodReader),
            user: UserInfo {
                username: user.into(),
                ..Default::default()
            },
            group: String::new(),
            resource: "pods".into(),
            subresource: String::new(),
            namespace: "ns1".into(),
            name: "p1".into(),
        };
        let act = Activation::new(&req).authorizer(Some(&ctx));
        p.eval_json(&act).0.map_err(|e| e.to_string())
    }

    #[test]
    fn authorizer_checks_ask_the_servers_authorizer() {
        let check = "authorizer.group('').resource('pods').namespace('ns1').check('get')";
        assert_eq!(
            authz_eval(&format!("{check}.allowed()"), "alice"),
            Ok(json!(true))
        );
        assert_eq!(
            authz_eval(&format!("{check}.reason()"), "alice"),
            Ok(json!("pod reader"))
        );
        assert_eq!(
            authz_eval(&format!("{check}.allowed()"), "bob"),
            Ok(json!(false))
        );
        assert_eq!(
            authz_eval(
                &format!("{check}.errored() || {check}.error() != ''"),
                "bob"
            ),
            Ok(json!(false))
        );
        // The request's own resource, namespace and name.
        assert_eq!(
            authz_eval("authorizer.requestResource.check('get').allowed()", "alice"),
            Ok(json!(true))
        );
        assert_eq!(
            authz_eval(
                "authorizer.requestResource.subresource('log').name('p1').check('get').reason()",
                "alice"
            ),
            Ok(json!("pod reader"))
        );
        assert_eq!(
            authz_eval("authorizer.path('/healthz').check('get').allowed()", "bob"),
            Ok(json!(true))
        );
        assert_eq!(
            authz_eval(
                "authorizer.serviceAccount('ns1', 'builder').group('').resource('pods').namespace('ns1').check('get').allowed()",
                "bob"
            ),
            Ok(json!(true))
        );
    }

    #[test]
    fn authorizer_argument_errors_are_kubes() {
        assert_eq!(
            authz_eval("authorizer.path(' ').check('get').allowed()", "alice"),
            Err("path must not be empty".into())
        );
        assert_eq!(
            authz_eval(
                "authorizer.group('').resource('').check('get').allowed()",
                "alice"
            ),
            Err("resource must not be empty".into())
        );
        assert_eq!(
            authz_eval(
                "authorizer.serviceAccount('ns1', 'Bad_Name').path('/x').check('get').allowed()",
                "alice"
            ),
            Err("Invalid service account name".into())
        );
        assert_eq!(
            authz_eval(
                "authorizer.serviceAccount('NS', 'sa').path('/x').check('get').allowed()",
                "alice"
            ),
            Err("Invalid service account namespace".into())
        );
    }

    #[test]
    fn authorizer_types_check_as_cel_go() {
        let env = AdmissionEnv::new(false).authorizer(true);
        let err = compile("authorizer.check('get')", &env, ReturnType::Any)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "compilation failed: ERROR: <input>:1:17: found no matching overload for 'check' applied to 'kubernetes.authorization.Authorizer.(string)'\n | authorizer.check('get')\n | ................^"
        );
        let err = compile(
            "authorizer.requestResource.check('get')",
            &env,
            ReturnType::Bool,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "must evaluate to bool but got kubernetes.authorization.Decision"
        );
        // `check` costs kube's fixed 350000: three checks exceed the per-call limit.
        let three = "authorizer.path('/a').check('get').allowed() || authorizer.path('/b').check('get').allowed() || authorizer.path('/c').check('get').allowed()";
        assert_eq!(
            authz_eval(three, "bob"),
            Err("operation cancelled: actual cost limit exceeded".into())
        );
    }

    #[test]
    fn return_types_are_worded_as_kube() {
        let env = AdmissionEnv::new(false);
        assert_eq!(
            compile("6", &env, ReturnType::Bool)
                .unwrap_err()
                .to_string(),
            "must evaluate to bool but got int"
        );
        assert_eq!(
            compile("0 == 0", &env, ReturnType::String)
                .unwrap_err()
                .to_string(),
            "must evaluate to string but got bool"
        );
        assert_eq!(
            compile("true", &env, ReturnType::StringOrNull)
                .unwrap_err()
                .to_string(),
            "must evaluate to one of [string null_type] but got bool"
        );
        assert!(compile("null", &env, ReturnType::StringOrNull).is_ok());
        assert!(compile("object.x", &env, ReturnType::Any).is_ok());
    }

    #[test]
    fn variables_are_typed_lazy_and_report_their_errors() {
        let mut env = AdmissionEnv::with_variables(false);
        let vars = Variables::compile(
            &mut env,
            &[
                ("replicas".into(), "object.spec.replicas".into()),
                ("limit".into(), "5".into()),
                ("broken".into(), "object.spec.missing".into()),
                ("names".into(), "['a', 'b']".into()),
            ],
        );
        assert_eq!(vars.errors().count(), 0);
        let p = compile(
            "variables.replicas <= variables.limit",
            &env,
            ReturnType::Bool,
        )
        .expect("compiles");
        let obj = json!({"spec": {"replicas": 7}});
        let req = request();
        let act = Activation::new(&req).object(Some(&obj)).variables(&vars);
        assert_eq!(p.eval_bool(&act).result, Ok(false));
        // A list variable keeps its type: `size()` checks.
        assert!(compile("variables.names.size() == 2", &env, ReturnType::Bool).is_ok());
        // `limit` is int, so a string comparison does not check.
        assert!(compile("variables.limit == 'x'", &env, ReturnType::Bool).is_err());
        let p = compile("variables.broken == 1", &env, ReturnType::Bool).expect("compiles");
        assert_eq!(
            p.eval_bool(&act).result,
            Err(EvalError::new(
                "composited variable \"broken\" fails to evaluate: no such key: missing"
            ))
        );
        let err = compile("variables.nope == 1", &env, ReturnType::Bool)
            .unwrap_err()
            .to_string();
        assert!(err.contains("undefined field 'nope'"), "{err}");
    }

    #[test]
    fn old_object_is_null_on_create_and_namespace_object_is_typed() {
        let obj = json!({"metadata": {"name": "a"}});
        assert_eq!(eval_bool("oldObject == null", &obj), Ok(true));
        let env = AdmissionEnv::new(false);
        let p = compile(
            "namespaceObject.metadata.labels['env'] == 'prod'",
            &env,
            ReturnType::Bool,
        )
        .expect("compiles");
        let ns = json!({"metadata": {"name": "default", "labels": {"env": "prod"}}});
        let req = request();
        let act = Activation::new(&req).namespace_object(Some(&ns));
        assert_eq!(p.eval_bool(&act).result, Ok(true));
        assert!(compile(
            "namespaceObject.metadata.nope == ''",
            &env,
            ReturnType::Bool
        )
        .is_err());
    }

    #[test]
    fn cost_limit_stops_runaway_expressions() {
        let obj = json!({"spec": {"items": (0..2000).collect::<Vec<i32>>()}});
        let r = eval_bool(
            "object.spec.items.all(x, object.spec.items.all(y, x + y >= 0))",
            &obj,
        );
        assert_eq!(
            r,
            Err("operation cancelled: actual cost limit exceeded".into())
        );
    }
}
