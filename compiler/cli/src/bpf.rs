//! `splashc emit --bpf [--listing] [--arch A] POLICY`: the seccomp program of
//! a policy as raw `struct sock_filter` bytes, or as a disassembly listing.
//!
//! The `emit` command resolves the policy and architecture and calls
//! [`run_bpf`] with the compiled program.

use std::io::Write;

use crate::exit::Exit;
use splash_seccomp::{Arch, CompileError, Program, compile_launch};
use splashpol::model::Policy;

/// The architecture named by `--arch`, or this host's when absent.
pub fn arch_from_flag(flag: Option<&str>) -> Result<Arch, String> {
    match flag {
        Some(name) => Arch::from_name(name).ok_or_else(|| {
            format!("unknown architecture `{name}` (expected `x86_64`, `aarch64` or `riscv64`)")
        }),
        None => Arch::host().ok_or_else(|| {
            "this host's architecture has no seccomp support; pass `--arch`".to_owned()
        }),
    }
}

/// Compile the filter a launch of `policy` installs for `arch`, through the
/// same decision lowering uses ([`splashpol::lower::launch_filter`]).
pub fn program_for(policy: &Policy, arch: Arch) -> Result<Option<Program>, CompileError> {
    splashpol::lower::launch_filter(policy)
        .map(|(profile, exec_allowlist)| compile_launch(&profile, arch, exec_allowlist))
        .transpose()
}

/// Write `program` to stdout: the raw bytes, or with `listing` a header of
/// figures followed by the disassembly. Returns the exit status (0, or 2 on
/// an output error).
pub fn run_bpf(program: &Program, listing: bool) -> Exit {
    let mut out = std::io::stdout().lock();
    let result = if listing {
        out.write_all(render_listing(program).as_bytes())
    } else {
        out.write_all(&program.to_bytes())
    };
    match result.and_then(|()| out.flush()) {
        Ok(()) => Exit::Success,
        Err(e) => {
            eprintln!("splashc emit: cannot write the seccomp program: {e}");
            Exit::Usage
        }
    }
}

/// The listing text: figures, skipped names, then one instruction a line.
pub fn render_listing(program: &Program) -> String {
    let stats = program.stats();
    let mut text = format!(
        "; seccomp program for {}: {} instructions, worst case {} executed, {} of {} syscalls cache-eligible\n",
        program.arch.name(),
        stats.len,
        stats.worst_case_executed,
        stats.cache_eligible_syscalls,
        stats.known_syscalls,
    );
    if !program.skipped.is_empty() {
        text.push_str(&format!(
            "; not on {}, skipped: {}\n",
            program.arch.name(),
            program.skipped.join(", ")
        ));
    }
    text.push_str(&program.disassemble());
    text
}
