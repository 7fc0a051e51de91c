//! Manifest files (`--load`): every YAML document or concatenated JSON value, empty
//! documents skipped and `kind: List` items flattened, in order.

use super::json::is_space;
use super::yaml::yaml_documents;
use super::{decode_json, CodecError};
use serde::de;
use serde_json::Value;

/// Decode a manifest file: every YAML document (or every concatenated JSON value),
/// skipping empty documents and flattening `kind: List` items, in order.
pub fn decode_manifests(bytes: &[u8], is_yaml: bool) -> Result<Vec<Value>, CodecError> {
    let docs = if is_yaml {
        yaml_documents(bytes)?
    } else {
        json_values(bytes)?
    };
    let mut out = Vec::new();
    flatten_lists(docs, &mut out);
    Ok(out)
}

/// Every JSON value of a stream of concatenated values.
fn json_values(bytes: &[u8]) -> Result<Vec<Value>, CodecError> {
    let mut docs = Vec::new();
    let mut rest = bytes;
    loop {
        let start = rest.iter().position(|b| !is_space(*b));
        let Some(start) = start else { break };
        rest = &rest[start..];
        let mut stream = serde_json::Deserializer::from_slice(rest).into_iter::<de::IgnoredAny>();
        let end = match stream.next() {
            Some(Ok(_)) => stream.byte_offset(),
            _ => rest.len(),
        };
        docs.push(decode_json(&rest[..end]).map_err(CodecError::Manifest)?);
        rest = &rest[end..];
    }
    Ok(docs)
}

fn flatten_lists(docs: Vec<Value>, out: &mut Vec<Value>) {
    for d in docs {
        match d {
            Value::Null => {}
            Value::Object(ref o)
                if o.get("kind").and_then(Value::as_str) == Some("List")
                    && o.get("items").is_some_and(Value::is_array) =>
            {
                if let Some(Value::Array(items)) = o.get("items") {
                    flatten_lists(items.clone(), out);
                }
            }
            other => out.push(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn manifests_split_and_flatten() {
        let docs = decode_manifests(
            b"---\napiVersion: v1\nkind: A\n---\n\n---\nkind: List\nitems:\n- kind: B\n- kind: C\n",
            true,
        )
        .unwrap();
        assert_eq!(
            docs,
            vec![
                json!({"apiVersion": "v1", "kind": "A"}),
                json!({"kind": "B"}),
                json!({"kind": "C"})
            ]
        );
        let docs = decode_manifests(b"{\"kind\":\"A\"}\n{\"kind\":\"B\"}", false).unwrap();
        assert_eq!(docs, vec![json!({"kind": "A"}), json!({"kind": "B"})]);
    }
}
