//! Diagnostics: what `check` reports, how it renders (miette, JSON), and the
//! "did you mean" helper.

use std::fmt;

use miette::{
    GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError, MietteSpanContents,
    SourceCode, SourceSpan, SpanContents,
};
use serde_json::json;

use crate::model;
use crate::span::{LineIndex, Span};

mod code;

pub use code::{Code, UnknownCode};

/// How bad a diagnostic is. Only errors stop a policy from being produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The policy is refused.
    Error,
    /// The policy is accepted; something deserves attention.
    Warning,
}

impl Severity {
    /// The name in rendered and JSON output (`error`, `warning`).
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

/// One problem found in a policy, with a stable code, a primary span and
/// optional related spans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Stable code, e.g. [`Code::OverlappingMount`]
    /// (`splash::check::overlapping-mount`); listed in `docs/diagnostics.md`.
    pub code: Code,
    /// Error or warning.
    pub severity: Severity,
    /// Lowercase, no final period, user text in backticks.
    pub message: String,
    /// Primary location (byte offsets into the source).
    pub span: Span,
    /// Text shown at the primary span.
    pub label: Option<String>,
    /// How to fix it.
    pub help: Option<String>,
    /// Other places that take part (e.g. the first of two duplicates).
    pub related: Vec<(Span, String)>,
}

impl Diagnostic {
    /// An error with `code` at `span`.
    pub fn error(code: Code, span: Span, message: impl Into<String>) -> Self {
        Self {
            code,
            severity: Severity::Error,
            message: message.into(),
            span,
            label: None,
            help: None,
            related: Vec::new(),
        }
    }

    /// A warning with `code` at `span`.
    pub fn warning(code: Code, span: Span, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            ..Self::error(code, span, message)
        }
    }

    /// Adds the text shown at the primary span.
    #[must_use]
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Adds how to fix it.
    #[must_use]
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Adds another place that takes part.
    #[must_use]
    pub fn with_related(mut self, span: Span, text: impl Into<String>) -> Self {
        self.related.push((span, text.into()));
        self
    }

    /// Whether this is an error.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    fn to_json(&self) -> serde_json::Value {
        json!({
            "code": self.code.as_str(),
            "severity": self.severity.as_str(),
            "message": self.message,
            "span": { "start": self.span.start, "end": self.span.end },
            "label": self.label,
            "help": self.help,
            "related": self.related.iter().map(|(s, t)| json!({
                "span": { "start": s.start, "end": s.end },
                "message": t,
            })).collect::<Vec<_>>(),
        })
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Diagnostic {}

impl miette::Diagnostic for Diagnostic {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.code))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display + 'a>)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let primary = std::iter::once(LabeledSpan::new_primary_with_span(
            self.label.clone(),
            self.span,
        ));
        let related = self
            .related
            .iter()
            .map(|(s, t)| LabeledSpan::new_with_span(Some(t.clone()), *s));
        Some(Box::new(primary.chain(related)))
    }
}

/// A diagnostic bound to its source text, for miette rendering.
struct Sourced<'a> {
    diagnostic: &'a Diagnostic,
    source: &'a PolicySource<'a>,
}

/// The source as miette sees it. Positions come from [`crate::span::line_col`]
/// (through a [`LineIndex`]), so the `[file:LINE:COLUMN]` of the rendering is
/// the position of the JSON output and of the corpus: columns in characters
/// (miette counts bytes), a leading byte-order mark takes no column. A lone
/// `\r` is shown as `\n` (same length, so spans still fit): miette's snippet
/// would otherwise print it as part of one long line. Control characters are
/// shown as `?` (see `new`).
struct PolicySource<'a> {
    name: String,
    /// The line index of the source text (whose line ends are those of `shown`).
    index: LineIndex<'a>,
    shown: String,
}

impl<'a> PolicySource<'a> {
    fn new(name: &str, text: &'a str) -> Self {
        let bytes = text.as_bytes();
        let shown: String = text
            .char_indices()
            .map(|(i, c)| match c {
                '\r' if bytes.get(i + 1) != Some(&b'\n') => '\n',
                '\n' | '\r' | '\t' => c,
                // A control or bidirectional formatting character (rejected in
                // strings) is never written to the terminal: it is shown as a
                // character of the same UTF-8 length, so spans still fit.
                _ if crate::text::is_forbidden(c) => match c.len_utf8() {
                    1 => '?',
                    2 => '\u{b7}',
                    _ => '\u{fffd}',
                },
                _ => c,
            })
            .collect();
        Self {
            name: name.to_string(),
            index: LineIndex::new(text),
            shown,
        }
    }
}

impl SourceCode for PolicySource<'_> {
    /// miette's reading of `shown`, started at a line start far enough above
    /// the span to hold the context lines instead of at the start of the
    /// file: the same contents in time proportional to the snippet, not to
    /// the offset. miette's `line_count` counts line ends from where its scan
    /// started, so the line ends above the window are added back.
    fn read_span<'b>(
        &'b self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'b> + 'b>, MietteError> {
        let (line, _) = self.index.line_start(span.offset());
        // One line more than the context: miette measures the end of a
        // span as `offset + len - 1`, saturating, so an empty span at the
        // very start of its input ends differently from the same span
        // further in. Starting a line earlier (when there is one) keeps the
        // window's reading the file's.
        let first_line = line.saturating_sub(context_lines_before + 1);
        let window_start = self.index.start_of_line(first_line);
        let window = &self.shown.as_bytes()[window_start..];
        let shifted = SourceSpan::new((span.offset() - window_start).into(), span.len());
        let contents = window.read_span(&shifted, context_lines_before, context_lines_after)?;
        let offset = contents.span().offset() + window_start;
        let (line, column) = self.index.line_col(offset);
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            contents.data(),
            SourceSpan::new(offset.into(), contents.span().len()),
            line - 1,
            column - 1,
            contents.line_count() + first_line,
        )))
    }
}

impl fmt::Debug for Sourced<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.diagnostic, f)
    }
}

impl fmt::Display for Sourced<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.diagnostic, f)
    }
}

impl std::error::Error for Sourced<'_> {}

impl miette::Diagnostic for Sourced<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        miette::Diagnostic::code(self.diagnostic)
    }
    fn severity(&self) -> Option<miette::Severity> {
        miette::Diagnostic::severity(self.diagnostic)
    }
    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        miette::Diagnostic::help(self.diagnostic)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        miette::Diagnostic::labels(self.diagnostic)
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(self.source)
    }
}

/// How to render diagnostics for people.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderOptions {
    /// ANSI colours (only for a terminal).
    pub color: bool,
    /// Unicode box drawing; ASCII art otherwise.
    pub unicode: bool,
    /// Wrap width in columns.
    pub width: usize,
}

impl Default for RenderOptions {
    /// Deterministic output for files and snapshots: no colour, unicode, 100 columns.
    fn default() -> Self {
        Self {
            color: false,
            unicode: true,
            width: 100,
        }
    }
}

/// The result of [`crate::check_source`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOutcome {
    /// The checked policy; `Some` exactly when no diagnostic is an error.
    pub policy: Option<model::Policy>,
    /// Every diagnostic, ordered by position (then code).
    pub diagnostics: Vec<Diagnostic>,
}

impl CheckOutcome {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// The errors, in report order.
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
    }

    /// The warnings, in report order.
    pub fn warnings(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Warning)
    }

    /// Every diagnostic rendered by miette with [`RenderOptions::default`]
    /// (no colour): deterministic, suitable for snapshots.
    pub fn render_human(&self, file_name: &str, source: &str) -> String {
        self.render_human_with(file_name, source, RenderOptions::default())
    }

    /// Every diagnostic rendered by miette with explicit options.
    pub fn render_human_with(
        &self,
        file_name: &str,
        source: &str,
        options: RenderOptions,
    ) -> String {
        let theme = match (options.unicode, options.color) {
            (true, true) => GraphicalTheme::unicode(),
            (true, false) => GraphicalTheme::unicode_nocolor(),
            (false, true) => GraphicalTheme::ascii(),
            (false, false) => GraphicalTheme::none(),
        };
        let handler = GraphicalReportHandler::new_themed(theme)
            .with_width(options.width)
            .with_links(false);
        let named = PolicySource::new(file_name, source);
        let mut out = String::new();
        for diagnostic in &self.diagnostics {
            let sourced = Sourced {
                diagnostic,
                source: &named,
            };
            if handler.render_report(&mut out, &sourced).is_err() {
                out.push_str(&format!("{}: {}\n", diagnostic.code, diagnostic.message));
            }
            out.push('\n');
        }
        out
    }

    /// Machine-readable form: `{ "ok", "errors", "warnings", "diagnostics" }`
    /// with byte-offset spans.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "ok": !self.has_errors(),
            "errors": self.errors().count(),
            "warnings": self.warnings().count(),
            "diagnostics": self.diagnostics.iter().map(Diagnostic::to_json).collect::<Vec<_>>(),
        })
    }

    /// [`Self::to_json`] with the one-based `line` and `column` (characters)
    /// of each diagnostic's start, and `end_line` / `end_column` of its
    /// exclusive end, from [`crate::syntax::line_col`]: the positions the human rendering
    /// shows. This is the document `splashc check --format json` prints.
    pub fn to_json_with_positions(&self, source: &str) -> serde_json::Value {
        let mut value = self.to_json();
        let index = LineIndex::new(source);
        if let Some(list) = value["diagnostics"].as_array_mut() {
            for (json, d) in list.iter_mut().zip(&self.diagnostics) {
                let (line, column) = index.line_col(d.span.start);
                let (end_line, end_column) = index.line_col(d.span.end);
                json["line"] = json!(line);
                json["column"] = json!(column);
                json["end_line"] = json!(end_line);
                json["end_column"] = json!(end_column);
            }
        }
        value
    }
}

pub(crate) use splash_seccomp::spelling::suggest;

#[cfg(test)]
mod tests {
    use splash_seccomp::spelling::edit_distance;

    use super::*;

    #[test]
    fn edit_distance_basics() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }

    #[test]
    fn suggest_finds_close_words_only() {
        let words = ["bubblewrap", "worker", "runtime"];
        assert_eq!(suggest("wroker", words), Some("worker"));
        assert_eq!(suggest("runtim", words), Some("runtime"));
        assert_eq!(suggest("zzz", words), None);
    }

    /// The reading before the line index: miette's scan of `shown` from the
    /// start of the file, with positions from [`crate::span::line_col`].
    fn read_span_from_start(
        source: &PolicySource<'_>,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<(Vec<u8>, SourceSpan, usize, usize, usize), MietteError> {
        let contents = source.shown.as_str().read_span(span, before, after)?;
        let (line, column) = crate::span::line_col(source.index.source(), contents.span().offset());
        Ok((
            contents.data().to_vec(),
            *contents.span(),
            line - 1,
            column - 1,
            contents.line_count(),
        ))
    }

    fn windowed(
        source: &PolicySource<'_>,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<(Vec<u8>, SourceSpan, usize, usize, usize), MietteError> {
        let contents = source.read_span(span, before, after)?;
        Ok((
            contents.data().to_vec(),
            *contents.span(),
            contents.line(),
            contents.column(),
            contents.line_count(),
        ))
    }

    fn snippet_text() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let piece = prop_oneof![
            Just("a"),
            Just("é"),
            Just("\n"),
            Just("\r"),
            Just("\r\n"),
            Just("\t"),
            Just("\u{7}"),
            Just("\u{feff}"),
            Just("  root \"r\" host \"/srv\" at \"/w\" read-only"),
        ];
        proptest::collection::vec(piece, 0..80).prop_map(|v| v.concat())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// Reading from a window gives what reading from the start gave:
        /// the same bytes, span, position and line count (miette uses the
        /// last to decide whether two labels share one snippet).
        #[test]
        fn windowed_read_span_equals_reading_from_the_start(
            text in snippet_text(),
            spans in proptest::collection::vec((0usize..3000, 0usize..80), 1..12),
            before in 0usize..4,
            after in 0usize..4,
        ) {
            let source = PolicySource::new("p.splashpol", &text);
            for (start, len) in spans {
                // Diagnostics' spans start inside the source or at its end.
                let mut start = start.min(text.len());
                while !text.is_char_boundary(start) {
                    start -= 1;
                }
                let span = SourceSpan::new(start.into(), len);
                let old = read_span_from_start(&source, &span, before, after);
                let new = windowed(&source, &span, before, after);
                match (old, new) {
                    (Ok(o), Ok(n)) => proptest::prop_assert_eq!(o, n, "span {:?}", span),
                    (Err(_), Err(_)) => {}
                    (o, n) => proptest::prop_assert!(false, "{:?} vs {:?} at {:?}", o.is_ok(), n.is_ok(), span),
                }
            }
        }
    }

    #[test]
    fn render_is_plain_and_names_the_code() {
        let outcome = CheckOutcome {
            policy: None,
            diagnostics: vec![
                Diagnostic::error(Code::DuplicateEntry, Span::new(0, 3), "bad `abc`")
                    .with_help("fix it"),
            ],
        };
        let text = outcome.render_human("p.splashpol", "abc\n");
        assert!(text.contains("splash::check::duplicate-entry"), "{text}");
        assert!(text.contains("fix it"), "{text}");
        assert!(!text.contains('\u{1b}'), "no colour: {text}");
        assert_eq!(text, outcome.render_human("p.splashpol", "abc\n"));
        assert_eq!(outcome.to_json()["errors"], 1);
    }
}
