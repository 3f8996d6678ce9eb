//! The close-on-exec sweep: nothing but standard input, output and error
//! reaches the program.

use std::process::Command;

use crate::common::{
    ALL_RUNNERS, LIMIT_RUNNER, RUNNER, bpf, fd_probe_script, landlock_available, output, programs,
    require_host, scratch_dir, stderr, stdout, with_fds,
};

/// The runner-specific flags that make each runner valid for `dash`.
fn flags(name: &str, dash: &str, loader: &str) -> Vec<String> {
    match name {
        "splash-limit-runner" => vec!["--open-files".into(), "64".into()],
        "splash-landlock-runner" => {
            vec![
                "--allow".into(),
                dash.into(),
                "--allow".into(),
                loader.into(),
            ]
        }
        _ => vec!["--open-files".into(), "64".into()],
    }
}

fn listed(out: &std::process::Output) -> Vec<u32> {
    stdout(out)
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

#[test]
fn inherited_descriptors_do_not_reach_the_program() {
    let p = programs();
    let probe = fd_probe_script();
    let hostname = std::path::Path::new("/etc/passwd");
    let fds = [
        (3, hostname),
        (7, hostname),
        (200, hostname),
        (255, hostname),
    ];
    let landlock = require_host(landlock_available(), "Landlock");
    // Control: without a runner, the probe sees every inherited descriptor.
    let out = output(&mut with_fds(&fds, &[&p.dash, "-c", &probe]));
    let seen = listed(&out);
    for fd in [3, 7, 200, 255] {
        assert!(
            seen.contains(&fd),
            "control: {fd} missing from {seen:?}: {}",
            stderr(&out)
        );
    }
    for (name, path) in ALL_RUNNERS {
        if name == "splash-landlock-runner" && !landlock {
            continue;
        }
        let mut argv: Vec<String> = vec![path.into()];
        argv.extend(flags(name, &p.dash, &p.loader));
        argv.extend(["--".into(), p.dash.clone(), "-c".into(), probe.clone()]);
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let out = output(&mut with_fds(&fds, &argv));
        assert!(out.status.success(), "{name}: {}", stderr(&out));
        assert_eq!(listed(&out), Vec::<u32>::new(), "{name}");
    }
}

/// Runs, under a filter installed by an outer `splash-runner` that returns
/// `errno` for each listed syscall, a bash that opens descriptors 7 and 200
/// without close-on-exec and executes the limit runner with the fd probe.
fn under_errno_filter(errors: &[(i64, i32)]) -> std::process::Output {
    let p = programs();
    let scratch = scratch_dir("fallback");
    let dir = scratch.path();
    let rules: Vec<(i64, u32)> = errors
        .iter()
        .map(|&(nr, errno)| (nr, bpf::RET_ERRNO | u32::try_from(errno).expect("errno")))
        .collect();
    let filter = dir.join("filter");
    std::fs::write(&filter, bpf::program(&rules, bpf::RET_ALLOW)).expect("write");
    let inner = format!(
        "exec 7</etc/passwd 200</etc/passwd; exec {LIMIT_RUNNER} --open-files 64 -- {} -c \"$1\"",
        p.dash,
    );

    output(&mut with_fds(
        &[(9, &filter)],
        &[
            RUNNER,
            "--seccomp-fd",
            "9",
            "--",
            "/usr/bin/bash",
            "-c",
            &inner,
            "bash",
            &fd_probe_script(),
        ],
    ))
}

#[test]
fn the_proc_fallback_is_complete_when_close_range_is_missing() {
    // close_range fails with ENOSYS: the runner lists /proc/self/fd and
    // marks every entry; nothing reaches the program.
    let out = under_errno_filter(&[(libc::SYS_close_range, libc::ENOSYS)]);
    assert!(out.status.success(), "{:?} {}", out.status, stderr(&out));
    assert_eq!(listed(&out), Vec::<u32>::new(), "{}", stdout(&out));

    // Proof that the fallback is what ran: with the directory listing
    // failing as well, the runner stops in the fallback, naming it.
    let out = under_errno_filter(&[
        (libc::SYS_close_range, libc::ENOSYS),
        (libc::SYS_getdents64, libc::EPERM),
    ]);
    assert_eq!(
        out.status.code(),
        Some(71),
        "{:?} {}",
        out.status,
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("failed to list `/proc/self/fd` (close_range is unavailable)"),
        "{}",
        stderr(&out)
    );

    // Control: with close_range available, the listing is never needed.
    let out = under_errno_filter(&[(libc::SYS_getdents64, libc::EPERM)]);
    assert!(out.status.success(), "{:?} {}", out.status, stderr(&out));
    assert_eq!(listed(&out), Vec::<u32>::new(), "{}", stdout(&out));

    // An old kernel that knows close_range but not CLOSE_RANGE_CLOEXEC
    // (EINVAL) takes the same complete fallback.
    let out = under_errno_filter(&[(libc::SYS_close_range, libc::EINVAL)]);
    assert!(out.status.success(), "{:?} {}", out.status, stderr(&out));
    assert_eq!(listed(&out), Vec::<u32>::new(), "{}", stdout(&out));
}

#[test]
fn the_fallback_control_sees_the_descriptors() {
    // Control for the fallback test: the same chain without the runner's
    // sweep (dash directly) sees both descriptors.
    let p = programs();
    let probe = fd_probe_script();
    let out = output(Command::new("/usr/bin/bash").args([
        "-c",
        &format!(
            "exec 7</etc/passwd 200</etc/passwd; exec {} -c \"$1\"",
            p.dash
        ),
        "bash",
        &probe,
    ]));
    let seen = listed(&out);
    assert!(
        seen.contains(&7) && seen.contains(&200),
        "{seen:?}: {}",
        stderr(&out)
    );
}
