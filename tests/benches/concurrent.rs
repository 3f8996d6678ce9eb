//! Many sessions at once: `SPLASH_BENCH_SESSIONS` (default 256) sessions
//! launched concurrently through the library, against raw Bubblewrap
//! launched as many times concurrently with the same mounts, in the same
//! run.
//!
//! - library: one thread per session binds the demo policy's controls
//!   (with the probe copied to a temporary directory) for a manifest of its
//!   own, opens the session under the watchdog, waits until every session
//!   is open, makes one `probe.echo` call and closes;
//! - raw: one thread per sandbox spawns `bwrap` with a hand-written
//!   argument list holding every mount of the plan, writes the bootstrap,
//!   reads Bubblewrap's `--info-fd` report, opens the session, waits until
//!   every sandbox is open, makes the same call and closes.
//!
//! A launch is open at the same point on both sides: the bootstrap is
//! written and Bubblewrap has reported the sandbox made (its `--info-fd`
//! JSON, which the library reads to hold the sandbox's pid 1). Launch
//! throughput is sessions per second until the last one is open.
//! With every session open the bench reads this process's thread count and
//! resident memory; the per-session figures subtract the values before the
//! launch and the bench's own thread per session. Afterwards it counts what
//! is left: probe processes, this process's descriptors, `splash-*`
//! cgroups under `/sys/fs/cgroup/unified`, and private device-node
//! directories under `/dev`; any leftover fails the bench.
//!
//! Run: `cargo build --release -p splash-probe && cargo bench -p splash-tests --bench concurrent`.
//! Without `--bench` (as under `cargo test`) 4 sessions run as a smoke test.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::json;
use splash_protocol::{
    CapabilityManifest, Grant, GrantFormat, HostSession, PrivatePipeWorkerBootstrap, SessionKey,
    Token,
};
use splash_runtime::{BindOptions, Deadlines, LoadedPolicy, Session};

const BWRAP: &str = "/usr/bin/bwrap";

fn target_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.parent()?.to_path_buf())
}

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
policy "bench-concurrent" {{
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

fn manifest(session: &str) -> CapabilityManifest {
    let mut grant = Grant::new(Token::new("probe.echo").expect("token"), GrantFormat::Json);
    grant.max_calls = 1;
    grant.resources = [splash_protocol::Resource::new(
        splash_protocol::ResourceKind::FileRoot,
        Token::new("scratch").expect("token"),
    )]
    .into();
    CapabilityManifest {
        protocol_version: 5,
        session_id: Token::new(session).expect("token"),
        grants: vec![grant],
    }
}

/// One figure of this process from `/proc/self/status` (`Threads`, `VmRSS`).
fn status_field(name: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("status field")
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

fn processes_running(program: &Path) -> usize {
    use std::os::unix::fs::MetadataExt;
    let Ok(target) = std::fs::metadata(program) else {
        return 0;
    };
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|e| {
            std::fs::metadata(e.path().join("exe"))
                .is_ok_and(|exe| (exe.dev(), exe.ino()) == (target.dev(), target.ino()))
        })
        .count()
}

fn splash_cgroups(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| {
            usize::from(e.file_name().to_string_lossy().starts_with("splash-"))
                + splash_cgroups(&e.path())
        })
        .sum()
}

fn device_dirs() -> usize {
    std::fs::read_dir("/dev").map_or(0, |d| {
        d.flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(".splash-dev-"))
            .count()
    })
}

/// CPU time in milliseconds from `/proc/self/stat`: this process's own
/// (user + system) and that of its reaped descendants (every Bubblewrap
/// and worker of a finished run).
fn cpu_ms() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("stat");
    // The fields after the command name, from `state` (field 3) on.
    let fields: Vec<f64> = stat
        .rsplit_once(')')
        .expect("stat fields")
        .1
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0.0))
        .collect();
    // In clock ticks of `USER_HZ`, which Linux fixes at 100 for user space.
    let ms = |i: usize| fields[i] * 10.0;
    // utime, stime, cutime, cstime are fields 14 to 17.
    (ms(11) + ms(12), ms(13) + ms(14))
}

/// What a run measured.
struct Run {
    /// From the first spawn until the last session was open.
    all_open: Duration,
    /// The slowest single launch.
    slowest: Duration,
    /// Threads and resident KiB of this process with every session open,
    /// minus the values before.
    threads: u64,
    rss_kib: u64,
    /// CPU milliseconds of the whole run (launch, call, close, reap): this
    /// host process's, and the sandboxes' (Bubblewrap and the worker).
    host_cpu_ms: f64,
    sandbox_cpu_ms: f64,
}

/// Runs `n` sessions at once: `launch` opens one (its time is measured)
/// and returns a closure that makes the call and closes.
fn concurrently<F, C>(n: usize, launch: F) -> Run
where
    F: Fn(usize) -> C + Send + Sync + 'static,
    C: FnOnce(),
{
    let threads_before = status_field("Threads");
    let rss_before = status_field("VmRSS");
    let cpu_before = cpu_ms();
    let launch = Arc::new(launch);
    let opened = Arc::new(Barrier::new(n + 1));
    let measured = Arc::new(Barrier::new(n + 1));
    let start = Instant::now();
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let launch = Arc::clone(&launch);
            let opened = Arc::clone(&opened);
            let measured = Arc::clone(&measured);
            std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || {
                    let t = Instant::now();
                    let finish = launch(i);
                    let took = t.elapsed();
                    opened.wait();
                    measured.wait();
                    finish();
                    took
                })
                .expect("spawn a session thread")
        })
        .collect();
    opened.wait();
    let all_open = start.elapsed();
    let threads = status_field("Threads").saturating_sub(threads_before);
    let rss_kib = status_field("VmRSS").saturating_sub(rss_before);
    measured.wait();
    let slowest = handles
        .into_iter()
        .map(|h| h.join().expect("session thread"))
        .max()
        .unwrap_or_default();
    let cpu_after = cpu_ms();
    Run {
        all_open,
        slowest,
        threads,
        rss_kib,
        host_cpu_ms: cpu_after.0 - cpu_before.0,
        sandbox_cpu_ms: cpu_after.1 - cpu_before.1,
    }
}

/// Raw Bubblewrap with the plan's mounts, opened; the closure calls and
/// closes.
fn raw(dir: &Path, i: usize) -> impl FnOnce() + use<> {
    let manifest = manifest(&format!("raw-{i}"));
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
        "--info-fd",
        "2",
        "--chdir",
        "/",
        "--proc",
        "/proc",
        "--remount-ro",
        "/proc",
        "--dev",
        "/dev",
    ]);
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
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn raw bwrap");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    // Standard error is the `--info-fd`: Bubblewrap's report that the
    // sandbox is made, kept open (not read further) until the close.
    let mut report_pipe = child.stderr.take().expect("stderr");
    boot.write_to(&mut stdin).expect("bootstrap");
    let report = read_report(&mut report_pipe);
    assert!(report.contains("\"child-pid\""), "no report: {report:?}");
    let mut session = HostSession::open(manifest, key, stdin, stdout).expect("open");
    move || {
        let _report_pipe = report_pipe;
        session
            .invoke("probe.echo", json!({"input": 1}))
            .expect("echo");
        session.close().expect("close");
        child.wait().expect("reap");
    }
}

/// Bubblewrap's `--info-fd` report: its JSON object, read up to the
/// closing brace (the worker inherits the descriptor, so no end of file
/// marks it).
fn read_report(pipe: &mut impl Read) -> String {
    let mut report = Vec::new();
    let mut chunk = [0u8; 512];
    while !report.windows(2).any(|w| w == b"}\n") {
        match pipe.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => report.extend_from_slice(&chunk[..n]),
        }
        assert!(report.len() <= 4096, "the report is too long");
    }
    String::from_utf8_lossy(&report).into_owned()
}

/// How long each library launch spent in `bind`, the rest being the spawn
/// and the open.
static BIND_TIMES: std::sync::Mutex<Vec<Duration>> = std::sync::Mutex::new(Vec::new());

fn library(loaded: &LoadedPolicy, i: usize) -> impl FnOnce() + use<> {
    let manifest = manifest(&format!("lib-{i}"));
    let t = Instant::now();
    let bound = loaded
        .bind(&manifest, BindOptions::default())
        .expect("bind");
    BIND_TIMES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(t.elapsed());
    let mut session = Session::open_owned(bound, manifest, Deadlines::none()).expect("open");
    move || {
        session
            .call("probe.echo", json!({"input": 1}))
            .expect("echo");
        let status = session.close(Duration::from_secs(10)).expect("close");
        assert_eq!(status, splash_runtime::WorkerStatus::Exited(0));
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
    let Some(probe) = built("splash-probe") else {
        eprintln!("SKIP: splash-probe not built (cargo build --release -p splash-probe)");
        return;
    };
    let n: usize = if measuring {
        std::env::var("SPLASH_BENCH_SESSIONS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(256)
    } else {
        4
    };
    let scratch = tempfile::Builder::new()
        .prefix("splash-bench-concurrent-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .tempdir()
        .expect("bench dir");
    let dir = scratch.path().canonicalize().expect("canonical bench dir");
    let probe_copy = dir.join("splash-probe");
    std::fs::copy(&probe, &probe_copy).expect("copy probe");
    let policy_path = dir.join("bench.splashpol");
    std::fs::write(&policy_path, policy(&dir)).expect("policy");
    let loaded = Arc::new(LoadedPolicy::from_path(&policy_path).expect("load the policy"));

    let cgroup_root = Path::new("/sys/fs/cgroup/unified");
    let before = (open_fds(), splash_cgroups(cgroup_root), device_dirs());

    // Paired rounds, the order alternating, so load drift on the shared
    // host affects both alike; the ratio is taken per round.
    let rounds: usize = if measuring {
        std::env::var("SPLASH_BENCH_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(5)
    } else {
        1
    };
    let rate = |r: &Run| n as f64 / r.all_open.as_secs_f64();
    let mut ratios = Vec::new();
    println!(
        "{n} sessions launched concurrently, each one call and a close; {rounds} paired rounds"
    );
    println!(
        "| round | launcher | all open ms | sessions/s | slowest launch ms | host threads per open session | RSS KiB per open session | host CPU ms per session | sandbox CPU ms per session |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for round in 0..rounds {
        let raw_dir = dir.clone();
        let run_raw = move || concurrently(n, move |i| raw(&raw_dir, i));
        let lib_loaded = Arc::clone(&loaded);
        let run_lib = move || concurrently(n, move |i| library(&lib_loaded, i));
        let (raw_run, lib_run) = if round % 2 == 0 {
            let r = run_raw();
            (r, run_lib())
        } else {
            let l = run_lib();
            (run_raw(), l)
        };
        for (name, run) in [
            ("raw bwrap, same mounts", &raw_run),
            ("library (`Session::open_owned`)", &lib_run),
        ] {
            // The bench's own thread per session is not the launcher's.
            let threads = run.threads.saturating_sub(n as u64);
            println!(
                "| {} | {name} | {:.0} | {:.1} | {:.0} | {:.2} | {:.0} | {:.2} | {:.2} |",
                round + 1,
                ms(run.all_open),
                rate(run),
                ms(run.slowest),
                threads as f64 / n as f64,
                run.rss_kib as f64 / n as f64,
                run.host_cpu_ms / n as f64,
                run.sandbox_cpu_ms / n as f64,
            );
        }
        ratios.push(rate(&lib_run) / rate(&raw_run));
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "launch throughput, library / raw, per round: {} (median {:.2})",
        ratios
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(", "),
        ratios[ratios.len() / 2]
    );
    let left = (
        processes_running(&probe_copy),
        open_fds().saturating_sub(before.0),
        splash_cgroups(cgroup_root).saturating_sub(before.1),
        device_dirs().saturating_sub(before.2),
    );
    let mut binds = BIND_TIMES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    binds.sort();
    if let (Some(median), Some(slowest)) = (binds.get(binds.len() / 2), binds.last()) {
        println!(
            "library launches in `bind`: median {:.0} ms, slowest {:.0} ms",
            ms(*median),
            ms(*slowest)
        );
    }
    println!(
        "left afterwards: {} probe processes, {} descriptors, {} cgroups, {} device-node directories",
        left.0, left.1, left.2, left.3
    );
    assert_eq!(left, (0, 0, 0, 0), "something was left behind");
}
