use std::path::PathBuf;

use proptest::prelude::*;

use super::*;
use crate::check_source;

fn fmt(source: &str) -> String {
    match format_source(source) {
        Ok(s) => s,
        Err(e) => panic!("format failed: {e:?}\n{source}"),
    }
}

/// Every `.splashpol` file of the bundled policies and of the test corpus.
fn sample_files() -> Vec<PathBuf> {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let mut files = Vec::new();
    for dir in ["policies", "tests/corpus/valid", "tests/corpus/invalid"] {
        let entries = std::fs::read_dir(root.join(dir)).expect("sample directory");
        for e in entries {
            let p = e.expect("entry").path();
            if p.extension().is_some_and(|x| x == "splashpol") {
                files.push(p);
            }
        }
    }
    files.sort();
    assert!(files.len() > 150, "the corpus is missing: {}", files.len());
    files
}

/// What a source means: the checked policy and the diagnostic codes. The
/// policy is the IR a compiled artifact stores, so equal policies give
/// artifacts with equal policy digests.
fn meaning(source: &str) -> (Option<String>, Vec<(crate::Code, String)>) {
    let outcome = check_source("x.splashpol", source);
    let policy = outcome.policy.as_ref().map(|p| {
        let bytes = crate::artifact::write(p, b"").expect("artifact");
        let a = crate::artifact::load(&bytes).expect("load");
        a.policy_digest
    });
    let codes = outcome
        .diagnostics
        .iter()
        .map(|d| (d.code, d.message.clone()))
        .collect();
    (policy, codes)
}

fn assert_keeps_meaning(source: &str, formatted: &str) {
    let before = check_source("x.splashpol", source);
    let after = check_source("x.splashpol", formatted);
    assert_eq!(before.policy, after.policy, "policy changed:\n{formatted}");
    assert_eq!(
        meaning(source),
        meaning(formatted),
        "meaning changed:\n{formatted}"
    );
}

#[test]
fn every_bundled_and_corpus_file_keeps_its_meaning_and_is_a_fixed_point() {
    let mut formatted_count = 0;
    let mut refused = 0;
    for path in sample_files() {
        // The corpus holds one file that is not UTF-8 (a checker case);
        // there is no text to format.
        let Ok(source) = std::fs::read_to_string(&path) else {
            continue;
        };
        match format_source(&source) {
            Ok(out) => {
                formatted_count += 1;
                assert_keeps_meaning(&source, &out);
                assert_eq!(fmt(&out), out, "not idempotent: {}", path.display());
                assert_eq!(
                    comments(&source),
                    comments(&out),
                    "comments changed: {}",
                    path.display()
                );
            }
            Err(FormatError::Syntax(d)) => {
                refused += 1;
                assert!(!d.is_empty(), "{}", path.display());
                assert!(
                    parse::parse(&source).has_errors(),
                    "refused a file that parses: {}",
                    path.display()
                );
            }
            Err(e) => panic!("{}: {e}", path.display()),
        }
    }
    // The corpus has files of both kinds.
    assert!(
        formatted_count > 100 && refused > 10,
        "{formatted_count} {refused}"
    );
}

#[test]
fn bundled_policies_are_already_formatted() {
    for path in sample_files()
        .into_iter()
        .filter(|p| p.parent().is_some_and(|d| d.ends_with("policies")))
    {
        let source = std::fs::read_to_string(&path).expect("read");
        assert_eq!(fmt(&source), source, "{} is not formatted", path.display());
    }
}

/// `source` after its byte-order mark, as `format_source` tokenizes it.
fn without_mark(source: &str) -> &str {
    source
        .strip_prefix(crate::span::BYTE_ORDER_MARK)
        .unwrap_or(source)
}

/// The comments of a source, trailing blanks removed.
fn comments(source: &str) -> Vec<String> {
    tokenize(without_mark(source))
        .expect("tokens")
        .into_iter()
        .filter_map(|t| match t {
            Token::Comment(c) => Some(c.to_string()),
            _ => None,
        })
        .collect()
}

#[test]
fn layout_is_canonical_and_comments_stay_in_place() {
    let source = "\n\n# head\nsplashpol   1\n\n\n\npolicy \"p\"{ # opening\n\tbubblewrap \"/usr/bin/bwrap\"   # trailing\n  worker \"/w\" args [ \"-a\" ,\"b\", ]\n\n\n  # own line\n      runtime \"/r\" at \"/opt\";tmp off; # after semi\n  limits {   cpu 30 s; open-files 64\n\n  }\n  landlock {\n  }\n  pin mounts ,executables\n  seccomp strict-allowlist { read write\n     exit_group   # done\n  }\n}   \n\n\n";
    let want = "# head\nsplashpol 1\n\npolicy \"p\" { # opening\n  bubblewrap \"/usr/bin/bwrap\" # trailing\n  worker \"/w\" args [\"-a\", \"b\"]\n\n  # own line\n  runtime \"/r\" at \"/opt\"; tmp off # after semi\n  limits {\n    cpu 30 s; open-files 64\n  }\n  landlock {}\n  pin mounts, executables\n  seccomp strict-allowlist {\n    read write\n    exit_group # done\n  }\n}\n";
    let got = fmt(source);
    assert_eq!(got, want);
    assert_eq!(fmt(&got), got);
    assert_eq!(comments(source), comments(&got));
}

#[test]
fn multi_line_lists_get_one_string_per_line() {
    let source = "policy \"p\" {\n  worker \"/w\" args [ # flags\n    \"-a\", \"-b\", # two\n    # more\n    \"-c\"]\n  network-broker origin parent \"/p\" at \"/q\" ids [\n  \"a\"\n  ]\n}\n";
    let want = "policy \"p\" {\n  worker \"/w\" args [ # flags\n    \"-a\",\n    \"-b\", # two\n    # more\n    \"-c\",\n  ]\n  network-broker origin parent \"/p\" at \"/q\" ids [\n    \"a\",\n  ]\n}\n";
    let got = fmt(source);
    assert_eq!(got, want);
    assert_eq!(fmt(&got), got);
}

#[test]
fn semi_after_open() {
    let s = "policy \"case\" {;bubblewrap \"/b\";cgroup parent \"/s\" runner \"/r\" {;cpu 0.5 ms }\n}\n";
    let once = fmt(s);
    assert_eq!(fmt(&once), once);
    assert_eq!(
        once,
        "policy \"case\" {\n  bubblewrap \"/b\"; cgroup parent \"/s\" runner \"/r\" { cpu 0.5 ms }\n}\n"
    );
}

#[test]
fn crlf_and_nested_blocks() {
    let source = "policy \"p\" {\r\n cgroup parent \"/a\" runner \"/b\" { memory 1 GiB; io 8:0 { read 1 MiB/s; write 2 MiB/s } }\r\n}";
    let want = "policy \"p\" {\n  cgroup parent \"/a\" runner \"/b\" { memory 1 GiB; io 8:0 { read 1 MiB/s; write 2 MiB/s } }\n}\n";
    assert_eq!(fmt(source), want);
    let source = "policy \"p\" {\n  cgroup parent \"/a\" runner \"/b\" {memory 1 GiB;io 8:0{read 1 MiB/s;} \n}}";
    let want = "policy \"p\" {\n  cgroup parent \"/a\" runner \"/b\" {\n    memory 1 GiB; io 8:0 { read 1 MiB/s }\n  }\n}\n";
    assert_eq!(fmt(source), want);
}

#[test]
fn a_file_that_does_not_parse_is_refused_with_the_parser_diagnostics() {
    let source = "policy \"p\" {\n  wroker \"/w\"\n  bubblewrap \"/b\"\n}\n";
    match format_source(source) {
        Err(FormatError::Syntax(d)) => {
            assert_eq!(d.len(), 1);
            assert_eq!(d[0], parse::parse(source).diagnostics[0]);
        }
        other => panic!("expected a syntax refusal, got {other:?}"),
    }
    // A checker error that is not a syntax error is formatted as is.
    let unknown_unit = "policy \"p\" {\n  tmp   private size 3 parsecs\n}\n";
    assert!(check_source("x", unknown_unit).has_errors());
    assert_eq!(
        fmt(unknown_unit),
        "policy \"p\" {\n  tmp private size 3 parsecs\n}\n"
    );
}

// ------------------------------------------------------------ property test

/// Writes `tokens` back as source with a random but valid layout: extra
/// blanks and tabs between tokens, runs of newlines, `;` for a separator,
/// CRLF line ends and added comments. `choices` drives the randomness.
fn relayout(tokens: &[Token<'_>], choices: &[u8]) -> String {
    let mut out = String::new();
    let mut c = choices.iter().cycle();
    let mut pick = || *c.next().unwrap_or(&0);
    let mut list_depth = 0usize;
    let mut prev: Option<&Token<'_>> = None;
    for t in tokens {
        match pick() % 8 {
            0 => out.push_str("  "),
            1 => out.push('\t'),
            2 => out.push(' '),
            _ => {}
        }
        match t {
            Token::Word(w) => {
                if !out.is_empty() && !out.ends_with([' ', '\t', '\n', '[', '{']) {
                    out.push(' ');
                }
                out.push_str(w);
            }
            Token::Comment(text) => {
                out.push(' ');
                out.push_str(text);
            }
            Token::Break | Token::Semi => {
                let after_comment = matches!(prev, Some(Token::Comment(_)));
                let r = pick();
                if !after_comment && r % 5 == 0 {
                    out.push_str(" # note ");
                    out.push_str(&r.to_string());
                }
                let may_semi = list_depth == 0 && !after_comment && r % 5 != 0;
                match r % 4 {
                    0 if may_semi => out.push(';'),
                    1 => out.push_str("\r\n"),
                    2 => out.push_str("\n\n\n"),
                    _ => out.push('\n'),
                }
                if r % 7 == 3 && list_depth == 0 {
                    out.push_str("# own line\n");
                }
            }
            Token::Open => out.push_str(" {"),
            Token::Close => out.push('}'),
            Token::ListOpen => {
                list_depth += 1;
                out.push_str(" [");
            }
            Token::ListClose => {
                list_depth -= 1;
                out.push(']');
            }
            Token::Comma => out.push(','),
        }
        prev = Some(t);
    }
    out
}

fn parsable_samples() -> Vec<String> {
    sample_files()
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .filter(|s| !parse::parse(s).has_errors())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn fmt_is_idempotent_and_keeps_meaning_on_relaid_sources(
        index in any::<prop::sample::Index>(),
        choices in prop::collection::vec(any::<u8>(), 1..64),
    ) {
        let samples = parsable_samples();
        let original = &samples[index.index(samples.len())];
        let tokens = tokenize(without_mark(original)).expect("tokens");
        let source = relayout(&tokens, &choices);
        prop_assume!(!parse::parse(&source).has_errors());
        let once = format_source(&source);
        prop_assert!(once.is_ok(), "{:?}\n{}", once, source);
        let once = once.unwrap_or_default();
        prop_assert_eq!(fmt(&once), once.clone());
        prop_assert_eq!(meaning(&source), meaning(&once));
        prop_assert_eq!(check_source("x", &source).policy, check_source("x", &once).policy);
    }
}

#[test]
fn only_one_byte_order_mark_is_dropped_as_the_checker_drops_one() {
    let policy = "splashpol 1\npolicy \"p\" {\n  bubblewrap \"/usr/bin/bwrap\"\n  worker \"/opt/w/bin/w\"\n  runtime \"/opt/w\" at \"/opt/w\"\n}\n";
    // One mark: accepted by both, and the output has none.
    let one = format!("\u{feff}{policy}");
    assert_eq!(fmt(&one), policy);
    assert_keeps_meaning(&one, policy);
    // Two marks: the second is text to the checker, so the formatter
    // refuses the file instead of dropping it too (found by fuzzing: it
    // dropped both, and the formatted file then checked differently).
    let two = format!("\u{feff}{one}");
    assert!(check_source("x.splashpol", &two).policy.is_none());
    match format_source(&two) {
        Err(FormatError::Syntax(_)) => {}
        Ok(out) => assert_keeps_meaning(&two, &out),
        Err(e) => panic!("the formatter failed on its own: {e:?}"),
    }
}
