//! The host identity a worker runs as (`identity`).

use serde::{Deserialize, Serialize};

/// The smallest id an `identity user U group G` may name: 0 is root.
pub const MIN_IDENTITY_ID: u32 = 1;

/// The largest id an `identity user U group G` may name: 4294967295 is
/// `(uid_t) -1`, which `setresuid` reads as "leave unchanged".
pub const MAX_IDENTITY_ID: u32 = u32::MAX - 1;

/// Which unprivileged host identity the worker runs as (`identity`). When
/// the host launches as root, the launch switches to it after every step
/// that needs root and before Bubblewrap is executed, so no process of the
/// sandbox is host root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum WorkerIdentity {
    /// `identity user UID group GID`: this uid and gid, both from
    /// [`MIN_IDENTITY_ID`] to [`MAX_IDENTITY_ID`].
    Fixed {
        /// The host uid.
        uid: u32,
        /// The host gid (the only group: supplementary groups are cleared).
        gid: u32,
    },
    /// `identity dynamic`: a uid (and the equal gid) leased from the host's
    /// dynamic range for one session. Refuses read-write host roots: a
    /// later session may get the same uid and own what this one wrote.
    Dynamic,
}

impl WorkerIdentity {
    /// The fixed ids, or `None` for a dynamic identity.
    pub fn fixed(self) -> Option<(u32, u32)> {
        match self {
            Self::Fixed { uid, gid } => Some((uid, gid)),
            Self::Dynamic => None,
        }
    }

    /// Whether an id is one an `identity user`/`group` may name.
    pub fn valid_id(id: u64) -> bool {
        (u64::from(MIN_IDENTITY_ID)..=u64::from(MAX_IDENTITY_ID)).contains(&id)
    }
}

impl std::fmt::Display for WorkerIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Fixed { uid, gid } => write!(f, "user {uid} group {gid}"),
            Self::Dynamic => f.write_str("dynamic"),
        }
    }
}
