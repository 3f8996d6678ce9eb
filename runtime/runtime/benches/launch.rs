//! Launch latency: time from spawn to the worker's first authenticated
//! response, for a minimal policy, for the hardened demo policy (also through
//! the host API's `Session`) and, when the
//! runners are built, for the hardened policy with the two separate runners
//! (Landlock runner → limit runner) and with the one-hop combined runner
//! (same limits, same allowlist), against raw Bubblewrap starting the same
//! worker with an equivalent hand-written minimal argument list (the minimal
//! policy's operations, written by hand with path binds and launched with
//! `std::process::Command`), all measured in the same run (interleaved, so
//! drift in the machine's load affects every variant alike).
//!
//! Run: `cargo build --release -p splash-probe -p splash-runners && cargo bench -p splash-runtime --bench launch`.
//! Without `--bench` (as under `cargo test`) one round runs as a smoke test.
//! The probe is found next to this binary's profile directory or through
//! `SPLASH_PROBE`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use splash_protocol::{
    CapabilityManifest, Grant, GrantFormat, HostSession, PrivatePipeWorkerBootstrap, SessionKey,
    Token,
};
use splash_runtime::BoundCommand;

const BWRAP: &str = "/usr/bin/bwrap";

fn find_probe() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SPLASH_PROBE") {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let target = exe.parent()?.parent()?.parent()?;
    ["release", "debug"]
        .iter()
        .map(|profile| target.join(profile).join("splash-probe"))
        .find(|p| p.is_file())
}

fn manifest() -> CapabilityManifest {
    let mut grant = Grant::new(Token::new("probe.echo").expect("token"), GrantFormat::Json);
    grant.max_calls = 4;
    CapabilityManifest {
        protocol_version: 5,
        session_id: Token::new("bench-1").expect("token"),
        grants: vec![grant],
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Variant {
    Minimal,
    /// The demo policy's controls.
    Hardened,
    /// The specification's first example: the hardened controls plus the
    /// limit runner and the Landlock runner before the worker.
    HardenedWithRunners,
    /// The same controls, limits and allowlist through the one-hop
    /// combined runner.
    HardenedOneHop,
}

/// The runner binaries each runner variant copies next to the probe.
fn runner_binaries(variant: Variant) -> &'static [&'static str] {
    match variant {
        Variant::Minimal | Variant::Hardened => &[],
        Variant::HardenedWithRunners => &["splash-limit-runner", "splash-landlock-runner"],
        Variant::HardenedOneHop => &["splash-runner"],
    }
}

/// The limits and the Landlock allowlist shared by both runner variants;
/// `limit_runner` and `landlock_runner` are the `runner PATH` clauses, empty
/// in one-hop mode.
fn runner_controls(limit_runner: &str, landlock_runner: &str) -> String {
    // A dynamically linked worker needs its resolved ELF loader listed.
    let loader = std::fs::canonicalize("/lib64/ld-linux-x86-64.so.2")
        .or_else(|_| std::fs::canonicalize("/lib/ld-linux-aarch64.so.1"))
        .expect("a known glibc loader");
    format!(
        r#"
  limits {limit_runner}required {{
    cpu 30 s; address-space 4 GiB; open-files 64; file-size 16 MiB
  }}
  landlock {landlock_runner}{{
    allow-exec "{}"
  }}
"#,
        loader.display()
    )
}

fn policy_text(probe_dir: &Path, variant: Variant) -> String {
    let dir = probe_dir.display();
    let hardened = r#"
  root "scratch" tmpfs at "/workspace/scratch" size 8 MiB
  tmp private size 16 MiB
  writes bounded
  user-namespaces none
  pin mounts, executables
  seccomp deny-known-escape-surface
"#;
    let controls = match variant {
        Variant::Minimal => String::new(),
        Variant::Hardened => hardened.to_owned(),
        Variant::HardenedWithRunners => format!(
            "{hardened}{}",
            runner_controls(
                r#"runner "/opt/probe/splash-limit-runner" "#,
                r#"runner "/opt/probe/splash-landlock-runner" "#,
            )
        ),
        Variant::HardenedOneHop => format!(
            "{hardened}\n  runner combined \"/opt/probe/splash-runner\"{}",
            runner_controls("", "")
        ),
    };
    format!(
        r#"splashpol 1
policy "bench" {{
  bubblewrap "{BWRAP}"
  worker "/opt/probe/splash-probe"
  runtime "{dir}" at "/opt/probe"
  runtime "/usr" at "/usr"
  runtime "/lib" at "/lib"
  runtime "/lib64" at "/lib64"
{controls}}}
"#
    )
}

fn bind(probe_dir: &Path, variant: Variant) -> BoundCommand {
    let text = policy_text(probe_dir, variant);
    let outcome = splashpol::check_source("bench.splashpol", &text);
    let policy = match outcome.policy {
        Some(p) if !outcome.has_errors() => p,
        _ => panic!(
            "bench policy: {}",
            outcome.render_human("bench.splashpol", &text)
        ),
    };
    let activation = splashpol::activate::activate(&policy, Some(&manifest())).expect("activate");
    let arch = splashpol::plan::Arch::host().expect("supported architecture");
    let plan = splashpol::lower::lower(&policy, &activation, arch, "bench").expect("lower");
    BoundCommand::bind(plan).expect("bind")
}

/// One call through an open session; returns the elapsed time since `start`.
fn first_response<R: std::io::Read, W: std::io::Write>(
    key: SessionKey,
    stdin: W,
    stdout: R,
    start: Instant,
) -> Duration {
    let mut session = HostSession::open(manifest(), key, stdin, stdout).expect("open session");
    session
        .invoke("probe.echo", json!({"input": 1}))
        .expect("first response");
    let elapsed = start.elapsed();
    session.close().expect("close");
    elapsed
}

fn runtime_launch(bound: &BoundCommand) -> Duration {
    let key = SessionKey::generate().expect("key");
    let boot = PrivatePipeWorkerBootstrap::new(Token::new("bench-1").expect("token"), key.clone());
    let start = Instant::now();
    let (worker, stdin, stdout) = bound
        .spawn_watched(&boot, splash_runtime::Deadlines::none())
        .expect("spawn");
    let elapsed = first_response(key, stdin, stdout, start);
    let status = worker.wait_exit(Duration::from_secs(30)).expect("reap");
    assert_eq!(status, splash_runtime::WorkerStatus::Exited(0));
    elapsed
}

/// The host API's watched session: spawn under the watchdog (one thread),
/// open, one call, close.
fn session_launch(bound: &BoundCommand) -> Duration {
    let start = Instant::now();
    let mut session =
        splash_runtime::Session::open(bound, manifest(), splash_runtime::Deadlines::none())
            .expect("open");
    session
        .call("probe.echo", json!({"input": 1}))
        .expect("first response");
    let elapsed = start.elapsed();
    session.close(Duration::from_secs(5)).expect("close");
    elapsed
}

fn raw_launch(probe_dir: &Path) -> Duration {
    let key = SessionKey::generate().expect("key");
    let boot = PrivatePipeWorkerBootstrap::new(Token::new("bench-1").expect("token"), key.clone());
    let start = Instant::now();
    let mut child = Command::new(BWRAP)
        .args([
            "--unshare-all",
            "--cap-drop",
            "ALL",
            "--clearenv",
            "--new-session",
        ])
        .args([
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
        ])
        .arg("--ro-bind")
        .arg(probe_dir)
        .args([
            "/opt/probe",
            "--ro-bind",
            "/usr",
            "/usr",
            "--ro-bind",
            "/lib",
            "/lib",
        ])
        .args([
            "--ro-bind",
            "/lib64",
            "/lib64",
            "--",
            "/opt/probe/splash-probe",
        ])
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn raw bwrap");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    boot.write_to(&mut stdin).expect("bootstrap");
    let elapsed = first_response(key, stdin, stdout, start);
    child.wait().expect("reap");
    elapsed
}

struct Stats {
    name: &'static str,
    samples: Vec<Duration>,
}

impl Stats {
    fn quantile(&self, q: f64) -> Duration {
        let mut s = self.samples.clone();
        s.sort();
        let i = ((s.len() as f64 - 1.0) * q).round() as usize;
        s[i]
    }
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
    let Some(probe) = find_probe() else {
        eprintln!("SKIP: splash-probe not built (cargo build --release -p splash-probe)");
        return;
    };
    // 0755, as `mkdir` makes it: the sandboxed worker may run as another uid.
    let scratch = tempfile::Builder::new()
        .prefix("splash-bench-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .tempdir()
        .expect("bench dir");
    let dir = scratch.path().to_path_buf();
    std::fs::copy(&probe, dir.join("splash-probe")).expect("copy probe");
    let dir = dir.canonicalize().expect("canonical bench dir");

    // The runners, when built next to the probe, add the specification's
    // full example, once with the two separate runners and once with the
    // one-hop combined runner.
    let runner_variant = |variant: Variant| {
        let names = runner_binaries(variant);
        let built = names.iter().all(|n| probe.with_file_name(n).is_file());
        if !built {
            eprintln!("note: {names:?} not built next to the probe; {variant:?} is left out");
            return None;
        }
        for n in names {
            std::fs::copy(probe.with_file_name(n), dir.join(n)).expect("copy runner");
        }
        Some(bind(&dir, variant))
    };

    let minimal = bind(&dir, Variant::Minimal);
    let hardened = bind(&dir, Variant::Hardened);
    let two_hop = runner_variant(Variant::HardenedWithRunners);
    let one_hop = runner_variant(Variant::HardenedOneHop);
    let (warmup, rounds) = if measuring { (5, 60) } else { (0, 1) };
    let mut raw = Stats {
        name: "raw bwrap, hand-written minimal argv",
        samples: Vec::new(),
    };
    let mut min = Stats {
        name: "splash runtime, minimal policy",
        samples: Vec::new(),
    };
    let mut hard = Stats {
        name: "splash runtime, hardened demo policy",
        samples: Vec::new(),
    };
    let mut watched = Stats {
        name: "splash host API (`Session`), hardened demo policy",
        samples: Vec::new(),
    };
    let mut two = Stats {
        name: "splash runtime, hardened + limit and landlock runners",
        samples: Vec::new(),
    };
    let mut one = Stats {
        name: "splash runtime, hardened + one-hop combined runner",
        samples: Vec::new(),
    };
    for round in 0..warmup + rounds {
        let r = raw_launch(&dir);
        let m = runtime_launch(&minimal);
        let h = runtime_launch(&hardened);
        let w = session_launch(&hardened);
        let t = two_hop.as_ref().map(runtime_launch);
        let o = one_hop.as_ref().map(runtime_launch);
        if round >= warmup {
            raw.samples.push(r);
            min.samples.push(m);
            hard.samples.push(h);
            watched.samples.push(w);
            two.samples.extend(t);
            one.samples.extend(o);
        }
    }

    let base = raw.quantile(0.5);
    println!("spawn → first authenticated response ({rounds} rounds, interleaved)");
    println!("| variant | median ms | p90 ms | ratio to raw (median) |");
    println!("|---|---:|---:|---:|");
    for s in [&raw, &min, &hard, &watched, &two, &one] {
        if s.samples.is_empty() {
            continue;
        }
        println!(
            "| {} | {:.2} | {:.2} | {:.2}x |",
            s.name,
            ms(s.quantile(0.5)),
            ms(s.quantile(0.9)),
            s.quantile(0.5).as_secs_f64() / base.as_secs_f64()
        );
    }
}
