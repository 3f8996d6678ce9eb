//! What `explain` derives from a plan.

use super::*;
use crate::{activate, lower};

fn explained(body: &str) -> Explanation {
    let source = format!(
        "splashpol 1\npolicy \"t\" {{\n  bubblewrap \"/usr/bin/bwrap\"\n  worker \"/opt/w/bin/worker\"\n  runtime \"/srv/rt\" at \"/opt/w\"\n{body}\n}}\n"
    );
    let outcome = crate::check_source("t.splashpol", &source);
    assert!(
        !outcome.has_errors(),
        "{}",
        outcome.render_human("t", &source)
    );
    let policy = outcome.policy.expect("policy");
    let activation = activate::activate(&policy, None).expect("activate");
    let plan = lower::lower(&policy, &activation, Arch::X86_64, "00").expect("lower");
    explain(&policy, &plan)
}

#[test]
fn bounded_writes_sum_tmpfs_sizes_and_quota_ceilings() {
    let e = explained(
        "  root \"out\" host \"/srv/out\" at \"/w/out\" read-write quota project 7 bytes 100 MiB inodes 1000\n  root \"s\" tmpfs at \"/w/s\" size 8 MiB\n  tmp private size 16 MiB\n  writes bounded\n  user-namespaces none\n  pin mounts\n  quota aggregate bytes 128 MiB inodes 1000\n",
    );
    assert_eq!(e.writable.tmpfs_bytes, 24 << 20);
    assert_eq!(e.writable.quota_bytes, 100 << 20);
    assert_eq!(e.writable.bound_bytes, Some(124 << 20));
    let out = e
        .mounts
        .iter()
        .find(|m| m.path == "/w/out")
        .expect("quota root");
    assert_eq!(out.access, MountAccess::ReadWrite);
    assert!(out.pinned);
    assert_eq!(
        out.bound.map(|b| b.to_string()).as_deref(),
        Some("project quota 7: at most 100 MiB and 1000 inodes")
    );
    assert_eq!(out.bound_bytes(), Some(100 << 20));
    let root = &e.mounts[0];
    assert_eq!(
        (root.path.as_str(), root.access),
        ("/", MountAccess::ReadOnly)
    );
}

#[test]
fn unbounded_writes_name_each_path_and_reason() {
    let e = explained(
        "  root \"out\" host \"/srv/out\" at \"/w/out\" read-write\n  host-writes unbounded\n  tmp private\n",
    );
    assert_eq!(e.writable.bound_bytes, None);
    let paths: Vec<&str> = e
        .writable
        .unbounded
        .iter()
        .map(|u| u.path.as_str())
        .collect();
    assert!(paths.contains(&"/w/out"), "{paths:?}");
    assert!(paths.contains(&"/tmp"), "{paths:?}");
    assert!(
        e.not_enforced
            .iter()
            .any(|n| n.code == GapCode::UnboundedWrites && n.paths == ["/w/out"])
    );
    // No Landlock: new files in writable mounts can be executed.
    assert!(e.exec.landlock_allowlist.is_none());
    assert!(
        e.exec
            .writable_and_executable
            .contains(&"/w/out".to_string())
    );
    assert!(e.seccomp.is_none());
    assert!(
        e.not_enforced
            .iter()
            .any(|n| n.code == GapCode::NoSeccompFilter)
    );
}

#[test]
fn the_landlock_allowlist_and_memfd_guard_come_from_the_plan() {
    let e = explained(
        "  landlock runner \"/opt/w/bin/ll\" {\n    allow-exec \"/opt/w/lib/ld.so\"\n  }\n",
    );
    assert_eq!(
        e.exec.landlock_allowlist,
        Some(vec![
            "/opt/w/bin/worker".to_string(),
            "/opt/w/lib/ld.so".to_string()
        ])
    );
    assert!(e.exec.any_file_in.is_empty());
    assert!(e.exec.memfd_guard);
    let s = e.seccomp.expect("baseline filter for the guard");
    assert_eq!(s.profile.as_str(), "baseline");
    assert_eq!(s.per_arch.len(), 3);
    for a in &s.per_arch {
        assert!(a.denied_classes.is_empty());
        let guards: Vec<String> = a.guarded.iter().map(|g| g.to_string()).collect();
        assert_eq!(
            guards,
            vec!["memfd_create when argument 1 lacks MFD_NOEXEC_SEAL: EACCES"]
        );
        assert_eq!(a.otherwise, FilterAction::Allow);
        assert!(a.cache_eligible < a.known_syscalls);
    }
}

#[test]
fn denied_classes_follow_the_reviewed_table_per_architecture() {
    let e = explained("  seccomp deny-known-escape-surface\n");
    let s = e.seccomp.expect("filter");
    let x86 = s
        .per_arch
        .iter()
        .find(|a| a.arch == "x86_64")
        .expect("x86_64");
    let arm = s
        .per_arch
        .iter()
        .find(|a| a.arch == "aarch64")
        .expect("aarch64");
    let hardware = |a: &ArchFilter| {
        a.denied_classes
            .iter()
            .any(|c| c.class == SyscallClass::Hardware)
    };
    assert!(hardware(x86), "iopl and friends exist on x86_64");
    assert!(!hardware(arm), "and not on aarch64");
    let mount = x86
        .denied_classes
        .iter()
        .find(|c| c.class == SyscallClass::Mount)
        .expect("mount class");
    assert!(mount.syscalls.contains(&"mount".to_string()));
    let guards: Vec<String> = x86.guarded.iter().map(|g| g.to_string()).collect();
    assert!(guards.iter().any(|g| g == "clone3: ENOSYS"));
    assert!(
        guards
            .iter()
            .any(|g| g.starts_with("clone when argument 0 has a namespace flag"))
    );
    assert_eq!(x86.allowed, None);
    assert!(x86.cache_eligible > x86.known_syscalls / 2);
}

#[test]
fn the_dot_graph_nests_mounts_and_links_sources() {
    let e = explained("  root \"s\" tmpfs at \"/w/s\" size 1 MiB\n  pin mounts\n");
    let dot = render_dot(&e);
    assert!(dot.starts_with("digraph \"splashpol t\" {"));
    assert!(
        dot.contains("[label=\"/srv/rt\", shape=box, style=dashed];"),
        "{dot}"
    );
    assert!(dot.contains("label=\"pinned\""), "{dot}");
    assert!(dot.contains("tmpfs size 1 MiB"), "{dot}");
    assert!(dot.trim_end().ends_with('}'));
    assert_eq!(dot, render_dot(&e));
}

#[test]
fn rlimits_are_read_from_the_runner_command_not_the_worker_arguments() {
    let e = explained(
        "  limits runner \"/opt/w/bin/lr\" {\n    cpu 30 s; address-space 512 MiB\n  }\n  landlock runner \"/opt/w/bin/ll\" { }\n",
    );
    assert_eq!(
        e.limits.rlimits,
        vec![
            Rlimit {
                name: RlimitName::Cpu,
                value: 30
            },
            Rlimit {
                name: RlimitName::AddressSpace,
                value: 512 << 20
            },
        ]
    );
    // The limit runner follows the Landlock runner, so it must be allowed.
    assert_eq!(
        e.exec.landlock_allowlist,
        Some(vec![
            "/opt/w/bin/worker".to_string(),
            "/opt/w/bin/lr".to_string()
        ])
    );
    assert!(
        e.not_enforced
            .iter()
            .any(|n| n.code == GapCode::RlimitsPerProcess)
    );
    assert!(e.on_this_host.is_none());
}

#[test]
fn an_allowed_loader_with_a_writable_mount_is_flagged() {
    let e = explained(
        "  tmp private size 1 MiB\n  landlock runner \"/opt/w/bin/ll\" {\n    allow-exec \"/opt/w/lib/ld-linux-x86-64.so.2\"\n    allow-exec \"/opt/w/bin/python3.12\"\n  }\n",
    );
    assert_eq!(
        e.exec.code_loaders,
        vec![
            CodeLoader {
                path: "/opt/w/lib/ld-linux-x86-64.so.2".into(),
                kind: LoaderKind::ElfLoader
            },
            CodeLoader {
                path: "/opt/w/bin/python3.12".into(),
                kind: LoaderKind::Interpreter
            },
        ]
    );
    assert!(e.exec.loader_runs_writable.contains(&"/tmp".to_string()));
    assert!(
        e.not_enforced
            .iter()
            .any(|n| n.code == GapCode::LoaderRunsFiles && n.paths.contains(&"/tmp".into()))
    );
    let text = render_human(&e);
    assert!(!text.contains("nothing else can be executed"), "{text}");
    assert!(
        text.contains("ELF loader /opt/w/lib/ld-linux-x86-64.so.2"),
        "{text}"
    );
}

#[test]
fn loader_names() {
    for (name, kind) in [
        ("/lib/ld.so", Some(LoaderKind::ElfLoader)),
        ("/lib/ld-musl-x86_64.so.1", Some(LoaderKind::ElfLoader)),
        ("/lib64/ld64.so.2", Some(LoaderKind::ElfLoader)),
        ("/bin/sh", Some(LoaderKind::Interpreter)),
        ("/usr/bin/perl5.36", Some(LoaderKind::Interpreter)),
        ("/usr/bin/node", Some(LoaderKind::Interpreter)),
        ("/opt/w/bin/worker", None),
        ("/opt/w/bin/shell-tool", None),
        ("/opt/w/lib/libld.so", None),
    ] {
        assert_eq!(code_loader_kind(name), kind, "{name}");
    }
}

#[test]
fn programs_name_how_each_is_found() {
    let e = explained(
        "  limits runner \"/opt/w/bin/lr\" {\n    cpu 30 s\n  }\n  pin mounts, executables\n",
    );
    let p = &e.programs;
    assert_eq!(p.bubblewrap.path, "/usr/bin/bwrap");
    assert_eq!(p.bubblewrap.found, Found::PinnedDescriptor);
    let roles: Vec<(ChainRole, Found)> = p.chain.iter().map(|c| (c.role, c.found)).collect();
    assert_eq!(
        roles,
        vec![
            (ChainRole::LimitRunner, Found::PinnedDescriptor),
            (ChainRole::Worker, Found::PinnedDescriptor)
        ]
    );
    assert_eq!(
        p.chain[1].pinned_from.as_deref(),
        Some("/srv/rt/bin/worker")
    );
    let plain = explained("");
    assert_eq!(plain.programs.bubblewrap.found, Found::PathAtLaunch);
    assert_eq!(plain.programs.chain[0].found, Found::PathAtLaunch);
    assert!(plain.programs.cgroup_runner.is_none());
}

#[test]
fn resolved_sources_show_where_they_lead() {
    let mut e = explained("  pin mounts\n");
    assert!(
        e.mounts
            .iter()
            .filter(|m| m.source.is_some())
            .all(|m| m.resolution == Resolution::Unresolved)
    );
    e.resolve_sources(|s| (s == "/srv/rt").then(|| "/etc".to_string()));
    let rt = e
        .mounts
        .iter()
        .find(|m| m.path == "/opt/w")
        .expect("runtime");
    assert_eq!(rt.resolution, Resolution::Differs);
    assert_eq!(rt.resolved.as_deref(), Some("/etc"));
    let text = render_human(&e);
    assert!(text.contains("<- /srv/rt (pinned) → /etc"), "{text}");
    assert!(!text.contains("unresolved"), "{text}");
}
