//! Protobuf's wire format: reading fields with every length checked against the
//! remaining input, and writing them.

use super::ProtobufError;

/// A field's payload.
#[derive(Clone, Copy, Debug)]
pub enum Payload<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32,
    Bytes(&'a [u8]),
}

impl Payload<'_> {
    pub fn wire_type(&self) -> u64 {
        match self {
            Payload::Varint(_) => 0,
            Payload::Fixed64(_) => 1,
            Payload::Bytes(_) => 2,
            Payload::Fixed32 => 5,
        }
    }
}

/// Reads fields from a message's bytes.
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub fn varint(&mut self) -> Result<u64, ProtobufError> {
        let mut out = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos).ok_or(ProtobufError::UnexpectedEof)?;
            self.pos += 1;
            out |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err(ProtobufError::IntegerOverflow)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtobufError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.buf.len())
            .ok_or(ProtobufError::UnexpectedEof)?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    /// The next field: its number and payload; `None` at the end.
    pub fn next_field(&mut self) -> Result<Option<(u64, Payload<'a>)>, ProtobufError> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let payload = match key & 7 {
            0 => Payload::Varint(self.varint()?),
            1 => {
                let b = self.take(8)?;
                Payload::Fixed64(u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            }
            2 => {
                let n = self.varint()?;
                // Go reads the length as an int: a negative one is its own error.
                if (n as i64) < 0 {
                    return Err(ProtobufError::NegativeLength);
                }
                let n = usize::try_from(n).map_err(|_| ProtobufError::UnexpectedEof)?;
                Payload::Bytes(self.take(n)?)
            }
            5 => {
                self.take(4)?;
                Payload::Fixed32
            }
            w => return Err(ProtobufError::IllegalWireType(w)),
        };
        if key >> 3 == 0 {
            return Err(ProtobufError::IllegalTag(key & 7));
        }
        Ok(Some((key >> 3, payload)))
    }
}

pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub fn put_key(out: &mut Vec<u8>, num: u32, wire: u8) {
    put_varint(out, (u64::from(num) << 3) | u64::from(wire));
}

pub fn put_bytes(out: &mut Vec<u8>, num: u32, b: &[u8]) {
    put_key(out, num, 2);
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

impl Reader<'_> {
    /// Whether every byte was read.
    pub fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }
}
