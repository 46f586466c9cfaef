#!/bin/bash
# tests/daemon-scen.sh - the real-kernel scenarios against nxquotad, on the
# host (make check's daemon-scen stage): no VM, no module.
#
#   tests/daemon-scen.sh [SCENARIO...]
#
# Builds the ASan daemon (make -C daemon all -> daemon/build/nxquotad) and
# the scenario programs (tests/vm/scenarios/*.c, for this host, into
# build/daemon-scen/), starts the daemon on a temporary socket directory and
# state directory, and runs each scenario as root with NXQ_AUTHORITY=daemon
# (tests/vm/authority.h: sc_open() is the daemon's client socket, the
# sysfs helpers its control socket).  cgroup2 is the first cgroup2 mount of
# /proc/self/mountinfo (or NXQ_CGROOT); under it the script makes
# nxq-daemon-scen.PID and runs the daemon and the scenarios in a cgroup
# namespace rooted there, so the scenarios' /kubepods, /system.slice ...
# are never the host's own.
# Scenarios about the module itself skip (authority.h says why).
#
# After each scenario, as the VM's /init does: leftover processes are
# killed, leftover devices unregistered (tests/vm/tools/nxq-sweep) and
# cgroups removed, and a scenario that passed but left something behind
# fails; the daemon must still be running (a restart scenario may replace
# it: it writes the new pid to $NXQD_PIDFILE).  At the end the daemon gets
# SIGTERM and must exit 0 with nothing from ASan/UBSan in its log.
#
# Skips (exit 0, says why) when not root or without a writable cgroup2.
# Output: one line per scenario, then "daemon-scen: N passed, M failed,
# K skipped"; exit 1 if anything failed.
#
# Environment: NXQ_SCEN_TIMEOUT (60 s per scenario), NXQ_CGROOT (a
# cgroup2 directory to use instead of the first mount).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 2
out=build/daemon-scen
timeout_s=${NXQ_SCEN_TIMEOUT:-60}

say() { echo "daemon-scen: $*"; }

if [ "$(id -u)" != 0 ]; then
	say "SKIP: needs root (the scenarios make cgroups and drop to uid 65534)"
	exit 0
fi

# ---- cgroup2 -------------------------------------------------------------
cgroot=${NXQ_CGROOT:-}
if [ -z "$cgroot" ]; then
	# mountinfo: ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - FSTYPE SRC OPTS
	cgroot=$(awk '{ for (i = 7; i <= NF; i++) if ($i == "-") break;
		if ($(i + 1) == "cgroup2") { print $5; exit } }' /proc/self/mountinfo)
fi
if [ -z "$cgroot" ] || [ ! -f "$cgroot/cgroup.procs" ]; then
	say "SKIP: no cgroup2 mount in /proc/self/mountinfo"
	exit 0
fi
probe=$cgroot/nxq-daemon-scen-probe.$$
if ! mkdir "$probe" 2>/dev/null || ! echo $$ > "$probe/cgroup.procs" 2>/dev/null; then
	rmdir "$probe" 2>/dev/null
	say "SKIP: cgroup2 at $cgroot is not writable here (cannot make a cgroup and move into it)"
	exit 0
fi
echo $$ > "$cgroot/cgroup.procs" 2>/dev/null
rmdir "$probe"

# ---- a cgroup namespace of its own -----------------------------------------
# The scenarios name their cgroups as kubelet, systemd, podman and Slurm
# name theirs (/kubepods, /system.slice, ...), and on a host those exist
# and are someone else's.  So the daemon and the scenarios run in a cgroup
# namespace whose root is a fresh cgroup of ours (nxq-daemon-scen.PID),
# with cgroup2 mounted again inside a mount namespace of their own: "/"
# there is that cgroup, the daemon reads /proc/PID/cgroup relative to it,
# and nothing a scenario makes can meet the host's tree or stay in it.
if [ -z "${NXQ_SCEN_INNER:-}" ]; then
	own=$cgroot/nxq-daemon-scen.$$
	mnt=$(mktemp -d /tmp/nxq-daemon-scen-cg.XXXXXX)
	if ! mkdir "$own" || ! echo $$ > "$own/cgroup.procs"; then
		say "FAIL: cannot make and enter $own"
		rmdir "$own" "$mnt" 2>/dev/null
		exit 1
	fi
	NXQ_SCEN_INNER=$mnt unshare --cgroup --mount --propagation private \
		"$0" "$@"
	rc=$?
	echo $$ > "$cgroot/cgroup.procs"
	# What is still in it (a scenario's stray child) dies with it.
	if [ -f "$own/cgroup.kill" ]; then
		echo 1 > "$own/cgroup.kill"
	else
		find "$own" -name cgroup.procs -exec cat {} + |
			xargs -r kill -KILL 2>/dev/null
	fi
	for _ in $(seq 50); do
		find "$own" -depth -type d -exec rmdir {} + 2>/dev/null
		[ -d "$own" ] || break
		sleep 0.1
	done
	[ -d "$own" ] && say "WARNING: $own could not be removed"
	rmdir "$mnt"
	exit $rc
fi
if ! mount -t cgroup2 cgroup2 "$NXQ_SCEN_INNER"; then
	say "FAIL: cannot mount cgroup2 in a mount namespace of its own"
	exit 1
fi
cgroot=$NXQ_SCEN_INNER
export NXQ_CGROOT=$cgroot

# ---- build -----------------------------------------------------------------
mkdir -p "$out/bin"
if ! nice -n 10 make -s -C daemon all > "$out/daemon-build.log" 2>&1; then
	tail -n 20 "$out/daemon-build.log" | sed 's/^/    /'
	say "FAIL: the daemon does not build (see $out/daemon-build.log)"
	say "0 passed, 1 failed, 0 skipped"
	exit 1
fi
daemon=daemon/build/nxquotad
cflags=(-O2 -Wall -Werror -Iinclude/uapi -Itests/vm -pthread)
! grep -q NXQUOTA_A_DEVICE_WAITERS include/uapi/linux/nxquota.h ||
	cflags+=(-DSC_HAVE_DEVICE_WAITERS)	# see tests/vm/authority.h
# ... and devices/KEY/events_dropped_by_type once it has its attributes (issue 22)
! grep -q NXQUOTA_A_DEVICE_EVENTS_DROPPED_KILLED include/uapi/linux/nxquota.h ||
	cflags+=(-DSC_HAVE_EVENTS_DROPPED_TYPE)
build() {	# src dst [args]
	local src=$1 dst=$2
	shift 2
	nice -n 10 gcc "${cflags[@]}" -o "$dst" "$src" "$@" > "$dst.log" 2>&1
}
build tests/vm/tools/nxq-sweep.c "$out/bin/nxq-sweep" || {
	cat "$out/bin/nxq-sweep.log"
	say "FAIL: nxq-sweep does not build"
	exit 1
}

scen=()
if [ $# -gt 0 ]; then
	for s in "$@"; do
		s=${s%.c}
		[ -f "tests/vm/scenarios/$s.c" ] || { echo "no scenario $s" >&2; exit 2; }
		scen+=("$s")
	done
else
	for f in tests/vm/scenarios/*.c; do
		scen+=("$(basename "$f" .c)")
	done
fi

# ---- the daemon --------------------------------------------------------------
tmp=$(mktemp -d /tmp/nxq-daemon-scen.XXXXXX)
chmod 0755 "$tmp"	# tenants (uid 65534) reach the client socket
mkdir -p "$tmp/run" "$tmp/state"
chmod 0755 "$tmp/run"
export NXQUOTA_SOCKET=$tmp/run/nxquota.sock
export NXQUOTA_CONTROL=$tmp/run/control.sock
export NXQ_CTL=$top/tools/nxquotactl	# the tool, where a scenario runs it
export NXQ_AUTHORITY=daemon
export NXQD_LOG=$tmp/nxqd.log NXQD_PIDFILE=$tmp/nxqd.pid
export NXQD_START="$top/$daemon -s $NXQUOTA_SOCKET -c $NXQUOTA_CONTROL -S $tmp/state -C $cgroot"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
dpid=

daemon_start() {
	$NXQD_START >> "$NXQD_LOG" 2>&1 &
	dpid=$!
	echo "$dpid" > "$NXQD_PIDFILE"
	for _ in $(seq 50); do
		[ -S "$NXQUOTA_SOCKET" ] && [ -S "$NXQUOTA_CONTROL" ] && return 0
		kill -0 "$dpid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
bad_log() {
	grep -E 'AddressSanitizer|LeakSanitizer|runtime error|WARNING|BUG|ASSERTION' "$NXQD_LOG"
}
cleanup() {
	local p
	p=$(head -n 1 "$NXQD_PIDFILE" 2>/dev/null)
	[ -n "$p" ] && kill -KILL "$p" 2>/dev/null
	[ -n "$dpid" ] && kill -KILL "$dpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

npass=0 nfail=0 nskip=0
report() {	# name status reason
	case "$2" in
	pass) npass=$((npass + 1)); st=PASS ;;
	skip) nskip=$((nskip + 1)); st=SKIP ;;
	*) nfail=$((nfail + 1)); st=FAIL ;;
	esac
	printf 'daemon-scen: %-20s %s %s\n' "$1" "$st" "$3"
}

if ! daemon_start; then
	sed 's/^/    /' "$NXQD_LOG" | tail -n 20
	report nxquotad fail "did not start: $NXQD_START"
	say "$npass passed, $nfail failed, $nskip skipped"
	exit 1
fi

# Clean what a scenario left: its own process group (setsid) is killed;
# cgroups that appeared during it ($1: the list before; all of them ours,
# in the namespace above) are reported and removed if empty; devices go
# (nxq-sweep: this daemon's only).
sweep() {	# pgid cgroups-before -> $left
	left=""
	local p c
	p=$(head -n 1 "$NXQD_PIDFILE" 2>/dev/null)
	[ -n "$p" ] && dpid=$p
	if pgrep -g "$1" > /dev/null 2>&1; then
		left="$left processes:$(pgrep -g "$1" | tr '\n' ' ')"
		kill -KILL -- "-$1" 2>/dev/null
		sleep 0.5
	fi
	if ! kill -0 "$dpid" 2>/dev/null; then
		left="$left nxquotad-died"
		daemon_start || left="$left nxquotad-restart-failed"
	fi
	for p in $("$out/bin/nxq-sweep" 2> "$tmp/sweep.err"); do
		left="$left $p"
	done
	[ -s "$tmp/sweep.err" ] && left="$left sweep:$(head -n 1 "$tmp/sweep.err")"
	for c in $(cgroups_now); do
		case " $2 " in *" $c "*) continue ;; esac
		find "$cgroot/$c" -depth -type d -exec rmdir {} + 2>/dev/null
		left="$left cgroup:/$c"
	done
}
cgroups_now() {
	find "$cgroot" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | sort
}

for s in "${scen[@]}"; do
	src=tests/vm/scenarios/$s.c
	args=()
	if [[ $s == lib_* ]]; then
		if [ ! -f lib/libnxquota.a ]; then
			report "$s" skip "library not built (lib/libnxquota.a missing)"
			continue
		fi
		args=(-Iinclude lib/libnxquota.a -ldl)
	fi
	if ! build "$src" "$out/bin/$s" "${args[@]}"; then
		report "$s" fail "does not build: see $out/bin/$s.log"
		continue
	fi
	before=$(cgroups_now | tr '\n' ' ')
	t0=$(date +%s%N)
	# setsid: its own process group, killed as a whole afterwards.
	setsid timeout -s KILL "$timeout_s" "$out/bin/$s" > "$tmp/out" 2>&1 &
	pgid=$!
	wait "$pgid"
	rc=$?
	t1=$(date +%s%N)
	secs=$(( (t1 - t0) / 1000000000 )).$(( (t1 - t0) / 100000000 % 10 ))
	sed "s/^/  [$s] /" "$tmp/out"
	why=$(grep -m1 -E '^(FAIL|SKIP): ' "$tmp/out" | cut -d' ' -f2-)
	case $rc in
	0) st=pass; why=ok ;;
	77) st=skip; [ -n "$why" ] || why="no reason given" ;;
	137) st=fail; why="killed by SIGKILL (timeout ${timeout_s}s?)${why:+: $why}" ;;
	*) st=fail; [ -n "$why" ] || why="exit status $rc, no FAIL line" ;;
	esac
	sweep "$pgid" "$before"
	if [ -n "$left" ] && [ "$st" = pass ]; then
		st=fail
		why="left behind:$left"
	fi
	report "$s" "$st" "$why (${secs}s)"
done

# The daemon's end: SIGTERM, exit 0, a clean log.
p=$(head -n 1 "$NXQD_PIDFILE" 2>/dev/null)
[ -n "$p" ] && dpid=$p
kill -TERM "$dpid" 2>/dev/null
for _ in $(seq 50); do
	kill -0 "$dpid" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$dpid" 2>/dev/null; then
	report nxquotad fail "still running 5 s after SIGTERM"
else
	wait "$dpid" 2>/dev/null
	st=$?
	if [ "$st" != 0 ] && [ "$st" != 127 ]; then
		report nxquotad fail "exited with status $st on SIGTERM (log: $out/nxqd.log)"
	elif [ -n "$(bad_log)" ]; then
		report nxquotad fail "its log: $(bad_log | head -n 1) (log: $out/nxqd.log)"
	else
		report nxquotad pass ok
	fi
fi
cp "$NXQD_LOG" "$out/nxqd.log" 2>/dev/null
say "$npass passed, $nfail failed, $nskip skipped"
[ "$nfail" -eq 0 ]
