//! The whole `splashc run` process against raw Bubblewrap, paired in one run.
//!
//! - `splashc run`: one process that checks the demo policy, activates a
//!   generated manifest, lowers, pins, compiles the seccomp filter, binds
//!   (reading the options of the pinned bwrap), spawns, opens the authenticated session,
//!   makes one `probe.echo` call, closes and reaps — timed from process
//!   start to its exit;
//! - raw `bwrap`: the same mounts and the same probe worker, started from
//!   this process with a hand-written argument list; this process writes the
//!   bootstrap, opens the session, makes the same call and closes — timed
//!   from spawn until Bubblewrap exits.
//!
//! The policy is the demo policy's controls with the probe copied to a
//! temporary directory. Rounds are interleaved, so load drift affects both.
//!
//! Run: `cargo build --release -p splashc -p splash-probe && cargo bench -p splashc --bench run`.
//! Without `--bench` (as under `cargo test`) one round runs as a smoke test.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use splash_protocol::{
    CapabilityManifest, Grant, GrantFormat, HostSession, PrivatePipeWorkerBootstrap, SessionKey,
    Token,
};

const BWRAP: &str = "/usr/bin/bwrap";

/// `target/<profile>/NAME`, preferring the release build.
fn built(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let target = exe.parent()?.parent()?.parent()?;
    ["release", "debug"]
        .iter()
        .map(|profile| target.join(profile).join(name))
        .find(|p| p.is_file())
}

fn system_dirs() -> Vec<&'static str> {
    ["/usr", "/lib", "/lib64"]
        .into_iter()
        .filter(|d| Path::new(d).exists())
        .collect()
}

/// The demo policy's controls, with the probe in `dir`.
fn policy(dir: &Path) -> String {
    let mut mounts = String::new();
    for d in system_dirs() {
        mounts.push_str(&format!("  runtime \"{d}\" at \"{d}\"\n"));
    }
    format!(
        r#"splashpol 1
policy "bench-run" {{
  bubblewrap "{BWRAP}"
  worker "/opt/probe/splash-probe"
  runtime "{dir}" at "/opt/probe"
{mounts}
  root "scratch" tmpfs at "/workspace/scratch" size 8 MiB
  tmp private size 16 MiB
  writes bounded
  user-namespaces none
  pin mounts, executables
  seccomp deny-known-escape-surface
}}
"#,
        dir = dir.display()
    )
}

fn splashc_run(splashc: &Path, policy: &Path) -> Duration {
    let start = Instant::now();
    let out = Command::new(splashc)
        .arg("run")
        .arg(policy)
        .args(["--invoke", "probe.echo", "--input", r#"{"input":1}"#])
        .stdin(Stdio::null())
        .output()
        .expect("run splashc");
    let elapsed = start.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    elapsed
}

fn raw(dir: &Path) -> Duration {
    let mut grant = Grant::new(Token::new("probe.echo").expect("token"), GrantFormat::Json);
    grant.max_calls = 1;
    let manifest = CapabilityManifest {
        protocol_version: 5,
        session_id: Token::new("raw-1").expect("token"),
        grants: vec![grant],
    };
    let start = Instant::now();
    let key = SessionKey::generate().expect("key");
    let boot = PrivatePipeWorkerBootstrap::new(manifest.session_id.clone(), key.clone());
    let mut command = Command::new(BWRAP);
    command.args([
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--cap-drop",
        "ALL",
        "--clearenv",
        "--new-session",
        "--die-with-parent",
        "--as-pid-1",
        "--chdir",
        "/",
        "--proc",
        "/proc",
        "--remount-ro",
        "/proc",
        "--dev",
        "/dev",
    ]);
    // The plan re-binds these device nodes (private ones for a root
    // launch); the same number of mounts here.
    for node in ["null", "zero", "full", "random", "urandom", "tty"] {
        let path = format!("/dev/{node}");
        command.args(["--dev-bind", &path, &path]);
    }
    command.args(["--size", "16777216", "--tmpfs", "/tmp"]);
    command.arg("--ro-bind").arg(dir).arg("/opt/probe");
    for d in system_dirs() {
        command.args(["--ro-bind", d, d]);
    }
    command.args(["--size", "8388608", "--tmpfs", "/workspace/scratch"]);
    // Pinned executables: the worker is bound over itself.
    command
        .arg("--ro-bind")
        .arg(dir.join("splash-probe"))
        .arg("/opt/probe/splash-probe");
    command.args([
        "--remount-ro",
        "/dev",
        "--remount-ro",
        "/",
        "--",
        "/opt/probe/splash-probe",
    ]);
    let mut child = command
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn raw bwrap");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    boot.write_to(&mut stdin).expect("bootstrap");
    let mut session = HostSession::open(manifest, key, stdin, stdout).expect("open");
    session
        .invoke("probe.echo", json!({"input": 1}))
        .expect("echo");
    session.close().expect("close");
    child.wait().expect("reap");
    start.elapsed()
}

fn quantile(samples: &[Duration], q: f64) -> Duration {
    let mut s = samples.to_vec();
    s.sort();
    let i = ((s.len() as f64 - 1.0) * q).round() as usize;
    s[i]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    if !Path::new(BWRAP).is_file() {
        eprintln!("SKIP: bubblewrap is not installed at {BWRAP}");
        return;
    }
    let (Some(splashc), Some(probe)) = (built("splashc"), built("splash-probe")) else {
        eprintln!(
            "SKIP: splashc or splash-probe not built (cargo build --release -p splashc -p splash-probe)"
        );
        return;
    };
    // 0755, as `mkdir` makes it: the sandboxed worker may run as another uid.
    let scratch = tempfile::Builder::new()
        .prefix("splash-bench-run-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .tempdir()
        .expect("bench dir");
    let dir = scratch.path().to_path_buf();
    let dir = dir.canonicalize().expect("canonical bench dir");
    std::fs::copy(&probe, dir.join("splash-probe")).expect("copy probe");
    let policy_path = dir.join("bench.splashpol");
    std::fs::write(&policy_path, policy(&dir)).expect("policy");

    let (warmup, rounds) = if measuring { (5, 60) } else { (0, 1) };
    let mut raw_samples = Vec::new();
    let mut run_samples = Vec::new();
    let mut ratios = Vec::new();
    for round in 0..warmup + rounds {
        let r = raw(&dir);
        let s = splashc_run(&splashc, &policy_path);
        if round >= warmup {
            raw_samples.push(r);
            run_samples.push(s);
            ratios.push(s.as_secs_f64() / r.as_secs_f64());
        }
    }

    ratios.sort_by(f64::total_cmp);
    let base = quantile(&raw_samples, 0.5);
    println!("whole process: `splashc run` vs raw bwrap ({rounds} rounds, interleaved)");
    println!("splashc: {}", splashc.display());
    println!("| variant | median ms | p90 ms | ratio to raw (median) |");
    println!("|---|---:|---:|---:|");
    for (name, samples) in [
        ("raw bwrap, same mounts, same worker", &raw_samples),
        ("`splashc run`, the whole process", &run_samples),
    ] {
        println!(
            "| {name} | {:.2} | {:.2} | {:.2}x |",
            ms(quantile(samples, 0.5)),
            ms(quantile(samples, 0.9)),
            quantile(samples, 0.5).as_secs_f64() / base.as_secs_f64()
        );
    }
    println!(
        "paired per-round ratio: median {:.2}x, p10 {:.2}x, p90 {:.2}x",
        ratios[ratios.len() / 2],
        ratios[ratios.len() / 10],
        ratios[ratios.len() * 9 / 10]
    );
}
