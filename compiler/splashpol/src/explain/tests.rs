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
    assert_eq!(out.access, "read-write");
    assert!(out.pinned);
    assert_eq!(
        out.bound.as_deref(),
        Some("project quota 7: at most 100 MiB and 1000 inodes")
    );
    let root = &e.mounts[0];
    assert_eq!(
        (root.path.as_str(), root.access.as_str()),
        ("/", "read-only")
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
        .map(|(p, _)| p.as_str())
        .collect();
    assert!(paths.contains(&"/w/out"), "{paths:?}");
    assert!(paths.contains(&"/tmp"), "{paths:?}");
    assert!(
        e.not_enforced
            .iter()
            .any(|n| n.contains("`/w/out` are unbounded"))
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
            .any(|n| n.starts_with("no seccomp filter"))
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
        assert_eq!(
            a.guarded,
            vec!["memfd_create when argument 1 lacks MFD_NOEXEC_SEAL: EACCES"]
        );
        assert_eq!(a.otherwise, "allow");
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
    let hardware = |a: &ArchFilter| a.denied_classes.iter().any(|(c, _)| c == "hardware access");
    assert!(hardware(x86), "iopl and friends exist on x86_64");
    assert!(!hardware(arm), "and not on aarch64");
    let mount = x86
        .denied_classes
        .iter()
        .find(|(c, _)| c == "mount")
        .expect("mount class");
    assert!(mount.1.contains(&"mount".to_string()));
    assert!(x86.guarded.iter().any(|g| g == "clone3: ENOSYS"));
    assert!(
        x86.guarded
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
            ("cpu".to_string(), "30 s of CPU time".to_string()),
            ("address-space".to_string(), "512 MiB".to_string()),
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
            .any(|n| n.starts_with("rlimits are per process"))
    );
    assert!(e.on_this_host.is_none());
}
