//! The probe's output lines, written by hand (the probe has no dependencies
//! but `libc`).

use crate::attempts::{Attempt, Control, Outcome};

pub fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

pub fn attempt_entry(a: &Attempt) -> String {
    let layers: Vec<String> = a.layers.iter().map(|l| string(l)).collect();
    let control = match a.control {
        Control::Contained => "contained",
        Control::HostShared => "host-shared",
        Control::CapDropped => "cap-dropped",
        Control::Unsandboxed => "unsandboxed",
    };
    format!(
        "{{\"attempt\":{},\"group\":{},\"layers\":[{}],\"control\":{},\"what\":{}}}",
        string(a.name),
        string(a.group),
        layers.join(","),
        string(control),
        string(a.what)
    )
}

pub fn result(name: &str, outcome: &Outcome) -> String {
    let (result, errno, detail) = match outcome {
        Outcome::Ok(d) => ("ok", None, d.as_str()),
        Outcome::Reached(e, d) => ("reached", Some(*e), d.as_str()),
        Outcome::Denied(e, d) => ("denied", Some(*e), d.as_str()),
        Outcome::NotApplicable(d) => ("n/a", None, d.as_str()),
        Outcome::Sent(d) => ("sent", None, d.as_str()),
    };
    let mut out = format!(
        "{{\"attempt\":{},\"result\":{}",
        string(name),
        string(result)
    );
    if let Some(e) = errno.filter(|e| *e != 0) {
        out.push_str(&format!(",\"errno\":{}", string(errno_name(e))));
    }
    if !detail.is_empty() {
        out.push_str(&format!(",\"detail\":{}", string(detail)));
    }
    out.push('}');
    out
}

pub fn status(name: &str, result: &str, extra: Option<(&str, i32)>) -> String {
    let mut out = format!(
        "{{\"attempt\":{},\"result\":{}",
        string(name),
        string(result)
    );
    match extra {
        Some(("signal", s)) => out.push_str(&format!(",\"signal\":{}", string(signal_name(s)))),
        Some((key, v)) => out.push_str(&format!(",{}:{v}", string(key))),
        None => {}
    }
    out.push('}');
    out
}

pub fn signal_name(s: i32) -> &'static str {
    match s {
        libc::SIGSYS => "SIGSYS",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGABRT => "SIGABRT",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGTERM => "SIGTERM",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGILL => "SIGILL",
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGUSR1 => "SIGUSR1",
        _ => "SIG?",
    }
}

pub fn errno_name(e: i32) -> &'static str {
    match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::ENXIO => "ENXIO",
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
        libc::ENODEV => "ENODEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ENOTTY => "ENOTTY",
        libc::ETXTBSY => "ETXTBSY",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::ESPIPE => "ESPIPE",
        libc::EROFS => "EROFS",
        libc::EMLINK => "EMLINK",
        libc::EPIPE => "EPIPE",
        libc::ERANGE => "ERANGE",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOSYS => "ENOSYS",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::ELOOP => "ELOOP",
        libc::ENODATA => "ENODATA",
        libc::EOVERFLOW => "EOVERFLOW",
        libc::ENOTSOCK => "ENOTSOCK",
        libc::EPROTONOSUPPORT => "EPROTONOSUPPORT",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EAFNOSUPPORT => "EAFNOSUPPORT",
        libc::EADDRNOTAVAIL => "EADDRNOTAVAIL",
        libc::ENETUNREACH => "ENETUNREACH",
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::ESTALE => "ESTALE",
        libc::EDQUOT => "EDQUOT",
        libc::ENOKEY => "ENOKEY",
        libc::EKEYREJECTED => "EKEYREJECTED",
        libc::EUSERS => "EUSERS",
        _ => "E?",
    }
}
