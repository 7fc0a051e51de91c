//! `--load` manifests decoded once per process: a file's documents are kept by the
//! SHA-256 of its bytes (`registry::content_cache`), so every server of a test suite
//! loading one directory reads its files but parses them once. Keyed by content, not
//! by path or mtime: an edited file is parsed again, whatever the clock says.

use crate::codec::{self, CodecError};
use crate::registry::content_cache::{CacheStats, ContentCache, KeyBuilder};
use serde_json::Value;
use std::sync::{Arc, LazyLock};

/// Most files whose documents are kept.
pub const MAX_ENTRIES: usize = 256;

/// Most bytes of manifest text whose documents are kept.
pub const MAX_WEIGHT: usize = 64 << 20;

static CACHE: LazyLock<ContentCache<Arc<Vec<Value>>>> =
    LazyLock::new(|| ContentCache::new(MAX_ENTRIES, MAX_WEIGHT));

/// The documents of a manifest text (`codec::decode_manifests`), parsed once per
/// content; the caller owns the copies it gets.
pub fn decode(bytes: &[u8], is_yaml: bool) -> Result<Vec<Value>, CodecError> {
    let mut key = KeyBuilder::new("manifests");
    key.bytes(&[u8::from(is_yaml)]).bytes(bytes);
    let (key, weight) = key.finish();
    let docs = CACHE.get_or_insert_with(key, weight, || {
        codec::decode_manifests(bytes, is_yaml).map(Arc::new)
    })?;
    Ok(docs.as_ref().clone())
}

/// The counters of the process-wide cache of decoded manifests.
pub fn stats() -> CacheStats {
    CACHE.stats()
}

/// Empty the process-wide cache of decoded manifests (for benchmarks of cold starts).
pub fn clear() {
    CACHE.clear()
}
