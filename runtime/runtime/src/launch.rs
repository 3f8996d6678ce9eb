//! The host library's front door: load → activate → lower → bind → spawn →
//! open, in one call for the common case.
//!
//! ```no_run
//! use std::time::Duration;
//! use splash_runtime::{Deadlines, LaunchOptions, LoadedPolicy};
//!
//! # fn demo(manifest: splash_protocol::CapabilityManifest) -> Result<(), Box<dyn std::error::Error>> {
//! let policy = LoadedPolicy::from_path("policy.splashc".as_ref())?;
//! let options = LaunchOptions::default()
//!     .with_deadlines(Deadlines::session(Duration::from_secs(60)).with_call(Duration::from_secs(5)));
//! let mut session = policy.launch(manifest, options)?;
//! let output = session.call("probe.echo", serde_json::json!({"input": 1}))?;
//! let status = session.close(Duration::from_secs(5))?;
//! # let _ = (output, status); Ok(()) }
//! ```
//!
//! Every step either enforces what the policy asks for or fails with a
//! [`LaunchError`]; no process is left running when one is returned. Once
//! a [`Session`] exists, failures are [`crate::CallError`]s, and the ones
//! that poison the session say so.

use std::io;
use std::path::{Path, PathBuf};

use splash_protocol::{CapabilityManifest, ManifestError, SessionError, SessionKeyError};
use splashpol::activate::{self, ActivationError};
use splashpol::artifact::{self, ArtifactError};
use splashpol::lower::{self, LowerError};
use splashpol::model::Policy;
use splashpol::plan::{Arch, LaunchPlan};

use crate::bind::{BindError, BindOptions, BoundCommand};
use crate::lifecycle::LaunchFailure;
use crate::session::Session;
use crate::spawn::SpawnError;
use crate::watchdog::Deadlines;

/// Why no session was opened. Nothing is left running.
///
/// [`LaunchError::is_refusal`] tells a refusal decided before any process
/// was created from a launch that started and failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LaunchError {
    /// The policy file could not be read.
    #[error("cannot read policy `{}`", .path.display())]
    Read {
        /// The path involved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// A compiled artifact failed its validation.
    #[error("policy artifact `{name}` is not valid")]
    Artifact {
        /// The policy file name shown.
        name: String,
        /// The operating system's error.
        #[source]
        source: ArtifactError,
    },
    /// Policy source that is not UTF-8.
    #[error("policy `{name}` is not UTF-8")]
    NotUtf8 {
        /// The policy file name shown.
        name: String,
    },
    /// The checker reported errors; `rendered` holds every diagnostic.
    #[error("policy `{name}` has errors:\n{rendered}")]
    Check {
        /// The policy file name shown.
        name: String,
        /// The rendered diagnostics.
        rendered: String,
    },
    /// The manifest is not a valid protocol-v5 manifest.
    #[error("the manifest is invalid")]
    Manifest(#[source] ManifestError),
    /// The manifest cannot be activated against the policy.
    #[error("activation failed")]
    Activation(#[source] ActivationError),
    /// Lowering failed.
    #[error("cannot lower the policy")]
    Lower(#[source] LowerError),
    /// No seccomp tables for this host's architecture.
    #[error("this host's architecture is not supported")]
    UnsupportedHost,
    /// Bind refused the plan on this host.
    #[error("bind refused the plan")]
    Bind(#[source] BindError),
    /// No session key could be generated.
    #[error("cannot generate a session key")]
    Key(#[source] SessionKeyError),
    /// The launch failed (the worker, if started, was stopped and reaped).
    #[error("the launch failed")]
    Spawn(#[source] SpawnError),
    /// A descriptor for the session could not be made (the worker was
    /// stopped and reaped).
    #[error("cannot prepare the session's descriptors")]
    Descriptor(#[source] io::Error),
    /// The session could not be opened; `failure` says how the worker
    /// ended (it was stopped and reaped).
    #[error("cannot open the session ({failure})")]
    Open {
        /// The operating system's error.
        #[source]
        source: SessionError,
        /// What the watchdog observed.
        failure: LaunchFailure,
    },
}

impl LaunchError {
    /// True when the launch was refused before any process was created
    /// (load, check, manifest, activation, lowering, bind, key, or a spawn
    /// refusal such as a watchdog plan on the unwatched path).
    pub fn is_refusal(&self) -> bool {
        match self {
            Self::Spawn(e) => !matches!(
                e,
                SpawnError::Exec { .. } | SpawnError::Bootstrap { .. } | SpawnError::Watchdog(_)
            ),
            Self::Descriptor(_) | Self::Open { .. } => false,
            _ => true,
        }
    }
}

/// A checked policy, from `.splashpol` source or a compiled `.splashc`
/// artifact.
#[derive(Debug, Clone)]
pub struct LoadedPolicy {
    /// The checked policy.
    pub policy: Policy,
    /// BLAKE3 digest of the source it was checked from.
    pub source_digest: String,
    /// Rendered warnings of the check (empty for an artifact or a clean
    /// source).
    pub warnings: String,
}

/// What a launch uses besides the policy and the manifest.
#[derive(Debug, Default)]
pub struct LaunchOptions {
    bind: BindOptions,
    deadlines: Deadlines,
}

impl LaunchOptions {
    /// Replaces the bind options (quota inspector, launch preparations).
    pub fn with_bind(mut self, bind: BindOptions) -> Self {
        self.bind = bind;
        self
    }

    /// The host's deadlines; the policy's `watchdog` block can only make
    /// them tighter.
    pub fn with_deadlines(mut self, deadlines: Deadlines) -> Self {
        self.deadlines = deadlines;
        self
    }
}

impl LoadedPolicy {
    /// Reads and checks (or validates) the policy at `path`.
    pub fn from_path(path: &Path) -> Result<Self, LaunchError> {
        let bytes = std::fs::read(path).map_err(|source| LaunchError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_bytes(&path.display().to_string(), bytes)
    }

    /// Checks `bytes` as `.splashpol` source, or validates them as a
    /// compiled artifact; `name` appears in diagnostics.
    pub fn from_bytes(name: &str, bytes: Vec<u8>) -> Result<Self, LaunchError> {
        if artifact::looks_like_artifact(&bytes) {
            let a = artifact::load(&bytes).map_err(|source| LaunchError::Artifact {
                name: name.to_owned(),
                source,
            })?;
            return Ok(Self {
                policy: a.policy,
                source_digest: a.source_digest,
                warnings: String::new(),
            });
        }
        let source = String::from_utf8(bytes).map_err(|_| LaunchError::NotUtf8 {
            name: name.to_owned(),
        })?;
        let outcome = splashpol::check_source(name, &source);
        let rendered = if outcome.diagnostics.is_empty() {
            String::new()
        } else {
            outcome.render_human(name, &source)
        };
        match outcome.policy {
            Some(policy) if !outcome.has_errors() => Ok(Self {
                policy,
                source_digest: artifact::digest(source.as_bytes()),
                warnings: rendered,
            }),
            _ => Err(LaunchError::Check {
                name: name.to_owned(),
                rendered,
            }),
        }
    }

    /// Validates `manifest`, activates it and lowers the policy for this
    /// host's architecture.
    pub fn plan(&self, manifest: &CapabilityManifest) -> Result<LaunchPlan, LaunchError> {
        manifest.validate().map_err(LaunchError::Manifest)?;
        let activation =
            activate::activate(&self.policy, Some(manifest)).map_err(LaunchError::Activation)?;
        let arch = Arch::host().ok_or(LaunchError::UnsupportedHost)?;
        lower::lower(&self.policy, &activation, arch, &self.source_digest)
            .map_err(LaunchError::Lower)
    }

    /// [`Self::plan`], then bind it to this host.
    pub fn bind(
        &self,
        manifest: &CapabilityManifest,
        options: BindOptions,
    ) -> Result<BoundCommand, LaunchError> {
        BoundCommand::bind_with(self.plan(manifest)?, options).map_err(LaunchError::Bind)
    }

    /// The whole launch: plan, bind, spawn under the watchdog with a fresh
    /// session key, and open the authenticated session.
    pub fn launch(
        &self,
        manifest: CapabilityManifest,
        options: LaunchOptions,
    ) -> Result<Session, LaunchError> {
        let bound = self.bind(&manifest, options.bind)?;
        Session::open_owned(bound, manifest, options.deadlines)
    }
}

/// Loads the policy at `path` and [launches](LoadedPolicy::launch) it.
pub fn launch(
    path: &Path,
    manifest: CapabilityManifest,
    options: LaunchOptions,
) -> Result<Session, LaunchError> {
    LoadedPolicy::from_path(path)?.launch(manifest, options)
}
