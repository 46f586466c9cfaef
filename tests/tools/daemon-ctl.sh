#!/bin/sh
# nxquotactl against nxquotad: the same commands and the same output as
# against the module, over the daemon's control socket.
#  - a daemon (daemon/build/nxquotad, or $NXQD_BIN) on sockets and a state
#    directory in a fresh directory, its cgroup2 root (-C) a fresh
#    directory of the first cgroup2 mount with cgroups a and a/b;
#  - devices register/default-max/list, set, status (table and --json),
#    metrics, clear, unregister, events: each checked against the lines
#    the tool prints for the module (the same printf formats: headers,
#    columns, metric names), and against the daemon's state;
#  - the errors: an unknown cgroup (exit 1, the module's message), no
#    authority at all (exit 3, naming the module and the daemon), a
#    non-root caller (exit 4).
# Needs root and a cgroup2 mount; says "skipped" (exit 77) otherwise.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tool=${NXQUOTACTL:-$top/tools/nxquotactl}
bin=${NXQD_BIN:-$top/daemon/build/nxquotad}
fail() { echo "daemon-ctl: FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || { echo "daemon-ctl: skipped: needs root"; exit 77; }
[ -x "$tool" ] || fail "no $tool (make -C tools)"
[ -x "$bin" ] || fail "no $bin (make -C daemon)"
mnt=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
[ -n "$mnt" ] || { echo "daemon-ctl: skipped: no cgroup2 mount"; exit 77; }

tmp=$(mktemp -d /tmp/nxq-dctl.XXXXXX)
cg=$mnt/nxq-dctl.$$
pid=
cleanup() {
	[ -z "$pid" ] || { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
	[ -z "${epid:-}" ] || { kill "$epid" 2>/dev/null; wait "$epid" 2>/dev/null; }
	rmdir "$cg/a/b" "$cg/a" "$cg" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$cg" "$cg/a" "$cg/a/b" || { echo "daemon-ctl: skipped: cannot create cgroups in $mnt"; exit 77; }
ctl=$tmp/control.sock

"$bin" -s "$tmp/client/nxquota.sock" -c "$ctl" -S "$tmp/state" -C "$cg" -G 0 \
	2>"$tmp/log" &
pid=$!
i=0	# until it answers (the file exists a moment before it listens)
until "$tool" --control "$ctl" devices >/dev/null 2>&1; do
	[ $i -lt 500 ] && kill -0 "$pid" 2>/dev/null ||
		{ cat "$tmp/log"; fail "the daemon did not start"; }
	sleep 0.01
	i=$((i + 1))
done

run() {	# run ARGS...: the tool against the daemon; out, err, rc
	"$tool" --control "$ctl" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}
ok() { run "$@"; [ $rc = 0 ] || fail "nxquotactl $*: exit $rc: $(cat "$tmp/err")"; }
has() {	# has FILE TEXT: a line of FILE is exactly TEXT
	grep -qxF -- "$2" "$1" || { cat "$1"; fail "no line '$2' in $1"; }
}

# ---- devices --------------------------------------------------------------
ok devices register gpu0 8G 195:0
ok devices default-max gpu0 1G
ok devices
has "$tmp/out" "$(printf '%-40s %9s %9s %7s' DEVICE CAPACITY USED HOLDERS)"
has "$tmp/out" "$(printf '%-40s %9s %9s %7u' gpu0 8G 0 0)"
ok --json devices
has "$tmp/out" '[{"key":"gpu0","capacity":8589934592,"used":0,"holders":0}]'
# every field of the device table (--help lists what the table gives it),
# set through the tool and read back from status --json; out of bounds
# refused before anything is sent (exit 2)
fields=$("$tool" --help |
	sed -n '/ change its /s/^  devices \([a-z-]*\) KEY \([A-Z]*\).*/\1:\2/p')
[ "$(echo "$fields" | wc -w)" -ge 3 ] || fail "device fields in --help: $fields"
for fh in $fields; do
	f=${fh%%:*}
	case ${fh#*:} in
	SIZE)	val=3G want=3221225472 ;;
	MS)	val=250 want=250 ;;
	*)	fail "$f: no value for ${fh#*:}" ;;
	esac
	ok devices "$f" gpu0 "$val"
	ok --json status
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
v = d["devices"][0][sys.argv[2].replace("-", "_")]
assert v == int(sys.argv[3]), (sys.argv[2], v)' "$tmp/out" "$f" "$want" ||
		fail "devices $f gpu0 $val: status --json: $(cat "$tmp/out")"
	run devices "$f" gpu0 x
	[ $rc = 2 ] || fail "devices $f gpu0 x: exit $rc"
done
run devices ticket-timeout-ms gpu0 0
[ $rc = 2 ] && grep -q "1 to 3600000" "$tmp/err" ||
	fail "ticket-timeout-ms 0: exit $rc: $(cat "$tmp/err")"
run devices ticket-timeout-ms gpu0 3600001
[ $rc = 2 ] || fail "ticket-timeout-ms 3600001: exit $rc"
ok devices capacity gpu0 8G
ok devices default-max gpu0 1G
run devices register gpu0 8G
[ $rc = 1 ] || fail "registering twice: exit $rc"
grep -q "EEXIST.*device already registered" "$tmp/err" ||
	fail "registering twice: $(cat "$tmp/err")"

# ---- set, status ----------------------------------------------------------
ok set /a/b gpu0 max=2G min=512M kill-on-ignore=1 priority-max=2
# set says what it changed, and what binds the cgroup now
has "$tmp/out" "/a/b on gpu0: max - -> 2G, min - -> 512M, kill-on-ignore 0 -> 1, limits 1024/64/2/30000; effective max 2G, effective min 512M"
ok set /a gpu0 max=4Gi
has "$tmp/out" "/a on gpu0: max - -> 4G; effective max 4G, effective min 512M"
# impossible budgets are refused with the reason, and change nothing
run set /a/b gpu0 min=3G
[ $rc = 1 ] && grep -q "EINVAL.*/a/b: min 3G is above its max 2G" "$tmp/err" ||
	fail "min above max: $rc $(cat "$tmp/err")"
run set /a gpu0 min=256M
[ $rc = 1 ] && grep -q "ENOSPC.*/a: min 256M is below its children's guarantees, 512M (or overcommit)" "$tmp/err" ||
	fail "min below the children's: $rc $(cat "$tmp/err")"
ok set /a gpu0 min=256M overcommit
has "$tmp/out" "/a on gpu0: min - -> 256M; effective max 4G, effective min 256M; its children overcommit it"
ok set /a gpu0 min=0
run set /nope gpu0 max=1G
[ $rc = 1 ] || fail "set on a missing cgroup: exit $rc"
grep -q "ENOENT.*no such cgroup" "$tmp/err" || fail "set /nope: $(cat "$tmp/err")"
ok status
has "$tmp/out" "$(printf '%-40s %9s %9s %7s %8s %8s %11s %9s %8s' DEVICE \
	CAPACITY USED HOLDERS DENIALS TICKETS DEVT DEF.MAX EV.DROP)"
has "$tmp/out" "$(printf '%-40s %9s %9s %7u %8u %8u %11s %9s %8u' gpu0 8G 0 \
	0 0 0 195:0 1G 0)"
has "$tmp/out" "BUDGETS (bytes are charge, not residency; - : none of its own)"
has "$tmp/out" "$(printf '%-16s %-28s %8s %8s %8s %8s %8s %8s %7s %7s %s' \
	DEVICE CGROUP MAX EFF.MAX MIN EFF.MIN CURRENT BORROWED HOLDERS DENIALS \
	'LIMITS(holders_max/waiters_max/priority_max/wait_max_ms)')"
has "$tmp/out" "$(printf '%-16s %-28s %8s %8s %8s %8s %8s %8s %7u %7u %s' gpu0 \
	'    b' 2G 2G 512M 512M 0 0 0 0 '1024/64/2/30000  kill-on-ignore')"
# /a has no min of its own: it claims b's, which b keeps whole
has "$tmp/out" "$(printf '%-16s %-28s %8s %8s %8s %8s %8s %8s %7u %7u %s' gpu0 \
	'  a' 4G 4G - 512M 0 0 0 0 '1024/64/0/30000')"
has "$tmp/out" "HOLDERS"
ok --json status
python3 -c 'import json, sys; d = json.load(open(sys.argv[1]));
b = [n for n in d["budgets"] if n["path"] == "/a/b"][0]
assert b["max"] == 2 << 30 and b["min"] == 512 << 20 and b["kill_on_ignore"], b
assert b["max_set"] and b["effective_max"] == 2 << 30 and b["effective_min"] == 512 << 20, b
a = [n for n in d["budgets"] if n["path"] == "/a"][0]
assert a["claimed"] == 512 << 20 and not a["overcommitted"] and a["min"] == 0, a
assert [n for n in d["budgets"] if n["path"] == "/"][0]["parent_id"] is None
assert d["devices"][0]["devt"] == "195:0" and d["holders"] == []
t = d["devices"][0]["events_dropped_type"]
assert sorted(t) == sorted(["device-added", "device-removed", "budget-changed",
    "denied", "ticket-issued", "ticket-answered", "killed"]) and not any(t.values()), t' "$tmp/out" ||
	fail "status --json: $(cat "$tmp/out")"

# ---- metrics --------------------------------------------------------------
ok metrics
has "$tmp/out" '# TYPE nxquota_device_capacity_bytes gauge'
has "$tmp/out" 'nxquota_device_capacity_bytes{device="gpu0"} 8589934592'
has "$tmp/out" 'nxquota_budget_max_bytes{device="gpu0",cgroup="/a/b"} 2147483648'
has "$tmp/out" 'nxquota_budget_max_bytes{device="gpu0",cgroup="/"} +Inf'
has "$tmp/out" 'nxquota_budget_effective_max_bytes{device="gpu0",cgroup="/a/b"} 2147483648'
has "$tmp/out" 'nxquota_budget_claimed_bytes{device="gpu0",cgroup="/a"} 536870912'
has "$tmp/out" 'nxquota_budget_overcommitted{device="gpu0",cgroup="/a"} 0'

has "$tmp/out" 'nxquota_device_events_dropped_total{device="gpu0"} 0'
has "$tmp/out" '# TYPE nxquota_device_events_dropped_type_total counter'
has "$tmp/out" 'nxquota_device_events_dropped_type_total{device="gpu0",type="denied"} 0'
has "$tmp/out" 'nxquota_device_events_dropped_type_total{device="gpu0",type="killed"} 0'
# nxquotad's refusals and restores (issue 21): none here
has "$tmp/out" 'nxquota_device_conns_refused_total{device="gpu0"} 0'
has "$tmp/out" 'nxquota_device_creds_refused_total{device="gpu0"} 0'
has "$tmp/out" 'nxquota_device_restored_bytes_total{device="gpu0"} 0'
has "$tmp/out" 'nxquota_device_restore_refused_bytes_total{device="gpu0"} 0'

# ---- cdi ------------------------------------------------------------------
# The client socket's directory, read-only, holding it alone (issue 29)
export NXQUOTA_SOCKET="$tmp/client/nxquota.sock"
echo /usr/lib/nxquota/libnxquota-preload.so > "$tmp/list"
ok cdi generate --hook /usr/sbin/nxquota-hook --shim /usr/lib/libnxquota-preload.so --preload-list "$tmp/list"
python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))
assert s["cdiVersion"] == "0.5.0" and s["kind"] == "nxquota.io/gpu", s
names = [d["name"] for d in s["devices"]]
assert names == ["gpu0", "all"], names
assert s["devices"][0]["containerEdits"]["env"] == ["NXQUOTA_DEVICE_GPU0=gpu0"], s
e = s["containerEdits"]
assert "LD_PRELOAD=/usr/lib/nxquota/libnxquota-preload.so" in e["env"], e
assert "NXQUOTA_REQUIRE=1" in e["env"] and "NXQUOTA_SOCKET=/run/nxquota/client/nxquota.sock" in e["env"], e
# the daemon: its client socket directory, never the control socket
assert [m["containerPath"] for m in e["mounts"]] == ["/run/nxquota/client", "/usr/lib/nxquota/libnxquota-preload.so", "/etc/ld.so.preload", "/etc/nxquota/require"], e
assert e["mounts"][0]["hostPath"] == sys.argv[2] and "ro" in e["mounts"][0]["options"], e
# the preload list, read-only, at /etc/ld.so.preload and as the require file
assert [m["hostPath"] for m in e["mounts"][2:]] == [sys.argv[2][:-len("/client")] + "/list"] * 2, e
assert all("ro" in m["options"] for m in e["mounts"]), e
assert not any("control" in m["hostPath"] for m in e["mounts"]), e
assert [(h["hookName"], h["args"]) for h in e["hooks"]] == [("createRuntime", ["nxquota-hook", "createRuntime"]), ("poststop", ["nxquota-hook", "poststop"])], e
assert e["hooks"][0]["path"] == "/usr/sbin/nxquota-hook" and e["deviceNodes"] == [], e' \
	"$tmp/out" "$tmp/client" || fail "cdi generate: $(cat "$tmp/out")"
# A directory that holds more than the client socket (here the control
# socket and the state), one that is not there, a relative path: refused,
# saying why, and no spec written
for s in "$ctl:holds" "$tmp/none/nxquota.sock:No such file" "x.sock:not an absolute"; do
	NXQUOTA_SOCKET=${s%:*} run cdi generate --output "$tmp/bad.json"
	[ $rc = 1 ] && grep -q "${s##*:}" "$tmp/err" && [ ! -e "$tmp/bad.json" ] ||
		fail "cdi generate with NXQUOTA_SOCKET=${s%:*}: exit $rc: $(cat "$tmp/err")"
done
NXQUOTA_SOCKET=$ctl run cdi generate
grep -q "cdi: $tmp holds [a-z.]* besides nxquotad's client socket control.sock: a container given the directory would have it too" "$tmp/err" ||
	fail "cdi generate with the control socket's directory: $(cat "$tmp/err")"
export NXQUOTA_SOCKET="$tmp/client/nxquota.sock"
# A preload list naming anything but the shim is refused, no spec written;
# --no-preload-list leaves both mounts out, --no-require the require file
echo /tmp/evil.so > "$tmp/badlist"
run cdi generate --preload-list "$tmp/badlist" --output "$tmp/bad.json"
[ $rc = 1 ] && grep -q "does not hold exactly" "$tmp/err" && [ ! -e "$tmp/bad.json" ] ||
	fail "cdi generate with a preload list naming another library: exit $rc: $(cat "$tmp/err")"
ok cdi generate --no-preload-list --output "$tmp/cdi.json"
python3 -c 'import json, sys; e = json.load(open(sys.argv[1]))["containerEdits"]
assert not any(m["containerPath"].startswith("/etc/") for m in e["mounts"]), e' \
	"$tmp/cdi.json" || fail "cdi generate --no-preload-list: $(cat "$tmp/cdi.json")"
ok cdi generate --preload-list "$tmp/list" --no-require --output "$tmp/cdi.json"
python3 -c 'import json, sys; e = json.load(open(sys.argv[1]))["containerEdits"]
assert [m["containerPath"] for m in e["mounts"] if m["containerPath"].startswith("/etc/")] == ["/etc/ld.so.preload"], e' \
	"$tmp/cdi.json" || fail "cdi generate --no-require: $(cat "$tmp/cdi.json")"
ok cdi generate --no-hook --no-shim --output "$tmp/cdi.json"
python3 -c 'import json, sys; e = json.load(open(sys.argv[1]))["containerEdits"]
assert e["hooks"] == [] and not any(x.startswith("LD_PRELOAD") for x in e["env"]), e' \
	"$tmp/cdi.json" || fail "cdi generate --no-hook --no-shim: $(cat "$tmp/cdi.json")"
unset NXQUOTA_SOCKET

# ---- events ---------------------------------------------------------------
"$tool" --control "$ctl" events >"$tmp/events" 2>&1 &
epid=$!
# set again until the listener (subscribed some time after its start)
# shows it
i=0
while ! grep -q "budget-changed.*device=gpu0.*max=3G" "$tmp/events" &&
	[ $i -lt 100 ]; do
	ok set /a gpu0 max=3G
	sleep 0.1
	i=$((i + 1))
done
grep -q "budget-changed.*device=gpu0 cgroup=/a max=3G min=0" "$tmp/events" ||
	fail "events: $(cat "$tmp/events")"
kill "$epid"; wait "$epid" 2>/dev/null; epid=

# ---- the state file has it; clear, unregister -----------------------------
grep -q '^budget gpu0 /a/b max=2147483648 min=536870912 kill_on_ignore=1 ' \
	"$tmp/state/state" || fail "state: $(cat "$tmp/state/state")"
ok clear /a/b gpu0
ok clear /a gpu0
ok --json status
grep -q '"path":"/a/b"' "$tmp/out" && fail "cleared, still there: $(cat "$tmp/out")"
run devices unregister nope
[ $rc = 1 ] && grep -q ENODEV "$tmp/err" || fail "unregister nope: $rc $(cat "$tmp/err")"
ok devices unregister gpu0
ok devices
[ "$(wc -l <"$tmp/out")" = 1 ] || fail "unregistered, still listed: $(cat "$tmp/out")"

# ---- who may ask; no authority --------------------------------------------
chmod 755 "$tmp"
if command -v setpriv >/dev/null; then
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$tool" --control "$ctl" devices >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ $rc = 4 ] && grep -q "permission denied" "$tmp/err" ||
		fail "as nobody: exit $rc: $(cat "$tmp/err")"
fi
"$tool" --control "$tmp/none.sock" status >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 3 ] || fail "--control to nothing: exit $rc"
grep -q "no nxquotad control socket at $tmp/none.sock" "$tmp/err" ||
	fail "--control to nothing: $(cat "$tmp/err")"
if [ ! -d /sys/module/nxquota ]; then
	NXQUOTA_CONTROL=$tmp/none.sock "$tool" status >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ $rc = 3 ] || fail "no authority: exit $rc"
	grep -q "module is not loaded.*nxquotad does not answer at $tmp/none.sock" \
		"$tmp/err" || fail "no authority: $(cat "$tmp/err")"
	# and the environment's path is the daemon's when the module is absent
	NXQUOTA_CONTROL=$ctl "$tool" devices >"$tmp/out" 2>"$tmp/err" ||
		fail "NXQUOTA_CONTROL: $(cat "$tmp/err")"
fi

kill "$pid"
wait "$pid"
rc=$?
pid=
[ $rc = 0 ] || { cat "$tmp/log"; fail "the daemon exited $rc"; }
echo "daemon-ctl: ok (devices, set, status, --json, metrics, events, clear, errors; exit codes 1, 3, 4)"
