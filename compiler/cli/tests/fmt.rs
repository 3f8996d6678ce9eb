//! `splashc fmt` as a user runs it: in place (atomic, mode and symlinks
//! kept), `--check`, standard input, refusal of files that do not parse, and
//! the compiled artifact of every bundled policy unchanged by formatting.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn splashc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_splashc"))
        .args(args)
        .output()
        .expect("run splashc")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn bundled() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(workspace().join("policies"))
        .expect("policies")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "splashpol"))
        .collect();
    v.sort();
    assert!(v.len() >= 8);
    v
}

/// A fresh directory for one test.
fn temp_dir(name: &str) -> tempfile::TempDir {
    // 0755, as `mkdir` makes it: the sandboxed worker may run as another uid.
    tempfile::Builder::new()
        .prefix(&format!("splashc-fmt-{name}-"))
        .permissions(std::fs::Permissions::from_mode(0o755))
        .tempdir()
        .expect("temp dir")
}

/// The same policy with a different layout: lines indented with a tab and
/// blanks, CRLF line ends with trailing blanks, blanks moved around `[`, `,`
/// and `;` on lines without comments, and three blank lines where there was
/// one.
fn messy(source: &str) -> String {
    source
        .lines()
        .map(|l| {
            let l = l.trim_start();
            let l = if l.contains('#') {
                l.replace(" #", "    #")
            } else {
                l.replace('[', "[ ")
                    .replace(", ", " ,")
                    .replace("; ", " ;")
                    .replace(" {", "{")
            };
            if l.is_empty() {
                "\r\n\r\n\n".to_string()
            } else {
                format!("\t {l}  \r\n")
            }
        })
        .collect()
}

fn compile(policy: &Path, out: &Path) -> serde_json::Value {
    let o = splashc(&[
        "compile",
        &policy.to_string_lossy(),
        "-o",
        &out.to_string_lossy(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    serde_json::from_slice(&std::fs::read(out).expect("artifact")).expect("json")
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn bundled_policies_pass_check() {
    let mut args = vec!["fmt".to_string(), "--check".to_string()];
    args.extend(bundled().iter().map(|p| p.to_string_lossy().into_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = splashc(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
    assert!(o.stdout.is_empty() && o.stderr.is_empty());
}

#[test]
fn formatting_in_place_keeps_the_compiled_policy_mode_and_nothing_else_is_left() {
    let scratch = temp_dir("in-place");
    let dir = scratch.path();
    for original in bundled() {
        let name = original
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let source = std::fs::read_to_string(&original).expect("read");
        let file = dir.join(&name);
        std::fs::write(&file, messy(&source)).expect("write");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        let path = file.to_string_lossy().into_owned();

        let o = splashc(&["fmt", "--check", &path]);
        assert_eq!(o.status.code(), Some(1), "{name}");
        assert_eq!(text(&o.stdout), format!("{path}\n"));
        let before = compile(&file, &dir.join("before.splashc"));

        let o = splashc(&["fmt", &path]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", text(&o.stderr));
        assert_eq!(
            std::fs::read_to_string(&file).expect("read"),
            source,
            "{name}: the bundled policies are in canonical layout"
        );
        let mode = std::fs::metadata(&file).expect("stat").permissions().mode();
        assert_eq!(mode & 0o7777, 0o640, "{name}");
        let after = compile(&file, &dir.join("after.splashc"));
        assert_eq!(before["policy"], after["policy"], "{name}");
        assert_eq!(before["policy_digest"], after["policy_digest"], "{name}");
        assert_ne!(before["source_digest"], after["source_digest"], "{name}");

        let o = splashc(&["fmt", "--check", &path]);
        assert_eq!(o.status.code(), Some(0), "{name}");
        assert!(o.stdout.is_empty());
        std::fs::remove_file(&file).expect("remove");
    }
    // Only the two artifacts: no temporary file is left behind.
    assert_eq!(names(dir), ["after.splashc", "before.splashc"]);
}

#[test]
fn a_symbolic_link_keeps_pointing_at_the_formatted_file() {
    let scratch = temp_dir("symlink");
    let dir = scratch.path();
    let real = dir.join("real.splashpol");
    let link = dir.join("link.splashpol");
    let source =
        std::fs::read_to_string(workspace().join("policies/minimal.splashpol")).expect("read");
    std::fs::write(&real, messy(&source)).expect("write");
    std::os::unix::fs::symlink("real.splashpol", &link).expect("symlink");
    let o = splashc(&["fmt", &link.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        std::fs::symlink_metadata(&link)
            .expect("lstat")
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&real).expect("read"), source);
    assert_eq!(names(dir), ["link.splashpol", "real.splashpol"]);
}

#[test]
fn standard_input_goes_to_standard_output() {
    let source =
        std::fs::read_to_string(workspace().join("policies/demo.splashpol")).expect("read");
    for check in [false, true] {
        let mut args = vec!["fmt"];
        if check {
            args.push("--check");
        }
        args.push("-");
        let mut child = Command::new(env!("CARGO_BIN_EXE_splashc"))
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(messy(&source).as_bytes())
            .expect("write");
        let o = child.wait_with_output().expect("wait");
        if check {
            assert_eq!(o.status.code(), Some(1));
            assert_eq!(text(&o.stdout), "<stdin>\n");
        } else {
            assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
            assert_eq!(text(&o.stdout), source);
        }
    }
}

#[test]
fn a_file_that_does_not_parse_is_left_alone_with_the_checker_diagnostic() {
    let scratch = temp_dir("bad");
    let dir = scratch.path();
    let bad = dir.join("bad.splashpol");
    let source = "splashpol 1\npolicy  \"x\" {\n  wroker \"/a\"\n}\n";
    std::fs::write(&bad, source).expect("write");
    let good = dir.join("good.splashpol");
    let minimal =
        std::fs::read_to_string(workspace().join("policies/minimal.splashpol")).expect("read");
    std::fs::write(&good, messy(&minimal)).expect("write");
    let o = splashc(&["fmt", &bad.to_string_lossy(), &good.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    let check = splashc(&["check", &bad.to_string_lossy()]);
    assert_eq!(check.status.code(), Some(1));
    // The same code and message as `splashc check`.
    assert!(err.contains("splash::parse::unknown-keyword"), "{err}");
    assert!(text(&check.stderr).contains("splash::parse::unknown-keyword"));
    assert!(err.contains("unknown statement `wroker`"), "{err}");
    assert!(err.contains("does not parse; not formatted"), "{err}");
    assert_eq!(std::fs::read_to_string(&bad).expect("read"), source);
    // The other file is still formatted.
    assert_eq!(std::fs::read_to_string(&good).expect("read"), minimal);
    let missing = dir.join("missing.splashpol");
    let o = splashc(&["fmt", &missing.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(names(dir), ["bad.splashpol", "good.splashpol"]);
}

/// Subcommands this file's tests know (the unit tests in `help.rs` take
/// them from the command-line definition).
const SUBCOMMANDS: [&str; 7] = [
    "check",
    "emit",
    "compile",
    "run",
    "fmt",
    "completions",
    "man",
];

#[test]
fn completions_and_man_page_run_from_the_binary() {
    for shell in ["bash", "zsh", "fish"] {
        let o = splashc(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}");
        let script = text(&o.stdout);
        for sub in SUBCOMMANDS {
            assert!(script.contains(sub), "{shell}: {sub}");
        }
    }
    let bash = splashc(&["completions", "bash"]);
    match Command::new("bash")
        .args(["-n", "-c", &text(&bash.stdout)])
        .status()
    {
        Ok(s) => assert!(s.success(), "bash -n rejects the completion script"),
        Err(e) => eprintln!("skipping the bash syntax check: no bash ({e})"),
    }
    let o = splashc(&["man"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o.stdout).starts_with(".ie"));
    let scratch = temp_dir("man");
    let dir = scratch.path();
    let o = splashc(&["man", "--out-dir", &dir.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let pages = names(dir);
    for sub in SUBCOMMANDS {
        assert!(pages.contains(&format!("splashc-{sub}.1")), "{pages:?}");
    }
    assert!(pages.contains(&"splashc.1".to_string()));
}

#[test]
fn the_owner_of_a_file_formatted_by_root_is_kept() {
    use std::os::unix::fs::MetadataExt;
    let scratch = temp_dir("owner");
    let dir = scratch.path();
    let file = dir.join("owned.splashpol");
    let minimal =
        std::fs::read_to_string(workspace().join("policies/minimal.splashpol")).expect("read");
    std::fs::write(&file, messy(&minimal)).expect("write");
    if let Err(e) = std::os::unix::fs::chown(&file, Some(65534), Some(65534)) {
        assert!(
            std::env::var_os("SPLASH_REQUIRE_HOST").is_none_or(|v| v != "1"),
            "SPLASH_REQUIRE_HOST=1 but the file cannot be given to uid 65534: {e}"
        );
        eprintln!("skipping: cannot give a file to uid 65534 (needs root): {e}");
        return;
    }
    let o = splashc(&["fmt", &file.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let meta = std::fs::metadata(&file).expect("stat");
    assert_eq!((meta.uid(), meta.gid()), (65534, 65534));
    assert_eq!(std::fs::read_to_string(&file).expect("read"), minimal);
}

/// `--check --diff` prints each change as a unified diff whose `-` lines are
/// the file's and whose `+` lines are the canonical layout's; `--diff`
/// alone is a usage error.
#[test]
fn check_with_diff_prints_the_change_as_a_unified_diff() {
    let scratch = temp_dir("diff");
    let original = workspace().join("policies/demo.splashpol");
    let source = std::fs::read_to_string(&original).expect("read");
    let file = scratch.path().join("demo.splashpol");
    let untidy = messy(&source);
    std::fs::write(&file, &untidy).expect("write");
    let path = file.to_string_lossy().into_owned();

    let o = splashc(&["fmt", "--check", "--diff", &path]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let shown = text(&o.stdout);
    assert!(
        shown.starts_with(&format!("--- {path}\n+++ {path} (formatted)\n@@ ")),
        "{shown}"
    );
    let (mut removed, mut added) = (Vec::new(), Vec::new());
    for line in shown.lines().skip(2) {
        if let Some(l) = line.strip_prefix('-') {
            removed.push(l);
        } else if let Some(l) = line.strip_prefix('+') {
            added.push(l);
        }
    }
    assert!(!removed.is_empty() && !added.is_empty(), "{shown}");
    let untidy_lines: Vec<&str> = untidy.lines().collect();
    let tidy_lines: Vec<&str> = source.lines().collect();
    for l in &removed {
        assert!(untidy_lines.contains(&l.trim_end_matches('\r')), "{l:?}");
    }
    for l in &added {
        assert!(tidy_lines.contains(l), "{l:?}");
    }
    // Nothing was written.
    assert_eq!(std::fs::read_to_string(&file).expect("read"), untidy);

    // Control: a formatted file prints nothing.
    let o = splashc(&["fmt", "--check", "--diff", &original.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(0));
    assert!(o.stdout.is_empty());

    let o = splashc(&["fmt", "--diff", &path]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}
