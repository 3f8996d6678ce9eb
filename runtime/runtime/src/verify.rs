//! Re-verification of a [`LaunchPlan`] at bind.
//!
//! A plan is data: a host can build or edit one by hand, or lower it for
//! another machine. Its structure holds by construction (a
//! [`LaunchPlan`] is validated when lowered or deserialized: every slot
//! exists, the seccomp program reaches the installer its delivery names);
//! what the launch depends on beyond that is checked again here, before
//! anything is opened or launched:
//!
//! 1. the fixed hardening prefix of the Bubblewrap operations, exactly as
//!    lowering emits it ([`splashpol::plan::hardening_prefix`]), after the optional
//!    `--seccomp` and with the optional user-namespace lockdown in its place,
//!    ending with the six device-node binds after `--dev /dev` (no later
//!    operation may mount `/dev` or a device node again);
//! 2. the architecture: the plan's and its seccomp program's must be this
//!    host's, and the program itself, run in the interpreter, must allow at
//!    least one system call of this host's architecture (a program compiled
//!    for another architecture kills every one of them);
//! 3. the exec chain is split into its programs and the Landlock allowlist
//!    of its runners (`exec_chain`), so bind can check every program and
//!    every allowed target, not only the first program.

use splashpol::plan::{Arch, BwrapOp, ExecArg, LaunchPlan, SeccompPlan};

use crate::error::{BindError, ForeignPart, PlanDefect, Unprovided};

/// Step 1 of the module documentation: the fixed hardening prefix, and no
/// device mount after it.
pub(crate) fn check_prefix(plan: &LaunchPlan) -> Result<(), BindError> {
    // A plan's `--seccomp` is exactly its first operation when Bubblewrap
    // installs the filter, and absent otherwise (a `LaunchPlan` invariant).
    let mut ops = plan.ops();
    if ops.first() == Some(&BwrapOp::Seccomp) {
        ops = &ops[1..];
    }
    let lockdown = ops.get(1) == Some(&BwrapOp::UnshareUser);
    let prefix = splashpol::plan::hardening_prefix(lockdown);
    for (i, want) in prefix.iter().enumerate() {
        if ops.get(i) != Some(want) {
            return Err(BindError::HardeningPrefix {
                position: i,
                expected: splashpol::emit::display_op(want),
                found: ops.get(i).cloned().map(Box::new),
            });
        }
    }
    // The device nodes are bound once: a later `--dev` or `--dev-bind` would
    // mount the host's nodes again over the ones the runtime chose.
    if ops[prefix.len()..]
        .iter()
        .any(|op| matches!(op, BwrapOp::Dev(_) | BwrapOp::DevBind(_)))
    {
        return Err(BindError::Plan(PlanDefect::DeviceOutsidePrefix));
    }
    Ok(())
}

/// Step 2 of the module documentation: the plan's and the seccomp
/// program's architecture are this host's. (The network broker is checked
/// against the host's broker by bind, `crate::broker::check_plan`.)
pub(crate) fn check_arch(plan: &LaunchPlan) -> Result<(), BindError> {
    let host = Arch::host().ok_or(BindError::Unsupported {
        what: Unprovided::HostArch,
    })?;
    if plan.arch() != host {
        return Err(BindError::ForeignArch {
            what: ForeignPart::Plan,
            plan: plan.arch(),
            host,
        });
    }
    if let Some(seccomp) = plan.seccomp() {
        if seccomp.arch != host {
            return Err(BindError::ForeignArch {
                what: ForeignPart::SeccompProgram,
                plan: seccomp.arch,
                host,
            });
        }
        check_program_arch(seccomp, host)?;
    }
    Ok(())
}

/// The program must be valid cBPF and allow at least one system call of the
/// host's architecture.
fn check_program_arch(seccomp: &SeccompPlan, host: Arch) -> Result<(), BindError> {
    use splash_seccomp::bpf::{SECCOMP_RET_ACTION_FULL, SECCOMP_RET_ALLOW};
    use splash_seccomp::{SeccompData, SockFilter};

    // A whole, nonempty number of instructions (a `LaunchPlan` invariant).
    let bytes = &seccomp.program;
    let insns: Vec<SockFilter> = bytes
        .chunks_exact(8)
        .map(|c| {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            SockFilter::from_bytes(b)
        })
        .collect();
    splash_seccomp::interp::verify(&insns)
        .map_err(|e| BindError::Plan(PlanDefect::InvalidSeccomp(e)))?;
    let allows_host = host.syscalls().iter().any(|&(_, nr)| {
        splash_seccomp::interp::execute(&insns, &SeccompData::new(host, nr))
            .is_ok_and(|e| e.ret & SECCOMP_RET_ACTION_FULL == SECCOMP_RET_ALLOW)
    });
    if !allows_host {
        return Err(BindError::ForeignArch {
            what: ForeignPart::SeccompInstructions,
            plan: seccomp.arch,
            host,
        });
    }
    Ok(())
}

/// The runner options that take a value, and the ones that do not.
const RUNNER_OPTIONS_WITH_VALUE: &[&str] = &[
    "--cpu-seconds",
    "--address-space-bytes",
    "--process-count",
    "--open-files",
    "--file-size-bytes",
    "--allow",
    "--seccomp-fd",
    "--learn-fd",
];

/// The programs a launch may execute, as the plan's command names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecChain {
    /// The programs of the exec chain, in order: the first program
    /// Bubblewrap executes, then the program after each runner's `--`; the
    /// last one is the worker.
    pub programs: Vec<String>,
    /// The Landlock allowlist (every `--allow PATH` of the runner segments),
    /// in order, without repetitions.
    pub allowed: Vec<String>,
}

/// The exec chain of `plan` ([`ExecChain`]).
///
/// A runner segment is `PROGRAM [runner options] --`; the first segment that
/// is not one is the worker, and the rest of the command is its arguments.
/// (A worker whose own arguments happen to look like a runner segment makes
/// the next argument count as a program too, which can only add a check.)
pub fn exec_chain(plan: &LaunchPlan) -> Result<ExecChain, BindError> {
    let command = plan.command();
    let mut chain = ExecChain {
        programs: Vec::new(),
        allowed: Vec::new(),
    };
    let mut i = 0;
    loop {
        let program = match command.get(i) {
            Some(ExecArg::Literal(p)) => p.clone(),
            Some(ExecArg::Slot(_)) => {
                return Err(BindError::Plan(PlanDefect::ChainProgramIsSlot));
            }
            None if chain.programs.is_empty() => {
                return Err(BindError::Plan(PlanDefect::NoCommand));
            }
            None => {
                return Err(BindError::Plan(PlanDefect::RunnerWithoutProgram));
            }
        };
        chain.programs.push(program);
        // Walk the runner options; stop at `--` (next program) or at
        // anything else (this program is the worker). The allowlist is
        // collected only once the segment proves to be a runner's.
        let mut allowed = Vec::new();
        let mut j = i + 1;
        let next = loop {
            match command.get(j) {
                Some(ExecArg::Literal(a)) if a == "--" => break Some(j + 1),
                Some(ExecArg::Literal(a)) if RUNNER_OPTIONS_WITH_VALUE.contains(&a.as_str()) => {
                    if a == "--allow" {
                        allowed.push(command.get(j + 1));
                    }
                    j += 2;
                }
                _ => break None,
            }
        };
        let Some(next) = next else {
            return Ok(chain);
        };
        for target in allowed {
            match target {
                Some(ExecArg::Literal(t)) => {
                    if !chain.allowed.contains(t) {
                        chain.allowed.push(t.clone());
                    }
                }
                // `--allow` before the segment's `--` always has a value.
                Some(ExecArg::Slot(_)) | None => {
                    return Err(BindError::Plan(PlanDefect::AllowedTargetIsSlot));
                }
            }
        }
        i = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lowered(file: &str, arch: Arch) -> LaunchPlan {
        let path = format!("{}/../../policies/{file}", env!("CARGO_MANIFEST_DIR"));
        let source = std::fs::read_to_string(&path).expect("policy");
        let outcome = splashpol::check_source(file, &source);
        let policy = outcome.policy.expect("valid policy");
        let activation = splashpol::activate::activate(&policy, None).expect("activate");
        splashpol::lower::lower(&policy, &activation, arch, "test").expect("lower")
    }

    #[test]
    fn exec_chain_names_every_runner_and_the_worker() {
        let plan = lowered("agent-worker.splashpol", Arch::X86_64);
        let chain = exec_chain(&plan).expect("chain");
        assert_eq!(
            chain.programs,
            [
                "/opt/splash/bin/splash-landlock-runner",
                "/opt/splash/bin/splash-limit-runner",
                "/opt/splash/bin/worker",
            ]
        );
        // The worker and the limit runner, then the explicit targets.
        assert_eq!(
            chain.allowed,
            [
                "/opt/splash/bin/worker",
                "/opt/splash/bin/splash-limit-runner",
                "/opt/splash/lib/ld-linux-aarch64.so.1",
                "/opt/splash/bin/reviewed-interpreter",
            ]
        );
        let plan = lowered("one-hop.splashpol", Arch::X86_64);
        let chain = exec_chain(&plan).expect("chain");
        assert_eq!(chain.programs.len(), 2, "{chain:?}");
        assert_eq!(chain.allowed[0], chain.programs[1], "{chain:?}");
        let plan = lowered("minimal.splashpol", Arch::X86_64);
        let chain = exec_chain(&plan).expect("chain");
        assert_eq!(chain.programs.len(), 1);
        assert!(chain.allowed.is_empty(), "{chain:?}");
    }

    #[test]
    fn every_lowered_policy_has_the_hardening_prefix() {
        let dir = format!("{}/../../policies", env!("CARGO_MANIFEST_DIR"));
        for entry in std::fs::read_dir(dir).expect("policies") {
            let name = entry.expect("entry").file_name();
            let name = name.to_string_lossy();
            let plan = lowered(&name, Arch::X86_64);
            check_prefix(&plan).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn a_program_for_another_architecture_allows_nothing_here() {
        let plan = lowered("agent-worker.splashpol", Arch::Aarch64);
        let seccomp = plan.seccomp().expect("seccomp");
        assert!(check_program_arch(seccomp, Arch::X86_64).is_err());
        assert!(check_program_arch(seccomp, Arch::Aarch64).is_ok());
    }
}
