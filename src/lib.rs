//! crd-apiserver: a kube-apiserver for CustomResourceDefinitions and custom resources.
//!
//! Start one in-process with [`Server::start`], or run the `crd-apiserver` binary; for
//! integration tests, `harness::TestServer` (feature `harness`, on by default).
//! See `ARCHITECTURE.md` for the map of modules.

pub mod admission;
pub mod apiserver;
pub mod apply;
pub mod auth;
pub mod cel;
pub mod cleanup;
pub mod codec;
pub mod conversion;
pub mod fault;
pub mod field;
pub mod goformat;
pub mod handlers;
#[cfg(feature = "harness")]
pub mod harness;
pub mod http;
pub mod metrics;
pub mod pipeline;
pub mod protobuf;
pub mod registry;
pub mod rest;
pub mod schema;
pub mod selector;
pub mod server;
pub mod status;
pub mod storage;
pub mod table;
pub mod tls;

pub use server::{Config, Server, StartError};
