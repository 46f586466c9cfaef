#!/bin/sh
# The README's container recipe, as written, against the real nxquotad:
# one `nxquotactl set` on a pod, and unmodified processes in its
# containers, under nxquota-run, get the budget (issue 19).  A stand-in
# for /kubepods (a top-level cgroup with no budget) holds pod-a (min=max
# 32M) with containers ctr-1 and ctr-2, and pod-b with no budget; the
# device (the fake driver's GPU 0, 64M) keeps default_max 0:
#  - ctr-1's app takes 1 MiB blocks until refused: 32 (the pod's
#    guarantee, which its containers share; the shim's holder has no
#    eventfd, so it charges within it); on the rules before issue 19, 0;
#  - ctr-2's, while ctr-1 holds them: 0, the pod's guarantee being used;
#  - once ctr-1 has freed and exited: ctr-2 gets 32;
#  - pod-b's container: 0 (default_max 0 binds what no budget covers).
# Needs root, a cgroup2 mount and the binaries; otherwise says why and
# passes as skipped.  Usage: recipe.sh PATH/libnxquota-preload.so
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
fake=$top/tests/fakecuda	# the fake driver: two devices, as the shim's tests have
export FAKECUDA_DEVICES=2
so=$1
dbin=${NXQD_BIN:-$top/daemon/build/nxquotad}
cbin=${NXQCTL_BIN:-$top/tools/nxquotactl}
key=GPU-f0f1f2f3-f4f5-f6f7-f8f9-f0f1f2f3f4f0	# the fake driver's device 0

skip() { echo "recipe.sh: skipped: $*"; exit 0; }
[ "$(id -u)" = 0 ] || skip "not root (cgroups and the daemon's sockets need it)"
[ -x "$dbin" ] || skip "no $dbin (make -C daemon all)"
[ -x "$cbin" ] || skip "no $cbin (make -C tools)"
cgroot=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$cgroot" ] || skip "no cgroup2 mount"

tmp=$(mktemp -d /tmp/nxqp-recipe.XXXXXX)
kp=nxq-kubepods-$$	# /kubepods
dpid=
cleanup() {
	for p in $apids; do kill -9 "$p" 2>/dev/null; done
	[ -n "$dpid" ] && kill -9 "$dpid" 2>/dev/null
	wait 2>/dev/null
	for d in pod-a/ctr-1 pod-a/ctr-2 pod-b/ctr-1 pod-a pod-b ""; do
		rmdir "$cgroot/$kp/$d" 2>/dev/null
	done
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
apids=
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir -p "$cgroot/$kp/pod-a/ctr-1" "$cgroot/$kp/pod-a/ctr-2" \
	"$cgroot/$kp/pod-b/ctr-1" || skip "cannot create cgroups"
rc=0
fail() { echo "recipe.sh: FAIL: $*"; rc=1; }
ctl() { "$cbin" --control "$tmp/ctl.sock" "$@"; }

mkdir "$tmp/state"
"$dbin" -s "$tmp/client.sock" -c "$tmp/ctl.sock" -S "$tmp/state" -C "$cgroot" \
	>"$tmp/nxquotad.log" 2>&1 &
dpid=$!
i=0
while [ ! -S "$tmp/client.sock" ] || [ ! -S "$tmp/ctl.sock" ]; do
	i=$((i + 1))
	[ $i -lt 500 ] || { cat "$tmp/nxquotad.log"; echo "recipe.sh: FAIL: no sockets"; exit 1; }
	sleep 0.01
done
ctl devices register "$key" 64M >/dev/null || fail "register"
# the recipe: one set, on the pod
ctl set "/$kp/pod-a" "$key" min=32M max=32M >"$tmp/set.out" ||
	fail "set: $(cat "$tmp/set.out")"
grep -q "^/$kp/pod-a on $key: max - -> 32M, min - -> 32M; effective max 32M, effective min 32M$" \
	"$tmp/set.out" || fail "set said: $(cat "$tmp/set.out")"

# start N CGROUP: app budget in that cgroup, under nxquota-run; its
# stdin is the fifo $tmp/in.N (kept open on fd 3+N), output $tmp/out.N
start() {
	mkfifo "$tmp/in.$1"
	(
		echo 0 >"$cgroot/$kp/$2/cgroup.procs"
		exec env NXQUOTA_SOCKET="$tmp/client.sock" NXQ_DEV=/nonexistent \
			LD_LIBRARY_PATH="$fake" \
			"$top/tools/nxquota-run" --lib "$so" -- "$here/app" budget \
			<"$tmp/in.$1" >"$tmp/out.$1" 2>"$tmp/err.$1"
	) &
	apids="$apids $!"
	eval "pid$1=$!"
}
await() {	# await N TEXT
	i=0
	until grep -q "$2" "$tmp/out.$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 1000 ] || { fail "run $1: no '$2' (out: $(cat "$tmp/out.$1" 2>/dev/null); err: $(cat "$tmp/err.$1" 2>/dev/null))"; return 1; }
		sleep 0.01
	done
}
got() { sed -n 's/^allocated \([0-9]*\) error .*/\1/p' "$tmp/out.$1"; }

start 1 pod-a/ctr-1
exec 4>"$tmp/in.1"
await 1 allocated && { [ "$(got 1)" = 32 ] ||
	fail "ctr-1 of pod-a (min=max=32M) got $(got 1) MiB, not 32: $(cat "$tmp/out.1")"; }
start 2 pod-a/ctr-2
exec 5>"$tmp/in.2"
await 2 allocated && { [ "$(got 2)" = 0 ] ||
	fail "ctr-2, with the pod's 32M held by ctr-1, got $(got 2) MiB"; }
start 3 pod-b/ctr-1
exec 6>"$tmp/in.3"
await 3 allocated && { [ "$(got 3)" = 0 ] ||
	fail "pod-b (no budget, default_max 0) got $(got 3) MiB"; }
echo >&5; echo >&5; exec 5>&-
echo >&6; echo >&6; exec 6>&-
echo >&4; await 1 freed; echo >&4; exec 4>&-
wait "$pid1" "$pid2" "$pid3" || fail "an app exited $?"
apids=
start 4 pod-a/ctr-2
exec 7>"$tmp/in.4"
await 4 allocated && { [ "$(got 4)" = 32 ] ||
	fail "ctr-2 after ctr-1 left got $(got 4) MiB, not 32"; }
echo >&7; echo >&7; exec 7>&-
wait "$pid4" || fail "the last app exited $?"
apids=
[ $rc = 0 ] && echo "recipe.sh: ok (one set on the pod: its containers share min=max 32M (32, then 0 while held, 32 after); a pod without a budget gets 0)"
exit $rc
