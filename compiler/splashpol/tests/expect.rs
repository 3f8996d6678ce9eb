//! An `expect` block has no effect on the sandbox: the checked policy, its
//! artifact's policy digest and the lowered plan (but for the digest of the
//! source bytes it records, which any edit changes) are those of the policy
//! without it; its entries come back as expectations.

use splashpol::artifact;
use splashpol::expect::{self, ExpectKind};
use splashpol::plan::Arch;
use splashpol::{Code, activate, check_source, lower};

fn demo() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../policies/demo.splashpol"
    ))
    .expect("demo policy")
}

/// The demo without any `expect` block it carries, and with `block` instead.
fn variants(block: &str) -> (String, String) {
    let demo = demo();
    let base = match demo.find("\n  expect {") {
        Some(at) => {
            let end = at + demo[at..].find("\n  }\n").map_or(0, |e| e + 4);
            format!("{}{}", &demo[..at], &demo[end..])
        }
        None => demo,
    };
    let end = base.rfind('}').expect("closing brace");
    let with = format!("{}\n\n  {block}\n}}\n", base[..end].trim_end());
    (base, with)
}

const BLOCK: &str = r#"expect { read-only "/usr"  writable "/workspace/scratch" max 8 MiB  hidden "/etc"  syscall denied unshare }"#;

#[test]
fn the_plan_and_the_artifact_digest_ignore_the_expect_block() {
    let (base, with) = variants(BLOCK);
    let a = check_source("a", &base);
    let b = check_source("b", &with);
    assert!(b.diagnostics.is_empty(), "{:?}", b.diagnostics);
    let (pa, pb) = (
        a.policy.expect("base checks"),
        b.policy.expect("expect checks"),
    );
    assert_eq!(pa, pb, "the checked policy is the same");

    let (art_a, art_b) = (
        artifact::write(&pa, base.as_bytes()).expect("artifact"),
        artifact::write(&pb, with.as_bytes()).expect("artifact"),
    );
    let (la, lb) = (
        artifact::load(&art_a).expect("load"),
        artifact::load(&art_b).expect("load"),
    );
    assert_eq!(la.policy_digest, lb.policy_digest);
    assert_ne!(
        la.source_digest, lb.source_digest,
        "the source bytes differ"
    );

    let digest = "0".repeat(64);
    let plan = |p: &splashpol::model::Policy| {
        let activation = activate::activate(p, None).expect("activate");
        lower::lower(p, &activation, Arch::X86_64, &digest).expect("lower")
    };
    let (plan_a, plan_b) = (plan(&pa), plan(&pb));
    assert_eq!(plan_a, plan_b, "the same plan for the same source digest");
    assert_eq!(plan_a.display_command_line(), plan_b.display_command_line());
}

#[test]
fn the_entries_come_back_as_expectations_one_per_syscall() {
    let (_, with) = variants(
        r#"expect {
    read-only "/usr"; writable "/workspace/scratch" max 8 MiB
    hidden "/etc"  syscall denied unshare bpf
    user-namespaces none
  }"#,
    );
    let (_, xs) = expect::of_source(&with).expect("checks");
    let texts: Vec<&str> = xs.iter().map(|x| x.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            r#"read-only "/usr""#,
            r#"writable "/workspace/scratch" max 8 MiB"#,
            r#"hidden "/etc""#,
            "syscall denied unshare",
            "syscall denied bpf",
            "user-namespaces none",
        ]
    );
    assert!(
        matches!(&xs[1].kind, ExpectKind::Writable { max_bytes: Some(b), .. } if *b == 8 << 20)
    );
    assert_eq!(&with[xs[4].span.start..xs[4].span.end], "bpf");
}

#[test]
fn impossible_expectations_are_errors_at_their_entry() {
    for (block, at, words) in [
        (
            r#"expect { writable "/usr" }"#,
            r#""/usr""#,
            "is read-only in this sandbox",
        ),
        (
            r#"expect { read-only "/workspace/scratch" }"#,
            r#""/workspace/scratch""#,
            "is writable",
        ),
        (
            r#"expect { hidden "/workspace" }"#,
            r#""/workspace""#,
            "mounts lie below it",
        ),
        (
            r#"expect { hidden "/usr/bin" }"#,
            r#""/usr/bin""#,
            "is visible",
        ),
        (
            r#"expect { read-only "/srv" }"#,
            r#""/srv""#,
            "is not visible",
        ),
        (
            r#"expect { writable "/workspace/scratch" max 4 MiB }"#,
            "4 MiB",
            "more than the expected 4 MiB",
        ),
        (r#"expect { syscall denied read }"#, "read", "allows `read`"),
        (
            r#"expect { exec denied "/usr/bin/sh" }"#,
            r#""/usr/bin/sh""#,
            "no `landlock` block",
        ),
        (
            r#"expect { processes max 10 }"#,
            "10",
            "bounds the number of processes",
        ),
    ] {
        let (_, with) = variants(block);
        let out = check_source("p", &with);
        let errors: Vec<_> = out.diagnostics.iter().filter(|d| d.is_error()).collect();
        assert_eq!(errors.len(), 1, "{block}: {errors:?}");
        let d = errors[0];
        assert_eq!(d.code, Code::ImpossibleExpectation, "{block}");
        assert_eq!(&with[d.span.start..d.span.end], at, "{block}");
        assert!(d.message.contains(words), "{block}: {}", d.message);
        assert!(d.help.is_some(), "{block}");
    }
    let (_, with) = variants("expect { syscall denied unshar }");
    let out = check_source("p", &with);
    assert_eq!(out.diagnostics[0].code, Code::UnknownSyscall);
    let (_, with) = variants("expect {}");
    assert_eq!(
        check_source("p", &with).diagnostics[0].code,
        Code::EmptyList
    );
    let (_, with) = variants(r#"expect { hidden "/etc"; hidden "/etc" }"#);
    assert_eq!(
        check_source("p", &with).diagnostics[0].code,
        Code::DuplicateEntry
    );
}
