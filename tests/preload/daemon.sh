#!/bin/sh
# libnxquota-preload.so end to end against the real nxquotad: an unmodified
# program (app budget) in its own cgroup, under nxquota-run, with min=8M
# max=16M on the fake driver's GPU 0: its ninth 1 MiB cuMemAlloc is
# refused with CUDA_ERROR_OUT_OF_MEMORY (2), below max: what cuMemAlloc
# holds cannot be given back without the application, so the shim's holder
# has no eventfd and cannot borrow beyond the guarantee (issue 13, item 2).
# The daemon's "used" is 8 MiB
# while it holds them, at most one batch (2 MiB) plus its last
# allocation's size (1 MiB) kept as credit after its frees and 0 after its exit; a second run SIGKILLed while
# holding leaves 0 behind, and a third, idle while nxquotad is SIGKILLed and
# started again, has its 8 MiB charged again with no call of its own (the
# library's watcher, issue 21).  Then two unmodified processes share the device
# (capacity 64M): B, a borrower (min 0), holds 64 MiB reserved and unused
# in its stream-ordered pool; G, guaranteed 32M, allocates 16 MiB with
# cuMemAlloc and --wait: the daemon tickets B, B's shim trims its pool and
# answers, G is granted; B is charged 0 after.  Last, the cost of a
# charged cuMemAlloc/cuMemFree pair through the daemon's socket (a figure,
# not a check).  Needs root, a cgroup2 mount and the binaries
# (daemon/build/nxquotad, tools/nxquotactl); otherwise says why and passes
# as skipped.  Usage: daemon.sh PATH/libnxquota-preload.so
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
fake=$top/tests/fakecuda	# the fake driver: two devices, as the shim's tests have
export FAKECUDA_DEVICES=2
so=$1
dbin=${NXQD_BIN:-$top/daemon/build/nxquotad}
cbin=${NXQCTL_BIN:-$top/tools/nxquotactl}
key=GPU-f0f1f2f3-f4f5-f6f7-f8f9-f0f1f2f3f4f0	# the fake driver's device 0

skip() { echo "daemon.sh: skipped: $*"; exit 0; }
[ "$(id -u)" = 0 ] || skip "not root (cgroups and the daemon's sockets need it)"
[ -x "$dbin" ] || skip "no $dbin (make -C daemon all)"
[ -x "$cbin" ] || skip "no $cbin (make -C tools)"
cgroot=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$cgroot" ] || skip "no cgroup2 mount"

tmp=$(mktemp -d /tmp/nxqp-daemon.XXXXXX)
cg=nxq-preload-$$
dpid=
apid=
cleanup() {
	[ -n "$apid" ] && kill -9 "$apid" 2>/dev/null
	[ -n "$dpid" ] && kill -9 "$dpid" 2>/dev/null
	wait 2>/dev/null
	rmdir "$cgroot/$cg/b" "$cgroot/$cg/g" "$cgroot/$cg" 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM	# (a timeout) the cleanup still runs
mkdir "$cgroot/$cg" || skip "cannot create a cgroup"
rc=0
fail() { echo "daemon.sh: FAIL: $*"; rc=1; }
ctl() { "$cbin" --control "$tmp/ctl.sock" "$@"; }
used() { ctl --json status "$key" | sed -n 's/.*"used":\([0-9]*\).*/\1/p' | head -n1; }

mkdir "$tmp/state"
# the daemon on $tmp's sockets and state, until its control socket answers
start_daemon() {
	"$dbin" -s "$tmp/client.sock" -c "$tmp/ctl.sock" -S "$tmp/state" -C "$cgroot" -v \
		>>"$tmp/nxquotad.log" 2>&1 &
	dpid=$!
	i=0
	until ctl devices >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 500 ] || { cat "$tmp/nxquotad.log"; echo "daemon.sh: FAIL: no daemon"; exit 1; }
		sleep 0.01
	done
}
start_daemon
ctl devices register "$key" 64M >/dev/null || fail "register"
ctl set "/$cg" "$key" min=8M max=16M >/dev/null || fail "set budget"

# one run of app budget in the cgroup; its output in $tmp/out.N
run() {
	mkfifo "$tmp/in.$1"
	(
		echo 0 >"$cgroot/$cg/cgroup.procs"	# "0": this subshell
		exec env NXQUOTA_SOCKET="$tmp/client.sock" NXQ_DEV=/nonexistent \
			LD_LIBRARY_PATH="$fake" \
			"$top/tools/nxquota-run" --lib "$so" -- "$here/app" budget \
			<"$tmp/in.$1" >"$tmp/out.$1" 2>"$tmp/err.$1"
	) &
	apid=$!
	exec 9>"$tmp/in.$1"
}
await() {	# await N TEXT
	i=0
	until grep -q "$2" "$tmp/out.$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 1000 ] || { fail "run $1: no '$2' (out: $(cat "$tmp/out.$1"); err: $(cat "$tmp/err.$1"))"; return 1; }
		sleep 0.01
	done
}

run 1
await 1 "allocated" &&
	{ grep -q "allocated 8 error 2" "$tmp/out.1" || fail "run 1: $(cat "$tmp/out.1"), not 8 blocks then OUT_OF_MEMORY"; }
u=$(used); [ "$u" = 8388608 ] || fail "used $u while holding 8 MiB"
echo >&9
await 1 "freed"
# the shim keeps up to one batch (NXQ_PRELOAD_BATCH, 2 MiB) plus the last
# allocation's size (1 MiB) as credit
u=$(used); [ "$u" -le 3145728 ] || fail "used $u after the frees"
echo >&9
exec 9>&-
wait "$apid" || fail "run 1 exited $?"
apid=
i=0
while u=$(used); [ "$u" != 0 ] && [ $i -lt 200 ]; do i=$((i + 1)); sleep 0.01; done
[ "$u" = 0 ] || fail "used $u after the exit"

run 2
await 2 "allocated"
u=$(used); [ "$u" = 8388608 ] || fail "run 2: used $u while holding"
kill -9 "$apid"
wait "$apid" 2>/dev/null
apid=
exec 9>&-
i=0
while u=$(used); [ "$u" != 0 ] && [ $i -lt 200 ]; do i=$((i + 1)); sleep 0.01; done
[ "$u" = 0 ] || fail "used $u after SIGKILL"

# ---- nxquotad restarts while the process is idle (issue 21): the shim's
# library notices the connection end at once (its watcher) and restores
# the 8 MiB within the grace window, with no call from the application
run 3
await 3 "allocated"
u=$(used); [ "$u" = 8388608 ] || fail "run 3: used $u while holding"
kill -9 "$dpid"
wait "$dpid" 2>/dev/null
start_daemon
i=0
while u=$(used); [ "$u" != 8388608 ] && [ $i -lt 300 ]; do i=$((i + 1)); sleep 0.01; done
[ "$u" = 8388608 ] ||
	fail "idle across a restart: used $u after 3 s, not the 8 MiB it holds (err: $(cat "$tmp/err.3"))"
echo >&9
await 3 "freed"
echo >&9
exec 9>&-
wait "$apid" || fail "run 3 exited $?"
apid=
i=0
while u=$(used); [ "$u" != 0 ] && [ $i -lt 200 ]; do i=$((i + 1)); sleep 0.01; done
[ "$u" = 0 ] || fail "used $u after run 3's exit"

# ---- two processes: the guaranteed one gets its memory back from the pool of the other
ctl devices capacity "$key" 64M >/dev/null || fail "capacity"
mkdir "$cgroot/$cg/b" "$cgroot/$cg/g" 2>/dev/null
ctl set "/$cg" "$key" min=32M max=64M >/dev/null || fail "set parent"
ctl set "/$cg/b" "$key" max=64M >/dev/null || fail "set b"
ctl set "/$cg/g" "$key" min=32M max=64M >/dev/null || fail "set g"
bench() {	# N cgroup args...: in the background, in cgroup, output in $tmp/out.N; $! its pid
	n=$1 c=$2
	shift 2
	mkfifo "$tmp/in.$n"
	(
		echo 0 >"$cgroot/$c/cgroup.procs"
		exec env NXQUOTA_SOCKET="$tmp/client.sock" NXQ_DEV=/nonexistent \
			LD_LIBRARY_PATH="$fake" \
			"$top/tools/nxquota-run" --lib "$so" "$@" \
			<"$tmp/in.$n" >"$tmp/out.$n" 2>"$tmp/err.$n"
	) &
}
bench b "$cg/b" -- "$here/bench_preload" pool 40
bpid=$!
exec 7>"$tmp/in.b"
await b "pool 40 error 0" || true
u=$(used); [ "$u" = 67108864 ] || fail "B's pool: used $u, not its 64 MiB reservation"
bench g "$cg/g" --wait 5000 -- "$here/bench_preload" plain 16
gpid=$!
exec 8>"$tmp/in.g"
await g "plain" || true
grep -q "plain 16 error 0" "$tmp/out.g" || fail "G: $(cat "$tmp/out.g") $(cat "$tmp/err.g"), not 16 blocks"
u=$(used); [ "$u" = 16777216 ] || fail "used $u after G's grant, not G's 16 MiB (B trimmed to 0)"
t=$(ctl --json status "$key" | tr '{' '\n' | grep "\"key\":\"$key\"" | sed -n 's/.*"tickets":\([0-9]*\).*/\1/p')
[ "${t:-0}" -ge 1 ] || fail "no ticket counted ($t)"
echo >&7; echo >&8
exec 7>&- 8>&-
wait "$bpid" "$gpid"
rmdir "$cgroot/$cg/b" "$cgroot/$cg/g" 2>/dev/null

# ---- a figure: charged pairs through the daemon
ctl set "/$cg" "$key" min=64M max=64M >/dev/null
fig=$(
	echo 0 >"$cgroot/$cg/cgroup.procs"
	NXQUOTA_SOCKET="$tmp/client.sock" NXQ_DEV=/nonexistent LD_LIBRARY_PATH="$fake" \
		LD_PRELOAD=$so "$here/bench_preload" pairs 20000 4096 | head -n1
)
bare=$(LD_LIBRARY_PATH="$fake" "$here/bench_preload" pairs 20000 4096 | head -n1)
echo "daemon.sh: fake driver alone: ${bare#pairs: }"
echo "daemon.sh: charged through nxquotad: ${fig#pairs: }"
# issue 20: cuMemGetInfo through the shim (a STATUS round trip to nxquotad
# each) against the driver's, in one process; the shim's total is the budget
info=$(
	echo 0 >"$cgroot/$cg/cgroup.procs"
	NXQUOTA_SOCKET="$tmp/client.sock" NXQ_DEV=/nonexistent LD_LIBRARY_PATH="$fake/bound" \
		LD_PRELOAD=$so "$here/bench_preload" info 200 11
)
echo "daemon.sh: ${info#info: }"
echo "$info" | grep -q "shim [0-9]* ns/call (free [0-9]* of 67108864)" ||
	fail "cuMemGetInfo through the shim does not say the 64M budget: $info"

# ---- the shim's own work per pair, side by side in one process
# (bench_preload inter: the driver's own entry points, resolved through the
# shim's exemption, and the shim's, in alternating batches), on the fake
# driver built as a real one is (tests/fakecuda/bound: its nested calls stay inside
# it), with one device visible and with two: figures, and the counts that
# are deterministic -- no authority trip per warm pair; driver calls per
# pair: cuMemAlloc none added with one device (cuCtxGetDevice with two);
# a warm 4 KiB stream-ordered pair adds cuDeviceGetMemPool and the pool's
# reservation after it (and cuCtxGetDevice with two)
cpp() {	# the shim's and the driver's driver calls per pair of a line
	sed -n 's/.*driver calls\/pair \([0-9.]*\) vs \([0-9.]*\).*/\1 \2/p'
}
for nd in 1 2; do
	out=$(
		echo 0 >"$cgroot/$cg/cgroup.procs"
		NXQUOTA_SOCKET="$tmp/client.sock" NXQ_DEV=/nonexistent LD_LIBRARY_PATH="$fake/bound" \
			FAKECUDA_DEVICES=$nd LD_PRELOAD=$so "$here/bench_preload" inter 2000 4096 21
	)
	echo "$out" | sed "s/^inter: /daemon.sh: $nd device(s), side by side: /"
	[ "$(echo "$out" | grep -c "0.000 authority trips/pair")" = 2 ] ||
		fail "$nd device(s): a warm pair reached the authority: $out"
	set -- $(echo "$out" | grep "cuMemAlloc+cuMemFree" | cpp) \
		$(echo "$out" | grep "cuMemAllocAsync" | cpp)
	want_a=$(( nd - 1 )) want_s=$(( nd + 1 ))
	awk -v s="${1:-0}" -v d="${2:-0}" -v w="$want_a" 'BEGIN { exit !(s - d == w) }' ||
		fail "$nd device(s): cuMemAlloc pair: $1 driver calls vs $2 (+$want_a expected)"
	awk -v s="${3:-0}" -v d="${4:-0}" -v w="$want_s" 'BEGIN { exit !(s - d == w) }' ||
		fail "$nd device(s): cuMemAllocAsync pair: $3 driver calls vs $4 (+$want_s expected)"
done

[ $rc = 0 ] && echo "daemon.sh: ok (min 8M, max 16M: 8 blocks granted, the 9th OUT_OF_MEMORY; at most a batch + 1 MiB after the frees, 0 after exit and after SIGKILL; an idle process restored after nxquotad is SIGKILLed and restarted; G granted through B's ticket answer)"
exit $rc
