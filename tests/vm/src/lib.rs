//! What the VM guest provides to the tests in this crate.
//!
//! Every test here is `#[ignore]`d on the host: it needs kernel features the
//! development host lacks (cgroup-v2 controllers, ext4 project quotas).
//! `scripts/vm-tests` builds the test binaries, boots a throwaway VM whose
//! kernel has them (`../shared/tools/vmtest.sh`), prepares the guest
//! (`tests/vm/guest.sh`) and runs every binary with `--ignored`. Inside the
//! guest [`guest`] returns what was prepared; outside it the tests refuse to
//! run, so an `--ignored` run on the host fails instead of passing vacuously.

use std::path::PathBuf;

/// Set to `1` by `tests/vm/guest.sh` inside the VM.
pub const IN_VM_VAR: &str = "SPLASH_IN_VM";

/// What the guest script prepared before the tests run.
#[derive(Debug, Clone)]
pub struct Guest {
    /// A delegated cgroup-v2 parent with `cpu memory pids io` enabled in its
    /// `cgroup.subtree_control` (`SPLASH_VM_CGROUP_PARENT`).
    pub cgroup_parent: PathBuf,
    /// Mount point of a fresh ext4 filesystem mounted with `prjquota`
    /// (`SPLASH_VM_QUOTA_MNT`); the block device is `/dev/vda`.
    pub quota_mount: PathBuf,
    /// The directory holding the workspace binaries copied into the job
    /// (`SPLASH_VM_BIN`): `splash-probe`, the runners, and this crate's test
    /// binaries.
    pub bin_dir: PathBuf,
}

/// The prepared guest. Panics outside the VM: these tests prove enforcement
/// on a real kernel and must never pass without one.
pub fn guest() -> Guest {
    assert_eq!(
        std::env::var(IN_VM_VAR).as_deref(),
        Ok("1"),
        "this test runs only inside the VM: run scripts/vm-tests"
    );
    let var = |name: &str| {
        PathBuf::from(
            std::env::var(name).unwrap_or_else(|_| panic!("the guest did not set {name}")),
        )
    };
    Guest {
        cgroup_parent: var("SPLASH_VM_CGROUP_PARENT"),
        quota_mount: var("SPLASH_VM_QUOTA_MNT"),
        bin_dir: var("SPLASH_VM_BIN"),
    }
}

/// The host uids (real, effective, saved, filesystem) of process `pid`, as
/// `/proc/PID/status` lists them; empty when the process is gone.
pub fn host_uids(pid: &str) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .map(|v| {
            v.split_whitespace()
                .filter_map(|f| f.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}
