//! CRD-time checks of `x-kubernetes-validations` (kube's CRD validation): the rule
//! fields themselves (`rule is not specified`, `message`, `reason`, `fieldPath`), then —
//! where the schema around a rule is sound — compiling it: type errors, the estimated
//! cost against the per-rule and per-CRD budgets, `oldSelf` where old and new values
//! can't be correlated, and `optionalOldSelf` on rules that don't use `oldSelf`.

use super::compile::{compile_node_rules, CompiledRule};
use super::cost::{
    cost_error_message, multiply_with_overflow_guard, STATIC_ESTIMATED_COST_LIMIT,
    STATIC_ESTIMATED_CRD_COST_LIMIT,
};
use super::types::{self, Decl};
use crate::field::{BadValue, Error, ErrorList, ErrorType, Path};
use crate::goformat::go_json_string;
use crate::schema::props::{JSONSchemaProps, SchemaOrArray, ValidationRule};
use crate::schema::structural::Structural;
use serde_json::Value;
use std::sync::Arc;

/// kube's supported `reason` values, sorted as kube lists them.
const SUPPORTED_REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// The rule checks of one `openAPIV3Schema` at `fld`. `prior` are the schema errors
/// already found for it (rules under a node with schema errors are not compiled, as in
/// kube); `compile` is false when kube has no CEL context (a non-structural schema, or
/// structural-ness not required on update); `unchanged_schema` (an update that keeps
/// this schema as it was) suppresses the per-rule cost errors, as kube does.
pub fn validate_crd_rules(
    schema: &JSONSchemaProps,
    fld: &Path,
    prior: &ErrorList,
    compile: bool,
    unchanged_schema: bool,
) -> ErrorList {
    let mut static_errs = ErrorList::new();
    static_walk(schema, fld, &mut static_errs);
    let mut errs = static_errs.clone();
    if !compile {
        return errs;
    }
    let mut blocking: Vec<String> = prior.iter().map(|e| e.field.to_string()).collect();
    blocking.extend(static_errs.iter().map(|e| e.field.to_string()));
    let root = Structural::from_props(schema);
    let decl = types::schema_decl(&root, true);
    let mut w = CelWalk {
        suppress_per_expression_cost: unchanged_schema,
        blocking,
        errors: ErrorList::new(),
        total: 0,
        most_expensive: Vec::new(),
    };
    w.node(schema, fld, Some(decl), Some(1), None);
    errs.extend(w.errors);
    if w.total > STATIC_ESTIMATED_CRD_COST_LIMIT {
        for (path, _) in &w.most_expensive {
            errs.push(Error::forbidden(
                path,
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        errs.push(Error::forbidden(
            fld,
            cost_error_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                w.total,
                STATIC_ESTIMATED_CRD_COST_LIMIT,
            ),
        ));
    }
    errs
}

fn children(s: &JSONSchemaProps, fld: &Path) -> Vec<(Path, JSONSchemaProps)> {
    let mut out = Vec::new();
    if let Some(ap) = s.additional_properties_schema() {
        out.push((fld.child("additionalProperties"), ap.clone()));
    }
    for (k, p) in s.properties.iter().flatten() {
        out.push((fld.child("properties").key(k), p.clone()));
    }
    if let Some(n) = &s.not {
        out.push((fld.child("not"), (**n).clone()));
    }
    for (name, list) in [
        ("allOf", &s.all_of),
        ("oneOf", &s.one_of),
        ("anyOf", &s.any_of),
    ] {
        for (i, j) in list.iter().flatten().enumerate() {
            out.push((fld.child(name).index(i), j.clone()));
        }
    }
    match &s.items {
        Some(SchemaOrArray::Schema(i)) => out.push((fld.child("items"), (**i).clone())),
        Some(SchemaOrArray::Array(a)) => {
            for (i, j) in a.iter().enumerate() {
                out.push((fld.child("items").index(i), j.clone()));
            }
        }
        None => {}
    }
    out
}

/// The checks of the rule fields (kube's schema errors), children first.
fn static_walk(s: &JSONSchemaProps, fld: &Path, errs: &mut ErrorList) {
    for (p, c) in children(s, fld) {
        static_walk(&c, &p, errs);
    }
    let Some(rules) = &s.x_validations else {
        return;
    };
    for (i, rule) in rules.iter().enumerate() {
        let rp = fld.child("x-kubernetes-validations").index(i);
        let trimmed_rule = rule.rule.trim();
        let msg = rule.message.as_deref().unwrap_or_default();
        let trimmed_msg = msg.trim();
        if trimmed_rule.is_empty() {
            errs.push(Error::required(&rp.child("rule"), "rule is not specified"));
        } else if !msg.is_empty() && trimmed_msg.is_empty() {
            errs.push(Error::invalid(
                &rp.child("message"),
                Value::String(msg.into()),
                "must be non-empty if specified",
            ));
        } else if has_newlines(trimmed_msg) {
            errs.push(Error::invalid(
                &rp.child("message"),
                Value::String(msg.into()),
                "must not contain line breaks",
            ));
        } else if has_newlines(trimmed_rule) && trimmed_msg.is_empty() {
            errs.push(Error::required(
                &rp.child("message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        let msg_expr = rule.message_expression.as_deref().unwrap_or_default();
        if !msg_expr.is_empty() && msg_expr.trim().is_empty() {
            errs.push(Error::required(
                &rp.child("messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = &rule.reason {
            if !SUPPORTED_REASONS.contains(&reason.as_str()) {
                errs.push(Error::not_supported(
                    &rp.child("reason"),
                    Value::String(reason.clone()),
                    &SUPPORTED_REASONS,
                ));
            }
        }
        let fp = rule.field_path.as_deref().unwrap_or_default();
        if !fp.is_empty() && fp.trim().is_empty() {
            errs.push(Error::invalid(
                &rp.child("fieldPath"),
                Value::String(fp.into()),
                "must be non-empty if specified",
            ));
        }
        if has_newlines(fp) {
            errs.push(Error::invalid(
                &rp.child("fieldPath"),
                Value::String(fp.into()),
                "must not contain line breaks",
            ));
        }
        if !fp.is_empty()
            && super::fieldpath::valid_field_path(fp, &Structural::from_props(s)).is_err()
        {
            errs.push(Error::invalid(
                &rp.child("fieldPath"),
                Value::String(fp.into()),
                "must be a valid path",
            ));
        }
    }
}

fn has_newlines(s: &str) -> bool {
    s.contains('\n') || s.contains('\r')
}

/// The rule as kube prints the internal `ValidationRule` struct (Go's JSON of a struct
/// without tags).
fn rule_value(r: &ValidationRule) -> BadValue {
    let opt = |v: &Option<String>| {
        v.as_deref()
            .map(go_json_string)
            .unwrap_or_else(|| "null".into())
    };
    BadValue::Raw(format!(
        "{{\"Rule\":{},\"Message\":{},\"MessageExpression\":{},\"Reason\":{},\"FieldPath\":{},\"OptionalOldSelf\":{}}}",
        go_json_string(&r.rule),
        go_json_string(r.message.as_deref().unwrap_or_default()),
        go_json_string(r.message_expression.as_deref().unwrap_or_default()),
        opt(&r.reason),
        go_json_string(r.field_path.as_deref().unwrap_or_default()),
        r.optional_old_self.map(|b| b.to_string()).unwrap_or_else(|| "null".into()),
    ))
}

struct CelWalk {
    /// Per-rule cost errors are not reported (unchanged schema on update).
    suppress_per_expression_cost: bool,
    /// Paths of schema errors: rules at or above them are not compiled.
    blocking: Vec<String>,
    errors: ErrorList,
    total: u64,
    most_expensive: Vec<(Path, u64)>,
}

/// True when `path` is `node` or below it.
fn under(path: &str, node: &str) -> bool {
    path.strip_prefix(node)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('.') || rest.starts_with('['))
}

impl CelWalk {
    fn observe(&mut self, path: Path, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < STATIC_ESTIMATED_CRD_COST_LIMIT / 100 {
            return;
        }
        self.most_expensive.push((path, cost));
        self.most_expensive.sort_by_key(|e| std::cmp::Reverse(e.1));
        self.most_expensive.truncate(4);
    }

    /// `decl`: `None` outside CEL's reach (junctors), `Some(None)` when the node has no
    /// CEL type. `cardinality`: `None` when unbounded. `uncorrelatable`: the highest path
    /// below which `oldSelf` can't be used.
    fn node(
        &mut self,
        s: &JSONSchemaProps,
        fld: &Path,
        decl: Option<Option<Arc<Decl>>>,
        cardinality: Option<u64>,
        uncorrelatable: Option<Path>,
    ) {
        let structural = Structural::from_props(s);
        let max_elements: Option<u64> = match s.type_.as_deref() {
            Some("object") if s.additional_properties.is_some() => {
                s.max_properties.map(|m| m.max(0) as u64)
            }
            Some("array") => s.max_items.map(|m| m.max(0) as u64),
            _ => Some(1),
        };
        let child_card = match (cardinality, max_elements) {
            (Some(c), Some(m)) => Some(multiply_with_overflow_guard(c, m)),
            _ => None,
        };
        let parent_decl = decl.clone().flatten();
        if let Some(ap) = s.additional_properties_schema() {
            let d = decl.as_ref().map(|_| {
                parent_decl
                    .as_ref()
                    .and_then(|d| d.elem.clone())
                    .or_else(|| fallback_decl(ap))
            });
            self.node(
                ap,
                &fld.child("additionalProperties"),
                d,
                child_card,
                uncorrelatable.clone(),
            );
        }
        for (k, p) in s.properties.iter().flatten() {
            let uncorr = match (&uncorrelatable, structural.x_map_type.as_deref()) {
                (Some(u), _) => Some(u.clone()),
                (None, None | Some("granular") | Some("atomic")) => None,
                (None, _) => Some(fld.clone()),
            };
            let d = decl.as_ref().map(|_| {
                super::value::escape(k)
                    .and_then(|e| parent_decl.as_ref().and_then(|d| d.field(&e)))
                    .or_else(|| fallback_decl(p))
            });
            self.node(p, &fld.child("properties").key(k), d, child_card, uncorr);
        }
        let junctors: Vec<(Path, &JSONSchemaProps)> = s
            .not
            .iter()
            .map(|n| (fld.child("not"), &**n))
            .chain(
                [
                    ("allOf", &s.all_of),
                    ("oneOf", &s.one_of),
                    ("anyOf", &s.any_of),
                ]
                .into_iter()
                .flat_map(|(name, l)| {
                    l.iter()
                        .flatten()
                        .enumerate()
                        .map(move |(i, j)| (fld.child(name).index(i), j))
                }),
            )
            .collect();
        for (p, j) in junctors {
            self.node(j, &p, None, None, uncorrelatable.clone());
        }
        if let Some(items) = s.items_schema() {
            let uncorr = match (&uncorrelatable, s.x_list_type.as_deref()) {
                (Some(u), _) => Some(u.clone()),
                (None, Some("map")) => None,
                (None, _) => Some(fld.clone()),
            };
            let d = decl.as_ref().map(|_| {
                parent_decl
                    .as_ref()
                    .and_then(|d| d.elem.clone())
                    .or_else(|| fallback_decl(items))
            });
            self.node(items, &fld.child("items"), d, child_card, uncorr);
        }
        let Some(rules) = s.x_validations.as_ref().filter(|r| !r.is_empty()) else {
            return;
        };
        let Some(decl) = decl else {
            return;
        };
        let here = fld.to_string();
        if self.blocking.iter().any(|p| under(p, &here)) {
            return;
        }
        let vfld = fld.child("x-kubernetes-validations");
        let Some(decl) = decl else {
            self.errors.push(Error::internal(
                &vfld,
                "internal error: failed to construct type information for x-kubernetes-validations rules: unable to convert structural schema to CEL declarations",
            ));
            return;
        };
        let compiled = compile_node_rules(&structural, &decl);
        for (i, (cr, rule)) in compiled.iter().zip(rules).enumerate() {
            self.check_rule(
                cr,
                rule,
                &vfld.index(i),
                cardinality,
                uncorrelatable.as_ref(),
            );
        }
    }

    fn check_rule(
        &mut self,
        cr: &CompiledRule,
        rule: &ValidationRule,
        rp: &Path,
        cardinality: Option<u64>,
        uncorrelatable: Option<&Path>,
    ) {
        let cost = expression_cost(cr.max_cost, cardinality, cr.max_cardinality);
        if !self.suppress_per_expression_cost && cost > STATIC_ESTIMATED_COST_LIMIT {
            self.errors.push(Error::forbidden(
                &rp.child("rule"),
                cost_error_message("estimated rule cost", cost, STATIC_ESTIMATED_COST_LIMIT),
            ));
        }
        self.observe(rp.child("rule"), cost);
        if let Some(e) = &cr.error {
            self.errors.push(Error {
                kind: ErrorType::Invalid,
                field: rp.child("rule"),
                bad_value: rule_value(rule),
                detail: e.clone(),
            });
        }
        if let Some(e) = &cr.message_expression_error {
            self.errors.push(Error {
                kind: ErrorType::Invalid,
                field: rp.child("messageExpression"),
                bad_value: rule_value(rule),
                detail: e.clone(),
            });
        } else if cr.message_expression.is_some() {
            let mcost = expression_cost(
                cr.message_expression_max_cost,
                cardinality,
                cr.max_cardinality,
            );
            if !self.suppress_per_expression_cost && mcost > STATIC_ESTIMATED_COST_LIMIT {
                self.errors.push(Error::forbidden(
                    &rp.child("messageExpression"),
                    cost_error_message(
                        "estimated messageExpression cost",
                        mcost,
                        STATIC_ESTIMATED_COST_LIMIT,
                    ),
                ));
            }
            self.observe(rp.child("messageExpression"), mcost);
        }
        if cr.uses_old_self {
            if let Some(u) = uncorrelatable {
                self.errors.push(Error::invalid(
                    &rp.child("rule"),
                    Value::String(rule.rule.clone()),
                    format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {u}"),
                ));
            }
        } else if let Some(b) = rule.optional_old_self {
            self.errors.push(Error::invalid(
                &rp.child("optionalOldSelf"),
                Value::Bool(b),
                "may not be set if oldSelf is not used in rule",
            ));
        }
    }
}

/// kube's `getExpressionCost`: the rule's cost times how often it can run.
fn expression_cost(max_cost: u64, cardinality: Option<u64>, fallback_cardinality: u64) -> u64 {
    match cardinality {
        Some(c) => multiply_with_overflow_guard(max_cost, c),
        None => multiply_with_overflow_guard(max_cost, fallback_cardinality),
    }
}

/// kube's `defaultConverter` for a node its parent's declaration doesn't cover.
fn fallback_decl(s: &JSONSchemaProps) -> Option<Arc<Decl>> {
    let st = Structural::from_props(s);
    types::schema_decl(&st, st.x_embedded_resource)
}
