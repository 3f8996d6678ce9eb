//! Protocol messages.
//!
//! Every message is a JSON object whose `type` is one of the snake_case
//! names below, followed by the variant's fields in declared order. Payload
//! values (`input`, `output`) are arbitrary JSON, serialized with sorted
//! object keys (see [`crate::canonical`]). The wire shape of each message is
//! documented in `docs/protocol.md`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::auth::SessionRole;
use crate::canonical;
use crate::manifest::CapabilityManifest;
use crate::token::Token;

/// One protocol message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Message {
    /// Host → worker, always the host's frame 1; never answered directly.
    OpenSession { manifest: CapabilityManifest },
    /// Host → worker: call one granted tool.
    Invoke {
        request_id: Token,
        tool: Token,
        #[serde(serialize_with = "canonical::serialize")]
        input: Value,
    },
    /// Worker → host: the outcome of one `invoke`.
    Result { request_id: Token, outcome: Outcome },
    /// Host → worker: run one durable, journaled operation.
    DispatchOperation {
        operation_id: Token,
        tool: Token,
        #[serde(serialize_with = "canonical::serialize")]
        input: Value,
    },
    /// Worker → host: the outcome of one `dispatch_operation`.
    OperationResult {
        operation_id: Token,
        outcome: Outcome,
    },
    /// Host → worker: undo the effect of a dispatched operation of `tool`
    /// (bounded by the grant's `max_compensations`).
    CompensateOperation { operation_id: Token, tool: Token },
    /// Worker → host: the outcome of one `compensate_operation`.
    CompensationResult {
        operation_id: Token,
        outcome: Outcome,
    },
    /// Host → worker (in a fresh session): report the state of an
    /// operation of `tool` dispatched in an earlier, stopped session.
    ReconcileOperation { operation_id: Token, tool: Token },
    /// Worker → host: the observed state of one operation.
    ReconciledOperation {
        operation_id: Token,
        state: OperationState,
    },
    /// Host → worker: cooperatively cancel one in-flight `invoke`.
    Cancel { request_id: Token },
    /// Worker → host: the disposition of one `cancel`.
    CancellationResult {
        request_id: Token,
        disposition: CancelDisposition,
    },
    /// Host → worker: no more requests; the worker should exit.
    CloseSession {},
}

/// The outcome of a call: `{"ok": VALUE}` or `{"error": "MESSAGE"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Outcome {
    Ok(#[serde(serialize_with = "canonical::serialize")] Value),
    Error(String),
}

/// What a worker knows about a durable operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OperationState {
    /// The effect happened and was not compensated.
    Applied,
    /// The effect did not happen.
    NotApplied,
    /// The effect happened and was compensated.
    Compensated,
    /// The worker cannot tell (for example, it keeps no journal).
    Unknown,
}

/// The worker's answer to `cancel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelDisposition {
    /// The effect was stopped; no `result` follows for this request.
    Acknowledged,
    /// The request already finished; its `result` was sent first.
    TooLate,
    /// The request cannot be cancelled; it stays active.
    Unsupported,
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
            Self::CloseSession {} => "close_session",
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
            | Self::CloseSession {} => SessionRole::Host,
            Self::Result { .. }
            | Self::OperationResult { .. }
            | Self::CompensationResult { .. }
            | Self::ReconciledOperation { .. }
            | Self::CancellationResult { .. } => SessionRole::Worker,
        }
    }
}
