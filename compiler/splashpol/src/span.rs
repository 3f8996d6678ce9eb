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

/// [`line_col`] for many offsets into one source: built once in O(n), each
/// position is then found in O(log n) (a binary search over the line starts)
/// plus a scan of at most [`LineIndex::BLOCK`] bytes, so a position on a
/// long line costs no more than one on a short line. Every answer equals
/// [`line_col`]'s.
#[derive(Debug, Clone)]
pub struct LineIndex<'a> {
    source: &'a str,
    /// Byte offset of the start of each line after the first (just after its
    /// `\n`, `\r\n` or lone `\r`).
    line_starts: Vec<usize>,
    /// `chars_before[k]`: the number of characters in `source[..min(k * BLOCK, len)]`
    /// (counted as bytes that do not continue a UTF-8 sequence), for every
    /// `k` from 0 to the number of blocks.
    chars_before: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    /// Bytes per character-count checkpoint.
    pub const BLOCK: usize = 256;

    /// Indexes the line starts and character-count checkpoints of `source`.
    pub fn new(source: &'a str) -> Self {
        let bytes = source.as_bytes();
        let mut line_starts = Vec::new();
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')) {
                line_starts.push(i + 1);
            }
        }
        let mut chars_before = Vec::with_capacity(bytes.len() / Self::BLOCK + 2);
        let mut count = 0;
        chars_before.push(0);
        for block in bytes.chunks(Self::BLOCK) {
            count += block.iter().filter(|&&b| !is_continuation(b)).count();
            chars_before.push(count);
        }
        Self {
            source,
            line_starts,
            chars_before,
        }
    }

    /// The source this index was built over.
    #[cfg(test)]
    pub fn source(&self) -> &'a str {
        self.source
    }

    /// The zero-based line of byte `offset` and the byte offset its line starts at.
    pub fn line_start(&self, offset: usize) -> (usize, usize) {
        let line = self.line_starts.partition_point(|&s| s <= offset);
        let start = if line == 0 {
            0
        } else {
            self.line_starts[line - 1]
        };
        (line, start)
    }

    /// The byte offset the zero-based `line` starts at (the end of the
    /// source for a line past the last).
    pub fn start_of_line(&self, line: usize) -> usize {
        match line {
            0 => 0,
            n => self
                .line_starts
                .get(n - 1)
                .copied()
                .unwrap_or(self.source.len()),
        }
    }

    /// The characters in `source[..offset]`, for an offset on a character boundary.
    fn chars_to(&self, offset: usize) -> usize {
        let block = offset / Self::BLOCK;
        let from = block * Self::BLOCK;
        self.chars_before[block]
            + self.source.as_bytes()[from..offset]
                .iter()
                .filter(|&&b| !is_continuation(b))
                .count()
    }

    /// One-based line and column of byte `offset`: exactly [`line_col`].
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let source = self.source;
        let mut offset = offset.min(source.len());
        while !source.is_char_boundary(offset) {
            offset -= 1;
        }
        let (line, line_start) = self.line_start(offset);
        let mut column = self.chars_to(offset) - self.chars_to(line_start);
        if line_start == 0 && source.starts_with(BYTE_ORDER_MARK) && offset > 0 {
            column -= 1;
        }
        (line + 1, column + 1)
    }
}

/// A byte that continues a UTF-8 sequence (`0b10xx_xxxx`).
const fn is_continuation(b: u8) -> bool {
    b & 0xc0 == 0x80
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

    /// Text made of the pieces that matter to positions: every line ending,
    /// multi-byte characters, a byte-order mark anywhere, long runs.
    fn positions_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let piece = prop_oneof![
            Just("a"),
            Just("é"),
            Just("\u{1f600}"),
            Just("\n"),
            Just("\r"),
            Just("\r\n"),
            Just("\u{feff}"),
            Just(" root \"x\""),
            Just("abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789"),
        ];
        proptest::collection::vec(piece, 0..120).prop_map(|v| v.concat())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        #[test]
        fn line_index_answers_what_line_col_answers(
            text in positions_text(),
            offsets in proptest::collection::vec(0usize..4000, 1..20),
        ) {
            let index = LineIndex::new(&text);
            for offset in offsets.into_iter().chain([0, text.len(), text.len() + 1]) {
                let offset = offset.min(text.len() + 1);
                proptest::prop_assert_eq!(index.line_col(offset), line_col(&text, offset), "offset {}", offset);
            }
        }
    }

    #[test]
    fn line_index_counts_characters_across_checkpoints() {
        let text = "é".repeat(3 * LineIndex::BLOCK) + "x\ny";
        let index = LineIndex::new(&text);
        for offset in [
            0,
            1,
            2,
            255,
            256,
            257,
            511,
            512,
            513,
            text.len() - 1,
            text.len(),
        ] {
            assert_eq!(
                index.line_col(offset),
                line_col(&text, offset),
                "offset {offset}"
            );
        }
        assert_eq!(index.start_of_line(1), text.len() - 1);
        assert_eq!(index.start_of_line(9), text.len());
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
