//! Compiling the `x-kubernetes-validations` of one CRD version into a [`CompiledRules`]
//! tree (kube's `cel.Validator`): each schema node with rules below it gets its parsed
//! and checked programs, once per CRD version, never per request.

use super::check::{self, Checked};
use super::types::{self, Decl};
use super::value::Shape;
use crate::schema::props::ValidationRule;
use crate::schema::structural::Structural;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The compiled rules of a whole schema (the root node of the tree).
#[derive(Debug)]
pub struct CompiledRules {
    /// The root node.
    pub root: Node,
}

/// One schema node on the way to rules: its own rules and its children's.
#[derive(Debug)]
pub struct Node {
    /// The node's `type` (`object` at resource roots), printed as the bad value of
    /// evaluation errors.
    pub type_name: String,
    /// How JSON at this node becomes `self`.
    pub shape: Shape,
    /// The rules written on this node.
    pub rules: Vec<CompiledRule>,
    /// The node could not be typed for CEL (kube's "rule compiler initialization error").
    pub init_error: Option<String>,
    /// `x-kubernetes-list-type: map` keys, for correlating old and new items.
    pub list_map_keys: Option<Vec<String>>,
    /// `x-kubernetes-map-type` allows correlating map values by key.
    pub map_correlatable: bool,
    /// Rules under `properties`.
    pub properties: BTreeMap<String, Node>,
    /// Rules under `items`.
    pub items: Option<Box<Node>>,
    /// Rules under `additionalProperties`.
    pub additional_properties: Option<Box<Node>>,
}

/// One compiled rule.
#[derive(Debug)]
pub struct CompiledRule {
    /// The rule as written.
    pub rule: ValidationRule,
    /// The checked program; `None` for an empty rule or a compile error.
    pub program: Option<Checked>,
    /// The compile error (kube's `CompilationResult.Error`): detail and whether it is
    /// a `Required` (rather than `Invalid`) error.
    pub error: Option<String>,
    /// The rule refers to `oldSelf` (a transition rule).
    pub uses_old_self: bool,
    /// The checked `messageExpression`, if any compiled.
    pub message_expression: Option<Checked>,
    /// The `messageExpression` compile error.
    pub message_expression_error: Option<String>,
    /// `fieldPath` normalised to kube's field path text (`spec.foo`, `foo[bar]`).
    pub field_path: Option<String>,
    /// Worst-case cost of one evaluation (cel-go's estimate).
    pub max_cost: u64,
    /// Worst-case cost of the `messageExpression`.
    pub message_expression_max_cost: u64,
    /// How many times the rule can run in a request of the largest size.
    pub max_cardinality: u64,
}

impl CompiledRules {
    /// Compile every rule of a CRD version's structural schema; `None` when the schema
    /// has no rules at all (no cost for such CRDs).
    pub fn compile(s: &Structural) -> Option<CompiledRules> {
        if !has_rules(s) {
            return None;
        }
        let decl = types::schema_decl(s, true);
        node(s, true, decl.as_ref()).map(|root| CompiledRules { root })
    }
}

/// True when the schema has `x-kubernetes-validations` anywhere on its skeleton.
pub fn has_rules(s: &Structural) -> bool {
    !s.x_validations.is_empty()
        || s.items.as_deref().is_some_and(has_rules)
        || s.additional_properties
            .as_ref()
            .and_then(|a| a.schema())
            .is_some_and(has_rules)
        || s.properties.values().any(has_rules)
}

fn node(s: &Structural, resource_root: bool, decl: Option<&Arc<Decl>>) -> Option<Node> {
    if !has_rules(s) {
        return None;
    }
    let (rules, init_error) = if s.x_validations.is_empty() {
        (Vec::new(), None)
    } else {
        match decl {
            Some(d) => (compile_node_rules(s, d), None),
            None => (
                Vec::new(),
                Some("failed to convert to declType for CEL validation rules".to_string()),
            ),
        }
    };
    let items = match (&s.items, decl.and_then(|d| d.elem.as_ref())) {
        (Some(i), elem) => node(i, i.x_embedded_resource, elem).map(Box::new),
        _ => None,
    };
    let additional_properties = match s.additional_properties.as_ref().and_then(|a| a.schema()) {
        Some(ap) => node(
            ap,
            ap.x_embedded_resource,
            decl.and_then(|d| d.elem.as_ref()),
        )
        .map(Box::new),
        None => None,
    };
    let mut properties = BTreeMap::new();
    for (k, p) in &s.properties {
        let field_decl = match super::value::escape(k) {
            Some(escaped) => match decl.and_then(|d| d.field(&escaped)) {
                Some(f) => Some(f),
                // Fields with no CEL type are left out of CEL validation.
                None => continue,
            },
            None => match types::schema_decl(p, p.x_embedded_resource) {
                Some(d) => {
                    if let Some(n) = node(p, p.x_embedded_resource, Some(&d)) {
                        properties.insert(k.clone(), n);
                    }
                    continue;
                }
                None => continue,
            },
        };
        if let Some(n) = node(p, p.x_embedded_resource, field_decl.as_ref()) {
            properties.insert(k.clone(), n);
        }
    }
    let type_name = if resource_root {
        "object".to_string()
    } else {
        s.type_.clone()
    };
    Some(Node {
        type_name,
        shape: Shape::of(s, resource_root),
        rules,
        init_error,
        list_map_keys: (s.x_list_type.as_deref() == Some("map")).then(|| s.x_list_map_keys.clone()),
        map_correlatable: matches!(
            s.x_map_type.as_deref(),
            None | Some("granular") | Some("atomic")
        ),
        properties,
        items,
        additional_properties,
    })
}

/// Compile the rules written on one node whose CEL type is `decl`.
pub fn compile_node_rules(s: &Structural, decl: &Arc<Decl>) -> Vec<CompiledRule> {
    let cardinality = max_cardinality(decl.min_serialized_size);
    s.x_validations
        .iter()
        .map(|r| compile_rule(s, r, decl, cardinality))
        .collect()
}

/// kube's `maxCardinality`: how many values of this minimum size fit in a request.
fn max_cardinality(min_size: i64) -> u64 {
    let sz = min_size + 1;
    (types::MAX_REQUEST_SIZE_BYTES / sz.max(1)) as u64
}

fn compile_rule(
    s: &Structural,
    rule: &ValidationRule,
    decl: &Arc<Decl>,
    cardinality: u64,
) -> CompiledRule {
    let mut out = CompiledRule {
        rule: rule.clone(),
        program: None,
        error: None,
        uses_old_self: false,
        message_expression: None,
        message_expression_error: None,
        field_path: None,
        max_cost: 0,
        message_expression_max_cost: 0,
        max_cardinality: 0,
    };
    if rule.rule.trim().is_empty() {
        return out;
    }
    let optional_old_self = rule.optional_old_self == Some(true);
    let env = check::RuleEnv::new(decl.clone(), optional_old_self);
    match check::compile(&rule.rule, &env, check::Want::Bool) {
        Err(e) => {
            out.error = Some(e.to_string());
            return out;
        }
        Ok(checked) => {
            out.uses_old_self = checked.uses_old_self;
            out.max_cost = super::cost::estimate(&checked, &env);
            out.max_cardinality = cardinality;
            out.program = Some(checked);
        }
    }
    if let Some(expr) = rule.message_expression.as_deref().filter(|m| !m.is_empty()) {
        match check::compile(expr, &env, check::Want::String) {
            Err(e) => {
                out.message_expression_error = Some(match e {
                    check::CompileError::Failed(issues) => {
                        format!("messageExpression compilation failed: {issues}")
                    }
                    check::CompileError::NotString => {
                        "messageExpression must evaluate to a string".to_string()
                    }
                    other => other.to_string(),
                });
                return out;
            }
            Ok(checked) => {
                out.message_expression_max_cost = super::cost::estimate(&checked, &env);
                out.message_expression = Some(checked);
            }
        }
    }
    if let Some(fp) = rule.field_path.as_deref().filter(|f| !f.is_empty()) {
        if let Ok(p) = super::fieldpath::valid_field_path(fp, s) {
            out.field_path = Some(p);
        }
    }
    out
}
