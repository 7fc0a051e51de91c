//! The checks of `spec.conversion`: the strategy, the webhook's client config (URL or
//! service) and `conversionReviewVersions`.

use super::validate_enum;
use super::{non_null, str_of, strings};
use crate::field::{Error, ErrorList, Path};
use crate::schema::objectmeta;
use serde_json::{json, Value};
use std::collections::BTreeSet;

const ACCEPTED_CONVERSION_REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];

pub(super) fn validate_conversion(conversion: Option<&Value>, fld: &Path, errs: &mut ErrorList) {
    let Some(conv) = conversion else {
        return;
    };
    let strategy = str_of(conv.get("strategy"));
    validate_enum(errs, &fld.child("strategy"), strategy, &["None", "Webhook"]);
    // Internal field names: `webhookClientConfig`, `conversionReviewVersions`.
    let client_config = conv
        .pointer("/webhook/clientConfig")
        .filter(|c| !c.is_null());
    let review_versions = conv.pointer("/webhook/conversionReviewVersions");
    let cc_path = fld.child("webhookClientConfig");
    if strategy == "Webhook" {
        match client_config {
            None => errs.push(Error::required(
                &cc_path,
                "required when strategy is set to Webhook",
            )),
            Some(cc) => validate_webhook_client_config(cc, &cc_path, errs),
        }
        let rv_path = fld.child("conversionReviewVersions");
        let versions = strings(review_versions);
        if versions.is_empty() {
            errs.push(Error::required(&rv_path, ""));
        } else {
            let mut seen = BTreeSet::new();
            let mut accepted = false;
            for (i, v) in versions.iter().enumerate() {
                if !seen.insert(v.clone()) {
                    errs.push(Error::invalid(
                        &rv_path.index(i),
                        json!(v),
                        "duplicate version",
                    ));
                    continue;
                }
                for msg in objectmeta::is_dns1035_label(v) {
                    errs.push(Error::invalid(&rv_path.index(i), json!(v), msg));
                }
                accepted |= ACCEPTED_CONVERSION_REVIEW_VERSIONS.contains(&v.as_str());
            }
            if !accepted {
                errs.push(Error::invalid(
                    &rv_path,
                    json!(versions),
                    format!(
                        "must include at least one of {}",
                        ACCEPTED_CONVERSION_REVIEW_VERSIONS.join(", ")
                    ),
                ));
            }
        }
    } else {
        if client_config.is_some() {
            errs.push(Error::forbidden(
                &cc_path,
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !strings(review_versions).is_empty() {
            errs.push(Error::forbidden(
                &fld.child("conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
}

fn validate_webhook_client_config(cc: &Value, fld: &Path, errs: &mut ErrorList) {
    let url = cc.get("url").and_then(Value::as_str);
    let service = non_null(cc.get("service"));
    match (url, service) {
        (Some(_), Some(_)) | (None, None) => errs.push(Error::required(
            fld,
            "exactly one of url or service is required",
        )),
        (Some(url), None) => validate_webhook_url(url, &fld.child("url"), errs),
        (None, Some(svc)) => validate_webhook_service(svc, &fld.child("service"), errs),
    }
}

fn validate_webhook_url(url: &str, fld: &Path, errs: &mut ErrorList) {
    const FORM: &str = "; desired format: https://host[/path]";
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (before_fragment, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let (before_query, query) = before_fragment
        .split_once('?')
        .unwrap_or((before_fragment, ""));
    let authority = if scheme.is_empty() {
        ""
    } else {
        before_query.split('/').next().unwrap_or("")
    };
    let (user, host) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if scheme != "https" {
        errs.push(Error::invalid(
            fld,
            json!(scheme),
            format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if host.is_empty() {
        errs.push(Error::invalid(
            fld,
            json!(host),
            format!("host must be specified{FORM}"),
        ));
    }
    if let Some(user) = user {
        errs.push(Error::invalid(
            fld,
            json!(user),
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        errs.push(Error::invalid(
            fld,
            json!(fragment),
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        errs.push(Error::invalid(
            fld,
            json!(query),
            "query parameters are not permitted in the URL",
        ));
    }
}

fn validate_webhook_service(svc: &Value, fld: &Path, errs: &mut ErrorList) {
    if str_of(svc.get("name")).is_empty() {
        errs.push(Error::required(
            &fld.child("name"),
            "service name is required",
        ));
    }
    if str_of(svc.get("namespace")).is_empty() {
        errs.push(Error::required(
            &fld.child("namespace"),
            "service namespace is required",
        ));
    }
    let port = svc.get("port").and_then(Value::as_i64).unwrap_or(443);
    if !(1..=65535).contains(&port) {
        errs.push(Error::invalid(
            &fld.child("port"),
            json!(port),
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let Some(path) = svc.get("path").and_then(Value::as_str) else {
        return;
    };
    if path == "/" || path.is_empty() {
        return;
    }
    let path_fld = fld.child("path");
    if path == "//" {
        errs.push(Error::invalid(
            &path_fld,
            json!(path),
            "segment[0] may not be empty",
        ));
        return;
    }
    if !path.starts_with('/') {
        errs.push(Error::invalid(
            &path_fld,
            json!(path),
            "must start with a '/'",
        ));
    }
    let trimmed = path.get(1..).unwrap_or("");
    let trimmed = trimmed.strip_suffix('/').unwrap_or(trimmed);
    for (i, step) in trimmed.split('/').enumerate() {
        if step.is_empty() {
            errs.push(Error::invalid(
                &path_fld,
                json!(path),
                format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for failure in objectmeta::is_dns1123_subdomain(step) {
            errs.push(Error::invalid(
                &path_fld,
                json!(path),
                format!("segment[{i}]: {failure}"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::tests::{created, messages, widget_crd};
    use crate::crd::validate_crd;

    #[test]
    fn webhook_conversion_needs_config_and_review_versions() {
        let mut crd = widget_crd();
        crd["spec"]["conversion"] = json!({"strategy": "Webhook"});
        assert_eq!(
            messages(&validate_crd(&created(crd.clone()))),
            vec![
                "spec.conversion.conversionReviewVersions: Required value",
                "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
            ]
        );
        crd["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "http://conv.example.com/x?y=1"}, "conversionReviewVersions": ["v2"]}});
        assert_eq!(
            messages(&validate_crd(&created(crd.clone()))),
            vec![
                "spec.conversion.conversionReviewVersions: Invalid value: [\"v2\"]: must include at least one of v1, v1beta1",
                "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
                "spec.conversion.webhookClientConfig.url: Invalid value: \"y=1\": query parameters are not permitted in the URL",
            ]
        );
        crd["spec"]["conversion"] =
            json!({"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"]}});
        assert_eq!(
            messages(&validate_crd(&created(crd))),
            vec!["spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook"]
        );
    }
}
