//! The capability manifest (protocol v5).
//!
//! Skeleton types; strict validation lives in [`CapabilityManifest::from_json`].

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::token::Token;

/// The kind of a selected resource, in the protocol's canonical order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceKind {
    FileRoot,
    Executable,
    NetworkOrigin,
    Secret,
}

/// One resource selector: a kind and an opaque id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resource {
    pub kind: ResourceKind,
    pub id: Token,
}

/// The payload format of a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantFormat {
    Text,
    Json,
}

/// One tool grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grant {
    pub tool: Token,
    pub format: GrantFormat,
    pub max_calls: u32,
    pub max_input_bytes: u32,
    pub max_output_bytes: u32,
    #[serde(default)]
    pub max_compensations: u32,
    /// Ordered by kind, then id (the `Ord` of [`Resource`]).
    #[serde(default)]
    pub resources: BTreeSet<Resource>,
}

/// A session's capability manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapabilityManifest {
    pub protocol_version: u16,
    pub session_id: Token,
    pub grants: Vec<Grant>,
}

/// Why a manifest was rejected.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("manifest is not valid JSON for protocol v5: {0}")]
    Decode(#[from] serde_json::Error),
    #[error("manifest protocol_version is {0}; only 5 is supported")]
    Version(u16),
    #[error("manifest has {0} grants; the maximum is 128")]
    TooManyGrants(usize),
    #[error("manifest grants tool `{0}` more than once")]
    DuplicateTool(String),
    #[error("grant `{tool}` has {field} = 0; it must be greater than zero")]
    ZeroBound { tool: String, field: &'static str },
    #[error("grant `{tool}` has {count} resources; the maximum is 64")]
    TooManyResources { tool: String, count: usize },
    #[error("grant `{tool}` lists resource {kind:?} `{id}` more than once")]
    DuplicateResource { tool: String, kind: ResourceKind, id: String },
}

impl CapabilityManifest {
    /// The active resources of the session: the union over all grants,
    /// in canonical order.
    pub fn active_resources(&self) -> BTreeSet<Resource> {
        self.grants
            .iter()
            .flat_map(|g| g.resources.iter().cloned())
            .collect()
    }
}
