//! Benchmark: instructions executed per syscall (counted by the interpreter)
//! for the generated programs against a straightforward linear encoding of
//! the same rules, and the measured cost of `getppid` in a process under the
//! compatibility filter against no filter.
//!
//! Run with `cargo bench -p splash-seccomp --bench filter`.

use std::collections::BTreeSet;
use std::time::Duration;

use splash_seccomp::bpf::{
    BPF_ABS, BPF_JEQ, BPF_JMP, BPF_JSET, BPF_K, BPF_LD, BPF_RET, BPF_W, OFF_ARCH, OFF_IP_LO,
    OFF_NR, SockFilter, off_arg_lo,
};
use splash_seccomp::interp::execute;
use splash_seccomp::{
    Action, Arch, ArgCond, Fallback, Profile, Program, RuleSet, SeccompData, SyscallName,
    X32_SYSCALL_BIT, compile, strict_rejection,
};

#[path = "../tests/support/sys.rs"]
#[expect(dead_code, reason = "the benchmark runs only the timing probe")]
mod sys;

use sys::{Prepared, time_getppid};

/// The obvious encoding: architecture and x32 checks, then one `jeq` per
/// guard in order, then one `jeq` per allowed syscall, then the default.
fn linear(rules: &RuleSet) -> Vec<SockFilter> {
    let ld = |k| SockFilter::stmt(BPF_LD | BPF_W | BPF_ABS, k);
    let ret = |a: Action| SockFilter::stmt(BPF_RET | BPF_K, a.to_ret());
    let mut p = vec![
        ld(OFF_ARCH),
        SockFilter::jump(BPF_JMP | BPF_JEQ | BPF_K, rules.arch().audit_arch(), 1, 0),
        ret(Action::KillProcess),
        ld(OFF_NR),
    ];
    if rules.kills_x32() {
        p.push(SockFilter::jump(
            BPF_JMP | BPF_JSET | BPF_K,
            X32_SYSCALL_BIT,
            0,
            1,
        ));
        p.push(ret(Action::KillProcess));
    }
    for g in rules.guards() {
        let mut block = Vec::new();
        match &g.cond {
            None => block.push(ret(g.action)),
            Some(ArgCond::AnyBitsLow32 { arg, mask }) => {
                block.push(ld(off_arg_lo(*arg)));
                block.push(SockFilter::jump(BPF_JMP | BPF_JSET | BPF_K, *mask, 0, 1));
                block.push(ret(g.action));
                block.push(ld(OFF_NR));
            }
            Some(ArgCond::NoBitsLow32 { arg, mask }) => {
                block.push(ld(off_arg_lo(*arg)));
                block.push(SockFilter::jump(BPF_JMP | BPF_JSET | BPF_K, *mask, 1, 0));
                block.push(ret(g.action));
                block.push(ld(OFF_NR));
            }
            Some(ArgCond::EqualsLow32 { arg, values }) => {
                block.push(ld(off_arg_lo(*arg)));
                for (i, v) in values.iter().enumerate() {
                    // Jump to the `ret` after the remaining comparisons.
                    let to_ret = u8::try_from(values.len() - i - 1).unwrap_or(0);
                    block.push(SockFilter::jump(BPF_JMP | BPF_JEQ | BPF_K, *v, to_ret, 0));
                }
                // No match: skip the `ret`.
                block.push(SockFilter::jump(
                    BPF_JMP | BPF_JEQ | BPF_K,
                    0xffff_ffff,
                    0,
                    1,
                ));
                block.push(ret(g.action));
                block.push(ld(OFF_NR));
            }
        }
        let skip = u8::try_from(block.len()).unwrap_or(u8::MAX);
        p.push(SockFilter::jump(BPF_JMP | BPF_JEQ | BPF_K, g.nr, 0, skip));
        p.extend(block);
    }
    if let Fallback::AllowOnly(set) = rules.fallback() {
        for nr in set {
            p.push(SockFilter::jump(BPF_JMP | BPF_JEQ | BPF_K, *nr, 0, 1));
            p.push(ret(Action::Allow));
        }
    }
    p.push(ret(rules.default_action()));
    p
}

fn strict_300(arch: Arch) -> BTreeSet<SyscallName> {
    let name = |n: &str| SyscallName::new(n).expect("a table name");
    let mut out: BTreeSet<SyscallName> = arch
        .syscalls()
        .iter()
        .map(|&(n, _)| n)
        .filter(|n| strict_rejection(n).is_none())
        .take(300)
        .map(name)
        .collect();
    out.insert(name("execve"));
    out
}

struct Counts {
    mean: f64,
    max: usize,
}

/// Instructions executed, averaged over every known syscall of the
/// architecture (arguments zero); also checks both encodings agree with the
/// rule set.
fn counts(rules: &RuleSet, insns: &[SockFilter]) -> Counts {
    let arch = rules.arch();
    let mut total = 0usize;
    let mut max = 0usize;
    for &(name, nr) in arch.syscalls() {
        let data = SeccompData::new(arch, nr);
        let Ok(run) = execute(insns, &data) else {
            panic!("program failed to run for `{name}`");
        };
        assert_eq!(
            Action::from_ret(run.ret),
            Some(rules.decide(&data)),
            "`{name}`"
        );
        total += run.executed;
        max = max.max(run.executed);
    }
    Counts {
        mean: total as f64 / arch.syscalls().len() as f64,
        max,
    }
}

fn per_call(d: Duration, calls: u32) -> f64 {
    d.as_nanos() as f64 / f64::from(calls)
}

/// Median and minimum of the per-call times.
fn summary(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0])
}

fn main() {
    println!("instructions executed per syscall (mean over every known syscall / worst case)");
    println!(
        "{:<8} {:<28} {:>6} {:>14} {:>14} {:>8}",
        "arch", "profile", "len", "ours mean/max", "linear mean/max", "ratio"
    );
    for arch in Arch::ALL {
        for (label, profile) in [
            ("deny-known-escape-surface", Profile::DenyKnownEscapeSurface),
            (
                "strict, 300 syscalls",
                Profile::StrictAllowlist(strict_300(arch)),
            ),
        ] {
            let Ok(rules) = RuleSet::for_profile(&profile, arch) else {
                panic!("rule set for {label}");
            };
            let Ok(ours) = compile(&profile, arch) else {
                panic!("compile {label}");
            };
            let lin = linear(&rules);
            let a = counts(&rules, &ours.insns);
            let b = counts(&rules, &lin);
            let stats = ours.stats();
            println!(
                "{:<8} {:<28} {:>6} {:>8.2}/{:<5} {:>8.2}/{:<5} {:>7.2}x   (linear len {}, cache-eligible {}/{}, worst case {})",
                arch.name(),
                label,
                stats.len,
                a.mean,
                a.max,
                b.mean,
                b.max,
                b.mean / a.mean,
                lin.len(),
                stats.cache_eligible_syscalls,
                stats.known_syscalls,
                stats.worst_case_executed,
            );
        }
    }

    let Some(host) = Arch::host() else {
        println!("SKIP: getppid timing needs a supported host architecture");
        return;
    };
    let Ok(ours) = compile(&Profile::DenyKnownEscapeSurface, host) else {
        panic!("compile");
    };
    let Ok(rules) = RuleSet::for_profile(&Profile::DenyKnownEscapeSurface, host) else {
        panic!("rules");
    };
    let lin = Program {
        arch: host,
        insns: linear(&rules),
        skipped: Vec::new(),
    };
    // The same program behind a load of `instruction_pointer`: nothing is
    // cache eligible any more, so every call runs the filter. This shows
    // what the action cache saves.
    let mut uncached = ours.clone();
    uncached
        .insns
        .insert(0, SockFilter::stmt(BPF_LD | BPF_W | BPF_ABS, OFF_IP_LO));
    assert_eq!(uncached.stats().cache_eligible_syscalls, 0);
    let (Ok(p_ours), Ok(p_lin), Ok(p_unc)) = (
        Prepared::new(&ours),
        Prepared::new(&lin),
        Prepared::new(&uncached),
    ) else {
        panic!("prepare");
    };
    const CALLS: u32 = 2_000_000;
    const ROUNDS: usize = 11;
    let mut none = Vec::new();
    let mut with_ours = Vec::new();
    let mut with_lin = Vec::new();
    let mut with_unc = Vec::new();
    for _ in 0..ROUNDS {
        let run = |f| match time_getppid(f, CALLS) {
            Ok(d) => per_call(d, CALLS),
            Err(e) => {
                println!("SKIP: getppid timing failed: {e}");
                f64::NAN
            }
        };
        none.push(run(None));
        with_ours.push(run(Some(&p_ours)));
        with_lin.push(run(Some(&p_lin)));
        with_unc.push(run(Some(&p_unc)));
    }
    println!();
    println!(
        "getppid cost on {} ({CALLS} calls per child, {ROUNDS} children each, interleaved): median / min ns per call, ratio to no filter",
        host.name()
    );
    let (n_med, n_min) = summary(none);
    println!("  {:<24} {n_med:>7.1} / {n_min:>7.1}", "no filter");
    for (label, v) in [
        ("compat filter (ours)", with_ours),
        ("compat filter (linear)", with_lin),
        ("ours, cache defeated", with_unc),
    ] {
        let (med, min) = summary(v);
        println!(
            "  {label:<24} {med:>7.1} / {min:>7.1}   ratio {:.3} / {:.3}",
            med / n_med,
            min / n_min
        );
    }
}
