//! Pinning host objects: the one check of a host object bind relies on
//! (every pin, Bubblewrap, each program of the exec chain and each Landlock
//! target), the descriptor it retains, and path-based mount sources.

use std::fs::{self, File, Metadata};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use splashpol::model::{HostPath, SandboxPath};
use splashpol::plan::{Behind, BwrapOp, LaunchPlan, MountSource, Pin, PinKind, PinRole};

use crate::error::{BindError, ExecDefect, ExecRole, PlanDefect, Unprovided};
use crate::sys;

/// A descriptor retained at bind, duplicated fresh for every launch.
#[derive(Debug)]
pub struct PinnedSource {
    pub(crate) pin: Pin,
    pub(crate) canonical: PathBuf,
    pub(crate) fd: OwnedFd,
}

impl PinnedSource {
    /// The plan's pin this descriptor holds.
    pub fn pin(&self) -> &Pin {
        &self.pin
    }

    /// The canonical host path that was opened.
    pub fn canonical_path(&self) -> &Path {
        &self.canonical
    }

    /// A fresh close-on-exec duplicate (`F_DUPFD_CLOEXEC`, number ≥ 3).
    pub fn duplicate(&self) -> io::Result<OwnedFd> {
        self.fd.try_clone()
    }
}

fn type_name(meta: &Metadata) -> &'static str {
    let ft = meta.file_type();
    if ft.is_dir() {
        "a directory"
    } else if ft.is_file() {
        if meta.permissions().mode() & 0o111 != 0 {
            "an executable file"
        } else {
            "a regular file"
        }
    } else if ft.is_symlink() {
        "a symbolic link"
    } else {
        "a special file"
    }
}

fn kind_matches(kind: PinKind, meta: &Metadata) -> bool {
    match kind {
        PinKind::Directory => meta.is_dir(),
        PinKind::RegularFile => meta.is_file(),
        PinKind::Executable => meta.is_file() && meta.permissions().mode() & 0o111 != 0,
        PinKind::FileOrDirectory => meta.is_dir() || meta.is_file(),
        PinKind::BrokerDirectory => false,
    }
}

fn kind_name(kind: PinKind) -> &'static str {
    match kind {
        PinKind::Directory => "a directory",
        PinKind::RegularFile => "a regular file",
        PinKind::Executable => "an executable regular file",
        PinKind::FileOrDirectory => "a directory or a regular file",
        PinKind::BrokerDirectory => "a private broker directory",
    }
}

fn is_executable_role(role: &PinRole) -> bool {
    matches!(
        role,
        PinRole::Bubblewrap
            | PinRole::Worker
            | PinRole::LimitRunner
            | PinRole::LandlockRunner
            | PinRole::CombinedRunner
            | PinRole::AllowedExecutable
    )
}

/// Canonicalizes `path`, rejecting `/`.
pub(crate) fn canonical(path: &str) -> Result<PathBuf, BindError> {
    let canonical = fs::canonicalize(path).map_err(|source| BindError::Resolve {
        path: PathBuf::from(path),
        source,
    })?;
    if canonical == Path::new("/") {
        return Err(BindError::ResolvesToRoot {
            path: PathBuf::from(path),
        });
    }
    Ok(canonical)
}

/// Opens `path` when it is already canonical: a [`HostPath`] is absolute,
/// not `/` and normalized (no `.`, `..` or empty component), and so is a
/// normalized sandbox path joined below one, so when `openat2` with
/// `RESOLVE_NO_SYMLINKS` succeeds (no component is a symbolic link) the path
/// is its own canonical form. The descriptor is `O_PATH | O_NOFOLLOW`; its
/// metadata is returned too (a symbolic link as the last component is
/// reported as one, not followed). `None` sends the caller to the full
/// resolution, which also gives every error its usual form.
fn open_canonical(path: &Path) -> Option<(OwnedFd, Metadata)> {
    let file = File::from(sys::open_path_no_symlinks(path).ok()?);
    let meta = file.metadata().ok()?;
    Some((OwnedFd::from(file), meta))
}

/// Why [`open_object`] refused a host path; the caller names the object.
#[derive(Debug)]
pub(crate) enum ObjectDefect {
    /// `lstat` or `realpath` failed.
    Unresolved(io::Error),
    /// The canonical path is `/`.
    ResolvesToRoot,
    /// The path itself is a symbolic link (refused for executables).
    SymbolicLink,
    /// `openat2` of the canonical path failed.
    Open(io::Error),
    /// `fstat` through the descriptor failed.
    Inspect(io::Error),
    /// The object is not of the required type.
    WrongType {
        /// Where the path resolves.
        canonical: PathBuf,
        /// What was found there.
        found: &'static str,
    },
}

impl ObjectDefect {
    /// The error for a pin or Bubblewrap, named by its configured `path`.
    pub(crate) fn for_source(self, path: &Path, kind: PinKind) -> BindError {
        let path = path.to_path_buf();
        match self {
            Self::Unresolved(source) => BindError::Resolve { path, source },
            Self::ResolvesToRoot => BindError::ResolvesToRoot { path },
            Self::SymbolicLink => BindError::SymlinkExecutable { path },
            Self::Open(source) => BindError::Pin { path, source },
            Self::Inspect(source) => BindError::Inspect { path, source },
            Self::WrongType { canonical, found } => BindError::WrongType {
                path,
                canonical,
                expected: kind_name(kind),
                found,
            },
        }
    }

    /// The error for a program the sandbox executes, named by its
    /// worker-visible path and the host file behind it.
    fn for_program(self, role: ExecRole, program: &SandboxPath, host: &Path) -> BindError {
        let (defect, source) = match self {
            Self::Unresolved(e) => (ExecDefect::Unresolved, Some(e)),
            Self::ResolvesToRoot => (ExecDefect::ResolvesToRoot, None),
            Self::SymbolicLink => (ExecDefect::SymbolicLink, None),
            Self::Open(e) => (ExecDefect::Open, Some(e)),
            Self::Inspect(e) => (ExecDefect::Inspect, Some(e)),
            Self::WrongType { found, .. } => (ExecDefect::WrongType { found }, None),
        };
        BindError::Executable {
            role,
            program: program.clone(),
            host: host.to_path_buf(),
            defect,
            source,
        }
    }
}

/// The one check of a host object bind relies on: every pin, Bubblewrap,
/// and (whatever the plan pins) each program of the exec chain and each
/// Landlock target. `path` is absolute and normalized.
///
/// With `executable`, the path itself must not be a symbolic link. The path
/// is canonicalized (a link in a directory component is resolved here,
/// once), must not be `/`, and is opened `O_PATH | O_NOFOLLOW | O_CLOEXEC`
/// with `RESOLVE_NO_SYMLINKS`, so a link swapped in after canonicalization
/// fails instead of being followed; the type is checked through the
/// descriptor (`fstat`). Returns the canonical path and the descriptor.
pub(crate) fn open_object(
    path: &Path,
    kind: PinKind,
    executable: bool,
) -> Result<(PathBuf, OwnedFd), ObjectDefect> {
    let (canonical, fd, meta) = match open_canonical(path) {
        // The common case: the path is canonical, opened once.
        Some((fd, meta)) if !meta.file_type().is_symlink() => (path.to_path_buf(), fd, meta),
        _ => {
            if executable {
                let meta = fs::symlink_metadata(path).map_err(ObjectDefect::Unresolved)?;
                if meta.file_type().is_symlink() {
                    return Err(ObjectDefect::SymbolicLink);
                }
            }
            let canonical = fs::canonicalize(path).map_err(ObjectDefect::Unresolved)?;
            if canonical == Path::new("/") {
                return Err(ObjectDefect::ResolvesToRoot);
            }
            let file =
                File::from(sys::open_path_no_symlinks(&canonical).map_err(ObjectDefect::Open)?);
            let meta = file.metadata().map_err(ObjectDefect::Inspect)?;
            (canonical, OwnedFd::from(file), meta)
        }
    };
    if !kind_matches(kind, &meta) {
        return Err(ObjectDefect::WrongType {
            canonical,
            found: type_name(&meta),
        });
    }
    Ok((canonical, fd))
}

/// What an executable pin is overlaid as, when the sandbox runs it: the
/// role and the worker-visible path of its overlay (`None` for Bubblewrap,
/// which runs on the host, and for every other pin).
fn overlay_of<'p>(
    plan: &'p LaunchPlan,
    slot: usize,
    pin: &Pin,
) -> Option<(ExecRole, &'p SandboxPath)> {
    let role = match pin.role {
        PinRole::Worker => ExecRole::Worker,
        PinRole::LimitRunner | PinRole::LandlockRunner | PinRole::CombinedRunner => {
            ExecRole::Runner
        }
        PinRole::AllowedExecutable => ExecRole::AllowedTarget,
        _ => return None,
    };
    plan.ops().iter().find_map(|op| match op {
        BwrapOp::RoBind {
            source: MountSource::Pinned(s),
            destination,
        } if usize::from(s.0) == slot => Some((role, destination)),
        _ => None,
    })
}

pub(crate) fn pin_source(
    plan: &LaunchPlan,
    slot: usize,
    pin: &Pin,
) -> Result<PinnedSource, BindError> {
    let path = Path::new(pin.host_path.as_str());
    if pin.kind == PinKind::BrokerDirectory {
        return Err(BindError::Unsupported {
            what: Unprovided::BrokerDirectoryPin {
                path: path.to_path_buf(),
            },
        });
    }
    let executable = pin.kind == PinKind::Executable || is_executable_role(&pin.role);
    let (canonical, fd) =
        open_object(path, pin.kind, executable).map_err(|defect| {
            match overlay_of(plan, slot, pin) {
                Some((role, program)) => defect.for_program(role, program, path),
                None => defect.for_source(path, pin.kind),
            }
        })?;
    Ok(PinnedSource {
        pin: pin.clone(),
        canonical,
        fd,
    })
}

pub(crate) fn check_path_source(path: &HostPath, directory: bool) -> Result<PathBuf, BindError> {
    let canonical = canonical(path.as_str())?;
    let meta = fs::metadata(&canonical).map_err(|source| BindError::Resolve {
        path: PathBuf::from(path.to_string()),
        source,
    })?;
    let ok = if directory {
        meta.is_dir()
    } else {
        meta.is_dir() || meta.is_file()
    };
    if !ok {
        return Err(BindError::WrongType {
            path: PathBuf::from(path.to_string()),
            canonical: canonical.to_path_buf(),
            expected: if directory {
                "a directory"
            } else {
                "a directory or a regular file"
            },
            found: type_name(&meta),
        });
    }
    Ok(canonical)
}

/// The host file behind a worker-visible path.
#[derive(Debug)]
enum HostFile {
    /// A path on the host, below the source of the read-only mount that
    /// covers it last.
    Path(PathBuf),
    /// Exactly the overlay of an executable pin, checked through its
    /// descriptor when it was pinned (step 2).
    PinnedExecutable,
}

/// Where a worker-visible path comes from, by the plan's one rule
/// ([`LaunchPlan::mount_behind`]), with a pinned source at the canonical
/// path it was pinned from; `Some(None)` when no read-only bind reaches it
/// last (a read-write root, a tmpfs, or no mount at all); `None` when it is
/// reached through a pin that was not made.
fn host_file_behind(
    plan: &LaunchPlan,
    pins: &[Option<PinnedSource>],
    path: &SandboxPath,
) -> Option<Option<HostFile>> {
    let (source, below) = match plan.mount_behind(path) {
        Behind::ReadOnly { source, below } => (source, below),
        Behind::Unmounted | Behind::ReadWrite { .. } | Behind::Synthetic => return Some(None),
    };
    let base = match source {
        MountSource::Pinned(slot) => {
            let pinned = pins.get(usize::from(slot.0)).and_then(Option::as_ref)?;
            if below.is_empty() && pinned.pin.kind == PinKind::Executable {
                return Some(Some(HostFile::PinnedExecutable));
            }
            pinned.canonical.clone()
        }
        MountSource::Path(p) => PathBuf::from(p.as_str()),
    };
    Some(Some(HostFile::Path(if below.is_empty() {
        base
    } else {
        base.join(below.trim_start_matches('/'))
    })))
}

/// Step 4 for one program or Landlock target: `program` must be reached
/// through a read-only mount, and the host file behind it must pass
/// [`open_object`] as an executable: the check a pinned executable gets, in
/// path mode too. `None` when it is reached through a pin that was not made
/// (a failure of step 2, which a preflight reports and goes on from).
pub(crate) fn check_exec_target(
    plan: &LaunchPlan,
    pins: &[Option<PinnedSource>],
    role: ExecRole,
    program: &str,
) -> Option<Result<(), BindError>> {
    let sandbox = match SandboxPath::new(program.to_owned()) {
        Ok(p) => p,
        Err(e) => {
            return Some(Err(BindError::Plan(PlanDefect::ProgramPath {
                program: program.to_owned(),
                reason: e,
            })));
        }
    };
    Some(match host_file_behind(plan, pins, &sandbox)? {
        None => Err(BindError::NotInRuntimeMount {
            role,
            program: sandbox,
        }),
        Some(HostFile::PinnedExecutable) => Ok(()),
        Some(HostFile::Path(host)) => open_object(&host, PinKind::Executable, true)
            .map(drop)
            .map_err(|defect| defect.for_program(role, &sandbox, &host)),
    })
}
