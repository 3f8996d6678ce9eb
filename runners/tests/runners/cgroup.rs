//! `splash-cgroup-runner` on the real kernel: it joins the cgroup handed
//! over as a directory descriptor, passes on exactly the `--keep-fd`
//! descriptors, and refuses a descriptor that is not a cgroup-v2 directory.
//! Each test works in its own cgroup below this process's cgroup-v2 cgroup
//! and removes it.

use std::path::{Path, PathBuf};

use crate::common::{fd_probe_script, output, programs, require_host, stderr, stdout, with_fds};

const CGROUP_RUNNER: &str = env!("CARGO_BIN_EXE_splash-cgroup-runner");

/// `(mount point, this process's cgroup path)` of the cgroup-v2 hierarchy.
fn own_cgroup() -> Option<(PathBuf, String)> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    let mount = mounts
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.len() > 2 && f[2] == "cgroup2")
        .map(|f| PathBuf::from(f[1]))?;
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("0::").map(str::to_owned))?;
    Some((mount, own))
}

/// A fresh cgroup of our own, removed on drop.
struct TestCgroup {
    path: PathBuf,
    relative: String,
}

impl TestCgroup {
    fn new(tag: &str) -> Option<Self> {
        let found = own_cgroup();
        let made = found.and_then(|(mount, own)| {
            let relative = format!(
                "{}/splash-runner-{tag}-{}",
                own.trim_end_matches('/'),
                std::process::id()
            );
            let path = mount.join(relative.trim_start_matches('/'));
            std::fs::create_dir(&path).ok()?;
            Some(Self { path, relative })
        });
        require_host(made.is_some(), "a writable cgroup-v2 hierarchy").then_some(())?;
        made
    }

    fn procs(&self) -> String {
        std::fs::read_to_string(self.path.join("cgroup.procs")).unwrap_or_default()
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        let _ = std::fs::write(self.path.join("cgroup.kill"), "1");
        for _ in 0..1000 {
            if std::fs::remove_dir(&self.path).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

#[test]
fn joins_the_cgroup_and_passes_on_only_the_kept_descriptors() {
    let Some(cg) = TestCgroup::new("join") else {
        return;
    };
    let p = programs();
    let script = format!("cat /proc/self/cgroup; {}", fd_probe_script());
    let out = output(&mut with_fds(
        &[
            (7, &cg.path),
            (8, Path::new("/dev/null")),
            (9, Path::new("/dev/null")),
        ],
        &[
            CGROUP_RUNNER,
            "--cgroup-fd",
            "7",
            "--keep-fd",
            "8",
            "--",
            &p.dash,
            "-c",
            &script,
        ],
    ));
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.contains(&format!("0::{}", cg.relative).as_str()),
        "not in the cgroup: {text}"
    );
    let fds: Vec<&str> = lines.iter().copied().filter(|l| !l.contains(':')).collect();
    assert_eq!(fds, ["8"], "only the kept descriptor is inherited: {text}");
    // The program (a child of the test) has exited: the cgroup is empty.
    assert_eq!(cg.procs(), "");
}

#[test]
fn refuses_a_descriptor_that_is_not_a_cgroup_v2_directory() {
    let Some(cg) = TestCgroup::new("refuse") else {
        return;
    };
    let p = programs();
    for (path, why) in [
        (std::env::temp_dir(), "not on a cgroup-v2 filesystem"),
        (cg.path.join("cgroup.procs"), "not a directory"),
    ] {
        let out = output(&mut with_fds(
            &[(7, &path)],
            &[CGROUP_RUNNER, "--cgroup-fd", "7", "--", &p.truth],
        ));
        assert_eq!(out.status.code(), Some(71), "{}", stderr(&out));
        assert!(stderr(&out).contains(why), "{}", stderr(&out));
    }
    // A descriptor that is not open, and a kept descriptor that is not open.
    let out = output(std::process::Command::new(CGROUP_RUNNER).args([
        "--cgroup-fd",
        "7",
        "--",
        &p.truth,
    ]));
    assert_eq!(out.status.code(), Some(71), "{}", stderr(&out));
    let out = output(&mut with_fds(
        &[(7, &cg.path)],
        &[
            CGROUP_RUNNER,
            "--cgroup-fd",
            "7",
            "--keep-fd",
            "9",
            "--",
            &p.truth,
        ],
    ));
    assert_eq!(out.status.code(), Some(71), "{}", stderr(&out));
    assert!(stderr(&out).contains("`9` is not open"), "{}", stderr(&out));
    // Control: the same runner with the cgroup directory runs the program.
    let out = output(&mut with_fds(
        &[(7, &cg.path)],
        &[CGROUP_RUNNER, "--cgroup-fd", "7", "--", &p.truth],
    ));
    assert!(out.status.success(), "{}", stderr(&out));
}
