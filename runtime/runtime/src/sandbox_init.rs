//! The sandbox's own pid 1, held by a pidfd.
//!
//! Every plan runs Bubblewrap with `--unshare-pid --as-pid-1`: the worker is
//! pid 1 of the sandbox's pid namespace, a child of the Bubblewrap process
//! the host started. Killing Bubblewrap alone does not end the sandbox: it
//! relies on the parent-death signal `--die-with-parent` gives the worker,
//! and the worker can clear that with `prctl(PR_SET_PDEATHSIG, 0)`. What
//! ends the whole namespace, every process in it and in any namespace below
//! it, is the death of its pid 1. So the launch asks Bubblewrap for it:
//!
//! 1. spawn adds `--info-fd N` for a private pipe; Bubblewrap writes
//!    `{"child-pid": P, "pid-namespace": I, ...}` right after it created
//!    the sandbox and closes the pipe, before it lets pid 1 go on;
//!    When the launched process is pid 1 of a pid namespace of its own
//!    (a host with `CAP_SYS_ADMIN`, [`crate::spawn`]), `P` is in that
//!    namespace's numbering: the host pid is the launched process's child
//!    whose second `NSpid` field is `P`;
//! 2. the host opens a pidfd for `P` and confirms it names that pid 1:
//!    `/proc/P/ns/pid` is namespace `I`, the pidfd's `NSpid` ends in `1`,
//!    and, read afterwards, the pidfd's `Pid` is still `P` (the process was
//!    not reaped in between, so the two `/proc` reads saw it and not a
//!    process that reused its pid). A pid 1 that is already gone needs no
//!    pidfd: its namespace died with it;
//! 3. a stop sends SIGKILL through that pidfd and waits until it is
//!    readable (pid 1 exited; the kernel has then killed and waited for
//!    every other process of its namespace). Only then is a stop complete.
//!
//! The report is read in step 2 of spawn, right after the bootstrap is
//! written (the worker cannot answer before Bubblewrap made the sandbox), and
//! again, without blocking, by a stop that comes before it: a Bubblewrap
//! killed after it wrote the report leaves the pid in the pipe.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::sys;

/// How long a launch waits for Bubblewrap's `--info-fd` report.
pub(crate) const REPORT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a stop waits for the sandbox's pid 1 to exit after SIGKILL.
pub(crate) const EXIT_TIMEOUT: Duration = Duration::from_secs(5);

/// The largest report accepted (Bubblewrap's is about 250 bytes).
const REPORT_MAX: usize = 4096;

/// Why the sandbox's pid 1 could not be held or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxInitError {
    /// Bubblewrap did not send its `--info-fd` report in time.
    #[error("bubblewrap did not report the sandbox's pid 1 on --info-fd within {0:?}")]
    NoReport(Duration),
    /// The report was not Bubblewrap's JSON object with `child-pid` and
    /// `pid-namespace`.
    #[error("bubblewrap's --info-fd report could not be read: {0}")]
    BadReport(String),
    /// Reading the report or confirming the process failed.
    #[error("failed to confirm the sandbox's pid 1 (host pid {pid})")]
    Confirm {
        /// The host pid Bubblewrap reported.
        pid: u32,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The sandbox's pid 1 did not exit after SIGKILL.
    #[error(
        "the sandbox's pid 1 (host pid {pid}) is still running {waited:?} after SIGKILL: its pid namespace may still hold processes"
    )]
    Survived {
        /// Its host pid.
        pid: u32,
        /// How long the stop waited.
        waited: Duration,
    },
}

#[derive(Debug)]
enum State {
    /// The report has not been read to its end yet.
    Pending { pipe: File, bytes: Vec<u8> },
    /// Pid 1 is held by this pidfd.
    Held { pid: u32, pidfd: OwnedFd },
    /// Bubblewrap closed the pipe without a report: it ended before it
    /// made the sandbox (option parsing, a refused argument).
    Unmade,
    /// Pid 1 is gone, its namespace with it.
    Gone,
}

/// The sandbox's pid 1 of one launch.
#[derive(Debug)]
pub(crate) struct SandboxInit {
    state: State,
    /// The host pid of the launched process when it is pid 1 of a pid
    /// namespace of its own: Bubblewrap's `child-pid` is then in that
    /// namespace's numbering.
    launcher: Option<u32>,
}

impl SandboxInit {
    /// Reads Bubblewrap's report from the read end of the `--info-fd` pipe.
    pub(crate) fn new(pipe: OwnedFd) -> Self {
        Self {
            state: State::Pending {
                pipe: File::from(pipe),
                bytes: Vec::new(),
            },
            launcher: None,
        }
    }

    /// Whether the launched process is pid 1 of a pid namespace of its own.
    pub(crate) fn in_own_namespace(&self) -> bool {
        self.launcher.is_some()
    }

    /// The launched process (host pid `launcher`) is pid 1 of its own pid
    /// namespace, so the report numbers the sandbox's pid 1 in it.
    pub(crate) fn launched_in_own_namespace(&mut self, launcher: u32) {
        self.launcher = Some(launcher);
    }

    /// True when Bubblewrap closed the report pipe without a word: it ended
    /// before it made the sandbox, so no worker ever ran.
    pub(crate) fn unmade(&self) -> bool {
        matches!(self.state, State::Unmade)
    }

    /// The host pid of pid 1, once held.
    pub(crate) fn pid(&self) -> Option<u32> {
        match self.state {
            State::Held { pid, .. } => Some(pid),
            _ => None,
        }
    }

    /// Reads the report to its end (waiting at most `timeout`) and holds pid
    /// 1. Does nothing once the report was read.
    pub(crate) fn read_report(&mut self, timeout: Duration) -> Result<(), SandboxInitError> {
        let State::Pending { pipe, bytes } = &mut self.state else {
            return Ok(());
        };
        let until = Instant::now() + timeout;
        let mut chunk = [0u8; 512];
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let ready = sys::wait_readable(pipe.as_fd(), left)
                .map_err(|source| SandboxInitError::Confirm { pid: 0, source })?;
            if !ready {
                if Instant::now() >= until {
                    return Err(SandboxInitError::NoReport(timeout));
                }
                continue;
            }
            match pipe.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    bytes.extend_from_slice(&chunk[..n]);
                    if bytes.len() > REPORT_MAX {
                        return Err(SandboxInitError::BadReport(format!(
                            "more than {REPORT_MAX} bytes"
                        )));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => return Err(SandboxInitError::Confirm { pid: 0, source }),
            }
        }
        let report = std::mem::take(bytes);
        self.state = if report.is_empty() {
            State::Unmade
        } else {
            let (reported, namespace) = parse_report(&report)?;
            let host = match self.launcher {
                None => Some(reported),
                Some(launcher) => host_pid(launcher, reported)?,
            };
            match host.map(|pid| (pid, confirm(pid, namespace))) {
                Some((pid, Ok(Some(pidfd)))) => State::Held { pid, pidfd },
                Some((_, Ok(None))) | None => State::Gone,
                Some((_, Err(e))) => return Err(e),
            }
        };
        Ok(())
    }

    /// SIGKILL to pid 1 (which takes its whole namespace with it). A report
    /// not read yet is read first, waiting at most `timeout`.
    pub(crate) fn kill(&mut self, timeout: Duration) -> Result<(), SandboxInitError> {
        self.read_report(timeout)?;
        if let State::Held { pid, pidfd } = &self.state {
            match sys::kill_child(pidfd.as_fd()) {
                Ok(()) => {}
                // Already exited (and reaped by its parent).
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                Err(source) => return Err(SandboxInitError::Confirm { pid: *pid, source }),
            }
        }
        Ok(())
    }

    /// Waits at most `timeout` for pid 1 to exit; once it has, its namespace
    /// is empty and nothing more is held.
    pub(crate) fn await_exit(&mut self, timeout: Duration) -> Result<(), SandboxInitError> {
        let State::Held { pid, pidfd } = &self.state else {
            return Ok(());
        };
        let pid = *pid;
        let until = Instant::now() + timeout;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match sys::wait_readable(pidfd.as_fd(), left) {
                Ok(true) => break,
                Ok(false) if Instant::now() >= until => {
                    return Err(SandboxInitError::Survived {
                        pid,
                        waited: timeout,
                    });
                }
                Ok(false) => {}
                Err(source) => return Err(SandboxInitError::Confirm { pid, source }),
            }
        }
        self.state = State::Gone;
        Ok(())
    }
}

/// `child-pid` and `pid-namespace` of Bubblewrap's `--info-fd` JSON.
fn parse_report(bytes: &[u8]) -> Result<(u32, u64), SandboxInitError> {
    let bad = |what: &str| SandboxInitError::BadReport(what.to_owned());
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| SandboxInitError::BadReport(e.to_string()))?;
    let pid = value
        .get("child-pid")
        .and_then(serde_json::Value::as_u64)
        .and_then(|p| u32::try_from(p).ok())
        .filter(|p| *p > 1)
        .ok_or_else(|| bad("no valid `child-pid`"))?;
    let namespace = value
        .get("pid-namespace")
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| bad("no `pid-namespace`"))?;
    Ok((pid, namespace))
}

/// The host pid of the launcher's child that its own pid namespace numbers
/// `reported`; `None` when it has no such child any more (it exited, and
/// its namespace died with it; or the launcher itself is gone, and with it,
/// as pid 1 of the namespace the sandbox is nested in, every process of the
/// sandbox).
fn host_pid(launcher: u32, reported: u32) -> Result<Option<u32>, SandboxInitError> {
    let fail = |source: io::Error| SandboxInitError::Confirm {
        pid: reported,
        source,
    };
    let children =
        match std::fs::read_to_string(format!("/proc/{launcher}/task/{launcher}/children")) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(fail(e)),
        };
    for child in children.split_whitespace() {
        let Ok(pid) = child.parse::<u32>() else {
            continue;
        };
        let pidfd = match sys::pidfd_open(pid) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => continue,
            Err(e) => return Err(fail(e)),
        };
        let info = sys::pidfd_info(pidfd.as_fd()).map_err(fail)?;
        if info.pid == Some(pid) && info.one_below == Some(reported) {
            return Ok(Some(pid));
        }
    }
    Ok(None)
}

/// A pidfd for `pid` if it is still the pid 1 of pid namespace `namespace`;
/// `None` when that process is gone (module documentation, step 2).
fn confirm(pid: u32, namespace: u64) -> Result<Option<OwnedFd>, SandboxInitError> {
    let fail = |source: io::Error| SandboxInitError::Confirm { pid, source };
    let pidfd = match sys::pidfd_open(pid) {
        Ok(fd) => fd,
        // Exited and reaped: the namespace died with it.
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Ok(None),
        Err(e) => return Err(fail(e)),
    };
    let link = std::fs::read_link(format!("/proc/{pid}/ns/pid"));
    let fdinfo = sys::pidfd_info(pidfd.as_fd()).map_err(fail)?;
    if fdinfo.pid != Some(pid) {
        // Reaped since the open: whatever `/proc/{pid}` showed, pid 1 is gone.
        return Ok(None);
    }
    let link = match link {
        Ok(link) => link,
        // A zombie has no namespaces to show: it exited, and its namespace
        // with it.
        Err(_) if sys::wait_readable(pidfd.as_fd(), Duration::ZERO).map_err(fail)? => {
            return Ok(None);
        }
        Err(e) => return Err(fail(e)),
    };
    if link.as_os_str() != format!("pid:[{namespace}]").as_str() {
        // The pid names another process now: pid 1 was reaped before the
        // open, and its namespace died with it.
        return Ok(None);
    }
    if fdinfo.innermost != Some(1) || fdinfo.levels < 2 {
        return Err(fail(io::Error::other(format!(
            "host pid {pid} of namespace {namespace} is not pid 1 of a nested pid namespace"
        ))));
    }
    Ok(Some(pidfd))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_needs_a_child_pid_and_a_pid_namespace() {
        let good = br#"{
    "child-pid": 5817,
    "cgroup-namespace": 4026532182,
    "pid-namespace": 4026532181
}
"#;
        assert_eq!(parse_report(good).expect("report"), (5817, 4026532181));
        for bad in [
            &b"{}"[..],
            b"{\"child-pid\": 12}",
            b"{\"pid-namespace\": 1}",
            b"{\"child-pid\": 1, \"pid-namespace\": 1}",
            b"{\"child-pid\": -3, \"pid-namespace\": 1}",
            b"{\"child-pid\": 99999999999, \"pid-namespace\": 1}",
            b"not json",
        ] {
            assert!(
                matches!(parse_report(bad), Err(SandboxInitError::BadReport(_))),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
