//! Webhook `matchConditions`: CEL expressions a request must satisfy for a webhook
//! to be called (kube's `admission/plugin/webhook/matchconditions`), and their checks
//! when a configuration is written (`admissionregistration/validation`).
//!
//! Conditions run after rules and selectors matched, in the admission CEL environment
//! (`crate::cel::admission`: `object`, `oldObject`, `request`, `namespaceObject`
//! (always `null` for webhooks, as kube passes no namespace), `authorizer` and
//! `authorizer.requestResource`). Any `false` skips the webhook; otherwise an evaluation error is decided
//! by `failurePolicy`: `Fail` rejects the request (403), `Ignore` skips the webhook.

use super::Attributes;
use crate::cel::admission::{compile, Activation, AdmissionEnv, AuthzContext, Program, ReturnType};
use crate::cel::CompileError;
use crate::field::{Error, ErrorList, Path};
use crate::status::Status;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// kube's maximum number of match conditions of one webhook.
pub const MAX_MATCH_CONDITIONS: usize = 64;

/// Compiled conditions by expression (compiled once, not per request).
#[derive(Default)]
pub struct ProgramCache(Mutex<HashMap<String, Arc<Result<Program, CompileError>>>>);

impl ProgramCache {
    fn get(&self, expression: &str) -> Arc<Result<Program, CompileError>> {
        if let Ok(cache) = self.0.lock() {
            if let Some(p) = cache.get(expression) {
                return p.clone();
            }
        }
        let compiled = Arc::new(compile(
            expression,
            &AdmissionEnv::new(false).authorizer(true),
            ReturnType::Bool,
        ));
        if let Ok(mut cache) = self.0.lock() {
            // Expressions of deleted configurations would pile up: start afresh now and then.
            if cache.len() >= 4096 {
                cache.clear();
            }
            cache.insert(expression.to_string(), compiled.clone());
        }
        compiled
    }
}

/// What the conditions of one webhook decided.
#[derive(Debug)]
pub enum Decision {
    /// Every condition is true (or there are none): call the webhook.
    Call,
    /// A condition is false, or one failed under `failurePolicy: Ignore`.
    Skip,
    /// A condition failed under `failurePolicy: Fail`: the request is rejected.
    Reject(Status),
}

/// Evaluate `hook`'s `matchConditions` for this request.
pub fn decide(
    hook: &Value,
    attrs: &Attributes<'_>,
    obj: &Value,
    old: Option<&Value>,
    programs: &ProgramCache,
    authz: Option<&AuthzContext>,
) -> Decision {
    let Some(conditions) = hook
        .get("matchConditions")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
    else {
        return Decision::Call;
    };
    let request = super::policy::admission_request(attrs, obj, old);
    let act = Activation::new(&request)
        .object((!obj.is_null()).then_some(obj))
        .old_object(old)
        .authorizer(authz);
    let mut errors: Vec<String> = Vec::new();
    for condition in conditions {
        let expression = condition
            .get("expression")
            .and_then(Value::as_str)
            .unwrap_or("");
        let outcome = match programs.get(expression.trim()).as_ref() {
            Ok(program) => program
                .eval_bool(&act)
                .result
                .map_err(|e| format!("expression '{expression}' resulted in error: {e}")),
            Err(e) => Err(format!("compilation error: {e}")),
        };
        match outcome {
            // Any false condition skips the webhook, whatever else failed.
            Ok(false) => return Decision::Skip,
            Ok(true) => {}
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        return Decision::Call;
    }
    let name = hook.get("name").and_then(Value::as_str).unwrap_or("");
    let message = aggregate(&errors);
    if hook.get("failurePolicy").and_then(Value::as_str) == Some("Ignore") {
        tracing::warn!(webhook = %name, error = %message, "Failed evaluating match conditions, failing open");
        return Decision::Skip;
    }
    tracing::warn!(webhook = %name, error = %message, "Failed evaluating match conditions, failing closed");
    Decision::Reject(forbidden(attrs, attrs.name(obj, old), &message))
}

/// Go's `utilerrors.NewAggregate(...).Error()`: one message alone, several (duplicates
/// dropped) as `[a, b]`.
fn aggregate(errors: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in errors {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    match seen.as_slice() {
        [one] => (*one).to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// kube's `NewForbidden` for the request's resource (no name: `<resource> is forbidden`).
fn forbidden(attrs: &Attributes<'_>, name: &str, message: &str) -> Status {
    let gr = &attrs.descriptor.gr;
    let mut status = Status::forbidden(gr, name, message);
    if name.is_empty() {
        status.message = format!("{gr} is forbidden: {message}");
    }
    status
}

/// kube's checks of a webhook's `matchConditions` at `path`: at most 64, each with a
/// qualified, unique `name` and an `expression` that compiles to `bool`.
pub fn validate(conditions: Option<&Value>, path: &Path) -> ErrorList {
    let mut errs = ErrorList::new();
    let Some(conditions) = conditions.and_then(Value::as_array) else {
        return errs;
    };
    if conditions.len() > MAX_MATCH_CONDITIONS {
        errs.push(Error::too_many(
            path,
            conditions.len() as i64,
            MAX_MATCH_CONDITIONS as i64,
        ));
    }
    let env = AdmissionEnv::new(false).authorizer(true);
    let mut names = std::collections::HashSet::new();
    for (i, condition) in conditions.iter().enumerate() {
        let path = path.index(i);
        let expression = condition
            .get("expression")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim();
        if expression.is_empty() {
            errs.push(Error::required(&path.child("expression"), ""));
        } else if let Err(e) = compile(expression, &env, ReturnType::Bool) {
            errs.push(Error::invalid(
                &path.child("expression"),
                json!(expression),
                e.to_string(),
            ));
        }
        let name = condition.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            errs.push(Error::required(&path.child("name"), ""));
        } else {
            for msg in crate::schema::objectmeta::is_qualified_name(name) {
                errs.push(Error::invalid(&path.child("name"), json!(name), msg));
            }
            if !names.insert(name) {
                errs.push(Error::duplicate(&path.child("name"), json!(name)));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::{Operation, WriteOptions};

    use crate::admission::widgets_descriptor as widgets;

    fn hook(policy: &str, expressions: &[&str]) -> Value {
        let conditions: Vec<Value> = expressions
            .iter()
            .enumerate()
            .map(|(i, e)| json!({"name": format!("c{i}"), "expression": e}))
            .collect();
        json!({"name": "h.example.com", "failurePolicy": policy, "matchConditions": conditions})
    }

    #[test]
    fn false_skips_errors_follow_the_failure_policy() {
        let d = widgets();
        let opts = WriteOptions::default();
        let attrs = Attributes::new(&d, Operation::Create, &opts);
        let obj = json!({"metadata": {"name": "w", "namespace": "ns"}, "spec": {"x": 1}});
        let programs = ProgramCache::default();
        let run = |h: &Value| decide(h, &attrs, &obj, None, &programs, None);
        assert!(matches!(
            run(&hook(
                "Fail",
                &["object.spec.x == 1", "request.operation == 'CREATE'"]
            )),
            Decision::Call
        ));
        assert!(matches!(
            run(&hook("Fail", &["object.spec.x == 2"])),
            Decision::Skip
        ));
        // A false condition wins over an error.
        assert!(matches!(
            run(&hook("Fail", &["object.spec.y == 1", "false"])),
            Decision::Skip
        ));
        assert!(matches!(
            run(&hook("Ignore", &["object.spec.y == 1"])),
            Decision::Skip
        ));
        let Decision::Reject(s) = run(&hook("Fail", &["object.spec.y == 1", "true"])) else {
            panic!("expected a rejection");
        };
        assert_eq!(s.code, 403);
        assert_eq!(
            s.message,
            "widgets.example.com \"w\" is forbidden: expression 'object.spec.y == 1' resulted in error: no such key: y"
        );
        // `oldObject` is null on a create.
        assert!(matches!(
            run(&hook("Fail", &["oldObject == null"])),
            Decision::Call
        ));
    }

    #[test]
    fn several_errors_aggregate_as_go() {
        assert_eq!(aggregate(&["a".into()]), "a");
        assert_eq!(aggregate(&["a".into(), "b".into(), "a".into()]), "[a, b]");
    }

    #[test]
    fn match_conditions_are_validated_as_kube() {
        let path = Path::new("webhooks").index(0).child("matchConditions");
        let conditions = json!([
            {"name": "", "expression": " "},
            {"name": "bad name!", "expression": "object.x"},
            {"name": "ok", "expression": "undefined == 1"},
            {"name": "ok", "expression": "true"}
        ]);
        let errs = validate(Some(&conditions), &path);
        let texts: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        assert_eq!(texts.len(), 6, "{texts:#?}");
        assert_eq!(
            texts[0],
            "webhooks[0].matchConditions[0].expression: Required value"
        );
        assert_eq!(
            texts[1],
            "webhooks[0].matchConditions[0].name: Required value"
        );
        assert_eq!(
            texts[2],
            "webhooks[0].matchConditions[1].expression: Invalid value: \"object.x\": must evaluate to bool but got dyn"
        );
        assert!(texts[3].starts_with("webhooks[0].matchConditions[1].name: Invalid value: \"bad name!\": name part must consist of alphanumeric characters"), "{}", texts[3]);
        assert!(texts[4].starts_with("webhooks[0].matchConditions[2].expression: Invalid value: \"undefined == 1\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'undefined'"), "{}", texts[4]);
        assert_eq!(
            texts[5],
            "webhooks[0].matchConditions[3].name: Duplicate value: \"ok\""
        );
        let many: Vec<Value> = (0..65)
            .map(|i| json!({"name": format!("c{i}"), "expression": "true"}))
            .collect();
        let errs = validate(Some(&json!(many)), &path);
        assert_eq!(
            errs.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
            vec![
                "webhooks[0].matchConditions: Too many: 65: must have at most 64 items".to_string()
            ]
        );
    }
}
