//! Keeps the editor grammars in `editors/` in step with `grammar/splashpol.pest`.
//!
//! The keyword set is read from the pest grammar (every `kw_*` rule); each
//! editor file must highlight exactly that set as keywords: every keyword, and
//! no word that is not one. The Vim syntax file is also loaded into a real
//! `vim` to check what it actually highlights. The tree-sitter grammar must
//! also have exactly the pest grammar's keywords and statements (its parser
//! is tested against the pest grammar in `editors/tree-sitter-splashpol`).

use std::collections::BTreeSet;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

use splash_tests::{require_host, workspace_root};

fn read(relative: &str) -> String {
    let path = workspace_root().join(relative);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The pest grammar with `//` comments removed (string literals kept).
fn grammar_without_comments() -> String {
    let grammar = read("grammar/splashpol.pest");
    let mut out = String::new();
    for line in grammar.lines() {
        let mut in_string = false;
        let mut escaped = false;
        let mut cut = line.len();
        for (i, c) in line.char_indices() {
            if in_string {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == '"' {
                    in_string = false;
                }
            } else if c == '"' {
                in_string = true;
            } else if line[i..].starts_with("//") {
                cut = i;
                break;
            }
        }
        out.push_str(&line[..cut]);
        out.push('\n');
    }
    out
}

/// Every string literal of the grammar (escapes kept as written, so `"\\t"`
/// is not mistaken for the word `t`).
fn grammar_literals(grammar: &str) -> Vec<String> {
    let mut literals = Vec::new();
    let mut chars = grammar.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut literal = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    literal.push('\\');
                    if let Some(next) = chars.next() {
                        literal.push(next);
                    }
                }
                '"' => break,
                other => literal.push(other),
            }
        }
        literals.push(literal);
    }
    literals
}

fn is_word(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The keyword literals of the grammar: the literal of every `kw_NAME` rule.
fn grammar_keywords() -> BTreeSet<String> {
    let grammar = grammar_without_comments();
    let mut keywords = BTreeSet::new();
    for line in grammar.lines() {
        let line = line.trim();
        if !line.starts_with("kw_") {
            continue;
        }
        let literals = grammar_literals(line);
        assert_eq!(
            literals.len(),
            1,
            "keyword rule with other than one literal: `{line}`"
        );
        assert!(is_word(&literals[0]), "odd keyword literal in `{line}`");
        keywords.insert(literals[0].clone());
    }
    assert!(
        keywords.len() >= 40,
        "found only {} keyword rules in grammar/splashpol.pest; has the `kw_*` convention changed?",
        keywords.len()
    );
    keywords
}

/// Every word the grammar can match literally is a keyword rule (or only a
/// prefix of keywords used to dispatch).
#[test]
fn every_word_literal_in_the_grammar_is_a_keyword_rule() {
    let keywords = grammar_keywords();
    let grammar = grammar_without_comments();
    let words: BTreeSet<String> = grammar_literals(&grammar)
        .into_iter()
        .filter(|l| is_word(l))
        .collect();
    // A literal that is only the start of keywords (a dispatch lookahead such
    // as `&"r"`) is not a word of its own.
    let outside: Vec<&String> = words
        .difference(&keywords)
        .filter(|w| !keywords.iter().any(|k| k.starts_with(w.as_str())))
        .collect();
    assert!(
        outside.is_empty(),
        "word literals outside `kw_*` rules (editors would miss them): {outside:?}"
    );
}

/// Removes regex escapes (`\x`) and bracket classes (`[...]`), leaving the
/// literal text a pattern requires.
fn literal_text_of_regex(pattern: &str) -> String {
    let mut out = String::new();
    let mut chars = pattern.chars();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
                out.push(' ');
            }
            '[' if !in_class => in_class = true,
            ']' if in_class => in_class = false,
            _ if in_class => {}
            other => out.push(other),
        }
    }
    out
}

/// Runs of two or more letters a regex requires literally.
fn literal_words(pattern: &str) -> Vec<String> {
    literal_text_of_regex(pattern)
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| w.len() >= 2)
        .map(str::to_string)
        .collect()
}

const TM_PREFIX: &str = "(?<![A-Za-z0-9_-])(?:";
const TM_SUFFIX: &str = ")(?![A-Za-z0-9_-])";

fn textmate() -> serde_json::Value {
    let text = read("editors/vscode/syntaxes/splashpol.tmLanguage.json");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("tmLanguage is not JSON: {e}"))
}

/// Every `match`/`begin`/`end` regex in the TextMate grammar, with its JSON path.
fn textmate_regexes(value: &serde_json::Value, path: &str, out: &mut Vec<(String, String)>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, v) in map {
                let here = format!("{path}/{key}");
                if let (true, Some(s)) = (
                    matches!(key.as_str(), "match" | "begin" | "end"),
                    v.as_str(),
                ) {
                    out.push((here, s.to_string()));
                } else {
                    textmate_regexes(v, &here, out);
                }
            }
        }
        serde_json::Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                textmate_regexes(v, &format!("{path}/{i}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn textmate_grammar_highlights_exactly_the_keywords() {
    let keywords = grammar_keywords();
    let tm = textmate();
    assert_eq!(tm["scopeName"], "source.splashpol");
    let keyword_rule = &tm["repository"]["keyword"];
    assert!(
        keyword_rule["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("keyword.")),
        "the keyword rule must carry a keyword scope"
    );
    let pattern = keyword_rule["match"]
        .as_str()
        .unwrap_or_else(|| panic!("repository.keyword.match missing"));
    let inner = pattern
        .strip_prefix(TM_PREFIX)
        .and_then(|p| p.strip_suffix(TM_SUFFIX))
        .unwrap_or_else(|| {
            panic!("keyword match must be `{TM_PREFIX}a|b|...{TM_SUFFIX}` (whole words only)")
        });
    let listed: Vec<&str> = inner.split('|').collect();
    for word in &listed {
        assert!(
            is_word(word),
            "keyword alternative `{word}` is not a plain word"
        );
    }
    let listed: BTreeSet<String> = listed.into_iter().map(str::to_string).collect();
    let missing: Vec<_> = keywords.difference(&listed).collect();
    let extra: Vec<_> = listed.difference(&keywords).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "tmLanguage keywords out of sync with grammar/splashpol.pest: missing {missing:?}, not keywords {extra:?}"
    );

    // No other rule may require a word: only comments, strings, numbers,
    // devices and punctuation are highlighted besides keywords.
    let mut regexes = Vec::new();
    textmate_regexes(&tm, "", &mut regexes);
    for (path, regex) in regexes {
        if path == "/repository/keyword/match" {
            continue;
        }
        let words = literal_words(&regex);
        assert!(
            words.is_empty(),
            "tmLanguage rule {path} (`{regex}`) highlights words that are not keywords: {words:?}"
        );
    }
}

#[test]
fn vscode_package_points_at_the_grammar() {
    let package: serde_json::Value = serde_json::from_str(&read("editors/vscode/package.json"))
        .unwrap_or_else(|e| panic!("package.json: {e}"));
    let grammars = package["contributes"]["grammars"]
        .as_array()
        .unwrap_or_else(|| panic!("contributes.grammars missing"));
    assert_eq!(grammars.len(), 1);
    assert_eq!(grammars[0]["scopeName"], "source.splashpol");
    assert_eq!(grammars[0]["language"], "splashpol");
    let path = grammars[0]["path"].as_str().unwrap_or_default();
    let resolved = workspace_root().join("editors/vscode").join(path);
    assert!(resolved.is_file(), "grammar path `{path}` does not exist");
    let languages = &package["contributes"]["languages"][0];
    assert_eq!(languages["id"], "splashpol");
    assert_eq!(languages["extensions"][0], ".splashpol");
    let config = languages["configuration"].as_str().unwrap_or_default();
    let config = workspace_root().join("editors/vscode").join(config);
    let config: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(&config).unwrap_or_else(|e| panic!("{}: {e}", config.display())),
    )
    .unwrap_or_else(|e| panic!("language configuration: {e}"));
    assert_eq!(config["comments"]["lineComment"], "#");
}

const VIM_SYNTAX: &str = "editors/vim/syntax/splashpol.vim";

/// Patterns of `syntax match`/`syntax region` lines (delimited by the
/// character after `=` or after the group name).
fn vim_patterns(line: &str) -> Vec<String> {
    let mut patterns = Vec::new();
    let rest = line.trim_start();
    let words: Vec<&str> = rest.splitn(4, ' ').collect();
    if words.len() < 4 {
        return patterns;
    }
    let mut body = words[3];
    if words[1] == "match" {
        // Optional `contained` before the pattern.
        body = body.trim_start_matches("contained").trim_start();
        if let Some(p) = delimited(body) {
            patterns.push(p);
        }
    } else {
        for key in ["start=", "skip=", "end="] {
            let mut from = 0;
            while let Some(i) = body[from..].find(key) {
                let at = from + i + key.len();
                if let Some(p) = delimited(&body[at..]) {
                    patterns.push(p);
                }
                from = at;
            }
        }
    }
    patterns
}

fn delimited(s: &str) -> Option<String> {
    let mut chars = s.chars();
    let delimiter = chars.next()?;
    let mut out = String::new();
    let mut escaped = false;
    for c in chars {
        if escaped {
            out.push('\\');
            out.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == delimiter {
            return Some(out);
        } else {
            out.push(c);
        }
    }
    None
}

#[test]
fn vim_syntax_highlights_exactly_the_keywords() {
    let keywords = grammar_keywords();
    let vim = read(VIM_SYNTAX);
    let mut listed = BTreeSet::new();
    let mut saw_iskeyword = false;
    for line in vim.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with('"') {
            continue;
        }
        let words: Vec<&str> = trimmed.split_whitespace().collect();
        if words.first() != Some(&"syntax") {
            continue;
        }
        match words.get(1).copied() {
            Some("keyword") => {
                assert_eq!(
                    words.get(2).copied(),
                    Some("splashpolKeyword"),
                    "every `syntax keyword` line must be in the keyword group: `{line}`"
                );
                for w in &words[3..] {
                    assert!(is_word(w), "`{w}` is not a plain keyword in `{line}`");
                    assert!(listed.insert((*w).to_string()), "`{w}` listed twice");
                }
            }
            Some("iskeyword") => {
                saw_iskeyword = true;
                assert!(
                    words.get(2).is_some_and(|s| s.split(',').any(|p| p == "-")),
                    "`syntax iskeyword` must include `-` for hyphenated keywords"
                );
            }
            Some("match" | "region") => {
                for pattern in vim_patterns(line) {
                    let words = literal_words(&pattern);
                    assert!(
                        words.is_empty(),
                        "`{line}` highlights words that are not keywords: {words:?}"
                    );
                }
            }
            other => panic!("unexpected syntax command {other:?} in `{line}`"),
        }
    }
    assert!(
        saw_iskeyword,
        "missing `syntax iskeyword` (hyphenated keywords)"
    );
    let missing: Vec<_> = keywords.difference(&listed).collect();
    let extra: Vec<_> = listed.difference(&keywords).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "vim keywords out of sync with grammar/splashpol.pest: missing {missing:?}, not keywords {extra:?}"
    );
}

fn vim_available() -> bool {
    Command::new("vim")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Words that look like keywords but are not: units, near misses, keyword
/// prefixes and suffixes, syscall names.
fn non_keywords(keywords: &BTreeSet<String>) -> Vec<String> {
    let mut words: Vec<String> = splashpol::syntax::unit_spellings()
        .filter(|u| !u.contains('/'))
        .map(str::to_string)
        .collect();
    for k in keywords {
        words.push(format!("{k}x"));
        words.push(format!("x{k}"));
        words.push(format!("{k}-"));
        words.push(format!("{k}_1"));
        words.push(k.to_ascii_uppercase());
    }
    words.extend(
        [
            "policies",
            "roots",
            "hosts",
            "readonly",
            "read_only",
            "execve",
            "openat",
            "deny",
            "strict",
        ]
        .iter()
        .map(|s| (*s).to_string()),
    );
    words.retain(|w| !keywords.contains(w));
    words
}

/// Loads `lines` into vim with the syntax file and returns, for each line,
/// the syntax group at every character.
fn vim_groups(lines: &[String]) -> Vec<Vec<String>> {
    let dir_guard = tempfile::Builder::new()
        .prefix("splash-editors-")
        .tempdir()
        .expect("create a temporary directory");
    let dir = dir_guard.path();
    fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let input = dir.join("sample.splashpol");
    let output = dir.join("groups.txt");
    let script = dir.join("query.vim");
    fs::write(&input, lines.join("\n") + "\n").unwrap_or_else(|e| panic!("{e}"));
    let query = format!(
        "let out = []\n\
         for l in range(1, line('$'))\n\
           let names = []\n\
           for c in range(1, strlen(getline(l)))\n\
             call add(names, synIDattr(synID(l, c, 1), 'name'))\n\
           endfor\n\
           call add(out, join(names, ','))\n\
         endfor\n\
         call writefile(out, '{}')\n\
         qall!\n",
        output.display()
    );
    fs::write(&script, query).unwrap_or_else(|e| panic!("{e}"));
    let runtime: PathBuf = workspace_root().join("editors/vim");
    let status = Command::new("vim")
        .args(["-N", "-u", "NONE", "-i", "NONE", "-n", "-Es"])
        .arg("--cmd")
        .arg(format!("set rtp^={}", runtime.display()))
        .args(["-c", "filetype on", "-c", "syntax on"])
        .args(["-c", "doautocmd filetypedetect BufRead"])
        .arg("-c")
        .arg(format!("source {}", script.display()))
        .arg(&input)
        .status()
        .unwrap_or_else(|e| panic!("cannot run vim: {e}"));
    assert!(status.success(), "vim exited with {status}");
    let text = fs::read_to_string(&output).unwrap_or_else(|e| panic!("vim wrote no output: {e}"));
    text.lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

#[test]
fn vim_really_highlights_keywords_and_nothing_else() {
    if !require_host(vim_available(), "`vim` (to load the Vim syntax file)") {
        return;
    }
    let keywords = grammar_keywords();
    let others = non_keywords(&keywords);
    let mut lines: Vec<String> = keywords.iter().cloned().collect();
    lines.extend(others.iter().cloned());
    // Keywords inside strings and comments are not keywords.
    lines.push("\"policy read-only\"".to_string());
    lines.push("# policy read-only".to_string());
    lines.push("root \"x\" tmpfs at \"/x\" size 32 MiB".to_string());
    let groups = vim_groups(&lines);
    assert_eq!(
        groups.len(),
        lines.len(),
        "vim returned a different line count"
    );

    for (i, k) in keywords.iter().enumerate() {
        assert!(
            groups[i].iter().all(|g| g == "splashpolKeyword"),
            "vim does not highlight keyword `{k}` as a whole: {:?}",
            groups[i]
        );
    }
    for (j, w) in others.iter().enumerate() {
        let g = &groups[keywords.len() + j];
        assert!(
            !g.iter().any(|g| g == "splashpolKeyword"),
            "vim highlights non-keyword `{w}` as a keyword: {g:?}"
        );
    }
    let n = keywords.len() + others.len();
    assert!(
        groups[n].iter().all(|g| g == "splashpolString"),
        "{:?}",
        groups[n]
    );
    assert!(
        groups[n + 1].iter().all(|g| g == "splashpolComment"),
        "{:?}",
        groups[n + 1]
    );
    let last = &groups[n + 2];
    assert_eq!(last[0], "splashpolKeyword");
    let size_at = lines[n + 2].find("32").unwrap_or_default();
    assert_eq!(last[size_at], "splashpolNumber");
    let unit_at = lines[n + 2].find("MiB").unwrap_or_default();
    assert_eq!(last[unit_at], "", "units are not highlighted");
}

fn node_available() -> bool {
    Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A small TextMate tokenizer (the subset the grammar uses: `match` rules,
/// `begin`/`end` regions with inner `match` rules, `include` of repository
/// entries): at each position the leftmost match of the top-level patterns
/// wins, ties going to the earlier pattern. JavaScript regular expressions
/// agree with Oniguruma on every construct the grammar uses (classes,
/// alternation, lookahead and lookbehind).
const TEXTMATE_TOKENIZER: &str = r#"
const fs = require('fs');
const [grammarPath, inputPath] = process.argv.slice(2);
const g = JSON.parse(fs.readFileSync(grammarPath, 'utf8'));
const resolve = (p) => p.include ? resolve(g.repository[p.include.slice(1)]) : p;
const rx = (s) => new RegExp(s, 'gu');
const rules = g.patterns.map(resolve).map((r) => ({
  name: r.name,
  match: r.match && rx(r.match),
  begin: r.begin && rx(r.begin),
  end: r.end && rx(r.end),
}));
const out = [];
for (const line of fs.readFileSync(inputPath, 'utf8').split('\n')) {
  const chars = Array.from(line);
  // Scopes per UTF-16 index, then mapped to characters.
  const scope = new Array(line.length).fill('');
  let pos = 0;
  while (pos < line.length) {
    let best = null;
    for (const r of rules) {
      const re = r.match || r.begin;
      re.lastIndex = pos;
      const m = re.exec(line);
      if (m && (best === null || m.index < best.m.index)) best = { r, m };
    }
    if (best === null) break;
    const { r, m } = best;
    let end = m.index + m[0].length;
    if (r.begin) {
      r.end.lastIndex = end;
      const e = r.end.exec(line);
      end = e ? e.index + e[0].length : line.length;
    }
    for (let i = m.index; i < end; i++) scope[i] = r.name;
    pos = end > pos ? end : pos + 1;
  }
  const perChar = [];
  let i = 0;
  for (const c of chars) { perChar.push(scope[i]); i += c.length; }
  out.push(perChar);
}
process.stdout.write(JSON.stringify(out));
"#;

/// Tokenizes `lines` with the TextMate grammar; returns the scope of every
/// character.
fn textmate_scopes(lines: &[String]) -> Vec<Vec<String>> {
    let dir_guard = tempfile::Builder::new()
        .prefix("splash-textmate-")
        .tempdir()
        .expect("create a temporary directory");
    let dir = dir_guard.path();
    fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let script = dir.join("tokenize.js");
    let input = dir.join("sample.splashpol");
    fs::write(&script, TEXTMATE_TOKENIZER).unwrap_or_else(|e| panic!("{e}"));
    fs::write(&input, lines.join("\n")).unwrap_or_else(|e| panic!("{e}"));
    let grammar = workspace_root().join("editors/vscode/syntaxes/splashpol.tmLanguage.json");
    let output = Command::new("node")
        .arg(&script)
        .arg(&grammar)
        .arg(&input)
        .output()
        .unwrap_or_else(|e| panic!("cannot run node: {e}"));
    assert!(
        output.status.success(),
        "tokenizer failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("tokenizer output: {e}"))
}

#[test]
fn textmate_really_highlights_keywords_and_nothing_else() {
    if !require_host(
        node_available(),
        "`node` (to run the TextMate grammar's patterns)",
    ) {
        return;
    }
    let keywords = grammar_keywords();
    let others = non_keywords(&keywords);
    let mut lines: Vec<String> = keywords.iter().cloned().collect();
    lines.extend(others.iter().cloned());
    lines.push("\"policy read-only\"".to_string());
    lines.push("# policy read-only".to_string());
    lines.push("root \"x\" tmpfs at \"/x\" size 32 MiB".to_string());
    lines.push("io 8:16 { read 2 MiB/s }".to_string());
    let scopes = textmate_scopes(&lines);
    assert_eq!(
        scopes.len(),
        lines.len(),
        "tokenizer returned a different line count"
    );
    const KEYWORD: &str = "keyword.other.splashpol";
    for (i, k) in keywords.iter().enumerate() {
        assert!(
            scopes[i].iter().all(|s| s == KEYWORD),
            "keyword `{k}` is not highlighted as a whole: {:?}",
            scopes[i]
        );
    }
    for (j, w) in others.iter().enumerate() {
        let s = &scopes[keywords.len() + j];
        assert!(
            !s.iter().any(|s| s == KEYWORD),
            "non-keyword `{w}` is highlighted as a keyword: {s:?}"
        );
    }
    let n = keywords.len() + others.len();
    assert!(
        scopes[n]
            .iter()
            .all(|s| s == "string.quoted.double.splashpol"),
        "{:?}",
        scopes[n]
    );
    assert!(
        scopes[n + 1]
            .iter()
            .all(|s| s == "comment.line.number-sign.splashpol"),
        "{:?}",
        scopes[n + 1]
    );
    let line = &lines[n + 2];
    let at = |needle: &str| line.find(needle).unwrap_or_default();
    assert_eq!(scopes[n + 2][0], KEYWORD);
    assert_eq!(scopes[n + 2][at("32")], "constant.numeric.splashpol");
    assert_eq!(scopes[n + 2][at("MiB")], "", "units are not highlighted");
    let line = &lines[n + 3];
    let device = line.find("8:16").unwrap_or_default();
    assert!(
        scopes[n + 3][device..device + 4]
            .iter()
            .all(|s| s == "constant.numeric.device.splashpol"),
        "{:?}",
        scopes[n + 3]
    );
}

const TREE_SITTER: &str = "editors/tree-sitter-splashpol";

fn tree_sitter_grammar() -> serde_json::Value {
    let text = read(&format!("{TREE_SITTER}/src/grammar.json"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("src/grammar.json is not JSON: {e}"))
}

/// Every `STRING` literal of a generated tree-sitter grammar.
fn tree_sitter_strings(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            if map.get("type").and_then(|t| t.as_str()) == Some("STRING")
                && let Some(v) = map.get("value").and_then(|v| v.as_str())
            {
                out.push(v.to_string());
            }
            for v in map.values() {
                tree_sitter_strings(v, out);
            }
        }
        serde_json::Value::Array(items) => {
            for v in items {
                tree_sitter_strings(v, out);
            }
        }
        _ => {}
    }
}

/// The statement rules of the pest grammar (`X_stmt` in `statement`), as `X`.
fn pest_statements() -> BTreeSet<String> {
    let grammar = grammar_without_comments();
    let start = grammar
        .find("\nstatement = _{")
        .unwrap_or_else(|| panic!("no `statement` rule in grammar/splashpol.pest"));
    let body = &grammar[start + 1..];
    let body = &body[..body.find('}').unwrap_or(body.len())];
    let statements: BTreeSet<String> = body
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter_map(|w| w.strip_suffix("_stmt"))
        .map(str::to_string)
        .collect();
    assert!(
        statements.len() >= 15,
        "found only {} statements in grammar/splashpol.pest",
        statements.len()
    );
    statements
}

#[test]
fn tree_sitter_grammar_has_exactly_the_keywords_and_statements() {
    let keywords = grammar_keywords();
    let grammar = tree_sitter_grammar();
    assert_eq!(grammar["name"], "splashpol");
    let mut strings = Vec::new();
    tree_sitter_strings(&grammar["rules"], &mut strings);
    let words: BTreeSet<String> = strings.into_iter().filter(|s| is_word(s)).collect();
    let missing: Vec<_> = keywords.difference(&words).collect();
    let extra: Vec<_> = words.difference(&keywords).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "tree-sitter keywords out of sync with grammar/splashpol.pest: missing {missing:?}, not keywords {extra:?}"
    );
    // A keyword is a whole word: the grammar's `word` token takes every one.
    assert_eq!(grammar["word"], "_word", "keywords need the `word` token");

    let members = grammar["rules"]["_statement"]["members"]
        .as_array()
        .unwrap_or_else(|| panic!("`_statement` is not a choice"));
    let statements: BTreeSet<String> = members
        .iter()
        .map(|m| {
            let name = m["name"].as_str().unwrap_or_default();
            name.strip_suffix("_statement")
                .unwrap_or_else(|| panic!("`_statement` member `{name}` is not an `X_statement`"))
                .to_string()
        })
        .collect();
    let pest = pest_statements();
    let missing: Vec<_> = pest.difference(&statements).collect();
    let extra: Vec<_> = statements.difference(&pest).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "tree-sitter statements out of sync with grammar/splashpol.pest: missing {missing:?}, not statements {extra:?}"
    );
}

#[test]
fn tree_sitter_highlights_exactly_the_keywords() {
    let keywords = grammar_keywords();
    let query = read(&format!("{TREE_SITTER}/queries/highlights.scm"));
    let code: String = query
        .lines()
        .filter(|l| !l.trim_start().starts_with(';'))
        .collect::<Vec<_>>()
        .join("\n");
    // The node names a query may capture besides keywords: none is a word
    // literal, so every quoted word is a keyword.
    let listed: BTreeSet<String> = grammar_literals(&code)
        .into_iter()
        .filter(|l| is_word(l))
        .collect();
    let missing: Vec<_> = keywords.difference(&listed).collect();
    let extra: Vec<_> = listed.difference(&keywords).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "highlights.scm keywords out of sync with grammar/splashpol.pest: missing {missing:?}, not keywords {extra:?}"
    );
    // They are one list, captured as keywords.
    let first = keywords
        .iter()
        .filter_map(|k| code.find(&format!("\"{k}\"")))
        .min()
        .unwrap_or_default();
    let list = &code[first..];
    let end = list
        .find(']')
        .unwrap_or_else(|| panic!("keyword list not closed"));
    assert!(
        list[end..].starts_with("] @keyword"),
        "the keyword list must be captured as `@keyword`"
    );
    assert!(
        keywords
            .iter()
            .all(|k| list[..end].contains(&format!("\"{k}\""))),
        "every keyword is in the one `@keyword` list"
    );
}

#[test]
fn tree_sitter_json_points_at_the_grammar_and_query() {
    let config: serde_json::Value =
        serde_json::from_str(&read(&format!("{TREE_SITTER}/tree-sitter.json")))
            .unwrap_or_else(|e| panic!("tree-sitter.json: {e}"));
    let grammars = config["grammars"]
        .as_array()
        .unwrap_or_else(|| panic!("tree-sitter.json: no grammars"));
    assert_eq!(grammars.len(), 1);
    let grammar = &grammars[0];
    assert_eq!(grammar["name"], "splashpol");
    assert_eq!(grammar["scope"], "source.splashpol");
    assert_eq!(grammar["file-types"], serde_json::json!(["splashpol"]));
    let highlights = grammar["highlights"].as_str().unwrap_or_default();
    assert!(
        workspace_root()
            .join(TREE_SITTER)
            .join(highlights)
            .is_file(),
        "highlights `{highlights}` does not exist"
    );
    assert!(config["metadata"]["version"].is_string());
}
