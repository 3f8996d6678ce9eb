//! The seccomp program delivered through an anonymous descriptor to bwrap
//! `--seccomp`: the worker is filtered and keeps no seccomp descriptor.

mod runtime_support;

use runtime_support::{Binding, ProbeSession, host_with_probe, probe_policy, serial};
use serde_json::{Value, json};
use splash_runtime::BoundCommand;
use splashpol::plan::SeccompDelivery;

fn unshare(probe: &mut ProbeSession) -> Value {
    probe
        .call("probe.try", json!({"op": "unshare-user"}))
        .expect("probe.try")
}

#[test]
fn deny_known_escape_surface_gives_eperm_for_unshare_and_leaves_no_descriptor() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    for filtered in [true, false] {
        let mut policy = probe_policy(&bwrap, &probe_dir);
        policy.binding = Binding::PinnedMountsAndExecutables;
        if filtered {
            policy.seccomp = Some("deny-known-escape-surface".into());
        }
        let plan = policy.plan();
        assert_eq!(
            plan.seccomp().map(|s| &s.delivery),
            filtered.then_some(&SeccompDelivery::Bubblewrap)
        );
        let bound = BoundCommand::bind(plan).expect("bind");
        let mut probe = ProbeSession::start(&bound, None).expect("start");
        let report = probe.report();
        let attempt = unshare(&mut probe);
        let errno = attempt["error"]["name"].as_str();
        if filtered {
            assert_eq!(report["seccomp"], json!(2), "filter mode");
            assert_eq!(errno, Some("EPERM"), "{attempt:#}");
        } else {
            // Control: the same attempt is not stopped by EPERM.
            assert_eq!(report["seccomp"], json!(0));
            assert_ne!(errno, Some("EPERM"), "{attempt:#}");
        }
        // No descriptor beyond the standard streams (and the worker
        // library's own duplicates of them): bwrap consumed the filter.
        let fds = report["fds"].as_array().expect("fds");
        for f in fds {
            let target = f["target"].as_str().unwrap_or_default();
            assert!(
                target.starts_with("pipe:") || target == "/dev/null",
                "unexpected descriptor {f} (filtered={filtered})"
            );
        }
        probe.close();
    }
}

/// The probe's syscalls for `probe.echo` and `probe.try` on x86_64 (the
/// policy is lowered for the host architecture; names that do not exist
/// elsewhere only produce check warnings).
const STRICT_LIST: &str = "
    execve arch_prctl set_tid_address set_robust_list rseq prlimit64 exit exit_group
    brk mmap munmap mprotect mremap madvise
    read write readv writev pread64 pwrite64 openat close lseek fstat newfstatat statx
    fcntl ioctl dup3 pipe2 getdents64 getcwd readlinkat unlinkat mkdirat ftruncate fsync
    rt_sigaction rt_sigprocmask rt_sigreturn sigaltstack clock_gettime clock_nanosleep
    nanosleep futex sched_yield sched_getaffinity getpid gettid tgkill getrandom
    poll access faccessat faccessat2 wait4 clone statfs fstatfs uname readlink
    getuid geteuid getgid getegid getppid prctl
    ppoll epoll_create1 epoll_ctl epoll_pwait eventfd2
";

#[test]
fn strict_allowlist_through_the_landlock_runner_handoff_denies_unshare_and_kills_an_unlisted_syscall()
 {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let runner = runtime_support::bin_dir().join("splash-landlock-runner");
    if !splash_tests::require_host(runner.is_file(), "the splash-landlock-runner binary") {
        return;
    }
    let loader = ["/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"]
        .iter()
        .find_map(|l| std::fs::canonicalize(l).ok());
    if !splash_tests::require_host(loader.is_some(), "a known glibc loader path") {
        return;
    }
    let loader = loader.expect("checked").display().to_string();
    std::fs::copy(&runner, probe_dir.path().join("splash-landlock-runner")).expect("copy runner");
    for strict in [true, false] {
        let mut policy = probe_policy(&bwrap, &probe_dir);
        policy.binding = Binding::PinnedMountsAndExecutables;
        policy.tmp = Some("private size 16 MiB".into());
        policy.bounded_writes = true;
        policy.no_user_namespaces = true;
        if strict {
            policy.seccomp = Some(format!("strict-allowlist {{\n{STRICT_LIST}\n  }}"));
        }
        policy.extra.push(format!(
            "landlock runner \"{}/splash-landlock-runner\" {{\n    allow-exec \"{loader}\"\n  }}",
            runtime_support::WORKER_DIR
        ));
        let plan = policy.plan();
        if strict {
            assert_eq!(
                plan.seccomp().map(|s| &s.delivery),
                Some(&SeccompDelivery::Runner)
            );
        }
        let bound = BoundCommand::bind(plan).expect("bind");
        let mut probe = ProbeSession::start(&bound, None).expect("start");
        let echo = probe
            .call("probe.echo", json!({"input": "hi"}))
            .expect("echo under the filter");
        assert_eq!(echo, json!({"input": "hi"}));
        let attempt = unshare(&mut probe);
        let chroot = probe
            .call("probe.try", json!({"op": "chroot"}))
            .expect("probe.try");
        if strict {
            // Neither `unshare` nor `chroot` is listed. `unshare` is in the
            // specification's fixed deny set, which the strict filter tests
            // first: EPERM, and the worker carries on. `chroot` is an
            // ordinary unlisted syscall: it kills the attempt's process.
            assert_eq!(
                attempt["error"]["name"].as_str(),
                Some("EPERM"),
                "{attempt:#}"
            );
            assert_ne!(attempt["stage"], json!("killed"), "{attempt:#}");
            assert_eq!(chroot["stage"], json!("killed"), "{chroot:#}");
            assert_eq!(chroot["signal"], json!(libc::SIGSYS), "{chroot:#}");
            let after = probe
                .call("probe.echo", json!({"input": "after"}))
                .expect("echo after the refused attempts");
            assert_eq!(after, json!({"input": "after"}));
        } else {
            // Control: without the strict filter neither attempt is killed,
            // and `unshare` is not refused with EPERM.
            assert_ne!(attempt["stage"], json!("killed"), "{attempt:#}");
            assert_ne!(
                attempt["error"]["name"].as_str(),
                Some("EPERM"),
                "{attempt:#}"
            );
            assert_ne!(chroot["stage"], json!("killed"), "{chroot:#}");
        }
        probe.close();
    }
}
