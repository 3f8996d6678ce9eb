//! Parse + check speed of `splashpol::check_source`.
//!
//! `cargo bench -p splash-tests --bench check` prints a Markdown table:
//!
//! - the specification's hardened example (`policies/agent-worker.splashpol`);
//! - a large generated policy: 256 roots, `active-roots max 256` and the
//!   longest warning-free strict allowlist (every syscall name that exists on
//!   x86_64, aarch64 and riscv64 and is not guarded);
//! - a 512-entry strict allowlist (that list plus repeats, reported as
//!   duplicates: fewer than 512 distinct names exist), the error path;
//! - a size sweep over 32..256 roots, with the time per root, to show growth,
//!   and the same policy at 10,000 and 100,000 roots;
//! - 100,000 roots that are all errors: every root after the first repeats
//!   its id, or every root lies inside the first one's destination.
//!
//! Each number is the median of 15 batches, each about 50 ms of repeated
//! calls. Times are on-CPU time of the benchmark thread (from
//! `/proc/thread-self/schedstat`), so waits for a busy CPU do not count; the
//! wall-clock median is printed beside it. Not a test: numbers depend on the
//! machine.

use std::fmt::Write as _;
use std::hint::black_box;
use std::time::{Duration, Instant};

use splash_seccomp::Arch;
use splash_tests::workspace_root;

/// Syscall names allowed in a strict list on every supported architecture.
fn portable_allowed_syscalls() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Arch::X86_64
        .syscalls()
        .iter()
        .map(|&(n, _)| n)
        .filter(|n| {
            Arch::ALL
                .iter()
                .all(|&a| splash_seccomp::syscall_number(a, n).is_some())
        })
        .filter(|n| splash_seccomp::strict_rejection(n).is_none())
        .filter(|n| splash_seccomp::strict_listing_warning(n).is_none())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// A valid policy with `roots` file roots (alternating read-only host roots
/// and scratch tmpfs roots) and, optionally, a strict allowlist.
fn generated_policy(roots: usize, syscalls: &[&str]) -> String {
    let mut s = String::from(
        "splashpol 1\n\npolicy \"generated\" {\n  bubblewrap \"/usr/bin/bwrap\"\n  \
         worker \"/opt/splash/bin/worker\" args [\"--json-lines\"]\n  \
         runtime \"/opt/splash/runtime\" at \"/opt/splash\"\n  \
         active-roots max 256\n  tmp private size 64 MiB\n  writes bounded\n  \
         user-namespaces none\n  pin mounts, executables\n",
    );
    for i in 0..roots {
        if i % 2 == 0 {
            let _ = writeln!(
                s,
                "  root \"project-{i}\" host \"/srv/splash/project-{i}\" at \"/workspace/project-{i}\" read-only"
            );
        } else {
            let _ = writeln!(
                s,
                "  root \"scratch-{i}\" tmpfs at \"/workspace/scratch-{i}\" size 32 MiB"
            );
        }
    }
    if syscalls.is_empty() {
        s.push_str("  seccomp deny-known-escape-surface\n");
    } else {
        s.push_str("  seccomp strict-allowlist {\n");
        for chunk in syscalls.chunks(8) {
            let _ = writeln!(s, "    {}", chunk.join(" "));
        }
        s.push_str("  }\n");
    }
    s.push_str(
        "  limits runner \"/opt/splash/bin/splash-limit-runner\" required {\n    \
         cpu 30 s; address-space 512 MiB; open-files 64; file-size 16 MiB\n  }\n}\n",
    );
    s
}

/// How the roots of [`erroneous_policy`] are wrong.
#[derive(Debug, Clone, Copy)]
enum RootErrors {
    /// Every root has the id `r`: each after the first is a duplicate.
    DuplicateIds,
    /// The first root is mounted at `/workspace`, every other one below it.
    Nested,
}

/// [`generated_policy`] without a strict allowlist, but with `roots` file
/// roots of which all but the first are errors.
fn erroneous_policy(roots: usize, errors: RootErrors) -> String {
    let valid = generated_policy(0, &[]);
    let (head, tail) = valid.split_at(valid.find("  seccomp").expect("seccomp line"));
    let mut s = head.to_string();
    for i in 0..roots {
        let (id, dest) = match errors {
            RootErrors::DuplicateIds => ("r".to_string(), format!("/workspace/project-{i}")),
            RootErrors::Nested if i == 0 => ("r".to_string(), "/workspace".to_string()),
            RootErrors::Nested => (format!("r{i}"), format!("/workspace/project-{i}")),
        };
        let _ = writeln!(
            s,
            "  root \"{id}\" host \"/srv/splash/project-{i}\" at \"{dest}\" read-only"
        );
    }
    s.push_str(tail);
    s
}

/// On-CPU time of the calling thread (`/proc/thread-self/schedstat`), so a
/// busy machine's run-queue waits do not count; `None` without schedstat.
fn thread_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
    (ns > 0).then(|| Duration::from_nanos(ns))
}

/// One measurement: medians over 15 batches of wall-clock and on-CPU time
/// per call.
#[derive(Debug, Clone, Copy)]
struct Timing {
    wall: Duration,
    cpu: Option<Duration>,
}

fn measure(run: impl Fn()) -> Timing {
    // Warm up and size a batch to about 50 ms.
    let start = Instant::now();
    let mut calibration = 0u32;
    while start.elapsed() < Duration::from_millis(50) {
        run();
        calibration += 1;
    }
    let per_batch = calibration.max(1);
    let mut wall = Vec::new();
    let mut cpu = Vec::new();
    for _ in 0..15 {
        let c = thread_cpu();
        let t = Instant::now();
        for _ in 0..per_batch {
            run();
        }
        wall.push(t.elapsed() / per_batch);
        if let (Some(before), Some(after)) = (c, thread_cpu()) {
            cpu.push(after.saturating_sub(before) / per_batch);
        }
    }
    wall.sort();
    cpu.sort();
    Timing {
        wall: wall[wall.len() / 2],
        cpu: (cpu.len() == wall.len()).then(|| cpu[cpu.len() / 2]),
    }
}

fn check(source: &str) -> Timing {
    measure(|| {
        black_box(splashpol::check_source(
            "bench.splashpol",
            black_box(source),
        ));
    })
}

fn parse_only(source: &str) -> Timing {
    measure(|| {
        black_box(splashpol::syntax::Outline::parse(black_box(source)));
    })
}

/// The time to report: on-CPU when available, else wall-clock.
fn best(t: Timing) -> Duration {
    t.cpu.unwrap_or(t.wall)
}

fn row(label: &str, source: &str, roots: Option<usize>) {
    let p = parse_only(source);
    let c = check(source);
    let per_root = roots.map_or(String::new(), |n| {
        format!("{:.2} µs", micros(best(c)) / n as f64)
    });
    println!(
        "| {label} | {} B | {:.1} µs | {:.1} µs | {:.1} µs | {per_root} |",
        source.len(),
        micros(best(p)),
        micros(best(c)),
        micros(c.wall),
    );
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing
    // special. Either way: run once, print the table.
    let root = workspace_root();
    let example_path = root.join("policies/agent-worker.splashpol");
    let example = std::fs::read_to_string(&example_path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", example_path.display()));
    let syscalls = portable_allowed_syscalls();
    let large = generated_policy(256, &syscalls);
    let mut long_list: Vec<&str> = syscalls.clone();
    while long_list.len() < 512 {
        long_list.push(syscalls[long_list.len() % syscalls.len()]);
    }
    let list_512 = generated_policy(256, &long_list);

    // The inputs are what they claim to be.
    let checked = splashpol::check_source("agent-worker.splashpol", &example);
    assert!(
        !checked.has_errors(),
        "the hardened example must check clean"
    );
    let checked = splashpol::check_source("large.splashpol", &large);
    assert!(
        checked.diagnostics.is_empty(),
        "the large policy must check clean:\n{}",
        checked.render_human("large.splashpol", &large)
    );
    let checked = splashpol::check_source("list-512.splashpol", &list_512);
    assert_eq!(
        checked.errors().count(),
        512 - syscalls.len(),
        "every repeat in the 512-entry list is one duplicate error"
    );

    println!("| input | size | parse | parse + check | parse + check (wall) | per root |");
    println!("|---|---:|---:|---:|---:|---:|");
    row(
        "hardened example (`policies/agent-worker.splashpol`)",
        &example,
        None,
    );
    row(
        &format!("256 roots + {}-syscall strict list (valid)", syscalls.len()),
        &large,
        Some(256),
    );
    row(
        &format!(
            "256 roots + 512-entry strict list ({} duplicates reported)",
            512 - syscalls.len()
        ),
        &list_512,
        Some(256),
    );
    for roots in [32, 64, 128, 256, 10_000, 100_000] {
        let source = generated_policy(roots, &[]);
        let checked = splashpol::check_source("sweep.splashpol", &source);
        assert!(checked.diagnostics.is_empty(), "sweep policy must be clean");
        row(&format!("sweep: {roots} roots"), &source, Some(roots));
    }
    for (errors, what) in [
        (RootErrors::DuplicateIds, "duplicate ids"),
        (RootErrors::Nested, "nested destinations"),
    ] {
        let roots = 100_000;
        let source = erroneous_policy(roots, errors);
        let checked = splashpol::check_source("errors.splashpol", &source);
        assert_eq!(
            checked.errors().count(),
            roots - 1,
            "every root but the first is one error"
        );
        row(
            &format!("{roots} roots, {} errors: {what}", roots - 1),
            &source,
            Some(roots),
        );
    }
    if thread_cpu().is_none() {
        println!("\n(no schedstat: times are wall-clock)");
    }
}
