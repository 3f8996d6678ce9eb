//! Link options for the `splashc` binary, which `splashc run` starts once
//! per launch (docs/runtime.md, "Link order and packed relocations"):
//!
//! - `--symbol-ordering-file=link-order.txt`: the functions one `splashc
//!   run` executes (`scripts/link-order` lists them in the order they first
//!   run) are placed together, so a run faults in a few blocks of code
//!   instead of blocks from all over the binary. A name the build does not
//!   define is skipped; a stale list only loses speed.
//! - `-z pack-relative-relocs`: the start-up relocation of the
//!   position-independent static binary reads a compact bitmap (`DT_RELR`)
//!   instead of 24 bytes per address.
//!
//! Both are given only where the build is known to take them: the
//! `x86_64-unknown-linux-gnu` target with Rust's default linker (LLD) and a
//! C library that applies `DT_RELR` (glibc 2.36 or later, the one a static
//! binary carries). Setting `SPLASHC_PLAIN_LINK` turns both off.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=link-order.txt");
    // A linker chosen through the environment must be seen again.
    for var in [
        "SPLASHC_PLAIN_LINK",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER",
        "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let env = |name: &str| std::env::var(name).unwrap_or_default();
    let default_linker = std::env::var_os("RUSTC_LINKER").is_none()
        && !env("CARGO_ENCODED_RUSTFLAGS").split('\x1f').any(|flag| {
            ["linker", "link-self-contained", "fuse-ld"]
                .iter()
                .any(|word| flag.contains(word))
        });
    if env("TARGET") != "x86_64-unknown-linux-gnu"
        || !default_linker
        || std::env::var_os("SPLASHC_PLAIN_LINK").is_some()
        || !glibc_applies_relr()
    {
        return;
    }
    let list = format!("{}/link-order.txt", env("CARGO_MANIFEST_DIR"));
    for arg in [
        format!("-Wl,--symbol-ordering-file={list}"),
        "-Wl,--no-warn-symbol-ordering".to_owned(),
        "-Wl,-z,pack-relative-relocs".to_owned(),
    ] {
        println!("cargo:rustc-link-arg-bin=splashc={arg}");
    }
}

/// Whether the host's glibc (the one this build links) is 2.36 or later.
fn glibc_applies_relr() -> bool {
    let Ok(out) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text
        .trim()
        .strip_prefix("glibc ")
        .unwrap_or_default()
        .split('.')
        .map(|p| p.parse::<u32>().ok());
    matches!(
        (parts.next(), parts.next()),
        (Some(Some(major)), Some(Some(minor))) if (major, minor) >= (2, 36)
    )
}
