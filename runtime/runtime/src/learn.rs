//! The host side of a learning run (`splashc learn`, `docs/learn.md`).
//!
//! A learning plan ([`splashpol::learn`]) installs, where the production
//! filter would be installed, a recording filter that notifies this process
//! of every system call. [`bind_learning`] is the only door that binds such
//! a plan (a production [`BoundCommand::bind_with`] refuses it with
//! [`BindError::LearningPlan`]); it adds a launch preparation that gives
//! each launch a fresh socket pair, whose sandbox end the plan's runner
//! receives as `--learn-fd`.
//!
//! The [`Recorder`] thread receives the listener on the host end and then
//! answers every notification with the verdict of the policy's own
//! production program, run by the userspace cBPF interpreter
//! ([`splash_seccomp::interp`]) on the notification's `seccomp_data`:
//!
//! - `ALLOW`: the call continues (`SECCOMP_USER_NOTIF_FLAG_CONTINUE`);
//! - `ERRNO(e)` (a fixed guard): the call fails with `e` and never runs, as
//!   in production; it is recorded as denied by the guards;
//! - `KILL_PROCESS` (a call the input's strict list lacks): recorded as
//!   needed and continued, so the run goes on to show the next one; a
//!   number with no name on the architecture (an x32 call) fails with
//!   `ENOSYS` instead;
//! - anything else (no production program gives it) fails with `EPERM`.
//!
//! For `execve` and `execveat` the path is read from `/proc/PID/mem` and
//! kept only if the notification is still valid afterwards
//! (`SECCOMP_IOCTL_NOTIF_ID_VALID`), then resolved inside the sandbox
//! through `/proc/PID/root`. Whether the exec took effect is seen at the
//! caller's next notification: its `/proc/PID/exe` is then the target or
//! not.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use splash_seccomp::bpf::{
    SECCOMP_RET_ACTION_FULL, SECCOMP_RET_ALLOW, SECCOMP_RET_DATA, SECCOMP_RET_ERRNO,
    SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_KILL_THREAD,
};
use splash_seccomp::{Arch, SeccompData, SockFilter};
use splashpol::learn::LearningPlan;

use crate::bind::{BindOptions, BoundCommand, LaunchPreparation};
use crate::error::BindError;
use crate::launch_spec::LaunchSpec;
use crate::sys::notify::{self, Answer, Readiness};

/// The most bytes of an exec path read from the caller's memory.
const PATH_MAX: usize = 4096;

/// Why a learning run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LearnError {
    /// No listener arrived in time (the runner failed, or does not know
    /// `--learn-fd`).
    #[error("no recording listener arrived within {0:?}; the runner must accept `--learn-fd`")]
    NoListener(Duration),
    /// Receiving the listener failed.
    #[error("failed to receive the recording listener: {0}")]
    Receive(#[source] io::Error),
    /// Reading or answering a notification failed.
    #[error("failed to answer a recorded system call: {0}")]
    Answer(#[source] io::Error),
    /// The recording thread ended abnormally.
    #[error("the recording thread panicked")]
    Panicked,
    /// The recording did not end within the grace period after the worker
    /// stopped.
    #[error("the recording did not end within {0:?} after the worker stopped")]
    Unfinished(Duration),
}

/// How the production program answers one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Production allows it.
    Allowed,
    /// Production kills it: the input's strict list lacks it.
    Unlisted,
    /// A fixed guard answers with this errno; the call did not run.
    Guarded(i32),
    /// A number with no name on the architecture: answered `ENOSYS`.
    Unknown,
    /// A return value no production program gives: answered `EPERM`.
    Unexpected(u32),
}

/// Everything recorded about one system call number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyscallUse {
    /// The name on the run's architecture, if it has one.
    pub name: Option<&'static str>,
    /// The phase of its first call ([`Recorder::set_phase`]).
    pub first_phase: u32,
    /// How often it was called.
    pub calls: u64,
    /// Each verdict with the phase it was first given in.
    pub verdicts: BTreeMap<Verdict, u32>,
    /// The distinct `clone` flags (low 32 bits), for `clone`.
    pub clone_flags: BTreeSet<u32>,
    /// The distinct `ioctl` requests (low 32 bits), for `ioctl`.
    pub ioctl_requests: BTreeSet<u32>,
}

impl SyscallUse {
    /// Whether some call ran or would run in production once listed: the
    /// call belongs on a strict list.
    pub fn needed(&self) -> bool {
        self.verdicts
            .keys()
            .any(|v| matches!(v, Verdict::Allowed | Verdict::Unlisted))
    }
}

/// Whether an exec took effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecResult {
    /// The caller's next call ran in the target.
    Ran,
    /// The caller went on in its old program: the exec failed.
    Failed,
    /// The caller made no further call.
    Unknown,
}

/// One `execve` or `execveat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRecord {
    /// The phase of the call.
    pub phase: u32,
    /// The path as the caller named it (for `execveat`, relative to its
    /// descriptor unless absolute).
    pub named: String,
    /// The path with every symbolic link resolved inside the sandbox, when
    /// it could be resolved.
    pub resolved: Option<String>,
    /// The resolved ELF interpreter (`PT_INTERP`) of the target, for a
    /// dynamically linked program.
    pub loader: Option<String>,
    /// The resolved `#!` interpreter of a script.
    pub script_interpreter: Option<String>,
    /// Whether it took effect.
    pub result: ExecResult,
}

/// The result of a learning run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recording {
    /// The architecture of the run.
    pub arch: Arch,
    /// Every system call number seen.
    pub syscalls: BTreeMap<u32, SyscallUse>,
    /// Every exec, in order.
    pub execs: Vec<ExecRecord>,
    /// Notifications answered.
    pub notifications: u64,
}

/// The launch preparation that gives each launch its listener socket.
#[derive(Debug)]
struct Handoff {
    host_end: Arc<Mutex<Option<OwnedFd>>>,
}

impl LaunchPreparation for Handoff {
    fn name(&self) -> &str {
        "learning listener socket"
    }

    fn prepare(&mut self, _command: &BoundCommand) -> io::Result<()> {
        Ok(())
    }

    fn wrap(&self, spec: &mut LaunchSpec) -> io::Result<()> {
        let (host, sandbox) = notify::socketpair()?;
        if !spec.fill_learn_listener(sandbox) {
            return Err(io::Error::other("the launch has no learning listener slot"));
        }
        *self
            .host_end
            .lock()
            .map_err(|_| io::Error::other("poisoned"))? = Some(host);
        Ok(())
    }
}

/// Binds a learning plan: the only way to bind one. Returns the bound
/// command and the recorder, whose thread waits for the launch.
pub fn bind_learning(
    learning: LearningPlan,
    mut options: BindOptions,
    listener_timeout: Duration,
) -> Result<(BoundCommand, Recorder), BindError> {
    let host_end = Arc::new(Mutex::new(None));
    options.learning = true;
    options.preparations.push(Box::new(Handoff {
        host_end: Arc::clone(&host_end),
    }));
    let arch = learning.plan.arch();
    let production: Option<Vec<SockFilter>> = learning.production.as_ref().map(|s| {
        s.program
            .chunks_exact(8)
            .map(|c| SockFilter::from_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect()
    });
    let bound = BoundCommand::bind_with(learning.plan, options)?;
    let phase = Arc::new(AtomicU32::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let activity = Arc::new(Activity {
        epoch: Instant::now(),
        listening: AtomicBool::new(false),
        last_ms: AtomicU64::new(0),
    });
    let state = Answering {
        arch,
        production,
        phase: Arc::clone(&phase),
        stop: Arc::clone(&stop),
        activity: Arc::clone(&activity),
        recording: Recording {
            arch,
            syscalls: BTreeMap::new(),
            execs: Vec::new(),
            notifications: 0,
        },
        pending_exec: BTreeMap::new(),
    };
    let thread = std::thread::Builder::new()
        .name("splash-learn".to_owned())
        .spawn(move || state.run(&host_end, listener_timeout))
        .map_err(|source| BindError::Preparation {
            step: "learning recorder".to_owned(),
            source,
        })?;
    Ok((
        bound,
        Recorder {
            phase,
            stop,
            activity,
            thread: Some(thread),
        },
    ))
}

/// When the recording thread last answered a call.
#[derive(Debug)]
struct Activity {
    epoch: Instant,
    listening: AtomicBool,
    last_ms: AtomicU64,
}

impl Activity {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// The recording thread of one learning launch.
#[derive(Debug)]
pub struct Recorder {
    phase: Arc<AtomicU32>,
    stop: Arc<AtomicBool>,
    activity: Arc<Activity>,
    thread: Option<JoinHandle<Result<Recording, LearnError>>>,
}

impl Recorder {
    /// Sets the phase later calls are attributed to (0: start-up; the
    /// caller numbers its session calls from 1).
    pub fn set_phase(&self, phase: u32) {
        self.phase.store(phase, Ordering::SeqCst);
    }

    /// Waits until the listener has arrived and no call has been answered
    /// for `quiet` (the worker waits for its next request), or until `max`
    /// has passed; returns whether it settled. Calls are attributed to the
    /// phase current when they are answered, so a caller settles before it
    /// changes the phase.
    pub fn settle(&self, quiet: Duration, max: Duration) -> bool {
        let deadline = Instant::now() + max;
        let quiet_ms = u64::try_from(quiet.as_millis()).unwrap_or(u64::MAX);
        loop {
            let a = &self.activity;
            if a.listening.load(Ordering::SeqCst)
                && a.now_ms().saturating_sub(a.last_ms.load(Ordering::SeqCst)) >= quiet_ms
            {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits for the recording to end (every filtered process is gone) and
    /// returns it; after `grace` the thread is told to stop and the
    /// recording so far is refused.
    pub fn finish(mut self, grace: Duration) -> Result<Recording, LearnError> {
        let Some(thread) = self.thread.take() else {
            return Err(LearnError::Panicked);
        };
        let deadline = Instant::now() + grace;
        while !thread.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if !thread.is_finished() {
            self.stop.store(true, Ordering::SeqCst);
            let _ = thread.join();
            return Err(LearnError::Unfinished(grace));
        }
        thread.join().map_err(|_| LearnError::Panicked)?
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

struct Answering {
    arch: Arch,
    production: Option<Vec<SockFilter>>,
    phase: Arc<AtomicU32>,
    stop: Arc<AtomicBool>,
    activity: Arc<Activity>,
    recording: Recording,
    /// Per caller: the index of its last exec and the target's identity.
    pending_exec: BTreeMap<u32, (usize, Option<(u64, u64)>)>,
}

impl Answering {
    fn run(
        mut self,
        host_end: &Mutex<Option<OwnedFd>>,
        timeout: Duration,
    ) -> Result<Recording, LearnError> {
        let deadline = Instant::now() + timeout;
        let socket = loop {
            if self.stop.load(Ordering::SeqCst) || Instant::now() >= deadline {
                return Err(LearnError::NoListener(timeout));
            }
            if let Some(fd) = host_end.lock().ok().and_then(|mut g| g.take()) {
                break fd;
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        let listener = loop {
            if self.stop.load(Ordering::SeqCst) || Instant::now() >= deadline {
                return Err(LearnError::NoListener(timeout));
            }
            match notify::wait_readable(socket.as_fd(), 50).map_err(LearnError::Receive)? {
                Readiness::Readable => {
                    break notify::recv_fd(socket.as_fd()).map_err(LearnError::Receive)?;
                }
                Readiness::Hangup => return Err(LearnError::NoListener(timeout)),
                Readiness::Timeout => {}
            }
        };
        drop(socket);
        self.activity
            .last_ms
            .store(self.activity.now_ms(), Ordering::SeqCst);
        self.activity.listening.store(true, Ordering::SeqCst);
        loop {
            if self.stop.load(Ordering::SeqCst) {
                break;
            }
            match notify::wait_readable(listener.as_fd(), 50).map_err(LearnError::Answer)? {
                Readiness::Timeout => continue,
                Readiness::Hangup => break,
                Readiness::Readable => {}
            }
            let n = match notify::notif_recv(listener.as_fd()) {
                Ok(n) => n,
                // The caller was killed between the poll and the receive.
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(LearnError::Answer(e)),
            };
            let answer = self.record(&listener, &n);
            match notify::notif_send(listener.as_fd(), n.id, answer) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
                Err(e) => return Err(LearnError::Answer(e)),
            }
            self.activity
                .last_ms
                .store(self.activity.now_ms(), Ordering::SeqCst);
        }
        for (index, _) in std::mem::take(&mut self.pending_exec).into_values() {
            self.recording.execs[index].result = ExecResult::Unknown;
        }
        Ok(self.recording)
    }

    fn verdict(&self, data: &SeccompData) -> Verdict {
        let Some(program) = &self.production else {
            return Verdict::Allowed;
        };
        let ret = match splash_seccomp::interp::execute(program, data) {
            Ok(e) => e.ret,
            // A program the kernel would refuse never launches; here it
            // denies.
            Err(_) => return Verdict::Unexpected(0),
        };
        match ret & SECCOMP_RET_ACTION_FULL {
            SECCOMP_RET_ALLOW => Verdict::Allowed,
            SECCOMP_RET_ERRNO => Verdict::Guarded((ret & SECCOMP_RET_DATA) as i32),
            SECCOMP_RET_KILL_PROCESS | SECCOMP_RET_KILL_THREAD => {
                if splash_seccomp::syscall_name(self.arch, data.nr).is_some()
                    && data.arch == self.arch.audit_arch()
                {
                    Verdict::Unlisted
                } else {
                    Verdict::Unknown
                }
            }
            other => Verdict::Unexpected(other),
        }
    }

    fn record(&mut self, listener: &OwnedFd, n: &notify::Notification) -> Answer {
        let phase = self.phase.load(Ordering::SeqCst);
        self.recording.notifications += 1;
        self.settle_exec(n.pid);
        let mut data = SeccompData::new(self.arch, n.nr as u32);
        data.arch = n.arch;
        data.instruction_pointer = n.ip;
        data.args = n.args;
        let verdict = self.verdict(&data);
        let name = splash_seccomp::syscall_name(self.arch, data.nr);
        let entry = self
            .recording
            .syscalls
            .entry(data.nr)
            .or_insert_with(|| SyscallUse {
                name,
                first_phase: phase,
                calls: 0,
                verdicts: BTreeMap::new(),
                clone_flags: BTreeSet::new(),
                ioctl_requests: BTreeSet::new(),
            });
        entry.calls += 1;
        entry.verdicts.entry(verdict).or_insert(phase);
        match name {
            Some("clone") => {
                entry
                    .clone_flags
                    .insert(clone_flags(self.arch, &n.args) as u32);
            }
            Some("ioctl") => {
                entry.ioctl_requests.insert(n.args[1] as u32);
            }
            Some(exec @ ("execve" | "execveat")) if runs(verdict) => {
                self.note_exec(listener, n, exec == "execveat", phase);
            }
            _ => {}
        }
        match verdict {
            Verdict::Allowed | Verdict::Unlisted => Answer::Continue,
            Verdict::Guarded(errno) => Answer::Fail(errno),
            Verdict::Unknown => Answer::Fail(libc::ENOSYS),
            Verdict::Unexpected(_) => Answer::Fail(libc::EPERM),
        }
    }

    /// At a caller's next call after an exec: did the exec take effect?
    fn settle_exec(&mut self, pid: u32) {
        let Some((index, target)) = self.pending_exec.remove(&pid) else {
            return;
        };
        let now = std::fs::metadata(format!("/proc/{pid}/exe"))
            .ok()
            .map(|m| (m.dev(), m.ino()));
        self.recording.execs[index].result = match (target, now) {
            (Some(t), Some(n)) if t == n => ExecResult::Ran,
            (Some(_), Some(_)) => ExecResult::Failed,
            _ => ExecResult::Unknown,
        };
    }

    fn note_exec(&mut self, listener: &OwnedFd, n: &notify::Notification, at: bool, phase: u32) {
        let (dirfd, address) = if at {
            (Some(n.args[0] as i32), n.args[1])
        } else {
            (None, n.args[0])
        };
        let Some(named) = read_string(n.pid, address) else {
            return;
        };
        // The path is only trusted if the caller still waits in this call:
        // otherwise the pid may name another process by now.
        if !notify::notif_id_valid(listener.as_fd(), n.id) {
            return;
        }
        let root = PathBuf::from(format!("/proc/{}/root", n.pid));
        let absolute = if named.starts_with('/') {
            Some(named.clone())
        } else {
            let base = match dirfd {
                Some(fd) if fd != libc::AT_FDCWD => {
                    std::fs::read_link(format!("/proc/{}/fd/{fd}", n.pid)).ok()
                }
                _ => std::fs::read_link(format!("/proc/{}/cwd", n.pid)).ok(),
            };
            base.map(|b| {
                let b = b.to_string_lossy().into_owned();
                if named.is_empty() {
                    b
                } else {
                    format!("{}/{named}", b.trim_end_matches('/'))
                }
            })
        };
        let resolved = absolute.as_deref().and_then(|p| resolve_in(&root, p));
        let identity = resolved.as_deref().and_then(|r| {
            notify::open_in_root(&root, r)
                .and_then(|f| f.metadata())
                .ok()
                .map(|m| (m.dev(), m.ino()))
        });
        let (loader, script_interpreter) = resolved
            .as_deref()
            .map(|r| interpreters(&root, r))
            .unwrap_or((None, None));
        self.recording.execs.push(ExecRecord {
            phase,
            named,
            resolved,
            loader,
            script_interpreter,
            result: ExecResult::Unknown,
        });
        let index = self.recording.execs.len() - 1;
        self.pending_exec.insert(n.pid, (index, identity));
    }
}

fn runs(v: Verdict) -> bool {
    matches!(v, Verdict::Allowed | Verdict::Unlisted)
}

/// The `clone` flags argument: the first on every supported architecture.
fn clone_flags(_arch: Arch, args: &[u64; 6]) -> u64 {
    args[0]
}

/// A NUL-terminated string at `address` in `pid`'s memory.
fn read_string(pid: u32, address: u64) -> Option<String> {
    let mem = File::open(format!("/proc/{pid}/mem")).ok()?;
    let mut buf = vec![0u8; PATH_MAX];
    let mut got = 0;
    // Read page by page: the string may end just before an unmapped page.
    while got < PATH_MAX {
        let at = address.checked_add(got as u64)?;
        let page_left = 4096 - (at % 4096) as usize;
        let want = page_left.min(PATH_MAX - got);
        let n = mem.read_at(&mut buf[got..got + want], at).ok()?;
        if n == 0 {
            return None;
        }
        if let Some(end) = buf[got..got + n].iter().position(|&b| b == 0) {
            buf.truncate(got + end);
            return String::from_utf8(buf).ok();
        }
        got += n;
    }
    None
}

/// `path` (absolute, as the sandbox sees it) with every symbolic link
/// resolved inside the sandbox whose root is `root`: the name to report.
/// Files are only ever opened through [`notify::open_in_root`], which
/// cannot leave the sandbox's root; this walk only yields a name.
fn resolve_in(root: &Path, path: &str) -> Option<String> {
    let mut done: Vec<String> = Vec::new();
    let mut todo: Vec<String> = components(path).into_iter().rev().collect();
    let mut links = 0;
    while let Some(part) = todo.pop() {
        if part == ".." {
            done.pop();
            continue;
        }
        let candidate = format!(
            "/{}",
            [done.join("/"), part.clone()]
                .join("/")
                .trim_start_matches('/')
        );
        let host = root.join(candidate.trim_start_matches('/'));
        match std::fs::symlink_metadata(&host) {
            Ok(m) if m.file_type().is_symlink() => {
                links += 1;
                if links > 40 {
                    return None;
                }
                let target = std::fs::read_link(&host).ok()?;
                let target = target.to_string_lossy().into_owned();
                if target.starts_with('/') {
                    done.clear();
                }
                for c in components(&target).into_iter().rev() {
                    todo.push(c);
                }
            }
            Ok(_) => done.push(part),
            Err(_) => return None,
        }
    }
    Some(format!("/{}", done.join("/")))
}

fn components(path: &str) -> Vec<String> {
    Path::new(path)
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            Component::ParentDir => Some("..".to_owned()),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

/// The resolved ELF interpreter and `#!` interpreter of the file at
/// sandbox path `resolved`.
fn interpreters(root: &Path, resolved: &str) -> (Option<String>, Option<String>) {
    let Ok(mut file) = notify::open_in_root(root, resolved) else {
        return (None, None);
    };
    let mut head = vec![0u8; 64 * 1024];
    let mut len = 0;
    while len < head.len() {
        match file.read(&mut head[len..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => len += n,
        }
    }
    head.truncate(len);
    if let Some(rest) = head.strip_prefix(b"#!") {
        let line = rest.split(|&b| b == b'\n').next().unwrap_or_default();
        let text = String::from_utf8_lossy(line);
        let interp = text.split_whitespace().next().map(str::to_owned);
        return (None, interp.and_then(|i| resolve_in(root, &i)));
    }
    let interp = elf_interpreter(&file, &head);
    (interp.and_then(|i| resolve_in(root, &i)), None)
}

/// `PT_INTERP` of a 64-bit little-endian ELF file.
fn elf_interpreter(file: &File, head: &[u8]) -> Option<String> {
    if head.len() < 64 || &head[..4] != b"\x7fELF" || head[4] != 2 || head[5] != 1 {
        return None;
    }
    let u16_at = |o: usize| Some(u16::from_le_bytes(head.get(o..o + 2)?.try_into().ok()?));
    let u64_at = |b: &[u8], o: usize| Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?));
    let phoff = usize::try_from(u64_at(head, 32)?).ok()?;
    let phentsize = usize::from(u16_at(54)?);
    let phnum = usize::from(u16_at(56)?);
    for i in 0..phnum {
        let at = phoff.checked_add(i.checked_mul(phentsize)?)?;
        let ph = head.get(at..at.checked_add(56)?)?;
        if u32::from_le_bytes(ph[..4].try_into().ok()?) == 3 {
            let offset = u64_at(ph, 8)?;
            let size = usize::try_from(u64_at(ph, 32)?).ok()?.min(PATH_MAX);
            let mut buf = vec![0u8; size];
            file.read_exact_at(&mut buf, offset).ok()?;
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            return String::from_utf8(buf[..end].to_vec()).ok();
        }
    }
    None
}
