#!/bin/sh
# Issue 32, item 4 ("no tenant runs uncharged by accident") end to end:
# libnxquota-preload.so and the real nxquotad, an unmodified program
# (sizer hold: 1 MiB cuMemAllocs held and freed on command) on the fake
# driver, whose primary context takes 4 MiB (measured through the fake
# NVML and charged too).  The program starts while nxquotad is down; the
# ledger must end equal to what it holds.  Before, such a process ran
# uncharged for its whole life (9 of 208 processes of a restart campaign).
#  late      NXQUOTA_CONNECT_WAIT_MS=0: 6 MiB allocated while down pass;
#            nxquotad starts: the 6 MiB and the context are charged within
#            the connector's backoff (at most a second apart); frees and
#            allocations after are charged as usual; 0 after the exit
#  wait      the default connect wait (5 s where nxquotad's socket
#            directory exists): an allocation made while down waits for
#            nxquotad, started a second later, and is charged
#  require   NXQUOTA_REQUIRE=1, no wait: refused while down, granted once
#            nxquotad is up, the context charged too
#  reqwait   NXQUOTA_REQUIRE=1, the default wait: the allocation waits and
#            is granted
#  owed      a budget (8M) smaller than what it took while down (10 MiB and
#            the context): the catch-up is refused and said; the process
#            cannot grow while it holds memory uncharged; its frees pay it
#            off; it ends charged exactly what it holds
#  cap       nxquotad -K 1: a neighbour in the same cgroup holds the one
#            connection, so this process's is refused; it runs as down,
#            and is charged once the neighbour's connection is gone
# Needs root, a cgroup2 mount and the binaries (daemon/build/nxquotad,
# tools/nxquotactl); otherwise says why and passes as skipped.
# Usage: late.sh PATH/libnxquota-preload.so [CASE...]
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
fake=$top/tests/fakecuda	# the fake driver: two devices, as the shim's tests have
export FAKECUDA_DEVICES=2
so=$1
shift
cases=${*:-late wait require reqwait owed cap}
dbin=${NXQD_BIN:-$top/daemon/build/nxquotad}
cbin=${NXQCTL_BIN:-$top/tools/nxquotactl}
key=GPU-f0f1f2f3-f4f5-f6f7-f8f9-f0f1f2f3f4f0	# the fake driver's device 0
MiB=1048576

skip() { echo "late.sh: skipped: $*"; exit 0; }
[ "$(id -u)" = 0 ] || skip "not root (cgroups and the daemon's sockets need it)"
[ -x "$dbin" ] || skip "no $dbin (make -C daemon all)"
[ -x "$cbin" ] || skip "no $cbin (make -C tools)"
cgroot=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$cgroot" ] || skip "no cgroup2 mount"

tmp=$(mktemp -d /tmp/nxqp-late.XXXXXX)
cg=nxq-late-$$
pids=
dpid=
cleanup() {
	for p in $pids $dpid; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	for d in l w r q o k; do rmdir "$cgroot/$cg/$d" 2>/dev/null; done
	rmdir "$cgroot/$cg" 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir "$cgroot/$cg" || skip "cannot create a cgroup"
for d in l w r q o k; do mkdir "$cgroot/$cg/$d"; done
rc=0
fail() { echo "late.sh: FAIL: $*"; rc=1; }
ctl() { "$cbin" --control "$tmp/ctl.sock" "$@"; }
used() { ctl --json status "$key" | sed -n 's/.*"used":\([0-9]*\).*/\1/p' | head -n1; }

daemon() {	# nxquotad on $tmp/client.sock [OPTIONS...], until both sockets are there
	"$dbin" -s "$tmp/client.sock" -c "$tmp/ctl.sock" -S "$tmp/state" -C "$cgroot" "$@" \
		>>"$tmp/nxquotad.log" 2>&1 8>&- 9>&- &
	dpid=$!
	i=0
	while [ ! -S "$tmp/client.sock" ] || [ ! -S "$tmp/ctl.sock" ]; do
		i=$((i + 1))
		[ $i -lt 500 ] || { cat "$tmp/nxquotad.log"; echo "late.sh: FAIL: no sockets"; exit 1; }
		sleep 0.01
	done
}
daemon_stop() {	# SIGTERM: no client left, so no record to restore (no grace window)
	kill "$dpid" 2>/dev/null
	wait "$dpid" 2>/dev/null
	dpid=
	rm -f "$tmp/client.sock" "$tmp/ctl.sock"
}
# sizer hold in cgroup C, in the background: N C [ENV...]; its stdin a
# fifo held on fd $FD (8 unless set: 9 for a second one at once)
start() {
	n=$1 c=$2 fd=${FD:-8}
	shift 2
	mkfifo "$tmp/in.$n"
	(
		echo 0 >"$cgroot/$cg/$c/cgroup.procs"
		exec env NXQUOTA_SOCKET="$tmp/client.sock" NXQ_DEV="$tmp/no-nxquota" \
			LD_LIBRARY_PATH="$fake:$here/nvml" FAKECUDA_CTX_MB=4 \
			NXQ_PRELOAD_BATCH=0 "$@" \
			"$top/tools/nxquota-run" --lib "$so" -- "$here/sizer" hold \
			<"$tmp/in.$n" >"$tmp/out.$n" 2>"$tmp/err.$n" 8>&- 9>&-
	) &
	pids="$pids $!"
	eval "fd_$n=$fd"
	eval "exec $fd>\"\$tmp/in.\$n\""
}
await() {	# await N TEXT: the Kth line of N's output with TEXT
	i=0
	until grep -q "$2" "$tmp/out.$1" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 1500 ] || { fail "$1: no '$2' (out: $(cat "$tmp/out.$1"); err: $(cat "$tmp/err.$1"))"; return 1; }
		sleep 0.01
	done
}
lines() { if [ -e "$tmp/out.$1" ]; then wc -l <"$tmp/out.$1"; else echo 0; fi; }
cmd() {	# cmd N LINE: send LINE, wait for its answer (one more output line)
	k=$(lines "$1")
	eval "echo \"\$2\" >&\$fd_$1"
	i=0
	while [ "$(lines "$1")" -le "$k" ]; do
		i=$((i + 1))
		[ $i -lt 1500 ] || { fail "$1: no answer to '$2' (err: $(cat "$tmp/err.$1"))"; return 1; }
		sleep 0.01
	done
	tail -n1 "$tmp/out.$1"
}
want_used() {	# want_used BYTES WHAT: the ledger reaches BYTES within 10 s
	i=0
	while u=$(used); [ "$u" != "$1" ] && [ $i -lt 1000 ]; do i=$((i + 1)); sleep 0.01; done
	[ "$u" = "$1" ] || fail "$2: the ledger has $u, not $1"
}
finish() {	# end the programs (fds 8, 9) and wait for the ledger to be empty
	exec 8>&- 9>&-
	wait $pids 2>/dev/null
	pids=
	want_used 0 "$1: after its exit"
}

# the device and the budgets, kept in the state directory
mkdir "$tmp/state"
daemon
ctl devices register "$key" 1G >/dev/null || fail "register"
for c in l w r q k; do ctl set "/$cg/$c" "$key" min=64M max=64M >/dev/null || fail "set $c"; done
ctl set "/$cg/o" "$key" min=8M max=8M >/dev/null || fail "set o"
daemon_stop

for case_ in $cases; do
	rc0=$rc
	case $case_ in
	late)
		start l l NXQUOTA_CONNECT_WAIT_MS=0
		out=$(cmd l "a 6")
		echo "$out" | grep -q "^a got 6 error 0" || fail "late: while down: $out"
		daemon
		want_used $((10 * MiB)) "late: the 6 MiB and the 4 MiB context held since the start"
		cmd l "f 2" >/dev/null
		want_used $((8 * MiB)) "late: 2 MiB freed"
		cmd l "a 3" >/dev/null
		want_used $((11 * MiB)) "late: 3 MiB more"
		finish late
		grep -q "10 MiB this process allocated meanwhile charged" "$tmp/err.l" ||
			fail "late: the catch-up not said: $(cat "$tmp/err.l")"
		[ "$(grep -c "no nxquota authority" "$tmp/err.l")" = 1 ] ||
			fail "late: the notice not said once: $(cat "$tmp/err.l")"
		[ $rc != "$rc0" ] || echo "late.sh: late: 6 MiB and the context held while down, charged when nxquotad came: ledger 10 MiB, then 8, 11, 0"
		daemon_stop
		;;
	wait)
		start w w
		echo "a 2" >&8
		sleep 1
		daemon
		await w "^a got" &&
			{ grep -q "^a got 2 error 0 held 2" "$tmp/out.w" || fail "wait: $(cat "$tmp/out.w")"; }
		ms=$(sed -n 's/.* after \([0-9]*\) ms/\1/p' "$tmp/out.w")
		[ "${ms:-0}" -ge 500 ] || fail "wait: it did not wait for nxquotad (${ms:-?} ms)"
		want_used $((6 * MiB)) "wait: 2 MiB and the context"
		finish wait
		[ $rc != "$rc0" ] || echo "late.sh: wait: the first allocation waited ${ms} ms for nxquotad and was charged"
		daemon_stop
		;;
	require)
		start r r NXQUOTA_REQUIRE=1 NXQUOTA_CONNECT_WAIT_MS=0
		out=$(cmd r "a 1")
		echo "$out" | grep -q "^a got 0 error 2" || fail "require: while down: $out"
		daemon
		k=1
		while out=$(cmd r "a 1"); ! echo "$out" | grep -q "^a got 1 error 0" && [ $k -lt 50 ]; do
			k=$((k + 1))
			sleep 0.1
		done
		echo "$out" | grep -q "^a got 1 error 0" || fail "require: once up: $out"
		want_used $((5 * MiB)) "require: 1 MiB and the context"
		finish require
		[ $rc != "$rc0" ] || echo "late.sh: require: refused while down, granted once nxquotad answered (try $k), context charged"
		daemon_stop
		;;
	reqwait)
		start q q NXQUOTA_REQUIRE=1
		echo "a 1" >&8
		sleep 1
		daemon
		await q "^a got" &&
			{ grep -q "^a got 1 error 0" "$tmp/out.q" || fail "reqwait: $(cat "$tmp/out.q")"; }
		want_used $((5 * MiB)) "reqwait: 1 MiB and the context"
		finish reqwait
		[ $rc != "$rc0" ] || echo "late.sh: reqwait: NXQUOTA_REQUIRE=1: the allocation waited for nxquotad and was granted"
		daemon_stop
		;;
	owed)
		start o o NXQUOTA_CONNECT_WAIT_MS=0
		out=$(cmd o "a 10")
		echo "$out" | grep -q "^a got 10 error 0" || fail "owed: while down: $out"
		daemon
		await_err=0
		i=0
		until grep -q "could not be charged" "$tmp/err.o"; do
			i=$((i + 1))
			[ $i -lt 1000 ] || { await_err=1; break; }
			sleep 0.01
		done
		[ $await_err = 0 ] || fail "owed: the refused catch-up not said: $(cat "$tmp/err.o")"
		grep -q "refused what this process allocated while no authority answered" "$tmp/err.o" ||
			fail "owed: no refusal line: $(cat "$tmp/err.o")"
		want_used $((4 * MiB)) "owed: the context alone fits"
		out=$(cmd o "a 1")
		echo "$out" | grep -q "^a got 0 error 2" || fail "owed: grew while holding memory uncharged: $out"
		cmd o "f 7" >/dev/null
		out=$(cmd o "a 1")
		echo "$out" | grep -q "^a got 1 error 0 held 4" || fail "owed: 3 MiB held, 1 more: $out"
		want_used $((8 * MiB)) "owed: the 4 MiB held and the context"
		finish owed
		[ $rc != "$rc0" ] || echo "late.sh: owed: 10 MiB over an 8M budget refused at the catch-up, no growth until paid off by frees, ledger = held (8 MiB)"
		daemon_stop
		;;
	cap)
		daemon -K 1
		start k1 k NXQUOTA_CONNECT_WAIT_MS=0	# the neighbour: the one connection
		out=$(cmd k1 "a 1")
		echo "$out" | grep -q "^a got 1 error 0" || fail "cap: the neighbour: $out"
		want_used $((5 * MiB)) "cap: the neighbour's 1 MiB and context"
		FD=9 start k2 k NXQUOTA_CONNECT_WAIT_MS=0
		out=$(cmd k2 "a 2")
		echo "$out" | grep -q "^a got 2 error 0" || fail "cap: refused a connection: $out"
		grep -q "no nxquota authority" "$tmp/err.k2" ||
			fail "cap: its connection was not refused: $(cat "$tmp/err.k2")"
		want_used $((5 * MiB)) "cap: the second process not charged yet"
		exec 8>&-	# the neighbour exits: its connection goes
		want_used $((6 * MiB)) "cap: the 2 MiB and the context held since the start"
		finish cap
		[ $rc != "$rc0" ] || echo "late.sh: cap: refused a connection by -K 1, charged (6 MiB) once the neighbour's went"
		daemon_stop
		;;
	*) fail "no case $case_" ;;
	esac
	[ $rc = "$rc0" ] || echo "late.sh: $case_: FAILED"
done
[ $rc = 0 ] && echo "late.sh: ok"
exit $rc
