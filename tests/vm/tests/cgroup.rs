//! The cgroup-v2 limits, enforced on a kernel with real controllers and
//! observed from inside the sandboxed worker, each with a control:
//!
//! - `pids.max`: a fork loop stops at the limit (control: without it, the
//!   loop reaches its own maximum);
//! - `memory.max` + `memory.oom.group`: an allocation past the limit kills
//!   the whole worker tree (control: below the limit it succeeds; with
//!   `memory.oom.group` set back to 0 only the allocating child dies);
//! - `cpu.max`: a busy loop gets about the quota of CPU time per wall time
//!   (control: without it, about all of it);
//! - `memory.swap.max` 0: with a swap file in the guest, an allocation past
//!   `memory.max` is OOM-killed rather than swapped out (control: without
//!   the swap limit it succeeds and the kernel swaps);
//! - `io.max`: buffered writes with `fsync` to a block device take at least
//!   the time the write rate allows (control: without it, far less);
//! - a worker under an `identity` sits in its child cgroup: every process
//!   there is the identity's uid, and `pids.max` stops its fork loop
//!   (control: without the identity the cgroup holds host root);
//! - and every limit file reads back what the policy said.
//!
//! Every launch goes through the real pipeline (policy text, check,
//! activate, lower, bind, spawn with the cgroup runner) under real
//! Bubblewrap, and every test checks that no child cgroup is left.

use std::path::{Path, PathBuf};
use std::process::ChildStdin;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use splash_protocol::{
    CapabilityManifest, Grant, GrantFormat, HostSession, PrivatePipeWorkerBootstrap, SessionKey,
    Token,
};
use splash_runtime::{BoundCommand, Deadlines, StopAwareStdout, Watchdog, WorkerStatus};

const TOOLS: &[&str] = &[
    "probe.report",
    "probe.fork",
    "probe.alloc",
    "probe.spin",
    "probe.echo",
    "probe.write",
];

fn manifest(roots: &[&str]) -> CapabilityManifest {
    let grants = TOOLS
        .iter()
        .map(|t| {
            let mut g = Grant::new(Token::new(*t).expect("tool"), GrantFormat::Json);
            g.max_calls = 64;
            g.max_input_bytes = 64 * 1024;
            g.max_output_bytes = 1 << 20;
            g
        })
        .collect();
    let mut manifest = CapabilityManifest {
        protocol_version: 5,
        session_id: Token::new("vm-1").expect("session"),
        grants,
    };
    for id in roots {
        manifest.grants[0]
            .resources
            .insert(splash_protocol::Resource::new(
                splash_protocol::ResourceKind::FileRoot,
                Token::new(*id).expect("root id"),
            ));
    }
    manifest
}

/// A private copy of the probe, removed on drop.
struct ProbeDir(PathBuf);

impl ProbeDir {
    fn new(bin: &Path) -> Self {
        let dir = std::env::temp_dir().join(format!("splash-vm-probe-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("probe dir");
        std::fs::copy(bin.join("splash-probe"), dir.join("splash-probe")).expect("copy probe");
        Self(dir)
    }
}

impl Drop for ProbeDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Worker {
    session: HostSession<StopAwareStdout, ChildStdin>,
    worker: Watchdog,
    _bound: BoundCommand,
    _probe: ProbeDir,
}

impl Worker {
    /// Launches the probe with `cgroup ... { entries }` under the guest's
    /// delegated parent.
    fn launch(entries: &str) -> Self {
        Self::launch_with(entries, None)
    }

    /// [`launch`](Self::launch), with `host` as the read-write root `io`
    /// at `/workspace/io` when given.
    fn launch_with(entries: &str, host: Option<&Path>) -> Self {
        Self::launch_full(entries, host, None)
    }

    /// [`launch_with`](Self::launch_with), with `identity` (the statement's
    /// words after `identity`) when given.
    fn launch_full(entries: &str, host: Option<&Path>, identity: Option<&str>) -> Self {
        let g = splash_vm_tests::guest();
        let probe = ProbeDir::new(&g.bin_dir);
        let mut text = String::from("splashpol 1\npolicy \"vm-cgroup\" {\n");
        text.push_str("  bubblewrap \"/usr/bin/bwrap\"\n  worker \"/opt/worker/splash-probe\"\n");
        for dir in ["/usr", "/lib", "/lib64", "/bin"] {
            if Path::new(dir).exists() {
                text.push_str(&format!("  runtime \"{dir}\" at \"{dir}\"\n"));
            }
        }
        text.push_str(&format!(
            "  runtime \"{}\" at \"/opt/worker\"\n  pin mounts, executables\n",
            probe.0.display()
        ));
        if let Some(host) = host {
            text.push_str(&format!(
                "  root \"io\" host \"{}\" at \"/workspace/io\" read-write\n  host-writes unbounded\n",
                host.display()
            ));
        }
        if let Some(identity) = identity {
            text.push_str(&format!("  identity {identity}\n"));
        }
        text.push_str(&format!(
            "  cgroup parent \"{}\" runner \"{}\" required {{ {entries} }}\n}}\n",
            g.cgroup_parent.display(),
            g.bin_dir.join("splash-cgroup-runner").display()
        ));
        let outcome = splashpol::check_source("vm.splashpol", &text);
        let policy = match outcome.policy {
            Some(p) if !outcome.has_errors() => p,
            _ => panic!("{}", outcome.render_human("vm.splashpol", &text)),
        };
        let manifest = manifest(if host.is_some() { &["io"] } else { &[] });
        let activation = splashpol::activate::activate(&policy, Some(&manifest)).expect("activate");
        let plan = splashpol::lower::lower(
            &policy,
            &activation,
            splash_seccomp::Arch::host().expect("arch"),
            "vm",
        )
        .expect("lower");
        let bound = BoundCommand::bind(plan).unwrap_or_else(|e| panic!("bind: {}", chain(&e)));
        let key = SessionKey::generate().expect("key");
        let boot = PrivatePipeWorkerBootstrap::new(manifest.session_id.clone(), key.clone());
        let (worker, stdin, stdout) = bound
            .spawn_watched(&boot, Deadlines::none())
            .unwrap_or_else(|e| panic!("spawn: {}", chain(&e)));
        let session = HostSession::open(manifest, key, stdin, stdout).expect("open session");
        Worker {
            session,
            worker,
            _bound: bound,
            _probe: probe,
        }
    }

    fn call(&mut self, tool: &str, input: Value) -> Result<Value, String> {
        self.session.invoke(tool, input).map_err(|e| e.to_string())
    }

    fn cgroup_file(&self, file: &str) -> String {
        self.worker
            .with_cgroup(|c| c.read(file))
            .expect("a cgroup")
            .unwrap_or_else(|e| panic!("read {file}: {e}"))
    }

    /// Terminates and checks that nothing is left below the parent.
    fn finish(self) -> WorkerStatus {
        let path = self
            .worker
            .with_cgroup(|c| c.path().to_path_buf())
            .expect("cgroup");
        let status = self
            .worker
            .release()
            .unwrap_or_else(|e| panic!("terminate: {e}"));
        assert!(!path.exists(), "{} was not removed", path.display());
        no_child_cgroups();
        status
    }
}

/// A measurement line on standard error that the test harness does not
/// capture, so it shows in the VM console log of a passing run.
fn note(line: String) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "cgroup-vm: {line}");
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

fn no_child_cgroups() {
    let g = splash_vm_tests::guest();
    let left: Vec<String> = std::fs::read_dir(&g.cgroup_parent)
        .expect("read parent")
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(left.is_empty(), "child cgroups left: {left:?}");
}

/// One `KEY VALUE` field of a flat-keyed cgroup file.
fn field(text: &str, key: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(key).and_then(|v| v.trim().parse().ok()))
        .unwrap_or_else(|| panic!("no `{key}` in {text:?}"))
}

#[test]
#[ignore = "runs inside the VM: scripts/vm-tests"]
fn pids_max_stops_a_fork_loop() {
    let mut w = Worker::launch("pids 16");
    assert_eq!(w.cgroup_file("pids.max").trim(), "16");
    let out = w.call("probe.fork", json!({"max": 64})).expect("fork");
    note(format!("pids 16: {out}"));
    let started = out["started"].as_u64().expect("started");
    // bwrap and the probe's threads (the probe is pid 1 of the sandbox)
    // count too.
    assert!(started > 0 && started < 16, "{out}");
    assert_eq!(out["error"]["name"], json!("EAGAIN"), "{out}");
    assert!(field(&w.cgroup_file("pids.events"), "max ") > 0);
    w.finish();

    // Control: without `pids`, the same loop reaches its own maximum.
    let mut w = Worker::launch("memory 256 MiB");
    let out = w.call("probe.fork", json!({"max": 64})).expect("fork");
    note(format!("no pids limit (control): {out}"));
    assert_eq!(out["started"], json!(64), "{out}");
    assert_eq!(out["error"], Value::Null, "{out}");
    w.finish();
}

#[test]
#[ignore = "runs inside the VM: scripts/vm-tests"]
fn a_worker_under_an_identity_sits_in_its_child_cgroup() {
    let mut w = Worker::launch_full("pids 32", None, Some("user 64000 group 64000"));
    let report = w.call("probe.report", json!({})).expect("report");
    note(format!("identity 64000 in a cgroup: {report}"));
    let procs = w.cgroup_file("cgroup.procs");
    let pids: Vec<&str> = procs.split_whitespace().collect();
    note(format!("cgroup.procs: {pids:?}"));
    // Bubblewrap and the probe: every process of the child cgroup is the
    // identity, none is host root.
    assert!(pids.len() >= 2, "{procs:?}");
    for pid in &pids {
        assert_eq!(
            splash_vm_tests::host_uids(pid),
            vec![64000; 4],
            "process {pid} of {procs:?}"
        );
    }
    // The limit holds for it: a fork loop stops below `pids.max`.
    let out = w.call("probe.fork", json!({"max": 64})).expect("fork");
    assert_eq!(out["error"]["name"], json!("EAGAIN"), "{out}");
    w.finish();

    // Control: without the identity, the same cgroup holds host root.
    let w = Worker::launch("pids 32");
    let procs = w.cgroup_file("cgroup.procs");
    assert!(
        procs
            .split_whitespace()
            .any(|pid| splash_vm_tests::host_uids(pid).first() == Some(&0)),
        "{procs:?}"
    );
    w.finish();
}

#[test]
#[ignore = "runs inside the VM: scripts/vm-tests"]
fn memory_max_oom_kills_the_whole_worker_tree() {
    let mut w = Worker::launch("memory 64 MiB; swap 0 B");
    assert_eq!(
        w.cgroup_file("memory.max").trim(),
        (64u64 << 20).to_string()
    );
    assert_eq!(w.cgroup_file("memory.oom.group").trim(), "1");
    // Control: below the limit the allocation succeeds.
    let ok = w
        .call("probe.alloc", json!({"bytes": 16u64 << 20}))
        .expect("alloc");
    assert_eq!(ok["ok"], json!(true), "{ok}");
    // Past the limit: the OOM killer takes the whole group, the probe that
    // only asked for it and Bubblewrap included, so no answer comes.
    let err = w
        .call("probe.alloc", json!({"bytes": 256u64 << 20}))
        .expect_err("the worker is killed");
    note(format!("memory 64 MiB, alloc 256 MiB: {err}"));
    assert_eq!(
        w.worker.wait_exit(Duration::from_secs(30)).expect("status"),
        WorkerStatus::Killed(libc::SIGKILL)
    );
    let events = w.cgroup_file("memory.events");
    note(format!("memory.events after the group kill: {events:?}"));
    assert!(field(&events, "oom_kill ") >= 2, "{events}");
    assert!(field(&events, "oom_group_kill ") >= 1, "{events}");
    w.finish();

    // Control: with `memory.oom.group` 0 only the allocating child dies and
    // the probe keeps answering.
    let mut w = Worker::launch("memory 64 MiB; swap 0 B");
    w.worker
        .with_cgroup(|c| c.write("memory.oom.group", "0"))
        .expect("cgroup")
        .expect("oom.group 0");
    let out = w
        .call("probe.alloc", json!({"bytes": 256u64 << 20}))
        .expect("the probe survives");
    note(format!("memory.oom.group 0 (control): {out}"));
    assert_eq!(out["signal"], json!(libc::SIGKILL), "{out}");
    w.call("probe.echo", json!({"input": 1}))
        .expect("still answering");
    assert_eq!(w.finish(), WorkerStatus::Killed(libc::SIGKILL));
}

/// Runs `probe.spin` for `seconds` and returns (CPU/wall inside the worker,
/// usage_usec/wall of the cgroup, nr_throttled).
fn spin(w: &mut Worker, seconds: u64) -> (f64, f64, u64) {
    let before = w.cgroup_file("cpu.stat");
    let started = Instant::now();
    let out = w
        .call("probe.spin", json!({"seconds": seconds}))
        .expect("spin");
    let wall = started.elapsed();
    let after = w.cgroup_file("cpu.stat");
    let inside = out["cpu_ms"].as_f64().expect("cpu_ms") / out["elapsed_ms"].as_f64().expect("ms");
    let usage = (field(&after, "usage_usec ") - field(&before, "usage_usec ")) as f64
        / wall.as_micros() as f64;
    let throttled = field(&after, "nr_throttled ") - field(&before, "nr_throttled ");
    note(format!(
        "spin {seconds} s: {out}; cgroup usage/wall {usage:.3}; nr_throttled +{throttled}"
    ));
    (inside, usage, throttled)
}

#[test]
#[ignore = "runs inside the VM: scripts/vm-tests"]
fn cpu_max_throttles_a_busy_loop_to_the_quota() {
    note("cpu 20 ms per 100 ms:".into());
    let mut w = Worker::launch("cpu 20 ms");
    assert_eq!(w.cgroup_file("cpu.max").trim(), "20000 100000");
    let (inside, usage, throttled) = spin(&mut w, 3);
    // 20 ms per 100 ms: 0.2 of one CPU, with generous margins.
    assert!(inside < 0.35, "inside the worker: {inside:.3}");
    assert!(usage < 0.35, "cgroup usage: {usage:.3}");
    assert!(throttled > 0);
    w.finish();

    // Control: without `cpu`, the same loop gets most of the CPU.
    note("no cpu limit (control):".into());
    let mut w = Worker::launch("pids 64");
    let (inside, usage, throttled) = spin(&mut w, 3);
    assert!(inside > 0.6, "inside the worker: {inside:.3}");
    assert!(usage > 0.6, "cgroup usage: {usage:.3}");
    assert_eq!(throttled, 0);
    w.finish();
}

/// Pages the kernel has written to swap since boot (`/proc/vmstat`).
fn pages_swapped_out() -> u64 {
    let vmstat = std::fs::read_to_string("/proc/vmstat").expect("vmstat");
    field(&vmstat, "pswpout ")
}

#[test]
#[ignore = "runs inside the VM: scripts/vm-tests"]
fn swap_zero_keeps_the_worker_out_of_swap() {
    let swaps = std::fs::read_to_string("/proc/swaps").expect("swaps");
    assert!(
        swaps.lines().count() > 1,
        "the guest has no swap device: {swaps:?}"
    );
    // 64 MiB touched in a child under a 32 MiB memory limit.
    let alloc = json!({"bytes": 64u64 << 20});

    let mut w = Worker::launch("memory 32 MiB; swap 0 B");
    assert_eq!(w.cgroup_file("memory.swap.max").trim(), "0");
    let before = pages_swapped_out();
    let err = w
        .call("probe.alloc", alloc.clone())
        .expect_err("the worker is killed");
    assert_eq!(
        w.worker.wait_exit(Duration::from_secs(30)).expect("status"),
        WorkerStatus::Killed(libc::SIGKILL)
    );
    let swapped = pages_swapped_out() - before;
    let events = w.cgroup_file("memory.events");
    note(format!(
        "memory 32 MiB; swap 0 B, alloc 64 MiB: {err}; pswpout +{swapped}; memory.events {events:?}"
    ));
    assert!(field(&events, "oom_group_kill ") >= 1, "{events}");
    // Nothing else in the guest is short of memory, so nothing swapped.
    assert!(swapped * 4096 < 1 << 20, "pswpout +{swapped}");
    w.finish();

    // Control: without `swap`, the same allocation succeeds by swapping
    // out what does not fit.
    let mut w = Worker::launch("memory 32 MiB");
    assert_eq!(w.cgroup_file("memory.swap.max").trim(), "max");
    let before = pages_swapped_out();
    let out = w.call("probe.alloc", alloc).expect("alloc");
    let swapped = pages_swapped_out() - before;
    let events = w.cgroup_file("memory.events");
    note(format!(
        "memory 32 MiB, no swap limit (control), alloc 64 MiB: {out}; pswpout +{swapped}; memory.events {events:?}"
    ));
    assert_eq!(out["ok"], json!(true), "{out}");
    // At least the 32 MiB that did not fit went to swap.
    assert!(swapped * 4096 >= 32 << 20, "pswpout +{swapped}");
    assert_eq!(field(&events, "oom_kill "), 0, "{events}");
    w.finish();
}

#[test]
#[ignore = "runs inside the VM: scripts/vm-tests"]
fn limits_are_written_and_read_back() {
    let dev = std::fs::read_to_string("/sys/block/vda/dev").expect("vda");
    let dev = dev.trim();
    let w = Worker::launch(&format!(
        "memory 128 MiB; swap 0 B; pids 64; cpu 50 ms\n io {dev} {{ read 1 MiB/s; write 120 iops }}"
    ));
    assert_eq!(w.cgroup_file("memory.swap.max").trim(), "0");
    let io = w.cgroup_file("io.max");
    note(format!("io.max: {io:?}"));
    assert_eq!(
        io.trim(),
        format!("{dev} rbps=1048576 wbps=max riops=max wiops=120")
    );
    assert_eq!(w.cgroup_file("cpu.max").trim(), "50000 100000");
    assert_eq!(w.cgroup_file("pids.max").trim(), "64");
    w.finish();
}

/// Writes 4 MiB (then `fsync`) into a read-write root on `/dev/vda`;
/// returns the wall time and the bytes `io.stat` charged to the cgroup.
fn timed_write(w: &mut Worker, dev: &str) -> (Duration, u64) {
    let started = Instant::now();
    let out = w
        .call(
            "probe.write",
            json!({"path": "/workspace/io/data", "bytes": 4u64 << 20, "remove": true}),
        )
        .expect("write");
    let took = started.elapsed();
    assert_eq!(out["ok"], json!(true), "{out}");
    let stat = w.cgroup_file("io.stat");
    let written = stat
        .lines()
        .find(|l| l.starts_with(&format!("{dev} ")))
        .and_then(|l| {
            l.split_whitespace()
                .find_map(|f| f.strip_prefix("wbytes=").and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0);
    note(format!(
        "4 MiB written and fsynced in {took:?}; io.stat: {:?}",
        stat.trim()
    ));
    (took, written)
}

#[test]
#[ignore = "runs inside the VM: scripts/vm-tests"]
fn io_max_throttles_writeback_to_the_device() {
    let g = splash_vm_tests::guest();
    let dev = std::fs::read_to_string("/sys/block/vda/dev").expect("vda");
    let dev = dev.trim().to_owned();
    // A scratch directory on the ext4 filesystem of /dev/vda (cgroup
    // writeback charges the flushed pages to the writer's cgroup).
    let dir = g
        .quota_mount
        .join(format!("splash-cgroup-io-{}", std::process::id()));
    std::fs::create_dir(&dir).expect("scratch dir on vda");

    note(format!("io {dev} {{ write 1 MiB/s }}:"));
    let mut w = Worker::launch_with(&format!("io {dev} {{ write 1 MiB/s }}"), Some(&dir));
    let (limited, charged) = timed_write(&mut w, &dev);
    w.finish();
    note("no io limit (control):".into());
    let mut w = Worker::launch_with("pids 64", Some(&dir));
    let (free, _) = timed_write(&mut w, &dev);
    w.finish();
    std::fs::remove_dir_all(&dir).expect("remove scratch dir");

    assert!(
        charged >= 4 << 20,
        "the writes were charged to the cgroup: {charged}"
    );
    // 4 MiB at 1 MiB/s (the kernel allows a short burst): at least 2 s.
    assert!(limited >= Duration::from_secs(2), "{limited:?}");
    assert!(
        free < limited / 2,
        "control {free:?} vs limited {limited:?}"
    );
}
