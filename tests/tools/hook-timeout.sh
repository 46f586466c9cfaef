#!/bin/sh
# nxquota-hook against an authority that does not answer (issue 32, item
# 3: "The hook refuses what it cannot read exactly").  Before, the hook
# waited on a stopped nxquotad forever while holding its state directory's
# lock, and every container start on the node hung behind the first.
# Now, against nxquotad stopped with SIGSTOP:
#  - a container of a pod (timeout 3 s), a container beside it started
#    while the first waits (1 s) and one with the default timeout (5 s)
#    each fail at their own timeout, with one line, nothing changed: none
#    waits for another's lock;
#  - with the daemon's listen backlog full, connect() itself blocks: the
#    watchdog ends the hook half a second past its timeout, same line;
#  - poststop names the budget it cannot clear, with the nxquotactl
#    command, and keeps the record (cleared once nxquotad runs again);
#  - a bad NXQUOTA_HOOK_TIMEOUT or --timeout is refused;
# and first, against a running nxquotad, a container whose pod's lock a
# sibling holds gives up at its own timeout and changes nothing, and sets
# its budgets once the lock is free.
# Bounds: each run ends between its timeout and the timeout plus
# HOOK_TIMING_MARGIN_MS (2500), for a loaded machine.
# Needs root, a cgroup2 mount and python3; says "skipped" (77) otherwise.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
hook=${NXQUOTA_HOOK:-$top/tools/nxquota-hook}
tool=${NXQUOTACTL:-$top/tools/nxquotactl}
bin=${NXQD_BIN:-$top/daemon/build/nxquotad}
margin=${HOOK_TIMING_MARGIN_MS:-2500}
fail() { echo "hook-timeout: FAIL: $*"; exit 1; }
skip() { echo "hook-timeout: skipped: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "needs root"
[ -x "$hook" ] || fail "no $hook (make -C tools nxquota-hook)"
[ -x "$tool" ] || fail "no $tool (make -C tools)"
[ -x "$bin" ] || fail "no $bin (make -C daemon)"
command -v python3 >/dev/null || skip "no python3"
mnt=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
[ -n "$mnt" ] || skip "no cgroup2 mount"
self=$(sed -n 's/^0:://p' /proc/self/cgroup)
[ -d "$mnt$self" ] || skip "$mnt is not the root of this cgroup namespace"

tmp=$(mktemp -d /tmp/nxq-hook-timeout.XXXXXX)
base=nxq-hook-timeout.$$
cg=$mnt/$base
uid=0f3c5b2a-9d1e-4c7b-8a6f-2e4d1c0b9a87
kp=kubepods/burstable/pod$uid
pids=
cleanup() {
	for p in $pids; do
		kill -CONT "$p" 2>/dev/null	# the daemon stopped below
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	[ -d "$cg" ] && find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir -p "$cg/$kp/ctr1" "$cg/$kp/ctr2" "$cg/loose" 2>/dev/null ||
	skip "cannot create cgroups in $mnt"

daemon() {	# daemon NAME: nxquotad on $tmp/NAME.ctl, its pid in $dpid
	"$bin" -s "$tmp/$1.sock" -c "$tmp/$1.ctl" -S "$tmp/$1.state" -C "$mnt" \
		-G 0 2>"$tmp/$1.log" &
	dpid=$!
	pids="$pids $dpid"
	i=0
	until "$tool" --control "$tmp/$1.ctl" devices >/dev/null 2>&1; do
		[ $i -lt 500 ] || { cat "$tmp/$1.log"; fail "$1 did not start"; }
		sleep 0.01
		i=$((i + 1))
	done
	"$tool" --control "$tmp/$1.ctl" devices register $G0 80G "$(devt /dev/null)" ||
		fail "registering the GPU on $1"
}
devt() { printf '%d:%d' "0x$(stat -L -c %t "$1")" "0x$(stat -L -c %T "$1")"; }
G0=GPU-11111111-2222-3333-4444-555555555555
mkdir "$tmp/dev"
ln -s /dev/null "$tmp/dev/nvidia0"
export NXQUOTA_HOOK_STATE_DIR="$tmp/hooks" NXQUOTA_HOOK_DEV_DIR="$tmp/dev"
unset NXQUOTA_HOOK_TIMEOUT

box() {	# box NAME: a process in cgroup $cg/NAME; its pid in $p
	sleep 600 &
	p=$!
	pids="$pids $p"
	echo "$p" >"$cg/$1/cgroup.procs" || fail "moving $p into $1"
}
bundle() { mkdir -p "$tmp/$1"; cat >"$tmp/$1/config.json"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
run() {	# run NAME TIMEOUT ID PID BUNDLE CONTROL: the hook, in the background
	printf '{"ociVersion":"1.0.2","id":"%s","status":"creating","pid":%s,"bundle":"%s"}' \
		"$3" "$4" "$tmp/$5" >"$tmp/$1.state"
	(
		t0=$(now_ms)
		NXQUOTA_HOOK_TIMEOUT=$2 timeout 20 "$hook" --control "$6" \
			<"$tmp/$1.state" >/dev/null 2>"$tmp/$1.err"
		echo $? >"$tmp/$1.rc"
		echo $(($(now_ms) - t0)) >"$tmp/$1.ms"
	) &
	tpids="$tpids $!"
}
ended() {	# ended NAME SECONDS LOW HIGH TEXT...: exit 1, one line, in [LOW, HIGH) ms
	name=$1 s=$2 low=$3 high=$4
	shift 4
	rc=$(cat "$tmp/$name.rc")
	ms=$(cat "$tmp/$name.ms")
	id=$(sed 's/.*"id":"\([^"]*\)".*/\1/' "$tmp/$name.state")
	err=$(cat "$tmp/$name.err")
	[ "$rc" = 1 ] || fail "$name: exit $rc after $ms ms, not 1: $err"
	[ "$(wc -l <"$tmp/$name.err")" = 1 ] || fail "$name: not one line: $err"
	grep -q "^nxquota-hook: container $id: " "$tmp/$name.err" ||
		fail "$name: $err"
	for t in "$@"; do
		grep -qF -- "$t" "$tmp/$name.err" || fail "$name: no '$t' in: $err"
	done
	[ "$ms" -ge "$low" ] && [ "$ms" -lt "$high" ] ||
		fail "$name: ended after $ms ms, not in [$low, $high) for a $s s timeout"
	times="$times $name=${ms}ms/${s}s"
}
times=

box "$kp/ctr1"
c1=$p
box "$kp/ctr2"
c2=$p
box loose
c3=$p
bundle pod <<EOF
{"process":{"env":[]},"linux":{"devices":[
  {"path":"/dev/nvidia0","type":"c","major":$(devt /dev/null | cut -d: -f1),"minor":$(devt /dev/null | cut -d: -f2)}]},
 "annotations":{"io.kubernetes.pod.uid":"$uid",
  "nxquota.io/pod-max":"60Gi","nxquota.io/max":"1Gi"}}
EOF
bundle alone <<EOF
{"process":{"env":[]},"linux":{"devices":[
  {"path":"/dev/nvidia0","type":"c","major":$(devt /dev/null | cut -d: -f1),"minor":$(devt /dev/null | cut -d: -f2)}]},
 "annotations":{"nxquota.io/max":"3Gi"}}
EOF

daemon C
cpid=$dpid
ctl=$tmp/C.ctl

# ---- a sibling holds the pod's lock ---------------------------------------------
python3 -c '
import fcntl, os, sys, time
h = 0xcbf29ce484222325
for b in sys.argv[2].encode():
    h = ((h ^ b) * 0x100000001b3) & (2**64 - 1)
os.makedirs(sys.argv[1], mode=0o700, exist_ok=True)
fd = os.open("%s/.pod-%016x.lock" % (sys.argv[1], h), os.O_CREAT | os.O_RDWR, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
open(sys.argv[1] + ".locked", "w").close()
time.sleep(60)' "$tmp/hooks" "/$base/$kp" &
holder=$!
pids="$pids $holder"
i=0
until [ -e "$tmp/hooks.locked" ]; do
	[ $i -lt 1000 ] || fail "the pod's lock was not taken"
	sleep 0.02
	i=$((i + 1))
done
tpids=
run lock 1 ctr1 "$c1" pod "$ctl"
wait $tpids
ended lock 1 1000 $((1000 + margin)) "gave up after " \
	"waiting for the lock of pod \"/$base/$kp\", held by another container's hook" \
	"nothing was changed"
kill "$holder"
wait "$holder" 2>/dev/null
# the lock free: the same run sets the budgets, and leaves no lock file
NXQUOTA_HOOK_TIMEOUT=1 "$hook" --control "$ctl" <"$tmp/lock.state" >/dev/null \
	2>"$tmp/lock.err" || fail "with the pod's lock free: $(cat "$tmp/lock.err")"
[ -e "$tmp/hooks/ctr1" ] || fail "no record for ctr1"
! ls -a "$tmp/hooks" | grep -q '^\.pod-' || fail "a pod's lock file left: $(ls -a "$tmp/hooks")"

# ---- a stopped nxquotad --------------------------------------------------------
kill -STOP "$cpid"
why="no answer within"
tpids=
run pod 3 ctr2 "$c2" pod "$ctl"			# a pod's container: 3 s
sleep 0.3
run alone 1 ctr3 "$c3" alone "$ctl"		# beside it, 1 s
run default "" ctr4 "$c2" pod "$ctl"		# the default: 5 s
wait $tpids
ended alone 1 1000 $((1000 + margin)) "$why 1s from nxquotad at $ctl (stopped or hung?" \
	"nothing was changed"
ended pod 3 3000 $((3000 + margin)) "$why 3s from nxquotad at $ctl" "nothing was changed"
ended default 5 5000 $((5000 + margin)) "$why 5s from nxquotad at $ctl"
# poststop: what it cannot clear is named with the command, the record kept
printf '{"id":"ctr1","status":"stopped","bundle":"/gone"}' >"$tmp/post.state"
t0=$(now_ms)
NXQUOTA_HOOK_TIMEOUT=1 timeout 20 "$hook" <"$tmp/post.state" >/dev/null \
	2>"$tmp/post.err"
echo $? >"$tmp/post.rc"
echo $(($(now_ms) - t0)) >"$tmp/post.ms"
ended post 1 1000 $((1000 + margin)) \
	"clearing the container's budgets: 1 left, the record kept: /$base/$kp/ctr1 on $G0 ($why 1s" \
	"clear it with: nxquotactl --control $ctl clear /$base/$kp/ctr1 $G0)"
[ -e "$tmp/hooks/ctr1" ] || fail "poststop against a stopped nxquotad removed the record"

# connect() itself blocks where the daemon's listen backlog is full
python3 -c '
import socket, sys, threading, time
socks, full = [], 0
while len(socks) < 256 and full < 20:	# refused 20 times in a row
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.setblocking(False)
    try:
        s.connect(sys.argv[1])
        socks.append(s)
        full = 0
    except BlockingIOError:
        s.close()
        full += 1
        time.sleep(0.01)
def dial():	# until one blocking connect() waits: full
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(sys.argv[1])
    socks.append(s)
for i in range(64):
    t = threading.Thread(target=dial, daemon=True)
    t.start()
    t.join(0.3)
    if t.is_alive():
        open(sys.argv[1] + ".full", "w").close()
        break
time.sleep(60)' "$ctl" &
filler=$!
pids="$pids $filler"
i=0
until [ -e "$ctl.full" ]; do
	[ $i -lt 1000 ] || fail "C's backlog was not filled"
	sleep 0.02
	i=$((i + 1))
done
tpids=
run backlog 1 ctr3 "$c3" alone "$ctl"
wait $tpids
ended backlog 1 1500 $((1500 + margin)) \
	"nxquotad at $ctl did not answer within 1s; nothing was changed"
kill "$filler"
wait "$filler" 2>/dev/null
kill -CONT "$cpid"
# running again: poststop clears ctr1's; the pod's stays, nothing else set
NXQUOTA_HOOK_TIMEOUT=5 "$hook" <"$tmp/post.state" >/dev/null 2>"$tmp/post.err" ||
	fail "poststop ctr1, nxquotad running again: $(cat "$tmp/post.err")"
[ "$("$tool" --control "$ctl" --json status | python3 -c '
import json, sys
print(" ".join(n["path"] for n in json.load(sys.stdin)["budgets"]
               if n["max"] not in (None, 2**64 - 1) or n["min"]))')" = "/$base/$kp" ] ||
	fail "budgets on C: $("$tool" --control "$ctl" status)"
[ -z "$(ls "$tmp/hooks" 2>/dev/null)" ] || fail "records: $(ls "$tmp/hooks")"

# ---- timeouts that are no number of seconds --------------------------------------
bad() {	# bad NAME TEXT ARGS...: the hook (NXQUOTA_HOOK_TIMEOUT=$badenv) refuses
	name=$1 text=$2
	shift 2
	printf '{"id":"ctr3","status":"creating","pid":%s,"bundle":"%s"}' "$c3" \
		"$tmp/alone" >"$tmp/$name.state"
	NXQUOTA_HOOK_TIMEOUT=$badenv "$hook" --control "$ctl" "$@" \
		<"$tmp/$name.state" >/dev/null 2>"$tmp/$name.err"
	echo $? >"$tmp/$name.rc"
	echo 0 >"$tmp/$name.ms"
	ended "$name" 0 0 1 "$text"
}
badenv=5s
bad badenv 'NXQUOTA_HOOK_TIMEOUT: timeout "5s" is not a number of seconds'
badenv=
bad badopt '--timeout: timeout "0" is not a number of seconds' --timeout 0
badenv=1
bad badopt2 '--timeout: timeout "1.0001" is not a number' --timeout 1.0001

echo "hook-timeout: ended after (measured/timeout):$times"
echo "hook-timeout: ok (a pod's lock held: given up at the timeout; a stopped nxquotad: 3 hooks each at their own timeout, none blocked, poststop naming what is left; a full backlog: the watchdog; bad timeouts refused)"
