//! `splashc lsp`: a language server for `.splashpol` files over stdio.
//!
//! Full-document sync. On every open and change the document is checked by
//! the same checker as `splashc check`, and its diagnostics are published
//! with the same stable codes and spans (as LSP ranges in UTF-16 columns).
//! Hover shows the number of a syscall in a strict allowlist on every
//! architecture, and the value of a size, duration or rate in base units.
//! Completion offers syscall names inside a strict allowlist and the
//! grammar's keywords elsewhere. Exit status: 0 after `shutdown` and `exit`,
//! 1 when the client exits without `shutdown` or the connection fails.

use std::collections::BTreeMap;

use lsp_server::{Connection, Message, Notification, Request, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, Notification as _,
    PublishDiagnostics,
};
use lsp_types::request::{Completion, HoverRequest, Request as _};
use lsp_types::{
    CompletionItem, CompletionItemKind, CompletionParams, CompletionResponse, Diagnostic,
    DiagnosticRelatedInformation, DiagnosticSeverity, DidChangeTextDocumentParams,
    DidCloseTextDocumentParams, DidOpenTextDocumentParams, Hover, HoverContents, HoverParams,
    HoverProviderCapability, Location, MarkupContent, MarkupKind, NumberOrString, Position,
    PublishDiagnosticsParams, Range, ServerCapabilities, TextDocumentSyncCapability,
    TextDocumentSyncKind, Uri,
};
use splash_seccomp::Arch;
use splashpol::ast::{Seccomp, Statement};
use splashpol::units::{self, Unit};

/// The grammar, for its keyword list (every `kw_NAME` rule's literal).
const GRAMMAR: &str = include_str!("../../../grammar/splashpol.pest");

pub fn run() -> u8 {
    let (connection, io_threads) = Connection::stdio();
    let code = match serve(&connection) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("splashc lsp: {e}");
            1
        }
    };
    drop(connection);
    match io_threads.join() {
        Ok(()) => code,
        Err(e) => {
            eprintln!("splashc lsp: {e}");
            1
        }
    }
}

type Failure = Box<dyn std::error::Error + Send + Sync>;

fn serve(connection: &Connection) -> Result<(), Failure> {
    let capabilities = ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        completion_provider: Some(lsp_types::CompletionOptions::default()),
        ..ServerCapabilities::default()
    };
    connection.initialize(serde_json::to_value(capabilities)?)?;
    let mut documents: BTreeMap<String, String> = BTreeMap::new();
    for message in &connection.receiver {
        match message {
            Message::Request(request) => {
                if connection.handle_shutdown(&request)? {
                    return Ok(());
                }
                let response = answer(&documents, request);
                connection.sender.send(Message::Response(response))?;
            }
            Message::Notification(note) if note.method == "exit" => {
                return Err("`exit` before `shutdown`".into());
            }
            Message::Notification(note) => {
                if let Some(uri) = update(&mut documents, note) {
                    // A closed document has no diagnostics.
                    let published = documents
                        .get(uri.as_str())
                        .map_or_else(Vec::new, |text| diagnostics(&uri, text));
                    let params = PublishDiagnosticsParams {
                        diagnostics: published,
                        uri,
                        version: None,
                    };
                    connection
                        .sender
                        .send(Message::Notification(Notification::new(
                            PublishDiagnostics::METHOD.to_string(),
                            params,
                        )))?;
                }
            }
            Message::Response(_) => {}
        }
    }
    Err("the client closed the connection without `shutdown` and `exit`".into())
}

/// Applies a document notification; returns the document to re-check.
fn update(documents: &mut BTreeMap<String, String>, note: Notification) -> Option<Uri> {
    match note.method.as_str() {
        DidOpenTextDocument::METHOD => {
            let p: DidOpenTextDocumentParams = serde_json::from_value(note.params).ok()?;
            documents.insert(
                p.text_document.uri.as_str().to_string(),
                p.text_document.text,
            );
            Some(p.text_document.uri)
        }
        DidChangeTextDocument::METHOD => {
            let p: DidChangeTextDocumentParams = serde_json::from_value(note.params).ok()?;
            // Full sync: the last change holds the whole text.
            let text = p.content_changes.into_iter().last()?.text;
            documents.insert(p.text_document.uri.as_str().to_string(), text);
            Some(p.text_document.uri)
        }
        DidCloseTextDocument::METHOD => {
            let p: DidCloseTextDocumentParams = serde_json::from_value(note.params).ok()?;
            documents.remove(p.text_document.uri.as_str());
            // Clear what was published for the closed document.
            Some(p.text_document.uri)
        }
        _ => None,
    }
}

fn answer(documents: &BTreeMap<String, String>, request: Request) -> Response {
    let id = request.id.clone();
    let result = match request.method.as_str() {
        HoverRequest::METHOD => serde_json::from_value::<HoverParams>(request.params).map(|p| {
            let at = p.text_document_position_params;
            let text = documents.get(at.text_document.uri.as_str());
            serde_json::to_value(text.and_then(|t| hover(t, at.position)))
        }),
        Completion::METHOD => serde_json::from_value::<CompletionParams>(request.params).map(|p| {
            let at = p.text_document_position;
            let text = documents.get(at.text_document.uri.as_str());
            serde_json::to_value(text.map(|t| CompletionResponse::Array(complete(t, at.position))))
        }),
        _ => {
            return Response::new_err(
                id,
                lsp_server::ErrorCode::MethodNotFound as i32,
                format!("unsupported request `{}`", request.method),
            );
        }
    };
    match result {
        Ok(Ok(value)) => Response::new_ok(id, value),
        Ok(Err(e)) | Err(e) => Response::new_err(
            id,
            lsp_server::ErrorCode::InvalidParams as i32,
            e.to_string(),
        ),
    }
}

/// The checker's diagnostics for `text`, as LSP diagnostics.
fn diagnostics(uri: &Uri, text: &str) -> Vec<Diagnostic> {
    let outcome = splashpol::check_source(uri.as_str(), text);
    outcome
        .diagnostics
        .iter()
        .map(|d| {
            let mut message = d.message.clone();
            if let Some(label) = &d.label {
                message.push_str(&format!("\n{label}"));
            }
            if let Some(help) = &d.help {
                message.push_str(&format!("\nhelp: {help}"));
            }
            let related = d
                .related
                .iter()
                .map(|(span, note)| DiagnosticRelatedInformation {
                    location: Location {
                        uri: uri.clone(),
                        range: range(text, span.start, span.end),
                    },
                    message: note.clone(),
                })
                .collect::<Vec<_>>();
            Diagnostic {
                range: range(text, d.span.start, d.span.end),
                severity: Some(if d.is_error() {
                    DiagnosticSeverity::ERROR
                } else {
                    DiagnosticSeverity::WARNING
                }),
                code: Some(NumberOrString::String(d.code.to_string())),
                source: Some("splashc".to_string()),
                message,
                related_information: (!related.is_empty()).then_some(related),
                ..Diagnostic::default()
            }
        })
        .collect()
}

fn range(text: &str, start: usize, end: usize) -> Range {
    Range::new(position(text, start), position(text, end))
}

/// The LSP position (zero-based line, UTF-16 column) of byte `offset`.
/// Lines end at `\n`, `\r\n` or a lone `\r`, as for the checker's
/// [`line_col`](splashpol::span::line_col).
fn position(text: &str, offset: usize) -> Position {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let bytes = text.as_bytes();
    let (mut line, mut line_start) = (0u32, 0usize);
    for (i, &b) in bytes[..offset].iter().enumerate() {
        if b == b'\n' || (b == b'\r' && bytes.get(i + 1) != Some(&b'\n')) {
            line += 1;
            line_start = i + 1;
        }
    }
    let column = text[line_start..offset].encode_utf16().count();
    Position::new(line, u32::try_from(column).unwrap_or(u32::MAX))
}

/// The byte offset of an LSP position (clamped to its line and the text).
fn offset(text: &str, at: Position) -> usize {
    let bytes = text.as_bytes();
    let mut line_start = 0;
    let mut line = 0;
    let mut i = 0;
    while line < at.line && i < bytes.len() {
        if bytes[i] == b'\n' || (bytes[i] == b'\r' && bytes.get(i + 1) != Some(&b'\n')) {
            line += 1;
            line_start = i + 1;
        }
        i += 1;
    }
    if line < at.line {
        return text.len();
    }
    let mut units = 0;
    for (i, c) in text[line_start..].char_indices() {
        if units >= at.character as usize || c == '\n' || c == '\r' {
            return line_start + i;
        }
        units += c.len_utf16();
    }
    text.len()
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')
}

/// The byte range of the word around `at`.
fn word_at(text: &str, at: usize) -> (usize, usize) {
    let start = text[..at]
        .char_indices()
        .rev()
        .take_while(|&(_, c)| is_word_char(c))
        .last()
        .map_or(at, |(i, _)| i);
    let end = text[at..]
        .char_indices()
        .find(|&(_, c)| !is_word_char(c))
        .map_or(text.len(), |(i, _)| at + i);
    (start, end)
}

fn hover(text: &str, at: Position) -> Option<Hover> {
    let at = offset(text, at);
    let (markdown, span) = syscall_hover(text, at).or_else(|| quantity_hover(text, at))?;
    Some(Hover {
        contents: HoverContents::Markup(MarkupContent {
            kind: MarkupKind::Markdown,
            value: markdown,
        }),
        range: Some(range(text, span.0, span.1)),
    })
}

/// A syscall name of a `seccomp strict-allowlist` block at `at`: its number
/// on every architecture.
fn syscall_hover(text: &str, at: usize) -> Option<(String, (usize, usize))> {
    let file = splashpol::parse::parse(text).file?;
    let name = file
        .policy
        .statements
        .iter()
        .find_map(|stmt| match &stmt.kind {
            Statement::Seccomp(Seccomp::StrictAllowlist { syscalls, .. }) => syscalls
                .iter()
                .find(|s| s.span.start <= at && at <= s.span.end),
            _ => None,
        })?;
    let mut lines = vec![format!("syscall `{}`", name.node), String::new()];
    for arch in Arch::ALL {
        lines.push(match splash_seccomp::syscall_number(arch, &name.node) {
            Some(nr) => format!("- {}: {nr}", arch.name()),
            None => format!("- {}: not on this architecture", arch.name()),
        });
    }
    Some((lines.join("\n"), (name.span.start, name.span.end)))
}

/// A quantity (`64 MiB`, `30 s`, `2 MiB/s`) with the cursor on its number or
/// unit: its value in bytes, milliseconds or bytes per second.
fn quantity_hover(text: &str, at: usize) -> Option<(String, (usize, usize))> {
    let (start, end) = word_at(text, at);
    let word = &text[start..end];
    let is_number = |w: &str| {
        w.starts_with(|c: char| c.is_ascii_digit())
            && w.chars()
                .all(|c| c.is_ascii_digit() || c == '_' || c == '.')
    };
    let blank = |c: char| c == ' ' || c == '\t';
    let (number, unit, span) = if is_number(word) {
        let rest = &text[end..];
        let gap = rest.len() - rest.trim_start_matches(blank).len();
        let (u_start, u_end) = word_at(text, end + gap);
        (word, &text[u_start..u_end], (start, u_end))
    } else {
        let before = text[..start].trim_end_matches(blank);
        let (n_start, n_end) = word_at(text, before.len());
        let number = &text[n_start..n_end];
        if !is_number(number) {
            return None;
        }
        (number, word, (n_start, end))
    };
    let unit_kind = units::parse_unit(unit)?;
    let lit = splashpol::span::Node::new(
        splashpol::ast::NumberLit(number.to_string()),
        splashpol::Span::default(),
    );
    let value = units::integer(&lit).ok()?;
    let shown = match unit_kind {
        Unit::Bytes(per) => format!("{} bytes", value.checked_mul(per)?),
        Unit::Millis(per) => format!("{} ms", value.checked_mul(per)?),
        Unit::BytesPerSecond(per) => format!("{} bytes per second", value.checked_mul(per)?),
        Unit::Iops => format!("{value} I/O operations per second"),
    };
    Some((format!("`{number} {unit}` = {shown}"), span))
}

/// The grammar's keywords, sorted and without duplicates.
fn keywords() -> Vec<&'static str> {
    let mut words: Vec<&str> = GRAMMAR
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("kw_"))
        .filter_map(|l| l.split('"').nth(1))
        .collect();
    words.sort_unstable();
    words.dedup();
    words
}

/// Syscall names of every architecture, sorted and without duplicates.
fn syscall_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = Arch::ALL
        .iter()
        .flat_map(|a| a.syscalls().iter().map(|&(name, _)| name))
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// Whether `at` is inside the braces of a `strict-allowlist` block.
fn in_allowlist(text: &str, at: usize) -> bool {
    let before = &text[..at];
    before.rfind("strict-allowlist").is_some_and(|i| {
        let tail = &before[i..];
        tail.contains('{') && !tail.contains('}')
    })
}

fn complete(text: &str, at: Position) -> Vec<CompletionItem> {
    let at = offset(text, at);
    let (words, kind, detail) = if in_allowlist(text, at) {
        (syscall_names(), CompletionItemKind::VALUE, "syscall")
    } else {
        (keywords(), CompletionItemKind::KEYWORD, "keyword")
    };
    words
        .into_iter()
        .map(|w| CompletionItem {
            label: w.to_string(),
            kind: Some(kind),
            detail: Some(detail.to_string()),
            ..CompletionItem::default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_count_utf16_units_and_every_line_ending() {
        let text = "a\r\nb\rcé😀x\ny";
        let x = text.find('x').expect("x");
        // `é` is one UTF-16 unit, `😀` two.
        assert_eq!(position(text, x), Position::new(2, 4));
        assert_eq!(offset(text, Position::new(2, 4)), x);
        assert_eq!(position(text, text.len()), Position::new(3, 1));
        assert_eq!(offset(text, Position::new(1, 99)), 4);
        assert_eq!(offset(text, Position::new(9, 0)), text.len());
    }

    #[test]
    fn quantities_hover_in_base_units() {
        let text = "memory 512 MiB; cpu 30 s; read 2 MiB/s\n";
        let on = |needle: &str| {
            let at = text.find(needle).expect("needle");
            quantity_hover(text, at).map(|(s, _)| s)
        };
        assert_eq!(on("512").as_deref(), Some("`512 MiB` = 536870912 bytes"));
        assert_eq!(on("MiB;").as_deref(), Some("`512 MiB` = 536870912 bytes"));
        assert_eq!(on("s;").as_deref(), Some("`30 s` = 30000 ms"));
        assert_eq!(
            on("2 MiB/s").as_deref(),
            Some("`2 MiB/s` = 2097152 bytes per second")
        );
        assert_eq!(on("memory"), None);
    }

    #[test]
    fn hover_and_completion_answer_at_every_position_without_panicking() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies");
        let mut texts = vec!["a\r\n😀 é\r64 MiB\n\u{feff}x 1_0.5 KiB/s".to_string()];
        for entry in std::fs::read_dir(dir).expect("policies") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "splashpol") {
                texts.push(std::fs::read_to_string(&path).expect("policy"));
            }
        }
        let mut syscall_hovers = 0;
        for text in &texts {
            let lines = u32::try_from(text.lines().count()).expect("lines") + 2;
            for line in 0..lines {
                for character in 0..100 {
                    let at = Position::new(line, character);
                    if let Some(h) = hover(text, at)
                        && let HoverContents::Markup(m) = h.contents
                        && m.value.starts_with("syscall")
                    {
                        syscall_hovers += 1;
                    }
                    let _ = complete(text, at);
                }
            }
        }
        assert!(
            syscall_hovers > 0,
            "the bundled strict allowlists have syscalls"
        );
    }

    #[test]
    fn keywords_come_from_the_grammar() {
        let k = keywords();
        assert!(k.contains(&"seccomp") && k.contains(&"strict-allowlist"));
        assert!(k.len() >= 40);
    }
}
