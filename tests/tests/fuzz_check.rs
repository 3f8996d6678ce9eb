//! Property tests: `check_source` on arbitrary and mutated input never
//! panics, and every diagnostic it returns points into the source.
//!
//! Seeds are every policy in `policies/` and every corpus case in
//! `tests/corpus/`; mutations are byte flips, token deletion, duplication and
//! swaps, keyword and structural-character insertion, random Unicode, huge
//! numbers and truncation. The default run uses 2,000 cases per property;
//! `PROPTEST_CASES=100000` selects the long profile (see `docs/testing.md`).

use std::fs;
use std::path::Path;
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::test_runner::Config;
use splash_tests::workspace_root;
use splashpol::{CheckOutcome, Code, Span, check_source};

/// Cases per property unless `PROPTEST_CASES` says otherwise.
const DEFAULT_CASES: u32 = 2_000;

fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    Config {
        cases,
        // A failure prints its minimal input; nothing is written to the tree.
        failure_persistence: None,
        ..Config::default()
    }
}

fn read_dir_sources(dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.extension().is_some_and(|e| e == "splashpol")
            && let Ok(text) = fs::read_to_string(&path)
        {
            out.push(text);
        }
    }
}

/// Every policy and corpus case, read once.
fn seeds() -> &'static [String] {
    static SEEDS: OnceLock<Vec<String>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let root = workspace_root();
        let mut out = Vec::new();
        read_dir_sources(&root.join("policies"), &mut out);
        read_dir_sources(&root.join("tests/corpus/valid"), &mut out);
        read_dir_sources(&root.join("tests/corpus/invalid"), &mut out);
        assert!(out.len() >= 20, "too few seeds found ({})", out.len());
        out
    })
}

/// Every keyword of the grammar, plus unit words and lookalikes.
fn words() -> &'static [String] {
    static WORDS: OnceLock<Vec<String>> = OnceLock::new();
    WORDS.get_or_init(|| {
        let grammar = fs::read_to_string(workspace_root().join("grammar/splashpol.pest"))
            .unwrap_or_else(|e| panic!("cannot read the grammar: {e}"));
        let mut out: Vec<String> = grammar
            .lines()
            .filter(|l| l.trim_start().starts_with("kw_"))
            .filter_map(|l| l.split('"').nth(1).map(str::to_string))
            .collect();
        assert!(out.len() >= 40, "too few keywords found");
        out.extend(splashpol::syntax::unit_spellings().map(str::to_string));
        out.extend(
            [
                "MB",
                "KB",
                "sec",
                "us",
                "ns",
                "EiB",
                "iops/s",
                "execve",
                "clone3",
                "mount",
                "openat",
                "policy",
                "splashpol",
                "unlimited",
                "-1",
                "0",
                "0.0",
                "1e9",
            ]
            .iter()
            .map(|s| (*s).to_string()),
        );
        out
    })
}

const STRUCTURAL: &[&str] = &[
    "{", "}", "[", "]", "\"", ",", ";", "\n", "#", ":", "/", "\\", "\\\"", "\r\n", "\t", "",
];

const HUGE_NUMBERS: &[&str] = &[
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "9223372036854775808",
    "99999999999999999999999999999999999999999999999999",
    "1_000_000_000_000_000_000_000",
    "4294967295",
    "4294967296",
    "0.000000000000000000001",
    "1__2",
    "1_",
    "00000000000000000000000000000001",
];

/// Splits `s` into tokens and the separators between them (every piece is a
/// substring, so joining them gives `s` back).
fn pieces(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_space = None;
    for (i, c) in s.char_indices() {
        let space = c.is_whitespace();
        if in_space.is_some_and(|w| w != space) {
            out.push(&s[start..i]);
            start = i;
        }
        in_space = Some(space);
    }
    if start < s.len() {
        out.push(&s[start..]);
    }
    out
}

/// One mutation, chosen and parameterised by the generated values.
#[derive(Debug, Clone)]
enum Mutation {
    FlipByte { at: usize, bit: u8 },
    DeleteToken(usize),
    DuplicateToken(usize),
    SwapTokens(usize, usize),
    InsertWord { at: usize, word: usize },
    InsertStructural { at: usize, which: usize },
    InsertText { at: usize, text: String },
    HugeNumber { at: usize, which: usize },
    Truncate(usize),
    DeleteRange { at: usize, len: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(at, bit)| Mutation::FlipByte { at, bit }),
        any::<usize>().prop_map(Mutation::DeleteToken),
        any::<usize>().prop_map(Mutation::DuplicateToken),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapTokens(a, b)),
        (any::<usize>(), any::<usize>()).prop_map(|(at, word)| Mutation::InsertWord { at, word }),
        (any::<usize>(), any::<usize>())
            .prop_map(|(at, which)| Mutation::InsertStructural { at, which }),
        (any::<usize>(), "\\PC{0,12}").prop_map(|(at, text)| Mutation::InsertText { at, text }),
        (any::<usize>(), any::<usize>()).prop_map(|(at, which)| Mutation::HugeNumber { at, which }),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), 0usize..64).prop_map(|(at, len)| Mutation::DeleteRange { at, len }),
    ]
}

/// The char boundary at or before `at % (len + 1)`.
fn boundary(s: &str, at: usize) -> usize {
    let mut i = at % (s.len() + 1);
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(source: &str, m: &Mutation) -> String {
    let tokens = pieces(source);
    let pick = |i: usize| {
        if tokens.is_empty() {
            0
        } else {
            i % tokens.len()
        }
    };
    match m {
        Mutation::FlipByte { at, bit } => {
            let mut bytes = source.as_bytes().to_vec();
            if !bytes.is_empty() {
                let i = at % bytes.len();
                bytes[i] ^= 1 << bit;
            }
            String::from_utf8_lossy(&bytes).into_owned()
        }
        Mutation::DeleteToken(i) => {
            let mut t = tokens.clone();
            if !t.is_empty() {
                t.remove(pick(*i));
            }
            t.concat()
        }
        Mutation::DuplicateToken(i) => {
            let mut t = tokens.clone();
            if !t.is_empty() {
                let k = pick(*i);
                t.insert(k, t[k]);
            }
            t.concat()
        }
        Mutation::SwapTokens(a, b) => {
            let mut t = tokens.clone();
            if !t.is_empty() {
                let (a, b) = (pick(*a), pick(*b));
                t.swap(a, b);
            }
            t.concat()
        }
        Mutation::InsertWord { at, word } => {
            let w = &words()[word % words().len()];
            let i = boundary(source, *at);
            format!("{} {w} {}", &source[..i], &source[i..])
        }
        Mutation::InsertStructural { at, which } => {
            let i = boundary(source, *at);
            let s = STRUCTURAL[which % STRUCTURAL.len()];
            format!("{}{s}{}", &source[..i], &source[i..])
        }
        Mutation::InsertText { at, text } => {
            let i = boundary(source, *at);
            format!("{}{text}{}", &source[..i], &source[i..])
        }
        Mutation::HugeNumber { at, which } => {
            let huge = HUGE_NUMBERS[which % HUGE_NUMBERS.len()];
            // Replace the first number at or after `at`, or insert one.
            let i = boundary(source, *at);
            match source[i..].find(|c: char| c.is_ascii_digit()) {
                Some(off) => {
                    let start = i + off;
                    let end = source[start..]
                        .find(|c: char| !(c.is_ascii_digit() || c == '_' || c == '.'))
                        .map_or(source.len(), |e| start + e);
                    format!("{}{huge}{}", &source[..start], &source[end..])
                }
                None => format!("{}{huge}{}", &source[..i], &source[i..]),
            }
        }
        Mutation::Truncate(at) => source[..boundary(source, *at)].to_string(),
        Mutation::DeleteRange { at, len } => {
            let start = boundary(source, *at);
            let end = boundary(source, start.saturating_add(*len).min(source.len()));
            format!("{}{}", &source[..start], &source[end.max(start)..])
        }
    }
}

fn span_ok(source: &str, span: Span) -> Result<(), String> {
    if span.start > span.end || span.end > source.len() {
        return Err(format!(
            "span {}..{} outside a source of {} bytes",
            span.start,
            span.end,
            source.len()
        ));
    }
    if !source.is_char_boundary(span.start) || !source.is_char_boundary(span.end) {
        return Err(format!(
            "span {}..{} splits a character",
            span.start, span.end
        ));
    }
    Ok(())
}

/// Everything that must hold for any input.
fn check_invariants(source: &str) -> Result<(), TestCaseError> {
    let outcome: CheckOutcome = check_source("fuzz.splashpol", source);
    for d in &outcome.diagnostics {
        span_ok(source, d.span)
            .map_err(|e| TestCaseError::fail(format!("{} (`{}`): {e}", d.code, d.message)))?;
        for (related, text) in &d.related {
            span_ok(source, *related)
                .map_err(|e| TestCaseError::fail(format!("{} related `{text}`: {e}", d.code)))?;
        }
        // The internal codes report bugs in the parser or checker.
        prop_assert!(
            !matches!(d.code, Code::ParseInternal | Code::CheckInternal),
            "{}: {}",
            d.code,
            d.message
        );
        prop_assert!(!d.message.is_empty(), "{} has an empty message", d.code);
    }
    prop_assert_eq!(
        outcome.policy.is_some(),
        !outcome.has_errors(),
        "a policy must be produced exactly when there is no error"
    );
    // Rendering and JSON never panic and agree on the count.
    let rendered = outcome.render_human("fuzz.splashpol", source);
    prop_assert_eq!(rendered.is_empty(), outcome.diagnostics.is_empty());
    let json = outcome.to_json();
    prop_assert_eq!(
        json["errors"].as_u64(),
        Some(outcome.errors().count() as u64)
    );
    // Deterministic: the same input gives the same answer.
    prop_assert_eq!(&check_source("fuzz.splashpol", source), &outcome);
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    /// Mutations of real policies and corpus cases: close to valid input,
    /// where the checker's deeper rules run.
    #[test]
    fn mutated_policies_never_panic(
        seed in any::<usize>(),
        mutations in proptest::collection::vec(mutation(), 1..5),
    ) {
        let seeds = seeds();
        let mut source = seeds[seed % seeds.len()].clone();
        for m in &mutations {
            source = apply(&source, m);
        }
        check_invariants(&source)?;
    }

    /// Arbitrary Unicode text, including control characters.
    #[test]
    fn arbitrary_text_never_panics(source in "(?s).{0,400}") {
        check_invariants(&source)?;
    }

    /// Soups of keywords, structural characters, strings and numbers inside a
    /// policy frame: syntactically plausible nonsense.
    #[test]
    fn token_soup_never_panics(
        parts in proptest::collection::vec(
            prop_oneof![
                any::<usize>().prop_map(|i| words()[i % words().len()].clone()),
                any::<usize>().prop_map(|i| STRUCTURAL[i % STRUCTURAL.len()].to_string()),
                any::<usize>().prop_map(|i| HUGE_NUMBERS[i % HUGE_NUMBERS.len()].to_string()),
                "\"[a-z/._ -]{0,20}\"",
                "[0-9]{1,4}( [A-Za-z/]{1,5})?",
                "\\PC{1,6}",
            ],
            0..40,
        ),
        header in any::<bool>(),
    ) {
        let body = parts.join(" ");
        let source = format!(
            "{}policy \"soup\" {{\n  {body}\n}}\n",
            if header { "splashpol 1\n" } else { "" }
        );
        check_invariants(&source)?;
    }
}

#[test]
fn mutations_keep_sources_valid_utf8_and_change_them() {
    // The mutation helpers are themselves total on every seed.
    let seeds = seeds();
    let mut changed = 0;
    for (i, seed) in seeds.iter().enumerate() {
        for m in [
            Mutation::FlipByte { at: i * 7, bit: 3 },
            Mutation::DeleteToken(i),
            Mutation::SwapTokens(i, i * 3 + 1),
            Mutation::HugeNumber { at: i, which: i },
            Mutation::Truncate(i * 13),
        ] {
            let out = apply(seed, &m);
            if out != *seed {
                changed += 1;
            }
        }
    }
    assert!(
        changed > seeds.len() * 3,
        "mutations rarely change their input ({changed})"
    );
}

/// Deep nesting is bounded by the parser's stack guard, not by the thread's
/// stack: it is an error, never a crash.
#[test]
fn deeply_nested_input_is_an_error_not_a_stack_overflow() {
    for (open, close) in [("{", "}"), ("[", "]"), ("{ \"", "\" }")] {
        for depth in [1_000usize, 100_000] {
            let body = format!("{}{}", open.repeat(depth), close.repeat(depth));
            for source in [
                format!("splashpol 1\npolicy \"deep\" {{\n  root {body}\n}}\n"),
                format!("splashpol 1\npolicy \"deep\" {{\n  limits {{ {body} }}\n}}\n"),
                format!("splashpol 1\npolicy \"deep\" {{\n  worker \"/w\" args {body}\n}}\n"),
                body.clone(),
            ] {
                let outcome = check_source("deep.splashpol", &source);
                assert!(
                    outcome.has_errors(),
                    "nesting depth {depth} of `{open}` was accepted"
                );
                for d in &outcome.diagnostics {
                    assert!(span_ok(&source, d.span).is_ok(), "{}: bad span", d.code);
                }
            }
        }
    }
}
