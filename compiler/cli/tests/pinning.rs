//! `splashc run --expect-digest` and what the commands show of a tampered
//! artifact: a file other than the pinned one is refused before it is
//! parsed, naming both digests, and no refusal writes a control or
//! bidirectional formatting character from the file to the terminal.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn splashc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_splashc"))
        .args(args)
        .output()
        .expect("run splashc")
}

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../splashpol/tests/artifacts")
        .join(name)
}

#[test]
fn a_file_other_than_the_pinned_one_is_refused_naming_both_digests() {
    let control = corpus("agent-worker.control.splashc");
    let tampered = corpus("bidi-in-path.splashc");
    let pinned = splashpol::artifact::digest(&std::fs::read(&control).expect("read"));
    let found = splashpol::artifact::digest(&std::fs::read(&tampered).expect("read"));
    let o = splashc(&[
        "run",
        &tampered.to_string_lossy(),
        "--expect-digest",
        &pinned,
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("not the pinned policy")
            && stderr.contains(&pinned)
            && stderr.contains(&found),
        "{stderr}"
    );
    // A malformed digest is a usage error, shown escaped.
    let o = splashc(&[
        "run",
        &control.to_string_lossy(),
        "--expect-digest",
        "ab\u{1b}[2J",
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("ab\\u{1b}[2J"), "{stderr}");
}

#[test]
fn refusals_of_tampered_artifacts_show_their_text_escaped() {
    for name in [
        "bidi-in-path.splashc",
        "newline-in-path.splashc",
        "escape-sequence-in-path.splashc",
        "control-in-name.splashc",
        "wrong-format.splashc",
    ] {
        let path = corpus(name);
        for command in ["explain", "emit", "run"] {
            let o = splashc(&[command, &path.to_string_lossy()]);
            let stderr = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{command} {name}: {stderr}");
            let text = stderr.trim_end();
            assert!(
                !text
                    .chars()
                    .any(|c| c != '\n' && splashpol::text::is_forbidden(c))
                    && text.lines().count() == 1,
                "{command} {name}: {stderr:?}"
            );
        }
    }
}
