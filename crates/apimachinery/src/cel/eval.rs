//! Running a [`CompiledRules`] tree over an object (kube's `Validator.Validate`): each
//! rule at the node it sits on with `self` bound to that node's value, `oldSelf` to the
//! correlated old value on updates, within kube's per-call and per-object cost limits.
//!
//! Correlation (which old value is "the same" node): object properties and map values
//! by key, `x-kubernetes-list-type: map` items by their key fields; plain list items
//! are never correlated, so transition rules under them don't run. Errors of rules that
//! don't use `oldSelf` on a node unchanged since the old object are ratcheted: they
//! become warnings (kube's CRDValidationRatcheting).

use super::compile::{CompiledRule, CompiledRules, Node};
use super::interp::{self, Activation};
use super::value::{to_val, EvalResult, Val};
use crate::field::{BadValue, Error, ErrorList, ErrorType, Path};
use serde_json::Value;
use std::rc::Rc;

/// kube's `PerCallLimit`: the most one evaluation may cost.
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// kube's `RuntimeCELCostBudget`: the most all rules on one object may cost.
pub const RUNTIME_COST_BUDGET: i64 = 10_000_000;
/// kube's `MaxEvaluatedMessageExpressionSizeBytes`.
const MAX_MESSAGE_EXPRESSION_SIZE: usize = 5 * 1024;
/// kube's error when the rules of a request have spent the runtime cost budget.
const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// What running the rules found.
#[derive(Debug, Default)]
pub struct Report {
    /// Field errors (added to the request's 422).
    pub errors: ErrorList,
    /// Ratcheted errors, as `Warning` header texts.
    pub warnings: Vec<String>,
    /// What is left of the cost budget (negative when it ran out).
    pub remaining_budget: i64,
}

/// Run the rules on `new` (and `old` on updates) from the root of the object.
pub fn validate(rules: &CompiledRules, new: &Value, old: Option<&Value>) -> Report {
    let mut w = Walk {
        errors: ErrorList::new(),
        warnings: Vec::new(),
    };
    let corr = match old {
        Some(o) => Correlation {
            current: Some((new, o)),
            parent: None,
        },
        None => Correlation::default(),
    };
    let remaining = w.node(
        &rules.root,
        &Path::root(),
        new,
        old,
        corr,
        RUNTIME_COST_BUDGET,
    );
    Report {
        errors: w.errors,
        warnings: w.warnings,
        remaining_budget: remaining,
    }
}

/// kube's ratcheting options: the correlated (new, old) pair at this node, and the
/// nearest correlated ancestor.
#[derive(Clone, Copy, Default)]
struct Correlation<'v> {
    current: Option<(&'v Value, &'v Value)>,
    parent: Option<(&'v Value, &'v Value)>,
}

impl<'v> Correlation<'v> {
    fn should_ratchet(&self) -> bool {
        match (self.current, self.parent) {
            (Some((n, o)), _) => n == o,
            (None, Some((n, o))) => n == o,
            (None, None) => false,
        }
    }

    fn key(self, field: &str) -> Correlation<'v> {
        let Some((n, o)) = self.current else {
            return self;
        };
        if self.parent.is_none() && (field == "apiVersion" || field == "kind") {
            // Both sides are converted to the same version: no ratcheting these.
            return Correlation::default();
        }
        let child = match (n.get(field), o.get(field)) {
            (Some(a), Some(b)) if n.is_object() && o.is_object() => Some((a, b)),
            _ => None,
        };
        Correlation {
            current: child,
            parent: self.current,
        }
    }

    fn index(self, i: usize, keys: Option<&[String]>) -> Correlation<'v> {
        let Some((n, o)) = self.current else {
            return self;
        };
        let child = match (n.as_array(), o.as_array(), keys) {
            (Some(na), Some(oa), Some(keys)) => na
                .get(i)
                .and_then(|item| find_by_key(oa, item, keys))
                .map(|old| (&na[i], old)),
            _ => None,
        };
        Correlation {
            current: child,
            parent: self.current,
        }
    }
}

/// The old list-map item with the same key field values as `item`.
fn find_by_key<'v>(old: &'v [Value], item: &Value, keys: &[String]) -> Option<&'v Value> {
    let key_of = |v: &Value| -> Option<Vec<Value>> {
        let m = v.as_object()?;
        Some(
            keys.iter()
                .map(|k| m.get(k).cloned().unwrap_or(Value::Null))
                .collect(),
        )
    };
    let wanted = key_of(item)?;
    old.iter().find(|o| key_of(o).as_ref() == Some(&wanted))
}

struct Walk {
    errors: ErrorList,
    warnings: Vec<String>,
}

/// The path kube prints for errors at the root (a nil `*field.Path`).
fn printable(p: &Path) -> Path {
    if p.is_root() {
        Path::new("<nil>")
    } else {
        p.clone()
    }
}

impl Walk {
    fn node<'v>(
        &mut self,
        n: &Node,
        path: &Path,
        obj: &'v Value,
        old: Option<&'v Value>,
        corr: Correlation<'v>,
        budget: i64,
    ) -> i64 {
        if obj.is_null() {
            return budget;
        }
        let old = old.filter(|o| !o.is_null());
        let mut budget = self.expressions(n, path, obj, old, corr, budget);
        if budget < 0 {
            return budget;
        }
        match obj {
            Value::Array(items) => {
                if let Some(item_rules) = &n.items {
                    let old_items = old.and_then(Value::as_array);
                    for (i, item) in items.iter().enumerate() {
                        let old_item = match (&n.list_map_keys, old_items) {
                            (Some(keys), Some(oa)) => find_by_key(oa, item, keys),
                            _ => None,
                        };
                        budget = self.node(
                            item_rules,
                            &path.index(i),
                            item,
                            old_item,
                            corr.index(i, n.list_map_keys.as_deref()),
                            budget,
                        );
                        if budget < 0 {
                            return budget;
                        }
                    }
                }
            }
            Value::Object(m) => {
                let old_map = old
                    .and_then(Value::as_object)
                    .filter(|_| n.map_correlatable);
                if let Some(ap) = &n.additional_properties {
                    for (k, v) in m {
                        let old_v = old_map.and_then(|o| o.get(k));
                        budget = self.node(ap, &path.key(k), v, old_v, corr.key(k), budget);
                        if budget < 0 {
                            return budget;
                        }
                    }
                }
                if !n.properties.is_empty() {
                    for (k, v) in m {
                        let Some(sub) = n.properties.get(k) else {
                            continue;
                        };
                        let old_v = old_map.and_then(|o| o.get(k));
                        budget = self.node(sub, &path.child(k), v, old_v, corr.key(k), budget);
                        if budget < 0 {
                            return budget;
                        }
                    }
                }
            }
            _ => {}
        }
        budget
    }

    fn type_value(n: &Node) -> Value {
        Value::String(n.type_name.clone())
    }

    /// An `Invalid` error of `n`'s rules at `here`, valued with the node's type.
    fn push_invalid(&mut self, here: &Path, n: &Node, detail: impl Into<String>) {
        self.errors
            .push(Error::invalid(here, Self::type_value(n), detail));
    }

    fn expressions<'v>(
        &mut self,
        n: &Node,
        path: &Path,
        obj: &'v Value,
        old: Option<&'v Value>,
        corr: Correlation<'v>,
        mut budget: i64,
    ) -> i64 {
        let here = printable(path);
        if let Some(e) = &n.init_error {
            self.push_invalid(&here, n, format!("rule compiler initialization error: {e}"));
            return budget;
        }
        if n.rules.is_empty() {
            return budget;
        }
        if budget <= 0 {
            self.push_invalid(&here, n, OUT_OF_BUDGET);
            return -1;
        }
        let self_val: EvalResult<'_> = to_val(obj, &n.shape);
        let old_val: Option<EvalResult<'_>> = old.map(|o| to_val(o, &n.shape));
        for rule in &n.rules {
            if let Some(e) = &rule.error {
                self.push_invalid(&here, n, format!("rule compile error: {e}"));
                continue;
            }
            let Some(program) = &rule.program else {
                continue;
            };
            let optional_old_self = rule.rule.optional_old_self == Some(true);
            if rule.uses_old_self && old.is_none() && !optional_old_self {
                // Transition rules run only when there is an old value to compare.
                continue;
            }
            let act = activation(&self_val, &old_val, rule.uses_old_self, optional_old_self);
            let act = match act {
                Ok(a) => a,
                Err(e) => {
                    self.push_invalid(
                        &here,
                        n,
                        format!("{e} evaluating rule: {}", rule_error_string(rule)),
                    );
                    continue;
                }
            };
            let outcome = interp::evaluate(program.program.expression(), &act, PER_CALL_LIMIT);
            if outcome.cost > i64::MAX as u64 || outcome.cost as i64 > budget {
                self.push_invalid(&here, n, OUT_OF_BUDGET);
                return -1;
            }
            budget -= outcome.cost as i64;
            match outcome.result {
                Err(e) if e.message.starts_with("no such overload") => {
                    let detail = format!(
                        "'{e}': call arguments did not match a supported operator, function or macro signature for rule: {}",
                        rule_error_string(rule)
                    );
                    self.push_invalid(&here, n, detail);
                    continue;
                }
                Err(e) if e.cost_exceeded => {
                    let detail = format!(
                        "'{e}': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                        rule_error_string(rule)
                    );
                    self.push_invalid(&here, n, detail);
                    return -1;
                }
                Err(e) => {
                    self.push_invalid(
                        &here,
                        n,
                        format!("{e} evaluating rule: {}", rule_error_string(rule)),
                    );
                    continue;
                }
                Ok(Val::Bool(true)) => continue,
                Ok(_) => {}
            }
            let field_path = match &rule.field_path {
                Some(fp) => path.child(fp),
                None => here.clone(),
            };
            let mut detail = None;
            if let Some(msg) = &rule.message_expression {
                match message_expression(msg, &act, budget, rule) {
                    MessageOutcome::Message(m, cost) => {
                        budget -= cost;
                        detail = Some(m);
                    }
                    MessageOutcome::Fallback(cost) => budget -= cost,
                    MessageOutcome::Stop(text) => {
                        let e = Error::invalid(&field_path, Self::type_value(n), text);
                        self.add(e, rule, corr);
                        return -1;
                    }
                }
            }
            let detail = detail.unwrap_or_else(|| rule_message_or_default(rule));
            let value = if n.type_name == "object" || n.type_name == "array" {
                BadValue::Omit
            } else {
                BadValue::Json(obj.clone())
            };
            let e = error_for_reason(&field_path, value, detail, rule.rule.reason.as_deref());
            self.add(e, rule, corr);
        }
        budget
    }

    fn add(&mut self, e: Error, rule: &CompiledRule, corr: Correlation<'_>) {
        if !rule.uses_old_self && corr.should_ratchet() {
            self.warnings.push(e.to_string());
        } else {
            self.errors.push(e);
        }
    }
}

fn activation<'a>(
    self_val: &EvalResult<'a>,
    old_val: &Option<EvalResult<'a>>,
    uses_old_self: bool,
    optional_old_self: bool,
) -> Result<Activation<'a>, super::value::EvalError> {
    let self_v = self_val.clone()?;
    let old_self = if !uses_old_self {
        None
    } else if optional_old_self {
        Some(match old_val {
            Some(v) => Val::Optional(Some(Rc::new(v.clone()?))),
            None => Val::Optional(None),
        })
    } else {
        match old_val {
            Some(v) => Some(v.clone()?),
            None => None,
        }
    };
    Ok(Activation {
        self_val: self_v,
        old_self,
        vars: Vec::new(),
    })
}

enum MessageOutcome {
    Message(String, i64),
    Fallback(i64),
    Stop(String),
}

fn message_expression(
    msg: &super::check::Checked,
    act: &Activation<'_>,
    budget: i64,
    rule: &CompiledRule,
) -> MessageOutcome {
    let outcome = interp::evaluate(msg.program.expression(), act, PER_CALL_LIMIT);
    let cost = outcome.cost as i64;
    if outcome.cost > i64::MAX as u64 || cost > budget {
        return MessageOutcome::Stop(
            "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run".into(),
        );
    }
    let v = match outcome.result {
        Err(e) if e.cost_exceeded => {
            return MessageOutcome::Stop(format!(
                "no further validation rules will be run due to call cost exceeds limit for messageExpression: {}",
                crate::field::go_quote(rule.rule.message_expression.as_deref().unwrap_or_default())
            ))
        }
        Err(_) => return MessageOutcome::Fallback(cost),
        Ok(v) => v,
    };
    let Val::Str(s) = v else {
        return MessageOutcome::Fallback(cost);
    };
    let trimmed = s.trim();
    if trimmed.len() > MAX_MESSAGE_EXPRESSION_SIZE || trimmed.contains('\n') || trimmed.is_empty() {
        return MessageOutcome::Fallback(cost);
    }
    MessageOutcome::Message(trimmed.to_string(), cost)
}

/// kube's `ruleMessageOrDefault`.
fn rule_message_or_default(rule: &CompiledRule) -> String {
    match rule.rule.message.as_deref().filter(|m| !m.is_empty()) {
        Some(m) => m.trim().to_string(),
        None => format!("failed rule: {}", rule_error_string(rule)),
    }
}

/// kube's `ruleErrorString`.
fn rule_error_string(rule: &CompiledRule) -> String {
    match rule.rule.message.as_deref().filter(|m| !m.is_empty()) {
        Some(m) => m.trim().to_string(),
        None => rule.rule.rule.trim().to_string(),
    }
}

/// kube's `fieldErrorForReason`.
fn error_for_reason(path: &Path, value: BadValue, detail: String, reason: Option<&str>) -> Error {
    let (kind, bad_value, detail) = match reason {
        Some("FieldValueForbidden") => (ErrorType::Forbidden, BadValue::Omit, detail),
        Some("FieldValueRequired") => (ErrorType::Required, BadValue::Omit, detail),
        Some("FieldValueDuplicate") => (ErrorType::Duplicate, value, String::new()),
        _ => (ErrorType::Invalid, value, detail),
    };
    Error {
        kind,
        field: path.clone(),
        bad_value,
        detail,
    }
}
