//! How a worker process ended, and why a session did not start.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

/// What the host knows about the Bubblewrap process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerStatus {
    /// Not reaped yet.
    Running,
    /// Exited with this status code.
    Exited(i32),
    /// Terminated by this signal.
    Killed(i32),
}

impl WorkerStatus {
    pub(crate) fn from_exit(status: ExitStatus) -> Self {
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

/// Why a worker session did not start.
#[derive(Debug, thiserror::Error)]
pub enum LaunchFailure {
    /// Bubblewrap ended before the session started (its status).
    #[error(
        "bubblewrap ended with {0} before the session started (an unsupported option, a failed mount, a failed exec or a rejected bootstrap)"
    )]
    Exited(WorkerStatus),
    /// The worker did not answer in time and was killed.
    #[error("the worker did not answer and was killed")]
    NoSession,
    /// Waiting for the Bubblewrap process failed.
    #[error("failed to observe the bubblewrap process")]
    Unknown(#[source] io::Error),
}
