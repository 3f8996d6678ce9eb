//! What std's setup for `main` does and `splashc` relies on, checked on the
//! built binary.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn splashc() -> &'static str {
    env!("CARGO_BIN_EXE_splashc")
}

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies/demo.splashpol")
}

/// `splashc lsp` started through `sh` with `redirect` applied, its stdin a
/// pipe this test holds (so it waits for input); the targets of its
/// descriptors 1 and 2, read from `/proc` while it runs.
fn lsp_descriptors(redirect: &str) -> [Option<PathBuf>; 2] {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("exec \"$0\" lsp {redirect}"))
        .arg(splashc())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn sh");
    let fd = |n: u32| std::fs::read_link(format!("/proc/{}/fd/{n}", child.id())).ok();
    // Wait until the exec happened and the entry point ran (the language
    // server then blocks reading its stdin).
    let started = Instant::now();
    while std::fs::read_link(format!("/proc/{}/exe", child.id()))
        .is_ok_and(|exe| !exe.ends_with("splashc"))
        && started.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(100));
    let seen = [fd(1), fd(2)];
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();
    seen
}

/// Closed standard streams are reopened on `/dev/null` before anything
/// runs, so a file `splashc` opens never becomes its stdout or stderr.
#[test]
fn closed_standard_streams_are_reopened_on_dev_null() {
    let dev_null = Some(PathBuf::from("/dev/null"));
    assert_eq!(lsp_descriptors(">&- 2>&-"), [dev_null.clone(), dev_null]);
    // Control: streams that are open (pipes here) are left as they are.
    let open = lsp_descriptors("");
    assert!(
        open.iter().all(|t| t
            .as_ref()
            .is_some_and(|t| t.to_string_lossy().starts_with("pipe:"))),
        "{open:?}"
    );
}

/// A write to a pipe whose reader is gone is an error the command reports,
/// not death by `SIGPIPE`.
#[test]
fn a_closed_pipe_is_an_error_not_a_signal() {
    // The reader is closed before the command starts, so its first write
    // to stdout finds no reader.
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = Command::new(splashc())
        .args(["emit", "--argv"])
        .arg(demo())
        .stdout(writer)
        .output()
        .expect("run splashc");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.signal(),
        None,
        "killed by a signal: {:?}",
        out.status
    );
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("Broken pipe"), "{stderr}");
}
