//! CRD-facing logic: CRD defaulting, validation and status (`crd`), the live compiled
//! set of CRDs (`catalog`) and the process-wide cache it compiles through
//! (`crd_cache`), and the discovery (`discovery`) and OpenAPI (`openapi`)
//! documents derived from the CRDs. `crd`, `discovery` and `openapi` are pure functions
//! over `serde_json::Value`: they never touch HTTP or storage.

pub mod builtin;
pub mod catalog;
pub mod content_cache;
pub mod crd_cache;
pub use apimachinery::crd;
pub mod discovery;
pub mod openapi;
pub mod openapi_v2_proto;
