//! Strings, lists, numbers and quantities, and the characters no string may
//! contain.

use pest::iterators::Pair;

use super::{Rule, inner, span};
use crate::ast::*;
use crate::diag::{Code, Diagnostic};
use crate::span::{Node, Span};

/// One `splash::parse::control-character` error for each forbidden
/// character inside a string literal of the parsed file.
pub(super) fn control_characters(pairs: pest::iterators::Pairs<'_, Rule>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for p in pairs
        .flatten()
        .filter(|p| p.as_rule() == Rule::string_inner)
    {
        let start = p.as_span().start();
        for (i, c) in p
            .as_str()
            .char_indices()
            .filter(|(_, c)| crate::text::is_forbidden(*c))
        {
            let kind = if c.is_control() {
                "control character"
            } else {
                "bidirectional formatting character"
            };
            out.push(
                Diagnostic::error(
                    Code::ControlCharacter,
                    Span::new(start + i, start + i + c.len_utf8()),
                    format!("{kind} U+{:04X} in a string", u32::from(c)),
                )
                .with_label(format!("U+{:04X}", u32::from(c)))
                .with_help(
                    "strings cannot contain control or bidirectional formatting characters; \
                     remove it (a tab or escape sequence in a path or id is almost always a \
                     mistake, and can make the policy read differently from what it does)",
                ),
            );
        }
    }
    out
}

pub(super) fn string(pair: Pair<'_, Rule>) -> Node<String> {
    // `path` / `selector` wrap a `string`, which wraps `string_inner`.
    let sp = span(&pair);
    let mut p = pair;
    while p.as_rule() != Rule::string_inner {
        match p.into_inner().next() {
            Some(next) => p = next,
            None => return Node::new(String::new(), sp),
        }
    }
    let raw = p.as_str();
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(escaped) = chars.next() {
                out.push(escaped);
            }
        } else {
            out.push(c);
        }
    }
    Node::new(out, sp)
}

pub(super) fn string_list(pair: Pair<'_, Rule>) -> Node<Vec<Node<String>>> {
    let sp = span(&pair);
    Node::new(inner(pair).map(string).collect(), sp)
}

pub(super) fn number(pair: Pair<'_, Rule>) -> Node<NumberLit> {
    Node::new(NumberLit(pair.as_str().to_string()), span(&pair))
}

pub(super) fn quantity(pair: Pair<'_, Rule>) -> Option<Node<Quantity>> {
    let mut sp = span(&pair);
    let mut it = pair.into_inner();
    let q = match it.next() {
        Some(first) if first.as_rule() == Rule::number => {
            let number = number(first);
            let unit = it
                .next()
                .map(|u| Node::new(u.as_str().to_string(), span(&u)));
            // The span ends at the last token, not at trailing blanks.
            sp.end = unit.as_ref().map_or(number.span.end, |u| u.span.end);
            Quantity::Value { number, unit }
        }
        Some(first) if first.as_rule() == Rule::kw_unlimited => Quantity::Unlimited,
        _ => return None,
    };
    Some(Node::new(q, sp))
}
