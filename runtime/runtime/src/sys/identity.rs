//! The worker identity: the switch of the launch child (`setgroups(2)`,
//! `setresgid(2)`, `setresuid(2)` as raw system calls) and reading the
//! calling task's ids back.
#![expect(
    unsafe_code,
    reason = "the launch child's credential change must be raw per-task system calls"
)]

use std::io;

/// The process's real group id.
pub fn real_gid() -> u32 {
    rustix::process::getgid().as_raw()
}

/// Switches the calling task to `uid` and `gid` with no supplementary group
/// (`setgroups(0)`, `setresgid`, then `setresuid`, each as a raw system call
/// so that only this task changes: the C library's wrappers would signal
/// every thread of the process to change too, which in the launch's
/// `CLONE_VM` child means the host's own threads), then reads back the
/// real, effective and saved ids and the group list. Returns 0, or the
/// `errno` of the failed step (`EPERM` when a read-back differs).
///
/// Async-signal-safe and allocation-free: the child of [`super::spawn_child_as`]
/// calls it between `clone` and `execve`. Called anywhere else it changes
/// the calling thread's credentials.
pub(crate) fn switch_task_identity(uid: u32, gid: u32) -> libc::c_int {
    let errno = || {
        io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EPERM)
    };
    // SAFETY: `setgroups` with a count of 0 reads no memory; `setresgid`
    // and `setresuid` take plain integers. Each changes only the calling
    // task's credentials.
    unsafe {
        if libc::syscall(libc::SYS_setgroups, 0usize, std::ptr::null::<libc::gid_t>()) != 0 {
            return errno();
        }
        if libc::syscall(libc::SYS_setresgid, gid, gid, gid) != 0 {
            return errno();
        }
        if libc::syscall(libc::SYS_setresuid, uid, uid, uid) != 0 {
            return errno();
        }
    }
    let ([ru, eu, su], [rg, eg, sg], groups) = task_identity();
    if [ru, eu, su] != [uid; 3] || [rg, eg, sg] != [gid; 3] || groups != 0 {
        return libc::EPERM;
    }
    0
}

/// The calling task's real, effective and saved uids and gids and its
/// number of supplementary groups (raw system calls; async-signal-safe).
/// A failed read reports `u32::MAX` ids and `usize::MAX` groups, which
/// match no identity.
pub(crate) fn task_identity() -> ([u32; 3], [u32; 3], usize) {
    let mut u: [libc::uid_t; 3] = [u32::MAX; 3];
    let mut g: [libc::gid_t; 3] = [u32::MAX; 3];
    // SAFETY: each pointer names a live, writable `uid_t`/`gid_t` of this
    // frame; `getgroups` with a size of 0 writes nothing and returns the
    // count.
    let groups = unsafe {
        let up = u.as_mut_ptr();
        if libc::syscall(libc::SYS_getresuid, up, up.add(1), up.add(2)) != 0 {
            u = [u32::MAX; 3];
        }
        let gp = g.as_mut_ptr();
        if libc::syscall(libc::SYS_getresgid, gp, gp.add(1), gp.add(2)) != 0 {
            g = [u32::MAX; 3];
        }
        libc::syscall(
            libc::SYS_getgroups,
            0usize,
            std::ptr::null_mut::<libc::gid_t>(),
        )
    };
    (u, g, usize::try_from(groups).unwrap_or(usize::MAX))
}
