//! Splash worker protocol version 5.
//!
//! The wire facts (see `docs/protocol.md`): tokens, the capability
//! manifest, the private-pipe bootstrap preamble, frame authentication and the
//! bounded JSON-line codec. Shared by hosts (the runtime, through
//! [`host::HostSession`]) and workers (the [`worker`] library), so both sides
//! speak exactly one implementation.
//!
//! Modules, from the bytes up:
//! - [`token`]: the token rule for ids and tool names;
//! - [`manifest`]: the capability manifest and its strict decoder;
//! - [`bootstrap`]: the session key and the preamble written on stdin;
//! - [`canonical`]: the deterministic serialization tags cover (sorted
//!   payload keys, the canonical number layout);
//! - [`message`], [`auth`]: messages in the Splash v5 shapes, frames, tags
//!   and sequences;
//! - [`codec`]: one bounded JSON object per line, poisoned by any error;
//! - [`channel`]: codec plus authenticator;
//! - [`host`], [`worker`]: the two ends of a session.

pub mod auth;
pub mod bootstrap;
pub mod canonical;
pub mod channel;
pub mod codec;
pub mod host;
pub mod manifest;
pub mod message;
mod strict;
pub mod token;
pub mod worker;

#[expect(
    unsafe_code,
    reason = "volatile stores are the only way to wipe key bytes that the optimizer may not elide"
)]
mod sys;

pub use auth::{
    AUTH_DOMAIN, AuthError, AuthTag, Frame, FrameOpener, FrameSealer, SessionAuthenticator,
    SessionRole,
};
pub use bootstrap::{
    BootstrapError, EncodedBootstrap, PrivatePipeWorkerBootstrap, SessionKey, SessionKeyError,
};
pub use channel::{FrameChannel, FrameReceiver, FrameSender, SessionError, SessionState};
pub use codec::{CodecError, JsonLineReader, JsonLineWriter, MAX_LINE_BYTES};
pub use host::{CallEvent, HostSession};
pub use manifest::{CapabilityManifest, Grant, GrantFormat, ManifestError, Resource, ResourceKind};
pub use message::{
    CancelOutcome, CancelRequest, CancelResult, CompensationRequest, CompensationResult,
    DispatchRequest, Invocation, MAX_JSON_PAYLOAD_DEPTH, MAX_SESSION_REQUEST_IDS, Message,
    MessageError, OperationResult, OperationStatus, Payload, PayloadError, ReconcileRequest,
    ToolResult, Version,
};
pub use token::{Token, TokenError};
pub use worker::{CancelSignal, ServeEnd, ToolFailure, Worker};

/// The only protocol version this crate speaks.
pub const PROTOCOL_VERSION: u16 = 5;
