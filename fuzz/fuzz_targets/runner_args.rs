//! The runners' untrusted inputs: the command lines of the three pre-exec
//! runners and of `splash-cgroup-runner` (`splash_runners::args::parse`,
//! `splash_runners::cgroup::parse`), and the strict seccomp program bytes
//! handed over on `--seccomp-fd` (`splash_runners::filter::decode`).
//!
//! The first input byte picks the parser (its value modulo 5: limit,
//! Landlock, combined, cgroup runner, seccomp program). For the command
//! lines the rest is the argument list after the binary name, arguments
//! separated by NUL bytes as in `/proc/PID/cmdline`.
//!
//! Invariants, besides not panicking:
//! - a refusal is a usage error (exit 64) with a message, a refused program
//!   a data error (exit 65);
//! - an accepted command line obeys the rules the runner relies on (absolute
//!   program equal to `argv[0]`, listed among the `--allow` paths when there
//!   are any, limits non-zero and finite, descriptors 3 or above, the flag
//!   families of the runner kind, the bounds), and its canonical rendering
//!   parses to the same invocation;
//! - a program is accepted exactly when its size is a non-zero multiple of
//!   8 bytes up to 4096 instructions.

#![no_main]

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use libfuzzer_sys::fuzz_target;
use splash_runners::args::{self, Invocation};
use splash_runners::cgroup::{self, CgroupInvocation, MAX_KEEP};
use splash_runners::filter::{self, MAX_INSTRUCTIONS};
use splash_runners::{Failure, MAX_ALLOWED, RunnerKind, exit};

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let kind = match selector % 5 {
        0 => RunnerKind::Limit,
        1 => RunnerKind::Landlock,
        2 => RunnerKind::Combined,
        3 => return cgroup_runner(split(rest)),
        _ => return seccomp_program(rest),
    };
    match args::parse(kind, split(rest)) {
        Ok(invocation) => {
            check_invocation(kind, &invocation);
            let again = args::parse(kind, render(&invocation))
                .unwrap_or_else(|f| panic!("the rendering is refused: {}", f.message));
            assert_eq!(again.limits, invocation.limits);
            assert_eq!(again.allowed, invocation.allowed);
            assert_eq!(again.seccomp_fd, invocation.seccomp_fd);
            assert_eq!(again.program, invocation.program);
            assert_eq!(again.argv, invocation.argv);
        }
        Err(failure) => usage_error(&failure),
    }
});

fn split(bytes: &[u8]) -> Vec<OsString> {
    if bytes.is_empty() {
        return Vec::new();
    }
    bytes
        .split(|&b| b == 0)
        .map(|a| OsString::from_vec(a.to_vec()))
        .collect()
}

fn usage_error(failure: &Failure) {
    assert_eq!(failure.code, exit::USAGE, "{}", failure.message);
    assert!(!failure.message.is_empty());
}

fn check_invocation(kind: RunnerKind, inv: &Invocation) {
    assert_eq!(
        inv.argv.first(),
        Some(&inv.program),
        "argv[0] is the program"
    );
    assert!(
        inv.program.as_bytes().starts_with(b"/"),
        "a relative program"
    );
    assert!(inv.allowed.len() <= MAX_ALLOWED, "too many `--allow` paths");
    for path in &inv.allowed {
        let bytes = path.as_c_str().to_bytes();
        let rest = bytes
            .strip_prefix(b"/")
            .expect("an absolute `--allow` path");
        assert!(
            !rest.is_empty()
                && rest
                    .split(|&b| b == b'/')
                    .all(|c| !matches!(c, b"" | b"." | b"..")),
            "an `--allow` path that is not normalized: {}",
            path.display()
        );
    }
    if !inv.allowed.is_empty() {
        assert!(
            inv.allowed
                .iter()
                .any(|a| a.as_c_str() == inv.program.as_c_str()),
            "the program is not among the `--allow` paths"
        );
    }
    for &value in inv.limits.values() {
        // `RLIM_INFINITY` is all bits set on Linux.
        assert!(value != 0 && value != u64::MAX, "limit {value}");
    }
    if let Some(fd) = inv.seccomp_fd {
        assert!(fd >= 3, "seccomp descriptor {fd}");
    }
    match kind {
        RunnerKind::Limit => {
            assert!(!inv.limits.is_empty());
            assert!(inv.allowed.is_empty() && inv.seccomp_fd.is_none());
        }
        RunnerKind::Landlock => {
            assert!(inv.limits.is_empty());
            assert!(!inv.allowed.is_empty());
        }
        RunnerKind::Combined => {
            assert!(!inv.limits.is_empty() || !inv.allowed.is_empty() || inv.seccomp_fd.is_some())
        }
    }
}

/// The canonical command line of an invocation.
fn render(inv: &Invocation) -> Vec<OsString> {
    let mut out: Vec<OsString> = Vec::new();
    for (limit, value) in &inv.limits {
        out.push(limit.flag().into());
        out.push(value.to_string().into());
    }
    for path in &inv.allowed {
        out.push("--allow".into());
        out.push(path.as_os_str().to_owned());
    }
    if let Some(fd) = inv.seccomp_fd {
        out.push("--seccomp-fd".into());
        out.push(fd.to_string().into());
    }
    out.push("--".into());
    out.extend(
        inv.argv
            .iter()
            .map(|a| OsString::from_vec(a.as_bytes().to_vec())),
    );
    out
}

fn cgroup_runner(arguments: Vec<OsString>) {
    let inv = match cgroup::parse(arguments) {
        Ok(inv) => inv,
        Err(failure) => return usage_error(&failure),
    };
    check_cgroup(&inv);
    let mut line: Vec<OsString> = vec!["--cgroup-fd".into(), inv.cgroup_fd.to_string().into()];
    for fd in &inv.keep {
        line.push("--keep-fd".into());
        line.push(fd.to_string().into());
    }
    line.push("--".into());
    line.extend(
        inv.argv
            .iter()
            .map(|a| std::ffi::OsStr::from_bytes(a.as_bytes()).to_owned()),
    );
    let again =
        cgroup::parse(line).unwrap_or_else(|f| panic!("the rendering is refused: {}", f.message));
    assert_eq!(again.cgroup_fd, inv.cgroup_fd);
    assert_eq!(again.keep, inv.keep);
    assert_eq!(again.program, inv.program);
    assert_eq!(again.argv, inv.argv);
}

fn check_cgroup(inv: &CgroupInvocation) {
    assert_eq!(
        inv.argv.first(),
        Some(&inv.program),
        "argv[0] is the program"
    );
    assert!(
        inv.program.as_bytes().starts_with(b"/"),
        "a relative program"
    );
    assert!(inv.cgroup_fd >= 3, "cgroup descriptor {}", inv.cgroup_fd);
    assert!(inv.keep.len() <= MAX_KEEP, "too many `--keep-fd`");
    for (i, fd) in inv.keep.iter().enumerate() {
        assert!(*fd >= 3, "kept descriptor {fd}");
        assert_ne!(*fd, inv.cgroup_fd, "the cgroup descriptor is also kept");
        assert!(!inv.keep[..i].contains(fd), "descriptor {fd} kept twice");
    }
}

fn seccomp_program(bytes: &[u8]) {
    let valid =
        !bytes.is_empty() && bytes.len() <= MAX_INSTRUCTIONS * 8 && bytes.len().is_multiple_of(8);
    match filter::decode(bytes) {
        Ok(_) => assert!(valid, "a {}-byte program was accepted", bytes.len()),
        Err(failure) => {
            assert!(!valid, "a {}-byte program was refused", bytes.len());
            assert_eq!(failure.code, exit::DATA, "{}", failure.message);
        }
    }
}
