//! The syntax of a `.splashpol` source, for tools that read or rewrite it.
//!
//! The syntax tree, the parser and the unit arithmetic are internal to this
//! crate: [`crate::check_source`] is the way to learn what a policy means.
//! This module answers the few questions that tools working on the text
//! itself ask (the language server, `splashc learn` and `splashc test`,
//! which rewrite a policy in place, and the tests that keep the editor
//! grammars in step with the language):
//!
//! - [`Outline`]: the statements that parse, each with its keyword and span,
//!   and the names and strings some of them hold (a strict allowlist's
//!   syscalls, an `expect` block's denied syscalls, a root's id, a
//!   `landlock` runner), each with its span;
//! - the keywords that may start a statement or a block entry
//!   ([`STATEMENT_KEYWORDS`], [`LIMIT_KEYWORDS`], ...);
//! - the units ([`unit_spellings`]) and what a number with a unit amounts to
//!   ([`amount`]);
//! - positions ([`line_col`]) and the byte-order mark a file may start with;
//! - whether the grammar accepts a text without its error recovery
//!   ([`grammar_accepts`]).

use pest::Parser as _;

use crate::Span;
use crate::ast;
use crate::parse::{Rule, SplashpolParser};
use crate::units::{self, Unit};

pub use crate::span::{BYTE_ORDER_MARK, line_col};

/// The first keyword of every statement, in the order `docs/language.md`
/// documents them: the values [`Statement::keyword`] returns.
pub const STATEMENT_KEYWORDS: &[&str] = crate::parse::STATEMENT_KEYWORDS;
/// The keywords that start an entry of a `limits { }` block.
pub const LIMIT_KEYWORDS: &[&str] = crate::parse::LIMIT_KEYWORDS;
/// The keywords that start an entry of a `landlock { }` block.
pub const LANDLOCK_KEYWORDS: &[&str] = crate::parse::LANDLOCK_KEYWORDS;
/// The keywords that start an entry of a `cgroup { }` block.
pub const CGROUP_KEYWORDS: &[&str] = crate::parse::CGROUP_KEYWORDS;
/// The keywords that start an entry of an `io MAJOR:MINOR { }` block
/// inside a `cgroup` block.
pub const IO_KEYWORDS: &[&str] = crate::parse::IO_KEYWORDS;
/// The keywords that start an entry of an `expect { }` block.
pub const EXPECT_KEYWORDS: &[&str] = crate::parse::EXPECT_KEYWORDS;

/// The statements of a source whose outline (`splashpol N`,
/// `policy "NAME" { ... }` and its braces) parses.
///
/// Only syntax: nothing here has been checked. A statement that does not
/// parse is left out (the checker reports it).
#[derive(Debug, Clone)]
pub struct Outline {
    file: ast::File,
}

impl Outline {
    /// The outline of `source`, or `None` when its outline does not parse.
    /// Spans are byte offsets into `source`.
    pub fn parse(source: &str) -> Option<Outline> {
        crate::parse::parse(source)
            .file
            .map(|file| Outline { file })
    }

    /// The statements that parsed, in source order.
    pub fn statements(&self) -> impl Iterator<Item = Statement<'_>> {
        self.file
            .policy
            .statements
            .iter()
            .map(|stmt| Statement { stmt })
    }
}

/// One statement of an [`Outline`].
#[derive(Debug, Clone, Copy)]
pub struct Statement<'a> {
    stmt: &'a ast::Stmt,
}

impl<'a> Statement<'a> {
    /// The statement's first keyword as written (`writes` for
    /// `writes bounded`): one of [`STATEMENT_KEYWORDS`].
    pub fn keyword(self) -> &'static str {
        self.stmt.kind.keyword()
    }

    /// The whole statement, from its keyword to its last token (a block
    /// statement ends at its closing `}`).
    pub fn span(self) -> Span {
        self.stmt.span
    }

    /// The names listed by `seccomp strict-allowlist { ... }`, in source
    /// order; `None` for any other statement.
    pub fn strict_allowlist(self) -> Option<Vec<Word<'a>>> {
        match &self.stmt.kind {
            ast::Statement::Seccomp(ast::Seccomp::StrictAllowlist { syscalls, .. }) => {
                Some(syscalls.iter().map(Word::of).collect())
            }
            _ => None,
        }
    }

    /// The names of every `syscall denied` entry of an `expect` block, in
    /// source order; empty for any other statement.
    pub fn denied_syscalls(self) -> Vec<Word<'a>> {
        let ast::Statement::Expect { entries, .. } = &self.stmt.kind else {
            return Vec::new();
        };
        entries
            .iter()
            .filter_map(|e| match &e.node {
                ast::ExpectEntry::SyscallDenied { names } => Some(names),
                _ => None,
            })
            .flatten()
            .map(Word::of)
            .collect()
    }

    /// The id of a `root "ID" ...` statement; `None` for any other statement.
    pub fn root_id(self) -> Option<Word<'a>> {
        match &self.stmt.kind {
            ast::Statement::Root { id, .. } => Some(Word::of(id)),
            _ => None,
        }
    }

    /// The runner path of a `landlock runner "PATH" ...` statement; `None`
    /// for a `landlock` statement that names none, and for any other
    /// statement.
    pub fn landlock_runner(self) -> Option<Word<'a>> {
        match &self.stmt.kind {
            ast::Statement::Landlock { runner, .. } => runner.as_ref().map(Word::of),
            _ => None,
        }
    }
}

/// A name or string of the source and where it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Word<'a> {
    /// The name as written, or the text of a string between its quotes
    /// with the escapes `\"` and `\\` resolved.
    pub text: &'a str,
    /// Where it is written; a string's span covers its quotes.
    pub span: Span,
}

impl<'a> Word<'a> {
    fn of(node: &'a ast::Node<String>) -> Self {
        Word {
            text: &node.node,
            span: node.span,
        }
    }
}

/// Every unit of the language as written (`B`, `KiB`, ..., `ms`, ...,
/// `MiB/s`, ..., `iops`), in the order `docs/language.md` lists them.
pub fn unit_spellings() -> impl Iterator<Item = &'static str> {
    units::UNITS.iter().map(|&(spelling, _)| spelling)
}

/// What a number written with a unit amounts to, in the unit's base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Amount {
    /// A size in bytes.
    Bytes(u64),
    /// A duration in milliseconds.
    Millis(u64),
    /// A rate in bytes per second.
    BytesPerSecond(u64),
    /// A rate in I/O operations per second.
    Iops(u64),
}

/// The amount `number` written with `unit` stands for (`64` with `MiB` is
/// `Amount::Bytes(67108864)`), or `None` when `unit` is not one of
/// [`unit_spellings`], `number` is not a whole number (digits with optional
/// `_` separators), or the amount does not fit in 64 bits.
///
/// Only the arithmetic: whether a setting takes this unit, and the bounds
/// the checker puts on its value, are not applied.
pub fn amount(number: &str, unit: &str) -> Option<Amount> {
    let unit = units::parse_unit(unit)?;
    let literal = ast::Node::new(ast::NumberLit(number.to_string()), Span::default());
    let value = units::integer(&literal).ok()?;
    Some(match unit {
        Unit::Bytes(per) => Amount::Bytes(value.checked_mul(per)?),
        Unit::Millis(per) => Amount::Millis(value.checked_mul(per)?),
        Unit::BytesPerSecond(per) => Amount::BytesPerSecond(value.checked_mul(per)?),
        Unit::Iops => Amount::Iops(value),
    })
}

/// Whether the grammar (`grammar/splashpol.pest`) takes the whole of
/// `source` as a file without its error-recovery rules, which capture a
/// statement, entry or word that does not parse and any text after the
/// policy so that the parser can report it. Meaning is not checked: this
/// is the yardstick for other grammars of the language (the tree-sitter
/// grammar is tested against it).
pub fn grammar_accepts(source: &str) -> bool {
    match SplashpolParser::parse(Rule::file, source) {
        Err(_) => false,
        Ok(pairs) => !pairs.flatten().any(|p| {
            matches!(
                p.as_rule(),
                Rule::bad_statement | Rule::bad_entry | Rule::bad_word | Rule::trailing
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "splashpol 1\npolicy \"p\" {\n  root \"a\\\"b\" tmpfs at \"/x\" size 1 MiB\n  seccomp strict-allowlist { read write }\n  landlock runner \"/r\"\n  expect {\n    syscall denied mount\n    network none\n    syscall denied bpf ptrace\n  }\n}\n";

    fn texts(words: &[Word<'_>]) -> Vec<String> {
        words
            .iter()
            .map(|w| format!("{}@{}", w.text, &SOURCE[w.span.start..w.span.end]))
            .collect()
    }

    #[test]
    fn statements_answer_what_they_hold() {
        let outline = Outline::parse(SOURCE).expect("the outline parses");
        let statements: Vec<Statement<'_>> = outline.statements().collect();
        let keywords: Vec<&str> = statements.iter().map(|s| s.keyword()).collect();
        assert_eq!(keywords, ["root", "seccomp", "landlock", "expect"]);
        let [root, seccomp, landlock, expect] = statements[..] else {
            panic!("four statements");
        };
        assert_eq!(
            texts(&[root.root_id().expect("an id")]),
            ["a\"b@\"a\\\"b\""]
        );
        assert_eq!(
            &SOURCE[seccomp.span().start..seccomp.span().end],
            "seccomp strict-allowlist { read write }"
        );
        assert_eq!(
            texts(&seccomp.strict_allowlist().expect("a strict allowlist")),
            ["read@read", "write@write"]
        );
        assert_eq!(
            texts(&[landlock.landlock_runner().expect("a runner")]),
            ["/r@\"/r\""]
        );
        assert_eq!(
            texts(&expect.denied_syscalls()),
            ["mount@mount", "bpf@bpf", "ptrace@ptrace"]
        );
        assert!(root.strict_allowlist().is_none());
        assert!(seccomp.denied_syscalls().is_empty());
        assert!(expect.root_id().is_none() && expect.landlock_runner().is_none());
    }

    #[test]
    fn an_outline_needs_the_file_outline_only() {
        assert!(Outline::parse("policy \"p\" {\n}\n").is_some());
        let bad_statement = "splashpol 1\npolicy \"p\" {\n  tmp privat\n  root\n}\n";
        assert_eq!(
            Outline::parse(bad_statement).map(|o| o.statements().count()),
            Some(0)
        );
        assert!(Outline::parse("splashpol 1\n").is_none());
    }

    #[test]
    fn amounts_are_in_base_units() {
        assert_eq!(amount("64", "MiB"), Some(Amount::Bytes(64 << 20)));
        assert_eq!(amount("1_000", "ms"), Some(Amount::Millis(1000)));
        assert_eq!(amount("2", "min"), Some(Amount::Millis(120_000)));
        assert_eq!(amount("2", "KiB/s"), Some(Amount::BytesPerSecond(2048)));
        assert_eq!(amount("120", "iops"), Some(Amount::Iops(120)));
        assert_eq!(amount("1.5", "GiB"), None);
        assert_eq!(amount("64", "MB"), None);
        assert_eq!(amount("17179869184", "GiB"), None);
    }

    #[test]
    fn units_are_spelled_as_documented() {
        let spellings: Vec<&str> = unit_spellings().collect();
        assert_eq!(spellings.first(), Some(&"B"));
        assert_eq!(spellings.last(), Some(&"iops"));
        assert!(spellings.contains(&"MiB/s"));
    }

    #[test]
    fn the_grammar_accepts_without_recovery_only() {
        assert!(grammar_accepts(
            "splashpol 1\npolicy \"p\" {\n  tmp off\n}\n"
        ));
        assert!(!grammar_accepts(
            "splashpol 1\npolicy \"p\" {\n  tmp privat\n}\n"
        ));
        assert!(!grammar_accepts("splashpol 1\npolicy \"p\" {\n}\n}\n"));
        assert!(!grammar_accepts("splashpol 1\n"));
    }
}
