#!/bin/sh
# make check: every test that can run on this machine, in order, each
# stage timed.  A stage that cannot run says why; any failure fails the
# whole run, but later stages still run so one report shows everything.
#
#   tests/run-all.sh            make check: the module built (kbuild and
#                               DKMS) for, and the real-kernel stages run
#                               on, Debian 12's 6.12 and trixie-backports'
#                               newest 7.x; KUnit on the 7.x source
#   tests/run-all.sh --matrix   make check-matrix: the kernel matrix, every
#                               kernel scripts/deps.sh lists (6.1, 6.12,
#                               6.18, 7.x): the module built (kbuild and
#                               DKMS) for each, KUnit on 6.12's and 7.x's
#                               source, every scenario against the module
#                               and nxquotad, the container scenarios, and
#                               nxquota-nri's (nri_matrix too) on 6.12
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
matrix=0
[ "${1:-}" = --matrix ] && matrix=1

passed=0
failed=0
failures=""
t0=$(date +%s)
# Each stage's output is also kept in build/check/STAGE.log: the end of the
# run repeats the failing lines of a failed stage, so that a log cut in the
# middle (CI keeps its head and tail) still says what failed.
logs=build/check
[ $matrix = 0 ] || logs=build/matrix
rm -rf "$logs"
mkdir -p "$logs"

stage() {
	name=$1
	shift
	echo "=== $name"
	s=$(date +%s)
	{ "$@" 2>&1; echo $? >"$logs/$name.rc"; } | tee "$logs/$name.log"
	if [ "$(cat "$logs/$name.rc")" = 0 ]; then
		passed=$((passed + 1))
		echo "--- $name: ok ($(($(date +%s) - s))s)"
	else
		failed=$((failed + 1))
		failures="$failures $name"
		echo "--- $name: FAILED ($(($(date +%s) - s))s)"
	fi
}

# quiet NAME CMD...: a stage run beside others (in a background group):
# its output only in $logs/NAME.log, its status and seconds beside it;
# report NAME... prints them once the group is done, in order, and counts.
quiet() {
	name=$1
	shift
	s=$(date +%s)
	"$@" >"$logs/$name.log" 2>&1
	echo $? >"$logs/$name.rc"
	echo $(($(date +%s) - s)) >"$logs/$name.secs"
}
report() {
	for name; do
		echo "=== $name (beside other stages)"
		cat "$logs/$name.log"
		if [ "$(cat "$logs/$name.rc" 2>/dev/null)" = 0 ]; then
			passed=$((passed + 1))
			echo "--- $name: ok ($(cat "$logs/$name.secs")s)"
		else
			failed=$((failed + 1))
			failures="$failures $name"
			echo "--- $name: FAILED ($(cat "$logs/$name.secs" 2>/dev/null)s)"
		fi
	done
}

# The end of the run: the failed stages' failing lines, the count, the
# exit status.
finish() {	# what ran
	echo "=== $1: $(($(date +%s) - t0))s"
	for name in $failures; do
		echo "--- $name failed; its failing lines (all of it: $logs/$name.log):"
		grep -E '(^|[^A-Za-z])(FAIL|FAILED|SURVIVED|ERROR)([^A-Za-z]|$)|(^|[[:space:]#])not ok|error:|Error [0-9]|[Tt]imed? ?out' \
			"$logs/$name.log" | grep -v '^    \|EXPECTATION FAILED\|ASSERTION FAILED\|: killed; failed' |
			tail -n 40
		echo "--- $name: its last lines:"
		tail -n 8 "$logs/$name.log"
	done
	[ -z "$failures" ] || echo "failed stages:$failures"
	echo "stages: $passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}

# The kernels every stage builds for and boots: NXQ_KERNELS, which
# scripts/deps.sh reads (unset: all four; make check: 6.12 and 7).
if [ $matrix = 1 ]; then
	# What the scenarios link (lib_*: libnxquota.a; nl_tool: nxquotactl).
	stage build sh -c 'make -s lib tools && make -s -C tools static'
	stage kmod-build make -s kmod
	stage kunit tests/kunit/run.sh
	stage kunit-newest tests/kunit/run.sh --source newest
	stage install tests/install.sh
	stage vm tests/vm/run.sh --authority both
	stage containers tests/vm/containers/run.sh
	# nxquota-nri: make check's two scenarios and the 16-pod matrix (2
	# layouts x 4 budget sources x 2 GPUs; about 160 s a boot under TCG,
	# too long for make check), on 6.12 with both authorities
	stage nri integrations/nri/test/run.sh --kernel 6.12 --authority both \
		nri_basic nri_inject nri_matrix
	stage sysfs-doc tests/sysfs-doc.sh
	finish "make check-matrix"
fi

# make check: Debian 12's 6.12 and the newest 7.x; the module is built,
# packaged by DKMS, and booted for these two only (make check-matrix: all
# four), and KUnit runs on the newest's source (6.12's: check-matrix).
export NXQ_KERNELS="${NXQ_KERNELS:-6.12 7}"

stage kmod-build make -s kmod
stage kmod-style tests/kmod-style.sh
stage kunit-newest tests/kunit/run.sh --source newest
stage daemon make -s -C daemon check check-mutants
stage lib make -s -C lib check
# the scenarios' harness (tests/vm/harness.h) on itself: a process and a
# time limit per test, the verdict (a few seconds, no root)
stage harness tests/vm/selftest/run.sh
# the real-kernel scenarios against nxquotad, here, as root (no VM;
# after lib: lib_host_budget links libnxquota.a)
stage daemon-scen tests/daemon-scen.sh
stage pytorch-host make -s -C integrations/pytorch check-host
stage tools sh -c 'make -s -C tools check && make -s -C tools static'
# after tools and daemon: tests/preload/daemon.sh uses nxquotad and nxquotactl
stage preload make -s -C preload check check-mutants
# the GPU story and the benchmarks' programs on tests/fakecuda (about 25 s;
# they are built nowhere else in make check)
stage bench-fake make -s -C bench check-fake
stage install tests/install.sh
stage docs tests/docs.sh
# the Kubernetes manifests and the Helm chart (no cluster: schemas, strict
# fields, the chart rendered against the manifests)
stage k8s tests/k8s/check.sh
# every scenario on 6.12 and the newest kernel, against the module and
# against nxquotad (make check-matrix: on every kernel); the container
# scenarios; nxquota-nri against a real containerd (Debian trixie's 1.7
# with NRI, driven over the CRI), on 6.12 with both authorities.  QEMU's
# TCG runs a guest on one thread: the kernel scenarios boot on one core
# while the container ones boot on the other.  What both runners build
# (the module for each kernel, the static daemon and tools) is built
# first, so that the two never build the same files at once.
stage vm-build sh -c 'make -s kmod >/dev/null && make -s -C daemon static && make -s -C tools static'
# the node image (make image) booted with podman, serving a container's
# budget: after the kernel scenarios, in their lane, in a directory of its own
{
	quiet vm tests/vm/run.sh --authority both
	quiet image sh -c 'scripts/image.sh && NXQ_CONTAINERS_OUT=build/vm-image \
		NXQ_SCEN_DIRS=tests/vm/containers/image tests/vm/containers/run.sh \
		--kernel 6.12 --authority image image_node'
} &
vm_pid=$!
{
	quiet containers tests/vm/containers/run.sh
	quiet nri integrations/nri/test/run.sh --kernel 6.12 --authority both \
		nri_basic nri_inject
} &
wait $vm_pid $!
report vm image containers nri
# reads the vm stage's console logs: before demo, which boots 6.12 again
stage sysfs-doc tests/sysfs-doc.sh
stage demo tests/demo-check.sh

finish "make check"
