//! The process-wide caches of what a CRD's spec costs: its compilation and its
//! validation. Every catalog of the process compiles CRDs through [`compile`] and every
//! CRD create validates its spec through [`validate_spec`], so the next server of a
//! test suite loading the same CRDs (or one server re-creating a CRD) costs a content
//! hash instead.
//!
//! Keys are the SHA-256 of exactly what the cached function reads: for compiling,
//! [`CompileInput`] (the name, whether the CRD is terminating, the spec as JSON); for
//! validating, the spec. A CRD that differs by one byte is another entry. Values are
//! shared: a [`CompiledSpec`] (`Arc`s of data that only its versions' on-demand
//! schemas change, always to the same; what differs per server, the object and its revision, stays in each catalog's
//! [`CompiledCrd`]) and the spec's error list (copied out).
//!
//! Bounded ([`ContentCache`]): each cache holds at most [`MAX_ENTRIES`] entries and
//! [`MAX_WEIGHT`] bytes of spec JSON; past either, the least recently used entries go
//! (servers holding them keep their `Arc`s). Concurrent makers of one key wait for the
//! first.

pub use super::content_cache::CacheStats;
use super::content_cache::{ContentCache, Key, KeyBuilder};
use apimachinery::crd::compiled::{CompileInput, CompiledCrd, CompiledSpec};
use apimachinery::crd::CrdError;
use apimachinery::field::ErrorList;
use apimachinery::schema::default::DefaultChecks;
use serde_json::Value;
use std::convert::Infallible;
use std::sync::{Arc, LazyLock};

/// Most entries each cache keeps.
pub const MAX_ENTRIES: usize = 512;

/// Most bytes of spec JSON each cache's entries were made from (a proxy of their
/// memory: a compiled CRD takes a small multiple of its JSON).
pub const MAX_WEIGHT: usize = 32 << 20;

/// The counters of both caches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CrdCacheStats {
    /// Compiled CRDs ([`compile`]).
    pub compiled: CacheStats,
    /// Validated specs ([`validate_spec`]).
    pub validated: CacheStats,
}

/// A CRD compiled through the process-wide cache ([`CompiledCrd::compile`]'s result).
pub fn compile(object: Value, revision: i64) -> Result<CompiledCrd, CrdError> {
    let spec = compile_spec(&COMPILED, &CompileInput::of(&object))?;
    Ok(CompiledCrd::with_spec(object, revision, &spec))
}

/// The errors of a new CRD's spec (`crd::validate_crd_spec`, kube's default checks),
/// computed once per spec content in the process.
pub fn validate_spec(spec: &Value) -> ErrorList {
    let mut key = KeyBuilder::new("validated CRD spec");
    key.json(spec);
    let (key, weight) = key.finish();
    let errors = VALIDATED.get_or_insert_with(key, weight, || {
        let errors = apimachinery::crd::validate_crd_spec(spec, &DefaultChecks::default());
        Ok::<_, Infallible>(Arc::new(errors))
    });
    match errors {
        Ok(errors) => errors.as_ref().clone(),
        Err(never) => match never {},
    }
}

/// The process-wide caches' counters.
pub fn stats() -> CrdCacheStats {
    CrdCacheStats {
        compiled: COMPILED.stats(),
        validated: VALIDATED.stats(),
    }
}

/// Empty the process-wide caches (for benchmarks of cold starts): the next compilation
/// and validation of every CRD is a miss. Catalogs keep what they hold.
pub fn clear() {
    COMPILED.clear();
    VALIDATED.clear();
}

static COMPILED: LazyLock<ContentCache<Arc<CompiledSpec>>> =
    LazyLock::new(|| ContentCache::new(MAX_ENTRIES, MAX_WEIGHT));

static VALIDATED: LazyLock<ContentCache<Arc<ErrorList>>> =
    LazyLock::new(|| ContentCache::new(MAX_ENTRIES, MAX_WEIGHT));

fn compile_spec(
    cache: &ContentCache<Arc<CompiledSpec>>,
    input: &CompileInput<'_>,
) -> Result<Arc<CompiledSpec>, CrdError> {
    let (key, weight) = key_of(input);
    cache.get_or_insert_with(key, weight, || CompiledSpec::compile(input).map(Arc::new))
}

/// The content key of a CRD: its name, terminating flag and spec; weighed by the
/// spec's JSON.
fn key_of(input: &CompileInput<'_>) -> (Key, usize) {
    let mut k = KeyBuilder::new("compiled CRD");
    k.bytes(input.name.as_bytes())
        .bytes(&[u8::from(input.terminating)]);
    match input.spec {
        None => k.bytes(&[0]),
        Some(spec) => k.bytes(&[1]).json(spec),
    };
    k.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(name: &str, default_color: &str) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{name}s.example.com"), "uid": "u1"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": format!("{name}s"), "kind": "Widget"},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "properties": {"spec": {
                            "type": "object",
                            "x-kubernetes-validations": [{"rule": "self.color != 'red'"}],
                            "properties": {"color": {"type": "string", "default": default_color}}
                        }}
                    }}
                }]
            }
        })
    }

    fn default_of(spec: &CompiledSpec) -> Value {
        let s = spec.versions[0].schema();
        let mut obj = json!({"spec": {}});
        apimachinery::schema::default::apply_defaults(&mut obj, &s.structural);
        obj["spec"]["color"].clone()
    }

    fn cache() -> ContentCache<Arc<CompiledSpec>> {
        ContentCache::new(8, 1 << 20)
    }

    fn compiled(cache: &ContentCache<Arc<CompiledSpec>>, crd: &Value) -> Arc<CompiledSpec> {
        compile_spec(cache, &CompileInput::of(crd)).unwrap()
    }

    #[test]
    fn the_same_content_is_compiled_once_and_shared() {
        let cache = cache();
        let a = crd("widget", "blue");
        let mut b = a.clone();
        // Not part of the key: other metadata, status.
        b["metadata"]["uid"] = json!("u2");
        b["status"] = json!({"storedVersions": ["v1"]});
        let first = compiled(&cache, &a);
        let second = compiled(&cache, &b);
        assert!(Arc::ptr_eq(&first, &second));
        let s = cache.stats();
        assert_eq!((s.hits, s.misses, s.entries), (1, 1, 1));
        // Two catalogs' CompiledCrds share the versions and differ in their objects.
        let one = CompiledCrd::with_spec(a.clone(), 1, &first);
        let two = CompiledCrd::with_spec(b, 7, &second);
        assert!(Arc::ptr_eq(&one.versions, &two.versions));
        assert_eq!((one.revision, two.revision), (1, 7));
        assert_eq!(two.object["metadata"]["uid"], "u2");
    }

    #[test]
    fn one_byte_of_difference_is_another_entry() {
        let cache = cache();
        let blue = compiled(&cache, &crd("widget", "blue"));
        let blub = compiled(&cache, &crd("widget", "blub"));
        assert!(!Arc::ptr_eq(&blue, &blub));
        assert_eq!(default_of(&blue), json!("blue"));
        assert_eq!(default_of(&blub), json!("blub"));
        // The name and the terminating flag are part of the key too.
        let other = compiled(&cache, &crd("gadget", "blue"));
        assert_eq!(other.info.name, "gadgets.example.com");
        let mut deleting = crd("widget", "blue");
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        let terminating = compiled(&cache, &deleting);
        assert!(terminating.info.terminating && !blue.info.terminating);
        let s = cache.stats();
        assert_eq!((s.hits, s.misses, s.entries), (0, 4, 4));
    }

    #[test]
    fn a_crd_that_does_not_compile_is_no_entry() {
        let cache = cache();
        let mut bad = crd("widget", "blue");
        bad["spec"]["scope"] = json!("Galaxy");
        assert!(compile_spec(&cache, &CompileInput::of(&bad)).is_err());
        assert_eq!(cache.stats().entries, 0);
    }

    #[test]
    fn a_cached_spec_validation_is_the_validation() {
        let mut good = crd("validwidget", "blue");
        apimachinery::crd::default_crd(&mut good);
        let mut bad = good.clone();
        bad["metadata"]["name"] = json!("not-the-plural.example.com");
        bad["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["x-kubernetes-validations"] = json!([{"rule": "self.colour == 'red'"}]);
        for obj in [&good, &bad] {
            let expected = apimachinery::crd::validate_crd(obj);
            for _ in 0..2 {
                let cached = validate_spec(&obj["spec"]);
                let got = apimachinery::crd::validate_crd_given_spec(obj, cached);
                assert_eq!(got, expected);
            }
        }
        let errs = apimachinery::crd::validate_crd(&good);
        assert!(errs.is_empty(), "{errs:?}");
        // The name's error (metadata), then the rule's (spec), as kube orders them.
        let fields: Vec<String> = apimachinery::crd::validate_crd(&bad)
            .iter()
            .map(|e| e.field.to_string())
            .collect();
        assert_eq!(fields.first().map(String::as_str), Some("metadata.name"));
        assert!(
            fields
                .iter()
                .any(|f| f.contains("x-kubernetes-validations")),
            "{fields:?}"
        );
        assert!(stats().validated.hits >= 2);
    }
}
