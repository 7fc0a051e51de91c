//! CEL validation rules (`x-kubernetes-validations`) as kube-apiserver runs them.
//!
//! - [`CompiledRules::compile`]: once per CRD version (in `registry::catalog`), every
//!   rule is parsed, type-checked against the schema and cost-estimated.
//! - [`validate`]: per request, the rules run at the nodes they sit on (`self`,
//!   `oldSelf`, correlation of old and new values, ratcheting, cost limits).
//! - [`validate_crd_rules`]: at CRD create/update, kube's checks of the rules
//!   themselves (compile errors, cost budget, `oldSelf` where it can't correlate).
//!
//! The `cel` crate provides the parser (and AST); the type checker ([`check`]), cost
//! model ([`cost`]), interpreter ([`interp`]) and kube's libraries ([`library`],
//! [`kubelib`]) are ours, written to cel-go's and kube's behaviour and messages.

pub mod admission;
pub mod check;
pub mod compile;
pub mod cost;
pub mod crd;
pub mod decls;
pub mod eval;
pub mod fieldpath;
pub mod format;
pub mod interp;
pub mod kubelib;
pub mod library;
pub mod macros;
pub mod types;
pub mod value;

pub use compile::CompiledRules;
pub use crd::validate_crd_rules;
pub use eval::{validate, Report};

use crate::field::{Error, ErrorList, ErrorType, Path};
use serde_json::Value;

/// kube's `hasBlockingErr`: schema errors that stop CEL rules from running, and the
/// error reported instead of running them.
pub fn blocking_error(errs: &ErrorList) -> Option<Error> {
    errs.iter()
        .any(|e| {
            matches!(
                e.kind,
                ErrorType::NotSupported
                    | ErrorType::Required
                    | ErrorType::TooLong
                    | ErrorType::TooMany
                    | ErrorType::TypeInvalid
            )
        })
        .then(|| {
            // kube passes a nil value, which current kube prints as bare `null`.
            Error::invalid(
                &Path::new("<nil>"),
                Value::Null,
                "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            )
        })
}

#[cfg(test)]
mod tests;
