# Runs inside the VM as root, with the job directory as the working directory
# (see scripts/vm-tests). Prepares what the tests need, runs every test
# binary in ./tests with --ignored, then `splashc test` on the bundled
# policies the VM can enforce (policies.sh). Exit status: 0 only if every
# binary and every policy passed.
set -eu
modprobe -a -d "$VMTEST_KROOT" virtio_blk ext4 quota_v2

# cgroup v2 with every controller, and one delegated parent for the tests.
mount -t cgroup2 none /sys/fs/cgroup
echo "+cpu +memory +pids +io" > /sys/fs/cgroup/cgroup.subtree_control
mkdir /sys/fs/cgroup/splash-vm
echo "+cpu +memory +pids +io" > /sys/fs/cgroup/splash-vm/cgroup.subtree_control

# A fresh ext4 filesystem with enforced project quotas.
mkfs.ext4 -q -F -O quota,project -E quotatype=prjquota /dev/vda
mkdir -p /run/splash-quota
# nosuid: the VM tests launch as root, and bind requires a root worker's
# read-write roots to be on a nosuid mount.
mount -o prjquota,nosuid /dev/vda /run/splash-quota

# A 96 MiB swap file (root-owned, project 0) so that `swap 0 B` can be shown
# against a kernel that could swap.
dd if=/dev/zero of=/run/splash-quota/swapfile bs=1M count=96 status=none
chmod 600 /run/splash-quota/swapfile
mkswap -q /run/splash-quota/swapfile
swapon /run/splash-quota/swapfile

export SPLASH_IN_VM=1
export SPLASH_VM_CGROUP_PARENT=/sys/fs/cgroup/splash-vm
export SPLASH_VM_QUOTA_MNT=/run/splash-quota
export SPLASH_VM_BIN="$PWD/bin"
export SPLASH_REQUIRE_HOST=1

echo "guest: kernel $(uname -r); controllers: $(cat /sys/fs/cgroup/cgroup.controllers); swap: $(tail -n +2 /proc/swaps)"
# A name filter from `scripts/vm-tests FILTER`, empty for every test.
filter=$(cat filter 2>/dev/null || true)
status=0
for t in tests/*; do
  echo "=== $(basename "$t")"
  "$t" --ignored --test-threads=1 ${filter:+"$filter"} || status=1
done
echo "=== splashc test on the bundled policies"
bash ./policies.sh || status=1
exit $status
