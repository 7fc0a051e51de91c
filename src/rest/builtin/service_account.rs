//! core/v1 ServiceAccounts (`pkg/registry/core/serviceaccount`, `ValidateServiceAccount`).

use super::{age_cell, object_meta_errors, object_meta_update_errors};
use crate::field::ErrorList;
use crate::rest::typed::TypedStrategy;
use crate::table::{BuiltinColumn, BuiltinPrinter};
use serde_json::{json, Value};

/// The `serviceaccounts` strategy.
pub struct ServiceAccountStrategy;

impl TypedStrategy for ServiceAccountStrategy {
    fn validate(&self, obj: &Value) -> ErrorList {
        object_meta_errors(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> ErrorList {
        let mut errs = object_meta_update_errors(new, old);
        errs.extend(self.validate(new));
        errs
    }

    fn printer(&self) -> BuiltinPrinter {
        BuiltinPrinter {
            columns: vec![BuiltinColumn::name(0), BuiltinColumn::age()],
            cells: |obj, now| vec![json!(crate::rest::object::name(obj)), age_cell(obj, now)],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_account_names_are_dns_subdomains() {
        let sa = json!({"metadata": {"name": "Bad_Name", "namespace": "default"}});
        let errs = ServiceAccountStrategy.validate(&sa);
        assert_eq!(errs.len(), 1);
        assert!(errs[0].to_string().starts_with(
            "metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"
        ));
    }
}
