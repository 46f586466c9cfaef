#!/bin/sh
# nxquotactl's unattributed bytes (issue 13, item 3): what the NVIDIA
# driver (NVML) attributes to each process minus what the ledger charged
# it, per process, per cgroup and per device, in `status` (table and
# --json) and `metrics`.  The real tool against a real ledger (nxquotad on
# its control socket, its cgroup root the cgroup2 mount) with a fake
# libnvidia-ml.so.1 (tests/fakenvml/fakenvml.c) found through LD_LIBRARY_PATH:
#  - holders that charged known bytes from known pids (nxq-hold, built from
#    tests/vm/tools; hold2: one process, two holders), processes NVML lists with no holder at all (a sleep),
#    a holder NVML does not list, a figure NVML does not give
#    (NVML_VALUE_NOT_AVAILABLE), a device NVML lists and the ledger does
#    not know: every figure checked to the byte, and the cgroup of each
#    process (the ledger's for a holder, /proc's otherwise);
#  - the same through the first version of the process query (its smaller
#    struct);
#  - 300 processes on a device whose count grows between calls: every
#    NVML_ERROR_INSUFFICIENT_SIZE is asked again, all 300 counted;
#  - NVML missing (no library; nvmlInit_v2 failing): said once, the
#    command still succeeds, the series are absent;
#  - a caller without CAP_SYS_ADMIN, or in a user namespace, sees none of
#    it and the library is not even loaded; nor with NXQUOTA_NVML=0.
# NXQUOTACTL overrides the tool (tests/tools/nvml-mutants.sh uses it).
# Needs root and a cgroup2 mount; says "skipped" (exit 77) otherwise.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/tests/tools
tool=${NXQUOTACTL:-$top/tools/nxquotactl}
bin=${NXQD_BIN:-$top/daemon/build/nxquotad}
fail() { echo "nvml.sh: FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || { echo "nvml.sh: skipped: needs root"; exit 77; }
[ -x "$tool" ] || fail "no $tool (make -C tools)"
[ -x "$bin" ] || fail "no $bin (make -C daemon)"
[ -f "$here/nvml/libnvidia-ml.so.1" ] && [ -f "$here/nvml-v1/libnvidia-ml.so.1" ] ||
	fail "no fake NVML (make -C tools check builds it)"
mnt=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
[ -n "$mnt" ] || { echo "nvml.sh: skipped: no cgroup2 mount"; exit 77; }

tmp=$(mktemp -d /tmp/nxq-nvml.XXXXXX)
T=nxq-nvml.$$
cg=$mnt/$T
pid=
kids=
cleanup() {
	for k in $kids; do kill -9 "$k" 2>/dev/null; done
	[ -z "$pid" ] || kill "$pid" 2>/dev/null
	wait 2>/dev/null
	for d in a b c; do rmdir "$cg/$d" 2>/dev/null; done
	rmdir "$cg" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$cg" "$cg/a" "$cg/b" "$cg/c" ||
	{ echo "nvml.sh: skipped: cannot create cgroups in $mnt"; exit 77; }

for p in "$top/tests/vm/tools/nxq-hold.c" "$here/hold2.c"; do
	gcc -O2 -Wall -Werror -I"$top/include/uapi" -I"$top/tests/vm" -pthread \
		-o "$tmp/$(basename "$p" .c)" "$p" 2>"$tmp/cc.log" ||
		{ cat "$tmp/cc.log"; fail "$p does not build"; }
done

ctl=$tmp/control.sock
"$bin" -s "$tmp/client.sock" -c "$ctl" -S "$tmp/state" -C "$mnt" -G 0 \
	2>"$tmp/log" &
pid=$!
i=0
until "$tool" --control "$ctl" devices >/dev/null 2>&1; do
	[ $i -lt 500 ] && kill -0 "$pid" 2>/dev/null ||
		{ cat "$tmp/log"; fail "the daemon did not start"; }
	sleep 0.01
	i=$((i + 1))
done

A=GPU-aaaaaaaa-1111-2222-3333-444444444444	# in the ledger and in NVML
B=GPU-bbbbbbbb-1111-2222-3333-444444444444	# in NVML only
"$tool" --control "$ctl" devices register "$A" 80G >/dev/null || fail "register"
"$tool" --control "$ctl" devices default-max "$A" max >/dev/null || fail "default-max"
"$tool" --control "$ctl" set "/$T" "$A" max=8G >/dev/null || fail "set"

# hold NAME CGROUP SIZE: a holder in CGROUP that charged SIZE bytes on A;
# (with an eventfd: a holder without one cannot borrow beyond its
# guarantee); its pid in $hpid; its stdin a fifo held open on descriptors 3, 4, 5
nfd=3
hold() {
	mkfifo "$tmp/in.$1"
	NXQ_AUTHORITY=daemon NXQUOTA_SOCKET=$tmp/client.sock NXQ_CGROOT=$mnt \
		"$tmp/nxq-hold" "$1" "$A" "/$T/$2" --eventfd <"$tmp/in.$1" >"$tmp/out.$1" 2>&1 &
	hpid=$!
	kids="$kids $hpid"
	eval "exec $nfd>\"$tmp/in.$1\"; echo 'charge $3' >&$nfd"
	nfd=$((nfd + 1))
	i=0
	until grep -q "granted" "$tmp/out.$1" 2>/dev/null; do
		[ $i -lt 500 ] || { "$tool" --control "$ctl" status; fail "holder $1: $(cat "$tmp/out.$1")"; }
		sleep 0.01
		i=$((i + 1))
	done
}
# idle CGROUP: a process with no holder in CGROUP; its pid in $ipid
idle() {
	sh -c "echo \$\$ >$cg/$1/cgroup.procs && exec sleep 600" &
	ipid=$!
	kids="$kids $ipid"
	i=0
	until grep -q "^0::/$T/$1\$" /proc/$ipid/cgroup 2>/dev/null; do
		[ $i -lt 500 ] || fail "idle process not in /$T/$1"
		sleep 0.01
		i=$((i + 1))
	done
}

# p1: two holders (hold2) of 128 MiB each: 256 MiB charged ...
mkfifo "$tmp/in.p1"
NXQ_AUTHORITY=daemon NXQUOTA_SOCKET=$tmp/client.sock NXQ_CGROOT=$mnt \
	"$tmp/hold2" "$A" "/$T/a" 134217728 134217728 <"$tmp/in.p1" >"$tmp/out.p1" 2>&1 &
p1=$!
kids="$kids $p1"
exec 6>"$tmp/in.p1"
i=0
until grep -q granted "$tmp/out.p1"; do
	[ $i -lt 500 ] || fail "hold2: $(cat "$tmp/out.p1")"
	sleep 0.01
	i=$((i + 1))
done
hold p3 a 1073741824;	p3=$hpid	# 1 GiB charged ...
hold p5 c 67108864;	p5=$hpid	# 64 MiB charged, not in NVML
idle b;			p2=$ipid	# no holder at all
idle b;			p4=$ipid	# no holder, NVML gives no figure
# What the driver says: p1 holds its context (520 MiB, as measured on the
# H200) and its 256 MiB; p3 has mapped 512 MiB of the 1 GiB it charged.
cat >"$tmp/nvml.txt" <<EOF
$A $p1 813694976
$A $p2 545259520
$A $p3 536870912
$A $p4 na
$B $p2 104857600
EOF
export FAKE_NVML_FILE="$tmp/nvml.txt"
export FAKE_NVML_LOG="$tmp/nvml.log"
fake=$here/nvml
run() {	# run ARGS...: the tool against the daemon with the fake NVML
	LD_LIBRARY_PATH=$fake "$tool" --control "$ctl" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}
ok() { run "$@"; [ $rc = 0 ] || fail "nxquotactl $*: exit $rc: $(cat "$tmp/err")"; }
has() {	# has FILE TEXT: a line of FILE is exactly TEXT
	grep -qxF -- "$2" "$1" || { cat "$1"; fail "no line '$2' in $1"; }
}
hasnt() { ! grep -q -- "$2" "$1" || { cat "$1"; fail "'$2' in $1"; }; }

# check_json FILE API: every figure of the scenario above
check_json() {
	python3 - "$1" "$2" "$A" "$B" "/$T" "$p1" "$p2" "$p3" "$p4" "$p5" <<'EOF' ||
import json, sys
f, api, A, B, T = sys.argv[1:6]
p1, p2, p3, p4, p5 = map(int, sys.argv[6:11])
d = json.load(open(f))["nvml"]
assert d["available"] is True and d["api"] == api, d
rows = {(r["device"], r["pid"]): r for r in d["processes"]}
assert len(rows) == len(d["processes"]) == 6, d["processes"]
def row(dev, pid, cg, src, listed, nvml, charged, holders, un):
    r = rows[(dev, pid)]
    want = {"device": dev, "pid": pid, "cgroup": cg, "cgroup_source": src,
            "listed": listed, "nvml_bytes": nvml, "charged": charged,
            "holders": holders, "unattributed": un}
    assert r == want, (r, want)
row(A, p1, T + "/a", "ledger", True, 813694976, 268435456, 2, 545259520)
row(A, p3, T + "/a", "ledger", True, 536870912, 1073741824, 1, -536870912)
row(A, p5, T + "/c", "ledger", False, 0, 67108864, 1, -67108864)
row(A, p2, T + "/b", "proc", True, 545259520, 0, 0, 545259520)
row(A, p4, T + "/b", "proc", True, None, 0, 0, None)
row(B, p2, T + "/b", "proc", True, 104857600, 0, 0, 104857600)
cgs = {(c["device"], c["cgroup"]): c for c in d["cgroups"]}
assert len(cgs) == 4, d["cgroups"]
def cg(dev, path, procs, na, nvml, charged, un):
    c = cgs[(dev, path)]
    want = {"device": dev, "cgroup": path, "processes": procs,
            "not_available": na, "nvml_bytes": nvml, "charged": charged,
            "unattributed": un}
    assert c == want, (c, want)
cg(A, T + "/a", 2, 0, 813694976 + 536870912, 268435456 + 1073741824, 8388608)
cg(A, T + "/b", 2, 1, 545259520, 0, 545259520)
cg(A, T + "/c", 1, 0, 0, 67108864, -67108864)
cg(B, T + "/b", 1, 0, 104857600, 0, 104857600)
devs = {x["key"]: x for x in d["devices"]}
assert devs[A] == {"key": A, "error": None, "processes": 5, "not_available": 1,
                   "nvml_bytes": 1895825408, "charged": 1409286144,
                   "unattributed": 486539264}, devs[A]
assert devs[B] == {"key": B, "error": None, "processes": 1, "not_available": 0,
                   "nvml_bytes": 104857600, "charged": 0,
                   "unattributed": 104857600}, devs[B]
EOF
	fail "status --json ($2): $(cat "$1")"
}

# ---- status --json, the first time: every figure -----------------------------
ok --json status
check_json "$tmp/out" nvmlDeviceGetComputeRunningProcesses_v3
grep -q "^shutdown" "$tmp/nvml.log" || fail "nvmlShutdown not called: $(cat "$tmp/nvml.log")"
# the ledger's own part is unchanged
python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
assert sorted(h["charge"] for h in d["holders"]) == [67108864, 134217728, 134217728, 1073741824], d["holders"]' \
	"$tmp/out" || fail "holders: $(cat "$tmp/out")"

# ---- status: the table ---------------------------------------------------------
ok status
has "$tmp/out" "$(printf '%-16s %-28s %8s %9s %9s %12s %7s' DEVICE CGROUP PID \
	NVML CHARGED UNATTRIBUTED HOLDERS)"
has "$tmp/out" "$(printf '%-16s %-28s %8u %9s %9s %12s %7u' "$A" "/$T/a" "$p1" \
	776M 256M 520M 2)"
has "$tmp/out" "$(printf '%-16s %-28s %8u %9s %9s %12s %7u' "$A" "/$T/a" "$p3" \
	512M 1G -512M 1)"
has "$tmp/out" "$(printf '%-16s %-28s %8u %9s %9s %12s %7u' "$A" "/$T/c" "$p5" \
	unlisted 64M -64M 1)"
has "$tmp/out" "$(printf '%-16s %-28s %8u %9s %9s %12s %7u' "$A" "/$T/b" "$p2" \
	520M 0 520M 0)"
has "$tmp/out" "$(printf '%-16s %-28s %8u %9s %9s %12s %7u' "$A" "/$T/b" "$p4" \
	n/a 0 n/a 0)"
has "$tmp/out" "$(printf '%-16s %-28s %8u %9s %9s %12s' "$A" "/$T/a" 2 1.2G 1.2G 8M)"
has "$tmp/out" "$(printf '%-16s %-28s %8u %9s %9s %12s' "$A" "/$T/b" 2 \
	520M+1n/a 0 520M+1n/a)"
has "$tmp/out" "$(printf '%-40s %8u %9s %9s %12s' "$A" 5 1.7G+1n/a 1.3G \
	464M+1n/a)"
has "$tmp/out" "$(printf '%-40s %8u %9s %9s %12s' "$B" 1 100M 0 100M)"
has "$tmp/out" "UNATTRIBUTED BY DEVICE (nvmlDeviceGetComputeRunningProcesses_v3)"

# ---- status DEVICE: that device's rows only -------------------------------------
ok --json status "$A"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))["nvml"]
assert {r["device"] for r in d["processes"]} == {sys.argv[2]}, d
assert len(d["processes"]) == 5, d
assert [x["key"] for x in d["devices"]] == [sys.argv[2]], d' "$tmp/out" "$A" ||
	fail "status $A: $(cat "$tmp/out")"

# ---- metrics ----------------------------------------------------------------------
ok metrics
has "$tmp/out" 'nxquota_nvml_available 1'
has "$tmp/out" '# TYPE nxquota_process_unattributed_bytes gauge'
has "$tmp/out" "nxquota_process_nvml_bytes{device=\"$A\",cgroup=\"/$T/a\",device_uuid=\"$A\",pid=\"$p1\"} 813694976"
has "$tmp/out" "nxquota_process_charged_bytes{device=\"$A\",cgroup=\"/$T/a\",device_uuid=\"$A\",pid=\"$p1\"} 268435456"
has "$tmp/out" "nxquota_process_unattributed_bytes{device=\"$A\",cgroup=\"/$T/a\",device_uuid=\"$A\",pid=\"$p1\"} 545259520"
has "$tmp/out" "nxquota_process_unattributed_bytes{device=\"$A\",cgroup=\"/$T/a\",device_uuid=\"$A\",pid=\"$p3\"} -536870912"
has "$tmp/out" "nxquota_process_unattributed_bytes{device=\"$A\",cgroup=\"/$T/b\",device_uuid=\"$A\",pid=\"$p2\"} 545259520"
has "$tmp/out" "nxquota_process_charged_bytes{device=\"$A\",cgroup=\"/$T/b\",device_uuid=\"$A\",pid=\"$p4\"} 0"
hasnt "$tmp/out" "nxquota_process_nvml_bytes{device=\"$A\",cgroup=\"/$T/b\",device_uuid=\"$A\",pid=\"$p4\"}"
hasnt "$tmp/out" "nxquota_process_unattributed_bytes{device=\"$A\",cgroup=\"/$T/b\",device_uuid=\"$A\",pid=\"$p4\"}"
has "$tmp/out" "nxquota_cgroup_unattributed_bytes{device=\"$A\",cgroup=\"/$T/a\",device_uuid=\"$A\"} 8388608"
has "$tmp/out" "nxquota_cgroup_unattributed_bytes{device=\"$A\",cgroup=\"/$T/c\",device_uuid=\"$A\"} -67108864"
has "$tmp/out" "nxquota_cgroup_nvml_bytes{device=\"$A\",cgroup=\"/$T/b\",device_uuid=\"$A\"} 545259520"
has "$tmp/out" "nxquota_device_unattributed_bytes{device=\"$A\"} 486539264"
has "$tmp/out" "nxquota_device_nvml_bytes{device=\"$B\"} 104857600"
has "$tmp/out" "nxquota_device_nvml_unavailable_processes{device=\"$A\"} 1"
has "$tmp/out" "nxquota_holder_charge_bytes{device=\"$A\",cgroup=\"/$T/a\",device_uuid=\"$A\",pid=\"$p1\",holder=\"0\"} 134217728"

# the text format (0.0.4): each family typed once, its samples right after
# its TYPE, no series twice, every value a number
python3 - "$tmp/out" <<'EOF' || fail "metrics are not valid text format: $(cat "$tmp/out")"
import re, sys
typed, seen, cur = set(), set(), None
for n, l in enumerate(open(sys.argv[1]).read().split("\n")[:-1], 1):
    if l.startswith("# TYPE "):
        name, kind = l[7:].split(" ")
        assert name not in typed and kind in ("gauge", "counter"), (n, l)
        typed.add(name); cur = name
        continue
    if l.startswith("#"):
        continue
    m = re.fullmatch(r'([a-z_]+)(\{(?:[a-z_]+="(?:[^"\\]|\\.)*",?)*\})? (\S+)', l)
    assert m and m.group(1) == cur, (n, l)
    assert l.rsplit(" ", 1)[0] not in seen, ("duplicate", n, l)
    seen.add(l.rsplit(" ", 1)[0])
    float(m.group(3))
EOF
# ---- the first version of the process query: its smaller struct -----------------
fake=$here/nvml-v1
ok --json status
check_json "$tmp/out" nvmlDeviceGetComputeRunningProcesses
fake=$here/nvml

# ---- a pid listed twice on a device (MIG instances): summed; n/a wins ---------
printf '%s\n' "$A $p2 100" "$A $p2 200" "$B $p2 na" "$B $p2 300" >"$tmp/twice.txt"
FAKE_NVML_FILE=$tmp/twice.txt run --json status
[ $rc = 0 ] || fail "listed twice: exit $rc"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))["nvml"]
r = {x["device"]: x for x in d["processes"] if x["pid"] == int(sys.argv[2])}
assert r[sys.argv[3]]["nvml_bytes"] == 300 and r[sys.argv[3]]["unattributed"] == 300, r
assert r[sys.argv[4]]["nvml_bytes"] is None and r[sys.argv[4]]["unattributed"] is None, r' \
	"$tmp/out" "$p2" "$A" "$B" || fail "listed twice: $(cat "$tmp/out")"

# ---- 300 processes, a count that grows between calls ---------------------------
for i in $(seq 1 300); do echo "$B $((4000000 + i)) $((i * 1048576))"; done \
	>"$tmp/many.txt"
: >"$tmp/nvml.log"
FAKE_NVML_FILE=$tmp/many.txt FAKE_NVML_GROW=3 run --json status
[ $rc = 0 ] || fail "300 processes: exit $rc: $(cat "$tmp/err")"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))["nvml"]
assert len(d["processes"]) == 300, len(d["processes"])
dev = d["devices"][0]
assert dev["error"] is None and dev["processes"] == 300, dev
assert dev["nvml_bytes"] == dev["unattributed"] == 45150 * 1048576, dev
assert {r["pid"] for r in d["processes"]} == set(range(4000001, 4000301))' \
	"$tmp/out" || fail "300 processes: $(head -c 600 "$tmp/out")"
n=$(grep -c "^procs v3 $B room [0-9]* -> 7 count" "$tmp/nvml.log")
[ "$n" -ge 4 ] || fail "300 processes: $n INSUFFICIENT_SIZE answers, want 4 (growing count): $(cat "$tmp/nvml.log")"
grep -q "^procs v3 $B room 300 -> 0 count 300\$" "$tmp/nvml.log" ||
	fail "300 processes: never asked with room for 300: $(cat "$tmp/nvml.log")"

# ---- a device whose processes cannot be read ----------------------------------
FAKE_NVML_PROCS_ERROR=3 run --json status
[ $rc = 0 ] || fail "query error: exit $rc"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))["nvml"]
assert d["available"] and all(x["error"] for x in d["devices"]), d
assert all(not r["listed"] for r in d["processes"]), d' "$tmp/out" ||
	fail "query error: $(cat "$tmp/out")"

# ---- no NVML: said once, the command succeeds, no series -------------------------
FAKE_NVML_INIT=9 run status
[ $rc = 0 ] || fail "nvmlInit_v2 failing: exit $rc: $(cat "$tmp/err")"
has "$tmp/out" "nvml: not available: nvmlInit_v2: Driver Not Loaded (NVML error 9)"
[ "$(grep -c "nvml:" "$tmp/out")" = 1 ] || fail "said more than once: $(cat "$tmp/out")"
hasnt "$tmp/out" UNATTRIBUTED
FAKE_NVML_INIT=9 run --json status
[ $rc = 0 ] || fail "nvmlInit_v2 failing, --json: exit $rc"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
assert d["nvml"] == {"available": False, "reason": "nvmlInit_v2: Driver Not Loaded (NVML error 9)"}, d["nvml"]
assert len(d["holders"]) == 4' "$tmp/out" || fail "--json without NVML: $(cat "$tmp/out")"
FAKE_NVML_INIT=9 run metrics
[ $rc = 0 ] || fail "metrics without NVML: exit $rc"
has "$tmp/out" 'nxquota_nvml_available 0'
hasnt "$tmp/out" 'nxquota_process_'
hasnt "$tmp/out" 'unattributed_bytes'
has "$tmp/out" "nxquota_holder_charge_bytes{device=\"$A\",cgroup=\"/$T/a\",device_uuid=\"$A\",pid=\"$p1\",holder=\"0\"} 134217728"
if ! ldconfig -p 2>/dev/null | grep -q libnvidia-ml.so.1; then
	fake=/nonexistent
	ok status
	grep -q '^nvml: not available: cannot load libnvidia-ml.so.1: ' "$tmp/out" ||
		fail "no library: $(cat "$tmp/out")"
	fake=$here/nvml
fi

# ---- switched off: NXQUOTA_NVML=0 (scripts that poll status) --------------------
: >"$tmp/nvml.log"
NXQUOTA_NVML=0 run status
[ $rc = 0 ] || fail "NXQUOTA_NVML=0: exit $rc"
has "$tmp/out" "nvml: not read (NXQUOTA_NVML=0)"
hasnt "$tmp/out" UNATTRIBUTED
[ ! -s "$tmp/nvml.log" ] || fail "NXQUOTA_NVML=0 loaded the library: $(cat "$tmp/nvml.log")"

# ---- who may see it --------------------------------------------------------------
: >"$tmp/nvml.log"
if command -v setpriv >/dev/null; then
	for what in status metrics; do
		LD_LIBRARY_PATH=$fake setpriv --bounding-set=-sys_admin \
			--inh-caps=-sys_admin "$tool" --control "$ctl" $what \
			>"$tmp/out" 2>"$tmp/err" ||
			fail "without CAP_SYS_ADMIN, $what: exit $?: $(cat "$tmp/err")"
		hasnt "$tmp/out" nxquota_process_
		hasnt "$tmp/out" UNATTRIBUTED
		hasnt "$tmp/out" unattributed_bytes
	done
	LD_LIBRARY_PATH=$fake setpriv --bounding-set=-sys_admin \
		--inh-caps=-sys_admin "$tool" --control "$ctl" status >"$tmp/out"
	has "$tmp/out" "nvml: not shown: needs CAP_SYS_ADMIN in the initial user namespace (the driver lists every tenant's processes)"
	[ ! -s "$tmp/nvml.log" ] || fail "the library was called without CAP_SYS_ADMIN: $(cat "$tmp/nvml.log")"
else
	echo "nvml.sh: no setpriv: the CAP_SYS_ADMIN case is not run"
fi
if unshare -U -r true 2>/dev/null; then
	LD_LIBRARY_PATH=$fake unshare -U -r "$tool" --control "$ctl" --json status \
		>"$tmp/out" 2>"$tmp/err" || fail "in a user namespace: exit $?: $(cat "$tmp/err")"
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
assert d["nvml"]["available"] is False and "not shown" in d["nvml"]["reason"], d["nvml"]' \
		"$tmp/out" || fail "in a user namespace: $(cat "$tmp/out")"
	[ ! -s "$tmp/nvml.log" ] || fail "the library was called in a user namespace: $(cat "$tmp/nvml.log")"
else
	echo "nvml.sh: unshare -U -r not allowed here: the user-namespace case is not run"
fi

kill "$pid"
wait "$pid"
rc=$?
pid=
[ $rc = 0 ] || { cat "$tmp/log"; fail "the daemon exited $rc"; }
echo "nvml.sh: ok (per process, per cgroup, per device to the byte; v3 and v1 layouts; 300 processes through INSUFFICIENT_SIZE; no NVML; not shown without CAP_SYS_ADMIN)"
