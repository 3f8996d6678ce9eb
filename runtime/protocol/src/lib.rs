//! Splash worker protocol version 5.
//!
//! The wire facts (see `docs/protocol.md`): tokens and the capability
//! manifest (from `splash-manifest`, re-exported here), the private-pipe bootstrap preamble, frame authentication and the
//! bounded JSON-line codec. Shared by hosts (the runtime, through
//! [`host::HostSession`]) and workers (the [`worker`] library), so both sides
//! speak exactly one implementation.
//!
//! Modules, from the bytes up:
//! - [`token`], [`manifest`]: the token rule and the capability manifest,
//!   re-exported from `splash-manifest`;
//! - [`bootstrap`]: the session key and the preamble written on stdin;
//! - [`canonical`]: the deterministic serialization tags cover (sorted
//!   payload keys, the canonical number layout);
//! - [`message`], [`auth`]: messages in the Splash v5 shapes, frames, tags
//!   and sequences;
//! - [`codec`]: one bounded JSON object per line, poisoned by any error;
//! - [`channel`]: codec plus authenticator;
//! - [`host`], [`worker`]: the two ends of a session;
//! - [`journal`]: a worker's durable record of its operations.

#![warn(missing_docs)]

pub mod auth;
pub mod bootstrap;
pub mod canonical;
pub mod channel;
pub mod codec;
pub mod host;
pub mod journal;
pub mod message;
pub mod worker;

pub use auth::{
    AUTH_DOMAIN, AuthError, AuthTag, Frame, FrameFlow, FrameOpener, FrameSealer,
    SessionAuthenticator,
};
pub use bootstrap::{
    BootstrapError, EncodedBootstrap, PreamblePart, PrivatePipeWorkerBootstrap, SessionKey,
    SessionKeyError,
};
pub use channel::{
    FrameChannel, FrameReceiver, FrameSender, PayloadSide, Refusal, SessionError, SessionState,
};
pub use codec::{CodecError, JsonLineReader, JsonLineWriter, MAX_LINE_BYTES};
pub use host::{CallEvent, HostSession};
pub use journal::{JOURNAL_FILE, Journal, JournalError, RecordDefect};
pub use message::{
    CancelOutcome, CancelRequest, CancelResult, CompensationRequest, CompensationResult,
    DispatchRequest, Invocation, MAX_JSON_PAYLOAD_DEPTH, MAX_SESSION_REQUEST_IDS, Message,
    MessageError, OperationResult, OperationStatus, Payload, PayloadError, ReconcileRequest,
    SessionRole, ToolResult, Version, compensation_fingerprint,
};
pub use splash_manifest::{
    CapabilityManifest, Grant, GrantBound, GrantFormat, ManifestError, PROTOCOL_VERSION, Resource,
    ResourceKind, Token, TokenError, manifest, token,
};
pub use worker::{CancelSignal, ServeEnd, ToolFailure, Worker};
