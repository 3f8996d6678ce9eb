//! Exec-chain cost of the runners.
//!
//! Runs a tiny statically linked target (a `main` that returns 0, built with
//! `cc -static` into a scratch directory) N times each:
//!
//! - directly;
//! - through `splash-limit-runner`;
//! - through `splash-landlock-runner` → `splash-limit-runner` → target (the
//!   two-hop chain);
//! - through `splash-runner` (rlimits and Landlock in one hop);
//!
//! and prints the mean wall time per launch (spawn to reap) and its ratio to
//! the direct launch. `SPLASH_HOP_RUNS` sets N (default 1000).
//! `SPLASH_RUNNERS_DIR` points at a directory holding other builds of the
//! three runners (for example statically linked release builds); by default
//! the binaries Cargo built for this bench are used, and when those are
//! dynamically linked their ELF loader is added to the Landlock list.
//!
//! Without a C compiler, the bench falls back to the system `true` (and says
//! so); Landlock chains are skipped (and said so) when the kernel lacks
//! Landlock.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn runner(name: &str, built: &str) -> String {
    match std::env::var_os("SPLASH_RUNNERS_DIR") {
        Some(dir) => Path::new(&dir).join(name).to_string_lossy().into_owned(),
        None => built.to_owned(),
    }
}

fn real(path: &str) -> String {
    std::fs::canonicalize(path)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| path.to_owned())
}

/// The resolved `PT_INTERP` of a 64-bit little-endian ELF file.
fn interpreter(path: &str) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    let u16_at = |o: usize| Some(u16::from_le_bytes(bytes.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(bytes.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(bytes.get(o..o + 8)?.try_into().ok()?));
    if bytes.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let phoff = usize::try_from(u64_at(0x20)?).ok()?;
    let phentsize = usize::from(u16_at(0x36)?);
    for i in 0..usize::from(u16_at(0x38)?) {
        let ph = phoff + i * phentsize;
        if u32_at(ph)? == 3 {
            let offset = usize::try_from(u64_at(ph + 8)?).ok()?;
            let size = usize::try_from(u64_at(ph + 32)?).ok()?;
            let raw = std::str::from_utf8(bytes.get(offset..offset + size)?).ok()?;
            return Some(real(raw.trim_end_matches('\0')));
        }
    }
    None
}

/// Builds the static target, or falls back to the system `true`.
fn target(dir: &Path) -> (String, &'static str) {
    let source = dir.join("target.c");
    let binary = dir.join("true-static");
    let built = std::fs::write(&source, "int main(void) { return 0; }\n").is_ok()
        && Command::new("cc")
            .args(["-static", "-O2", "-o"])
            .arg(&binary)
            .arg(&source)
            .status()
            .is_ok_and(|s| s.success());
    if built {
        (
            binary.to_string_lossy().into_owned(),
            "static `main` returning 0",
        )
    } else {
        (real("/bin/true"), "system `true` (no static C toolchain)")
    }
}

fn run_once(argv: &[String]) -> Duration {
    let start = Instant::now();
    let status = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status();
    let elapsed = start.elapsed();
    match status {
        Ok(s) if s.success() => elapsed,
        other => panic!("{argv:?} failed: {other:?}"),
    }
}

fn mean(argv: &[String], runs: u32) -> Duration {
    for _ in 0..runs.min(50) {
        run_once(argv);
    }
    let total: Duration = (0..runs).map(|_| run_once(argv)).sum();
    total / runs
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is accepted.
    let runs: u32 = std::env::var("SPLASH_HOP_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(1000);
    // 0755, as `mkdir` makes it: the sandboxed worker may run as another uid.
    let scratch = tempfile::Builder::new()
        .prefix("splash-hop-")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .tempdir()
        .expect("scratch directory");
    let dir: PathBuf = scratch.path().to_path_buf();
    let (target, target_kind) = target(&dir);

    let limit = runner(
        "splash-limit-runner",
        env!("CARGO_BIN_EXE_splash-limit-runner"),
    );
    let landlock = runner(
        "splash-landlock-runner",
        env!("CARGO_BIN_EXE_splash-landlock-runner"),
    );
    let one_hop = runner("splash-runner", env!("CARGO_BIN_EXE_splash-runner"));

    let mut allowed = vec![limit.clone(), target.clone()];
    for interp in [interpreter(&limit), interpreter(&target)]
        .into_iter()
        .flatten()
    {
        if !allowed.contains(&interp) {
            allowed.push(interp);
        }
    }
    let allow_flags: Vec<String> = allowed
        .iter()
        .flat_map(|p| ["--allow".to_owned(), p.clone()])
        .collect();
    let target_allow: Vec<String> = {
        let mut v = vec!["--allow".to_owned(), target.clone()];
        if let Some(interp) = interpreter(&target) {
            v.extend(["--allow".to_owned(), interp]);
        }
        v
    };
    let limits = ["--open-files".to_owned(), "64".to_owned()];

    let direct = vec![target.clone()];
    let via_limit: Vec<String> = std::iter::once(limit.clone())
        .chain(limits.iter().cloned())
        .chain(["--".to_owned(), target.clone()])
        .collect();
    let two_hops: Vec<String> = std::iter::once(landlock.clone())
        .chain(allow_flags)
        .chain(["--".to_owned()])
        .chain(via_limit.iter().cloned())
        .collect();
    let one: Vec<String> = std::iter::once(one_hop.clone())
        .chain(limits.iter().cloned())
        .chain(target_allow)
        .chain(["--".to_owned(), target.clone()])
        .collect();

    let landlock_ok = Command::new(&one[0])
        .args(&one[1..])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());

    println!("target: {target_kind}; runs per chain: {runs}");
    println!(
        "runners: {} ({})",
        Path::new(&limit)
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
        if interpreter(&limit).is_some() {
            "dynamically linked"
        } else {
            "statically linked"
        }
    );
    let base = mean(&direct, runs);
    let report = |name: &str, d: Duration| {
        println!(
            "{name:<48} {:>9.1} us   x{:.2}",
            d.as_secs_f64() * 1e6,
            d.as_secs_f64() / base.as_secs_f64()
        );
    };
    report("direct", base);
    report("limit-runner -> target", mean(&via_limit, runs));
    if landlock_ok {
        report(
            "landlock-runner -> limit-runner -> target",
            mean(&two_hops, runs),
        );
        report(
            "splash-runner (limits + landlock) -> target",
            mean(&one, runs),
        );
    } else {
        println!("landlock chains skipped: the kernel does not enforce landlock");
    }
}
