//! The tree-sitter grammar against the real policies and the pest grammar.
//!
//! The committed `src/parser.c` (compiled by `build.rs`) parses every bundled
//! and valid corpus policy without an ERROR or MISSING node, and accepts
//! exactly what `grammar/splashpol.pest` accepts over the whole corpus,
//! invalid files included (but for a NUL byte, which ends a tree-sitter
//! lexer's input): a file the pest grammar only takes through its
//! error-recovery rules (`bad_statement`, `bad_entry`, `bad_word`) must give
//! an error node here, and nothing else may. The highlight query compiles and
//! captures every keyword as `@keyword` and nothing else as one. And
//! `src/` is current with `grammar.js`: by the hash recorded at generation
//! time, and by regenerating when the tree-sitter CLI is installed.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use splash_require_host::require_host;
use splashpol::syntax::grammar_accepts;
use tree_sitter::{Language, Node, Parser, Query, QueryCursor, StreamingIterator, Tree};

fn grammar_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn workspace_root() -> PathBuf {
    grammar_dir().join("../..")
}

fn language() -> Language {
    tree_sitter_splashpol::LANGUAGE.into()
}

fn parse(text: &str) -> Tree {
    let mut parser = Parser::new();
    parser
        .set_language(&language())
        .unwrap_or_else(|e| panic!("the runtime does not load the generated parser: {e}"));
    parser
        .parse(text, None)
        .unwrap_or_else(|| panic!("no tree"))
}

/// The first ERROR or MISSING node, as `LINE:COLUMN (kind)` (1-based).
fn first_error(node: Node<'_>) -> Option<String> {
    if node.is_error() || node.is_missing() {
        let at = node.start_position();
        let what = if node.is_missing() {
            format!("MISSING {}", node.kind())
        } else {
            "ERROR".to_string()
        };
        return Some(format!("{}:{} ({what})", at.row + 1, at.column + 1));
    }
    if !node.has_error() {
        return None;
    }
    let mut cursor = node.walk();
    let children: Vec<Node<'_>> = node.children(&mut cursor).collect();
    children.into_iter().find_map(first_error)
}

fn error_in(text: &str) -> Option<String> {
    first_error(parse(text).root_node())
}

/// The `.splashpol` files of `dir` (relative to the workspace root), sorted,
/// as (name, text); files that are not UTF-8 (a corpus case) are left out.
fn policies(dir: &str) -> Vec<(String, String)> {
    let path = workspace_root().join(dir);
    let mut files: Vec<PathBuf> = fs::read_dir(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .map(|entry| entry.unwrap_or_else(|e| panic!("{e}")).path())
        .filter(|p| p.extension().is_some_and(|e| e == "splashpol"))
        .collect();
    files.sort();
    files
        .into_iter()
        .filter_map(|p| {
            let bytes = fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let text = String::from_utf8(bytes).ok()?;
            Some((format!("{dir}/{}", file_name(&p)), text))
        })
        .collect()
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn valid_policies() -> Vec<(String, String)> {
    let mut all = policies("policies");
    assert!(all.len() >= 8, "the bundled policies are missing");
    let corpus = policies("tests/corpus/valid");
    assert!(corpus.len() >= 25, "the valid corpus is missing");
    all.extend(corpus);
    all
}

/// ABI 14, which editors' older tree-sitter runtimes load too (`generate`).
#[test]
fn the_parser_has_abi_14() {
    assert_eq!(language().abi_version(), 14);
}

#[test]
fn every_bundled_and_valid_corpus_policy_parses_without_error_nodes() {
    let policies = valid_policies();
    let failures: Vec<String> = policies
        .iter()
        .filter_map(|(name, text)| error_in(text).map(|e| format!("{name}:{e}")))
        .collect();
    assert!(
        failures.is_empty(),
        "error nodes in {} of {} policies: {failures:#?}",
        failures.len(),
        policies.len()
    );
}

#[test]
fn tree_sitter_accepts_exactly_what_the_pest_grammar_accepts() {
    let mut files = valid_policies();
    files.extend(policies("tests/corpus/invalid"));
    let (mut accepted, mut rejected, mut nul) = (0, 0, 0);
    let mut disagreements = Vec::new();
    for (name, text) in &files {
        let pest = grammar_accepts(text);
        let tree_sitter = error_in(text);
        // The one known difference: a NUL byte ends a tree-sitter lexer's
        // input, while the pest grammar takes it inside a string or comment
        // so that the checker can name it (`control-character`).
        if text.contains('\0') {
            nul += 1;
            assert!(
                tree_sitter.is_some(),
                "{name}: a NUL byte parses without an error node"
            );
            continue;
        }
        if pest {
            accepted += 1;
        } else {
            rejected += 1;
        }
        match (pest, tree_sitter) {
            (true, Some(error)) => {
                disagreements.push(format!("{name}: pest accepts, tree-sitter {error}"));
            }
            (false, None) => {
                disagreements.push(format!("{name}: pest rejects, tree-sitter accepts"));
            }
            _ => {}
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} of {} files disagree: {disagreements:#?}",
        disagreements.len(),
        files.len()
    );
    // Both sides are exercised: the corpus has syntax errors as well as
    // files that parse and fail only the checker.
    assert!(
        rejected >= 20,
        "only {rejected} syntax errors in the corpus"
    );
    assert!(nul <= 2, "{nul} files with a NUL byte were not compared");
    assert!(accepted >= 150, "only {accepted} syntactically valid files");
}

fn policy_with(statements: &str) -> String {
    format!("splashpol 1\npolicy \"p\" {{\n  bubblewrap \"/usr/bin/bwrap\"\n  {statements}\n}}\n")
}

/// Pairs of statements one edit apart: the first parses, the second is an
/// error to both grammars.
const ONE_EDIT_APART: &[(&str, &str)] = &[
    (
        "root \"p\" host \"/srv/p\" at \"/w/p\" read-only",
        "root \"p\" host \"/srv/p\" at \"/w/p\" readonly",
    ),
    (
        "root \"x\" tmpfs at \"/x\" size 16 MiB",
        "root x tmpfs at \"/x\" size 16 MiB",
    ),
    ("limits { cpu 30 s }", "limits { cpu30 s }"),
    (
        "limits { address-space 512 MiB }",
        "limits { address-space512 MiB }",
    ),
    (
        "seccomp strict-allowlist { read write execve }",
        "seccomp strict-allowlist { read write execve, }",
    ),
    ("writes bounded; tmp off", "writes bounded tmp off"),
    (
        "cgroup parent \"/a\" runner \"/b\" { io 8:16 { read 1 MiB/s } }",
        "cgroup parent \"/a\" runner \"/b\" { io 8:sda { read 1 MiB/s } }",
    ),
    (
        "worker \"/w\" args [\"a\",\n    \"b\",\n  ]",
        "worker \"/w\" args [\"a\" \"b\"]",
    ),
    (
        "quota aggregate bytes 1 GiB inodes 10",
        "quota aggregate bytes 1 GiB inode 10",
    ),
    ("watchdog session 5 call 1 s", "watchdog session 5 s call"),
    ("tmp private size 16 MiB", "tmp private size \"16 MiB\""),
    ("user-namespaces none", "user-namespace none"),
    (
        "identity user 64000 group 64000",
        "identity user 64000 gid 64000",
    ),
    ("identity dynamic", "identity dynamic 1"),
    ("runtime \"/r\" at \"/o\"", "runtime \"/r at \"/o\""),
    ("pin mounts, executables", "pin mounts executables"),
    (
        "landlock { allow-exec \"/x\" }",
        "landlock { allow-exec \"/x\" \"/y\" }",
    ),
];

#[test]
fn one_edit_turns_a_statement_into_an_error_node() {
    for (valid, invalid) in ONE_EDIT_APART {
        let (valid, invalid) = (policy_with(valid), policy_with(invalid));
        assert!(
            grammar_accepts(&valid),
            "pest rejects the control:\n{valid}"
        );
        assert_eq!(
            error_in(&valid),
            None,
            "tree-sitter rejects the control:\n{valid}"
        );
        assert!(!grammar_accepts(&invalid), "pest accepts:\n{invalid}");
        assert!(
            error_in(&invalid).is_some(),
            "tree-sitter finds no error in:\n{invalid}"
        );
    }
}

fn is_word(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// The grammar's keywords: its anonymous nodes that are words.
fn keywords(language: &Language) -> BTreeSet<String> {
    let count = u16::try_from(language.node_kind_count()).unwrap_or(u16::MAX);
    (0..count)
        .filter(|&id| !language.node_kind_is_named(id) && language.node_kind_is_visible(id))
        .filter_map(|id| language.node_kind_for_id(id))
        .filter(|kind| is_word(kind))
        .map(str::to_string)
        .collect()
}

fn all_nodes<'t>(node: Node<'t>, out: &mut Vec<Node<'t>>) {
    out.push(node);
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        all_nodes(child, out);
    }
}

#[test]
fn highlights_query_compiles_and_captures_exactly_the_keywords() {
    let language = language();
    let query = Query::new(&language, tree_sitter_splashpol::HIGHLIGHTS_QUERY)
        .unwrap_or_else(|e| panic!("queries/highlights.scm does not compile: {e}"));
    let keywords = keywords(&language);
    assert!(keywords.len() >= 60, "only {} keywords", keywords.len());

    // Every syntactically valid file of the repository.
    let mut texts: Vec<(String, String)> = valid_policies();
    texts.extend(policies("tests/corpus/invalid"));
    texts.retain(|(_, text)| error_in(text).is_none());

    let mut seen = BTreeSet::new();
    let mut allowlisted_read_write = 0;
    for (name, text) in &texts {
        let tree = parse(text);
        let mut captured: BTreeMap<usize, BTreeSet<&str>> = BTreeMap::new();
        let mut cursor = QueryCursor::new();
        let mut matches = cursor.matches(&query, tree.root_node(), text.as_bytes());
        while let Some(m) = matches.next() {
            for capture in m.captures() {
                captured
                    .entry(capture.node.id())
                    .or_default()
                    .insert(query.capture_names()[capture.index as usize]);
            }
        }
        let mut nodes = Vec::new();
        all_nodes(tree.root_node(), &mut nodes);
        for node in nodes {
            let names = captured.get(&node.id()).cloned().unwrap_or_default();
            let at = node.start_position();
            let place = format!("{name}:{}:{} `{}`", at.row + 1, at.column + 1, node.kind());
            let expected: &[&str] = match node.kind() {
                kind if !node.is_named() && keywords.contains(kind) => {
                    seen.insert(kind.to_string());
                    &["keyword"]
                }
                "comment" => &["comment"],
                "string" => &["string"],
                "number" | "device" => &["constant.numeric"],
                "{" | "}" | "[" | "]" => &["punctuation.bracket"],
                "," | ";" => &["punctuation.delimiter"],
                "syscall_name" => {
                    let word = node.utf8_text(text.as_bytes()).unwrap_or_default();
                    allowlisted_read_write += usize::from(word == "read" || word == "write");
                    &[]
                }
                _ => &[],
            };
            let expected: BTreeSet<&str> = expected.iter().copied().collect();
            assert_eq!(names, expected, "captures of {place}");
        }
    }
    let missing: Vec<_> = keywords.difference(&seen).collect();
    assert!(
        missing.is_empty(),
        "keywords no valid file uses, so not checked: {missing:?}"
    );
    assert!(
        allowlisted_read_write > 0,
        "no `read`/`write` syscall in a strict allowlist was checked"
    );
}

fn sha256sum_available() -> bool {
    Command::new("sha256sum")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `src/grammar.js.sha256` is written by `generate` from the `grammar.js` it
/// generated `src/` from; editing `grammar.js` without regenerating fails
/// here, with or without the tree-sitter CLI.
#[test]
fn generated_sources_record_the_hash_of_grammar_js() {
    if !require_host(sha256sum_available(), "`sha256sum` (coreutils)") {
        return;
    }
    let output = Command::new("sha256sum")
        .arg("grammar.js")
        .current_dir(grammar_dir())
        .output()
        .unwrap_or_else(|e| panic!("sha256sum: {e}"));
    assert!(output.status.success(), "sha256sum failed");
    let actual = String::from_utf8_lossy(&output.stdout).into_owned();
    let recorded_path = grammar_dir().join("src/grammar.js.sha256");
    let recorded = fs::read_to_string(&recorded_path)
        .unwrap_or_else(|e| panic!("{}: {e}", recorded_path.display()));
    assert_eq!(
        recorded, actual,
        "grammar.js changed since src/ was generated: run editors/tree-sitter-splashpol/generate"
    );
}

/// The CLI version `generate` uses, if installed.
fn tree_sitter_cli() -> Option<String> {
    let output = Command::new("tree-sitter").arg("--version").output().ok()?;
    let version = String::from_utf8_lossy(&output.stdout).trim().to_string();
    (output.status.success() && version.starts_with("tree-sitter 0.27.")).then_some(version)
}

/// Regenerates `src/` from `grammar.js` in a temporary directory and compares
/// every generated file with the committed one. Installing the CLI costs CI
/// many minutes of compiling, so this check is skipped (loudly, and also under
/// `SPLASH_REQUIRE_HOST=1`) without it; the hash check above always runs.
#[test]
fn regenerating_from_grammar_js_reproduces_the_committed_sources() {
    let Some(version) = tree_sitter_cli() else {
        eprintln!(
            "SKIP: the tree-sitter CLI 0.27 is not installed, so src/ is not regenerated and \
             compared (the grammar.js hash check still runs); install it with \
             `cargo install tree-sitter-cli --locked --version 0.27.1`"
        );
        return;
    };
    let scratch = tempfile::Builder::new()
        .prefix("splash-tree-sitter-")
        .tempdir()
        .unwrap_or_else(|e| panic!("temporary directory: {e}"));
    let dir = scratch.path();
    for file in ["grammar.js", "tree-sitter.json"] {
        fs::copy(grammar_dir().join(file), dir.join(file)).unwrap_or_else(|e| panic!("{e}"));
    }
    let output = Command::new("tree-sitter")
        .args([
            "generate",
            "--abi",
            "14",
            "--js-runtime",
            "native",
            "grammar.js",
        ])
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("tree-sitter generate: {e}"));
    let compare = || -> Vec<String> {
        let mut differing = Vec::new();
        for file in [
            "parser.c",
            "grammar.json",
            "node-types.json",
            "tree_sitter/parser.h",
            "tree_sitter/alloc.h",
            "tree_sitter/array.h",
        ] {
            let fresh = fs::read(dir.join("src").join(file)).unwrap_or_default();
            let committed = fs::read(grammar_dir().join("src").join(file)).unwrap_or_default();
            if fresh.is_empty() || fresh != committed {
                differing.push(file.to_string());
            }
        }
        differing
    };
    let differing = if output.status.success() {
        compare()
    } else {
        Vec::new()
    };
    assert!(
        output.status.success(),
        "{version} generate failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        differing.is_empty(),
        "{differing:?} differ from what {version} generates from grammar.js: run editors/tree-sitter-splashpol/generate"
    );
}
