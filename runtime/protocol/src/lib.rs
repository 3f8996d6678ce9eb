//! Splash worker protocol version 5.
//!
//! The wire facts (see `shared/spec/protocol-v5.md`): tokens, the capability
//! manifest, the private-pipe bootstrap preamble, frame authentication and the
//! bounded JSON-line codec. Shared by hosts (the runtime) and workers (the
//! [`worker`] library), so both sides speak exactly one implementation.

pub mod manifest;
pub mod token;

pub use manifest::{CapabilityManifest, Grant, GrantFormat, ManifestError, Resource, ResourceKind};
pub use token::{Token, TokenError};

/// The only protocol version this crate speaks.
pub const PROTOCOL_VERSION: u16 = 5;
