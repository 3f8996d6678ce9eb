//! An old Bubblewrap that lacks an option the plan needs makes the launch
//! fail with a clear error, never a weaker retry.

mod runtime_support;

use std::path::Path;

use runtime_support::{
    Binding, NosuidArea, ProbeSession, TempDir, fake_bwrap, host_with_probe, probe_policy, serial,
};
use serde_json::json;
use splash_runtime::{BindError, BoundCommand};

#[test]
fn a_bwrap_without_bind_fd_ro_bind_fd_or_disable_userns_fails_at_bind() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let area = NosuidArea::new("fake-bwrap-area");
    let root = TempDir::new_in(area.path(), "fake-bwrap-root");
    for missing in ["--bind-fd", "--ro-bind-fd", "--disable-userns"] {
        let dir = TempDir::new("fake-bwrap");
        let fake = fake_bwrap(dir.path(), &bwrap, missing, true);
        let mut policy = probe_policy(&fake, &probe_dir);
        policy.binding = Binding::PinnedMounts;
        policy.no_user_namespaces = true;
        policy.unbounded_host_writes = true;
        policy.host_root("output", root.path(), "/workspace/output", true);
        let err = BoundCommand::bind(policy.plan()).expect_err("old bwrap");
        assert!(
            matches!(&err, BindError::UnsupportedOption { option, .. } if option == missing),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains(&format!("does not support `{missing}`")),
            "{err}"
        );

        // Control: the same fake that lists the option binds.
        let listed = fake_bwrap(dir.path(), &bwrap, "--no-such-option", true);
        let mut policy = probe_policy(&listed, &probe_dir);
        policy.binding = Binding::PinnedMounts;
        policy.no_user_namespaces = true;
        policy.unbounded_host_writes = true;
        policy.host_root("output", root.path(), "/workspace/output", true);
        BoundCommand::bind(policy.plan()).expect("a bwrap with every option binds");
    }
}

#[test]
fn a_bwrap_that_rejects_an_option_at_launch_is_a_launch_failure_with_its_status() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let dir = TempDir::new("fake-bwrap-launch");
    let fake = fake_bwrap(dir.path(), &bwrap, "--ro-bind-fd", false);
    let mut policy = probe_policy(&fake, &probe_dir);
    policy.binding = Binding::PinnedMounts;
    let bound = BoundCommand::bind(policy.plan()).expect("help lists every option");
    let outcome =
        ProbeSession::start(&bound, None).and_then(|mut p| p.call("probe.report", json!({})));
    let err = outcome.expect_err("launch must fail");
    // Depending on timing the failure shows while the preamble is written
    // (a closed pipe) or when Bubblewrap's report pipe closes empty; both
    // report Bubblewrap's own exit status.
    assert!(
        err.contains("bubblewrap ended with exit status 1 before the session started")
            || err.contains("failed to write the bootstrap preamble to the worker; bubblewrap was stopped and reaped, ending with exit status 1"),
        "{err}"
    );
    assert!(runtime_support::live_children().is_empty());
}

#[test]
fn a_pinned_bwrap_that_cannot_be_executed_through_its_descriptor_fails_closed() {
    // A script cannot run through a close-on-exec `/proc/self/fd/N`: the
    // pinned launch fails instead of falling back to the path.
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let dir = TempDir::new("fake-bwrap-pinned");
    let fake = fake_bwrap(dir.path(), &bwrap, "--no-such-option", true);
    let mut policy = probe_policy(&fake, &probe_dir);
    policy.binding = Binding::PinnedMountsAndExecutables;
    let err = BoundCommand::bind(policy.plan()).expect_err("script through /proc/self/fd");
    assert!(
        matches!(
            err,
            BindError::BubblewrapQuery { .. } | BindError::BubblewrapHelp { .. }
        ),
        "{err}"
    );
}

/// Bind reads an ELF Bubblewrap's options from the file it will launch
/// instead of running it: on the installed build the literals its parser
/// compares against are exactly the options its `--help` lists.
#[test]
fn the_option_literals_of_the_installed_bwrap_are_its_help_options() {
    let Some((bwrap, _probe_dir)) = host_with_probe() else {
        return;
    };
    let image = std::fs::read(&bwrap).expect("read bwrap");
    assert!(image.starts_with(b"\x7fELF"), "bwrap is an ELF executable");
    let literals = splash_runtime::bwrap_options::option_literals(&image);
    let help = std::process::Command::new(&bwrap)
        .arg("--help")
        .output()
        .expect("bwrap --help");
    let listed: std::collections::BTreeSet<String> = String::from_utf8_lossy(&help.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.starts_with("--"))
        .map(str::to_owned)
        .collect();
    assert!(listed.len() > 40, "{listed:?}");
    assert_eq!(literals, listed);
}

/// A copy of the real Bubblewrap whose parser no longer knows
/// `--disable-userns` (its literal is changed in the copy) fails at bind,
/// naming the option; control: an unchanged copy binds.
#[test]
fn an_elf_bwrap_whose_parser_lacks_an_option_fails_at_bind() {
    let _serial = serial();
    let Some((bwrap, probe_dir)) = host_with_probe() else {
        return;
    };
    let image = std::fs::read(&bwrap).expect("read bwrap");
    let literal = b"--disable-userns\0";
    let at: Vec<usize> = image
        .windows(literal.len())
        .enumerate()
        .filter(|(_, w)| *w == literal)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(at.len(), 1, "one parser literal");
    let mut patched = image.clone();
    patched[at[0] + literal.len() - 2] = b'z';
    let dir = TempDir::new("elf-bwrap");
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("copy bwrap");
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
        path
    };
    let old = write("bwrap-old", &patched);
    let same = write("bwrap-same", &image);
    let plan_with = |program: &Path| {
        let mut policy = probe_policy(program, &probe_dir);
        policy.binding = Binding::PinnedMounts;
        policy.no_user_namespaces = true;
        policy.plan()
    };
    let err = BoundCommand::bind(plan_with(&old)).expect_err("a build without the option");
    assert!(
        matches!(&err, BindError::UnsupportedOption { option, .. } if option == "--disable-userns"),
        "{err}"
    );
    BoundCommand::bind(plan_with(&same)).expect("an unchanged copy binds");
}
