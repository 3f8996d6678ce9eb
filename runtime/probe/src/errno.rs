//! Errno numbers as names, so reports read `EPERM` rather than `1`.

use serde_json::{Value, json};

pub fn name(errno: i32) -> &'static str {
    match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::E2BIG => "E2BIG",
        libc::ENOEXEC => "ENOEXEC",
        libc::EBADF => "EBADF",
        libc::ECHILD => "ECHILD",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::EXDEV => "EXDEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ETXTBSY => "ETXTBSY",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::EROFS => "EROFS",
        libc::EPIPE => "EPIPE",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOSYS => "ENOSYS",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::ELOOP => "ELOOP",
        libc::ENOKEY => "ENOKEY",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EAFNOSUPPORT => "EAFNOSUPPORT",
        libc::EADDRNOTAVAIL => "EADDRNOTAVAIL",
        libc::ENETDOWN => "ENETDOWN",
        libc::ENETUNREACH => "ENETUNREACH",
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::EHOSTUNREACH => "EHOSTUNREACH",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::EINPROGRESS => "EINPROGRESS",
        libc::EDQUOT => "EDQUOT",
        _ => "UNKNOWN",
    }
}

/// `{"errno": N, "name": "EPERM", "message": "..."}`.
pub fn json(errno: i32) -> Value {
    json!({
        "errno": errno,
        "name": name(errno),
        "message": std::io::Error::from_raw_os_error(errno).to_string(),
    })
}

/// An I/O error as JSON; errors without an errno carry only the message.
pub fn io_error_json(e: &std::io::Error) -> Value {
    match e.raw_os_error() {
        Some(n) => json(n),
        None => json!({"errno": null, "name": null, "message": e.to_string()}),
    }
}
