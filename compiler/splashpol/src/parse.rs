//! Parsing: `grammar/splashpol.pest` to the [`ast`](crate::ast).
//!
//! [`parse`] is the first phase of the pipeline: it reads text and builds
//! the syntax tree, and decides nothing about meaning (paths, ids, units and
//! ranges are the checker's). It never panics on any input and every
//! problem it finds is an error-severity [`Diagnostic`] with a span, a stable
//! `splash::parse::*` code and help.
//!
//! This is the one place where pest errors become [`Diagnostic`]s: grammar
//! rule names are translated into words ("expected a path string") and never
//! reach users. The grammar captures a statement (or block entry) that does
//! not parse as a whole, so the parser reports it and carries on with the next
//! one; one bad statement never hides errors in the others.
//!
//! The keyword lists here ([`STATEMENT_KEYWORDS`], [`KEYWORD_SPELLINGS`],
//! ...) are what "did you mean" suggestions are drawn from; a unit test keeps
//! [`KEYWORD_SPELLINGS`] equal to the grammar's keyword rules and to the
//! keyword list of `docs/language.md`.
//!
//! The file and policy outline are built here; `statements` builds each
//! statement, `literals` strings and quantities, `header` explains a missing
//! header and `errors` turns pest errors into words.

use std::collections::BTreeSet;

use pest::Parser as _;
use pest::error::InputLocation;
use pest::iterators::Pair;

use crate::ast::*;
use crate::diag::{Code, Diagnostic, suggest};
use crate::span::{Node, Span};

mod errors;
mod header;
mod literals;
mod statements;

use errors::syntax_error;
use header::{first_word, missing_header};
use literals::{control_characters, number, string};
// What the unit tests (`tests.rs`, through `super::*`) call directly.
#[cfg(test)]
use literals::quantity;

/// The rules of `grammar/splashpol.pest`, one variant per rule that is not
/// silent, named as in the grammar (plus `EOI`, the end of input). Grammar
/// rule names are for code only: diagnostics translate them into words.
pub use grammar::Rule;
pub use grammar::SplashpolParser;

/// The code `pest_derive` generates from the grammar, in a module of its own.
mod grammar {
    /// The pest parser generated from `grammar/splashpol.pest`, the one
    /// source of the language's syntax.
    ///
    /// [`parse`](super::parse) is the way to parse a policy: it turns pest
    /// errors into diagnostics and the parse tree into the
    /// [`ast`](crate::ast). This type is for the code of this crate that
    /// needs the raw parse tree of the same grammar (the formatter,
    /// [`crate::syntax::grammar_accepts`]); a pest error from it names
    /// grammar rules and is not meant for users. The grammar's entry rules are [`Rule::file`] for a whole file
    /// and the `*_alone` rules for reparsing one captured statement or entry.
    #[derive(Debug, pest_derive::Parser)]
    #[grammar = "../../../grammar/splashpol.pest"]
    pub struct SplashpolParser;
}

/// The first keyword of every statement, in the order `docs/language.md`
/// documents them: exactly the values [`Statement::keyword`] returns.
///
/// An unknown statement is matched against this list for "did you mean"; a
/// statement whose keyword is here but whose rest does not parse is reported
/// as a syntax error in that statement and recorded in
/// [`ParseOutput::failed_keywords`].
pub const STATEMENT_KEYWORDS: &[&str] = &[
    "bubblewrap",
    "worker",
    "runtime",
    "root",
    "tmp",
    "writes",
    "host-writes",
    "user-namespaces",
    "pin",
    "quota",
    "tmpfs",
    "active-roots",
    "seccomp",
    "limits",
    "landlock",
    "runner",
    "cgroup",
    "watchdog",
    "network-broker",
    "expect",
    "identity",
];
/// Entry keywords of a `limits { }` block: exactly the values
/// [`LimitKind::keyword`] returns.
pub const LIMIT_KEYWORDS: &[&str] = &[
    "cpu",
    "address-space",
    "processes",
    "open-files",
    "file-size",
];
/// Entry keywords of a `landlock { }` block (its only entry is `allow-exec`).
pub const LANDLOCK_KEYWORDS: &[&str] = &["allow-exec"];
/// Entry keywords of a `cgroup { }` block: the values
/// [`CgroupKind::keyword`] returns, plus `io`.
pub const CGROUP_KEYWORDS: &[&str] = &["cpu", "memory", "swap", "pids", "io", "join-timeout"];
/// Entry keywords of an `io MAJOR:MINOR { }` block inside a `cgroup` block.
pub const IO_KEYWORDS: &[&str] = &["read", "write"];
/// Entry keywords of an `expect { }` block.
pub const EXPECT_KEYWORDS: &[&str] = &[
    "read-only",
    "writable",
    "hidden",
    "exec",
    "syscall",
    "network",
    "processes",
    "user-namespaces",
];

/// What [`parse`] produces: the tree (when the file's outline parsed) and
/// every syntax diagnostic.
///
/// A tree and errors can come together: statements and block entries that
/// do not parse are reported and left out of the tree, and the rest is still
/// worth checking (so one run reports every problem). Only a tree-less output
/// means nothing could be checked.
#[derive(Debug, Clone)]
pub struct ParseOutput {
    /// The syntax tree, or `None` when the file's outline (`splashpol N`,
    /// `policy "NAME" { ... }` and its braces) does not parse, in which case
    /// [`ParseOutput::diagnostics`] says why. A `Some` tree holds only the
    /// statements and entries that parsed.
    pub file: Option<File>,
    /// Every syntax error found, in the order found (not sorted by span; the
    /// checker sorts the combined list). All have
    /// [`Severity::Error`](crate::Severity::Error) and a `splash::parse::*`
    /// code. Empty when the whole file parsed.
    pub diagnostics: Vec<Diagnostic>,
    /// Keywords (from [`STATEMENT_KEYWORDS`]) of statements that failed to
    /// parse and were already reported, and of misspelled statements whose
    /// "did you mean" names them, so the checker does not also report those
    /// statements missing.
    pub failed_keywords: BTreeSet<&'static str>,
}

impl ParseOutput {
    /// True when any diagnostic is an error (for this phase, when there is
    /// any diagnostic at all). The tree can still be `Some`.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// Where a piece of text is being parsed; decides which keywords make sense
/// and what "the end" is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    File,
    Statement,
    Limits,
    Landlock,
    Cgroup,
    Io,
    Expect,
}

impl Context {
    fn keywords(self) -> &'static [&'static str] {
        match self {
            Context::File | Context::Statement => STATEMENT_KEYWORDS,
            Context::Limits => LIMIT_KEYWORDS,
            Context::Landlock => LANDLOCK_KEYWORDS,
            Context::Cgroup => CGROUP_KEYWORDS,
            Context::Io => IO_KEYWORDS,
            Context::Expect => EXPECT_KEYWORDS,
        }
    }

    fn rule(self) -> Rule {
        match self {
            Context::File => Rule::file,
            Context::Statement => Rule::statement_alone,
            Context::Limits => Rule::limit_alone,
            Context::Landlock => Rule::landlock_alone,
            Context::Cgroup => Rule::cgroup_alone,
            Context::Io => Rule::io_alone,
            Context::Expect => Rule::expect_alone,
        }
    }

    fn block_name(self) -> &'static str {
        match self {
            Context::File | Context::Statement => "a policy",
            Context::Limits => "a `limits` block",
            Context::Landlock => "a `landlock` block",
            Context::Cgroup => "a `cgroup` block",
            Context::Io => "an `io` block",
            Context::Expect => "an `expect` block",
        }
    }
}

/// Parses a whole `.splashpol` source into its syntax tree and syntax
/// diagnostics.
///
/// `source` is the file's text (a leading byte-order mark is accepted and
/// ignored; non-UTF-8 bytes are [`crate::check_bytes`]'s to report). Spans in
/// the result are byte offsets into `source`. This never fails and never
/// panics: a file that does not parse at all gives
/// [`ParseOutput::file`] `None` with at least one diagnostic (for example
/// `splash::parse::missing-version` when the file does not start with
/// `splashpol`); a file with bad statements gives a tree without them and one
/// diagnostic per bad statement or entry.
///
/// Parsing does not check meaning; use [`crate::check_source`] for the whole
/// front end. (The unit test `a_bad_statement_is_reported_and_the_rest_kept`
/// shows a tree and an error coming together.)
pub fn parse(source: &str) -> ParseOutput {
    let mut p = Parsing {
        diagnostics: Vec::new(),
        failed_keywords: BTreeSet::new(),
        trailing: None,
    };
    let file = match SplashpolParser::parse(Rule::file, source) {
        Ok(mut pairs) => {
            p.diagnostics.extend(control_characters(pairs.clone()));
            let file = pairs.next();
            let mut built = file.clone().and_then(|file| p.file(file));
            match (built.as_mut(), p.trailing.take()) {
                (None, _) => {
                    let sp = file.map_or(Span::new(0, source.len()), |f| span(&f));
                    p.diagnostics.push(internal(sp, "the file"));
                }
                (Some(file), Some((rest, close))) => {
                    p.trailing_text(source, rest, close, &mut file.policy.statements);
                }
                (Some(_), None) => {}
            }
            built
        }
        Err(e) => {
            let (start, word) = first_word(source);
            let error_pos = match e.location {
                InputLocation::Pos(p) => p,
                InputLocation::Span((s, _)) => s,
            };
            if word != "splashpol" {
                p.diagnostics.push(missing_header(start, word));
            }
            if word == "splashpol" || error_pos != start {
                p.diagnostics
                    .push(syntax_error(&e, source, 0, Context::File));
            }
            None
        }
    };
    ParseOutput {
        file,
        diagnostics: p.diagnostics,
        failed_keywords: p.failed_keywords,
    }
}

/// The diagnostic for a parse tree without the shape the grammar promises
/// (a bug in this file, never in the policy): the part is not used, so a
/// policy is never produced from a tree that was only partly understood.
fn internal(span: Span, what: &str) -> Diagnostic {
    Diagnostic::error(
        Code::ParseInternal,
        span,
        format!("internal error: the parse tree of {what} does not have the expected shape"),
    )
    .with_label("not understood, so not used")
    .with_help("this is a bug in splashc, not in the policy: please report it with the policy file")
}

struct Parsing {
    diagnostics: Vec<Diagnostic>,
    failed_keywords: BTreeSet<&'static str>,
    /// The text after the policy and the policy's closing `}`, when there
    /// is such text.
    trailing: Option<(Span, Span)>,
}

fn span(pair: &Pair<'_, Rule>) -> Span {
    Span::of(pair.as_span())
}

/// Inner pairs without separators.
fn inner<'i>(pair: Pair<'i, Rule>) -> impl Iterator<Item = Pair<'i, Rule>> {
    pair.into_inner()
        .filter(|p| p.as_rule() != Rule::sep && p.as_rule() != Rule::EOI)
}

/// Pulls the next inner pair, which the grammar guarantees exists.
fn next<'i>(it: &mut impl Iterator<Item = Pair<'i, Rule>>) -> Option<Pair<'i, Rule>> {
    it.next()
}

impl Parsing {
    /// The file's tree; `None` when it does not have the grammar's shape.
    fn file(&mut self, file: Pair<'_, Rule>) -> Option<File> {
        let mut version = None;
        let mut policy = None;
        let mut close = Span::default();
        for p in inner(file) {
            match p.as_rule() {
                Rule::header => {
                    version = p
                        .into_inner()
                        .find(|p| p.as_rule() == Rule::number)
                        .map(number);
                }
                Rule::policy => {
                    let end = p.as_span().end();
                    close = Span::new(end.saturating_sub(1), end);
                    policy = Some(self.policy(p)?);
                }
                Rule::trailing => self.trailing = Some((span(&p), close)),
                _ => return None,
            }
        }
        Some(File {
            version,
            policy: policy?,
        })
    }

    fn policy(&mut self, pair: Pair<'_, Rule>) -> Option<PolicyDecl> {
        let mut name = Node::new(String::new(), Span::default());
        let mut header = span(&pair);
        let mut statements = Vec::new();
        for p in pair.into_inner() {
            match p.as_rule() {
                Rule::kw_policy => header = span(&p),
                Rule::string => {
                    name = string(p);
                    header = header.join(name.span);
                }
                Rule::policy_body => self.items(p, &mut statements),
                _ => return None,
            }
        }
        Some(PolicyDecl {
            name,
            header,
            statements,
        })
    }

    /// The statements of a `policy_body` or `trailing_body`, each bad one
    /// reported.
    fn items(&mut self, body: Pair<'_, Rule>, statements: &mut Vec<Stmt>) {
        for s in inner(body) {
            if s.as_rule() == Rule::bad_statement {
                self.bad(&s, Context::Statement);
                continue;
            }
            let sp = span(&s);
            let keyword = s.as_str().split([' ', '\t']).next().unwrap_or_default();
            match self.statement(s) {
                Some(stmt) => statements.push(stmt),
                None => {
                    // Not used, and not also reported missing.
                    if let Some(kw) = STATEMENT_KEYWORDS.iter().find(|k| **k == keyword) {
                        self.failed_keywords.insert(kw);
                    }
                    self.diagnostics.push(internal(sp, "this statement"));
                }
            }
        }
    }

    /// Reports the text `rest` after the policy, whose closing `}` is
    /// `close`: a second `policy` block; statements after a `}` that closed
    /// the policy early, up to the real closing `}` (parsed into
    /// `statements`, so the checker still reports what is wrong with
    /// them); an extra `}`; or anything else. The policy never builds, as
    /// each case is an error.
    fn trailing_text(&mut self, source: &str, rest: Span, close: Span, statements: &mut Vec<Stmt>) {
        let text = &source[rest.start..rest.end];
        let word_len = text
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(text.len())
            .max(text.chars().next().map_or(0, char::len_utf8));
        let word = &text[..word_len];
        let word_span = Span::new(rest.start, rest.start + word_len);
        if word == "policy" {
            self.diagnostics.push(
                Diagnostic::error(
                    Code::SecondPolicy,
                    word_span,
                    "a second `policy` block: a file holds one policy",
                )
                .with_label("the second policy starts here")
                .with_help("put each policy in a file of its own"),
            );
            return;
        }
        // The trailing text parsed at its own offsets: everything before it
        // becomes blanks of the same length, so every span stays the file's.
        let mut padded = " ".repeat(rest.start);
        padded.push_str(text);
        let Ok(mut pairs) = SplashpolParser::parse(Rule::trailing_body, &padded) else {
            self.diagnostics.push(
                Diagnostic::error(
                    Code::TrailingText,
                    word_span,
                    format!("`{word}` after the end of the policy"),
                )
                .with_label("nothing may follow the policy's closing `}`")
                .with_help("a policy file ends with the `}` that closes its policy"),
            );
            return;
        };
        self.diagnostics.extend(control_characters(pairs.clone()));
        let before = statements.len();
        let failed = self.diagnostics.len();
        if let Some(body) = pairs.next() {
            self.items(body, statements);
        }
        if statements.len() == before && self.diagnostics.len() == failed {
            self.diagnostics.push(
                Diagnostic::error(
                    Code::TrailingText,
                    word_span,
                    "an extra `}` after the end of the policy",
                )
                .with_label("no block is open here")
                .with_help("remove this `}`"),
            );
        } else {
            self.diagnostics.push(
                Diagnostic::error(
                    Code::TrailingText,
                    close,
                    "this `}` ends the policy, but statements follow it",
                )
                .with_label("the policy ends here")
                .with_help(
                    "remove this `}`: the statements after it are checked as part of the policy, but a policy with an error is never used",
                ),
            );
        }
    }

    /// Reports a captured bad statement or entry by reparsing it alone.
    fn bad(&mut self, pair: &Pair<'_, Rule>, context: Context) {
        let start = pair.as_span().start();
        let text = pair.as_str().trim_end();
        let word_len = text
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(text.len());
        let word = &text[..word_len];
        let keywords = context.keywords();
        if let Some(&kw) = keywords.iter().find(|k| **k == word) {
            if context == Context::Statement {
                self.failed_keywords.insert(kw);
            }
            let diagnostic = match SplashpolParser::parse(context.rule(), text) {
                Err(e) => syntax_error(&e, text, start, context),
                // The grammar only captures text its rule rejected.
                Ok(_) => Diagnostic::error(
                    Code::Syntax,
                    Span::new(start, start + text.len()),
                    format!("cannot parse this `{kw}` entry"),
                ),
            };
            self.diagnostics.push(diagnostic);
            return;
        }
        // An empty word (the statement starts with `{`, `é`, ...) is shown as
        // its first character, whole: a span must not split a character.
        let shown_len = if word_len == 0 {
            text.chars().next().map_or(0, char::len_utf8)
        } else {
            word_len
        };
        let word_span = Span::new(start, start + shown_len);
        let shown = if word.is_empty() {
            text.chars().next().map(String::from).unwrap_or_default()
        } else {
            word.to_string()
        };
        let what = match context {
            Context::File | Context::Statement => "statement",
            _ => "entry",
        };
        let mut d = Diagnostic::error(
            Code::UnknownKeyword,
            word_span,
            format!("unknown {what} `{shown}` in {}", context.block_name()),
        )
        .with_label(format!(
            "not {} {what} keyword",
            if what == "entry" { "an" } else { "a" }
        ));
        if let Some(s) = suggest(word, keywords.iter().copied()) {
            d = d.with_help(format!("did you mean `{s}`?"));
        } else {
            d = d.with_help(format!(
                "expected one of {}",
                keywords
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if context == Context::Statement {
            // A misspelled required statement should not also be reported missing.
            if let Some(s) = suggest(word, keywords.iter().copied()) {
                self.failed_keywords.insert(s);
            }
        }
        self.diagnostics.push(d);
    }
}

/// Every keyword of the language, as written (with `-`), in the order of
/// `docs/language.md`'s keyword list: the spellings of the grammar's `kw_*`
/// rules, which a unit test keeps in sync with the grammar and the
/// reference. Used for "did you mean" when the grammar expected a keyword.
pub const KEYWORD_SPELLINGS: &[&str] = &[
    "splashpol",
    "policy",
    "bubblewrap",
    "worker",
    "args",
    "runtime",
    "at",
    "root",
    "host",
    "tmpfs",
    "size",
    "read-only",
    "read-write",
    "quota",
    "project",
    "bytes",
    "inodes",
    "tmp",
    "off",
    "private",
    "writes",
    "bounded",
    "host-writes",
    "unbounded",
    "user-namespaces",
    "none",
    "pin",
    "mounts",
    "executables",
    "aggregate",
    "active-roots",
    "max",
    "seccomp",
    "deny-known-escape-surface",
    "strict-allowlist",
    "limits",
    "runner",
    "required",
    "cpu",
    "address-space",
    "processes",
    "open-files",
    "file-size",
    "landlock",
    "allow-exec",
    "combined",
    "cgroup",
    "parent",
    "memory",
    "swap",
    "pids",
    "io",
    "read",
    "write",
    "join-timeout",
    "watchdog",
    "session",
    "call",
    "network-broker",
    "endpoint",
    "origin",
    "ids",
    "unlimited",
    "expect",
    "writable",
    "hidden",
    "exec",
    "denied",
    "allowed",
    "syscall",
    "network",
    "identity",
    "user",
    "group",
    "dynamic",
];

#[cfg(test)]
mod tests;
