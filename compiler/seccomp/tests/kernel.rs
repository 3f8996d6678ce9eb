//! Real-kernel tests: the compiled program for this host is installed in a
//! forked child, and each guarded syscall is shown to fail the way the rule
//! set says (EPERM, ENOSYS, or SIGSYS process kill). Every denial is paired
//! with a control run of the same call in a child without the filter,
//! showing that the call does not fail that way on its own.

mod support;

use splash_seccomp::sys::{ChildOutcome, Prepared, exit_now, fork_probe, raw_syscall, wait_pid};
use splash_seccomp::{Arch, Profile, Program, compile};

const EPERM: i64 = libc::EPERM as i64;
const ENOSYS: i64 = libc::ENOSYS as i64;
const SIGSYS: i32 = libc::SIGSYS;
const CLONE_NEWUSER: u64 = libc::CLONE_NEWUSER as u64;
const SIGCHLD: u64 = libc::SIGCHLD as u64;
const TIOCSTI: u64 = libc::TIOCSTI;

fn program(profile: &Profile) -> Option<Program> {
    let arch = Arch::host()?;
    compile(profile, arch).ok()
}

/// The deny profile for this host, or `None` (after a loud skip) when the
/// host cannot install seccomp filters.
fn deny_program() -> Option<Program> {
    let Some(p) = program(&Profile::DenyKnownEscapeSurface) else {
        support::require_host(false, "a supported architecture");
        return None;
    };
    let prepared = Prepared::new(&p).expect("prepared");
    match fork_probe(Some(&prepared), getpid) {
        Ok(ChildOutcome::Returned(pid)) if pid > 0 => Some(p),
        other => {
            support::require_host(false, &format!("seccomp filter support ({other:?})"));
            None
        }
    }
}

fn under(p: &Program, probe: fn() -> i64) -> ChildOutcome {
    let prepared = Prepared::new(p).expect("prepared");
    fork_probe(Some(&prepared), probe).expect("fork")
}

fn without(probe: fn() -> i64) -> ChildOutcome {
    fork_probe(None, probe).expect("fork")
}

fn getpid() -> i64 {
    raw_syscall(libc::SYS_getpid, [0; 6])
}
fn getppid() -> i64 {
    raw_syscall(libc::SYS_getppid, [0; 6])
}
fn mount() -> i64 {
    raw_syscall(
        libc::SYS_mount,
        [
            c"none".as_ptr() as u64,
            c"/nonexistent-splash-seccomp-test".as_ptr() as u64,
            c"tmpfs".as_ptr() as u64,
            0,
            0,
            0,
        ],
    )
}
fn unshare_user() -> i64 {
    raw_syscall(libc::SYS_unshare, [CLONE_NEWUSER, 0, 0, 0, 0, 0])
}
/// Legacy clone without a new stack: the new process continues here as in
/// fork, exits at once, and is reaped. Returns 0 on success or -errno.
fn clone_with(flags: u64) -> i64 {
    let r = raw_syscall(libc::SYS_clone, [flags, 0, 0, 0, 0, 0]);
    if r == 0 {
        exit_now(0);
    }
    if r > 0 {
        wait_pid(r);
        return 0;
    }
    r
}
fn clone_newuser() -> i64 {
    clone_with(CLONE_NEWUSER | SIGCHLD)
}
fn clone_newuser_high_half() -> i64 {
    // CLONE_NEWUSER only in the high half, which the kernel ignores.
    clone_with((CLONE_NEWUSER << 32) | SIGCHLD)
}
fn clone_plain() -> i64 {
    clone_with(SIGCHLD)
}
fn clone3_null() -> i64 {
    raw_syscall(libc::SYS_clone3, [0; 6])
}
fn ioctl_tiocsti() -> i64 {
    let c = b'x';
    raw_syscall(
        libc::SYS_ioctl,
        [u64::MAX, TIOCSTI, &raw const c as u64, 0, 0, 0],
    )
}
fn ioctl_tiocsti_high_bits() -> i64 {
    let c = b'x';
    raw_syscall(
        libc::SYS_ioctl,
        [
            u64::MAX,
            (0xdead_u64 << 32) | TIOCSTI,
            &raw const c as u64,
            0,
            0,
            0,
        ],
    )
}
fn ioctl_tiocgwinsz() -> i64 {
    let mut ws = [0u16; 4];
    raw_syscall(
        libc::SYS_ioctl,
        [u64::MAX, libc::TIOCGWINSZ, ws.as_mut_ptr() as u64, 0, 0, 0],
    )
}
fn bpf() -> i64 {
    raw_syscall(libc::SYS_bpf, [0x7fff_ffff, 0, 0, 0, 0, 0])
}
fn io_uring_setup() -> i64 {
    raw_syscall(libc::SYS_io_uring_setup, [0, 0, 0, 0, 0, 0])
}
fn personality_query() -> i64 {
    raw_syscall(libc::SYS_personality, [0xffff_ffff, 0, 0, 0, 0, 0])
}
fn keyctl() -> i64 {
    raw_syscall(libc::SYS_keyctl, [0x7fff, 0, 0, 0, 0, 0])
}
fn ptrace() -> i64 {
    raw_syscall(libc::SYS_ptrace, [0x7fff, 0, 0, 0, 0, 0])
}
#[cfg(target_arch = "x86_64")]
fn x32_getpid() -> i64 {
    raw_syscall(0x4000_0000 | libc::SYS_getpid, [0; 6])
}

/// Assert the filtered call returns `-errno` and the unfiltered control does
/// not.
fn denied_with(p: &Program, what: &str, probe: fn() -> i64, errno: i64) {
    let filtered = under(p, probe);
    let control = without(probe);
    assert_eq!(
        filtered,
        ChildOutcome::Returned(-errno),
        "{what} under the filter"
    );
    assert!(
        matches!(control, ChildOutcome::Returned(r) if r != -errno),
        "{what} without the filter must not fail with errno {errno}: {control:?}"
    );
    eprintln!("{what}: filtered {filtered:?}, control {control:?}");
}

#[test]
fn guarded_syscalls_are_denied_and_controls_are_not() {
    let Some(p) = deny_program() else { return };
    denied_with(&p, "mount", mount, EPERM);
    denied_with(&p, "unshare(CLONE_NEWUSER)", unshare_user, EPERM);
    denied_with(&p, "clone(CLONE_NEWUSER)", clone_newuser, EPERM);
    denied_with(&p, "clone3", clone3_null, ENOSYS);
    denied_with(&p, "ioctl(TIOCSTI)", ioctl_tiocsti, EPERM);
    denied_with(
        &p,
        "ioctl(TIOCSTI with high bits)",
        ioctl_tiocsti_high_bits,
        EPERM,
    );
    denied_with(&p, "bpf", bpf, EPERM);
    denied_with(&p, "io_uring_setup", io_uring_setup, EPERM);
    denied_with(&p, "personality", personality_query, EPERM);
    denied_with(&p, "keyctl", keyctl, EPERM);
    denied_with(&p, "ptrace", ptrace, EPERM);
}

#[test]
fn controls_that_must_succeed_do() {
    let Some(_) = deny_program() else { return };
    // The paired controls above only show "not this errno"; these show the
    // unfiltered calls actually succeed on this host.
    assert_eq!(
        without(unshare_user),
        ChildOutcome::Returned(0),
        "unshare(CLONE_NEWUSER) as root"
    );
    assert_eq!(
        without(clone_newuser),
        ChildOutcome::Returned(0),
        "clone(CLONE_NEWUSER)"
    );
    assert!(matches!(without(personality_query), ChildOutcome::Returned(r) if r >= 0));
}

#[test]
fn ordinary_syscalls_behave_normally_under_the_filter() {
    let Some(p) = deny_program() else { return };
    assert!(matches!(under(&p, getppid), ChildOutcome::Returned(r) if r > 0));
    assert_eq!(
        under(&p, clone_plain),
        ChildOutcome::Returned(0),
        "fork-like clone"
    );
    assert_eq!(
        under(&p, clone_newuser_high_half),
        ChildOutcome::Returned(0),
        "namespace bits in the ignored high half create no namespace and are allowed"
    );
    assert_eq!(
        under(&p, ioctl_tiocgwinsz),
        without(ioctl_tiocgwinsz),
        "other ioctls"
    );
    assert_eq!(
        under(&p, ioctl_tiocgwinsz),
        ChildOutcome::Returned(-(libc::EBADF as i64))
    );
}

#[cfg(target_arch = "x86_64")]
#[test]
fn x32_syscalls_kill_the_process() {
    let Some(p) = deny_program() else { return };
    assert_eq!(under(&p, x32_getpid), ChildOutcome::Signaled(SIGSYS));
    let control = without(x32_getpid);
    assert!(
        matches!(control, ChildOutcome::Returned(_)),
        "control: {control:?}"
    );
}

#[test]
fn strict_list_kills_unlisted_syscalls() {
    let Some(_) = deny_program() else { return };
    let base = ["execve", "exit_group", "write"];
    let without_getppid =
        program(&Profile::StrictAllowlist(support::names(&base))).expect("compiles");
    let mut with = base.to_vec();
    with.push("getppid");
    let with_getppid = program(&Profile::StrictAllowlist(support::names(&with))).expect("compiles");
    assert_eq!(
        under(&without_getppid, getppid),
        ChildOutcome::Signaled(SIGSYS)
    );
    assert!(matches!(under(&with_getppid, getppid), ChildOutcome::Returned(r) if r > 0));
    // Fixed guards still answer before the kill in strict mode.
    assert_eq!(
        under(&without_getppid, clone3_null),
        ChildOutcome::Returned(-ENOSYS)
    );
    assert_eq!(
        under(&without_getppid, mount),
        ChildOutcome::Returned(-EPERM)
    );
}

#[test]
fn strict_guards_win_even_when_clone_and_ioctl_are_listed() {
    let Some(_) = deny_program() else { return };
    let list = ["execve", "exit_group", "write", "clone", "wait4", "ioctl"];
    let p = program(&Profile::StrictAllowlist(support::names(&list))).expect("compiles");
    assert_eq!(under(&p, clone_newuser), ChildOutcome::Returned(-EPERM));
    assert_eq!(
        under(&p, clone_plain),
        ChildOutcome::Returned(0),
        "ordinary listed clone"
    );
    assert_eq!(under(&p, ioctl_tiocsti), ChildOutcome::Returned(-EPERM));
    assert_eq!(
        under(&p, ioctl_tiocgwinsz),
        ChildOutcome::Returned(-(libc::EBADF as i64))
    );
    // Controls: without the filter the same calls do not fail that way.
    assert_eq!(without(clone_newuser), ChildOutcome::Returned(0));
    assert_eq!(
        without(ioctl_tiocsti),
        ChildOutcome::Returned(-(libc::EBADF as i64))
    );
}

#[test]
fn a_program_for_another_architecture_kills_on_the_first_syscall() {
    let Some(host_program) = deny_program() else {
        return;
    };
    let other = Arch::ALL
        .into_iter()
        .find(|&a| Some(a) != Arch::host())
        .expect("another architecture");
    let foreign = compile(&Profile::DenyKnownEscapeSurface, other).expect("compiles");
    assert_eq!(under(&foreign, getpid), ChildOutcome::Signaled(SIGSYS));
    assert!(matches!(under(&host_program, getpid), ChildOutcome::Returned(r) if r > 0));
}
