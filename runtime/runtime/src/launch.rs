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
//!
//! A policy file is read by [`read_regular_file`]: opened without blocking,
//! refused unless it is a regular file, and read to at most
//! [`MAX_POLICY_BYTES`]. `splashc` reads its own inputs (policies,
//! manifests, standard input) with the same functions.

use std::io::{self, Read};
use std::path::Path;

use splash_protocol::CapabilityManifest;
use splashpol::activate;
use splashpol::artifact;
use splashpol::lower;
use splashpol::model::Policy;
use splashpol::plan::{Arch, LaunchPlan};

use crate::bind::{BindOptions, BoundCommand};
use crate::error::LaunchError;
pub use crate::error::{FileKind, ReadError};
use crate::session::Session;
use crate::watchdog::Deadlines;

/// The most bytes a policy file may hold, `.splashpol` source or compiled
/// artifact: 1 MiB. The bundled policies are under 2 KB and their artifacts
/// under 3 KB; a policy registering a thousand roots is about 55 KB of
/// source and 180 KB as an artifact.
pub const MAX_POLICY_BYTES: u64 = 1024 * 1024;

/// Reads the regular file at `path`, at most `bound` bytes.
///
/// The file is opened `O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC`, so
/// opening a named pipe without a writer returns at once and a terminal
/// does not become the controlling one; the opened descriptor is then
/// inspected with `fstat`, and anything but a regular file (a directory, a
/// FIFO, `/dev/zero`, a socket) is refused with its type before one byte is
/// read. At most `bound + 1` bytes are read, so a larger file, or one that
/// grows while it is read, is refused without being read whole.
pub fn read_regular_file(path: &Path, bound: u64) -> Result<Vec<u8>, ReadError> {
    use rustix::fs::{FileType, Mode, OFlags};
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io::Error::from)?;
    let stat = rustix::fs::fstat(&fd).map_err(io::Error::from)?;
    let kind = match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => None,
        FileType::Directory => Some(FileKind::Directory),
        FileType::Fifo => Some(FileKind::NamedPipe),
        FileType::CharacterDevice => Some(FileKind::CharacterDevice),
        FileType::BlockDevice => Some(FileKind::BlockDevice),
        FileType::Socket => Some(FileKind::Socket),
        _ => Some(FileKind::Unknown),
    };
    if let Some(kind) = kind {
        return Err(ReadError::NotRegular(kind));
    }
    // The size is only a hint: a file can change while it is read.
    let hint = u64::try_from(stat.st_size).unwrap_or(0).min(bound);
    let capacity = usize::try_from(hint).unwrap_or(0).saturating_add(1);
    read_into(std::fs::File::from(fd), bound, Vec::with_capacity(capacity))
}

/// Reads `reader` (a stream such as standard input) to its end, at most
/// `bound` bytes; more is refused after `bound + 1` bytes were read. The
/// buffer grows with what arrives.
pub fn read_bounded(reader: impl Read, bound: u64) -> Result<Vec<u8>, ReadError> {
    read_into(reader, bound, Vec::new())
}

fn read_into(reader: impl Read, bound: u64, mut bytes: Vec<u8>) -> Result<Vec<u8>, ReadError> {
    reader
        .take(bound.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > bound {
        return Err(ReadError::TooLarge { bound });
    }
    Ok(bytes)
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

    /// Where `identity dynamic` leases its ids from
    /// ([`BindOptions::with_dynamic_identities`]).
    pub fn with_dynamic_identities(mut self, identities: crate::DynamicIdentities) -> Self {
        self.bind = self.bind.with_dynamic_identities(identities);
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
    /// Reads and checks (or validates) the policy at `path`: a regular
    /// file of at most [`MAX_POLICY_BYTES`] ([`read_regular_file`]).
    pub fn from_path(path: &Path) -> Result<Self, LaunchError> {
        let bytes =
            read_regular_file(path, MAX_POLICY_BYTES).map_err(|source| LaunchError::Read {
                path: path.to_path_buf(),
                source,
            })?;
        Self::from_bytes(&path.display().to_string(), bytes)
    }

    /// [`Self::from_path`] for a host bound to one reviewed policy file:
    /// the file's bytes must have the BLAKE3 digest `expected` (64
    /// lowercase hex digits, as [`splashpol::artifact::digest`] and `b3sum`
    /// write it), or the load is refused with [`LaunchError::DigestMismatch`]
    /// before the file is parsed. An artifact or a source file alike; an
    /// `expected` that is not such a digest never matches.
    ///
    /// The digest detects change, not authorship: whoever can write the
    /// file and the pinned digest can replace both.
    ///
    /// ```no_run
    /// use splash_runtime::{LaunchError, LoadedPolicy};
    /// let reviewed = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262";
    /// match LoadedPolicy::from_path_expecting("policy.splashc".as_ref(), reviewed) {
    ///     Ok(policy) => { /* the reviewed policy, validated */ }
    ///     Err(LaunchError::DigestMismatch { found, .. }) => { /* another file: `found` */ }
    ///     Err(e) => { /* unreadable or invalid */ }
    /// }
    /// ```
    pub fn from_path_expecting(path: &Path, expected: &str) -> Result<Self, LaunchError> {
        let bytes =
            read_regular_file(path, MAX_POLICY_BYTES).map_err(|source| LaunchError::Read {
                path: path.to_path_buf(),
                source,
            })?;
        Self::from_bytes_expecting(&path.display().to_string(), bytes, expected)
    }

    /// [`Self::from_bytes`] after checking that `bytes` have the BLAKE3
    /// digest `expected` ([`Self::from_path_expecting`]).
    pub fn from_bytes_expecting(
        name: &str,
        bytes: Vec<u8>,
        expected: &str,
    ) -> Result<Self, LaunchError> {
        let found = artifact::digest(&bytes);
        if found != expected {
            return Err(LaunchError::DigestMismatch {
                name: name.to_owned(),
                expected: expected.to_owned(),
                found,
            });
        }
        Self::from_bytes(name, bytes)
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
        let mut outcome = splashpol::check_source(name, &source);
        match outcome.policy.take() {
            Some(policy) if !outcome.has_errors() => Ok(Self {
                policy,
                source_digest: artifact::digest(source.as_bytes()),
                warnings: if outcome.diagnostics.is_empty() {
                    String::new()
                } else {
                    outcome.render_human(name, &source)
                },
            }),
            _ => Err(LaunchError::Check {
                name: name.to_owned(),
                text: source,
                outcome: Box::new(outcome),
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

    /// [`Self::launch`] for a tokio host: the same steps, binding and
    /// spawning on the runtime's blocking pool, into an
    /// [`AsyncSession`](crate::AsyncSession). Dropping the future never
    /// leaves a worker running.
    #[cfg(feature = "tokio")]
    pub async fn launch_async(
        &self,
        manifest: CapabilityManifest,
        options: LaunchOptions,
    ) -> Result<crate::AsyncSession, LaunchError> {
        let policy = self.clone();
        let LaunchOptions { bind, deadlines } = options;
        let activated = manifest.clone();
        crate::AsyncSession::open_with(move || policy.bind(&activated, bind), manifest, deadlines)
            .await
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

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use std::path::PathBuf;

    use super::*;

    const MINIMAL: &str = "splashpol 1\npolicy \"p\" {\n  bubblewrap \"/usr/bin/bwrap\"\n  worker \"/opt/w/worker\"\n  runtime \"/opt/w\" at \"/opt/w\"\n}\n";

    /// `f` on another thread; a read that blocks fails the test instead of
    /// hanging it.
    fn promptly<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the read returned within 10 s")
    }

    fn temp() -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix("splash-launch-read-")
            .tempdir()
            .expect("temporary directory")
    }

    #[test]
    fn a_policy_with_errors_carries_its_diagnostics() {
        let broken = MINIMAL.replace("worker \"/opt/w/worker\"", "worker \"relative\"");
        let Err(e) = LoadedPolicy::from_bytes("p.splashpol", broken.clone().into_bytes()) else {
            panic!("a relative worker path is an error");
        };
        let LaunchError::Check {
            name,
            text,
            outcome,
        } = &e
        else {
            panic!("not a check error: {e}");
        };
        assert_eq!(
            (name.as_str(), text.as_str()),
            ("p.splashpol", broken.as_str())
        );
        assert!(outcome.policy.is_none() && outcome.has_errors());
        let error = outcome.errors().next().expect("one error");
        assert!(
            error.code.to_string().starts_with("splash::"),
            "{}",
            error.code
        );
        // Display renders the same diagnostics, without colour.
        let shown = e.to_string();
        assert!(
            shown.starts_with("policy `p.splashpol` has errors:\n"),
            "{shown}"
        );
        assert!(
            shown.ends_with(&outcome.render_human(name, text)),
            "{shown}"
        );
        assert!(!shown.contains('\u{1b}'), "{shown}");
    }

    #[test]
    fn only_regular_files_are_read_and_never_blocking() {
        let dir = temp();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");
        let cases = [
            (fifo, FileKind::NamedPipe),
            (PathBuf::from("/dev/zero"), FileKind::CharacterDevice),
            (dir.path().to_path_buf(), FileKind::Directory),
        ];
        for (path, kind) in cases {
            let shown = path.display().to_string();
            let got = promptly(move || read_regular_file(&path, MAX_POLICY_BYTES));
            match got {
                Err(ReadError::NotRegular(k)) => assert_eq!(k, kind, "{shown}"),
                other => panic!("{shown}: {other:?}"),
            }
        }
        let missing = read_regular_file(&dir.path().join("missing"), 10);
        assert!(
            matches!(&missing, Err(ReadError::Io(e)) if e.kind() == io::ErrorKind::NotFound),
            "{missing:?}"
        );
    }

    #[test]
    fn files_and_streams_are_read_to_their_bound_and_no_further() {
        let dir = temp();
        let path = dir.path().join("p.splashpol");
        std::fs::write(&path, b"0123456789").expect("write");
        assert_eq!(read_regular_file(&path, 10).expect("fits"), b"0123456789");
        let e = read_regular_file(&path, 9).expect_err("one byte over");
        assert!(matches!(e, ReadError::TooLarge { bound: 9 }), "{e:?}");
        assert_eq!(
            e.to_string(),
            "it holds more than 9 bytes, the most this input may hold"
        );
        assert_eq!(read_bounded(&b"abc"[..], 3).expect("fits"), b"abc");
        // An endless stream stops at the bound.
        let e = read_bounded(io::repeat(0), 1024 * 1024).expect_err("endless");
        assert_eq!(
            e.to_string(),
            "it holds more than 1 MiB (1048576 bytes), the most this input may hold"
        );
    }

    #[test]
    fn from_path_refuses_what_it_cannot_read_with_the_path() {
        let dir = temp();
        let big = dir.path().join("big.splashpol");
        let mut text = MINIMAL.to_string();
        text.push_str(&"#".repeat(usize::try_from(MAX_POLICY_BYTES).expect("usize")));
        std::fs::write(&big, text).expect("write");
        for path in [big, dir.path().to_path_buf()] {
            let e = LoadedPolicy::from_path(&path).expect_err("refused");
            assert!(matches!(e, LaunchError::Read { .. }), "{e:?}");
            assert!(e.is_refusal());
            assert!(e.to_string().contains(&path.display().to_string()), "{e}");
        }
        let ok = dir.path().join("ok.splashpol");
        std::fs::write(&ok, MINIMAL).expect("write");
        LoadedPolicy::from_path(&ok).expect("a small policy loads");
    }

    #[test]
    fn a_pinned_digest_admits_only_the_reviewed_file() {
        let dir = temp();
        let source = dir.path().join("p.splashpol");
        std::fs::write(&source, MINIMAL).expect("write");
        let policy = LoadedPolicy::from_path(&source).expect("loads").policy;
        let compiled = artifact::write(&policy, MINIMAL.as_bytes()).expect("artifact");
        let path = dir.path().join("p.splashc");
        std::fs::write(&path, &compiled).expect("write");
        let reviewed = artifact::digest(&compiled);

        // The reviewed artifact, and the reviewed source, load.
        let loaded = LoadedPolicy::from_path_expecting(&path, &reviewed).expect("reviewed");
        assert_eq!(loaded.policy, policy);
        LoadedPolicy::from_path_expecting(&source, &artifact::digest(MINIMAL.as_bytes()))
            .expect("reviewed source");

        // Any other file, even a valid artifact of the same policy, is
        // refused naming both digests; so is a malformed expectation.
        let mut changed = compiled.clone();
        changed.extend_from_slice(b"\n");
        std::fs::write(&path, &changed).expect("write");
        assert!(
            LoadedPolicy::from_path(&path).is_ok(),
            "still a valid artifact"
        );
        let e = LoadedPolicy::from_path_expecting(&path, &reviewed).expect_err("changed");
        let found = artifact::digest(&changed);
        match &e {
            LaunchError::DigestMismatch {
                expected, found: f, ..
            } => {
                assert_eq!(expected, &reviewed);
                assert_eq!(f, &found);
            }
            other => panic!("{other:?}"),
        }
        assert!(e.is_refusal());
        let shown = e.to_string();
        assert!(
            shown.contains(&reviewed) && shown.contains(&found),
            "{shown}"
        );
        let e = LoadedPolicy::from_path_expecting(&path, "\u{1b}[2J").expect_err("malformed");
        assert!(e.to_string().contains("`\\u{1b}[2J`"), "{e}");
    }
}
