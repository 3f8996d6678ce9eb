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

#[test]
fn the_proc_fallback_is_complete_when_close_range_is_missing() {
    if !require_host(
        std::path::Path::new("/usr/bin/strace").is_file(),
        "`strace` (to show the fallback path was taken)",
    ) {
        return;
    }
    let p = programs();
    let dir = scratch_dir("fallback");
    // A filter that makes close_range fail with ENOSYS and allows the rest,
    // installed by an outer `splash-runner` for everything below it.
    let enosys = bpf::program(
        &[(
            libc::SYS_close_range,
            bpf::RET_ERRNO | u32::try_from(libc::ENOSYS).expect("errno"),
        )],
        bpf::RET_ALLOW,
    );
    let filter = dir.join("enosys");
    std::fs::write(&filter, enosys).expect("write");
    let trace = dir.join("trace");
    let probe = fd_probe_script();
    // Inside the filter, bash opens descriptors 7 and 200 without
    // close-on-exec and executes the limit runner under strace.
    let inner = format!(
        "exec 7</etc/passwd 200</etc/passwd; exec /usr/bin/strace -qq -o {trace} -e trace=close_range,getdents64,fcntl {LIMIT_RUNNER} --open-files 64 -- {dash} -c \"$1\"",
        trace = trace.display(),
        dash = p.dash,
    );
    let out = output(&mut with_fds(
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
            &probe,
        ],
    ));
    let traced = std::fs::read_to_string(&trace).unwrap_or_default();
    assert!(
        out.status.success(),
        "{:?} {} trace: {traced}",
        out.status,
        stderr(&out)
    );
    assert!(
        traced.contains("close_range(3, 4294967295, CLOSE_RANGE_CLOEXEC) = -1 ENOSYS"),
        "{traced}"
    );
    assert!(traced.contains("getdents64("), "{traced}");
    assert!(traced.contains("fcntl(7, F_SETFD, FD_CLOEXEC)"), "{traced}");
    assert!(
        traced.contains("fcntl(200, F_SETFD, FD_CLOEXEC)"),
        "{traced}"
    );
    assert_eq!(listed(&out), Vec::<u32>::new(), "{}", stdout(&out));
    let _ = std::fs::remove_dir_all(dir);
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
