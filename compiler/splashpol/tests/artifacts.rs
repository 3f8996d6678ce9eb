//! Tampered compiled artifacts: each file in `tests/artifacts/` is the
//! artifact `splashc compile` writes for a bundled policy with one edit,
//! and [`splashpol::artifact::load`] must refuse it for the reason recorded
//! beside it (`NAME.refusal`, the error as shown). The untampered artifacts
//! (`BASE.control.splashc`) must load and equal the checked policy.
//!
//! Most edits are resealed (the policy digest recomputed, as anyone who can
//! write the file could): the refusal must come from the rule the edit
//! breaks, not from the digest. The table below is the corpus's source; a
//! file it does not produce fails the test. To write or refresh the files,
//! run with `SPLASH_BLESS=1` and review the diff:
//!
//! ```text
//! SPLASH_BLESS=1 cargo test -p splashpol --test artifacts
//! ```

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use splash_require_host::bless_command;
use splash_require_host::snapshot::{check_no_snapshot, check_snapshot};
use splashpol::artifact::{self, ArtifactError};
use splashpol::lower::InvariantError;
use splashpol::model::{RuleError, ValueDefect};

/// The command that (re)writes the corpus.
const BLESS: &str = bless_command!();

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/artifacts")
}

/// One tampering of the artifact of `base` (a policy in `policies/`): the
/// one occurrence of `from` in its text becomes `to`.
struct Case {
    name: &'static str,
    base: &'static str,
    from: &'static str,
    to: &'static str,
    /// Recompute the policy digest after the edit.
    reseal: bool,
    /// The refusal expected.
    refused: fn(&ArtifactError) -> bool,
}

fn decode(e: &ArtifactError) -> bool {
    matches!(e, ArtifactError::Decode(_))
}

const CASES: &[Case] = &[
    Case {
        name: "tab-in-path",
        base: "agent-worker",
        from: r#""/workspace/project""#,
        to: r#""/workspace/pro\tject""#,
        reseal: true,
        refused: decode,
    },
    Case {
        name: "newline-in-path",
        base: "agent-worker",
        from: r#""/usr/bin/bwrap""#,
        to: r#""/usr/bin/bwrap\n""#,
        reseal: true,
        refused: decode,
    },
    Case {
        name: "bidi-in-path",
        base: "agent-worker",
        from: r#""/opt/splash/bin/worker""#,
        to: r#""/opt/splash/bin/\u202erekrow""#,
        reseal: true,
        refused: decode,
    },
    Case {
        name: "escape-sequence-in-path",
        base: "agent-worker",
        from: r#""/srv/splash/project""#,
        to: r#""/srv/splash/\u001b[2Jproject""#,
        reseal: true,
        refused: decode,
    },
    Case {
        name: "relative-path",
        base: "agent-worker",
        from: r#""/srv/splash/project""#,
        to: r#""srv/splash/project""#,
        reseal: true,
        refused: decode,
    },
    Case {
        name: "dot-dot-component",
        base: "agent-worker",
        from: r#""/workspace/scratch""#,
        to: r#""/workspace/../proc""#,
        reseal: true,
        refused: decode,
    },
    Case {
        name: "unknown-runner-field",
        base: "agent-worker",
        from: r#""mode": "separate","#,
        to: r#""mode": "separate", "path": "/opt/splash/bin/splash-limit-runner","#,
        reseal: true,
        refused: decode,
    },
    Case {
        name: "duplicate-runner-mode",
        base: "agent-worker",
        from: r#""mode": "separate","#,
        to: r#""mode": "separate", "mode": "none","#,
        reseal: true,
        refused: decode,
    },
    Case {
        name: "unknown-runner-mode",
        base: "agent-worker",
        from: r#""mode": "separate","#,
        to: r#""mode": "chained","#,
        reseal: true,
        refused: decode,
    },
    Case {
        name: "empty-separate-runners",
        base: "minimal",
        from: r#""mode": "none""#,
        to: r#""mode": "separate", "limit": null, "landlock": null"#,
        reseal: true,
        refused: |e| {
            matches!(
                e,
                ArtifactError::Invariant(InvariantError::NoSeparateRunner)
            )
        },
    },
    Case {
        name: "invalid-root-id",
        base: "agent-worker",
        from: r#""id": "scratch""#,
        to: r#""id": "Scratch""#,
        reseal: true,
        refused: decode,
    },
    Case {
        name: "control-in-name",
        base: "agent-worker",
        from: r#""name": "agent-worker""#,
        to: r#""name": "agent-\u001b[2Jworker""#,
        reseal: true,
        refused: |e| {
            matches!(
                e,
                ArtifactError::Rule(RuleError::ForbiddenCharacter {
                    character: '\u{1b}',
                    ..
                })
            )
        },
    },
    Case {
        name: "newline-in-worker-argument",
        base: "agent-worker",
        from: r#""--json-lines""#,
        to: r#""--json-lines\n--trace""#,
        reseal: true,
        refused: |e| {
            matches!(
                e,
                ArtifactError::Rule(RuleError::ForbiddenCharacter {
                    character: '\n',
                    ..
                })
            )
        },
    },
    Case {
        name: "oversized-tmpfs",
        base: "agent-worker",
        from: r#""size_bytes": 67108864"#,
        to: r#""size_bytes": 9223372036854775808"#,
        reseal: true,
        refused: |e| {
            matches!(
                e,
                ArtifactError::Invariant(InvariantError::TmpfsSize { .. })
            )
        },
    },
    Case {
        name: "infinite-rlimit",
        base: "agent-worker",
        from: r#""open_files": 64"#,
        to: r#""open_files": 18446744073709551615"#,
        reseal: true,
        refused: |e| {
            matches!(
                e,
                ArtifactError::Rule(RuleError::Value {
                    defect: ValueDefect::Infinite,
                    ..
                })
            )
        },
    },
    Case {
        name: "zero-rlimit",
        base: "agent-worker",
        from: r#""open_files": 64"#,
        to: r#""open_files": 0"#,
        reseal: true,
        refused: |e| {
            matches!(
                e,
                ArtifactError::Rule(RuleError::Value {
                    defect: ValueDefect::Zero,
                    ..
                })
            )
        },
    },
    Case {
        name: "fractional-integer",
        base: "agent-worker",
        from: r#""open_files": 64"#,
        to: r#""open_files": 64.0"#,
        reseal: false,
        refused: decode,
    },
    Case {
        name: "wrong-version",
        base: "agent-worker",
        from: r#""version": 3"#,
        to: r#""version": 2"#,
        reseal: false,
        refused: |e| matches!(e, ArtifactError::Version(2)),
    },
    Case {
        name: "wrong-format",
        base: "agent-worker",
        from: r#""format": "splashpol-compiled""#,
        to: r#""format": "splashpol-compiled\u202e""#,
        reseal: false,
        refused: |e| matches!(e, ArtifactError::Format(_)),
    },
    Case {
        name: "digest-mismatch",
        base: "agent-worker",
        from: r#""name": "agent-worker""#,
        to: r#""name": "agent-w0rker""#,
        reseal: false,
        refused: |e| matches!(e, ArtifactError::Digest { .. }),
    },
    Case {
        name: "malformed-source-digest",
        base: "agent-worker",
        from: r#""source_digest": ""#,
        to: r#""source_digest": "\n"#,
        reseal: false,
        refused: |e| matches!(e, ArtifactError::SourceDigest(_)),
    },
    Case {
        name: "unknown-field",
        base: "agent-worker",
        from: r#""bounded_writes": true,"#,
        to: r#""bounded_writes": true, "share_net": true,"#,
        reseal: false,
        refused: decode,
    },
    Case {
        name: "duplicate-root-id",
        base: "agent-worker",
        from: r#""id": "scratch""#,
        to: r#""id": "project-read""#,
        reseal: true,
        refused: |e| {
            matches!(
                e,
                ArtifactError::Invariant(InvariantError::DuplicateRoot(_))
            )
        },
    },
    Case {
        name: "bounded-writes-without-userns-lockdown",
        base: "agent-worker",
        from: r#""no_further_user_namespaces": true"#,
        to: r#""no_further_user_namespaces": false"#,
        reseal: true,
        refused: |e| {
            matches!(
                e,
                ArtifactError::Invariant(InvariantError::BoundedWritesWithoutUserns)
            )
        },
    },
    Case {
        name: "duplicate-landlock-target",
        base: "agent-worker",
        from: r#""/opt/splash/bin/reviewed-interpreter""#,
        to: r#""/opt/splash/lib/ld-linux-aarch64.so.1""#,
        reseal: true,
        refused: |e| {
            matches!(
                e,
                ArtifactError::Rule(RuleError::DuplicateLandlockTarget(_))
            )
        },
    },
    Case {
        name: "quota-on-read-only-root",
        base: "durable-output",
        from: r#""access": "read_write""#,
        to: r#""access": "read_only""#,
        reseal: true,
        refused: |e| matches!(e, ArtifactError::Rule(RuleError::QuotaOnReadOnly(_))),
    },
    Case {
        name: "aggregate-quota-too-small",
        base: "durable-output",
        from: r#""max_inodes": 16384
    },"#,
        to: r#""max_inodes": 16383
    },"#,
        reseal: true,
        refused: |e| {
            matches!(
                e,
                ArtifactError::Rule(RuleError::AggregateQuotaExceeded { what: "inodes", .. })
            )
        },
    },
    Case {
        name: "duplicate-broker-id",
        base: "network-broker",
        from: r#""api.search""#,
        to: r#""api.fetch""#,
        reseal: true,
        refused: |e| {
            matches!(
                e,
                ArtifactError::Duplicate {
                    field: "network_broker.ids",
                    ..
                }
            )
        },
    },
    Case {
        name: "inexact-cgroup-cpu-quota",
        base: "cgroup-limits",
        from: r#""cpu_quota_micros": 50000"#,
        to: r#""cpu_quota_micros": 50500"#,
        reseal: true,
        refused: |e| {
            matches!(
                e,
                ArtifactError::Rule(RuleError::Value {
                    defect: ValueDefect::Inexact,
                    ..
                })
            )
        },
    },
    Case {
        name: "duplicate-syscall",
        base: "strict-allowlist",
        from: r#""pread64""#,
        to: r#""ppoll""#,
        reseal: true,
        refused: |e| {
            matches!(
                e,
                ArtifactError::Duplicate {
                    field: "seccomp.strict_allowlist.syscalls",
                    ..
                }
            )
        },
    },
    Case {
        name: "unsorted-syscalls",
        base: "strict-allowlist",
        from: r#""ppoll",
          "pread64","#,
        to: r#""pread64",
          "ppoll","#,
        reseal: true,
        refused: |e| matches!(e, ArtifactError::NotCanonical(_)),
    },
    Case {
        name: "fixed-deny-syscall-allowed",
        base: "strict-allowlist",
        from: r#""prlimit64""#,
        to: r#""ptrace""#,
        reseal: true,
        refused: |e| matches!(e, ArtifactError::Rule(RuleError::GuardedSyscall(_))),
    },
    Case {
        name: "unknown-syscall",
        base: "strict-allowlist",
        from: r#""prlimit64""#,
        to: r#""prlimit65""#,
        reseal: true,
        refused: decode,
    },
];

/// The stored digest of an artifact, for resealing.
#[derive(serde::Deserialize)]
struct Edited {
    policy_digest: String,
}

/// The artifact `splashc compile` writes for `policies/BASE.splashpol`.
fn control(base: &str) -> (Vec<u8>, splashpol::model::Policy) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../policies")
        .join(format!("{base}.splashpol"));
    let source = std::fs::read_to_string(&path).expect("bundled policy");
    let outcome = splashpol::check_source(&path.display().to_string(), &source);
    let policy = outcome.policy.expect("a bundled policy checks");
    let bytes = artifact::write(&policy, source.as_bytes()).expect("artifact");
    (bytes, policy)
}

/// `case` applied to its base artifact, resealed when it asks and the
/// edited policy still decodes.
fn tampered(case: &Case, base: &[u8]) -> String {
    let text = std::str::from_utf8(base).expect("UTF-8");
    assert_eq!(
        text.matches(case.from).count(),
        1,
        "{}: `{}` must occur exactly once",
        case.name,
        case.from
    );
    let edited = text.replacen(case.from, case.to, 1);
    if !case.reseal {
        return edited;
    }
    let Ok(digest) = artifact::stored_policy_digest(edited.as_bytes()) else {
        return edited;
    };
    let raw: Edited = serde_json::from_str(&edited).expect("the artifact's fields");
    let old = format!("\"policy_digest\": \"{}\"", raw.policy_digest);
    assert_eq!(edited.matches(&old).count(), 1, "{}", case.name);
    edited.replacen(&old, &format!("\"policy_digest\": \"{digest}\""), 1)
}

#[test]
fn every_tampered_artifact_is_refused_for_its_reason_and_the_controls_load() {
    let dir = corpus_dir();
    let mut failures = Vec::new();
    let mut produced = BTreeSet::new();
    let bases: BTreeSet<&str> = CASES.iter().map(|c| c.base).collect();
    for base in &bases {
        let (bytes, policy) = control(base);
        let name = format!("{base}.control.splashc");
        let text = String::from_utf8(bytes.clone()).expect("UTF-8");
        if let Err(e) = check_snapshot(&dir.join(&name), &text, BLESS) {
            failures.push(e);
        }
        produced.insert(name);
        match artifact::load(&bytes) {
            Ok(a) => assert_eq!(a.policy, policy, "{base}"),
            Err(e) => failures.push(format!("control {base} is refused: {e}")),
        }
    }
    for case in CASES {
        let (base, _) = control(case.base);
        let text = tampered(case, &base);
        let file = format!("{}.splashc", case.name);
        if let Err(e) = check_snapshot(&dir.join(&file), &text, BLESS) {
            failures.push(e);
        }
        produced.insert(file);
        let refusal = match artifact::load(text.as_bytes()) {
            Ok(_) => {
                failures.push(format!("{}: loads", case.name));
                continue;
            }
            Err(e) => e,
        };
        if !(case.refused)(&refusal) {
            failures.push(format!(
                "{}: refused for another reason: {refusal:?}",
                case.name
            ));
        }
        let shown = format!("{refusal}\n");
        if let Some(c) = shown
            .trim_end()
            .chars()
            .find(|&c| splashpol::text::is_forbidden(c))
        {
            failures.push(format!("{}: the refusal shows {c:?} raw", case.name));
        }
        let reason = format!("{}.refusal", case.name);
        if let Err(e) = check_snapshot(&dir.join(&reason), &shown, BLESS) {
            failures.push(e);
        }
        produced.insert(reason);
    }
    for entry in std::fs::read_dir(&dir).expect("corpus directory") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .to_string();
        if !produced.contains(&name)
            && let Err(e) = check_no_snapshot(&path, BLESS)
        {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_files_on_disk_are_refused_too() {
    // The checked-in bytes themselves, as a host would read them.
    for case in CASES {
        let path = corpus_dir().join(format!("{}.splashc", case.name));
        let Ok(bytes) = std::fs::read(&path) else {
            continue; // reported by the test above
        };
        let e = artifact::load(&bytes).expect_err(case.name);
        assert!((case.refused)(&e), "{}: {e:?}", case.name);
    }
}
