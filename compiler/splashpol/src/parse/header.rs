//! The `splashpol 1` header: what the file starts with when it does not
//! parse.

use super::suggest;
use crate::diag::{Code, Diagnostic};
use crate::span::Span;

/// The byte offset and text of the first word of the file, after a
/// byte-order mark, blank lines and comments (`""` at the end of the file).
pub(super) fn first_word(source: &str) -> (usize, &str) {
    let mut pos = source
        .strip_prefix(crate::span::BYTE_ORDER_MARK)
        .map_or(0, |_| crate::span::BYTE_ORDER_MARK.len_utf8());
    loop {
        let rest = &source[pos..];
        let blank = rest.len() - rest.trim_start_matches([' ', '\t', '\n', '\r']).len();
        pos += blank;
        let rest = &source[pos..];
        if rest.starts_with('#') {
            pos += rest.find(['\n', '\r']).unwrap_or(rest.len());
            continue;
        }
        let len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(rest.len());
        let len = if len == 0 {
            rest.chars().next().map_or(0, char::len_utf8)
        } else {
            len
        };
        return (pos, &rest[..len]);
    }
}

/// A file whose first word is not `splashpol`: the header is missing (or
/// misspelled), so say that, with what a file looks like.
pub(super) fn missing_header(start: usize, word: &str) -> Diagnostic {
    let d = Diagnostic::error(
        Code::MissingVersion,
        Span::new(start, start + word.len()),
        if word.is_empty() {
            "the file is empty: it has no `splashpol 1` header and no policy".to_string()
        } else {
            format!("missing `splashpol 1` header: the file starts with `{word}`")
        },
    )
    .with_label("the `splashpol 1` header belongs here");
    if !word.is_empty() && suggest(word, ["splashpol"]).is_some() {
        return d
            .with_help("did you mean `splashpol`? The first line of a policy is `splashpol 1`");
    }
    d.with_help(
        "a policy file starts with the line `splashpol 1`, followed by \
         `policy \"NAME\" { ... }` (see docs/language.md)",
    )
}
