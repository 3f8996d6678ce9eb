//! Activation: bind a checked [`Policy`] to a capability manifest.
//!
//! The manifest only *selects* among what the policy registered, by opaque
//! id. The steps run in this order, and the first failure stops activation:
//!
//! 0. the manifest itself is validated
//!    ([`CapabilityManifest::validate`]: protocol version 5, at most 128
//!    grants, each tool granted once, `max_calls`, `max_input_bytes` and
//!    `max_output_bytes` at least 1, at most 64 resources per grant), so a
//!    manifest built in code cannot reach lowering, bind or spawn unchecked;
//! 1. the active resources are the union over all grants;
//! 2. the number of distinct `file_root` selectors is compared with the
//!    policy's active-root maximum *before* any selector is resolved;
//! 3. each selector is resolved in canonical order (kind, then id):
//!    `file_root` must name a registered root, `executable` and `secret` are
//!    always rejected, `network_origin` needs a configured broker;
//! 4. a configured broker's ids must equal the manifest's distinct
//!    network-origin ids exactly;
//! 5. the aggregate ephemeral tmpfs bound is checked over the *active*
//!    ephemeral roots plus a bounded private `/tmp`;
//! 6. the aggregate project-quota bound is checked over the *active* quota
//!    roots, each distinct project id counted once.
//!
//! Inactive roots are never looked at again: lowering only sees the ids in
//! [`Activation::roots`].
//!
//! An [`Activation`] can only be made here, and it is tied to the policy it
//! was made from: it records the policy's identity (a BLAKE3 digest of its
//! canonical JSON), and [`crate::lower::lower`] refuses an activation of any
//! other policy, so the checks above never need repeating.
//!
//! Activation is pure: it reads no file and resolves no path. Whether a
//! selected host root exists, has the right type and carries the quota it
//! claims is decided later, when the runtime binds the launch plan.

use std::collections::{BTreeMap, BTreeSet};

use splash_manifest::{CapabilityManifest, ManifestError, ResourceKind};

use crate::model::{FileRootKind, Policy, PrivateTmp, SelectorId};

/// The selection a (validated) manifest made from one policy; made only by
/// [`activate`], so holding one means every check of the module
/// documentation passed for that policy.
///
/// It holds ids and totals, not paths: [`crate::lower::lower`] takes the
/// policy and this selection together, refuses a selection made from another
/// policy, and mounts exactly the roots in [`Activation::roots`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activation {
    /// The identity of the policy this activation was made from.
    policy: PolicyIdentity,
    session_id: Option<SelectorId>,
    roots: Vec<SelectorId>,
    network_origins: BTreeSet<SelectorId>,
    broker_active: bool,
    ephemeral_bytes: u64,
    quota_totals: (u64, u64),
}

/// The identity of a [`Policy`]: the BLAKE3 digest of its compact JSON (the
/// same bytes an artifact's policy digest covers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PolicyIdentity(blake3::Hash);

impl PolicyIdentity {
    /// The identity of `policy`.
    /// Computed once per `Policy` value and cached in it.
    pub(crate) fn of(policy: &Policy) -> Result<Self, ActivationError> {
        policy
            .identity_cache()
            .get_or_try(|| {
                let mut hasher = blake3::Hasher::new();
                serde_json::to_writer(&mut hasher, policy).map_err(ActivationError::Identity)?;
                Ok(hasher.finalize())
            })
            .map(Self)
    }
}

impl Activation {
    /// True when this activation was made from `policy` (the policies'
    /// canonical JSON digests are equal).
    ///
    /// # Errors
    ///
    /// [`ActivationError::Identity`] if `policy` cannot be serialized to
    /// compute its identity (not expected for a valid policy).
    pub fn is_for(&self, policy: &Policy) -> Result<bool, ActivationError> {
        Ok(PolicyIdentity::of(policy)? == self.policy)
    }

    /// The manifest's session id; `None` when no manifest was given and
    /// every registered root is active.
    pub fn session_id(&self) -> Option<&SelectorId> {
        self.session_id.as_ref()
    }

    /// Active file-root ids, distinct, registered, in policy order.
    pub fn roots(&self) -> &[SelectorId] {
        &self.roots
    }

    /// The manifest's distinct network-origin ids (equal to the broker's ids
    /// when non-empty).
    pub fn network_origins(&self) -> &BTreeSet<SelectorId> {
        &self.network_origins
    }

    /// True when the policy's network broker is mounted.
    pub fn broker_active(&self) -> bool {
        self.broker_active
    }

    /// Potential tmpfs capacity: the sum of the active ephemeral roots and a
    /// bounded private `/tmp`.
    pub fn ephemeral_bytes(&self) -> u64 {
        self.ephemeral_bytes
    }

    /// Sum of the per-project maximum hard limits of the active quota roots,
    /// each project id once: `(bytes, inodes)`.
    pub fn quota_totals(&self) -> (u64, u64) {
        self.quota_totals
    }

    /// True when no manifest was given.
    pub fn is_all_registered(&self) -> bool {
        self.session_id.is_none()
    }

    /// True when the root `id` is active.
    pub fn is_active(&self, id: &SelectorId) -> bool {
        self.roots.iter().any(|r| r == id)
    }
}

/// Why a manifest cannot be activated against a policy. Each variant is one
/// step of the module documentation's order; activation stops at the first.
///
/// Ids in these errors come from the manifest or the policy and are tokens
/// (`a-z`, `0-9`, `.`, `_`, `-`), so they are safe to show.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ActivationError {
    /// Step 0: [`CapabilityManifest::validate`] refused the manifest (the
    /// manifest rule it breaks).
    #[error("the manifest is invalid: {0}")]
    InvalidManifest(#[source] ManifestError),
    /// Step 2: the grants together select more distinct `file_root` ids than
    /// the policy's `active-roots max` ([`Policy::max_active_file_roots`]).
    /// Checked before any id is resolved, so unknown ids over the bound are
    /// reported as this error.
    #[error(
        "manifest selects {count} distinct file roots; the policy allows at most {max} active file roots"
    )]
    TooManyActiveRoots {
        /// Distinct `file_root` ids selected by the manifest.
        count: usize,
        /// The policy's bound.
        max: u16,
    },
    /// Step 2 without a manifest: every registered root would be active, and
    /// the policy registers more roots than its `active-roots max`.
    #[error(
        "no manifest was given, so all {count} registered file roots would be active; the policy allows at most {max} active file roots (give a manifest that selects at most {max})"
    )]
    TooManyRegisteredRoots {
        /// Roots the policy registers.
        count: usize,
        /// The policy's bound.
        max: u16,
    },
    /// Step 3: a `file_root` selector names no root the policy registers.
    #[error("file_root selector `{id}` names no registered file root")]
    UnknownFileRoot {
        /// The unknown selector id.
        id: SelectorId,
    },
    /// Step 3: an `executable` selector; always rejected, because the worker
    /// program is fixed by the policy and a manifest cannot choose another.
    #[error("executable selector `{id}` is rejected: the worker program is fixed by the policy")]
    ExecutableSelector {
        /// The rejected selector id.
        id: SelectorId,
    },
    /// Step 3: a `secret` selector; always rejected (no secret provisioning
    /// exists in this backend).
    #[error("secret selector `{id}` is rejected: secret provisioning is not supported")]
    SecretSelector {
        /// The rejected selector id.
        id: SelectorId,
    },
    /// Step 3: a `network_origin` selector while the policy has no
    /// `network-broker`; network origins are reachable only through a broker.
    #[error("network_origin selector `{id}` is rejected: the policy configures no network broker")]
    NetworkOriginWithoutBroker {
        /// The rejected selector id.
        id: SelectorId,
    },
    /// Step 4: the broker's ids and the manifest's distinct network-origin
    /// ids differ (both lists sorted; at least one non-empty). Also raised
    /// when a broker is configured and the manifest selects no network
    /// origin at all.
    #[error(
        "network broker ids do not equal the manifest's network_origin ids: {}",
        describe_mismatch(.not_in_broker, .not_in_manifest)
    )]
    BrokerMismatch {
        /// Selected by the manifest but not served by the broker.
        not_in_broker: Vec<SelectorId>,
        /// Served by the broker but not selected by the manifest.
        not_in_manifest: Vec<SelectorId>,
    },
    /// Step 5: `tmpfs aggregate` is set and the private `/tmp` is unbounded,
    /// so the aggregate could not hold.
    #[error(
        "the aggregate ephemeral tmpfs bound is set, so the private `/tmp` must be bounded or off"
    )]
    UnboundedTmpWithEphemeralBound,
    /// Step 5: the active tmpfs roots plus the bounded private `/tmp` exceed
    /// `tmpfs aggregate`. The checker lets a policy register tmpfs roots
    /// that do not all fit at once (a warning), so this is where a manifest
    /// selecting too many of them is refused.
    #[error("{}", describe_ephemeral(.roots, *.tmp_bytes, *.total, *.max, *.all_registered))]
    EphemeralBoundExceeded {
        /// The active tmpfs roots, in policy order.
        roots: Vec<SelectorId>,
        /// The bounded private `/tmp`, in bytes (0 when it is off).
        tmp_bytes: u64,
        /// The sum of the sizes of `roots` and `tmp_bytes`, in bytes
        /// (computed without overflow).
        total: u128,
        /// The policy's `tmpfs aggregate`, in bytes.
        max: u64,
        /// No manifest was given, so every registered root is active.
        all_registered: bool,
    },
    /// Step 6: an active root carries a project quota and the policy sets no
    /// `quota aggregate`. The checker already refuses such a policy; one
    /// deserialized from its JSON form is caught here, when the root is
    /// selected.
    #[error(
        "active quota root `{id}` needs an aggregate project-quota bound, and the policy sets none"
    )]
    QuotaWithoutAggregate {
        /// The first active quota root, in policy order.
        id: SelectorId,
    },
    /// Step 6: the active quota roots' ceilings, each distinct project id
    /// counted once at its largest ceilings, exceed `quota aggregate`.
    #[error(
        "active quota roots may use {bytes} bytes and {inodes} inodes; the aggregate bound is {max_bytes} bytes and {max_inodes} inodes"
    )]
    QuotaBoundExceeded {
        /// Summed byte ceilings (computed without overflow).
        bytes: u128,
        /// Summed inode ceilings (computed without overflow).
        inodes: u128,
        /// The aggregate byte bound.
        max_bytes: u64,
        /// The aggregate inode bound.
        max_inodes: u64,
    },
    /// The policy could not be serialized to compute its identity (the
    /// serializer's error); a bug, not a property of the manifest.
    #[error("internal error: cannot compute the policy's identity: {0}")]
    Identity(#[source] serde_json::Error),
}

fn describe_ephemeral(
    roots: &[SelectorId],
    tmp_bytes: u64,
    total: u128,
    max: u64,
    all_registered: bool,
) -> String {
    let ids = roots
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ");
    let what = match (roots.len(), tmp_bytes) {
        (0, _) => "the private `/tmp`".to_owned(),
        (1, 0) => format!("the active tmpfs root {ids}"),
        (_, 0) => format!("the active tmpfs roots {ids}"),
        (1, _) => format!("the active tmpfs root {ids} and the private `/tmp`"),
        (_, _) => format!("the active tmpfs roots {ids} and the private `/tmp`"),
    };
    let why = if all_registered {
        " (no manifest was given, so every registered root is active; give a manifest that selects fewer tmpfs roots)"
    } else if roots.is_empty() {
        ""
    } else {
        "; select fewer or smaller tmpfs roots"
    };
    format!(
        "{what} may hold {total} bytes together, above the `tmpfs aggregate` bound of {max} bytes{why}"
    )
}

fn describe_mismatch(not_in_broker: &[SelectorId], not_in_manifest: &[SelectorId]) -> String {
    let list = |ids: &[SelectorId]| {
        ids.iter()
            .map(|i| format!("`{i}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut parts = Vec::new();
    if !not_in_broker.is_empty() {
        parts.push(format!(
            "selected but not served by the broker: {}",
            list(not_in_broker)
        ));
    }
    if !not_in_manifest.is_empty() {
        parts.push(format!(
            "served by the broker but not selected: {}",
            list(not_in_manifest)
        ));
    }
    parts.join("; ")
}

/// Activate `policy` with `manifest`, or with every registered root when
/// `manifest` is `None` (for review with `splashc emit`).
///
/// Without a manifest, every registered root and every broker id count as
/// selected and [`Activation::session_id`] is `None`; the same bounds apply.
/// A launch always has a manifest.
///
/// # Errors
///
/// The first failing step of the module documentation, as an
/// [`ActivationError`].
pub fn activate(
    policy: &Policy,
    manifest: Option<&CapabilityManifest>,
) -> Result<Activation, ActivationError> {
    if let Some(m) = manifest {
        m.validate().map_err(ActivationError::InvalidManifest)?;
    }
    let (session_id, file_roots, network_origins) = match manifest {
        Some(m) => select(policy, m)?,
        None => select_all(policy)?,
    };

    let broker_active = match policy.network_broker() {
        Some(broker) => {
            if broker.ids != network_origins {
                return Err(ActivationError::BrokerMismatch {
                    not_in_broker: network_origins.difference(&broker.ids).cloned().collect(),
                    not_in_manifest: broker.ids.difference(&network_origins).cloned().collect(),
                });
            }
            true
        }
        None => false,
    };

    // Active roots in policy order.
    let roots: Vec<SelectorId> = policy
        .file_roots()
        .iter()
        .filter(|r| file_roots.contains(&r.id))
        .map(|r| r.id.clone())
        .collect();

    let ephemeral_bytes = ephemeral_total(policy, &roots, session_id.is_none())?;
    let quota_totals = quota_totals(policy, &roots)?;

    Ok(Activation {
        policy: PolicyIdentity::of(policy)?,
        session_id,
        roots,
        network_origins,
        broker_active,
        ephemeral_bytes,
        quota_totals,
    })
}

type Selection = (
    Option<SelectorId>,
    BTreeSet<SelectorId>,
    BTreeSet<SelectorId>,
);

fn select(policy: &Policy, manifest: &CapabilityManifest) -> Result<Selection, ActivationError> {
    let active = manifest.active_resources();

    // The bound first, before anything is resolved.
    let count = active
        .iter()
        .filter(|r| r.kind == ResourceKind::FileRoot)
        .count();
    if count > usize::from(policy.max_active_file_roots()) {
        return Err(ActivationError::TooManyActiveRoots {
            count,
            max: policy.max_active_file_roots(),
        });
    }

    let mut file_roots = BTreeSet::new();
    let mut network = BTreeSet::new();
    for resource in active {
        match resource.kind {
            ResourceKind::FileRoot => {
                if !policy.file_roots().iter().any(|r| r.id == resource.id) {
                    return Err(ActivationError::UnknownFileRoot { id: resource.id });
                }
                file_roots.insert(resource.id);
            }
            ResourceKind::Executable => {
                return Err(ActivationError::ExecutableSelector { id: resource.id });
            }
            ResourceKind::NetworkOrigin => {
                if policy.network_broker().is_none() {
                    return Err(ActivationError::NetworkOriginWithoutBroker { id: resource.id });
                }
                network.insert(resource.id);
            }
            ResourceKind::Secret => {
                return Err(ActivationError::SecretSelector { id: resource.id });
            }
        }
    }
    Ok((Some(manifest.session_id.clone()), file_roots, network))
}

fn select_all(policy: &Policy) -> Result<Selection, ActivationError> {
    let ids: BTreeSet<SelectorId> = policy.file_roots().iter().map(|r| r.id.clone()).collect();
    if ids.len() > usize::from(policy.max_active_file_roots()) {
        return Err(ActivationError::TooManyRegisteredRoots {
            count: ids.len(),
            max: policy.max_active_file_roots(),
        });
    }
    let network = policy
        .network_broker()
        .as_ref()
        .map(|b| b.ids.clone())
        .unwrap_or_default();
    Ok((None, ids, network))
}

/// Step 5: the active tmpfs roots and a bounded private `/tmp`, summed and
/// held to `tmpfs aggregate` when the policy sets one.
fn ephemeral_total(
    policy: &Policy,
    roots: &[SelectorId],
    all_registered: bool,
) -> Result<u64, ActivationError> {
    let tmp_bytes = match policy.tmp() {
        PrivateTmp::Bounded { size_bytes } => size_bytes,
        PrivateTmp::Off | PrivateTmp::Unbounded => 0,
    };
    let mut total = u128::from(tmp_bytes);
    let mut active = Vec::new();
    for root in policy.file_roots().iter().filter(|r| roots.contains(&r.id)) {
        if let FileRootKind::Ephemeral { size_bytes } = root.kind {
            total += u128::from(size_bytes);
            active.push(root.id.clone());
        }
    }
    if let Some(max) = policy.aggregate_ephemeral_max_bytes() {
        if policy.tmp() == PrivateTmp::Unbounded {
            return Err(ActivationError::UnboundedTmpWithEphemeralBound);
        }
        if total > u128::from(max) {
            return Err(ActivationError::EphemeralBoundExceeded {
                roots: active,
                tmp_bytes,
                total,
                max,
                all_registered,
            });
        }
    }
    // Without a bound the total is informational; saturate rather than wrap.
    Ok(u64::try_from(total).unwrap_or(u64::MAX))
}

fn quota_totals(policy: &Policy, roots: &[SelectorId]) -> Result<(u64, u64), ActivationError> {
    // Per project id, the largest accepted hard limits among the active roots
    // that share it: one project is one budget however many roots it backs.
    let mut projects: BTreeMap<u32, (u64, u64)> = BTreeMap::new();
    for root in policy.file_roots().iter().filter(|r| roots.contains(&r.id)) {
        if let FileRootKind::Host { quota: Some(q), .. } = &root.kind {
            if policy.aggregate_quota().is_none() {
                return Err(ActivationError::QuotaWithoutAggregate {
                    id: root.id.clone(),
                });
            }
            let entry = projects.entry(q.project_id).or_insert((0, 0));
            entry.0 = entry.0.max(q.max_bytes);
            entry.1 = entry.1.max(q.max_inodes);
        }
    }
    let bytes: u128 = projects.values().map(|v| u128::from(v.0)).sum();
    let inodes: u128 = projects.values().map(|v| u128::from(v.1)).sum();
    if let Some(agg) = policy.aggregate_quota()
        && (bytes > u128::from(agg.max_bytes) || inodes > u128::from(agg.max_inodes))
    {
        return Err(ActivationError::QuotaBoundExceeded {
            bytes,
            inodes,
            max_bytes: agg.max_bytes,
            max_inodes: agg.max_inodes,
        });
    }
    Ok((
        u64::try_from(bytes).unwrap_or(u64::MAX),
        u64::try_from(inodes).unwrap_or(u64::MAX),
    ))
}

#[cfg(test)]
mod tests {
    use splash_manifest::ResourceKind as K;

    use super::*;
    use crate::lower::tests::{checked, id, manifest, sample_raw};
    use crate::model::{BrokerCatalog, NetworkBroker};

    #[test]
    fn invalid_manifests_are_refused_before_selection() {
        let policy = sample_raw();
        let mut version = manifest(&[(K::FileRoot, "scratch")]);
        version.protocol_version = 4;
        let mut duplicate = manifest(&[(K::FileRoot, "scratch")]);
        duplicate.grants.push(duplicate.grants[0].clone());
        let mut zero = manifest(&[(K::FileRoot, "scratch")]);
        zero.grants[0].max_calls = 0;
        for (m, needle) in [
            (version, "protocol_version is 4"),
            (duplicate, "more than once"),
            (zero, "max_calls = 0"),
        ] {
            match activate(&checked(&policy), Some(&m)) {
                Err(ActivationError::InvalidManifest(reason)) => {
                    let reason = reason.to_string();
                    assert!(reason.contains(needle), "{reason}");
                }
                other => panic!("expected an invalid manifest, got {other:?}"),
            }
        }
    }

    #[test]
    fn union_of_grants_in_policy_order() {
        let policy = sample_raw();
        let mut m = manifest(&[(K::FileRoot, "scratch")]);
        let mut second = m.grants[0].clone();
        second.tool = id("tool.two");
        second.resources = [splash_manifest::Resource {
            kind: K::FileRoot,
            id: id("project-read"),
        }]
        .into_iter()
        .collect();
        m.grants.push(second);
        let a = activate(&checked(&policy), Some(&m)).expect("activation");
        assert_eq!(a.roots, vec![id("project-read"), id("scratch")]);
        assert_eq!(a.ephemeral_bytes, (64 << 20) + (32 << 20));
    }

    #[test]
    fn selectors_are_checked_by_kind() {
        let policy = sample_raw();
        let err = activate(&checked(&policy), Some(&manifest(&[(K::FileRoot, "nope")])))
            .expect_err("unknown");
        assert!(
            matches!(&err, ActivationError::UnknownFileRoot { id: got } if *got == id("nope")),
            "{err:?}"
        );
        assert!(err.to_string().contains("`nope`"));
        let err = activate(&checked(&policy), Some(&manifest(&[(K::Executable, "sh")])))
            .expect_err("exe");
        assert!(
            matches!(&err, ActivationError::ExecutableSelector { id: got } if *got == id("sh")),
            "{err:?}"
        );
        let err =
            activate(&checked(&policy), Some(&manifest(&[(K::Secret, "k")]))).expect_err("secret");
        assert!(
            matches!(&err, ActivationError::SecretSelector { id: got } if *got == id("k")),
            "{err:?}"
        );
        let err = activate(
            &checked(&policy),
            Some(&manifest(&[(K::NetworkOrigin, "api")])),
        )
        .expect_err("net");
        assert!(
            matches!(&err, ActivationError::NetworkOriginWithoutBroker { id: got } if *got == id("api")),
            "{err:?}"
        );
    }

    #[test]
    fn root_maximum_comes_before_resolution() {
        let mut policy = sample_raw();
        policy.max_active_file_roots = 1;
        // Two unknown selectors: the bound is reported, not the unknown ids.
        let m = manifest(&[(K::FileRoot, "x"), (K::FileRoot, "y")]);
        let err = activate(&checked(&policy), Some(&m)).expect_err("too many roots");
        assert!(
            matches!(
                err,
                ActivationError::TooManyActiveRoots { count: 2, max: 1 }
            ),
            "{err:?}"
        );
        policy.max_active_file_roots = 0;
        assert!(activate(&checked(&policy), Some(&manifest(&[]))).is_ok());
    }

    #[test]
    fn without_a_manifest_the_root_maximum_names_no_manifest() {
        let mut policy = sample_raw();
        policy.max_active_file_roots = 0;
        let err =
            activate(&checked(&policy), None).expect_err("every registered root is over the bound");
        assert!(
            matches!(err, ActivationError::TooManyRegisteredRoots { max: 0, .. }),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(!text.contains("manifest selects"), "{text}");
        assert!(text.contains("no manifest was given"), "{text}");
    }

    #[test]
    fn broker_ids_must_match_exactly() {
        let mut policy = sample_raw();
        policy.network_broker = Some(NetworkBroker {
            parent: crate::lower::tests::p("/run/splash"),
            destination: crate::lower::tests::p("/run/broker"),
            catalog: BrokerCatalog::Origin,
            ids: [id("a"), id("b")].into_iter().collect(),
        });
        let err = activate(
            &checked(&policy),
            Some(&manifest(&[
                (K::NetworkOrigin, "a"),
                (K::NetworkOrigin, "c"),
            ])),
        )
        .expect_err("mismatch");
        let text = err.to_string();
        assert!(text.contains("`c`") && text.contains("`b`"), "{text}");
        let a = activate(
            &checked(&policy),
            Some(&manifest(&[
                (K::NetworkOrigin, "a"),
                (K::NetworkOrigin, "b"),
            ])),
        )
        .expect("exact");
        assert!(a.broker_active);
    }

    /// A checked policy from `body` (statements inside the policy block),
    /// with the warnings it got.
    fn from_source(body: &str) -> (Policy, Vec<crate::Code>) {
        let src = format!(
            "splashpol 1\npolicy \"t\" {{\n  bubblewrap \"/usr/bin/bwrap\"\n  \
             worker \"/opt/splash/bin/worker\"\n  runtime \"/opt/splash/runtime\" at \"/opt/splash\"\n\
             {body}\n}}\n"
        );
        let outcome = crate::check_source("t.splashpol", &src);
        assert!(
            !outcome.has_errors(),
            "{}",
            outcome.render_human("t.splashpol", &src)
        );
        let codes = outcome.diagnostics.iter().map(|d| d.code).collect();
        (outcome.policy.expect("policy"), codes)
    }

    /// Two alternative 1 GiB tmpfs roots under `tmpfs aggregate 1 GiB`: the
    /// policy checks (with a warning), a manifest selecting either root
    /// activates, and one selecting both is refused, naming the roots, their
    /// sum and the bound; so is the activation of every registered root
    /// when no manifest is given.
    #[test]
    fn alternative_tmpfs_roots_activate_one_at_a_time() {
        let (policy, codes) = from_source(
            "  root \"a\" tmpfs at \"/workspace/a\" size 1 GiB\n  \
             root \"b\" tmpfs at \"/workspace/b\" size 1 GiB\n  tmpfs aggregate 1 GiB",
        );
        assert_eq!(codes, [crate::Code::AggregateTmpfsOvercommitted]);
        for one in ["a", "b"] {
            let a = activate(&policy, Some(&manifest(&[(K::FileRoot, one)])))
                .unwrap_or_else(|e| panic!("`{one}` alone fits: {e}"));
            assert_eq!(a.roots(), [id(one)]);
            assert_eq!(a.ephemeral_bytes(), 1 << 30);
        }
        let both = manifest(&[(K::FileRoot, "a"), (K::FileRoot, "b")]);
        let err = activate(&policy, Some(&both)).expect_err("both exceed the bound");
        match &err {
            ActivationError::EphemeralBoundExceeded {
                roots,
                tmp_bytes: 0,
                total,
                max,
                all_registered: false,
            } => {
                assert_eq!(roots, &[id("a"), id("b")]);
                assert_eq!(*total, 2 << 30);
                assert_eq!(*max, 1 << 30);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            err.to_string(),
            "the active tmpfs roots `a`, `b` may hold 2147483648 bytes together, above the \
             `tmpfs aggregate` bound of 1073741824 bytes; select fewer or smaller tmpfs roots"
        );
        let err = activate(&policy, None).expect_err("every registered root");
        assert!(
            matches!(
                err,
                ActivationError::EphemeralBoundExceeded {
                    all_registered: true,
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("no manifest was given"), "{err}");
    }

    /// With a bounded `/tmp`, each root fits with it and the pair does not:
    /// the sum counts `/tmp` once, and the error names it.
    #[test]
    fn the_ephemeral_sum_counts_the_private_tmp_with_the_selected_roots() {
        let (policy, codes) = from_source(
            "  root \"a\" tmpfs at \"/workspace/a\" size 512 MiB\n  \
             root \"b\" tmpfs at \"/workspace/b\" size 512 MiB\n  \
             root \"ro\" host \"/srv/ro\" at \"/workspace/ro\" read-only\n  \
             tmp private size 64 MiB\n  tmpfs aggregate 1 GiB",
        );
        assert_eq!(codes, [crate::Code::AggregateTmpfsOvercommitted]);
        // Control: one tmpfs root, `/tmp` and a host root (not counted).
        let a = activate(
            &policy,
            Some(&manifest(&[(K::FileRoot, "a"), (K::FileRoot, "ro")])),
        )
        .expect("one tmpfs root and /tmp fit");
        assert_eq!(a.ephemeral_bytes(), (512 << 20) + (64 << 20));
        let err = activate(
            &policy,
            Some(&manifest(&[(K::FileRoot, "a"), (K::FileRoot, "b")])),
        )
        .expect_err("both with /tmp exceed");
        assert!(
            matches!(
                &err,
                ActivationError::EphemeralBoundExceeded { roots, tmp_bytes, total, .. }
                    if roots == &[id("a"), id("b")]
                        && *tmp_bytes == 64 << 20
                        && *total == (1 << 30) + (64 << 20)
            ),
            "{err:?}"
        );
        let text = err.to_string();
        assert!(
            text.contains("`a`, `b` and the private `/tmp` may hold 1140850688 bytes"),
            "{text}"
        );
    }

    #[test]
    fn ephemeral_bound_counts_only_active_roots() {
        let mut policy = sample_raw();
        policy.aggregate_ephemeral_max_bytes = Some(64 << 20);
        // /tmp alone fits exactly; selecting scratch exceeds.
        assert!(
            activate(
                &checked(&policy),
                Some(&manifest(&[(K::FileRoot, "project-read")]))
            )
            .is_ok()
        );
        let err = activate(
            &checked(&policy),
            Some(&manifest(&[(K::FileRoot, "scratch")])),
        )
        .expect_err("over");
        assert!(matches!(
            err,
            ActivationError::EphemeralBoundExceeded { .. }
        ));
        policy.tmp = PrivateTmp::Unbounded;
        policy.bounded_writes = false;
        let err = activate(&checked(&policy), Some(&manifest(&[]))).expect_err("unbounded tmp");
        assert!(
            matches!(err, ActivationError::UnboundedTmpWithEphemeralBound),
            "{err:?}"
        );
    }
}
