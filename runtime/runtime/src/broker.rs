//! The network broker at bind: the plan and the host's broker must agree,
//! and the pin is the broker's private directory, never its parent.
//!
//! A plan with `network_broker` binds only with
//! [`BindOptions::with_network_broker`](crate::BindOptions::with_network_broker)
//! given the matching [`BrokerMount`] (from `splash_broker::HostBroker::mount`).
//! `check_plan` runs with the other plan checks, before anything on the host
//! is looked at:
//!
//! - a broker in the plan and none supplied, or one supplied and none in the
//!   plan, is refused;
//! - the catalog kind and the ids must equal the plan's (which activation
//!   made equal to the manifest's distinct `network_origin` ids);
//! - (the plan has exactly one broker pin, at the plan's slot, and mounts it
//!   exactly once, read-only (`--ro-bind-fd`) at the plan's destination: a
//!   [`LaunchPlan`] invariant, checked when the plan was built);
//! - the plan keeps `--unshare-all` and never passes `--share-net`.
//!
//! `pin` then replaces step 2's path pinning for that slot: the policy's
//! parent, canonicalized, must be the directory the broker was started in;
//! the broker re-checks its directory's shape through its descriptors
//! ([`BrokerMount::verify`]); and the pin is a fresh duplicate of the
//! broker's own `O_PATH` descriptor of the private directory.

use std::io;
use std::os::fd::OwnedFd;
use std::path::PathBuf;

use splash_broker::{BrokerMount, CatalogKind};
use splash_protocol::Token;
use splashpol::model::BrokerCatalog;
use splashpol::plan::{BwrapOp, LaunchPlan, Pin};

/// Why a plan's network broker could not be bound.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BrokerBindError {
    /// The plan mounts a broker and the host supplied none.
    #[error(
        "the plan mounts a network broker but none was supplied (`BindOptions::with_network_broker`); the launch is refused"
    )]
    Missing,
    /// The host supplied a broker the plan does not mount.
    #[error("a network broker was supplied but the plan mounts none")]
    Unexpected,
    /// The catalog kinds differ.
    #[error("the supplied broker serves an {found} catalog; the plan needs an {expected} catalog")]
    Kind {
        /// The plan's kind.
        expected: CatalogKind,
        /// The broker's kind.
        found: CatalogKind,
    },
    /// The ids differ.
    #[error(
        "the supplied broker's ids do not equal the plan's network_origin ids (only the broker: {only_broker:?}; only the plan: {only_plan:?})"
    )]
    Ids {
        /// Ids only the broker serves.
        only_broker: Vec<Token>,
        /// Ids only the plan names.
        only_plan: Vec<Token>,
    },
    /// The broker lives under another parent than the policy names.
    #[error(
        "the supplied broker was started in `{}`, but the policy names the parent `{}`",
        .broker.display(),
        .policy.display()
    )]
    Parent {
        /// The broker's canonical parent.
        broker: PathBuf,
        /// The policy's parent, canonicalized.
        policy: PathBuf,
    },
    /// The policy's parent does not resolve.
    #[error("failed to resolve the broker parent `{}`", .path.display())]
    Resolve {
        /// The policy's parent.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The plan does not have the shape a broker needs.
    #[error("the plan {0}")]
    Plan(BrokerPlanDefect),
    /// The broker's directory lost its shape.
    #[error(transparent)]
    Directory(#[from] splash_broker::BrokerError),
    /// The descriptor could not be duplicated.
    #[error("failed to duplicate the broker directory's descriptor")]
    Duplicate(#[source] io::Error),
}

/// How a plan with a network broker breaks the broker's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BrokerPlanDefect {
    /// The plan does not pass `--unshare-all`.
    #[error("does not unshare every namespace (`--unshare-all`)")]
    NoUnshareAll,
    /// The plan passes `--share-net`.
    #[error("shares the host network (`--share-net`)")]
    SharesNetwork,
}

fn kind_of(kind: BrokerCatalog) -> CatalogKind {
    match kind {
        BrokerCatalog::Endpoint => CatalogKind::Endpoint,
        BrokerCatalog::Origin => CatalogKind::Origin,
    }
}

/// Checks the plan against the supplied broker (see the module docs).
pub(crate) fn check_plan(
    plan: &LaunchPlan,
    mount: Option<&BrokerMount>,
) -> Result<(), BrokerBindError> {
    let (broker, mount) = match (plan.network_broker(), mount) {
        (None, None) => return Ok(()),
        (None, Some(_)) => return Err(BrokerBindError::Unexpected),
        (Some(_), None) => return Err(BrokerBindError::Missing),
        (Some(b), Some(m)) => (b, m),
    };
    let expected = match (broker.catalog, mount.kind()) {
        (BrokerCatalog::Endpoint, CatalogKind::Endpoint)
        | (BrokerCatalog::Origin, CatalogKind::Origin) => None,
        (kind, _) => Some(kind_of(kind)),
    };
    if let Some(expected) = expected {
        return Err(BrokerBindError::Kind {
            expected,
            found: mount.kind(),
        });
    }
    let plan_ids: std::collections::BTreeSet<_> = broker.ids.iter().collect();
    let broker_ids: std::collections::BTreeSet<_> = mount.ids().iter().collect();
    if plan_ids != broker_ids || plan_ids.len() != broker.ids.len() {
        return Err(BrokerBindError::Ids {
            only_broker: broker_ids.difference(&plan_ids).copied().cloned().collect(),
            only_plan: plan_ids.difference(&broker_ids).copied().cloned().collect(),
        });
    }
    if !plan.ops().contains(&BwrapOp::UnshareAll) {
        return Err(BrokerBindError::Plan(BrokerPlanDefect::NoUnshareAll));
    }
    if splashpol::emit::options_used(plan)
        .iter()
        .any(|o| o.option == "--share-net")
        || plan
            .bwrap_arguments(&mut |_| String::new())
            .iter()
            .any(|a| a == "--share-net")
    {
        return Err(BrokerBindError::Plan(BrokerPlanDefect::SharesNetwork));
    }
    Ok(())
}

/// Pins the broker's private directory for `pin` (the plan's broker slot):
/// returns the directory's host path and a fresh duplicate of the broker's
/// descriptor.
pub(crate) fn pin(
    pin: &Pin,
    mount: Option<&BrokerMount>,
) -> Result<(PathBuf, OwnedFd), BrokerBindError> {
    let mount = mount.ok_or(BrokerBindError::Missing)?;
    let path = pin.host_path.as_str();
    let policy = std::fs::canonicalize(path).map_err(|source| BrokerBindError::Resolve {
        path: PathBuf::from(path),
        source,
    })?;
    if policy != mount.parent_path() {
        return Err(BrokerBindError::Parent {
            broker: mount.parent_path().to_path_buf(),
            policy,
        });
    }
    mount.verify()?;
    let fd = mount
        .duplicate_directory()
        .map_err(BrokerBindError::Duplicate)?;
    Ok((mount.directory_path().to_path_buf(), fd))
}
