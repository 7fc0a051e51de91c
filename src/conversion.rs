//! Conversion webhooks: the `ConversionReview`s of CRDs with strategy `Webhook`,
//! posted to the CRD's webhook (`crate::webhook::client`), with failures answered
//! as kube answers them (500, no reason, message `conversion webhook for
//! <group>/<version>, Kind=<Kind> failed: ...`). What is sent and how the answer is
//! checked is `apimachinery::crd::conversion`'s; strategy `None` is done there too.

pub use apimachinery::crd::conversion::*;

use crate::webhook::client::{post_json, post_json_with, ServiceResolver};
use apimachinery::crd::compiled::CompiledCrd;
use apimachinery::pipeline::decode::is_foreign_kind;
use apimachinery::pipeline::VersionSchema;
use apimachinery::schema::default;
use apimachinery::status::Status;
use serde_json::Value;
use std::time::Duration;

/// How long a conversion webhook may take. kube sets no deadline of its own (its dialer
/// gives up after 30s and the request timeout ends the rest); 30s bounds both here.
pub const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// [`to_storage`] for a CRD with strategy `Webhook`: the webhook converts the object
/// to the storage version (unless it is in it already), which then prunes it.
pub async fn to_storage_by_webhook(
    crd: &CompiledCrd,
    services: Option<&ServiceResolver>,
    obj: &mut Value,
) -> Result<(), Status> {
    let Some(storage) = crd.versions.iter().find(|v| v.storage) else {
        return Ok(());
    };
    let s = &storage.schema();
    convert_by_webhook(crd, services, std::slice::from_mut(obj), &s.version).await?;
    coerce(obj, s);
    Ok(())
}

/// [`to_served`] for a CRD with strategy `Webhook`, for the stored objects of one read:
/// each pruned and defaulted by the schema it was stored in, then the ones not in
/// `target`'s version converted by the webhook in one review and pruned by `target`.
pub async fn to_served_by_webhook(
    crd: &CompiledCrd,
    services: Option<&ServiceResolver>,
    target: &VersionSchema,
    objs: &mut [Value],
) -> Result<(), Status> {
    for obj in objs.iter_mut() {
        if let Some(stored) = version_schema(crd, object_version(obj)) {
            coerce(obj, &stored);
            if !is_foreign_kind(obj, &stored) {
                default::apply_defaults(obj, &stored.structural);
            }
        }
    }
    let converted = convert_by_webhook(crd, services, objs, &target.version).await?;
    for i in converted {
        if let Some(obj) = objs.get_mut(i) {
            coerce(obj, target);
        }
    }
    Ok(())
}

/// kube's answer to a failed conversion: an error that is no API status, which kube
/// serves as a 500 with no reason and the error as the message.
fn conversion_failure(message: String) -> Status {
    Status {
        code: 500,
        reason: String::new(),
        message,
        details: None,
        metadata_continue: None,
        warnings: Vec::new(),
    }
}

/// Convert `objs` to `version` through the CRD's webhook (kube's `webhookConverter`):
/// objects already in it are not sent, nor is an object with nothing but `apiVersion`
/// and `kind`. Returns the indices of the objects converted.
async fn convert_by_webhook(
    crd: &CompiledCrd,
    services: Option<&ServiceResolver>,
    objs: &mut [Value],
    version: &str,
) -> Result<Vec<usize>, Status> {
    let desired = format!("{}/{version}", crd.info.group);
    let pending: Vec<usize> = objs
        .iter()
        .enumerate()
        .filter(|(_, o)| o.get("apiVersion").and_then(Value::as_str) != Some(desired.as_str()))
        .map(|(i, _)| i)
        .collect();
    let Some(&first) = pending.first() else {
        return Ok(pending);
    };
    if let [only] = objs {
        if is_empty_object(only) {
            set_version(only, &crd.info.group, version);
            return Ok(pending);
        }
    }
    let gvk = gvk_string(&objs[first]);
    let webhook = crd.object.pointer("/spec/conversion/webhook");
    let review_versions: Vec<String> = webhook
        .and_then(|w| w.get("conversionReviewVersions"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    let client_config = webhook
        .and_then(|w| w.get("clientConfig"))
        .unwrap_or(&Value::Null);
    let uid = uuid::Uuid::new_v4().to_string();
    let objects = pending.iter().map(|&i| objs[i].clone()).collect();
    let review = webhook_review(objects, &desired, &uid, &review_versions)
        .map_err(|e| conversion_failure(e.to_string()))?;
    let review_version = if review["apiVersion"] == "apiextensions.k8s.io/v1beta1" {
        "v1beta1"
    } else {
        "v1"
    };
    // A failed call and an unusable answer read alike (kube's message for both).
    let failed = |e: &dyn std::fmt::Display| {
        conversion_failure(format!("conversion webhook for {gvk} failed: {e}"))
    };
    let answer = match services {
        Some(services) => post_json_with(client_config, WEBHOOK_TIMEOUT, &review, services).await,
        None => post_json(client_config, WEBHOOK_TIMEOUT, &review).await,
    }
    .map_err(|e| failed(&e))?;
    let converted =
        webhook_converted_objects(review_version, &uid, answer).map_err(|e| failed(&e))?;
    if converted.len() != pending.len() {
        return Err(conversion_failure(format!(
            "conversion webhook for {gvk} returned {} objects, expected {}",
            converted.len(),
            pending.len()
        )));
    }
    for (&i, converted) in pending.iter().zip(converted) {
        let accepted = webhook_accept_converted(&objs[i], converted, &desired)
            .map_err(|e| conversion_failure(e.message(&gvk)))?;
        objs[i] = accepted;
    }
    Ok(pending)
}
