//! Preflight: every check bind makes, with every failure reported. This
//! module holds the report; the checks are bind's own steps.
//!
//! [`preflight()`](crate::preflight()) runs the bind steps of [`crate::bind`] (0 to 8) against
//! this host and records the outcome of each check in order: one
//! [`Check`] per object (the plan's prefix, each pin, each path source,
//! each program of the exec chain, each quota root, the cgroup parent and
//! runner, each read-write root of a root launch, the device nodes). It
//! does not stop at a failure: a check whose input an earlier failure left
//! missing (the options of a Bubblewrap that could not be opened, a program
//! behind a pin that failed) is recorded as [`Outcome::NotRun`], and every
//! other check still runs.
//!
//! [`BoundCommand::bind`](crate::BoundCommand::bind) is the same list of
//! steps run until the first failure, which is its error: the first
//! [`Outcome::Failed`] of a preflight is exactly what bind would return for
//! the same plan, options and host state. There is no second copy of a
//! check.
//!
//! What a preflight does not do that bind does: it does not sweep the
//! cgroup parent of the child cgroups of dead owners (that is maintenance,
//! not a check), and it does not run the host's
//! [`LaunchPreparation`](crate::LaunchPreparation) steps (they prepare a
//! launch and need the bound command). Like bind, a worker that owns the
//! host's device nodes makes it create one directory of private nodes to
//! prove that this host can; the directory is removed before it returns.
//! Nothing else on the host is changed, and nothing is launched except the
//! `--help` of a Bubblewrap that is not an ELF executable.

use crate::error::BindError;

/// A bind step, in the order bind runs them (the numbers of
/// [`crate::bind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Step {
    /// 0: the plan's hardening prefix and architecture.
    Plan,
    /// 0: the plan's network broker against the host's.
    NetworkBroker,
    /// 1: the Bubblewrap program.
    Bubblewrap,
    /// 2: the descriptor pins.
    Pins,
    /// 3: the path-based mount sources.
    PathSources,
    /// 4: every program of the exec chain and every Landlock target.
    ExecChain,
    /// 5: the options the plan passes, against the Bubblewrap build.
    BubblewrapOptions,
    /// 6: project quotas and their aggregate.
    Quotas,
    /// 7: the cgroup-v2 parent and runner.
    Cgroup,
    /// 7: the worker's identity: whether the launch switches to it, and
    /// that it can write every read-write host root.
    Identity,
    /// 8: read-write host roots of a worker that runs as host uid 0.
    WritableRoots,
    /// 8: the sandbox's device nodes.
    DeviceNodes,
}

impl Step {
    /// A short lowercase name (`pins`, `exec chain`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Plan => "plan",
            Self::NetworkBroker => "network broker",
            Self::Bubblewrap => "bubblewrap",
            Self::Pins => "pins",
            Self::PathSources => "path sources",
            Self::ExecChain => "exec chain",
            Self::BubblewrapOptions => "bubblewrap options",
            Self::Quotas => "quota",
            Self::Cgroup => "cgroup",
            Self::Identity => "identity",
            Self::WritableRoots => "read-write roots",
            Self::DeviceNodes => "device nodes",
        }
    }
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One check of a [`Preflight`]: the step and what it looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// The bind step the check belongs to.
    pub step: Step,
    /// What was checked, for people: a host path, a sandbox path, a root
    /// id, `hardening prefix`, ...
    pub subject: String,
}

/// How one [`Check`] ended.
#[derive(Debug)]
pub enum Outcome {
    /// The check passed.
    Passed,
    /// The check failed; bind fails with this error when it is the first.
    Failed(BindError),
    /// The check could not run because an earlier check of step `needs`
    /// failed (its input is missing).
    NotRun {
        /// The step whose failure left the input missing.
        needs: Step,
    },
}

/// Every check bind makes for a plan, in bind's order, with its outcome.
#[derive(Debug, Default)]
pub struct Preflight {
    /// The checks, in the order bind makes them.
    pub checks: Vec<(Check, Outcome)>,
}

impl Preflight {
    /// The failed checks, in order; the first is bind's error.
    pub fn failures(&self) -> impl Iterator<Item = (&Check, &BindError)> {
        self.checks.iter().filter_map(|(c, o)| match o {
            Outcome::Failed(e) => Some((c, e)),
            _ => None,
        })
    }

    /// Whether every check passed: bind would succeed up to its launch
    /// preparations.
    pub fn passed(&self) -> bool {
        self.failures().next().is_none()
    }
}
