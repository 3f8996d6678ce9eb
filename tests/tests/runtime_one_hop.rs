//! One-hop mode with the real bwrap: a policy with `runner combined` lowers
//! to `splash-runner [rlimits] [--allow ...] -- worker`, and the probe
//! launched through it sees the rlimits and the Landlock executable
//! allowlist from inside. Controls: a listed program runs under the same
//! domain, and without the runner the same unlisted program runs and the
//! limits are the host's.

mod runtime_support;

use std::path::Path;

use runtime_support::{
    ProbeSession, TempDir, bin_dir, errno_name, host_with_probe, lowered, probe_manifest, serial,
};
use serde_json::{Value, json};
use splash_runtime::{BoundCommand, WorkerStatus};
use splashpol::plan::ExecArg;

/// A listed program (the control) and an unlisted one, both dynamically
/// linked through the same loader.
const LISTED: &str = "/usr/bin/true";
const UNLISTED: &str = "/usr/bin/cat";

/// The probe's directory with `splash-runner` next to it, and the resolved
/// ELF loader; `None` after a loud skip.
fn one_hop_host() -> Option<(std::path::PathBuf, TempDir, String)> {
    let (bwrap, probe_dir) = host_with_probe()?;
    let runner = bin_dir().join("splash-runner");
    if !splash_tests::require_host(
        runner.is_file(),
        "the splash-runner binary (run `cargo build --workspace --bins` first)",
    ) {
        return None;
    }
    let loader = std::fs::canonicalize("/lib64/ld-linux-x86-64.so.2")
        .or_else(|_| std::fs::canonicalize("/lib/ld-linux-aarch64.so.1"))
        .ok();
    let programs = [LISTED, UNLISTED].iter().all(|p| Path::new(p).is_file());
    if !splash_tests::require_host(
        loader.is_some() && programs,
        "a glibc ELF loader and `/usr/bin/true`, `/usr/bin/cat`",
    ) {
        return None;
    }
    std::fs::copy(&runner, probe_dir.path().join("splash-runner")).expect("copy runner");
    let loader = loader.expect("checked").to_string_lossy().into_owned();
    Some((bwrap, probe_dir, loader))
}

/// The probe under `controls`, with the system libraries mounted.
fn policy(bwrap: &Path, probe_dir: &TempDir, controls: &str) -> String {
    format!(
        r#"splashpol 1
policy "one-hop-test" {{
  bubblewrap "{}"
  worker "/opt/probe/splash-probe"
  runtime "{}" at "/opt/probe"
  runtime "/usr" at "/usr"
  runtime "/lib" at "/lib"
  runtime "/lib64" at "/lib64"
  tmp private size 16 MiB
  user-namespaces none
  pin mounts, executables
{controls}}}
"#,
        bwrap.display(),
        probe_dir.path().display()
    )
}

fn one_hop_controls(loader: &str) -> String {
    format!(
        r#"  runner combined "/opt/probe/splash-runner"
  limits required {{
    cpu 30 s; address-space 4 GiB; open-files 64; file-size 16 MiB
  }}
  landlock {{
    allow-exec "{loader}"
    allow-exec "{LISTED}"
  }}
"#
    )
}

fn literals(command: &[ExecArg]) -> Vec<String> {
    command
        .iter()
        .map(|a| match a {
            ExecArg::Literal(s) => s.clone(),
            other => format!("{other:?}"),
        })
        .collect()
}

/// (soft, hard) of one `/proc/self/limits` row in a probe report.
fn limit(report: &Value, name: &str) -> (String, String) {
    let row = &report["limits"][name];
    let field = |f: &str| {
        row[f]
            .as_str()
            .unwrap_or_else(|| panic!("limit `{name}` in {:#}", report["limits"]))
            .to_owned()
    };
    (field("soft"), field("hard"))
}

fn exec(probe: &mut ProbeSession, program: &str) -> Value {
    probe
        .call("probe.exec", json!({"argv": [program]}))
        .expect("probe.exec")
}

const LIMITS: [(&str, &str); 5] = [
    ("Max cpu time", "30"),
    ("Max address space", "4294967296"),
    ("Max open files", "64"),
    ("Max file size", "16777216"),
    ("Max core file size", "0"),
];

#[test]
fn one_hop_runner_applies_rlimits_and_the_landlock_allowlist() {
    let _serial = serial();
    let Some((bwrap, probe_dir, loader)) = one_hop_host() else {
        return;
    };
    let text = policy(&bwrap, &probe_dir, &one_hop_controls(&loader));
    let plan = lowered(&text, &probe_manifest("s-1"));
    let command = literals(plan.command());
    let allowed = |p: &str| command.windows(2).any(|w| w[0] == "--allow" && w[1] == p);
    assert_eq!(command[0], "/opt/probe/splash-runner", "{command:?}");
    assert!(
        allowed("/opt/probe/splash-probe") && allowed(&loader) && allowed(LISTED),
        "{command:?}"
    );
    assert_eq!(
        command[command.len() - 2..],
        ["--", "/opt/probe/splash-probe"],
        "one hop: the worker follows the runner directly: {command:?}"
    );

    let bound = BoundCommand::bind(plan).expect("bind");
    let mut probe = ProbeSession::start(&bound, None).expect("start through the one-hop runner");
    let report = probe.report();
    for (name, value) in LIMITS {
        assert_eq!(
            limit(&report, name),
            (value.to_owned(), value.to_owned()),
            "{name}"
        );
    }
    // Control: a listed program runs inside the same Landlock domain.
    let listed = exec(&mut probe, LISTED);
    assert_eq!(listed["spawned"], json!(true), "{listed:#}");
    assert_eq!(listed["exit_code"], json!(0), "{listed:#}");
    // An unlisted one is refused by Landlock.
    let unlisted = exec(&mut probe, UNLISTED);
    assert_eq!(unlisted["spawned"], json!(false), "{unlisted:#}");
    assert_eq!(errno_name(&unlisted), Some("EACCES"), "{unlisted:#}");
    assert_eq!(probe.close(), WorkerStatus::Exited(0));
}

#[test]
fn without_the_one_hop_runner_the_same_probe_sees_host_limits_and_runs_anything() {
    let _serial = serial();
    let Some((bwrap, probe_dir, _loader)) = one_hop_host() else {
        return;
    };
    let text = policy(&bwrap, &probe_dir, "");
    let plan = lowered(&text, &probe_manifest("s-1"));
    assert_eq!(
        literals(plan.command()),
        ["/opt/probe/splash-probe"],
        "no runner in the command"
    );
    let bound = BoundCommand::bind(plan).expect("bind");
    let mut probe = ProbeSession::start(&bound, None).expect("start");
    let report = probe.report();
    // The limits the runner sets are not what the probe gets on its own.
    for (name, value) in LIMITS.iter().filter(|(n, _)| *n != "Max core file size") {
        assert_ne!(
            limit(&report, name),
            ((*value).to_owned(), (*value).to_owned()),
            "{name}"
        );
    }
    // The same unlisted program runs without the Landlock domain.
    let unlisted = exec(&mut probe, UNLISTED);
    assert_eq!(unlisted["spawned"], json!(true), "{unlisted:#}");
    assert_eq!(unlisted["exit_code"], json!(0), "{unlisted:#}");
    assert_eq!(probe.close(), WorkerStatus::Exited(0));
}
