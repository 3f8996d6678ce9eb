//! Bind: check a [`LaunchPlan`] against the host and retain its descriptors.
//!
//! Nothing is launched here, except `--help` of a Bubblewrap that is not an
//! ELF executable (see step 5). Steps 0 to 8 are one list of checks, the
//! `Binding` steps below in this order: bind runs them until the first
//! failure, which is its error, and [`preflight()`] runs them all and
//! reports every failure (a [`Preflight`], what `splashc doctor`
//! shows). The steps, in order:
//!
//! 0. the plan is re-verified ([`crate::verify`]): the fixed hardening
//!    prefix and this host's architecture for the plan and its seccomp
//!    program; a plan with a network broker needs the matching host broker
//!    ([`BindOptions::with_network_broker`]); otherwise bind fails (the
//!    plan's structure, such as a required cgroup's policy and every pin a
//!    slot names, is a [`LaunchPlan`] invariant checked when the plan was
//!    lowered or deserialized);
//! 1. the Bubblewrap program: canonicalized, a regular file with an execute
//!    bit; in executable-pinned mode the canonical file is opened and retained
//!    as one of the pins;
//! 2. every [`Pin`](splashpol::plan::Pin): the configured path is canonicalized (symbolic links in
//!    the *configured* path are resolved here, once, and the resolved target is
//!    what gets pinned — except for executables, whose final component must not
//!    be a symbolic link at all); a canonical path of `/` is rejected; the
//!    canonical path is opened `O_PATH | O_NOFOLLOW | O_CLOEXEC` with
//!    `RESOLVE_NO_SYMLINKS`, so a link swapped in after canonicalization fails
//!    instead of being followed; the type is re-checked through the descriptor
//!    (`fstat`); the network broker's pin is instead the private directory
//!    of the host's broker (see [`crate::broker`]), never the policy's parent;
//! 3. every path-based mount source (unpinned mode): canonicalized, not `/`,
//!    the right type (a read-write source must be a directory);
//! 4. every program of the exec chain (the first program Bubblewrap
//!    executes and the program after each runner's `--`) and every Landlock
//!    target of its runners (`--allow`): reached through a read-only bind
//!    mount, and the host file behind it passes the same check as a pinned
//!    executable (not a symbolic link itself, a regular file with an execute
//!    bit), in path mode too; an error names the program or target by its
//!    worker-visible path ([`BindError::Executable`]);
//! 5. Bubblewrap's options: every option the plan's argument list uses must
//!    be one the build parses, read from the same file (the same pinned
//!    descriptor) that will be launched: the NUL-terminated `--option`
//!    literals its parser compares against (its read-only data sections
//!    first, the whole image before an option is refused), or, for a
//!    program that is not an ELF executable, the options its `--help`
//!    lists; an old build fails here with a named option;
//! 6. project quotas (see [`crate::quota`]) and their aggregate maximum;
//!    while an aggregate is set, a read-write mount that is not a verified
//!    quota root is refused;
//! 7. the cgroup-v2 boundary, when the plan has one: the parent is verified
//!    and the runner checked ([`crate::cgroup::CgroupBoundary::prepare`]);
//!    each spawn then creates a fresh child cgroup;
//! 8. the uid the worker will run as: when it is 0 (the host launches as
//!    root), every read-write host mount must be on a host mount that is
//!    `nosuid`, itself and every mount beneath it (see [`crate::nosuid`]), or
//!    bind fails naming the root and the fixes; and the device nodes (see
//!    [`crate::devices`]; the plan's binds of them are part of the prefix
//!    [`crate::verify`] checks): when that uid owns any of the host's nodes,
//!    launches get private nodes, and one directory of them is made here to
//!    prove that this host can (the first launch uses it);
//! 9. [`LaunchPreparation`] steps, which can wrap each launch (see
//!    [`crate::LaunchSpec`]); the cgroup runner always wraps outermost.

use std::io;
use std::ops::ControlFlow;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use splashpol::model::SandboxPath;
use splashpol::plan::{BwrapOp, LaunchPlan, MountSource, PinKind, PinRole};

use crate::bwrap_options::{check_supported_options, plan_options};
use crate::cgroup::{CgroupBoundary, CgroupParent, CheckedRunner};
use crate::devices::{DEFAULT_DEVICE_PARENT, DeviceSources};
use crate::error::{BindError, ExecRole, PlanDefect};
use crate::launch_spec::{LaunchSpec, proc_fd_path};
use crate::pin::{
    PinnedSource, canonical, check_exec_target, check_path_source, open_object, pin_source,
};
use crate::preflight::{Check, Outcome, Preflight, Step};
use crate::quota::{self, KernelQuotaInspector, QuotaInspector, VerifiedQuota};
use crate::sys;

/// A step that runs at the end of bind and may change how the command is
/// launched (wrap the program with a prefix). The cgroup-v2 boundary is not
/// one of these: a plan's `cgroup` policy is always prepared by bind itself,
/// and its runner wraps outside every preparation.
pub trait LaunchPreparation: std::fmt::Debug + Send + Sync {
    /// Short name for error messages.
    fn name(&self) -> &str;
    /// Checks and prepares host state after every other bind step.
    fn prepare(&mut self, command: &BoundCommand) -> io::Result<()>;
    /// Adjusts one launch (e.g. wraps the program); called by spawn.
    fn wrap(&self, spec: &mut LaunchSpec) -> io::Result<()>;
    /// The host uid that Bubblewrap and the worker run as when this step's
    /// wrapper changes it (`None`: the wrapper keeps the runtime's uid). Bind
    /// uses it to decide whether the worker would own the host's device
    /// nodes ([`crate::devices`]); a wrapper that changes the uid without
    /// saying so gets private nodes it cannot reach, and the launch fails.
    fn launch_uid(&self) -> Option<u32> {
        None
    }
}

/// Options of [`BoundCommand::bind_with`].
#[derive(Debug)]
pub struct BindOptions {
    pub(crate) quota_inspector: Box<dyn QuotaInspectorDebug>,
    pub(crate) preparations: Vec<Box<dyn LaunchPreparation>>,
    pub(crate) device_parent: PathBuf,
    pub(crate) network_broker: Option<splash_broker::BrokerMount>,
    /// Set only by [`crate::learn`]: a learning plan may be bound.
    pub(crate) learning: bool,
    pub(crate) identities: crate::identity::DynamicIdentities,
}

/// A [`QuotaInspector`] that can be printed in debug output.
pub trait QuotaInspectorDebug: QuotaInspector + std::fmt::Debug + Send + Sync {}
impl<T: QuotaInspector + std::fmt::Debug + Send + Sync> QuotaInspectorDebug for T {}

impl Default for BindOptions {
    fn default() -> Self {
        Self {
            quota_inspector: Box::new(KernelQuotaInspector),
            preparations: Vec::new(),
            device_parent: PathBuf::from(DEFAULT_DEVICE_PARENT),
            network_broker: None,
            learning: false,
            identities: crate::identity::DynamicIdentities::default(),
        }
    }
}

impl BindOptions {
    /// Replaces the project-quota inspector (the default reads the kernel).
    pub fn with_quota_inspector(mut self, inspector: impl QuotaInspectorDebug + 'static) -> Self {
        self.quota_inspector = Box::new(inspector);
        self
    }

    /// Replaces the parent directory of the per-launch private device
    /// directories (default `/dev`): owned by root, writable by nobody else
    /// (or sticky), on a filesystem not mounted `nodev`.
    pub fn with_device_directory(mut self, parent: impl Into<PathBuf>) -> Self {
        self.device_parent = parent.into();
        self
    }

    /// Replaces where `identity dynamic` leases its ids from (default
    /// [`crate::identity::IdentityRange::DEFAULT`] in
    /// [`crate::identity::DEFAULT_LEASE_DIRECTORY`]).
    pub fn with_dynamic_identities(
        mut self,
        identities: crate::identity::DynamicIdentities,
    ) -> Self {
        self.identities = identities;
        self
    }

    /// Adds a launch preparation step.
    pub fn with_preparation(mut self, step: impl LaunchPreparation + 'static) -> Self {
        self.preparations.push(Box::new(step));
        self
    }

    /// Supplies the host's network broker (`HostBroker::mount`). A plan with
    /// a `network_broker` binds only with one whose catalog kind and ids are
    /// the plan's; its private directory is what gets pinned. A broker for a
    /// plan without one is refused.
    pub fn with_network_broker(mut self, mount: splash_broker::BrokerMount) -> Self {
        self.network_broker = Some(mount);
        self
    }
}

/// How Bubblewrap itself is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BubblewrapLaunch {
    /// Through its canonical path.
    Path,
    /// Through `/proc/self/fd/N` of a fresh duplicate of the retained pin.
    Pinned(splashpol::plan::PinSlot),
}

/// A launch plan checked against this host, owning its pinned descriptors.
#[derive(Debug)]
pub struct BoundCommand {
    pub(crate) plan: LaunchPlan,
    pub(crate) bwrap_canonical: PathBuf,
    pub(crate) bwrap_launch: BubblewrapLaunch,
    pub(crate) pins: Vec<PinnedSource>,
    pub(crate) quotas: Vec<VerifiedQuota>,
    pub(crate) preparations: Vec<Box<dyn LaunchPreparation>>,
    pub(crate) cgroup: Option<CgroupBoundary>,
    pub(crate) devices: DeviceSources,
    pub(crate) identity: crate::identity::IdentitySwitch,
}

impl BoundCommand {
    /// Binds `plan` with the kernel quota inspector and no extra preparation.
    pub fn bind(plan: LaunchPlan) -> Result<Self, BindError> {
        Self::bind_with(plan, BindOptions::default())
    }

    /// Binds `plan`; see the module documentation for the steps. Steps 0
    /// to 8 are the checks of [`preflight`](mod@crate::preflight), run in
    /// its order until the first failure, which is the error.
    pub fn bind_with(plan: LaunchPlan, options: BindOptions) -> Result<Self, BindError> {
        if plan.is_learning() && !options.learning {
            return Err(BindError::LearningPlan);
        }
        let mut run = Binding::new(&plan, &options, Mode::Bind);
        let _ = run.run();
        let bound = run.into_bound()?;
        let mut bound = BoundCommand {
            plan,
            bwrap_canonical: bound.bwrap_canonical,
            bwrap_launch: bound.bwrap_launch,
            pins: bound.pins,
            quotas: bound.quotas,
            preparations: Vec::new(),
            cgroup: bound.cgroup,
            devices: bound.devices,
            identity: bound.identity,
        };

        // 9. Launch preparations.
        let mut preparations = options.preparations;
        for step in &mut preparations {
            step.prepare(&bound)
                .map_err(|source| BindError::Preparation {
                    step: step.name().to_owned(),
                    source,
                })?;
        }
        bound.preparations = preparations;
        Ok(bound)
    }

    /// Whether each launch gets private device nodes (the worker's uid owns
    /// the host's).
    pub fn private_device_nodes(&self) -> bool {
        self.devices.private()
    }

    /// What each launch does about the worker's identity.
    pub fn identity(&self) -> &crate::identity::IdentitySwitch {
        &self.identity
    }

    /// The plan this command was bound from.
    pub fn plan(&self) -> &LaunchPlan {
        &self.plan
    }

    /// The retained descriptors, indexed by [`splashpol::plan::PinSlot`].
    pub fn pins(&self) -> &[PinnedSource] {
        &self.pins
    }

    /// How Bubblewrap is started.
    pub fn bubblewrap_launch(&self) -> BubblewrapLaunch {
        self.bwrap_launch
    }

    /// The verified project quotas.
    pub fn verified_quotas(&self) -> &[VerifiedQuota] {
        &self.quotas
    }

    /// The prepared cgroup-v2 boundary, when the plan has one.
    pub fn cgroup(&self) -> Option<&CgroupBoundary> {
        self.cgroup.as_ref()
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
                        let program = proc_fd_path(&fd);
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
        // A preparation that runs the launch as another uid and an identity
        // switch would fight over the launch's credentials.
        if switch != crate::identity::IdentitySwitch::Unchanged
            && let Some((preparation, wrapper_uid)) = self
                .options
                .preparations
                .iter()
                .find_map(|p| p.launch_uid().map(|uid| (p.name().to_owned(), uid)))
        {
            let refused = crate::identity::IdentityError::PreparationUid {
                identity: subject.clone(),
                preparation,
                wrapper_uid,
            };
            return self.report(Step::Identity, subject, Err(refused.into()));
        }
        self.report(Step::Identity, subject, Ok(()))?;
        if let crate::identity::IdentitySwitch::Fixed { .. } = switch {
            for (root, source) in read_write_binds(plan) {
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
        for (root, source) in read_write_binds(plan) {
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

/// Every read-write bind of `plan`, in order: the id of the root it mounts
/// (its destination when no active root has it) and its source.
fn read_write_binds(plan: &LaunchPlan) -> impl Iterator<Item = (String, &MountSource)> {
    plan.ops().iter().filter_map(|op| {
        let BwrapOp::Bind {
            source,
            destination,
        } = op
        else {
            return None;
        };
        let root = plan
            .active_roots()
            .iter()
            .find(|r| r.destination == *destination)
            .map_or_else(|| destination.to_string(), |r| r.id.to_string());
        Some((root, source))
    })
}
