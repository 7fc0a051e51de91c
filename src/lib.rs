//! crd-apiserver: a kube-apiserver for CustomResourceDefinitions and custom resources.
//!
//! Start one in-process with [`Server::start`], or run the `crd-apiserver` binary; for
//! integration tests, `harness::TestServer` (feature `harness`, on by default).
//! See `ARCHITECTURE.md` for the map of modules.

pub mod admission;
pub mod aggregator;
pub mod apiserver;
pub mod auth;
pub mod cluster;
pub mod controllers;
pub mod conversion;
pub mod fault;
pub mod handlers;
#[cfg(feature = "harness")]
pub mod harness;
pub mod http;
pub mod metrics;
pub mod registry;
pub mod remote;
pub mod rest;
pub mod server;
pub mod snapshots;
pub mod storage;
pub mod tls;
pub mod webhook;

pub use server::{Config, Server, StartError};

// The pure layer, under the paths the server has always used for it.
pub use apimachinery::{
    access, apply, cel, codec, duration, field, goformat, object, pipeline, schema, selector,
    service_alloc, status, table, typed, user, write,
};
