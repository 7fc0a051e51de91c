//! The CEL interpreter: evaluates a parsed (and checked) expression against `self` and
//! `oldSelf`, tracking cel-go's runtime cost as it goes and stopping at the per-call
//! limit (`operation cancelled: actual cost limit exceeded`).
//!
//! Semantics follow cel-go: `&&`/`||` absorb errors when the other side decides the
//! result, comprehension accumulators may hold errors (so `all`/`exists` report an
//! error only if no element decides), and cross-type numeric comparisons are on.

use super::library;
use super::value::{equals, EvalError, EvalResult, Map, Val};
use ::cel::common::ast::{operators, EntryExpr, Expr, IdedExpr, LiteralValue};
use std::rc::Rc;

/// cel-go's cost of creating a list literal.
const LIST_CREATE_COST: u64 = 10;
/// cel-go's cost of creating a map literal.
const MAP_CREATE_COST: u64 = 30;

/// The variables a rule sees.
pub struct Activation<'a> {
    /// `self`.
    pub self_val: Val<'a>,
    /// `oldSelf`, when declared for this rule (an optional for `optionalOldSelf` rules).
    pub old_self: Option<Val<'a>>,
    /// Other top-level variables by name (the admission environment's `object`,
    /// `request`, ...); empty for CRD rules.
    pub vars: Vec<(&'static str, Val<'a>)>,
}

/// The outcome of one evaluation: the value (or error) and the cost spent.
pub struct Outcome<'a> {
    /// The result.
    pub result: EvalResult<'a>,
    /// cel-go's runtime cost of the evaluation (up to where it stopped).
    pub cost: u64,
}

/// Evaluate `expr` with the per-call cost `limit`.
pub fn evaluate<'a>(expr: &IdedExpr, act: &Activation<'a>, limit: u64) -> Outcome<'a> {
    let mut it = Interp {
        act,
        scopes: Vec::new(),
        cost: 0,
        limit,
    };
    let result = it.eval(expr);
    Outcome {
        result,
        cost: it.cost,
    }
}

struct Interp<'a, 'p, 'x> {
    act: &'x Activation<'a>,
    scopes: Vec<(&'p str, EvalResult<'a>)>,
    cost: u64,
    limit: u64,
}

/// The error cel-go raises when the per-call limit is hit.
pub fn cost_limit_error() -> EvalError {
    EvalError {
        message: "operation cancelled: actual cost limit exceeded".into(),
        cost_exceeded: true,
    }
}

impl<'a, 'p, 'x> Interp<'a, 'p, 'x> {
    fn add_cost(&mut self, c: u64) -> Result<(), EvalError> {
        self.cost = self.cost.saturating_add(c);
        if self.cost > self.limit {
            return Err(cost_limit_error());
        }
        Ok(())
    }

    fn lookup(&mut self, name: &str) -> EvalResult<'a> {
        if let Some((_, v)) = self.scopes.iter().rev().find(|(n, _)| *n == name) {
            return v.clone();
        }
        if let Some((_, v)) = self.act.vars.iter().find(|(n, _)| *n == name) {
            return Ok(v.clone());
        }
        match name {
            "self" => Ok(self.act.self_val.clone()),
            "oldSelf" => self
                .act
                .old_self
                .clone()
                .ok_or_else(|| EvalError::new("no such attribute(s): oldSelf")),
            _ => match library::type_value(name) {
                Some(t) => Ok(t),
                None => Err(EvalError::new(format!("no such attribute(s): {name}"))),
            },
        }
    }

    fn eval(&mut self, e: &'p IdedExpr) -> EvalResult<'a> {
        super::with_stack(|| self.eval_level(e))
    }

    fn eval_level(&mut self, e: &'p IdedExpr) -> EvalResult<'a> {
        match &e.expr {
            Expr::Literal(l) => Ok(literal(l)),
            Expr::Ident(name) => {
                self.add_cost(1)?;
                self.lookup(name)
            }
            Expr::Select(sel) => {
                if !sel.test {
                    if let Some(v) = self.qualified_variable(e)? {
                        return Ok(v);
                    }
                    if let Some(v) = self.qualified_constant(e)? {
                        return Ok(v);
                    }
                }
                let operand = self.eval(&sel.operand)?;
                if sel.test {
                    return presence(&operand, &sel.field);
                }
                self.add_cost(1)?;
                select(operand, &sel.field)
            }
            Expr::Call(call) => self.eval_call(e, call),
            Expr::List(l) => {
                self.add_cost(LIST_CREATE_COST)?;
                let mut items = Vec::with_capacity(l.elements.len());
                for (i, el) in l.elements.iter().enumerate() {
                    let v = self.eval(el)?;
                    if l.optional_indices.contains(&i) {
                        match v {
                            Val::Optional(Some(inner)) => items.push((*inner).clone()),
                            Val::Optional(None) => {}
                            _ => return Err(EvalError::no_such_overload()),
                        }
                    } else {
                        items.push(v);
                    }
                }
                Ok(Val::list(items))
            }
            Expr::Map(m) => {
                self.add_cost(MAP_CREATE_COST)?;
                let mut entries: Vec<(Val<'a>, Val<'a>)> = Vec::with_capacity(m.entries.len());
                for entry in &m.entries {
                    let EntryExpr::MapEntry(me) = &entry.expr else {
                        return Err(EvalError::new("unsupported struct creation"));
                    };
                    let k = self.eval(&me.key)?;
                    if !matches!(k, Val::Str(_) | Val::Int(_) | Val::Uint(_) | Val::Bool(_)) {
                        return Err(EvalError::new(format!(
                            "unsupported key type: {}",
                            k.type_name()
                        )));
                    }
                    let v = self.eval(&me.value)?;
                    let v = if me.optional {
                        match v {
                            Val::Optional(Some(inner)) => (*inner).clone(),
                            Val::Optional(None) => continue,
                            _ => return Err(EvalError::no_such_overload()),
                        }
                    } else {
                        v
                    };
                    for (ek, _) in &entries {
                        if equals(ek, &k)? {
                            return Err(EvalError::new(format!(
                                "Failed with repeated key: {}",
                                super::value::display(&k)
                            )));
                        }
                    }
                    entries.push((k, v));
                }
                Ok(Val::Map(Map::Owned(Rc::new(entries))))
            }
            Expr::Comprehension(c) => {
                let range = self.eval(&c.iter_range)?;
                let init = self.eval(&c.accu_init)?;
                let pairs: Vec<(Val<'a>, Option<Val<'a>>)> = match &range {
                    Val::List(l) => {
                        let items = l.items()?;
                        if c.iter_var2.is_some() {
                            items
                                .into_iter()
                                .enumerate()
                                .map(|(i, v)| (Val::Int(i as i64), Some(v)))
                                .collect()
                        } else {
                            items.into_iter().map(|v| (v, None)).collect()
                        }
                    }
                    Val::Map(m) => {
                        let mut out = Vec::new();
                        for k in m.keys() {
                            let v = if c.iter_var2.is_some() {
                                m.get(&k)?
                            } else {
                                None
                            };
                            out.push((k, v));
                        }
                        out
                    }
                    _ => return Err(EvalError::no_such_overload()),
                };
                let base = self.scopes.len();
                self.scopes.push((c.accu_var.as_str(), Ok(init)));
                let accu_at = self.scopes.len() - 1;
                for (v1, v2) in pairs {
                    let cond = self.eval(&c.loop_cond);
                    if let Err(e) = &cond {
                        if e.cost_exceeded {
                            self.scopes.truncate(base);
                            return Err(e.clone());
                        }
                    }
                    if matches!(cond, Ok(Val::Bool(false))) {
                        break;
                    }
                    self.scopes.truncate(accu_at + 1);
                    self.scopes.push((c.iter_var.as_str(), Ok(v1)));
                    if let (Some(name), Some(v2)) = (&c.iter_var2, v2) {
                        self.scopes.push((name.as_str(), Ok(v2)));
                    }
                    let step = self.eval(&c.loop_step);
                    if let Err(e) = &step {
                        if e.cost_exceeded {
                            self.scopes.truncate(base);
                            return Err(e.clone());
                        }
                    }
                    self.scopes.truncate(accu_at + 1);
                    self.scopes[accu_at].1 = step;
                }
                self.scopes.truncate(accu_at + 1);
                let result = self.eval(&c.result);
                self.scopes.truncate(base);
                result
            }
            Expr::Struct(_) => Err(EvalError::new("unsupported struct creation")),
            Expr::Unspecified => Err(EvalError::new("unspecified expression")),
        }
    }

    /// Variables whose names have a dot (`authorizer.requestResource`), spelled as
    /// field selections.
    fn qualified_variable(&mut self, e: &'p IdedExpr) -> Result<Option<Val<'a>>, EvalError> {
        if !self.act.vars.iter().any(|(n, _)| n.contains('.')) {
            return Ok(None);
        }
        let Some(q) = namespace_of(e) else {
            return Ok(None);
        };
        let root = q.split('.').next().unwrap_or_default();
        if self.scopes.iter().any(|(n, _)| *n == root) {
            return Ok(None);
        }
        match self.act.vars.iter().find(|(n, _)| *n == q) {
            Some((_, v)) => {
                self.add_cost(1)?;
                Ok(Some(v.clone()))
            }
            None => Ok(None),
        }
    }

    /// Qualified type names (`google.protobuf.Duration`) spelled as field selections.
    fn qualified_constant(&mut self, e: &'p IdedExpr) -> Result<Option<Val<'a>>, EvalError> {
        // A selection from a variable (`self.spec.x`, the common case) is not a type name:
        // known from its root, before spelling the name out.
        let Some(root) = root_of(e) else {
            return Ok(None);
        };
        if root == "self"
            || root == "oldSelf"
            || self.scopes.iter().any(|(n, _)| *n == root)
            || self.act.vars.iter().any(|(n, _)| *n == root)
        {
            return Ok(None);
        }
        let Some(q) = namespace_of(e).filter(|q| q.contains('.')) else {
            return Ok(None);
        };
        match library::type_value(&q) {
            Some(v) => {
                self.add_cost(1)?;
                Ok(Some(v))
            }
            None => Ok(None),
        }
    }

    fn eval_call(
        &mut self,
        e: &'p IdedExpr,
        call: &'p ::cel::common::ast::CallExpr,
    ) -> EvalResult<'a> {
        let _ = e;
        let name = call.func_name.as_str();
        let args = &call.args;
        match (name, args.len(), call.target.is_some()) {
            (operators::LOGICAL_AND, 2, false) => {
                let l = self.eval(&args[0]);
                if let Err(err) = &l {
                    if err.cost_exceeded {
                        return l;
                    }
                }
                if matches!(l, Ok(Val::Bool(false))) {
                    return Ok(Val::Bool(false));
                }
                let r = self.eval(&args[1]);
                logical(l, r, false)
            }
            (operators::LOGICAL_OR, 2, false) => {
                let l = self.eval(&args[0]);
                if let Err(err) = &l {
                    if err.cost_exceeded {
                        return l;
                    }
                }
                if matches!(l, Ok(Val::Bool(true))) {
                    return Ok(Val::Bool(true));
                }
                let r = self.eval(&args[1]);
                logical(l, r, true)
            }
            (operators::CONDITIONAL, 3, false) => match self.eval(&args[0])? {
                Val::Bool(true) => self.eval(&args[1]),
                Val::Bool(false) => self.eval(&args[2]),
                _ => Err(EvalError::no_such_overload()),
            },
            (operators::NOT_STRICTLY_FALSE, 1, false) => {
                self.add_cost(1)?;
                match self.eval(&args[0]) {
                    Ok(Val::Bool(false)) => Ok(Val::Bool(false)),
                    Err(e) if e.cost_exceeded => Err(e),
                    _ => Ok(Val::Bool(true)),
                }
            }
            (operators::OPT_SELECT, 2, false) => {
                let operand = self.eval(&args[0])?;
                let field = match &args[1].expr {
                    Expr::Literal(LiteralValue::String(s)) => s.inner().to_string(),
                    _ => return Err(EvalError::no_such_overload()),
                };
                self.add_cost(1)?;
                optional_select(operand, &field)
            }
            (operators::ADD, 2, false) if is_accumulator(&args[0]) => {
                // Comprehension steps like `@result + [x]` append in place.
                let Expr::Ident(acc) = &args[0].expr else {
                    return Err(EvalError::no_such_overload());
                };
                self.add_cost(1)?;
                let taken = self
                    .scopes
                    .iter_mut()
                    .rev()
                    .find(|(n, _)| *n == acc.as_str())
                    .map(|(_, v)| std::mem::replace(v, Ok(Val::Null)));
                let l = match taken {
                    Some(v) => v?,
                    None => return Err(EvalError::new(format!("no such attribute(s): {acc}"))),
                };
                let r = self.eval(&args[1])?;
                let all = [l, r];
                let result = library::call(name, false, all.to_vec());
                self.add_cost(library::call_cost(name, false, &all, &result))?;
                result
            }
            _ => {
                let mut vals = Vec::with_capacity(args.len() + 1);
                if let Some(t) = &call.target {
                    // `optional.of(x)`, `strings.quote(s)`, ...: a namespaced global function.
                    if let Some(ns) = namespace_of(t) {
                        let qualified = format!("{ns}.{name}");
                        if library::is_global(&qualified) {
                            for a in args {
                                vals.push(self.eval(a)?);
                            }
                            let result = library::call(&qualified, false, vals.clone());
                            self.add_cost(library::call_cost(&qualified, false, &vals, &result))?;
                            return result;
                        }
                    }
                    vals.push(self.eval(t)?);
                }
                for a in args {
                    vals.push(self.eval(a)?);
                }
                let member = call.target.is_some();
                let result = library::call(name, member, vals.clone());
                self.add_cost(library::call_cost(name, member, &vals, &result))?;
                result
            }
        }
    }
}

fn is_accumulator(e: &IdedExpr) -> bool {
    matches!(&e.expr, Expr::Ident(n) if n.starts_with('@'))
}

/// The identifier `a` of `a.b.c` spelled by identifiers only (see [`namespace_of`]).
fn root_of(e: &IdedExpr) -> Option<&str> {
    match &e.expr {
        Expr::Ident(n) => Some(n),
        Expr::Select(s) if !s.test => root_of(&s.operand),
        _ => None,
    }
}

/// `a.b.c` spelled by identifiers only, for namespaced functions (`optional.of`).
fn namespace_of(e: &IdedExpr) -> Option<String> {
    match &e.expr {
        Expr::Ident(n) => Some(n.clone()),
        Expr::Select(s) if !s.test => namespace_of(&s.operand).map(|p| format!("{p}.{}", s.field)),
        _ => None,
    }
}

/// `&&` / `||` once the short-circuit case is ruled out.
fn logical<'a>(l: EvalResult<'a>, r: EvalResult<'a>, or: bool) -> EvalResult<'a> {
    if let Err(e) = &r {
        if e.cost_exceeded {
            return r;
        }
    }
    let decisive = or;
    match (&l, &r) {
        (_, Ok(Val::Bool(b))) if *b == decisive => Ok(Val::Bool(decisive)),
        (Ok(Val::Bool(_)), Ok(Val::Bool(b))) => Ok(Val::Bool(*b)),
        (Err(e), _) => Err(e.clone()),
        (_, Err(e)) => Err(e.clone()),
        _ => Err(EvalError::no_such_overload()),
    }
}

fn literal<'a>(l: &LiteralValue) -> Val<'a> {
    match l {
        LiteralValue::Boolean(b) => Val::Bool(*b.inner()),
        LiteralValue::Bytes(b) => Val::Bytes(Rc::from(b.inner())),
        LiteralValue::Double(d) => Val::Double(*d.inner()),
        LiteralValue::Int(i) => Val::Int(*i.inner()),
        LiteralValue::Null => Val::Null,
        LiteralValue::String(s) => Val::str(s.inner()),
        LiteralValue::UInt(u) => Val::Uint(*u.inner()),
    }
}

/// `has(x.f)`.
fn presence<'a>(operand: &Val<'a>, field: &str) -> EvalResult<'a> {
    match operand {
        Val::Map(m) => Ok(Val::Bool(m.get(&Val::str(field))?.is_some())),
        Val::Optional(None) => Ok(Val::Bool(false)),
        Val::Optional(Some(v)) => presence(v, field),
        _ => Err(EvalError::no_such_overload()),
    }
}

/// `x.f`.
pub fn select<'a>(operand: Val<'a>, field: &str) -> EvalResult<'a> {
    match operand {
        Val::Map(m) => match m.get(&Val::str(field))? {
            Some(v) => Ok(v),
            None => Err(EvalError::new(format!("no such key: {field}"))),
        },
        Val::Optional(inner) => optional_select_inner(inner, field),
        _ => Err(EvalError::no_such_overload()),
    }
}

/// `x.?f`.
fn optional_select<'a>(operand: Val<'a>, field: &str) -> EvalResult<'a> {
    match operand {
        Val::Optional(inner) => optional_select_inner(inner, field),
        Val::Map(m) => Ok(Val::Optional(m.get(&Val::str(field))?.map(Rc::new))),
        _ => Err(EvalError::no_such_overload()),
    }
}

fn optional_select_inner<'a>(inner: Option<Rc<Val<'a>>>, field: &str) -> EvalResult<'a> {
    match inner {
        None => Ok(Val::Optional(None)),
        Some(v) => match &*v {
            Val::Map(m) => Ok(Val::Optional(m.get(&Val::str(field))?.map(Rc::new))),
            _ => Err(EvalError::no_such_overload()),
        },
    }
}
