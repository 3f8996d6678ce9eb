//! Every malformed invocation ends with the usage exit code and one
//! diagnostic line, before any setup.

use std::process::Command;

use crate::common::{LANDLOCK_RUNNER, LIMIT_RUNNER, RUNNER, output, stderr};

const USAGE: i32 = 64;

fn many_allows(n: usize) -> Vec<String> {
    let mut args = Vec::new();
    for i in 0..n {
        args.push("--allow".to_owned());
        args.push(format!("/nonexistent/p{i}"));
    }
    args
}

fn check(runner: &str, name: &str, args: &[String], expect_in_message: &str) {
    let out = output(Command::new(runner).args(args));
    let err = stderr(&out);
    assert_eq!(
        out.status.code(),
        Some(USAGE),
        "{name} {args:?}: expected exit {USAGE}, got {:?}: {err}",
        out.status
    );
    assert_eq!(err.lines().count(), 1, "{name} {args:?}: one line: {err:?}");
    assert!(
        err.starts_with(&format!("{name}: error: ")),
        "{name} {args:?}: prefix: {err:?}"
    );
    assert!(
        err.contains(expect_in_message),
        "{name} {args:?}: expected `{expect_in_message}` in {err:?}"
    );
}

fn strs(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn limit_runner_usage_errors() {
    let table: &[(&[&str], &str)] = &[
        (&[], "missing `--`"),
        (&["--cpu-seconds", "1"], "missing `--`"),
        (&["--cpu-seconds", "1", "--"], "missing program"),
        (&["--", "/bin/true"], "no limit selected"),
        (&["--cpu-seconds"], "needs a value"),
        (&["--cpu-seconds", "--", "/bin/true"], "needs a value"),
        (
            &["--cpu-seconds", "0", "--", "/bin/true"],
            "must not be zero",
        ),
        (
            &[
                "--file-size-bytes",
                "18446744073709551615",
                "--",
                "/bin/true",
            ],
            "unbounded",
        ),
        (
            &[
                "--file-size-bytes",
                "18446744073709551616",
                "--",
                "/bin/true",
            ],
            "too large",
        ),
        (
            &["--open-files", "-1", "--", "/bin/true"],
            "not a decimal number",
        ),
        (
            &["--open-files", "+1", "--", "/bin/true"],
            "not a decimal number",
        ),
        (
            &["--open-files", "01", "--", "/bin/true"],
            "not a decimal number",
        ),
        (
            &["--open-files", "1k", "--", "/bin/true"],
            "not a decimal number",
        ),
        (
            &["--open-files", " 1", "--", "/bin/true"],
            "not a decimal number",
        ),
        (
            &["--open-files", "", "--", "/bin/true"],
            "not a decimal number",
        ),
        (
            &["--open-files", "5", "--open-files", "5", "--", "/bin/true"],
            "more than once",
        ),
        (
            &["--cpu-seconds=5", "--", "/bin/true"],
            "unknown flag `--cpu-seconds=5`",
        ),
        (&["--wall-seconds", "5", "--", "/bin/true"], "unknown flag"),
        (
            &["--allow", "/bin/true", "--", "/bin/true"],
            "unknown flag `--allow`",
        ),
        (
            &["--seccomp-fd", "3", "--", "/bin/true"],
            "unknown flag `--seccomp-fd`",
        ),
        (
            &["stray", "--cpu-seconds", "1", "--", "/bin/true"],
            "unexpected argument",
        ),
        (
            &["--cpu-seconds", "1", "--", "true"],
            "not an absolute path",
        ),
    ];
    for (args, message) in table {
        check(LIMIT_RUNNER, "splash-limit-runner", &strs(args), message);
    }
}

#[test]
fn landlock_runner_usage_errors() {
    let table: &[(&[&str], &str)] = &[
        (&[], "missing `--`"),
        (&["--allow", "/bin/true"], "missing `--`"),
        (&["--allow", "/bin/true", "--"], "missing program"),
        (&["--", "/bin/true"], "no `--allow` path given"),
        (
            &["--allow", "/bin/true", "--", "/bin/false"],
            "not one of the `--allow` paths",
        ),
        (
            &["--allow", "/bin/true", "--", "/bin/./true"],
            "not one of the `--allow` paths",
        ),
        (
            &[
                "--allow",
                "/bin/true",
                "--allow",
                "/bin/true",
                "--",
                "/bin/true",
            ],
            "more than once",
        ),
        (
            &["--allow", "bin/true", "--", "bin/true"],
            "is not absolute",
        ),
        (&["--allow", "/", "--", "/"], "root directory"),
        (
            &["--allow", "/bin/../bin/true", "--", "/bin/../bin/true"],
            "`..` component",
        ),
        (
            &["--allow", "/bin/./true", "--", "/bin/./true"],
            "`..` component",
        ),
        (
            &["--allow", "/bin//true", "--", "/bin//true"],
            "empty component",
        ),
        (
            &["--allow", "/bin/true/", "--", "/bin/true/"],
            "empty component",
        ),
        (&["--allow"], "needs a value"),
        (
            &[
                "--cpu-seconds",
                "1",
                "--allow",
                "/bin/true",
                "--",
                "/bin/true",
            ],
            "unknown flag `--cpu-seconds`",
        ),
        (
            &[
                "--allow",
                "/bin/true",
                "--seccomp-fd",
                "2",
                "--",
                "/bin/true",
            ],
            "standard stream",
        ),
        (
            &[
                "--allow",
                "/bin/true",
                "--seccomp-fd",
                "x",
                "--",
                "/bin/true",
            ],
            "not a decimal number",
        ),
        (
            &[
                "--allow",
                "/bin/true",
                "--seccomp-fd",
                "4294967296",
                "--",
                "/bin/true",
            ],
            "too large",
        ),
        (
            &[
                "--allow",
                "/bin/true",
                "--seccomp-fd",
                "5",
                "--seccomp-fd",
                "6",
                "--",
                "/bin/true",
            ],
            "more than once",
        ),
    ];
    for (args, message) in table {
        check(
            LANDLOCK_RUNNER,
            "splash-landlock-runner",
            &strs(args),
            message,
        );
    }
    // 34 paths are accepted by the parser (the run then fails in setup on
    // the missing files); 35 are a usage error.
    let mut args = many_allows(35);
    args.extend(["--".to_owned(), "/nonexistent/p0".to_owned()]);
    check(
        LANDLOCK_RUNNER,
        "splash-landlock-runner",
        &args,
        "more than 34",
    );
    let mut args = many_allows(34);
    args.extend(["--".to_owned(), "/nonexistent/p0".to_owned()]);
    let out = output(Command::new(LANDLOCK_RUNNER).args(&args));
    assert_eq!(out.status.code(), Some(71), "{}", stderr(&out));
}

#[test]
fn combined_runner_usage_errors() {
    let table: &[(&[&str], &str)] = &[
        (&[], "missing `--`"),
        (&["--", "/bin/true"], "nothing selected"),
        (&["--cpu-seconds", "1", "--"], "missing program"),
        (
            &["--cpu-seconds", "0", "--", "/bin/true"],
            "must not be zero",
        ),
        (
            &["--process-count", "18446744073709551615", "--", "/bin/true"],
            "unbounded",
        ),
        (
            &[
                "--cpu-seconds",
                "1",
                "--allow",
                "/bin/true",
                "--",
                "/bin/false",
            ],
            "not one of the `--allow` paths",
        ),
        (
            &[
                "--cpu-seconds",
                "1",
                "--cpu-seconds",
                "2",
                "--",
                "/bin/true",
            ],
            "more than once",
        ),
        (&["--seccomp-fd", "0", "--", "/bin/true"], "standard stream"),
        (&["--bogus", "--", "/bin/true"], "unknown flag `--bogus`"),
        (&["--allow", "/a/../b", "--", "/a/../b"], "`..` component"),
    ];
    for (args, message) in table {
        check(RUNNER, "splash-runner", &strs(args), message);
    }
}
