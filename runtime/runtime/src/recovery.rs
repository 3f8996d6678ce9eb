//! Post-stop reconciliation: after a session was discarded with an
//! indeterminate outcome, ask a fresh worker what became of one durable
//! operation.
//!
//! The order is fixed and each step is enforced:
//!
//! 1. the old session's worker was stopped and reaped: a [`Reaped`] proof,
//!    which only [`Session::into_reaped`] makes, and only after the
//!    lifecycle reaped the Bubblewrap process (a live worker has no proof,
//!    so it cannot be reconciled against);
//! 2. the fresh session uses another session id (the old one is refused)
//!    and, as every launch, a fresh key;
//! 3. its manifest grants exactly one tool, the operation's;
//! 4. exactly one `reconcile_operation` exchange, under the deadlines;
//! 5. the fresh worker is closed and reaped before the observation is
//!    returned; if it cannot be reaped, the observation is discarded.

use std::io;
use std::time::Duration;

use splash_protocol::{CapabilityManifest, OperationStatus, Token};

use crate::error::LaunchError;
use crate::launch::{LaunchOptions, LoadedPolicy};
use crate::session::{CallError, Session};
use crate::status::WorkerStatus;

/// Proof that a session's worker was stopped and reaped.
#[derive(Debug)]
pub struct Reaped {
    session_id: Token,
    status: WorkerStatus,
}

impl Reaped {
    pub(crate) fn new(session_id: Token, status: WorkerStatus) -> Option<Self> {
        (status != WorkerStatus::Running).then_some(Self { session_id, status })
    }

    /// The session id of the reaped worker's session.
    pub fn session_id(&self) -> &Token {
        &self.session_id
    }

    /// How the reaped Bubblewrap process ended.
    pub fn status(&self) -> WorkerStatus {
        self.status
    }
}

/// The answer of a reconciliation, accepted after its worker was reaped.
#[derive(Debug)]
pub struct Reconciled {
    /// What the worker knows about the operation.
    pub state: OperationStatus,
    /// Proof that the reconciliation worker was reaped.
    pub reaped: Reaped,
}

/// Why a reconciliation was refused or failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReconcileError {
    /// The fresh manifest reuses the old session's id.
    #[error("session id `{0}` belongs to the stopped session; reconcile in a fresh session")]
    SessionReused(Token),
    /// The fresh manifest does not grant exactly the operation's tool.
    #[error(
        "a reconciliation manifest must grant exactly one tool, `{tool}`; it grants {}",
        tool_list(.granted)
    )]
    ManifestScope {
        /// The tool, as the caller named it.
        tool: String,
        /// The tools the manifest grants.
        granted: Vec<Token>,
    },
    /// The fresh session could not be launched.
    #[error("the reconciliation session could not be launched")]
    Launch(#[source] LaunchError),
    /// The exchange failed; the fresh worker was stopped.
    #[error("the reconciliation exchange failed")]
    Call(#[source] CallError),
    /// The fresh worker could not be reaped; its answer is discarded.
    #[error("the reconciliation worker could not be reaped; its answer is discarded")]
    NotReaped(#[source] io::Error),
}

/// `none`, or the tools quoted and comma-separated.
fn tool_list(tools: &[Token]) -> String {
    if tools.is_empty() {
        return "none".to_owned();
    }
    tools
        .iter()
        .map(|t| format!("`{t}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl LoadedPolicy {
    /// Reconciles `operation_id` of `tool` in a fresh session after the
    /// session proven reaped by `old` was discarded; see the module
    /// documentation for the steps.
    pub fn reconcile(
        &self,
        old: &Reaped,
        manifest: CapabilityManifest,
        tool: &str,
        operation_id: &Token,
        options: LaunchOptions,
    ) -> Result<Reconciled, ReconcileError> {
        if manifest.session_id == old.session_id {
            return Err(ReconcileError::SessionReused(old.session_id.clone()));
        }
        if manifest.grants.len() != 1 || manifest.grants[0].tool.as_str() != tool {
            return Err(ReconcileError::ManifestScope {
                tool: tool.to_owned(),
                granted: manifest.grants.iter().map(|g| g.tool.clone()).collect(),
            });
        }
        let mut session = self
            .launch(manifest, options)
            .map_err(ReconcileError::Launch)?;
        let observed = session.reconcile_once(tool, operation_id);
        let reaped = session
            .into_reaped(Duration::from_secs(5))
            .map_err(ReconcileError::NotReaped)?;
        let state = observed.map_err(ReconcileError::Call)?;
        Ok(Reconciled { state, reaped })
    }
}

impl Session {
    /// Ends the session and reaps its worker, returning the proof. A healthy
    /// idle session is closed and given `grace` to exit; a poisoned one, or
    /// one with a call in flight, is force-stopped at once.
    pub fn into_reaped(self, grace: Duration) -> io::Result<Reaped> {
        let session_id = self.manifest().session_id.clone();
        let status = self.end(grace)?;
        Reaped::new(session_id, status).ok_or_else(|| io::Error::other("the worker was not reaped"))
    }
}
