//! The guest really has what the other VM tests rely on, so none of them can
//! pass on a kernel that lacks the feature under test.

use std::fs;

#[test]
#[ignore = "runs inside the VM: scripts/vm-tests"]
fn cgroup_parent_has_every_controller_delegated() {
    let g = splash_vm_tests::guest();
    let enabled = fs::read_to_string(g.cgroup_parent.join("cgroup.subtree_control"))
        .expect("read the parent's cgroup.subtree_control");
    for controller in ["cpu", "memory", "pids", "io"] {
        assert!(
            enabled.split_whitespace().any(|c| c == controller),
            "controller {controller} is not delegated: {enabled:?}"
        );
    }
}

#[test]
#[ignore = "runs inside the VM: scripts/vm-tests"]
fn quota_mount_is_ext4_with_project_quotas() {
    let g = splash_vm_tests::guest();
    let mounts = fs::read_to_string("/proc/self/mounts").expect("read mounts");
    let line = mounts
        .lines()
        .find(|l| l.split_whitespace().nth(1) == g.quota_mount.to_str())
        .unwrap_or_else(|| panic!("{} is not a mount point", g.quota_mount.display()));
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(fields[2], "ext4", "{line}");
    assert!(fields[3].contains("prjquota"), "{line}");
}
