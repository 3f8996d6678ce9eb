//! Canonical layout of `.splashpol` source (`splashc fmt`).
//!
//! The formatter works on the tokens of the pest parse tree: every named leaf
//! (keywords, numbers, units, devices, syscall names) and every string is a
//! token, and the text between two tokens can only hold blanks, comments,
//! newlines and the punctuation `{ } [ ] ,`. Nothing else is read, so a
//! formatted file has exactly the words and comments of the original, in the
//! same order; only the layout changes:
//!
//! - one statement or block entry per line, indented two spaces per block,
//!   except that entries the author joined with `;` stay on one line (`a; b`);
//!   a `;` with nothing after it on its line is dropped (a line break does
//!   the same);
//! - a block opens at the end of its statement's line (`{`) and closes on a
//!   line of its own, unless the author wrote it on one line without
//!   comments (`io 8:0 { read 1 MiB/s }`); an empty block is `{}`;
//! - a syscall allowlist keeps the author's grouping of names into lines, and
//!   an `expect` block written on one line stays on one line;
//! - one space between words, none inside `[ ]` or before `,`;
//! - a string list stays on one line unless it spanned lines or holds a
//!   comment, then it has one string per line, each with a trailing comma;
//! - a comment stays where it was: at the end of its line (after one space)
//!   or on a line of its own at the indentation of that line;
//! - runs of blank lines become one, none at the start or end of a block or
//!   of the file; trailing blanks are removed; lines end with `\n`.
//!
//! A source with a syntax error is refused with the parser's diagnostics. The
//! result is checked before it is returned: it must parse, and its tokens and
//! comments must be those of the original; anything else is an internal
//! error, never a silently changed policy.

use pest::Parser as _;
use pest::iterators::Pair;

use crate::diag::Diagnostic;
use crate::parse::{self, Rule, SplashpolParser};

/// Indentation of one block level.
const INDENT: &str = "  ";

/// Why a source was not formatted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FormatError {
    /// The source does not parse; these are the parser's diagnostics.
    Syntax(Vec<Diagnostic>),
    /// The formatter could not keep the source's meaning (a bug); nothing is
    /// written.
    Internal(FormatBug),
}

/// What went wrong inside the formatter ([`FormatError::Internal`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FormatBug {
    /// The formatted text does not parse.
    OutputDoesNotParse,
    /// The formatted text lost or changed a word or comment.
    ContentChanged,
    /// The parser returned no tree for a source it accepted.
    EmptyParse,
    /// A recovery rule (unparsed text) in a source without syntax errors,
    /// at this byte offset.
    UnparsedText(usize),
    /// Text between leaves that is neither blank, comment nor punctuation,
    /// at this byte offset.
    UnexpectedText(usize),
}

impl std::fmt::Display for FormatBug {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::OutputDoesNotParse => f.write_str("the formatted text does not parse"),
            Self::ContentChanged => f.write_str(
                "the formatted text does not have the words and comments of the original",
            ),
            Self::EmptyParse => f.write_str("empty parse"),
            Self::UnparsedText(at) => write!(f, "unparsed text at byte {at}"),
            Self::UnexpectedText(at) => write!(f, "unexpected text at byte {at}"),
        }
    }
}

impl std::fmt::Display for FormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FormatError::Syntax(d) => write!(f, "the policy has {} syntax error(s)", d.len()),
            FormatError::Internal(m) => write!(f, "internal formatter error: {m}"),
        }
    }
}

impl std::error::Error for FormatError {}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token<'a> {
    /// A keyword, number, unit, device, syscall name or quoted string.
    Word(&'a str),
    /// `#...` without trailing blanks.
    Comment(&'a str),
    /// A newline.
    Break,
    /// A `;` (a statement separator like a newline).
    Semi,
    Open,
    Close,
    ListOpen,
    ListClose,
    Comma,
}

/// Formats `source`; see the module documentation for the layout.
pub fn format_source(source: &str) -> Result<String, FormatError> {
    // One leading byte-order mark is accepted (the parser skips it) and
    // ignored; the output has none. A second one is text, as for the
    // checker.
    let parsed = parse::parse(source);
    if parsed.has_errors() {
        return Err(FormatError::Syntax(
            parsed
                .diagnostics
                .into_iter()
                .filter(Diagnostic::is_error)
                .collect(),
        ));
    }
    let body = source
        .strip_prefix(crate::span::BYTE_ORDER_MARK)
        .unwrap_or(source);
    let tokens = tokenize(body)?;
    let out = render(&tokens);
    // The result must parse to the same words and comments.
    let again = tokenize(&out).map_err(|e| match e {
        FormatError::Syntax(_) => FormatError::Internal(FormatBug::OutputDoesNotParse),
        other => other,
    })?;
    if parse::parse(&out).has_errors() {
        return Err(FormatError::Internal(FormatBug::OutputDoesNotParse));
    }
    if content(&tokens) != content(&again) {
        return Err(FormatError::Internal(FormatBug::ContentChanged));
    }
    Ok(out)
}

/// The words and comments of a token stream, in order.
fn content<'a>(tokens: &[Token<'a>]) -> Vec<Token<'a>> {
    tokens
        .iter()
        .filter(|t| matches!(t, Token::Word(_) | Token::Comment(_)))
        .cloned()
        .collect()
}

/// The tokens of `source`, which starts after any byte-order mark.
fn tokenize(source: &str) -> Result<Vec<Token<'_>>, FormatError> {
    let mut pairs =
        SplashpolParser::parse(Rule::file, source).map_err(|_| FormatError::Syntax(Vec::new()))?;
    let file = pairs
        .next()
        .ok_or(FormatError::Internal(FormatBug::EmptyParse))?;
    let mut tokens = Vec::new();
    let mut pos = 0;
    leaves(file, source, &mut pos, &mut tokens)?;
    gap(source, pos, source.len(), &mut tokens)?;
    Ok(tokens)
}

/// Appends the tokens of `pair` (and of the text before each of its leaves).
fn leaves<'a>(
    pair: Pair<'a, Rule>,
    source: &'a str,
    pos: &mut usize,
    tokens: &mut Vec<Token<'a>>,
) -> Result<(), FormatError> {
    let rule = pair.as_rule();
    match rule {
        Rule::bad_statement | Rule::bad_entry | Rule::bad_word => {
            return Err(FormatError::Internal(FormatBug::UnparsedText(
                pair.as_span().start(),
            )));
        }
        Rule::EOI => return Ok(()),
        _ => {}
    }
    let sp = pair.as_span();
    let is_string = matches!(rule, Rule::path | Rule::selector | Rule::string);
    // Blocks and lists are punctuation around their children, even when empty.
    let is_group = matches!(
        rule,
        Rule::policy_body
            | Rule::syscall_block
            | Rule::limits_block
            | Rule::landlock_block
            | Rule::cgroup_block
            | Rule::io_block
            | Rule::expect_block
            | Rule::string_list
    );
    let mut inner = pair.clone().into_inner().peekable();
    if is_string || (inner.peek().is_none() && !is_group) {
        gap(source, *pos, sp.start(), tokens)?;
        tokens.push(if rule == Rule::sep {
            if sp.as_str() == ";" {
                Token::Semi
            } else {
                Token::Break
            }
        } else {
            Token::Word(sp.as_str())
        });
        *pos = sp.end();
        return Ok(());
    }
    for child in inner {
        leaves(child, source, pos, tokens)?;
    }
    Ok(())
}

/// Tokens of the text between two leaves: blanks, comments, newlines and
/// punctuation only.
fn gap<'a>(
    source: &'a str,
    start: usize,
    end: usize,
    tokens: &mut Vec<Token<'a>>,
) -> Result<(), FormatError> {
    let text = &source[start..end];
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b' ' | b'\t' => i += 1,
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => {
                tokens.push(Token::Break);
                i += 2;
            }
            b'\n' | b'\r' => {
                tokens.push(Token::Break);
                i += 1;
            }
            b'#' => {
                let len = text[i..].find(['\n', '\r']).unwrap_or(text.len() - i);
                tokens.push(Token::Comment(text[i..i + len].trim_end()));
                i += len;
            }
            b'{' | b'}' | b'[' | b']' | b',' => {
                tokens.push(match bytes[i] {
                    b'{' => Token::Open,
                    b'}' => Token::Close,
                    b'[' => Token::ListOpen,
                    b']' => Token::ListClose,
                    _ => Token::Comma,
                });
                i += 1;
            }
            _ => {
                return Err(FormatError::Internal(FormatBug::UnexpectedText(start + i)));
            }
        }
    }
    Ok(())
}

/// Lines being written.
struct Writer {
    lines: Vec<String>,
    /// The line being built (without indentation).
    line: String,
    depth: usize,
    /// A blank line was seen since the last line ended.
    blank: bool,
    /// The last finished line opened a block or list.
    after_open: bool,
    /// A `;` was seen after the words on the line; written only if another
    /// word follows on the same line.
    semi: bool,
}

impl Writer {
    fn word(&mut self, text: &str) {
        if std::mem::take(&mut self.semi) {
            self.line.push(';');
        }
        if !self.line.is_empty() && !self.line.ends_with('[') {
            self.line.push(' ');
        }
        self.line.push_str(text);
    }

    /// Ends the current line (if any).
    fn end_line(&mut self) {
        self.semi = false;
        if self.line.is_empty() {
            return;
        }
        if self.blank && !self.after_open && !self.lines.is_empty() {
            self.lines.push(String::new());
        }
        self.blank = false;
        self.after_open = false;
        let line = std::mem::take(&mut self.line);
        self.lines
            .push(format!("{}{line}", INDENT.repeat(self.depth)));
    }

    /// A line break in the source: ends the line, or marks a blank line.
    fn newline(&mut self, breaks_in_a_row: usize) {
        if self.line.is_empty() {
            if breaks_in_a_row >= 2 {
                self.blank = true;
            }
        } else {
            self.end_line();
        }
    }

    fn comment(&mut self, text: &str) {
        self.semi = false;
        if self.line.is_empty() {
            self.line.push_str(text);
        } else {
            self.line.push(' ');
            self.line.push_str(text);
        }
        self.end_line();
    }

    /// Ends the line of an opening `{` or `[` (keeping a comment that
    /// follows it there) and enters the block; returns how many tokens after
    /// the opener were used.
    fn open(&mut self, text: &str, next: Option<&Token<'_>>) -> usize {
        self.word(text);
        let used = if let Some(Token::Comment(c)) = next {
            self.comment(c);
            1
        } else {
            self.end_line();
            0
        };
        self.after_open = true;
        self.depth += 1;
        used
    }

    /// A closing `}` or `]` at the start of a line; a comment may follow it.
    fn close(&mut self, text: &str) {
        self.end_line();
        self.blank = false;
        self.depth = self.depth.saturating_sub(1);
        self.line.push_str(text);
    }

    fn finish(mut self) -> String {
        self.end_line();
        let mut out = self.lines.join("\n");
        out.push('\n');
        out
    }
}

fn render(tokens: &[Token<'_>]) -> String {
    let mut w = Writer {
        lines: Vec::new(),
        line: String::new(),
        depth: 0,
        blank: false,
        after_open: false,
        semi: false,
    };
    // Line breaks since the last token that was not one.
    let mut breaks = 0;
    // Tokens up to this index are a block written on one line.
    let mut inline_until = 0;
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Break => {
                breaks += 1;
                w.newline(breaks);
                i += 1;
                continue;
            }
            Token::Semi => w.semi = !w.line.is_empty() && !w.line.ends_with('{'),
            Token::Word(text) => w.word(text),
            Token::Comment(text) => w.comment(text),
            Token::Open => {
                let close = matching_close(tokens, i);
                let inside = &tokens[i + 1..close];
                if inside
                    .iter()
                    .all(|t| matches!(t, Token::Break | Token::Semi))
                {
                    w.word("{}");
                    i = close;
                } else if inside
                    .iter()
                    .any(|t| matches!(t, Token::Break | Token::Comment(_)))
                {
                    i += w.open("{", tokens.get(i + 1));
                } else {
                    // Written on one line: it stays there.
                    inline_until = inline_until.max(close);
                    w.word("{");
                }
            }
            Token::Close if i <= inline_until => {
                w.semi = false;
                w.word("}");
            }
            Token::Close => w.close("}"),
            Token::ListOpen => {
                i = list(&mut w, tokens, i);
                breaks = 0;
                continue;
            }
            Token::Comma => w.line.push(','),
            // Lists are rendered whole by `list`.
            Token::ListClose => w.line.push(']'),
        }
        breaks = 0;
        i += 1;
    }
    w.finish()
}

/// The index of the `}` that closes the `{` at `tokens[open]`.
fn matching_close(tokens: &[Token<'_>], open: usize) -> usize {
    let mut depth = 0usize;
    for (k, t) in tokens.iter().enumerate().skip(open) {
        match t {
            Token::Open => depth += 1,
            Token::Close => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    tokens.len() - 1
}

/// Renders the string list starting at `tokens[start]` (`[`); returns the
/// index after its `]`.
fn list(w: &mut Writer, tokens: &[Token<'_>], start: usize) -> usize {
    let end = tokens[start..]
        .iter()
        .position(|t| *t == Token::ListClose)
        .map_or(tokens.len(), |p| start + p);
    let body = &tokens[start + 1..end.min(tokens.len())];
    let multiline = body
        .iter()
        .any(|t| matches!(t, Token::Break | Token::Comment(_)));
    if !multiline {
        let words: Vec<&str> = body
            .iter()
            .filter_map(|t| match t {
                Token::Word(s) => Some(*s),
                _ => None,
            })
            .collect();
        w.word(&format!("[{}]", words.join(", ")));
        return end + 1;
    }
    let mut k = w.open("[", body.first());
    let mut breaks = 0;
    while k < body.len() {
        match &body[k] {
            Token::Word(s) => {
                w.end_line();
                w.line.push_str(s);
                w.line.push(',');
                breaks = 0;
            }
            Token::Comment(text) => {
                w.comment(text);
                breaks = 0;
            }
            Token::Break => {
                breaks += 1;
                w.newline(breaks);
            }
            _ => {}
        }
        k += 1;
    }
    w.close("]");
    end + 1
}

#[cfg(test)]
mod tests;
