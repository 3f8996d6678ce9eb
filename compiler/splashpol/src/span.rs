//! Source locations: the one location type on everything a user can get wrong.

use serde::{Deserialize, Serialize};

/// A half-open byte range `start..end` into the policy source.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Span {
    /// The first byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

impl Span {
    /// The bytes `start..end`.
    pub const fn new(start: usize, end: usize) -> Self {
        Self { start, end }
    }

    /// The length in bytes.
    pub const fn len(&self) -> usize {
        self.end.saturating_sub(self.start)
    }

    /// Whether the span covers no byte.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The smallest span covering both.
    pub fn join(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }

    /// The same range shifted right by `offset` bytes.
    pub const fn offset(self, offset: usize) -> Span {
        Span::new(self.start + offset, self.end + offset)
    }

    /// The text this span covers, if it lies on character boundaries of `source`.
    pub fn slice<'a>(&self, source: &'a str) -> Option<&'a str> {
        source.get(self.start..self.end)
    }

    pub(crate) fn of(span: pest::Span<'_>) -> Span {
        Span::new(span.start(), span.end())
    }
}

impl From<Span> for miette::SourceSpan {
    fn from(s: Span) -> Self {
        miette::SourceSpan::new(s.start.into(), s.len())
    }
}

/// One-based line and column (in characters) of byte `offset` in `source`.
/// Offsets past the end map to the position just after the last character.
///
/// A line ends at `\n`, `\r\n` or a lone `\r` (the grammar's newlines, and
/// what the human rendering counts), and a byte-order mark at the start of
/// the file takes no column. Every place that shows a position (the human
/// rendering, `splashc check --format json`, the corpus) uses this function.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(source.len());
    while !source.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &source.as_bytes()[..offset];
    let mut line = 1;
    let mut line_start = 0;
    for (i, &b) in before.iter().enumerate() {
        let ends_line = b == b'\n' || (b == b'\r' && source.as_bytes().get(i + 1) != Some(&b'\n'));
        if ends_line {
            line += 1;
            line_start = i + 1;
        }
    }
    let mut text = &source[line_start..offset];
    if line_start == 0 {
        text = text.strip_prefix(BYTE_ORDER_MARK).unwrap_or(text);
    }
    (line, text.chars().count() + 1)
}

/// The UTF-8 byte-order mark, accepted (and ignored) at the start of a file.
pub const BYTE_ORDER_MARK: char = '\u{feff}';

/// A value with the span it was written at. Spans do not take part in
/// equality, so two ASTs parsed from differently laid-out sources compare
/// equal when they say the same thing.
#[derive(Debug, Clone, Copy)]
pub struct Node<T> {
    /// The value.
    pub node: T,
    /// Where it is written.
    pub span: Span,
}

impl<T> Node<T> {
    /// `node` written at `span`.
    pub const fn new(node: T, span: Span) -> Self {
        Self { node, span }
    }
}

impl<T: PartialEq> PartialEq for Node<T> {
    fn eq(&self, other: &Self) -> bool {
        self.node == other.node
    }
}

impl<T: Eq> Eq for Node<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_lines_and_characters() {
        let src = "ab\ncé d\n";
        assert_eq!(line_col(src, 0), (1, 1));
        assert_eq!(line_col(src, 3), (2, 1));
        assert_eq!(line_col(src, 6), (2, 3));
        assert_eq!(line_col(src, 999), (3, 1));
    }

    #[test]
    fn line_col_knows_every_line_ending_and_the_byte_order_mark() {
        let src = "a\rb\r\nc\nd";
        assert_eq!(line_col(src, 2), (2, 1));
        assert_eq!(line_col(src, 3), (2, 2));
        assert_eq!(line_col(src, 5), (3, 1));
        assert_eq!(line_col(src, 7), (4, 1));
        assert_eq!(line_col("\u{feff}ab", 4), (1, 2));
        assert_eq!(
            line_col("x\n\u{feff}ab", 5),
            (2, 2),
            "only a leading mark is skipped"
        );
    }

    #[test]
    fn nodes_compare_without_spans() {
        assert_eq!(Node::new(1, Span::new(0, 1)), Node::new(1, Span::new(5, 9)));
        assert_ne!(Node::new(1, Span::new(0, 1)), Node::new(2, Span::new(0, 1)));
    }

    #[test]
    fn join_covers_both() {
        assert_eq!(Span::new(4, 6).join(Span::new(1, 2)), Span::new(1, 6));
    }
}
