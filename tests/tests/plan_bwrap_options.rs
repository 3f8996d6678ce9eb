//! Every option the emitter can produce is accepted by the installed
//! Bubblewrap, and the version table in `docs/launch-plan.md` matches the
//! emitter's own table.

use std::process::Command;

use splash_tests::{bwrap_path, require_host, workspace_root};
use splashpol::emit::EMITTED_OPTIONS;

fn version(text: &str) -> Option<(u32, u32, u32)> {
    let mut it = text.trim().split('.').map(|n| n.parse::<u32>().ok());
    Some((it.next()??, it.next()??, it.next()??))
}

#[test]
fn installed_bwrap_knows_every_emitted_option() {
    let Some(bwrap) = bwrap_path() else {
        require_host(false, "bubblewrap (`bwrap`)");
        return;
    };
    let help = Command::new(&bwrap)
        .arg("--help")
        .output()
        .expect("run bwrap --help");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&help.stdout),
        String::from_utf8_lossy(&help.stderr)
    );
    let listed: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.starts_with("--"))
        .collect();
    for opt in EMITTED_OPTIONS {
        assert!(
            listed.contains(&opt.option),
            "`{}` is missing from `bwrap --help`",
            opt.option
        );
    }

    let out = Command::new(&bwrap)
        .arg("--version")
        .output()
        .expect("run bwrap --version");
    let text = String::from_utf8_lossy(&out.stdout);
    let installed = text
        .split_whitespace()
        .last()
        .and_then(version)
        .unwrap_or_else(|| panic!("cannot parse `bwrap --version` output `{text}`"));
    for opt in EMITTED_OPTIONS {
        let since = version(opt.since).expect("table version");
        assert!(
            since <= installed,
            "`{}` needs bubblewrap {}",
            opt.option,
            opt.since
        );
    }
}

#[test]
fn docs_version_table_matches_the_emitter() {
    let doc = std::fs::read_to_string(workspace_root().join("docs/launch-plan.md"))
        .expect("read docs/launch-plan.md");
    for opt in EMITTED_OPTIONS {
        let row = format!("| `{}` | {} |", opt.option, opt.since);
        assert!(
            doc.contains(&row),
            "docs/launch-plan.md lacks the row `{row}`"
        );
    }
    // And no stale rows for options the emitter no longer produces.
    let rows = doc.lines().filter(|l| l.starts_with("| `--")).count();
    assert_eq!(
        rows,
        EMITTED_OPTIONS.len(),
        "docs table rows vs EMITTED_OPTIONS"
    );
}
