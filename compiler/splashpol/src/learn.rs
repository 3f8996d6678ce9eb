//! The learning plan of `splashc learn` (`docs/learn.md`).
//!
//! A learning plan is the production plan of a policy with one change: the
//! policy's own seccomp program is not installed in the sandbox. In its
//! place a runner installs a recording filter that notifies the host of
//! every system call, at the same point of the exec chain where the
//! production program would be installed:
//!
//! - when Bubblewrap installs the program (`--seccomp`, before the first
//!   program of the command), the `--seccomp` operation is removed and the
//!   command is prefixed with `RECORDER --learn-fd {listener} --`, so the
//!   recorder is the first program and installs its filter just before it
//!   executes the rest of the chain;
//! - when the Landlock or combined runner installs it (`--seccomp-fd`),
//!   that runner gets `--learn-fd {listener}` instead, so the recording
//!   filter comes after Landlock, as the production filter does;
//! - a plan without a filter is prefixed like the first case.
//!
//! The host keeps the production program ([`LearningPlan::production`]) and
//! answers each notification with the verdict that program gives (see the
//! runtime's `learn` module). The plan holds [`Slot::LearnListener`], which
//! marks it ([`LaunchPlan::is_learning`]): a production bind refuses it.

use crate::model::SandboxPath;
use crate::plan::{BwrapOp, ExecArg, LaunchPlan, PlanError, SeccompDelivery, SeccompPlan, Slot};

/// A learning plan and the production seccomp program it replaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearningPlan {
    /// The plan to launch; [`LaunchPlan::is_learning`] holds.
    pub plan: LaunchPlan,
    /// The production program the host evaluates for each notification
    /// (`None`: the policy installs no filter, so production allows every
    /// call).
    pub production: Option<SeccompPlan>,
    /// The sandbox path of the runner that installs the recording filter.
    pub recorder: String,
}

/// Why a learning plan cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LearnPlanError {
    /// The plan is already a learning plan.
    #[error("the plan is already a learning plan")]
    AlreadyLearning,
    /// The runner-delivered program has no `--seccomp-fd` before its slot.
    #[error("the runner's seccomp descriptor is not preceded by `--seccomp-fd`")]
    RunnerSlot,
    /// The changed plan breaks a plan invariant.
    #[error("the learning plan is not a valid plan: {0}")]
    Plan(#[from] PlanError),
}

fn lit(s: &str) -> ExecArg {
    ExecArg::Literal(s.to_owned())
}

/// The learning plan of `plan`; `recorder` is the sandbox path of a runner
/// that accepts `--learn-fd`, used when the recording filter must be
/// installed before the first program of the command.
pub fn learning_plan(
    plan: LaunchPlan,
    recorder: &SandboxPath,
) -> Result<LearningPlan, LearnPlanError> {
    if plan.is_learning() {
        return Err(LearnPlanError::AlreadyLearning);
    }
    let mut raw = plan.into_raw();
    let production = raw.seccomp.take();
    let delivery = production.as_ref().map(|s| s.delivery.clone());
    let recorder_used = match delivery {
        Some(SeccompDelivery::Runner) => {
            let at = raw
                .command
                .iter()
                .position(|a| *a == ExecArg::Slot(Slot::RunnerSeccomp))
                .ok_or(LearnPlanError::RunnerSlot)?;
            if at == 0 || raw.command[at - 1] != lit("--seccomp-fd") {
                return Err(LearnPlanError::RunnerSlot);
            }
            raw.command[at - 1] = lit("--learn-fd");
            raw.command[at] = ExecArg::Slot(Slot::LearnListener);
            match raw.command.first() {
                Some(ExecArg::Literal(first)) => first.clone(),
                _ => return Err(LearnPlanError::RunnerSlot),
            }
        }
        Some(SeccompDelivery::Bubblewrap | SeccompDelivery::None) | None => {
            raw.ops.retain(|op| *op != BwrapOp::Seccomp);
            let mut command = vec![
                lit(recorder.as_str()),
                lit("--learn-fd"),
                ExecArg::Slot(Slot::LearnListener),
                lit("--"),
            ];
            command.append(&mut raw.command);
            raw.command = command;
            recorder.as_str().to_owned()
        }
    };
    Ok(LearningPlan {
        plan: LaunchPlan::new(raw)?,
        production,
        recorder: recorder_used,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Arch;

    fn lowered(file: &str) -> LaunchPlan {
        let path = format!("{}/../../policies/{file}", env!("CARGO_MANIFEST_DIR"));
        lowered_source(file, &std::fs::read_to_string(&path).expect("policy"))
    }

    fn lowered_source(file: &str, source: &str) -> LaunchPlan {
        let policy = crate::check_source(file, source).policy.expect("valid");
        let activation = crate::activate::activate(&policy, None).expect("activate");
        crate::lower::lower(&policy, &activation, Arch::X86_64, "test").expect("lower")
    }

    fn recorder() -> SandboxPath {
        SandboxPath::new("/opt/splash/bin/splash-runner").expect("path")
    }

    #[test]
    fn a_bubblewrap_filter_becomes_a_recorder_in_front() {
        let plan = lowered("demo.splashpol");
        assert!(!plan.is_learning());
        let learning = learning_plan(plan.clone(), &recorder()).expect("learning plan");
        assert!(learning.plan.is_learning());
        assert!(learning.plan.seccomp().is_none());
        assert!(!learning.plan.ops().contains(&BwrapOp::Seccomp));
        assert_eq!(learning.production.as_ref(), plan.seccomp());
        assert_eq!(&learning.plan.command()[4..], plan.command());
        assert_eq!(
            learning.plan.command()[..4],
            [
                lit("/opt/splash/bin/splash-runner"),
                lit("--learn-fd"),
                ExecArg::Slot(Slot::LearnListener),
                lit("--"),
            ]
        );
        assert_eq!(
            learning_plan(learning.plan, &recorder()),
            Err(LearnPlanError::AlreadyLearning)
        );
    }

    #[test]
    fn a_runner_filter_becomes_the_runners_recording_filter() {
        let plan = lowered_source(
            "runner.splashpol",
            "splashpol 1\npolicy \"p\" {\n  bubblewrap \"/usr/bin/bwrap\"\n  worker \"/opt/w/worker\"\n  runtime \"/opt/w\" at \"/opt/w\"\n  seccomp strict-allowlist { execve exit_group }\n  landlock runner \"/opt/w/splash-landlock-runner\" { }\n}\n",
        );
        let production = plan.seccomp().expect("filter").clone();
        assert_eq!(production.delivery, SeccompDelivery::Runner);
        let learning = learning_plan(plan.clone(), &recorder()).expect("learning plan");
        assert!(learning.plan.is_learning());
        assert_eq!(learning.plan.command().len(), plan.command().len());
        assert!(
            !learning
                .plan
                .command()
                .contains(&ExecArg::Slot(Slot::RunnerSeccomp))
        );
        assert_eq!(learning.recorder, "/opt/w/splash-landlock-runner");
    }
}
