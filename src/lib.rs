//! crd-apiserver: a kube-apiserver for CustomResourceDefinitions and custom resources.

pub mod field;
pub mod schema;
pub mod status;
