#!/bin/sh
# tests/preload/gpu-budget.sh - issue 20 ("unmodified servers") on a real
# GPU 0, with nxquotad as the authority (no module needed), the real
# driver and the real NVML; tests/preload/budget.sh is its fake-driver
# twin in make check.
#   size     sizer (an unmodified program that reaches the driver as the
#            CUDA runtime does) under min=max=4G: cuMemGetInfo and NVML
#            say total 4 GiB and free 4 GiB less its context (charged);
#            0.9 x total less what is in use (the context), as vLLM sizes itself, is granted within the
#            budget; the same program without the shim sees the GPU
#   fill     under min=max=1G: 1 MiB allocations until the first refusal;
#            the ledger holds at most 1 GiB, context included, and the
#            refusal names the cgroup; 0 after the program exits
#   torch    unmodified PyTorch under min=max=4G: torch.cuda.mem_get_info(),
#            get_device_properties().total_memory (cuDeviceTotalMem) and
#            nvidia-ml-py's nvmlDeviceGetMemoryInfo in the process say
#            4 GiB; 0.9 x free as one tensor is granted; 1 GiB more is
#            torch's OutOfMemoryError; with expandable_segments (cuMemCreate,
#            cuMemMap) the same; without the shim mem_get_info is the GPU's
#   vmm      sizer vmm: create, map and release at once (CUDA's VMM
#            samples): the 512 MiB stay charged while mapped and go at
#            the unmap
#   fits     budgets that add up to the GPU: three PyTorch processes with
#            min=max=capacity/3 each fill 256 MiB tensors until refused;
#            every refusal is the shim's (no driver OOM first), the three
#            hold their budgets less their contexts
# Usage, as root: tests/preload/gpu-budget.sh   (OUT=DIR keeps the logs;
# NXQD_BIN, NXQCTL_BIN: prebuilt binaries; NXQ_FAKE_CUDA=1: on the fake
# driver (tests/fakecuda) and NVML of tests/preload, FAKECUDA_MEM=32768, to try the
# script itself).  No GPU: "skipped" and 0.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
OUT=${OUT:-$top/build/preload-gpu-budget}
GiB=1073741824
MiB=1048576
mkdir -p "$OUT" || exit 1
: >"$OUT/results.txt"
rc=0
say() { echo "gpu-budget.sh: $*" | tee -a "$OUT/results.txt"; }
fail() { say "FAIL: $*"; rc=1; }
skip() { echo "gpu-budget.sh: skipped: $*"; exit 0; }

[ "$(id -u)" = 0 ] || skip "needs root (cgroups)"
FAKE=${NXQ_FAKE_CUDA:-}
[ -n "$FAKE" ] && export LD_LIBRARY_PATH=$top/tests/fakecuda:$here/nvml${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "== build"
make -s -C "$top/preload" >"$OUT/build.log" 2>&1 || { cat "$OUT/build.log"; exit 1; }
make -s -C "$here" bench_preload sizer >>"$OUT/build.log" 2>&1 || { cat "$OUT/build.log"; exit 1; }
SO=$top/preload/libnxquota-preload.so
KEY=$("$here/bench_preload" key 2>"$OUT/probe.log") || skip "no GPU ($(cat "$OUT/probe.log"))"
D=${NXQD_BIN:-$OUT/d/nxquotad}
[ -n "${NXQD_BIN:-}" ] || make -s -C "$top/daemon" B="$OUT/d" SAN= "$D" >>"$OUT/build.log" 2>&1
C=${NXQCTL_BIN:-$top/tools/nxquotactl}
[ -n "${NXQCTL_BIN:-}" ] || make -s -C "$top/tools" >>"$OUT/build.log" 2>&1
. "$here/gpu-bins.sh"
prebuilt gpu-budget.sh
[ -x "$D" ] && [ -x "$C" ] || { tail "$OUT/build.log"; echo "gpu-budget.sh: no nxquotad/nxquotactl"; exit 1; }
CGROOT=$(awk '$9 == "cgroup2" { print $5; exit }' /proc/self/mountinfo)
[ -n "$CGROOT" ] || skip "no cgroup2 mount"

RUN=$(mktemp -d /tmp/nxqp-gb.XXXXXX)
CG=nxqp-gb-$$
DPID=
cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null
	wait 2>/dev/null
	for c in a b t e f1 f2 f3; do rmdir "$CGROOT/$CG/$c" 2>/dev/null; done
	rmdir "$CGROOT/$CG" 2>/dev/null
	cp "$RUN"/out.* "$RUN"/err.* "$RUN"/*.log "$OUT/" 2>/dev/null
	rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap '' PIPE	# a fifo whose reader died: EPIPE, not death
mkdir "$RUN/state" "$CGROOT/$CG" || exit 1
for c in a b t e f1 f2 f3; do mkdir "$CGROOT/$CG/$c"; done
"$D" -s "$RUN/client.sock" -c "$RUN/ctl.sock" -S "$RUN/state" -C "$CGROOT" >"$RUN/nxquotad.log" 2>&1 &
DPID=$!
for _ in $(seq 100); do
	[ -S "$RUN/client.sock" ] && [ -S "$RUN/ctl.sock" ] && break
	sleep 0.1
done
ctl() { "$C" --control "$RUN/ctl.sock" "$@"; }
dev() {	# a field of the device in the JSON status
	ctl --json status "$KEY" | tr '{' '\n' | grep "\"key\":\"$KEY\"" |
		sed -n "s/.*\"$1\":\([0-9]*\).*/\1/p" | head -n1
}
zero() {	# the ledger empty within 5 s
	t=0
	while { [ "$(dev used)" != 0 ] || [ "$(dev holders)" != 0 ]; } && [ $t -lt 50 ]; do
		t=$((t + 1)); sleep 0.1
	done
	[ "$(dev used)" = 0 ] || fail "$1: the ledger still holds $(dev used) B"
}
if [ -n "$FAKE" ]; then ctl devices register "$KEY" "${FAKECUDA_MEM:-8192}M"; else ctl devices sync; fi \
	>/dev/null || { fail "device registration"; exit 1; }
say "$KEY: capacity $(dev capacity) B in the ledger"
# run N CGROUP COMMAND...: in the foreground in the cgroup, no stdin
run() {
	n=$1 c=$2
	shift 2
	(
		echo 0 >"$CGROOT/$CG/$c/cgroup.procs"
		exec env NXQUOTA_SOCKET="$RUN/client.sock" NXQ_DEV=/nonexistent/nxquota "$@" \
			</dev/null >"$RUN/out.$n" 2>"$RUN/err.$n"
	)
}

# ---- size
ctl set "/$CG/a" "$KEY" min=4G max=4G >/dev/null || fail "set a"
run size a "$top/tools/nxquota-run" --lib "$SO" -- "$here/sizer" vllm 90
ctot=$(sed -n 's/^cuda free \([0-9]*\) total \([0-9]*\)$/\2/p' "$RUN/out.size")
cfree=$(sed -n 's/^cuda free \([0-9]*\) total.*/\1/p' "$RUN/out.size")
ntot=$(sed -n 's/^nvml free \([0-9]*\) total \([0-9]*\)$/\2/p' "$RUN/out.size")
took=$(sed -n 's/^took \([0-9]*\) error 0$/\1/p' "$RUN/out.size")
[ "$ctot" = $((4 * GiB)) ] || fail "size: cuMemGetInfo total '$ctot', not the 4 GiB budget ($(cat "$RUN/out.size" "$RUN/err.size"))"
[ -n "$cfree" ] && [ "$cfree" -lt $((4 * GiB)) ] && [ "$cfree" -gt $((3 * GiB)) ] ||
	fail "size: cuMemGetInfo free '$cfree', not 4 GiB less a context"
[ "$ntot" = $((4 * GiB)) ] || fail "size: NVML total '$ntot', not the 4 GiB budget"
[ -n "$took" ] && [ "$took" -le $((4 * GiB)) ] && [ "$took" -gt $((3 * GiB)) ] ||
	fail "size: 0.9 x total less what is in use not granted within the budget ($(cat "$RUN/out.size"); $(cat "$RUN/err.size"))"
zero size
(cd "$RUN" && "$here/sizer" vllm 1 >"$RUN/out.bare" 2>&1)
btot=$(sed -n 's/^cuda free \([0-9]*\) total \([0-9]*\)$/\2/p' "$RUN/out.bare")
[ -n "$btot" ] && [ "$btot" -gt $((16 * GiB)) ] || fail "size: without the shim cuMemGetInfo total '$btot'"
say "size: min=max=4G: cuMemGetInfo $cfree free of $ctot (context $(( (4 * GiB - ${cfree:-0}) / MiB )) MiB charged), NVML total $ntot; 0.9 x total less what is in use granted ($took B); without the shim: total $btot"

# ---- fill
ctl set "/$CG/b" "$KEY" min=1G max=1G >/dev/null || fail "set b"
run fill b "$top/tools/nxquota-run" --lib "$SO" -- sh -c "echo | exec '$here/sizer' fill"
n=$(sed -n 's/^fill \([0-9]*\) error 2 .*/\1/p' "$RUN/out.fill")
[ -n "$n" ] && [ "$n" -gt 256 ] && [ "$n" -lt 1024 ] || fail "fill: '$(cat "$RUN/out.fill")', not blocks up to 1 GiB less the context, then refused"
grep -q "for cgroup /$CG/b" "$RUN/err.fill" || fail "fill: the refusal does not name the cgroup: $(cat "$RUN/err.fill")"
zero fill
say "fill: min=max=1G: $n blocks of 1 MiB, then refused: $(grep -m1 "refused an" "$RUN/err.fill" | sed 's/^nxquota-preload\[[0-9]*\]: //')"

# ---- vmm
# 2G: the context (about 520 MiB for the CUDA context here) is charged too
ctl set "/$CG/e" "$KEY" min=2G max=2G >/dev/null || fail "set e"
rm -f "$RUN/vmm.in"; mkfifo "$RUN/vmm.in"
(
	echo 0 >"$CGROOT/$CG/e/cgroup.procs"
	# NXQ_PRELOAD_BATCH=0: exact, no credit kept for the next allocation
	exec env NXQUOTA_SOCKET="$RUN/client.sock" NXQ_DEV=/nonexistent/nxquota NXQ_PRELOAD_BATCH=0 \
		"$top/tools/nxquota-run" --lib "$SO" -- "$here/sizer" vmm 512 \
		<"$RUN/vmm.in" >"$RUN/out.vmm" 2>"$RUN/err.vmm"
) &
VP=$!
exec 8>"$RUN/vmm.in"
seen() { t=0; until grep -q "$1" "$2" 2>/dev/null || [ $t -ge 600 ]; do t=$((t + 1)); sleep 0.1; done; grep -q "$1" "$2"; }
if seen "^vmm mapped" "$RUN/out.vmm"; then
	u1=$(dev used)
	echo >&8
	seen "^vmm unmapped" "$RUN/out.vmm"
	u2=$(dev used)
	echo >&8
	grep -q "^vmm mapped $((512 * MiB)) error 0" "$RUN/out.vmm" || fail "vmm: $(cat "$RUN/out.vmm" "$RUN/err.vmm")"
	[ -n "$u1" ] && [ -n "$u2" ] && [ $((u1 - u2)) = $((512 * MiB)) ] ||
		fail "vmm: used $u1 while mapped (released), $u2 after the unmap: not 512 MiB apart"
	say "vmm: create+map+release 512 MiB: ledger used $u1 B while mapped, $u2 B after the unmap"
else
	fail "vmm: $(cat "$RUN/out.vmm" "$RUN/err.vmm")"
fi
exec 8>&-
wait "$VP"
zero vmm

# ---- torch
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
	cat >"$RUN/t.py" <<'EOF'
import os, sys, torch
GiB = 1 << 30
free, total = torch.cuda.mem_get_info()
print("torch free %d total %d" % (free, total), flush=True)
print("props total %d" % torch.cuda.get_device_properties(0).total_memory, flush=True)
try:
    import pynvml
    pynvml.nvmlInit()
    m = pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(0))
    print("nvml total %d" % m.total, flush=True)
except Exception as e:
    print("nvml none %s" % e, flush=True)
x = torch.empty(int(free * 0.9), dtype=torch.uint8, device="cuda")
print("took %d reserved %d" % (x.numel(), torch.cuda.memory_reserved()), flush=True)
try:
    y = torch.empty(GiB, dtype=torch.uint8, device="cuda")
    print("more granted", flush=True)
except torch.OutOfMemoryError:
    print("more refused OutOfMemoryError", flush=True)
EOF
	ctl set "/$CG/t" "$KEY" min=4G max=4G >/dev/null || fail "set t"
	for mode in native expandable; do
		conf=
		[ $mode = expandable ] && conf=expandable_segments:True
		run "torch-$mode" t env PYTORCH_CUDA_ALLOC_CONF=$conf \
			"$top/tools/nxquota-run" --lib "$SO" -- python3 "$RUN/t.py"
		o=$RUN/out.torch-$mode
		tt=$(sed -n 's/^torch free [0-9]* total \([0-9]*\)$/\1/p' "$o")
		[ "$tt" = $((4 * GiB)) ] || fail "torch $mode: mem_get_info total '$tt' ($(cat "$o"); $(tail -3 "$RUN/err.torch-$mode"))"
		grep -q "^props total $((4 * GiB))$" "$o" ||
			fail "torch $mode: get_device_properties().total_memory (cuDeviceTotalMem): $(grep props "$o")"
		grep -q "^nvml total $((4 * GiB))$" "$o" || grep -q "^nvml none" "$o" ||
			fail "torch $mode: NVML in the process: $(grep nvml "$o")"
		grep -q "^took " "$o" || fail "torch $mode: 0.9 x free not granted: $(tail -3 "$RUN/err.torch-$mode")"
		grep -q "^more refused OutOfMemoryError" "$o" || fail "torch $mode: 1 GiB past the budget: $(tail -1 "$o")"
		zero "torch $mode"
		say "torch $mode: $(tr '\n' ';' <"$o")"
	done
	# ---- fits
	for c in a b t e; do ctl clear "/$CG/$c" "$KEY" >/dev/null 2>&1; done
	cap=$(dev capacity)
	third=$(( cap / 3 / MiB ))
	cat >"$RUN/f.py" <<'EOF'
import sys, torch
held = []
try:
    while True:
        held.append(torch.empty(256 << 20, dtype=torch.uint8, device="cuda"))
except torch.OutOfMemoryError:
    pass
print("oom blocks=%d reserved=%d" % (len(held), torch.cuda.memory_reserved()), flush=True)
sys.stdin.readline()
EOF
	rm -f "$RUN/fits.in"; mkfifo "$RUN/fits.in"
	FP=
	for c in f1 f2 f3; do
		ctl set "/$CG/$c" "$KEY" min=${third}M max=${third}M >/dev/null || fail "fits: set $c ${third}M"
		(
			echo 0 >"$CGROOT/$CG/$c/cgroup.procs"
			exec env NXQUOTA_SOCKET="$RUN/client.sock" NXQ_DEV=/nonexistent/nxquota \
				"$top/tools/nxquota-run" --lib "$SO" -- python3 "$RUN/f.py" \
				<"$RUN/fits.in" >"$RUN/out.$c" 2>"$RUN/err.$c"
		) &
		FP="$FP $!"
	done
	exec 8>"$RUN/fits.in"
	tot=0
	for c in f1 f2 f3; do
		seen "^oom" "$RUN/out.$c" || fail "fits: $c: $(tail -3 "$RUN/err.$c")"
		grep -q "refused an allocation" "$RUN/err.$c" ||
			fail "fits: $c: its OOM is not the shim's refusal (the driver's?): $(tail -3 "$RUN/err.$c")"
		r=$(sed -n 's/^oom blocks=[0-9]* reserved=\([0-9]*\)$/\1/p' "$RUN/out.$c")
		tot=$((tot + ${r:-0}))
		[ -n "$r" ] && [ "$r" -ge $(( third * MiB - 1024 * MiB )) ] ||
			fail "fits: $c reserved '$r' of its ${third} MiB (less than its budget less 1 GiB)"
	done
	used=$(dev used)
	smi=$(nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader,nounits 2>/dev/null | head -n1)
	say "fits: 3 x min=max=${third}M on capacity $cap B: PyTorch holds $tot B; ledger used $used B; nvidia-smi used,total MiB: $smi"
	exec 8>&-
	for p in $FP; do wait "$p"; done
	zero fits
	(cd "$RUN" && python3 -c 'import torch; f, t = torch.cuda.mem_get_info(); print("bare total %d props %d" % (t, torch.cuda.get_device_properties(0).total_memory))' \
		>"$RUN/out.torch-bare" 2>&1)
	say "torch without the shim: $(cat "$RUN/out.torch-bare")"
else
	say "torch: skipped: no PyTorch with CUDA"
fi
say "$([ $rc = 0 ] && echo ok || echo FAILED)"
exit $rc
