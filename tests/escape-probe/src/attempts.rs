//! The attempts. Each names the layers of the sandbox that must stop it (any
//! one of them present is enough) and the control environment in which the
//! battery shows that it works without those layers.
//!
//! Every attempt is harmless to the host even where it works: sysctls are
//! written back with the value just read, kernel knobs are only opened for
//! writing, `reboot` and `kexec_load` get invalid arguments that can only
//! fail after the permission check, cross-process writes write back the
//! bytes just read, fills stop at [`FILL_BOUND`].

use std::ffi::{CStr, CString, c_int};
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};

use crate::sys::{self, Sys};
use crate::{Ctx, json};

/// What one attempt did.
#[derive(Debug)]
pub enum Outcome {
    /// It worked.
    Ok(String),
    /// The kernel got past its permission checks and failed later on
    /// purposely invalid arguments.
    Reached(i32, String),
    /// It was refused (errno, or 0 when the refusal is not an errno).
    Denied(i32, String),
    /// Nothing to try here (with the reason).
    NotApplicable(String),
    /// A signal was sent; the host decides what it did.
    Sent(String),
}

use Outcome::{Denied, NotApplicable, Ok as Worked, Reached, Sent};

/// Where the control run of an attempt happens.
#[derive(Debug, Clone, Copy)]
pub enum Control {
    /// A raw bwrap sandbox as host root with every capability, its own
    /// namespaces, a writable root and runtime, no seccomp, no Landlock, no
    /// rlimits, no size limits.
    Contained,
    /// A raw bwrap sandbox as host root sharing the host's pid and network
    /// namespaces.
    HostShared,
    /// A raw bwrap sandbox as host root without any capability
    /// (`--cap-drop ALL`), with bwrap's own `--dev /dev`: what a worker of a
    /// root host is without the private device nodes.
    CapDropped,
    /// No sandbox: the probe run directly as host root, for what every
    /// Bubblewrap sandbox provides (`no_new_privs`).
    Unsandboxed,
}

#[derive(Debug)]
pub struct Attempt {
    pub name: &'static str,
    pub group: &'static str,
    pub what: &'static str,
    pub layers: &'static [&'static str],
    pub control: Control,
    pub run: fn(&Ctx) -> Outcome,
}

// Always-on layers.
const NS: &str = "namespaces";
const CAP: &str = "cap-drop";
const PROC: &str = "read-only-proc";
const PID1: &str = "pid1-is-worker";
const HYGIENE: &str = "launcher-hygiene";
const DEVNODES: &str = "private-device-nodes";
const NNP: &str = "no-new-privs";
// Policy layers.
const SECCOMP: &str = "seccomp";
const LANDLOCK: &str = "landlock";
const RLIMITS: &str = "rlimits";
const USERNS: &str = "userns-lockdown";
const WRITES: &str = "bounded-writes";
const TMP: &str = "tmp-size";
const IDENTITY: &str = "identity";
const TMPFS: &str = "tmpfs-size";

/// Bytes a fill writes at most: more than any size a bundled policy gives
/// `/tmp` or a tmpfs root.
pub const FILL_BOUND: u64 = 128 << 20;

/// Errnos that mean "refused" for a system call.
const DENIALS: [i32; 4] = [libc::EPERM, libc::EACCES, libc::EROFS, libc::ENOSYS];

fn cs(s: &str) -> CString {
    CString::new(s).unwrap_or_default()
}

/// Success, a refusal errno, or "reached" for any other errno.
fn sys(r: Sys) -> Outcome {
    match r {
        Ok(_) => Worked(String::new()),
        Err(e) if DENIALS.contains(&e) => Denied(e, String::new()),
        Err(e) => Reached(e, String::new()),
    }
}

/// Only success counts; every errno is a refusal.
fn only_success(r: Sys) -> Outcome {
    match r {
        Ok(_) => Worked(String::new()),
        Err(e) => Denied(e, String::new()),
    }
}

fn fd(r: Result<OwnedFd, i32>) -> Outcome {
    sys(r.map(|fd| i64::from(fd.as_raw_fd())))
}

fn fd_only(r: Result<OwnedFd, i32>) -> Outcome {
    only_success(r.map(|fd| i64::from(fd.as_raw_fd())))
}

/// Opens `path` for writing without creating, truncating or writing it.
fn open_for_write(path: &str) -> Outcome {
    match sys::open(&cs(path), libc::O_WRONLY, 0) {
        Ok(_) => Worked(format!("{path} opened for writing (nothing written)")),
        Err(e) => Denied(e, path.to_owned()),
    }
}

/// [`open_for_write`] of a file of the (always mounted) `/proc`: a missing
/// file means this kernel does not have it.
fn open_proc_for_write(path: &str) -> Outcome {
    match open_for_write(path) {
        Denied(libc::ENOENT, _) => NotApplicable(format!("this kernel has no {path}")),
        other => other,
    }
}

fn io_errno(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

// ---------------------------------------------------------------- namespaces

/// A namespace attempt: ENOSPC and EUSERS (a namespace count limit, which
/// is how the user-namespace lockdown refuses) are refusals too.
fn ns(r: Sys) -> Outcome {
    match r {
        Err(e) if e == libc::ENOSPC || e == libc::EUSERS => Denied(e, String::new()),
        other => sys(other),
    }
}

fn unshare(flags: c_int) -> Outcome {
    ns(sys::unshare(flags))
}

fn setns_own(kind: &str, nstype: c_int) -> Outcome {
    match sys::open(&cs(&format!("/proc/self/ns/{kind}")), libc::O_RDONLY, 0) {
        Ok(f) => sys(sys::setns(f.as_fd(), nstype)),
        Err(e) => Denied(e, "open".into()),
    }
}

fn x32(nr: libc::c_long, arg: libc::c_long) -> Outcome {
    if cfg!(target_arch = "x86_64") {
        sys(sys::x32_syscall(nr, arg))
    } else {
        NotApplicable("x32 exists only on x86_64".into())
    }
}

// --------------------------------------------------------------------- mounts

fn mount_tmpfs() -> Outcome {
    sys(sys::mount(
        c"tmpfs",
        c"/dev",
        c"tmpfs",
        libc::MS_NOSUID,
        Some(c"size=1m"),
    ))
}

fn mount_bind_root() -> Outcome {
    sys(sys::mount(
        c"/",
        c"/dev",
        c"none",
        libc::MS_BIND | libc::MS_REC,
        None,
    ))
}

fn open_by_handle() -> Outcome {
    match sys::open(c"/", libc::O_RDONLY | libc::O_DIRECTORY, 0) {
        Ok(root) => sys(sys::open_by_handle_invalid(root.as_fd())),
        Err(e) => Denied(e, "open /".into()),
    }
}

// ------------------------------------------------------------ kernel surfaces

fn sysctl_write_same() -> Outcome {
    let path = "/proc/sys/fs/lease-break-time";
    let value = match std::fs::read(path) {
        Ok(v) => v,
        Err(e) => return Denied(io_errno(&e), "read".into()),
    };
    let f = match sys::open(&cs(path), libc::O_WRONLY, 0) {
        Ok(f) => f,
        Err(e) => return Denied(e, "open for writing".into()),
    };
    let mut file = std::fs::File::from(f);
    match file.write_all(&value) {
        Ok(()) => Worked(format!(
            "wrote back the value it read ({})",
            String::from_utf8_lossy(&value).trim()
        )),
        Err(e) => Denied(io_errno(&e), "write".into()),
    }
}

/// The first regular file (in name order) under `dir` with its owner-write
/// bit set, at most `depth` levels down.
fn first_writable(dir: &std::path::Path, depth: u32) -> Option<std::path::PathBuf> {
    let mut entries: Vec<_> = std::fs::read_dir(dir).ok()?.flatten().collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for e in &entries {
        let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if meta.is_file() && meta.permissions().mode() & 0o200 != 0 {
            return Some(e.path());
        }
    }
    if depth == 0 {
        return None;
    }
    for e in &entries {
        if e.file_type().is_ok_and(|t| t.is_dir())
            && let Some(p) = first_writable(&e.path(), depth - 1)
        {
            return Some(p);
        }
    }
    None
}

fn proc_tree_open_write(dir: &str, preferred: Option<&str>) -> Outcome {
    if let Some(p) = preferred
        && std::path::Path::new(p).exists()
    {
        return open_proc_for_write(p);
    }
    match first_writable(std::path::Path::new(dir), 3) {
        Some(p) => open_proc_for_write(&p.to_string_lossy()),
        None if std::path::Path::new(dir).exists() => {
            NotApplicable(format!("no owner-writable file under {dir}"))
        }
        None => Denied(libc::ENOENT, dir.to_owned()),
    }
}

// --------------------------------------------------------------- cross-process

fn parent() -> Option<i32> {
    let p = sys::getppid();
    (p > 0).then_some(p)
}

/// `pid`, unless it is this very process (then there is no other process to
/// reach).
fn other(pid: Option<i32>) -> Result<i32, Outcome> {
    match pid {
        Some(p) if p == sys::getpid() => {
            Err(NotApplicable("the target is this process itself".into()))
        }
        Some(p) => Ok(p),
        None => Err(NotApplicable("no parent inside this pid namespace".into())),
    }
}

fn mem_open_write(pid: Option<i32>) -> Outcome {
    match other(pid) {
        Ok(p) => open_proc_for_write(&format!("/proc/{p}/mem")),
        Err(o) => o,
    }
}

fn vm_write(pid: Option<i32>) -> Outcome {
    match other(pid) {
        Ok(p) => sys(sys::process_vm_write_same(p)),
        Err(o) => o,
    }
}

fn ptrace(pid: Option<i32>) -> Outcome {
    match other(pid) {
        Ok(p) => sys(sys::ptrace_seize(p)),
        Err(o) => o,
    }
}

// ------------------------------------------------------------------- terminal

const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541C;
const HIGH_BITS: u64 = 1 << 32;

fn tty_ioctl(request: u64, mut arg: c_int, classify: fn(Sys) -> Outcome) -> Outcome {
    let (_master, slave) = match sys::own_pty() {
        Ok(p) => p,
        Err((step, e)) => return Denied(e, step.into()),
    };
    let outcome = classify(sys::ioctl_raw(slave.as_fd(), request, &mut arg));
    // Closing the terminal would hang up this session (SIGHUP) before the
    // result is reported; the descriptors close when the attempt exits.
    std::mem::forget((_master, slave));
    outcome
}

// ----------------------------------------------------------------------- exec

const MARKER_ARGV: [&CStr; 2] = [c"splash-escape-probe", c"marker"];

fn own_image() -> Result<Vec<u8>, Outcome> {
    std::fs::read("/proc/self/exe").map_err(|e| Denied(io_errno(&e), "read own image".into()))
}

/// A read-only descriptor of the same file, so no writable descriptor is
/// left that would make exec fail with ETXTBSY.
fn reopen_read_only(f: &OwnedFd) -> Result<OwnedFd, i32> {
    sys::open(
        &cs(&format!("/proc/self/fd/{}", f.as_raw_fd())),
        libc::O_RDONLY,
        0,
    )
}

#[derive(Clone, Copy)]
enum MemfdRoute {
    Fexecve,
    ProcSelfFd,
    ExecveatEmpty,
}

fn exec_memfd(route: MemfdRoute) -> Outcome {
    let image = match own_image() {
        Ok(i) => i,
        Err(o) => return o,
    };
    let mfd = match sys::memfd_create(c"splash-battery", libc::MFD_CLOEXEC) {
        Ok(f) => f,
        Err(e) => return Denied(e, "memfd_create".into()),
    };
    let mut file = std::fs::File::from(mfd);
    if let Err(e) = file.write_all(&image) {
        return Denied(io_errno(&e), "write".into());
    }
    let ro = match reopen_read_only(&OwnedFd::from(file)) {
        Ok(f) => f,
        Err(e) => return Denied(e, "reopen".into()),
    };
    let e = match route {
        MemfdRoute::Fexecve => sys::fexecve(ro.as_fd(), &MARKER_ARGV),
        MemfdRoute::ProcSelfFd => sys::execveat(
            libc::AT_FDCWD,
            &cs(&format!("/proc/self/fd/{}", ro.as_raw_fd())),
            &MARKER_ARGV,
            0,
        ),
        MemfdRoute::ExecveatEmpty => {
            sys::execveat(ro.as_raw_fd(), c"", &MARKER_ARGV, libc::AT_EMPTY_PATH)
        }
    };
    Denied(e, "exec".into())
}

/// Writes a copy of the probe into `dir` and executes it; on success the
/// copy replaces this process and exits with the marker status.
fn exec_copy_in(dir: &str) -> Outcome {
    let image = match own_image() {
        Ok(i) => i,
        Err(o) => return o,
    };
    let path = format!(
        "{}/splash-battery-exec-{}",
        dir.trim_end_matches('/'),
        sys::getpid()
    );
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o755)
        .open(&path)
        .and_then(|mut f| f.write_all(&image));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&path);
        return Denied(io_errno(&e), format!("write {dir}"));
    }
    let e = sys::execveat(libc::AT_FDCWD, &cs(&path), &MARKER_ARGV, 0);
    let _ = std::fs::remove_file(&path);
    Denied(e, format!("exec from {dir}"))
}

/// Removes the copies an exec attempt in process `pid` left behind (a copy
/// that ran replaced the attempt's process before it could remove it).
pub fn remove_copies(pid: i32) {
    let mut dirs = writable_mounts();
    dirs.extend(["/tmp".to_owned(), "/dev/shm".to_owned()]);
    for dir in dirs {
        let _ = std::fs::remove_file(format!(
            "{}/splash-battery-exec-{pid}",
            dir.trim_end_matches('/')
        ));
    }
}

/// Directories mounted read-write in this mount namespace, except `/proc`.
fn writable_mounts() -> Vec<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut out: Vec<String> = info
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let point = f.get(4)?;
            let opts = f.get(5)?;
            let rw = opts.split(',').any(|o| o == "rw");
            (rw && !point.starts_with("/proc")).then(|| (*point).to_owned())
        })
        .filter(|p| std::path::Path::new(p).is_dir())
        .collect();
    out.sort();
    out.dedup();
    out
}

fn exec_from_writable_mounts() -> Outcome {
    let mounts = writable_mounts();
    if mounts.is_empty() {
        return Denied(libc::EROFS, "no writable mount".into());
    }
    let mut last = Denied(libc::EROFS, String::new());
    let mut tried = Vec::new();
    for m in &mounts {
        let o = exec_copy_in(m);
        tried.push(m.clone());
        // A write refused by the mount says less than an exec refused.
        let keep = match (&last, &o) {
            (_, Denied(e, _)) if *e != libc::EROFS && *e != libc::ENOENT => true,
            (Denied(e, _), _) => *e == libc::EROFS || *e == libc::ENOENT,
            _ => false,
        };
        if keep {
            last = o;
        }
    }
    match last {
        Denied(e, _) => Denied(e, format!("tried {}", tried.join(" "))),
        other => other,
    }
}

fn exec_otmpfile() -> Outcome {
    let image = match own_image() {
        Ok(i) => i,
        Err(o) => return o,
    };
    let f = match sys::open(c"/tmp", libc::O_TMPFILE | libc::O_RDWR, 0o755) {
        Ok(f) => f,
        Err(e) => return Denied(e, "O_TMPFILE".into()),
    };
    let mut file = std::fs::File::from(f);
    if let Err(e) = file.write_all(&image) {
        return Denied(io_errno(&e), "write".into());
    }
    let ro = match reopen_read_only(&OwnedFd::from(file)) {
        Ok(f) => f,
        Err(e) => return Denied(e, "reopen".into()),
    };
    let e = sys::execveat(ro.as_raw_fd(), c"", &MARKER_ARGV, libc::AT_EMPTY_PATH);
    Denied(e, "exec".into())
}

// --------------------------------------------------------------------- writes

fn write_file(path: &str) -> Outcome {
    let r = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .and_then(|mut f| f.write_all(b"splash battery\n"));
    match r {
        Ok(()) => {
            let _ = std::fs::remove_file(path);
            Worked(format!("created {path}"))
        }
        Err(e) => Denied(io_errno(&e), path.to_owned()),
    }
}

fn write_in_new_dir(dir: &str) -> Outcome {
    let created = std::fs::create_dir(dir).is_ok();
    let o = write_file(&format!("{dir}/splash-battery"));
    if created {
        let _ = std::fs::remove_dir(dir);
    }
    o
}

fn write_runtime_mount() -> Outcome {
    match std::fs::read_link("/proc/self/exe") {
        Ok(exe) => match exe.parent() {
            Some(dir) => write_file(&format!("{}/splash-battery-write", dir.display())),
            None => NotApplicable("the probe has no directory".into()),
        },
        Err(e) => Denied(io_errno(&e), "readlink /proc/self/exe".into()),
    }
}

/// Writes up to [`FILL_BOUND`] bytes into `dir` (created if missing) and
/// reports whether the bound was reached.
fn fill(dir: &str) -> Outcome {
    sys::ignore_sigxfsz();
    let _ = std::fs::create_dir(dir);
    let path = format!("{dir}/splash-battery-fill-{}", sys::getpid());
    let mut file = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) => return Denied(io_errno(&e), format!("create in {dir}")),
    };
    let chunk = vec![0x5au8; 1 << 20];
    let mut written: u64 = 0;
    let mut stopped = None;
    while written < FILL_BOUND {
        match file.write(&chunk) {
            Ok(0) => {
                stopped = Some(libc::ENOSPC);
                break;
            }
            Ok(n) => written += n as u64,
            Err(e) => {
                stopped = Some(io_errno(&e));
                break;
            }
        }
    }
    drop(file);
    let _ = std::fs::remove_file(&path);
    match stopped {
        None => Worked(format!("wrote {written} of {FILL_BOUND} bytes into {dir}")),
        Some(e) => Denied(
            e,
            format!("stopped after {written} of {FILL_BOUND} bytes in {dir}"),
        ),
    }
}

// ------------------------------------------------------------------ privilege

fn raise_hard_rlimit() -> Outcome {
    let nr_open: u64 = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1 << 20);
    let candidates = [
        (libc::RLIMIT_CORE as c_int, "core"),
        (libc::RLIMIT_MEMLOCK as c_int, "memlock"),
        (libc::RLIMIT_NOFILE as c_int, "nofile"),
        (libc::RLIMIT_FSIZE as c_int, "fsize"),
        (libc::RLIMIT_AS as c_int, "as"),
        (libc::RLIMIT_CPU as c_int, "cpu"),
        (libc::RLIMIT_MSGQUEUE as c_int, "msgqueue"),
    ];
    for (res, name) in candidates {
        let Ok((soft, hard)) = sys::getrlimit(res) else {
            continue;
        };
        if hard == libc::RLIM_INFINITY || (name == "nofile" && hard >= nr_open) {
            continue;
        }
        return match sys::setrlimit(res, soft, hard + 1) {
            Ok(_) => Worked(format!("raised the hard {name} limit above {hard}")),
            Err(e) => Denied(e, format!("hard {name} limit {hard}")),
        };
    }
    NotApplicable("no finite hard limit to raise".into())
}

/// An id that is neither `a` nor `b`.
fn other_id(a: u32) -> u32 {
    if a == 4242 { 4243 } else { 4242 }
}

/// Creates a file in `dir`, gives it the set-user-ID bit and removes it
/// again: it worked when the file was owned by uid 0 with the bit set (a
/// program anyone executing it would run as root, where the mount honours
/// it).
fn setuid_root_file(dir: &str) -> Outcome {
    let path = format!("{dir}/splash-battery-setuid");
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o755)
        .open(&path);
    if let Err(e) = created {
        return Denied(e.raw_os_error().unwrap_or(0), path);
    }
    let name = cs(&path);
    let outcome = match sys::chmod(&name, 0o4755).and_then(|_| sys::lstat(&name)) {
        Err(e) => Denied(e, path.clone()),
        Ok(st) if st.st_mode & libc::S_ISUID != 0 && st.st_uid == 0 => {
            Worked(format!("{path} is set-user-ID and owned by uid 0"))
        }
        Ok(st) => Denied(0, format!("{path} is owned by uid {}", st.st_uid)),
    };
    let _ = std::fs::remove_file(&path);
    outcome
}

fn mknod_somewhere() -> Outcome {
    let mut last = Denied(libc::EROFS, "no writable directory".into());
    for dir in ["/tmp", "/dev/shm", "/workspace/scratch", ""] {
        let path = format!("{dir}/splash-battery-null");
        match sys::mknod_char(&cs(&path)) {
            Ok(_) => {
                let _ = std::fs::remove_file(&path);
                return Worked(format!("created a character device at {path}"));
            }
            Err(e) if e == libc::EROFS || e == libc::ENOENT => last = Denied(e, path),
            Err(e) => return Denied(e, path),
        }
    }
    last
}

// -------------------------------------------------------------- device nodes

/// The nodes bwrap's `--dev` binds from the host.
pub const DEVICE_NODES: [&str; 6] = ["null", "zero", "full", "random", "urandom", "tty"];

/// Runs `change` on every `/dev` node (with its current `lstat`): it worked
/// when it worked on any node. Every change leaves the node as it was (its
/// own mode, times, owner), so a control that works harms nothing.
fn each_dev_node(change: fn(&CStr, &libc::stat) -> Sys) -> Outcome {
    let mut refused = None;
    for name in DEVICE_NODES {
        let path = cs(&format!("/dev/{name}"));
        let st = match sys::lstat(&path) {
            Ok(st) => st,
            Err(e) => {
                refused.get_or_insert((e, format!("/dev/{name}")));
                continue;
            }
        };
        match change(&path, &st) {
            Ok(_) => return Worked(format!("/dev/{name} (owner {})", st.st_uid)),
            Err(e) => {
                refused.get_or_insert((e, format!("/dev/{name} (owner {})", st.st_uid)));
            }
        }
    }
    match refused {
        Some((e, what)) => Denied(e, what),
        None => NotApplicable("no device nodes".into()),
    }
}

fn dev_chmod(path: &CStr, st: &libc::stat) -> Sys {
    sys::chmod(path, st.st_mode & 0o7777)
}

fn dev_chown(path: &CStr, _: &libc::stat) -> Sys {
    let (uid, gid) = sys::ids();
    sys::fchown_path(path, uid, gid)
}

fn dev_utimes(path: &CStr, st: &libc::stat) -> Sys {
    let at = |sec, nsec| libc::timespec {
        tv_sec: sec,
        tv_nsec: nsec,
    };
    sys::utimensat(
        path,
        [
            at(st.st_atime, st.st_atime_nsec),
            at(st.st_mtime, st.st_mtime_nsec),
        ],
    )
}

/// A POSIX access ACL with exactly the node's mode (`system.posix_acl_access`
/// version 2: owner, group, other); the kernel stores it as that mode.
fn dev_acl(path: &CStr, st: &libc::stat) -> Sys {
    let mut acl = 2u32.to_le_bytes().to_vec();
    for (tag, shift) in [(0x01u16, 6), (0x04, 3), (0x20, 0)] {
        acl.extend(tag.to_le_bytes());
        acl.extend(((st.st_mode >> shift) as u16 & 7).to_le_bytes());
        acl.extend(u32::MAX.to_le_bytes());
    }
    sys::lsetxattr(path, c"system.posix_acl_access", &acl)
}

/// What the worker sees of its `/dev` nodes and whether they work, as one
/// JSON object: per node its owner, `major:minor`, and whether the node did
/// what it is for (`null` and `full` take a write, `null` with success and
/// `full` with `ENOSPC`; `zero` reads zeros; `random` and `urandom` read).
pub fn device_report() -> String {
    let mut out = Vec::new();
    for name in DEVICE_NODES {
        let path = cs(&format!("/dev/{name}"));
        let Ok(st) = sys::lstat(&path) else {
            out.push(format!("{}:null", json::string(name)));
            continue;
        };
        let rdev = format!("{}:{}", libc::major(st.st_rdev), libc::minor(st.st_rdev));
        let works = match name {
            "null" | "full" => {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(format!("/dev/{name}"));
                match (name, f.map(|mut f| f.write(b"x"))) {
                    ("null", Ok(Ok(1))) => "true".to_owned(),
                    ("full", Ok(Err(e))) if e.raw_os_error() == Some(libc::ENOSPC) => {
                        "true".to_owned()
                    }
                    _ => "false".to_owned(),
                }
            }
            "zero" | "random" | "urandom" => {
                let mut buf = [1u8; 16];
                let read = std::fs::File::open(format!("/dev/{name}"))
                    .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut buf));
                (read.is_ok() && (name != "zero" || buf == [0; 16])).to_string()
            }
            _ => "null".to_owned(),
        };
        out.push(format!(
            "{}:{{\"uid\":{},\"gid\":{},\"rdev\":{},\"works\":{works}}}",
            json::string(name),
            st.st_uid,
            st.st_gid,
            json::string(&rdev)
        ));
    }
    format!("{{\"devices\":{{{}}}}}", out.join(","))
}

// ----------------------------------------------------------------------- pid 1

/// `name: value` lines of `/proc/PID/status`.
fn status_field(status: &str, name: &str) -> Option<String> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(|v| v.trim().to_owned())
}

fn limit_value(s: &str) -> u64 {
    if s == "unlimited" {
        u64::MAX
    } else {
        s.parse().unwrap_or(u64::MAX)
    }
}

/// (name, soft, hard) rows of `/proc/PID/limits`.
fn limits(text: &str) -> Vec<(String, u64, u64)> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let name = l.get(..26)?.trim().to_owned();
            let mut f = l.get(26..)?.split_whitespace();
            Some((name, limit_value(f.next()?), limit_value(f.next()?)))
        })
        .collect()
}

/// `NoNewPrivs` of `/proc/self/status`, read with `openat` and `read` only
/// (a strict allowlist need not list `prctl` or `statx`). A status that
/// cannot be read counts as reached: the flag must be shown to be set,
/// never assumed.
fn keep_new_privileges() -> Outcome {
    let fd = match sys::open(c"/proc/self/status", libc::O_RDONLY | libc::O_CLOEXEC, 0) {
        Ok(fd) => fd,
        Err(e) => return Reached(e, "/proc/self/status unreadable".into()),
    };
    let mut status = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match sys::read(fd.as_fd(), &mut chunk) {
            Ok(0) => break,
            Ok(n) => status.extend_from_slice(&chunk[..usize::try_from(n).unwrap_or(0)]),
            Err(e) => return Reached(e, "/proc/self/status unreadable".into()),
        }
    }
    let status = String::from_utf8_lossy(&status);
    match status_field(&status, "NoNewPrivs").as_deref() {
        Some("1") => Denied(0, "NoNewPrivs 1".into()),
        Some("0") => Worked("NoNewPrivs 0: an exec can gain privileges".into()),
        other => Reached(0, format!("NoNewPrivs {other:?}")),
    }
}

fn pid1_weaker() -> Outcome {
    let read = |p: &str| std::fs::read_to_string(p).map_err(|e| io_errno(&e));
    let (own_status, own_limits) = match (read("/proc/self/status"), read("/proc/self/limits")) {
        (Ok(s), Ok(l)) => (s, l),
        (Err(e), _) | (_, Err(e)) => return Denied(e, "own status".into()),
    };
    let (one_status, one_limits) = match (read("/proc/1/status"), read("/proc/1/limits")) {
        (Ok(s), Ok(l)) => (s, l),
        (Err(e), _) | (_, Err(e)) => return Denied(e, "/proc/1 unreadable".into()),
    };
    let num =
        |s: &str, f: &str| -> u64 { status_field(s, f).and_then(|v| v.parse().ok()).unwrap_or(0) };
    let hex = |s: &str, f: &str| -> u64 {
        status_field(s, f)
            .and_then(|v| u64::from_str_radix(&v, 16).ok())
            .unwrap_or(0)
    };
    let mut weaker = Vec::new();
    for f in ["Seccomp", "Seccomp_filters", "NoNewPrivs"] {
        if num(&one_status, f) < num(&own_status, f) {
            weaker.push(format!(
                "{f} {} < {}",
                num(&one_status, f),
                num(&own_status, f)
            ));
        }
    }
    for f in ["CapBnd", "CapPrm", "CapEff"] {
        if hex(&one_status, f) & !hex(&own_status, f) != 0 {
            weaker.push(format!("{f} wider"));
        }
    }
    let own = limits(&own_limits);
    for (name, soft, hard) in limits(&one_limits) {
        if let Some((_, s, h)) = own.iter().find(|(n, _, _)| *n == name)
            && (soft > *s || hard > *h)
        {
            weaker.push(format!("{name} higher"));
        }
    }
    let name = status_field(&one_status, "Name").unwrap_or_default();
    let own_name = status_field(&own_status, "Name").unwrap_or_default();
    if name != own_name {
        // The worker chain execs in place, so pid 1 carries the worker's
        // name; anything else is another program in the sandbox.
        weaker.push(format!("pid 1 is `{name}`, not the worker `{own_name}`"));
    }
    if weaker.is_empty() {
        Denied(
            0,
            format!("pid 1 ({name}; this process is {own_name}) is no weaker"),
        )
    } else {
        Worked(format!("pid 1 ({name}) is weaker: {}", weaker.join(", ")))
    }
}

fn names_host_path(ctx: &Ctx, file: &str) -> Outcome {
    let Some(host) = &ctx.host_path else {
        return NotApplicable("no host path given".into());
    };
    match std::fs::read(file) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes).replace('\0', " ");
            if text.contains(host.as_str()) {
                Worked(format!("{file} names the host path {host}"))
            } else {
                Denied(0, format!("{file} does not name the host path"))
            }
        }
        Err(e) => Denied(io_errno(&e), file.to_owned()),
    }
}

// ------------------------------------------------------------------- leakage

fn fd_leak(ctx: &Ctx) -> Outcome {
    let numbers: Vec<i32> = match std::fs::read_dir("/proc/self/fd") {
        Ok(d) => d
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect(),
        Err(e) => return Denied(io_errno(&e), "/proc/self/fd".into()),
    };
    let mut leaked: Vec<String> = numbers
        .into_iter()
        .filter(|n| *n > 2 && Some(*n) != ctx.report_fd)
        .filter_map(|n| {
            let target = std::fs::read_link(format!("/proc/self/fd/{n}")).ok()?;
            Some(format!("{n} -> {}", target.display()))
        })
        .collect();
    leaked.sort();
    if leaked.is_empty() {
        Denied(0, "only 0, 1 and 2 are open".into())
    } else {
        Worked(format!("inherited descriptors: {}", leaked.join(", ")))
    }
}

/// Every variable but `PWD` naming the working directory, which bwrap sets
/// itself inside the sandbox.
fn env_leak() -> Outcome {
    let cwd = std::env::current_dir().ok();
    let mut names: Vec<String> = std::env::vars_os()
        .filter(|(k, v)| !(k == "PWD" && cwd.as_deref() == Some(std::path::Path::new(v))))
        .map(|(k, _)| k.to_string_lossy().into_owned())
        .collect();
    names.sort();
    if names.is_empty() {
        Denied(0, "the environment is empty".into())
    } else {
        Worked(format!("environment variables: {}", names.join(", ")))
    }
}

// ---------------------------------------------------------------------- host

fn tcp_host(ctx: &Ctx) -> Outcome {
    let Some(port) = ctx.port else {
        return NotApplicable("no host port given".into());
    };
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    match std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(3)) {
        Ok(_) => Worked(format!("connected to the host listener on port {port}")),
        Err(e) => Denied(io_errno(&e), String::new()),
    }
}

fn abstract_host(ctx: &Ctx) -> Outcome {
    use std::os::linux::net::SocketAddrExt;
    let Some(name) = &ctx.abstract_name else {
        return NotApplicable("no abstract socket given".into());
    };
    let addr = match std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()) {
        Ok(a) => a,
        Err(e) => return Denied(io_errno(&e), "address".into()),
    };
    match std::os::unix::net::UnixStream::connect_addr(&addr) {
        Ok(_) => Worked(format!("connected to the host abstract socket @{name}")),
        Err(e) => Denied(io_errno(&e), String::new()),
    }
}

fn kill_host(ctx: &Ctx) -> Outcome {
    let Some(canary) = ctx.canary else {
        return NotApplicable("no canary given".into());
    };
    if ctx.control {
        let r = sys::kill(canary, libc::SIGKILL);
        Sent(format!("kill({canary}, SIGKILL) = {}", show(r)))
    } else {
        let r = sys::kill(-1, libc::SIGKILL);
        Sent(format!("kill(-1, SIGKILL) = {}", show(r)))
    }
}

fn show(r: Sys) -> String {
    match r {
        Ok(v) => v.to_string(),
        Err(e) => json::errno_name(e).to_owned(),
    }
}

macro_rules! attempt {
    ($name:literal, $group:literal, $what:literal, [$($layer:expr),*], $control:ident, $run:expr) => {
        Attempt {
            name: $name,
            group: $group,
            what: $what,
            layers: &[$($layer),*],
            control: Control::$control,
            run: $run,
        }
    };
}

/// Every attempt, in the order they run. The signal attempt is last: where
/// it is not stopped it kills everything it can reach.
pub static ATTEMPTS: &[Attempt] = &[
    // Namespaces.
    attempt!(
        "unshare-user",
        "namespaces",
        "unshare(CLONE_NEWUSER)",
        [SECCOMP, USERNS],
        Contained,
        |_| unshare(libc::CLONE_NEWUSER)
    ),
    attempt!(
        "unshare-user-mount",
        "namespaces",
        "unshare(CLONE_NEWUSER | CLONE_NEWNS)",
        [SECCOMP, USERNS],
        Contained,
        |_| unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS)
    ),
    attempt!(
        "unshare-user-net",
        "namespaces",
        "unshare(CLONE_NEWUSER | CLONE_NEWNET)",
        [SECCOMP, USERNS],
        Contained,
        |_| unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET)
    ),
    attempt!(
        "unshare-user-pid",
        "namespaces",
        "unshare(CLONE_NEWUSER | CLONE_NEWPID)",
        [SECCOMP, USERNS],
        Contained,
        |_| unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWPID)
    ),
    attempt!(
        "unshare-mount",
        "namespaces",
        "unshare(CLONE_NEWNS) without a user namespace",
        [CAP, SECCOMP],
        Contained,
        |_| unshare(libc::CLONE_NEWNS)
    ),
    attempt!(
        "unshare-net",
        "namespaces",
        "unshare(CLONE_NEWNET) without a user namespace",
        [CAP, SECCOMP],
        Contained,
        |_| unshare(libc::CLONE_NEWNET)
    ),
    attempt!(
        "unshare-pid",
        "namespaces",
        "unshare(CLONE_NEWPID) without a user namespace",
        [CAP, SECCOMP],
        Contained,
        |_| unshare(libc::CLONE_NEWPID)
    ),
    attempt!(
        "clone-newuser",
        "namespaces",
        "clone(CLONE_NEWUSER)",
        [SECCOMP, USERNS],
        Contained,
        |_| ns(sys::clone_and_reap(libc::CLONE_NEWUSER))
    ),
    attempt!(
        "clone-newuser-newns",
        "namespaces",
        "clone(CLONE_NEWUSER | CLONE_NEWNS)",
        [SECCOMP, USERNS],
        Contained,
        |_| ns(sys::clone_and_reap(libc::CLONE_NEWUSER | libc::CLONE_NEWNS))
    ),
    attempt!(
        "clone3-newuser",
        "namespaces",
        "clone3(CLONE_NEWUSER)",
        [SECCOMP, USERNS],
        Contained,
        |_| ns(sys::clone3_and_reap(libc::CLONE_NEWUSER as u64))
    ),
    attempt!(
        "clone3-newuser-newnet",
        "namespaces",
        "clone3(CLONE_NEWUSER | CLONE_NEWNET)",
        [SECCOMP, USERNS],
        Contained,
        |_| ns(sys::clone3_and_reap(
            (libc::CLONE_NEWUSER | libc::CLONE_NEWNET) as u64
        ))
    ),
    attempt!(
        "setns-net",
        "namespaces",
        "setns into a network namespace",
        [CAP, SECCOMP],
        Contained,
        |_| setns_own("net", libc::CLONE_NEWNET)
    ),
    attempt!(
        "setns-mnt",
        "namespaces",
        "setns into a mount namespace",
        [CAP, SECCOMP],
        Contained,
        |_| setns_own("mnt", libc::CLONE_NEWNS)
    ),
    // Host device nodes in /dev (a root host's worker is their owner).
    attempt!(
        "dev-node-chmod",
        "device nodes",
        "chmod a /dev node (to its own mode)",
        [DEVNODES, IDENTITY],
        CapDropped,
        |_| each_dev_node(dev_chmod)
    ),
    attempt!(
        "dev-node-utimensat",
        "device nodes",
        "utimensat a /dev node to explicit times (its own)",
        [DEVNODES, IDENTITY],
        CapDropped,
        |_| each_dev_node(dev_utimes)
    ),
    attempt!(
        "dev-node-fchown",
        "device nodes",
        "fchown a /dev node to the worker's uid and gid",
        [DEVNODES, IDENTITY],
        CapDropped,
        |_| each_dev_node(dev_chown)
    ),
    attempt!(
        "dev-node-acl",
        "device nodes",
        "setxattr system.posix_acl_access on a /dev node (its own mode)",
        [DEVNODES, IDENTITY],
        CapDropped,
        |_| each_dev_node(dev_acl)
    ),
    // Old and new mount API.
    attempt!(
        "mount-tmpfs",
        "mounts",
        "mount(tmpfs) over /dev",
        [CAP, SECCOMP],
        Contained,
        |_| mount_tmpfs()
    ),
    attempt!(
        "mount-bind-root",
        "mounts",
        "mount(/, /dev, MS_BIND | MS_REC)",
        [CAP, SECCOMP],
        Contained,
        |_| mount_bind_root()
    ),
    attempt!(
        "umount-proc",
        "mounts",
        "umount2(/proc, MNT_DETACH)",
        [CAP, SECCOMP],
        Contained,
        |_| sys(sys::umount2(c"/proc", libc::MNT_DETACH))
    ),
    attempt!(
        "pivot-root",
        "mounts",
        "pivot_root(/, /)",
        [CAP, SECCOMP],
        Contained,
        |_| sys(sys::pivot_root(c"/", c"/"))
    ),
    attempt!("chroot", "mounts", "chroot(/)", [CAP], Contained, |_| sys(
        sys::chroot(c"/")
    )),
    attempt!(
        "fsopen",
        "mounts",
        "fsopen(tmpfs)",
        [CAP, SECCOMP],
        Contained,
        |_| fd(sys::fsopen(c"tmpfs"))
    ),
    attempt!(
        "open-tree",
        "mounts",
        "open_tree(/, OPEN_TREE_CLONE)",
        [CAP, SECCOMP],
        Contained,
        |_| fd(sys::open_tree_clone(c"/"))
    ),
    attempt!(
        "move-mount",
        "mounts",
        "move_mount onto /tmp",
        [CAP, SECCOMP],
        Contained,
        |_| sys(sys::move_mount_invalid(c"/tmp"))
    ),
    attempt!(
        "mount-setattr",
        "mounts",
        "mount_setattr(/, MOUNT_ATTR_NOSUID)",
        [CAP, SECCOMP],
        Contained,
        |_| sys(sys::mount_setattr(c"/", 0x2))
    ),
    attempt!(
        "open-by-handle-at",
        "mounts",
        "open_by_handle_at with a forged handle",
        [CAP, SECCOMP],
        Contained,
        |_| open_by_handle()
    ),
    // Kernel knobs under /proc and /sys.
    attempt!(
        "sysctl-write-same-value",
        "kernel surfaces",
        "write /proc/sys/fs/lease-break-time (the value read)",
        [PROC, IDENTITY],
        Contained,
        |_| sysctl_write_same()
    ),
    attempt!(
        "core-pattern-open-write",
        "kernel surfaces",
        "open /proc/sys/kernel/core_pattern for writing",
        [PROC, IDENTITY],
        Contained,
        |_| open_proc_for_write("/proc/sys/kernel/core_pattern")
    ),
    attempt!(
        "drop-caches-open-write",
        "kernel surfaces",
        "open /proc/sys/vm/drop_caches for writing",
        [PROC, IDENTITY],
        Contained,
        |_| open_proc_for_write("/proc/sys/vm/drop_caches")
    ),
    attempt!(
        "sysrq-trigger-open-write",
        "kernel surfaces",
        "open /proc/sysrq-trigger for writing",
        [PROC, IDENTITY],
        Contained,
        |_| open_proc_for_write("/proc/sysrq-trigger")
    ),
    attempt!(
        "proc-irq-open-write",
        "kernel surfaces",
        "open a /proc/irq file for writing",
        [PROC, IDENTITY],
        Contained,
        |_| proc_tree_open_write("/proc/irq", Some("/proc/irq/default_smp_affinity"))
    ),
    attempt!(
        "proc-bus-open-write",
        "kernel surfaces",
        "open a /proc/bus file for writing",
        [PROC, IDENTITY],
        Contained,
        |_| proc_tree_open_write("/proc/bus", None)
    ),
    attempt!(
        "proc-fs-open-write",
        "kernel surfaces",
        "open a /proc/fs file for writing",
        [PROC, IDENTITY],
        Contained,
        |_| proc_tree_open_write("/proc/fs", None)
    ),
    attempt!(
        "sys-thp-open-write",
        "kernel surfaces",
        "open /sys/kernel/mm/transparent_hugepage/enabled for writing",
        [NS],
        Contained,
        |_| open_for_write("/sys/kernel/mm/transparent_hugepage/enabled")
    ),
    // Kernel interfaces.
    attempt!(
        "bpf-map-create",
        "kernel interfaces",
        "bpf(BPF_MAP_CREATE)",
        [CAP, SECCOMP],
        Contained,
        |_| fd(sys::bpf_map_create())
    ),
    attempt!(
        "perf-event-open",
        "kernel interfaces",
        "perf_event_open of our own CPU clock",
        [SECCOMP],
        Contained,
        |_| fd(sys::perf_event_open_self())
    ),
    attempt!(
        "userfaultfd",
        "kernel interfaces",
        "userfaultfd(UFFD_USER_MODE_ONLY)",
        [SECCOMP],
        Contained,
        |_| fd(sys::userfaultfd())
    ),
    attempt!(
        "io-uring-setup",
        "kernel interfaces",
        "io_uring_setup",
        [SECCOMP],
        Contained,
        |_| fd(sys::io_uring_setup())
    ),
    attempt!(
        "kexec-load",
        "kernel interfaces",
        "kexec_load (invalid architecture)",
        [CAP, SECCOMP],
        Contained,
        |_| sys(sys::kexec_load_invalid())
    ),
    attempt!(
        "init-module",
        "kernel interfaces",
        "init_module (empty image)",
        [CAP, SECCOMP],
        Contained,
        |_| sys(sys::init_module_empty())
    ),
    attempt!(
        "finit-module",
        "kernel interfaces",
        "finit_module (invalid descriptor)",
        [CAP, SECCOMP],
        Contained,
        |_| sys(sys::finit_module_invalid())
    ),
    attempt!(
        "delete-module",
        "kernel interfaces",
        "delete_module (no such module)",
        [CAP, SECCOMP],
        Contained,
        |_| sys(sys::delete_module_missing())
    ),
    attempt!(
        "reboot",
        "kernel interfaces",
        "reboot (invalid magic)",
        [CAP, SECCOMP],
        Contained,
        |_| sys(sys::reboot_invalid_magic())
    ),
    attempt!(
        "keyctl",
        "kernel interfaces",
        "keyctl(KEYCTL_GET_KEYRING_ID, session)",
        [SECCOMP],
        Contained,
        |_| sys(sys::keyctl_session_keyring())
    ),
    attempt!(
        "add-key",
        "kernel interfaces",
        "add_key into the process keyring",
        [SECCOMP],
        Contained,
        |_| sys(sys::add_key_process())
    ),
    attempt!(
        "request-key",
        "kernel interfaces",
        "request_key (no such key)",
        [SECCOMP],
        Contained,
        |_| sys(sys::request_key_missing())
    ),
    attempt!(
        "personality",
        "kernel interfaces",
        "personality(ADDR_NO_RANDOMIZE)",
        [SECCOMP],
        Contained,
        |_| sys(sys::personality(0x0040000))
    ),
    attempt!(
        "syslog",
        "kernel interfaces",
        "syslog(SYSLOG_ACTION_SIZE_BUFFER)",
        [CAP, SECCOMP],
        Contained,
        |_| sys(sys::syslog_size())
    ),
    attempt!(
        "swapon",
        "kernel interfaces",
        "swapon (no such file)",
        [CAP, SECCOMP],
        Contained,
        |_| sys(sys::swapon(c"/splash-battery-no-swap"))
    ),
    attempt!(
        "iopl",
        "kernel interfaces",
        "iopl(3)",
        [CAP, SECCOMP],
        Contained,
        |_| sys(sys::iopl(3))
    ),
    // Other processes.
    attempt!(
        "ptrace-parent",
        "cross-process",
        "PTRACE_SEIZE of the parent",
        [SECCOMP],
        Contained,
        |_| ptrace(parent())
    ),
    attempt!(
        "ptrace-pid1",
        "cross-process",
        "PTRACE_SEIZE of pid 1",
        [SECCOMP],
        Contained,
        |_| ptrace(Some(1))
    ),
    attempt!(
        "proc-pid1-mem-open-write",
        "cross-process",
        "open /proc/1/mem for writing",
        [PROC, IDENTITY],
        Contained,
        |_| mem_open_write(Some(1))
    ),
    attempt!(
        "proc-parent-mem-open-write",
        "cross-process",
        "open /proc/PARENT/mem for writing",
        [PROC],
        Contained,
        |_| mem_open_write(parent())
    ),
    attempt!(
        "process-vm-writev-pid1",
        "cross-process",
        "process_vm_writev into pid 1 (same bytes)",
        [SECCOMP],
        Contained,
        |_| vm_write(Some(1))
    ),
    attempt!(
        "process-vm-writev-parent",
        "cross-process",
        "process_vm_writev into the parent (same bytes)",
        [SECCOMP],
        Contained,
        |_| vm_write(parent())
    ),
    attempt!(
        "pidfd-getfd-parent",
        "cross-process",
        "pidfd_getfd of the parent's stdout",
        [SECCOMP],
        Contained,
        |_| match parent() {
            Some(p) => fd(sys::pidfd_getfd(p, 1)),
            None => NotApplicable("no parent inside this pid namespace".into()),
        }
    ),
    // Terminals.
    attempt!(
        "tiocsti",
        "terminal",
        "TIOCSTI on a controlling pty",
        [SECCOMP],
        Contained,
        |_| tty_ioctl(TIOCSTI, c_int::from(b'x'), only_success)
    ),
    attempt!(
        "tiocsti-high-bits",
        "terminal",
        "TIOCSTI | 1 << 32 on a controlling pty",
        [SECCOMP],
        Contained,
        |_| tty_ioctl(TIOCSTI | HIGH_BITS, c_int::from(b'x'), only_success)
    ),
    attempt!(
        "tioclinux",
        "terminal",
        "TIOCLINUX on a controlling pty",
        [SECCOMP],
        Contained,
        |_| tty_ioctl(TIOCLINUX, 0, sys)
    ),
    attempt!(
        "tioclinux-high-bits",
        "terminal",
        "TIOCLINUX | 1 << 32 on a controlling pty",
        [SECCOMP],
        Contained,
        |_| tty_ioctl(TIOCLINUX | HIGH_BITS, 0, sys)
    ),
    // Other ABIs.
    attempt!(
        "x32-getpid",
        "abi",
        "getpid through the x32 ABI",
        [SECCOMP],
        Contained,
        |_| x32(39, 0)
    ),
    attempt!(
        "x32-unshare-user",
        "abi",
        "unshare(CLONE_NEWUSER) through the x32 ABI",
        [SECCOMP, USERNS],
        Contained,
        |_| x32(272, libc::c_long::from(libc::CLONE_NEWUSER))
    ),
    // Exec outside the allowlist.
    attempt!(
        "exec-memfd-fexecve",
        "exec",
        "memfd_create + fexecve of a copy",
        [LANDLOCK],
        Contained,
        |_| exec_memfd(MemfdRoute::Fexecve)
    ),
    attempt!(
        "exec-memfd-proc-self-fd",
        "exec",
        "memfd_create + execve(/proc/self/fd/N)",
        [LANDLOCK],
        Contained,
        |_| exec_memfd(MemfdRoute::ProcSelfFd)
    ),
    attempt!(
        "exec-memfd-execveat",
        "exec",
        "memfd_create + execveat(fd, \"\", AT_EMPTY_PATH)",
        [LANDLOCK],
        Contained,
        |_| exec_memfd(MemfdRoute::ExecveatEmpty)
    ),
    attempt!(
        "exec-tmp-copy",
        "exec",
        "a copy written to /tmp",
        [LANDLOCK],
        Contained,
        |_| exec_copy_in("/tmp")
    ),
    attempt!(
        "exec-dev-shm-copy",
        "exec",
        "a copy written to /dev/shm",
        [LANDLOCK],
        Contained,
        |_| exec_copy_in("/dev/shm")
    ),
    attempt!(
        "exec-writable-mounts",
        "exec",
        "a copy written to each writable mount",
        [LANDLOCK],
        Contained,
        |_| exec_from_writable_mounts()
    ),
    attempt!(
        "exec-o-tmpfile",
        "exec",
        "an O_TMPFILE copy in /tmp, execveat(AT_EMPTY_PATH)",
        [LANDLOCK],
        Contained,
        |_| exec_otmpfile()
    ),
    // Writes outside the roots.
    attempt!(
        "write-root",
        "writes",
        "create a file in /",
        [WRITES],
        Contained,
        |_| write_file("/splash-battery")
    ),
    attempt!(
        "write-etc",
        "writes",
        "create a file in /etc",
        [WRITES],
        Contained,
        |_| write_in_new_dir("/etc")
    ),
    attempt!(
        "write-dev-shm",
        "writes",
        "create a file in /dev/shm",
        [WRITES],
        Contained,
        |_| write_file("/dev/shm/splash-battery")
    ),
    attempt!(
        "write-runtime-mount",
        "writes",
        "create a file next to the worker",
        [NS],
        Contained,
        |_| write_runtime_mount()
    ),
    attempt!(
        "fill-tmp",
        "writes",
        "write 128 MiB into /tmp",
        [TMP, RLIMITS],
        Contained,
        |_| fill("/tmp")
    ),
    attempt!(
        "fill-scratch",
        "writes",
        "write 128 MiB into the tmpfs root",
        [TMPFS, RLIMITS],
        Contained,
        |c| match &c.scratch {
            Some(s) => fill(s),
            None => NotApplicable("the policy has no tmpfs root".into()),
        }
    ),
    // Privilege.
    attempt!(
        "setuid-root-file",
        "privilege",
        "make a set-user-ID file owned by host uid 0 on a writable root (the tmpfs root, else /tmp)",
        [IDENTITY],
        Contained,
        |c| setuid_root_file(c.scratch.as_deref().unwrap_or("/tmp"))
    ),
    attempt!(
        "keep-new-privileges",
        "privilege",
        "run without no_new_privs, so that executing a set-user-id or file-capability program grants its privileges",
        [NNP],
        Unsandboxed,
        |_| keep_new_privileges()
    ),
    attempt!(
        "raise-hard-rlimit",
        "privilege",
        "raise a hard rlimit",
        [CAP],
        Contained,
        |_| raise_hard_rlimit()
    ),
    attempt!(
        "setuid-other",
        "privilege",
        "setuid to another id",
        [CAP],
        Contained,
        |_| only_success(sys::setuid(other_id(sys::ids().0)))
    ),
    attempt!(
        "setgid-other",
        "privilege",
        "setgid to another id",
        [CAP],
        Contained,
        |_| only_success(sys::setgid(other_id(sys::ids().1)))
    ),
    attempt!(
        "capset-sys-admin",
        "privilege",
        "capset CAP_SYS_ADMIN into the effective set",
        [CAP],
        Contained,
        |_| only_success(sys::capset(1 << 21))
    ),
    attempt!(
        "mknod-char",
        "privilege",
        "mknod a character device",
        [CAP],
        Contained,
        |_| mknod_somewhere()
    ),
    attempt!(
        "sethostname",
        "privilege",
        "sethostname",
        [CAP],
        Contained,
        |_| only_success(sys::sethostname(b"splash-battery"))
    ),
    attempt!(
        "nice-raise",
        "privilege",
        "setpriority(-5)",
        [CAP],
        Contained,
        |_| only_success(sys::setpriority_self(-5))
    ),
    attempt!(
        "packet-socket",
        "privilege",
        "socket(AF_PACKET, SOCK_RAW)",
        [CAP],
        Contained,
        |_| fd_only(sys::socket(libc::AF_PACKET, libc::SOCK_RAW, 0))
    ),
    // Pid 1 and what the sandbox shows of the host.
    attempt!(
        "pid1-weaker",
        "pid 1",
        "pid 1 is another program than the worker, or has fewer seccomp filters, higher rlimits or more capabilities",
        [PID1],
        Contained,
        |_| pid1_weaker()
    ),
    attempt!(
        "pid1-cmdline-host-path",
        "pid 1",
        "/proc/1/cmdline names a host path",
        [PID1],
        Contained,
        |c| names_host_path(c, "/proc/1/cmdline")
    ),
    attempt!(
        "mountinfo-host-path",
        "pid 1",
        "/proc/self/mountinfo names a host path",
        [],
        Contained,
        |c| names_host_path(c, "/proc/self/mountinfo")
    ),
    // Leakage.
    attempt!(
        "fd-leak",
        "leakage",
        "descriptors above 2 inherited from the host",
        [HYGIENE],
        Contained,
        fd_leak
    ),
    attempt!(
        "env-leak",
        "leakage",
        "any environment variable",
        [HYGIENE],
        Contained,
        |_| env_leak()
    ),
    // The host.
    attempt!(
        "tcp-host-loopback",
        "host",
        "connect to a host loopback TCP listener",
        [NS],
        HostShared,
        tcp_host
    ),
    attempt!(
        "abstract-socket-host",
        "host",
        "connect to a host abstract unix socket",
        [NS],
        HostShared,
        abstract_host
    ),
    attempt!(
        "kill-host-canary",
        "host",
        "kill(-1, SIGKILL) must not reach a host canary",
        [NS, IDENTITY],
        HostShared,
        kill_host
    ),
];
