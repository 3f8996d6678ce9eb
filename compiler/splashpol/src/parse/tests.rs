//! One accepted and one rejected input per grammar rule, asserting the code
//! and the exact text under the span.

use super::*;

fn wrap(body: &str) -> String {
    format!("splashpol 1\npolicy \"p\" {{\n{body}\n}}\n")
}

#[track_caller]
fn ok(body: &str) -> Vec<Stmt> {
    let src = wrap(body);
    let out = parse(&src);
    assert!(
        out.diagnostics.is_empty(),
        "{body:?}: {:#?}",
        out.diagnostics
    );
    out.file.expect("file").policy.statements
}

#[track_caller]
fn only(body: &str) -> Statement {
    let mut s = ok(body);
    assert_eq!(s.len(), 1, "{s:#?}");
    s.remove(0).kind
}

/// Asserts exactly one diagnostic, with `code`, whose span covers `needle`
/// (empty `needle`: a zero-length span at `at_end`-of-line position).
#[track_caller]
fn err(body: &str, code: Code, needle: &str) -> Diagnostic {
    let src = wrap(body);
    let out = parse(&src);
    assert_eq!(out.diagnostics.len(), 1, "{body:?}: {:#?}", out.diagnostics);
    let d = out.diagnostics.into_iter().next().expect("one");
    assert_eq!(d.code, code, "{d:#?}");
    let offset = src.find(body).expect("body");
    let at = if needle.is_empty() {
        body.len()
    } else {
        body.find(needle).expect("needle")
    } + offset;
    assert_eq!(d.span, Span::new(at, at + needle.len()), "{d:#?}");
    d
}

fn s(text: &str) -> Node<String> {
    Node::new(text.to_string(), Span::default())
}

fn n(text: &str) -> Node<NumberLit> {
    Node::new(NumberLit(text.to_string()), Span::default())
}

fn q(number: &str, unit: Option<&str>) -> Node<Quantity> {
    Node::new(
        Quantity::Value {
            number: n(number),
            unit: unit.map(s),
        },
        Span::default(),
    )
}

#[test]
fn file_outline() {
    let out = parse("# leading comment\n\nsplashpol 1 # trailing\n\npolicy \"x\" {\n}\n\n");
    assert!(out.diagnostics.is_empty(), "{:#?}", out.diagnostics);
    let f = out.file.expect("file");
    assert_eq!(f.version, Some(n("1")));
    assert_eq!(f.policy.name.node, "x");
    // No header parses (the checker reports it); one-line forms work too.
    assert!(
        parse("policy \"x\" { worker \"/a\"; bubblewrap \"/b\" }")
            .diagnostics
            .is_empty()
    );
    let d = parse("splashpol 1 policy \"x\" {}").diagnostics;
    assert_eq!((d[0].code, d[0].span), (Code::Syntax, Span::new(12, 18)));
    assert!(
        d[0].message.contains("a newline or `;`"),
        "{}",
        d[0].message
    );
    let d = parse("splashpol 1\npolicy \"x\" {\n  tmp off\n").diagnostics;
    assert_eq!(d.len(), 1);
    assert!(
        d[0].message.contains("found the end of the file"),
        "{}",
        d[0].message
    );
    assert_eq!(d[0].help.as_deref(), Some("a closing `}` may be missing"));
    let d = parse("").diagnostics;
    assert!(
        d[0].message.contains("`splashpol 1` header"),
        "{}",
        d[0].message
    );
}

#[test]
fn a_bad_statement_is_reported_and_the_rest_kept() {
    let out =
        parse("splashpol 1\npolicy \"p\" {\n  bubblewrap \"/usr/bin/bwrap\"\n  tmp privat\n}\n");
    assert!(out.has_errors());
    assert!(out.failed_keywords.contains("tmp"));
    let file = out.file.expect("the outline parsed");
    assert!(matches!(
        &file.policy.statements[..],
        [s] if matches!(&s.kind, Statement::Bubblewrap { path } if path.node == "/usr/bin/bwrap")
    ));
}

#[test]
fn spans_do_not_take_part_in_equality() {
    let a = parse("splashpol 1\npolicy \"x\" { tmp off }").file;
    let b = parse("splashpol 1\n\n\npolicy   \"x\"   {\n\n  tmp   off # c\n}\n").file;
    assert_eq!(a, b);
}

#[test]
fn bubblewrap() {
    assert_eq!(
        only("bubblewrap \"/usr/bin/bwrap\""),
        Statement::Bubblewrap {
            path: s("/usr/bin/bwrap")
        }
    );
    let d = err("bubblewrap /usr/bin/bwrap", Code::Syntax, "/usr/bin/bwrap");
    assert_eq!(d.message, "expected a path string, found `/usr/bin/bwrap`");
}

#[test]
fn worker() {
    assert_eq!(
        only("worker \"/w\" args [\"--a\",\n \"b\",]"),
        Statement::Worker {
            path: s("/w"),
            args: Some(Node::new(vec![s("--a"), s("b")], Span::default())),
        }
    );
    assert_eq!(
        only("worker \"/w\""),
        Statement::Worker {
            path: s("/w"),
            args: None
        }
    );
    err("worker \"/w\" args \"--a\"", Code::Syntax, "\"--a\"");
}

#[test]
fn strings_and_escapes() {
    assert_eq!(
        only(r#"bubblewrap "/a\"b\\c""#),
        Statement::Bubblewrap {
            path: s("/a\"b\\c")
        }
    );
    err(r#"bubblewrap "/a\n""#, Code::Syntax, r#""/a\n""#);
}

#[test]
fn runtime() {
    assert_eq!(
        only("runtime \"/opt/r\" at \"/opt/s\""),
        Statement::Runtime {
            source: s("/opt/r"),
            destination: s("/opt/s")
        }
    );
    let d = err("runtime \"/opt/r\" \"/opt/s\"", Code::Syntax, "\"/opt/s\"");
    assert!(d.message.contains("`at`"), "{}", d.message);
}

#[test]
fn roots() {
    assert_eq!(
        only("root \"r\" host \"/s\" at \"/d\" read-write quota project 4_2 bytes 1 MiB inodes 16"),
        Statement::Root {
            id: s("r"),
            destination: s("/d"),
            kind: RootKind::Host {
                source: s("/s"),
                access: Node::new(AccessDecl::ReadWrite, Span::default()),
                quota: Some(Node::new(
                    Quota {
                        project: n("4_2"),
                        bytes: q("1", Some("MiB")),
                        inodes: q("16", None)
                    },
                    Span::default(),
                )),
            },
        }
    );
    assert_eq!(
        only("root \"t\" tmpfs at \"/d\" size 32 MiB"),
        Statement::Root {
            id: s("t"),
            destination: s("/d"),
            kind: RootKind::Tmpfs {
                size: q("32", Some("MiB"))
            }
        }
    );
    let d = err(
        "root \"r\" host \"/s\" at \"/d\" readonly",
        Code::Syntax,
        "readonly",
    );
    assert_eq!(d.help.as_deref(), Some("did you mean `read-only`?"));
    err("root \"t\" tmpfs at \"/d\"", Code::Syntax, "");
    err(
        "root scratch tmpfs at \"/d\" size 1 MiB",
        Code::Syntax,
        "scratch",
    );
}

#[test]
fn tmp() {
    assert_eq!(only("tmp off"), Statement::Tmp(Tmp::Off));
    assert_eq!(
        only("tmp private"),
        Statement::Tmp(Tmp::Private { size: None })
    );
    assert_eq!(
        only("tmp private size 64MiB"),
        Statement::Tmp(Tmp::Private {
            size: Some(q("64", Some("MiB")))
        })
    );
    let d = err("tmp privat size 64 MiB", Code::Syntax, "privat");
    assert_eq!(d.help.as_deref(), Some("did you mean `private`?"));
}

#[test]
fn switches() {
    assert_eq!(only("writes bounded"), Statement::WritesBounded);
    assert_eq!(
        only("host-writes unbounded"),
        Statement::HostWritesUnbounded
    );
    assert_eq!(only("user-namespaces none"), Statement::UserNamespacesNone);
    err("writes unbounded", Code::Syntax, "unbounded");
    err("host-writes bounded", Code::Syntax, "bounded");
    err("user-namespaces off", Code::Syntax, "off");
}

#[test]
fn pin() {
    match only("pin mounts, executables") {
        Statement::Pin { items } => assert_eq!(
            items.into_iter().map(|i| i.node).collect::<Vec<_>>(),
            [PinItem::Mounts, PinItem::Executables]
        ),
        other => panic!("{other:?}"),
    }
    err("pin mounts executables", Code::Syntax, "executables");
}

#[test]
fn aggregates_and_bounds() {
    assert_eq!(
        only("quota aggregate bytes 256 MiB inodes 16384"),
        Statement::QuotaAggregate {
            bytes: q("256", Some("MiB")),
            inodes: q("16384", None)
        }
    );
    assert_eq!(
        only("tmpfs aggregate 160 MiB"),
        Statement::TmpfsAggregate {
            size: q("160", Some("MiB"))
        }
    );
    assert_eq!(
        only("active-roots max 64"),
        Statement::ActiveRoots { max: q("64", None) }
    );
    err("quota aggregate 256 MiB inodes 1", Code::Syntax, "256");
    err("tmpfs aggregate", Code::Syntax, "");
    err("active-roots 64", Code::Syntax, "64");
}

#[test]
fn numbers() {
    assert_eq!(
        only("active-roots max 1_000"),
        Statement::ActiveRoots {
            max: q("1_000", None)
        }
    );
    assert_eq!(
        only("tmpfs aggregate 1.5 GiB"),
        Statement::TmpfsAggregate {
            size: q("1.5", Some("GiB"))
        }
    );
    assert_eq!(
        only("active-roots max unlimited"),
        Statement::ActiveRoots {
            max: Node::new(Quantity::Unlimited, Span::default())
        }
    );
    err("active-roots max 1__0", Code::Syntax, "__0");
    err("active-roots max -1", Code::Syntax, "-1");
}

#[test]
fn seccomp() {
    assert_eq!(only("seccomp off"), Statement::Seccomp(Seccomp::Off));
    assert_eq!(
        only("seccomp deny-known-escape-surface"),
        Statement::Seccomp(Seccomp::DenyKnownEscapeSurface)
    );
    assert_eq!(
        only("seccomp strict-allowlist {\n read write # c\n execve\n}"),
        Statement::Seccomp(Seccomp::StrictAllowlist {
            syscalls: vec![s("read"), s("write"), s("execve")],
            parsed: Parsed::Clean
        })
    );
    let d = err(
        "seccomp deny-known-escape",
        Code::Syntax,
        "deny-known-escape",
    );
    assert_eq!(
        d.help.as_deref(),
        Some("did you mean `deny-known-escape-surface`?")
    );
    err(
        "seccomp strict-allowlist { read, write }",
        Code::InvalidSyscallName,
        "read,",
    );
}

#[test]
fn limits() {
    assert_eq!(
        only("limits runner \"/r\" required {\n cpu 30 s; processes 64\n}"),
        Statement::Limits {
            runner: Some(s("/r")),
            required: Some(Node::new((), Span::default())),
            entries: vec![
                Node::new(
                    LimitEntry {
                        kind: Node::new(LimitKind::Cpu, Span::default()),
                        value: q("30", Some("s"))
                    },
                    Span::default()
                ),
                Node::new(
                    LimitEntry {
                        kind: Node::new(LimitKind::Processes, Span::default()),
                        value: q("64", None)
                    },
                    Span::default()
                ),
            ],
            parsed: Parsed::Clean,
        }
    );
    assert!(matches!(
        only("limits { }"),
        Statement::Limits {
            runner: None,
            required: None,
            ..
        }
    ));
    let d = err(
        "limits runner \"/r\" { cpu 30 s; cpux 1 }",
        Code::UnknownKeyword,
        "cpux",
    );
    assert_eq!(d.help.as_deref(), Some("did you mean `cpu`?"));
    let src = wrap("limits runner \"/r\" { processes }");
    let d = parse(&src).diagnostics;
    let at = src.find("processes").expect("word") + "processes".len();
    assert_eq!(
        (d.len(), d[0].code, d[0].span),
        (1, Code::Syntax, Span::new(at, at))
    );
    assert!(
        d[0].message.contains("found the end of the entry"),
        "{}",
        d[0].message
    );
}

#[test]
fn landlock() {
    assert_eq!(
        only("landlock runner \"/r\" {\n allow-exec \"/a\"\n}"),
        Statement::Landlock {
            runner: Some(s("/r")),
            allow_exec: vec![s("/a")],
            parsed: Parsed::Clean
        }
    );
    assert_eq!(
        only("landlock"),
        Statement::Landlock {
            runner: None,
            allow_exec: vec![],
            parsed: Parsed::Clean
        }
    );
    err(
        "landlock runner \"/r\" { allow-exec /a }",
        Code::Syntax,
        "/a",
    );
}

#[test]
fn combined_runner() {
    assert_eq!(
        only("runner combined \"/r\""),
        Statement::CombinedRunner { path: s("/r") }
    );
    err("runner \"/r\"", Code::Syntax, "\"/r\"");
}

#[test]
fn cgroup() {
    let stmt = only(
        "cgroup parent \"/p\" runner \"/r\" required {\n cpu 50 ms; swap 0 B\n io 8:16 { read 2 MiB/s; write 120 iops }\n join-timeout 5 s\n}",
    );
    let Statement::Cgroup {
        parent,
        runner,
        required,
        entries,
        parsed,
    } = stmt
    else {
        panic!()
    };
    assert_eq!(
        (
            parent.node.as_str(),
            runner.node.as_str(),
            required.is_some(),
            parsed
        ),
        ("/p", "/r", true, Parsed::Clean)
    );
    assert_eq!(entries.len(), 4);
    assert_eq!(
        entries[2].node,
        CgroupEntry::Io {
            major: n("8"),
            minor: n("16"),
            limits: vec![
                Node::new(
                    IoLimit {
                        direction: Node::new(IoDirection::Read, Span::default()),
                        value: q("2", Some("MiB/s"))
                    },
                    Span::default()
                ),
                Node::new(
                    IoLimit {
                        direction: Node::new(IoDirection::Write, Span::default()),
                        value: q("120", Some("iops"))
                    },
                    Span::default()
                ),
            ],
            parsed: Parsed::Clean,
        }
    );
    let d = err(
        "cgroup parent \"/p\" runner \"/r\" { memroy 1 MiB }",
        Code::UnknownKeyword,
        "memroy",
    );
    assert_eq!(d.help.as_deref(), Some("did you mean `memory`?"));
    err(
        "cgroup parent \"/p\" runner \"/r\" { io 8 { read 1 iops } }",
        Code::Syntax,
        "8",
    );
    err(
        "cgroup parent \"/p\" runner \"/r\" { io 8:1 { wrte 1 iops } }",
        Code::UnknownKeyword,
        "wrte",
    );
    err("cgroup runner \"/r\" { pids 1 }", Code::Syntax, "runner");
}

#[test]
fn watchdog() {
    assert_eq!(
        only("watchdog session 300 s call 30 s"),
        Statement::Watchdog {
            session: q("300", Some("s")),
            call: Some(q("30", Some("s")))
        }
    );
    assert_eq!(
        only("watchdog session 300"),
        Statement::Watchdog {
            session: q("300", None),
            call: None
        }
    );
    err("watchdog 300 s", Code::Syntax, "300");
}

#[test]
fn network_broker() {
    assert_eq!(
        only("network-broker endpoint parent \"/p\" at \"/d\" ids [\"a\", \"b\"]"),
        Statement::NetworkBroker {
            catalog: Node::new(Catalog::Endpoint, Span::default()),
            parent: s("/p"),
            destination: s("/d"),
            ids: Node::new(vec![s("a"), s("b")], Span::default()),
        }
    );
    let d = err(
        "network-broker endpoints parent \"/p\" at \"/d\" ids []",
        Code::Syntax,
        "endpoints",
    );
    assert_eq!(d.help.as_deref(), Some("did you mean `endpoint`?"));
}

#[test]
fn unknown_statements_suggest_keywords() {
    let d = err("wroker \"/a\"", Code::UnknownKeyword, "wroker");
    assert_eq!(d.help.as_deref(), Some("did you mean `worker`?"));
    let d = err("frobnicate 1", Code::UnknownKeyword, "frobnicate");
    assert!(d.help.unwrap().starts_with("expected one of `bubblewrap`"));
}

#[test]
fn trailing_text_is_reported() {
    let d = err("tmp off please", Code::Syntax, "please");
    assert_eq!(
        d.message,
        "expected the end of the statement, found `please`"
    );
}

#[test]
fn one_bad_statement_does_not_hide_the_others() {
    let src = wrap(
        "wroker \"/a\"\n  tmp off\n  limits runner \"/r\" {\n cpu 1 s\n bogus 2\n }\n  pin mounts executables\n  seccomp strict-allowlist { read, write }\n  bubblewrap 7",
    );
    let out = parse(&src);
    let codes: Vec<_> = out.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(
        codes,
        [
            Code::UnknownKeyword,
            Code::UnknownKeyword,
            Code::Syntax,
            Code::InvalidSyscallName,
            Code::Syntax,
        ]
    );
    // The good statements survive.
    let kinds: Vec<_> = out
        .file
        .expect("file")
        .policy
        .statements
        .iter()
        .map(|s| s.kind.keyword())
        .collect();
    assert_eq!(kinds, ["tmp", "limits", "seccomp"]);
    assert!(out.failed_keywords.contains("pin") && out.failed_keywords.contains("bubblewrap"));
}

#[test]
fn bad_block_statements_skip_their_whole_block() {
    let src = wrap("limits runner /r {\n cpu 1 s\n}\n  tmp off");
    let out = parse(&src);
    assert_eq!(out.diagnostics.len(), 1, "{:#?}", out.diagnostics);
    assert_eq!(out.file.expect("file").policy.statements.len(), 1);
}

#[test]
fn the_keyword_list_matches_the_grammar_and_the_reference() {
    let grammar = include_str!("../../../../grammar/splashpol.pest");
    let mut from_grammar: Vec<String> = grammar
        .lines()
        .filter_map(|l| l.trim().strip_prefix("kw_"))
        .filter_map(|l| l.split('"').nth(1))
        .map(str::to_string)
        .collect();
    from_grammar.sort();
    let mut listed: Vec<String> = KEYWORD_SPELLINGS.iter().map(|k| k.to_string()).collect();
    listed.sort();
    assert_eq!(from_grammar, listed);
    let doc = include_str!("../../../../docs/language.md");
    let section = doc.split("## Keywords").nth(1).expect("keywords section");
    for k in KEYWORD_SPELLINGS {
        assert!(
            section.contains(&format!("`{k}`")),
            "`{k}` missing from docs/language.md"
        );
    }
}

#[test]
fn an_unterminated_string_says_so_at_its_opening_quote() {
    let d = err(
        "worker \"/opt/w\nbubblewrap \"/usr/bin/bwrap\"",
        Code::Syntax,
        "\"/opt/w",
    );
    assert_eq!(d.message, "unterminated string");
    assert!(
        d.help
            .as_deref()
            .unwrap_or("")
            .contains("add the closing `\"`")
    );
    // Inside a block entry, with the statements after it still checked.
    let src =
        wrap("landlock runner \"/r\" {\n allow-exec \"/opt/ld\n }\nworker \"/opt/w\" args [\"a]");
    let out = parse(&src);
    let spans: Vec<(&str, Span)> = out
        .diagnostics
        .iter()
        .map(|d| (d.message.as_str(), d.span))
        .collect();
    let first = src.find("\"/opt/ld").expect("first");
    let second = src.find("\"a]").expect("second");
    assert_eq!(
        spans,
        [
            ("unterminated string", Span::new(first, first + 8)),
            ("unterminated string", Span::new(second, second + 3)),
        ]
    );
    // At the end of the file (where the policy's `}` is missing too).
    let src = "splashpol 1\npolicy \"p\" {\n  worker \"/opt/w";
    let out = parse(src);
    assert_eq!(out.diagnostics.len(), 1, "{:#?}", out.diagnostics);
    let d = &out.diagnostics[0];
    let at = src.find("\"/opt/w").expect("quote");
    assert_eq!(d.code, Code::Syntax);
    assert_eq!(d.span, Span::new(at, src.len()));
    assert_eq!(d.message, "unterminated string");
    // A string closed on its line is not unterminated.
    let d = err("worker \"/opt/w\" \"x\"", Code::Syntax, "\"x\"");
    assert_ne!(d.message, "unterminated string");
}

#[test]
fn a_bad_device_is_shown_whole() {
    let body = "cgroup parent \"/c\" runner \"/r\" {\n io 8:sda { read 2 MiB/s }\n}";
    let d = err(body, Code::Syntax, "8:sda");
    assert!(
        d.message.contains("`MAJOR:MINOR` with two decimal numbers"),
        "{d:#?}"
    );
    let d = err(
        "cgroup parent \"/c\" runner \"/r\" {\n io sda { read 2 MiB/s }\n}",
        Code::Syntax,
        "sda",
    );
    assert!(d.message.starts_with("invalid device `sda`"), "{d:#?}");
}

/// Examples of every statement rule (`*_stmt` in the grammar), covering each
/// alternative and optional part, each with the rule it must parse as.
const STATEMENT_EXAMPLES: &[(&str, &str)] = &[
    ("bubblewrap_stmt", "bubblewrap \"/usr/bin/bwrap\""),
    ("worker_stmt", "worker \"/w\""),
    ("worker_stmt", "worker \"/w\" args [\"a\", \"\"]"),
    ("runtime_stmt", "runtime \"/r\" at \"/opt/r\""),
    ("root_stmt", "root \"a\" host \"/h\" at \"/a\" read-only"),
    (
        "root_stmt",
        "root \"b\" host \"/h\" at \"/b\" read-write quota project 7 bytes 1 GiB inodes 10",
    ),
    ("root_stmt", "root \"c\" tmpfs at \"/c\" size 64 MiB"),
    ("tmp_stmt", "tmp off"),
    ("tmp_stmt", "tmp private"),
    ("tmp_stmt", "tmp private size 1 MiB"),
    ("writes_stmt", "writes bounded"),
    ("host_writes_stmt", "host-writes unbounded"),
    ("user_namespaces_stmt", "user-namespaces none"),
    ("identity_stmt", "identity user 64000 group 64000"),
    ("identity_stmt", "identity dynamic"),
    ("pin_stmt", "pin mounts, executables"),
    ("quota_stmt", "quota aggregate bytes 1 GiB inodes 100"),
    ("tmpfs_stmt", "tmpfs aggregate unlimited"),
    ("active_roots_stmt", "active-roots max 4"),
    ("seccomp_stmt", "seccomp off"),
    ("seccomp_stmt", "seccomp deny-known-escape-surface"),
    ("seccomp_stmt", "seccomp strict-allowlist { execve read }"),
    (
        "limits_stmt",
        "limits runner \"/l\" required { cpu 1 s; address-space 1 GiB; processes 8; open-files 64; file-size 1 MiB }",
    ),
    ("landlock_stmt", "landlock"),
    (
        "landlock_stmt",
        "landlock runner \"/l\" { allow-exec \"/x\" }",
    ),
    ("runner_stmt", "runner combined \"/c\""),
    (
        "cgroup_stmt",
        "cgroup parent \"/sys/fs/cgroup/s\" runner \"/r\" required {\n cpu 50 percent; memory 1 GiB; swap 0 B; pids 64; join-timeout 1 s\n io 8:16 { read 1 MiB/s; write 2 MiB/s }\n}",
    ),
    ("watchdog_stmt", "watchdog session 1 h"),
    ("watchdog_stmt", "watchdog session 1 h call 30 s"),
    (
        "network_broker_stmt",
        "network-broker endpoint parent \"/p\" at \"/b\" ids [\"a\"]",
    ),
    (
        "network_broker_stmt",
        "network-broker origin parent \"/p\" at \"/b\" ids [\"a\", \"b\"]",
    ),
    (
        "expect_stmt",
        "expect {\n read-only \"/usr\"; writable \"/w\" max 8 MiB\n hidden \"/etc\"  exec denied \"/s\"  exec allowed \"/t\"\n syscall denied unshare bpf network none\n processes max 64; user-namespaces none\n}",
    ),
];

/// The statement rules of `grammar/splashpol.pest`: every rule named `*_stmt`.
fn grammar_statement_rules() -> BTreeSet<String> {
    let grammar = include_str!("../../../../grammar/splashpol.pest");
    grammar
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| name.ends_with("_stmt"))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_statement_rule_has_an_example_that_builds() {
    let rules = grammar_statement_rules();
    assert!(rules.len() >= 19, "{rules:?}");
    let covered: BTreeSet<String> = STATEMENT_EXAMPLES
        .iter()
        .map(|(r, _)| (*r).to_string())
        .collect();
    assert_eq!(
        rules, covered,
        "every statement rule of the grammar needs an example here (and only those)"
    );
    for (rule, text) in STATEMENT_EXAMPLES {
        // The example parses as its rule...
        let tree = SplashpolParser::parse(Rule::statement_alone, text)
            .unwrap_or_else(|e| panic!("{text:?}: {e}"))
            .next()
            .and_then(|alone| alone.into_inner().next())
            .expect("a statement");
        assert_eq!(format!("{:?}", tree.as_rule()), *rule, "{text:?}");
        // ...and the builder turns it into exactly one statement, with no
        // diagnostic (in particular no `splash::parse::internal`).
        let statements = ok(text);
        assert_eq!(statements.len(), 1, "{text:?}: {statements:#?}");
    }
}

#[test]
fn a_tree_of_the_wrong_shape_is_an_internal_error_not_a_default() {
    // A pair of another rule where a statement is expected: the builder
    // refuses it instead of guessing.
    let pair = SplashpolParser::parse(Rule::quantity, "5 s")
        .expect("quantity")
        .next()
        .expect("pair");
    let mut p = Parsing {
        diagnostics: Vec::new(),
        failed_keywords: BTreeSet::new(),
        trailing: None,
    };
    assert!(p.statement(pair).is_none());
    let d = internal(Span::new(0, 3), "this statement");
    assert_eq!(d.code, Code::ParseInternal);
    assert!(d.is_error());
    // A `tmpfs aggregate` is a quantity, and `unlimited` is the only
    // keyword a quantity can be: anything else is not read as unlimited.
    let kw = SplashpolParser::parse(Rule::kw_cpu, "cpu")
        .expect("kw")
        .next()
        .expect("pair");
    assert!(quantity(kw).is_none());
}

/// The [`Parsed`] marks of a body's one statement (and of its `io` blocks),
/// with the number of diagnostics the parser reported.
fn parsed_marks(body: &str) -> (Vec<Parsed>, usize) {
    let out = parse(&wrap(body));
    let mut stmts = out.file.expect("file").policy.statements;
    assert_eq!(stmts.len(), 1, "{body:?}: {stmts:#?}");
    let marks = match stmts.remove(0).kind {
        Statement::Seccomp(Seccomp::StrictAllowlist { parsed, .. })
        | Statement::Limits { parsed, .. }
        | Statement::Landlock { parsed, .. } => vec![parsed],
        Statement::Cgroup {
            entries, parsed, ..
        } => std::iter::once(parsed)
            .chain(entries.iter().filter_map(|e| match &e.node {
                CgroupEntry::Io { parsed, .. } => Some(*parsed),
                CgroupEntry::Value { .. } => None,
            }))
            .collect(),
        other => panic!("{body:?}: {other:?}"),
    };
    (marks, out.diagnostics.len())
}

#[test]
fn blocks_with_an_entry_that_did_not_parse_are_marked_recovered() {
    use Parsed::{Clean, Recovered};
    let cases: [(&str, &str, Vec<Parsed>); 5] = [
        (
            "seccomp strict-allowlist { read write execve }",
            "seccomp strict-allowlist { read, write execve }",
            vec![Recovered],
        ),
        (
            "limits { cpu 30 s }",
            "limits { cpu 30 s; cpux 1 }",
            vec![Recovered],
        ),
        (
            "landlock { allow-exec \"/a\" }",
            "landlock { allow-exec \"/a\"; alow-exec \"/b\" }",
            vec![Recovered],
        ),
        (
            "cgroup parent \"/p\" runner \"/r\" { pids 5; io 8:1 { read 1 iops } }",
            "cgroup parent \"/p\" runner \"/r\" { pids 5; memroy 1 MiB; io 8:1 { read 1 iops } }",
            vec![Recovered, Clean],
        ),
        (
            "cgroup parent \"/p\" runner \"/r\" { pids 5; io 8:1 { read 1 iops } }",
            "cgroup parent \"/p\" runner \"/r\" { pids 5; io 8:1 { read 1 iops; wrte 1 iops } }",
            vec![Clean, Recovered],
        ),
    ];
    for (clean, broken, want) in cases {
        let (marks, diags) = parsed_marks(clean);
        assert_eq!(diags, 0, "{clean:?}");
        assert!(marks.iter().all(|&m| m == Clean), "{clean:?}: {marks:?}");
        let (marks, diags) = parsed_marks(broken);
        assert_eq!(diags, 1, "{broken:?}");
        assert_eq!(marks, want, "{broken:?}");
    }
}

/// An unclosed run of `{` in a bad statement or entry is reported in time
/// linear in its length. Each `{` inside a braced group used to be tried
/// both as a nested group and as a plain character, so 22 of them took
/// seconds and 80 never finished (found by the `policy_check` fuzz target).
#[test]
fn unclosed_brace_runs_are_reported_in_linear_time() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for n in [80, 10_000] {
            let run = "{".repeat(n);
            for body in [
                format!("  x {run}"),
                format!("  x {{ {run}\n  worker \"/w\""),
                format!("  limits {{\n    cpu {run}\n  }}"),
            ] {
                let _ = tx.send((n, parse(&wrap(&body)).has_errors()));
            }
        }
    });
    for _ in 0..6 {
        let (n, errors) = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("an unclosed run of `{` still parsing after 60 s");
        assert!(errors, "{n} unclosed `{{` accepted");
    }
}
