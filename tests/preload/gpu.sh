#!/bin/sh
# tests/preload/gpu.sh - issue 13's GPU checks of libnxquota-preload.so on
# GPU 0, with nxquotad as the authority (no module needed):
#   budget    unmodified PyTorch in a cgroup with min=max=BUDGET, with the
#             native allocator and with expandable_segments:True: the OOM
#             comes at the budget (what the ledger holds is within one
#             block of it, never above), reported as torch's OutOfMemoryError
#   retry     PyTorch's free-the-cache-and-retry path works against the ledger
#   kills     KILLS SIGKILLs of allocating processes at random points: the
#             ledger's used and holders back to 0
#   share     two unmodified PyTorch processes: a borrower whose stream-
#             ordered pool (backend:cudaMallocAsync) holds memory it no
#             longer uses, and a guaranteed one that asks with --wait: the
#             borrower's shim trims on the ticket, the guaranteed one is
#             granted
#   sharenative  the same with PyTorch's native allocator: the borrower's
#             memory is in PyTorch's cache (its main thread polls stdin, as
#             a server between requests); its shim runs torch.cuda.
#             empty_cache() in that thread on the ticket
#   backstop  an unmodified PyTorch without the shim over its budget:
#             nxquotad's backstop (NVML) names it within 3 s, alive
#   overhead  cuMemAlloc/cuMemFree pairs and a training loop, with and
#             without the shim (figures, not checks; tests/preload/gpu-s4.sh
#             measures them side by side)
# Usage, as root:  tests/preload/gpu.sh [BUDGET_MIB]   (default 4096)
#   PARTS="budget kills share sharenative backstop overhead" (the default: all; budget includes
#   retry) runs some; KILLS=N (default 1000), KPAR=N of them at a time
#   (default 16); OUT=DIR (default build/preload-gpu) keeps logs
#   and results.txt; NXQ_FAKE_CUDA=1 runs what needs no PyTorch on the fake
#   driver tests/fakecuda.  No GPU (or no root): "skipped: ..." and 0.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
BUDGET=${1:-4096}
KILLS=${KILLS:-1000}
PARTS=${PARTS:-budget kills share sharenative backstop overhead}
want() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }
OUT=${OUT:-$top/build/preload-gpu}
FAKE=${NXQ_FAKE_CUDA:-}
mkdir -p "$OUT" || exit 1
: >"$OUT/results.txt"
rc=0
say() { echo "$*" | tee -a "$OUT/results.txt"; }
fail() { say "gpu.sh: FAIL: $*"; rc=1; }

[ "$(id -u)" = 0 ] || { echo "gpu.sh: skipped: needs root (cgroups)"; exit 0; }
[ -n "$FAKE" ] && export LD_LIBRARY_PATH=$top/tests/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

T0=$(date +%s)
hdr() { echo "== $* (at $(($(date +%s) - T0)) s)"; }
echo "== build"
make -s -C "$top/preload" >"$OUT/build.log" 2>&1 || { cat "$OUT/build.log"; exit 1; }
{ make -s -C "$here" bench_preload && make -s -C "$top/tests/fakecuda"; } >>"$OUT/build.log" 2>&1 ||
	{ cat "$OUT/build.log"; exit 1; }
SO=$top/preload/libnxquota-preload.so
B=$here/bench_preload
KEY=$("$B" key 2>"$OUT/probe.log") || { echo "gpu.sh: skipped: no GPU ($(cat "$OUT/probe.log"))"; exit 0; }
TORCH=
if [ -z "$FAKE" ] && python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
	TORCH=python3
else
	say "gpu.sh: no PyTorch with CUDA here (or the fake driver): budget, retry, share skipped"
fi
# nxquotad and nxquotactl: built here, else carried (scripts/demo-gpu.sh --prebuild)
# (NXQD_BIN, NXQCTL_BIN: use these instead)
D=${NXQD_BIN:-$OUT/d/nxquotad}
[ -n "${NXQD_BIN:-}" ] || make -s -C "$top/daemon" B="$OUT/d" SAN= "$D" >>"$OUT/build.log" 2>&1 ||
	D=$top/build/demo-gpu-bin/nxquotad
C=${NXQCTL_BIN:-$top/tools/nxquotactl}
[ -n "${NXQCTL_BIN:-}" ] || make -s -C "$top/tools" >>"$OUT/build.log" 2>&1 ||
	C=$top/build/demo-gpu-bin/nxquotactl
. "$here/gpu-bins.sh"
prebuilt gpu.sh
[ -x "$D" ] && [ -x "$C" ] || { tail "$OUT/build.log"; echo "gpu.sh: no nxquotad/nxquotactl"; exit 1; }

CGROOT=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
if [ -z "$CGROOT" ]; then
	mkdir -p /run/nxqp-cgroup2 && mount -t cgroup2 cgroup2 /run/nxqp-cgroup2
	CGROOT=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
fi
[ -n "$CGROOT" ] || { echo "gpu.sh: no cgroup2 mount, and none could be mounted"; exit 1; }

RUN=$(mktemp -d /tmp/nxqp-gpu.XXXXXX)
CG=nxqp-gpu-$$
DPID=
cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null
	wait 2>/dev/null
	for c in a b e g k o ""; do rmdir "$CGROOT/$CG/$c" 2>/dev/null; done
	cp "$RUN"/*.log "$OUT/" 2>/dev/null
	rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap '' PIPE	# a FIFO whose reader is gone: an error, not the end of this script
export NXQUOTA_SOCKET=$RUN/client.sock NXQ_DEV=/nonexistent/nxquota
# the budgets here are sized for what the programs allocate (issue 13's
# checks): the CUDA context's own memory (issue 20, charged by default,
# about 500 MiB for PyTorch on the H200) is left out of them
export NXQUOTA_CHARGE_CONTEXT=0
mkdir "$RUN/state" "$CGROOT/$CG" || exit 1
"$D" -s "$NXQUOTA_SOCKET" -c "$RUN/ctl.sock" -S "$RUN/state" -C "$CGROOT" >"$RUN/nxquotad.log" 2>&1 &
DPID=$!
for _ in $(seq 100); do
	[ -S "$NXQUOTA_SOCKET" ] && [ -S "$RUN/ctl.sock" ] && break
	sleep 0.1
done
ctl() { "$C" --control "$RUN/ctl.sock" "$@"; }
dev() {	# a field of the device in the JSON status
	ctl --json status "$KEY" | tr '{' '\n' | grep "\"key\":\"$KEY\"" |
		sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p" | head -n1
}
if [ -n "$FAKE" ]; then ctl devices register "$KEY" 64G; else ctl devices sync; fi >/dev/null ||
	{ fail "device registration"; exit 1; }
say "gpu.sh: $KEY, capacity $(dev capacity) B in the ledger; budget ${BUDGET} MiB"

# run NAME CGROUP [nxquota-run options] -- CMD...: in the background in the
# cgroup, stdin from a FIFO (fd 9 held open here), output in $RUN/NAME.out
run() {
	n=$1 c=$2
	shift 2
	rm -f "$RUN/$n.in" "$RUN/$n.out"	# a name used before (budget/retry run twice)
	mkfifo "$RUN/$n.in"
	(
		echo 0 >"$CGROOT/$CG/$c/cgroup.procs"
		exec "$top/tools/nxquota-run" --lib "$SO" "$@" <"$RUN/$n.in" >"$RUN/$n.out" 2>"$RUN/$n.log"
	) &
	PID=$!
	exec 9>"$RUN/$n.in"
}
await() {	# NAME TEXT [SECONDS]
	i=0
	until grep -q "$2" "$RUN/$1.out" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt $((${3:-120} * 10)) ] || { fail "$1: no '$2' ($(tail -3 "$RUN/$1.log"))"; return 1; }
		kill -0 "$PID" 2>/dev/null || { sleep 0.2; grep -q "$2" "$RUN/$1.out" && return 0;
			fail "$1 exited: $(cat "$RUN/$1.out") $(tail -3 "$RUN/$1.log")"; return 1; }
		sleep 0.1
	done
}
zero() {	# the ledger empty within 5 s
	t=0
	while { [ "$(dev used)" != 0 ] || [ "$(dev holders)" != 0 ]; } && [ $t -lt 50 ]; do
		t=$((t + 1)); sleep 0.1
	done
	[ "$(dev used)" = 0 ] && [ "$(dev holders)" = 0 ]
}
finish() { echo >&9 2>/dev/null; exec 9>&-; wait "$PID"; }
budget() {	# SUB max=/min=...
	c=$1
	shift
	mkdir -p "$CGROOT/$CG/$c"
	ctl set "/$CG/$c" "$KEY" "$@" >/dev/null || fail "set $c $*"
}

ctl set "/$CG" "$KEY" min=$((BUDGET * 2))M max=$((BUDGET * 2))M >/dev/null || fail "set /$CG"
B_BYTES=$((BUDGET * 1048576))

if [ -n "$TORCH" ] && want budget; then
	for conf in "" expandable_segments:True; do
		hdr "budget (${conf:-native})"
		budget a min=${BUDGET}M max=${BUDGET}M
		run oom a -- env PYTORCH_CUDA_ALLOC_CONF="$conf" python3 "$here/torch_budget.py" oom 256
		if await oom "oom blocks="; then
			used=$(dev used)
			say "budget ${conf:-native}: $(cat "$RUN/oom.out"); ledger used=$used of $B_BYTES"
			[ "$used" -le "$B_BYTES" ] || fail "used $used above the budget"
			[ $((B_BYTES - used)) -lt $(((256 + 20) * 1048576)) ] ||
				fail "OOM with $((B_BYTES - used)) bytes of the budget left"
			grep -q "CUDA_ERROR\|nxquota-preload" "$RUN/oom.log" &&
				say "   its stderr: $(head -3 "$RUN/oom.log")"
		fi
		finish
		zero || fail "used $(dev used) after exit"

		hdr "retry (${conf:-native})"
		run retry a -- env PYTORCH_CUDA_ALLOC_CONF="$conf" python3 "$here/torch_budget.py" \
			retry "$BUDGET"
		await retry "retry ok" && say "retry ${conf:-native}: $(cat "$RUN/retry.out")"
		finish
	done
fi

# One allocating process, SIGKILLed: at a random point up to 0.4 s after
# its start (process start, CUDA init, context), or, for a third of them,
# 0-20 ms after it said "ready" (its alloc/free loop in flight).
killone() {	# SEED
	ko=$RUN/k.$1
	(
		echo 0 >"$CGROOT/$CG/k/cgroup.procs"
		exec env LD_PRELOAD="$SO" "$B" churn 64 >"$ko" 2>/dev/null
	) &
	kp=$!
	set -- $(awk -v s="$1" 'BEGIN { srand(s); a = rand() < 0.34;
		printf "%d %.3f %.3f", a, rand() * 0.4, rand() * 0.02 }')
	if [ "$1" = 1 ]; then
		kt=0
		until grep -q ready "$ko" 2>/dev/null || [ $kt -ge 200 ] ||
			! kill -0 "$kp" 2>/dev/null; do
			kt=$((kt + 1)); sleep 0.05
		done
		sleep "$3"
	else
		sleep "$2"
	fi
	kill -9 "$kp" 2>/dev/null
	wait "$kp" 2>/dev/null
	kst=$?
	[ $kst = 137 ] || echo "$kst" >>"$RUN/k.self"	# ended before the SIGKILL
	grep -q ready "$ko" 2>/dev/null && echo r >>"$RUN/k.ready"
	rm -f "$ko"
}

if want kills; then
	KPAR=${KPAR:-16}
	hdr "kills ($KILLS SIGKILLs, $KPAR at a time)"
	budget k min=1G max=1G
	: >"$RUN/k.ready"
	: >"$RUN/k.self"
	k0=$(date +%s)
	kw=
	for w in $(seq 0 $((KPAR - 1))); do
		(
			i=$w
			while [ $i -lt "$KILLS" ]; do
				killone $i
				i=$((i + KPAR))
			done
		) &
		kw="$kw $!"
	done
	wait $kw
	k1=$(date +%s)
	zero
	say "kills: $KILLS SIGKILLs in $((k1 - k0)) s ($(wc -l <"$RUN/k.ready") after 'ready'," \
		"allocating); ledger used=$(dev used) holders=$(dev holders) within 5 s"
	zero || fail "leaked after the kills"
	[ ! -s "$RUN/k.self" ] || fail "$(wc -l <"$RUN/k.self") processes ended before" \
		"their SIGKILL (statuses $(sort -u "$RUN/k.self" | tr '\n' ' '))"
	ctl clear "/$CG/k" "$KEY" >/dev/null 2>&1
fi

if [ -n "$TORCH" ] && want share; then
	hdr share
	cap=$((BUDGET * 2))
	# only b and g under the parent's min now: the ledger divides a parent's
	# protection among its children by their configured min
	ctl clear "/$CG/a" "$KEY" >/dev/null 2>&1
	ctl clear "/$CG/k" "$KEY" >/dev/null 2>&1
	ctl clear "/$CG/o" "$KEY" >/dev/null 2>&1
	ctl devices capacity "$KEY" "${cap}M" >/dev/null || fail "capacity"
	budget b max=${cap}M
	budget g min=${BUDGET}M max=${cap}M
	run borrow b -- env PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync \
		python3 "$here/torch_budget.py" borrow $((cap * 3 / 4))
	BPID=$PID
	exec 8>&9
	if await borrow "borrow ready"; then
		say "share: borrower: $(cat "$RUN/borrow.out"); ledger used=$(dev used)"
		t0=$(dev tickets)
		run take g --wait 60000 -- python3 "$here/torch_budget.py" take "$BUDGET"
		await take "take" 120
		say "share: guaranteed: $(cat "$RUN/take.out"); tickets $t0 -> $(dev tickets);" \
			"ledger used=$(dev used) of ${cap} MiB"
		grep -q "take ok" "$RUN/take.out" || {
			fail "the guaranteed process was not granted"
			say "   borrower's stderr: $(tail -3 "$RUN/borrow.log" | tr '\n' ' ')"
			say "   taker's stderr: $(tail -3 "$RUN/take.log" | tr '\n' ' ')"
		}
		finish
	fi
	echo >&8 2>/dev/null; exec 8>&-; wait "$BPID"
	ctl devices sync >/dev/null 2>&1	# the real capacity back (or leave it: the daemon goes)
fi

if [ -n "$TORCH" ] && want sharenative; then
	hdr "share (native allocator)"
	cap=$((BUDGET * 2))
	for c in a k o; do ctl clear "/$CG/$c" "$KEY" >/dev/null 2>&1; done
	ctl devices capacity "$KEY" "${cap}M" >/dev/null || fail "capacity"
	budget b max=${cap}M
	budget g min=${BUDGET}M max=${cap}M
	run nborrow b -- env NXQ_PRELOAD_VERBOSE=1 python3 "$here/torch_budget.py" borrowpoll \
		$((cap * 3 / 4))
	BPID=$PID
	exec 8>&9
	if await nborrow "borrow ready"; then
		say "sharenative: borrower: $(cat "$RUN/nborrow.out"); ledger used=$(dev used)"
		t0=$(dev tickets)
		run ntake g --wait 60000 -- python3 "$here/torch_budget.py" take "$BUDGET"
		await ntake "take" 120
		say "sharenative: guaranteed: $(cat "$RUN/ntake.out"); tickets $t0 -> $(dev tickets);" \
			"answers after empty_cache(): $(grep -c 'empty_cache ran' "$RUN/nborrow.log")," \
			"$(grep -m1 -o 'answer [0-9]* bytes' "$RUN/nborrow.log")"
		grep -q "take ok" "$RUN/ntake.out" ||
			fail "sharenative: the guaranteed process was not granted ($(tail -3 "$RUN/ntake.log" | tr '\n' ' '))"
		grep -q "empty_cache ran" "$RUN/nborrow.log" ||
			fail "sharenative: no ticket answered after empty_cache ($(tail -3 "$RUN/nborrow.log" | tr '\n' ' '))"
		finish
	fi
	echo >&8 2>/dev/null; exec 8>&-; wait "$BPID"
	ctl devices sync >/dev/null 2>&1
fi

# The backstop (issue 28, item 2) on the real driver: an unmodified
# PyTorch run WITHOUT the shim (nothing preloaded: nothing charged) in a
# cgroup with max=256M holds 1 GiB in its pool; nxquotad's backstop
# (default: NVML every 1 s, 256 MiB allowance per process, naming only)
# must name its pid within 3 s, in the daemon's log and as "escaped" on
# the budget's status line, and leave it alive (no -k).
if [ -n "$TORCH" ] && want backstop; then
	hdr "backstop (PyTorch without the shim, 1 GiB in a 256 MiB budget)"
	budget e min=256M max=256M
	rm -f "$RUN/esc.in" "$RUN/esc.out"
	mkfifo "$RUN/esc.in"
	(
		echo 0 >"$CGROOT/$CG/e/cgroup.procs"
		exec env -u LD_PRELOAD PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync \
			python3 "$here/torch_budget.py" borrow 1024 <"$RUN/esc.in" >"$RUN/esc.out" 2>"$RUN/esc.log"
	) &
	PID=$!
	exec 9>"$RUN/esc.in"
	if await esc "borrow ready" 60; then
		t0=$(date +%s%N)
		t=0
		# the budget's "escaped" in --json status (the table indents names)
		escaped() {
			ctl --json status "$KEY" 2>/dev/null | python3 -c 'import json, sys
for b in json.load(sys.stdin).get("budgets", []):
    if b.get("path") == sys.argv[1]:
        print(b.get("escaped", 0), b.get("measured", 0))' "/$CG/e"
		}
		until [ "$(escaped | cut -d' ' -f1)" -gt 0 ] 2>/dev/null || [ $t -ge 60 ]; do
			t=$((t + 1)); sleep 0.05
		done
		ms=$((($(date +%s%N) - t0) / 1000000))
		line="/$CG/e escaped, measured: $(escaped)"
		if [ "$(escaped | cut -d' ' -f1)" -gt 0 ] 2>/dev/null; then
			say "backstop: named $ms ms after the pool was full: $line"
		else
			fail "backstop: not named within 3 s: $line"
		fi
		grep -q "backstop: .*pid $PID " "$RUN/nxquotad.log" &&
			say "   $(grep "backstop: .*pid $PID " "$RUN/nxquotad.log" | head -1)" ||
			fail "backstop: pid $PID not in nxquotad's log ($(grep backstop "$RUN/nxquotad.log" | tail -2))"
		kill -0 "$PID" 2>/dev/null || fail "backstop: the process was killed without -k"
	fi
	finish
	zero || fail "used $(dev used) after the escape"
fi

want overhead && hdr overhead
want overhead && budget o min=${BUDGET}M max=${BUDGET}M
# ns/pair of a "pairs: ..." line
nspp() { sed -n 's/.* \([0-9][0-9]*\) ns\/pair.*/\1/p'; }
want overhead && for size in 4096 2097152 67108864; do
	"$B" pairs 20000 $size >"$RUN/bare.txt" 2>&1
	(
		echo 0 >"$CGROOT/$CG/o/cgroup.procs"
		LD_PRELOAD=$SO "$B" pairs 20000 $size
	) >"$RUN/shim.txt" 2>&1
	for l in 1 2; do
		bare=$(sed -n "${l}p" "$RUN/bare.txt")
		shim=$(sed -n "${l}p" "$RUN/shim.txt")
		r=$(printf '%s\n%s\n' "$bare" "$shim" | nspp | awk 'NR == 1 { b = $1 }
			NR == 2 && b > 0 { printf "%.3f", $1 / b }')
		say "overhead: bare ${bare#pairs: }"
		say "overhead: shim ${shim#pairs: } (x${r:-?})"
	done
done
if [ -n "$TORCH" ] && want overhead; then
	for pre in "" "$SO"; do
		t=$(
			echo 0 >"$CGROOT/$CG/o/cgroup.procs"
			LD_PRELOAD=$pre python3 "$here/torch_budget.py" train 200
		)
		lbl=without; [ -n "$pre" ] && lbl="with the shim"
		say "overhead: training 200 steps $lbl: $t"
	done
fi
[ $rc = 0 ] && say "gpu.sh: ok ($(($(date +%s) - T0)) s)" || say "gpu.sh: FAILED ($(($(date +%s) - T0)) s)"
exit $rc
