//! Resources answered by their handlers, never written through the store (access,
//! rules, token and self-subject reviews; component statuses): served (discovery,
//! OpenAPI, routing, Tables) but refused by the write pipeline at once.

use super::{Descriptor, ResourceKind, Strategy, WriteOptions};
use crate::field::ErrorList;
use crate::pipeline::trace::Trace;
use crate::status::Status;
use crate::table::BuiltinPrinter;
use serde_json::Value;

/// A resource answered, never stored.
pub struct AnsweredKind {
    descriptor: Descriptor,
    printer: Option<BuiltinPrinter>,
}

impl AnsweredKind {
    /// The kind of `resource` in `group` (its descriptor from `registry::builtin`).
    pub fn new(group: &str, resource: &str, prefix: &str) -> Self {
        AnsweredKind {
            descriptor: crate::registry::builtin::descriptor(group, resource, prefix),
            printer: None,
        }
    }

    /// With kube's Table printer of its objects (kinds that are read: component statuses).
    pub fn with_printer(mut self, printer: BuiltinPrinter) -> Self {
        self.printer = Some(printer);
        self
    }
}

fn not_stored() -> Status {
    Status::method_not_allowed("the server does not allow this method on the requested resource")
}

impl ResourceKind for AnsweredKind {
    fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    fn strategy(&self) -> &dyn Strategy {
        self
    }
}

/// Never written through the store: every write is refused while decoding.
impl Strategy for AnsweredKind {
    fn decode(
        &self,
        _: &mut Value,
        _: Option<&Value>,
        _: &WriteOptions,
        _: &mut Trace,
    ) -> Result<Vec<String>, Status> {
        Err(not_stored())
    }

    fn has_generation(&self) -> bool {
        false
    }

    fn validate(&self, _: &Value, _: &mut Vec<String>, _: &mut Trace) -> ErrorList {
        ErrorList::new()
    }

    fn validate_update(
        &self,
        _: &Value,
        _: &Value,
        _: &WriteOptions,
        _: &mut Vec<String>,
        _: &mut Trace,
    ) -> Result<ErrorList, Status> {
        Err(not_stored())
    }

    fn invalid(&self, _: &Value, _: &[crate::field::Error]) -> Status {
        not_stored()
    }

    fn builtin_printer(&self) -> Option<&BuiltinPrinter> {
        self.printer.as_ref()
    }

    fn field_value(
        &self,
        obj: &Value,
        field: &str,
    ) -> Result<Option<String>, crate::selector::SelectorError> {
        // None of these kinds has field labels of its own.
        crate::rest::typed::default_field_value(obj, field)
    }
}
