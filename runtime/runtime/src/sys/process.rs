//! Processes held by pidfd: reaping (`waitid(P_PIDFD)`), killing
//! (`pidfd_send_signal(2)`), `pidfd_open(2)` and its fdinfo, and the
//! process's own uid.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

/// The process's real user id (the uid Bubblewrap gives the worker).
pub fn real_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// Reaps the child behind `pidfd` (`waitid(P_PIDFD, WEXITED)`), blocking
/// until it exits when `block`; `None` when it still runs. The result is in
/// the `wait(2)` status encoding ([`std::process::ExitStatus::from_raw`]).
pub fn wait_child(pidfd: BorrowedFd<'_>, block: bool) -> io::Result<Option<i32>> {
    use rustix::process::{WaitId, WaitIdOptions, waitid};

    let mut options = WaitIdOptions::EXITED;
    if !block {
        options |= WaitIdOptions::NOHANG;
    }
    let status = loop {
        match waitid(WaitId::PidFd(pidfd), options) {
            Err(rustix::io::Errno::INTR) => continue,
            other => break other?,
        }
    };
    Ok(status.map(|s| {
        if let Some(code) = s.exit_status() {
            (code & 0xff) << 8
        } else {
            let signal = s.terminating_signal().unwrap_or(0) & 0x7f;
            if s.dumped() { signal | 0x80 } else { signal }
        }
    }))
}

/// Sends SIGKILL to the process behind `pidfd` (`pidfd_send_signal(2)`).
pub fn kill_child(pidfd: BorrowedFd<'_>) -> io::Result<()> {
    Ok(rustix::process::pidfd_send_signal(
        pidfd,
        rustix::process::Signal::KILL,
    )?)
}

/// A pidfd for `pid` (`pidfd_open(2)`), close-on-exec. Unlike the pidfd
/// [`spawn_child`] makes, this one is opened by number: the caller must
/// confirm it names the process it means ([`pidfd_info`]).
pub fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    let raw = i32::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let pid = rustix::process::Pid::from_raw(raw)
        .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    Ok(rustix::process::pidfd_open(
        pid,
        rustix::process::PidfdFlags::empty(),
    )?)
}

/// What `/proc/self/fdinfo/N` says of a pidfd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PidfdInfo {
    /// `Pid:` in this process's pid namespace; `None` once reaped (`-1`).
    pub pid: Option<u32>,
    /// The last `NSpid:` field: its pid in its own innermost namespace.
    pub innermost: Option<u32>,
    /// How many `NSpid:` fields there are (namespace levels from ours).
    pub levels: usize,
    /// The second `NSpid:` field: its pid in the namespace one level below
    /// ours (a launch's own namespace, whose pid 1 this process started).
    pub one_below: Option<u32>,
}

/// Reads the `Pid:` and `NSpid:` lines of a pidfd's fdinfo.
pub fn pidfd_info(pidfd: BorrowedFd<'_>) -> io::Result<PidfdInfo> {
    let text = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", pidfd.as_raw_fd()))?;
    let mut info = PidfdInfo {
        pid: None,
        innermost: None,
        levels: 0,
        one_below: None,
    };
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("Pid:") {
            info.pid = v.trim().parse::<u32>().ok();
        } else if let Some(v) = line.strip_prefix("NSpid:") {
            let fields: Vec<&str> = v.split_whitespace().collect();
            info.levels = fields.len();
            info.innermost = fields.last().and_then(|f| f.parse::<u32>().ok());
            info.one_below = fields.get(1).and_then(|f| f.parse::<u32>().ok());
        }
    }
    Ok(info)
}

/// `CAP_SYS_ADMIN`'s bit in a capability set.
const CAP_SYS_ADMIN: u32 = 21;

/// Whether this process holds `CAP_SYS_ADMIN` in its effective set (the
/// `CapEff:` line of `/proc/self/status`): what making a pid namespace
/// needs. An unreadable or unparsable line answers `false`.
pub fn has_sys_admin() -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
}
