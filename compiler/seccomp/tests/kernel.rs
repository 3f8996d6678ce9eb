//! Real-kernel tests: the compiled program for this host is installed in a
//! forked child, and each guarded syscall is shown to fail the way the rule
//! set says (EPERM, ENOSYS, or SIGSYS process kill), under both profiles. Every denial is paired
//! with a control run of the same call in a child without the filter,
//! showing that the call does not fail that way on its own.

mod support;

use splash_seccomp::{Arch, Profile, Program, compile};
use support::sys::{ChildOutcome, Prepared, Probe, fork_probe};

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
        splash_require_host::require_host(false, "a supported architecture");
        return None;
    };
    let prepared = Prepared::new(&p).expect("prepared");
    match fork_probe(Some(&prepared), GETPID) {
        Ok(ChildOutcome::Returned(pid)) if pid > 0 => Some(p),
        other => {
            splash_require_host::require_host(
                false,
                &format!("seccomp filter support ({other:?})"),
            );
            None
        }
    }
}

fn under(p: &Program, probe: Probe) -> ChildOutcome {
    let prepared = Prepared::new(p).expect("prepared");
    fork_probe(Some(&prepared), probe).expect("fork")
}

fn without(probe: Probe) -> ChildOutcome {
    fork_probe(None, probe).expect("fork")
}

const GETPID: Probe = Probe::Getpid;
const GETPPID: Probe = Probe::Getppid;
const MOUNT: Probe = Probe::MountNonexistent;
const UNSHARE_USER: Probe = Probe::Unshare {
    flags: CLONE_NEWUSER,
};
const CLONE_NEWUSER_PROBE: Probe = Probe::Clone {
    flags: CLONE_NEWUSER | SIGCHLD,
};
/// CLONE_NEWUSER only in the high half, which the kernel ignores.
const CLONE_NEWUSER_HIGH_HALF: Probe = Probe::Clone {
    flags: (CLONE_NEWUSER << 32) | SIGCHLD,
};
const CLONE_PLAIN: Probe = Probe::Clone { flags: SIGCHLD };
const CLONE3: Probe = Probe::Clone3Null;
const IOCTL_TIOCSTI: Probe = Probe::IoctlBadFd { request: TIOCSTI };
const IOCTL_TIOCSTI_HIGH_BITS: Probe = Probe::IoctlBadFd {
    request: (0xdead << 32) | TIOCSTI,
};
const IOCTL_TIOCGWINSZ: Probe = Probe::IoctlBadFd {
    request: libc::TIOCGWINSZ,
};
const BPF: Probe = Probe::BpfInvalid;
const IO_URING_SETUP: Probe = Probe::IoUringSetupNull;
const PERSONALITY: Probe = Probe::PersonalityQuery;
const KEYCTL: Probe = Probe::KeyctlInvalid;
const PTRACE: Probe = Probe::PtraceInvalid;
const IO_URING_CARRY_ON: Probe = Probe::IoUringSetupThenGetppid;
const KCMP: Probe = Probe::KcmpSelf;

/// Assert the filtered call returns `-errno` and the unfiltered control does
/// not.
fn denied_with(p: &Program, what: &str, probe: Probe, errno: i64) {
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
    denied_with(&p, "mount", MOUNT, EPERM);
    denied_with(&p, "unshare(CLONE_NEWUSER)", UNSHARE_USER, EPERM);
    denied_with(&p, "clone(CLONE_NEWUSER)", CLONE_NEWUSER_PROBE, EPERM);
    denied_with(&p, "clone3", CLONE3, ENOSYS);
    denied_with(&p, "ioctl(TIOCSTI)", IOCTL_TIOCSTI, EPERM);
    denied_with(
        &p,
        "ioctl(TIOCSTI with high bits)",
        IOCTL_TIOCSTI_HIGH_BITS,
        EPERM,
    );
    denied_with(&p, "bpf", BPF, EPERM);
    denied_with(&p, "io_uring_setup", IO_URING_SETUP, EPERM);
    denied_with(&p, "personality", PERSONALITY, EPERM);
    denied_with(&p, "keyctl", KEYCTL, EPERM);
    denied_with(&p, "ptrace", PTRACE, EPERM);
}

#[test]
fn controls_that_must_succeed_do() {
    let Some(_) = deny_program() else { return };
    // The paired controls above only show "not this errno"; these show the
    // unfiltered calls actually succeed on this host.
    assert_eq!(
        without(UNSHARE_USER),
        ChildOutcome::Returned(0),
        "unshare(CLONE_NEWUSER) as root"
    );
    assert_eq!(
        without(CLONE_NEWUSER_PROBE),
        ChildOutcome::Returned(0),
        "clone(CLONE_NEWUSER)"
    );
    assert!(matches!(without(PERSONALITY), ChildOutcome::Returned(r) if r >= 0));
}

#[test]
fn ordinary_syscalls_behave_normally_under_the_filter() {
    let Some(p) = deny_program() else { return };
    assert!(matches!(under(&p, GETPPID), ChildOutcome::Returned(r) if r > 0));
    assert_eq!(
        under(&p, CLONE_PLAIN),
        ChildOutcome::Returned(0),
        "fork-like clone"
    );
    assert_eq!(
        under(&p, CLONE_NEWUSER_HIGH_HALF),
        ChildOutcome::Returned(0),
        "namespace bits in the ignored high half create no namespace and are allowed"
    );
    assert_eq!(
        under(&p, IOCTL_TIOCGWINSZ),
        without(IOCTL_TIOCGWINSZ),
        "other ioctls"
    );
    assert_eq!(
        under(&p, IOCTL_TIOCGWINSZ),
        ChildOutcome::Returned(-(libc::EBADF as i64))
    );
}

#[cfg(target_arch = "x86_64")]
#[test]
fn x32_syscalls_kill_the_process() {
    let Some(p) = deny_program() else { return };
    assert_eq!(under(&p, Probe::X32Getpid), ChildOutcome::Signaled(SIGSYS));
    let control = without(Probe::X32Getpid);
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
        under(&without_getppid, GETPPID),
        ChildOutcome::Signaled(SIGSYS)
    );
    assert!(matches!(under(&with_getppid, GETPPID), ChildOutcome::Returned(r) if r > 0));
    assert!(matches!(without(GETPPID), ChildOutcome::Returned(r) if r > 0));
    // `clone3` still answers ENOSYS so libc falls back to `clone`.
    denied_with(&without_getppid, "strict: clone3", CLONE3, ENOSYS);
    // Unlisted, `clone` and `ioctl` are killed like any other unlisted
    // syscall; only their guarded forms answer EPERM (below).
    assert_eq!(
        under(&without_getppid, CLONE_PLAIN),
        ChildOutcome::Signaled(SIGSYS)
    );
    assert_eq!(without(CLONE_PLAIN), ChildOutcome::Returned(0));
    assert_eq!(
        under(&without_getppid, IOCTL_TIOCGWINSZ),
        ChildOutcome::Signaled(SIGSYS)
    );
    assert_eq!(
        without(IOCTL_TIOCGWINSZ),
        ChildOutcome::Returned(-(libc::EBADF as i64))
    );
}

/// Under a strict list the specification's fixed deny set and the argument
/// guards come first: the worker gets EPERM and carries on, while an
/// unlisted ordinary syscall kills it.
#[test]
fn strict_list_answers_the_fixed_deny_set_with_eperm_first() {
    let Some(_) = deny_program() else { return };
    let list = ["execve", "exit_group", "write", "getppid"];
    let p = program(&Profile::StrictAllowlist(support::names(&list))).expect("compiles");

    // io_uring_setup answers EPERM and the worker's next syscall runs; the
    // control shows that the same call creates a ring without the filter.
    let control = without(IO_URING_CARRY_ON);
    if splash_require_host::require_host(
        matches!(control, ChildOutcome::Returned(fd) if fd >= 0),
        &format!("io_uring (`kernel.io_uring_disabled` = 0; the control got {control:?})"),
    ) {
        let filtered = under(&p, IO_URING_CARRY_ON);
        assert_eq!(
            filtered,
            ChildOutcome::Returned(-EPERM),
            "io_uring_setup under the strict list, then getppid"
        );
        eprintln!("io_uring_setup then getppid: filtered {filtered:?}, control {control:?}");
    }

    // An unlisted ordinary syscall kills the worker; without the filter, or
    // with it listed, it returns.
    assert_eq!(under(&p, GETPID), ChildOutcome::Signaled(SIGSYS));
    assert!(matches!(without(GETPID), ChildOutcome::Returned(r) if r > 0));
    let mut with_getpid = list.to_vec();
    with_getpid.push("getpid");
    let listed =
        program(&Profile::StrictAllowlist(support::names(&with_getpid))).expect("compiles");
    assert!(matches!(under(&listed, GETPID), ChildOutcome::Returned(r) if r > 0));

    // The rest of the probed fixed set, and the argument guards of `clone`
    // and `ioctl`, neither of which is listed here: EPERM, each with its
    // control.
    denied_with(&p, "strict: mount", MOUNT, EPERM);
    denied_with(&p, "strict: unshare(CLONE_NEWUSER)", UNSHARE_USER, EPERM);
    denied_with(&p, "strict: bpf", BPF, EPERM);
    denied_with(&p, "strict: io_uring_setup(0, NULL)", IO_URING_SETUP, EPERM);
    denied_with(&p, "strict: personality", PERSONALITY, EPERM);
    denied_with(&p, "strict: keyctl", KEYCTL, EPERM);
    denied_with(&p, "strict: ptrace", PTRACE, EPERM);
    denied_with(
        &p,
        "strict: unlisted clone(CLONE_NEWUSER)",
        CLONE_NEWUSER_PROBE,
        EPERM,
    );
    denied_with(&p, "strict: unlisted ioctl(TIOCSTI)", IOCTL_TIOCSTI, EPERM);
}

#[test]
fn a_reviewed_addition_answers_eperm_unless_a_strict_list_names_it() {
    let Some(deny) = deny_program() else { return };
    let control = without(KCMP);
    if !splash_require_host::require_host(
        control == ChildOutcome::Returned(0),
        &format!("kcmp (`CONFIG_KCMP`; the control got {control:?})"),
    ) {
        return;
    }
    denied_with(&deny, "kcmp", KCMP, EPERM);
    let list = ["execve", "exit_group", "write", "getpid"];
    let unlisted = program(&Profile::StrictAllowlist(support::names(&list))).expect("compiles");
    denied_with(&unlisted, "strict: unlisted kcmp", KCMP, EPERM);
    let mut named = list.to_vec();
    named.push("kcmp");
    let listed = program(&Profile::StrictAllowlist(support::names(&named))).expect("compiles");
    // Listing it lifts the guard: the kernel's own answer.
    assert_eq!(under(&listed, KCMP), ChildOutcome::Returned(0));
}

const MFD_CLOEXEC: u32 = libc::MFD_CLOEXEC;
const MFD_NOEXEC_SEAL: u32 = 0x0008;
const MEMFD_EXEC: Probe = Probe::MemfdCreate { flags: MFD_CLOEXEC };
const MEMFD_NOEXEC: Probe = Probe::MemfdCreate {
    flags: MFD_CLOEXEC | MFD_NOEXEC_SEAL,
};
const EACCES: i64 = libc::EACCES as i64;

fn launch_program(profile: &Profile, exec_allowlist: bool) -> Program {
    let arch = Arch::host().expect("supported architecture");
    splash_seccomp::compile_launch(profile, arch, exec_allowlist).expect("compiles")
}

#[test]
fn an_exec_allowlist_refuses_executable_memfds_under_every_profile() {
    let Some(_) = deny_program() else { return };
    let strict = Profile::StrictAllowlist(support::names(&[
        "execve",
        "exit_group",
        "write",
        "memfd_create",
    ]));
    for profile in [Profile::Baseline, Profile::DenyKnownEscapeSurface, strict] {
        let guarded = launch_program(&profile, true);
        assert_eq!(
            under(&guarded, MEMFD_EXEC),
            ChildOutcome::Returned(-EACCES),
            "{profile:?}: a memfd that could be executed"
        );
        assert!(
            matches!(under(&guarded, MEMFD_NOEXEC), ChildOutcome::Returned(fd) if fd >= 0),
            "{profile:?}: a sealed non-executable memfd is still available"
        );
        // Control: the same profile without an allowlist, and no filter.
        let plain = launch_program(&profile, false);
        assert!(
            matches!(under(&plain, MEMFD_EXEC), ChildOutcome::Returned(fd) if fd >= 0),
            "{profile:?} without an allowlist"
        );
        assert!(matches!(without(MEMFD_EXEC), ChildOutcome::Returned(fd) if fd >= 0));
    }
}

#[test]
fn a_strict_list_without_memfd_create_kills_it_even_with_the_guard() {
    let Some(_) = deny_program() else { return };
    let strict = Profile::StrictAllowlist(support::names(&["execve", "exit_group", "write"]));
    let p = launch_program(&strict, true);
    assert_eq!(under(&p, MEMFD_NOEXEC), ChildOutcome::Signaled(SIGSYS));
    assert_eq!(under(&p, MEMFD_EXEC), ChildOutcome::Signaled(SIGSYS));
}

#[test]
fn strict_guards_win_even_when_clone_and_ioctl_are_listed() {
    let Some(_) = deny_program() else { return };
    let list = ["execve", "exit_group", "write", "clone", "wait4", "ioctl"];
    let p = program(&Profile::StrictAllowlist(support::names(&list))).expect("compiles");
    assert_eq!(
        under(&p, CLONE_NEWUSER_PROBE),
        ChildOutcome::Returned(-EPERM)
    );
    assert_eq!(
        under(&p, CLONE_PLAIN),
        ChildOutcome::Returned(0),
        "ordinary listed clone"
    );
    assert_eq!(under(&p, IOCTL_TIOCSTI), ChildOutcome::Returned(-EPERM));
    assert_eq!(
        under(&p, IOCTL_TIOCGWINSZ),
        ChildOutcome::Returned(-(libc::EBADF as i64))
    );
    // Controls: without the filter the same calls do not fail that way.
    assert_eq!(without(CLONE_NEWUSER_PROBE), ChildOutcome::Returned(0));
    assert_eq!(
        without(IOCTL_TIOCSTI),
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
    assert_eq!(under(&foreign, GETPID), ChildOutcome::Signaled(SIGSYS));
    assert!(matches!(under(&host_program, GETPID), ChildOutcome::Returned(r) if r > 0));
}
