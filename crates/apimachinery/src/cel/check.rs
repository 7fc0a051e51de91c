//! The CEL type checker, as cel-go runs it for kube's rules: identifiers, field
//! selections on schema objects, overload resolution with type parameters, homogeneous
//! list and map literals, comprehensions, and the rule's result type. Errors read as
//! cel-go's (`ERROR: <input>:1:6: undefined field 'foo'` plus the source snippet).

use super::decls::{self, FunctionDecl};
use super::limits;
use super::macros;
use super::types::{Decl, Type};
use ::cel::common::ast::{operators, EntryExpr, Expr, IdedExpr, LiteralValue};
use std::collections::HashMap;
use std::sync::Arc;

/// The declarations of one rule: `self` (and `oldSelf`) typed by the schema node.
pub struct RuleEnv {
    /// The node's CEL declaration.
    pub self_decl: Arc<Decl>,
    /// `optionalOldSelf: true`: `oldSelf` is `optional_type(T)`.
    pub optional_old_self: bool,
    /// When set, the only variables declared (no `self`/`oldSelf`): the admission
    /// environment's `object`, `request`, `variables`, ...
    pub variables: Option<std::collections::BTreeMap<String, Arc<Decl>>>,
}

impl RuleEnv {
    /// The environment of a rule on a node declared as `self_decl`.
    pub fn new(self_decl: Arc<Decl>, optional_old_self: bool) -> Self {
        RuleEnv {
            self_decl,
            optional_old_self,
            variables: None,
        }
    }

    /// An environment declaring exactly `variables` (name → declaration).
    pub fn with_variables(variables: std::collections::BTreeMap<String, Arc<Decl>>) -> Self {
        RuleEnv {
            self_decl: Arc::new(Decl {
                ty: Type::Dyn,
                elem: None,
                key: None,
                max_elements: 0,
                min_serialized_size: 0,
            }),
            optional_old_self: false,
            variables: Some(variables),
        }
    }
}

/// The result type a compiled expression must have.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Want {
    /// Rules.
    Bool,
    /// `messageExpression`.
    String,
    /// Any type (the caller checks the result type itself).
    Any,
}

/// A parsed and checked expression.
#[derive(Debug)]
pub struct Checked {
    /// The parsed program (AST and source positions).
    pub program: macros::Parsed,
    /// The checked type of every expression, by id.
    pub types: HashMap<u64, Type>,
    /// The schema declaration of expressions reading from `self`/`oldSelf` (for sizes).
    pub decls: HashMap<u64, Arc<Decl>>,
    /// The overloads each call resolved to, by id.
    pub overloads: HashMap<u64, Vec<&'static str>>,
    /// The expression refers to `oldSelf`.
    pub uses_old_self: bool,
}

// Expressions of macro-generated code share ids; all is well as long as ids are unique,
// which the parser guarantees.

/// An expression that does not compile; the texts are cel-go's and kube's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    /// cel-go's issues, one `ERROR: <input>:line:col: ...` (with snippet and caret)
    /// per line.
    #[error("compilation failed: {0}")]
    Failed(String),
    /// A rule whose type is not `bool`.
    #[error("cel expression must evaluate to a bool")]
    NotBool,
    /// A message expression whose type is not `string`.
    #[error("cel expression must evaluate to a string")]
    NotString,
    /// An admission expression of another type than its field takes.
    #[error("must evaluate to {want} but got {got}")]
    ResultType {
        /// `bool`, `string` or `one of [string null_type]`.
        want: &'static str,
        /// cel-go's name of the expression's type.
        got: String,
    },
}

/// Parse and check `source`; the error is kube's compile error detail
/// (`compilation failed: ERROR: ...`).
pub fn compile(source: &str, env: &RuleEnv, want: Want) -> Result<Checked, CompileError> {
    if let Err(limits::LimitError(msg)) = limits::check(source) {
        // cel-go reports its parser limits at no location: no snippet.
        return Err(CompileError::Failed(format!("ERROR: <input>:-1:0: {msg}")));
    }
    // Within cel-go's limits the parser (ANTLR) and the checker still recurse a few
    // hundred levels deep: give them a stack of their own when this one is small.
    super::with_parser_stack(|| compile_within_limits(source, env, want))
}

fn compile_within_limits(source: &str, env: &RuleEnv, want: Want) -> Result<Checked, CompileError> {
    let program = macros::parse(source).map_err(|e| {
        let errs = e
            .errors
            .iter()
            .map(|pe| (pe.pos.0 as i64, pe.pos.1 as i64 - 1, pe.msg.clone()))
            .collect();
        compilation_failed(source, errs)
    })?;
    let mut c = Checker {
        env,
        source,
        program: &program,
        mapping: HashMap::new(),
        free: 0,
        types: HashMap::new(),
        decls: HashMap::new(),
        overloads: HashMap::new(),
        errors: Vec::new(),
        scopes: Vec::new(),
        uses_old_self: false,
    };
    c.check(program.expression());
    if !c.errors.is_empty() {
        return Err(compilation_failed(source, std::mem::take(&mut c.errors)));
    }
    // kube's AST validators: literal regexes, durations and timestamps must parse.
    validate_literals(program.expression(), &mut c);
    if !c.errors.is_empty() {
        return Err(compilation_failed(source, std::mem::take(&mut c.errors)));
    }
    let mut types = HashMap::with_capacity(c.types.len());
    for (id, t) in &c.types {
        types.insert(*id, substitute(&c.mapping, t, true));
    }
    let out = types
        .get(&program.expression().id)
        .cloned()
        .unwrap_or(Type::Error);
    match want {
        Want::Bool if !matches!(out, Type::Bool) => return Err(CompileError::NotBool),
        Want::String if !matches!(out, Type::String) => return Err(CompileError::NotString),
        _ => {}
    }
    let (decls, overloads, uses_old_self) = (c.decls, c.overloads, c.uses_old_self);
    Ok(Checked {
        program,
        types,
        decls,
        overloads,
        uses_old_self,
    })
}

/// cel-go's `compilation failed: ` text of errors at (line, column), in source order.
fn compilation_failed(source: &str, mut errs: Vec<(i64, i64, String)>) -> CompileError {
    errs.sort_by_key(|(l, c, _)| (*l, *c));
    let text: Vec<String> = errs
        .into_iter()
        .map(|(l, c, m)| display_error(source, l, c, &m))
        .collect();
    CompileError::Failed(text.join("\n"))
}

/// cel-go's `Error.ToDisplayString`: position (1-based line and column) and a caret
/// under the snippet.
fn display_error(source: &str, line: i64, col: i64, msg: &str) -> String {
    let mut out = format!("ERROR: <input>:{line}:{}: {msg}", col + 1);
    if let Some(snippet) = source.split('\n').nth((line - 1).max(0) as usize) {
        let snippet = snippet.replace('\t', " ");
        out.push_str("\n | ");
        out.push_str(&snippet);
        out.push_str("\n | ");
        let mut chars = snippet.chars();
        for _ in 0..col.max(0) {
            match chars.next() {
                Some(c) if c.len_utf8() > 1 => out.push('\u{ff0e}'),
                Some(_) => out.push('.'),
                None => break,
            }
        }
        match chars.next() {
            Some(c) if c.len_utf8() > 1 => out.push('\u{ff3e}'),
            _ => out.push('^'),
        }
    }
    out
}

type Mapping = HashMap<String, Type>;

/// A variable in scope: its type and, when it reads from the schema, its declaration.
type Var = (Type, Option<Arc<Decl>>);

struct Checker<'e, 's, 'p> {
    env: &'e RuleEnv,
    source: &'s str,
    program: &'p macros::Parsed,
    mapping: Mapping,
    free: usize,
    types: HashMap<u64, Type>,
    decls: HashMap<u64, Arc<Decl>>,
    overloads: HashMap<u64, Vec<&'static str>>,
    errors: Vec<(i64, i64, String)>,
    scopes: Vec<HashMap<String, Var>>,
    uses_old_self: bool,
}

impl Checker<'_, '_, '_> {
    fn location(&self, id: u64) -> (i64, i64) {
        let Some((start, _)) = self.program.source_info().offset_for(id) else {
            return (1, 0);
        };
        let mut line = 1i64;
        let mut col = 0i64;
        for (i, ch) in self.source.chars().enumerate() {
            if i as u32 >= start {
                break;
            }
            if ch == '\n' {
                line += 1;
                col = 0;
            } else {
                col += 1;
            }
        }
        (line, col)
    }

    fn error(&mut self, id: u64, msg: String) {
        let (l, c) = self.location(id);
        self.errors.push((l, c, msg));
    }

    fn set(&mut self, id: u64, t: Type) {
        self.types.insert(id, t);
    }

    fn ty(&self, id: u64) -> Type {
        self.types.get(&id).cloned().unwrap_or(Type::Error)
    }

    fn new_var(&mut self) -> Type {
        let t = Type::Param(format!("_var{}", self.free));
        self.free += 1;
        t
    }

    fn lookup_ident(&mut self, name: &str) -> Option<Var> {
        for scope in self.scopes.iter().rev() {
            if let Some(v) = scope.get(name) {
                return Some(v.clone());
            }
        }
        if let Some(vars) = &self.env.variables {
            if let Some(d) = vars.get(name) {
                return Some((d.ty.clone(), Some(d.clone())));
            }
            return type_ident(name).map(|t| (Type::TypeOf(Box::new(t)), None));
        }
        match name {
            "self" => Some((
                self.env.self_decl.ty.clone(),
                Some(self.env.self_decl.clone()),
            )),
            "oldSelf" => {
                self.uses_old_self = true;
                let t = self.env.self_decl.ty.clone();
                if self.env.optional_old_self {
                    Some((Type::optional(t), Some(self.env.self_decl.clone())))
                } else {
                    Some((t, Some(self.env.self_decl.clone())))
                }
            }
            _ => type_ident(name).map(|t| (Type::TypeOf(Box::new(t)), None)),
        }
    }

    fn check(&mut self, e: &IdedExpr) {
        super::with_stack(|| self.check_level(e))
    }

    fn check_level(&mut self, e: &IdedExpr) {
        match &e.expr {
            Expr::Literal(l) => {
                let t = match l {
                    LiteralValue::Boolean(_) => Type::Bool,
                    LiteralValue::Bytes(_) => Type::Bytes,
                    LiteralValue::Double(_) => Type::Double,
                    LiteralValue::Int(_) => Type::Int,
                    LiteralValue::Null => Type::Null,
                    LiteralValue::String(_) => Type::String,
                    LiteralValue::UInt(_) => Type::Uint,
                };
                self.set(e.id, t);
            }
            Expr::Ident(name) => match self.lookup_ident(name) {
                Some((t, d)) => {
                    self.set(e.id, t);
                    if let Some(d) = d {
                        self.decls.insert(e.id, d);
                    }
                }
                None => {
                    self.set(e.id, Type::Error);
                    self.error(
                        e.id,
                        format!("undeclared reference to '{name}' (in container '')"),
                    );
                }
            },
            Expr::Select(sel) => {
                if !sel.test {
                    if let Some(q) = qualified_name(e) {
                        // A variable whose name has a dot (`authorizer.requestResource`)
                        // wins over a field selection, as cel-go resolves qualified names.
                        let root = q.split('.').next().unwrap_or_default();
                        let declared = self.env.variables.as_ref().and_then(|v| v.get(&q));
                        if let Some(d) = declared.filter(|_| !self.is_scoped(root)) {
                            let d = d.clone();
                            self.set(e.id, d.ty.clone());
                            self.decls.insert(e.id, d);
                            return;
                        }
                        if q.contains('.') {
                            if let Some(t) = type_ident(&q) {
                                self.set(e.id, Type::TypeOf(Box::new(t)));
                                return;
                            }
                        }
                    }
                }
                let t = self.check_select_field(e.id, &sel.operand, &sel.field, false);
                let t = if sel.test { Type::Bool } else { t };
                let t = substitute(&self.mapping, &t, false);
                self.set(e.id, t);
            }
            Expr::Call(call) => self.check_call(e, call),
            Expr::List(l) => {
                let mut elem: Option<Type> = None;
                for (i, el) in l.elements.iter().enumerate() {
                    self.check(el);
                    let mut et = self.ty(el.id);
                    if l.optional_indices.contains(&i) {
                        let (inner, is_opt) = unwrap_optional(&et);
                        if !is_opt && !inner.is_dyn() {
                            self.error(
                                el.id,
                                format!(
                                    "expected type '{}' but found '{}'",
                                    Type::optional(inner.clone()),
                                    inner
                                ),
                            );
                        }
                        et = inner;
                    }
                    elem = Some(self.join(el.id, elem, et));
                }
                let elem = elem.unwrap_or_else(|| self.new_var());
                self.set(e.id, Type::list(elem));
            }
            Expr::Map(m) => {
                let mut kt: Option<Type> = None;
                let mut vt: Option<Type> = None;
                for entry in &m.entries {
                    let EntryExpr::MapEntry(me) = &entry.expr else {
                        continue;
                    };
                    self.check(&me.key);
                    let k = self.ty(me.key.id);
                    kt = Some(self.join(me.key.id, kt, k));
                    self.check(&me.value);
                    let mut v = self.ty(me.value.id);
                    if me.optional {
                        let (inner, is_opt) = unwrap_optional(&v);
                        if !is_opt && !inner.is_dyn() {
                            self.error(
                                me.value.id,
                                format!(
                                    "expected type '{}' but found '{}'",
                                    Type::optional(inner.clone()),
                                    inner
                                ),
                            );
                        }
                        v = inner;
                    }
                    vt = Some(self.join(me.value.id, vt, v));
                }
                let (k, v) = match (kt, vt) {
                    (Some(k), Some(v)) => (k, v),
                    _ => (self.new_var(), self.new_var()),
                };
                self.set(e.id, Type::map(k, v));
            }
            Expr::Struct(s) => {
                self.set(e.id, Type::Error);
                self.error(
                    e.id,
                    format!(
                        "undeclared reference to '{}' (in container '')",
                        s.type_name
                    ),
                );
            }
            Expr::Comprehension(c) => {
                self.check(&c.iter_range);
                self.check(&c.accu_init);
                let range = substitute(&self.mapping, &self.ty(c.iter_range.id), false);
                let range_decl = self.decls.get(&c.iter_range.id).cloned();
                let accu = self.ty(c.accu_init.id);
                let mut accu_scope = HashMap::new();
                accu_scope.insert(c.accu_var.clone(), (accu.clone(), None));
                self.scopes.push(accu_scope);
                let two = c.iter_var2.is_some();
                let ((v1, d1), (v2, d2)): (Var, (Option<Type>, Option<Arc<Decl>>)) = match &range {
                    Type::List(el) => {
                        let ed = range_decl.as_ref().and_then(|d| d.elem.clone());
                        if two {
                            ((Type::Int, None), (Some((**el).clone()), ed))
                        } else {
                            (((**el).clone(), ed), (None, None))
                        }
                    }
                    Type::Map(k, v) => (
                        (
                            (**k).clone(),
                            range_decl.as_ref().and_then(|d| d.key.clone()),
                        ),
                        (
                            two.then(|| (**v).clone()),
                            range_decl.as_ref().and_then(|d| d.elem.clone()),
                        ),
                    ),
                    Type::Dyn | Type::Error | Type::Param(_) => {
                        self.assignable(&Type::Dyn, &range);
                        ((Type::Dyn, None), (two.then_some(Type::Dyn), None))
                    }
                    other => {
                        self.error(
                            c.iter_range.id,
                            format!("expression of type '{other}' cannot be range of a comprehension (must be list, map, or dynamic)"),
                        );
                        ((Type::Error, None), (two.then_some(Type::Error), None))
                    }
                };
                let mut iter_scope = HashMap::new();
                iter_scope.insert(c.iter_var.clone(), (v1, d1));
                if let (Some(n), Some(t)) = (&c.iter_var2, v2) {
                    iter_scope.insert(n.clone(), (t, d2));
                }
                self.scopes.push(iter_scope);
                self.check(&c.loop_cond);
                self.assert_type(&c.loop_cond, &Type::Bool);
                self.check(&c.loop_step);
                self.assert_type(&c.loop_step, &accu);
                self.scopes.pop();
                self.check(&c.result);
                self.scopes.pop();
                let t = substitute(&self.mapping, &self.ty(c.result.id), false);
                self.set(e.id, t);
            }
            Expr::Unspecified => {
                self.set(e.id, Type::Error);
            }
        }
    }

    fn assert_type(&mut self, e: &IdedExpr, t: &Type) {
        let actual = self.ty(e.id);
        if !self.assignable(t, &actual) {
            let (t, actual) = (
                substitute(&self.mapping, t, true),
                substitute(&self.mapping, &actual, true),
            );
            self.error(e.id, format!("expected type '{t}' but found '{actual}'"));
        }
    }

    fn join(&mut self, id: u64, prev: Option<Type>, cur: Type) -> Type {
        let Some(prev) = prev else {
            return cur;
        };
        if self.assignable(&prev, &cur) {
            return most_general(&prev, &cur);
        }
        self.error(id, format!("expected type '{prev}' but found '{cur}'"));
        Type::Error
    }

    fn check_select_field(
        &mut self,
        id: u64,
        operand: &IdedExpr,
        field: &str,
        optional: bool,
    ) -> Type {
        self.check(operand);
        let operand_t = substitute(&self.mapping, &self.ty(operand.id), false);
        let operand_decl = self.decls.get(&operand.id).cloned();
        let (target, is_opt) = unwrap_optional(&operand_t);
        let mut result = Type::Error;
        match &target {
            Type::Map(_, v) => {
                result = (**v).clone();
                if let Some(d) = operand_decl.and_then(|d| d.elem.clone()) {
                    self.decls.insert(id, d);
                }
            }
            Type::Object(o) => match o.fields.get(field) {
                Some(fd) => {
                    result = fd.ty.clone();
                    self.decls.insert(id, fd.clone());
                }
                None => self.error(id, format!("undefined field '{field}'")),
            },
            Type::Param(_) => {
                self.assignable(&Type::Dyn, &target);
                result = Type::Dyn;
            }
            other => {
                if !other.is_dyn_or_error() {
                    self.error(
                        id,
                        format!("type '{other}' does not support field selection"),
                    );
                }
                result = Type::Dyn;
            }
        }
        if is_opt || optional {
            Type::optional(result)
        } else {
            result
        }
    }

    fn check_call(&mut self, e: &IdedExpr, call: &::cel::common::ast::CallExpr) {
        let name = call.func_name.as_str();
        if name == operators::OPT_SELECT {
            let field = match call.args.get(1).map(|a| &a.expr) {
                Some(Expr::Literal(LiteralValue::String(s))) => s.inner().to_string(),
                _ => {
                    self.error(e.id, "unsupported optional field selection".into());
                    self.set(e.id, Type::Error);
                    return;
                }
            };
            let t = self.check_select_field(e.id, &call.args[0], &field, true);
            let t = substitute(&self.mapping, &t, false);
            self.set(e.id, t);
            return;
        }
        for a in &call.args {
            self.check(a);
        }
        match &call.target {
            None => match decls::lookup(name) {
                Some(f) => self.resolve(e, name, f, None, &call.args),
                None => {
                    self.set(e.id, Type::Error);
                    self.error(
                        e.id,
                        format!("undeclared reference to '{name}' (in container '')"),
                    );
                }
            },
            Some(target) => {
                if let Some(prefix) = qualified_name(target) {
                    let q = format!("{prefix}.{name}");
                    if let Some(f) = decls::lookup(&q) {
                        // `optional.of(x)`: a namespaced global, not a member call.
                        if !self.is_variable(&prefix) {
                            self.resolve(e, name, f, None, &call.args);
                            return;
                        }
                    }
                }
                self.check(target);
                match decls::lookup(name) {
                    Some(f) => self.resolve(e, name, f, Some(target), &call.args),
                    None => {
                        self.set(e.id, Type::Error);
                        self.error(
                            e.id,
                            format!("undeclared reference to '{name}' (in container '')"),
                        );
                    }
                }
            }
        }
    }

    fn is_scoped(&self, name: &str) -> bool {
        self.scopes.iter().any(|s| s.contains_key(name))
    }

    fn is_variable(&self, qualified: &str) -> bool {
        let root = qualified.split('.').next().unwrap_or_default();
        root == "self" || root == "oldSelf" || self.scopes.iter().any(|s| s.contains_key(root))
    }

    fn resolve(
        &mut self,
        e: &IdedExpr,
        name: &str,
        f: &FunctionDecl,
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
    ) {
        let mut arg_types: Vec<Type> = Vec::new();
        if let Some(t) = target {
            arg_types.push(self.ty(t.id));
        }
        arg_types.extend(args.iter().map(|a| self.ty(a.id)));
        let member = target.is_some();
        if name == operators::LOGICAL_AND || name == operators::LOGICAL_OR {
            let mut ok = true;
            for (i, t) in arg_types.iter().enumerate() {
                if !self.assignable(t, &Type::Bool) {
                    let found = substitute(&self.mapping, t, true);
                    self.error(
                        args[i].id,
                        format!("expected type 'bool' but found '{found}'"),
                    );
                    ok = false;
                }
            }
            self.set(e.id, if ok { Type::Bool } else { Type::Error });
            return;
        }
        let mut result: Option<Type> = None;
        let mut ids = Vec::new();
        for o in &f.overloads {
            if o.member != member || o.params.len() != arg_types.len() {
                continue;
            }
            // Fresh type variables for the overload's type parameters.
            let mut subs: HashMap<String, Type> = HashMap::new();
            let params: Vec<Type> = o
                .params
                .iter()
                .map(|p| self.instantiate(p, &mut subs))
                .collect();
            let res = self.instantiate(&o.result, &mut subs);
            let mut trial = self.mapping.clone();
            if is_assignable_list(&mut trial, &arg_types, &params) {
                self.mapping = trial;
                ids.push(o.id);
                let rt = substitute(&self.mapping, &res, false);
                result = Some(match result {
                    None => rt,
                    Some(prev) if !prev.is_dyn() && !rt.is_exact(&prev) => Type::Dyn,
                    Some(prev) => prev,
                });
            }
        }
        match result {
            Some(t) => {
                self.overloads.insert(e.id, ids);
                // Index into schema values keeps the schema's bounds for cost sizes.
                if name == operators::INDEX || name == operators::OPT_INDEX {
                    if let Some(d) = args
                        .first()
                        .and_then(|a| self.decls.get(&a.id))
                        .and_then(|d| d.elem.clone())
                    {
                        self.decls.insert(e.id, d);
                    }
                }
                self.set(e.id, t);
            }
            None => {
                let shown: Vec<String> = arg_types
                    .iter()
                    .map(|t| substitute(&self.mapping, t, true).to_string())
                    .collect();
                let sig = if member {
                    format!("{}.({})", shown[0], shown[1..].join(", "))
                } else {
                    format!("({})", shown.join(", "))
                };
                self.error(
                    e.id,
                    format!("found no matching overload for '{name}' applied to '{sig}'"),
                );
                self.set(e.id, Type::Error);
            }
        }
    }

    fn instantiate(&mut self, t: &Type, subs: &mut HashMap<String, Type>) -> Type {
        match t {
            Type::Param(p) => {
                if let Some(v) = subs.get(p) {
                    return v.clone();
                }
                let v = self.new_var();
                subs.insert(p.clone(), v.clone());
                v
            }
            Type::List(e) => Type::list(self.instantiate(e, subs)),
            Type::Map(k, v) => {
                let k = self.instantiate(k, subs);
                Type::map(k, self.instantiate(v, subs))
            }
            Type::Optional(e) => Type::optional(self.instantiate(e, subs)),
            Type::TypeOf(e) => Type::TypeOf(Box::new(self.instantiate(e, subs))),
            other => other.clone(),
        }
    }

    fn assignable(&mut self, t1: &Type, t2: &Type) -> bool {
        let mut trial = self.mapping.clone();
        if is_assignable(&mut trial, t1, t2) {
            self.mapping = trial;
            true
        } else {
            false
        }
    }
}

/// cel-go's `ValidateRegexLiterals`, `ValidateDurationLiterals` and
/// `ValidateTimestampLiterals`.
fn validate_literals(e: &IdedExpr, c: &mut Checker<'_, '_, '_>) {
    super::with_stack(|| validate_literals_level(e, c))
}

fn validate_literals_level(e: &IdedExpr, c: &mut Checker<'_, '_, '_>) {
    match &e.expr {
        Expr::Call(call) => {
            let literal_arg = match (
                call.func_name.as_str(),
                call.target.is_some(),
                call.args.len(),
            ) {
                ("matches", true, 1) => Some(&call.args[0]),
                ("matches", false, 2) => Some(&call.args[1]),
                ("duration" | "timestamp", false, 1) => Some(&call.args[0]),
                _ => None,
            };
            if let Some(arg) = literal_arg {
                let problem = match (&arg.expr, call.func_name.as_str()) {
                    (Expr::Literal(LiteralValue::String(p)), "matches") => {
                        crate::schema::structural::compile_go_regexp(p.inner())
                            .err()
                            .map(|_| "invalid matches argument")
                    }
                    (Expr::Literal(LiteralValue::String(d)), "duration") => {
                        crate::duration::go_parse_duration(d.inner())
                            .is_none()
                            .then_some("invalid duration argument")
                    }
                    (Expr::Literal(LiteralValue::String(t)), "timestamp") => {
                        chrono::DateTime::parse_from_rfc3339(t.inner())
                            .ok()
                            .filter(|t| (1..=9999).contains(&chrono::Datelike::year(t)))
                            .is_none()
                            .then_some("invalid timestamp")
                    }
                    (Expr::Literal(LiteralValue::Int(i)), "timestamp") => {
                        // Seconds from year 0001 to 9999.
                        (!(-62_135_596_800..=253_402_300_799).contains(i.inner()))
                            .then_some("invalid timestamp")
                    }
                    _ => None,
                };
                if let Some(msg) = problem {
                    c.error(arg.id, msg.to_string());
                }
            }
            if let Some(t) = &call.target {
                validate_literals(t, c);
            }
            for a in &call.args {
                validate_literals(a, c);
            }
        }
        Expr::Select(s) => validate_literals(&s.operand, c),
        Expr::List(l) => {
            for el in &l.elements {
                validate_literals(el, c);
            }
        }
        Expr::Map(m) => {
            for entry in &m.entries {
                if let EntryExpr::MapEntry(me) = &entry.expr {
                    validate_literals(&me.key, c);
                    validate_literals(&me.value, c);
                }
            }
        }
        Expr::Comprehension(comp) => {
            for part in [
                &comp.iter_range,
                &comp.accu_init,
                &comp.loop_cond,
                &comp.loop_step,
                &comp.result,
            ] {
                validate_literals(part, c);
            }
        }
        _ => {}
    }
}

/// `a.b.c` as a dotted name, if `e` is only identifiers and selections.
fn qualified_name(e: &IdedExpr) -> Option<String> {
    match &e.expr {
        Expr::Ident(n) => Some(n.clone()),
        Expr::Select(s) if !s.test => {
            qualified_name(&s.operand).map(|p| format!("{p}.{}", s.field))
        }
        _ => None,
    }
}

/// Identifiers that name types.
fn type_ident(name: &str) -> Option<Type> {
    Some(match name {
        "bool" => Type::Bool,
        "int" => Type::Int,
        "uint" => Type::Uint,
        "double" => Type::Double,
        "string" => Type::String,
        "bytes" => Type::Bytes,
        "null_type" => Type::Null,
        "list" => Type::list(Type::Dyn),
        "map" => Type::map(Type::Dyn, Type::Dyn),
        "type" => Type::TypeOf(Box::new(Type::Dyn)),
        "google.protobuf.Duration" => Type::Duration,
        "google.protobuf.Timestamp" => Type::Timestamp,
        _ => return None,
    })
}

fn unwrap_optional(t: &Type) -> (Type, bool) {
    match t {
        Type::Optional(inner) => ((**inner).clone(), true),
        other => (other.clone(), false),
    }
}

fn find<'m>(m: &'m Mapping, t: &Type) -> Option<&'m Type> {
    match t {
        Type::Param(p) => m.get(p),
        _ => None,
    }
}

/// cel-go's `substitute`: resolve type variables (to `dyn` when unbound and asked).
pub fn substitute(m: &Mapping, t: &Type, to_dyn: bool) -> Type {
    if let Some(s) = find(m, t) {
        return substitute(m, s, to_dyn);
    }
    match t {
        Type::Param(_) if to_dyn => Type::Dyn,
        Type::List(e) => Type::list(substitute(m, e, to_dyn)),
        Type::Map(k, v) => Type::map(substitute(m, k, to_dyn), substitute(m, v, to_dyn)),
        Type::Optional(e) => Type::optional(substitute(m, e, to_dyn)),
        Type::TypeOf(e) => Type::TypeOf(Box::new(substitute(m, e, to_dyn))),
        other => other.clone(),
    }
}

fn is_assignable_list(m: &mut Mapping, l1: &[Type], l2: &[Type]) -> bool {
    l1.len() == l2.len() && l1.iter().zip(l2).all(|(a, b)| is_assignable(m, a, b))
}

fn is_assignable(m: &mut Mapping, t1: &Type, t2: &Type) -> bool {
    if let Type::Param(_) = t2 {
        let (valid, has_sub) = valid_substitution(m, t1, t2);
        if valid {
            return true;
        }
        if has_sub {
            return false;
        }
    }
    if let Type::Param(_) = t1 {
        return valid_substitution(m, t2, t1).0;
    }
    if t1.is_dyn_or_error() || t2.is_dyn_or_error() {
        return true;
    }
    if matches!(t1, Type::Null) {
        return nullable(t2);
    }
    if matches!(t2, Type::Null) {
        return nullable(t1);
    }
    match (t1, t2) {
        (Type::TypeOf(_), Type::TypeOf(_)) => true,
        (Type::List(a), Type::List(b)) | (Type::Optional(a), Type::Optional(b)) => {
            is_assignable(m, a, b)
        }
        (Type::Map(a, b), Type::Map(c, d)) => is_assignable(m, a, c) && is_assignable(m, b, d),
        (a, b) => a.same_kind(b) && a.params().is_empty(),
    }
}

fn nullable(t: &Type) -> bool {
    matches!(
        t,
        Type::Null
            | Type::Object(_)
            | Type::Opaque(_)
            | Type::Optional(_)
            | Type::Duration
            | Type::Timestamp
    )
}

fn valid_substitution(m: &mut Mapping, t1: &Type, t2: &Type) -> (bool, bool) {
    if t1.is_exact(t2) {
        return (true, true);
    }
    if let Some(sub) = find(m, t2).cloned() {
        if t1.is_exact(&sub) {
            return (true, true);
        }
        if is_assignable(m, t1, &sub) {
            let general = most_general(t1, &sub);
            if not_referenced_in(m, t2, &general) {
                if let Type::Param(p) = t2 {
                    m.insert(p.clone(), general);
                }
            }
            return (true, true);
        }
        return (false, true);
    }
    if not_referenced_in(m, t2, t1) {
        if let Type::Param(p) = t2 {
            m.insert(p.clone(), t1.clone());
        }
        return (true, false);
    }
    (false, false)
}

fn not_referenced_in(m: &Mapping, t: &Type, within: &Type) -> bool {
    if t.is_exact(within) {
        return false;
    }
    match within {
        Type::Param(_) => match find(m, within) {
            Some(s) => not_referenced_in(m, t, &s.clone()),
            None => true,
        },
        Type::List(_) | Type::Map(..) | Type::Optional(_) | Type::TypeOf(_) => {
            within.params().iter().all(|p| not_referenced_in(m, t, p))
        }
        _ => true,
    }
}

fn less_specific(t1: &Type, t2: &Type) -> bool {
    if t1.is_dyn() || matches!(t1, Type::Param(_)) {
        return true;
    }
    if t2.is_dyn() || matches!(t2, Type::Param(_)) {
        return false;
    }
    if !t1.same_kind(t2) {
        return false;
    }
    match (t1, t2) {
        (Type::List(a), Type::List(b)) | (Type::Optional(a), Type::Optional(b)) => {
            less_specific(a, b)
        }
        (Type::Map(a, b), Type::Map(c, d)) => less_specific(a, c) && less_specific(b, d),
        (Type::TypeOf(_), Type::TypeOf(_)) => true,
        (a, b) => a.is_exact(b),
    }
}

fn most_general(t1: &Type, t2: &Type) -> Type {
    if less_specific(t1, t2) {
        t1.clone()
    } else {
        t2.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::structural::Structural;
    use serde_json::json;

    fn env(schema: serde_json::Value) -> RuleEnv {
        let p = crate::schema::props::JSONSchemaProps::from_value(&schema).expect("schema");
        let d = super::super::types::schema_decl(&Structural::from_props(&p), false).expect("decl");
        RuleEnv::new(d, false)
    }

    fn err(schema: serde_json::Value, rule: &str) -> String {
        compile(rule, &env(schema), Want::Bool)
            .map(|_| ())
            .unwrap_err()
            .to_string()
    }

    fn spec() -> serde_json::Value {
        json!({"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 10},
            "replicas": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}
        }})
    }

    #[test]
    fn kubebuilder_style_rules_check() {
        for rule in [
            "self.replicas >= 0",
            "self.name == oldSelf.name",
            "has(self.name) && self.name.startsWith('a')",
            "self.tags.all(t, t.size() < 10)",
            "self.labels.all(k, k in self.labels && self.labels[k] != '')",
            "size(self.tags) <= 3 ? true : self.replicas > 1",
            "self.name.matches('^[a-z]+$')",
            "!has(oldSelf.name) || has(self.name)",
            "self.tags.exists(t, t == 'x')",
            "self.replicas * 2.0 > 1.0 || true",
            "self.?name.orValue('') == ''",
            "type(self.replicas) == int",
        ] {
            if let Err(e) = compile(rule, &env(spec()), Want::Bool) {
                if rule.contains("2.0") {
                    assert!(
                        e.to_string().contains(
                            "found no matching overload for '_*_' applied to '(int, double)'"
                        ),
                        "{e}"
                    );
                    continue;
                }
                panic!("{rule}: {e}");
            }
        }
    }

    #[test]
    fn undeclared_reference_and_undefined_field() {
        assert_eq!(
            err(spec(), "foo == 1"),
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')\n | foo == 1\n | ^"
        );
        assert_eq!(
            err(spec(), "self.nope == 1"),
            "compilation failed: ERROR: <input>:1:5: undefined field 'nope'\n | self.nope == 1\n | ....^"
        );
    }

    #[test]
    fn overloads_and_result_type() {
        assert!(err(spec(), "self.replicas == 'a'")
            .contains("found no matching overload for '_==_' applied to '(int, string)'"));
        assert_eq!(
            err(spec(), "self.replicas"),
            "cel expression must evaluate to a bool"
        );
        assert!(
            err(spec(), "[1, 'a'].size() == 2").contains("expected type 'int' but found 'string'")
        );
    }

    #[test]
    fn literal_arguments_are_validated() {
        let schema = json!({"type": "object", "properties": {"val1": {"type": "string"}}});
        assert_eq!(
            err(schema.clone(), "self.val1.matches(')')"),
            "compilation failed: ERROR: <input>:1:19: invalid matches argument\n | self.val1.matches(')')\n | ..................^"
        );
        assert!(err(schema.clone(), "duration('1d') > duration('1s')")
            .starts_with("compilation failed: ERROR: <input>:1:10: invalid duration argument"));
        assert!(
            err(schema, "timestamp('1000-00-00T00:00:00Z') > timestamp(0)")
                .starts_with("compilation failed: ERROR: <input>:1:11: invalid timestamp")
        );
    }

    #[test]
    fn uses_old_self_is_detected() {
        let c = compile("self.name == oldSelf.name", &env(spec()), Want::Bool).unwrap();
        assert!(c.uses_old_self);
        let c = compile("self.name == 'x'", &env(spec()), Want::Bool).unwrap();
        assert!(!c.uses_old_self);
    }
}
