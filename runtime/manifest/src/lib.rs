//! The data a policy compiler and a session both read: protocol v5 tokens
//! and the capability manifest.
//!
//! This crate holds no session code (no keys, frames or pipes), so the
//! policy compiler can activate a policy with a manifest without depending
//! on the session libraries. `splash-protocol` re-exports everything here.
//!
//! Modules:
//! - [`token`]: the token rule for ids and tool names;
//! - [`manifest`]: the capability manifest and its strict decoder;
//! - [`strict`]: JSON values that refuse duplicate object keys, the first
//!   step of every decoder of untrusted documents.

#![warn(missing_docs)]

pub mod manifest;
pub mod strict;
pub mod token;

pub use manifest::{
    CapabilityManifest, Grant, GrantBound, GrantFormat, ManifestError, Resource, ResourceKind,
};
pub use strict::StrictValue;
pub use token::{Token, TokenError};

/// The only protocol version this crate speaks.
pub const PROTOCOL_VERSION: u16 = 5;
