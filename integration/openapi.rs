//! The OpenAPI documents over HTTP as kube's kube-openapi handlers serve them: `/openapi/v2`
//! in JSON and in gnostic's protobuf form (checked by decoding it with gnostic's
//! messages, declared here with prost from `openapiv2/OpenAPIv2.proto` of
//! google/gnostic-models, independently of the server's writer), kube-openapi's
//! negotiation and caching headers, and the patch types the v3 documents publish,
//! compared with the documents recorded from kube v1.36 where they exist.

mod common;

use common::TestServer;
use serde_json::{json, Map, Value};
use std::time::Duration;

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const PROTOBUF_ACCEPT: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
const PROTOBUF_CONTENT_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// gnostic's `openapi.v2` messages, as far as kube's Swagger documents use them.
// Shaped as prost-build would generate them (oneofs hold messages by value); decoded
// once per test, so their size does not matter.
#[allow(clippy::large_enum_variant)]
mod gnostic {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Document {
        #[prost(string, tag = "1")]
        pub swagger: String,
        #[prost(message, optional, tag = "2")]
        pub info: Option<Info>,
        #[prost(string, tag = "3")]
        pub host: String,
        #[prost(string, tag = "4")]
        pub base_path: String,
        #[prost(string, repeated, tag = "5")]
        pub schemes: Vec<String>,
        #[prost(string, repeated, tag = "6")]
        pub consumes: Vec<String>,
        #[prost(string, repeated, tag = "7")]
        pub produces: Vec<String>,
        #[prost(message, optional, tag = "8")]
        pub paths: Option<Paths>,
        #[prost(message, optional, tag = "9")]
        pub definitions: Option<Definitions>,
        #[prost(message, repeated, tag = "12")]
        pub security: Vec<SecurityRequirement>,
        #[prost(message, optional, tag = "13")]
        pub security_definitions: Option<SecurityDefinitions>,
        #[prost(message, repeated, tag = "16")]
        pub vendor_extension: Vec<NamedAny>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Info {
        #[prost(string, tag = "1")]
        pub title: String,
        #[prost(string, tag = "2")]
        pub version: String,
        #[prost(string, tag = "3")]
        pub description: String,
        #[prost(message, repeated, tag = "7")]
        pub vendor_extension: Vec<NamedAny>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Any {
        #[prost(string, tag = "2")]
        pub yaml: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NamedAny {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<Any>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Paths {
        #[prost(message, repeated, tag = "1")]
        pub vendor_extension: Vec<NamedAny>,
        #[prost(message, repeated, tag = "2")]
        pub path: Vec<NamedPathItem>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NamedPathItem {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<PathItem>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct PathItem {
        #[prost(string, tag = "1")]
        pub xref: String,
        #[prost(message, optional, tag = "2")]
        pub get: Option<Operation>,
        #[prost(message, optional, tag = "3")]
        pub put: Option<Operation>,
        #[prost(message, optional, tag = "4")]
        pub post: Option<Operation>,
        #[prost(message, optional, tag = "5")]
        pub delete: Option<Operation>,
        #[prost(message, optional, tag = "6")]
        pub options: Option<Operation>,
        #[prost(message, optional, tag = "7")]
        pub head: Option<Operation>,
        #[prost(message, optional, tag = "8")]
        pub patch: Option<Operation>,
        #[prost(message, repeated, tag = "9")]
        pub parameters: Vec<ParametersItem>,
        #[prost(message, repeated, tag = "10")]
        pub vendor_extension: Vec<NamedAny>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Operation {
        #[prost(string, repeated, tag = "1")]
        pub tags: Vec<String>,
        #[prost(string, tag = "2")]
        pub summary: String,
        #[prost(string, tag = "3")]
        pub description: String,
        #[prost(string, tag = "5")]
        pub operation_id: String,
        #[prost(string, repeated, tag = "6")]
        pub produces: Vec<String>,
        #[prost(string, repeated, tag = "7")]
        pub consumes: Vec<String>,
        #[prost(message, repeated, tag = "8")]
        pub parameters: Vec<ParametersItem>,
        #[prost(message, optional, tag = "9")]
        pub responses: Option<Responses>,
        #[prost(string, repeated, tag = "10")]
        pub schemes: Vec<String>,
        #[prost(bool, tag = "11")]
        pub deprecated: bool,
        #[prost(message, repeated, tag = "13")]
        pub vendor_extension: Vec<NamedAny>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ParametersItem {
        #[prost(oneof = "ParametersItemOneof", tags = "1, 2")]
        pub oneof: Option<ParametersItemOneof>,
    }

    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum ParametersItemOneof {
        #[prost(message, tag = "1")]
        Parameter(Parameter),
        #[prost(message, tag = "2")]
        JsonReference(JsonReference),
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct JsonReference {
        #[prost(string, tag = "1")]
        pub xref: String,
        #[prost(string, tag = "2")]
        pub description: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Parameter {
        #[prost(oneof = "ParameterOneof", tags = "1, 2")]
        pub oneof: Option<ParameterOneof>,
    }

    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum ParameterOneof {
        #[prost(message, tag = "1")]
        BodyParameter(BodyParameter),
        #[prost(message, tag = "2")]
        NonBodyParameter(NonBodyParameter),
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct BodyParameter {
        #[prost(string, tag = "1")]
        pub description: String,
        #[prost(string, tag = "2")]
        pub name: String,
        #[prost(string, tag = "3")]
        pub r#in: String,
        #[prost(bool, tag = "4")]
        pub required: bool,
        #[prost(message, optional, tag = "5")]
        pub schema: Option<Schema>,
        #[prost(message, repeated, tag = "6")]
        pub vendor_extension: Vec<NamedAny>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NonBodyParameter {
        #[prost(oneof = "NonBodyParameterOneof", tags = "3, 4")]
        pub oneof: Option<NonBodyParameterOneof>,
    }

    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum NonBodyParameterOneof {
        #[prost(message, tag = "3")]
        QueryParameterSubSchema(QueryParameterSubSchema),
        #[prost(message, tag = "4")]
        PathParameterSubSchema(PathParameterSubSchema),
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct QueryParameterSubSchema {
        #[prost(bool, tag = "1")]
        pub required: bool,
        #[prost(string, tag = "2")]
        pub r#in: String,
        #[prost(string, tag = "3")]
        pub description: String,
        #[prost(string, tag = "4")]
        pub name: String,
        #[prost(string, tag = "6")]
        pub r#type: String,
        #[prost(bool, tag = "20")]
        pub unique_items: bool,
        #[prost(message, repeated, tag = "23")]
        pub vendor_extension: Vec<NamedAny>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct PathParameterSubSchema {
        #[prost(bool, tag = "1")]
        pub required: bool,
        #[prost(string, tag = "2")]
        pub r#in: String,
        #[prost(string, tag = "3")]
        pub description: String,
        #[prost(string, tag = "4")]
        pub name: String,
        #[prost(string, tag = "5")]
        pub r#type: String,
        #[prost(bool, tag = "19")]
        pub unique_items: bool,
        #[prost(message, repeated, tag = "22")]
        pub vendor_extension: Vec<NamedAny>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Responses {
        #[prost(message, repeated, tag = "1")]
        pub response_code: Vec<NamedResponseValue>,
        #[prost(message, repeated, tag = "2")]
        pub vendor_extension: Vec<NamedAny>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NamedResponseValue {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<ResponseValue>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ResponseValue {
        #[prost(oneof = "ResponseValueOneof", tags = "1, 2")]
        pub oneof: Option<ResponseValueOneof>,
    }

    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum ResponseValueOneof {
        #[prost(message, tag = "1")]
        Response(Response),
        #[prost(message, tag = "2")]
        JsonReference(JsonReference),
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Response {
        #[prost(string, tag = "1")]
        pub description: String,
        #[prost(message, optional, tag = "2")]
        pub schema: Option<SchemaItem>,
        #[prost(message, repeated, tag = "5")]
        pub vendor_extension: Vec<NamedAny>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct SchemaItem {
        #[prost(oneof = "SchemaItemOneof", tags = "1")]
        pub oneof: Option<SchemaItemOneof>,
    }

    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum SchemaItemOneof {
        #[prost(message, tag = "1")]
        Schema(Schema),
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Definitions {
        #[prost(message, repeated, tag = "1")]
        pub additional_properties: Vec<NamedSchema>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NamedSchema {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<Schema>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Schema {
        #[prost(string, tag = "1")]
        pub xref: String,
        #[prost(string, tag = "2")]
        pub format: String,
        #[prost(string, tag = "3")]
        pub title: String,
        #[prost(string, tag = "4")]
        pub description: String,
        #[prost(message, optional, tag = "5")]
        pub default: Option<Any>,
        #[prost(double, tag = "6")]
        pub multiple_of: f64,
        #[prost(double, tag = "7")]
        pub maximum: f64,
        #[prost(bool, tag = "8")]
        pub exclusive_maximum: bool,
        #[prost(double, tag = "9")]
        pub minimum: f64,
        #[prost(bool, tag = "10")]
        pub exclusive_minimum: bool,
        #[prost(int64, tag = "11")]
        pub max_length: i64,
        #[prost(int64, tag = "12")]
        pub min_length: i64,
        #[prost(string, tag = "13")]
        pub pattern: String,
        #[prost(int64, tag = "14")]
        pub max_items: i64,
        #[prost(int64, tag = "15")]
        pub min_items: i64,
        #[prost(bool, tag = "16")]
        pub unique_items: bool,
        #[prost(int64, tag = "17")]
        pub max_properties: i64,
        #[prost(int64, tag = "18")]
        pub min_properties: i64,
        #[prost(string, repeated, tag = "19")]
        pub required: Vec<String>,
        #[prost(message, repeated, tag = "20")]
        pub r#enum: Vec<Any>,
        #[prost(message, optional, boxed, tag = "21")]
        pub additional_properties: Option<Box<AdditionalPropertiesItem>>,
        #[prost(message, optional, tag = "22")]
        pub r#type: Option<TypeItem>,
        #[prost(message, optional, tag = "23")]
        pub items: Option<ItemsItem>,
        #[prost(message, repeated, tag = "24")]
        pub all_of: Vec<Schema>,
        #[prost(message, optional, tag = "25")]
        pub properties: Option<Properties>,
        #[prost(string, tag = "26")]
        pub discriminator: String,
        #[prost(bool, tag = "27")]
        pub read_only: bool,
        #[prost(message, optional, tag = "30")]
        pub example: Option<Any>,
        #[prost(message, repeated, tag = "31")]
        pub vendor_extension: Vec<NamedAny>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct AdditionalPropertiesItem {
        #[prost(oneof = "AdditionalPropertiesOneof", tags = "1, 2")]
        pub oneof: Option<AdditionalPropertiesOneof>,
    }

    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum AdditionalPropertiesOneof {
        #[prost(message, tag = "1")]
        Schema(Schema),
        #[prost(bool, tag = "2")]
        Boolean(bool),
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TypeItem {
        #[prost(string, repeated, tag = "1")]
        pub value: Vec<String>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ItemsItem {
        #[prost(message, repeated, tag = "1")]
        pub schema: Vec<Schema>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Properties {
        #[prost(message, repeated, tag = "1")]
        pub additional_properties: Vec<NamedSchema>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct SecurityRequirement {
        #[prost(message, repeated, tag = "1")]
        pub additional_properties: Vec<NamedStringArray>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NamedStringArray {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<StringArray>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct StringArray {
        #[prost(string, repeated, tag = "1")]
        pub value: Vec<String>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct SecurityDefinitions {
        #[prost(message, repeated, tag = "1")]
        pub additional_properties: Vec<NamedSecurityDefinitionsItem>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NamedSecurityDefinitionsItem {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(message, optional, tag = "2")]
        pub value: Option<SecurityDefinitionsItem>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct SecurityDefinitionsItem {
        #[prost(oneof = "SecurityDefinitionsOneof", tags = "2")]
        pub oneof: Option<SecurityDefinitionsOneof>,
    }

    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum SecurityDefinitionsOneof {
        #[prost(message, tag = "2")]
        ApiKeySecurity(ApiKeySecurity),
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ApiKeySecurity {
        #[prost(string, tag = "1")]
        pub r#type: String,
        #[prost(string, tag = "2")]
        pub name: String,
        #[prost(string, tag = "3")]
        pub r#in: String,
        #[prost(string, tag = "4")]
        pub description: String,
        #[prost(message, repeated, tag = "5")]
        pub vendor_extension: Vec<NamedAny>,
    }
}

/// gnostic's messages back to Swagger JSON (every field; zero values are dropped later
/// by `proto3_view` on both sides).
mod to_json {
    use super::gnostic::*;
    use serde_json::{json, Map, Value};

    fn any(a: &Any) -> Value {
        serde_norway::from_str(&a.yaml)
            .unwrap_or_else(|e| panic!("Any.yaml is not YAML ({e}): {:?}", a.yaml))
    }

    fn extensions(m: &mut Map<String, Value>, named: &[NamedAny]) {
        for n in named {
            let value = n.value.as_ref().map(any).unwrap_or(Value::Null);
            m.insert(n.name.clone(), value);
        }
    }

    /// `v` (an object) with the extensions added.
    fn extend(v: &mut Value, named: &[NamedAny]) -> Value {
        if let Some(m) = v.as_object_mut() {
            extensions(m, named);
        }
        v.take()
    }

    fn number(f: f64) -> Value {
        if f.fract() == 0.0 && f.abs() < 9e15 {
            json!(f as i64)
        } else {
            json!(f)
        }
    }

    pub fn document(d: &Document) -> Value {
        let mut m = Map::new();
        m.insert("swagger".into(), json!(d.swagger));
        if let Some(info) = &d.info {
            let mut i = Map::new();
            i.insert("title".into(), json!(info.title));
            i.insert("version".into(), json!(info.version));
            i.insert("description".into(), json!(info.description));
            extensions(&mut i, &info.vendor_extension);
            m.insert("info".into(), Value::Object(i));
        }
        m.insert("host".into(), json!(d.host));
        m.insert("basePath".into(), json!(d.base_path));
        m.insert("schemes".into(), json!(d.schemes));
        m.insert("consumes".into(), json!(d.consumes));
        m.insert("produces".into(), json!(d.produces));
        if let Some(paths) = &d.paths {
            let mut p = Map::new();
            extensions(&mut p, &paths.vendor_extension);
            for named in &paths.path {
                let item = named.value.as_ref().map(path_item).unwrap_or(json!({}));
                p.insert(named.name.clone(), item);
            }
            m.insert("paths".into(), Value::Object(p));
        }
        if let Some(defs) = &d.definitions {
            m.insert(
                "definitions".into(),
                named_schemas(&defs.additional_properties),
            );
        }
        let security: Vec<Value> = d.security.iter().map(security_requirement).collect();
        m.insert("security".into(), Value::Array(security));
        if let Some(sd) = &d.security_definitions {
            let mut s = Map::new();
            for named in &sd.additional_properties {
                let value = match named.value.as_ref().and_then(|v| v.oneof.as_ref()) {
                    Some(SecurityDefinitionsOneof::ApiKeySecurity(k)) => {
                        let mut o = Map::new();
                        o.insert("type".into(), json!(k.r#type));
                        o.insert("name".into(), json!(k.name));
                        o.insert("in".into(), json!(k.r#in));
                        o.insert("description".into(), json!(k.description));
                        extensions(&mut o, &k.vendor_extension);
                        Value::Object(o)
                    }
                    None => Value::Null,
                };
                s.insert(named.name.clone(), value);
            }
            m.insert("securityDefinitions".into(), Value::Object(s));
        }
        extensions(&mut m, &d.vendor_extension);
        Value::Object(m)
    }

    fn security_requirement(r: &SecurityRequirement) -> Value {
        let m: Map<String, Value> = r
            .additional_properties
            .iter()
            .map(|n| {
                let scopes = n
                    .value
                    .as_ref()
                    .map(|v| v.value.clone())
                    .unwrap_or_default();
                (n.name.clone(), json!(scopes))
            })
            .collect();
        Value::Object(m)
    }

    fn path_item(p: &PathItem) -> Value {
        let mut m = Map::new();
        m.insert("$ref".into(), json!(p.xref));
        for (method, op) in [
            ("get", &p.get),
            ("put", &p.put),
            ("post", &p.post),
            ("delete", &p.delete),
            ("options", &p.options),
            ("head", &p.head),
            ("patch", &p.patch),
        ] {
            if let Some(op) = op {
                m.insert(method.into(), operation(op));
            }
        }
        m.insert("parameters".into(), parameters(&p.parameters));
        extensions(&mut m, &p.vendor_extension);
        Value::Object(m)
    }

    fn operation(o: &Operation) -> Value {
        let mut m = Map::new();
        m.insert("tags".into(), json!(o.tags));
        m.insert("summary".into(), json!(o.summary));
        m.insert("description".into(), json!(o.description));
        m.insert("operationId".into(), json!(o.operation_id));
        m.insert("produces".into(), json!(o.produces));
        m.insert("consumes".into(), json!(o.consumes));
        m.insert("parameters".into(), parameters(&o.parameters));
        if let Some(r) = &o.responses {
            let mut codes = Map::new();
            for named in &r.response_code {
                let value = match named.value.as_ref().and_then(|v| v.oneof.as_ref()) {
                    Some(ResponseValueOneof::Response(resp)) => response(resp),
                    Some(ResponseValueOneof::JsonReference(j)) => json_reference(j),
                    None => Value::Null,
                };
                codes.insert(named.name.clone(), value);
            }
            extensions(&mut codes, &r.vendor_extension);
            m.insert("responses".into(), Value::Object(codes));
        }
        m.insert("schemes".into(), json!(o.schemes));
        m.insert("deprecated".into(), json!(o.deprecated));
        extensions(&mut m, &o.vendor_extension);
        Value::Object(m)
    }

    fn response(r: &Response) -> Value {
        let mut m = Map::new();
        m.insert("description".into(), json!(r.description));
        if let Some(SchemaItemOneof::Schema(s)) = r.schema.as_ref().and_then(|s| s.oneof.as_ref()) {
            m.insert("schema".into(), schema(s));
        }
        extensions(&mut m, &r.vendor_extension);
        Value::Object(m)
    }

    fn json_reference(j: &JsonReference) -> Value {
        json!({"$ref": j.xref, "description": j.description})
    }

    fn parameters(items: &[ParametersItem]) -> Value {
        let out = items
            .iter()
            .map(|item| match &item.oneof {
                Some(ParametersItemOneof::JsonReference(j)) => json_reference(j),
                Some(ParametersItemOneof::Parameter(p)) => match &p.oneof {
                    Some(ParameterOneof::BodyParameter(b)) => {
                        let mut m = Map::new();
                        m.insert("description".into(), json!(b.description));
                        m.insert("name".into(), json!(b.name));
                        m.insert("in".into(), json!(b.r#in));
                        m.insert("required".into(), json!(b.required));
                        if let Some(s) = &b.schema {
                            m.insert("schema".into(), schema(s));
                        }
                        extensions(&mut m, &b.vendor_extension);
                        Value::Object(m)
                    }
                    Some(ParameterOneof::NonBodyParameter(n)) => match &n.oneof {
                        Some(NonBodyParameterOneof::QueryParameterSubSchema(q)) => {
                            let mut m = json!({"required": q.required, "in": q.r#in,
                                "description": q.description, "name": q.name,
                                "type": q.r#type, "uniqueItems": q.unique_items});
                            extend(&mut m, &q.vendor_extension)
                        }
                        Some(NonBodyParameterOneof::PathParameterSubSchema(p)) => {
                            let mut m = json!({"required": p.required, "in": p.r#in,
                                "description": p.description, "name": p.name,
                                "type": p.r#type, "uniqueItems": p.unique_items});
                            extend(&mut m, &p.vendor_extension)
                        }
                        None => Value::Null,
                    },
                    None => Value::Null,
                },
                None => Value::Null,
            })
            .collect();
        Value::Array(out)
    }

    fn named_schemas(named: &[NamedSchema]) -> Value {
        let m: Map<String, Value> = named
            .iter()
            .map(|n| {
                let value = n.value.as_ref().map(schema).unwrap_or(json!({}));
                (n.name.clone(), value)
            })
            .collect();
        Value::Object(m)
    }

    fn schema(s: &Schema) -> Value {
        let mut m = Map::new();
        m.insert("$ref".into(), json!(s.xref));
        m.insert("format".into(), json!(s.format));
        m.insert("title".into(), json!(s.title));
        m.insert("description".into(), json!(s.description));
        if let Some(d) = &s.default {
            m.insert("default".into(), any(d));
        }
        m.insert("multipleOf".into(), number(s.multiple_of));
        m.insert("maximum".into(), number(s.maximum));
        m.insert("exclusiveMaximum".into(), json!(s.exclusive_maximum));
        m.insert("minimum".into(), number(s.minimum));
        m.insert("exclusiveMinimum".into(), json!(s.exclusive_minimum));
        m.insert("maxLength".into(), json!(s.max_length));
        m.insert("minLength".into(), json!(s.min_length));
        m.insert("pattern".into(), json!(s.pattern));
        m.insert("maxItems".into(), json!(s.max_items));
        m.insert("minItems".into(), json!(s.min_items));
        m.insert("uniqueItems".into(), json!(s.unique_items));
        m.insert("maxProperties".into(), json!(s.max_properties));
        m.insert("minProperties".into(), json!(s.min_properties));
        m.insert("required".into(), json!(s.required));
        if !s.r#enum.is_empty() {
            m.insert("enum".into(), s.r#enum.iter().map(any).collect());
        }
        match s
            .additional_properties
            .as_ref()
            .and_then(|a| a.oneof.as_ref())
        {
            Some(AdditionalPropertiesOneof::Schema(inner)) => {
                m.insert("additionalProperties".into(), schema(inner));
            }
            Some(AdditionalPropertiesOneof::Boolean(b)) => {
                m.insert("additionalProperties".into(), json!(b));
            }
            None => {}
        }
        if let Some(t) = &s.r#type {
            // gnostic keeps one type as a one-element list; JSON spells it as a string.
            let value = match t.value.as_slice() {
                [one] => json!(one),
                many => json!(many),
            };
            m.insert("type".into(), value);
        }
        if let Some(items) = &s.items {
            let value = match items.schema.as_slice() {
                [one] => schema(one),
                many => many.iter().map(schema).collect(),
            };
            m.insert("items".into(), value);
        }
        m.insert(
            "allOf".into(),
            Value::Array(s.all_of.iter().map(schema).collect()),
        );
        if let Some(p) = &s.properties {
            m.insert("properties".into(), named_schemas(&p.additional_properties));
        }
        m.insert("discriminator".into(), json!(s.discriminator));
        m.insert("readOnly".into(), json!(s.read_only));
        if let Some(e) = &s.example {
            m.insert("example".into(), any(e));
        }
        extensions(&mut m, &s.vendor_extension);
        Value::Object(m)
    }
}

/// What survives proto3: zero scalars (`""`, `false`, `0`) and empty lists dropped,
/// except inside free-form values (`default`, `enum`, `example`, `x-*`), which travel
/// as YAML text. `names`: the keys of this object are names (definitions, paths,
/// properties, response codes), never field names.
fn proto3_view(v: &Value, names: bool) -> Value {
    match v {
        Value::Object(m) => {
            let mut out = Map::new();
            for (k, x) in m {
                let free_form = !names
                    && (k.starts_with("x-")
                        || ["default", "enum", "example"].contains(&k.as_str()));
                if free_form {
                    out.insert(k.clone(), x.clone());
                    continue;
                }
                let zero = match x {
                    Value::Null => true,
                    Value::Bool(b) => !b,
                    Value::Number(n) => n.as_f64() == Some(0.0),
                    Value::String(s) => s.is_empty(),
                    Value::Array(a) => a.is_empty(),
                    Value::Object(_) => false,
                };
                if zero && !names {
                    continue;
                }
                let child_names = !names
                    && [
                        "definitions",
                        "paths",
                        "properties",
                        "responses",
                        "securityDefinitions",
                    ]
                    .contains(&k.as_str());
                out.insert(k.clone(), proto3_view(x, child_names));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| proto3_view(x, false)).collect()),
        other => other.clone(),
    }
}

/// The first difference between two JSON values, as a path and both sides.
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                let p = format!("{path}/{k}");
                match (x.get(k), y.get(k)) {
                    (Some(l), Some(r)) => {
                        if let Some(d) = first_difference(l, r, &p) {
                            return Some(d);
                        }
                    }
                    (l, r) => return Some(format!("{p}: {l:?} vs {r:?}")),
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (l, r))| first_difference(l, r, &format!("{path}/{i}"))),
        _ if a == b => None,
        _ => Some(format!("{path}: {a} vs {b}")),
    }
}

/// A CRD whose schema uses what the v2 document can carry: extensions, formats,
/// bounds, patterns, enums, defaults, maps, lists, embedded resources, int-or-string.
fn gizmo_crd() -> Value {
    let spec = json!({
        "type": "object",
        "required": ["size"],
        "x-kubernetes-validations": [{"rule": "self.size <= 10", "message": "too big"}],
        "properties": {
            "size": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 10, "exclusiveMaximum": true, "default": 1},
            "ratio": {"type": "number", "multipleOf": 0.25, "maximum": 2.5},
            "name": {"type": "string", "pattern": "^[a-z]+$", "minLength": 1, "maxLength": 20, "x-kubernetes-immutable": true},
            "mode": {"type": "string", "enum": ["fast", "slow", ""], "default": "slow"},
            "port": {"x-kubernetes-int-or-string": true},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 5},
            "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set", "maxItems": 3},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "required": ["name"], "properties": {
                          "name": {"type": "string"}, "number": {"type": "integer", "default": 0}}}},
            "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
            "note": {"type": "string", "nullable": true}
        }
    });
    let schema = json!({
        "type": "object",
        "description": "A gizmo.",
        "properties": {
            "spec": spec,
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }
    });
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.parts.example.com"},
        "spec": {
            "group": "parts.example.com",
            "scope": "Cluster",
            "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": schema}
            }]
        }
    })
}

fn get(server: &TestServer, path: &str, accept: &str) -> common::HttpResponse {
    server
        .http()
        .request("GET", path, &[], &[("Accept".into(), accept.into())], None)
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A server serving the widgets and gizmos CRDs (in the v2 document).
fn server_with_crds() -> TestServer {
    let server = TestServer::start();
    let http = server.http();
    for crd in [common::testdata_json("crds/widgets.yaml"), gizmo_crd()] {
        let created = http.send_json("POST", CRDS, &crd);
        assert_eq!(created.status, 201, "{}", created.text());
    }
    for path in [
        "/apis/example.com/v1/widgets",
        "/apis/parts.example.com/v1/gizmos",
    ] {
        let listed = http.wait_for_status(path, 200, Duration::from_secs(20));
        assert_eq!(listed.status, 200, "{}", listed.text());
    }
    server
}

#[test]
fn v2_protobuf_decodes_to_the_json_document() {
    use prost::Message;
    let server = server_with_crds();
    let json = get(&server, "/openapi/v2", "application/json");
    assert_eq!(json.status, 200, "{}", json.text());
    assert_eq!(
        json.header("content-type").as_deref(),
        Some("application/json")
    );
    let doc = json.json().expect("the JSON document");
    assert!(doc["definitions"]
        .get("com.example.parts.v1.Gizmo")
        .is_some());

    let proto = get(&server, "/openapi/v2", PROTOBUF_ACCEPT);
    assert_eq!(proto.status, 200, "{}", proto.text());
    assert_eq!(
        proto.header("content-type").as_deref(),
        Some(PROTOBUF_CONTENT_TYPE)
    );
    // One ETag for both forms (the JSON document's); the response varies by Accept.
    assert_eq!(proto.header("etag"), json.header("etag"));
    assert_eq!(proto.header("vary").as_deref(), Some("Accept"));
    assert_eq!(
        proto.header("cache-control").as_deref(),
        Some("no-cache, private")
    );

    let decoded = gnostic::Document::decode(proto.body.as_slice())
        .unwrap_or_else(|e| panic!("not a gnostic Document: {e}"));
    let back = to_json::document(&decoded);
    let (expected, actual) = (proto3_view(&doc, false), proto3_view(&back, false));
    if let Some(diff) = first_difference(&expected, &actual, "") {
        panic!("protobuf and JSON documents differ at {diff}");
    }
    // The schema's values that travel as YAML text come back as they were written.
    let size = &back["definitions"]["com.example.parts.v1.Gizmo"]["properties"]["spec"]
        ["properties"]["size"];
    assert_eq!(size["default"], 1);
    assert_eq!(size["maximum"], 10);
    let mode = &back["definitions"]["com.example.parts.v1.Gizmo"]["properties"]["spec"]
        ["properties"]["mode"];
    assert_eq!(mode["enum"], json!(["fast", "slow", ""]));
    let ports = &back["definitions"]["com.example.parts.v1.Gizmo"]["properties"]["spec"]
        ["properties"]["ports"];
    assert_eq!(ports["x-kubernetes-list-map-keys"], json!(["name"]));
    assert_eq!(
        back["definitions"]["io.k8s.api.core.v1.ConfigMap"]["x-kubernetes-group-version-kind"],
        json!([{"group": "", "kind": "ConfigMap", "version": "v1"}])
    );
}

#[test]
fn v3_wraps_references_with_siblings_in_all_of_and_v2_does_not() {
    let server = server_with_crds();
    let v3 = get(
        &server,
        "/openapi/v3/apis/parts.example.com/v1",
        "application/json",
    );
    assert_eq!(v3.status, 200, "{}", v3.text());
    let v3 = v3.json().expect("the v3 document");
    let schemas = &v3["components"]["schemas"];
    let meta_description = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
    let object_meta = json!({
        "description": meta_description,
        "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
    });
    let gizmo = &schemas["com.example.parts.v1.Gizmo"];
    assert_eq!(gizmo["properties"]["metadata"], object_meta);
    // An embedded resource's metadata too, and the list's.
    assert_eq!(
        gizmo["properties"]["spec"]["properties"]["template"]["properties"]["metadata"],
        object_meta
    );
    assert_eq!(
        schemas["com.example.parts.v1.GizmoList"]["properties"]["metadata"],
        json!({
            "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
            "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"}],
        })
    );
    // A reference alone stays as it is.
    assert_eq!(
        schemas["com.example.parts.v1.GizmoList"]["properties"]["items"]["items"],
        json!({"$ref": "#/components/schemas/com.example.parts.v1.Gizmo"})
    );
    // Swagger 2.0 keeps the siblings beside the reference.
    let v2 = get(&server, "/openapi/v2", "application/json")
        .json()
        .expect("the v2 document");
    assert_eq!(
        v2["definitions"]["com.example.parts.v1.Gizmo"]["properties"]["metadata"],
        json!({"description": meta_description,
               "$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"})
    );
}

#[test]
fn v2_negotiates_and_caches_as_kube_openapi() {
    let server = TestServer::start();
    let http = server.http();
    let first = get(&server, "/openapi/v2", PROTOBUF_ACCEPT);
    assert_eq!(first.status, 200);
    let etag = first.header("etag").expect("an ETag");
    assert!(
        etag.starts_with('"') && etag.len() == 130,
        "a quoted SHA-512: {etag}"
    );

    // The same ETag answers 304 in either form.
    for accept in [PROTOBUF_ACCEPT, PROTOBUF_CONTENT_TYPE, "application/json"] {
        let cached = http
            .request(
                "GET",
                "/openapi/v2",
                &[],
                &[
                    ("Accept".into(), accept.into()),
                    ("If-None-Match".into(), etag.clone()),
                ],
                None,
            )
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cached.status, 304, "{accept}");
        assert!(cached.body.is_empty());
    }

    // kube-openapi's order: highest q first, JSON for wildcards and no Accept.
    let preferred = get(
        &server,
        "/openapi/v2",
        &format!("application/json;q=0.5, {PROTOBUF_ACCEPT}"),
    );
    assert_eq!(
        preferred.header("content-type").as_deref(),
        Some(PROTOBUF_CONTENT_TYPE)
    );
    let any = get(&server, "/openapi/v2", "*/*");
    assert_eq!(
        any.header("content-type").as_deref(),
        Some("application/json")
    );
    assert!(any.json().is_some_and(|d| d["swagger"] == "2.0"));

    // Nothing acceptable: kube-openapi's bare 406 (no Status body).
    for path in ["/openapi/v2", "/openapi/v3/api/v1"] {
        let refused = get(&server, path, "text/html");
        assert_eq!(refused.status, 406, "{path}");
        assert!(refused.body.is_empty(), "{path}: {}", refused.text());
        assert_eq!(refused.header("vary").as_deref(), Some("Accept"));
    }
    // The v3 index is JSON whatever is asked.
    let index = get(&server, "/openapi/v3", PROTOBUF_ACCEPT);
    assert_eq!(index.status, 200);
    assert!(index
        .json()
        .is_some_and(|d| d["paths"].get("api/v1").is_some()));
}

/// Each PATCH operation's `requestBody` media types, by path.
fn patch_types(doc: &Value) -> Map<String, Value> {
    let paths = doc["paths"].as_object().cloned().unwrap_or_default();
    paths
        .into_iter()
        .filter_map(|(path, item)| {
            let content = item["patch"]["requestBody"]["content"].as_object()?.clone();
            let types: Vec<Value> = content.keys().map(|k| json!(k)).collect();
            Some((path, Value::Array(types)))
        })
        .collect()
}

#[test]
fn v3_patch_operations_list_the_patch_types_kube_lists() {
    let server = server_with_crds();
    let recorded = common::testdata_json("openapi/kube-v1.36-patch-types.json");
    let index = get(&server, "/openapi/v3", "application/json")
        .json()
        .expect("the v3 index");
    let served: Vec<&String> = index["paths"].as_object().expect("paths").keys().collect();
    let mut compared_groups = Vec::new();
    for gv in served {
        let doc = get(&server, &format!("/openapi/v3/{gv}"), "application/json")
            .json()
            .unwrap_or_else(|| panic!("/openapi/v3/{gv} is not JSON"));
        let ours = patch_types(&doc);
        let Some(kube) = recorded.get(gv.as_str()) else {
            // Custom resources: no strategic merge patch.
            assert!(
                gv.contains("example.com"),
                "{gv}: a built-in group-version without a recording"
            );
            assert!(!ours.is_empty(), "{gv}");
            for (path, types) in &ours {
                assert_eq!(
                    types,
                    &json!([
                        "application/apply-patch+yaml",
                        "application/json-patch+json",
                        "application/merge-patch+json"
                    ]),
                    "{path}"
                );
            }
            continue;
        };
        for (path, types) in &ours {
            if let Some(expected) = kube.get(path) {
                assert_eq!(types, expected, "{path}");
            } else {
                panic!("{path}: a PATCH operation kube v1.36 does not publish");
            }
        }
        if !ours.is_empty() {
            compared_groups.push(gv.clone());
        }
    }
    for gv in [
        "api/v1",
        "apis/admissionregistration.k8s.io/v1",
        "apis/apiextensions.k8s.io/v1",
        "apis/coordination.k8s.io/v1",
        "apis/events.k8s.io/v1",
        "apis/rbac.authorization.k8s.io/v1",
    ] {
        assert!(
            compared_groups.iter().any(|g| g == gv),
            "{gv} not compared: {compared_groups:?}"
        );
    }
}

/// The canonical JSON the recorded digests are of (as `scripts/kube-api-data.py` writes
/// it): compact, object keys sorted, non-ASCII as UTF-8, strings escaped as
/// `serde_json` and Python's `json` both escape them.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// A document's digests, keyed as in `testdata/kube-v1.36/openapi-v3/digests.json`: for
/// `/paths/<path>`, `/components/<section>/<name>` and every other top-level member
/// (`/openapi`, `/info`), the first 16 hex digits of the SHA-256 of the member's
/// canonical JSON; names in the JSON pointers escaped as RFC 6901 says.
fn openapi_digests(doc: &Value) -> Map<String, Value> {
    use sha2::{Digest, Sha256};
    let esc = |k: &str| k.replace('~', "~0").replace('/', "~1");
    let digest = |v: &Value| {
        let mut text = String::new();
        canonical(v, &mut text);
        let hex: String = Sha256::digest(text.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Value::String(hex[..16].to_string())
    };
    let mut out = Map::new();
    for (key, value) in doc.as_object().expect("a document is an object") {
        match (key.as_str(), value) {
            ("paths", Value::Object(paths)) => {
                for (p, item) in paths {
                    out.insert(format!("/paths/{}", esc(p)), digest(item));
                }
            }
            ("components", Value::Object(sections)) => {
                for (section, members) in sections {
                    for (name, item) in members.as_object().into_iter().flatten() {
                        out.insert(
                            format!("/components/{}/{}", esc(section), esc(name)),
                            digest(item),
                        );
                    }
                }
            }
            _ => {
                out.insert(format!("/{}", esc(key)), digest(value));
            }
        }
    }
    out
}

/// Upper-case hex SHA-512, kube-openapi's `?hash=` and ETag.
fn sha512_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha512};
    Sha512::digest(bytes)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect()
}

#[test]
fn every_built_in_v3_document_is_the_one_kube_serves() {
    let server = TestServer::start();
    let recorded: Map<String, Value> =
        serde_json::from_str(&common::testdata("kube-v1.36/openapi-v3/digests.json"))
            .expect("digests.json");
    assert_eq!(recorded.len(), 22);
    let index = get(&server, "/openapi/v3", "application/json")
        .json()
        .expect("the v3 index");
    let listed = index["paths"].as_object().expect("paths");
    // No CRD yet: the index lists exactly the built-in group-versions kube lists.
    let names: Vec<&String> = listed.keys().collect();
    assert_eq!(names, recorded.keys().collect::<Vec<_>>());
    for (gv, expected) in &recorded {
        assert_served_document_is_kubes(&server, listed, gv, expected);
    }
}

#[test]
fn the_versions_runtime_config_turns_on_serve_kubes_documents() {
    let server = TestServer::start_with(&["--runtime-config=api/all=true"]);
    let recorded: Map<String, Value> = serde_json::from_str(&common::testdata(
        "kube-v1.36/runtime-config/openapi-v3-digests.json",
    ))
    .expect("openapi-v3-digests.json");
    assert_eq!(recorded.len(), 10);
    let index = get(&server, "/openapi/v3", "application/json")
        .json()
        .expect("the v3 index");
    let listed = index["paths"].as_object().expect("paths");
    assert_eq!(listed.len(), 22 + 10, "{:?}", listed.keys());
    for (gv, expected) in &recorded {
        assert_served_document_is_kubes(&server, listed, gv, expected);
    }
    // Not turned on: not served.
    let server = TestServer::start_with(&["--runtime-config=networking.k8s.io/v1beta1=true"]);
    let status = |gv: &str| get(&server, &format!("/openapi/v3/{gv}"), "application/json").status;
    assert_eq!(status("apis/networking.k8s.io/v1beta1"), 200);
    assert_eq!(status("apis/storage.k8s.io/v1beta1"), 404);
}

/// The document the v3 index links for `gv` is served as kube serves it (hash, headers)
/// and its members' digests are kube's.
fn assert_served_document_is_kubes(
    server: &TestServer,
    listed: &Map<String, Value>,
    gv: &str,
    expected: &Value,
) {
    let url = listed[gv]["serverRelativeURL"].as_str().expect("a URL");
    let resp = get(server, url, "application/json");
    assert_eq!(resp.status, 200, "{url}");
    let hash = sha512_hex(&resp.body);
    assert_eq!(url, format!("/openapi/v3/{gv}?hash={hash}"));
    assert_eq!(resp.header("etag"), Some(format!("\"{hash}\"")), "{gv}");
    assert_eq!(
        resp.header("content-type").as_deref(),
        Some("application/json")
    );
    assert_eq!(
        resp.header("cache-control").as_deref(),
        Some("public, immutable"),
        "{gv}"
    );
    assert!(resp.header("expires").is_some(), "{gv}");
    let doc = resp.json().unwrap_or_else(|| panic!("{gv} is not JSON"));
    let served = openapi_digests(&doc);
    let expected = expected.as_object().expect("digests of one document");
    let mut pointers: Vec<&String> = served.keys().chain(expected.keys()).collect();
    pointers.sort();
    if let Some(p) = pointers
        .into_iter()
        .find(|p| served.get(*p) != expected.get(*p))
    {
        let what = match (served.contains_key(p), expected.contains_key(p)) {
            (true, false) => "served, not in kube's document",
            (false, true) => "in kube's document, not served",
            _ => "differs from kube's",
        };
        panic!("/openapi/v3/{gv}: {p} {what}");
    }
}

/// GET `path` without following redirects: `(status, Location)`.
fn get_unfollowed(server: &TestServer, path: &str) -> (u16, Option<String>) {
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .proxy(None)
        .build()
        .new_agent();
    let resp = agent
        .get(format!("{}{path}", server.url()))
        .call()
        .unwrap_or_else(|e| panic!("GET {path}: {e}"));
    let location = resp
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    (resp.status().as_u16(), location)
}

#[test]
fn v3_hashes_follow_the_content() {
    let server = TestServer::start();
    let http = server.http();
    let index = |server: &TestServer| {
        get(server, "/openapi/v3", "application/json")
            .json()
            .expect("the v3 index")["paths"]
            .clone()
    };
    let apps = index(&server)["apis/apps/v1"]["serverRelativeURL"]
        .as_str()
        .expect("apps/v1 listed")
        .to_string();
    // Without a hash: the generic server's caching; the same ETag answers 304.
    let plain = get(&server, "/openapi/v3/apis/apps/v1", "application/json");
    assert_eq!(plain.status, 200);
    assert_eq!(
        plain.header("cache-control").as_deref(),
        Some("no-cache, private")
    );
    let etag = plain.header("etag").expect("an ETag");
    assert_eq!(
        apps,
        format!("/openapi/v3/apis/apps/v1?hash={}", &etag[1..etag.len() - 1])
    );
    let cached = http
        .request(
            "GET",
            "/openapi/v3/apis/apps/v1",
            &[],
            &[("If-None-Match".into(), etag.clone())],
            None,
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cached.status, 304);
    // A stale hash: kube-openapi redirects to the current one.
    let stale = get_unfollowed(&server, "/openapi/v3/apis/apps/v1?hash=0123");
    assert_eq!(stale, (301, Some(apps.clone())));

    // A CRD group's hash changes when its schema does.
    let created = http.send_json("POST", CRDS, &common::testdata_json("crds/widgets.yaml"));
    assert_eq!(created.status, 201, "{}", created.text());
    let gv = "apis/example.com/v1";
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let before = loop {
        if let Some(url) = index(&server)[gv]["serverRelativeURL"].as_str() {
            break url.to_string();
        }
        assert!(std::time::Instant::now() < deadline, "{gv} never listed");
        std::thread::sleep(Duration::from_millis(100));
    };
    let doc = get(&server, &before, "application/json");
    assert_eq!(doc.status, 200);
    assert_eq!(
        before,
        format!("/openapi/v3/{gv}?hash={}", sha512_hex(&doc.body))
    );
    // A CRD of another group, whose document must not change with example.com's.
    let other = http.send_json(
        "POST",
        CRDS,
        &common::testdata_json("crds/kudo-instances.yaml"),
    );
    assert_eq!(other.status, 201, "{}", other.text());
    let other_gv = "apis/kudo.example.com/v1beta1";
    let other_url = loop {
        if let Some(url) = index(&server)[other_gv]["serverRelativeURL"].as_str() {
            break url.to_string();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{other_gv} never listed"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let other_doc = get(&server, &other_url, "application/json");
    assert_eq!(other_doc.status, 200);
    assert_eq!(
        index(&server)[gv]["serverRelativeURL"].as_str(),
        Some(before.as_str())
    );
    let name = created.json().expect("the CRD")["metadata"]["name"]
        .as_str()
        .expect("a name")
        .to_string();
    let patch = json!([{"op": "add", "path": "/spec/versions/0/schema/openAPIV3Schema/description", "value": "Widgets, described."}]);
    let patched = http
        .request(
            "PATCH",
            &format!("{CRDS}/{name}"),
            &[],
            &[("Content-Type".into(), "application/json-patch+json".into())],
            Some(patch.to_string().into_bytes()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(patched.status, 200, "{}", patched.text());
    let after = loop {
        let url = index(&server)[gv]["serverRelativeURL"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if url != before {
            break url;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{gv}'s hash never changed"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(get_unfollowed(&server, &before), (301, Some(after.clone())));
    let doc = get(&server, &after, "application/json");
    assert!(doc.text().contains("Widgets, described."));
    // The other group's document is the same, at the same hash.
    assert_eq!(
        index(&server)[other_gv]["serverRelativeURL"].as_str(),
        Some(other_url.as_str())
    );
    assert_eq!(
        get(&server, &other_url, "application/json").body,
        other_doc.body
    );
    // A deleted CRD's group-version leaves the index and its document goes.
    let deleted = http.request("DELETE", &format!("{CRDS}/{name}"), &[], &[], None);
    assert!(deleted.is_ok_and(|r| r.status == 200));
    while index(&server).get(gv).is_some() {
        assert!(std::time::Instant::now() < deadline, "{gv} stayed listed");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(get_unfollowed(&server, &format!("/openapi/v3/{gv}")).0, 404);
    assert_eq!(
        index(&server)[other_gv]["serverRelativeURL"].as_str(),
        Some(other_url.as_str())
    );
    // The built-in documents do not change with the CRDs.
    assert_eq!(
        index(&server)["apis/apps/v1"]["serverRelativeURL"].as_str(),
        Some(apps.as_str())
    );
}
