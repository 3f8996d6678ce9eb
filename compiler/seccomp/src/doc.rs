//! The published deny table, rendered from the guard tables for
//! `docs/seccomp.md` (a test fails when the document is stale).

use std::fmt::Write as _;

use crate::guards::{ALLOWED_REVIEWED, CLONE_NAMESPACE_FLAGS, DENIED, TIOCLINUX, TIOCSTI};
use crate::{Arch, syscall_number};

fn numbers(name: &str) -> String {
    Arch::ALL
        .iter()
        .map(|&a| syscall_number(a, name).map_or_else(|| "—".to_owned(), |n| n.to_string()))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The Markdown tables of denied and reviewed-allowed syscalls.
pub fn reviewed_tables_markdown() -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| syscall | returns | class | x86_64 | aarch64 | riscv64 | reason |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    let _ = writeln!(
        s,
        "| `clone` | EPERM if `flags & {CLONE_NAMESPACE_FLAGS:#x}` (low 32 bits), else the profile's answer | namespace | {} | creates namespaces |",
        numbers("clone")
    );
    let _ = writeln!(
        s,
        "| `clone3` | ENOSYS | namespace | {} | flags live in memory the filter cannot read; libc falls back to `clone` |",
        numbers("clone3")
    );
    let _ = writeln!(
        s,
        "| `ioctl` | EPERM if the request (low 32 bits) is `TIOCSTI` ({TIOCSTI:#x}) or `TIOCLINUX` ({TIOCLINUX:#x}), else the profile's answer | terminal | {} | terminal input injection |",
        numbers("ioctl")
    );
    for d in DENIED {
        let _ = writeln!(
            s,
            "| `{}` | EPERM | {} | {} | {} |",
            d.name,
            d.class.name(),
            numbers(d.name),
            d.reason
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "Reviewed and left allowed (the strict profile allows them only when listed):"
    );
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "| syscall | class | x86_64 | aarch64 | riscv64 | reason |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for d in ALLOWED_REVIEWED {
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} |",
            d.name,
            d.class.name(),
            numbers(d.name),
            d.reason
        );
    }
    s
}
