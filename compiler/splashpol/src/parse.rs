//! Parsing: `grammar/splashpol.pest` to the [`ast`](crate::ast).
//!
//! This is the one place where pest errors become [`Diagnostic`]s: grammar
//! rule names are translated into words ("expected a path string") and never
//! reach users. The grammar captures a statement (or block entry) that does
//! not parse as a whole, so the parser reports it and carries on with the next
//! one; one bad statement never hides errors in the others.

use std::collections::BTreeSet;

use pest::Parser as _;
use pest::error::{ErrorVariant, InputLocation};
use pest::iterators::Pair;

use crate::ast::*;
use crate::diag::{Diagnostic, suggest};
use crate::span::{Node, Span};

#[derive(Debug, pest_derive::Parser)]
#[grammar = "../../../grammar/splashpol.pest"]
pub struct SplashpolParser;

/// Statement keywords, in documentation order.
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
];
/// Entry keywords of a `limits { }` block.
pub const LIMIT_KEYWORDS: &[&str] = &[
    "cpu",
    "address-space",
    "processes",
    "open-files",
    "file-size",
];
/// Entry keywords of a `landlock { }` block.
pub const LANDLOCK_KEYWORDS: &[&str] = &["allow-exec"];
/// Entry keywords of a `cgroup { }` block.
pub const CGROUP_KEYWORDS: &[&str] = &["cpu", "memory", "swap", "pids", "io", "join-timeout"];
/// Entry keywords of an `io DEVICE { }` block.
pub const IO_KEYWORDS: &[&str] = &["read", "write"];

/// What [`parse`] produces: the tree (when the file's outline parsed) and
/// every syntax diagnostic.
#[derive(Debug, Clone)]
pub struct ParseOutput {
    pub file: Option<File>,
    pub diagnostics: Vec<Diagnostic>,
    /// Keywords of statements that failed to parse (already reported), so
    /// the checker does not also call them missing.
    pub failed_keywords: BTreeSet<&'static str>,
}

impl ParseOutput {
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
}

impl Context {
    fn keywords(self) -> &'static [&'static str] {
        match self {
            Context::File | Context::Statement => STATEMENT_KEYWORDS,
            Context::Limits => LIMIT_KEYWORDS,
            Context::Landlock => LANDLOCK_KEYWORDS,
            Context::Cgroup => CGROUP_KEYWORDS,
            Context::Io => IO_KEYWORDS,
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
        }
    }

    fn block_name(self) -> &'static str {
        match self {
            Context::File | Context::Statement => "a policy",
            Context::Limits => "a `limits` block",
            Context::Landlock => "a `landlock` block",
            Context::Cgroup => "a `cgroup` block",
            Context::Io => "an `io` block",
        }
    }
}

/// Parses a whole `.splashpol` source.
pub fn parse(source: &str) -> ParseOutput {
    let mut p = Parsing {
        diagnostics: Vec::new(),
        failed_keywords: BTreeSet::new(),
    };
    let file = match SplashpolParser::parse(Rule::file, source) {
        Ok(mut pairs) => {
            p.diagnostics.extend(control_characters(pairs.clone()));
            let file = pairs.next();
            let built = file.clone().and_then(|file| p.file(file));
            if built.is_none() {
                let sp = file.map_or(Span::new(0, source.len()), |f| span(&f));
                p.diagnostics.push(internal(sp, "the file"));
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

/// True for a character no string may contain: a control character (C0,
/// DEL, C1) or a bidirectional formatting character, which makes a path or
/// id read differently from what it is.
pub(crate) fn is_forbidden_in_string(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// One `splash::parse::control-character` error for each forbidden
/// character inside a string literal of the parsed file.
fn control_characters(pairs: pest::iterators::Pairs<'_, Rule>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for p in pairs
        .flatten()
        .filter(|p| p.as_rule() == Rule::string_inner)
    {
        let start = p.as_span().start();
        for (i, c) in p
            .as_str()
            .char_indices()
            .filter(|(_, c)| is_forbidden_in_string(*c))
        {
            let kind = if c.is_control() {
                "control character"
            } else {
                "bidirectional formatting character"
            };
            out.push(
                Diagnostic::error(
                    "splash::parse::control-character",
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

/// The byte offset and text of the first word of the file, after a
/// byte-order mark, blank lines and comments (`""` at the end of the file).
fn first_word(source: &str) -> (usize, &str) {
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
fn missing_header(start: usize, word: &str) -> Diagnostic {
    let d = Diagnostic::error(
        "splash::parse::missing-version",
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

/// The diagnostic for a parse tree without the shape the grammar promises
/// (a bug in this file, never in the policy): the part is not used, so a
/// policy is never produced from a tree that was only partly understood.
fn internal(span: Span, what: &str) -> Diagnostic {
    Diagnostic::error(
        "splash::parse::internal",
        span,
        format!("internal error: the parse tree of {what} does not have the expected shape"),
    )
    .with_label("not understood, so not used")
    .with_help("this is a bug in splashc, not in the policy: please report it with the policy file")
}

struct Parsing {
    diagnostics: Vec<Diagnostic>,
    failed_keywords: BTreeSet<&'static str>,
}

fn span(pair: &Pair<'_, Rule>) -> Span {
    Span::of(pair.as_span())
}

/// Inner pairs without separators.
fn inner<'i>(pair: Pair<'i, Rule>) -> impl Iterator<Item = Pair<'i, Rule>> {
    pair.into_inner()
        .filter(|p| p.as_rule() != Rule::sep && p.as_rule() != Rule::EOI)
}

fn string(pair: Pair<'_, Rule>) -> Node<String> {
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

fn string_list(pair: Pair<'_, Rule>) -> Node<Vec<Node<String>>> {
    let sp = span(&pair);
    Node::new(inner(pair).map(string).collect(), sp)
}

fn number(pair: Pair<'_, Rule>) -> Node<NumberLit> {
    Node::new(NumberLit(pair.as_str().to_string()), span(&pair))
}

fn quantity(pair: Pair<'_, Rule>) -> Option<Node<Quantity>> {
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

/// Pulls the next inner pair, which the grammar guarantees exists.
fn next<'i>(it: &mut impl Iterator<Item = Pair<'i, Rule>>) -> Option<Pair<'i, Rule>> {
    it.next()
}

impl Parsing {
    /// The file's tree; `None` when it does not have the grammar's shape.
    fn file(&mut self, file: Pair<'_, Rule>) -> Option<File> {
        let mut version = None;
        let mut policy = None;
        for p in inner(file) {
            match p.as_rule() {
                Rule::header => {
                    version = p
                        .into_inner()
                        .find(|p| p.as_rule() == Rule::number)
                        .map(number);
                }
                Rule::policy => policy = Some(self.policy(p)?),
                _ => return None,
            }
        }
        Some(File {
            version,
            policy: policy?,
        })
    }

    fn policy(&mut self, pair: Pair<'_, Rule>) -> Option<Policy> {
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
                Rule::policy_body => {
                    for s in inner(p) {
                        if s.as_rule() == Rule::bad_statement {
                            self.bad(&s, Context::Statement);
                        } else {
                            let sp = span(&s);
                            let keyword = s.as_str().split([' ', '\t']).next().unwrap_or_default();
                            match self.statement(s) {
                                Some(stmt) => statements.push(stmt),
                                None => {
                                    // Not used, and not also reported missing.
                                    if let Some(kw) =
                                        STATEMENT_KEYWORDS.iter().find(|k| **k == keyword)
                                    {
                                        self.failed_keywords.insert(kw);
                                    }
                                    self.diagnostics.push(internal(sp, "this statement"));
                                }
                            }
                        }
                    }
                }
                _ => return None,
            }
        }
        Some(Policy {
            name,
            header,
            statements,
        })
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
                    "splash::parse::syntax",
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
            "splash::parse::unknown-keyword",
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

    fn statement(&mut self, pair: Pair<'_, Rule>) -> Option<Stmt> {
        let sp = span(&pair);
        let rule = pair.as_rule();
        let mut it = pair.into_inner();
        let kw = next(&mut it)?;
        let keyword = span(&kw);
        let kind = match rule {
            Rule::bubblewrap_stmt => Statement::Bubblewrap {
                path: string(next(&mut it)?),
            },
            Rule::worker_stmt => {
                let path = string(next(&mut it)?);
                let args = it
                    .find(|p| p.as_rule() == Rule::string_list)
                    .map(string_list);
                Statement::Worker { path, args }
            }
            Rule::runtime_stmt => {
                let source = string(next(&mut it)?);
                let _at = next(&mut it)?;
                let destination = string(next(&mut it)?);
                Statement::Runtime {
                    source,
                    destination,
                }
            }
            Rule::root_stmt => {
                let id = string(next(&mut it)?);
                let body = next(&mut it)?;
                let body_rule = body.as_rule();
                let is_host = body_rule == Rule::root_host;
                let mut b = body.into_inner();
                if is_host {
                    let _host = next(&mut b)?;
                    let source = string(next(&mut b)?);
                    let _at = next(&mut b)?;
                    let destination = string(next(&mut b)?);
                    let access_pair = next(&mut b)?;
                    let access_span = span(&access_pair);
                    let access = match access_pair.into_inner().next().map(|p| p.as_rule()) {
                        Some(Rule::kw_read_write) => Access::ReadWrite,
                        Some(Rule::kw_read_only) => Access::ReadOnly,
                        _ => return None,
                    };
                    let quota = match b.next() {
                        Some(q) => {
                            let qs = span(&q);
                            let mut qi = q
                                .into_inner()
                                .filter(|p| matches!(p.as_rule(), Rule::number | Rule::quantity));
                            Some(Node::new(
                                Quota {
                                    project: number(next(&mut qi)?),
                                    bytes: quantity(next(&mut qi)?)?,
                                    inodes: quantity(next(&mut qi)?)?,
                                },
                                qs,
                            ))
                        }
                        None => None,
                    };
                    Statement::Root {
                        id,
                        destination,
                        kind: RootKind::Host {
                            source,
                            access: Node::new(access, access_span),
                            quota,
                        },
                    }
                } else if body_rule == Rule::root_tmpfs {
                    let mut b = b.filter(|p| matches!(p.as_rule(), Rule::path | Rule::quantity));
                    let destination = string(next(&mut b)?);
                    let size = quantity(next(&mut b)?)?;
                    Statement::Root {
                        id,
                        destination,
                        kind: RootKind::Tmpfs { size },
                    }
                } else {
                    return None;
                }
            }
            Rule::tmp_stmt => {
                let setting = next(&mut it)?;
                if setting.as_rule() == Rule::tmp_off {
                    Statement::Tmp(Tmp::Off)
                } else if setting.as_rule() != Rule::tmp_private {
                    return None;
                } else {
                    let size = match setting.into_inner().find(|p| p.as_rule() == Rule::quantity) {
                        Some(q) => Some(quantity(q)?),
                        None => None,
                    };
                    Statement::Tmp(Tmp::Private { size })
                }
            }
            Rule::writes_stmt => Statement::WritesBounded,
            Rule::host_writes_stmt => Statement::HostWritesUnbounded,
            Rule::user_namespaces_stmt => Statement::UserNamespacesNone,
            Rule::pin_stmt => {
                let mut items = Vec::new();
                for p in it {
                    let s = span(&p);
                    let item = match p.into_inner().next().map(|k| k.as_rule()) {
                        Some(Rule::kw_executables) => PinItem::Executables,
                        Some(Rule::kw_mounts) => PinItem::Mounts,
                        _ => return None,
                    };
                    items.push(Node::new(item, s));
                }
                Statement::Pin { items }
            }
            Rule::quota_stmt => {
                let mut q = it.filter(|p| p.as_rule() == Rule::quantity);
                Statement::QuotaAggregate {
                    bytes: quantity(next(&mut q)?)?,
                    inodes: quantity(next(&mut q)?)?,
                }
            }
            Rule::tmpfs_stmt => Statement::TmpfsAggregate {
                size: quantity(it.find(|p| p.as_rule() == Rule::quantity)?)?,
            },
            Rule::active_roots_stmt => Statement::ActiveRoots {
                max: quantity(it.find(|p| p.as_rule() == Rule::quantity)?)?,
            },
            Rule::seccomp_stmt => {
                let mode = next(&mut it)?;
                match mode.as_rule() {
                    Rule::kw_off => Statement::Seccomp(Seccomp::Off),
                    Rule::kw_deny_known_escape_surface => {
                        Statement::Seccomp(Seccomp::DenyKnownEscapeSurface)
                    }
                    Rule::strict_allowlist => {
                        let mut syscalls = Vec::new();
                        let mut recovered = false;
                        if let Some(block) = mode
                            .into_inner()
                            .find(|p| p.as_rule() == Rule::syscall_block)
                        {
                            for s in inner(block) {
                                if s.as_rule() == Rule::syscall_name {
                                    syscalls.push(Node::new(s.as_str().to_string(), span(&s)));
                                } else if s.as_rule() != Rule::bad_word {
                                    return None;
                                } else {
                                    recovered = true;
                                    self.diagnostics.push(
                                        Diagnostic::error(
                                            "splash::parse::invalid-syscall-name",
                                            span(&s),
                                            format!("`{}` is not a syscall name", s.as_str()),
                                        )
                                        .with_label("expected a name such as `openat`")
                                        .with_help(
                                            "separate names with spaces or newlines; names use \
                                             letters, digits and `_` only",
                                        ),
                                    );
                                }
                            }
                        }
                        Statement::Seccomp(Seccomp::StrictAllowlist {
                            syscalls,
                            recovered,
                        })
                    }
                    _ => return None,
                }
            }
            Rule::limits_stmt => {
                let mut runner = None;
                let mut required = None;
                let mut entries = Vec::new();
                let mut recovered = false;
                for p in it {
                    match p.as_rule() {
                        Rule::path => runner = Some(string(p)),
                        Rule::kw_required => required = Some(Node::new((), span(&p))),
                        Rule::limits_block => {
                            for e in inner(p) {
                                if e.as_rule() == Rule::bad_entry {
                                    recovered = true;
                                    self.bad(&e, Context::Limits);
                                } else {
                                    entries.push(limit_entry(e)?);
                                }
                            }
                        }
                        Rule::kw_runner => {}
                        _ => return None,
                    }
                }
                Statement::Limits {
                    runner,
                    required,
                    entries,
                    recovered,
                }
            }
            Rule::landlock_stmt => {
                let mut runner = None;
                let mut allow_exec = Vec::new();
                let mut recovered = false;
                for p in it {
                    match p.as_rule() {
                        Rule::path => runner = Some(string(p)),
                        Rule::landlock_block => {
                            for e in inner(p) {
                                if e.as_rule() == Rule::bad_entry {
                                    recovered = true;
                                    self.bad(&e, Context::Landlock);
                                } else if e.as_rule() == Rule::allow_exec {
                                    let path =
                                        e.into_inner().find(|p| p.as_rule() == Rule::path)?;
                                    allow_exec.push(string(path));
                                } else {
                                    return None;
                                }
                            }
                        }
                        Rule::kw_runner => {}
                        _ => return None,
                    }
                }
                Statement::Landlock {
                    runner,
                    allow_exec,
                    recovered,
                }
            }
            Rule::runner_stmt => Statement::CombinedRunner {
                path: string(it.find(|p| p.as_rule() == Rule::path)?),
            },
            Rule::cgroup_stmt => {
                let mut paths = Vec::new();
                let mut required = None;
                let mut entries = Vec::new();
                let mut recovered = false;
                for p in it {
                    match p.as_rule() {
                        Rule::path => paths.push(string(p)),
                        Rule::kw_required => required = Some(Node::new((), span(&p))),
                        Rule::cgroup_block => {
                            for e in inner(p) {
                                match e.as_rule() {
                                    Rule::bad_entry => {
                                        recovered = true;
                                        self.bad(&e, Context::Cgroup);
                                    }
                                    _ => entries.push(self.cgroup_entry(e)?),
                                }
                            }
                        }
                        Rule::kw_parent | Rule::kw_runner => {}
                        _ => return None,
                    }
                }
                let mut paths = paths.into_iter();
                Statement::Cgroup {
                    parent: paths.next()?,
                    runner: paths.next()?,
                    required,
                    entries,
                    recovered,
                }
            }
            Rule::watchdog_stmt => {
                let mut q = it.filter(|p| p.as_rule() == Rule::quantity);
                Statement::Watchdog {
                    session: quantity(next(&mut q)?)?,
                    call: match q.next() {
                        Some(call) => Some(quantity(call)?),
                        None => None,
                    },
                }
            }
            Rule::network_broker_stmt => {
                let mut catalog = None;
                let mut paths = Vec::new();
                let mut ids = None;
                for p in it {
                    match p.as_rule() {
                        Rule::catalog => {
                            let s = span(&p);
                            let c = match p.into_inner().next().map(|k| k.as_rule()) {
                                Some(Rule::kw_origin) => Catalog::Origin,
                                Some(Rule::kw_endpoint) => Catalog::Endpoint,
                                _ => return None,
                            };
                            catalog = Some(Node::new(c, s));
                        }
                        Rule::path => paths.push(string(p)),
                        Rule::string_list => ids = Some(string_list(p)),
                        Rule::kw_parent | Rule::kw_at | Rule::kw_ids => {}
                        _ => return None,
                    }
                }
                let mut paths = paths.into_iter();
                Statement::NetworkBroker {
                    catalog: catalog?,
                    parent: paths.next()?,
                    destination: paths.next()?,
                    ids: ids?,
                }
            }
            _ => return None,
        };
        Some(Stmt {
            kind,
            span: sp,
            keyword,
        })
    }

    fn cgroup_entry(&mut self, pair: Pair<'_, Rule>) -> Option<Node<CgroupEntry>> {
        let sp = span(&pair);
        match pair.as_rule() {
            Rule::cgroup_value => {
                let mut it = pair.into_inner();
                let name = next(&mut it)?;
                let ns = span(&name);
                let kind = match name.into_inner().next().map(|k| k.as_rule()) {
                    Some(Rule::kw_cpu) => CgroupKind::Cpu,
                    Some(Rule::kw_memory) => CgroupKind::Memory,
                    Some(Rule::kw_swap) => CgroupKind::Swap,
                    Some(Rule::kw_pids) => CgroupKind::Pids,
                    Some(Rule::kw_join_timeout) => CgroupKind::JoinTimeout,
                    _ => return None,
                };
                let value = quantity(next(&mut it)?)?;
                Some(Node::new(
                    CgroupEntry::Value {
                        kind: Node::new(kind, ns),
                        value,
                    },
                    sp,
                ))
            }
            Rule::io_entry => {
                let mut major = None;
                let mut minor = None;
                let mut limits = Vec::new();
                let mut recovered = false;
                for p in pair.into_inner() {
                    match p.as_rule() {
                        Rule::device => {
                            let s = span(&p);
                            let text = p.as_str();
                            let colon = text.find(':')?;
                            major = Some(Node::new(
                                NumberLit(text[..colon].to_string()),
                                Span::new(s.start, s.start + colon),
                            ));
                            minor = Some(Node::new(
                                NumberLit(text[colon + 1..].to_string()),
                                Span::new(s.start + colon + 1, s.end),
                            ));
                        }
                        Rule::io_block => {
                            for e in inner(p) {
                                if e.as_rule() == Rule::bad_entry {
                                    recovered = true;
                                    self.bad(&e, Context::Io);
                                } else if e.as_rule() != Rule::io_limit {
                                    return None;
                                } else {
                                    let es = span(&e);
                                    let mut ei = e.into_inner();
                                    let dir = next(&mut ei)?;
                                    let ds = span(&dir);
                                    let direction =
                                        match dir.into_inner().next().map(|k| k.as_rule()) {
                                            Some(Rule::kw_write) => IoDirection::Write,
                                            Some(Rule::kw_read) => IoDirection::Read,
                                            _ => return None,
                                        };
                                    let value = quantity(next(&mut ei)?)?;
                                    limits.push(Node::new(
                                        IoLimit {
                                            direction: Node::new(direction, ds),
                                            value,
                                        },
                                        es,
                                    ));
                                }
                            }
                        }
                        Rule::kw_io => {}
                        _ => return None,
                    }
                }
                Some(Node::new(
                    CgroupEntry::Io {
                        major: major?,
                        minor: minor?,
                        limits,
                        recovered,
                    },
                    sp,
                ))
            }
            _ => None,
        }
    }
}

fn limit_entry(pair: Pair<'_, Rule>) -> Option<Node<LimitEntry>> {
    let sp = span(&pair);
    let mut it = pair.into_inner();
    let name = next(&mut it)?;
    let ns = span(&name);
    let kind = match name.into_inner().next().map(|k| k.as_rule()) {
        Some(Rule::kw_cpu) => LimitKind::Cpu,
        Some(Rule::kw_address_space) => LimitKind::AddressSpace,
        Some(Rule::kw_processes) => LimitKind::Processes,
        Some(Rule::kw_open_files) => LimitKind::OpenFiles,
        Some(Rule::kw_file_size) => LimitKind::FileSize,
        _ => return None,
    };
    let value = quantity(next(&mut it)?)?;
    Some(Node::new(
        LimitEntry {
            kind: Node::new(kind, ns),
            value,
        },
        sp,
    ))
}

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
        Rule::syscall_name => "a syscall name",
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
        | Rule::syscall_block => "`{`",
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

/// Every keyword of the language (for `rule_keywords` and editor syntax files).
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
];

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
            "splash::parse::syntax",
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
            "splash::parse::syntax",
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
fn syntax_error(
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
    let mut d = Diagnostic::error("splash::parse::syntax", sp, message).with_label(
        if expected.is_empty() {
            "not valid here".to_string()
        } else {
            format!("expected {}", join_words(&expected))
        },
    );
    if let Some(s) = found.and_then(|(word, _)| suggest(word, keywords.iter().map(String::as_str)))
    {
        d = d.with_help(format!("did you mean `{s}`?"));
    } else if context == Context::File && pos >= text.trim_end().len() && text.contains('{') {
        d = d.with_help("a closing `}` may be missing");
    }
    d
}

#[cfg(test)]
mod tests;
