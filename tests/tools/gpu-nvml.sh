#!/bin/sh
# tests/tools/gpu-nvml.sh - issue 13, item 3 on a real GPU: nxquotactl's
# unattributed bytes from the real NVML, with nxquotad as the authority.
#   shim   PyTorch under libnxquota-preload.so (nxquota-run) in cgroup
#          /CG/shim (min=max=4G), 1 GiB tensor, then waits
#   bare   PyTorch WITHOUT the shim in /CG/bare, 512 MiB tensor, then waits
# then prints `nxquotactl status`, `--json status` and `metrics` and checks:
#   - NVML is read (nvml.available) and lists both pids;
#   - our NVML figure for each pid equals pynvml's (nvidia-ml-py) to the
#     byte: the struct layout read right from the real library;
#   - shim: charged >= 1 GiB, holders >= 1, cgroup /CG/shim from the
#     ledger, unattributed between 64 MiB and 1 GiB (its context: hundreds
#     of MiB, not GiB);
#   - bare: charged 0, no holder, cgroup /CG/bare from /proc,
#     unattributed == its NVML figure (>= 512 MiB);
#   - the per-cgroup rows and the metrics carry the same numbers;
#   - without CAP_SYS_ADMIN the tool shows none of it.
# Usage, as root, from the repository root:
#   OUT=DIR sh tests/tools/gpu-nvml.sh      (about 40 s; keep under 90)
# Needs libnl-genl-3's and json-c's headers to build nxquotactl (on the
# H200: extract the Debian copies to / first, as build/devrun/final.sh
# does; LIBNL_TAR=PATH makes this script do it), or NXQCTL_BIN=PATH, a
# nxquotactl built elsewhere (scripts/demo-gpu.sh --prebuild links libnl
# and json-c into it).  Prints "PASS: ..." / "FAIL: ..." lines and a last
# "gpu-nvml: N passed, M failed"; figures in $OUT (status.txt,
# status.json, metrics.txt, nvidia-smi.txt, results.txt).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$top/build/gpu-nvml}
mkdir -p "$OUT" || exit 1
: >"$OUT/results.txt"
npass=0
nfail=0
say() { echo "$*" | tee -a "$OUT/results.txt"; }
pass() { say "PASS: $*"; npass=$((npass + 1)); }
fail() { say "FAIL: $*"; nfail=$((nfail + 1)); }
T0=$(date +%s)
hdr() { echo "== $* (at $(($(date +%s) - T0)) s)"; }

[ "$(id -u)" = 0 ] || { echo "gpu-nvml: skipped: needs root"; exit 0; }
[ -z "${LIBNL_TAR:-}" ] || tar -xf "$LIBNL_TAR" -C / 2>/dev/null
hdr build
make -s -C "$top/daemon" B="$OUT/d" SAN= "$OUT/d/nxquotad" >"$OUT/build.log" 2>&1 &&
	{ [ -n "${NXQCTL_BIN:-}" ] || make -s -C "$top/tools" nxquotactl >>"$OUT/build.log" 2>&1; } &&
	make -s -C "$top/preload" >>"$OUT/build.log" 2>&1 ||
	{ tail -20 "$OUT/build.log"; echo "gpu-nvml: FAIL: build (libnl-genl-3 or json-c headers? see the header)"; exit 1; }
D=$OUT/d/nxquotad
C=${NXQCTL_BIN:-$top/tools/nxquotactl}
SO=$top/preload/libnxquota-preload.so
python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null ||
	{ echo "gpu-nvml: skipped: no PyTorch with CUDA"; exit 0; }

CGROOT=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
if [ -z "$CGROOT" ]; then
	mkdir -p /run/nxqn-cgroup2 && mount -t cgroup2 cgroup2 /run/nxqn-cgroup2
	CGROOT=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
fi
[ -n "$CGROOT" ] || { echo "gpu-nvml: FAIL: no cgroup2 mount"; exit 1; }
RUN=$(mktemp -d /tmp/nxqn-gpu.XXXXXX)
CG=nxqn-gpu-$$
DPID=
SPID=
BPID=
cleanup() {
	for p in $SPID $BPID; do kill "$p" 2>/dev/null; done
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null
	wait 2>/dev/null
	rmdir "$CGROOT/$CG/shim" "$CGROOT/$CG/bare" "$CGROOT/$CG" 2>/dev/null
	cp "$RUN"/*.log "$OUT/" 2>/dev/null
	rm -rf "$RUN"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir "$RUN/state" "$CGROOT/$CG" "$CGROOT/$CG/shim" "$CGROOT/$CG/bare" || exit 1
export NXQUOTA_SOCKET=$RUN/client.sock NXQ_DEV=/nonexistent/nxquota
"$D" -s "$NXQUOTA_SOCKET" -c "$RUN/ctl.sock" -S "$RUN/state" -C "$CGROOT" \
	>"$RUN/nxquotad.log" 2>&1 &
DPID=$!
for _ in $(seq 100); do
	[ -S "$NXQUOTA_SOCKET" ] && [ -S "$RUN/ctl.sock" ] && break
	sleep 0.1
done
ctl() { "$C" --control "$RUN/ctl.sock" "$@"; }
ctl devices sync >"$OUT/sync.txt" 2>&1 || { cat "$OUT/sync.txt"; echo "gpu-nvml: FAIL: devices sync"; exit 1; }
KEY=$(awk '/registered/ { print $1; exit }' "$OUT/sync.txt")
[ -n "$KEY" ] || { cat "$OUT/sync.txt"; echo "gpu-nvml: FAIL: no device registered"; exit 1; }
ctl set "/$CG" "$KEY" min=8G max=8G >/dev/null &&
	ctl set "/$CG/shim" "$KEY" min=4G max=4G >/dev/null || { echo "gpu-nvml: FAIL: set"; exit 1; }
say "gpu-nvml: $KEY; cgroups /$CG/shim (min=max=4G, under the shim) and /$CG/bare (no shim)"

# start NAME MIB [nxquota-run --lib SO --]: PyTorch in /CG/NAME holding a
# MIB tensor until its stdin (a FIFO, held open on fd 7 or 8) closes
PROG='import sys, torch
x = torch.empty(int(sys.argv[1]) << 20, dtype=torch.uint8, device="cuda")
x.fill_(1); torch.cuda.synchronize()
print("ready", torch.cuda.memory_reserved(), flush=True)
sys.stdin.read()'
start() {
	n=$1 mib=$2
	shift 2
	mkfifo "$RUN/$n.in"
	(
		echo 0 >"$CGROOT/$CG/$n/cgroup.procs"
		exec "$@" python3 -c "$PROG" "$mib" <"$RUN/$n.in" >"$RUN/$n.out" 2>"$RUN/$n.log"
	) &
}
hdr "start both"
start shim 1024 "$top/tools/nxquota-run" --lib "$SO" --
SPID=$!
exec 7>"$RUN/shim.in"
start bare 512 env
BPID=$!
exec 8>"$RUN/bare.in"
for n in shim bare; do
	i=0
	until grep -q ready "$RUN/$n.out" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 600 ] || { cat "$RUN/$n.log"; echo "gpu-nvml: FAIL: $n never ready"; exit 1; }
		sleep 0.1
	done
	if [ $n = shim ]; then p=$SPID; else p=$BPID; fi
	say "$n: pid $p, torch reserved $(awk '{print $2}' "$RUN/$n.out") B"
done
sleep 1	# let NVML's per-process figures settle

hdr "nxquotactl"
ctl status >"$OUT/status.txt" 2>&1; rc1=$?
ctl --json status >"$OUT/status.json" 2>"$OUT/status.err"; rc2=$?
ctl metrics >"$OUT/metrics.txt" 2>&1; rc3=$?
nvidia-smi --query-compute-apps=pid,used_memory --format=csv >"$OUT/nvidia-smi.txt" 2>&1
cat "$OUT/status.txt"
grep -E '^nxquota_(nvml_available|process_|cgroup_(nvml|unattributed)|device_(nvml|unattributed))' \
	"$OUT/metrics.txt" | grep -E "available|$CG|$KEY"
echo "-- nvidia-smi"; cat "$OUT/nvidia-smi.txt"
[ $rc1 = 0 ] && [ $rc2 = 0 ] && [ $rc3 = 0 ] && pass "status, --json status, metrics exit 0" ||
	fail "exit codes: status $rc1, --json $rc2, metrics $rc3"

hdr checks
python3 - "$OUT/status.json" "$OUT/metrics.txt" "$KEY" "/$CG" "$SPID" "$BPID" <<'EOF' >"$RUN/py.out" 2>&1
import json, sys
f, mf, key, cg, spid, bpid = sys.argv[1:7]
spid, bpid = int(spid), int(bpid)
MiB, GiB = 1 << 20, 1 << 30
d = json.load(open(f))["nvml"]
def out(ok, what):
    print(("PASS: " if ok else "FAIL: ") + what)
out(d.get("available") is True, "NVML read by nxquotactl (%s)" % d.get("reason", d.get("api")))
if not d.get("available"):
    sys.exit(0)
rows = {r["pid"]: r for r in d["processes"] if r["device"] == key}
print("rows on %s: %s" % (key, json.dumps(list(rows.values()))))
try:
    import pynvml
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByUUID(key)
    ref = {p.pid: p.usedGpuMemory for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)}
    pynvml.nvmlShutdown()
    for pid in (spid, bpid):
        ours = rows.get(pid, {}).get("nvml_bytes")
        out(pid in ref and ours == ref[pid],
            "pid %d: nxquotactl's NVML figure %s == pynvml's %s" % (pid, ours, ref.get(pid)))
except Exception as e:
    print("pynvml not usable (%r): the cross-check is not run" % (e,))
s, b = rows.get(spid), rows.get(bpid)
out(s is not None and s["listed"], "shim pid %d listed by NVML" % spid)
out(b is not None and b["listed"], "bare pid %d listed by NVML" % bpid)
if s:
    un = s["unattributed"]
    print("FIGURE shim: nvml %s charged %s unattributed %s (%.1f MiB) holders %d" %
          (s["nvml_bytes"], s["charged"], un, (un or 0) / MiB, s["holders"]))
    out(s["charged"] >= GiB and s["holders"] >= 1, "shim charged >= 1 GiB (%d) by %d holder(s)" % (s["charged"], s["holders"]))
    out(s["cgroup"] == cg + "/shim" and s["cgroup_source"] == "ledger", "shim cgroup %s from %s" % (s["cgroup"], s["cgroup_source"]))
    out(un is not None and 64 * MiB <= un < GiB, "shim unattributed %s: its context, hundreds of MiB, not GiB" % un)
    out(un == s["nvml_bytes"] - s["charged"], "shim unattributed == nvml - charged")
if b:
    print("FIGURE bare: nvml %s charged %s unattributed %s (%.1f MiB)" %
          (b["nvml_bytes"], b["charged"], b["unattributed"], (b["unattributed"] or 0) / MiB))
    out(b["charged"] == 0 and b["holders"] == 0, "bare: no holder, charged 0")
    out(b["cgroup"] == cg + "/bare" and b["cgroup_source"] == "proc", "bare cgroup %s from %s" % (b["cgroup"], b["cgroup_source"]))
    out(b["unattributed"] is not None and b["unattributed"] == b["nvml_bytes"] >= 512 * MiB,
        "bare unattributed == its NVML figure (%s) >= 512 MiB" % b["unattributed"])
cgs = {c["cgroup"]: c for c in d["cgroups"] if c["device"] == key}
for name, r in (("shim", s), ("bare", b)):
    c = cgs.get(cg + "/" + name)
    if r and c:
        out(c["processes"] == 1 and c["unattributed"] == r["unattributed"] and c["charged"] == r["charged"],
            "cgroup %s/%s sums: %s" % (cg, name, json.dumps(c)))
m = open(mf).read()
out("nxquota_nvml_available 1" in m.splitlines(), "metrics: nxquota_nvml_available 1")
for name, r in (("shim", s), ("bare", b)):
    if r:
        line = 'nxquota_process_unattributed_bytes{device="%s",cgroup="%s/%s",device_uuid="%s",pid="%d"} %d' % (key, cg, name, key, r["pid"], r["unattributed"])
        out(line in m.splitlines(), "metrics: " + line)
EOF
cat "$RUN/py.out" | tee -a "$OUT/results.txt" | grep -v '^PASS\|^FAIL'
npass=$((npass + $(grep -c '^PASS' "$RUN/py.out")))
nfail=$((nfail + $(grep -c '^FAIL' "$RUN/py.out")))
grep '^PASS\|^FAIL' "$RUN/py.out"
grep -q '^PASS: NVML read' "$RUN/py.out" || fail "the checks did not run: $(tail -5 "$RUN/py.out")"

# without CAP_SYS_ADMIN: nothing of it
setpriv --bounding-set=-sys_admin --inh-caps=-sys_admin "$C" --control "$RUN/ctl.sock" status \
	>"$RUN/noadmin.out" 2>&1
if grep -q '^nvml: not shown: needs CAP_SYS_ADMIN' "$RUN/noadmin.out" &&
	! grep -q UNATTRIBUTED "$RUN/noadmin.out"; then
	pass "without CAP_SYS_ADMIN: not shown"
else
	fail "without CAP_SYS_ADMIN: $(tail -3 "$RUN/noadmin.out")"
fi

echo >&7; echo >&8
exec 7>&- 8>&-
wait "$SPID" "$BPID" 2>/dev/null
SPID= BPID=
say "gpu-nvml: $npass passed, $nfail failed ($(($(date +%s) - T0)) s)"
[ $nfail = 0 ]
