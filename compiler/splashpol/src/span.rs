//! Source locations: the one location type on everything a user can get wrong.

use serde::{Deserialize, Serialize};

/// A half-open byte range `start..end` into the policy source.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub const fn new(start: usize, end: usize) -> Self {
        Self { start, end }
    }

    pub const fn len(&self) -> usize {
        self.end.saturating_sub(self.start)
    }

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
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(source.len());
    while !source.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &source[..offset];
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// A value with the span it was written at. Spans do not take part in
/// equality, so two ASTs parsed from differently laid-out sources compare
/// equal when they say the same thing.
#[derive(Debug, Clone, Copy)]
pub struct Node<T> {
    pub node: T,
    pub span: Span,
}

impl<T> Node<T> {
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
    fn nodes_compare_without_spans() {
        assert_eq!(Node::new(1, Span::new(0, 1)), Node::new(1, Span::new(5, 9)));
        assert_ne!(Node::new(1, Span::new(0, 1)), Node::new(2, Span::new(0, 1)));
    }

    #[test]
    fn join_covers_both() {
        assert_eq!(Span::new(4, 6).join(Span::new(1, 2)), Span::new(1, 6));
    }
}
