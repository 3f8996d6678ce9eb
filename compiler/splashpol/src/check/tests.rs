//! One valid and one invalid case per check, asserting the code and the
//! exact text under the primary span.

use super::*;
use crate::diag::Severity;

const BASE: &str = "  bubblewrap \"/usr/bin/bwrap\"\n  worker \"/opt/splash/bin/worker\"\n  runtime \"/opt/splash/runtime\" at \"/opt/splash\"\n";

fn policy(extra: &str) -> String {
    format!("splashpol 1\npolicy \"t\" {{\n{BASE}{extra}\n}}\n")
}

#[track_caller]
fn clean(src: &str) -> model::Policy {
    let out = check_source("t", src);
    assert!(out.diagnostics.is_empty(), "{}", out.render_human("t", src));
    out.policy.expect("policy")
}

/// Asserts that a diagnostic with `code` sits exactly on `needle` (the first
/// occurrence at or after `from`, when `needle` appears more than once).
#[track_caller]
fn expect_at(src: &str, code: Code, needle: &str, nth: usize) -> Diagnostic {
    let out = check_source("t", src);
    let start = src
        .match_indices(needle)
        .nth(nth)
        .map(|(i, _)| i)
        .expect("needle in source");
    let want = Span::new(start, start + needle.len());
    let found = out
        .diagnostics
        .iter()
        .find(|d| d.code == code && d.span == want)
        .cloned();
    match found {
        Some(d) => {
            if d.is_error() {
                assert!(out.policy.is_none(), "errors must withhold the policy");
            }
            d
        }
        None => panic!(
            "no `{code}` at {want:?} (`{needle}`); got:\n{}",
            out.render_human("t", src)
        ),
    }
}

#[track_caller]
fn expect(src: &str, code: Code, needle: &str) -> Diagnostic {
    expect_at(src, code, needle, 0)
}

// ------------------------------------------------------------------ header

#[test]
fn version_header() {
    clean(&policy(""));
    let src = policy("").replacen("splashpol 1\n", "", 1);
    let d = check_source("t", &src).diagnostics;
    assert_eq!(d.len(), 1);
    assert_eq!(
        (d[0].code, d[0].span),
        (Code::MissingVersion, Span::new(0, 0))
    );
    let src = policy("").replacen("splashpol 1", "splashpol 2", 1);
    expect(&src, Code::UnsupportedVersion, "2");
}

#[test]
fn missing_required_statements_point_at_the_header() {
    let src =
        "splashpol 1\npolicy \"t\" {\n  runtime \"/opt/splash/runtime\" at \"/opt/splash\"\n}\n";
    let d = expect(src, Code::MissingStatement, "policy \"t\"");
    assert!(d.message.contains("bubblewrap"));
    let out = check_source("t", src);
    assert_eq!(
        out.errors()
            .filter(|d| d.code == Code::MissingStatement)
            .count(),
        2
    );
}

#[test]
fn a_misspelled_required_statement_is_not_also_missing() {
    let src = policy("").replace("  worker", "  wroker");
    let out = check_source("t", &src);
    let codes: Vec<_> = out.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(codes, [Code::UnknownKeyword]);
}

#[test]
fn duplicate_statement_points_at_both() {
    clean(&policy("tmp off"));
    let src = policy("tmp off\n  writes bounded\n  tmp private size 1 MiB\n  user-namespaces none");
    let d = expect_at(&src, Code::DuplicateStatement, "tmp", 1);
    let first = src.find("tmp off").unwrap();
    assert_eq!(d.related[0].0, Span::new(first, first + 3));
    let src = policy("seccomp off\n  seccomp strict-allowlist { execve }");
    expect_at(&src, Code::DuplicateStatement, "seccomp", 1);
}

// ------------------------------------------------------------------ paths and ids

#[test]
fn invalid_paths() {
    for bad in ["relative/x", "/", "/a/../b", "/a/", "/a//b", "/a/./b", ""] {
        let src = policy(&format!("root \"r\" host \"{bad}\" at \"/w\" read-only"));
        expect(&src, Code::InvalidPath, &format!("\"{bad}\""));
    }
}

#[test]
fn invalid_selector_ids() {
    clean(&policy(
        "root \"a.b_c-9\" host \"/srv/x\" at \"/w\" read-only",
    ));
    let src = policy("root \"Project\" host \"/srv/x\" at \"/w\" read-only");
    expect(&src, Code::InvalidSelectorId, "\"Project\"");
}

#[test]
fn duplicate_root_ids_share_one_namespace() {
    let src = policy(
        "root \"x\" host \"/srv/x\" at \"/w/a\" read-only\n  root \"x\" tmpfs at \"/w/b\" size 1 MiB",
    );
    let d = expect_at(&src, Code::DuplicateRootId, "\"x\"", 1);
    assert_eq!(d.related.len(), 1);
}

// ------------------------------------------------------------------ mount layout

#[test]
fn overlapping_mounts() {
    clean(&policy(
        "root \"a\" host \"/srv/a\" at \"/w/a\" read-only\n  root \"b\" tmpfs at \"/w/ab\" size 1 MiB",
    ));
    let src = policy(
        "root \"a\" host \"/srv/a\" at \"/w\" read-only\n  root \"b\" tmpfs at \"/w/b\" size 1 MiB",
    );
    let d = expect(&src, Code::OverlappingMount, "\"/w/b\"");
    assert_eq!(d.related.len(), 1);
    // Equal destinations: the later one is reported.
    let src = policy(
        "root \"a\" host \"/srv/a\" at \"/w\" read-only\n  root \"b\" tmpfs at \"/w\" size 1 MiB",
    );
    expect_at(&src, Code::OverlappingMount, "\"/w\"", 1);
    // Runtime mounts may not overlap each other.
    let src = policy("runtime \"/opt/other\" at \"/opt/splash/lib\"");
    expect(&src, Code::OverlappingMount, "\"/opt/splash/lib\"");
    // A root inside a runtime mount.
    let src = policy("root \"a\" tmpfs at \"/opt/splash/tmp\" size 1 MiB");
    expect(&src, Code::OverlappingMount, "\"/opt/splash/tmp\"");
}

#[test]
fn reserved_destinations() {
    for d in ["/proc", "/proc/x", "/dev/shm"] {
        let src = policy(&format!("root \"a\" tmpfs at \"{d}\" size 1 MiB"));
        expect(&src, Code::OverlappingMount, &format!("\"{d}\""));
    }
    // `/tmp` is only reserved when the private /tmp is on.
    clean(&policy("root \"a\" tmpfs at \"/tmp/x\" size 1 MiB"));
    let src = policy("tmp private size 1 MiB\n  root \"a\" tmpfs at \"/tmp/x\" size 1 MiB");
    let d = expect(&src, Code::OverlappingMount, "\"/tmp/x\"");
    assert_eq!(d.related.len(), 1, "points at the tmp statement");
}

#[test]
fn broker_destination_takes_part_in_the_layout() {
    let src = policy(
        "pin mounts\n  root \"a\" tmpfs at \"/run/x\" size 1 MiB\n  network-broker origin parent \"/run/user/1\" at \"/run/x/net\" ids [\"o\"]",
    );
    expect(&src, Code::OverlappingMount, "\"/run/x/net\"");
}

#[test]
fn many_roots_are_checked_without_pairwise_work() {
    let mut extra = String::new();
    for i in 0..256 {
        extra.push_str(&format!(
            "  root \"r{i}\" tmpfs at \"/w/r{i}\" size 1 MiB\n"
        ));
    }
    extra.push_str("  active-roots max 256\n");
    clean(&policy(&extra));
    extra.push_str("  root \"inner\" tmpfs at \"/w/r17/inner\" size 1 MiB\n");
    let out = check_source("t", &policy(&extra));
    let overlaps: Vec<_> = out.errors().collect();
    assert_eq!(overlaps.len(), 1, "{overlaps:#?}");
    assert_eq!(overlaps[0].code, Code::OverlappingMount);
}

// ------------------------------------------------------------------ executables and runners

#[test]
fn executables_must_be_in_runtime_mounts() {
    let src = "splashpol 1\npolicy \"t\" {\n  bubblewrap \"/usr/bin/bwrap\"\n  worker \"/w/bin/worker\"\n  root \"w\" tmpfs at \"/w\" size 1 MiB\n}\n";
    let d = expect(src, Code::ExecutableOutsideRuntime, "\"/w/bin/worker\"");
    assert!(d.label.unwrap().contains("root `w`"));
    let src =
        policy("landlock runner \"/opt/splash/bin/ll\" {\n allow-exec \"/usr/lib/ld.so\"\n }");
    expect(&src, Code::ExecutableOutsideRuntime, "\"/usr/lib/ld.so\"");
    let src = policy("limits runner \"/usr/bin/lr\" { cpu 1 s }");
    expect(&src, Code::ExecutableOutsideRuntime, "\"/usr/bin/lr\"");
    let src = policy("runner combined \"/usr/bin/one\"\n  limits { cpu 1 s }");
    expect(&src, Code::ExecutableOutsideRuntime, "\"/usr/bin/one\"");
}

#[test]
fn runner_paths_are_distinct() {
    let src = policy("limits runner \"/opt/splash/bin/worker\" { cpu 1 s }");
    expect_at(
        &src,
        Code::RunnerPathConflict,
        "\"/opt/splash/bin/worker\"",
        1,
    );
    let src = policy(
        "limits runner \"/opt/splash/bin/r\" { cpu 1 s }\n  landlock runner \"/opt/splash/bin/r\"",
    );
    expect_at(&src, Code::RunnerPathConflict, "\"/opt/splash/bin/r\"", 1);
}

#[test]
fn runner_wiring() {
    // Separate runners.
    let p = clean(&policy(
        "limits runner \"/opt/splash/bin/lr\" required { cpu 1 s }\n  landlock runner \"/opt/splash/bin/ll\"",
    ));
    assert!(p.raw().require_limit_runner);
    let model::Runners::Separate {
        limit: Some(limit),
        landlock: Some(landlock),
    } = p.runners()
    else {
        panic!("separate runners: {:?}", p.runners())
    };
    assert_eq!(limit.path.as_str(), "/opt/splash/bin/lr");
    assert_eq!(landlock.path.as_str(), "/opt/splash/bin/ll");
    // Limits without any runner.
    let src = policy("limits required { cpu 1 s }");
    expect(&src, Code::MissingRunner, "limits required");
    let src = policy("landlock { allow-exec \"/opt/splash/lib/ld.so\" }");
    expect(&src, Code::MissingRunner, "landlock");
    // Combined runner: blocks without their own runner.
    let p = clean(&policy(
        "runner combined \"/opt/splash/bin/one\"\n  limits { cpu 1 s }\n  landlock",
    ));
    let model::Runners::Combined {
        path,
        limits: Some(limits),
        allow_exec: Some(allow_exec),
    } = p.runners()
    else {
        panic!("a combined runner: {:?}", p.runners())
    };
    assert_eq!(path.as_str(), "/opt/splash/bin/one");
    assert_eq!(limits.cpu_seconds, Some(1));
    assert!(allow_exec.is_empty());
    let src = policy(
        "runner combined \"/opt/splash/bin/one\"\n  limits runner \"/opt/splash/bin/lr\" { cpu 1 s }",
    );
    expect(&src, Code::RunnerConflict, "\"/opt/splash/bin/lr\"");
    let src = policy("runner combined \"/opt/splash/bin/one\"");
    let d = expect(&src, Code::IdleCombinedRunner, "\"/opt/splash/bin/one\"");
    assert_eq!(d.severity, Severity::Warning);
}

// ------------------------------------------------------------------ limits

#[test]
fn limits_values() {
    let p = clean(&policy(
        "limits runner \"/opt/splash/bin/lr\" {\n cpu 2 min; address-space 1 GiB; processes 64; open-files 1_024; file-size 16 MiB\n }",
    ));
    let l = *p.runners().limits().unwrap();
    assert_eq!(l.cpu_seconds, Some(120));
    assert_eq!(l.address_space_bytes, Some(1 << 30));
    assert_eq!(l.process_count, Some(64));
    assert_eq!(l.open_files, Some(1024));
    assert_eq!(l.file_size_bytes, Some(16 << 20));
    let lim = |body: &str| {
        policy(&format!(
            "limits runner \"/opt/splash/bin/lr\" {{ {body} }}"
        ))
    };
    expect(&lim(""), Code::EmptyLimits, "limits");
    expect(&lim("cpu 0 s"), Code::ZeroValue, "0 s");
    expect(
        &lim("processes unlimited"),
        Code::InfiniteLimit,
        "unlimited",
    );
    expect(
        &lim("open-files 18446744073709551615"),
        Code::InfiniteLimit,
        "18446744073709551615",
    );
    expect(&lim("cpu 1500 ms"), Code::InexactDuration, "1500 ms");
    expect(&lim("cpu 30"), Code::MissingUnit, "30");
    expect(&lim("file-size 16 MB"), Code::UnknownUnit, "MB");
    expect(&lim("cpu 30 MiB"), Code::WrongUnit, "MiB");
    expect(&lim("processes 64 files"), Code::UnexpectedUnit, "files");
    expect(&lim("address-space 1.5 GiB"), Code::FractionalNumber, "1.5");
    expect_at(&lim("cpu 1 s; cpu 2 s"), Code::DuplicateEntry, "cpu", 1);
}

// ------------------------------------------------------------------ landlock

#[test]
fn landlock_targets() {
    let p = clean(&policy(
        "landlock runner \"/opt/splash/bin/ll\" { allow-exec \"/opt/splash/lib/ld.so\" }",
    ));
    assert_eq!(p.runners().landlock_allow().unwrap().len(), 1);
    let src = policy(
        "landlock runner \"/opt/splash/bin/ll\" {\n allow-exec \"/opt/splash/a\"\n allow-exec \"/opt/splash/a\"\n }",
    );
    expect_at(&src, Code::DuplicateLandlockTarget, "\"/opt/splash/a\"", 1);
    let src =
        policy("landlock runner \"/opt/splash/bin/ll\" { allow-exec \"/opt/splash/bin/worker\" }");
    let d = expect_at(
        &src,
        Code::RedundantLandlockTarget,
        "\"/opt/splash/bin/worker\"",
        1,
    );
    assert_eq!(d.severity, Severity::Warning);
    // The Landlock runner itself, like the worker and the limit runner.
    let src =
        policy("landlock runner \"/opt/splash/bin/ll\" { allow-exec \"/opt/splash/bin/ll\" }");
    let d = expect_at(
        &src,
        Code::RedundantLandlockTarget,
        "\"/opt/splash/bin/ll\"",
        1,
    );
    assert_eq!(d.severity, Severity::Warning);
    assert!(d.message.contains("Landlock runner"), "{d:#?}");
    let src = policy(
        "runner combined \"/opt/splash/bin/c\"\n  landlock { allow-exec \"/opt/splash/bin/c\" }",
    );
    expect_at(
        &src,
        Code::RedundantLandlockTarget,
        "\"/opt/splash/bin/c\"",
        1,
    );
    let mut many = String::from("landlock runner \"/opt/splash/bin/ll\" {\n");
    for i in 0..33 {
        many.push_str(&format!("  allow-exec \"/opt/splash/x{i}\"\n"));
    }
    many.push('}');
    expect(
        &policy(&many),
        Code::TooManyLandlockTargets,
        "\"/opt/splash/x32\"",
    );
}

// ------------------------------------------------------------------ storage

const QUOTA_OK: &str =
    "pin mounts\n  user-namespaces none\n  quota aggregate bytes 256 MiB inodes 16384\n";

#[test]
fn quota_roots() {
    let p = clean(&policy(&format!(
        "{QUOTA_OK}  root \"o\" host \"/srv/o\" at \"/w/o\" read-write quota project 42 bytes 256 MiB inodes 16384"
    )));
    match &p.raw().file_roots[0].kind {
        FileRootKind::Host { quota: Some(q), .. } => {
            assert_eq!(
                (q.project_id, q.max_bytes, q.max_inodes),
                (42, 256 << 20, 16384)
            );
        }
        other => panic!("{other:?}"),
    }
    let src = policy(&format!(
        "{QUOTA_OK}  root \"o\" host \"/srv/o\" at \"/w/o\" read-only quota project 42 bytes 1 MiB inodes 1"
    ));
    expect(
        &src,
        Code::QuotaOnReadOnly,
        "quota project 42 bytes 1 MiB inodes 1",
    );
    let src = policy(&format!(
        "{QUOTA_OK}  root \"o\" host \"/srv/o\" at \"/w/o\" read-write quota project 0 bytes 1 MiB inodes 1"
    ));
    expect(&src, Code::ZeroProjectId, "0");
    let src = policy(&format!(
        "{QUOTA_OK}  root \"o\" host \"/srv/o\" at \"/w/o\" read-write quota project 4294967296 bytes 1 MiB inodes 1"
    ));
    expect(&src, Code::NumberOverflow, "4294967296");
    let src = policy(&format!(
        "{QUOTA_OK}  root \"o\" host \"/srv/o\" at \"/w/o\" read-write quota project 1 bytes 0 B inodes 1"
    ));
    expect(&src, Code::ZeroValue, "0 B");
}

#[test]
fn quota_roots_need_pinning_namespaces_and_aggregate() {
    let root =
        "root \"o\" host \"/srv/o\" at \"/w/o\" read-write quota project 42 bytes 1 MiB inodes 1";
    let q = "quota project 42 bytes 1 MiB inodes 1";
    let out = check_source("t", &policy(root));
    let codes: Vec<_> = out.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(
        codes,
        [
            Code::QuotaRequiresAggregate,
            Code::QuotaRequiresNoUserNamespaces,
            Code::QuotaRequiresPinnedMounts,
        ]
    );
    expect(&policy(root), Code::QuotaRequiresPinnedMounts, q);
}

#[test]
fn aggregate_quota_counts_each_project_once() {
    let two_views = format!(
        "{QUOTA_OK}  root \"a\" host \"/srv/o\" at \"/w/a\" read-write quota project 42 bytes 256 MiB inodes 16384\n  \
         root \"b\" host \"/srv/o/b\" at \"/w/b\" read-write quota project 42 bytes 256 MiB inodes 16384"
    );
    clean(&policy(&two_views));
    let two_projects = two_views.replacen("project 42", "project 43", 1);
    let d = expect(
        &policy(&two_projects),
        Code::AggregateQuotaExceeded,
        "quota aggregate bytes 256 MiB inodes 16384",
    );
    assert!(d.message.contains("536870912 bytes"), "{}", d.message);
    let differing = two_views.replacen("project 42 bytes 256 MiB", "project 42 bytes 128 MiB", 1);
    let d = expect_at(
        &policy(&differing),
        Code::InconsistentProjectQuota,
        "quota project 42 bytes 256 MiB inodes 16384",
        0,
    );
    assert_eq!(d.severity, Severity::Warning);
}

#[test]
fn read_write_roots_without_quota() {
    let rw = "root \"o\" host \"/srv/o\" at \"/w/o\" read-write";
    expect(&policy(rw), Code::UnverifiedWriteRoot, "read-write");
    // The escape hatch accepts it...
    let p = clean(&policy(&format!("{rw}\n  host-writes unbounded")));
    assert!(p.raw().allow_unbounded_host_writes);
    // ...but not under an aggregate quota...
    let src = policy(&format!(
        "{rw}\n  host-writes unbounded\n  quota aggregate bytes 1 MiB inodes 1"
    ));
    expect(&src, Code::UnverifiedRootWithAggregate, "read-write");
    // ...and not under bounded writes, which also makes the hatch moot.
    let src = policy(&format!(
        "{rw}\n  host-writes unbounded\n  writes bounded\n  user-namespaces none"
    ));
    expect(&src, Code::BoundedWritesUnverifiedRoot, "read-write");
    let d = expect(&src, Code::EscapeHatchOverridden, "host-writes unbounded");
    assert_eq!(d.severity, Severity::Warning);
    let d = expect(
        &policy("host-writes unbounded"),
        Code::UnusedEscapeHatch,
        "host-writes unbounded",
    );
    assert_eq!(d.severity, Severity::Warning);
}

// ------------------------------------------------------------------ hardening

#[test]
fn pinning() {
    let p = clean(&policy("pin mounts, executables"));
    assert!(p.raw().pin_mounts && p.raw().pin_executables);
    expect(
        &policy("pin executables"),
        Code::PinExecutablesWithoutMounts,
        "executables",
    );
    expect_at(
        &policy("pin mounts, mounts"),
        Code::DuplicateEntry,
        "mounts",
        1,
    );
}

#[test]
fn bounded_writes() {
    let p = clean(&policy(
        "writes bounded\n  user-namespaces none\n  tmp private size 1 MiB",
    ));
    assert!(p.raw().bounded_writes && p.raw().no_further_user_namespaces);
    expect(
        &policy("writes bounded"),
        Code::BoundedWritesRequiresNoUserNamespaces,
        "writes bounded",
    );
    let src = policy("writes bounded\n  user-namespaces none\n  tmp private");
    expect(&src, Code::BoundedWritesUnboundedTmp, "tmp private");
}

#[test]
fn tmpfs_sizes() {
    let p = clean(&policy("tmp private size 64 MiB"));
    assert_eq!(
        p.raw().tmp,
        PrivateTmp::Bounded {
            size_bytes: 64 << 20
        }
    );
    assert_eq!(
        clean(&policy("tmp private")).raw().tmp,
        PrivateTmp::Unbounded
    );
    assert_eq!(clean(&policy("")).raw().tmp, PrivateTmp::Off);
    expect(
        &policy("tmp private size 0 B"),
        Code::TmpfsSizeOutOfRange,
        "0 B",
    );
    let src = policy("root \"s\" tmpfs at \"/w\" size 8388608 TiB");
    expect(&src, Code::TmpfsSizeOutOfRange, "8388608 TiB");
    clean(&policy(
        "root \"s\" tmpfs at \"/w\" size 9223372036854775807 B",
    ));
}

#[test]
fn aggregate_tmpfs() {
    let p = clean(&policy(
        "root \"a\" tmpfs at \"/w/a\" size 32 MiB\n  tmp private size 64 MiB\n  tmpfs aggregate 96 MiB",
    ));
    assert_eq!(p.raw().aggregate_ephemeral_max_bytes, Some(96 << 20));
    // A root that with `/tmp` can never fit is marked at its size.
    let src = policy(
        "root \"a\" tmpfs at \"/w/a\" size 33 MiB\n  tmp private size 64 MiB\n  tmpfs aggregate 96 MiB",
    );
    let d = expect(&src, Code::AggregateTmpfsExceeded, "33 MiB");
    assert!(d.message.contains("`a`"), "{}", d.message);
    let src = policy("tmp private\n  tmpfs aggregate 96 MiB");
    expect(&src, Code::AggregateTmpfsUnboundedTmp, "tmp private");
    // `/tmp` alone over the bound: one error, at `/tmp`, not one per root.
    let src = policy(
        "root \"a\" tmpfs at \"/w/a\" size 1 MiB\n  tmp private size 97 MiB\n  tmpfs aggregate 96 MiB",
    );
    expect(
        &src,
        Code::AggregateTmpfsExceeded,
        "tmp private size 97 MiB",
    );
    assert_eq!(check_source("t", &src).diagnostics.len(), 1);
}

#[test]
fn aggregate_tmpfs_counts_what_can_be_active_together() {
    // Alternatives that each fit but not together: a warning, and the
    // policy is built.
    let two = "root \"a\" tmpfs at \"/w/a\" size 1 GiB\n  root \"b\" tmpfs at \"/w/b\" size 1 GiB\n  \
               tmpfs aggregate 1 GiB";
    let src = policy(two);
    let d = expect(
        &src,
        Code::AggregateTmpfsOvercommitted,
        "tmpfs aggregate 1 GiB",
    );
    assert!(!d.is_error());
    assert!(d.message.contains("2147483648"), "{}", d.message);
    let out = check_source("t", &src);
    assert_eq!(out.diagnostics.len(), 1);
    assert!(out.policy.is_some());
    // At most one root active: every selection fits.
    clean(&policy(&format!("{two}\n  active-roots max 1")));
    // Three roots, two active at most: the two largest with `/tmp`.
    let three = "root \"a\" tmpfs at \"/w/a\" size 40 MiB\n  root \"b\" tmpfs at \"/w/b\" size 30 MiB\n  \
                 root \"c\" tmpfs at \"/w/c\" size 20 MiB\n  tmp private size 10 MiB\n  active-roots max 2";
    clean(&policy(&format!("{three}\n  tmpfs aggregate 80 MiB")));
    let d = expect(
        &policy(&format!("{three}\n  tmpfs aggregate 79 MiB")),
        Code::AggregateTmpfsOvercommitted,
        "tmpfs aggregate 79 MiB",
    );
    assert!(
        d.message.starts_with("the 2 largest of the 3 tmpfs roots"),
        "{}",
        d.message
    );
}

#[test]
fn active_roots() {
    assert_eq!(clean(&policy("")).raw().max_active_file_roots, 64);
    assert_eq!(
        clean(&policy("active-roots max 256"))
            .raw()
            .max_active_file_roots,
        256
    );
    expect(
        &policy("active-roots max 257"),
        Code::ActiveRootsTooLarge,
        "257",
    );
    clean(&policy("active-roots max 0"));
    let src = policy("active-roots max 0\n  root \"a\" tmpfs at \"/w\" size 1 MiB");
    let d = expect(&src, Code::NoActiveRoots, "0");
    assert_eq!(d.severity, Severity::Warning);
}

// ------------------------------------------------------------------ seccomp

fn strict(list: &str) -> String {
    policy(&format!("seccomp strict-allowlist {{ {list} }}"))
}

#[test]
fn strict_allowlists() {
    let p = clean(&strict("read write execve exit_group"));
    match p.into_raw().seccomp {
        SeccompPolicy::StrictAllowlist { syscalls } => {
            assert_eq!(
                syscalls.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
                ["execve", "exit_group", "read", "write"]
            );
        }
        other => panic!("{other:?}"),
    }
    expect(&strict(""), Code::EmptyAllowlist, "seccomp");
    expect(
        &strict("read write"),
        Code::AllowlistMissingExecve,
        "seccomp",
    );
    let d = expect_at(
        &strict("execve read read"),
        Code::DuplicateSyscall,
        "read",
        1,
    );
    assert_eq!(d.related.len(), 1);
    expect(&strict("execve clone3"), Code::AllowlistClone3, "clone3");
    expect(
        &strict("execve mount"),
        Code::AllowlistDeniedSyscall,
        "mount",
    );
    let d = expect(&strict("execve opnat"), Code::UnknownSyscall, "opnat");
    assert_eq!(d.help.as_deref(), Some("did you mean `openat`?"));
    let d = expect(
        &strict("execve arch_prctl"),
        Code::SyscallMissingOnArch,
        "arch_prctl",
    );
    assert_eq!(d.severity, Severity::Warning);
    let mut long = String::from("execve");
    for i in 0..512 {
        long.push_str(&format!(" s{i}"));
    }
    expect(&strict(&long), Code::AllowlistTooLong, "s511");
}

// ------------------------------------------------------------------ cgroup

#[test]
fn cgroup_policy() {
    let p = clean(&policy(
        "cgroup parent \"/sys/fs/cgroup/w\" runner \"/usr/libexec/cg\" required {\n cpu 50 ms; memory 512 MiB; swap 0 B; pids 64\n io 8:16 { read 2 MiB/s; write 120 iops; write 0 B/s }\n io 8:0 { read 0 iops }\n }",
    ));
    assert!(p.raw().require_cgroup_v2);
    let cg = p.raw().cgroup.clone().unwrap();
    assert_eq!(cg.join_timeout_ms, 5000);
    assert_eq!(cg.limits.cpu_quota_micros, Some(50_000));
    assert_eq!(cg.limits.memory_swap_max_bytes, Some(0));
    assert_eq!(
        cg.limits.io_max,
        [
            IoMax {
                major: 8,
                minor: 0,
                rbps: None,
                wbps: None,
                riops: Some(0),
                wiops: None
            },
            IoMax {
                major: 8,
                minor: 16,
                rbps: Some(2 << 20),
                wbps: Some(0),
                riops: None,
                wiops: Some(120)
            },
        ]
    );
    let cg = |body: &str| {
        policy(&format!(
            "cgroup parent \"/sys/fs/cgroup/w\" runner \"/usr/libexec/cg\" {{ {body} }}"
        ))
    };
    assert!(!clean(&cg("pids 1")).raw().require_cgroup_v2);
    assert_eq!(
        clean(&cg("pids 1; join-timeout 2 s"))
            .into_raw()
            .cgroup
            .unwrap()
            .join_timeout_ms,
        2000
    );
    expect(&cg(""), Code::CgroupWithoutLimit, "cgroup");
    expect(&cg("join-timeout 5 s"), Code::CgroupWithoutLimit, "cgroup");
    expect(&cg("pids 1; join-timeout 0 s"), Code::ZeroValue, "0 s");
    expect(&cg("cpu 0 ms"), Code::ZeroValue, "0 ms");
    expect(&cg("memory 0 B"), Code::ZeroValue, "0 B");
    expect(&cg("io 8:16 { }"), Code::EmptyIo, "8:16");
    expect_at(
        &cg("io 8:16 { read 1 iops }\n io 8:16 { write 1 iops }"),
        Code::DuplicateIoDevice,
        "8:16",
        1,
    );
    expect(
        &cg("io 8:16 { read 1 iops; read 2 iops }"),
        Code::DuplicateEntry,
        "read 2 iops",
    );
    expect(
        &cg("io 8:4294967296 { read 1 iops }"),
        Code::NumberOverflow,
        "4294967296",
    );
    expect(&cg("io 8:1 { read 1 MiB }"), Code::WrongUnit, "MiB");
    expect(&cg("memory unlimited"), Code::InfiniteLimit, "unlimited");
}

// ------------------------------------------------------------------ watchdog

#[test]
fn watchdog() {
    let p = clean(&policy("watchdog session 5 min call 30 s"));
    assert_eq!(
        p.raw().watchdog,
        Some(Watchdog {
            session_deadline_ms: 300_000,
            call_deadline_ms: Some(30_000)
        })
    );
    expect(&policy("watchdog session 0 s"), Code::ZeroValue, "0 s");
    let d = expect(
        &policy("watchdog session 1 s call 2 s"),
        Code::CallDeadlineExceedsSession,
        "2 s",
    );
    assert_eq!(d.severity, Severity::Warning);
}

// ------------------------------------------------------------------ network broker

#[test]
fn network_broker() {
    let b = "network-broker origin parent \"/run/user/1\" at \"/run/splash/net\" ids";
    let p = clean(&policy(&format!("pin mounts\n  {b} [\"b\", \"a\"]")));
    let nb = p.raw().network_broker.clone().unwrap();
    assert_eq!(nb.catalog, BrokerCatalog::Origin);
    assert_eq!(
        nb.ids.iter().map(|t| t.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    expect(
        &policy(&format!("{b} [\"a\"]")),
        Code::BrokerRequiresPinnedMounts,
        "network-broker",
    );
    expect(
        &policy(&format!("pin mounts\n  {b} []")),
        Code::EmptyList,
        "[]",
    );
    expect_at(
        &policy(&format!("pin mounts\n  {b} [\"a\", \"a\"]")),
        Code::DuplicateEntry,
        "\"a\"",
        1,
    );
    expect(
        &policy(&format!("pin mounts\n  {b} [\"A\"]")),
        Code::InvalidSelectorId,
        "\"A\"",
    );
    // Ids follow the token rule of every other id: at most 128 bytes.
    let longest = "i".repeat(128);
    clean(&policy(&format!("pin mounts\n  {b} [\"{longest}\"]")));
    let d = expect(
        &policy(&format!("pin mounts\n  {b} [\"{longest}i\"]")),
        Code::InvalidSelectorId,
        &format!("\"{longest}i\""),
    );
    assert!(d.message.contains("129 bytes long"), "{}", d.message);
}

#[test]
fn network_broker_socket_path_fits_a_socket_address() {
    let with = |destination: &str| {
        policy(&format!(
            "pin mounts\n  network-broker endpoint parent \"/run/user/1\" at \"{destination}\" ids [\"a\"]"
        ))
    };
    // `/broker.sock` is 12 bytes: a 95-byte destination makes 107.
    let longest = format!("/{}", "d".repeat(94));
    let p = clean(&with(&longest));
    assert_eq!(p.network_broker().expect("broker").socket_path().len(), 107);
    let too_long = format!("{longest}x");
    let d = expect(
        &with(&too_long),
        Code::BrokerSocketPathTooLong,
        &format!("\"{too_long}\""),
    );
    assert!(d.message.contains("is 108 bytes long"), "{}", d.message);
    assert!(
        d.help
            .as_deref()
            .is_some_and(|h| h.contains("at most 95 bytes")),
        "{:?}",
        d.help
    );
}

#[test]
fn worker_arguments() {
    let p = clean(&policy("").replace(
        "worker \"/opt/splash/bin/worker\"",
        "worker \"/opt/splash/bin/worker\" args [\"--a\", \"b \\\"q\\\"\"]",
    ));
    assert_eq!(p.raw().worker_args, ["--a", "b \"q\""]);
    let src = policy("").replace(
        "worker \"/opt/splash/bin/worker\"",
        "worker \"/opt/splash/bin/worker\" args []",
    );
    expect(&src, Code::EmptyList, "[]");
}

// ------------------------------------------------------------------ whole files

#[test]
fn every_error_is_reported_in_one_run() {
    let src = policy(
        "tmp private size 64 MB\n  wrtes bounded\n  root \"X\" tmpfs at \"/proc\" size 1 MiB\n  limits runner \"/opt/splash/bin/lr\" { cpu 30; cpux 1 }\n  seccomp strict-allowlist { read }",
    );
    let out = check_source("t", &src);
    let codes: BTreeSet<_> = out.errors().map(|d| d.code).collect();
    for c in [
        Code::UnknownUnit,
        Code::UnknownKeyword,
        Code::InvalidSelectorId,
        Code::MissingUnit,
        Code::AllowlistMissingExecve,
    ] {
        assert!(codes.contains(&c), "{c} missing from {codes:?}");
    }
    assert!(out.policy.is_none());
    let json = out.to_json();
    assert_eq!(json["ok"], false);
    assert_eq!(json["errors"].as_u64(), Some(out.errors().count() as u64));
}

#[test]
fn diagnostics_are_sorted_by_position() {
    let src = policy("tmp private size 0 B\n  active-roots max 999");
    let out = check_source("t", &src);
    let starts: Vec<_> = out.diagnostics.iter().map(|d| d.span.start).collect();
    let mut sorted = starts.clone();
    sorted.sort();
    assert_eq!(starts, sorted);
}

#[test]
fn every_example_policy_checks_clean() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../policies");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("policies dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "splashpol"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 7, "{paths:?}");
    for path in paths {
        let src = std::fs::read_to_string(&path).expect("read policy");
        let out = check_source(&path.display().to_string(), &src);
        // Strict allowlists for x86_64 may name x86_64-only calls.
        let unexpected: Vec<_> = out
            .diagnostics
            .iter()
            .filter(|d| d.code != Code::SyscallMissingOnArch)
            .collect();
        assert!(
            unexpected.is_empty(),
            "{}",
            out.render_human(&path.display().to_string(), &src)
        );
        assert!(out.policy.is_some(), "{}", path.display());
    }
}

#[test]
fn the_hardened_example_maps_to_the_model() {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../policies/agent-worker.splashpol"
    ))
    .expect("read");
    let p = clean(&src);
    // The same specification example the lowering tests start from; they
    // leave seccomp off, the policy file selects the compat profile.
    let expected = crate::lower::tests::checked(&model::RawPolicy {
        seccomp: SeccompPolicy::DenyKnownEscapeSurface,
        ..crate::lower::tests::sample_raw()
    });
    assert_eq!(p, expected);
}

#[test]
fn an_invalid_path_has_no_follow_on_errors() {
    let only_error = |src: &str, needle: &str| {
        let out = check_source("t", src);
        let at = src.find(needle).expect("needle");
        let got: Vec<(Code, Span)> = out.diagnostics.iter().map(|d| (d.code, d.span)).collect();
        assert_eq!(
            got,
            [(Code::InvalidPath, Span::new(at, at + needle.len()))],
            "{}",
            out.render_human("t", src)
        );
    };
    let head =
        "splashpol 1\npolicy \"t\" {\n  bubblewrap \"/usr/bin/bwrap\"\n  worker \"/opt/x/w\"\n";
    // An invalid destination: nothing is reported outside a runtime mount.
    only_error(
        &format!("{head}  runtime \"/opt/x\" at \"opt/x\"\n}}\n"),
        "\"opt/x\"",
    );
    only_error(
        &format!("{head}  runtime \"/opt/x\" at \"/\"\n}}\n"),
        "\"/\"",
    );
    // An invalid source: its destination still covers the worker.
    only_error(
        &format!("{head}  runtime \"opt/x\" at \"/opt/x\"\n}}\n"),
        "\"opt/x\"",
    );
    // ...but not what lies outside it.
    let src = "splashpol 1\npolicy \"t\" {\n  bubblewrap \"/usr/bin/bwrap\"\n  worker \"/usr/w\"\n  runtime \"opt/x\" at \"/opt/x\"\n}\n";
    expect(src, Code::ExecutableOutsideRuntime, "\"/usr/w\"");
    // An invalid runner path is not also a missing runner.
    only_error(
        &policy("limits runner \"bin/lr\" { cpu 1 s }"),
        "\"bin/lr\"",
    );
    only_error(&policy("landlock runner \"bin/ll\""), "\"bin/ll\"");
    only_error(
        &policy("runner combined \"c\"\n  limits { cpu 1 s }\n  landlock"),
        "\"c\"",
    );
}

#[test]
fn a_byte_order_mark_is_accepted_and_takes_no_column() {
    let with_mark = format!("\u{feff}{}", policy(""));
    clean(&with_mark);
    let src = format!(
        "\u{feff}{}",
        policy("").replacen("splashpol 1", "splashpol 2", 1)
    );
    let outcome = check_source("p.splashpol", &src);
    let d = &outcome.diagnostics[0];
    assert_eq!(d.code, Code::UnsupportedVersion);
    assert_eq!(crate::span::line_col(&src, d.span.start), (1, 11));
    let text = outcome.render_human("p.splashpol", &src);
    assert!(text.contains("[p.splashpol:1:11]"), "{text}");
    let json = outcome.to_json_with_positions(&src);
    assert_eq!(json["diagnostics"][0]["column"], 11);
}

#[test]
fn bytes_that_are_not_utf8_are_one_error_at_their_place() {
    let mut bytes = policy("").into_bytes();
    let at = bytes.len() - 2;
    bytes.splice(at..at, *b"# \xc3\n");
    let (shown, outcome) = check_bytes("p.splashpol", &bytes);
    assert_eq!(outcome.diagnostics.len(), 1, "{:?}", outcome.diagnostics);
    let d = &outcome.diagnostics[0];
    assert_eq!(d.code, Code::InvalidUtf8);
    assert_eq!(d.span.slice(&shown), Some("\u{fffd}"));
    assert!(outcome.policy.is_none());
    let (_, ok) = check_bytes("p.splashpol", policy("").as_bytes());
    assert!(ok.policy.is_some());
}

#[test]
fn a_bad_word_in_a_strict_list_is_not_also_a_missing_execve() {
    let outcome = check_source(
        "p.splashpol",
        &policy("seccomp strict-allowlist { read execve, exit_group }"),
    );
    let codes: Vec<Code> = outcome.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(codes, [Code::InvalidSyscallName]);
    // Without the bad word, a list without `execve` is still reported.
    let outcome = check_source(
        "p.splashpol",
        &policy("seccomp strict-allowlist { read exit_group }"),
    );
    assert!(
        outcome
            .diagnostics
            .iter()
            .any(|d| d.code == Code::AllowlistMissingExecve)
    );
}

// ------------------------------------------------------------------ growth

/// One generated root: an id, a destination and whether it is a (valid)
/// host root or a tmpfs root with a valid or zero size.
#[derive(Debug, Clone)]
struct GenRoot {
    id: &'static str,
    dest: &'static str,
    kind: u8,
}

fn gen_roots() -> impl proptest::strategy::Strategy<Value = Vec<GenRoot>> {
    use proptest::prelude::*;
    let id = prop::sample::select(vec!["a", "b", "c", "d", "Bad Id", "a"]);
    let dest = prop::sample::select(vec![
        "/w",
        "/w/a",
        "/w/a/b",
        "/w/b",
        "/wa",
        "/w-a",
        "/x",
        "w/rel",
        "/w/a/",
        "/proc/x",
        "/dev",
        "/opt/splash/x",
        "/opt",
    ]);
    let kind = 0u8..3;
    prop::collection::vec(
        (id, dest, kind).prop_map(|(id, dest, kind)| GenRoot { id, dest, kind }),
        0..24,
    )
}

/// The generated policy and, for each root, the spans of its id and
/// destination strings.
fn gen_policy(roots: &[GenRoot]) -> (String, Vec<(Span, Span)>) {
    let mut src = format!("splashpol 1\npolicy \"t\" {{\n{BASE}");
    let mut spans = Vec::new();
    for r in roots {
        src.push_str("  root ");
        let id = Span::new(src.len(), src.len() + r.id.len() + 2);
        src.push_str(&format!("\"{}\" ", r.id));
        let body = match r.kind {
            0 => format!("host \"/srv/h\" at \"{}\" read-only\n", r.dest),
            1 => format!("tmpfs at \"{}\" size 1 MiB\n", r.dest),
            _ => format!("tmpfs at \"{}\" size 0 MiB\n", r.dest),
        };
        let at = src.len() + body.find(" at ").expect("at") + 4;
        spans.push((id, Span::new(at, at + r.dest.len() + 2)));
        src.push_str(&body);
    }
    src.push_str("}\n");
    (src, spans)
}

/// Duplicate root ids and overlapping destinations as the first checker
/// found them: a scan of every registered root for each root, and every
/// pair of destinations (the reported outer destination is the last one in
/// path order that contains the inner one).
fn pairwise_reference(roots: &[GenRoot], spans: &[(Span, Span)]) -> Vec<(Code, Span, Vec<Span>)> {
    let valid_id = |id: &str| SelectorId::new(id.to_string()).is_ok();
    let valid_dest = |d: &str| SandboxPath::new(d.to_string()).is_ok();
    let mut registered: Vec<(&str, Span, &str, Span)> = Vec::new();
    let mut out = Vec::new();
    for (r, &(id_span, dest_span)) in roots.iter().zip(spans) {
        if let Some(prev) = registered.iter().find(|p| p.0 == r.id) {
            out.push((Code::DuplicateRootId, id_span, vec![prev.1]));
            continue;
        }
        if valid_id(r.id) && valid_dest(r.dest) && r.kind != 2 {
            registered.push((r.id, id_span, r.dest, dest_span));
        }
    }
    // (path, span, order) of every worker-visible destination.
    let runtime = "splashpol 1\npolicy \"t\" {\n".len()
        + BASE.find("at \"/opt/splash\"").expect("runtime")
        + 3;
    let mut dests: Vec<(&str, Option<Span>, usize)> = vec![
        ("/proc", None, 0),
        ("/dev", None, 0),
        ("/opt/splash", Some(Span::new(runtime, runtime + 13)), 1),
    ];
    dests.extend(registered.iter().map(|r| (r.2, Some(r.3), r.3.start + 1)));
    let key = |p: &str, order: usize| {
        (
            p.bytes()
                .map(|b| if b == b'/' { 0 } else { b })
                .collect::<Vec<u8>>(),
            order,
        )
    };
    for (i, inner) in dests.iter().enumerate() {
        let Some(span) = inner.1 else { continue };
        let inner_path = SandboxPath::new(inner.0.to_string()).expect("valid");
        let outer = dests
            .iter()
            .enumerate()
            .filter(|&(j, o)| {
                j != i
                    && inner_path.is_within(&SandboxPath::new(o.0.to_string()).expect("valid"))
                    && key(o.0, o.2) < key(inner.0, inner.2)
            })
            .max_by_key(|(_, o)| key(o.0, o.2));
        if let Some((_, o)) = outer {
            out.push((Code::OverlappingMount, span, o.1.into_iter().collect()));
        }
    }
    out.sort_by_key(|d| (d.1.start, d.1.end, d.0));
    out
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

    /// The checker's duplicate-id and overlap reports (found with a map and
    /// a sort) are exactly what the pairwise reference finds, on inputs full
    /// of duplicate ids, invalid ids and paths, equal, nested and
    /// prefix-sharing destinations.
    #[test]
    fn duplicate_ids_and_overlaps_match_the_pairwise_reference(roots in gen_roots()) {
        let (src, spans) = gen_policy(&roots);
        let out = check_source("t", &src);
        let found: Vec<(Code, Span, Vec<Span>)> = out
            .diagnostics
            .iter()
            .filter(|d| {
                d.code == Code::DuplicateRootId
                    || d.code == Code::OverlappingMount
            })
            .map(|d| (d.code, d.span, d.related.iter().map(|r| r.0).collect()))
            .collect();
        proptest::prop_assert_eq!(found, pairwise_reference(&roots, &spans), "{}", src);
    }
}

#[test]
fn many_duplicate_and_nested_roots_are_each_reported_once() {
    let mut extra = String::from("  root \"r\" tmpfs at \"/w\" size 1 MiB\n");
    for i in 0..2000 {
        extra.push_str(&format!("  root \"r\" tmpfs at \"/v/{i}\" size 1 MiB\n"));
        extra.push_str(&format!("  root \"n{i}\" tmpfs at \"/w/{i}\" size 1 MiB\n"));
    }
    let out = check_source("t", &policy(&extra));
    let count = |code: Code| out.diagnostics.iter().filter(|d| d.code == code).count();
    assert_eq!(count(Code::DuplicateRootId), 2000);
    assert_eq!(count(Code::OverlappingMount), 2000);
}
