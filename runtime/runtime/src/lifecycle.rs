//! The lifecycle of one launched Bubblewrap process.
//!
//! Bubblewrap runs with `--die-with-parent` and `--unshare-pid`, so killing
//! the direct child (SIGKILL) takes the whole sandbox pid namespace with it.
//! A [`WorkerLifecycle`] always reaps what it started: [`Drop`] kills and
//! waits if the host did not.
//!
//! `--die-with-parent` is bound to the *thread* that spawned Bubblewrap
//! (`PR_SET_PDEATHSIG` fires when that thread exits): spawn from a thread
//! that lives as long as the worker should.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use crate::devices::DeviceDirectory;

/// What the host knows about the Bubblewrap process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerStatus {
    Running,
    /// Exited with this status code.
    Exited(i32),
    /// Terminated by this signal.
    Killed(i32),
}

impl WorkerStatus {
    fn from_exit(status: ExitStatus) -> Self {
        match (status.code(), status.signal()) {
            (Some(code), _) => Self::Exited(code),
            (None, Some(signal)) => Self::Killed(signal),
            // Neither a code nor a signal cannot happen for a reaped child;
            // report it as a kill rather than success.
            (None, None) => Self::Killed(0),
        }
    }
}

impl std::fmt::Display for WorkerStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Running => f.write_str("running"),
            Self::Exited(code) => write!(f, "exit status {code}"),
            Self::Killed(signal) => write!(f, "signal {signal}"),
        }
    }
}

pub(crate) fn describe_status(status: ExitStatus) -> String {
    WorkerStatus::from_exit(status).to_string()
}

/// Owns the Bubblewrap child process.
#[derive(Debug)]
pub struct WorkerLifecycle {
    child: Child,
    reaped: Option<WorkerStatus>,
    /// The launch's private device nodes: removed once the worker is reaped.
    devices: Option<DeviceDirectory>,
}

impl WorkerLifecycle {
    pub(crate) fn new(child: Child, devices: Option<DeviceDirectory>) -> Self {
        Self {
            child,
            reaped: None,
            devices,
        }
    }

    fn reaped(&mut self, status: WorkerStatus) -> WorkerStatus {
        self.reaped = Some(status);
        // Nothing in the sandbox uses the nodes any more.
        self.devices = None;
        status
    }

    /// The host pid of the Bubblewrap process.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The current status without blocking.
    pub fn try_status(&mut self) -> io::Result<WorkerStatus> {
        if let Some(s) = self.reaped {
            return Ok(s);
        }
        match self.child.try_wait()? {
            Some(status) => Ok(self.reaped(WorkerStatus::from_exit(status))),
            None => Ok(WorkerStatus::Running),
        }
    }

    /// Blocks until Bubblewrap exits and reaps it.
    pub fn wait(&mut self) -> io::Result<WorkerStatus> {
        if let Some(s) = self.reaped {
            return Ok(s);
        }
        let s = WorkerStatus::from_exit(self.child.wait()?);
        Ok(self.reaped(s))
    }

    /// Waits at most `timeout` for an exit; `Running` when it did not come.
    pub fn wait_timeout(&mut self, timeout: Duration) -> io::Result<WorkerStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            let s = self.try_status()?;
            if s != WorkerStatus::Running || Instant::now() >= deadline {
                return Ok(s);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Force-stops the sandbox (SIGKILL to Bubblewrap; its pid namespace dies
    /// with it) and reaps it. Returns the final status; a worker that had
    /// already exited keeps its own status.
    pub fn terminate(&mut self) -> io::Result<WorkerStatus> {
        if let Some(s) = self.reaped {
            return Ok(s);
        }
        if self.try_status()? == WorkerStatus::Running {
            self.child.kill()?;
        }
        self.wait()
    }

    /// Explains a session that could not start: waits briefly for the
    /// Bubblewrap process and reports how it ended. Bubblewrap's diagnostics
    /// go to `/dev/null`, so the exit status is what the host can report.
    pub fn startup_failure(&mut self) -> LaunchFailure {
        match self.wait_timeout(Duration::from_secs(2)) {
            Ok(WorkerStatus::Running) => {
                let _ = self.terminate();
                LaunchFailure::NoSession
            }
            Ok(status) => LaunchFailure::Exited(status),
            Err(e) => LaunchFailure::Unknown(e),
        }
    }
}

impl Drop for WorkerLifecycle {
    fn drop(&mut self) {
        let _ = self.terminate();
    }
}

/// Why a worker session did not start.
#[derive(Debug, thiserror::Error)]
pub enum LaunchFailure {
    #[error(
        "bubblewrap ended with {0} before the session started (an unsupported option, a failed mount, a failed exec or a rejected bootstrap)"
    )]
    Exited(WorkerStatus),
    #[error("the worker did not answer and was killed")]
    NoSession,
    #[error("failed to observe the bubblewrap process")]
    Unknown(#[source] io::Error),
}
