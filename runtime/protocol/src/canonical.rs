//! Deterministic serialization: the bytes a tag covers.
//!
//! Both ends re-serialize a message from its typed form before they hash it,
//! so the serialization must be a function of the value alone, identical in
//! every implementation. Two things in `serde_json` are not fixed by its
//! API and are therefore fixed here:
//!
//! - object keys of payload values are written sorted by their UTF-8 bytes
//!   at every depth (`Sorted`), whatever map type `serde_json` was built
//!   with;
//! - floating-point numbers are written by `write_f64`, not by the float
//!   formatter `serde_json` happens to use. The layout is the one Splash's
//!   `serde_json` (1.0.150, with the `zmij` formatter) produces: the
//!   shortest digits that read back as the same double, ties between two
//!   shortest candidates broken towards an even last digit; plain notation
//!   with at least one fractional digit when the decimal exponent of the
//!   first digit is in -5..=15 (`1000.0`, `0.5`, `0.00001`), otherwise
//!   `d[.ddd]e+N` / `d[.ddd]e-N` (`1e+16`, `1.5e-7`); `-0.0` keeps its sign.
//!
//! Integers are written as they were read (`serde_json` keeps an integer
//! without fraction or exponent in `u64`/`i64` range as an integer), so `1`
//! stays `1` while `1.0`, `1e0` and `1.00` all become `1.0`. See
//! `docs/protocol.md` for the test vectors.

use std::io;

use serde::Serialize;
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;
use serde_json::ser::Formatter;

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

/// The compact formatter of `serde_json` with this module's float layout.
#[derive(Debug, Clone, Copy, Default)]
pub struct CanonicalFormatter;

impl Formatter for CanonicalFormatter {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        writer.write_all(format_f64(value).as_bytes())
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        writer.write_all(format_f64(f64::from(value)).as_bytes())
    }
}

/// Serializes any value compactly with the canonical float layout.
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(128);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, CanonicalFormatter);
    value.serialize(&mut ser)?;
    Ok(out)
}

/// The canonical compact serialization of a payload value (sorted keys).
pub fn value_to_vec(value: &Value) -> Result<Vec<u8>, serde_json::Error> {
    to_vec(&Sorted(value))
}

/// The length in bytes of the canonical compact serialization of `value`.
pub fn encoded_len(value: &Value) -> Result<usize, serde_json::Error> {
    value_to_vec(value).map(|v| v.len())
}

/// Writes a finite double in the canonical layout (see the module
/// documentation). Not-finite values cannot occur in a JSON value; they are
/// written as `null`, as `serde_json` does.
pub fn format_f64(value: f64) -> String {
    if !value.is_finite() {
        return "null".to_owned();
    }
    let (digits, exp) = shortest_digits(value.abs());
    let mut out = String::with_capacity(digits.len() + 8);
    if value.is_sign_negative() {
        out.push('-');
    }
    let n = i64::try_from(digits.len()).unwrap_or(i64::MAX);
    let exp = i64::from(exp);
    let digit = |i: usize| char::from(digits.get(i).copied().unwrap_or(b'0'));
    if (-5..=15).contains(&exp) {
        if exp >= 0 {
            // Integer part: the first exp + 1 digits, padded with zeros.
            for i in 0..=exp {
                out.push(digit(usize::try_from(i).unwrap_or(usize::MAX)));
            }
            out.push('.');
            if n <= exp + 1 {
                out.push('0');
            } else {
                for i in (exp + 1)..n {
                    out.push(digit(usize::try_from(i).unwrap_or(usize::MAX)));
                }
            }
        } else {
            out.push_str("0.");
            for _ in 0..(-exp - 1) {
                out.push('0');
            }
            out.extend(digits.iter().map(|&b| char::from(b)));
        }
    } else {
        out.push(digit(0));
        if digits.len() > 1 {
            out.push('.');
            out.extend(digits.iter().skip(1).map(|&b| char::from(b)));
        }
        out.push('e');
        out.push(if exp >= 0 { '+' } else { '-' });
        out.push_str(&exp.abs().to_string());
    }
    out
}

/// Strips leading zeros (moving the exponent) and trailing zeros.
fn normalize(mut digits: Vec<u8>, mut exp: i32) -> (Vec<u8>, i32) {
    let leading = digits
        .iter()
        .take(digits.len().saturating_sub(1))
        .take_while(|&&d| d == b'0')
        .count();
    digits.drain(..leading);
    exp -= i32::try_from(leading).unwrap_or(0);
    while digits.len() > 1 && digits.last() == Some(&b'0') {
        digits.pop();
    }
    (digits, exp)
}

/// Splits Rust's `{:e}` output (`d.ddde±N`) into digits and the exponent of
/// the first digit.
fn scientific_parts(text: &str) -> Option<(Vec<u8>, i32)> {
    let (mantissa, exp) = text.split_once('e')?;
    let digits: Vec<u8> = mantissa.bytes().filter(|&b| b != b'.').collect();
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(normalize(digits, exp.parse().ok()?))
}

/// The value of `digits` with the first digit at decimal exponent `exp`.
fn parse_digits(digits: &[u8], exp: i32) -> Option<f64> {
    let text = std::str::from_utf8(digits).ok()?;
    let scale = i64::from(exp) - i64::try_from(digits.len()).ok()? + 1;
    format!("{text}e{scale}").parse().ok()
}

/// The shortest digits that read back as `value` (non-negative, finite)
/// and the decimal exponent of the first digit; between two equally close
/// shortest candidates, the one with an even last digit.
///
/// Rust's `{:e}` gives shortest, closest digits but breaks an exact tie
/// upwards; the tie is detected from the exact expansion (a double has at
/// most 767 significant decimal digits, so 1100 are exact).
fn shortest_digits(value: f64) -> (Vec<u8>, i32) {
    let fallback = || (b"0".to_vec(), 0);
    let Some((digits, exp)) = scientific_parts(&format!("{value:e}")) else {
        return fallback();
    };
    let Some(&last) = digits.last() else {
        return fallback();
    };
    if (last - b'0').is_multiple_of(2) {
        return (digits, exp);
    }
    let Some(exact) = scientific_parts(&format!("{value:.1100e}")) else {
        return (digits, exp);
    };
    let replace_last = |d: u8| {
        let mut v = digits.clone();
        if let Some(l) = v.last_mut() {
            *l = d;
        }
        v
    };
    let down = replace_last(last - 1);
    let mut midpoint_below = down.clone();
    midpoint_below.push(b'5');
    let mut midpoint_above = digits.clone();
    midpoint_above.push(b'5');
    let other = if normalize(midpoint_below, exp) == exact {
        Some(down)
    } else if last != b'9' && normalize(midpoint_above, exp) == exact {
        Some(replace_last(last + 1))
    } else {
        None
    };
    if let Some(other) = other {
        let (other, other_exp) = normalize(other, exp);
        if parse_digits(&other, other_exp) == Some(value) {
            return (other, other_exp);
        }
    }
    (digits, exp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_vectors() {
        for (v, s) in [
            (1000.0, "1000.0"),
            (1.5, "1.5"),
            (0.5, "0.5"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1e-5, "0.00001"),
            (1e-6, "1e-6"),
            (1e-7, "1e-7"),
            (1.5e300, "1.5e+300"),
            (5e-324, "5e-324"),
            (1_658_206_780_088_562.0 + 0.25, "1658206780088562.2"),
            (-(26_829_767_983_277.0 + 0.3125), "-26829767983277.312"),
        ] {
            assert_eq!(format_f64(v), s, "{v:?}");
        }
    }
}
