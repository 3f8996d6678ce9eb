//! Preflight: every check bind makes, with every failure reported.
//!
//! [`preflight`] runs the bind steps of [`crate::bind`] (0 to 8) against
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

use std::ops::ControlFlow;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use splashpol::model::SandboxPath;
use splashpol::plan::{BwrapOp, LaunchPlan, MountSource, PinKind, PinRole};

use crate::bind::{
    BindError, BindOptions, BubblewrapLaunch, ExecRole, PinnedSource, PlanDefect, canonical,
    check_exec_target, check_path_source, check_supported_options, open_object, pin_source,
    plan_options,
};
use crate::cgroup::{CgroupBoundary, CgroupParent, CheckedRunner};
use crate::devices::DeviceSources;
use crate::quota::{self, VerifiedQuota};
use crate::sys;

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

/// Runs every bind check of `plan` with `options` on this host and reports
/// all of them (module documentation).
pub fn preflight(plan: &LaunchPlan, options: &BindOptions) -> Preflight {
    let mut run = Binding::new(plan, options, Mode::Preflight);
    let _ = run.run();
    Preflight { checks: run.checks }
}

/// Whether a run stops at the first failure and does bind's maintenance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// [`crate::BoundCommand::bind_with`]: stop at the first failure; sweep
    /// the cgroup parent.
    Bind,
    /// [`preflight`]: run every check; change nothing.
    Preflight,
}

/// What the steps produce, for bind to keep.
#[derive(Debug)]
pub(crate) struct Bound {
    pub bwrap_canonical: PathBuf,
    pub bwrap_launch: BubblewrapLaunch,
    pub pins: Vec<PinnedSource>,
    pub quotas: Vec<VerifiedQuota>,
    pub cgroup: Option<CgroupBoundary>,
    pub devices: DeviceSources,
    pub identity: crate::identity::IdentitySwitch,
}

/// The state of one run of the steps.
pub(crate) struct Binding<'a> {
    plan: &'a LaunchPlan,
    options: &'a BindOptions,
    mode: Mode,
    bwrap_canonical: Option<PathBuf>,
    /// Indexed by slot; `None` where the pin failed (or is not made yet).
    pins: Vec<Option<PinnedSource>>,
    bwrap_launch: Option<BubblewrapLaunch>,
    quotas: Vec<VerifiedQuota>,
    cgroup: Option<CgroupBoundary>,
    devices: Option<DeviceSources>,
    identity: Option<crate::identity::IdentitySwitch>,
    checks: Vec<(Check, Outcome)>,
}

impl<'a> Binding<'a> {
    pub(crate) fn new(plan: &'a LaunchPlan, options: &'a BindOptions, mode: Mode) -> Self {
        Self {
            plan,
            options,
            mode,
            bwrap_canonical: None,
            pins: Vec::new(),
            bwrap_launch: None,
            quotas: Vec::new(),
            cgroup: None,
            devices: None,
            identity: None,
            checks: Vec::new(),
        }
    }

    /// Runs the steps in order; in bind mode, `Break` at the first failure.
    pub(crate) fn run(&mut self) -> ControlFlow<()> {
        // The one list of steps, in bind's order; each reports its checks
        // through `report`.
        let steps: [fn(&mut Self) -> ControlFlow<()>; 12] = [
            Self::plan_step,
            Self::broker_step,
            Self::bubblewrap_step,
            Self::pins_step,
            Self::path_sources_step,
            Self::exec_chain_step,
            Self::bubblewrap_options_step,
            Self::quotas_step,
            Self::cgroup_step,
            Self::identity_step,
            Self::writable_roots_step,
            Self::device_nodes_step,
        ];
        for step in steps {
            step(self)?;
        }
        ControlFlow::Continue(())
    }

    /// Bind's result: the first failure, or what the steps produced.
    pub(crate) fn into_bound(mut self) -> Result<Bound, BindError> {
        let first = self
            .checks
            .iter()
            .position(|(_, o)| matches!(o, Outcome::Failed(_)));
        if let Some(at) = first {
            let (_, outcome) = self.checks.swap_remove(at);
            if let Outcome::Failed(e) = outcome {
                return Err(e);
            }
        }
        // No check failed, so every step left its product (in bind mode a
        // failure stops the run; a preflight never gets here).
        const PRODUCT: &str = "a step that passed left its product";
        Ok(Bound {
            bwrap_canonical: self.bwrap_canonical.expect(PRODUCT),
            bwrap_launch: self.bwrap_launch.expect(PRODUCT),
            pins: self.pins.into_iter().map(|p| p.expect(PRODUCT)).collect(),
            quotas: self.quotas,
            cgroup: self.cgroup,
            devices: self.devices.expect(PRODUCT),
            identity: self.identity.expect(PRODUCT),
        })
    }

    /// Records one check; in bind mode a failure stops the run.
    fn report(
        &mut self,
        step: Step,
        subject: impl Into<String>,
        result: Result<(), BindError>,
    ) -> ControlFlow<()> {
        let check = Check {
            step,
            subject: subject.into(),
        };
        match result {
            Ok(()) => {
                self.checks.push((check, Outcome::Passed));
                ControlFlow::Continue(())
            }
            Err(e) => {
                self.checks.push((check, Outcome::Failed(e)));
                match self.mode {
                    Mode::Bind => ControlFlow::Break(()),
                    Mode::Preflight => ControlFlow::Continue(()),
                }
            }
        }
    }

    /// Records a check an earlier failure of `needs` left without input
    /// (only a preflight gets here: bind stopped at that failure).
    fn not_run(&mut self, step: Step, subject: impl Into<String>, needs: Step) {
        self.checks.push((
            Check {
                step,
                subject: subject.into(),
            },
            Outcome::NotRun { needs },
        ));
    }

    /// A pin of the plan, when it was made.
    fn pin(&self, slot: u16) -> Option<&PinnedSource> {
        self.pins.get(usize::from(slot)).and_then(Option::as_ref)
    }

    /// 0. The hardening prefix and the architecture. (The plan's structure
    ///    — format, slots, seccomp delivery, fixed streams, a required
    ///    cgroup's policy — holds by construction: a `LaunchPlan` is
    ///    validated when lowered or deserialized.)
    fn plan_step(&mut self) -> ControlFlow<()> {
        let prefix = crate::verify::check_prefix(self.plan);
        self.report(Step::Plan, "hardening prefix", prefix)?;
        let arch = crate::verify::check_arch(self.plan);
        self.report(Step::Plan, "architecture", arch)
    }

    /// 0. The network broker, when the plan or the host has one.
    fn broker_step(&mut self) -> ControlFlow<()> {
        let supplied = self.options.network_broker.as_ref();
        if self.plan.network_broker().is_none() && supplied.is_none() {
            return ControlFlow::Continue(());
        }
        let result = crate::broker::check_plan(self.plan, supplied).map_err(BindError::from);
        self.report(Step::NetworkBroker, "network broker", result)
    }

    /// 1. Bubblewrap: the check every executable gets. In executable-pinned
    ///    mode its descriptor is one of the pins (step 2).
    fn bubblewrap_step(&mut self) -> ControlFlow<()> {
        let plan = self.plan;
        let path = Path::new(plan.bwrap().as_str());
        let result = open_object(path, PinKind::Executable, true)
            .map_err(|defect| defect.for_source(path, PinKind::Executable));
        let result = result.map(|(canonical, _)| {
            self.bwrap_canonical = Some(canonical);
        });
        self.report(Step::Bubblewrap, plan.bwrap().as_str(), result)
    }

    /// 2. Pins, then the Bubblewrap pin against step 1.
    fn pins_step(&mut self) -> ControlFlow<()> {
        let plan = self.plan;
        for (slot, pin) in plan.pins().iter().enumerate() {
            let made = match pin.kind {
                PinKind::BrokerDirectory => {
                    crate::broker::pin(pin, self.options.network_broker.as_ref())
                        .map(|(canonical, fd)| PinnedSource {
                            pin: pin.clone(),
                            canonical,
                            fd,
                        })
                        .map_err(BindError::from)
                }
                _ => pin_source(plan, slot, pin),
            };
            let result = made.map(|pinned| self.pins.push(Some(pinned)));
            if result.is_err() {
                self.pins.push(None);
            }
            self.report(Step::Pins, pin.host_path.as_str(), result)?;
        }
        let Some(slot) = plan.bwrap_pin() else {
            self.bwrap_launch = Some(BubblewrapLaunch::Path);
            return ControlFlow::Continue(());
        };
        let subject = "bubblewrap pin";
        let (Some(canonical), Some(pinned)) = (&self.bwrap_canonical, self.pin(slot.0)) else {
            let needs = if self.bwrap_canonical.is_none() {
                Step::Bubblewrap
            } else {
                Step::Pins
            };
            self.not_run(Step::Pins, subject, needs);
            return ControlFlow::Continue(());
        };
        // The plan's pin holds `plan.bwrap()`; the canonical paths must
        // agree too (a symlink swapped in between).
        let result = if pinned.canonical == *canonical {
            self.bwrap_launch = Some(BubblewrapLaunch::Pinned(slot));
            Ok(())
        } else {
            Err(BindError::Plan(PlanDefect::BubblewrapPin {
                slot: slot.0,
                bwrap: PathBuf::from(plan.bwrap().as_str()),
            }))
        };
        self.report(Step::Pins, subject, result)
    }

    /// 3. Path-based mount sources. A file root (an active root's
    ///    destination) must be a directory; a runtime mount may also be a
    ///    regular file.
    fn path_sources_step(&mut self) -> ControlFlow<()> {
        let plan = self.plan;
        let roots: Vec<&SandboxPath> = plan.active_roots().iter().map(|r| &r.destination).collect();
        for op in plan.ops() {
            let (source, directory) = match op {
                BwrapOp::RoBind {
                    source: MountSource::Path(p),
                    destination,
                } => (p, roots.contains(&destination)),
                BwrapOp::Bind {
                    source: MountSource::Path(p),
                    ..
                } => (p, true),
                _ => continue,
            };
            let result = check_path_source(source, directory).map(drop);
            self.report(Step::PathSources, source.as_str(), result)?;
        }
        ControlFlow::Continue(())
    }

    /// 4. Every program of the exec chain, then every Landlock target that
    ///    is not one of them.
    fn exec_chain_step(&mut self) -> ControlFlow<()> {
        let chain = match crate::verify::exec_chain(self.plan) {
            Ok(chain) => chain,
            Err(e) => return self.report(Step::ExecChain, "command", Err(e)),
        };
        let last = chain.programs.len() - 1;
        let roles = chain.programs.iter().enumerate().map(|(i, p)| {
            let role = if i == last {
                ExecRole::Worker
            } else {
                ExecRole::Runner
            };
            (role, p)
        });
        let targets = chain
            .allowed
            .iter()
            .filter(|t| !chain.programs.contains(t))
            .map(|t| (ExecRole::AllowedTarget, t));
        for (role, program) in roles.chain(targets) {
            match check_exec_target(self.plan, &self.pins, role, program) {
                Some(result) => self.report(Step::ExecChain, program.as_str(), result)?,
                None => self.not_run(Step::ExecChain, program.as_str(), Step::Pins),
            }
        }
        ControlFlow::Continue(())
    }

    /// 5. Bubblewrap's options, asked of the very file that will run.
    fn bubblewrap_options_step(&mut self) -> ControlFlow<()> {
        let shown = self.plan.bwrap().to_string();
        let needed = plan_options(self.plan);
        let result = match (self.bwrap_launch, &self.bwrap_canonical) {
            (Some(BubblewrapLaunch::Path), Some(canonical)) => {
                check_supported_options(canonical, &shown, &needed)
            }
            (Some(BubblewrapLaunch::Pinned(slot)), _) => {
                match self.pin(slot.0).map(PinnedSource::duplicate) {
                    Some(Ok(fd)) => {
                        let program = crate::spawn::proc_fd_path(&fd);
                        check_supported_options(&program, &shown, &needed)
                    }
                    Some(Err(source)) => Err(BindError::BubblewrapQuery {
                        path: PathBuf::from(shown.clone()),
                        source,
                    }),
                    None => {
                        self.not_run(Step::BubblewrapOptions, shown, Step::Pins);
                        return ControlFlow::Continue(());
                    }
                }
            }
            _ => {
                let needs = if self.bwrap_canonical.is_none() {
                    Step::Bubblewrap
                } else {
                    Step::Pins
                };
                self.not_run(Step::BubblewrapOptions, shown, needs);
                return ControlFlow::Continue(());
            }
        };
        self.report(Step::BubblewrapOptions, shown, result)
    }

    /// 6. Project quotas: while an aggregate is set, every read-write mount
    ///    must be the pin of a quota root (the lowering refuses raw
    ///    read-write roots; a plan from elsewhere is held to the same rule
    ///    here); then every quota check on its pinned root, then the
    ///    aggregate.
    fn quotas_step(&mut self) -> ControlFlow<()> {
        let plan = self.plan;
        let checked: Vec<u16> = plan.quota_checks().iter().map(|c| c.slot.0).collect();
        if plan.aggregate_quota().is_some() {
            for op in plan.ops() {
                let BwrapOp::Bind {
                    source,
                    destination,
                } = op
                else {
                    continue;
                };
                let result = match source {
                    MountSource::Pinned(slot) if checked.contains(&slot.0) => Ok(()),
                    _ => Err(BindError::UnverifiedWritableMount {
                        destination: destination.clone(),
                    }),
                };
                self.report(Step::Quotas, destination.as_str(), result)?;
            }
        }
        let inspector = self.options.quota_inspector.as_ref();
        let mut all_verified = true;
        for check in plan.quota_checks() {
            let Some(shown) = plan.pins().get(usize::from(check.slot.0)) else {
                continue; // a `LaunchPlan` invariant: every slot exists
            };
            let subject = shown.host_path.to_string();
            let Some(pinned) = self.pin(check.slot.0) else {
                all_verified = false;
                self.not_run(Step::Quotas, subject, Step::Pins);
                continue;
            };
            // The plan guarantees a quota check names a file-root pin that
            // is mounted read-write.
            let result = match &pinned.pin.role {
                PinRole::FileRoot(root) => {
                    quota::verify(inspector, pinned.fd.as_fd(), &check.quota).map_err(|source| {
                        BindError::Quota {
                            root: root.clone(),
                            path: PathBuf::from(pinned.pin.host_path.to_string()),
                            source,
                        }
                    })
                }
                _ => Err(BindError::Plan(PlanDefect::QuotaOnOtherPin {
                    slot: check.slot.0,
                })),
            };
            let result = result.map(|v| self.quotas.push(v));
            all_verified &= result.is_ok();
            self.report(Step::Quotas, subject, result)?;
        }
        // A plan with quota checks always carries an aggregate ceiling.
        if let Some(aggregate) = plan.aggregate_quota()
            && !plan.quota_checks().is_empty()
        {
            let subject = "aggregate";
            if !all_verified {
                self.not_run(Step::Quotas, subject, Step::Quotas);
                return ControlFlow::Continue(());
            }
            let result =
                quota::check_aggregate(&self.quotas, &aggregate).map_err(BindError::AggregateQuota);
            self.report(Step::Quotas, subject, result)?;
        }
        ControlFlow::Continue(())
    }

    /// 7. The cgroup-v2 boundary: the parent (bind then sweeps it of what
    ///    dead owners left), then the runner, which is executed through its
    ///    descriptor when the plan pins executables.
    fn cgroup_step(&mut self) -> ControlFlow<()> {
        let Some(policy) = self.plan.cgroup() else {
            return ControlFlow::Continue(());
        };
        let mut parent: Option<CgroupParent> = None;
        let result = CgroupBoundary::check_parent(policy)
            .map(|p| parent = Some(p))
            .map_err(BindError::Cgroup);
        self.report(Step::Cgroup, policy.parent.as_str(), result)?;
        if let (Some(p), Mode::Bind) = (&parent, self.mode) {
            p.sweep();
        }
        let pin_runner = self.plan.bwrap_pin().is_some();
        let mut runner: Option<CheckedRunner> = None;
        let result = CgroupBoundary::check_runner(policy, pin_runner)
            .map(|r| runner = Some(r))
            .map_err(BindError::Cgroup);
        self.report(Step::Cgroup, policy.runner.as_str(), result)?;
        if let (Some(parent), Some(runner)) = (parent, runner) {
            self.cgroup = Some(CgroupBoundary::from_checked(policy, parent, runner));
        }
        ControlFlow::Continue(())
    }

    /// 7. The worker's identity: what the launch switches to
    ///    ([`crate::identity`]), and for a switch to a fixed identity, that
    ///    it can write each read-write host root.
    fn identity_step(&mut self) -> ControlFlow<()> {
        let plan = self.plan;
        let subject = plan
            .identity()
            .map_or_else(|| "none".to_owned(), |i| i.to_string());
        let decided = crate::identity::decide_for(plan, &self.options.identities);
        let switch = match decided {
            Ok(switch) => switch,
            Err(e) => return self.report(Step::Identity, subject, Err(e.into())),
        };
        self.report(Step::Identity, subject, Ok(()))?;
        if let crate::identity::IdentitySwitch::Fixed { .. } = switch {
            for op in plan.ops() {
                let BwrapOp::Bind {
                    source,
                    destination,
                } = op
                else {
                    continue;
                };
                let root = plan
                    .active_roots()
                    .iter()
                    .find(|r| r.destination == *destination)
                    .map_or_else(|| destination.to_string(), |r| r.id.to_string());
                let meta = match source {
                    MountSource::Pinned(slot) => match self.pin(slot.0) {
                        Some(pinned) => pinned
                            .fd
                            .try_clone()
                            .and_then(|fd| std::fs::File::from(fd).metadata())
                            .map(|m| (pinned.canonical.clone(), m))
                            .map_err(|source| BindError::Pin {
                                path: pinned.canonical.clone(),
                                source,
                            }),
                        None => {
                            self.not_run(Step::Identity, root, Step::Pins);
                            continue;
                        }
                    },
                    MountSource::Path(p) => canonical(p.as_str()).and_then(|c| {
                        std::fs::metadata(&c)
                            .map(|m| (c.clone(), m))
                            .map_err(|source| BindError::Pin { path: c, source })
                    }),
                };
                let result = meta.and_then(|(path, meta)| {
                    switch
                        .check_writable(&root, &path, &meta)
                        .map_err(BindError::from)
                });
                self.report(Step::Identity, root, result)?;
            }
        }
        self.identity = Some(switch);
        ControlFlow::Continue(())
    }

    /// The host uid the worker will run as: what the last preparation that
    /// changes it says, or this process's real uid.
    fn worker_uid(&self) -> u32 {
        if let Some(switch) = &self.identity
            && *switch != crate::identity::IdentitySwitch::Unchanged
        {
            return switch.worker_uid(sys::real_uid());
        }
        self.options
            .preparations
            .iter()
            .rev()
            .find_map(|p| p.launch_uid())
            .unwrap_or_else(sys::real_uid)
    }

    /// 8. For a worker that runs as host uid 0: every read-write host mount
    ///    is on a `nosuid` host mount ([`crate::nosuid`]), asked through its
    ///    pinned descriptor or, unpinned, its canonical path.
    fn writable_roots_step(&mut self) -> ControlFlow<()> {
        if self.worker_uid() != 0 {
            return ControlFlow::Continue(());
        }
        let plan = self.plan;
        for op in plan.ops() {
            let BwrapOp::Bind {
                source,
                destination,
            } = op
            else {
                continue;
            };
            let root = plan
                .active_roots()
                .iter()
                .find(|r| r.destination == *destination)
                .map_or_else(|| destination.to_string(), |r| r.id.to_string());
            let result = match source {
                MountSource::Pinned(slot) => match self.pin(slot.0) {
                    Some(pinned) => {
                        crate::nosuid::check_root(&root, &pinned.canonical, pinned.fd.as_fd())
                            .map_err(BindError::from)
                    }
                    None => {
                        self.not_run(Step::WritableRoots, root, Step::Pins);
                        continue;
                    }
                },
                MountSource::Path(p) => canonical(p.as_str()).and_then(|canonical| {
                    let fd = sys::open_path_no_symlinks(&canonical).map_err(|source| {
                        BindError::Pin {
                            path: PathBuf::from(p.to_string()),
                            source,
                        }
                    })?;
                    crate::nosuid::check_root(&root, &canonical, fd.as_fd())
                        .map_err(BindError::from)
                }),
            };
            self.report(Step::WritableRoots, root, result)?;
        }
        ControlFlow::Continue(())
    }

    /// 8. Device nodes, for the uid the worker will run as.
    fn device_nodes_step(&mut self) -> ControlFlow<()> {
        let uid = self.worker_uid();
        let result = DeviceSources::decide(uid, &self.options.device_parent)
            .map(|d| self.devices = Some(d))
            .map_err(BindError::from);
        self.report(Step::DeviceNodes, format!("for host uid {uid}"), result)
    }
}
