//! The capability manifest (protocol v5).
//!
//! A manifest is session data from the orchestrating runtime. It is parsed
//! strictly by [`CapabilityManifest::from_json`]: protocol version 5 only,
//! unknown fields rejected, at most [`MAX_GRANTS`] grants with unique tool
//! names, every bound greater than zero, at most
//! [`MAX_RESOURCES_PER_GRANT`] resources per grant and no resource listed
//! twice in one grant. Every object in the document must be a JSON object
//! (serde would otherwise also accept the array form of a struct).
//!
//! Serialization is deterministic and byte-for-byte stable: object keys in
//! the declared order (`protocol_version`, `session_id`, `grants`; a grant's
//! `tool`, `format`, `max_calls`, `max_input_bytes`, `max_output_bytes`,
//! `max_compensations`, `resources`; a resource's `kind`, `id`), resources
//! ordered by kind (`file_root`, `executable`, `network_origin`, `secret`)
//! and then by id.

use std::collections::BTreeSet;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::PROTOCOL_VERSION;
use crate::strict::StrictValue;
use crate::token::Token;

/// The maximum number of grants in one manifest.
pub const MAX_GRANTS: usize = 128;
/// The maximum number of resources in one grant.
pub const MAX_RESOURCES_PER_GRANT: usize = 64;

/// The kind of a selected resource, in the protocol's canonical order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceKind {
    /// A registered file root of the policy (`file_root`).
    FileRoot,
    /// A registered executable (`executable`).
    Executable,
    /// A brokered network origin (`network_origin`).
    NetworkOrigin,
    /// A secret the host holds (`secret`).
    Secret,
}

impl ResourceKind {
    /// The wire spelling of the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FileRoot => "file_root",
            Self::Executable => "executable",
            Self::NetworkOrigin => "network_origin",
            Self::Secret => "secret",
        }
    }
}

/// One resource selector: a kind and an opaque id.
///
/// The derived order (kind, then id) is the protocol's canonical order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resource {
    /// What kind of resource the id names.
    pub kind: ResourceKind,
    /// The resource's id, as the policy registers it.
    #[serde(deserialize_with = "resource_id")]
    pub id: Token,
}

impl Resource {
    /// A selector of `kind` with `id`.
    pub fn new(kind: ResourceKind, id: Token) -> Self {
        Self { kind, id }
    }
}

/// The payload format of a grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantFormat {
    /// Payloads are JSON strings.
    Text,
    /// Payloads are JSON objects or arrays.
    Json,
}

/// One tool grant.
///
/// Deserialize a grant only as part of a manifest
/// ([`CapabilityManifest::from_json`]); a grant has no standalone decoder so
/// that nothing can skip the duplicate-resource check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grant {
    /// The granted tool's name, unique in the manifest.
    pub tool: Token,
    /// The payload format of the tool's input and output.
    pub format: GrantFormat,
    /// How many calls the session may make (greater than zero).
    pub max_calls: u32,
    /// The largest input payload in bytes (greater than zero).
    pub max_input_bytes: u32,
    /// The largest output payload in bytes (greater than zero).
    pub max_output_bytes: u32,
    /// How many compensating operations the session may request.
    pub max_compensations: u32,
    /// Ordered by kind, then id (the `Ord` of [`Resource`]).
    pub resources: BTreeSet<Resource>,
}

impl Grant {
    /// A grant with the protocol's example defaults: one call, 16 KiB of
    /// input, 64 KiB of output, no compensations and no resources.
    pub fn new(tool: Token, format: GrantFormat) -> Self {
        Self {
            tool,
            format,
            max_calls: 1,
            max_input_bytes: 16 * 1024,
            max_output_bytes: 64 * 1024,
            max_compensations: 0,
            resources: BTreeSet::new(),
        }
    }
}

/// A session's capability manifest.
///
/// The fields are public so hosts and tests can build a manifest in code;
/// [`CapabilityManifest::validate`] checks such a value against the same
/// rules the decoder applies, and the host session refuses to open with a
/// manifest that fails it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CapabilityManifest {
    /// Always [`crate::PROTOCOL_VERSION`] in a valid manifest.
    pub protocol_version: u16,
    /// The session this manifest is for.
    pub session_id: Token,
    /// The tool grants, at most [`MAX_GRANTS`], tools unique.
    pub grants: Vec<Grant>,
}

/// Why a manifest was rejected.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    /// A JSON syntax error, a wrong type, an unknown field or a bad token; from
    /// [`CapabilityManifest::from_json`] the message names the field and ends
    /// with the line and column in the document.
    #[error("manifest is not a valid protocol v5 manifest: {0}")]
    Decode(serde_json::Error),
    /// A position that must hold a JSON object holds something else (for
    /// example the array form serde would accept for a struct).
    #[error("manifest `{path}` must be a JSON object")]
    NotAnObject {
        /// The position in the document, like `grants[0].resources[1]`.
        path: String,
    },
    /// A protocol version other than 5.
    #[error("manifest protocol_version is {0}; only 5 is supported")]
    Version(u16),
    /// More than [`MAX_GRANTS`] grants.
    #[error("manifest has {0} grants; the maximum is 128")]
    TooManyGrants(usize),
    /// Two grants for the same tool.
    #[error("manifest grants tool `{0}` more than once")]
    DuplicateTool(Token),
    /// A bound that must be positive is zero.
    #[error("grant `{tool}` has {field} = 0; it must be greater than zero")]
    ZeroBound {
        /// The grant's tool.
        tool: Token,
        /// The field that is zero.
        field: GrantBound,
    },
    /// More than [`MAX_RESOURCES_PER_GRANT`] resources in one grant.
    #[error("grant `{tool}` has {count} resources; the maximum is 64")]
    TooManyResources {
        /// The grant's tool.
        tool: Token,
        /// How many resources it lists.
        count: usize,
    },
    /// The same resource twice in one grant.
    #[error("grant `{tool}` lists resource {} `{id}` more than once", kind.as_str())]
    DuplicateResource {
        /// The grant's tool.
        tool: Token,
        /// The repeated resource's kind.
        kind: ResourceKind,
        /// The repeated resource's id.
        id: Token,
    },
}

// The decoder's error is in the message, so it is not a source as well.
impl From<serde_json::Error> for ManifestError {
    fn from(error: serde_json::Error) -> Self {
        Self::Decode(error)
    }
}

/// A grant bound that must be at least 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GrantBound {
    /// `max_calls`.
    MaxCalls,
    /// `max_input_bytes`.
    MaxInputBytes,
    /// `max_output_bytes`.
    MaxOutputBytes,
}

impl GrantBound {
    /// The field's name in a manifest.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MaxCalls => "max_calls",
            Self::MaxInputBytes => "max_input_bytes",
            Self::MaxOutputBytes => "max_output_bytes",
        }
    }
}

impl std::fmt::Display for GrantBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    protocol_version: u16,
    #[serde(deserialize_with = "session_id")]
    session_id: Token,
    grants: Vec<RawGrant>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGrant {
    #[serde(deserialize_with = "tool")]
    tool: Token,
    format: GrantFormat,
    max_calls: u32,
    max_input_bytes: u32,
    max_output_bytes: u32,
    #[serde(default)]
    max_compensations: u32,
    #[serde(default)]
    resources: Vec<Resource>,
}

/// A token in the field `field`; a bad token names the field (the decoder
/// adds the position).
fn named_token<'de, D: Deserializer<'de>>(d: D, field: &str) -> Result<Token, D::Error> {
    let s = String::deserialize(d)?;
    Token::new(s).map_err(|e| serde::de::Error::custom(format_args!("`{field}`: {e}")))
}

fn session_id<'de, D: Deserializer<'de>>(d: D) -> Result<Token, D::Error> {
    named_token(d, "session_id")
}

fn tool<'de, D: Deserializer<'de>>(d: D) -> Result<Token, D::Error> {
    named_token(d, "grants[].tool")
}

fn resource_id<'de, D: Deserializer<'de>>(d: D) -> Result<Token, D::Error> {
    named_token(d, "resources[].id")
}

impl CapabilityManifest {
    /// Parses and validates a manifest document.
    pub fn from_json(bytes: &[u8]) -> Result<Self, ManifestError> {
        let StrictValue(value) = serde_json::from_slice(bytes)?;
        check_shape(&value)?;
        // Decoded from the bytes again (not from `value`) so that an error
        // says where in the document it is.
        let raw: RawManifest = serde_json::from_slice(bytes)?;
        Self::from_raw(raw)
    }

    /// Validates an already parsed JSON document as a manifest. A repeated
    /// key cannot be seen in a parsed `Value` any more; parse untrusted bytes
    /// with [`Self::from_json`], which refuses them.
    pub fn from_value(value: Value) -> Result<Self, ManifestError> {
        check_shape(&value)?;
        let raw: RawManifest = serde_json::from_value(value)?;
        Self::from_raw(raw)
    }

    fn from_raw(raw: RawManifest) -> Result<Self, ManifestError> {
        if raw.protocol_version != PROTOCOL_VERSION {
            return Err(ManifestError::Version(raw.protocol_version));
        }
        if raw.grants.len() > MAX_GRANTS {
            return Err(ManifestError::TooManyGrants(raw.grants.len()));
        }
        let mut grants = Vec::with_capacity(raw.grants.len());
        for g in raw.grants {
            if g.resources.len() > MAX_RESOURCES_PER_GRANT {
                return Err(ManifestError::TooManyResources {
                    tool: g.tool.clone(),
                    count: g.resources.len(),
                });
            }
            let mut resources = BTreeSet::new();
            for r in g.resources {
                if resources.contains(&r) {
                    return Err(ManifestError::DuplicateResource {
                        tool: g.tool.clone(),
                        kind: r.kind,
                        id: r.id.clone(),
                    });
                }
                resources.insert(r);
            }
            grants.push(Grant {
                tool: g.tool,
                format: g.format,
                max_calls: g.max_calls,
                max_input_bytes: g.max_input_bytes,
                max_output_bytes: g.max_output_bytes,
                max_compensations: g.max_compensations,
                resources,
            });
        }
        let manifest = Self {
            protocol_version: raw.protocol_version,
            session_id: raw.session_id,
            grants,
        };
        manifest.validate()?;
        Ok(manifest)
    }

    /// Checks the rules that a value built in code can break: the version,
    /// the grant count, unique tools, non-zero bounds and the resource count.
    /// (Duplicate resources cannot exist in the set.)
    pub fn validate(&self) -> Result<(), ManifestError> {
        if self.protocol_version != PROTOCOL_VERSION {
            return Err(ManifestError::Version(self.protocol_version));
        }
        if self.grants.len() > MAX_GRANTS {
            return Err(ManifestError::TooManyGrants(self.grants.len()));
        }
        let mut tools = BTreeSet::new();
        for g in &self.grants {
            if !tools.insert(&g.tool) {
                return Err(ManifestError::DuplicateTool(g.tool.clone()));
            }
            for (field, value) in [
                (GrantBound::MaxCalls, g.max_calls),
                (GrantBound::MaxInputBytes, g.max_input_bytes),
                (GrantBound::MaxOutputBytes, g.max_output_bytes),
            ] {
                if value == 0 {
                    return Err(ManifestError::ZeroBound {
                        tool: g.tool.clone(),
                        field,
                    });
                }
            }
            if g.resources.len() > MAX_RESOURCES_PER_GRANT {
                return Err(ManifestError::TooManyResources {
                    tool: g.tool.clone(),
                    count: g.resources.len(),
                });
            }
        }
        Ok(())
    }

    /// The grant for `tool`, if the manifest has one.
    pub fn grant(&self, tool: &str) -> Option<&Grant> {
        self.grants.iter().find(|g| g.tool.as_str() == tool)
    }

    /// The active resources of the session: the union over all grants,
    /// in canonical order.
    pub fn active_resources(&self) -> BTreeSet<Resource> {
        self.grants
            .iter()
            .flat_map(|g| g.resources.iter().cloned())
            .collect()
    }

    /// The active resource ids of one kind, in canonical order.
    pub fn active_ids(&self, kind: ResourceKind) -> BTreeSet<Token> {
        self.active_resources()
            .into_iter()
            .filter(|r| r.kind == kind)
            .map(|r| r.id)
            .collect()
    }

    /// The canonical compact JSON serialization (declared key order, one
    /// line, no spaces).
    pub fn to_json_string(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }

    /// [`Self::to_json_string`] as bytes.
    pub fn to_json_bytes(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(self)
    }
}

impl<'de> Deserialize<'de> for CapabilityManifest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let StrictValue(value) = StrictValue::deserialize(d)?;
        Self::from_value(value).map_err(serde::de::Error::custom)
    }
}

/// Requires every struct position of the document to be a JSON object.
fn check_shape(value: &Value) -> Result<(), ManifestError> {
    let not_object = |path: String| ManifestError::NotAnObject { path };
    let top = value.as_object().ok_or_else(|| not_object("$".into()))?;
    let Some(Value::Array(grants)) = top.get("grants") else {
        return Ok(());
    };
    for (i, g) in grants.iter().enumerate() {
        let g = g
            .as_object()
            .ok_or_else(|| not_object(format!("grants[{i}]")))?;
        let Some(Value::Array(resources)) = g.get("resources") else {
            continue;
        };
        for (j, r) in resources.iter().enumerate() {
            if !r.is_object() {
                return Err(not_object(format!("grants[{i}].resources[{j}]")));
            }
        }
    }
    Ok(())
}
