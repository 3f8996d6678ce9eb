//! The strict seccomp handoff through `--seccomp-fd`, installed for real.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;

use crate::common::{
    LANDLOCK_RUNNER, RUNNER, bpf, landlock_available, output, programs, require_host, scratch_dir,
    stderr, with_fds,
};

fn write_program(dir: &Path, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write program");
    path
}

/// Whether this architecture has a test filter (x86_64, aarch64).
fn filter_arch() -> bool {
    require_host(
        cfg!(any(target_arch = "x86_64", target_arch = "aarch64")),
        "a seccomp test filter for this architecture",
    )
}

#[test]
fn strict_filter_without_exit_group_kills_the_program() {
    if !filter_arch() {
        return;
    }
    let p = programs();
    let scratch = scratch_dir("seccomp");
    let dir = scratch.path();
    let without = bpf::true_syscalls_without_exit_group();
    let mut with = without.clone();
    with.push(libc::SYS_exit_group);
    let killing = write_program(dir, "without", &bpf::allowlist(&without));
    let passing = write_program(dir, "with", &bpf::allowlist(&with));

    let mut runs: Vec<(&str, Vec<String>)> = vec![("splash-runner", vec![RUNNER.to_owned()])];
    if require_host(landlock_available(), "Landlock") {
        runs.push((
            "splash-landlock-runner",
            vec![
                LANDLOCK_RUNNER.into(),
                "--allow".into(),
                p.truth.clone(),
                "--allow".into(),
                p.loader.clone(),
            ],
        ));
        runs.push((
            "splash-runner with landlock",
            vec![
                RUNNER.into(),
                "--allow".into(),
                p.truth.clone(),
                "--allow".into(),
                p.loader.clone(),
            ],
        ));
    }
    for (name, prefix) in runs {
        let argv = |_: ()| {
            let mut v: Vec<&str> = prefix.iter().map(String::as_str).collect();
            v.extend(["--seccomp-fd", "9", "--", &p.truth]);
            v
        };
        let out = output(&mut with_fds(&[(9, &killing)], &argv(())));
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGSYS),
            "{name}: expected SIGSYS, got {:?}: {}",
            out.status,
            stderr(&out)
        );
        // Control: the same allowlist plus `exit_group` runs to completion.
        let out = output(&mut with_fds(&[(9, &passing)], &argv(())));
        assert!(
            out.status.success(),
            "{name} control: {:?} {}",
            out.status,
            stderr(&out)
        );
    }
}

#[test]
fn the_program_can_come_through_a_pipe() {
    if !filter_arch() {
        return;
    }
    let p = programs();
    let scratch = scratch_dir("seccomp-pipe");
    let dir = scratch.path();
    let mut with = bpf::true_syscalls_without_exit_group();
    with.push(libc::SYS_exit_group);
    let passing = write_program(dir, "with", &bpf::allowlist(&with));
    let without = write_program(
        dir,
        "without",
        &bpf::allowlist(&bpf::true_syscalls_without_exit_group()),
    );
    // `9< <(cat FILE)` hands over the read end of a pipe.
    let script = "exec \"$2\" --seccomp-fd 9 -- \"$3\" 9< <(/bin/cat \"$1\")";
    let run = |program: &Path| {
        output(
            Command::new("/bin/bash")
                .args(["-c", script, "bash"])
                .arg(program)
                .args([RUNNER, &p.truth]),
        )
    };
    let out = run(&without);
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGSYS),
        "{:?} {}",
        out.status,
        stderr(&out)
    );
    let out = run(&passing);
    assert!(
        out.status.success(),
        "control: {:?} {}",
        out.status,
        stderr(&out)
    );
}

#[test]
fn malformed_programs_and_descriptors_are_rejected() {
    let p = programs();
    let scratch = scratch_dir("seccomp-bad");
    let dir = scratch.path();
    let empty = write_program(dir, "empty", &[]);
    let ragged = write_program(dir, "ragged", &[0; 12]);
    let oversize = write_program(dir, "oversize", &vec![0; 4097 * 8]);
    let cases: [(&Path, i32, &str); 4] = [
        (&empty, 65, "is empty"),
        (&ragged, 65, "not a whole number"),
        (&oversize, 65, "more than 4096 instructions"),
        (dir, 71, "neither a pipe nor a regular file"),
    ];
    for (file, code, message) in cases {
        let out = output(&mut with_fds(
            &[(9, file)],
            &[RUNNER, "--seccomp-fd", "9", "--", &p.truth],
        ));
        assert_eq!(out.status.code(), Some(code), "{file:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(message), "{file:?}: {}", stderr(&out));
    }
    // A descriptor that is not open.
    let out = output(Command::new(RUNNER).args(["--seccomp-fd", "42", "--", &p.truth]));
    assert_eq!(out.status.code(), Some(71), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("seccomp descriptor `42` is not usable"),
        "{}",
        stderr(&out)
    );
    // A program the kernel refuses (a jump past the end) fails at install.
    let mut bad = Vec::new();
    bad.extend(0x15_u16.to_ne_bytes()); // jeq
    bad.extend([5, 5]);
    bad.extend(0_u32.to_ne_bytes());
    let bad = write_program(dir, "invalid", &bad);
    let out = output(&mut with_fds(
        &[(9, &bad)],
        &[RUNNER, "--seccomp-fd", "9", "--", &p.truth],
    ));
    assert_eq!(out.status.code(), Some(71), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("failed to install the seccomp filter"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn the_program_descriptor_does_not_reach_the_program() {
    let p = programs();
    let scratch = scratch_dir("seccomp-fd-closed");
    let dir = scratch.path();
    let allow_all = write_program(dir, "allow", &bpf::program(&[], bpf::RET_ALLOW));
    let script = "[ -e /proc/self/fd/9 ] && echo open || echo closed";
    let out = output(&mut with_fds(
        &[(9, &allow_all)],
        &[RUNNER, "--seccomp-fd", "9", "--", &p.dash, "-c", script],
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(crate::common::stdout(&out).trim(), "closed");
}

/// The program `splash_seccomp` compiles for a strict allowlist is accepted
/// by the runner as is: same encoding on both sides of the handoff.
#[test]
fn a_compiled_strict_allowlist_is_accepted() {
    let Some(arch) = splash_seccomp::Arch::host() else {
        require_host(false, "an architecture `splash_seccomp` compiles for");
        return;
    };
    let p = programs();
    let scratch = scratch_dir("seccomp-compiled");
    let dir = scratch.path();
    let names = [
        "execve",
        "brk",
        "mmap",
        "munmap",
        "mprotect",
        "arch_prctl",
        "access",
        "faccessat",
        "openat",
        "newfstatat",
        "fstat",
        "read",
        "pread64",
        "close",
        "set_tid_address",
        "set_robust_list",
        "rseq",
        "prlimit64",
        "getrandom",
    ];
    let compile = |with_exit_group: bool| {
        let name = |n: &str| splash_seccomp::SyscallName::new(n).expect("known syscall");
        let mut set: std::collections::BTreeSet<_> = names
            .iter()
            .filter(|n| splash_seccomp::syscall_number(arch, n).is_some())
            .map(|n| name(n))
            .collect();
        if with_exit_group {
            set.insert(name("exit_group"));
        }
        splash_seccomp::compile(&splash_seccomp::Profile::StrictAllowlist(set), arch)
            .expect("compile")
            .to_bytes()
    };
    let killing = write_program(dir, "without", &compile(false));
    let passing = write_program(dir, "with", &compile(true));
    let argv = [RUNNER, "--seccomp-fd", "9", "--", p.truth.as_str()];
    let out = output(&mut with_fds(&[(9, &killing)], &argv));
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGSYS),
        "{:?} {}",
        out.status,
        stderr(&out)
    );
    let out = output(&mut with_fds(&[(9, &passing)], &argv));
    assert!(
        out.status.success(),
        "control: {:?} {}",
        out.status,
        stderr(&out)
    );
}
