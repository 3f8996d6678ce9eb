//! `splashc check FILE... [--format json]`.
//!
//! Checks every file and reports every diagnostic. Exit status: 0 when no
//! file has an error (warnings allowed), 1 when any file has an error, 2 when
//! a file cannot be read. Human output goes to stderr through miette (colour
//! only on a terminal); JSON goes to stdout as one document.
//!
//! Each file is read with the runtime loader's reader: a regular file of at
//! most [`MAX_POLICY_BYTES`]; a FIFO, a device or a directory is refused
//! (status 2) without blocking or reading it.

use std::io::{IsTerminal, Write};

use serde_json::json;
use splash_runtime::launch::{MAX_POLICY_BYTES, read_regular_file};
use splashpol::RenderOptions;

use crate::Format;

pub fn run(args: &crate::CheckArgs) -> u8 {
    let mut any_errors = false;
    let mut io_failure = false;
    let mut reports = Vec::new();
    let color = std::io::stderr().is_terminal();
    for path in &args.policies {
        let name = path.display().to_string();
        let bytes = match read_regular_file(path, MAX_POLICY_BYTES) {
            Ok(bytes) => bytes,
            Err(e) => {
                io_failure = true;
                report_io(args.format, &mut reports, &name, &e.to_string());
                continue;
            }
        };
        // A file that is not UTF-8 is a policy error at a line and column.
        let (source, outcome) = splashpol::check_bytes(&name, &bytes);
        any_errors |= outcome.has_errors();
        match args.format {
            Format::Human => {
                let options = RenderOptions {
                    color,
                    ..RenderOptions::default()
                };
                let mut text = outcome.render_human_with(&name, &source, options);
                let errors = outcome.errors().count();
                let warnings = outcome.warnings().count();
                text.push_str(&if errors == 0 && warnings == 0 {
                    format!("{name}: ok\n")
                } else {
                    format!(
                        "{name}: {} and {}\n",
                        plural(errors, "error"),
                        plural(warnings, "warning")
                    )
                });
                let _ = std::io::stderr().write_all(text.as_bytes());
            }
            Format::Json => {
                let mut value = outcome.to_json_with_positions(&source);
                value["file"] = json!(name);
                reports.push(value);
            }
        }
    }
    if args.format == Format::Json {
        let doc = json!({ "files": reports });
        let mut out = std::io::stdout().lock();
        let _ = serde_json::to_writer_pretty(&mut out, &doc);
        let _ = writeln!(out);
    }
    if io_failure {
        2
    } else if any_errors {
        1
    } else {
        0
    }
}

fn report_io(format: Format, reports: &mut Vec<serde_json::Value>, name: &str, error: &str) {
    match format {
        Format::Human => eprintln!("error: cannot read `{name}`: {error}"),
        Format::Json => reports.push(json!({ "file": name, "ok": false, "io_error": error })),
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::CheckArgs;

    fn policies() -> Vec<PathBuf> {
        let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies"));
        let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("policies")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "splashpol"))
            .collect();
        v.sort();
        v
    }

    fn temp(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, text).expect("write");
        p
    }

    #[test]
    fn clean_policies_exit_zero_even_with_warnings() {
        for format in [Format::Human, Format::Json] {
            let args = CheckArgs {
                policies: policies(),
                format,
            };
            assert_eq!(run(&args), 0);
        }
    }

    #[test]
    fn errors_exit_one_and_unreadable_files_exit_two() {
        let dir = tempfile::Builder::new()
            .prefix("splashc-check-test-")
            .tempdir()
            .expect("create a temporary directory");
        let bad = temp(
            &dir,
            "bad.splashpol",
            "splashpol 1\npolicy \"x\" {\n  wroker \"/a\"\n}\n",
        );
        let mut files = policies();
        files.push(bad.clone());
        assert_eq!(
            run(&CheckArgs {
                policies: files,
                format: Format::Human
            }),
            1
        );
        let missing = bad.with_file_name("does-not-exist.splashpol");
        assert_eq!(
            run(&CheckArgs {
                policies: vec![bad.clone(), missing],
                format: Format::Json
            }),
            2
        );
        let not_utf8 = temp(&dir, "latin1.splashpol", "");
        std::fs::write(&not_utf8, b"splashpol 1\n\xff").expect("write");
        assert_eq!(
            run(&CheckArgs {
                policies: vec![not_utf8],
                format: Format::Human
            }),
            1,
            "a file that is not UTF-8 is a policy error, not an I/O failure"
        );
    }
}
