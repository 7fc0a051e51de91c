//! Content negotiation: what a client accepts (`Accept`) and what it sent (`Content-Type`).

/// The representation a response should take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// Plain JSON.
    Json,
    /// YAML (`application/yaml`).
    Yaml,
    /// `meta.k8s.io` Table (the `v` parameter: `v1` or `v1beta1`).
    Table(MetaVersion),
    /// `PartialObjectMetadata` / `PartialObjectMetadataList` (`true`: the list form
    /// was asked for; kube refuses the form that does not fit the answer).
    PartialMetadata(MetaVersion, bool),
    /// Aggregated discovery `APIGroupDiscoveryList` (`v2` or `v2beta1`).
    AggregatedDiscovery(DiscoveryVersion),
    /// `application/vnd.kubernetes.protobuf` for kinds that have a protobuf message;
    /// `true`: JSON was acceptable too (custom resources fall back to it, as kube).
    Protobuf(bool),
}

/// `meta.k8s.io` version of a Table / PartialObjectMetadata.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaVersion {
    /// meta.k8s.io/v1
    V1,
    /// meta.k8s.io/v1beta1
    V1Beta1,
}

impl MetaVersion {
    /// `apiVersion` string.
    pub fn api_version(self) -> &'static str {
        match self {
            MetaVersion::V1 => "meta.k8s.io/v1",
            MetaVersion::V1Beta1 => "meta.k8s.io/v1beta1",
        }
    }
}

/// `apidiscovery.k8s.io` version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiscoveryVersion {
    /// apidiscovery.k8s.io/v2
    V2,
    /// apidiscovery.k8s.io/v2beta1
    V2Beta1,
}

/// A parsed media type with its parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MediaType {
    /// `type/subtype`, lowercased.
    pub essence: String,
    /// Parameters, names lowercased.
    pub params: Vec<(String, String)>,
}

impl MediaType {
    /// Parse one media type (`application/json;as=Table;v=v1;g=meta.k8s.io`).
    pub fn parse(s: &str) -> MediaType {
        let mut it = s.split(';');
        let essence = it.next().unwrap_or("").trim().to_ascii_lowercase();
        let params = it
            .filter_map(|p| {
                let (k, v) = p.split_once('=')?;
                Some((
                    k.trim().to_ascii_lowercase(),
                    v.trim().trim_matches('"').to_string(),
                ))
            })
            .collect();
        MediaType { essence, params }
    }

    /// A parameter's value.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What a request may get: chosen from its `Accept` header, in the client's order.
/// `aggregated_ok`: the path serves aggregated discovery; `table_ok`: the path serves
/// tables/partial metadata (resource reads).
pub fn choose_output(accept: Option<&str>, aggregated_ok: bool, table_ok: bool) -> Option<Output> {
    let accept = match accept {
        None => return Some(Output::Json),
        Some(a) if a.trim().is_empty() => return Some(Output::Json),
        // What most clients send, answered without parsing.
        Some("application/json" | "*/*") => return Some(Output::Json),
        Some(a) => a,
    };
    let mut protobuf = false;
    for part in accept.split(',') {
        let mt = MediaType::parse(part);
        let as_ = mt.param("as");
        let json_alternative = |o: Output| {
            if protobuf && o == Output::Json {
                Output::Protobuf(true)
            } else {
                o
            }
        };
        match mt.essence.as_str() {
            crate::codec::protobuf::MEDIA_TYPE if as_.is_none() => protobuf = true,
            "application/json" | "application/*" | "*/*" | "application/json;stream=watch" => {
                match as_ {
                    None => return Some(json_alternative(Output::Json)),
                    Some("Table") if table_ok && mt.param("g") == Some("meta.k8s.io") => {
                        match mt.param("v") {
                            Some("v1") => return Some(Output::Table(MetaVersion::V1)),
                            Some("v1beta1") => return Some(Output::Table(MetaVersion::V1Beta1)),
                            _ => {}
                        }
                    }
                    Some(form @ ("PartialObjectMetadata" | "PartialObjectMetadataList"))
                        if table_ok && mt.param("g") == Some("meta.k8s.io") =>
                    {
                        let list = form == "PartialObjectMetadataList";
                        match mt.param("v") {
                            Some("v1") => {
                                return Some(Output::PartialMetadata(MetaVersion::V1, list))
                            }
                            Some("v1beta1") => {
                                return Some(Output::PartialMetadata(MetaVersion::V1Beta1, list))
                            }
                            _ => {}
                        }
                    }
                    Some("APIGroupDiscoveryList")
                        if aggregated_ok && mt.param("g") == Some("apidiscovery.k8s.io") =>
                    {
                        match mt.param("v") {
                            Some("v2") => {
                                return Some(Output::AggregatedDiscovery(DiscoveryVersion::V2))
                            }
                            Some("v2beta1") => {
                                return Some(Output::AggregatedDiscovery(DiscoveryVersion::V2Beta1))
                            }
                            _ => {}
                        }
                    }
                    _ => {}
                }
            }
            "application/yaml" if as_.is_none() => return Some(Output::Yaml),
            _ => {}
        }
    }
    protobuf.then_some(Output::Protobuf(false))
}

/// The kube message for a 406.
pub const NOT_ACCEPTABLE: &str =
    "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// How a request body is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyType {
    /// `application/json` (also the default when absent).
    Json,
    /// `application/yaml`.
    Yaml,
    /// `application/json-patch+json` (RFC 6902).
    JsonPatch,
    /// `application/merge-patch+json` (RFC 7386).
    MergePatch,
    /// `application/strategic-merge-patch+json` (not for custom resources).
    StrategicMergePatch,
    /// `application/apply-patch+yaml` (server-side apply; JSON is valid YAML).
    ApplyPatch,
    /// `application/vnd.kubernetes.protobuf` (built-in kinds only).
    Protobuf,
    /// Anything else.
    Other,
}

/// Classify a `Content-Type` header.
pub fn body_type(content_type: Option<&str>) -> BodyType {
    let Some(ct) = content_type else {
        return BodyType::Json;
    };
    match MediaType::parse(ct).essence.as_str() {
        "" | "application/json" => BodyType::Json,
        "application/yaml" => BodyType::Yaml,
        "application/json-patch+json" => BodyType::JsonPatch,
        "application/merge-patch+json" => BodyType::MergePatch,
        "application/strategic-merge-patch+json" => BodyType::StrategicMergePatch,
        "application/apply-patch+yaml" | "application/apply-patch+json" => BodyType::ApplyPatch,
        "application/vnd.kubernetes.protobuf" => BodyType::Protobuf,
        _ => BodyType::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_get_asks_for_tables() {
        let a = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(
            choose_output(Some(a), false, true),
            Some(Output::Table(MetaVersion::V1))
        );
        // Non-resource paths fall back to JSON.
        assert_eq!(choose_output(Some(a), false, false), Some(Output::Json));
    }

    #[test]
    fn kubectl_discovery_asks_for_aggregated_v2() {
        let a = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(
            choose_output(Some(a), true, false),
            Some(Output::AggregatedDiscovery(DiscoveryVersion::V2))
        );
        assert_eq!(choose_output(Some(a), false, false), Some(Output::Json));
    }

    #[test]
    fn protobuf_first_with_a_json_fallback() {
        assert_eq!(
            choose_output(Some("application/vnd.kubernetes.protobuf"), false, true),
            Some(Output::Protobuf(false))
        );
        assert_eq!(
            choose_output(
                Some("application/vnd.kubernetes.protobuf, application/json"),
                false,
                true
            ),
            Some(Output::Protobuf(true))
        );
        assert_eq!(
            choose_output(
                Some("application/json, application/vnd.kubernetes.protobuf"),
                false,
                true
            ),
            Some(Output::Json)
        );
        assert_eq!(
            choose_output(Some("application/yaml"), false, true),
            Some(Output::Yaml)
        );
    }

    #[test]
    fn body_types() {
        assert_eq!(
            body_type(Some("application/merge-patch+json; charset=utf-8")),
            BodyType::MergePatch
        );
        assert_eq!(body_type(None), BodyType::Json);
        assert_eq!(body_type(Some("text/plain")), BodyType::Other);
    }
}
