//! The Landlock executable allowlist against the real kernel.

use std::process::Command;

use crate::common::{
    LANDLOCK_RUNNER, LIMIT_RUNNER, RUNNER, elf_interpreter, landlock_available, limit_row, output,
    programs, require_host, scratch_dir, stderr, stdout,
};

fn allow_args(paths: &[&str]) -> Vec<String> {
    paths
        .iter()
        .flat_map(|p| ["--allow".to_owned(), (*p).to_owned()])
        .collect()
}

fn landlock() -> bool {
    require_host(landlock_available(), "Landlock")
}

#[test]
fn an_unlisted_program_cannot_be_executed() {
    if !landlock() {
        return;
    }
    let p = programs();
    let script = format!("{}; echo status=$?", p.truth);
    for runner in [LANDLOCK_RUNNER, RUNNER] {
        // Only dash (and its loader) is listed: dash runs, `true` does not.
        let out = output(
            Command::new(runner)
                .args(allow_args(&[&p.dash, &p.loader]))
                .args(["--", &p.dash, "-c", &script]),
        );
        assert!(out.status.success(), "{runner}: {}", stderr(&out));
        assert_eq!(stdout(&out).trim(), "status=126", "{runner}");
        assert!(
            stderr(&out).contains("Permission denied"),
            "{}",
            stderr(&out)
        );
        // Control: with `true` listed as well, the same script runs it.
        let out = output(
            Command::new(runner)
                .args(allow_args(&[&p.dash, &p.loader, &p.truth]))
                .args(["--", &p.dash, "-c", &script]),
        );
        assert_eq!(
            stdout(&out).trim(),
            "status=0",
            "{runner} control: {}",
            stderr(&out)
        );
    }
}

#[test]
fn a_dynamic_program_needs_its_loader_listed() {
    if !landlock() {
        return;
    }
    let p = programs();
    assert_eq!(
        elf_interpreter(&p.truth).as_deref(),
        Some(p.loader.as_str())
    );
    for runner in [LANDLOCK_RUNNER, RUNNER] {
        let out = output(
            Command::new(runner)
                .args(allow_args(&[&p.truth]))
                .args(["--", &p.truth]),
        );
        assert_eq!(out.status.code(), Some(126), "{runner}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("Permission denied (os error 13)"),
            "{}",
            stderr(&out)
        );
        // Control: listing the resolved loader lets it run.
        let out = output(
            Command::new(runner)
                .args(allow_args(&[&p.truth, &p.loader]))
                .args(["--", &p.truth]),
        );
        assert!(out.status.success(), "{runner} control: {}", stderr(&out));
    }
}

#[test]
fn landlock_runner_chains_to_the_limit_runner() {
    if !landlock() {
        return;
    }
    let p = programs();
    // The limit runner as built for tests may be dynamically linked; then
    // its loader must be listed too (a static build needs no loader).
    let mut allowed = vec![LIMIT_RUNNER.to_owned(), p.cat.clone()];
    for interp in [elf_interpreter(LIMIT_RUNNER), elf_interpreter(&p.cat)]
        .into_iter()
        .flatten()
    {
        if !allowed.contains(&interp) {
            allowed.push(interp);
        }
    }
    let allowed_refs: Vec<&str> = allowed.iter().map(String::as_str).collect();
    let out = output(
        Command::new(LANDLOCK_RUNNER)
            .args(allow_args(&allowed_refs))
            .args([
                "--",
                LIMIT_RUNNER,
                "--open-files",
                "33",
                "--",
                &p.cat,
                "/proc/self/limits",
            ]),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        limit_row(&stdout(&out), "Max open files"),
        ("33".into(), "33".into())
    );
    // The same chain from an allowed shell, with the limit runner unlisted:
    // the kernel refuses to execute it.
    let script = format!(
        "{LIMIT_RUNNER} --open-files 33 -- {} /proc/self/limits; echo status=$?",
        p.cat
    );
    let out = output(
        Command::new(LANDLOCK_RUNNER)
            .args(allow_args(&[&p.dash, &p.loader, &p.cat]))
            .args(["--", &p.dash, "-c", &script]),
    );
    assert_eq!(stdout(&out).trim(), "status=126", "{}", stderr(&out));
}

#[test]
fn rules_apply_to_descendants_after_the_runner() {
    if !landlock() {
        return;
    }
    let p = programs();
    // dash (allowed) forks and execs a second dash (allowed), which tries
    // `true` (not allowed): the domain is inherited by every descendant.
    let inner = format!("{}; echo inner=$?", p.truth);
    let script = format!("{} -c '{inner}'", p.dash);
    let out = output(
        Command::new(LANDLOCK_RUNNER)
            .args(allow_args(&[&p.dash, &p.loader]))
            .args(["--", &p.dash, "-c", &script]),
    );
    assert_eq!(stdout(&out).trim(), "inner=126", "{}", stderr(&out));
}

#[test]
fn allowed_files_are_checked_through_the_descriptor() {
    if !landlock() {
        return;
    }
    let p = programs();
    let scratch = scratch_dir("allow-checks");
    let dir = scratch.path();
    let link = dir.join("true-link");
    std::os::unix::fs::symlink(&p.truth, &link).expect("symlink");
    let plain = dir.join("plain");
    std::fs::write(&plain, b"#!/bin/sh\n").expect("write");
    let link = link.to_string_lossy().into_owned();
    let plain = plain.to_string_lossy().into_owned();
    let dir_s = dir.to_string_lossy().into_owned();
    let missing = format!("{dir_s}/missing");
    let cases: [(&str, &str); 4] = [
        (&link, "is a symbolic link"),
        (&plain, "has no execute bit"),
        (&dir_s, "is not a regular file"),
        (&missing, "failed to open allowed executable"),
    ];
    for (bad, message) in cases {
        for runner in [LANDLOCK_RUNNER, RUNNER] {
            let out = output(
                Command::new(runner)
                    .args(allow_args(&[&p.truth, &p.loader, bad]))
                    .args(["--", &p.truth]),
            );
            assert_eq!(
                out.status.code(),
                Some(71),
                "{runner} {bad}: {}",
                stderr(&out)
            );
            assert!(
                stderr(&out).contains(message),
                "{runner} {bad}: {}",
                stderr(&out)
            );
        }
    }
}
