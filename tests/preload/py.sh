#!/bin/sh
# libnxquota-preload.so and PyTorch's cache (issue 13, item 2, second half),
# against the real nxquotad, on the fake driver, with a fake torch.cuda
# (faketorch/: a caching allocator over cuMemAlloc_v2/cuMemFree_v2 through
# ctypes, whose empty_cache() frees through the shim) -- no GPU, no PyTorch:
#   notorch   Python without torch, min=8M max=16M: 8 blocks, the 9th
#             refused (its plain holder has no eventfd: cannot borrow)
#   torch     the same program's twin with (fake) torch imported: 16 blocks
#             (its plain holder is askable: it borrows up to max)
#   share     a (fake) PyTorch borrower B whose 56 MiB are cached (capacity 64M); G,
#             guaranteed 32M, asks 16 MiB with --wait: B's shim runs
#             torch.cuda.empty_cache() in B's main thread (Py_AddPendingCall)
#             and answers the ticket with what it freed (all 56 MiB); G granted
#   busy      the same with B's main thread in time.sleep(3) (one C call, no
#             bytecode boundary): the ticket is answered within the bounded
#             wait (NXQ_PRELOAD_PY_WAIT_MS, 250 ms) with what was released
#             (not yet the cache); the callback runs when B wakes, its frees
#             uncharge on their own, G is granted then
#   notpy     a program that is not Python, same budget: 8 blocks
# Needs root, cgroup2, nxquotad, nxquotactl, python3; else skipped.
# Usage: py.sh PATH/libnxquota-preload.so
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
fake=$top/tests/fakecuda	# the fake driver: two devices, as the shim's tests have
export FAKECUDA_DEVICES=2
so=$1
dbin=${NXQD_BIN:-$top/daemon/build/nxquotad}
cbin=${NXQCTL_BIN:-$top/tools/nxquotactl}
key=GPU-f0f1f2f3-f4f5-f6f7-f8f9-f0f1f2f3f4f0	# the fake driver's device 0
MiB=1048576

skip() { echo "py.sh: skipped: $*"; exit 0; }
[ "$(id -u)" = 0 ] || skip "not root (cgroups and the daemon's sockets need it)"
[ -x "$dbin" ] || skip "no $dbin (make -C daemon all)"
[ -x "$cbin" ] || skip "no $cbin (make -C tools)"
py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || skip "no python3"
[ -f "$here/fakec10/libc10_cuda.so" ] || skip "no fakec10/libc10_cuda.so (make -C tests/preload)"
cgroot=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$cgroot" ] || skip "no cgroup2 mount"

tmp=$(mktemp -d /tmp/nxqp-py.XXXXXX)
cg=nxq-preload-py-$$
dpid=
cleanup() {
	for p in $(cat "$tmp/pids" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
	[ -n "$dpid" ] && kill -9 "$dpid" 2>/dev/null
	wait 2>/dev/null
	rmdir "$cgroot/$cg/b" "$cgroot/$cg/g" "$cgroot/$cg" 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM	# (a timeout) the cleanup still runs
mkdir "$cgroot/$cg" "$cgroot/$cg/b" "$cgroot/$cg/g" || skip "cannot create a cgroup"
rc=0
fail() { echo "py.sh: FAIL: $*"; rc=1; }
ctl() { "$cbin" --control "$tmp/ctl.sock" "$@"; }
used() { ctl --json status "$key" | sed -n 's/.*"used":\([0-9]*\).*/\1/p' | head -n1; }
now() { date +%s.%N; }

mkdir "$tmp/state"
"$dbin" -s "$tmp/client.sock" -c "$tmp/ctl.sock" -S "$tmp/state" -C "$cgroot" >"$tmp/nxquotad.log" 2>&1 &
dpid=$!
i=0
while [ ! -S "$tmp/client.sock" ] || [ ! -S "$tmp/ctl.sock" ]; do
	i=$((i + 1))
	[ $i -lt 500 ] || { cat "$tmp/nxquotad.log"; echo "py.sh: FAIL: no sockets"; exit 1; }
	sleep 0.01
done
ctl devices register "$key" 64M >/dev/null || fail "register"

# start N CGROUP [nxquota-run options] -- CMD...: in the background, stdin a
# FIFO held open on fd 9 (8 for N=g), output in $tmp/N.out, stderr $tmp/N.err
start() {
	n=$1 c=$2
	shift 2
	rm -f "$tmp/$n.in"
	mkfifo "$tmp/$n.in"
	(
		echo 0 >"$cgroot/$c/cgroup.procs"
		exec env NXQUOTA_SOCKET="$tmp/client.sock" NXQ_DEV=/nonexistent \
			LD_LIBRARY_PATH="$fake" PYTHONPATH="$here/faketorch" \
			FAKE_C10="$here/fakec10/libc10_cuda.so" NXQ_PRELOAD_VERBOSE=1 \
			"$top/tools/nxquota-run" --lib "$so" "$@" \
			<"$tmp/$n.in" >"$tmp/$n.out" 2>"$tmp/$n.err"
	) &
	echo $! >>"$tmp/pids"
}
await() {	# N TEXT [TENTHS]
	i=0
	until grep -q "$2" "$tmp/$1.out" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt "${3:-100}" ] || { fail "$1: no '$2' (out: $(cat "$tmp/$1.out"); err: $(tail -3 "$tmp/$1.err"))"; return 1; }
		sleep 0.1
	done
}
zero() {
	i=0
	while u=$(used); [ "$u" != 0 ] && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.05; done
	[ "$u" = 0 ] || fail "$1: used $u after the exit"
}

# ---- notorch / torch: who may borrow
ctl set "/$cg" "$key" min=8M max=16M >/dev/null || fail "set budget"
for m in notpy notorch-fill fill; do
	if [ $m = notpy ]; then
		start $m "$cg" -- "$here/bench_preload" plain 16
	else
		start $m "$cg" -- "$py" "$here/pyapp.py" $m 16
	fi
	exec 9>"$tmp/$m.in"
	want=8; [ $m = fill ] && want=16
	if await $m "fill\|plain"; then
		grep -q "^fill $want\$\|^plain $want error" "$tmp/$m.out" ||
			fail "$m: $(cat "$tmp/$m.out"), not $want blocks ($(tail -2 "$tmp/$m.err"))"
		u=$(used); [ "$u" = $((want * MiB)) ] || fail "$m: used $u, not $want MiB"
	fi
	echo >&9; exec 9>&-
	wait $(cat "$tmp/pids")
	: >"$tmp/pids"
	zero $m
done
grep -q "a PyTorch process" "$tmp/fill.err" || fail "torch: the shim did not say it found PyTorch"
grep -q "a PyTorch process" "$tmp/notorch-fill.err" "$tmp/notpy.err" &&
	fail "notorch/notpy: taken for a PyTorch process"
echo "py.sh: not Python: $(cat "$tmp/notpy.out"); no torch: $(cat "$tmp/notorch-fill.out") (min 8M);" \
	"(fake) torch: $(cat "$tmp/fill.out") (max 16M)"

# ---- share / busy: G gets its memory back from B's cache
ctl set "/$cg" "$key" min=32M max=64M >/dev/null || fail "set parent"
ctl set "/$cg/b" "$key" max=64M >/dev/null || fail "set b"
ctl set "/$cg/g" "$key" min=32M max=64M >/dev/null || fail "set g"
for sc in share busy; do
	# share: a wait long enough for a loaded machine; busy: the default 250 ms
	sl=0 pw=2000; [ $sc = busy ] && sl=3 pw=250
	start b "$cg/b" -- env NXQ_PRELOAD_PY_WAIT_MS=$pw "$py" "$here/pyapp.py" borrow 56 $sl
	exec 9>"$tmp/b.in"
	await b "ready" || { exec 9>&-; continue; }
	u=$(used); [ "$u" -ge $((56 * MiB)) ] || fail "$sc: B's 56 MiB cached: used $u"
	t0=$(now)
	start g "$cg/g" --wait 8000 -- "$here/bench_preload" plain 16
	exec 8>"$tmp/g.in"
	await g "plain" 120
	t1=$(now)
	grep -q "plain 16 error 0" "$tmp/g.out" ||
		fail "$sc: G: $(cat "$tmp/g.out") $(tail -2 "$tmp/g.err"), not 16 blocks"
	echo >&9
	await b "calls="
	ans=$(grep -m1 "answer [0-9]* bytes" "$tmp/b.err")
	bytes=$(echo "$ans" | sed -n 's/.*answer \([0-9]*\) bytes.*/\1/p')
	ms=$(echo "$ans" | sed -n 's/.* after \([0-9]*\) ms.*/\1/p')
	echo "py.sh: $sc: G granted after $(echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }') s;" \
		"B: $(cat "$tmp/b.out" | tail -1); ticket: ${ans#*: }"
	[ -n "$bytes" ] || fail "$sc: B's shim answered no ticket ($(tail -3 "$tmp/b.err"))"
	grep -q "freed=58720256 reserved=0" "$tmp/b.out" || fail "$sc: B's cache not emptied"
	if [ $sc = share ]; then
		[ "${bytes:-0}" -ge $((8 * MiB)) ] || fail "share: answered $bytes bytes, not >= the 8 MiB G lacks"
		echo "$ans" | grep -q "empty_cache ran" || fail "share: answered before empty_cache ran"
	else
		echo "$ans" | grep -q "not run yet" || fail "busy: the answer waited for the callback"
		[ "${ms:-9999}" -le 600 ] || fail "busy: answered after $ms ms (the wait is 250)"
		[ "${bytes:-0}" -lt $((8 * MiB)) ] || fail "busy: answered $bytes before the cache emptied?"
		# the callback ran once B's sleep (3 s after 'ready') was over
		at=$(sed -n 's/.*ready.* at=\([0-9.]*\).*/\1/p' "$tmp/b.out")
		call=$(sed -n 's/.*calls=\[\([0-9.]*\).*/\1/p' "$tmp/b.out")
		awk -v a="$at" -v c="$call" 'BEGIN { exit !(c >= a + 2.9) }' ||
			fail "busy: empty_cache at $call, B slept from $at for 3 s"
	fi
	u=$(used); echo "py.sh: $sc: ledger used $u with G holding 16 MiB"
	u=$(used); [ "$u" -le $((19 * MiB)) ] || fail "$sc: used $u with B's cache empty and G's 16 MiB"
	echo >&8
	exec 9>&- 8>&-
	wait $(cat "$tmp/pids")
	: >"$tmp/pids"
	zero $sc
done

[ $rc = 0 ] && echo "py.sh: ok (no torch: refused at min; torch: borrows; share: G granted from B's empty_cache(), answered with its frees; busy: answered within the wait, late frees uncharged)"
exit $rc
