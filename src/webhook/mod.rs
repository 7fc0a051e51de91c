//! Calling webhooks: the HTTPS client that admission webhooks and CRD conversion
//! webhooks share ([`client`]), and the Go-compatible verification of their serving
//! certificates ([`certificate`]). What is posted and how answers are read belongs to
//! the callers (`admission::webhook`, `conversion`).

pub mod certificate;
pub mod client;
