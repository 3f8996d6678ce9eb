//! Syntax errors: a pest error turned into words, with what was expected,
//! what was found and a "did you mean".

use pest::error::{ErrorVariant, InputLocation};

use super::{
    CGROUP_KEYWORDS, Context, IO_KEYWORDS, KEYWORD_SPELLINGS, LIMIT_KEYWORDS, Rule,
    STATEMENT_KEYWORDS, suggest,
};
use crate::diag::{Code, Diagnostic};
use crate::span::Span;

/// Words for a grammar rule in an "expected ..." list; `None` for rules that
/// are never worth naming.
fn describe(rule: Rule) -> Option<String> {
    let name = format!("{rule:?}");
    if let Some(kw) = name.strip_prefix("kw_") {
        return Some(format!("`{}`", kw.replace('_', "-")));
    }
    let words = match rule {
        Rule::path => "a path string",
        Rule::selector => "a quoted id such as `\"scratch\"`",
        Rule::string | Rule::string_inner => "a string",
        Rule::string_list => "a list such as `[\"a\", \"b\"]`",
        Rule::number => "a number",
        Rule::quantity => "a value such as `64 MiB`",
        Rule::unit => "a unit",
        Rule::sep => "a newline or `;`",
        Rule::EOI => "the end of the statement",
        Rule::device => "a device number such as `8:16`",
        Rule::access => "`read-only` or `read-write`",
        Rule::pin_item => "`mounts` or `executables`",
        Rule::catalog => "`endpoint` or `origin`",
        Rule::limit_name => "a limit such as `cpu`",
        Rule::cgroup_name => "a cgroup limit such as `memory`",
        Rule::io_direction => "`read` or `write`",
        Rule::syscall_name | Rule::expect_syscall_name => "a syscall name",
        Rule::exec_verdict => "`denied` or `allowed`",
        Rule::header => "the `splashpol 1` header",
        Rule::policy => "`policy \"NAME\" {`",
        Rule::root_host => "`host`",
        Rule::root_tmpfs => "`tmpfs`",
        Rule::tmp_off => "`off`",
        Rule::tmp_private => "`private`",
        Rule::strict_allowlist => "`strict-allowlist`",
        Rule::root_quota => "`quota`",
        Rule::limits_block
        | Rule::landlock_block
        | Rule::cgroup_block
        | Rule::io_block
        | Rule::syscall_block
        | Rule::expect_block => "`{`",
        _ => return None,
    };
    Some(words.to_string())
}

/// Keywords a rule can start with, for "did you mean".
fn rule_keywords(rule: Rule) -> Vec<&'static str> {
    match rule {
        Rule::access => vec!["read-only", "read-write"],
        Rule::catalog => vec!["endpoint", "origin"],
        Rule::pin_item => vec!["mounts", "executables"],
        Rule::limit_name => LIMIT_KEYWORDS.to_vec(),
        Rule::cgroup_name => CGROUP_KEYWORDS.to_vec(),
        Rule::io_direction => IO_KEYWORDS.to_vec(),
        Rule::root_host => vec!["host"],
        Rule::root_tmpfs => vec!["tmpfs"],
        Rule::tmp_off => vec!["off"],
        Rule::tmp_private => vec!["private"],
        Rule::strict_allowlist => vec!["strict-allowlist"],
        Rule::root_quota => vec!["quota"],
        Rule::exec_verdict => vec!["denied", "allowed"],
        _ => {
            let name = format!("{rule:?}");
            match name.strip_prefix("kw_") {
                // Keyword rule names are the keyword with `-` spelled `_`;
                // find the static spelling in the known lists.
                Some(kw) => KEYWORD_SPELLINGS
                    .iter()
                    .copied()
                    .filter(|k| k.replace('-', "_") == kw)
                    .collect(),
                None => Vec::new(),
            }
        }
    }
}

fn join_words(words: &[String]) -> String {
    match words {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {}", init.join(", "), last),
    }
}

/// The token at `pos` for "found ..." and its length in bytes.
fn token_at(text: &str, pos: usize) -> Option<(&str, usize)> {
    let rest = text.get(pos..)?;
    let c = rest.chars().next()?;
    if c == '\n' || c == '\r' {
        return Some(("end of line", 0));
    }
    if c == '"' {
        // A whole string literal on this line.
        let line = rest.split('\n').next().unwrap_or(rest);
        let len = line[1..].find('"').map_or(line.len(), |i| i + 2);
        return Some((&rest[..len], len));
    }
    let word_len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '/'))
        .unwrap_or(rest.len());
    if word_len > 0 {
        Some((&rest[..word_len], word_len))
    } else {
        Some((&rest[..c.len_utf8()], c.len_utf8()))
    }
}

/// A string opened on the line of `pos`, at or before `pos`, that is not
/// closed before the end of that line (strings never span lines): the parse
/// failed because of it, so say that rather than what the grammar expected.
fn unterminated_string(text: &str, pos: usize, offset: usize) -> Option<Diagnostic> {
    let line_start = text.get(..pos)?.rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[line_start..]
        .find('\n')
        .map_or(text.len(), |i| line_start + i);
    let line = &text[line_start..line_end];
    let mut open: Option<usize> = None;
    let mut chars = line.char_indices();
    while let Some((i, c)) = chars.next() {
        match (open, c) {
            (None, '#') => break,
            (None, '"') => open = Some(i),
            (Some(_), '\\') => {
                chars.next();
            }
            (Some(_), '"') => open = None,
            _ => {}
        }
    }
    let start = line_start + open?;
    if start > pos {
        return None;
    }
    let end = line_start + line.trim_end_matches(['\r', ' ', '\t']).len();
    Some(
        Diagnostic::error(
            Code::Syntax,
            Span::new(offset + start, offset + end),
            "unterminated string",
        )
        .with_label("this string has no closing `\"` on its line")
        .with_help("add the closing `\"` at the end of the string; a string cannot span lines"),
    )
}

/// A device where `MAJOR:MINOR` was expected: the whole word is shown.
fn bad_device(text: &str, pos: usize, offset: usize) -> Option<Diagnostic> {
    let rest = text.get(pos..)?;
    let len = rest
        .find(|c: char| c.is_whitespace() || matches!(c, '{' | '}' | ';' | '#' | '"'))
        .unwrap_or(rest.len());
    if len == 0 {
        return None;
    }
    Some(
        Diagnostic::error(
            Code::Syntax,
            Span::new(offset + pos, offset + pos + len),
            format!(
                "invalid device `{}`: a device is written `MAJOR:MINOR` with two decimal numbers",
                &rest[..len]
            ),
        )
        .with_label("not a `MAJOR:MINOR` device number")
        .with_help("write the device like `8:16` (the contents of `/sys/block/NAME/dev`)"),
    )
}

/// Turns a pest error on `text` (which starts at byte `offset` of the file)
/// into a diagnostic.
pub(super) fn syntax_error(
    e: &pest::error::Error<Rule>,
    text: &str,
    offset: usize,
    context: Context,
) -> Diagnostic {
    let pos = match e.location {
        InputLocation::Pos(p) => p,
        InputLocation::Span((s, _)) => s,
    };
    let mut expected: Vec<String> = Vec::new();
    let mut keywords: Vec<String> = Vec::new();
    if let ErrorVariant::ParsingError { positives, .. } = &e.variant {
        for r in positives {
            keywords.extend(rule_keywords(*r).iter().map(|k| (*k).to_string()));
            if let Some(d) = describe(*r) {
                let d = match (*r, context) {
                    (Rule::EOI, Context::File) => "the end of the file".to_string(),
                    (Rule::EOI, Context::Statement) => "the end of the statement".to_string(),
                    (Rule::EOI, _) => "the end of the entry".to_string(),
                    _ => d,
                };
                if !expected.contains(&d) {
                    expected.push(d);
                }
            }
        }
    }
    expected.sort();
    // Many statement keywords at once read better as one phrase.
    let statement_keywords = keywords
        .iter()
        .filter(|k| STATEMENT_KEYWORDS.contains(&k.as_str()))
        .count();
    // Statements are found by first-letter lookaheads, which pest does not
    // report; where a statement could start, pest reports what the recovery
    // rule tried (a string) next to a separator.
    let at_statement = statement_keywords > 3
        || matches!(&e.variant, ErrorVariant::ParsingError { positives, .. }
            if positives.contains(&Rule::bad_statement)
                || positives.contains(&Rule::string) && positives.contains(&Rule::sep));
    if at_statement {
        expected.retain(|w| {
            !STATEMENT_KEYWORDS.iter().any(|k| *w == format!("`{k}`"))
                && w != "a string"
                && w != "a newline or `;`"
        });
        expected.insert(0, "a statement".to_string());
        if context == Context::File {
            expected.push("`}`".to_string());
        }
    }
    if expected.is_empty() && context == Context::File && pos == 0 {
        expected.push("the `splashpol 1` header".to_string());
    }
    let end = match context {
        Context::File => "the end of the file",
        Context::Statement => "the end of the statement",
        _ => "the end of the entry",
    };
    if let Some(d) = unterminated_string(text, pos, offset) {
        if context == Context::File && pos >= text.trim_end().len() && text.contains('{') {
            return d.with_help(
                "add the closing `\"` at the end of the string, and the closing `}` of the policy",
            );
        }
        return d;
    }
    if let ErrorVariant::ParsingError { positives, .. } = &e.variant
        && positives.contains(&Rule::device)
        && let Some(d) = bad_device(text, pos, offset)
    {
        return d;
    }
    let found = token_at(text, pos);
    let (found_text, len) = match found {
        Some((t, len)) if len > 0 => (format!("`{t}`"), len),
        Some((t, _)) => (t.to_string(), 0),
        None => (end.to_string(), 0),
    };
    let sp = Span::new(offset + pos, offset + pos + len);
    let message = if expected.is_empty() {
        format!("unexpected {found_text}")
    } else {
        format!("expected {}, found {found_text}", join_words(&expected))
    };
    let mut d = Diagnostic::error(Code::Syntax, sp, message).with_label(if expected.is_empty() {
        "not valid here".to_string()
    } else {
        format!("expected {}", join_words(&expected))
    });
    if let Some(s) = found.and_then(|(word, _)| suggest(word, keywords.iter().map(String::as_str)))
    {
        d = d.with_help(format!("did you mean `{s}`?"));
    } else if context == Context::File && pos >= text.trim_end().len() && text.contains('{') {
        d = d.with_help("a closing `}` may be missing");
    }
    d
}
