# tests/vm/containers/lib.sh - helpers for the container scenarios (VM side,
# busybox ash).  A scenario is a shell script that sources this file:
#
#   . /containers/lib.sh
#
# and exits 0 (pass), 1 (fail: the first "FAIL: reason" line it prints is
# the reason) or 77 (skip: "SKIP: reason"), like the C scenarios.
#
# What the VM has (tests/vm/containers/init.sh sets it up):
#   $NXQ_AUTHORITY  module (/dev/nxquota) or daemon (nxquotad: its client
#                   socket in /run/nxquota/client, its control socket
#                   /run/nxquota/control.sock)
#   /ctr/rootfs     a container root: busybox (static), the loader and libc
#                   (for dynamically linked programs), /bin/nxq-probe,
#                   /bin/nxq-cuda-app, /bin/nxq-libholder, the fake
#                   libcuda.so.1, /x (the mount point of $XDIR)
#   crun, podman, conmon in /usr/bin; /etc/containers configured for
#   cgroupfs, vfs, no network, crun; the test hook
#   /usr/libexec/nxq/nxq-test-hook (records what it sees under $HOOKLOG)
#   and its oci-hooks JSON in /etc/containers/oci/hooks.d (annotations
#   matching ^nxquota\.io/); nxquota-hook ($NXQ_HOOK), nxquotactl
#   ($NXQCTL), the shim ($SHIM) and the packaged oci-hooks file
#   (/usr/share/nxquota/oci-hooks.json) when they were built.

HOOK=/usr/libexec/nxq/nxq-test-hook
NXQ_HOOK=/usr/bin/nxquota-hook
NXQCTL=/tools/nxquotactl
HOOKLOG=${NXQ_HOOK_LOG:-/run/nxq-hook}
CTR_ROOTFS=/ctr/rootfs
CG=/sys/fs/cgroup

fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
info() { echo "info: $*"; }

# Centiseconds since boot, and "N.Ns" since a mark.
now_cs() {
	read -r up _ < /proc/uptime
	echo $(( ${up%.*} * 100 + 1${up#*.} - 100 ))
}
since() {	# mark_cs
	local t
	t=$(( $(now_cs) - $1 ))
	echo "$((t / 100)).$((t % 100 / 10))s"
}

# A fresh hex id of N (default 64) characters, as runtimes make them.
hexid() {
	head -c 64 /dev/urandom | od -An -tx1 | tr -d ' \n' | cut -c1-"${1:-64}"
}

# A pod uid, 8-4-4-4-12.
poduid() {
	local h
	h=$(hexid 32)
	echo "$(echo "$h" | cut -c1-8)-$(echo "$h" | cut -c9-12)-$(echo "$h" | cut -c13-16)-$(echo "$h" | cut -c17-20)-$(echo "$h" | cut -c21-32)"
}

# ---- what the test hook recorded ----------------------------------------

# hook_file ID STAGE [TAG]: the record's path (it may not exist).
hook_file() { echo "$HOOKLOG/$1.$2${3:+.$3}"; }

# hook_get FILE KEY: the value of KEY= in a record (first line; builtins
# only: every fork and exec costs under TCG).
hook_get() {
	local l
	while IFS= read -r l; do
		case "$l" in "$2="*) echo "${l#"$2="}"; return 0 ;; esac
	done < "$1"
}

# hook_env FILE NAME: the variable NAME of the hook's environment.
hook_env() { hook_get "$1" "env:$2"; }

# hook_ann FILE KEY: the annotation KEY in the recorded state ("" if none).
hook_ann() {
	local k
	k=$(printf '%s' "$2" | sed 's/[.]/\\./g')
	hook_get "$1" state | sed -n "s|.*\"annotations\" *: *{[^}]*\"$k\" *: *\"\([^\"]*\)\".*|\1|p"
}

# hook_anns FILE: every annotation of the recorded state, "k=v" a line.
hook_anns() {
	hook_get "$1" state | sed -n 's/.*"annotations" *: *{\([^}]*\)}.*/\1/p' |
		sed 's/","/"\n"/g' | sed 's/^"//; s/"$//; s/" *: *"/=/'
}

# expect_hook ID STAGE [TAG]: sets $f to the record, or FAILs.
expect_hook() {
	f=$(hook_file "$@")
	[ -f "$f" ] || fail "$2 hook${3:+ ($3)} did not run for $1 (no $f; records: $(ls "$HOOKLOG" 2>/dev/null | tr '\n' ' '))"
}

# show_hook FILE: its interesting lines, for the log (one process).
show_hook() {
	sed -n -e 's/^\(stage\|tag\|pid\|status\|cgroup\|self_cgroup\|parent_cgroup\|config_cgroups_path\|config_cgroup\|ns_[a-z]*\|uid\|parent\|argv\)=/    \1=/p' \
		-e 's/^env:/    env: /p' \
		-e 's/^state=.*"annotations" *: *{\([^}]*\)}.*/    annotations: \1/p' "$1"
}

# ---- cgroups ------------------------------------------------------------

# The cgroup line of a record, "0::/path" -> "/path".
cg_of() { echo "$1" | sed -n 's/^0:://p'; }

# cg_rmtree PATH: remove cgroup PATH and its parents up to the top level,
# as the container stack that made them would (best effort, quiet).
cg_rmtree() {
	local p="$1"
	while [ -n "$p" ] && [ "$p" != / ]; do
		rmdir "$CG$p" 2>/dev/null || true
		p=$(dirname "$p")
	done
}

# ---- crun bundles -------------------------------------------------------

# mk_bundle DIR OPTIONS... -- ARGS...: a bundle DIR/config.json for crun,
# root $CTR_ROOTFS read-only, namespaces as containerd/podman make them on
# cgroup v2 (pid, ipc, uts, mount, network, cgroup), no terminal.
#   -c PATH        linux.cgroupsPath
#   -a KEY=VALUE   an annotation (repeatable)
#   -h STAGE:ARGS  a hook running $HOOK with argv "nxq-test-hook ARGS..."
#                  (ARGS separated by ","; repeatable), e.g.
#                  -h createRuntime:createRuntime,crun
#   -e NAME=VALUE  process environment (repeatable)
#   -d PATH        a device node of the host, same path, allowed rw
#   -b SRC:DST     a bind mount (rw)
#   -B SRC:DST     a bind mount, read-only
#   -u UID         process uid (and gid)
#   -n             nxquota-hook ($NXQ_HOOK) at createRuntime and poststop,
#                  argv "nxquota-hook STAGE", env PATH only (as the CDI spec
#                  of nxquotactl cdi generate gives it)
#   -R STAGE:JSON  a hook given as its JSON object (in order with -h, -n)
mk_bundle() {
	local dir="$1" cgp='' anns='' hooks_cr='' hooks_ps='' hooks_cc='' hooks_sc='' hooks_pre=''
	local env devs='' devrules='' mnts='' uid=0 st args h maj min argv='' a
	shift
	env='"PATH=/usr/sbin:/usr/bin:/sbin:/bin"'
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		case "$1" in
		-n)	# no value: the real hook at both stages
			h="{\"path\": \"$NXQ_HOOK\", \"args\": [\"nxquota-hook\", \"createRuntime\"], \"env\": [\"PATH=/usr/sbin:/usr/bin:/sbin:/bin\"], \"timeout\": 30}"
			hooks_cr="$hooks_cr${hooks_cr:+,}$h"
			h="{\"path\": \"$NXQ_HOOK\", \"args\": [\"nxquota-hook\", \"poststop\"], \"env\": [\"PATH=/usr/sbin:/usr/bin:/sbin:/bin\"], \"timeout\": 30}"
			hooks_ps="$hooks_ps${hooks_ps:+,}$h"
			shift
			continue ;;
		-c) cgp=$2 ;;
		-a) anns="$anns${anns:+,}\"${2%%=*}\": \"${2#*=}\"" ;;
		-h|-R)
			st=${2%%:*}
			if [ "$1" = -R ]; then
				h=${2#*:}
			else
				args=$(echo "${2#*:}" | sed 's/,/", "/g')
				h="{\"path\": \"$HOOK\", \"args\": [\"nxq-test-hook\", \"$args\"], \"env\": [\"NXQ_HOOK_LOG=$HOOKLOG\"], \"timeout\": 30}"
			fi
			case "$st" in
			createRuntime) hooks_cr="$hooks_cr${hooks_cr:+,}$h" ;;
			createContainer) hooks_cc="$hooks_cc${hooks_cc:+,}$h" ;;
			startContainer) hooks_sc="$hooks_sc${hooks_sc:+,}$h" ;;
			prestart) hooks_pre="$hooks_pre${hooks_pre:+,}$h" ;;
			poststop) hooks_ps="$hooks_ps${hooks_ps:+,}$h" ;;
			*) fail "mk_bundle: unknown hook stage $st" ;;
			esac ;;
		-e) env="$env, \"$2\"" ;;
		-d)
			maj=$(stat -c '%t' "$2"); min=$(stat -c '%T' "$2")
			maj=$((0x$maj)); min=$((0x$min))
			devs="$devs${devs:+,}{\"path\": \"$2\", \"type\": \"c\", \"major\": $maj, \"minor\": $min, \"fileMode\": 438, \"uid\": 0, \"gid\": 0}"
			devrules="$devrules, {\"allow\": true, \"type\": \"c\", \"major\": $maj, \"minor\": $min, \"access\": \"rw\"}" ;;
		-b) mnts="$mnts, {\"destination\": \"${2#*:}\", \"type\": \"bind\", \"source\": \"${2%%:*}\", \"options\": [\"rbind\", \"rw\"]}" ;;
		-B) mnts="$mnts, {\"destination\": \"${2#*:}\", \"type\": \"bind\", \"source\": \"${2%%:*}\", \"options\": [\"rbind\", \"ro\", \"nosuid\", \"nodev\"]}" ;;
		-u) uid=$2 ;;
		*) fail "mk_bundle: unknown option $1" ;;
		esac
		shift 2
	done
	[ "${1:-}" = -- ] && shift
	[ $# -gt 0 ] || set -- /bin/true
	for a in "$@"; do
		a=$(printf '%s' "$a" | sed 's/\\/\\\\/g; s/"/\\"/g')
		argv="$argv${argv:+, }\"$a\""
	done
	mkdir -p "$dir"
	cat > "$dir/config.json" <<-JSON
	{
	  "ociVersion": "1.0.2",
	  "process": {
	    "terminal": false,
	    "user": {"uid": $uid, "gid": $uid},
	    "args": [$argv],
	    "env": [$env],
	    "cwd": "/",
	    "capabilities": {
	      "bounding": ["CAP_KILL", "CAP_NET_BIND_SERVICE", "CAP_AUDIT_WRITE"],
	      "effective": ["CAP_KILL", "CAP_NET_BIND_SERVICE", "CAP_AUDIT_WRITE"],
	      "permitted": ["CAP_KILL", "CAP_NET_BIND_SERVICE", "CAP_AUDIT_WRITE"]
	    },
	    "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
	    "noNewPrivileges": true
	  },
	  "root": {"path": "$CTR_ROOTFS", "readonly": true},
	  "hostname": "nxq-ctr",
	  "mounts": [
	    {"destination": "/proc", "type": "proc", "source": "proc"},
	    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
	    {"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
	    {"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
	    {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
	    {"destination": "/sys/fs/cgroup", "type": "cgroup2", "source": "cgroup", "options": ["nosuid", "noexec", "nodev", "relatime", "ro"]},
	    {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=1777"]},
	    {"destination": "/run", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=755"]}$mnts
	  ],
	  "annotations": {$anns},
	  "hooks": {
	    "prestart": [$hooks_pre],
	    "createRuntime": [$hooks_cr],
	    "createContainer": [$hooks_cc],
	    "startContainer": [$hooks_sc],
	    "poststop": [$hooks_ps]
	  },
	  "linux": {
	    "cgroupsPath": "$cgp",
	    "devices": [$devs],
	    "resources": {"devices": [{"allow": false, "access": "rwm"}$devrules]},
	    "namespaces": [
	      {"type": "pid"}, {"type": "network"}, {"type": "ipc"},
	      {"type": "uts"}, {"type": "mount"}, {"type": "cgroup"}
	    ],
	    "maskedPaths": ["/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"],
	    "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]
	  }
	}
	JSON
}

# crun_run ID BUNDLE [OUT]: crun run it in the foreground (stdin /dev/null),
# its output to OUT (default /tmp/ID.out); prints the time it took.
crun_run() {
	local t0 rc
	t0=$(now_cs)
	# appended: run.oci.hooks.stderr=/proc/self/fd/2 (must_refuse) opens
	# it again, with O_APPEND; crun's own writes must not overwrite those
	: > "${3:-/tmp/$1.out}"
	crun run --bundle "$2" "$1" < /dev/null >> "${3:-/tmp/$1.out}" 2>&1
	rc=$?
	info "crun run $1: exit $rc in $(since "$t0")"
	return $rc
}

# ---- podman -------------------------------------------------------------

# pm ARGS...: podman, timed, its output in /tmp/podman.out (shown).
pm() {
	local t0 rc
	t0=$(now_cs)
	podman "$@" < /dev/null > /tmp/podman.out 2>&1
	rc=$?
	info "podman $1: exit $rc in $(since "$t0")"
	sed 's/^/    | /' /tmp/podman.out
	return $rc
}

# pm_run ARGS...: podman run --rm --network none ... --rootfs $CTR_ROOTFS
# ARGS (the command and its arguments last), waiting afterwards for the
# container's conmon and "podman container cleanup" to be gone (they run in
# the background and would be left behind otherwise).
pm_run() {
	local rc
	pm run --rm --network none "$@"
	rc=$?
	pm_settle
	return $rc
}

# pm_settle: wait (20 s) until no conmon or podman process is left.
pm_settle() {
	local i=0 busy p c
	while [ $i -lt 200 ]; do
		busy=
		for p in /proc/[0-9]*; do
			read -r c 2>/dev/null < "$p/comm" || continue
			case "$c" in conmon|podman) busy="$busy ${p#/proc/}($c)" ;; esac
		done
		[ -z "$busy" ] && return 0
		sleep 0.1
		i=$((i + 1))
	done
	info "still running after 20 s:$busy"
	return 1
}

# The cgroups podman's cgroupfs manager leaves (it removes the containers'
# own): /libpod_parent and its conmon and pod children.
pm_cg_clean() {
	local c
	for c in $(find "$CG/libpod_parent" -depth -type d 2>/dev/null); do
		rmdir "$c" 2>/dev/null
	done
}

# ---- podman (continued) ---------------------------------------------------

# cidfile: a fresh path for podman's --cidfile; cid FILE: the id in it.
ncid=0
cidfile() {
	ncid=$((ncid + 1))
	rm -f "/tmp/cid.$$.$ncid"
	echo "/tmp/cid.$$.$ncid"
}
cid() { cat "$1" 2>/dev/null; }

# ctr_rootfs_copy DIR: a private copy of the container rootfs (for a
# scenario that adds programs or files to its container: cp -a them into
# DIR afterwards, with the libraries they need; /ctr/rootfs already has the
# loader and libc).
ctr_rootfs_copy() {
	rm -rf "$1"
	mkdir -p "$(dirname "$1")"
	cp -a "$CTR_ROOTFS" "$1"
}

# ---- crun, detached --------------------------------------------------------

# crun_bg ID BUNDLE [OUT]: crun run --detach (create + start, as a
# container engine does), the container's stdout and stderr to OUT (default
# /tmp/ID.out), timed.  crun's own error, if any, is in OUT too.
crun_bg() {
	local t0 rc
	t0=$(now_cs)
	crun run --detach --bundle "$2" "$1" < /dev/null > "${3:-/tmp/$1.out}" 2>&1
	rc=$?
	info "crun run --detach $1: exit $rc in $(since "$t0")"
	return $rc
}

# crun_do ARGS...: crun ARGS, timed, its output in /tmp/crun.out (shown).
crun_do() {
	local t0 rc
	t0=$(now_cs)
	crun "$@" < /dev/null > /tmp/crun.out 2>&1
	rc=$?
	info "crun $1: exit $rc in $(since "$t0")"
	sed 's/^/    | /' /tmp/crun.out
	return $rc
}

# crun_stopped ID [SECONDS]: wait (default 20 s) until crun says the
# container is stopped; 1 if it never is.
crun_stopped() {
	local i=0
	while [ $i -lt $((${2:-20} * 5)) ]; do
		crun state "$1" 2>/dev/null | grep -q '"status" *: *"stopped"' && return 0
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}

# wait_line FILE TEXT [SECONDS]: wait (default 20 s) until FILE has a line
# containing TEXT; 1 if it never does.
wait_line() {
	local i=0
	while [ $i -lt $((${3:-20} * 10)) ]; do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
		i=$((i + 1))
	done
	return 1
}

# ---- nxquota: the device, the hook, the ledger -----------------------------

# The fake CUDA driver's device 0 (tests/fakecuda: UUID bytes f0..f9,f0..f4,
# then f0 + ordinal), as the shim and libnxquota name it.
KEY=GPU-f0f1f2f3-f4f5-f6f7-f8f9-f0f1f2f3f4f0
# A second device, registered by scenarios that need one the container was
# not given (the fake driver has only one).
KEY2=GPU-a0a1a2a3-a4a5-a6a7-a8a9-aaabacadaeaf
MiB=1048576
# The shim as the VM's root has it (the CDI spec's --shim, the crun
# bundles' read-only bind mount) and where containers see it.
SHIM=/usr/lib/nxquota/libnxquota-preload.so
# The preload list the CDI spec mounts at a container's /etc/ld.so.preload
# (and /etc/nxquota/require), as make install writes it (preload/Makefile):
# it names $SHIM, where containers see the shim.
PRELOAD_LIST=/usr/lib/nxquota/ld.so.preload
# The scenarios' exchange directory, /x in the containers.
XDIR=/run/nxq-x

# need_nxq: skip unless nxquotactl, nxquota-hook, the shim and the
# container's programs are in the VM (run.sh adds them when built).
need_nxq() {
	[ -x $NXQCTL ] || skip "no $NXQCTL (make -C tools static)"
	[ -x $NXQ_HOOK ] || skip "no $NXQ_HOOK (make -C tools static; needs libjson-c-dev)"
	[ -s $SHIM ] || skip "no $SHIM (make -C preload)"
	[ -s $PRELOAD_LIST ] || echo $SHIM > $PRELOAD_LIST
	[ -x $CTR_ROOTFS/bin/nxq-cuda-app ] || skip "no nxq-cuda-app in the container rootfs"
	[ -x $CTR_ROOTFS/bin/nxq-libholder ] || skip "no nxq-libholder in the container rootfs (lib/libnxquota.a)"
	[ -s $CTR_ROOTFS/usr/lib/x86_64-linux-gnu/libcuda.so.1 ] || skip "no fake libcuda.so.1 in the container rootfs (make -C tests/fakecuda)"
}

# ctl ARGS...: nxquotactl (the module's netlink family, else nxquotad's
# control socket), its output in /tmp/ctl.out; FAILs when it fails.
ctl() {
	$NXQCTL "$@" > /tmp/ctl.out 2>&1 ||
		fail "nxquotactl $*: $(cat /tmp/ctl.out)"
}

# dev_register [KEY [SIZE [MAJ:MIN]]]: register a device (default $KEY,
# 1G, no dev_t); dev_unregister [KEY].
dev_register() { ctl devices register "${1:-$KEY}" "${2:-1G}" ${3:+"$3"}; }
dev_unregister() { ctl devices unregister "${1:-$KEY}"; }

# x_fresh: an empty $XDIR (bind-mounted as /x into containers).
x_fresh() { rm -rf $XDIR; mkdir -p $XDIR; }

# ctr_gpu: mk_bundle options that give a crun container what the CDI spec
# gives it: the authority (module: /dev/nxquota; daemon: its client
# socket's directory, read-only, and NXQUOTA_SOCKET), the shim read-only at
# $SHIM with LD_PRELOAD, each allocation charged exactly
# (NXQ_PRELOAD_BATCH=0: no credit kept ahead), and $XDIR as /x.
# Word-split on purpose: mk_bundle DIR $(ctr_gpu) ...
ctr_gpu() {
	if [ "$NXQ_AUTHORITY" = daemon ]; then
		echo "-B /run/nxquota/client:/run/nxquota/client -e NXQUOTA_SOCKET=/run/nxquota/client/nxquota.sock"
	else
		echo "-d /dev/nxquota"
	fi
	echo "-B $SHIM:$SHIM -e LD_PRELOAD=$SHIM -e NXQ_PRELOAD_BATCH=0 -b $XDIR:/x"
}

# led: read the ledger (nxquotactl --json status) into /tmp/led.lines, one
# JSON object a line (budgets and holders have no nested objects but a
# holder's "ticket").
led() {
	$NXQCTL --json status > /tmp/led.json 2> /tmp/led.err ||
		fail "nxquotactl --json status: $(cat /tmp/led.err)"
	tr '{' '\n' < /tmp/led.json > /tmp/led.lines
}

# led_node PATH FIELD [KEY]: FIELD of PATH's node on KEY (default $KEY) in
# the last led; empty when the ledger has no such node.
led_node() {
	awk -v p="\"device\":\"${3:-$KEY}\",\"path\":\"$1\"," -v f="\"$2\":" '
		index($0, p) == 1 { i = index($0, f); if (i) { s = substr($0, i + length(f)); sub(/[],}].*/, "", s); print s } }' /tmp/led.lines
}

# led_paths [KEY]: the paths of KEY's nodes, one a line.
led_paths() {
	awk -v p="\"device\":\"${1:-$KEY}\",\"path\":\"" '
		index($0, p) == 1 { s = substr($0, length(p) + 1); sub(/".*/, "", s); print s }' /tmp/led.lines
}

# led_holders PATH [KEY]: the charge of each holder of PATH's node, one a line.
led_holders() {
	awk -v p="\"device\":\"${2:-$KEY}\",\"cgroup_id\":" -v q="\"path\":\"$1\",\"pid\":" '
		index($0, p) == 1 && index($0, q) { i = index($0, "\"charge\":"); s = substr($0, i + 9); sub(/,.*/, "", s); print s }' /tmp/led.lines
}

# led_nholders [KEY]: how many holders KEY has in all.
led_nholders() {
	grep -c "^\"device\":\"${1:-$KEY}\",\"cgroup_id\":" /tmp/led.lines
}

# led_dev FIELD [KEY]: a device's field ("used", "holders", "denials"...).
led_dev() {
	awk -v p="\"key\":\"${2:-$KEY}\"," -v f="\"$1\":" '
		index($0, p) == 1 { i = index($0, f); if (i) { s = substr($0, i + length(f)); sub(/[],}].*/, "", s); print s } }' /tmp/led.lines
}

# led_show [KEY]: the nodes and holders, for the log.
led_show() {
	awk -v p="\"device\":\"${1:-$KEY}\"," '
		index($0, p) == 1 {
			s = $0; sub(/^"device":"[^"]*",/, "", s)
			gsub(/"(cgroup_id|parent_id|overcommitted|headroom|max_hits|tickets|bytes_asked|bytes_released|kills|kill_on_ignore|holders_max|waiters_max|priority_max|wait_max_ms|reclaimable|priority|claimed|effective_max|effective_min|borrowed)":[^,]*,?/, "", s)
			print "    ledger: " s }' /tmp/led.lines
}

# expect_node PATH FIELD VALUE [KEY]: FAIL unless the node's field is VALUE
# (in the last led).
expect_node() {
	local got
	got=$(led_node "$1" "$2" "${4:-$KEY}")
	[ "$got" = "$3" ] || { led_show "${4:-$KEY}"; fail "ledger: $1 ${4:-$KEY} $2 is '${got:-no node}', expected $3"; }
}

# rec_file ID: nxquota-hook's record of a container.
rec_file() { echo "/run/nxquota/hooks/$1"; }

# hook_msg FILE ID: the runtime's output FILE has nxquota-hook's one
# line for container ID; sets $msg to it.
hook_msg() {
	msg=$(grep -m1 "nxquota-hook: container $2: " "$1")
	[ -n "$msg" ]
}

# led_budgets: the budgets and holders of the last led, as one string (to
# compare a ledger before and after).
led_budgets() {
	sed -n 's/.*"budgets":\(\[.*\]\),"holders":\(\[[^]]*\]\).*/\1 \2/p' /tmp/led.json
}

# must_refuse NAME WANT CGPARENT MK_BUNDLE_OPTIONS...: a bundle with
# nxquota-hook (-n) and the options, cgroupsPath CGPARENT/<id>, running
# /bin/true: `crun run` must fail, crun's stderr must say that the hook
# failed, and carry the hook's one line ("nxquota-hook: container <id>:
# ...", mentioning WANT); crun must have removed the container and its
# cgroup, no record may be left, and the ledger's budgets and holders must
# be $before (led_budgets, taken by the caller).
# crun (1.8.1, and to this day) gives hooks /dev/null as stdout and stderr
# unless the container has the annotation run.oci.hooks.stderr=FILE, which
# crun opens itself: the bundle gets run.oci.hooks.stderr=/proc/self/fd/2 (crun's
# own stderr) unless $HOOKS_STDERR is "off", when the hook's line must NOT
# be there (what an operator sees by default).
must_refuse() {
	local name="$1" want="$2" cgp="$3" id after
	shift 3
	id=$(hexid)
	echo "--- $name"
	if [ "${HOOKS_STDERR:-on}" = off ]; then
		mk_bundle /run/bundles/$id -c "$cgp/$id" -n "$@" -- /bin/true
	else
		mk_bundle /run/bundles/$id -c "$cgp/$id" -n -a run.oci.hooks.stderr=/proc/self/fd/2 "$@" -- /bin/true
	fi
	if crun_run $id /run/bundles/$id /tmp/bad.out; then
		cat /tmp/bad.out
		fail "$name: crun run succeeded"
	fi
	sed 's/^/    | /' /tmp/bad.out
	grep -q "error executing hook \`$NXQ_HOOK\` (exit code: 1)" /tmp/bad.out ||
		fail "$name: crun did not say that $NXQ_HOOK failed with exit code 1"
	if [ "${HOOKS_STDERR:-on}" = off ]; then
		! hook_msg /tmp/bad.out $id ||
			fail "$name: without run.oci.hooks.stderr, crun passed on the hook's stderr; this test's assumption is wrong"
	else
		hook_msg /tmp/bad.out $id || fail "$name: crun's output has no 'nxquota-hook: container $id: ' line"
		case "$msg" in
		*"$want"*) ;;
		*) fail "$name: the hook said '$msg', expected it to mention '$want'" ;;
		esac
	fi
	[ ! -e "$(rec_file $id)" ] || fail "$name: a record was left"
	[ -z "$(crun list -q 2>/dev/null)" ] || fail "$name: crun still lists $(crun list -q)"
	[ ! -d "$CG$cgp/$id" ] || fail "$name: the container's cgroup is left"
	led
	after=$(led_budgets)
	[ "$after" = "$before" ] || { led_show; fail "$name: the ledger changed"; }
}

# ---- nxquotad, restarted (NXQ_AUTHORITY=daemon) ----------------------------

# nxqd_pid: nxquotad's pid as init.sh knows it ($NXQD_PIDFILE).
nxqd_pid() { cat "$NXQD_PIDFILE" 2>/dev/null; }

# nxqd_gone PID: true once PID has exited (gone, or a zombie not reaped
# whose other threads have exited too: a zombie leader with threads still
# exiting keeps the daemon's sockets open, and a new daemon then finds its
# socket "already running").
nxqd_gone() {
	[ ! -d "/proc/$1" ] && return 0
	grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null || return 1
	[ "$(ls "/proc/$1/task" 2>/dev/null | wc -l)" -le 1 ]
}

# nxqd_restart SIG: send SIG (KILL, TERM) to nxquotad, wait (10 s) until it
# has exited, start $NXQD_START again as init.sh does (its log appended to
# $NXQD_LOG) in a session of its own, its pid in $NXQD_PIDFILE (init.sh's
# sweep and end take it from there: it outlives the scenario), and wait
# (10 s) until its control socket answers.  Sets $restart_cs to the time
# of the start (now_cs).
nxqd_restart() {
	local old i=0
	old=$(nxqd_pid)
	[ -n "$old" ] || fail "no pid in $NXQD_PIDFILE"
	kill -"$1" "$old" || fail "kill -$1 $old (nxquotad) failed"
	while ! nxqd_gone "$old"; do
		[ $i -lt 100 ] || fail "nxquotad ($old) still runs 10 s after SIG$1"
		sleep 0.1
		i=$((i + 1))
	done
	restart_cs=$(now_cs)
	# shellcheck disable=SC2016
	( exec setsid sh -c 'echo $$ > "$NXQD_PIDFILE"; exec '"$NXQD_START" ) \
		< /dev/null >> "$NXQD_LOG" 2>&1 &
	i=0
	until $NXQCTL devices > /dev/null 2>&1; do
		[ $i -lt 100 ] || fail "nxquotad did not answer 10 s after its start: $(tail -n 3 "$NXQD_LOG")"
		sleep 0.1
		i=$((i + 1))
	done
}
