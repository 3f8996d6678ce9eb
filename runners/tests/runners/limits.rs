//! Resource limits as the executed program sees them, and as the kernel
//! enforces them.

use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use crate::common::{
    LIMIT_RUNNER, RUNNER, limit_row, open_scratch_dir, output, programs, require_host, scratch_dir,
    stderr, stdout,
};

const ALL_LIMITS: [&str; 10] = [
    "--cpu-seconds",
    "7",
    "--address-space-bytes",
    "1073741824",
    "--process-count",
    "321",
    "--open-files",
    "77",
    "--file-size-bytes",
    "1048576",
];

const EXPECTED: [(&str, &str); 6] = [
    ("Max cpu time", "7"),
    ("Max address space", "1073741824"),
    ("Max processes", "321"),
    ("Max open files", "77"),
    ("Max file size", "1048576"),
    ("Max core file size", "0"),
];

#[test]
fn limits_are_visible_in_the_program_as_soft_and_hard() {
    let p = programs();
    for runner in [LIMIT_RUNNER, RUNNER] {
        let out =
            output(
                Command::new(runner)
                    .args(ALL_LIMITS)
                    .args(["--", &p.cat, "/proc/self/limits"]),
            );
        assert!(out.status.success(), "{runner}: {}", stderr(&out));
        let limits = stdout(&out);
        for (row, value) in EXPECTED {
            assert_eq!(
                limit_row(&limits, row),
                (value.to_owned(), value.to_owned()),
                "{runner}: {row}"
            );
        }
    }
    // Control: without the runner the same program sees other values.
    let out = output(Command::new(&p.cat).arg("/proc/self/limits"));
    let limits = stdout(&out);
    for (row, value) in &EXPECTED[..5] {
        assert_ne!(
            limit_row(&limits, row),
            ((*value).to_owned(), (*value).to_owned()),
            "control {row}"
        );
    }
}

#[test]
fn only_selected_limits_change() {
    let p = programs();
    let control = stdout(&output(Command::new(&p.cat).arg("/proc/self/limits")));
    let out = output(Command::new(LIMIT_RUNNER).args([
        "--open-files",
        "50",
        "--",
        &p.cat,
        "/proc/self/limits",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let limits = stdout(&out);
    assert_eq!(
        limit_row(&limits, "Max open files"),
        ("50".into(), "50".into())
    );
    assert_eq!(
        limit_row(&limits, "Max core file size"),
        ("0".into(), "0".into())
    );
    for row in [
        "Max cpu time",
        "Max address space",
        "Max processes",
        "Max file size",
    ] {
        assert_eq!(limit_row(&limits, row), limit_row(&control, row), "{row}");
    }
}

#[test]
fn file_size_limit_stops_an_oversize_write() {
    let p = programs();
    let scratch = scratch_dir("fsize");
    let dir = scratch.path();
    let script = format!("{} -c 2097152 /dev/zero > \"$1\"", p.head);
    for (limit, should_pass) in [("1048576", false), ("4194304", true)] {
        let file = dir.join(format!("out-{limit}"));
        let out = output(Command::new(LIMIT_RUNNER).args([
            "--file-size-bytes",
            limit,
            "--",
            &p.dash,
            "-c",
            &script,
            "sh",
            &file.to_string_lossy(),
        ]));
        let written = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        if should_pass {
            // Control: a larger limit lets the same write complete.
            assert!(out.status.success(), "control: {}", stderr(&out));
            assert_eq!(written, 2_097_152);
        } else {
            // dash reports the head killed by SIGXFSZ as 128 + 25.
            assert_eq!(
                out.status.code(),
                Some(128 + libc::SIGXFSZ),
                "{:?}: {}",
                out.status,
                stderr(&out)
            );
            assert_eq!(written, 1_048_576, "the file stops at the limit");
        }
    }
}

#[test]
fn cpu_limit_kills_a_busy_loop() {
    let p = programs();
    let out = output(Command::new(LIMIT_RUNNER).args([
        "--cpu-seconds",
        "1",
        "--",
        &p.dash,
        "-c",
        "while :; do :; done",
    ]));
    let signal = out.status.signal();
    assert!(
        signal == Some(libc::SIGXCPU) || signal == Some(libc::SIGKILL),
        "expected SIGXCPU or SIGKILL, got {:?}",
        out.status
    );
    // Control: a bounded loop under the same limit completes.
    let out = output(Command::new(LIMIT_RUNNER).args([
        "--cpu-seconds",
        "1",
        "--",
        &p.dash,
        "-c",
        "i=0; while [ $i -lt 1000 ]; do i=$((i+1)); done",
    ]));
    assert!(
        out.status.success(),
        "control: {:?} {}",
        out.status,
        stderr(&out)
    );
}

/// Starts 20 background `sleep`s and prints `forked all`; dash gives up
/// with "Cannot fork" when the process limit is reached.
fn fork_many(sleep: &str) -> String {
    format!("i=0; while [ $i -lt 20 ]; do {sleep} 1 & i=$((i+1)); done; echo forked all; wait")
}

fn setpriv_available() -> bool {
    std::path::Path::new("/usr/bin/setpriv").is_file()
        && output(Command::new("/usr/bin/setpriv").args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/bin/true",
        ]))
        .status
        .success()
}

#[test]
fn process_count_holds_for_an_unprivileged_identity() {
    if !require_host(
        setpriv_available(),
        "`setpriv` and the ability to switch to uid 65534",
    ) {
        return;
    }
    let p = programs();
    // The scratch directory is the working directory of the unprivileged
    // run and holds a copy of the runner, so the build directory need not be
    // reachable by uid 65534.
    let scratch = open_scratch_dir("nproc");
    let dir = scratch.path();
    let runner = dir.join("splash-limit-runner");
    std::fs::copy(LIMIT_RUNNER, &runner).expect("copy the runner");
    let runner = runner.to_string_lossy().into_owned();
    let run = |count: &str| {
        output(
            Command::new("/usr/bin/setpriv")
                .current_dir(dir)
                .args(["--reuid=65534", "--regid=65534", "--clear-groups", &runner])
                .args([
                    "--process-count",
                    count,
                    "--",
                    &p.dash,
                    "-c",
                    &fork_many(&p.sleep),
                ]),
        )
    };
    let out = run("5");
    assert!(
        !out.status.success(),
        "limited run succeeded: {}",
        stdout(&out)
    );
    assert!(!stdout(&out).contains("forked all"), "{}", stdout(&out));
    assert!(stderr(&out).contains("Cannot fork"), "{}", stderr(&out));
    // Control: a generous limit for the same identity lets every fork happen.
    let out = run("200");
    assert!(out.status.success(), "control: {}", stderr(&out));
    assert!(stdout(&out).contains("forked all"));
}

/// Documented non-guarantee: `RLIMIT_NPROC` is not enforced for real UID 0
/// (or `CAP_SYS_ADMIN`/`CAP_SYS_RESOURCE`). The limit is set, but root
/// forks past it.
#[test]
fn process_count_does_not_hold_for_root() {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    let is_root = status
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .is_some_and(|l| l.split_whitespace().nth(1) == Some("0"));
    if !require_host(
        is_root,
        "root (to show that `RLIMIT_NPROC` does not bind uid 0)",
    ) {
        return;
    }
    let p = programs();
    let out = output(Command::new(LIMIT_RUNNER).args([
        "--process-count",
        "2",
        "--",
        &p.dash,
        "-c",
        &format!("{}; {} /proc/self/limits", fork_many(&p.sleep), p.cat),
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("forked all"), "{text}");
    assert_eq!(limit_row(&text, "Max processes"), ("2".into(), "2".into()));
}

#[test]
fn an_impossible_limit_is_a_setup_error() {
    // RLIMIT_NOFILE above the kernel's `fs.nr_open` ceiling cannot be set.
    let nr_open: u64 = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1 << 20);
    let p = programs();
    let out = output(Command::new(LIMIT_RUNNER).args([
        "--open-files",
        &(nr_open + 1).to_string(),
        "--",
        &p.truth,
    ]));
    assert_eq!(out.status.code(), Some(71), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("failed to set `RLIMIT_NOFILE`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn exec_failures_have_their_own_codes() {
    let out =
        output(Command::new(LIMIT_RUNNER).args(["--open-files", "9", "--", "/nonexistent/x"]));
    assert_eq!(out.status.code(), Some(127), "{}", stderr(&out));
    let out = output(Command::new(LIMIT_RUNNER).args(["--open-files", "9", "--", "/etc/passwd"]));
    assert_eq!(out.status.code(), Some(126), "{}", stderr(&out));
}
