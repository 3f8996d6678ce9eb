//! `splashc lsp`: a language server for `.splashpol` files over stdio.
//!
//! Full-document sync. On every open and change the document is checked by
//! the same checker as `splashc check`, and its diagnostics are published
//! with the same stable codes and spans (as LSP ranges in UTF-16 columns).
//! Hover shows the number of a syscall in a strict allowlist on every
//! architecture, and the value of a size, duration or rate in base units.
//! Completion offers what may stand at the cursor ([`Place`]): the keywords
//! of the statement or block entry there, and inside a strict allowlist the
//! syscall names the checker accepts there. Go-to-definition, references and rename work
//! on root ids (the `"ID"` of `root "ID" ...`, the only place the policy
//! language names a root); a rename edits the policy only, and says so, since
//! the capability manifests that select the root by id are other files.
//! Exit status: 0 after `shutdown` and `exit`, 1 when the client exits
//! without `shutdown` or the connection fails. The framing of standard input
//! is read by [`transport`], within fixed bounds; a malformed frame is
//! answered with a JSON-RPC error and the server carries on.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::exit::Exit;
use lsp_server::ErrorCode;
use lsp_server::{Connection, Message, Notification, Request, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, Notification as _,
    PublishDiagnostics, ShowMessage,
};
use lsp_types::request::{
    Completion, GotoDefinition, HoverRequest, PrepareRenameRequest, References, Rename,
    Request as _,
};
use lsp_types::{
    CompletionItem, CompletionItemKind, CompletionParams, CompletionResponse, Diagnostic,
    DiagnosticRelatedInformation, DiagnosticSeverity, DidChangeTextDocumentParams,
    DidCloseTextDocumentParams, DidOpenTextDocumentParams, GotoDefinitionParams,
    GotoDefinitionResponse, Hover, HoverContents, HoverParams, HoverProviderCapability, Location,
    MarkupContent, MarkupKind, MessageType, NumberOrString, OneOf, Position, PrepareRenameResponse,
    PublishDiagnosticsParams, Range, ReferenceParams, RenameOptions, RenameParams,
    ServerCapabilities, ShowMessageParams, TextDocumentPositionParams, TextDocumentSyncCapability,
    TextDocumentSyncKind, TextEdit, Uri, WorkspaceEdit,
};
use splash_protocol::Token;
use splash_seccomp::Arch;
use splashpol::syntax::{self, Amount, Outline};

/// The grammar, for its keyword list (every `kw_NAME` rule's literal).
const GRAMMAR: &str = include_str!("../../../grammar/splashpol.pest");

mod transport;

pub fn run() -> Exit {
    let (connection, writer) = transport::stdio();
    let code = match serve(&connection) {
        Ok(()) => Exit::Success,
        Err(e) => {
            eprintln!("splashc lsp: {e}");
            Exit::Rejected
        }
    };
    // The writer ends once the server's end of the connection is gone,
    // after it wrote every message it was given.
    drop(connection);
    match writer.join() {
        Ok(Ok(())) => code,
        Ok(Err(e)) => {
            eprintln!("splashc lsp: cannot write standard output: {e}");
            Exit::Rejected
        }
        Err(_) => {
            eprintln!("splashc lsp: the output thread panicked");
            Exit::Rejected
        }
    }
}

type Failure = Box<dyn std::error::Error + Send + Sync>;

fn serve(connection: &Connection) -> Result<(), Failure> {
    let capabilities = ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        completion_provider: Some(lsp_types::CompletionOptions::default()),
        definition_provider: Some(OneOf::Left(true)),
        references_provider: Some(OneOf::Left(true)),
        rename_provider: Some(OneOf::Right(RenameOptions {
            prepare_provider: Some(true),
            work_done_progress_options: lsp_types::WorkDoneProgressOptions::default(),
        })),
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
                let (response, note) = answer(&documents, request);
                connection.sender.send(Message::Response(response))?;
                if let Some(note) = note {
                    connection.sender.send(Message::Notification(note))?;
                }
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

/// The response to `request`, and a notification to send after it (the
/// message that a rename did not edit the capability manifests).
fn answer(
    documents: &BTreeMap<String, String>,
    request: Request,
) -> (Response, Option<Notification>) {
    let id = request.id.clone();
    let text = |at: &TextDocumentPositionParams| documents.get(at.text_document.uri.as_str());
    let result = match request.method.as_str() {
        HoverRequest::METHOD => serde_json::from_value::<HoverParams>(request.params).map(|p| {
            let at = p.text_document_position_params;
            serde_json::to_value(text(&at).and_then(|t| hover(t, at.position)))
        }),
        Completion::METHOD => serde_json::from_value::<CompletionParams>(request.params).map(|p| {
            let at = p.text_document_position;
            serde_json::to_value(
                text(&at).map(|t| CompletionResponse::Array(complete(t, at.position))),
            )
        }),
        GotoDefinition::METHOD => serde_json::from_value::<GotoDefinitionParams>(request.params)
            .map(|p| {
                let at = p.text_document_position_params;
                let found = text(&at).and_then(|t| {
                    let (_, roots) = root_at(t, at.position)?;
                    let declaration = roots.first()?;
                    Some(GotoDefinitionResponse::Scalar(declaration.location(t, &at)))
                });
                serde_json::to_value(found)
            }),
        References::METHOD => serde_json::from_value::<ReferenceParams>(request.params).map(|p| {
            let at = p.text_document_position;
            let found = text(&at).and_then(|t| {
                let (_, roots) = root_at(t, at.position)?;
                // The first declaration is the definition; any later one is
                // a repeat of the id (an error the checker reports).
                let skip = usize::from(!p.context.include_declaration);
                Some(
                    roots
                        .iter()
                        .skip(skip)
                        .map(|r| r.location(t, &at))
                        .collect::<Vec<_>>(),
                )
            });
            serde_json::to_value(found)
        }),
        PrepareRenameRequest::METHOD => {
            serde_json::from_value::<TextDocumentPositionParams>(request.params).map(|at| {
                let found = text(&at).and_then(|t| {
                    let (here, _) = root_at(t, at.position)?;
                    Some(PrepareRenameResponse::RangeWithPlaceholder {
                        range: range(t, here.start, here.end),
                        placeholder: here.id,
                    })
                });
                serde_json::to_value(found)
            })
        }
        Rename::METHOD => {
            let p = match serde_json::from_value::<RenameParams>(request.params) {
                Ok(p) => p,
                Err(e) => {
                    return (
                        Response::new_err(id, ErrorCode::InvalidParams as i32, e.to_string()),
                        None,
                    );
                }
            };
            let at = &p.text_document_position;
            let Some(t) = text(at) else {
                return (
                    Response::new_err(
                        id,
                        ErrorCode::RequestFailed as i32,
                        "the document is not open".to_string(),
                    ),
                    None,
                );
            };
            return match rename(t, &at.text_document.uri, at.position, &p.new_name) {
                Ok((edit, message)) => match serde_json::to_value(edit) {
                    Ok(value) => (
                        Response::new_ok(id, value),
                        Some(Notification::new(
                            ShowMessage::METHOD.to_string(),
                            ShowMessageParams {
                                typ: MessageType::INFO,
                                message,
                            },
                        )),
                    ),
                    Err(e) => (
                        Response::new_err(id, ErrorCode::InternalError as i32, e.to_string()),
                        None,
                    ),
                },
                Err((code, message)) => (Response::new_err(id, code as i32, message), None),
            };
        }
        _ => {
            return (
                Response::new_err(
                    id,
                    ErrorCode::MethodNotFound as i32,
                    format!("unsupported request `{}`", request.method),
                ),
                None,
            );
        }
    };
    let response = match result {
        Ok(Ok(value)) => Response::new_ok(id, value),
        Ok(Err(e)) | Err(e) => {
            Response::new_err(id, ErrorCode::InvalidParams as i32, e.to_string())
        }
    };
    (response, None)
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
/// [`line_col`](splashpol::syntax::line_col).
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

/// A syscall name of a `seccomp strict-allowlist` block or an `expect`
/// block's `syscall denied` at `at`: its number
/// on every architecture.
fn syscall_hover(text: &str, at: usize) -> Option<(String, (usize, usize))> {
    let outline = Outline::parse(text)?;
    let name = outline.statements().find_map(|stmt| {
        let names = stmt
            .strict_allowlist()
            .unwrap_or_else(|| stmt.denied_syscalls());
        names
            .into_iter()
            .find(|s| s.span.start <= at && at <= s.span.end)
    })?;
    let mut lines = vec![format!("syscall `{}`", name.text), String::new()];
    for arch in Arch::ALL {
        lines.push(match splash_seccomp::syscall_number(arch, name.text) {
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
    let shown = match syntax::amount(number, unit)? {
        Amount::Bytes(bytes) => format!("{bytes} bytes"),
        Amount::Millis(millis) => format!("{millis} ms"),
        Amount::BytesPerSecond(rate) => format!("{rate} bytes per second"),
        Amount::Iops(iops) => format!("{iops} I/O operations per second"),
    };
    Some((format!("`{number} {unit}` = {shown}"), span))
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

/// What may be written at a completion point.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Place {
    /// Outside the policy block: the header and `policy`.
    TopLevel,
    /// The first word of an entry of the block opened by this keyword
    /// (`policy`, `limits`, `landlock`, `cgroup`, `io`).
    EntryStart(&'static str),
    /// After the first word of a statement: the words of its rule.
    InStatement(String),
    /// Inside another entry (a value): nothing to offer.
    InEntry,
    /// Inside `seccomp strict-allowlist { ... }`.
    Allowlist,
}

/// Where `at` is: the blocks open before it (strings and comments skipped)
/// and whether the current entry has a complete first word.
fn place(text: &str, at: usize) -> Place {
    let before = &text[..at];
    // Each open block: the first word of the statement that opened it.
    let mut open: Vec<&str> = Vec::new();
    let mut entry_start = 0;
    let mut chars = before.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                // To the closing quote (or the end of the line).
                for (_, c) in chars.by_ref() {
                    if c == '"' || c == '\n' {
                        break;
                    }
                }
            }
            '#' => {
                for (_, c) in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
                entry_start = before
                    .len()
                    .min(before[i..].find('\n').map_or(before.len(), |n| i + n + 1));
            }
            '{' => {
                let opener = before[entry_start..i]
                    .split_whitespace()
                    .next()
                    .unwrap_or("");
                let opener = if before[entry_start..i].contains("strict-allowlist") {
                    "strict-allowlist"
                } else {
                    opener
                };
                open.push(opener);
                entry_start = i + 1;
            }
            '}' => {
                open.pop();
                entry_start = i + 1;
            }
            '\n' | ';' => entry_start = i + 1,
            _ => {}
        }
    }
    let block = open.last().copied();
    if block == Some("strict-allowlist") {
        return Place::Allowlist;
    }
    let entry = &before[entry_start..];
    let started = entry.trim_start();
    let first_word_done = started.contains(char::is_whitespace);
    let Some(block) = block else {
        return if first_word_done {
            Place::InEntry
        } else {
            Place::TopLevel
        };
    };
    let block: &'static str = match block {
        "policy" => "policy",
        "limits" => "limits",
        "landlock" => "landlock",
        "cgroup" => "cgroup",
        "io" => "io",
        "expect" => "expect",
        _ => return Place::InEntry,
    };
    if !first_word_done {
        return Place::EntryStart(block);
    }
    if block == "policy" {
        let word = started.split_whitespace().next().unwrap_or_default();
        return Place::InStatement(word.to_string());
    }
    Place::InEntry
}

/// The grammar's single-line rules: name to body.
fn grammar_rules() -> &'static BTreeMap<&'static str, &'static str> {
    static RULES: std::sync::OnceLock<BTreeMap<&'static str, &'static str>> =
        std::sync::OnceLock::new();
    RULES.get_or_init(|| {
        GRAMMAR
            .lines()
            .filter_map(|l| {
                let (name, body) = l.split_once('=')?;
                let name = name.trim();
                let body = body.trim();
                (!name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b == b'_' || b.is_ascii_digit())
                    && body.ends_with('}'))
                .then_some((name, body))
            })
            .collect()
    })
}

/// The keywords a statement's rule can take after its first word, found
/// through the rules it names (not into its `{ ... }` block).
fn statement_words(first: &str) -> Vec<&'static str> {
    let rules = grammar_rules();
    let name = format!("{}_stmt", first.replace('-', "_"));
    let Some((&start, _)) = rules.get_key_value(name.as_str()) else {
        return Vec::new();
    };
    let mut seen = BTreeSet::new();
    let mut words = BTreeSet::new();
    let mut todo = vec![start];
    while let Some(rule) = todo.pop() {
        if !seen.insert(rule) || rule.ends_with("_block") {
            continue;
        }
        let Some(body) = rules.get(rule) else {
            continue;
        };
        for ident in body.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if ident.starts_with("kw_") {
                if let Some(word) = rules.get(ident).and_then(|b| b.split('"').nth(1)) {
                    words.insert(word);
                }
            } else if let Some((&known, _)) = rules.get_key_value(ident) {
                todo.push(known);
            }
        }
    }
    words.remove(first);
    // The grammar takes `unlimited` for any quantity so that the checker
    // can explain why it is always refused.
    words.remove("unlimited");
    words.into_iter().collect()
}

/// Syscall names a strict allowlist may hold: every known name but `clone3`
/// and the fixed deny set, which the checker refuses there.
fn listable_syscalls() -> Vec<&'static str> {
    syscall_names()
        .into_iter()
        .filter(|n| splash_seccomp::strict_rejection(n).is_none())
        .collect()
}

/// The names of the strict allowlist around `at`, except the word at `at`
/// (a listed name is not offered again: the checker refuses duplicates).
fn listed_elsewhere(text: &str, at: usize) -> BTreeSet<&str> {
    let Some(start) = text[..at].rfind("strict-allowlist") else {
        return BTreeSet::new();
    };
    let end = text[at..].find('}').map_or(text.len(), |n| at + n);
    let (word_start, word_end) = word_at(text, at);
    let mut names = BTreeSet::new();
    let mut offset = start;
    for line in text[start..end].split_inclusive('\n') {
        let code = line.split('#').next().unwrap_or_default();
        for (i, _) in code.match_indices(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            let from = offset + i;
            if from > 0 && text[..from].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            let len = text[from..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(text.len() - from);
            if (from, from + len) != (word_start, word_end) {
                names.insert(&text[from..from + len]);
            }
        }
        offset += line.len();
    }
    names
}

fn complete(text: &str, at: Position) -> Vec<CompletionItem> {
    let at = offset(text, at);
    let item = |w: &str, kind, detail: String| CompletionItem {
        label: w.to_string(),
        kind: Some(kind),
        detail: Some(detail),
        ..CompletionItem::default()
    };
    let keywords = |words: &[&str]| -> Vec<CompletionItem> {
        words
            .iter()
            .map(|w| item(w, CompletionItemKind::KEYWORD, "keyword".to_string()))
            .collect()
    };
    match place(text, at) {
        Place::TopLevel => keywords(&["policy", "splashpol"]),
        Place::EntryStart(block) => keywords(match block {
            "limits" => syntax::LIMIT_KEYWORDS,
            "landlock" => syntax::LANDLOCK_KEYWORDS,
            "cgroup" => syntax::CGROUP_KEYWORDS,
            "io" => syntax::IO_KEYWORDS,
            "expect" => syntax::EXPECT_KEYWORDS,
            _ => syntax::STATEMENT_KEYWORDS,
        }),
        Place::InStatement(first) => keywords(&statement_words(&first)),
        Place::InEntry => Vec::new(),
        Place::Allowlist => {
            let listed = listed_elsewhere(text, at);
            listable_syscalls()
                .into_iter()
                .filter(|n| !listed.contains(n))
                .map(|n| {
                    let detail = if splash_seccomp::strict_listing_warning(n).is_some() {
                        "syscall; listing it lifts a fixed guard (a warning)"
                    } else {
                        "syscall"
                    };
                    item(n, CompletionItemKind::VALUE, detail.to_string())
                })
                .collect()
        }
    }
}

/// One root declaration, `root "ID" ...`: the id and the byte range of its
/// text between the quotes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RootId {
    id: String,
    start: usize,
    end: usize,
}

impl RootId {
    fn location(&self, text: &str, at: &TextDocumentPositionParams) -> Location {
        Location::new(
            at.text_document.uri.clone(),
            range(text, self.start, self.end),
        )
    }
}

/// Every root declaration of `text` in document order, as the parser sees
/// it (statements that do not parse are left out). Declarations are the only
/// place the policy language names a root: no other statement refers to one.
fn root_ids(text: &str) -> Vec<RootId> {
    let Some(outline) = Outline::parse(text) else {
        return Vec::new();
    };
    outline
        .statements()
        .filter_map(|stmt| {
            let id = stmt.root_id()?;
            // The span covers the quotes.
            let (start, end) = (id.span.start, id.span.end);
            let quoted = end >= start + 2
                && text.get(start..=start) == Some("\"")
                && text.get(end - 1..end) == Some("\"");
            quoted.then(|| RootId {
                id: id.text.to_string(),
                start: start + 1,
                end: end - 1,
            })
        })
        .collect()
}

/// The root id at `at` (its quotes count), and every declaration of the
/// same id in document order.
fn root_at(text: &str, at: Position) -> Option<(RootId, Vec<RootId>)> {
    let at = offset(text, at);
    let roots = root_ids(text);
    let here = roots
        .iter()
        .find(|r| r.start - 1 <= at && at <= r.end)?
        .clone();
    let same = roots.into_iter().filter(|r| r.id == here.id).collect();
    Some((here, same))
}

/// Renames the root id at `at` to `new_id` everywhere in `text`: the edit and
/// the message for the user, or the error code and why it is refused.
#[expect(
    clippy::mutable_key_type,
    reason = "`WorkspaceEdit` keys its changes by `Uri`, which hashes and compares by its text only (its interior cell is parser bookkeeping)"
)]
fn rename(
    text: &str,
    uri: &Uri,
    at: Position,
    new_id: &str,
) -> Result<(WorkspaceEdit, String), (ErrorCode, String)> {
    let (here, same) = root_at(text, at).ok_or_else(|| {
        (
            ErrorCode::RequestFailed,
            "only a root id (`root \"ID\"`) can be renamed, and there is none here".to_string(),
        )
    })?;
    Token::validate(new_id).map_err(|e| {
        (
            ErrorCode::InvalidParams,
            format!(
                "`{new_id}` is not a valid root id: {e} (ids are 1 to 128 bytes of `a-z`, `0-9`, `.`, `_` and `-`)"
            ),
        )
    })?;
    if new_id != here.id
        && let Some(other) = root_ids(text).iter().find(|r| r.id == new_id)
    {
        let line = position(text, other.start).line + 1;
        return Err((
            ErrorCode::RequestFailed,
            format!(
                "a root `{new_id}` is already declared on line {line}; root ids must be unique"
            ),
        ));
    }
    let edits: Vec<TextEdit> = same
        .iter()
        .map(|r| TextEdit::new(range(text, r.start, r.end), new_id.to_string()))
        .collect();
    let places = match edits.len() {
        1 => "1 place".to_string(),
        n => format!("{n} places"),
    };
    let message = format!(
        "Renamed root `{}` to `{new_id}` in this policy ({places}). Capability manifests select \
         roots by id and are not edited: update every manifest resource \
         {{\"kind\": \"file_root\", \"id\": \"{}\"}}.",
        here.id, here.id
    );
    let changes = HashMap::from([(uri.clone(), edits)]);
    Ok((WorkspaceEdit::new(changes), message))
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

    fn labels(text: &str, marker: &str) -> Vec<String> {
        let at = text.find(marker).expect("marker");
        let text = text.replace(marker, "");
        let (line, col) = text[..at]
            .rsplit_once('\n')
            .map_or((0, at), |(head, tail)| {
                (head.matches('\n').count() + 1, tail.len())
            });
        let position = Position::new(
            u32::try_from(line).expect("line"),
            u32::try_from(col).expect("column"),
        );
        complete(&text, position)
            .into_iter()
            .map(|i| i.label)
            .collect()
    }

    const POLICY: &str = "splashpol 1\npolicy \"p\" {\n  bubblewrap \"/usr/bin/bwrap\"\n  @STMT\n  seccomp @SECCOMP\n  limits runner \"/r\" {\n    @LIMIT cpu 1 s\n  }\n  seccomp strict-allowlist {\n    execve @SYS\n  }\n}\n@TOP";

    fn at(marker: &str) -> Vec<String> {
        // Only this marker stays as the cursor; the others are removed.
        let mut text = POLICY.to_string();
        for m in ["@STMT", "@SECCOMP", "@LIMIT", "@SYS", "@TOP"] {
            if m != marker {
                text = text.replace(m, "");
            }
        }
        labels(&text, marker)
    }

    #[test]
    fn completion_offers_what_may_stand_at_the_cursor() {
        let statement = at("@STMT");
        assert_eq!(
            statement,
            syntax::STATEMENT_KEYWORDS
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
        );
        let seccomp = at("@SECCOMP");
        for w in ["deny-known-escape-surface", "off", "strict-allowlist"] {
            assert!(seccomp.iter().any(|l| l == w), "{w} in {seccomp:?}");
        }
        assert!(!seccomp.iter().any(|l| l == "bubblewrap" || l == "seccomp"));
        let limit = at("@LIMIT");
        assert!(limit.iter().any(|l| l == "cpu") && !limit.iter().any(|l| l == "worker"));
        assert_eq!(at("@TOP"), ["policy", "splashpol"]);
        let text = "splashpol 1\npolicy \"p\" {\n  expect {\n    @\n  }\n}\n";
        assert_eq!(labels(text, "@"), syntax::EXPECT_KEYWORDS);
        // Tokens in strings and comments do not open or close blocks.
        let text = "splashpol 1\npolicy \"{\" { # }\n  @\n}\n";
        assert!(labels(text, "@").iter().any(|l| l == "worker"));
    }

    /// Inside a strict allowlist: syscall names, never one the checker
    /// refuses there (the fixed deny set, `clone3`); each one offered checks
    /// without an error when listed.
    #[test]
    fn allowlist_completion_never_offers_a_refused_syscall() {
        let offered = at("@SYS");
        for refused in [
            "clone3",
            "unshare",
            "bpf",
            "mount",
            "io_uring_setup",
            "ptrace",
        ] {
            assert!(!offered.iter().any(|l| l == refused), "{refused} offered");
        }
        for listable in ["openat", "read", "kcmp", "clone"] {
            assert!(offered.iter().any(|l| l == listable), "{listable} missing");
        }
        // Already listed.
        assert!(!offered.iter().any(|l| l == "execve"));
        for names in offered.chunks(64) {
            let name = names.join(" ");
            let source = format!(
                "splashpol 1\npolicy \"p\" {{\n  bubblewrap \"/usr/bin/bwrap\"\n  worker \"/opt/w/worker\"\n  runtime \"/opt/w\" at \"/opt/w\"\n  seccomp strict-allowlist {{ execve {name} }}\n}}\n"
            );
            let outcome = splashpol::check_source("p", &source);
            assert!(
                !outcome.has_errors(),
                "one of `{name}` is offered but refused: {:?}",
                outcome.errors().map(|d| d.code).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn statement_words_follow_the_grammar() {
        assert_eq!(statement_words("tmp"), ["off", "private", "size"]);
        assert!(statement_words("limits").contains(&"required"));
        assert!(
            !statement_words("limits").contains(&"cpu"),
            "not into its block"
        );
        assert_eq!(statement_words("identity"), ["dynamic", "group", "user"]);
        assert!(statement_words("no-such-statement").is_empty());
    }
}
