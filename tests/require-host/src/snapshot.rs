//! The one snapshot mechanism shared by every snapshot test.
//!
//! A snapshot is a text file in the repository (or a generated block inside
//! one, see [`check_snapshot_between`]) compared byte for byte with what the
//! code produces. A missing or different file is a failure whose message
//! names the file, shows where the texts first differ and gives the command
//! that rewrites it. With `SPLASH_BLESS=1` the check writes the produced text
//! instead (only when it differs, saying so on stderr) and passes, for a
//! reviewed `git diff`.
//!
//! The `check_*` functions return the failure message, so a test can collect
//! every failure (or finish its other assertions) before failing.

use std::fmt::Write as _;
use std::path::Path;

/// Environment variable that makes snapshot tests write their files.
pub const BLESS_VAR: &str = "SPLASH_BLESS";

/// How many unchanged lines are shown around a difference.
const CONTEXT_LINES: usize = 3;

/// How many changed lines of each side are shown.
const SHOWN_CHANGED_LINES: usize = 20;

/// The command that rewrites the snapshots of the calling integration test
/// (`tests/NAME.rs`): `SPLASH_BLESS=1 cargo test -p PACKAGE --test NAME`,
/// from the package and crate name Cargo compiles the test with.
#[macro_export]
macro_rules! bless_command {
    () => {
        concat!(
            "SPLASH_BLESS=1 cargo test -p ",
            env!("CARGO_PKG_NAME"),
            " --test ",
            env!("CARGO_CRATE_NAME")
        )
    };
}

/// Whether `SPLASH_BLESS=1` is set.
pub fn blessing() -> bool {
    std::env::var(BLESS_VAR).as_deref() == Ok("1")
}

/// Compares `actual` with the file at `path`, or writes it there (creating
/// its directory) when blessing. `bless` is the command that rewrites the
/// snapshot ([`bless_command!`]).
pub fn check_snapshot(path: &Path, actual: &str, bless: &str) -> Result<(), String> {
    let current = std::fs::read_to_string(path).ok();
    if blessing() {
        if current.as_deref() != Some(actual) {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)
                    .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
            }
            std::fs::write(path, actual)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
            eprintln!("blessed {}", path.display());
        }
        return Ok(());
    }
    match current {
        None => Err(format!(
            "{} does not exist; run `{bless}` to create it, then review it",
            path.display()
        )),
        Some(expected) => compare(&path.display().to_string(), &expected, actual, bless),
    }
}

/// For output that is no longer produced: the file at `path` must not
/// exist. Blessing removes it.
pub fn check_no_snapshot(path: &Path, bless: &str) -> Result<(), String> {
    if !path.exists() {
        return Ok(());
    }
    if blessing() {
        std::fs::remove_file(path)
            .unwrap_or_else(|e| panic!("cannot remove {}: {e}", path.display()));
        eprintln!("removed stale {}", path.display());
        return Ok(());
    }
    Err(format!(
        "{} is stale: nothing produces it any more; run `{bless}` to remove it",
        path.display()
    ))
}

/// Like [`check_snapshot`] for a generated block inside a hand-written file:
/// the snapshot is the text between the first `begin` marker and the `end`
/// marker after it, and blessing rewrites only that text. Panics when the
/// file cannot be read or lacks the markers.
pub fn check_snapshot_between(
    path: &Path,
    begin: &str,
    end: &str,
    actual: &str,
    bless: &str,
) -> Result<(), String> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let start = text
        .find(begin)
        .map(|b| b + begin.len())
        .unwrap_or_else(|| panic!("{} lacks the marker `{}`", path.display(), begin.trim()));
    let stop = text[start..]
        .find(end)
        .map(|e| start + e)
        .unwrap_or_else(|| panic!("{} lacks the marker `{}`", path.display(), end.trim()));
    let expected = &text[start..stop];
    if expected == actual {
        return Ok(());
    }
    if blessing() {
        let updated = format!("{}{actual}{}", &text[..start], &text[stop..]);
        std::fs::write(path, updated)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        eprintln!("blessed the generated block of {}", path.display());
        return Ok(());
    }
    compare(
        &format!("the generated block of {}", path.display()),
        expected,
        actual,
        bless,
    )
}

/// `Ok` when equal; otherwise a message naming `what`, with the first
/// difference and the bless command.
fn compare(what: &str, expected: &str, actual: &str, bless: &str) -> Result<(), String> {
    if expected == actual {
        return Ok(());
    }
    Err(format!(
        "{what} differs from the produced output\n{}\nif the change is intended, run `{bless}` and review the diff",
        difference(expected, actual)
    ))
}

/// The first run of differing lines with a little context: unchanged lines
/// start with two spaces, expected ones with `- `, produced ones with `+ `.
fn difference(expected: &str, actual: &str) -> String {
    let old: Vec<&str> = expected.split_inclusive('\n').collect();
    let new: Vec<&str> = actual.split_inclusive('\n').collect();
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let count = |n: usize| format!("{n} line{}", if n == 1 { "" } else { "s" });
    let mut out = format!(
        "first difference at line {} (expected {}, produced {}):\n",
        prefix + 1,
        count(old.len()),
        count(new.len())
    );
    let line = |out: &mut String, mark: &str, text: &str| {
        let shown = text.strip_suffix('\n').unwrap_or(text);
        let end = if text.ends_with('\n') {
            ""
        } else {
            "  (no final newline)"
        };
        let _ = writeln!(out, "{mark}{shown}{end}");
    };
    for text in &old[prefix.saturating_sub(CONTEXT_LINES)..prefix] {
        line(&mut out, "  ", text);
    }
    for (mark, side) in [("- ", &old), ("+ ", &new)] {
        let changed = &side[prefix..side.len() - suffix];
        for text in changed.iter().take(SHOWN_CHANGED_LINES) {
            line(&mut out, mark, text);
        }
        if changed.len() > SHOWN_CHANGED_LINES {
            let _ = writeln!(
                out,
                "{mark}... {} more lines",
                changed.len() - SHOWN_CHANGED_LINES
            );
        }
    }
    let after = old.len() - suffix;
    for text in &old[after..(after + CONTEXT_LINES).min(old.len())] {
        line(&mut out, "  ", text);
    }
    out.truncate(out.trim_end_matches('\n').len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn difference_shows_the_changed_lines_with_context() {
        let expected = "a\nb\nc\nd\ne\nf\ng\n";
        let actual = "a\nb\nc\nd\nE\nf\ng\n";
        assert_eq!(
            difference(expected, actual),
            "first difference at line 5 (expected 7 lines, produced 7 lines):\n  b\n  c\n  d\n- e\n+ E\n  f\n  g"
        );
    }

    #[test]
    fn difference_shows_added_and_removed_lines_and_the_final_newline() {
        assert_eq!(
            difference("a\n", "a\nb\n"),
            "first difference at line 2 (expected 1 line, produced 2 lines):\n  a\n+ b"
        );
        assert_eq!(
            difference("a\nb\n", "a\n"),
            "first difference at line 2 (expected 2 lines, produced 1 line):\n  a\n- b"
        );
        assert_eq!(
            difference("a\n", "a"),
            "first difference at line 1 (expected 1 line, produced 1 line):\n- a\n+ a  (no final newline)"
        );
    }

    #[test]
    fn difference_limits_long_changes() {
        let old: String = (0..30).map(|i| format!("{i}\n")).collect();
        let text = difference(&old, "");
        assert!(text.contains("- 19\n- ... 10 more lines"), "{text}");
        assert!(!text.contains("- 20\n"), "{text}");
    }

    #[test]
    fn equal_texts_compare_equal_and_others_name_the_command() {
        assert_eq!(compare("f", "x\n", "x\n", "bless"), Ok(()));
        let e = compare("f", "x\n", "y\n", "SPLASH_BLESS=1 cargo test").unwrap_err();
        assert!(e.starts_with("f differs"), "{e}");
        assert!(e.contains("- x\n+ y\n"), "{e}");
        assert!(
            e.ends_with("run `SPLASH_BLESS=1 cargo test` and review the diff"),
            "{e}"
        );
    }
}
