//! Deterministic serialization of payload values.
//!
//! Payload values are serialized with object keys sorted by their UTF-8
//! bytes at every depth, whatever map type `serde_json` was built with, so
//! the bytes the authenticator hashes do not depend on a cargo feature of a
//! sibling crate.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

/// Serializes `value` with sorted object keys (for `serialize_with`).
pub(crate) fn serialize<S: Serializer>(value: &Value, s: S) -> Result<S::Ok, S::Error> {
    Sorted(value).serialize(s)
}

/// A borrowed value that serializes with sorted object keys.
pub(crate) struct Sorted<'a>(pub(crate) &'a Value);

impl Serialize for Sorted<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&Sorted(item))?;
                }
                seq.end()
            }
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                let mut out = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    out.serialize_entry(k, &Sorted(v))?;
                }
                out.end()
            }
            scalar => scalar.serialize(s),
        }
    }
}

/// The canonical compact serialization of `value`.
pub fn to_vec(value: &Value) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec(&Sorted(value))
}

/// The length in bytes of the canonical compact serialization of `value`.
pub fn encoded_len(value: &Value) -> Result<usize, serde_json::Error> {
    to_vec(value).map(|v| v.len())
}
