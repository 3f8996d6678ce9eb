//! `splash-runner` with every layer at once, as the launch plan emits it:
//! limits, then `--allow`, then `--seccomp-fd`.

use std::process::Command;

use crate::common::{
    RUNNER, bpf, landlock_available, limit_row, output, programs, require_host, scratch_dir,
    stderr, stdout, with_fds,
};

/// The value of one `/proc/self/status` field.
fn status_field<'a>(status: &'a str, name: &str) -> Option<&'a str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(str::trim)
}

#[test]
fn every_layer_in_one_exec() {
    if !require_host(landlock_available(), "Landlock") {
        return;
    }
    let p = programs();
    let scratch = scratch_dir("one-hop");
    let dir = scratch.path();
    // A permissive filter (only `uname` fails): `Seccomp: 2` in the
    // program's `/proc/self/status` shows that a filter is in force.
    let filter = dir.join("filter");
    std::fs::write(
        &filter,
        bpf::program(
            &[(
                libc::SYS_uname,
                bpf::RET_ERRNO | u32::try_from(libc::EPERM).expect("errno"),
            )],
            bpf::RET_ALLOW,
        ),
    )
    .expect("write");
    let script = format!(
        "{cat} /proc/self/limits /proc/self/status; {truth}; echo true-status=$?",
        cat = p.cat,
        truth = p.truth,
    );
    let out = output(&mut with_fds(
        &[(9, &filter)],
        &[
            RUNNER,
            "--cpu-seconds",
            "9",
            "--open-files",
            "40",
            "--allow",
            &p.dash,
            "--allow",
            &p.loader,
            "--allow",
            &p.cat,
            "--seccomp-fd",
            "9",
            "--",
            &p.dash,
            "-c",
            &script,
        ],
    ));
    assert!(out.status.success(), "{:?} {}", out.status, stderr(&out));
    let text = stdout(&out);
    assert_eq!(limit_row(&text, "Max cpu time"), ("9".into(), "9".into()));
    assert_eq!(
        limit_row(&text, "Max open files"),
        ("40".into(), "40".into())
    );
    assert_eq!(
        limit_row(&text, "Max core file size"),
        ("0".into(), "0".into())
    );
    assert_eq!(status_field(&text, "NoNewPrivs"), Some("1"), "{text}");
    assert_eq!(status_field(&text, "Seccomp"), Some("2"), "{text}");
    assert!(
        text.contains("true-status=126"),
        "unlisted `true` must be refused: {text}"
    );

    // Control: the same script without the runner.
    let out = output(Command::new(&p.dash).args(["-c", &script]));
    let text = stdout(&out);
    assert_eq!(status_field(&text, "NoNewPrivs"), Some("0"), "{text}");
    assert_eq!(status_field(&text, "Seccomp"), Some("0"), "{text}");
    assert!(text.contains("true-status=0"), "{text}");
}

#[test]
fn the_environment_is_passed_through_unchanged() {
    let p = programs();
    let out = output(
        Command::new(RUNNER)
            .env_clear()
            .env("ONLY_THIS", "value with spaces")
            .args(["--open-files", "32", "--", &p.env]),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "ONLY_THIS=value with spaces\n");
}
