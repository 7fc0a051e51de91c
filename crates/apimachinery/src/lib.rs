//! kube-apiserver's semantics of a write, without IO: the structural schema and its
//! algorithms (prune, default, validate, formats, list types, ObjectMeta, immutability,
//! property names), CEL, server-side apply, CRDs (validation, compilation, conversion
//! without webhooks), kube's typed decoding of built-in kinds, and the pipeline's pure
//! stages, with kube's field errors and `Status`.
//!
//! Nothing here reads the network, the disk or a clock beyond `now()`: the server
//! crate runs these functions in order and does the IO (admission webhooks, storage).

pub mod access;
pub mod admission_plugins;
pub mod apiservice;
pub mod apply;
pub mod builtin_conversion;
pub mod builtin_defaults;
pub mod builtin_fields;
pub mod builtin_validation;
pub mod cel;
pub mod codec;
pub mod command_line;
pub mod component_status;
pub mod controller_names;
pub mod crd;
pub mod cron;
pub mod duration;
pub mod feature_gates;
pub mod field;
pub mod goformat;
pub mod kube_discovery;
pub mod kube_openapi;
pub mod number;
pub mod object;
pub mod pipeline;
pub mod printers;
pub mod runtime_config;
pub mod schema;
pub mod selector;
pub mod service_alloc;
pub mod status;
pub mod table;
pub mod typed;
pub mod user;
pub mod write;
