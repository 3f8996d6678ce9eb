//! Lowering: an activated [`Policy`] to a [`LaunchPlan`].
//!
//! Pure and deterministic: the same policy, activation, architecture and
//! digest give the same plan on every machine. Nothing here touches the host.
//!
//! A [`Policy`] cannot be built without its invariants holding: the checker
//! and a compiled artifact both go through [`Policy::try_from`], which runs
//! the model's `check_invariants` (`model/invariants.rs`); lowering checks
//! each active root with [`check_active_root`].
//!
//! The emitted operation order is documented in `docs/launch-plan.md` and
//! built by [`lower`] in exactly that order:
//! `--seccomp` (when Bubblewrap delivers the filter), namespaces, process
//! hardening, `/proc`, `/dev`, the private `/tmp`, runtime mounts (policy
//! order), host file roots (policy order), the broker directory, ephemeral
//! roots (policy order), executable overlays, and the bounded-writes
//! remounts. Destinations of runtime mounts, roots, the broker, `/proc`,
//! `/dev` and `/tmp` never overlap (checked here), so policy order is a safe
//! mount order; executable overlays are files strictly below a runtime mount
//! and therefore come after all runtime mounts.

use crate::activate::Activation;
use crate::emit::{self, ArgvError};
use crate::model::{
    Access, FileRoot, FileRootKind, HostPath, Policy, PrivateTmp, ResourceLimits, Runners,
    SandboxPath, SeccompPolicy,
};
use crate::plan::{
    self, ActiveRoot, Behind, BrokerPlan, BwrapOp, ExecArg, LaunchPlan, MountPoint, MountSource,
    PLAN_FORMAT, Pin, PinKind, PinRole, PinSlot, PlanError, QuotaCheck, RawPlan, RootMode,
    SeccompDelivery, SeccompPlan, SeccompProfile, Slot, Stdio,
};
use splash_seccomp::Arch;

use crate::model::invariants::fixed;
pub use crate::model::invariants::{
    AllowlistDefect, Destination, InvariantError, Program, QuotaRootDefect, Tmpfs,
    check_active_root,
};

/// Why a plan could not be produced.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LowerError {
    /// The policy breaks an invariant lowering relies on.
    #[error("unsafe policy: {0}")]
    Invariant(#[from] InvariantError),
    /// The activation was made from another policy.
    #[error("the activation was made from another policy")]
    ForeignActivation,
    /// The activation does not fit this policy.
    #[error("the activation does not fit this policy: {0}")]
    Activation(#[from] crate::activate::ActivationError),
    /// More descriptor pins than a plan can hold (the count).
    #[error("the plan needs {0} descriptor pins; at most 65535 are possible")]
    TooManyPins(usize),
    /// The seccomp compiler refused the profile.
    #[error("cannot build the {profile} seccomp program for {}: {error}", .arch.name())]
    Seccomp {
        /// The profile.
        profile: SeccompProfile,
        /// The architecture.
        arch: Arch,
        /// The compiler's error.
        #[source]
        error: splash_seccomp::CompileError,
    },
    /// The seccomp compiler returned an empty program (a bug).
    #[error(
        "cannot build the {profile} seccomp program for {}: the seccomp compiler produced an empty program",
        .arch.name()
    )]
    EmptySeccomp {
        /// The profile.
        profile: SeccompProfile,
        /// The architecture.
        arch: Arch,
    },
    /// The Bubblewrap argument list is too large.
    #[error("the bubblewrap argument list is too large: {0}")]
    Argv(#[from] ArgvError),
    /// Lowering produced a launch plan its constructor refused (a bug).
    #[error("internal error: lowering produced an invalid launch plan: {0}")]
    Plan(#[from] PlanError),
}

struct Pins(Vec<Pin>);

impl Pins {
    fn add(
        &mut self,
        host_path: HostPath,
        kind: PinKind,
        role: PinRole,
    ) -> Result<PinSlot, LowerError> {
        let slot =
            u16::try_from(self.0.len()).map_err(|_| LowerError::TooManyPins(self.0.len() + 1))?;
        self.0.push(Pin {
            host_path,
            kind,
            role,
        });
        Ok(PinSlot(slot))
    }
}

/// Lower an activated policy to its launch plan for `arch`.
///
/// `source_digest` is the hex digest of the policy source or artifact the
/// policy came from; it is copied into the plan for reports.
///
/// The operations are pushed in the order the module documentation lists,
/// one step each.
pub fn lower(
    policy: &Policy,
    activation: &Activation,
    arch: Arch,
    source_digest: &str,
) -> Result<LaunchPlan, LowerError> {
    // The policy's invariants hold (a `Policy` is validated when built or
    // read). An activation is made only by `activate`, which checked it against
    // the policy it records; it must be this one.
    if !activation.is_for(policy)? {
        return Err(LowerError::ForeignActivation);
    }
    let active: Vec<&FileRoot> = policy
        .file_roots()
        .iter()
        .filter(|r| activation.is_active(&r.id))
        .collect();
    for root in &active {
        check_active_root(policy, root)?;
    }

    let has_exec_runner = matches!(
        policy.runners(),
        Runners::Combined { .. }
            | Runners::Separate {
                landlock: Some(_),
                ..
            }
    );
    let seccomp = seccomp_plan(policy, arch, has_exec_runner)?;
    let delivery = seccomp
        .as_ref()
        .map(|s| s.delivery.clone())
        .unwrap_or(SeccompDelivery::None);

    let mut pins = Pins(Vec::new());
    let bwrap_pin = if policy.pin_executables() {
        Some(pins.add(
            policy.bubblewrap().clone(),
            PinKind::Executable,
            PinRole::Bubblewrap,
        )?)
    } else {
        None
    };

    let mut ops = Vec::new();
    if delivery == SeccompDelivery::Bubblewrap {
        ops.push(BwrapOp::Seccomp);
    }
    ops.extend(plan::hardening_prefix(policy.no_further_user_namespaces()));
    ops.extend(private_tmp(policy.tmp()));
    runtime_mounts(policy, &mut pins, &mut ops)?;
    let (active_roots, quota_checks) = host_roots(policy, &active, &mut pins, &mut ops)?;
    let network_broker = broker(policy, activation, &mut pins, &mut ops)?;
    ops.extend(active.iter().filter_map(|root| match root.kind {
        FileRootKind::Ephemeral { size_bytes } => Some(BwrapOp::Tmpfs {
            destination: root.destination.clone(),
            size_bytes: Some(size_bytes),
        }),
        FileRootKind::Host { .. } => None,
    }));
    if policy.pin_executables() {
        executable_overlays(policy, &mut pins, &mut ops)?;
    }
    if policy.bounded_writes() {
        ops.push(BwrapOp::RemountRo(MountPoint::Path(fixed("/dev"))));
        ops.push(BwrapOp::RemountRo(MountPoint::Root));
    }

    let command = command(policy, delivery == SeccompDelivery::Runner);

    let plan = LaunchPlan::new(RawPlan {
        format: PLAN_FORMAT,
        policy_name: policy.name().to_string(),
        policy_digest: source_digest.to_string(),
        session_id: activation.session_id().cloned(),
        all_registered_roots_active: activation.is_all_registered(),
        arch,
        bwrap: policy.bubblewrap().clone(),
        bwrap_pin,
        pins: pins.0,
        ops,
        command,
        seccomp,
        active_roots,
        quota_checks,
        network_broker,
        environment: Vec::new(),
        stdio: Stdio::default(),
        aggregate_quota: policy.aggregate_quota(),
        cgroup: policy.cgroup().cloned(),
        require_cgroup_v2: policy.require_cgroup_v2(),
        watchdog: policy.watchdog(),
        identity: policy.worker_identity(),
    })?;
    emit::check_argument_limits(&plan)?;
    Ok(plan)
}

/// The private `/tmp`, if any.
fn private_tmp(tmp: PrivateTmp) -> Option<BwrapOp> {
    let size_bytes = match tmp {
        PrivateTmp::Off => return None,
        PrivateTmp::Unbounded => None,
        PrivateTmp::Bounded { size_bytes } => Some(size_bytes),
    };
    Some(BwrapOp::Tmpfs {
        destination: fixed("/tmp"),
        size_bytes,
    })
}

/// The runtime mounts, read-only, in policy order; pinned in mount-pinned
/// mode.
fn runtime_mounts(
    policy: &Policy,
    pins: &mut Pins,
    ops: &mut Vec<BwrapOp>,
) -> Result<(), LowerError> {
    for m in policy.runtime_mounts() {
        let source = if policy.pin_mounts() {
            MountSource::Pinned(pins.add(
                m.source.clone(),
                PinKind::FileOrDirectory,
                PinRole::RuntimeMount,
            )?)
        } else {
            MountSource::Path(m.source.clone())
        };
        ops.push(BwrapOp::RoBind {
            source,
            destination: m.destination.clone(),
        });
    }
    Ok(())
}

/// The active host roots' binds in policy order, and what the plan records
/// of every active root: its mode, and the quota check of each pinned
/// quota root.
fn host_roots(
    policy: &Policy,
    active: &[&FileRoot],
    pins: &mut Pins,
    ops: &mut Vec<BwrapOp>,
) -> Result<(Vec<ActiveRoot>, Vec<QuotaCheck>), LowerError> {
    let mut quota_checks = Vec::new();
    let mut active_roots = Vec::new();
    for root in active {
        let mode = match &root.kind {
            FileRootKind::Host {
                source,
                access,
                quota,
            } => {
                let src = if policy.pin_mounts() {
                    let slot = pins.add(
                        source.clone(),
                        PinKind::Directory,
                        PinRole::FileRoot(root.id.clone()),
                    )?;
                    if let Some(q) = quota {
                        quota_checks.push(QuotaCheck { slot, quota: *q });
                    }
                    MountSource::Pinned(slot)
                } else {
                    MountSource::Path(source.clone())
                };
                let destination = root.destination.clone();
                match access {
                    Access::ReadOnly => ops.push(BwrapOp::RoBind {
                        source: src,
                        destination,
                    }),
                    Access::ReadWrite => ops.push(BwrapOp::Bind {
                        source: src,
                        destination,
                    }),
                }
                match (access, quota) {
                    (Access::ReadOnly, _) => RootMode::ReadOnly,
                    (Access::ReadWrite, Some(_)) => RootMode::ReadWriteQuota,
                    (Access::ReadWrite, None) => RootMode::ReadWrite,
                }
            }
            FileRootKind::Ephemeral { .. } => RootMode::Tmpfs,
        };
        active_roots.push(ActiveRoot {
            id: root.id.clone(),
            destination: root.destination.clone(),
            mode,
        });
    }
    Ok((active_roots, quota_checks))
}

/// The network broker's directory, read-only from its pinned descriptor,
/// when the activation grants the broker.
fn broker(
    policy: &Policy,
    activation: &Activation,
    pins: &mut Pins,
    ops: &mut Vec<BwrapOp>,
) -> Result<Option<BrokerPlan>, LowerError> {
    let (true, Some(broker)) = (activation.broker_active(), policy.network_broker()) else {
        return Ok(None);
    };
    let slot = pins.add(
        broker.parent.clone(),
        PinKind::BrokerDirectory,
        PinRole::NetworkBroker,
    )?;
    ops.push(BwrapOp::RoBind {
        source: MountSource::Pinned(slot),
        destination: broker.destination.clone(),
    });
    Ok(Some(BrokerPlan {
        slot,
        destination: broker.destination.clone(),
        catalog: broker.catalog,
        ids: broker.ids.iter().cloned().collect(),
    }))
}

/// In executable-pinned mode, every program of the exec chain overlaid by
/// its pinned descriptor: the host file behind its path must be a
/// read-only mount's.
fn executable_overlays(
    policy: &Policy,
    pins: &mut Pins,
    ops: &mut Vec<BwrapOp>,
) -> Result<(), LowerError> {
    for (path, role) in executables(policy) {
        // Only a read-only mount's file can be pinned as the program.
        let behind = plan::mount_behind(ops, path);
        let host = match behind {
            Behind::ReadOnly { .. } => behind.host_path(&pins.0),
            Behind::Unmounted | Behind::ReadWrite { .. } | Behind::Synthetic => None,
        }
        .and_then(|host| HostPath::new(host).ok())
        .ok_or_else(|| InvariantError::OutsideRuntime {
            what: Program::Executable,
            path: path.clone(),
        })?;
        let slot = pins.add(host, PinKind::Executable, role)?;
        ops.push(BwrapOp::RoBind {
            source: MountSource::Pinned(slot),
            destination: path.clone(),
        });
    }
    Ok(())
}

/// The executables overlaid from pinned descriptors, deduplicated, in the
/// order: worker, limit runner, landlock runner, combined runner, explicit
/// targets (policy order). Only runners that are part of the chain appear.
fn executables(policy: &Policy) -> Vec<(&SandboxPath, PinRole)> {
    let mut out: Vec<(&SandboxPath, PinRole)> = vec![(policy.worker(), PinRole::Worker)];
    match policy.runners() {
        Runners::None => {}
        Runners::Separate { landlock, limit } => {
            if let Some(l) = limit {
                out.push((&l.path, PinRole::LimitRunner));
            }
            if let Some(l) = landlock {
                out.push((&l.path, PinRole::LandlockRunner));
            }
        }
        Runners::Combined { path, .. } => out.push((path, PinRole::CombinedRunner)),
    }
    if let Some(allow) = policy.runners().landlock_allow() {
        for target in allow {
            if !out.iter().any(|(p, _)| *p == target) {
                out.push((target, PinRole::AllowedExecutable));
            }
        }
    }
    out
}

fn lit(s: impl Into<String>) -> ExecArg {
    ExecArg::Literal(s.into())
}

/// The rlimit flags, in the fixed order, only the selected ones.
fn limit_flags(limits: &ResourceLimits, out: &mut Vec<ExecArg>) {
    let flags = [
        ("--cpu-seconds", limits.cpu_seconds),
        ("--address-space-bytes", limits.address_space_bytes),
        ("--process-count", limits.process_count),
        ("--open-files", limits.open_files),
        ("--file-size-bytes", limits.file_size_bytes),
    ];
    for (flag, value) in flags {
        if let Some(v) = value {
            out.push(lit(flag));
            out.push(lit(v.to_string()));
        }
    }
}

fn push_allow(paths: &[&SandboxPath], out: &mut Vec<ExecArg>) {
    let mut seen: Vec<&SandboxPath> = Vec::new();
    for p in paths {
        if !seen.contains(p) {
            seen.push(p);
            out.push(lit("--allow"));
            out.push(lit(p.as_str()));
        }
    }
}

/// The command after `--`: runner segments, then the worker and its fixed
/// arguments.
fn command(policy: &Policy, runner_seccomp: bool) -> Vec<ExecArg> {
    let mut out = Vec::new();
    let explicit: Vec<&SandboxPath> = policy
        .runners()
        .landlock_allow()
        .into_iter()
        .flatten()
        .collect();
    match policy.runners() {
        Runners::None => {}
        Runners::Combined {
            path,
            limits,
            allow_exec,
        } => {
            out.push(lit(path.as_str()));
            if let Some(l) = limits {
                limit_flags(l, &mut out);
            }
            if allow_exec.is_some() {
                let mut allow = vec![policy.worker()];
                allow.extend(explicit.iter().copied());
                push_allow(&allow, &mut out);
            }
            if runner_seccomp {
                out.push(lit("--seccomp-fd"));
                out.push(ExecArg::Slot(Slot::RunnerSeccomp));
            }
            out.push(lit("--"));
        }
        Runners::Separate { landlock, limit } => {
            if let Some(l) = landlock {
                out.push(lit(l.path.as_str()));
                let mut allow = vec![policy.worker()];
                if let Some(lr) = limit {
                    allow.push(&lr.path);
                }
                allow.extend(explicit.iter().copied());
                push_allow(&allow, &mut out);
                if runner_seccomp {
                    out.push(lit("--seccomp-fd"));
                    out.push(ExecArg::Slot(Slot::RunnerSeccomp));
                }
                out.push(lit("--"));
            }
            if let Some(l) = limit {
                out.push(lit(l.path.as_str()));
                limit_flags(&l.limits, &mut out);
                out.push(lit("--"));
            }
        }
    }
    out.push(lit(policy.worker().as_str()));
    out.extend(policy.worker_args().iter().map(|a| lit(a.as_str())));
    out
}

/// The seccomp filter a launch of `policy` installs: the selected profile
/// and whether the executable-allowlist guard is added, or `None` when the
/// launch installs no filter.
///
/// A policy with a Landlock executable allowlist always gets a filter: the
/// memfd guard ([`splash_seccomp::RuleSet::exec_allowlist_guard`]) closes
/// the one execution route Landlock's execute right does not cover, an
/// anonymous memory file. Without a seccomp profile the filter is the
/// default-allow baseline carrying only that guard and the architecture
/// checks. `splashc emit --bpf` and lowering both call this, so the program
/// shown is the program launched.
pub fn launch_filter(policy: &Policy) -> Option<(splash_seccomp::Profile, bool)> {
    let exec_allowlist = policy.runners().landlock_allow().is_some();
    let profile = match policy.seccomp() {
        SeccompPolicy::Off if exec_allowlist => splash_seccomp::Profile::Baseline,
        SeccompPolicy::Off => return None,
        SeccompPolicy::DenyKnownEscapeSurface => splash_seccomp::Profile::DenyKnownEscapeSurface,
        SeccompPolicy::StrictAllowlist { syscalls } => {
            splash_seccomp::Profile::StrictAllowlist(syscalls.clone())
        }
    };
    Some((profile, exec_allowlist))
}

/// The seccomp slot: which profile, delivered by whom, and its program.
///
/// The strict profile under an executable-launching runner is handed to the
/// runner, which installs it after Landlock; every other filter (including
/// the baseline that only carries the executable-allowlist guard) is
/// Bubblewrap's `--seccomp`, installed before the first runner runs.
fn seccomp_plan(
    policy: &Policy,
    arch: Arch,
    has_exec_runner: bool,
) -> Result<Option<SeccompPlan>, LowerError> {
    let Some((profile, exec_allowlist)) = launch_filter(policy) else {
        return Ok(None);
    };
    let delivery = match profile {
        splash_seccomp::Profile::StrictAllowlist(_) if has_exec_runner => SeccompDelivery::Runner,
        _ => SeccompDelivery::Bubblewrap,
    };
    let name = SeccompProfile::of(&profile);
    let program = splash_seccomp::compile_launch(&profile, arch, exec_allowlist)
        .map_err(|error| LowerError::Seccomp {
            profile: name,
            arch,
            error,
        })?
        .to_bytes();
    if program.is_empty() {
        return Err(LowerError::EmptySeccomp {
            profile: name,
            arch,
        });
    }
    Ok(Some(SeccompPlan {
        delivery,
        arch,
        profile: name,
        exec_allowlist_guard: exec_allowlist,
        program,
    }))
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeSet;

    use splash_manifest::{CapabilityManifest, Grant, GrantFormat, Resource, ResourceKind, Token};

    use super::*;
    use crate::activate::{ActivationError, activate};
    use crate::emit::{display_slot, shell_quote};
    use crate::model::invariants::check_invariants;
    use crate::model::{
        AggregateQuota, LandlockRunner, LimitRunner, NetworkBroker, ProjectQuota, RuntimeMount,
    };
    use crate::model::{RawPolicy, SelectorId};

    /// A host or sandbox test path (the side follows from where it goes).
    pub(crate) fn p<S: crate::model::Side>(s: &str) -> crate::model::AbsPath<S> {
        crate::model::AbsPath::new(s).expect("test path")
    }

    /// Known syscall names for a strict list.
    pub(crate) fn names(list: &[&str]) -> BTreeSet<crate::model::SyscallName> {
        list.iter()
            .map(|s| crate::model::SyscallName::new(s).expect("known syscall"))
            .collect()
    }

    pub(crate) fn id(s: &str) -> SelectorId {
        Token::new(s).expect("test token")
    }

    /// The specification's first example.
    pub(crate) fn sample() -> Policy {
        checked(&sample_raw())
    }

    /// The fields of [`sample`], for editing.
    pub(crate) fn sample_raw() -> RawPolicy {
        RawPolicy {
            name: "agent-worker".into(),
            bubblewrap: p("/usr/bin/bwrap"),
            worker: p("/opt/splash/bin/worker"),
            worker_args: vec!["--json-lines".into()],
            runtime_mounts: vec![RuntimeMount {
                source: p("/opt/splash/runtime"),
                destination: p("/opt/splash"),
            }],
            file_roots: vec![
                FileRoot {
                    id: id("project-read"),
                    destination: p("/workspace/project"),
                    kind: FileRootKind::Host {
                        source: p("/srv/splash/project"),
                        access: Access::ReadOnly,
                        quota: None,
                    },
                },
                FileRoot {
                    id: id("scratch"),
                    destination: p("/workspace/scratch"),
                    kind: FileRootKind::Ephemeral {
                        size_bytes: 32 << 20,
                    },
                },
            ],
            tmp: PrivateTmp::Bounded {
                size_bytes: 64 << 20,
            },
            bounded_writes: true,
            no_further_user_namespaces: true,
            pin_mounts: true,
            pin_executables: true,
            allow_unbounded_host_writes: false,
            aggregate_quota: None,
            aggregate_ephemeral_max_bytes: None,
            max_active_file_roots: 64,
            seccomp: SeccompPolicy::Off,
            require_limit_runner: true,
            runners: Runners::Separate {
                limit: Some(LimitRunner {
                    path: p("/opt/splash/bin/splash-limit-runner"),
                    limits: ResourceLimits {
                        cpu_seconds: Some(30),
                        address_space_bytes: Some(512 << 20),
                        process_count: None,
                        open_files: Some(64),
                        file_size_bytes: Some(16 << 20),
                    },
                }),
                landlock: Some(LandlockRunner {
                    path: p("/opt/splash/bin/splash-landlock-runner"),
                    allow_exec: vec![
                        p("/opt/splash/lib/ld-linux-aarch64.so.1"),
                        p("/opt/splash/bin/reviewed-interpreter"),
                    ],
                }),
            },
            cgroup: None,
            require_cgroup_v2: false,
            watchdog: None,
            network_broker: None,
            worker_identity: None,
        }
    }

    pub(crate) fn manifest(resources: &[(ResourceKind, &str)]) -> CapabilityManifest {
        let set: BTreeSet<Resource> = resources
            .iter()
            .map(|(k, i)| Resource {
                kind: *k,
                id: id(i),
            })
            .collect();
        CapabilityManifest {
            protocol_version: 5,
            session_id: id("s-1"),
            grants: vec![Grant {
                tool: id("tool.call"),
                format: GrantFormat::Json,
                max_calls: 1,
                max_input_bytes: 16384,
                max_output_bytes: 65536,
                max_compensations: 0,
                resources: set,
            }],
        }
    }

    fn argv(plan: &LaunchPlan) -> Vec<String> {
        plan.bwrap_arguments(&mut |s| display_slot(plan, s))
    }

    /// `raw` as a checked policy.
    pub(crate) fn checked(raw: &RawPolicy) -> Policy {
        Policy::try_from(raw.clone()).expect("a valid policy")
    }

    /// Builds `raw` (its invariants are lowering errors here) and lowers it.
    fn plain(raw: &RawPolicy, m: Option<&CapabilityManifest>) -> Result<LaunchPlan, LowerError> {
        let policy = Policy::try_from(raw.clone())?;
        let a = activate(&policy, m).expect("activation");
        lower(&policy, &a, Arch::X86_64, "00")
    }

    #[test]
    fn sample_pinned_argv_is_in_the_documented_order() {
        let policy = sample_raw();
        let m = manifest(&[
            (ResourceKind::FileRoot, "project-read"),
            (ResourceKind::FileRoot, "scratch"),
        ]);
        let plan = plain(&policy, Some(&m)).expect("plan");
        let got = argv(&plan).join(" ");
        let want = "--seccomp {fd:seccomp} \
            --unshare-all --unshare-user --disable-userns --cap-drop ALL --clearenv \
            --new-session --die-with-parent --as-pid-1 --chdir / --proc /proc --remount-ro /proc \
            --dev /dev --dev-bind {dev:null} /dev/null --dev-bind {dev:zero} /dev/zero \
            --dev-bind {dev:full} /dev/full --dev-bind {dev:random} /dev/random \
            --dev-bind {dev:urandom} /dev/urandom --dev-bind {dev:tty} /dev/tty \
            --size 67108864 --tmpfs /tmp \
            --ro-bind-fd {fd:pin:1:/opt/splash/runtime} /opt/splash \
            --ro-bind-fd {fd:pin:2:/srv/splash/project} /workspace/project \
            --size 33554432 --tmpfs /workspace/scratch \
            --ro-bind-fd {fd:pin:3:/opt/splash/runtime/bin/worker} /opt/splash/bin/worker \
            --ro-bind-fd {fd:pin:4:/opt/splash/runtime/bin/splash-limit-runner} /opt/splash/bin/splash-limit-runner \
            --ro-bind-fd {fd:pin:5:/opt/splash/runtime/bin/splash-landlock-runner} /opt/splash/bin/splash-landlock-runner \
            --ro-bind-fd {fd:pin:6:/opt/splash/runtime/lib/ld-linux-aarch64.so.1} /opt/splash/lib/ld-linux-aarch64.so.1 \
            --ro-bind-fd {fd:pin:7:/opt/splash/runtime/bin/reviewed-interpreter} /opt/splash/bin/reviewed-interpreter \
            --remount-ro /dev --remount-ro / -- \
            /opt/splash/bin/splash-landlock-runner --allow /opt/splash/bin/worker \
            --allow /opt/splash/bin/splash-limit-runner --allow /opt/splash/lib/ld-linux-aarch64.so.1 \
            --allow /opt/splash/bin/reviewed-interpreter -- \
            /opt/splash/bin/splash-limit-runner --cpu-seconds 30 --address-space-bytes 536870912 \
            --open-files 64 --file-size-bytes 16777216 -- /opt/splash/bin/worker --json-lines";
        let want: Vec<&str> = want.split_whitespace().collect();
        assert_eq!(got.split(' ').collect::<Vec<_>>(), want);
        assert_eq!(plan.bwrap_pin(), Some(PinSlot(0)));
        assert_eq!(
            plan.bwrap_program(&mut |s| display_slot(&plan, s)),
            "/proc/self/fd/{fd:pin:0:/usr/bin/bwrap}"
        );
        assert_eq!(plan.pins()[1].kind, PinKind::FileOrDirectory);
        assert_eq!(plan.pins()[2].kind, PinKind::Directory);
        assert_eq!(crate::emit::minimum_bwrap_version(&plan), "0.8.0");
    }

    #[test]
    fn unselected_root_never_appears() {
        let policy = sample_raw();
        let m = manifest(&[(ResourceKind::FileRoot, "scratch")]);
        let plan = plain(&policy, Some(&m)).expect("plan");
        let json = serde_json::to_string(&plan).expect("json");
        assert!(!json.contains("project"), "{json}");
        assert!(!argv(&plan).iter().any(|a| a.contains("project")));
        assert_eq!(plan.active_roots().len(), 1);
        assert_eq!(plan.session_id(), Some(&id("s-1")));
        assert!(!plan.all_registered_roots_active());
    }

    #[test]
    fn no_manifest_activates_everything_and_says_so() {
        let plan = plain(&sample_raw(), None).expect("plan");
        assert!(plan.all_registered_roots_active());
        assert_eq!(plan.session_id(), None);
        assert_eq!(plan.active_roots().len(), 2);
    }

    #[test]
    fn path_mode_uses_plain_binds() {
        let mut policy = sample_raw();
        policy.pin_mounts = false;
        policy.pin_executables = false;
        let plan = plain(&policy, None).expect("plan");
        let a = argv(&plan);
        assert!(
            a.windows(3)
                .any(|w| w == ["--ro-bind", "/opt/splash/runtime", "/opt/splash"])
        );
        assert!(
            a.windows(3)
                .any(|w| w == ["--ro-bind", "/srv/splash/project", "/workspace/project"])
        );
        assert!(!a.iter().any(|x| x.contains("{fd:pin")));
        assert!(plan.pins().is_empty());
        assert_eq!(crate::emit::minimum_bwrap_version(&plan), "0.8.0");
        let mut policy = policy.clone();
        policy.no_further_user_namespaces = false;
        policy.bounded_writes = false;
        let plan = plain(&policy, None).expect("plan");
        assert_eq!(crate::emit::minimum_bwrap_version(&plan), "0.7.0", "--size");
        assert_eq!(
            plan.bwrap_program(&mut |_| unreachable!()),
            "/usr/bin/bwrap"
        );
    }

    #[test]
    fn seccomp_delivery() {
        let mut policy = sample_raw();
        policy.seccomp = SeccompPolicy::DenyKnownEscapeSurface;
        let plan = plain(&policy, None).expect("plan");
        let s = plan.seccomp().expect("seccomp");
        assert_eq!(s.delivery, SeccompDelivery::Bubblewrap);
        assert!(!s.program.is_empty() && s.program.len().is_multiple_of(8));
        let a = argv(&plan);
        assert_eq!(a[..3], ["--seccomp", "{fd:seccomp}", "--unshare-all"]);
        assert!(!a.iter().any(|x| x == "--seccomp-fd"));

        // Strict with the landlock runner: the runner installs it.
        let syscalls = names(&["execve", "read", "write", "exit_group"]);
        policy.seccomp = SeccompPolicy::StrictAllowlist { syscalls };
        let plan = plain(&policy, None).expect("plan");
        assert_eq!(
            plan.seccomp().expect("seccomp").delivery,
            SeccompDelivery::Runner
        );
        let a = argv(&plan);
        assert_eq!(a[0], "--unshare-all");
        let at = a
            .iter()
            .position(|x| x == "--seccomp-fd")
            .expect("runner flag");
        assert_eq!(a[at + 1], "{fd:runner-seccomp}");

        // Strict without an executable runner: bwrap installs it.
        without_landlock(&mut policy);
        let plan = plain(&policy, None).expect("plan");
        assert_eq!(
            plan.seccomp().expect("seccomp").delivery,
            SeccompDelivery::Bubblewrap
        );
        assert!(
            plan.command()
                .iter()
                .all(|c| *c != ExecArg::Slot(Slot::RunnerSeccomp))
        );

        // The compiler's own refusals surface as lowering errors.
        let syscalls = names(&["execve", "clone3"]);
        policy.seccomp = SeccompPolicy::StrictAllowlist { syscalls };
        assert!(matches!(
            plain(&policy, None),
            Err(LowerError::Seccomp { .. })
        ));
    }

    /// The sample without its Landlock runner.
    fn without_landlock(policy: &mut RawPolicy) {
        if let Runners::Separate { landlock, .. } = &mut policy.runners {
            *landlock = None;
        }
    }

    #[test]
    fn combined_runner_command_line() {
        let mut policy = sample_raw();
        let one = p("/opt/splash/bin/splash-runner");
        let Runners::Separate {
            limit: Some(limit),
            landlock: Some(landlock),
        } = policy.runners.clone()
        else {
            panic!("the sample has both runners")
        };
        policy.runners = Runners::Combined {
            path: one.clone(),
            limits: Some(limit.limits),
            allow_exec: Some(landlock.allow_exec),
        };
        policy.pin_executables = false;
        let built = checked(&policy);
        assert!(matches!(built.runners(), Runners::Combined { path, .. } if *path == one));
        let plan = plain(&policy, None).expect("plan");
        let a = argv(&plan);
        let cmd = &a[a.iter().position(|x| x == "--").expect("--") + 1..];
        assert_eq!(
            cmd.join(" "),
            "/opt/splash/bin/splash-runner --cpu-seconds 30 --address-space-bytes 536870912 \
             --open-files 64 --file-size-bytes 16777216 --allow /opt/splash/bin/worker \
             --allow /opt/splash/lib/ld-linux-aarch64.so.1 --allow /opt/splash/bin/reviewed-interpreter \
             -- /opt/splash/bin/worker --json-lines"
        );
        if let Runners::Combined { allow_exec, .. } = &mut policy.runners {
            *allow_exec = None;
        }
        let plan = plain(&policy, None).expect("plan");
        assert!(!argv(&plan).iter().any(|x| x == "--allow"));
    }

    #[test]
    fn limit_runner_alone_and_no_runner() {
        let mut policy = sample_raw();
        without_landlock(&mut policy);
        policy.pin_executables = false;
        let plan = plain(&policy, None).expect("plan");
        let a = argv(&plan);
        let cmd = &a[a.iter().position(|x| x == "--").expect("--") + 1..];
        assert_eq!(cmd[0], "/opt/splash/bin/splash-limit-runner");
        policy.require_limit_runner = false;
        // A policy without runners has one form only.
        policy.runners = Runners::Separate {
            limit: None,
            landlock: None,
        };
        let err = plain(&policy, None).expect_err("empty separate runners");
        assert!(
            matches!(err, LowerError::Invariant(InvariantError::NoSeparateRunner)),
            "{err:?}"
        );
        policy.runners = Runners::None;
        let plan = plain(&policy, None).expect("plan");
        let a = argv(&plan);
        let cmd = &a[a.iter().position(|x| x == "--").expect("--") + 1..];
        assert_eq!(cmd, ["/opt/splash/bin/worker", "--json-lines"]);
    }

    #[test]
    fn defensive_checks_refuse_weaker_sandboxes() {
        let mut policy = sample_raw();
        policy.pin_mounts = false;
        assert_eq!(
            check_invariants(&policy),
            Err(InvariantError::PinExecutablesWithoutPinMounts)
        );

        let mut policy = sample_raw();
        policy.no_further_user_namespaces = false;
        assert_eq!(
            check_invariants(&policy),
            Err(InvariantError::BoundedWritesWithoutUserns)
        );

        // A read-write host root without quota and without the escape hatch.
        let mut policy = sample_raw();
        policy.bounded_writes = false;
        policy.file_roots.push(FileRoot {
            id: id("out"),
            destination: p("/workspace/out"),
            kind: FileRootKind::Host {
                source: p("/srv/out"),
                access: Access::ReadWrite,
                quota: None,
            },
        });
        assert_eq!(check_invariants(&policy), Ok(()), "registering is fine");
        let m = manifest(&[(ResourceKind::FileRoot, "out")]);
        let err = plain(&policy, Some(&m)).expect_err("active raw root");
        assert!(
            matches!(&err, LowerError::Invariant(InvariantError::UnboundedWritableRoot(got)) if *got == id("out")),
            "{err:?}"
        );
        policy.allow_unbounded_host_writes = true;
        let plan = plain(&policy, Some(&m)).expect("escape hatch");
        assert!(
            argv(&plan)
                .windows(3)
                .any(|w| w[0] == "--bind-fd" && w[2] == "/workspace/out")
        );
        policy.bounded_writes = true;
        let err = plain(&policy, Some(&m)).expect_err("bounded writes override the hatch");
        assert!(
            matches!(&err, LowerError::Invariant(InvariantError::UnverifiedRootUnderBoundedWrites(got)) if *got == id("out")),
            "{err:?}"
        );

        // Overlapping destinations.
        let mut policy = sample_raw();
        policy.file_roots[1].destination = p("/opt/splash/scratch");
        assert!(matches!(
            check_invariants(&policy),
            Err(InvariantError::Overlap { .. })
        ));

        // Worker outside every runtime mount.
        let mut policy = sample_raw();
        policy.worker = p("/usr/bin/worker");
        assert!(matches!(
            check_invariants(&policy),
            Err(InvariantError::OutsideRuntime { .. })
        ));
    }

    #[test]
    fn quota_roots_make_checks_and_respect_the_aggregate() {
        let mut policy = sample_raw();
        policy.aggregate_quota = Some(AggregateQuota {
            max_bytes: 256 << 20,
            max_inodes: 16384,
        });
        for (name, dest) in [("out-a", "/workspace/a"), ("out-b", "/workspace/b")] {
            policy.file_roots.push(FileRoot {
                id: id(name),
                destination: p(dest),
                kind: FileRootKind::Host {
                    source: p(&format!("/srv/{name}")),
                    access: Access::ReadWrite,
                    quota: Some(ProjectQuota {
                        project_id: 42,
                        max_bytes: 256 << 20,
                        max_inodes: 16384,
                    }),
                },
            });
        }
        let m = manifest(&[
            (ResourceKind::FileRoot, "out-a"),
            (ResourceKind::FileRoot, "out-b"),
        ]);
        let plan = plain(&policy, Some(&m)).expect("one project counted once");
        assert_eq!(plan.quota_checks().len(), 2);
        assert_eq!(plan.active_roots()[0].mode, RootMode::ReadWriteQuota);
        if let FileRootKind::Host { quota: Some(q), .. } = &mut policy.file_roots[3].kind {
            q.project_id = 43;
        }
        let err = activate(&checked(&policy), Some(&m)).expect_err("two projects exceed");
        assert!(
            matches!(err, ActivationError::QuotaBoundExceeded { .. }),
            "{err}"
        );
    }

    #[test]
    fn broker_mount_is_pinned_and_exact() {
        let mut policy = sample_raw();
        policy.network_broker = Some(NetworkBroker {
            parent: p("/run/splash"),
            destination: p("/run/broker"),
            catalog: crate::model::BrokerCatalog::Endpoint,
            ids: [id("api")].into_iter().collect(),
        });
        let m = manifest(&[(ResourceKind::NetworkOrigin, "api")]);
        let plan = plain(&policy, Some(&m)).expect("plan");
        let a = argv(&plan);
        assert!(
            a.windows(3)
                .any(|w| w[0] == "--ro-bind-fd" && w[2] == "/run/broker")
        );
        assert!(!a.iter().any(|x| x == "--share-net"));
        let slot = plan.network_broker().expect("broker").slot;
        assert_eq!(
            plan.pins()[usize::from(slot.0)].kind,
            PinKind::BrokerDirectory
        );
    }

    #[test]
    fn a_broker_socket_path_must_fit_a_socket_address() {
        let with_destination = |destination: &str| {
            let mut policy = sample_raw();
            policy.network_broker = Some(NetworkBroker {
                parent: p("/run/splash"),
                destination: p(destination),
                catalog: crate::model::BrokerCatalog::Endpoint,
                ids: [id("api")].into_iter().collect(),
            });
            Policy::try_from(policy)
        };
        let longest = format!(
            "/{}",
            "d".repeat(crate::model::MAX_BROKER_DESTINATION_BYTES - 1)
        );
        with_destination(&longest).expect("a 107-byte socket path fits");
        let too_long = format!("{longest}x");
        let err = with_destination(&too_long).expect_err("108 bytes do not fit");
        assert_eq!(
            err,
            InvariantError::BrokerSocketPathTooLong(format!("{too_long}/broker.sock"))
        );
    }

    #[test]
    fn an_activation_lowers_only_its_own_policy() {
        let policy = sample_raw();
        let a = activate(&checked(&policy), Some(&manifest(&[]))).expect("activation");
        lower(&checked(&policy), &a, Arch::X86_64, "00").expect("control: its own policy");
        // The same policy, changed after activation: a lower root maximum
        // the activation was never checked against.
        let mut changed = policy.clone();
        changed.max_active_file_roots = 0;
        let changed = checked(&changed);
        let err = lower(&changed, &a, Arch::X86_64, "00").expect_err("another policy");
        assert!(matches!(err, LowerError::ForeignActivation), "{err:?}");
        // An identical policy is the same policy.
        assert!(a.is_for(&sample()).expect("identity"));
        assert!(!a.is_for(&changed).expect("identity"));
    }

    #[test]
    fn a_cached_identity_is_the_identity_computed_afresh() {
        let policy = checked(&sample_raw());
        let first = activate(&policy, Some(&manifest(&[]))).expect("activation");
        // `policy` now carries its identity; a clone carries the cache, a
        // policy rebuilt from the same fields starts without one.
        let rebuilt = Policy::try_from(policy.clone().into_raw()).expect("rebuilt");
        assert!(first.is_for(&policy).expect("identity"));
        assert!(first.is_for(&policy.clone()).expect("identity"));
        assert!(first.is_for(&rebuilt).expect("identity"));
        // A changed policy built after the cache was filled is another one.
        let mut raw = policy.clone().into_raw();
        raw.max_active_file_roots = 0;
        let changed = Policy::try_from(raw).expect("changed");
        assert!(!first.is_for(&changed).expect("identity"));
        let second = activate(&changed, Some(&manifest(&[]))).expect("activation");
        assert!(!second.is_for(&policy).expect("identity"));
    }

    #[test]
    fn output_is_deterministic() {
        let policy = sample_raw();
        let a = serde_json::to_string(&plain(&policy, None).expect("plan")).expect("json");
        let b = serde_json::to_string(&plain(&policy, None).expect("plan")).expect("json");
        assert_eq!(a, b);
    }

    #[test]
    fn plan_round_trips_through_json() {
        let plan = plain(&sample_raw(), None).expect("plan");
        let json = serde_json::to_string(&plan).expect("json");
        let back: LaunchPlan = serde_json::from_str(&json).expect("decode");
        assert_eq!(back, plan);
    }

    #[test]
    fn argument_limits() {
        use crate::emit::{ArgvError, BWRAP_MAX_ARGS, check_argv};
        let many = vec!["x".to_string(); BWRAP_MAX_ARGS + 1];
        assert!(matches!(
            check_argv(&many),
            Err(ArgvError::TooManyArguments { .. })
        ));
        assert!(matches!(
            check_argv(&["a\0b".to_string()]),
            Err(ArgvError::Nul { index: 0 })
        ));
        let mut policy = sample_raw();
        policy.worker_args = vec!["y".repeat(100_000), "z".repeat(100_000)];
        let err = plain(&policy, None).expect_err("too many bytes");
        assert!(
            matches!(err, LowerError::Argv(ArgvError::TooManyBytes { .. })),
            "{err}"
        );
    }

    #[test]
    fn every_emitted_option_is_in_the_version_table() {
        use crate::emit::EMITTED_OPTIONS;
        let mut seen = BTreeSet::new();
        for pinned in [false, true] {
            let mut policy = sample_raw();
            policy.pin_mounts = pinned;
            policy.pin_executables = pinned;
            policy.seccomp = SeccompPolicy::DenyKnownEscapeSurface;
            policy.bounded_writes = false;
            policy.allow_unbounded_host_writes = true;
            policy.file_roots.push(FileRoot {
                id: id("out"),
                destination: p("/workspace/out"),
                kind: FileRootKind::Host {
                    source: p("/srv/out"),
                    access: Access::ReadWrite,
                    quota: None,
                },
            });
            for bounded in [false, true] {
                if bounded {
                    policy.file_roots.pop();
                    policy.bounded_writes = true;
                }
                let plan = plain(&policy, None).expect("plan");
                let a = argv(&plan);
                let end = a.iter().position(|x| x == "--").expect("--");
                seen.extend(a[..end].iter().filter(|x| x.starts_with("--")).cloned());
            }
        }
        let table: BTreeSet<String> = EMITTED_OPTIONS
            .iter()
            .map(|o| o.option.to_string())
            .collect();
        assert_eq!(seen, table, "emitted options vs EMITTED_OPTIONS");
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("/opt/x"), "/opt/x");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("{fd:seccomp}"), "'{fd:seccomp}'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
