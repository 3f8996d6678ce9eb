//! Derived plans: the edits `splashc test` and the escape battery make to a
//! lowered plan (the probe in the worker's place, a control launch without
//! a layer), as named operations on the plan's own structure.
//!
//! A [`PlanEdit`] holds the plan's fields while it is edited; only
//! [`PlanEdit::finish`] gives a [`LaunchPlan`] back, through the same
//! validation a lowered or deserialized plan goes through.

use super::{BwrapOp, ExecArg, LaunchPlan, MountSource, PinRole, PlanError, RawPlan};
use crate::model::{HostPath, SandboxPath};

/// A plan being edited ([`LaunchPlan::edit`]).
#[derive(Debug, Clone)]
pub struct PlanEdit {
    raw: RawPlan,
}

/// An edit that does not fit the plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EditError {
    /// The plan's command does not run the named worker.
    #[error("the plan's command does not end with the worker `{0}`")]
    NoWorker(SandboxPath),
    /// The edited plan breaks a structural invariant.
    #[error(transparent)]
    Plan(#[from] PlanError),
}

impl LaunchPlan {
    /// Starts editing the plan; [`PlanEdit::finish`] validates the result.
    pub fn edit(self) -> PlanEdit {
        PlanEdit { raw: self.raw }
    }
}

impl PlanEdit {
    /// Runs `program` (a host file) in place of the worker at `worker`, its
    /// worker-visible path, without the worker's fixed arguments: the
    /// pinned worker descriptor is opened from `program`, or, where
    /// executables are not pinned, `program` is bound read-only over
    /// `worker` after every other mount.
    pub fn replace_worker(
        &mut self,
        program: HostPath,
        worker: &SandboxPath,
    ) -> Result<(), EditError> {
        let last = self
            .raw
            .command
            .iter()
            .rposition(|a| matches!(a, ExecArg::Literal(s) if s == worker.as_str()))
            .ok_or_else(|| EditError::NoWorker(worker.clone()))?;
        self.raw.command.truncate(last + 1);
        let mut pinned = false;
        for pin in &mut self.raw.pins {
            if pin.role == PinRole::Worker {
                pin.host_path = program.clone();
                pinned = true;
            }
        }
        if !pinned {
            self.mount_last(BwrapOp::RoBind {
                source: MountSource::Path(program),
                destination: worker.clone(),
            });
        }
        Ok(())
    }

    /// Appends `args` to the command (after the worker's path, once
    /// [`PlanEdit::replace_worker`] dropped its fixed arguments).
    pub fn append_arguments(&mut self, args: impl IntoIterator<Item = String>) {
        self.raw
            .command
            .extend(args.into_iter().map(ExecArg::Literal));
    }

    /// Removes the seccomp filter, however it is delivered: Bubblewrap's
    /// `--seccomp`, or a runner's `--seccomp-fd` and its descriptor slot.
    pub fn remove_seccomp(&mut self) {
        self.raw.seccomp = None;
        self.raw.ops.retain(|op| !matches!(op, BwrapOp::Seccomp));
        let command = std::mem::take(&mut self.raw.command);
        let mut kept = Vec::with_capacity(command.len());
        let mut args = command.into_iter().peekable();
        while let Some(arg) = args.next() {
            let seccomp_option = matches!(&arg, ExecArg::Literal(s) if s.starts_with("--seccomp"));
            if seccomp_option && matches!(args.peek(), Some(ExecArg::Slot(_))) {
                args.next();
                continue;
            }
            kept.push(arg);
        }
        self.raw.command = kept;
    }

    /// Removes the user-namespace lockdown (`--unshare-user
    /// --disable-userns`).
    pub fn remove_user_namespace_lockdown(&mut self) {
        self.raw
            .ops
            .retain(|op| !matches!(op, BwrapOp::DisableUserns | BwrapOp::UnshareUser));
    }

    /// Removes the runner at `runner` from the command: its segment from its
    /// path up to and including its `--`. A command without it is left as
    /// it is.
    pub fn remove_runner(&mut self, runner: &SandboxPath) {
        let command = &mut self.raw.command;
        let literal = |a: &ExecArg, s: &str| matches!(a, ExecArg::Literal(l) if l == s);
        if let Some(start) = command.iter().position(|a| literal(a, runner.as_str()))
            && let Some(len) = command[start..].iter().position(|a| literal(a, "--"))
        {
            command.drain(start..=start + len);
        }
    }

    /// Adds the mount `op` after every other mount, before the
    /// `--remount-ro` operations that end the setup.
    pub fn mount_last(&mut self, op: BwrapOp) {
        let ops = &mut self.raw.ops;
        let mut at = ops.len();
        while at > 0 && matches!(ops[at - 1], BwrapOp::RemountRo(_)) {
            at -= 1;
        }
        ops.insert(at, op);
    }

    /// The edited plan, validated.
    pub fn finish(self) -> Result<LaunchPlan, PlanError> {
        LaunchPlan::new(self.raw)
    }
}
