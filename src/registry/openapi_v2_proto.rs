//! `/openapi/v2` in gnostic's protobuf form (`openapi.v2.Document` of
//! github.com/google/gnostic-models), the form kubectl asks for first
//! (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`) to validate objects
//! on the client side.
//!
//! kube-openapi serves it by parsing the JSON document into gnostic's messages and
//! marshalling them, so here the JSON document is walked against tables of gnostic's
//! messages (the `OpenAPIv2.proto` field numbers) and written directly: one `Message`
//! table per message, a `MapOf` per "named" map message (`Definitions`, `Paths`, ...),
//! `Choice` functions for gnostic's `oneof` wrappers (`ParametersItem`, `ResponseValue`,
//! `AdditionalPropertiesItem`, ...). Only what a Swagger 2.0 document of kube's holds is
//! described; keys without a field (none in the documents `registry::openapi` builds)
//! are not written.
//!
//! proto3 leaves out zero scalars (`""`, `false`, `0`) as Go's marshaller does, so they
//! do not survive the protobuf form there either. Free-form values (`default`, `enum`,
//! `example`, `x-*` extensions) are gnostic `Any`s carrying YAML text; they are written
//! as JSON text, which every YAML parser reads back to the same value (gnostic's own
//! block-style YAML is not reproduced byte for byte).

use serde_json::Value;

/// How one JSON value is written as a protobuf field.
enum Ty {
    /// `string` (left out when empty).
    Str,
    /// `bool` (left out when false).
    Bool,
    /// A `bool` member of a `oneof`: written even when false.
    Flag,
    /// `int64` (left out when zero).
    Int,
    /// `double` (left out when zero).
    Double,
    /// `repeated string`; a lone string counts as one element (gnostic's `TypeItem`).
    Strs,
    /// gnostic's `Any`: the value as YAML text in field 2.
    Any,
    /// A message whose JSON keys are its fields.
    Msg(&'static Message),
    /// A map message: JSON entries as `Named*` pairs.
    Map(&'static MapOf),
    /// `repeated`: each element of a JSON array (or a lone value) at the same number.
    Each(&'static Ty),
    /// The value inside nested single-field messages (field numbers outermost first).
    Nest(&'static [u32], &'static Ty),
    /// A `oneof`: the form depends on the value; `None` writes nothing.
    Choice(fn(&Value) -> Option<&'static Ty>),
}

/// One field of a message: JSON key, field number, form.
struct Field(&'static str, u32, Ty);

/// A message: its fields, and the number of its `repeated NamedAny vendor_extension`
/// (0: none) that takes the `x-*` keys.
struct Message {
    fields: &'static [Field],
    extensions: u32,
}

/// A map message: `Named*{name = 1, value = 2}` entries at `entries`, `x-*` keys at
/// `extensions` (0: every key is an entry).
struct MapOf {
    entries: u32,
    value: Ty,
    extensions: u32,
}

static SCHEMA_TY: Ty = Ty::Msg(&SCHEMA);
static SCHEMAS_TY: Ty = Ty::Each(&SCHEMA_TY);

static EXTERNAL_DOCS: Message = Message {
    fields: &[Field("description", 1, Ty::Str), Field("url", 2, Ty::Str)],
    extensions: 3,
};

static XML: Message = Message {
    fields: &[
        Field("name", 1, Ty::Str),
        Field("namespace", 2, Ty::Str),
        Field("prefix", 3, Ty::Str),
        Field("attribute", 4, Ty::Bool),
        Field("wrapped", 5, Ty::Bool),
    ],
    extensions: 6,
};

static PROPERTIES: MapOf = MapOf {
    entries: 1,
    value: Ty::Msg(&SCHEMA),
    extensions: 0,
};

fn additional_properties(v: &Value) -> Option<&'static Ty> {
    static SCHEMA_FORM: Ty = Ty::Nest(&[1], &SCHEMA_TY);
    static BOOLEAN_FORM: Ty = Ty::Nest(&[2], &Ty::Flag);
    match v {
        Value::Object(_) => Some(&SCHEMA_FORM),
        Value::Bool(_) => Some(&BOOLEAN_FORM),
        _ => None,
    }
}

static SCHEMA: Message = Message {
    fields: &[
        Field("$ref", 1, Ty::Str),
        Field("format", 2, Ty::Str),
        Field("title", 3, Ty::Str),
        Field("description", 4, Ty::Str),
        Field("default", 5, Ty::Any),
        Field("multipleOf", 6, Ty::Double),
        Field("maximum", 7, Ty::Double),
        Field("exclusiveMaximum", 8, Ty::Bool),
        Field("minimum", 9, Ty::Double),
        Field("exclusiveMinimum", 10, Ty::Bool),
        Field("maxLength", 11, Ty::Int),
        Field("minLength", 12, Ty::Int),
        Field("pattern", 13, Ty::Str),
        Field("maxItems", 14, Ty::Int),
        Field("minItems", 15, Ty::Int),
        Field("uniqueItems", 16, Ty::Bool),
        Field("maxProperties", 17, Ty::Int),
        Field("minProperties", 18, Ty::Int),
        Field("required", 19, Ty::Strs),
        Field("enum", 20, Ty::Each(&Ty::Any)),
        Field(
            "additionalProperties",
            21,
            Ty::Choice(additional_properties),
        ),
        Field("type", 22, Ty::Nest(&[1], &Ty::Strs)),
        Field("items", 23, Ty::Nest(&[1], &SCHEMAS_TY)),
        Field("allOf", 24, Ty::Each(&SCHEMA_TY)),
        Field("properties", 25, Ty::Map(&PROPERTIES)),
        Field("discriminator", 26, Ty::Str),
        Field("readOnly", 27, Ty::Bool),
        Field("xml", 28, Ty::Msg(&XML)),
        Field("externalDocs", 29, Ty::Msg(&EXTERNAL_DOCS)),
        Field("example", 30, Ty::Any),
    ],
    extensions: 31,
};

static PRIMITIVES_ITEMS: Message = Message {
    fields: &[
        Field("type", 1, Ty::Str),
        Field("format", 2, Ty::Str),
        Field("items", 3, Ty::Msg(&PRIMITIVES_ITEMS)),
        Field("collectionFormat", 4, Ty::Str),
        Field("default", 5, Ty::Any),
        Field("maximum", 6, Ty::Double),
        Field("exclusiveMaximum", 7, Ty::Bool),
        Field("minimum", 8, Ty::Double),
        Field("exclusiveMinimum", 9, Ty::Bool),
        Field("maxLength", 10, Ty::Int),
        Field("minLength", 11, Ty::Int),
        Field("pattern", 12, Ty::Str),
        Field("maxItems", 13, Ty::Int),
        Field("minItems", 14, Ty::Int),
        Field("uniqueItems", 15, Ty::Bool),
        Field("enum", 16, Ty::Each(&Ty::Any)),
        Field("multipleOf", 17, Ty::Double),
    ],
    extensions: 18,
};

/// `QueryParameterSubSchema` and `FormDataParameterSubSchema` (same numbers).
static QUERY_PARAMETER: Message = Message {
    fields: &[
        Field("required", 1, Ty::Bool),
        Field("in", 2, Ty::Str),
        Field("description", 3, Ty::Str),
        Field("name", 4, Ty::Str),
        Field("allowEmptyValue", 5, Ty::Bool),
        Field("type", 6, Ty::Str),
        Field("format", 7, Ty::Str),
        Field("items", 8, Ty::Msg(&PRIMITIVES_ITEMS)),
        Field("collectionFormat", 9, Ty::Str),
        Field("default", 10, Ty::Any),
        Field("maximum", 11, Ty::Double),
        Field("exclusiveMaximum", 12, Ty::Bool),
        Field("minimum", 13, Ty::Double),
        Field("exclusiveMinimum", 14, Ty::Bool),
        Field("maxLength", 15, Ty::Int),
        Field("minLength", 16, Ty::Int),
        Field("pattern", 17, Ty::Str),
        Field("maxItems", 18, Ty::Int),
        Field("minItems", 19, Ty::Int),
        Field("uniqueItems", 20, Ty::Bool),
        Field("enum", 21, Ty::Each(&Ty::Any)),
        Field("multipleOf", 22, Ty::Double),
    ],
    extensions: 23,
};

/// `PathParameterSubSchema` and `HeaderParameterSubSchema` (same numbers).
static PATH_PARAMETER: Message = Message {
    fields: &[
        Field("required", 1, Ty::Bool),
        Field("in", 2, Ty::Str),
        Field("description", 3, Ty::Str),
        Field("name", 4, Ty::Str),
        Field("type", 5, Ty::Str),
        Field("format", 6, Ty::Str),
        Field("items", 7, Ty::Msg(&PRIMITIVES_ITEMS)),
        Field("collectionFormat", 8, Ty::Str),
        Field("default", 9, Ty::Any),
        Field("maximum", 10, Ty::Double),
        Field("exclusiveMaximum", 11, Ty::Bool),
        Field("minimum", 12, Ty::Double),
        Field("exclusiveMinimum", 13, Ty::Bool),
        Field("maxLength", 14, Ty::Int),
        Field("minLength", 15, Ty::Int),
        Field("pattern", 16, Ty::Str),
        Field("maxItems", 17, Ty::Int),
        Field("minItems", 18, Ty::Int),
        Field("uniqueItems", 19, Ty::Bool),
        Field("enum", 20, Ty::Each(&Ty::Any)),
        Field("multipleOf", 21, Ty::Double),
    ],
    extensions: 22,
};

static BODY_PARAMETER: Message = Message {
    fields: &[
        Field("description", 1, Ty::Str),
        Field("name", 2, Ty::Str),
        Field("in", 3, Ty::Str),
        Field("required", 4, Ty::Bool),
        Field("schema", 5, Ty::Msg(&SCHEMA)),
    ],
    extensions: 6,
};

static JSON_REFERENCE: Message = Message {
    fields: &[Field("$ref", 1, Ty::Str), Field("description", 2, Ty::Str)],
    extensions: 0,
};

/// `ParametersItem`: a reference, or a `Parameter` (body, or one of the four
/// `NonBodyParameter` forms by `in`).
fn parameter(v: &Value) -> Option<&'static Ty> {
    static REFERENCE: Ty = Ty::Nest(&[2], &Ty::Msg(&JSON_REFERENCE));
    static BODY: Ty = Ty::Nest(&[1, 1], &Ty::Msg(&BODY_PARAMETER));
    static HEADER: Ty = Ty::Nest(&[1, 2, 1], &Ty::Msg(&PATH_PARAMETER));
    static FORM_DATA: Ty = Ty::Nest(&[1, 2, 2], &Ty::Msg(&QUERY_PARAMETER));
    static QUERY: Ty = Ty::Nest(&[1, 2, 3], &Ty::Msg(&QUERY_PARAMETER));
    static PATH: Ty = Ty::Nest(&[1, 2, 4], &Ty::Msg(&PATH_PARAMETER));
    if v.get("$ref").is_some() {
        return Some(&REFERENCE);
    }
    match v.get("in").and_then(Value::as_str)? {
        "body" => Some(&BODY),
        "header" => Some(&HEADER),
        "formData" => Some(&FORM_DATA),
        "query" => Some(&QUERY),
        "path" => Some(&PATH),
        _ => None,
    }
}

static RESPONSE: Message = Message {
    fields: &[
        Field("description", 1, Ty::Str),
        // `SchemaItem`: kube's responses never use `FileSchema`.
        Field("schema", 2, Ty::Nest(&[1], &SCHEMA_TY)),
        Field("examples", 4, Ty::Map(&EXAMPLES)),
    ],
    extensions: 5,
};

static EXAMPLES: MapOf = MapOf {
    entries: 1,
    value: Ty::Any,
    extensions: 0,
};

/// `ResponseValue`: a reference or a response.
fn response_value(v: &Value) -> Option<&'static Ty> {
    static REFERENCE: Ty = Ty::Nest(&[2], &Ty::Msg(&JSON_REFERENCE));
    static RESPONSE_FORM: Ty = Ty::Nest(&[1], &Ty::Msg(&RESPONSE));
    if v.get("$ref").is_some() {
        Some(&REFERENCE)
    } else {
        Some(&RESPONSE_FORM)
    }
}

static RESPONSES: MapOf = MapOf {
    entries: 1,
    value: Ty::Choice(response_value),
    extensions: 2,
};

static OPERATION: Message = Message {
    fields: &[
        Field("tags", 1, Ty::Strs),
        Field("summary", 2, Ty::Str),
        Field("description", 3, Ty::Str),
        Field("externalDocs", 4, Ty::Msg(&EXTERNAL_DOCS)),
        Field("operationId", 5, Ty::Str),
        Field("produces", 6, Ty::Strs),
        Field("consumes", 7, Ty::Strs),
        Field("parameters", 8, Ty::Each(&Ty::Choice(parameter))),
        Field("responses", 9, Ty::Map(&RESPONSES)),
        Field("schemes", 10, Ty::Strs),
        Field("deprecated", 11, Ty::Bool),
        Field("security", 12, Ty::Each(&Ty::Map(&SECURITY_REQUIREMENT))),
    ],
    extensions: 13,
};

static PATH_ITEM: Message = Message {
    fields: &[
        Field("$ref", 1, Ty::Str),
        Field("get", 2, Ty::Msg(&OPERATION)),
        Field("put", 3, Ty::Msg(&OPERATION)),
        Field("post", 4, Ty::Msg(&OPERATION)),
        Field("delete", 5, Ty::Msg(&OPERATION)),
        Field("options", 6, Ty::Msg(&OPERATION)),
        Field("head", 7, Ty::Msg(&OPERATION)),
        Field("patch", 8, Ty::Msg(&OPERATION)),
        Field("parameters", 9, Ty::Each(&Ty::Choice(parameter))),
    ],
    extensions: 10,
};

static PATHS: MapOf = MapOf {
    entries: 2,
    value: Ty::Msg(&PATH_ITEM),
    extensions: 1,
};

static DEFINITIONS: MapOf = MapOf {
    entries: 1,
    value: Ty::Msg(&SCHEMA),
    extensions: 0,
};

/// `SecurityRequirement`: scheme name → `StringArray` of scopes.
static SECURITY_REQUIREMENT: MapOf = MapOf {
    entries: 1,
    value: Ty::Nest(&[1], &Ty::Strs),
    extensions: 0,
};

static API_KEY_SECURITY: Message = Message {
    fields: &[
        Field("type", 1, Ty::Str),
        Field("name", 2, Ty::Str),
        Field("in", 3, Ty::Str),
        Field("description", 4, Ty::Str),
    ],
    extensions: 5,
};

static BASIC_AUTHENTICATION_SECURITY: Message = Message {
    fields: &[Field("type", 1, Ty::Str), Field("description", 2, Ty::Str)],
    extensions: 3,
};

/// `SecurityDefinitionsItem` by `type` (kube publishes `apiKey` only; OAuth 2 forms
/// are not described).
fn security_scheme(v: &Value) -> Option<&'static Ty> {
    static BASIC: Ty = Ty::Nest(&[1], &Ty::Msg(&BASIC_AUTHENTICATION_SECURITY));
    static API_KEY: Ty = Ty::Nest(&[2], &Ty::Msg(&API_KEY_SECURITY));
    match v.get("type").and_then(Value::as_str)? {
        "basic" => Some(&BASIC),
        "apiKey" => Some(&API_KEY),
        _ => None,
    }
}

static SECURITY_DEFINITIONS: MapOf = MapOf {
    entries: 1,
    value: Ty::Choice(security_scheme),
    extensions: 0,
};

static CONTACT: Message = Message {
    fields: &[
        Field("name", 1, Ty::Str),
        Field("url", 2, Ty::Str),
        Field("email", 3, Ty::Str),
    ],
    extensions: 4,
};

static LICENSE: Message = Message {
    fields: &[Field("name", 1, Ty::Str), Field("url", 2, Ty::Str)],
    extensions: 3,
};

static INFO: Message = Message {
    fields: &[
        Field("title", 1, Ty::Str),
        Field("version", 2, Ty::Str),
        Field("description", 3, Ty::Str),
        Field("termsOfService", 4, Ty::Str),
        Field("contact", 5, Ty::Msg(&CONTACT)),
        Field("license", 6, Ty::Msg(&LICENSE)),
    ],
    extensions: 7,
};

static TAG: Message = Message {
    fields: &[
        Field("name", 1, Ty::Str),
        Field("description", 2, Ty::Str),
        Field("externalDocs", 3, Ty::Msg(&EXTERNAL_DOCS)),
    ],
    extensions: 4,
};

static DOCUMENT: Message = Message {
    fields: &[
        Field("swagger", 1, Ty::Str),
        Field("info", 2, Ty::Msg(&INFO)),
        Field("host", 3, Ty::Str),
        Field("basePath", 4, Ty::Str),
        Field("schemes", 5, Ty::Strs),
        Field("consumes", 6, Ty::Strs),
        Field("produces", 7, Ty::Strs),
        Field("paths", 8, Ty::Map(&PATHS)),
        Field("definitions", 9, Ty::Map(&DEFINITIONS)),
        Field("security", 12, Ty::Each(&Ty::Map(&SECURITY_REQUIREMENT))),
        Field("securityDefinitions", 13, Ty::Map(&SECURITY_DEFINITIONS)),
        Field("tags", 14, Ty::Each(&Ty::Msg(&TAG))),
        Field("externalDocs", 15, Ty::Msg(&EXTERNAL_DOCS)),
    ],
    extensions: 16,
};

/// The gnostic `openapi.v2.Document` protobuf of a Swagger 2.0 JSON document.
pub fn encode(doc: &Value) -> Vec<u8> {
    message(&DOCUMENT, doc)
}

// ---------------------------------------------------------------------------------------
// The writer
// ---------------------------------------------------------------------------------------

const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LENGTH_DELIMITED: u64 = 2;

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn tag(out: &mut Vec<u8>, num: u32, wire: u64) {
    varint(out, (u64::from(num) << 3) | wire);
}

fn length_delimited(out: &mut Vec<u8>, num: u32, bytes: &[u8]) {
    tag(out, num, LENGTH_DELIMITED);
    varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Go's `int64` of a JSON number (integral floats included, as Go's decoder takes them).
fn int64(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= i64::MIN as f64 && *f <= i64::MAX as f64)
            .map(|f| f as i64)
    })
}

/// An `Any`: YAML text of the value (JSON is YAML) in field 2.
fn any(v: &Value) -> Vec<u8> {
    let mut yaml = serde_json::to_string(v).unwrap_or_default();
    yaml.push('\n');
    let mut out = Vec::with_capacity(yaml.len() + 4);
    length_delimited(&mut out, 2, yaml.as_bytes());
    out
}

/// Write `v` as field `num` of form `ty`.
fn field(out: &mut Vec<u8>, num: u32, ty: &Ty, v: &Value) {
    match ty {
        Ty::Str => {
            if let Some(s) = v.as_str().filter(|s| !s.is_empty()) {
                length_delimited(out, num, s.as_bytes());
            }
        }
        Ty::Bool => {
            if v.as_bool() == Some(true) {
                tag(out, num, VARINT);
                out.push(1);
            }
        }
        Ty::Flag => {
            if let Some(b) = v.as_bool() {
                tag(out, num, VARINT);
                out.push(u8::from(b));
            }
        }
        Ty::Int => {
            if let Some(i) = int64(v).filter(|i| *i != 0) {
                tag(out, num, VARINT);
                varint(out, i as u64);
            }
        }
        Ty::Double => {
            if let Some(f) = v.as_f64().filter(|f| *f != 0.0) {
                tag(out, num, FIXED64);
                out.extend_from_slice(&f.to_le_bytes());
            }
        }
        Ty::Strs => match v {
            Value::String(s) => length_delimited(out, num, s.as_bytes()),
            Value::Array(a) => {
                for s in a.iter().filter_map(Value::as_str) {
                    length_delimited(out, num, s.as_bytes());
                }
            }
            _ => {}
        },
        Ty::Any => length_delimited(out, num, &any(v)),
        Ty::Msg(m) => {
            if v.is_object() {
                length_delimited(out, num, &message(m, v));
            }
        }
        Ty::Map(m) => {
            if let Value::Object(o) = v {
                length_delimited(out, num, &map(m, o));
            }
        }
        Ty::Each(inner) => match v {
            Value::Array(a) => a.iter().for_each(|x| field(out, num, inner, x)),
            other => field(out, num, inner, other),
        },
        Ty::Nest(path, inner) => match path.split_first() {
            None => field(out, num, inner, v),
            Some((first, rest)) => {
                let mut body = Vec::new();
                field(&mut body, *first, &Ty::Nest(rest, inner), v);
                length_delimited(out, num, &body);
            }
        },
        Ty::Choice(choose) => {
            if let Some(form) = choose(v) {
                field(out, num, form, v);
            }
        }
    }
}

/// A `NamedAny`/`NamedSchema`/... pair.
fn named(out: &mut Vec<u8>, num: u32, name: &str, ty: &Ty, v: &Value) {
    let mut pair = Vec::new();
    length_delimited(&mut pair, 1, name.as_bytes());
    field(&mut pair, 2, ty, v);
    length_delimited(out, num, &pair);
}

/// Fields are written in field-number order, as Go's marshaller does; repeated fields
/// keep the JSON document's order.
fn sorted(mut parts: Vec<(u32, Vec<u8>)>) -> Vec<u8> {
    parts.sort_by_key(|(num, _)| *num);
    parts.into_iter().flat_map(|(_, bytes)| bytes).collect()
}

fn message(m: &Message, v: &Value) -> Vec<u8> {
    let Some(obj) = v.as_object() else {
        return Vec::new();
    };
    let mut parts = Vec::with_capacity(obj.len());
    for (key, value) in obj {
        let mut bytes = Vec::new();
        if let Some(Field(_, num, ty)) = m.fields.iter().find(|f| f.0 == key) {
            field(&mut bytes, *num, ty, value);
            parts.push((*num, bytes));
        } else if m.extensions != 0 && key.starts_with("x-") {
            named(&mut bytes, m.extensions, key, &Ty::Any, value);
            parts.push((m.extensions, bytes));
        }
    }
    sorted(parts)
}

fn map(m: &MapOf, obj: &serde_json::Map<String, Value>) -> Vec<u8> {
    let mut parts = Vec::with_capacity(obj.len());
    for (key, value) in obj {
        let mut bytes = Vec::new();
        if m.extensions != 0 && key.starts_with("x-") {
            named(&mut bytes, m.extensions, key, &Ty::Any, value);
            parts.push((m.extensions, bytes));
        } else {
            named(&mut bytes, m.entries, key, &m.value, value);
            parts.push((m.entries, bytes));
        }
    }
    sorted(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scalars_follow_proto3_and_go() {
        let mut out = Vec::new();
        field(&mut out, 1, &Ty::Str, &json!(""));
        field(&mut out, 2, &Ty::Bool, &json!(false));
        field(&mut out, 3, &Ty::Int, &json!(0));
        field(&mut out, 4, &Ty::Double, &json!(0.0));
        assert!(out.is_empty(), "zero scalars are left out: {out:?}");
        field(&mut out, 1, &Ty::Flag, &json!(false));
        assert_eq!(out, [0x08, 0x00], "a oneof bool is written even when false");
        out.clear();
        field(&mut out, 11, &Ty::Int, &json!(-1));
        assert_eq!(
            out,
            [0x58, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
        out.clear();
        field(&mut out, 7, &Ty::Double, &json!(1.5));
        assert_eq!(out, [0x39, 0, 0, 0, 0, 0, 0, 0xf8, 0x3f]);
    }

    #[test]
    fn schema_type_items_and_additional_properties_use_gnostic_wrappers() {
        let schema = json!({
            "type": "array",
            "items": {"type": "string"},
            "x-kubernetes-list-type": "set",
        });
        // Schema{type=22: TypeItem{1: "array"}, items=23: ItemsItem{1: Schema{22: {1: "string"}}},
        // vendor_extension=31: NamedAny{1: name, 2: Any{2: yaml}}}.
        let mut expected = vec![0xb2, 0x01, 7, 0x0a, 5];
        expected.extend(b"array");
        expected.extend([0xba, 0x01, 13, 0x0a, 11, 0xb2, 0x01, 8, 0x0a, 6]);
        expected.extend(b"string");
        let name = b"x-kubernetes-list-type";
        let yaml = b"\"set\"\n";
        expected.extend([0xfa, 0x01, (2 + name.len() + 2 + 2 + yaml.len()) as u8]);
        expected.extend([0x0a, name.len() as u8]);
        expected.extend(name);
        expected.extend([0x12, (2 + yaml.len()) as u8, 0x12, yaml.len() as u8]);
        expected.extend(yaml);
        assert_eq!(message(&SCHEMA, &schema), expected);

        let closed = message(&SCHEMA, &json!({"additionalProperties": false}));
        assert_eq!(closed, [0xaa, 0x01, 2, 0x10, 0x00]);
    }

    #[test]
    fn parameters_pick_their_oneof_form() {
        let query = json!({"name": "pretty", "in": "query", "type": "string"});
        let mut out = Vec::new();
        field(&mut out, 8, &Ty::Choice(parameter), &query);
        // ParametersItem{1: Parameter{2: NonBodyParameter{3: QueryParameterSubSchema}}}.
        assert_eq!(&out[..8], [0x42, 29, 0x0a, 27, 0x12, 25, 0x1a, 23]);
        let body = message(&QUERY_PARAMETER, &query);
        assert_eq!(&out[8..], body.as_slice());
        out.clear();
        field(
            &mut out,
            8,
            &Ty::Choice(parameter),
            &json!({"$ref": "#/parameters/x"}),
        );
        assert_eq!(out[..4], [0x42, 18, 0x12, 16]);
        assert_eq!(&out[4..6], [0x0a, 14]);
    }
}
