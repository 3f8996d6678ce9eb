//! The golden corpus of `.splashpol` files (`tests/corpus/`).
//!
//! Every case is pinned twice:
//!
//! 1. structurally: its leading comment lines list every diagnostic it must
//!    produce, one per line, as `# expect: CODE @ L:C-L:C` for an error and
//!    `# warning: CODE @ L:C-L:C` for a warning (one-based line and character
//!    column of the span's start and of its exclusive end). The multiset of
//!    (severity, code, span) must match exactly;
//! 2. by the rendered human diagnostics, stored next to the input as
//!    `NAME.expected`. A missing or different `.expected` file is a failure;
//!    `SPLASH_BLESS=1` (re)writes them instead.
//!
//! `invalid/` cases must fail the check with at least one expected error;
//! `valid/` cases and every `policies/*.splashpol` must check without errors.
//! Every code of [`Code::ALL`] must be exercised by some case, unless it is
//! listed in [`NOT_STATICALLY_REACHABLE`]; an expectation naming a code that
//! is not in [`Code::ALL`] is a failure. (That `docs/diagnostics.md` lists
//! exactly the codes of [`Code::ALL`] is a unit test of `splashpol`.)

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use splash_require_host::bless_command;
use splash_require_host::snapshot::check_snapshot;
use splash_tests::workspace_root;
use splashpol::syntax::line_col;
use splashpol::{CheckOutcome, Code, Severity, check_bytes, check_source};

/// The command that (re)writes the `.expected` files.
const BLESS: &str = bless_command!();

/// The required minimum size of the invalid corpus.
const MIN_INVALID_CASES: usize = 80;

/// Codes that no source text can trigger through `check_bytes`, with the
/// reason.
const NOT_STATICALLY_REACHABLE: &[(Code, &str)] = &[
    (
        Code::ParseInternal,
        "reports a parse tree the grammar cannot produce (a bug in the builder); \
         every statement rule of the grammar is parsed by a unit test in \
         compiler/splashpol/src/parse/tests.rs instead",
    ),
    (
        Code::CheckInternal,
        "reports a checked policy that breaks a `Policy` invariant (a bug in \
         the checker); the invariants are tested on hand-built policies in \
         compiler/splashpol/src/lower.rs and artifact.rs instead",
    ),
];

fn corpus_dir() -> PathBuf {
    workspace_root().join("tests/corpus")
}

/// One expected (or produced) diagnostic: severity, code, start and end.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Expectation {
    severity: &'static str,
    code: Code,
    start: (usize, usize),
    end: (usize, usize),
}

impl std::fmt::Display for Expectation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keyword = if self.severity == "error" {
            "expect"
        } else {
            "warning"
        };
        write!(
            f,
            "# {keyword}: {} @ {}:{}-{}:{}",
            self.code, self.start.0, self.start.1, self.end.0, self.end.1
        )
    }
}

fn parse_position(text: &str) -> Option<(usize, usize)> {
    let (line, column) = text.trim().split_once(':')?;
    Some((line.parse().ok()?, column.parse().ok()?))
}

fn parse_expectation(severity: &'static str, rest: &str) -> Result<Expectation, String> {
    let (code, span) = rest
        .split_once('@')
        .ok_or_else(|| format!("expected `CODE @ L:C-L:C`, found `{rest}`"))?;
    let (start, end) = span
        .trim()
        .split_once('-')
        .ok_or_else(|| format!("span `{}` is not `L:C-L:C`", span.trim()))?;
    let start = parse_position(start).ok_or_else(|| format!("bad position `{start}`"))?;
    let end = parse_position(end).ok_or_else(|| format!("bad position `{end}`"))?;
    // Only a code of `Code::ALL` can be expected.
    let code = code.trim().parse::<Code>().map_err(|e| e.to_string())?;
    Ok(Expectation {
        severity,
        code,
        start,
        end,
    })
}

/// The expectations written in the file's leading comment block.
fn declared(source: &str) -> Result<Vec<Expectation>, String> {
    let mut out = Vec::new();
    // Lines end as the checker counts them: `\n`, `\r\n` or a lone `\r`.
    let lines = source
        .split('\n')
        .flat_map(|l| l.strip_suffix('\r').unwrap_or(l).split('\r'));
    for line in lines {
        let line = line
            .strip_prefix(splashpol::syntax::BYTE_ORDER_MARK)
            .unwrap_or(line);
        let Some(comment) = line.strip_prefix('#') else {
            break;
        };
        let comment = comment.trim();
        if let Some(rest) = comment.strip_prefix("expect:") {
            out.push(parse_expectation("error", rest)?);
        } else if let Some(rest) = comment.strip_prefix("warning:") {
            out.push(parse_expectation("warning", rest)?);
        } else if comment.starts_with("expect") {
            return Err(format!("malformed expectation line `{line}`"));
        }
    }
    out.sort();
    Ok(out)
}

fn produced(source: &str, outcome: &CheckOutcome) -> Vec<Expectation> {
    let mut out = produced_in_order(source, outcome);
    out.sort();
    out
}

/// The produced diagnostics in the checker's order.
fn produced_in_order(source: &str, outcome: &CheckOutcome) -> Vec<Expectation> {
    outcome
        .diagnostics
        .iter()
        .map(|d| Expectation {
            severity: match d.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            },
            code: d.code,
            start: line_col(source, d.span.start),
            end: line_col(source, d.span.end),
        })
        .collect()
}

fn cases(kind: &str) -> Vec<PathBuf> {
    let dir = corpus_dir().join(kind);
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .collect();
    files.sort();
    files
}

fn display_name(path: &Path) -> String {
    path.strip_prefix(corpus_dir())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Runs every case of one kind; returns the number of cases and failures.
fn run_kind(kind: &str, must_fail: bool) -> (usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut count = 0;
    let files = cases(kind);
    let inputs: BTreeSet<PathBuf> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "splashpol"))
        .cloned()
        .collect();
    for path in &files {
        match path.extension().and_then(|e| e.to_str()) {
            Some("splashpol") => {}
            Some("expected") => {
                if !inputs.contains(&path.with_extension("splashpol")) {
                    failures.push(format!("{}: snapshot without an input", display_name(path)));
                }
                continue;
            }
            _ => {
                failures.push(format!(
                    "{}: unexpected file in the corpus",
                    display_name(path)
                ));
                continue;
            }
        }
        count += 1;
        let name = display_name(path);
        // Read as bytes, as `splashc check` does: a case may be non-UTF-8.
        let bytes = fs::read(path).unwrap_or_else(|e| panic!("cannot read {name}: {e}"));
        let (source, outcome) = check_bytes(&name, &bytes);
        let expected = match declared(&source) {
            Ok(e) => e,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        let actual = produced(&source, &outcome);
        if must_fail {
            if !expected.iter().any(|e| e.severity == "error") {
                failures.push(format!(
                    "{name}: an invalid case must declare at least one `# expect:` error"
                ));
            }
            if outcome.policy.is_some() || !outcome.has_errors() {
                failures.push(format!("{name}: checked clean but must fail"));
            }
        } else if outcome.has_errors() || outcome.policy.is_none() {
            failures.push(format!("{name}: a valid case failed the check"));
        }
        if expected != actual {
            let lines = |v: &[Expectation]| {
                v.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            failures.push(format!(
                "{name}: diagnostics differ from the declared ones\n--- declared\n{}\n--- produced\n{}",
                lines(&expected),
                lines(&actual)
            ));
        }
        // The machine-readable form agrees with the list.
        let json = outcome.to_json();
        let errors = actual.iter().filter(|e| e.severity == "error").count();
        if json["errors"] != errors || json["ok"] != !outcome.has_errors() {
            failures.push(format!("{name}: JSON summary disagrees: {json}"));
        }
        let rendered = outcome.render_human(&name, &source);
        if let Some(f) = positions_agree(&name, &source, &outcome, &rendered) {
            failures.push(f);
        }
        let wants_snapshot = must_fail
            || !outcome.diagnostics.is_empty()
            || path.with_extension("expected").exists();
        if wants_snapshot
            && let Err(f) = check_snapshot(&path.with_extension("expected"), &rendered, BLESS)
        {
            failures.push(format!("{name}: {f}"));
        }
    }
    (count, failures)
}

/// The human rendering's `[FILE:LINE:COLUMN]` headers, the JSON `line` and
/// `column` and the declared positions all name the same place for every
/// diagnostic.
fn positions_agree(
    name: &str,
    source: &str,
    outcome: &CheckOutcome,
    rendered: &str,
) -> Option<String> {
    let from_lib: Vec<(usize, usize)> = outcome
        .diagnostics
        .iter()
        .map(|d| line_col(source, d.span.start))
        .collect();
    let prefix = format!("[{name}:");
    let human: Vec<(usize, usize)> = rendered
        .lines()
        .filter_map(|l| {
            let at = l.find(&prefix)?;
            parse_position(l[at + prefix.len()..].strip_suffix(']')?)
        })
        .collect();
    let json = outcome.to_json_with_positions(source);
    let machine: Vec<(usize, usize)> = json["diagnostics"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|d| {
                    let n = |k: &str| usize::try_from(d[k].as_u64().unwrap_or(0)).unwrap_or(0);
                    (n("line"), n("column"))
                })
                .collect()
        })
        .unwrap_or_default();
    (human != from_lib || machine != from_lib).then(|| {
        format!(
            "{name}: positions disagree\n  declared form: {from_lib:?}\n  human: {human:?}\n  json: {machine:?}"
        )
    })
}

fn report(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} corpus failure(s):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn invalid_corpus_matches_declared_and_rendered_diagnostics() {
    let (count, failures) = run_kind("invalid", true);
    report(&failures);
    assert!(
        count >= MIN_INVALID_CASES,
        "only {count} invalid cases; the corpus keeps at least {MIN_INVALID_CASES}"
    );
}

#[test]
fn valid_corpus_checks_clean() {
    let (count, failures) = run_kind("valid", false);
    report(&failures);
    assert!(count >= 5, "only {count} valid cases");
}

#[test]
fn every_shipped_policy_checks_clean() {
    let dir = workspace_root().join("policies");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "splashpol"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no policies in {}", dir.display());
    let mut failures = Vec::new();
    for path in &files {
        let source = fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let name = format!(
            "policies/{}",
            path.file_name().unwrap_or_default().to_string_lossy()
        );
        let outcome = check_source(&name, &source);
        if outcome.has_errors() || outcome.policy.is_none() {
            failures.push(format!("{name}:\n{}", outcome.render_human(&name, &source)));
        }
    }
    report(&failures);
}

/// Every code a case declares, over both kinds (an unknown code fails the
/// case in [`run_kind`]).
fn declared_codes() -> BTreeSet<Code> {
    let mut seen = BTreeSet::new();
    for kind in ["invalid", "valid"] {
        for path in cases(kind) {
            if path.extension().is_some_and(|e| e == "splashpol") {
                let bytes = fs::read(&path).unwrap_or_default();
                let source = String::from_utf8_lossy(&bytes);
                for e in declared(&source).unwrap_or_default() {
                    seen.insert(e.code);
                }
            }
        }
    }
    seen
}

#[test]
fn every_code_is_exercised_by_the_corpus() {
    let seen = declared_codes();
    let exempt: BTreeSet<Code> = NOT_STATICALLY_REACHABLE.iter().map(|(c, _)| *c).collect();
    let missing: Vec<&str> = Code::ALL
        .iter()
        .filter(|c| !seen.contains(*c) && !exempt.contains(*c))
        .map(|c| c.as_str())
        .collect();
    assert!(
        missing.is_empty(),
        "codes with no corpus case (add one, or an entry with its reason to \
         NOT_STATICALLY_REACHABLE): {missing:?}"
    );
    let reached: Vec<&str> = exempt.intersection(&seen).map(|c| c.as_str()).collect();
    assert!(
        reached.is_empty(),
        "codes listed as unreachable that a corpus case reaches: {reached:?}"
    );
}

/// Prints what the checker says about each corpus case whose name contains
/// `$SPLASH_CORPUS_SHOW` (all when unset), in the `# expect:` format followed
/// by the message: a starting point when writing a new case.
/// `cargo test -p splash-tests --test corpus -- --ignored --nocapture show`
#[test]
#[ignore = "a writing aid, not a check"]
fn show() {
    let filter = std::env::var("SPLASH_CORPUS_SHOW").unwrap_or_default();
    for kind in ["invalid", "valid"] {
        for path in cases(kind) {
            let name = display_name(&path);
            if path.extension().is_none_or(|e| e != "splashpol") || !name.contains(&filter) {
                continue;
            }
            let bytes = fs::read(&path).unwrap_or_default();
            let (source, outcome) = check_bytes(&name, &bytes);
            println!("== {name}");
            for (e, d) in produced_in_order(&source, &outcome)
                .iter()
                .zip(&outcome.diagnostics)
            {
                println!("{e}\t{}", d.message);
            }
        }
    }
}
