//! kube v1.36's `/openapi/v3/<group-version>` documents of the built-in groups, as
//! recorded from a real kube-apiserver and packed by `scripts/kube-api-data.py` into
//! `data/kube-v1.36/openapi-v3.json.zlib`: one zlib stream of
//! `{"documents": {"api/v1": …, "apis/apps/v1": …}, "shared": […]}`, where a subtree
//! the documents repeat is written once in `shared` and referred to as
//! `{"$shared": <index>}` (a shared entry refers only to earlier ones). Regenerate it
//! deliberately rather than edit it.

use crate::codec::Packed;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::OnceLock;

const PACKED: &[u8] = include_bytes!("../data/kube-v1.36/openapi-v3.json.zlib");

const SHARED: &str = "$shared";

/// Every built-in group-version's document by its path under `/openapi/v3/`
/// (`api/v1`, `apis/apps/v1`, …): compact JSON, keys sorted, each kept compressed on
/// its own (whole, the documents take about 20 MB; a request inflates one).
pub fn builtin_openapi_v3() -> &'static BTreeMap<String, Packed> {
    static DOCS: OnceLock<BTreeMap<String, Packed>> = OnceLock::new();
    DOCS.get_or_init(|| {
        unpack(PACKED)
            .unwrap_or_default()
            .into_iter()
            .map(|(gv, doc)| (gv, Packed::pack(&doc)))
            .collect()
    })
}

fn unpack(packed: &[u8]) -> Option<BTreeMap<String, Vec<u8>>> {
    let mut text = Vec::new();
    flate2::read::ZlibDecoder::new(packed)
        .read_to_end(&mut text)
        .ok()?;
    let mut pack: Value = serde_json::from_slice(&text).ok()?;
    let Value::Array(entries) = pack.get_mut("shared")?.take() else {
        return None;
    };
    let mut shared: Vec<Vec<u8>> = Vec::with_capacity(entries.len());
    for entry in &entries {
        let mut bytes = Vec::new();
        write(entry, &shared, &mut bytes)?;
        shared.push(bytes);
    }
    let Value::Object(docs) = pack.get_mut("documents")?.take() else {
        return None;
    };
    docs.iter()
        .map(|(name, doc)| {
            let mut bytes = Vec::new();
            write(doc, &shared, &mut bytes)?;
            Some((name.clone(), bytes))
        })
        .collect()
}

/// Compact JSON of `v` in its own key order, each `{"$shared": i}` written as the
/// bytes of `shared[i]`; `None` on a reference to an entry not yet written.
fn write(v: &Value, shared: &[Vec<u8>], out: &mut Vec<u8>) -> Option<()> {
    match v {
        Value::Object(m) if m.len() == 1 && m.contains_key(SHARED) => {
            let i = usize::try_from(m[SHARED].as_u64()?).ok()?;
            out.extend_from_slice(shared.get(i)?);
        }
        Value::Object(m) => {
            out.push(b'{');
            for (n, (k, x)) in m.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                serde_json::to_writer(&mut *out, k).ok()?;
                out.push(b':');
                write(x, shared, out)?;
            }
            out.push(b'}');
        }
        Value::Array(a) => {
            out.push(b'[');
            for (n, x) in a.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                write(x, shared, out)?;
            }
            out.push(b']');
        }
        scalar => serde_json::to_writer(&mut *out, scalar).ok()?,
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_group_version_unpacks() {
        let docs = builtin_openapi_v3();
        // kube's 22 default group-versions and the 10 `--runtime-config` turns on.
        assert_eq!(docs.len(), 32);
        assert!(docs.contains_key("apis/resource.k8s.io/v1beta1"));
        let apps: Value = serde_json::from_slice(&docs["apis/apps/v1"].unpack()).expect("JSON");
        assert_eq!(apps["openapi"], "3.0.0");
        assert!(apps["paths"]
            .get("/apis/apps/v1/watch/deployments")
            .is_some());
        assert!(apps["components"]["schemas"]
            .get("io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent")
            .is_some());
    }

    #[test]
    fn shared_references_expand_in_place() {
        let shared = vec![br#""x""#.to_vec(), br#"{"a":"x"}"#.to_vec()];
        let mut out = Vec::new();
        let doc = serde_json::json!({"k": [{"$shared": 1}, {"$shared": 0, "b": 1}]});
        write(&doc, &shared, &mut out).expect("written");
        assert_eq!(
            String::from_utf8(out).expect("UTF-8"),
            r#"{"k":[{"a":"x"},{"$shared":0,"b":1}]}"#
        );
        assert!(write(&serde_json::json!({"$shared": 2}), &shared, &mut Vec::new()).is_none());
    }
}
