//! Expectations: the facts a policy's `expect { ... }` block says hold
//! inside its sandbox, checked (as far as text allows) by the checker and
//! from inside a real sandbox by `splashc test`.
//!
//! An expectation never changes the sandbox: it is not part of the
//! [`model::Policy`], so neither the lowered plan nor a compiled artifact
//! (nor its policy digest) depends on it. The checker reports an
//! expectation the policy can never meet as
//! `splash::check::impossible-expectation`; what only the host can answer
//! (whether the kernel enforces each layer, what the files behind the
//! mounts are) is left to `splashc test`.
//!
//! ```
//! let source = "splashpol 1\npolicy \"p\" {\n  bubblewrap \"/usr/bin/bwrap\"\n  \
//!               worker \"/opt/w/bin/w\"\n  runtime \"/opt/w\" at \"/opt/w\"\n  \
//!               expect { read-only \"/opt/w\"  hidden \"/etc\" }\n}\n";
//! let (policy, expectations) = splashpol::expect::of_source(source).expect("checks");
//! assert_eq!(policy.name(), "p");
//! assert_eq!(expectations.len(), 2);
//! assert_eq!(expectations[1].text, "hidden \"/etc\"");
//! ```

use crate::model::{self, SandboxPath};
use crate::span::Span;

/// One checked expectation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expectation {
    /// What is expected.
    pub kind: ExpectKind,
    /// The entry in the source (for a `syscall denied` entry naming several
    /// syscalls, the span of this one name).
    pub span: Span,
    /// The entry in canonical form, as `splashc test` names it (one syscall
    /// per expectation: `syscall denied bpf`).
    pub text: String,
}

/// What an expectation says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpectKind {
    /// `read-only PATH`: the path is visible and every write to it fails.
    ReadOnly(SandboxPath),
    /// `writable PATH [max SIZE]`: a file can be written in the directory,
    /// and with `max`, writes stop at no more than about `SIZE` bytes.
    Writable {
        /// The directory.
        path: SandboxPath,
        /// The bound in bytes, if given.
        max_bytes: Option<u64>,
    },
    /// `hidden PATH`: nothing is visible at the path.
    Hidden(SandboxPath),
    /// `exec denied PATH`: executing the program fails.
    ExecDenied(SandboxPath),
    /// `exec allowed PATH`: executing the program starts it.
    ExecAllowed(SandboxPath),
    /// `syscall denied NAME`: the call fails with `EPERM` or `ENOSYS`, or the
    /// caller is killed with `SIGSYS`.
    SyscallDenied(String),
    /// `network none`: no interface but loopback.
    NetworkNone,
    /// `processes max COUNT`: no more than this many processes at once.
    ProcessesMax(u64),
    /// `user-namespaces none`: creating a user namespace fails.
    UserNamespacesNone,
}

/// Parses and checks `source` and returns its policy and expectations, or
/// `None` when the policy has an error (`splashpol::check_source` reports
/// it).
pub fn of_source(source: &str) -> Option<(model::Policy, Vec<Expectation>)> {
    let parsed = crate::parse::parse(source);
    if parsed.has_errors() {
        return None;
    }
    let file = parsed.file?;
    let (policy, _) = crate::check::check_file(&file, &parsed.failed_keywords, false);
    let policy = policy?;
    let (expectations, diagnostics) = crate::check::expectations(&file, &policy);
    if diagnostics.iter().any(crate::Diagnostic::is_error) {
        return None;
    }
    Some((policy, expectations))
}

/// What covers a worker-visible path in the policy's mount layout (all
/// registered roots active).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cover {
    /// A read-only mount (a runtime mount, a read-only root, the broker
    /// directory, `/proc`, `/dev`) at this destination.
    ReadOnly(SandboxPath),
    /// A writable mount at this destination, with the bound on what can be
    /// stored there when the policy sets one.
    Writable(SandboxPath, Option<u64>),
    /// No mount covers it, but mounts lie below it: a directory of the
    /// sandbox's read-only root.
    Skeleton,
    /// Nothing: the path does not exist in the sandbox.
    Nothing,
}

/// Where `path` comes from in `policy`'s mount layout: the deepest mount
/// whose destination contains it.
pub fn cover(policy: &model::Policy, path: &SandboxPath) -> Cover {
    let mut best: Option<(usize, Cover)> = None;
    let mut consider = |dest: &SandboxPath, cover: Cover| {
        if path.is_within(dest) {
            let depth = dest.as_str().len();
            if best.as_ref().is_none_or(|(d, _)| depth >= *d) {
                best = Some((depth, cover));
            }
        }
    };
    for fixed in ["/proc", "/dev"] {
        if let Ok(p) = SandboxPath::new(fixed.to_string()) {
            consider(&p, Cover::ReadOnly(p.clone()));
        }
    }
    match policy.tmp() {
        model::PrivateTmp::Off => {}
        model::PrivateTmp::Unbounded => {
            if let Ok(p) = SandboxPath::new("/tmp".to_string()) {
                consider(&p, Cover::Writable(p.clone(), None));
            }
        }
        model::PrivateTmp::Bounded { size_bytes } => {
            if let Ok(p) = SandboxPath::new("/tmp".to_string()) {
                consider(&p, Cover::Writable(p.clone(), Some(size_bytes)));
            }
        }
    }
    for m in policy.runtime_mounts() {
        consider(&m.destination, Cover::ReadOnly(m.destination.clone()));
    }
    for r in policy.file_roots() {
        let d = r.destination.clone();
        let c = match &r.kind {
            model::FileRootKind::Host {
                access: model::Access::ReadOnly,
                ..
            } => Cover::ReadOnly(d.clone()),
            model::FileRootKind::Host {
                access: model::Access::ReadWrite,
                quota,
                ..
            } => Cover::Writable(d.clone(), quota.map(|q| q.max_bytes)),
            model::FileRootKind::Ephemeral { size_bytes } => {
                Cover::Writable(d.clone(), Some(*size_bytes))
            }
        };
        consider(&r.destination, c);
    }
    if let Some(b) = policy.network_broker() {
        consider(&b.destination, Cover::ReadOnly(b.destination.clone()));
    }
    if let Some((_, c)) = best {
        return c;
    }
    let below = policy
        .runtime_mounts()
        .iter()
        .map(|m| &m.destination)
        .chain(policy.file_roots().iter().map(|r| &r.destination))
        .chain(policy.network_broker().map(|b| &b.destination))
        .any(|d| d.is_within(path));
    let fixed_below = ["/proc", "/dev", "/tmp"]
        .iter()
        .filter(|f| **f != "/tmp" || policy.tmp() != model::PrivateTmp::Off)
        .filter_map(|f| SandboxPath::new((*f).to_string()).ok())
        .any(|d| d.is_within(path));
    if below || fixed_below {
        Cover::Skeleton
    } else {
        Cover::Nothing
    }
}
