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
//! temporary directory. Every mount of the plan is in the raw argument list
//! (the six device re-binds, the worker bound over itself, the `/dev`
//! remount). Raw Bubblewrap is measured twice: without a seccomp filter,
//! and with the plan's filter (`splashc emit --bpf`, read from a file
//! Bubblewrap inherits), which is the same sandbox `splashc run` launches.
//! `splashc run` is measured twice too: on the policy source, and on the
//! same policy compiled (`splashc compile`), which skips parsing and
//! checking. Each round runs every variant once, in an order that rotates from round
//! to round, so load drift and cache warmth affect all of them alike.
//!
//! Every path in `SPLASH_BENCH_OTHER` (colon-separated; say, the previous
//! commit's build, or a dynamically linked one) is measured as another
//! variant. `SPLASH_BENCH_ROUNDS` replaces the 60 measured rounds.
//!
//! Run: `cargo build --release -p splashc -p splash-probe && cargo bench -p splash-tests --bench run`.
//! It measures the release build that first command made (this package does
//! not build `splashc`, so the bench leaves that binary as it is).
//! Without `--bench` (as under `cargo test`) one round runs as a smoke test.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use splash_protocol::{
    CapabilityManifest, Grant, GrantFormat, HostSession, PrivatePipeWorkerBootstrap, SessionKey,
    Token,
};

const BWRAP: &str = "/usr/bin/bwrap";

/// The `target` directory this bench was built in.
fn target_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.parent()?.to_path_buf())
}

/// `target/<profile>/NAME`, preferring the release build.
fn built(name: &str) -> Option<PathBuf> {
    let target = target_dir()?;
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

/// Raw Bubblewrap; with `filter`, the plan's seccomp program goes to it as
/// `--seccomp FD` (a file opened for this launch and inherited by it), as
/// `splashc` passes it.
fn raw(dir: &Path, filter: Option<&Path>) -> Duration {
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
    let seccomp = filter.map(|path| {
        let file = std::fs::File::open(path).expect("open the filter");
        // Inherited by the one Bubblewrap spawned next; closed after it.
        rustix::io::fcntl_setfd(&file, rustix::io::FdFlags::empty()).expect("inheritable filter");
        file
    });
    if let Some(file) = &seccomp {
        command.arg("--seccomp").arg(file.as_raw_fd().to_string());
    }
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
    drop(seccomp);
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

    // The same policy compiled: `splashc run` on an artifact skips parsing
    // and checking (the artifact's rules are re-validated, nothing more).
    let artifact_path = dir.join("bench.splashpol.json");
    let compiled = Command::new(&splashc)
        .arg("compile")
        .arg(&policy_path)
        .arg("-o")
        .arg(&artifact_path)
        .output()
        .expect("splashc compile");
    assert!(
        compiled.status.success(),
        "{}",
        String::from_utf8_lossy(&compiled.stderr)
    );

    let mut variants = vec![
        (
            "`splashc run`, the whole process".to_owned(),
            splashc.clone(),
            policy_path.clone(),
        ),
        (
            "`splashc run` on the compiled artifact".to_owned(),
            splashc,
            artifact_path,
        ),
    ];
    for other in std::env::var_os("SPLASH_BENCH_OTHER")
        .map(|v| std::env::split_paths(&v).collect::<Vec<_>>())
        .unwrap_or_default()
    {
        variants.push((
            format!("`splashc run`, {}", other.display()),
            other,
            policy_path.clone(),
        ));
    }
    let rounds = std::env::var("SPLASH_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(60);
    let (warmup, rounds) = if measuring { (5, rounds) } else { (0, 1) };

    // The plan's seccomp program, for the raw launch with the same filter.
    let filter = dir.join("filter.bpf");
    let emitted = Command::new(&variants[0].1)
        .args(["emit", "--bpf"])
        .arg(&policy_path)
        .stderr(Stdio::null())
        .output()
        .expect("splashc emit --bpf");
    assert!(emitted.status.success() && !emitted.stdout.is_empty());
    std::fs::write(&filter, &emitted.stdout).expect("write the filter");

    // The baselines: raw Bubblewrap without and with the plan's filter.
    let baselines = [
        ("raw bwrap, same mounts, same worker", None),
        (
            "raw bwrap, same mounts, same worker, same seccomp filter",
            Some(filter.as_path()),
        ),
    ];
    let mut base_samples = vec![Vec::new(); baselines.len()];
    let mut run_samples = vec![Vec::new(); variants.len()];
    // ratios[b][v]: variant v over baseline b, per round.
    let mut ratios = vec![vec![Vec::new(); variants.len()]; baselines.len()];
    for round in 0..warmup + rounds {
        // The baselines first, then each `splashc` build; the order rotates
        // every round, so no variant always runs first or after another.
        let slots = baselines.len() + variants.len();
        let mut times = vec![Duration::ZERO; slots];
        for k in 0..slots {
            let slot = (k + round) % slots;
            times[slot] = match slot.checked_sub(baselines.len()) {
                None => raw(&dir, baselines[slot].1),
                Some(v) => splashc_run(&variants[v].1, &variants[v].2),
            };
        }
        if round >= warmup {
            let (base, run) = times.split_at(baselines.len());
            for (b, &t) in base.iter().enumerate() {
                base_samples[b].push(t);
                for (v, s) in run.iter().enumerate() {
                    ratios[b][v].push(s.as_secs_f64() / t.as_secs_f64());
                }
            }
            for (v, &s) in run.iter().enumerate() {
                run_samples[v].push(s);
            }
        }
    }

    println!("whole process: `splashc run` vs raw bwrap ({rounds} rounds, interleaved)");
    for (name, exe, input) in &variants {
        println!("{name}: {} {}", exe.display(), input.display());
    }
    let medians: Vec<Duration> = base_samples.iter().map(|s| quantile(s, 0.5)).collect();
    println!(
        "| variant | median ms | p90 ms | ratio to raw (median) | ratio to raw with the filter (median) |"
    );
    println!("|---|---:|---:|---:|---:|");
    let rows = baselines
        .iter()
        .map(|(name, _)| *name)
        .zip(&base_samples)
        .chain(
            variants
                .iter()
                .map(|(name, _, _)| name.as_str())
                .zip(&run_samples),
        );
    for (name, samples) in rows {
        let median = quantile(samples, 0.5);
        println!(
            "| {name} | {:.2} | {:.2} | {:.2}x | {:.2}x |",
            ms(median),
            ms(quantile(samples, 0.9)),
            median.as_secs_f64() / medians[0].as_secs_f64(),
            median.as_secs_f64() / medians[1].as_secs_f64()
        );
    }
    for ((base, _), per_variant) in baselines.iter().zip(&mut ratios) {
        for ((name, _, _), ratios) in variants.iter().zip(per_variant) {
            ratios.sort_by(f64::total_cmp);
            println!(
                "{name} / {base}: paired per-round ratio: median {:.2}x, p10 {:.2}x, p90 {:.2}x",
                ratios[ratios.len() / 2],
                ratios[ratios.len() / 10],
                ratios[ratios.len() * 9 / 10]
            );
        }
    }
}
