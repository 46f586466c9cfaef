#!/bin/sh
# Issue 20 ("unmodified servers") end to end: libnxquota-preload.so
# against the real nxquotad, unmodified programs (sizer, sizer.c) in
# cgroups of their own, on the fake driver (tests/fakecuda) and the fake NVML
# (nvml/):
#  size     under min=max=4G on an 8 GiB GPU, cuMemGetInfo and NVML say
#           total 4 GiB, free 4 GiB less the context; sized as vLLM sizes
#           itself (0.9 x total, less what is in use) the program gets its memory, within the
#           budget; without the shim it would have aimed at 7.2 GiB
#  said     min=8M max=16M: the 9th 1 MiB allocation is refused with one
#           line naming the device, the cgroup, the node, its guarantee
#           and what would help; with --wait 2000 it comes back at once
#           and says that waiting cannot help
#  fits     a 96 MiB GPU shared by three processes (FAKECUDA_SHM), each
#           cgroup min=max=32M, each context 8 MiB: with the context
#           charged each gets 24 MiB and the GPU is exactly full, no
#           driver refusal; with NXQUOTA_CHARGE_CONTEXT=0 each may charge
#           32 MiB, and the third process meets the full GPU (the driver
#           refuses, below its budget): budgets that add up to the GPU
#           overcommitted it
#  require  NXQUOTA_REQUIRE=1: no daemon yet -> refused (said once); the
#           daemon comes -> granted; it dies -> refused; it comes back ->
#           granted
# Needs root, a cgroup2 mount and the binaries (daemon/build/nxquotad,
# tools/nxquotactl); otherwise says why and passes as skipped.
# Usage: budget.sh PATH/libnxquota-preload.so
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
fake=$top/tests/fakecuda	# the fake driver: two devices, as the shim's tests have
export FAKECUDA_DEVICES=2
so=$1
dbin=${NXQD_BIN:-$top/daemon/build/nxquotad}
cbin=${NXQCTL_BIN:-$top/tools/nxquotactl}
key=GPU-f0f1f2f3-f4f5-f6f7-f8f9-f0f1f2f3f4f0	# the fake driver's device 0
GiB=1073741824
MiB=1048576

skip() { echo "budget.sh: skipped: $*"; exit 0; }
[ "$(id -u)" = 0 ] || skip "not root (cgroups and the daemon's sockets need it)"
[ -x "$dbin" ] || skip "no $dbin (make -C daemon all)"
[ -x "$cbin" ] || skip "no $cbin (make -C tools)"
cgroot=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$cgroot" ] || skip "no cgroup2 mount"

tmp=$(mktemp -d /tmp/nxqp-budget.XXXXXX)
cg=nxq-budget-$$
pids=
dpid=
cleanup() {
	for p in $pids $dpid; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	for d in a b c1 c2 c3 r; do rmdir "$cgroot/$cg/$d" 2>/dev/null; done
	rmdir "$cgroot/$cg" 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir "$cgroot/$cg" || skip "cannot create a cgroup"
for d in a b c1 c2 c3 r; do mkdir "$cgroot/$cg/$d"; done
rc=0
fail() { echo "budget.sh: FAIL: $*"; rc=1; }
ctl() { "$cbin" --control "$tmp/ctl.sock" "$@"; }
used() { ctl --json status "$key" | sed -n 's/.*"used":\([0-9]*\).*/\1/p' | head -n1; }

daemon() {	# start nxquotad on $tmp/client.sock, state in $tmp/state
	mkdir -p "$tmp/state"
	# (not holding the programs' stdin fifos open: they end at end of input)
	"$dbin" -s "$tmp/client.sock" -c "$tmp/ctl.sock" -S "$tmp/state" -C "$cgroot" \
		>>"$tmp/nxquotad.log" 2>&1 3>&- 4>&- 5>&- 8>&- &
	dpid=$!
	i=0
	while [ ! -S "$tmp/client.sock" ] || [ ! -S "$tmp/ctl.sock" ]; do
		i=$((i + 1))
		[ $i -lt 500 ] || { cat "$tmp/nxquotad.log"; echo "budget.sh: FAIL: no sockets"; exit 1; }
		sleep 0.01
	done
}
daemon_stop() {
	kill -9 "$dpid" 2>/dev/null
	wait "$dpid" 2>/dev/null
	dpid=
	rm -f "$tmp/client.sock" "$tmp/ctl.sock"
}

# sizer in a cgroup, in the background: N CGROUP [ENV...] COMMAND...; its
# stdin a fifo the caller holds open on fd 8 (a line lets it go on)
start() {
	n=$1 c=$2
	shift 2
	mkfifo "$tmp/in.$n"
	(
		echo 0 >"$cgroot/$cg/$c/cgroup.procs"
		exec env NXQUOTA_SOCKET="$tmp/client.sock" NXQ_DEV="$tmp/no-nxquota" \
			LD_LIBRARY_PATH="$fake:$here/nvml" "$@" \
			<"$tmp/in.$n" >"$tmp/out.$n" 2>"$tmp/err.$n" 3>&- 4>&- 5>&- 8>&-
	) &
	pids="$pids $!"
	eval "pid_$n=$!"
	exec 8>"$tmp/in.$n"
}
await() {	# await N TEXT
	i=0
	until grep -q "$2" "$tmp/out.$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 1000 ] || { fail "$1: no '$2' (out: $(cat "$tmp/out.$1"); err: $(cat "$tmp/err.$1"))"; return 1; }
		sleep 0.01
	done
}
field() { sed -n "s/.*$2 \([0-9]*\).*/\1/p" "$tmp/out.$1" | head -n1; }
run() {	# run N CGROUP [ENV...] COMMAND...: in the foreground, no stdin
	n=$1 c=$2
	shift 2
	(
		echo 0 >"$cgroot/$cg/$c/cgroup.procs"
		exec env NXQUOTA_SOCKET="$tmp/client.sock" NXQ_DEV="$tmp/no-nxquota" \
			LD_LIBRARY_PATH="$fake:$here/nvml" "$@" \
			</dev/null >"$tmp/out.$n" 2>"$tmp/err.$n"
	)
}

daemon
ctl devices register "$key" 8G >/dev/null || fail "register"

# ---- size: the budget is what the application sees
ctl set "/$cg/a" "$key" min=4G max=4G >/dev/null || fail "set a"
run size "a" FAKECUDA_CTX_MB=520 "$top/tools/nxquota-run" --lib "$so" -- "$here/sizer" vllm 90
ctot=$(sed -n 's/^cuda free \([0-9]*\) total \([0-9]*\)$/\2/p' "$tmp/out.size")
cfree=$(sed -n 's/^cuda free \([0-9]*\) total.*/\1/p' "$tmp/out.size")
ntot=$(sed -n 's/^nvml free \([0-9]*\) total \([0-9]*\)$/\2/p' "$tmp/out.size")
took=$(sed -n 's/^took \([0-9]*\) error 0$/\1/p' "$tmp/out.size")
[ "$ctot" = $((4 * GiB)) ] || fail "size: cuMemGetInfo total $ctot, not the 4 GiB budget ($(cat "$tmp/out.size"))"
[ "$cfree" = $((4 * GiB - 520 * MiB)) ] || fail "size: cuMemGetInfo free $cfree, not 4 GiB less the 520 MiB context (a PyTorch context on the H200 is 518-524 MiB)"
[ "$ntot" = $((4 * GiB)) ] || fail "size: NVML total $ntot, not the 4 GiB budget"
[ -n "$took" ] && [ "$took" -le $((4 * GiB)) ] && [ "$took" -gt $((3 * GiB)) ] ||
	fail "size: 0.9 x total less what is in use not granted within the budget ($(cat "$tmp/out.size"); $(cat "$tmp/err.size"))"
# the same program without the shim: the whole GPU
(cd "$tmp" && FAKECUDA_CTX_MB=520 LD_LIBRARY_PATH="$fake:$here/nvml" "$here/sizer" vllm 90 \
	>"$tmp/out.bare" 2>&1)
btot=$(sed -n 's/^cuda free \([0-9]*\) total \([0-9]*\)$/\2/p' "$tmp/out.bare")
[ "$btot" = $((8 * GiB)) ] || fail "size: without the shim cuMemGetInfo total $btot, not 8 GiB"
echo "budget.sh: size: min=max=4G on 8 GiB: cuMemGetInfo $cfree free of $ctot, NVML total $ntot; 0.9 x total less what is in use granted ($took bytes); without the shim: total $btot"

# ---- said: a refusal says why; --wait that cannot help says so at once
ctl set "/$cg/b" "$key" min=8M max=16M >/dev/null || fail "set b"
start said "b" "$top/tools/nxquota-run" --lib "$so" --wait 2000 -- "$here/sizer" fill
await said "fill" && {
	grep -q "fill 8 error 2" "$tmp/out.said" || fail "said: $(cat "$tmp/out.said"), not 8 blocks then refused"
	t=$(sed -n 's/.* after \([0-9]*\) ms/\1/p' "$tmp/out.said")
	[ "${t:-9999}" -lt 1500 ] || fail "said: --wait 2000 held a refusal that cannot be served for $t ms"
	l=$(grep -c "refused an allocation" "$tmp/err.said")
	[ "$l" = 1 ] || fail "said: $l refusal lines, not 1: $(cat "$tmp/err.said")"
	grep -q "refused an allocation of 1 MiB on $key for cgroup /$cg/b at once, although it may wait 2000 ms" "$tmp/err.said" ||
		fail "said: no device, cgroup or wait in: $(cat "$tmp/err.said")"
	grep -q "/$cg/b (0 levels up) is at its guarantee: limit 8 MiB, min 8 MiB, in use 8 MiB; this process cannot give memory back, so it may charge only within its guarantee: raise the min of /$cg/b" "$tmp/err.said" ||
		fail "said: not the node, its guarantee and the advice: $(cat "$tmp/err.said")"
}
echo >&8
exec 8>&-
wait "$pid_said"
echo "budget.sh: said: $(grep "refused an" "$tmp/err.said" | sed 's/^nxquota-preload\[[0-9]*\]: //')"

# ---- fits: budgets that add up to the GPU fit on it when contexts are charged
ctl clear "/$cg/a" "$key" >/dev/null && ctl clear "/$cg/b" "$key" >/dev/null || fail "clear a, b"
ctl devices capacity "$key" 96M >/dev/null || fail "capacity"
for c in c1 c2 c3; do ctl set "/$cg/$c" "$key" min=32M max=32M >/dev/null || fail "set $c"; done
# three at once: each one's stdin kept on its own descriptor
rm -f "$tmp/gpu"
got=
for c in c1 c2 c3; do
	start "ctx$c" "$c" FAKECUDA_SHM="$tmp/gpu" FAKECUDA_MEM=96 FAKECUDA_CTX_MB=8 \
		"$top/tools/nxquota-run" --lib "$so" -- "$here/sizer" fill
	case $c in c1) exec 3>&8 ;; c2) exec 4>&8 ;; c3) exec 5>&8 ;; esac
	exec 8>&-
	await "ctx$c" "fill" || true
	got="$got $(field "ctx$c" fill)"
done
u=$(used)
[ "$got" = " 24 24 24" ] || fail "fits: context charged: fills$got, not 24 each"
[ "$u" = $((96 * MiB)) ] || fail "fits: ledger used $u, not the 96 MiB GPU"
for c in c1 c2 c3; do
	grep -q "refused an allocation" "$tmp/err.ctx$c" || fail "fits: $c not refused by its budget: $(cat "$tmp/err.ctx$c")"
done
exec 3>&- 4>&- 5>&-
wait $pids 2>/dev/null
pids=
echo "budget.sh: fits: 96 MiB GPU, three cgroups min=max=32M, 8 MiB contexts charged: fills$got MiB, ledger $((u / MiB)) MiB, no driver refusal"
# the same with the contexts not charged: the budgets overcommit the GPU
rm -f "$tmp/gpu"
got=
for c in c1 c2 c3; do
	start "raw$c" "$c" FAKECUDA_SHM="$tmp/gpu" FAKECUDA_MEM=96 FAKECUDA_CTX_MB=8 \
		NXQUOTA_CHARGE_CONTEXT=0 "$top/tools/nxquota-run" --lib "$so" -- "$here/sizer" fill
	case $c in c1) exec 3>&8 ;; c2) exec 4>&8 ;; c3) exec 5>&8 ;; esac
	exec 8>&-
	await "raw$c" "fill" || true
	got="$got $(field "raw$c" fill)"
done
[ "$got" = " 32 32 8" ] || fail "fits: contexts not charged: fills$got, not 32 32 8"
grep -q "refused an allocation" "$tmp/err.rawc3" &&
	fail "fits: the third was refused by its budget, not by the full GPU"
exec 3>&- 4>&- 5>&-
wait $pids 2>/dev/null
pids=
echo "budget.sh: fits: NXQUOTA_CHARGE_CONTEXT=0: fills$got MiB: the third meets the full GPU below its budget"

# ---- require: no authority, then one, then none, then one again
for c in c1 c2 c3; do ctl clear "/$cg/$c" "$key" >/dev/null || fail "clear $c"; done
daemon_stop
start req "r" NXQUOTA_REQUIRE=1 NXQ_PRELOAD_BATCH=0 NXQUOTA_RECONNECT_MS=300 \
	NXQUOTA_CONNECT_WAIT_MS=0 \
	"$top/tools/nxquota-run" --lib "$so" -- "$here/sizer" try 4
exec 3>&8
exec 8>&-
go() {	# go K: one try, its error code
	echo >&3
	await req "try $1 error" && sed -n "s/^try $1 error \([0-9]*\)$/\1/p" "$tmp/out.req"
}
e1=$(go 1)
daemon
ctl set "/$cg/r" "$key" min=16M max=16M >/dev/null || fail "set r"
sleep 1.1	# the shim looks for an authority again, at least once a second
e2=$(go 2)
daemon_stop
e3=$(go 3)
daemon
# (a daemon that restarts may hold growth back for a grace window, -G: 5 s)
k=4
while e4=$(go $k); [ "$e4" != 0 ] && [ $k -lt 12 ]; do k=$((k + 1)); sleep 1; done
exec 3>&-
wait $pids 2>/dev/null
pids=
[ "$e1 $e2 $e3 $e4" = "2 0 2 0" ] || fail "require: tries gave $e1 $e2 $e3 $e4, not 2 0 2 0 ($(cat "$tmp/err.req"))"
n=$(grep -c "NXQUOTA_REQUIRE=1 and no nxquota authority" "$tmp/err.req")
[ "$n" = 1 ] || fail "require: the refusal said $n times, not once"
grep -q "an nxquota authority answers" "$tmp/err.req" || fail "require: the authority's coming not said"
echo "budget.sh: require: no daemon, daemon, killed, back: errors $e1 $e2 $e3 $e4 (granted at try $k)"

[ $rc = 0 ] && echo "budget.sh: ok"
exit $rc
