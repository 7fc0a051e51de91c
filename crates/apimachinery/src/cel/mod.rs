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
pub mod limits;
pub mod macros;
pub mod types;
pub mod value;

pub use check::CompileError;
pub use compile::CompiledRules;
pub use crd::validate_crd_rules;
pub use eval::{validate, Report};

use crate::field::{Error, ErrorList, ErrorType, Path};
use serde_json::Value;

/// Stack kept free for a recursive CEL walk before it goes deeper.
const RED_ZONE: usize = 256 * 1024;

/// Stack given to a CEL walk that reached the red zone.
const STACK_SEGMENT: usize = 8 * 1024 * 1024;

/// Run `f` with at least [`RED_ZONE`] of stack, on a new segment if this thread's is
/// nearly used up. Every recursive walk over an expression or a value goes through
/// this once per level, so no expression or object within the limits can overflow
/// the stack, whatever thread runs it.
pub fn with_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, STACK_SEGMENT, f)
}

/// Stack the parser needs at cel-go's deepest nesting (ANTLR's prediction and parse
/// tree recurse several frames per level; measured in debug builds with margin).
const PARSER_STACK: usize = 64 * 1024 * 1024;

/// Run the parser with [`PARSER_STACK`] of stack: on a segment of its own unless this
/// thread still has that much. Parsing happens when a CRD, policy or webhook
/// configuration is written or loaded, never per object.
pub fn with_parser_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(PARSER_STACK / 2, PARSER_STACK, f)
}

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
