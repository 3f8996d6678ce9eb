//! Inputs that must neither hang nor exhaust `splashc`: every file it reads
//! is a regular file of bounded size, refused promptly with the reason
//! otherwise (`docs/cli.md`, "Input bounds").

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The bound on policy files (`splash_runtime::launch::MAX_POLICY_BYTES`).
const MAX_POLICY_BYTES: usize = 1024 * 1024;
/// The bound on manifest files.
const MAX_MANIFEST_BYTES: usize = 4 * 1024 * 1024;

/// Runs `splashc ARGS` with `stdin` as its standard input and fails the
/// test, killing the process, when it takes more than 20 s.
fn splashc_with(args: &[&str], stdin: Stdio) -> (Output, Duration) {
    let started = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_splashc"))
        .args(args)
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn splashc");
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(out) => (out.expect("splashc output"), started.elapsed()),
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            panic!("`splashc {}` did not finish within 20 s", args.join(" "));
        }
    }
}

fn splashc(args: &[&str]) -> (Output, Duration) {
    splashc_with(args, Stdio::null())
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../policies/demo.splashpol")
}

struct Inputs {
    _dir: tempfile::TempDir,
    fifo: PathBuf,
    directory: PathBuf,
    oversized: PathBuf,
    at_bound: PathBuf,
}

/// A FIFO nobody writes to, a directory, a policy one byte over the bound
/// and a valid policy exactly at it.
fn inputs() -> Inputs {
    let dir = tempfile::Builder::new()
        .prefix("splashc-inputs-")
        .tempdir()
        .expect("temporary directory");
    let fifo = dir.path().join("policy.fifo");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(made.success(), "mkfifo failed");
    let directory = dir.path().join("policy.d");
    std::fs::create_dir(&directory).expect("directory");
    let source = std::fs::read_to_string(demo()).expect("demo policy");
    // Comment lines pad the policy to exactly the bound.
    let mut padded = source.clone();
    while padded.len() < MAX_POLICY_BYTES {
        let room = MAX_POLICY_BYTES - padded.len();
        let line = "#".repeat(room.min(100) - 1);
        padded.push_str(&line);
        padded.push('\n');
    }
    assert_eq!(padded.len(), MAX_POLICY_BYTES);
    let at_bound = dir.path().join("at-bound.splashpol");
    std::fs::write(&at_bound, &padded).expect("write");
    padded.push('\n');
    let oversized = dir.path().join("oversized.splashpol");
    std::fs::write(&oversized, &padded).expect("write");
    Inputs {
        _dir: dir,
        fifo,
        directory,
        oversized,
        at_bound,
    }
}

fn shown(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

#[test]
fn check_refuses_what_is_not_a_bounded_regular_file_promptly() {
    let i = inputs();
    let cases = [
        (
            i.fifo.as_path(),
            "is a named pipe (FIFO), not a regular file",
        ),
        (
            Path::new("/dev/zero"),
            "is a character device, not a regular file",
        ),
        (i.directory.as_path(), "is a directory, not a regular file"),
        (
            i.oversized.as_path(),
            "holds more than 1 MiB (1048576 bytes), the most this input may hold",
        ),
    ];
    for (path, reason) in cases {
        let (out, took) = splashc(&["check", shown(path)]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", path.display());
        assert!(
            err.contains(&format!("cannot read `{}`: it {reason}", path.display())),
            "{}: {err}",
            path.display()
        );
        assert!(
            took < Duration::from_secs(10),
            "{}: {took:?}",
            path.display()
        );

        let (out, _) = splashc(&["check", "--format", "json", shown(path)]);
        assert_eq!(out.status.code(), Some(2));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let error = doc["files"][0]["io_error"].as_str().expect("io_error");
        assert!(error.contains(reason), "{error}");
    }
    // Control: a normal policy, and one exactly at the bound, still check.
    for path in [demo(), i.at_bound.clone()] {
        let (out, _) = splashc(&["check", shown(&path)]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
}

#[test]
fn every_command_reads_its_files_within_the_same_bounds() {
    let i = inputs();
    let fifo = shown(&i.fifo);
    let over = shown(&i.oversized);
    let demo = demo();
    let demo = shown(&demo);
    let runs: [&[&str]; 9] = [
        &["emit", fifo],
        &["emit", "/dev/zero"],
        &["compile", over, "-o", "/dev/null"],
        &["explain", "--plan-only", fifo],
        &["diff", demo, fifo],
        &["doctor", "/dev/zero"],
        &["run", fifo],
        &["fmt", "--check", fifo],
        &["emit", demo, "--manifest", fifo],
    ];
    for args in runs {
        let (out, took) = splashc(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("not a regular file") || err.contains("the most this input may hold"),
            "{args:?}: {err}"
        );
        assert!(took < Duration::from_secs(10), "{args:?}: {took:?}");
    }

    // A manifest over its own bound.
    let manifest = i.directory.join("big.json");
    std::fs::write(&manifest, vec![b' '; MAX_MANIFEST_BYTES + 1]).expect("write");
    let (out, _) = splashc(&["emit", demo, "--manifest", shown(&manifest)]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("more than 4 MiB"), "{err}");
}

#[test]
fn fmt_bounds_standard_input() {
    // `/dev/zero` as standard input never ends: refused at the bound.
    let zero = std::fs::File::open("/dev/zero").expect("/dev/zero");
    let (out, took) = splashc_with(&["fmt", "-"], Stdio::from(zero));
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot read `<stdin>`: it holds more than 1 MiB"),
        "{err}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");

    // Control: a policy on standard input is formatted.
    let mut child = Command::new(env!("CARGO_BIN_EXE_splashc"))
        .args(["fmt", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let source = std::fs::read(demo()).expect("demo");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&source)
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(out.stdout, source);
}
