use super::*;

fn ok(src: &str) -> File {
    let out = parse(src);
    assert!(out.diagnostics.is_empty(), "{:#?}", out.diagnostics);
    out.file.expect("file")
}

fn one_error(src: &str) -> Diagnostic {
    let out = parse(src);
    assert_eq!(out.diagnostics.len(), 1, "{:#?}", out.diagnostics);
    out.diagnostics.into_iter().next().expect("one")
}

fn wrap(body: &str) -> String {
    format!("splashpol 1\npolicy \"p\" {{\n{body}\n}}\n")
}

#[test]
fn smoke() {
    let f = ok(&wrap("bubblewrap \"/usr/bin/bwrap\""));
    assert_eq!(f.policy.statements.len(), 1);
    let e = one_error(&wrap("bubblewrap 12"));
    eprintln!("{e:#?}");
}

#[test]
fn show_messages() {
    for body in [
        "bubblewrap 12",
        "bubblewrap \"/a\" extra",
        "wroker \"/a\"",
        "tmp privat size 64 MiB",
        "root \"x\" host \"/a\" at \"/b\"",
        "root \"x\" host \"/a\" at \"/b\" read-only quota project 4 bytes 3 inodes 4",
        "limits runner \"/a\" { cpu 30 s; cpux 4; processes }",
        "cgroup parent \"/a\" runner \"/b\" { io 8:16 { read 2 MiB/s; wrte 3 iops } }",
        "seccomp strict-allowlist { read, write\n execve }",
        "pin mounts executables",
        "worker \"/a\" args [\"x\" \"y\"]",
        "seccomp",
    ] {
        let out = parse(&wrap(body));
        for d in &out.diagnostics {
            eprintln!(
                "{body:?}\n   -> {} | {} | {:?} | {:?}",
                d.code, d.message, d.label, d.help
            );
        }
    }
    for src in [
        "",
        "splashpol 1\n",
        "splashpol 1\npolicy \"x\" {\n",
        "policy \"x\" {}\n}",
        "splashpol 1 policy \"x\" {}",
    ] {
        let out = parse(src);
        for d in &out.diagnostics {
            eprintln!(
                "{src:?}\n   -> {} | {} | {:?} | {:?} {:?}",
                d.code, d.message, d.label, d.help, d.span
            );
        }
    }
}
