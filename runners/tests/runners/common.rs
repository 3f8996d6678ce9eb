//! Helpers shared by the runner tests: host-skip policy, binary paths,
//! resolved executables, a tiny cBPF assembler, and scratch directories.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

pub use splash_require_host::require_host;

pub const LIMIT_RUNNER: &str = env!("CARGO_BIN_EXE_splash-limit-runner");
pub const LANDLOCK_RUNNER: &str = env!("CARGO_BIN_EXE_splash-landlock-runner");
pub const RUNNER: &str = env!("CARGO_BIN_EXE_splash-runner");

/// The three runners with their names.
pub const ALL_RUNNERS: [(&str, &str); 3] = [
    ("splash-limit-runner", LIMIT_RUNNER),
    ("splash-landlock-runner", LANDLOCK_RUNNER),
    ("splash-runner", RUNNER),
];

/// `path` with every symbolic link resolved (Landlock rules and `--allow`
/// need the real file).
pub fn real(path: &str) -> String {
    std::fs::canonicalize(path)
        .unwrap_or_else(|e| panic!("cannot resolve `{path}`: {e}"))
        .to_string_lossy()
        .into_owned()
}

/// The resolved ELF interpreter of a dynamically linked executable, read
/// from its `PT_INTERP` program header; `None` for a static executable.
pub fn elf_interpreter(path: &str) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    let u16_at = |o: usize| Some(u16::from_le_bytes(bytes.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(bytes.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(bytes.get(o..o + 8)?.try_into().ok()?));
    // 64-bit little-endian ELF only (the hosts this suite runs on).
    if bytes.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let phoff = usize::try_from(u64_at(0x20)?).ok()?;
    let phentsize = usize::from(u16_at(0x36)?);
    let phnum = usize::from(u16_at(0x38)?);
    for i in 0..phnum {
        let ph = phoff + i * phentsize;
        if u32_at(ph)? == 3 {
            let offset = usize::try_from(u64_at(ph + 8)?).ok()?;
            let size = usize::try_from(u64_at(ph + 32)?).ok()?;
            let raw = bytes.get(offset..offset + size)?;
            let interp = std::str::from_utf8(raw).ok()?.trim_end_matches('\0');
            return Some(real(interp));
        }
    }
    None
}

/// The soft and hard value of one `/proc/self/limits` row.
pub fn limit_row(limits: &str, name: &str) -> (String, String) {
    let line = limits
        .lines()
        .find(|l| l.starts_with(name))
        .unwrap_or_else(|| panic!("no `{name}` row in {limits}"));
    let mut fields = line[name.len()..].split_whitespace();
    let soft = fields.next().expect("soft").to_owned();
    let hard = fields.next().expect("hard").to_owned();
    (soft, hard)
}

/// Real paths of the executables the tests run.
pub struct Programs {
    pub dash: String,
    pub cat: String,
    pub truth: String,
    pub head: String,
    pub sleep: String,
    pub env: String,
    /// The loader of `dash` (and of the other programs above).
    pub loader: String,
}

pub fn programs() -> Programs {
    let dash = real("/bin/sh");
    let loader = elf_interpreter(&dash).expect("`/bin/sh` is dynamically linked");
    Programs {
        cat: real("/bin/cat"),
        truth: real("/bin/true"),
        head: real("/usr/bin/head"),
        sleep: real("/bin/sleep"),
        env: real("/usr/bin/env"),
        dash,
        loader,
    }
}

/// Runs `command` and returns its output.
pub fn output(command: &mut Command) -> Output {
    command
        .output()
        .unwrap_or_else(|e| panic!("failed to spawn {command:?}: {e}"))
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Whether the kernel enforces Landlock: asks the Landlock runner itself to
/// run `true` with its loader, and treats only the runner's own "landlock is
/// not supported / disabled" diagnostic as "unavailable".
pub fn landlock_available() -> bool {
    let p = programs();
    let out = output(
        Command::new(LANDLOCK_RUNNER)
            .args(["--allow", &p.truth, "--allow", &p.loader, "--", &p.truth]),
    );
    if out.status.success() {
        return true;
    }
    let err = stderr(&out);
    assert!(
        err.contains("does not support landlock") || err.contains("landlock is disabled"),
        "unexpected landlock probe failure: {err}"
    );
    false
}

/// A fresh scratch directory under the system temporary directory (mode
/// 0755, as `mkdir` would make it), removed when the guard drops.
pub fn scratch_dir(tag: &str) -> tempfile::TempDir {
    scratch_dir_mode(tag, 0o755)
}

/// A world-accessible scratch directory (for tests that drop privileges).
pub fn open_scratch_dir(tag: &str) -> tempfile::TempDir {
    let dir = scratch_dir_mode(tag, 0o777);
    // The mode given at creation is filtered by the umask; set it exactly.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    dir
}

fn scratch_dir_mode(tag: &str, mode: u32) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("splash-runners-{tag}-"))
        .permissions(std::fs::Permissions::from_mode(mode))
        .tempdir()
        .expect("create scratch dir")
}

/// Builds a `bash -c` line that opens `fds` (number, path) without
/// close-on-exec and then `exec`s `argv`, so the runner is the direct child
/// and inherits exactly those descriptors.
pub fn with_fds(fds: &[(u32, &Path)], argv: &[&str]) -> Command {
    let mut script = String::from("exec");
    for (i, (fd, _)) in fds.iter().enumerate() {
        script.push_str(&format!(" {fd}<\"${{{}}}\"", i + 1));
    }
    script.push_str("; exec");
    for i in 0..argv.len() {
        script.push_str(&format!(" \"${{{}}}\"", fds.len() + i + 1));
    }
    let mut command = Command::new("/bin/bash");
    command.arg("-c").arg(script).arg("bash");
    for (_, path) in fds {
        command.arg(path);
    }
    command.args(argv);
    command
}

/// A dash script that prints every open descriptor number from 3 to 255
/// using only `[ -e ]` (a stat, no open), so the probe itself opens nothing.
pub fn fd_probe_script() -> String {
    let numbers: Vec<String> = (3..=255).map(|n| n.to_string()).collect();
    format!(
        "for n in {}; do [ -e /proc/self/fd/$n ] && echo $n; done; true",
        numbers.join(" ")
    )
}

/// Minimal classic-BPF assembler for seccomp test programs.
pub mod bpf {
    /// `BPF_LD | BPF_W | BPF_ABS` (the first two are 0).
    const BPF_LD_W_ABS: u16 = 0x20;
    const BPF_JMP_JEQ_K: u16 = 0x05 | 0x10;
    const BPF_RET_K: u16 = 0x06;
    pub const RET_ALLOW: u32 = 0x7fff_0000;
    pub const RET_KILL_PROCESS: u32 = 0x8000_0000;
    pub const RET_ERRNO: u32 = 0x0005_0000;

    #[cfg(target_arch = "x86_64")]
    const AUDIT_ARCH: u32 = 0xc000_003e;
    #[cfg(target_arch = "aarch64")]
    const AUDIT_ARCH: u32 = 0xc000_00b7;

    fn insn(code: u16, jt: u8, jf: u8, k: u32) -> [u8; 8] {
        let mut out = [0; 8];
        out[..2].copy_from_slice(&code.to_ne_bytes());
        out[2] = jt;
        out[3] = jf;
        out[4..].copy_from_slice(&k.to_ne_bytes());
        out
    }

    /// Architecture check, then `ret action` for each listed syscall, then
    /// `ret default`.
    pub fn program(rules: &[(i64, u32)], default: u32) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend(insn(BPF_LD_W_ABS, 0, 0, 4)); // seccomp_data.arch
        p.extend(insn(BPF_JMP_JEQ_K, 1, 0, AUDIT_ARCH));
        p.extend(insn(BPF_RET_K, 0, 0, RET_KILL_PROCESS));
        p.extend(insn(BPF_LD_W_ABS, 0, 0, 0)); // seccomp_data.nr
        for &(nr, action) in rules {
            let nr = u32::try_from(nr).expect("syscall number");
            p.extend(insn(BPF_JMP_JEQ_K, 0, 1, nr));
            p.extend(insn(BPF_RET_K, 0, 0, action));
        }
        p.extend(insn(BPF_RET_K, 0, 0, default));
        p
    }

    /// An allowlist that kills on anything else.
    pub fn allowlist(numbers: &[i64]) -> Vec<u8> {
        let rules: Vec<(i64, u32)> = numbers.iter().map(|&n| (n, RET_ALLOW)).collect();
        program(&rules, RET_KILL_PROCESS)
    }

    /// What a dynamically linked `true` needs after the runner's `execve`,
    /// without `exit_group`.
    pub fn true_syscalls_without_exit_group() -> Vec<i64> {
        vec![
            libc::SYS_execve,
            libc::SYS_brk,
            libc::SYS_mmap,
            libc::SYS_munmap,
            libc::SYS_mprotect,
            #[cfg(target_arch = "x86_64")]
            libc::SYS_arch_prctl,
            #[cfg(target_arch = "x86_64")]
            libc::SYS_access,
            libc::SYS_faccessat,
            libc::SYS_openat,
            libc::SYS_newfstatat,
            libc::SYS_fstat,
            libc::SYS_read,
            libc::SYS_pread64,
            libc::SYS_close,
            libc::SYS_set_tid_address,
            libc::SYS_set_robust_list,
            libc::SYS_rseq,
            libc::SYS_prlimit64,
            libc::SYS_getrandom,
        ]
    }
}
