//! Emission: the one Bubblewrap argument-list builder.
//!
//! [`LaunchPlan::bwrap_arguments`] renders the plan's setup operations and
//! command. Descriptor slots are rendered by the caller: [`display_slot`]
//! produces review placeholders (`splashc emit`), the runtime passes the
//! descriptor numbers it allocated for one launch. Nothing else in the
//! workspace builds a Bubblewrap argv.
//!
//! Display placeholders:
//!
//! | slot | placeholder |
//! |---|---|
//! | pin `N` of host path `P` | `{fd:pin:N:P}` |
//! | the filter for bwrap `--seccomp` | `{fd:seccomp}` |
//! | the filter for the runner handoff | `{fd:runner-seccomp}` |
//! | the source of device node `NAME` | `{dev:NAME}` |

use crate::plan::{BwrapOp, DeviceNode, ExecArg, LaunchPlan, MountPoint, MountSource, Slot};

/// Bubblewrap refuses a command line whose `argc` (program name included)
/// exceeds this (`MAX_ARGS` in `bubblewrap.c`).
pub const BWRAP_MAX_ARGS: usize = 9000;
/// Longest single argument the kernel accepts (`MAX_ARG_STRLEN`, 32 pages,
/// including the terminating NUL).
pub const MAX_ARG_BYTES: usize = 32 * 4096 - 1;
/// Total argument bytes (strings, NULs and pointers) that every Linux kernel
/// accepts whatever the stack limit (32 pages). Plans are held to this floor
/// so that a launch never depends on the host's `RLIMIT_STACK`.
pub const MAX_ARGV_BYTES: usize = 32 * 4096;
/// Widest rendering of a descriptor number (`i32::MAX`), used to bound the
/// real argument list without knowing which descriptors a launch will get.
const WIDEST_FD: &str = "2147483647";
/// Longest device-node source path a runtime may render for
/// [`Slot::Device`]; the argument limits count every such source at this
/// length, and the runtime refuses a longer one.
pub const DEVICE_SOURCE_MAX_BYTES: usize = 255;

/// Why an argument list would be refused by bwrap or the kernel.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArgvError {
    /// More arguments than Bubblewrap accepts.
    #[error(
        "{count} arguments; bubblewrap accepts at most {BWRAP_MAX_ARGS} including its own name"
    )]
    TooManyArguments {
        /// How many arguments the plan has.
        count: usize,
    },
    /// One argument longer than the kernel accepts.
    #[error("argument {index} is {len} bytes; the kernel accepts at most {MAX_ARG_BYTES}")]
    ArgumentTooLong {
        /// The argument's position.
        index: usize,
        /// Its length in bytes.
        len: usize,
    },
    /// More argument bytes than every host accepts.
    #[error(
        "the arguments take {bytes} bytes; at most {MAX_ARGV_BYTES} are accepted on every host"
    )]
    TooManyBytes {
        /// The total size in bytes.
        bytes: usize,
    },
    /// An argument with a NUL byte.
    #[error("argument {index} contains a NUL byte")]
    Nul {
        /// The argument's position.
        index: usize,
    },
}

impl LaunchPlan {
    /// Every argument after the bwrap program name, in emission order.
    pub fn bwrap_arguments(&self, render: &mut dyn FnMut(Slot) -> String) -> Vec<String> {
        let mut out = Vec::new();
        for op in self.ops() {
            render_op(op, render, &mut out);
        }
        out.push("--".to_string());
        for arg in self.command() {
            match arg {
                ExecArg::Literal(s) => out.push(s.clone()),
                ExecArg::Slot(slot) => out.push(render(*slot)),
            }
        }
        out
    }

    /// The program to execute: the policy's bwrap path, or
    /// `/proc/self/fd/N` when bwrap itself is pinned.
    pub fn bwrap_program(&self, render: &mut dyn FnMut(Slot) -> String) -> String {
        match self.bwrap_pin() {
            Some(slot) => format!("/proc/self/fd/{}", render(Slot::Pin(slot))),
            None => self.bwrap().to_string(),
        }
    }

    /// The full command line (program, then arguments) with display
    /// placeholders for every descriptor.
    pub fn display_command_line(&self) -> Vec<String> {
        let mut render = |slot| display_slot(self, slot);
        let mut out = vec![self.bwrap_program(&mut render)];
        out.extend(self.bwrap_arguments(&mut render));
        out
    }
}

/// The display placeholder of `slot` (see the module documentation).
pub fn display_slot(plan: &LaunchPlan, slot: Slot) -> String {
    match slot {
        Slot::Pin(pin) => {
            let path = plan
                .pins()
                .get(usize::from(pin.0))
                .map(|p| p.host_path.to_string())
                .unwrap_or_else(|| "?".to_string());
            format!("{{fd:pin:{}:{path}}}", pin.0)
        }
        Slot::BwrapSeccomp => "{fd:seccomp}".to_string(),
        Slot::RunnerSeccomp => "{fd:runner-seccomp}".to_string(),
        Slot::LearnListener => "{fd:learn-listener}".to_string(),
        Slot::Device(node) => format!("{{dev:{}}}", node.name()),
    }
}

/// One operation as the text of its Bubblewrap arguments, joined by spaces,
/// with the display placeholder of each descriptor slot it names
/// (`{dev:NAME}`, `{fd:seccomp}`; a pin as `{fd:pin:N}`): how a plan check
/// names the operation it expected.
pub fn display_op(op: &BwrapOp) -> String {
    let mut render = |slot| match slot {
        Slot::Pin(pin) => format!("{{fd:pin:{}}}", pin.0),
        Slot::BwrapSeccomp => "{fd:seccomp}".to_string(),
        Slot::RunnerSeccomp => "{fd:runner-seccomp}".to_string(),
        Slot::LearnListener => "{fd:learn-listener}".to_string(),
        Slot::Device(node) => format!("{{dev:{}}}", node.name()),
    };
    let mut out = Vec::new();
    render_op(op, &mut render, &mut out);
    out.join(" ")
}

/// The sandbox path of `node` (`/dev/NAME`).
pub fn device_destination(node: DeviceNode) -> String {
    node.destination()
}

fn mount_point(p: &MountPoint) -> String {
    match p {
        MountPoint::Root => "/".to_string(),
        MountPoint::Path(p) => p.to_string(),
    }
}

fn render_op(op: &BwrapOp, render: &mut dyn FnMut(Slot) -> String, out: &mut Vec<String>) {
    let mut push = |s: &str| out.push(s.to_string());
    match op {
        BwrapOp::Seccomp => {
            push("--seccomp");
            out.push(render(Slot::BwrapSeccomp));
        }
        BwrapOp::UnshareAll => push("--unshare-all"),
        BwrapOp::UnshareUser => push("--unshare-user"),
        BwrapOp::DisableUserns => push("--disable-userns"),
        BwrapOp::CapDropAll => {
            push("--cap-drop");
            push("ALL");
        }
        BwrapOp::ClearEnv => push("--clearenv"),
        BwrapOp::NewSession => push("--new-session"),
        BwrapOp::DieWithParent => push("--die-with-parent"),
        BwrapOp::AsPid1 => push("--as-pid-1"),
        BwrapOp::Chdir(p) => {
            push("--chdir");
            out.push(mount_point(p));
        }
        BwrapOp::Proc(p) => {
            push("--proc");
            out.push(p.to_string());
        }
        BwrapOp::Dev(p) => {
            push("--dev");
            out.push(p.to_string());
        }
        BwrapOp::DevBind(node) => {
            push("--dev-bind");
            out.push(render(Slot::Device(*node)));
            out.push(device_destination(*node));
        }
        BwrapOp::Tmpfs {
            destination,
            size_bytes,
        } => {
            if let Some(size) = size_bytes {
                push("--size");
                out.push(size.to_string());
            }
            out.push("--tmpfs".to_string());
            out.push(destination.to_string());
        }
        BwrapOp::RoBind {
            source,
            destination,
        } => {
            bind(("--ro-bind", "--ro-bind-fd"), source, render, out);
            out.push(destination.to_string());
        }
        BwrapOp::Bind {
            source,
            destination,
        } => {
            bind(("--bind", "--bind-fd"), source, render, out);
            out.push(destination.to_string());
        }
        BwrapOp::RemountRo(p) => {
            push("--remount-ro");
            out.push(mount_point(p));
        }
    }
}

fn bind(
    (by_path, by_fd): (&str, &str),
    source: &MountSource,
    render: &mut dyn FnMut(Slot) -> String,
    out: &mut Vec<String>,
) {
    match source {
        MountSource::Path(p) => {
            out.push(by_path.to_string());
            out.push(p.to_string());
        }
        MountSource::Pinned(slot) => {
            out.push(by_fd.to_string());
            out.push(render(Slot::Pin(*slot)));
        }
    }
}

/// Check the real command line of `plan` (with the widest possible
/// descriptor numbers) against bwrap's and the kernel's argument limits.
pub fn check_argument_limits(plan: &LaunchPlan) -> Result<(), ArgvError> {
    let mut render = |slot| match slot {
        Slot::Device(_) => "/".repeat(DEVICE_SOURCE_MAX_BYTES),
        _ => WIDEST_FD.to_string(),
    };
    let mut argv = vec![plan.bwrap_program(&mut render)];
    argv.extend(plan.bwrap_arguments(&mut render));
    check_argv(&argv)
}

/// Check a complete argv (program name first) against the limits.
pub fn check_argv(argv: &[String]) -> Result<(), ArgvError> {
    if argv.len() > BWRAP_MAX_ARGS {
        return Err(ArgvError::TooManyArguments { count: argv.len() });
    }
    let mut bytes = std::mem::size_of::<usize>(); // the terminating NULL pointer
    for (index, arg) in argv.iter().enumerate() {
        if arg.contains('\0') {
            return Err(ArgvError::Nul { index });
        }
        if arg.len() > MAX_ARG_BYTES {
            return Err(ArgvError::ArgumentTooLong {
                index,
                len: arg.len(),
            });
        }
        bytes += arg.len() + 1 + std::mem::size_of::<usize>();
    }
    if bytes > MAX_ARGV_BYTES {
        return Err(ArgvError::TooManyBytes { bytes });
    }
    Ok(())
}

/// Quote `arg` for a POSIX shell: unchanged when it only has characters no
/// shell treats specially, else in single quotes.
pub fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./=:,+@%".contains(&b));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// One Bubblewrap option the emitter can produce, and the first Bubblewrap
/// release that accepts it. `docs/launch-plan.md` carries the same table; a
/// test keeps the two in step and checks each option against the installed
/// `bwrap --help`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmittedOption {
    /// The option as emitted.
    pub option: &'static str,
    /// The first Bubblewrap release that accepts it.
    pub since: &'static str,
}

/// Every option [`LaunchPlan::bwrap_arguments`] can emit.
pub const EMITTED_OPTIONS: &[EmittedOption] = &[
    EmittedOption {
        option: "--seccomp",
        since: "0.1.0",
    },
    EmittedOption {
        option: "--unshare-all",
        since: "0.1.8",
    },
    EmittedOption {
        option: "--unshare-user",
        since: "0.1.0",
    },
    EmittedOption {
        option: "--disable-userns",
        since: "0.8.0",
    },
    EmittedOption {
        option: "--cap-drop",
        since: "0.2.0",
    },
    EmittedOption {
        option: "--clearenv",
        since: "0.5.0",
    },
    EmittedOption {
        option: "--new-session",
        since: "0.1.5",
    },
    EmittedOption {
        option: "--die-with-parent",
        since: "0.1.8",
    },
    EmittedOption {
        option: "--as-pid-1",
        since: "0.3.0",
    },
    EmittedOption {
        option: "--chdir",
        since: "0.1.0",
    },
    EmittedOption {
        option: "--proc",
        since: "0.1.0",
    },
    EmittedOption {
        option: "--dev",
        since: "0.1.0",
    },
    EmittedOption {
        option: "--dev-bind",
        since: "0.1.0",
    },
    EmittedOption {
        option: "--size",
        since: "0.7.0",
    },
    EmittedOption {
        option: "--tmpfs",
        since: "0.1.0",
    },
    EmittedOption {
        option: "--ro-bind",
        since: "0.1.0",
    },
    EmittedOption {
        option: "--bind",
        since: "0.1.0",
    },
    EmittedOption {
        option: "--ro-bind-fd",
        since: "0.7.0",
    },
    EmittedOption {
        option: "--bind-fd",
        since: "0.7.0",
    },
    EmittedOption {
        option: "--remount-ro",
        since: "0.1.0",
    },
];

/// The options `plan` actually uses (in [`EMITTED_OPTIONS`] order).
pub fn options_used(plan: &LaunchPlan) -> Vec<EmittedOption> {
    let args = plan.bwrap_arguments(&mut |_| String::new());
    let before_command = args.iter().position(|a| a == "--").unwrap_or(args.len());
    EMITTED_OPTIONS
        .iter()
        .filter(|o| args[..before_command].iter().any(|a| a == o.option))
        .copied()
        .collect()
}

/// The oldest Bubblewrap release that accepts every option `plan` uses.
pub fn minimum_bwrap_version(plan: &LaunchPlan) -> &'static str {
    let parse = |v: &str| -> (u32, u32, u32) {
        let mut it = v.split('.').map(|n| n.parse::<u32>().unwrap_or(0));
        (
            it.next().unwrap_or(0),
            it.next().unwrap_or(0),
            it.next().unwrap_or(0),
        )
    };
    options_used(plan)
        .into_iter()
        .map(|o| o.since)
        .max_by_key(|v| parse(v))
        .unwrap_or("0.1.0")
}
