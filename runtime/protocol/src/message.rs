//! Protocol messages, in the exact shape of Splash protocol version 5.
//!
//! Every message is a JSON object whose `type` is one of the snake_case
//! names below. Apart from `open_session` (which carries the manifest) and
//! `close_session` (whose two fields are flat), each message wraps one body
//! object, and every body repeats `protocol_version` (always 5) and
//! `session_id`. Tool payloads are `{"format":"json","value":V}` or
//! `{"format":"text","value":"..."}`; JSON values are serialized with sorted
//! object keys (see [`crate::canonical`]). The exact bodies are listed in
//! `docs/protocol.md`.

use serde::de::{self, Deserializer};
use serde::ser::{SerializeStruct, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::PROTOCOL_VERSION;
use crate::canonical::Sorted;
use crate::manifest::{CapabilityManifest, Grant, GrantFormat};
use crate::token::Token;

/// Which end of the session a party is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionRole {
    /// The runtime that launched the worker.
    Host,
    /// The sandboxed worker.
    Worker,
}

impl SessionRole {
    /// The other end.
    pub fn peer(self) -> Self {
        match self {
            Self::Host => Self::Worker,
            Self::Worker => Self::Host,
        }
    }

    /// The wire spelling (`host`, `worker`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Host => "host",
            Self::Worker => "worker",
        }
    }
}

/// The maximum nesting depth of a JSON payload value, counting the root
/// value as depth 1 and every value inside a container (scalars too) one
/// deeper than the container.
pub const MAX_JSON_PAYLOAD_DEPTH: usize = 32;
/// The maximum length of an operation failure message, in bytes.
pub const MAX_OPERATION_ERROR_BYTES: usize = 4 * 1024;
/// The most request ids (calls, cancellations, durable requests) one
/// session may use; a Splash worker ends a session that asks for more.
pub const MAX_SESSION_REQUEST_IDS: usize = 1024;
/// Compensation keys live in their own namespace: they start with this.
pub const COMPENSATION_KEY_PREFIX: &str = "cmp-";

/// The `protocol_version` field of a message body: always 5. Decoding any
/// other number fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Version;

impl Serialize for Version {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u16(PROTOCOL_VERSION)
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = u16::deserialize(d)?;
        if v == PROTOCOL_VERSION {
            Ok(Self)
        } else {
            Err(de::Error::custom(format_args!(
                "protocol_version is {v}; only 5 is supported"
            )))
        }
    }
}

/// A tool payload: `{"format":"json","value":V}` or
/// `{"format":"text","value":"..."}`.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    /// A text payload (a JSON string on the wire).
    Text(String),
    /// A JSON payload: an object or an array.
    Json(Value),
}

impl Payload {
    /// The payload's format.
    pub fn format(&self) -> GrantFormat {
        match self {
            Self::Text(_) => GrantFormat::Text,
            Self::Json(_) => GrantFormat::Json,
        }
    }

    /// The payload as a JSON value (a text payload becomes a JSON string).
    pub fn into_value(self) -> Value {
        match self {
            Self::Text(s) => Value::String(s),
            Self::Json(v) => v,
        }
    }

    /// Builds the payload of a `format` grant from a JSON value: a JSON
    /// string for `text`, anything for `json` (checked by
    /// [`Payload::measure`]).
    pub fn from_value(format: GrantFormat, value: Value) -> Result<Self, PayloadError> {
        match (format, value) {
            (GrantFormat::Text, Value::String(s)) => Ok(Self::Text(s)),
            (GrantFormat::Text, _) => Err(PayloadError::NotText),
            (GrantFormat::Json, v) => Ok(Self::Json(v)),
        }
    }

    /// Checks the payload against a grant's `format` and returns the size
    /// the grant's byte bounds apply to: the UTF-8 length of a text payload,
    /// the length of the canonical compact serialization of a JSON one. A
    /// JSON value must be an object or an array nested at most
    /// [`MAX_JSON_PAYLOAD_DEPTH`] levels.
    pub fn measure(&self, format: GrantFormat) -> Result<usize, PayloadError> {
        if self.format() != format {
            return Err(PayloadError::Format {
                expected: format,
                got: self.format(),
            });
        }
        match self {
            Self::Text(s) => Ok(s.len()),
            Self::Json(v) => {
                if !v.is_object() && !v.is_array() {
                    return Err(PayloadError::NotContainer);
                }
                if depth(v) > MAX_JSON_PAYLOAD_DEPTH {
                    return Err(PayloadError::TooDeep);
                }
                crate::canonical::encoded_len(v).map_err(|e| PayloadError::Encode(e.classify()))
            }
        }
    }
}

/// The nesting depth of a value: 1 for a scalar or an empty container.
fn depth(value: &Value) -> usize {
    // Iterative, so a hostile value cannot exhaust the stack here.
    let mut deepest = 0;
    let mut stack = vec![(value, 1usize)];
    while let Some((v, d)) = stack.pop() {
        deepest = deepest.max(d);
        match v {
            Value::Array(items) => stack.extend(items.iter().map(|i| (i, d + 1))),
            Value::Object(map) => stack.extend(map.values().map(|i| (i, d + 1))),
            _ => {}
        }
    }
    deepest
}

/// Why a payload does not fit its grant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PayloadError {
    /// The payload's format is not the grant's.
    #[error("payload format is {}; the grant's format is {}", fmt_format(*got), fmt_format(*expected))]
    Format {
        /// The grant's format.
        expected: GrantFormat,
        /// The payload's format.
        got: GrantFormat,
    },
    /// A text payload whose value is not a JSON string.
    #[error("a text payload must be a JSON string")]
    NotText,
    /// A JSON payload that is neither an object nor an array.
    #[error("a JSON payload must be an object or an array")]
    NotContainer,
    /// A JSON payload nested deeper than [`MAX_JSON_PAYLOAD_DEPTH`].
    #[error("a JSON payload is nested deeper than {MAX_JSON_PAYLOAD_DEPTH} levels")]
    TooDeep,
    /// Serializing the payload failed (a `serde_json` error of this
    /// category; a JSON value always serializes, so this is not expected).
    #[error("a JSON payload does not serialize ({0:?} error)")]
    Encode(serde_json::error::Category),
}

fn fmt_format(f: GrantFormat) -> &'static str {
    match f {
        GrantFormat::Text => "text",
        GrantFormat::Json => "json",
    }
}

impl Serialize for Payload {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Payload", 2)?;
        match self {
            Self::Text(text) => {
                st.serialize_field("format", "text")?;
                st.serialize_field("value", text)?;
            }
            Self::Json(value) => {
                st.serialize_field("format", "json")?;
                st.serialize_field("value", &Sorted(value))?;
            }
        }
        st.end()
    }
}

#[derive(Deserialize)]
#[serde(
    tag = "format",
    content = "value",
    rename_all = "snake_case",
    deny_unknown_fields
)]
enum RawPayload {
    Text(String),
    Json(Value),
}

impl<'de> Deserialize<'de> for Payload {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match RawPayload::deserialize(d)? {
            RawPayload::Text(s) => Self::Text(s),
            RawPayload::Json(v) => Self::Json(v),
        })
    }
}

/// `invoke` body: one call of a granted tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Invocation {
    /// The protocol version, always 5.
    pub protocol_version: Version,
    /// The session the message belongs to.
    pub session_id: Token,
    /// The request this message belongs to, unique in the session.
    pub request_id: Token,
    /// The granted tool.
    pub tool: Token,
    /// The payload, in the grant's format and within its size bound.
    pub payload: Payload,
}

/// `result` body: the output of one `invoke`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolResult {
    /// The protocol version, always 5.
    pub protocol_version: Version,
    /// The session the message belongs to.
    pub session_id: Token,
    /// The request this message belongs to, unique in the session.
    pub request_id: Token,
    /// The payload, in the grant's format and within its size bound.
    pub payload: Payload,
}

/// `cancel` body: cooperatively cancel the call `request_id` of `tool`.
/// `cancellation_id` names this exchange; it differs from `request_id` and
/// shares the session's request-id namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CancelRequest {
    /// The protocol version, always 5.
    pub protocol_version: Version,
    /// The session the message belongs to.
    pub session_id: Token,
    /// The id of this cancellation, distinct from the request id it cancels.
    pub cancellation_id: Token,
    /// The request this message belongs to, unique in the session.
    pub request_id: Token,
    /// The granted tool.
    pub tool: Token,
}

/// The worker's answer to `cancel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelOutcome {
    /// The effect was stopped; no `result` follows for this request.
    Acknowledged,
    /// The request already finished; its `result` was sent first.
    TooLate,
    /// The request cannot be cancelled; its `result` still follows.
    Unsupported,
}

/// `cancellation_result` body: repeats the request's ids and tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CancelResult {
    /// The protocol version, always 5.
    pub protocol_version: Version,
    /// The session the message belongs to.
    pub session_id: Token,
    /// The id of this cancellation, distinct from the request id it cancels.
    pub cancellation_id: Token,
    /// The request this message belongs to, unique in the session.
    pub request_id: Token,
    /// The granted tool.
    pub tool: Token,
    /// What became of the cancelled call.
    pub outcome: CancelOutcome,
}

impl CancelResult {
    /// Whether this answers exactly `request`.
    pub fn matches(&self, request: &CancelRequest) -> bool {
        self.session_id == request.session_id
            && self.cancellation_id == request.cancellation_id
            && self.request_id == request.request_id
            && self.tool == request.tool
    }
}

/// `dispatch_operation` body: run one durable operation, identified by the
/// host's `operation_key`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DispatchRequest {
    /// The protocol version, always 5.
    pub protocol_version: Version,
    /// The session the message belongs to.
    pub session_id: Token,
    /// The request this message belongs to, unique in the session.
    pub request_id: Token,
    /// The granted tool.
    pub tool: Token,
    /// The host-chosen key that identifies the durable operation.
    pub operation_key: Token,
    /// The payload, in the grant's format and within its size bound.
    pub payload: Payload,
}

/// `reconcile_operation` body: report the state of an operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconcileRequest {
    /// The protocol version, always 5.
    pub protocol_version: Version,
    /// The session the message belongs to.
    pub session_id: Token,
    /// The request this message belongs to, unique in the session.
    pub request_id: Token,
    /// The granted tool.
    pub tool: Token,
    /// The host-chosen key that identifies the durable operation.
    pub operation_key: Token,
}

/// The state of a durable operation or compensation:
/// `{"state":"running"}`, `{"state":"succeeded","payload":P}`,
/// `{"state":"failed","message":M}` or `{"state":"cancelled"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case", deny_unknown_fields)]
pub enum OperationStatus {
    /// Still running; ask again later.
    Running,
    /// Finished with this output.
    Succeeded {
        /// The operation's output.
        payload: Payload,
    },
    /// Failed; the effect did not happen.
    Failed {
        /// Why, 1 to 4096 bytes.
        message: String,
    },
    /// Cancelled before it had an effect.
    Cancelled,
}

/// `operation_result` and `reconciled_operation` body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OperationResult {
    /// The protocol version, always 5.
    pub protocol_version: Version,
    /// The session the message belongs to.
    pub session_id: Token,
    /// The request this message belongs to, unique in the session.
    pub request_id: Token,
    /// The granted tool.
    pub tool: Token,
    /// The host-chosen key that identifies the durable operation.
    pub operation_key: Token,
    /// The operation's state.
    pub status: OperationStatus,
}

/// `compensate_operation` body: a host-approved compensating effect for one
/// operation. `grant_fingerprint` is the grant's
/// [`compensation_fingerprint`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompensationRequest {
    /// The protocol version, always 5.
    pub protocol_version: Version,
    /// The session the message belongs to.
    pub session_id: Token,
    /// The request this message belongs to, unique in the session.
    pub request_id: Token,
    /// The granted tool.
    pub tool: Token,
    /// The host-chosen key that identifies the durable operation.
    pub operation_key: Token,
    /// The key of the compensating effect (starts with `cmp-`).
    pub compensation_key: Token,
    /// The tenant the compensation is scoped to.
    pub tenant_scope: Token,
    /// The grant's [`compensation_fingerprint`]: 64 lowercase hex digits.
    pub grant_fingerprint: String,
    /// The payload, in the grant's format and within its size bound.
    pub payload: Payload,
}

/// `compensation_result` body: repeats the request's fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompensationResult {
    /// The protocol version, always 5.
    pub protocol_version: Version,
    /// The session the message belongs to.
    pub session_id: Token,
    /// The request this message belongs to, unique in the session.
    pub request_id: Token,
    /// The granted tool.
    pub tool: Token,
    /// The host-chosen key that identifies the durable operation.
    pub operation_key: Token,
    /// The key of the compensating effect (starts with `cmp-`).
    pub compensation_key: Token,
    /// The tenant the compensation is scoped to.
    pub tenant_scope: Token,
    /// The grant's [`compensation_fingerprint`]: 64 lowercase hex digits.
    pub grant_fingerprint: String,
    /// The operation's state.
    pub status: OperationStatus,
}

impl CompensationResult {
    /// Whether this answers exactly `request`.
    pub fn matches(&self, request: &CompensationRequest) -> bool {
        self.session_id == request.session_id
            && self.request_id == request.request_id
            && self.tool == request.tool
            && self.operation_key == request.operation_key
            && self.compensation_key == request.compensation_key
            && self.tenant_scope == request.tenant_scope
            && self.grant_fingerprint == request.grant_fingerprint
    }
}

/// One protocol message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Message {
    /// Host → worker, always the host's frame 1; never answered directly.
    OpenSession {
        /// The session's capability manifest.
        manifest: CapabilityManifest,
    },
    /// Host → worker: call one granted tool.
    Invoke {
        /// The call.
        invocation: Invocation,
    },
    /// Worker → host: the output of one `invoke`.
    Result {
        /// The answer.
        result: ToolResult,
    },
    /// Host → worker: run one durable operation.
    DispatchOperation {
        /// The request.
        request: DispatchRequest,
    },
    /// Worker → host: the status of one `dispatch_operation`.
    OperationResult {
        /// The answer.
        result: OperationResult,
    },
    /// Host → worker: run one compensating effect.
    CompensateOperation {
        /// The request.
        request: CompensationRequest,
    },
    /// Worker → host: the status of one `compensate_operation`.
    CompensationResult {
        /// The answer.
        result: CompensationResult,
    },
    /// Host → worker: report the status of one operation.
    ReconcileOperation {
        /// The request.
        request: ReconcileRequest,
    },
    /// Worker → host: the status of one `reconcile_operation`.
    ReconciledOperation {
        /// The answer.
        result: OperationResult,
    },
    /// Host → worker: cooperatively cancel one call in flight.
    Cancel {
        /// The request.
        request: CancelRequest,
    },
    /// Worker → host: the outcome of one `cancel`.
    CancellationResult {
        /// The answer.
        result: CancelResult,
    },
    /// Host → worker: no more requests; the worker should exit.
    CloseSession {
        /// The protocol version, always 5.
        protocol_version: Version,
        /// The session being closed.
        session_id: Token,
    },
}

/// Why a decoded or built message is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MessageError {
    /// A cancel request reuses the id of the request it cancels.
    #[error("cancellation id `{0}` must differ from the request id it cancels")]
    CancellationIdIsRequestId(Token),
    /// A compensation key without the `cmp-` prefix.
    #[error("compensation key `{0}` must start with `cmp-`")]
    CompensationKey(Token),
    /// A grant fingerprint that is not 64 lowercase hex digits.
    #[error("grant fingerprint must be 64 lowercase hex digits")]
    GrantFingerprint,
    /// A failed operation without a message.
    #[error("an operation failure message must not be empty")]
    EmptyFailure,
    /// A failure message over 4096 bytes (the length).
    #[error("an operation failure message is {0} bytes; the maximum is 4096")]
    FailureTooLong(usize),
    /// The payload does not fit the rules for payloads.
    #[error("payload: {0}")]
    Payload(PayloadError),
}

impl From<PayloadError> for MessageError {
    fn from(error: PayloadError) -> Self {
        Self::Payload(error)
    }
}

impl OperationStatus {
    /// The wire name of the state.
    pub fn state(&self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Succeeded { .. } => "succeeded",
            Self::Failed { .. } => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    fn validate(&self) -> Result<(), MessageError> {
        match self {
            Self::Running | Self::Cancelled => Ok(()),
            Self::Succeeded { payload } => payload
                .measure(payload.format())
                .map(|_| ())
                .map_err(Into::into),
            Self::Failed { message } if message.is_empty() => Err(MessageError::EmptyFailure),
            Self::Failed { message } if message.len() > MAX_OPERATION_ERROR_BYTES => {
                Err(MessageError::FailureTooLong(message.len()))
            }
            Self::Failed { .. } => Ok(()),
        }
    }
}

fn is_fingerprint(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn check_compensation(key: &Token, fingerprint: &str) -> Result<(), MessageError> {
    if !key.as_str().starts_with(COMPENSATION_KEY_PREFIX) {
        return Err(MessageError::CompensationKey(key.clone()));
    }
    if !is_fingerprint(fingerprint) {
        return Err(MessageError::GrantFingerprint);
    }
    Ok(())
}

impl Message {
    /// The wire `type` of the message.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::OpenSession { .. } => "open_session",
            Self::Invoke { .. } => "invoke",
            Self::Result { .. } => "result",
            Self::DispatchOperation { .. } => "dispatch_operation",
            Self::OperationResult { .. } => "operation_result",
            Self::CompensateOperation { .. } => "compensate_operation",
            Self::CompensationResult { .. } => "compensation_result",
            Self::ReconcileOperation { .. } => "reconcile_operation",
            Self::ReconciledOperation { .. } => "reconciled_operation",
            Self::Cancel { .. } => "cancel",
            Self::CancellationResult { .. } => "cancellation_result",
            Self::CloseSession { .. } => "close_session",
        }
    }

    /// The only role allowed to send this message.
    pub fn sender(&self) -> SessionRole {
        match self {
            Self::OpenSession { .. }
            | Self::Invoke { .. }
            | Self::DispatchOperation { .. }
            | Self::CompensateOperation { .. }
            | Self::ReconcileOperation { .. }
            | Self::Cancel { .. }
            | Self::CloseSession { .. } => SessionRole::Host,
            Self::Result { .. }
            | Self::OperationResult { .. }
            | Self::CompensationResult { .. }
            | Self::ReconciledOperation { .. }
            | Self::CancellationResult { .. } => SessionRole::Worker,
        }
    }

    /// The session the message names.
    pub fn session_id(&self) -> &Token {
        match self {
            Self::OpenSession { manifest } => &manifest.session_id,
            Self::Invoke { invocation } => &invocation.session_id,
            Self::Result { result } => &result.session_id,
            Self::DispatchOperation { request } => &request.session_id,
            Self::OperationResult { result } | Self::ReconciledOperation { result } => {
                &result.session_id
            }
            Self::CompensateOperation { request } => &request.session_id,
            Self::CompensationResult { result } => &result.session_id,
            Self::ReconcileOperation { request } => &request.session_id,
            Self::Cancel { request } => &request.session_id,
            Self::CancellationResult { result } => &result.session_id,
            Self::CloseSession { session_id, .. } => session_id,
        }
    }

    /// Checks the rules the field types cannot express: a cancellation id
    /// differs from its target, compensation keys start with `cmp-`, grant
    /// fingerprints are 64 lowercase hex digits, failure messages are 1 to
    /// 4096 bytes, and the payload of an operation status fits its own
    /// format. (The payloads of requests and results are checked against the
    /// grant by the sessions.) The manifest of `open_session` is validated
    /// when it is decoded or opened.
    pub fn validate(&self) -> Result<(), MessageError> {
        match self {
            Self::Cancel { request } if request.cancellation_id == request.request_id => Err(
                MessageError::CancellationIdIsRequestId(request.cancellation_id.clone()),
            ),
            Self::CancellationResult { result } if result.cancellation_id == result.request_id => {
                Err(MessageError::CancellationIdIsRequestId(
                    result.cancellation_id.clone(),
                ))
            }
            Self::CompensateOperation { request } => {
                check_compensation(&request.compensation_key, &request.grant_fingerprint)
            }
            Self::CompensationResult { result } => {
                check_compensation(&result.compensation_key, &result.grant_fingerprint)?;
                result.status.validate()
            }
            Self::OperationResult { result } | Self::ReconciledOperation { result } => {
                result.status.validate()
            }
            _ => Ok(()),
        }
    }
}

/// The grant's compensation fingerprint: 64 lowercase hex digits of the
/// BLAKE3 hash of `splash-compensation-grant-v1`, the length of the grant's
/// compact JSON serialization as 8 big-endian bytes, and that serialization.
/// It names no session, so a compensation can be recovered in a fresh
/// session only under an unchanged grant.
pub fn compensation_fingerprint(grant: &Grant) -> Result<String, serde_json::Error> {
    let encoded = crate::canonical::to_vec(grant)?;
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"splash-compensation-grant-v1");
    hasher.update(
        &u64::try_from(encoded.len())
            .unwrap_or(u64::MAX)
            .to_be_bytes(),
    );
    hasher.update(&encoded);
    Ok(hasher.finalize().to_hex().to_string())
}
