//! Translation validation: every emitted program, run by the cBPF
//! interpreter, returns exactly what the rule set decides, for every
//! architecture, syscall number of interest and guard argument case.

mod support;

use std::collections::BTreeSet;

use splash_seccomp::bpf::{BPF_JA, BPF_JMP, SECCOMP_RET_ALLOW};
use splash_seccomp::guards::{CLONE_NAMESPACE_FLAGS, TIOCLINUX, TIOCSTI};
use splash_seccomp::interp::{execute, is_constant_allow, verify};
use splash_seccomp::{
    Action, Arch, Profile, RuleSet, SeccompData, SyscallName, X32_SYSCALL_BIT, compile,
    compile_rules, syscall_number,
};

const NS_FLAGS: [u64; 8] = [
    0x80,
    0x0002_0000,
    0x0200_0000,
    0x0400_0000,
    0x0800_0000,
    0x1000_0000,
    0x2000_0000,
    0x4000_0000,
];

/// Argument vectors exercising the guards: namespace flags alone and in
/// combination, ordinary clone flags, high bits, TIOCSTI and other ioctls.
fn arg_cases() -> Vec<[u64; 6]> {
    let mut v: Vec<u64> = vec![
        0,
        u64::MAX,
        0x11,        // SIGCHLD: fork-like clone
        0x003d_0f00, // pthread_create flags
        0x003d_0f00 | 0x11,
        u64::from(CLONE_NAMESPACE_FLAGS),
        0x1000_0000 | 0x2000_0000 | 0x11,
        1 << 32,
        0x1000_0000_u64 << 32, // CLONE_NEWUSER in the ignored high half
        (0xffff_ffff_u64 << 32) | 0x11, // high bits with an ordinary clone
        u64::from(TIOCSTI),
        u64::from(TIOCLINUX),
        (1 << 32) | u64::from(TIOCSTI), // junk high bits: still TIOCSTI
        (0xdead_beef_u64 << 32) | u64::from(TIOCLINUX),
        0x1,                 // MFD_CLOEXEC: an executable memfd
        0x9,                 // MFD_CLOEXEC | MFD_NOEXEC_SEAL
        0x10,                // MFD_EXEC
        (1 << 32) | 0x1,     // junk high bits, still no seal
        (0x8_u64 << 32) | 1, // the seal only in the ignored high half
        0x5401,              // TCGETS
        0x5413,              // TIOCGWINSZ
        0x541b,              // FIONREAD
        u64::from(TIOCSTI) + 1,
        u64::from(TIOCSTI) << 32, // TIOCSTI only in the high half: not TIOCSTI
    ];
    v.extend(NS_FLAGS);
    v.extend(NS_FLAGS.iter().map(|f| f | 0x11));
    v.extend(NS_FLAGS.iter().map(|f| f | (0xffff_ffff << 32)));
    let mut out = Vec::new();
    for a in &v {
        // The same value in every argument slot, so both the clone flags
        // (arg 0) and the ioctl request (arg 1) see it.
        out.push([*a; 6]);
        out.push([*a, 0, 0, 0, 0, 0]);
        out.push([3, *a, 0, 0, 0, 0]);
    }
    out
}

fn numbers(arch: Arch) -> Vec<u32> {
    let max = arch.max_syscall_number();
    let mut v: Vec<u32> = (0..=1100).collect();
    v.extend((0..=600).map(|n| X32_SYSCALL_BIT | n));
    v.extend((max + 1..max + 64).chain([
        X32_SYSCALL_BIT - 1,
        0x7fff_ffff,
        0x8000_0000,
        0x8000_0000 | 59,
        0xc000_0000,
        0xffff_fffe,
        u32::MAX,
        u16::MAX.into(),
        0x1_0000,
    ]));
    v
}

fn wrong_arches(arch: Arch) -> Vec<u32> {
    let mut v: Vec<u32> = Arch::ALL
        .iter()
        .filter(|&&a| a != arch)
        .map(|a| a.audit_arch())
        .collect();
    v.extend([
        0,
        0x4000_0003, // i386
        0x4000_0028, // arm
        0x8000_0016, // s390x
        arch.audit_arch() ^ 0x8000_0000,
        arch.audit_arch() ^ 0x4000_0000,
        arch.audit_arch() + 1,
        u32::MAX,
    ]);
    v
}

fn profiles(arch: Arch) -> Vec<(String, Profile)> {
    let small = support::names(&["execve", "exit_group", "read", "write"]);
    let with_guarded = support::names(&[
        "execve",
        "exit_group",
        "clone",
        "ioctl",
        "getppid",
        "open",
        "fork",
        "memfd_create",
    ]);
    vec![
        ("deny-known".to_owned(), Profile::DenyKnownEscapeSurface),
        ("small".to_owned(), Profile::StrictAllowlist(small)),
        (
            "with-clone-ioctl".to_owned(),
            Profile::StrictAllowlist(with_guarded),
        ),
        (
            "300".to_owned(),
            Profile::StrictAllowlist(support::strict_list(Arch::X86_64, 300)),
        ),
        (
            "300-native".to_owned(),
            Profile::StrictAllowlist(support::strict_list(arch, 300)),
        ),
        (
            "alternating".to_owned(),
            Profile::StrictAllowlist(support::alternating_list(arch)),
        ),
        ("baseline".to_owned(), Profile::Baseline),
    ]
}

#[test]
fn programs_agree_with_the_rule_set_everywhere() {
    let args = arg_cases();
    for arch in Arch::ALL {
        let launches = profiles(arch).into_iter().flat_map(|(label, p)| {
            [
                (label.clone(), p.clone(), false),
                (label + "+exec", p, true),
            ]
        });
        for (label, profile, exec_allowlist) in launches {
            let rules = RuleSet::for_launch(&profile, arch, exec_allowlist).expect("rule set");
            let program =
                splash_seccomp::compile_launch(&profile, arch, exec_allowlist).expect("compiles");
            verify(&program.insns).expect("the kernel's checks accept the program");
            let stats = program.stats();
            let guarded: BTreeSet<u32> = rules
                .guards()
                .iter()
                .filter(|g| g.cond.is_some())
                .map(|g| g.nr)
                .collect();
            let mut max_seen = 0;
            let mut checked = 0usize;
            for nr in numbers(arch) {
                let plain = SeccompData::new(arch, nr);
                let cases: Vec<SeccompData> = if guarded.contains(&nr) {
                    args.iter()
                        .map(|a| SeccompData { args: *a, ..plain })
                        .collect()
                } else {
                    vec![
                        plain,
                        SeccompData {
                            args: [u64::MAX; 6],
                            instruction_pointer: u64::MAX,
                            ..plain
                        },
                    ]
                };
                for data in cases {
                    let run = execute(&program.insns, &data).expect("runs");
                    let want = rules.decide(&data);
                    assert_eq!(
                        Action::from_ret(run.ret),
                        Some(want),
                        "{} {label}: nr {nr:#x} args {:x?}",
                        arch.name(),
                        data.args
                    );
                    if !guarded.contains(&nr) {
                        assert!(
                            !run.loaded_other_fields,
                            "{} {label}: nr {nr:#x} loads arguments it does not need",
                            arch.name()
                        );
                    }
                    max_seen = max_seen.max(run.executed);
                    checked += 1;
                }
                for wrong in wrong_arches(arch) {
                    let data = SeccompData {
                        arch: wrong,
                        ..plain
                    };
                    let run = execute(&program.insns, &data).expect("runs");
                    assert_eq!(Action::from_ret(run.ret), Some(Action::KillProcess));
                    assert_eq!(rules.decide(&data), Action::KillProcess);
                }
            }
            assert!(checked > 1000);
            assert!(
                max_seen <= stats.worst_case_executed,
                "{label}: {max_seen} > {stats:?}"
            );
            assert!(stats.len <= 4096);
            // Cache eligibility follows the kernel's rule: number-only
            // allow decisions are cacheable, argument-dependent ones are not.
            let mut eligible = 0;
            for &(name, nr) in arch.syscalls() {
                let cacheable = is_constant_allow(&program.insns, arch.audit_arch(), nr);
                let allowed_without_args = !guarded.contains(&nr)
                    && rules.decide(&SeccompData::new(arch, nr)) == Action::Allow;
                assert_eq!(
                    cacheable,
                    allowed_without_args,
                    "{} {label}: `{name}`",
                    arch.name()
                );
                eligible += usize::from(cacheable);
            }
            assert_eq!(eligible, stats.cache_eligible_syscalls);
        }
    }
}

#[test]
fn compilation_is_deterministic() {
    for arch in Arch::ALL {
        for (_, profile) in profiles(arch) {
            let a = compile(&profile, arch).expect("compiles").to_bytes();
            let b = compile(&profile, arch).expect("compiles").to_bytes();
            assert_eq!(a, b);
        }
    }
}

#[test]
fn far_targets_go_through_long_jumps() {
    for arch in Arch::ALL {
        // Every other number plus the argument-guarded calls, whose leaves
        // load arguments: far more than 255 instructions between a branch
        // and some of its targets.
        let mut list = support::alternating_list(arch);
        for name in ["clone", "ioctl", "memfd_create"] {
            list.insert(support::name(name));
        }
        let program = splash_seccomp::compile_launch(&Profile::StrictAllowlist(list), arch, true)
            .expect("compiles");
        assert!(
            program.insns.len() > 300,
            "{}: {}",
            arch.name(),
            program.insns.len()
        );
        let jas = program
            .insns
            .iter()
            .filter(|i| i.code == BPF_JMP | BPF_JA)
            .count();
        assert!(
            jas > 0,
            "{}: no long jump in a {}-instruction program",
            arch.name(),
            program.insns.len()
        );
        verify(&program.insns).expect("valid");
    }
}

#[test]
fn guards_win_over_the_strict_list() {
    let profile = Profile::StrictAllowlist(support::names(&["execve", "clone", "ioctl"]));
    for arch in Arch::ALL {
        let p = compile(&profile, arch).expect("compiles");
        let run = |nr: &str, args: [u64; 6]| {
            let nr = syscall_number(arch, nr).expect("known");
            execute(
                &p.insns,
                &SeccompData {
                    args,
                    ..SeccompData::new(arch, nr)
                },
            )
            .expect("runs")
            .ret
        };
        assert_eq!(
            Action::from_ret(run("clone", [0x1000_0011, 0, 0, 0, 0, 0])),
            Some(Action::Errno(1))
        );
        assert_eq!(run("clone", [0x11, 0, 0, 0, 0, 0]), SECCOMP_RET_ALLOW);
        assert_eq!(
            Action::from_ret(run("ioctl", [0, u64::from(TIOCSTI), 0, 0, 0, 0])),
            Some(Action::Errno(1))
        );
        assert_eq!(run("ioctl", [0, 0x5413, 0, 0, 0, 0]), SECCOMP_RET_ALLOW);
        assert_eq!(
            Action::from_ret(run("clone3", [0; 6])),
            Some(Action::Errno(38))
        );
        // The fixed deny set comes first even though the list does not name
        // it; an unlisted ordinary syscall is killed.
        assert_eq!(
            Action::from_ret(run("mount", [0; 6])),
            Some(Action::Errno(1))
        );
        assert_eq!(
            Action::from_ret(run("getppid", [0; 6])),
            Some(Action::KillProcess)
        );
    }
}

/// Every class of syscall under a strict list, on every architecture: the
/// specification's fixed deny set and the unlisted reviewed additions answer
/// EPERM, a listed addition is allowed, the guarded forms of unlisted `clone`
/// and `ioctl` answer EPERM and their other forms are killed, `clone3`
/// answers ENOSYS and every other unlisted syscall is killed.
#[test]
fn strict_lists_apply_the_fixed_guards_first() {
    use splash_seccomp::guards::{DENIED, Origin};
    let eperm = Action::Errno(1);
    let lifted = ["kcmp", "statmount", "syslog", "modify_ldt"];
    let mut list = vec!["execve", "exit_group", "getppid"];
    list.extend(lifted);
    let profile = Profile::StrictAllowlist(support::names(&list));
    for arch in Arch::ALL {
        let rules = RuleSet::for_profile(&profile, arch).expect("rules");
        let program = compile(&profile, arch).expect("compiles");
        let run = |name: &str, args: [u64; 6]| -> Option<Action> {
            let nr = syscall_number(arch, name)?;
            let data = SeccompData {
                args,
                ..SeccompData::new(arch, nr)
            };
            let got = Action::from_ret(execute(&program.insns, &data).expect("runs").ret);
            assert_eq!(got, Some(rules.decide(&data)), "{name} on {}", arch.name());
            got
        };
        for d in DENIED {
            let want = match d.origin {
                Origin::Specification => eperm,
                Origin::Addition { .. } if lifted.contains(&d.name) => Action::Allow,
                Origin::Addition { .. } => eperm,
            };
            if let Some(got) = run(d.name, [0; 6]) {
                assert_eq!(got, want, "{} on {}", d.name, arch.name());
            }
        }
        let flags = u64::from(CLONE_NAMESPACE_FLAGS);
        assert_eq!(run("clone", [flags, 0, 0, 0, 0, 0]), Some(eperm));
        assert_eq!(
            run("clone", [0x11, 0, 0, 0, 0, 0]),
            Some(Action::KillProcess)
        );
        assert_eq!(
            run("ioctl", [0, u64::from(TIOCSTI), 0, 0, 0, 0]),
            Some(eperm)
        );
        assert_eq!(
            run("ioctl", [0, u64::from(TIOCLINUX), 0, 0, 0, 0]),
            Some(eperm)
        );
        assert_eq!(
            run("ioctl", [0, 0x5413, 0, 0, 0, 0]),
            Some(Action::KillProcess)
        );
        assert_eq!(run("clone3", [0; 6]), Some(Action::Errno(38)));
        assert_eq!(run("getppid", [0; 6]), Some(Action::Allow));
        for unlisted in ["read", "openat", "chroot", "seccomp", "memfd_create"] {
            assert_eq!(
                run(unlisted, [0; 6]),
                Some(Action::KillProcess),
                "{unlisted}"
            );
        }
    }
}

#[test]
fn rule_sets_can_be_compiled_directly() {
    let rules =
        RuleSet::for_profile(&Profile::DenyKnownEscapeSurface, Arch::Riscv64).expect("rules");
    let a = compile_rules(&rules).expect("compiles");
    let b = compile(&Profile::DenyKnownEscapeSurface, Arch::Riscv64).expect("compiles");
    assert_eq!(a, b);
}

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn random_strict_lists_agree_with_the_rule_set() {
    let mut rng = Rng(0x5eed_cafe_f00d_0001);
    let all: Vec<&str> = {
        let mut v: Vec<&str> = Arch::ALL
            .iter()
            .flat_map(|a| a.syscalls().iter().map(|&(n, _)| n))
            .filter(|n| !support::is_rejected(n))
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let args = arg_cases();
    for round in 0..60 {
        let size = 1 + rng.below(all.len());
        let mut list: BTreeSet<SyscallName> = (0..size)
            .map(|_| support::name(all[rng.below(all.len())]))
            .collect();
        list.insert(support::name("execve"));
        let profile = Profile::StrictAllowlist(list);
        for arch in Arch::ALL {
            let rules = RuleSet::for_profile(&profile, arch).expect("rule set");
            let program = compile(&profile, arch).expect("compiles");
            verify(&program.insns).expect("valid");
            let max = arch.max_syscall_number() + 8;
            for nr in (0..=max).chain([X32_SYSCALL_BIT | 1, u32::MAX]) {
                let base = SeccompData::new(arch, nr);
                let pick = args[rng.below(args.len())];
                for data in [base, SeccompData { args: pick, ..base }] {
                    let got = execute(&program.insns, &data).expect("runs");
                    assert_eq!(
                        Action::from_ret(got.ret),
                        Some(rules.decide(&data)),
                        "round {round} {}: nr {nr} args {:x?}",
                        arch.name(),
                        data.args
                    );
                }
            }
        }
    }
}
