//! `splashc check FILE... [--format json] [--quiet] [--deny-warnings]`.
//!
//! Checks every file and reports every diagnostic. Exit status: 0 when no
//! file has an error (warnings allowed unless `--deny-warnings`), 1 when any
//! file has an error (or a warning, with `--deny-warnings`), 2 when a file
//! cannot be read. Human output goes to stderr as the compiler renders it (colour only
//! on a terminal, never with `NO_COLOR` or `TERM=dumb`); JSON goes to stdout
//! as one document. `--quiet` prints errors only (warnings too with
//! `--deny-warnings`), without the per-file summary.
//!
//! Each file is read with the runtime loader's reader: a regular file of at
//! most [`MAX_POLICY_BYTES`]; a FIFO, a device or a directory is refused
//! (status 2) without blocking or reading it. `-` is standard input, read
//! to the same bound.

use std::io::Write;
use std::path::Path;

use serde_json::json;
use splash_runtime::launch::{MAX_POLICY_BYTES, read_bounded, read_regular_file};
use splashpol::RenderOptions;

use crate::Format;
use crate::exit::Exit;

pub fn run(args: &crate::CheckArgs) -> Exit {
    let mut any_errors = false;
    let mut io_failure = false;
    let mut reports = Vec::new();
    let color = crate::stderr_color();
    for path in &args.policies {
        let stdin = path == Path::new("-");
        let name = if stdin {
            "<stdin>".to_string()
        } else {
            path.display().to_string()
        };
        let read = if stdin {
            read_bounded(std::io::stdin().lock(), MAX_POLICY_BYTES)
        } else {
            read_regular_file(path, MAX_POLICY_BYTES)
        };
        let bytes = match read {
            Ok(bytes) => bytes,
            Err(e) => {
                io_failure = true;
                report_io(args.format, &mut reports, &name, &e.to_string());
                continue;
            }
        };
        // A file that is not UTF-8 is a policy error at a line and column.
        let (source, mut outcome) = splashpol::check_bytes(&name, &bytes);
        let warnings = outcome.warnings().count();
        any_errors |= outcome.has_errors() || (args.deny_warnings && warnings > 0);
        match args.format {
            Format::Human => {
                let options = RenderOptions {
                    color,
                    ..RenderOptions::default()
                };
                let errors = outcome.errors().count();
                if args.quiet && !args.deny_warnings {
                    outcome.diagnostics.retain(|d| d.is_error());
                }
                let mut text = outcome.render_human_with(&name, &source, options);
                if !args.quiet {
                    text.push_str(&if errors == 0 && warnings == 0 {
                        format!("{name}: ok\n")
                    } else {
                        format!(
                            "{name}: {} and {}{}\n",
                            plural(errors, "error"),
                            plural(warnings, "warning"),
                            if args.deny_warnings && warnings > 0 {
                                " (warnings denied)"
                            } else {
                                ""
                            }
                        )
                    });
                }
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
        Exit::Usage
    } else if any_errors {
        Exit::Rejected
    } else {
        Exit::Success
    }
}

/// Prints `outcome`'s diagnostics on stderr as `check` does (colour only
/// where [`crate::stderr_color`] allows it): how `run` and `test` report a
/// policy the runtime refused with [`splash_runtime::LaunchError::Check`].
pub(crate) fn eprint_diagnostics(name: &str, text: &str, outcome: &splashpol::CheckOutcome) {
    let options = RenderOptions {
        color: crate::stderr_color(),
        ..RenderOptions::default()
    };
    eprint!("{}", outcome.render_human_with(name, text, options));
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
                quiet: false,
                deny_warnings: false,
            };
            assert_eq!(run(&args), Exit::Success);
        }
    }

    #[test]
    fn denied_warnings_exit_one_and_quiet_changes_no_status() {
        let warned: Vec<PathBuf> = policies()
            .into_iter()
            .filter(|p| p.ends_with("strict-allowlist.splashpol"))
            .collect();
        let source = std::fs::read_to_string(&warned[0]).expect("policy");
        let (_, outcome) = splashpol::check_bytes("p", source.as_bytes());
        // Control: the policy has a warning and no error.
        assert!(outcome.warnings().count() > 0 && !outcome.has_errors());
        for (quiet, deny_warnings, code) in [
            (false, false, Exit::Success),
            (true, false, Exit::Success),
            (false, true, Exit::Rejected),
            (true, true, Exit::Rejected),
        ] {
            for format in [Format::Human, Format::Json] {
                let args = CheckArgs {
                    policies: warned.clone(),
                    format,
                    quiet,
                    deny_warnings,
                };
                assert_eq!(run(&args), code, "quiet {quiet}, deny {deny_warnings}");
            }
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
                format: Format::Human,
                quiet: false,
                deny_warnings: false,
            }),
            Exit::Rejected
        );
        let missing = bad.with_file_name("does-not-exist.splashpol");
        assert_eq!(
            run(&CheckArgs {
                policies: vec![bad.clone(), missing],
                format: Format::Json,
                quiet: true,
                deny_warnings: false,
            }),
            Exit::Usage
        );
        let not_utf8 = temp(&dir, "latin1.splashpol", "");
        std::fs::write(&not_utf8, b"splashpol 1\n\xff").expect("write");
        assert_eq!(
            run(&CheckArgs {
                policies: vec![not_utf8],
                format: Format::Human,
                quiet: false,
                deny_warnings: true,
            }),
            Exit::Rejected,
            "a file that is not UTF-8 is a policy error, not an I/O failure"
        );
    }
}
