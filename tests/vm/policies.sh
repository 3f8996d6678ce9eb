# Runs inside the VM after the test binaries (tests/vm/guest.sh): `splashc
# test` on the bundled policies this VM can enforce, each provisioned as its
# text names. The guest's root filesystem is the development host's,
# read-only, so /opt, /srv and /run/user are fresh tmpfs mounts here. Which exit each
# policy must give is said above `run` below.
#
# one-hop and strict-allowlist run with `--allow-probe-syscalls`: their
# strict allowlists do not list the test probe's start-up syscalls, and
# splashc widens a policy to test it only when asked (naming what it added).
set -eu
bin=$SPLASH_VM_BIN
splashc=$bin/splashc

mount -t tmpfs -o mode=0755 opt /opt
mount -t tmpfs -o mode=0755 srv /srv

# The demo's and the unprivileged policy's probe worker.
install -D -m 0755 "$bin/splash-probe" /opt/splash-demo/bin/splash-probe

# /opt/splash/runtime, mounted at /opt/splash: the worker (splashc test puts
# its probe there), the in-sandbox runners, and agent-worker's Landlock
# allow-exec entries (files the expectations never execute).
rt=/opt/splash/runtime
install -D -m 0755 "$bin/splash-probe" "$rt/bin/worker"
install -m 0755 "$bin/splash-limit-runner" "$bin/splash-landlock-runner" "$bin/splash-runner" "$rt/bin/"
install -D -m 0755 /dev/null "$rt/lib/ld-linux-aarch64.so.1"
install -m 0755 /dev/null "$rt/lib/ld-linux-x86-64.so.2"
install -m 0755 /dev/null "$rt/bin/reviewed-interpreter"
# The host-side cgroup runner and the delegated parent cgroup-limits names.
install -D -m 0755 "$bin/splash-cgroup-runner" /opt/splash/host-bin/splash-cgroup-runner
mkdir -p /sys/fs/cgroup/splash-workers
echo "+cpu +memory +pids +io" > /sys/fs/cgroup/splash-workers/cgroup.subtree_control

# agent-worker's read-only project root.
mkdir -p /srv/splash/project

# network-broker's broker parent: splashc test starts a real broker there.
mkdir -p /run/user
mount -t tmpfs -o mode=0755 run-user /run/user
install -d -m 0700 /run/user/1000

# durable-output's root: a directory of the prjquota filesystem in project
# 42 with inheritance and hard limits below the policy's ceilings (32 MiB,
# 1024 inodes), bind-mounted nosuid where the policy names it.
out=$SPLASH_VM_QUOTA_MNT/worker-output
mkdir -p "$out" /srv/splash/worker-output
chattr +P -p 42 "$out"
setquota -P 42 0 32768 0 1024 "$SPLASH_VM_QUOTA_MNT"
mount --bind "$out" /srv/splash/worker-output
mount -o remount,bind,nosuid /srv/splash/worker-output

# cgroup-limits names block device 8:16 for its io limits. scsi_debug with
# two targets makes sda and sdb, so 8:16 exists and the policy runs as
# written; without the module a copy with the guest's disk in its place runs.
limits=policies/cgroup-limits.splashpol
if modprobe -a -d "$VMTEST_KROOT" scsi_debug num_tgts=2 dev_size_mb=8 2>/dev/null && udevadm settle 2>/dev/null; [ -e /sys/dev/block/8:16 ]; then
  echo "policies: block device 8:16 is $(basename "$(readlink /sys/dev/block/8:16)") (scsi_debug)"
else
  vda=$(cat /sys/block/vda/dev)
  mkdir -p /run/splash-policies
  sed "s/io 8:16 /io $vda /" "$limits" > /run/splash-policies/cgroup-limits.splashpol
  limits=/run/splash-policies/cgroup-limits.splashpol
  echo "policies: no 8:16 in the guest; cgroup-limits runs with io $vda (/dev/vda)"
fi

# Every policy run here must hold every expectation (exit 0): the control
# of `read-only "/opt/splash"` is a tmpfs there with the worker's and the
# runners' files bound back into it.
status=0
run() {
  echo "== splashc test $*"
  set +e
  "$splashc" test "$@"
  code=$?
  set -e
  if [ "$code" -eq 0 ]; then
    echo "policies: $*: every expectation held"
  else
    echo "policies: $*: exited $code" >&2
    status=1
  fi
}
run "$limits"
run policies/durable-output.splashpol
run policies/minimal.splashpol
run policies/demo.splashpol
run policies/unprivileged.splashpol
run policies/network-broker.splashpol
run --allow-probe-syscalls policies/one-hop.splashpol
run --allow-probe-syscalls policies/strict-allowlist.splashpol
# agent-worker expects `syscall denied bpf`. Kernels before 6.5 refuse
# every unprivileged bpf() with EPERM while kernel.unprivileged_bpf_disabled
# is set, filter or not, so the expectation's control cannot tell the
# filter's part: splashc test reports it UNPROVEN and exits 2, which is
# checked here as the answer for that kernel. With the sysctl at 0 the
# control measures the filter and every expectation must hold.
bpf_sysctl=/proc/sys/kernel/unprivileged_bpf_disabled
if [ "$(cat "$bpf_sysctl")" = 2 ]; then
  echo "== splashc test policies/agent-worker.splashpol (unprivileged_bpf_disabled=2)"
  set +e
  "$splashc" test policies/agent-worker.splashpol > /run/agent-worker.out 2>&1
  code=$?
  set -e
  cat /run/agent-worker.out
  case $code in
    0) echo "policies: agent-worker held with unprivileged bpf disabled" ;;
    2) if grep -q '^UNPROVEN syscall denied bpf' /run/agent-worker.out; then
         echo "policies: agent-worker: bpf unproven while the kernel refuses it anyway (exit 2), as designed"
       else
         echo "policies: agent-worker: exited 2 without naming bpf" >&2
         status=1
       fi ;;
    *) echo "policies: agent-worker: exited $code" >&2; status=1 ;;
  esac
  echo 0 > "$bpf_sysctl"
fi
run policies/agent-worker.splashpol
exit $status
