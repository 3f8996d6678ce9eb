//! Units and typed values: byte sizes, durations, rates and counts.
//!
//! Numbers are unsigned integers with optional `_` separators; fractions are
//! rejected (use a smaller unit). Every conversion is checked: overflow is an
//! error, never a wrap.

use crate::ast::{NumberLit, Quantity};
use crate::diag::{Code, Diagnostic, suggest};
use crate::span::{Node, Span};

/// What a value measures; decides which units it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dimension {
    /// `B KiB MiB GiB TiB`, result in bytes.
    Bytes,
    /// `ms s min h`, result in milliseconds.
    Duration,
    /// `B/s KiB/s MiB/s GiB/s` (bytes per second) or `iops`.
    Rate,
    /// A bare integer.
    Count,
}

impl Dimension {
    fn describe(self) -> &'static str {
        match self {
            Dimension::Bytes => "a byte size (`B`, `KiB`, `MiB`, `GiB`, `TiB`)",
            Dimension::Duration => "a duration (`ms`, `s`, `min`, `h`)",
            Dimension::Rate => "a rate (`B/s`, `KiB/s`, `MiB/s`, `GiB/s` or `iops`)",
            Dimension::Count => "a plain count",
        }
    }

    fn example(self) -> &'static str {
        match self {
            Dimension::Bytes => "64 MiB",
            Dimension::Duration => "30 s",
            Dimension::Rate => "2 MiB/s",
            Dimension::Count => "64",
        }
    }
}

/// A known unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Bytes per unit.
    Bytes(u64),
    /// Milliseconds per unit.
    Millis(u64),
    /// Bytes per second per unit.
    BytesPerSecond(u64),
    /// I/O operations per second.
    Iops,
}

impl Unit {
    fn dimension(self) -> Dimension {
        match self {
            Unit::Bytes(_) => Dimension::Bytes,
            Unit::Millis(_) => Dimension::Duration,
            Unit::BytesPerSecond(_) | Unit::Iops => Dimension::Rate,
        }
    }
}

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const TIB: u64 = 1 << 40;

/// Every unit spelling, in documentation order.
pub const UNITS: &[(&str, Unit)] = &[
    ("B", Unit::Bytes(1)),
    ("KiB", Unit::Bytes(KIB)),
    ("MiB", Unit::Bytes(MIB)),
    ("GiB", Unit::Bytes(GIB)),
    ("TiB", Unit::Bytes(TIB)),
    ("ms", Unit::Millis(1)),
    ("s", Unit::Millis(1_000)),
    ("min", Unit::Millis(60_000)),
    ("h", Unit::Millis(3_600_000)),
    ("B/s", Unit::BytesPerSecond(1)),
    ("KiB/s", Unit::BytesPerSecond(KIB)),
    ("MiB/s", Unit::BytesPerSecond(MIB)),
    ("GiB/s", Unit::BytesPerSecond(GIB)),
    ("iops", Unit::Iops),
];

/// Common spellings that are not ours, and the unit meant.
const LOOKALIKES: &[(&str, &str)] = &[
    ("KB", "KiB"),
    ("kB", "KiB"),
    ("K", "KiB"),
    ("k", "KiB"),
    ("MB", "MiB"),
    ("M", "MiB"),
    ("GB", "GiB"),
    ("G", "GiB"),
    ("TB", "TiB"),
    ("T", "TiB"),
    ("b", "B"),
    ("bytes", "B"),
    ("byte", "B"),
    ("kib", "KiB"),
    ("mib", "MiB"),
    ("gib", "GiB"),
    ("tib", "TiB"),
    ("KB/s", "KiB/s"),
    ("kB/s", "KiB/s"),
    ("MB/s", "MiB/s"),
    ("GB/s", "GiB/s"),
    ("sec", "s"),
    ("secs", "s"),
    ("second", "s"),
    ("seconds", "s"),
    ("m", "min"),
    ("mins", "min"),
    ("minute", "min"),
    ("minutes", "min"),
    ("hr", "h"),
    ("hours", "h"),
    ("hour", "h"),
    ("msec", "ms"),
    ("us", "ms"),
    ("IOPS", "iops"),
];

/// The unit spelled `word`, if it is one of ours (case-sensitive).
pub fn parse_unit(word: &str) -> Option<Unit> {
    UNITS.iter().find(|(w, _)| *w == word).map(|&(_, u)| u)
}

/// The unit probably meant by an unknown `word`.
pub fn suggest_unit(word: &str) -> Option<&'static str> {
    LOOKALIKES
        .iter()
        .find(|(w, _)| *w == word)
        .map(|&(_, u)| u)
        .or_else(|| suggest(word, UNITS.iter().map(|(w, _)| *w)))
}

fn err<T>(d: Diagnostic) -> Result<T, Box<Diagnostic>> {
    Err(Box::new(d))
}

/// An integer literal (no unit). Rejects fractions and overflow.
pub fn integer(lit: &Node<NumberLit>) -> Result<u64, Box<Diagnostic>> {
    let text = &lit.node.0;
    if text.contains('.') {
        return err(Diagnostic::error(
            Code::FractionalNumber,
            lit.span,
            format!("fractional number `{text}`"),
        )
        .with_label("only whole numbers are allowed")
        .with_help("use a smaller unit, e.g. `1536 MiB` instead of `1.5 GiB`"));
    }
    let digits: String = text.chars().filter(|&c| c != '_').collect();
    digits.parse::<u64>().map_err(|_| overflow(lit.span, text))
}

fn overflow(span: Span, text: &str) -> Box<Diagnostic> {
    Box::new(
        Diagnostic::error(Code::NumberOverflow, span, format!("`{text}` is too large"))
            .with_label("does not fit in 64 bits")
            .with_help("values must be below 2^64 - 1 (18446744073709551615)"),
    )
}

/// A rate: bytes per second, or operations per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rate {
    /// Bytes per second.
    BytesPerSecond(u64),
    /// Operations per second.
    Iops(u64),
}

/// A checked quantity value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value {
    /// Bytes, milliseconds or a count.
    Scalar(u64),
    /// A rate.
    Rate(Rate),
}

/// Checks a quantity against its expected dimension and converts it to the
/// dimension's base unit. `what` names the setting in messages, e.g. "`cpu`".
///
/// The value `2^64 - 1` is the kernel's "infinity" for most limits and is
/// rejected like `unlimited`.
pub fn quantity(q: &Node<Quantity>, dim: Dimension, what: &str) -> Result<Value, Box<Diagnostic>> {
    let (number, unit) = match &q.node {
        Quantity::Unlimited => {
            return err(Diagnostic::error(
                Code::InfiniteLimit,
                q.span,
                format!("infinite limit for {what}"),
            )
            .with_label("`unlimited` is not a bound")
            .with_help(format!(
                "give a finite value such as `{}`, or remove the setting",
                dim.example()
            )));
        }
        Quantity::Value { number, unit } => (number, unit),
    };
    let n = integer(number)?;
    let value = match (dim, unit) {
        (Dimension::Count, None) => Value::Scalar(n),
        (Dimension::Count, Some(u)) => {
            return err(Diagnostic::error(
                Code::UnexpectedUnit,
                u.span,
                format!("{what} is a plain count and takes no unit"),
            )
            .with_label(format!("unexpected `{}`", u.node))
            .with_help(format!(
                "write just the number, e.g. `{what_num}`",
                what_num = n
            )));
        }
        (_, None) => {
            return err(Diagnostic::error(
                Code::MissingUnit,
                number.span,
                format!("{what} needs a unit"),
            )
            .with_label(format!("expected {}", dim.describe()))
            .with_help(format!(
                "write the unit after the number, e.g. `{}`",
                dim.example()
            )));
        }
        (_, Some(u)) => {
            let Some(unit) = parse_unit(&u.node) else {
                let mut d = Diagnostic::error(
                    Code::UnknownUnit,
                    u.span,
                    format!("unknown unit `{}`", u.node),
                )
                .with_label(format!("expected {}", dim.describe()));
                if let Some(s) = suggest_unit(&u.node) {
                    d = d.with_help(format!("did you mean `{s}`?"));
                }
                return Err(Box::new(d));
            };
            if unit.dimension() != dim {
                return err(Diagnostic::error(
                    Code::WrongUnit,
                    u.span,
                    format!("{what} expects {}, not `{}`", dim.describe(), u.node),
                )
                .with_label("wrong kind of unit")
                .with_help(format!("e.g. `{}`", dim.example())));
            }
            match unit {
                Unit::Bytes(m) | Unit::Millis(m) => Value::Scalar(
                    n.checked_mul(m)
                        .ok_or_else(|| overflow(q.span, &q_text(number, u)))?,
                ),
                Unit::BytesPerSecond(m) => Value::Rate(Rate::BytesPerSecond(
                    n.checked_mul(m)
                        .ok_or_else(|| overflow(q.span, &q_text(number, u)))?,
                )),
                Unit::Iops => Value::Rate(Rate::Iops(n)),
            }
        }
    };
    let raw = match value {
        Value::Scalar(v) | Value::Rate(Rate::BytesPerSecond(v) | Rate::Iops(v)) => v,
    };
    if raw == u64::MAX {
        return err(Diagnostic::error(
            Code::InfiniteLimit,
            q.span,
            format!("infinite limit for {what}"),
        )
        .with_label("2^64 - 1 means unlimited to the kernel")
        .with_help("give a smaller finite value"));
    }
    Ok(value)
}

fn q_text(number: &Node<NumberLit>, unit: &Node<String>) -> String {
    format!("{} {}", number.node.0, unit.node)
}

/// Like [`quantity`] for a scalar dimension (bytes, duration, count).
pub fn scalar(q: &Node<Quantity>, dim: Dimension, what: &str) -> Result<u64, Box<Diagnostic>> {
    match quantity(q, dim, what)? {
        Value::Scalar(v) => Ok(v),
        // A rate is only produced for `Dimension::Rate`.
        Value::Rate(Rate::BytesPerSecond(v) | Rate::Iops(v)) => Ok(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(number: &str, unit: Option<&str>) -> Node<Quantity> {
        Node::new(
            Quantity::Value {
                number: Node::new(NumberLit(number.into()), Span::new(0, number.len())),
                unit: unit.map(|u| {
                    Node::new(
                        u.to_string(),
                        Span::new(number.len() + 1, number.len() + 1 + u.len()),
                    )
                }),
            },
            Span::new(0, 20),
        )
    }

    #[test]
    fn converts_each_dimension() {
        assert_eq!(
            scalar(&q("256", Some("MiB")), Dimension::Bytes, "x"),
            Ok(256 << 20)
        );
        assert_eq!(
            scalar(&q("1_024", Some("B")), Dimension::Bytes, "x"),
            Ok(1024)
        );
        assert_eq!(
            scalar(&q("2", Some("min")), Dimension::Duration, "x"),
            Ok(120_000)
        );
        assert_eq!(scalar(&q("64", None), Dimension::Count, "x"), Ok(64));
        assert_eq!(
            quantity(&q("2", Some("MiB/s")), Dimension::Rate, "x"),
            Ok(Value::Rate(Rate::BytesPerSecond(2 << 20)))
        );
        assert_eq!(
            quantity(&q("120", Some("iops")), Dimension::Rate, "x"),
            Ok(Value::Rate(Rate::Iops(120)))
        );
    }

    #[test]
    fn rejects_missing_unknown_and_wrong_units() {
        let e = scalar(&q("256", None), Dimension::Bytes, "x").unwrap_err();
        assert_eq!((e.code, e.span), (Code::MissingUnit, Span::new(0, 3)));
        let e = scalar(&q("256", Some("MB")), Dimension::Bytes, "x").unwrap_err();
        assert_eq!((e.code, e.span), (Code::UnknownUnit, Span::new(4, 6)));
        assert_eq!(e.help.as_deref(), Some("did you mean `MiB`?"));
        let e = scalar(&q("30", Some("MiB")), Dimension::Duration, "x").unwrap_err();
        assert_eq!(e.code, Code::WrongUnit);
        let e = scalar(&q("30", Some("s")), Dimension::Count, "x").unwrap_err();
        assert_eq!(e.code, Code::UnexpectedUnit);
    }

    #[test]
    fn rejects_fractions_overflow_and_infinity() {
        let e = scalar(&q("1.5", Some("GiB")), Dimension::Bytes, "x").unwrap_err();
        assert_eq!(e.code, Code::FractionalNumber);
        let e = scalar(&q("99999999999999999999", None), Dimension::Count, "x").unwrap_err();
        assert_eq!(e.code, Code::NumberOverflow);
        let e = scalar(&q("17179869184", Some("GiB")), Dimension::Bytes, "x").unwrap_err();
        assert_eq!(e.code, Code::NumberOverflow);
        let e = scalar(&q("18446744073709551615", None), Dimension::Count, "x").unwrap_err();
        assert_eq!(e.code, Code::InfiniteLimit);
        let unlimited = Node::new(Quantity::Unlimited, Span::new(3, 12));
        let e = scalar(&unlimited, Dimension::Count, "x").unwrap_err();
        assert_eq!((e.code, e.span), (Code::InfiniteLimit, Span::new(3, 12)));
    }

    #[test]
    fn suggests_units() {
        assert_eq!(suggest_unit("GB"), Some("GiB"));
        assert_eq!(suggest_unit("sec"), Some("s"));
        assert_eq!(suggest_unit("Mib"), Some("MiB"));
        assert_eq!(suggest_unit("furlong"), None);
    }
}

/// `bytes` in the largest binary unit that divides it exactly (`8 MiB`,
/// `1536 KiB`, `100 B`): the spelling a policy would use.
pub fn format_bytes(bytes: u64) -> String {
    for (name, size) in [("TiB", TIB), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)] {
        if bytes >= size && bytes.is_multiple_of(size) {
            return format!("{} {name}", bytes / size);
        }
    }
    format!("{bytes} B")
}

/// `millis` in the largest unit that divides it exactly (`30 s`, `50 ms`).
pub fn format_millis(millis: u64) -> String {
    for (name, size) in [("h", 3_600_000), ("min", 60_000), ("s", 1_000)] {
        if millis >= size && millis.is_multiple_of(size) {
            return format!("{} {name}", millis / size);
        }
    }
    format!("{millis} ms")
}

#[cfg(test)]
mod format_tests {
    use super::*;

    #[test]
    fn values_format_in_the_largest_exact_unit() {
        assert_eq!(format_bytes(8 * MIB), "8 MiB");
        assert_eq!(format_bytes(1536 * KIB), "1536 KiB");
        assert_eq!(format_bytes(100), "100 B");
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(2 * TIB), "2 TiB");
        assert_eq!(format_millis(30_000), "30 s");
        assert_eq!(format_millis(50), "50 ms");
        assert_eq!(format_millis(300_000), "5 min");
        assert_eq!(format_millis(0), "0 ms");
    }
}
