//! Pairs of policies that differ in one layer: each change is found in the
//! right layer, in the right direction, at the statements of both files.

use super::*;
use crate::{activate, lower};
use splash_seccomp::Arch;

const HEAD: &str = "splashpol 1\npolicy \"t\" {\n  bubblewrap \"/usr/bin/bwrap\"\n  worker \"/opt/w/bin/worker\"\n  runtime \"/srv/rt\" at \"/opt/w\"\n";

fn lowered(source: &str) -> (Policy, LaunchPlan) {
    let outcome = crate::check_source("t.splashpol", source);
    assert!(
        !outcome.has_errors(),
        "{}",
        outcome.render_human("t", source)
    );
    let policy = outcome.policy.expect("policy");
    let activation = activate::activate(&policy, None).expect("activate");
    let plan = lower::lower(&policy, &activation, Arch::X86_64, "00").expect("lower");
    (policy, plan)
}

/// The differences from a policy with `a` to one with `b` (statement lines
/// after the common head).
fn between(a: &str, b: &str) -> PolicyDiff {
    let (sa, sb) = (format!("{HEAD}{a}}}\n"), format!("{HEAD}{b}}}\n"));
    let (pa, la) = lowered(&sa);
    let (pb, lb) = lowered(&sb);
    let side = |file, source, policy, plan| Side {
        file,
        source,
        policy,
        plan,
    };
    diff(&side("a", &sa, &pa, &la), &side("b", &sb, &pb, &lb))
}

fn changes(d: &PolicyDiff, layer: &str) -> Vec<(Change, String)> {
    d.differences
        .iter()
        .filter(|x| x.layer == layer)
        .map(|x| (x.change, x.what.clone()))
        .collect()
}

/// `b` widens `a` in `layer` (and nowhere narrows it), and back the other
/// way round `a` narrows `b` by as many changes.
fn widens(a: &str, b: &str, layer: &str) -> PolicyDiff {
    let wide = between(a, b);
    let found = changes(&wide, layer);
    assert!(
        found.iter().any(|(c, _)| *c == Change::Widened),
        "no widening in {layer}: {:#?}",
        wide.differences
    );
    assert!(wide.widened());
    let narrow = between(b, a);
    let back = changes(&narrow, layer);
    assert!(
        back.iter().any(|(c, _)| *c == Change::Narrowed),
        "no narrowing in {layer}: {:#?}",
        narrow.differences
    );
    assert_eq!(
        narrow.count(Change::Narrowed),
        wide.count(Change::Widened),
        "{:#?}\n{:#?}",
        wide.differences,
        narrow.differences
    );
    wide
}

#[test]
fn identical_policies_have_no_differences() {
    let body = "  tmp private size 8 MiB\n  seccomp deny-known-escape-surface\n";
    let d = between(body, body);
    assert!(d.differences.is_empty(), "{:#?}", d.differences);
    assert!(!d.widened());
    assert!(render_human(&d).contains("identical"));
}

#[test]
fn paths_a_new_mount_and_read_write_access() {
    let d = widens(
        "",
        "  root \"src\" host \"/srv/src\" at \"/w/src\" read-only\n",
        "paths",
    );
    let x = d
        .differences
        .iter()
        .find(|x| x.layer == "paths")
        .expect("paths");
    assert!(x.what.contains("`/w/src` becomes visible"), "{}", x.what);
    assert_eq!(x.a, None);
    // At the token that puts it there: the destination.
    let b = x.b.as_ref().expect("span in b");
    assert_eq!((b.line, b.column), (6, 33));
    assert_eq!(b.end - b.start, "\"/w/src\"".len());
    assert!(b.text.starts_with("root \"src\""));

    let d = widens(
        "  root \"o\" host \"/srv/o\" at \"/w/o\" read-only\n",
        "  root \"o\" host \"/srv/o\" at \"/w/o\" read-write\n  host-writes unbounded\n",
        "paths",
    );
    let x = d
        .differences
        .iter()
        .find(|x| x.what == "`/w/o`: read-only -> read-write")
        .expect("access change");
    assert_eq!(x.change, Change::Widened);
    assert!(x.a.is_some() && x.b.is_some());
}

#[test]
fn writes_a_larger_tmpfs_and_an_unbounded_one() {
    let d = widens(
        "  tmp private size 8 MiB\n",
        "  tmp private size 16 MiB\n",
        "writes",
    );
    let found = changes(&d, "writes");
    assert!(
        found.contains(&(
            Change::Widened,
            "bound on `/tmp`: 8 MiB -> 16 MiB".to_string()
        )),
        "{found:?}"
    );
    widens("  tmp private size 8 MiB\n", "  tmp private\n", "writes");
}

#[test]
fn exec_landlock_allowlist_and_its_entries() {
    widens("  landlock runner \"/opt/w/bin/ll\" { }\n", "", "exec");
    let d = widens(
        "  landlock runner \"/opt/w/bin/ll\" { }\n",
        "  landlock runner \"/opt/w/bin/ll\" {\n    allow-exec \"/opt/w/bin/sh\"\n  }\n",
        "exec",
    );
    let x = d
        .differences
        .iter()
        .find(|x| x.layer == "exec")
        .expect("exec");
    assert_eq!(x.what, "`/opt/w/bin/sh` may be executed");
    // The token that lists it, in the `landlock` block.
    let b = x.b.as_ref().expect("span in b");
    assert_eq!((b.line, b.column), (7, 16));
    assert_eq!(b.text, "allow-exec \"/opt/w/bin/sh\"");
}

#[test]
fn seccomp_per_architecture() {
    let d = widens("  seccomp deny-known-escape-surface\n", "", "seccomp");
    assert!(changes(&d, "seccomp")[0].1.starts_with("no seccomp filter"));
    let strict = |names: &str| format!("  seccomp strict-allowlist {{\n    {names}\n  }}\n");
    let d = widens(
        &strict("execve read write exit_group"),
        &strict("execve read write exit_group socket"),
        "seccomp",
    );
    let found = changes(&d, "seccomp");
    for arch in ["x86_64", "aarch64", "riscv64"] {
        assert!(
            found.contains(&(Change::Widened, format!("{arch}: newly allowed: socket"))),
            "{found:?}"
        );
    }
    widens(
        &strict("execve read write exit_group"),
        "  seccomp deny-known-escape-surface\n",
        "seccomp",
    );
}

#[test]
fn rlimits_a_higher_and_a_missing_limit() {
    let lim = |body: &str| format!("  limits runner \"/opt/w/bin/lr\" {{\n    {body}\n  }}\n");
    let d = widens(
        &lim("cpu 30 s; open-files 64"),
        &lim("cpu 60 s; open-files 64"),
        "rlimits",
    );
    assert_eq!(
        changes(&d, "rlimits"),
        vec![(Change::Widened, "cpu: 30 s -> 60 s".to_string())]
    );
    let d = widens(&lim("cpu 30 s; open-files 64"), &lim("cpu 30 s"), "rlimits");
    assert_eq!(
        changes(&d, "rlimits"),
        vec![(Change::Widened, "open-files: 64 -> unlimited".to_string())]
    );
}

#[test]
fn cgroup_limits_and_the_cgroup_itself() {
    let cg = |body: &str| {
        format!(
            "  user-namespaces none\n  cgroup parent \"/sys/fs/cgroup/w\" runner \"/usr/libexec/cg\" {{\n    {body}\n  }}\n"
        )
    };
    let d = widens(
        &cg("memory 64 MiB; pids 16"),
        &cg("memory 128 MiB; pids 16"),
        "cgroup",
    );
    assert_eq!(
        changes(&d, "cgroup"),
        vec![(Change::Widened, "memory.max: 64 MiB -> 128 MiB".to_string())]
    );
    widens(&cg("pids 16"), "  user-namespaces none\n", "cgroup");
    widens(
        &cg("io 8:16 { read 2 MiB/s }"),
        &cg("io 8:16 { read 4 MiB/s }"),
        "cgroup",
    );
}

#[test]
fn deadlines_longer_and_gone() {
    let d = widens(
        "  watchdog session 300 s call 30 s\n",
        "  watchdog session 600 s call 30 s\n",
        "deadlines",
    );
    assert_eq!(
        changes(&d, "deadlines"),
        vec![(
            Change::Widened,
            "session deadline: 5 min -> 10 min".to_string()
        )]
    );
    widens("  watchdog session 300 s\n", "", "deadlines");
}

#[test]
fn network_a_broker_and_its_ids() {
    let broker = |ids: &str| {
        format!(
            "  pin mounts\n  network-broker endpoint parent \"/run/b\" at \"/run/net\" ids [{ids}]\n"
        )
    };
    widens("  pin mounts\n", &broker("\"api.a\""), "network");
    let d = widens(
        &broker("\"api.a\""),
        &broker("\"api.a\", \"api.b\""),
        "network",
    );
    assert_eq!(
        changes(&d, "network"),
        vec![(Change::Widened, "broker ids added: api.b".to_string())]
    );
}

#[test]
fn the_output_is_deterministic_and_serializes() {
    let d = between(
        "  tmp private size 8 MiB\n",
        "  tmp private\n  seccomp deny-known-escape-surface\n",
    );
    assert_eq!(
        render_human(&d),
        render_human(&between(
            "  tmp private size 8 MiB\n",
            "  tmp private\n  seccomp deny-known-escape-surface\n"
        ))
    );
    let json = serde_json::to_value(&d).expect("json");
    assert_eq!(json["differences"][0]["change"], "widened");
}

#[test]
fn isolation_nested_user_namespaces() {
    let d = widens("  user-namespaces none\n", "", "isolation");
    let x = d
        .differences
        .iter()
        .find(|x| x.layer == "isolation")
        .expect("isolation");
    assert!(x.what.contains("--disable-userns"), "{}", x.what);
    assert_eq!(
        x.a.as_ref().map(|l| l.text.as_str()),
        Some("user-namespaces none")
    );
}

#[test]
fn refusals_of_syscalls_a_strict_list_never_let_through_change_nothing() {
    let strict = "  seccomp strict-allowlist {\n    execve read write exit_group\n  }\n";
    let d = between(strict, "  seccomp deny-known-escape-surface\n");
    let found = changes(&d, "seccomp");
    // `mount` was killed by the strict list and is refused now: no change.
    assert!(!found.iter().any(|(_, w)| w.contains("mount")), "{found:?}");
    assert!(found.contains(&(
        Change::Widened,
        "x86_64: no strict list: every unlisted syscall is allowed".to_string()
    )));
    assert!(
        found.iter().all(|(c, _)| *c == Change::Widened),
        "{found:?}"
    );
}

#[test]
fn dropping_pinned_executables_widens_the_pinning_and_hides_no_path() {
    let d = between("  pin mounts, executables\n", "  pin mounts\n");
    assert!(changes(&d, "paths").is_empty(), "{:#?}", d.differences);
    let found = changes(&d, "programs");
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found.iter().all(|(c, _)| *c == Change::Widened),
        "{found:?}"
    );
    assert!(
        found[1].1.ends_with("pinned at bind: /opt/w/bin/worker"),
        "{found:?}"
    );
    // At the `executables` item in A; B has none, so its `pin` keyword.
    let x = &d.differences[0];
    let (a, b) = (x.a.as_ref().expect("a"), x.b.as_ref().expect("b"));
    assert_eq!(
        (a.line, a.column, a.end - a.start),
        (6, 15, "executables".len())
    );
    assert_eq!((b.line, b.column), (6, 3));
}

#[test]
fn a_syscall_dropped_from_a_strict_list_points_at_its_name() {
    let strict = |names: &str| format!("  seccomp strict-allowlist {{\n    {names}\n  }}\n");
    let d = between(
        &strict("execve read write exit_group socket"),
        &strict("execve read write exit_group"),
    );
    let x = d
        .differences
        .iter()
        .find(|x| x.what == "x86_64: no longer allowed: socket")
        .expect("no longer allowed");
    assert_eq!(x.change, Change::Narrowed);
    let a = x.a.as_ref().expect("a");
    assert_eq!((a.line, a.column, a.end - a.start), (7, 34, "socket".len()));
    assert_eq!(a.text, "execve read write exit_group socket");
    let b = x.b.as_ref().expect("b");
    assert_eq!((b.line, b.column), (6, 3));
}

#[test]
fn another_cgroup_runner_widens_both_ways() {
    // A cgroup gained is a narrowing, not a change of program.
    let d = between(
        "",
        "  cgroup parent \"/sys/fs/cgroup/w\" runner \"/usr/libexec/cg\" { pids 8 }\n",
    );
    assert!(!d.widened(), "{:#?}", d.differences);
    let cg = |runner: &str| {
        format!("  cgroup parent \"/sys/fs/cgroup/w\" runner \"{runner}\" {{ pids 8 }}\n")
    };
    let d = between(&cg("/usr/libexec/cg"), &cg("/tmp/cg"));
    assert_eq!(
        changes(&d, "programs"),
        vec![(
            Change::Widened,
            "cgroup runner `/tmp/cg` instead of `/usr/libexec/cg`".to_string()
        )]
    );
    let back = between(&cg("/tmp/cg"), &cg("/usr/libexec/cg"));
    assert!(back.widened());
}
