//! Bytes kept compressed: text that is held long and read rarely (CRD schemas, OpenAPI
//! documents of CRD groups) takes a fraction of its size while kept, and is inflated
//! per read.

use std::io::{Read, Write};
use std::sync::Arc;

/// Bytes compressed with zlib (fast level); cheap to clone (shared).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packed {
    bytes: Arc<[u8]>,
    /// Length unpacked.
    len: usize,
}

impl Packed {
    /// `bytes`, compressed.
    pub fn pack(bytes: &[u8]) -> Packed {
        let mut packed = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        // Writes into a Vec cannot fail.
        let _ = packed.write_all(bytes);
        Packed {
            bytes: packed.finish().unwrap_or_default().into(),
            len: bytes.len(),
        }
    }

    /// The bytes as they were packed.
    pub fn unpack(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(self.len);
        // The input was written by `pack`: it inflates whole.
        let _ = flate2::read::ZlibDecoder::new(&self.bytes[..]).read_to_end(&mut bytes);
        bytes
    }

    /// Size kept, compressed.
    pub fn packed_len(&self) -> usize {
        self.bytes.len()
    }

    /// Size of the bytes unpacked.
    pub fn unpacked_len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::Packed;

    #[test]
    fn unpacks_what_was_packed_in_less_room() {
        let text = "description of a field, ".repeat(1000);
        let packed = Packed::pack(text.as_bytes());
        assert_eq!(packed.unpack(), text.as_bytes());
        assert_eq!(packed.unpacked_len(), text.len());
        assert!(
            packed.packed_len() * 10 < text.len(),
            "{}",
            packed.packed_len()
        );
        assert_eq!(Packed::pack(b"").unpack(), b"");
    }
}
