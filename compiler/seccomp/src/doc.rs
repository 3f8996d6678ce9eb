//! The published deny table, rendered from the guard tables for
//! `docs/seccomp.md`: a test fails when the document is stale. Regenerate
//! it with `SPLASH_BLESS=1 cargo test -p splash-seccomp --lib doc::`.

use std::fmt::Write as _;

use crate::guards::{
    ALLOWED_REVIEWED, CLONE_NAMESPACE_FLAGS, DENIED, MFD_NOEXEC_SEAL, Origin, TIOCLINUX, TIOCSTI,
};
use crate::{Arch, syscall_number};

fn numbers(name: &str) -> String {
    Arch::ALL
        .iter()
        .map(|&a| syscall_number(a, name).map_or_else(|| "—".to_owned(), |n| n.to_string()))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The Markdown tables of denied and reviewed-allowed syscalls.
fn reviewed_tables_markdown() -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| syscall | returns | origin | strict list | class | x86_64 | aarch64 | riscv64 | reason |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|");
    let _ = writeln!(
        s,
        "| `clone` | EPERM if `flags & {CLONE_NAMESPACE_FLAGS:#x}` (low 32 bits), else the profile's answer | specification | may list; guard stays | namespace | {} | creates namespaces |",
        numbers("clone")
    );
    let _ = writeln!(
        s,
        "| `clone3` | ENOSYS | specification | never | namespace | {} | flags live in memory the filter cannot read; libc falls back to `clone` |",
        numbers("clone3")
    );
    let _ = writeln!(
        s,
        "| `ioctl` | EPERM if the request (low 32 bits) is `TIOCSTI` ({TIOCSTI:#x}) or `TIOCLINUX` ({TIOCLINUX:#x}), else the profile's answer | specification (`TIOCSTI`), addition (`TIOCLINUX`) | may list; guard stays | terminal | {} | terminal input injection |",
        numbers("ioctl")
    );
    let _ = writeln!(
        s,
        "| `memfd_create` | with a `landlock` block only: EACCES unless `flags & {MFD_NOEXEC_SEAL:#x}` (`MFD_NOEXEC_SEAL`, low 32 bits), else the profile's answer | addition | may list; guard stays on a listed one, unlisted kills | execution | {} | an executable memfd is outside every Landlock path rule |",
        numbers("memfd_create")
    );
    for d in DENIED {
        let (origin, strict) = match d.origin {
            Origin::Specification => ("specification", "never".to_owned()),
            Origin::Addition { listing } => (
                "addition",
                format!("may list (warning), which lifts it: {listing}"),
            ),
        };
        let _ = writeln!(
            s,
            "| `{}` | EPERM | {origin} | {strict} | {} | {} | {} |",
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

#[test]
fn published_table_is_current() {
    const BEGIN: &str =
        "<!-- BEGIN GENERATED TABLE: cargo test -p splash-seccomp --lib doc:: -->\n";
    const END: &str = "<!-- END GENERATED TABLE -->";
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/seccomp.md");
    if let Err(message) = splash_require_host::snapshot::check_snapshot_between(
        &path,
        BEGIN,
        END,
        &reviewed_tables_markdown(),
        "SPLASH_BLESS=1 cargo test -p splash-seccomp --lib doc::",
    ) {
        panic!("{message}");
    }
}
