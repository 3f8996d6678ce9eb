//! One prepared launch: the program, its arguments and the descriptors
//! the child inherits.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

use crate::devices::DeviceDirectory;

/// `/proc/self/fd/N` for a descriptor of this process.
pub(crate) fn proc_fd_path(fd: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// What the launch arguments hold for a learning plan's listener slot
/// until the learning preparation ([`crate::learn`]) puts the socket's
/// descriptor number there.
pub(crate) const LISTENER_PLACEHOLDER: &str = "{learn-listener}";

/// One prepared launch: the program, its arguments and the descriptors the
/// child inherits. A cgroup runner can [`wrap`](Self::wrap) it.
#[derive(Debug)]
pub struct LaunchSpec {
    pub(crate) program: PathBuf,
    /// Shown in errors instead of `/proc/self/fd/N`.
    pub(crate) shown: String,
    pub(crate) args: Vec<String>,
    /// Made inheritable in the child only.
    pub(crate) inherit: Vec<OwnedFd>,
    /// Kept open (close-on-exec) until the exec, e.g. the pinned Bubblewrap.
    pub(crate) keep_open: Vec<OwnedFd>,
    /// The private device nodes the arguments name, if any.
    pub(crate) devices: Option<DeviceDirectory>,
    /// The read end of the pipe Bubblewrap reports the sandbox's pid 1 on
    /// (`--info-fd`, [`crate::sandbox_init`]).
    pub(crate) init_report: Option<OwnedFd>,
}

impl LaunchSpec {
    /// The program the launch executes (Bubblewrap, or the cgroup runner
    /// in front of it).
    pub fn program(&self) -> &std::path::Path {
        &self.program
    }

    /// Its arguments.
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// The private device directory the arguments name, if any.
    pub fn device_directory(&self) -> Option<&DeviceDirectory> {
        self.devices.as_ref()
    }

    /// Descriptor numbers the child inherits.
    pub fn inherited(&self) -> Vec<RawFd> {
        self.inherit.iter().map(AsRawFd::as_raw_fd).collect()
    }

    /// Puts `fd` where the plan holds its learning listener slot and makes
    /// it inherited; `false` when the arguments hold no such slot.
    pub(crate) fn fill_learn_listener(&mut self, fd: OwnedFd) -> bool {
        let number = fd.as_raw_fd().to_string();
        let mut filled = false;
        for arg in &mut self.args {
            if arg == LISTENER_PLACEHOLDER {
                arg.clone_from(&number);
                filled = true;
            }
        }
        if filled {
            self.inherit.push(fd);
        }
        filled
    }

    /// Prefixes the launch with `program prefix_args...`: the old program
    /// becomes the first argument after `prefix_args`. A descriptor the old
    /// program is reached through (`/proc/self/fd/N` of the pinned
    /// Bubblewrap) becomes inherited, because the wrapper, not this process,
    /// executes it. The wrapper must keep that descriptor open until its exec
    /// and mark it close-on-exec first, as Splash's own launch does, so that
    /// Bubblewrap and the worker never inherit it.
    pub fn wrap(&mut self, program: PathBuf, prefix_args: Vec<String>, inherit: Vec<OwnedFd>) {
        let old = std::mem::replace(&mut self.program, program);
        let mut args = prefix_args;
        args.push(old.display().to_string());
        args.append(&mut self.args);
        self.args = args;
        self.inherit.append(&mut self.keep_open);
        self.inherit.extend(inherit);
    }
}
