//! A host killed by SIGKILL takes its sandboxes with it, with the real
//! bwrap: a host that may make pid namespaces starts each launch as pid 1 of
//! one of its own, so the launch's death (by the parent-death signal the
//! host gave it) ends every process of the sandbox: a worker that cleared
//! its own parent-death signal, and a sandbox Bubblewrap had not finished
//! making. A host without `CAP_SYS_ADMIN` (root through `setpriv`, and uid
//! 65534) makes that namespace in a user namespace of its own. The control
//! of each is Bubblewrap launched the same way without the namespace: there
//! the same process outlives its host.

mod runtime_support;

use std::io::BufRead;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use runtime_support::{HostAs, running_as_root, serial};
use splash_protocol::{PrivatePipeWorkerBootstrap, SessionKey, Token};
use splash_runtime::{BindOptions, BoundCommand, Deadlines, LaunchPreparation, LaunchSpec};

/// Which host [`killed_host_role`] plays.
const ROLE: &str = "SPLASH_TEST_KILLED_HOST";
/// The probe directory it launches from.
const PROBE_DIR: &str = "SPLASH_TEST_KILLED_HOST_PROBE";
/// The parent of its private device directories.
const DEVICES: &str = "SPLASH_TEST_KILLED_HOST_DEVICES";

/// Holds Bubblewrap in its set-up: `--userns-block-fd` on the host's
/// standard input (a pipe the test never writes), so Bubblewrap has made
/// the sandbox's pid 1 and reported it, and waits before it lets it go on:
/// the window in which a host's death used to leave that process behind,
/// blocked, reparented to the host's init.
#[derive(Debug)]
struct HeldInSetUp;

impl LaunchPreparation for HeldInSetUp {
    fn name(&self) -> &str {
        "held in set-up"
    }
    fn prepare(&mut self, _: &BoundCommand) -> std::io::Result<()> {
        Ok(())
    }
    fn wrap(&self, spec: &mut LaunchSpec) -> std::io::Result<()> {
        let block: OwnedFd = rustix::io::fcntl_dupfd_cloexec(std::io::stdin(), 3)?;
        let script = format!(
            "exec \"$0\" --unshare-user --userns-block-fd {} \"$@\"",
            block.as_raw_fd()
        );
        spec.wrap("/bin/sh".into(), vec!["-c".into(), script], vec![block]);
        Ok(())
    }
}

/// Not a test of its own: the host [`a_killed_host_takes_its_sandbox_with_it`]
/// starts and kills. It opens a session whose worker cleared its
/// parent-death signal and ignores `close_session` (`orphan`), or holds
/// Bubblewrap in its set-up (`set-up`), prints `READY <host pid of the
/// sandbox's pid 1>` and waits to be killed.
#[test]
#[ignore = "the child role of a_killed_host_takes_its_sandbox_with_it"]
fn killed_host_role() {
    let (Ok(role), Ok(probe_dir), Ok(devices)) = (
        std::env::var(ROLE),
        std::env::var(PROBE_DIR),
        std::env::var(DEVICES),
    ) else {
        panic!("run only by a_killed_host_takes_its_sandbox_with_it");
    };
    let options = BindOptions::default().with_device_directory(devices);
    let bwrap = splash_tests::bwrap_path().expect("bwrap");
    let mut policy = runtime_support::probe_policy_in(&bwrap, Path::new(&probe_dir));
    match role.as_str() {
        "orphan" => {
            policy.worker_args = vec!["--orphan".into(), "--linger".into()];
            let bound = BoundCommand::bind_with(policy.plan(), options).expect("bind");
            // Open (the worker has cleared its signal before it answers) and
            // idle: a call in flight would answer into a closed pipe once
            // the host is dead, and SIGPIPE would end the worker.
            let session = runtime_support::ProbeSession::start(&bound, None).expect("open");
            let pid = session.worker.sandbox_pid().expect("pid 1 is held");
            assert!(session.worker.sandbox_dies_with_host());
            println!("READY {pid}");
            park(session);
        }
        "set-up" => {
            let bound =
                BoundCommand::bind_with(policy.plan(), options.with_preparation(HeldInSetUp))
                    .expect("bind");
            let bootstrap = PrivatePipeWorkerBootstrap::new(
                Token::new("s-1").expect("token"),
                SessionKey::generate().expect("key"),
            );
            let (worker, stdin, stdout) = bound
                .spawn_watched(&bootstrap, Deadlines::none())
                .expect("spawn");
            let pid = worker.sandbox_pid().expect("pid 1 is held");
            assert!(worker.sandbox_dies_with_host());
            println!("READY {pid}");
            park((worker, stdin, stdout));
        }
        other => panic!("unknown role {other}"),
    }
}

fn park<T>(held: T) -> ! {
    let _held = held;
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// `(pid, start time)` of a process: the start time tells it from a later
/// process given the same pid.
fn identity(pid: u32) -> Option<(u32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command's closing parenthesis; the start time is the
    // 22nd field of the line, the 20th after it.
    let rest = stat.rsplit_once(')')?.1;
    let start = rest.split_whitespace().nth(19)?.parse().ok()?;
    Some((pid, start))
}

fn alive(process: (u32, u64)) -> bool {
    identity(process.0) == Some(process)
}

/// Starts the host in `role` as `who`, waits for its `READY`, kills it
/// with SIGKILL and returns the sandbox's pid 1 as it was then. The host's
/// standard input is `block`.
fn kill_host(
    role: &str,
    probe_dir: &Path,
    devices: &Path,
    who: HostAs,
    block: OwnedFd,
) -> (u32, u64) {
    let mut host = runtime_support::role_command("killed_host_role", who)
        .env(ROLE, role)
        .env(PROBE_DIR, probe_dir)
        .env(DEVICES, devices)
        .stdin(Stdio::from(block))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("host");
    let stdout = host.stdout.take().expect("stdout");
    let pid = std::io::BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|line| {
            line.split_once("READY ")
                .and_then(|(_, pid)| pid.trim().parse::<u32>().ok())
        });
    let Some(pid) = pid else {
        let _ = host.kill();
        let _ = host.wait();
        panic!("the {role} host ({who:?}) did not get ready");
    };
    let process = identity(pid).expect("the sandbox's pid 1 runs");
    host.kill().expect("SIGKILL");
    host.wait().expect("reap");
    process
}

/// The control: Bubblewrap started by a shell that is then killed with
/// SIGKILL, with `--die-with-parent` and no pid namespace of the launch's
/// own, as the launch was before. The sandbox's pid 1 is the probe that
/// cleared its parent-death signal (`orphan`), or Bubblewrap's child held
/// in its set-up wait (`set-up`). Returns it as it was at the kill.
fn kill_raw_host(role: &str, bwrap: &Path, probe: &Path, block: OwnedFd) -> (u32, u64) {
    let dir = runtime_support::TempDir::new("raw-host");
    let info = dir.path().join("info");
    let mut command = Command::new("/bin/sh");
    command
        .args([
            "-c",
            // The shell's input (the pipe) on 4, and Bubblewrap's report on
            // 5, for a job that would otherwise read /dev/null.
            "exec 4<&0 5>\"$0\"; \"$@\" <&4 & wait",
        ])
        .arg(&info)
        .arg(bwrap)
        .args([
            "--die-with-parent",
            "--unshare-all",
            "--unshare-user",
            "--as-pid-1",
            "--info-fd",
            "5",
            "--ro-bind",
            "/",
            "/",
        ]);
    match role {
        "orphan" => {
            command.arg(probe).arg("--orphan");
        }
        _ => {
            command.args(["--userns-block-fd", "4", "/bin/true"]);
        }
    }
    let mut host = command
        .stdin(Stdio::from(block))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("raw host");
    let until = Instant::now() + Duration::from_secs(5);
    let pid = loop {
        let report = std::fs::read_to_string(&info).unwrap_or_default();
        if let Some(pid) = serde_json::from_str::<serde_json::Value>(&report)
            .ok()
            .and_then(|v| v.get("child-pid").and_then(serde_json::Value::as_u64))
        {
            break u32::try_from(pid).expect("pid");
        }
        assert!(Instant::now() < until, "no report from the raw Bubblewrap");
        std::thread::sleep(Duration::from_millis(10));
    };
    if role == "orphan" {
        while runtime_support::processes_running(probe).is_empty() {
            assert!(
                Instant::now() < until,
                "the raw launch's probe never started"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        // Time to clear its signal before its parent dies.
        std::thread::sleep(Duration::from_millis(200));
    }
    let process = identity(pid).expect("the raw sandbox's pid 1 runs");
    host.kill().expect("SIGKILL");
    host.wait().expect("reap");
    process
}

/// Whether `pid1` still runs a second after its host's death; a survivor
/// is killed.
fn survives(pid1: (u32, u64)) -> bool {
    let until = Instant::now() + Duration::from_secs(1);
    while alive(pid1) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    let survived = alive(pid1);
    if survived {
        let _ = Command::new("kill")
            .args(["-KILL", &pid1.0.to_string()])
            .status();
        let until = Instant::now() + Duration::from_secs(5);
        while alive(pid1) {
            assert!(Instant::now() < until, "the survivor did not die");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    survived
}

/// The sandbox's pid 1 is gone within a second of its host's SIGKILL,
/// whether the worker cleared its parent-death signal and lingers, or
/// Bubblewrap was still holding pid 1 in its set-up, for a root host, one
/// without `CAP_SYS_ADMIN` and one running as uid 65534; in the control,
/// the raw launch, the same process is still there a second later. What
/// else the killed hosts made (private device directories) the next bind
/// sweeps.
#[test]
fn a_killed_host_takes_its_sandbox_with_it() {
    let _serial = serial();
    if !splash_tests::require_host(
        running_as_root(),
        "host root (the hosts are root, root without CAP_SYS_ADMIN and uid 65534)",
    ) {
        return;
    }
    let Some((bwrap, probe_dir)) = runtime_support::host_with_probe() else {
        return;
    };
    let probe = probe_dir.path().join("splash-probe");
    let devices = runtime_support::DeviceParent::new("killed-host");
    for role in ["orphan", "set-up"] {
        // Each host's block (the set-up hold): never written, held until
        // its pid 1 is checked.
        let (read, write) = rustix::pipe::pipe().expect("pipe");
        let pid1 = kill_raw_host(role, &bwrap, &probe, read);
        assert!(
            survives(pid1),
            "{role}, control: without a pid namespace of the launch's own, pid 1 outlives its killed host"
        );
        drop(write);
        for who in [HostAs::Root, HostAs::RootWithoutSysAdmin, HostAs::Nobody] {
            let (read, write) = rustix::pipe::pipe().expect("pipe");
            let pid1 = kill_host(role, probe_dir.path(), devices.path(), who, read);
            assert!(
                !survives(pid1),
                "{role}, {who:?}: the sandbox outlived its killed host"
            );
            drop(write);
        }
    }
    // Each root host's bind swept the one killed before it.
    let left = devices.directories();
    assert!(left.len() <= 1, "the last killed root host's: {left:?}");
    let policy = runtime_support::probe_policy_in(&bwrap, probe_dir.path());
    let next = BoundCommand::bind_with(
        policy.plan(),
        BindOptions::default().with_device_directory(devices.path()),
    )
    .expect("the next bind");
    let own = devices.directories();
    assert!(
        own.len() == 1 && own != left,
        "only the next bind's own: {own:?}"
    );
    drop(next);
    assert!(devices.directories().is_empty());
}
