//! cel-go's static cost estimate of a checked expression (`checker.Cost`), with kube's
//! size estimates from the schema and kube's call cost estimates for its libraries.
//!
//! Sizes of values read from `self`/`oldSelf` come from the schema: `maxItems`,
//! `maxProperties`, `maxLength` (x4, bytes per character), or, when unbounded, how many
//! of the smallest values fit in a 3 MiB request. A rule that walks an unbounded list
//! is expensive; the same rule under `maxItems` is cheap, exactly as kube estimates.

use super::check::{Checked, RuleEnv};
use super::limits::{REGEX_STRING_LENGTH_COST_FACTOR, STRING_TRAVERSAL_COST_FACTOR};
use super::types::{Decl, Type};
use ::cel::common::ast::{operators, EntryExpr, Expr, IdedExpr, LiteralValue};
use std::collections::HashMap;
use std::sync::Arc;

/// kube's `StaticEstimatedCostLimit`: the most one rule may be estimated to cost.
pub const STATIC_ESTIMATED_COST_LIMIT: u64 = 10_000_000;
/// kube's `StaticEstimatedCRDCostLimit`: the most all rules of a CRD version may cost.
pub const STATIC_ESTIMATED_CRD_COST_LIMIT: u64 = 100_000_000;
/// kube's `MaxNameFormatRegexSize`.
const MAX_NAME_FORMAT_REGEX_SIZE: f64 = 128.0;
/// kube's `MaxFormatSize`.
const MAX_FORMAT_SIZE: u64 = 64;

/// The worst-case cost of one evaluation of `checked`.
pub fn estimate(checked: &Checked, _env: &RuleEnv) -> u64 {
    let mut c = Coster {
        checked,
        sizes: HashMap::new(),
        entries: HashMap::new(),
        locals: HashMap::new(),
    };
    c.cost(checked.program.expression()).max
}

/// kube's wording for a cost over its limit.
pub fn cost_error_message(cost_name: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!("{cost_name} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)")
}

/// `base * cardinality`, saturating.
pub fn multiply_with_overflow_guard(base: u64, cardinality: u64) -> u64 {
    if base == 0 {
        return 0;
    }
    base.saturating_mul(cardinality)
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Size {
    min: u64,
    max: u64,
}

type Cost = Size;

const UNKNOWN: Size = Size {
    min: 0,
    max: u64::MAX,
};

fn fixed(v: u64) -> Size {
    Size { min: v, max: v }
}

impl Size {
    fn add(self, o: Size) -> Size {
        Size {
            min: self.min.saturating_add(o.min),
            max: self.max.saturating_add(o.max),
        }
    }

    fn multiply(self, o: Size) -> Size {
        Size {
            min: self.min.saturating_mul(o.min),
            max: self.max.saturating_mul(o.max),
        }
    }

    fn factor(self, f: f64) -> Cost {
        Size {
            min: by_factor(self.min, f),
            max: by_factor(self.max, f),
        }
    }

    fn union(self, o: Size) -> Size {
        Size {
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }
}

/// cel-go's `multiplyByCostFactor`: ceil, saturating at 2^64-1.
fn by_factor(x: u64, f: f64) -> u64 {
    let xf = x as f64;
    if xf > 0.0 && f > 0.0 && xf > u64::MAX as f64 / f {
        return u64::MAX;
    }
    let c = (xf * f).ceil();
    if c >= 18446744073709551616.0 {
        return u64::MAX;
    }
    c as u64
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Container {
    List,
    Map,
}

#[derive(Clone, Copy, Debug)]
struct EntrySize {
    container: Container,
    key: Size,
    val: Size,
}

fn union_entries(a: Option<EntrySize>, b: Option<EntrySize>) -> Option<EntrySize> {
    let (a, b) = (a?, b?);
    Some(EntrySize {
        container: a.container,
        key: a.key.union(b.key),
        val: a.val.union(b.val),
    })
}

struct Local {
    size: Option<Size>,
    entry: Option<EntrySize>,
}

struct Coster<'c> {
    checked: &'c Checked,
    sizes: HashMap<u64, Size>,
    entries: HashMap<u64, EntrySize>,
    locals: HashMap<String, Vec<Local>>,
}

impl Coster<'_> {
    fn ty(&self, e: &IdedExpr) -> Type {
        self.checked.types.get(&e.id).cloned().unwrap_or(Type::Dyn)
    }

    fn decl(&self, e: &IdedExpr) -> Option<&Arc<Decl>> {
        self.checked.decls.get(&e.id)
    }

    fn local(&self, name: &str) -> Option<&Local> {
        self.locals.get(name).and_then(|v| v.last())
    }

    fn push_local(&mut self, name: &str, l: Local) {
        self.locals.entry(name.to_string()).or_default().push(l);
    }

    fn pop_local(&mut self, name: &str) {
        if let Some(v) = self.locals.get_mut(name) {
            v.pop();
        }
    }

    fn compute_size(&mut self, e: &IdedExpr) -> Option<Size> {
        super::with_stack(|| self.compute_size_level(e))
    }

    fn compute_size_level(&mut self, e: &IdedExpr) -> Option<Size> {
        if let Some(s) = self.sizes.get(&e.id) {
            return Some(*s);
        }
        match &e.expr {
            Expr::Literal(l) => {
                return Some(fixed(match l {
                    LiteralValue::String(s) => s.inner().chars().count() as u64,
                    LiteralValue::Bytes(b) => b.inner().len() as u64,
                    _ => 1,
                }))
            }
            Expr::List(l) => return Some(fixed(l.elements.len() as u64)),
            Expr::Map(m) => return Some(fixed(m.entries.len() as u64)),
            _ => {}
        }
        if let Some(d) = self.decl(e) {
            let s = Size {
                min: 0,
                max: d.max_elements.max(0) as u64,
            };
            self.sizes.insert(e.id, s);
            return Some(s);
        }
        if is_scalar(&self.ty(e)) {
            return Some(fixed(1));
        }
        if let Expr::Ident(name) = &e.expr {
            if let Some(l) = self.local(name) {
                return l.size;
            }
        }
        None
    }

    fn size_or_unknown(&mut self, e: &IdedExpr) -> Size {
        self.compute_size(e).unwrap_or(UNKNOWN)
    }

    fn entry_size(&self, e: &IdedExpr) -> Option<EntrySize> {
        if let Some(s) = self.entries.get(&e.id) {
            return Some(*s);
        }
        if let Expr::Ident(name) = &e.expr {
            if let Some(l) = self.local(name) {
                return l.entry;
            }
        }
        None
    }

    fn cost(&mut self, e: &IdedExpr) -> Cost {
        super::with_stack(|| self.cost_level(e))
    }

    fn cost_level(&mut self, e: &IdedExpr) -> Cost {
        match &e.expr {
            Expr::Literal(_) => fixed(0),
            Expr::Ident(_) => fixed(1),
            Expr::Select(sel) => {
                if sel.test {
                    // kube: presence tests cost nothing.
                    return self.cost(&sel.operand);
                }
                let mut sum = self.cost(&sel.operand);
                if matches!(
                    self.ty(&sel.operand),
                    Type::Map(..) | Type::Object(_) | Type::Param(_)
                ) {
                    sum = sum.add(fixed(1));
                }
                sum
            }
            Expr::Call(call) => self.cost_call(e, call),
            Expr::List(l) => {
                let mut sum = fixed(0);
                let mut item = Size {
                    min: if l.elements.is_empty() { 0 } else { u64::MAX },
                    max: 0,
                };
                for el in &l.elements {
                    sum = sum.add(self.cost(el));
                    let s = self.size_or_unknown(el);
                    item = item.union(s);
                }
                self.entries.insert(
                    e.id,
                    EntrySize {
                        container: Container::List,
                        key: fixed(1),
                        val: item,
                    },
                );
                sum.add(fixed(10))
            }
            Expr::Map(m) => {
                let mut sum = fixed(0);
                let empty = m.entries.is_empty();
                let mut ks = Size {
                    min: if empty { 0 } else { u64::MAX },
                    max: 0,
                };
                let mut vs = ks;
                for entry in &m.entries {
                    let EntryExpr::MapEntry(me) = &entry.expr else {
                        continue;
                    };
                    sum = sum.add(self.cost(&me.key)).add(self.cost(&me.value));
                    let k = self.size_or_unknown(&me.key);
                    ks = ks.union(k);
                    let v = self.size_or_unknown(&me.value);
                    vs = vs.union(v);
                }
                self.entries.insert(
                    e.id,
                    EntrySize {
                        container: Container::Map,
                        key: ks,
                        val: vs,
                    },
                );
                sum.add(fixed(30))
            }
            Expr::Struct(_) => fixed(40),
            Expr::Comprehension(c) => {
                let mut sum = self.cost(&c.iter_range).add(self.cost(&c.accu_init));
                let accu = Local {
                    size: self.compute_size(&c.accu_init),
                    entry: self.entry_size(&c.accu_init),
                };
                self.push_local(&c.accu_var, accu);
                let range_entry = self.entry_size(&c.iter_range);
                let range_kind = match range_entry.map(|r| r.container) {
                    Some(k) => Some(k),
                    None => match self.ty(&c.iter_range) {
                        Type::List(_) => Some(Container::List),
                        Type::Map(..) => Some(Container::Map),
                        _ => None,
                    },
                };
                match &c.iter_var2 {
                    Some(v2) => {
                        let key = range_entry.map(|r| r.key);
                        let val = range_entry.map(|r| r.val);
                        self.push_local(
                            &c.iter_var,
                            Local {
                                size: key,
                                entry: None,
                            },
                        );
                        self.push_local(
                            v2,
                            Local {
                                size: val,
                                entry: None,
                            },
                        );
                    }
                    None => {
                        let size = if range_kind == Some(Container::List) {
                            range_entry.map(|r| r.val)
                        } else {
                            range_entry.map(|r| r.key)
                        };
                        self.push_local(&c.iter_var, Local { size, entry: None });
                    }
                }
                let loop_cost = self.cost(&c.loop_cond);
                let step_cost = self.cost(&c.loop_step);
                self.pop_local(&c.iter_var);
                if let Some(v2) = &c.iter_var2 {
                    self.pop_local(v2);
                }
                sum = sum.add(self.cost(&c.result));
                self.pop_local(&c.accu_var);
                let range_cnt = self.size_or_unknown(&c.iter_range);
                sum = sum.add(range_cnt.multiply(step_cost.add(loop_cost)));
                match &c.accu_init.expr {
                    Expr::Literal(_) => {
                        if let Some(s) = self.compute_size(&c.accu_init) {
                            self.sizes.insert(e.id, s);
                        }
                    }
                    Expr::List(_) | Expr::Map(_) => {
                        self.sizes.insert(e.id, range_cnt);
                        if let Some(es) = self.entry_size(&c.loop_step) {
                            self.entries.insert(e.id, es);
                        }
                    }
                    _ => {}
                }
                sum
            }
            Expr::Unspecified => fixed(0),
        }
    }

    fn cost_call(&mut self, e: &IdedExpr, call: &::cel::common::ast::CallExpr) -> Cost {
        if call.func_name == "dyn" && call.args.len() == 1 {
            let c = self.cost(&call.args[0]);
            if let Some(s) = self.compute_size(&call.args[0]) {
                self.sizes.insert(e.id, s);
            }
            if let Some(es) = self.entry_size(&call.args[0]) {
                self.entries.insert(e.id, es);
            }
            return fixed(1).add(c);
        }
        let arg_costs: Vec<Cost> = call.args.iter().map(|a| self.cost(a)).collect();
        let ids = match call.func_name.as_str() {
            operators::LOGICAL_AND => vec!["logical_and"],
            operators::LOGICAL_OR => vec!["logical_or"],
            _ => self
                .checked
                .overloads
                .get(&e.id)
                .cloned()
                .unwrap_or_default(),
        };
        if ids.is_empty() {
            return fixed(0);
        }
        let mut sum = fixed(0);
        if let Some(t) = &call.target {
            sum = sum.add(self.cost(t));
        }
        let mut fn_cost = Size {
            min: u64::MAX,
            max: 0,
        };
        let mut result_size: Option<Size> = None;
        for id in ids {
            let (c, rs) = self.function_cost(e, call, id, &arg_costs);
            fn_cost = fn_cost.union(c);
            if let Some(rs) = rs {
                result_size = Some(match result_size {
                    None => rs,
                    Some(prev) => prev.union(rs),
                });
            }
            if id == "index_list" || id == "index_map" {
                if let Some(a0) = call.args.first() {
                    result_size = self.entry_size(a0).map(|es| es.val);
                }
            }
            if result_size.is_none() {
                result_size = self.compute_size(e);
            }
        }
        if let Some(rs) = result_size {
            self.sizes.insert(e.id, rs);
        }
        sum.add(fn_cost)
    }

    /// cel-go's `functionCost`, kube's `EstimateCallCost` first.
    fn function_cost(
        &mut self,
        e: &IdedExpr,
        call: &::cel::common::ast::CallExpr,
        id: &str,
        arg_costs: &[Cost],
    ) -> (Cost, Option<Size>) {
        let arg_sum = arg_costs.iter().fold(fixed(0), |a, c| a.add(*c));
        if let Some((c, rs)) = self.kube_call_cost(call, id) {
            return (c.add(arg_sum), rs);
        }
        let args = &call.args;
        let target = call.target.as_deref();
        match id {
            "string_format" => {
                if let Some(t) = target {
                    return (
                        self.size_or_unknown(t)
                            .factor(STRING_TRAVERSAL_COST_FACTOR)
                            .add(arg_sum),
                        None,
                    );
                }
            }
            "string_to_bytes" if args.len() == 1 => {
                let sz = self.size_or_unknown(&args[0]);
                return (
                    sz.factor(STRING_TRAVERSAL_COST_FACTOR).add(arg_sum),
                    Some(Size {
                        min: sz.min,
                        max: sz.max.saturating_mul(4),
                    }),
                );
            }
            "bytes_to_string" if args.len() == 1 => {
                let sz = self.size_or_unknown(&args[0]);
                return (
                    sz.factor(STRING_TRAVERSAL_COST_FACTOR).add(arg_sum),
                    Some(Size {
                        min: sz.min / 4,
                        max: sz.max,
                    }),
                );
            }
            "strings_quote" if args.len() == 1 => {
                let sz = self.size_or_unknown(&args[0]);
                return (
                    sz.factor(STRING_TRAVERSAL_COST_FACTOR).add(arg_sum),
                    Some(Size {
                        min: sz.min.saturating_add(2),
                        max: sz.max.saturating_mul(2).saturating_add(2),
                    }),
                );
            }
            "starts_with_string" | "ends_with_string" if args.len() == 1 => {
                return (
                    self.size_or_unknown(&args[0])
                        .factor(STRING_TRAVERSAL_COST_FACTOR)
                        .add(arg_sum),
                    None,
                );
            }
            "in_list" if args.len() == 2 => {
                return (
                    self.size_or_unknown(&args[1]).factor(1.0).add(arg_sum),
                    None,
                );
            }
            "matches_string" => {
                if let (Some(t), 1) = (target, args.len()) {
                    let s = self
                        .size_or_unknown(t)
                        .add(fixed(1))
                        .factor(STRING_TRAVERSAL_COST_FACTOR);
                    let r = self
                        .size_or_unknown(&args[0])
                        .factor(REGEX_STRING_LENGTH_COST_FACTOR);
                    return (s.multiply(r).add(arg_sum), None);
                }
            }
            "contains_string" => {
                if let (Some(t), 1) = (target, args.len()) {
                    let s = self.size_or_unknown(t).factor(STRING_TRAVERSAL_COST_FACTOR);
                    let sub = self
                        .size_or_unknown(&args[0])
                        .factor(STRING_TRAVERSAL_COST_FACTOR);
                    return (s.multiply(sub).add(arg_sum), None);
                }
            }
            "logical_or" | "logical_and" => {
                let (l, r) = (arg_costs[0], arg_costs[1]);
                return (
                    Size {
                        min: l.min,
                        max: l.add(r).max,
                    },
                    None,
                );
            }
            "conditional" => {
                let size = self
                    .size_or_unknown(&args[1])
                    .union(self.size_or_unknown(&args[2]));
                if let Some(es) =
                    union_entries(self.entry_size(&args[1]), self.entry_size(&args[2]))
                {
                    self.entries.insert(e.id, es);
                }
                let c = arg_costs[0].add(arg_costs[1].union(arg_costs[2]));
                return (c, Some(size));
            }
            "add_string" | "add_bytes" | "add_list" if args.len() == 2 => {
                let l = self.size_or_unknown(&args[0]);
                let r = self.size_or_unknown(&args[1]);
                let rs = l.add(r);
                if let Some(es) =
                    union_entries(self.entry_size(&args[0]), self.entry_size(&args[1]))
                {
                    self.entries.insert(e.id, es);
                }
                if id == "add_list" {
                    return (fixed(1).add(arg_sum), Some(rs));
                }
                return (
                    rs.factor(STRING_TRAVERSAL_COST_FACTOR).add(arg_sum),
                    Some(rs),
                );
            }
            "less_string"
            | "greater_string"
            | "less_equals_string"
            | "greater_equals_string"
            | "less_bytes"
            | "greater_bytes"
            | "less_equals_bytes"
            | "greater_equals_bytes"
            | "equals"
            | "not_equals" => {
                let l = self.size_or_unknown(&args[0]);
                let r = self.size_or_unknown(&args[1]);
                let smallest = l.max.min(r.max);
                let min = u64::from(smallest > 0);
                return (
                    Size { min, max: smallest }
                        .factor(STRING_TRAVERSAL_COST_FACTOR)
                        .add(arg_sum),
                    None,
                );
            }
            _ => {}
        }
        (fixed(1).add(arg_sum), None)
    }

    fn list_elem_size(&self, target: &IdedExpr) -> Size {
        match self.decl(target).and_then(|d| d.elem.as_ref()) {
            Some(el) => Size {
                min: 0,
                max: el.max_elements.max(0) as u64,
            },
            None => UNKNOWN,
        }
    }

    /// kube's `CostEstimator.EstimateCallCost`: (cost without the arguments, result size).
    fn kube_call_cost(
        &mut self,
        call: &::cel::common::ast::CallExpr,
        id: &str,
    ) -> Option<(Cost, Option<Size>)> {
        let args = &call.args;
        let target = call.target.as_deref();
        let name = call.func_name.as_str();
        Some(match name {
            "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" => {
                let t = target?;
                let tsz = self.size_or_unknown(t);
                match self.ty(t) {
                    Type::List(el) => {
                        let mut el_cost = fixed(1);
                        if matches!(*el, Type::String | Type::Bytes) {
                            el_cost = el_cost
                                .add(self.list_elem_size(t).factor(STRING_TRAVERSAL_COST_FACTOR));
                        }
                        (tsz.multiply(el_cost), None)
                    }
                    _ => (tsz.factor(STRING_TRAVERSAL_COST_FACTOR), None),
                }
            }
            "url" if args.len() == 1 => {
                let sz = self.size_or_unknown(&args[0]);
                (sz.factor(STRING_TRAVERSAL_COST_FACTOR), Some(sz))
            }
            "lowerAscii" | "upperAscii" | "substring" | "trim" => {
                let sz = self.size_or_unknown(target?);
                (sz.factor(STRING_TRAVERSAL_COST_FACTOR), Some(sz))
            }
            "replace" if args.len() >= 2 => {
                let sz = self.size_or_unknown(target?);
                let to_replace = self.size_or_unknown(&args[0]);
                let with = self.size_or_unknown(&args[1]);
                let mut count = Size { min: 0, max: 0 };
                let mut retained = Size { min: 0, max: 0 };
                if to_replace.min == 0 {
                    count.max = sz.max.saturating_add(1);
                    retained.max = sz.max;
                } else if with.max <= to_replace.min {
                    retained.max = sz.max;
                } else {
                    count.max = (sz.max as f64 / to_replace.min as f64).ceil() as u64;
                }
                if to_replace.max == 0 {
                    count.min = sz.min.saturating_add(1);
                    retained.min = sz.min;
                } else if to_replace.max <= with.min {
                    retained.min = sz.min;
                } else {
                    count.min = (sz.min as f64 / to_replace.max as f64).ceil() as u64;
                }
                let size = count.multiply(with).add(retained);
                (sz.factor(2.0 * STRING_TRAVERSAL_COST_FACTOR), Some(size))
            }
            "split" => {
                let sz = self.size_or_unknown(target?);
                let mut max = sz.max;
                if let Some(Expr::Literal(LiteralValue::Int(i))) = args.get(1).map(|a| &a.expr) {
                    max = *i.inner() as u64;
                }
                (
                    sz.factor(2.0 * STRING_TRAVERSAL_COST_FACTOR),
                    Some(Size { min: 0, max }),
                )
            }
            "join" => {
                let t = target?;
                let list = self.size_or_unknown(t);
                let mut sz = Size { min: 0, max: 0 };
                if matches!(self.ty(t), Type::List(_)) {
                    sz = list.multiply(self.list_elem_size(t));
                }
                if let Some(sep) = args.first() {
                    let sep = self.size_or_unknown(sep);
                    let seps = Size {
                        min: list.min.saturating_sub(1),
                        max: list.max.saturating_sub(1),
                    };
                    sz = sz.add(sep.multiply(seps));
                }
                (sz.factor(STRING_TRAVERSAL_COST_FACTOR), Some(sz))
            }
            "find" | "findAll" if !args.is_empty() => {
                let sz = self.size_or_unknown(target?);
                let s = sz.add(fixed(1)).factor(STRING_TRAVERSAL_COST_FACTOR);
                let r = self
                    .size_or_unknown(&args[0])
                    .factor(REGEX_STRING_LENGTH_COST_FACTOR);
                (
                    s.multiply(r),
                    Some(Size {
                        min: 0,
                        max: sz.max,
                    }),
                )
            }
            "cidr" | "isIP" | "isCIDR" | "quantity" | "isQuantity" | "semver" | "isSemver"
                if !args.is_empty() =>
            {
                (
                    self.size_or_unknown(&args[0])
                        .factor(STRING_TRAVERSAL_COST_FACTOR),
                    None,
                )
            }
            "ip" if id == "cidr_ip" => (fixed(1), None),
            "ip" if !args.is_empty() => (
                self.size_or_unknown(&args[0])
                    .factor(STRING_TRAVERSAL_COST_FACTOR),
                None,
            ),
            "ip.isCanonical" if !args.is_empty() => (
                self.size_or_unknown(&args[0])
                    .factor(2.0 * STRING_TRAVERSAL_COST_FACTOR),
                None,
            ),
            "check" => (fixed(super::kubelib::AUTHZ_CHECK_COST), None),
            n if super::kubelib::is_unit_cost(n) => (fixed(1), None),
            "containsIP" | "containsCIDR" if !args.is_empty() => {
                let sz = Size { min: 4, max: 16 };
                let mut c = sz.add(sz).factor(STRING_TRAVERSAL_COST_FACTOR);
                if name == "containsCIDR" {
                    c = c.add(sz.factor(STRING_TRAVERSAL_COST_FACTOR)).add(fixed(1));
                }
                if id == "cidr_contains_ip_string" || id == "cidr_contains_cidr_string" {
                    c = c.add(
                        self.size_or_unknown(&args[0])
                            .factor(STRING_TRAVERSAL_COST_FACTOR),
                    );
                }
                (c, None)
            }
            "validate" if !args.is_empty() => (
                self.size_or_unknown(&args[0])
                    .factor(STRING_TRAVERSAL_COST_FACTOR)
                    .factor(MAX_NAME_FORMAT_REGEX_SIZE * REGEX_STRING_LENGTH_COST_FACTOR),
                None,
            ),
            operators::EQUALS if args.len() == 2 => {
                let (l, r) = (self.ty(&args[0]), self.ty(&args[1]));
                if !l.is_exact(&r) {
                    return None;
                }
                match l {
                    Type::Opaque(super::decls::IP)
                    | Type::Opaque(super::decls::CIDR)
                    | Type::Opaque(super::decls::QUANTITY)
                    | Type::Opaque(super::decls::SEMVER) => (fixed(1), None),
                    Type::Opaque(super::decls::FORMAT) => (
                        Size {
                            min: 1,
                            max: MAX_FORMAT_SIZE,
                        }
                        .factor(STRING_TRAVERSAL_COST_FACTOR),
                        None,
                    ),
                    Type::Opaque(super::decls::URL) => {
                        let size = self.compute_size(&args[1]).unwrap_or(fixed(1));
                        (
                            Size {
                                min: 1,
                                max: size.max,
                            }
                            .factor(STRING_TRAVERSAL_COST_FACTOR),
                            None,
                        )
                    }
                    _ => return None,
                }
            }
            _ => return None,
        })
    }
}

fn is_scalar(t: &Type) -> bool {
    match t {
        Type::Bool | Type::Double | Type::Duration | Type::Int | Type::Timestamp | Type::Uint => {
            true
        }
        Type::Optional(inner) => is_scalar(inner),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::check::{compile, Want};
    use super::super::types::schema_decl;
    use super::*;
    use crate::schema::structural::Structural;
    use serde_json::json;

    fn cost_of(schema: serde_json::Value, rule: &str) -> u64 {
        let p = crate::schema::props::JSONSchemaProps::from_value(&schema).expect("schema");
        let d = schema_decl(&Structural::from_props(&p), false).expect("decl");
        let env = RuleEnv::new(d, false);
        let c = compile(rule, &env, Want::Bool).expect("compiles");
        estimate(&c, &env)
    }

    #[test]
    fn unbounded_lists_cost_more_than_bounded_ones() {
        let unbounded = json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "string"}}}});
        let bounded = json!({"type": "object", "properties": {"l": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10}}}});
        let rule = "self.l.all(x, self.l.exists(y, x == y))";
        assert!(cost_of(unbounded, rule) > STATIC_ESTIMATED_COST_LIMIT);
        assert!(cost_of(bounded, rule) < 10_000);
    }

    #[test]
    fn simple_rules_are_cheap() {
        let s = json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}});
        // self.a (ident 1 + select 1) twice, `>` 1.
        assert_eq!(cost_of(s, "self.a > self.b"), 5);
    }

    #[test]
    fn cost_messages_match_kube() {
        assert_eq!(
            cost_error_message("estimated rule cost", 20_000_000, STATIC_ESTIMATED_COST_LIMIT),
            "estimated rule cost exceeds budget by factor of 2.0x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
        );
        assert!(cost_error_message(
            "estimated rule cost",
            10_000_010,
            STATIC_ESTIMATED_COST_LIMIT
        )
        .contains("factor of 1.000001x"));
        assert!(
            cost_error_message("estimated rule cost", u64::MAX, STATIC_ESTIMATED_COST_LIMIT)
                .contains("more than 100x")
        );
    }
}
