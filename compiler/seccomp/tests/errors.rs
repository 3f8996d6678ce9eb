//! Compile errors and per-architecture resolution of strict lists.

mod support;

use std::collections::BTreeSet;

use splash_seccomp::{
    Action, Arch, ArgCond, CompileError, Fallback, Guard, Profile, RuleSet, StrictRejection,
    SyscallName, UnknownSyscall, compile, syscall_number,
};

fn strict(list: &[&str]) -> Profile {
    Profile::StrictAllowlist(support::names(list))
}

#[test]
fn strict_list_errors() {
    for arch in Arch::ALL {
        assert_eq!(
            compile(&Profile::StrictAllowlist(BTreeSet::new()), arch),
            Err(CompileError::EmptyAllowlist)
        );
        assert_eq!(
            compile(&strict(&["execve", "clone3"]), arch),
            Err(CompileError::RejectedSyscall {
                name: "clone3".to_owned(),
                reason: StrictRejection::Clone3,
            })
        );
        // Every member of the specification's fixed deny set is refused;
        // a reviewed addition is not.
        for name in [
            "mount",
            "unshare",
            "setns",
            "bpf",
            "io_uring_setup",
            "ptrace",
        ] {
            assert_eq!(
                compile(&strict(&["execve", name]), arch),
                Err(CompileError::RejectedSyscall {
                    name: name.to_owned(),
                    reason: StrictRejection::FixedGuard,
                })
            );
        }
        assert!(compile(&strict(&["execve", "kcmp", "statmount", "syslog"]), arch).is_ok());
        assert_eq!(
            compile(&strict(&["read", "write"]), arch),
            Err(CompileError::MissingExecve { arch })
        );
    }
    // An unknown name never reaches the compiler: it is not a `SyscallName`.
    let e = SyscallName::new("exceve").expect_err("unknown");
    assert_eq!(
        e,
        UnknownSyscall {
            name: "exceve".to_owned(),
            suggestion: Some("execve"),
        }
    );
    assert_eq!(
        e.to_string(),
        "unknown syscall `exceve` (did you mean `execve`?)"
    );
}

#[test]
fn names_missing_on_one_architecture_are_skipped_there_only() {
    let p = strict(&["execve", "open", "fork", "riscv_flush_icache", "read"]);
    let x = compile(&p, Arch::X86_64).expect("x86_64");
    assert_eq!(x.skipped, vec!["riscv_flush_icache".to_owned()]);
    let a = compile(&p, Arch::Aarch64).expect("aarch64");
    assert_eq!(a.skipped, vec!["fork", "open", "riscv_flush_icache"]);
    let r = compile(&p, Arch::Riscv64).expect("riscv64");
    assert_eq!(r.skipped, vec!["fork", "open"]);
    // `execve` must exist on each architecture after skipping.
    assert_eq!(
        compile(&strict(&["open", "fork"]), Arch::Aarch64),
        Err(CompileError::MissingExecve {
            arch: Arch::Aarch64
        })
    );
}

#[test]
fn hand_built_rule_sets_are_validated() {
    let arch = Arch::X86_64;
    let nr = |n| syscall_number(arch, n).expect("known");
    let execve: BTreeSet<u32> = [nr("execve")].into();
    let guard = |name, cond, action| Guard {
        name,
        nr: nr(name),
        cond,
        action,
    };
    // A number the architecture does not have.
    let bad = Guard {
        name: "nothing",
        nr: 400,
        cond: None,
        action: Action::Errno(1),
    };
    assert!(matches!(
        RuleSet::new(arch, vec![bad], Fallback::AllowAll),
        Err(CompileError::InvalidRule(_))
    ));
    // A guard that allows.
    assert!(
        RuleSet::new(
            arch,
            vec![guard("read", None, Action::Allow)],
            Fallback::AllowAll
        )
        .is_err()
    );
    // Unreachable after an unconditional guard.
    let cond = ArgCond::any_bits_low32(0, 1).expect("valid");
    assert!(
        RuleSet::new(
            arch,
            vec![
                guard("read", None, Action::Errno(1)),
                guard("read", Some(cond.clone()), Action::Errno(2)),
            ],
            Fallback::AllowAll
        )
        .is_err()
    );
    // The other order is fine.
    assert!(
        RuleSet::new(
            arch,
            vec![
                guard("read", Some(cond), Action::Errno(2)),
                guard("read", None, Action::Errno(1)),
            ],
            Fallback::AllowAll
        )
        .is_ok()
    );
    assert!(ArgCond::any_bits_low32(6, 1).is_err());
    assert!(ArgCond::any_bits_low32(0, 0).is_err());
    assert!(ArgCond::equals_low32(1, &[]).is_err());
    assert!(RuleSet::new(arch, vec![], Fallback::AllowOnly(BTreeSet::new())).is_err());
    assert_eq!(
        RuleSet::new(arch, vec![], Fallback::AllowOnly([nr("read")].into())),
        Err(CompileError::MissingExecve { arch })
    );
    assert!(
        RuleSet::new(
            arch,
            vec![],
            Fallback::AllowOnly([nr("execve"), 0x4000_0001].into())
        )
        .is_err()
    );
    let too_many: BTreeSet<u32> = (0..600).collect();
    assert!(matches!(
        RuleSet::new(arch, vec![], Fallback::AllowOnly(too_many)),
        Err(CompileError::TooManySyscalls {
            count: 600,
            max: 512,
            ..
        })
    ));
    assert!(RuleSet::new(arch, vec![], Fallback::AllowOnly(execve)).is_ok());
}

#[test]
fn listing_names_fields_syscalls_and_actions() {
    let p = compile(&Profile::DenyKnownEscapeSurface, Arch::X86_64).expect("compiles");
    let l = p.disassemble();
    assert_eq!(l.lines().count(), p.insns.len());
    assert!(l.starts_with("0000  2000000004000000  ld [4]"));
    for needle in [
        "; arch",
        "; x86_64",
        "; nr",
        "; x32 bit",
        "; args[0] low",
        "; args[1] low",
        "ERRNO(EPERM)",
        "ERRNO(ENOSYS)",
        "KILL_PROCESS",
        "ALLOW",
    ] {
        assert!(l.contains(needle), "listing lacks `{needle}`:\n{l}");
    }
    let bytes = p.to_bytes();
    assert_eq!(bytes.len(), p.insns.len() * 8);
    assert_eq!(&bytes[..8], &[0x20, 0, 0, 0, 4, 0, 0, 0]);
}
