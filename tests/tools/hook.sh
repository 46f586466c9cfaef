#!/bin/sh
# nxquota-hook end to end, against nxquotad on temporary sockets, as a
# runtime runs it: an OCI state on stdin, a bundle with config.json, a
# process (sleep) in a cgroup this test creates, in a pod's cgroup as
# kubelet's cgroupfs driver lays it out (kubepods/burstable/pod<uid>).
#  - nothing asked: exit 0 without an authority, nothing written;
#  - given (nxquota-nri's CreateContainer): the GPUs given, as the
#    authority registered them, and whether a budget is asked; none
#    without an authority (exit 1, one line);
#  - createRuntime: container and pod budgets from the annotations on the
#    GPUs given (NVIDIA_VISIBLE_DEVICES and linux.devices), checked with
#    nxquotactl --json status; the record (0600 in a 0700 directory);
#    linux.cgroupsPath ignored; createRuntime again (a plugin's
#    Synchronize) changes neither; a second container of the pod with the
#    same pod budget, and one with another (refused);
#  - bad input changes nothing: garbage, negative, min > max, a GPU not
#    given, an unknown key, a pod budget outside a pod, the runtime's own
#    cgroup, a bad id; what json-c would read as something else (issue
#    32): a key or a value or an environment entry cut at a NUL, a key
#    written twice; podman's container scope taken for a pod -- each one
#    line "nxquota-hook: container ID: ...";
#  - the authority refusing the second budget: the first is undone;
#  - NVIDIA_GPU_MEMORY_LIMIT/REQUEST, an annotation winning;
#  - poststop: the container's budgets cleared, the pod's left, the
#    record removed; a removed cgroup; no record.
# The daemon's cgroup root is the cgroup2 mount, so that paths from
# /proc/PID/cgroup name the same cgroups.  /dev/nvidiaN are links to
# /dev/null and /dev/zero in a directory of the test
# (NXQUOTA_HOOK_DEV_DIR); the GPUs are registered with their numbers.
# Needs root, a cgroup2 mount and python3; says "skipped" (77) otherwise.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
hook=${NXQUOTA_HOOK:-$top/tools/nxquota-hook}
tool=${NXQUOTACTL:-$top/tools/nxquotactl}
bin=${NXQD_BIN:-$top/daemon/build/nxquotad}
fail() { echo "hook: FAIL: $*"; exit 1; }
skip() { echo "hook: skipped: $*"; exit 77; }

[ "$(id -u)" = 0 ] || skip "needs root"
[ -x "$hook" ] || fail "no $hook (make -C tools nxquota-hook)"
[ -x "$tool" ] || fail "no $tool (make -C tools)"
[ -x "$bin" ] || fail "no $bin (make -C daemon)"
command -v python3 >/dev/null || skip "no python3"
mnt=$(awk '$0 ~ / - cgroup2 / { print $5; exit }' /proc/self/mountinfo)
[ -n "$mnt" ] || skip "no cgroup2 mount"
self=$(sed -n 's/^0:://p' /proc/self/cgroup)
[ -d "$mnt$self" ] || skip "$mnt is not the root of this cgroup namespace"

tmp=$(mktemp -d /tmp/nxq-hook.XXXXXX)
base=nxq-hook.$$
cg=$mnt/$base
uid=0f3c5b2a-9d1e-4c7b-8a6f-2e4d1c0b9a87
uid2=7e5d4c3b-2a19-4087-9f6e-5d4c3b2a1908
# kubelet's cgroupfs layout: a burstable pod, a guaranteed one
kp=kubepods/burstable/pod$uid
kp2=kubepods/pod$uid2
pod=$cg/$kp
hex=f3d1c0b2a4e5968778695a4b3c2d1e0f0f1e2d3c4b5a69788796a5b4c3d2e1f0
scope=machine.slice/libpod-$hex.scope	# podman's container, crun's inner cgroup
pids=
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	[ -d "$cg" ] && find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$pod/ctr1" "$pod/ctr2" "$pod/ctr3" "$cg/$kp2/ctr4" \
	"$cg/loose" "$cg/other" "$cg/$base/$kp" "$cg/$scope/container" 2>/dev/null ||
	skip "cannot create cgroups in $mnt"

daemon() {	# daemon NAME ROOT: nxquotad on $tmp/NAME.ctl
	"$bin" -s "$tmp/$1.sock" -c "$tmp/$1.ctl" -S "$tmp/$1.state" -C "$2" \
		-G 0 2>"$tmp/$1.log" &
	pids="$pids $!"
	i=0
	until "$tool" --control "$tmp/$1.ctl" devices >/dev/null 2>&1; do
		[ $i -lt 500 ] || { cat "$tmp/$1.log"; fail "$1 did not start"; }
		sleep 0.01
		i=$((i + 1))
	done
}
devt() { printf '%d:%d' "0x$(stat -L -c %t "$1")" "0x$(stat -L -c %T "$1")"; }
G0=GPU-11111111-2222-3333-4444-555555555555
G1=GPU-aaaaaaaa-2222-3333-4444-555555555555
mkdir "$tmp/dev"
ln -s /dev/null "$tmp/dev/nvidia0"
ln -s /dev/zero "$tmp/dev/nvidia1"
d1=$(devt /dev/zero)
for a in A B; do
	daemon $a "$([ $a = A ] && echo "$mnt" || echo "$cg")"
	"$tool" --control "$tmp/$a.ctl" devices register $G0 80G "$(devt /dev/null)" &&
	"$tool" --control "$tmp/$a.ctl" devices register $G1 80G "$d1" ||
		fail "registering the GPUs on $a"
done
ctl=$tmp/A.ctl
export NXQUOTA_HOOK_STATE_DIR="$tmp/hooks" NXQUOTA_HOOK_DEV_DIR="$tmp/dev"

box() {	# box NAME: a process in cgroup $cg/NAME; its pid in $p
	sleep 600 &
	p=$!
	pids="$pids $p"
	echo "$p" >"$cg/$1/cgroup.procs" || fail "moving $p into $1"
}
bundle() { mkdir -p "$tmp/$1"; cat >"$tmp/$1/config.json"; }
hk() {	# hk ID PID BUNDLE [ARGS]: the hook at createRuntime; rc, out, err
	id=$1
	printf '{"ociVersion":"1.0.2","id":"%s","status":"creating","pid":%s,"bundle":"%s"}' \
		"$1" "$2" "$tmp/$3" >"$tmp/state"
	shift 3
	# the operator trusts process.env's GPU names here (the hook's own
	# environment, as a hooks.d JSON sets it); trust= for a case without
	NXQUOTA_HOOK_TRUST_ENV=${trust-1} "$hook" "$@" <"$tmp/state" \
		>"$tmp/out" 2>"$tmp/err"
	rc=$?
}
stop() {	# stop ID [ARGS]: the hook at poststop, podman's way (no pid)
	id=$1
	shift
	printf '{"ociVersion":"1.0.2","id":"%s","status":"stopped","bundle":"/gone"}' \
		"$id" | "$hook" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}
ok() { [ $rc = 0 ] && [ ! -s "$tmp/err" ] || fail "$1: exit $rc: $(cat "$tmp/err")"; }
budgets() {	# "DEVICE PATH MAX MIN" of each budget of daemon ${1:-A}
	"$tool" --control "$tmp/${1:-A}.ctl" --json status | python3 -c '
import json, sys
for n in json.load(sys.stdin)["budgets"]:
    mx = n["max"] if n["max"] != 2**64 - 1 else None
    if mx is not None or n["min"]:
        print(n["device"], n["path"], mx, n["min"])' | sort
}
has() {	# has DEVICE PATH MAX MIN: that budget is in place on A
	budgets | grep -qxF "$1 /$base/$2 $3 $4" ||
		fail "no budget '$1 /$base/$2 $3 $4' in: $(budgets)"
}
hasnt() {	# hasnt PATH [DEVICE]: no budget of A on /$base/PATH (on DEVICE)
	! budgets | grep -q "^${2:-[^ ]*} /$base/$1 " ||
		fail "a budget on $1 ${2:-}: $(budgets)"
}
refused() {	# refused WHAT TEXT: exit 1, one line naming the container, TEXT
	[ $rc = 1 ] || fail "$1: exit $rc, not 1: $(cat "$tmp/err")"
	[ "$(wc -l <"$tmp/err")" = 1 ] || fail "$1: not one line: $(cat "$tmp/err")"
	grep -q "^nxquota-hook: container $id: " "$tmp/err" &&
		grep -qF -- "$2" "$tmp/err" || fail "$1: $(cat "$tmp/err")"
}

# ---- nothing asked: no authority needed, nothing written ------------------
box "$kp/ctr1"
c1=$p
bundle plain <<EOF
{"process":{"env":["PATH=/bin","NVIDIA_VISIBLE_DEVICES=0"]},"annotations":{"foo":"bar"}}
EOF
export NXQUOTA_CONTROL="$tmp/none.sock"
hk ctr1 "$c1" plain
ok "no annotation, no authority"
unset NXQUOTA_CONTROL
[ ! -e "$tmp/hooks" ] || fail "no annotation: $tmp/hooks was made"
stop ctr1
ok "poststop without a state directory"

# ---- given: what nxquota-nri's CreateContainer injects, from the authority --
# config.json's shape on stdin; GPU 0 named in process.env (untrusted
# unless the operator says so: it has a node), GPU 1 by its node
given() {	# given [ARGS]: nxquota-hook given; rc, out, err
	printf '{"process":{"env":["NVIDIA_VISIBLE_DEVICES=0"]},"linux":{"devices":[{"path":"/dev/nvidia1","type":"c","major":%s,"minor":%s}]},"annotations":{"nxquota.io/max":"1Gi"}}' \
		"${d1%:*}" "${d1#*:}" | "$hook" "$@" given >"$tmp/out" 2>"$tmp/err"
	rc=$?
}
given --control "$ctl"
ok "given"
[ "$(cat "$tmp/out")" = "{\"given\":[\"$G1\"],\"budget\":true}" ] ||
	fail "given: $(cat "$tmp/out")"
NXQUOTA_HOOK_TRUST_ENV=1 given --control "$ctl"
ok "given, trusted"
[ "$(cat "$tmp/out")" = "{\"given\":[\"$G0\",\"$G1\"],\"budget\":true}" ] ||
	fail "given, trusted: $(cat "$tmp/out")"
given --control "$tmp/none.sock"
[ $rc = 1 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" = 1 ] &&
	grep -q '^nxquota-hook: .*none.sock' "$tmp/err" ||
	fail "given without an authority: exit $rc: $(cat "$tmp/out" "$tmp/err")"
# a container with no device node, no GPU named, no budget: given nothing,
# without the authority (the node's other pods start while it restarts);
# a block device or an NVIDIA_VISIBLE_DEVICES alone still needs it
for c in '{"process":{"env":["PATH=/bin"]},"linux":{"devices":[{"path":"/dev/sdz","type":"b","major":8,"minor":0}]},"annotations":{"a":"b"}}' \
	'{"process":{"env":[]}}' '{}'; do
	echo "$c" | "$hook" --control "$tmp/none.sock" given >"$tmp/out" 2>"$tmp/err" ||
		fail "given, nothing hinted, no authority: $(cat "$tmp/err")"
	[ "$(cat "$tmp/out")" = '{"given":[],"budget":false}' ] ||
		fail "given, nothing hinted: $(cat "$tmp/out")"
done
for c in '{"process":{"env":["NVIDIA_VISIBLE_DEVICES=all"]}}' \
	'{"linux":{"devices":[{"path":"/dev/x","type":"c","major":1,"minor":3}]}}' \
	'{"process":{"env":["NXQUOTA_DEVICE_A=gpu0"]}}' \
	'{"process":{"env":["CUDA_DEVICE_MEMORY_LIMIT=1g"]}}' \
	'{"annotations":{"nxquota.io/max":"1Gi"}}'; do
	echo "$c" | "$hook" --control "$tmp/none.sock" given >"$tmp/out" 2>"$tmp/err" &&
		fail "given without an authority answered for $c: $(cat "$tmp/out")"
done

# ---- createRuntime: a container of a pod -----------------------------------
# The GPUs: index 0 by NVIDIA_VISIBLE_DEVICES, GPU 1 by its node (CDI);
# cgroupsPath names another cgroup, as a tenant may write it.
bundle b1 <<EOF
{"process":{"env":["PATH=/bin","NVIDIA_VISIBLE_DEVICES=0"]},
 "linux":{"cgroupsPath":"/$base/other","devices":[
  {"path":"/dev/nvidia1","type":"c","major":${d1%:*},"minor":${d1#*:}}]},
 "annotations":{"io.kubernetes.pod.uid":"$uid",
  "nxquota.io/max":"40Gi","nxquota.io/min.1":"10G","nxquota.io/pod-max":"60Gi"}}
EOF
before=$(budgets)
hk ctr1 "$c1" b1 --control "$ctl"	# the stage from the status
ok "createRuntime ctr1"
has $G0 "$kp/ctr1" 42949672960 0
has $G1 "$kp/ctr1" 42949672960 10000000000
has $G0 "$kp" 64424509440 0
has $G1 "$kp" 64424509440 0
hasnt other
[ "$(stat -c %a "$tmp/hooks")" = 700 ] && [ "$(stat -c %a "$tmp/hooks/ctr1")" = 600 ] ||
	fail "record modes: $(ls -ld "$tmp/hooks" "$tmp/hooks/ctr1")"
python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))
assert r["id"] == "ctr1" and r["authority"] == "nxquotad", r
assert r["control"] == sys.argv[2] and r["cgroup"].endswith("/ctr1"), r
b = r["budgets"]
assert sorted((x["device"][:6], x["scope"], x["created"]) for x in b) == [
    ("GPU-11", "container", True), ("GPU-11", "pod", True),
    ("GPU-aa", "container", True), ("GPU-aa", "pod", True)], b' \
	"$tmp/hooks/ctr1" "$ctl" || fail "record: $(cat "$tmp/hooks/ctr1")"
# createRuntime again (nxquota-nri's Synchronize after a restart): nothing
# changes, the record neither (its budgets still created by the first run)
rec1=$(cat "$tmp/hooks/ctr1")
before1=$(budgets)
hk ctr1 "$c1" b1 --control "$ctl"
ok "createRuntime ctr1 again"
[ "$(budgets)" = "$before1" ] || fail "createRuntime again changed the budgets: $(budgets)"
[ "$(cat "$tmp/hooks/ctr1")" = "$rec1" ] ||
	fail "createRuntime again changed the record: $(cat "$tmp/hooks/ctr1")"

# a sibling with the same pod budget: the pod's is left as it is
box "$kp/ctr2"
c2=$p
bundle b2 <<EOF
{"process":{"env":["NVIDIA_VISIBLE_DEVICES=GPU-11111111-2222-3333-4444-555555555555"]},
 "annotations":{"io.kubernetes.cri.sandbox-id":"abc","io.kubernetes.cri.sandbox-uid":"$uid",
  "nxquota.io/max":"20Gi","nxquota.io/pod-max.0":"60Gi"}}
EOF
hk ctr2 "$c2" b2 createRuntime --control "$ctl"
ok "createRuntime ctr2"
has $G0 "$kp/ctr2" 21474836480 0
hasnt "$kp/ctr2" $G1
grep -A4 '"scope":"pod"' "$tmp/hooks/ctr2" | grep -q '"created":false' ||
	fail "ctr2's record: $(cat "$tmp/hooks/ctr2")"

# ---- bad input changes nothing -------------------------------------------------
box "$kp/ctr3"
c3=$p
before=$(budgets)
records=$(ls "$tmp/hooks")
unchanged() {
	[ "$(budgets)" = "$before" ] || fail "$1 changed the budgets: $(budgets)"
	[ "$(ls "$tmp/hooks")" = "$records" ] || fail "$1 changed the records"
}
bad() {	# bad WHAT ANNOTATIONS TEXT: ctr3 with these annotations is refused
	bundle bad <<EOF
{"process":{"env":["NVIDIA_VISIBLE_DEVICES=0"]},"annotations":{$2}}
EOF
	hk ctr3 "$c3" bad createRuntime --control "$ctl"
	refused "$1" "$3"
	unchanged "$1"
}
pk="\"io.kubernetes.pod.uid\":\"$uid\""
bad "garbage" '"nxquota.io/max":"40Gx"' 'nxquota.io/max="40Gx" is not a Kubernetes quantity'
bad "negative" '"nxquota.io/min":"-1Gi"' 'nxquota.io/min="-1Gi" is negative'
bad "min > max" '"nxquota.io/max":"1Gi","nxquota.io/min":"2Gi"' 'is above max 1073741824'
bad "a GPU not given" '"nxquota.io/max.1":"1Gi"' "$G1 was not given to the container"
bad "a GPU not given, by UUID" '"nxquota.io/max.aaaaaaaa-2222-3333-4444-555555555555":"1Gi"' \
	"was not given"
bad "an unknown key" '"nxquota.io/maxx":"1Gi"' 'unknown annotation "nxquota.io/maxx"'
# untrusted process.env: naming GPU 0 there, without its node, gives none
trust=
bad "a GPU named only in process.env" '"nxquota.io/max":"1Gi"' 'given no GPU'
unset trust

bad "pod budget outside a pod" '"nxquota.io/pod-max":"1Gi"' 'is not in a pod'
bad "another pod budget" "$pk,\"nxquota.io/pod-max\":\"50Gi\"" \
	"the pod's budget is already max=64424509440 min=0"
bad "a value past 2^64" '"nxquota.io/max":"1Gi","nxquota.io/pod-min":"17Ei"' \
	'above 2^64-1 bytes'
# what json-c would read as something else (issue 32): a key cut at a
# NUL overrode nxquota.io/max (1Gi became 90Gi), a value cut at one set 70G
bad "a key cut at a NUL" '"nxquota.io/max":"1Gi","nxquota.io/max\u0000":"90Gi"' \
	'at annotations: the key "nxquota.io/max\x00"... holds a NUL byte'
bad "a value cut at a NUL" '"nxquota.io/min":"70G\u0000x"' \
	'at annotations."nxquota.io/min": a string holds a NUL byte'
bad "a key written twice" '"nxquota.io/max":"1Gi","nxquota.io/max":"90Gi"' \
	'the key "nxquota.io/max" is written twice'
bundle envnul <<EOF
{"process":{"env":["NVIDIA_VISIBLE_DEVICES=0","NVIDIA_GPU_MEMORY_REQUEST=70G\u0000x"]}}
EOF
hk ctr3 "$c3" envnul --control "$ctl"
refused "an environment value cut at a NUL" 'at process.env[1]: a string holds a NUL byte'
unchanged "an environment value cut at a NUL"
# podman's container scope is no pod, whatever the annotations say (issue
# 32: "libpod-<64 hex>" passed for a pod without a pod-uid annotation)
box "$scope/container"
bundle podman <<EOF
{"process":{"env":["NVIDIA_VISIBLE_DEVICES=0"]},"annotations":{
 "io.kubernetes.cri-o.SandboxID":"x","nxquota.io/pod-max":"1Gi"}}
EOF
hk ctr5 "$p" podman --control "$ctl"
refused "podman's container scope taken for a pod" \
	"parent cgroup \"/$base/$scope\" is not a pod's"
unchanged "podman's container scope taken for a pod"
# the runtime's own cgroup (the pid of this shell, where the hook runs)
bundle own <<EOF
{"process":{"env":["NVIDIA_VISIBLE_DEVICES=0"]},"annotations":{"nxquota.io/max":"1Gi"}}
EOF
hk ctr3 $$ own --control "$ctl"
refused "the runtime's cgroup" "cgroup"
unchanged "the runtime's cgroup"
# a standalone container claiming a pod: its parent is nobody's pod
box loose
bundle loose <<EOF
{"process":{"env":["NVIDIA_VISIBLE_DEVICES=0"]},"annotations":{$pk,
 "io.kubernetes.cri-o.SandboxID":"x","nxquota.io/pod-max":"1Gi"}}
EOF
hk loose "$p" loose --control "$ctl"
refused "a claimed pod" "parent cgroup \"/$base\" is not a pod's"
unchanged "a claimed pod"
# what is read is capped: the state at 1 MiB, config.json at 16 MiB, and
# config.json is the bundle's own file, not a link
python3 -c 'import json; print(json.dumps({"id": "big", "status": "creating",
    "pid": 1, "annotations": {"x": "a" * (1 << 20)}}))' >"$tmp/state"
id=big
"$hook" --control "$ctl" <"$tmp/state" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc = 1 ] && grep -q "^nxquota-hook: reading the state on stdin: larger than 1 MiB$" \
	"$tmp/err" || fail "a large state: $rc $(cat "$tmp/err")"
mkdir "$tmp/big"
python3 -c 'import json, sys; json.dump({"annotations": {"nxquota.io/max": "1Gi",
    "pad": "a" * (16 << 20)}}, open(sys.argv[1], "w"))' "$tmp/big/config.json"
hk ctr3 "$c3" big --control "$ctl"
refused "a large config.json" "config.json\": larger than 16 MiB"
mkdir "$tmp/link"
ln -s "$tmp/own/config.json" "$tmp/link/config.json"
hk ctr3 "$c3" link --control "$ctl"
refused "a linked config.json" "config.json\": Too many levels of symbolic links"
unchanged "what is read is capped"
hk ../x "$c3" own --control "$ctl"
[ $rc = 1 ] && grep -q 'container id "../x" is not a safe file name' "$tmp/err" ||
	fail "bad id: $rc $(cat "$tmp/err")"
unchanged "a bad id"

# ---- the record cannot be written: what was set is undone ----------------
mkdir -p "$tmp/hooks/ctr3/in-the-way"
records=$(ls "$tmp/hooks")
bundle rec <<EOF
{"process":{"env":["NVIDIA_VISIBLE_DEVICES=0"]},"annotations":{"nxquota.io/max":"3Gi"}}
EOF
hk ctr3 "$c3" rec --control "$ctl"
refused "the record in the way" "writing the record: Is a directory; the budget it set was undone"
unchanged "the record in the way"
[ ! -e "$tmp/hooks/.ctr3.tmp" ] || fail "the temporary record was left"
rm -r "$tmp/hooks/ctr3"
records=$(ls "$tmp/hooks")

# ---- the authority refuses the second budget: the first is undone --------
# Daemon B's root is $cg: the pod's path names $cg/$base/$kp there (a
# cgroup made for this), the container's names nothing.
bundle undo <<EOF
{"process":{"env":["NVIDIA_VISIBLE_DEVICES=0"]},"annotations":{$pk,
 "nxquota.io/pod-max":"8Gi","nxquota.io/max":"1Gi"}}
EOF
hk ctr3 "$c3" undo --control "$tmp/B.ctl"
refused "refused by the authority" "the authority refused max nxquota.io/max=\"1Gi\" for /$base/$kp/ctr3 on $G0: ENOENT"
grep -qF "no such cgroup" "$tmp/err" || fail "the authority's message: $(cat "$tmp/err")"
[ -z "$(budgets B)" ] || fail "not undone on B: $(budgets B): $(cat "$tmp/err")"
# cleared, not set to "max=max": B keeps no budget at all
! grep -q "^budget " "$tmp/B.state/state" ||
	fail "B's state after the undo: $(cat "$tmp/B.state/state")"
unchanged "refused by the authority"

# guarantees past the pod's: refused by an authority that checks them
box "$kp2/ctr4"
c4=$p
bundle past <<EOF
{"process":{"env":["NVIDIA_VISIBLE_DEVICES=0"]},"annotations":{
 "io.kubernetes.pod.uid":"$uid2","nxquota.io/pod-min":"1Gi","nxquota.io/min":"2Gi"}}
EOF
hk ctr4 "$c4" past --control "$ctl"
if [ $rc = 0 ]; then
	echo "hook: note: this nxquotad accepts a guarantee past its parent's"
	stop ctr4
	ok "poststop ctr4"
else
	refused "a guarantee past the pod's" "the authority refused min nxquota.io/min="
	budgets | grep -q "$kp2 " && fail "the pod's guarantee was not undone: $(budgets)"
	[ ! -e "$tmp/hooks/ctr4" ] || fail "a record for ctr4"
fi

# ---- NVIDIA_GPU_MEMORY_*, an annotation winning --------------------------------
bundle env <<EOF
{"process":{"env":["NVIDIA_VISIBLE_DEVICES=0","NVIDIA_GPU_MEMORY_LIMIT=8Gi",
 "NVIDIA_GPU_MEMORY_REQUEST=1Gi"]},"annotations":{"nxquota.io/max":"4Gi"}}
EOF
hk ctr3 "$c3" env createRuntime --control "$ctl"
ok "createRuntime ctr3"
has $G0 "$kp/ctr3" 4294967296 1073741824
hasnt "$kp/ctr3" $G1

# ---- poststop ----------------------------------------------------------------------
stop ctr1			# the stage from the status, the daemon from the record
ok "poststop ctr1"
hasnt "$kp/ctr1"
has $G0 "$kp" 64424509440 0	# the pod's stays
has $G0 "$kp/ctr2" 21474836480 0
[ ! -e "$tmp/hooks/ctr1" ] || fail "ctr1's record is still there"
stop ctr1 poststop
ok "poststop ctr1 again (no record)"
# the container's cgroup already removed
kill "$c2"
wait "$c2" 2>/dev/null
rmdir "$pod/ctr2" || fail "removing ctr2's cgroup"
stop ctr2 poststop
ok "poststop ctr2 (cgroup removed)"
[ ! -e "$tmp/hooks/ctr2" ] || fail "ctr2's record is still there"
stop ctr3 poststop
ok "poststop ctr3"
hasnt "$kp/ctr3"

echo "hook: ok (nothing asked; given; container and pod budgets from annotations and NVIDIA_GPU_MEMORY_*; the record; 20 refusals that change nothing; undo after a refusal and after a failed record; poststop)"
